"""Judges: LLM judges behind OpenAI-compatible endpoints, from a rendered prompt to a verdict.

``prompts`` renders and fences what a judge reads; ``asks`` holds the questions a judge
is asked (each owning its rendering and its reading); ``judge`` holds the :class:`Judge` of
one pool entry, asked them one way (``Judge.ask``), which picks a scoring method
(``methods``: logprob, structured, sampled; ``batching``: all criteria in one call;
``answers``: how an answer is read, a logprob included) and an API shape (``shapes``: chat
or completion) once from its config, keys its verdicts by ``identity``, refuses prompts
that cannot fit its context (``limits``) and renders and sends each call in one of its
``turns`` (as many as its concurrency);
``backends`` reaches the endpoints with deadlines, retries (``retrying``) and per-URL
circuit breakers (``breaker``), picks a replica by prefix affinity (``routing``), keeps a
hosted judge's RPM/TPM limits and its provider's rate-limit headers (``ratelimit``),
sends over a lean aiohttp client (``transport``), classifies failures into typed kinds
(``failures``) and re-reads rotated API keys (``keys``); ``usage`` reads a reply's token
counts (the one reading, hostile numbers clamped), ``pricing`` meters the tokens of a
call's replies and prices them by the judge's table.
``comparative`` asks the listwise and pairwise questions of groups and preferences.
``toolloop`` runs an agentic judge's bounded tool loop over the chat API (its tools' results
shown by ``toolresults``, bounded, fenced and flagged; the tools are ``rewardsvc.judgetools``'s)
before the verdict is read with the judge's own method.
``reasoning`` serves judges that think before they answer: it bounds the thinking (vLLM's
``thinking_token_budget``), finds the answer after it, and types an overrun.
``reward_model`` is the strategy of a ``method: reward_model`` judge: a scalar reward model
or process reward model on vLLM's pooling runner, asked no questions (the conversation to
``/classify`` or ``/pooling``, its output mapped into [0, 1]).

It may import ``rewardsvc.core``, ``rewardsvc.safety`` (defusing what it fences) and
aiohttp; never the scoring room, the application, the server, storage or wire models.
Events go out through ``rewardsvc.core.observe.Observer``.

A request reaches it from the engine on a verdict-cache miss: the judge renders the
prompt, its method and shape build the request, the backends send it and the reply comes
back as a ``core.verdict.Verdict`` (a failure as a verdict with an ``error_kind``, never a
score of 0), which the engine caches and assembles.
"""
