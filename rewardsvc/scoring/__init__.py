"""The scoring room: a batch of rollouts against a rubric, from judge calls to rewards.

``engine`` holds the :class:`~rewardsvc.scoring.engine.Engine`: for one batch it plans
(a ``batch_plan``, before the request is admitted: every item checked on its own by
``item_checks``, and ``planning`` plans the judge calls, each with its cost in calls and prompt
bytes; one per item, judge and criterion; one holistic call for ``combine: implicit``; one call for
all criteria for a judge whose method batches them, ``judging``; one per step for
``scope: step`` criteria, ``steps``; one per item, and one per trajectory for its steps,
for a judge that scores whole items, a reward model), then runs that plan: the detectors,
and ``serving`` answers what it can from
the verdict cache or from an identical call in flight, sends the rest concurrently within the
request's deadline and tallies the usage; ``assemble`` applies per-judge calibration and
builds each item's reward, status, uncertainty and breakdown. ``selection`` is the one
rule for which judges a rubric asks and how many must answer, for the engine and the
comparisons alike. ``recipes`` runs a recipe: graders first, then gates, then the judged
rubrics through the engine's plan of each (``recipe_plan``). ``groups`` and
``preferences`` score groups of completions against each other and label preference pairs:
``group_plan`` and ``group_calls`` plan their questions (comparisons in the orders of the
``comparison_methods`` strategy, an essential gate asked of each completion), run by the
engine's executor (``serving``) as the engine's ``comparer`` runs them; ``group_judges``
turns each judge's comparisons into win rates and ``group_assembly`` assembles the rewards.
``pacing`` yields the event loop during long synchronous stretches.

May import: ``rewardsvc.core``, ``judges``, ``graders`` (through ``graders.registry``),
``storage`` (the verdict cache and the calibration windows) and ``safety`` (the
detectors and defusing). Never the application, the server, the CLI, wire models
(``rewardsvc.protocol``), HTTP server or metrics libraries: it takes domain inputs
(``core.rollout``) and returns domain results (``core.results``), and reports events
through the core's ``Observer``.

A request reaches it through the application, which resolves the target and reads the
items into rollouts, then plans with :meth:`Engine.plan`, has the server admit the plan's
cost and runs it with :meth:`Engine.run` (or the recipe runner's plan; or the engine's
:class:`~rewardsvc.scoring.comparer.Comparer` for groups and preferences, planned and
admitted the same way); the results go back to the application, which maps them to wire
models.
"""
