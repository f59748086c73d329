"""Wire models: every request and response body of the HTTP API, one module per route family.

FastAPI renders their docstrings and field descriptions as the API documentation, so
these models *are* the documentation: a model's docstring says what the body is, each
field's description what it means.

* ``items``: the rollouts requests carry (items, chat messages, Responses-API items, an
  item's own criteria), which every family reads;
* ``rewards``: ``POST /v1/rewards`` and the result shapes the other families share;
* ``rubrics``: the rubric library (``/v1/rubrics``, ``/v1/rubrics/validate``);
* ``comparative``: ``POST /v1/groups`` and ``POST /v1/preferences``;
* ``compat``: the OpenRLHF and slime trainer protocols;
* ``agents``: NeMo Gym's verify protocol;
* ``monitor``: ``GET /v1/monitor``;
* ``ops``: liveness and readiness;
* ``errors``: the error body of every route.
* ``rejections``: a rejected item's field as each trainer protocol (and ORS) names it.

Pure data: these modules may import pydantic, ``rewardsvc.core`` and each other; nothing
of the serving code (server, application), of the domain rooms (scoring, monitor, judges,
graders, library, storage, safety), of the settings, or of the HTTP framework. Only the
edges (server, application, CLI, evaluation) import them; the domain never sees them.

A request enters as one of these models (FastAPI validates the body against it in the
route); the application reads it into the domain types of ``rewardsvc.core``, and maps
the domain results back to a response model here, which the route returns.
"""
