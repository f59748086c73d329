"""The scoring room: a batch of rollouts against a rubric, from judge calls to rewards.

``engine`` holds the :class:`~rewardsvc.scoring.engine.Engine`: for one batch it checks
every item on its own, runs the detectors, plans the judge calls (one per item, judge and
criterion; one holistic call for ``combine: implicit``; one call for all criteria for a
``batched`` judge; one per step for ``scope: step`` criteria, planned by ``steps``),
serves what it can from the verdict cache or from an identical call in flight, sends the
rest concurrently, applies per-judge calibration and assembles each item's reward, status,
uncertainty and breakdown (``assemble``). ``recipes`` runs a recipe: graders first, then
gates, then the judged rubrics through the engine. ``groups`` and ``preferences`` score
groups of completions against each other and label preference pairs, each judge's
comparisons turned into win rates by ``group_judges``. ``pacing`` yields the event loop
during long synchronous stretches.

May import: ``rewardsvc.core``, ``judges``, ``graders`` (through ``graders.registry``),
``storage`` (the verdict cache and the calibration windows) and ``safety`` (the
detectors and defusing). Never the application, the server, the CLI, wire models
(``rewardsvc.protocol``), HTTP server or metrics libraries: it takes domain inputs
(``core.rollout``) and returns domain results (``core.results``), and reports events
through the core's ``Observer``.

A request reaches it through the application, which resolves the target and reads the
items into rollouts, then calls :meth:`Engine.score` (or the recipe runner, or
:func:`~rewardsvc.scoring.groups.score_groups` /
:func:`~rewardsvc.scoring.preferences.judge_preferences`); the results go back to the
application, which maps them to wire models.
"""
