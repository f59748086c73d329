"""Judges: LLM judges behind OpenAI-compatible endpoints, from a rendered prompt to a verdict.

``prompts`` renders and fences what a judge reads; ``judge`` holds the :class:`Judge`
of one pool entry, which picks a scoring method (``methods``: logprob, structured,
sampled; ``batching``: all criteria in one call) and an API shape (``shapes``: chat or
completion) once from its config and refuses prompts that cannot fit its context
(``limits``); ``backends`` reaches the endpoints with deadlines, retries and per-URL
circuit breakers (``breaker``), picks a replica by prefix affinity (``routing``), sends
over a lean aiohttp client (``transport``), classifies failures into typed kinds
(``failures``) and re-reads rotated API keys (``keys``).
It may import ``rewardsvc.core`` and aiohttp; never the
scoring engine or the server. Events go out through ``rewardsvc.core.observe.Observer``.
"""
