"""The core: what a reward is made of, as pure data and pure math.

Rubric, recipe and judge pool models (``rubric``, ``transforms``, ``recipe``, ``pool``,
``graders_spec``, ``monitor_spec``, on the strict base of ``base``), aggregation and
transforms (``aggregate``, ``comparative``), verdicts, rollouts, trajectories, the domain results
and the one ``Usage`` of every way of scoring (``verdict``, ``rollout``, ``trajectory``
with its events in ``trajectory_events``, ``results``), scoped API keys (``access``), the
one error vocabulary (``errors``), the fair queue that lanes of bounded work take their
calls from (``fairqueue``: threads waiting, no I/O), the observer through which lower
rooms report events (``observe``), values bound to a block of one task (``scoped``) and
the rubric formats of datasets (``criteria_formats``, reading their entries with
``criteria_entries``). Nothing here does I/O: no files, no network, no processes.

May import: pydantic and the standard library (and, for ``graders_spec`` only, the
I/O-free validators re2 and jsonschema, so that a bad pattern or schema is refused when
a file loads). Never anything else of rewardsvc (no wire models, no storage, no settings),
HTTP servers or clients (fastapi, starlette, httpx, openai, aiohttp), prometheus_client,
redis or sqlite3. Knowledge of the deployment (judge names, detector flag names) comes in
through the pydantic validation context, not through imports.

Every room uses it, so a request is made of it throughout: the application reads items
into ``Rollout``s, the engine plans over ``Rubric``s, judges return ``Verdict``s, the
engine assembles them with ``aggregate`` into ``results``, and the application maps those
to wire models. A refusal is a ``ServiceError`` carrying its ``ErrorKind`` (a bad request a
``RequestError`` carrying the field paths), which the server alone turns into a status.
"""
