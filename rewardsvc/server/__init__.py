"""The server room: HTTP in and out, and nothing of scoring itself.

It holds the FastAPI app and its lifespan (``app``, ``serve``), the routes (``routes``,
``comparative``, ``compat``, ``agents``, ``ops``, ``dashboard``, ``golden``; the monitor's
records become wire models in ``monitor_views``), the guards on every
request (``guards``, ``access``, ``admission``: body size, keys and scopes, the work a
request plans), the :class:`~.gate.Gate` (in-flight slots, drain) and the ``ledger`` of
held work (ROLL jobs, ORS sessions and calls, held trainer requests, explain output), errors
as HTTP answers (``errors``: the one table of each error kind's status, and each
protocol's form), metrics and readiness, the reward log, and :class:`~.service.Service`,
what every route shares. It may import
everything below it: ``rewardsvc.application`` (which builds what scoring runs on),
the domain rooms and the wire models; the CLI and ``rewardsvc eval`` never import it
(except ``rewardsvc serve``, which starts it).

A request's path: route (body parsed into wire models, key checked) → ``Service``
(target resolved by ``rewardsvc.application.targets``, items read, the batch planned by
``rewardsvc.application.targets.plan_request`` and its cost checked once by ``plan``,
in-flight slots taken; work that outlives the exchange admitted to the ledger) → the
plan run (``RequestPlan.run``) → engine or recipe runner (``rewardsvc.scoring``) →
judges and graders → back through ``rewardsvc.application.wire`` to the route's
response, and the reward log.
"""
