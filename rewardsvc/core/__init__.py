"""The core: what a reward is made of, as pure data and pure math.

Rubric, recipe and judge pool models (``rubric``, ``recipe``, ``pool``, ``graders_spec``,
on the strict base of ``base``), aggregation and transforms (``aggregate``), verdicts,
rollouts and the engine's domain results (``verdict``, ``rollout``, ``results``), the one
error vocabulary (``errors``) and the observer through which lower rooms report events
(``observe``). Nothing here does I/O: no files, no network, no processes.

May import: pydantic and the standard library (and, for ``graders_spec`` only, the
I/O-free validators re2 and jsonschema, so that a bad pattern or schema is refused when
a file loads). Never anything else of rewardsvc, HTTP servers or clients (fastapi,
starlette, httpx, openai, aiohttp), prometheus_client or sqlite3. Knowledge of the
deployment (judge names, detector flag names) comes in through the pydantic validation
context, not through imports.
"""
