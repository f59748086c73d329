"""Judges: LLM judges behind OpenAI-compatible endpoints, from a rendered prompt to a verdict.

``prompts`` renders and fences what a judge reads; ``judge`` holds the :class:`Judge`
of one pool entry, which picks a scoring method (``methods``: logprob, structured,
sampled) and an API shape (``shapes``: chat or completion) once from its config and
refuses prompts that cannot fit its context (``limits``); ``backends`` reaches the
endpoints with deadlines, retries and per-URL circuit breakers (``breaker``), classifies
failures into typed kinds (``failures``) and re-reads rotated API keys (``keys``).
It may import ``rewardsvc.core`` and HTTP clients (openai, aiohttp, httpx2); never the
scoring engine or the server. Events go out through ``rewardsvc.core.observe.Observer``.
"""
