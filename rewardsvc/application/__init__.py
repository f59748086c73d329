"""The application room: what the service does, whichever edge asks for it.

It sits between the server (``rewardsvc.server``, above it, with the CLI and
``rewardsvc eval`` above that) and the domain rooms (``rewardsvc.scoring`` and
``rewardsvc.monitor``, and below them judges, graders, library, storage, safety, core).
It may import those rooms, ``rewardsvc.settings`` and the wire models
(``rewardsvc.protocol``); never the server, FastAPI or metrics libraries.

Modules:

- ``root``: the composition root. :func:`~.root.compose` builds the application (registry,
  judges, graders, cache, calibration windows, Redis link, monitor with its observer,
  webhook and canaries) and :meth:`~.root.Application.aclose` closes all of it;
  :func:`~.root.load_registry` is the one construction of the rubric library from
  settings. The server's lifespan uses :func:`~.root.compose`; the CLI's ``score``/``probe``,
  ``rewardsvc eval`` and the red team use :func:`~.root.compose_local` (the same settings,
  without cache, Redis link or monitor).
- ``targets``: what a request's ``rubric`` names, as one class per kind
  (:class:`~.targets.RubricTarget`, :class:`~.targets.RecipeTarget`,
  :class:`~.targets.RoutingTarget`), each planning a batch its own way; resolution of a
  request's ``rubric``, :func:`~.targets.plan_request` and :func:`~.targets.score_target`.
- ``plans``: what a target plans (its cost in judge calls and prompt bytes) and runs.
- ``routed``: a routed batch split by ``metadata.data_source`` and put back in order.
- ``items``: raw items, groups and pairs read into rollouts, each rejected on its own.
- ``wire``: the one mapping of domain results to wire models.
- ``monitoring``: the monitor's wiring (its observer, alert sinks, webhook, canary scorer).

A request's path: the route (``rewardsvc.server.routes``) parses the body and asks the
server's ``Service`` to resolve the target (``targets.resolve_target``); the service has
the items read (``items``) and ``targets.plan_request`` plan them with the target (the
engine's plans, ``rewardsvc.scoring``), admits the plan's cost (limits checked once, in
``rewardsvc.server.admission``), then runs that same plan (the engine or recipe runner)
and maps what comes back to the wire response (``wire``). The engine reports each batch
to the observers the root wired: metrics and the monitor.
"""
