"""Deterministic graders: checks of a completion that cost no judge call.

Normalized exact match, numeric match with tolerance, mathematical equivalence
(math-verify), regex match / must-not-match (RE2), JSON validity and JSON Schema
conformance, word and token budgets, required sections, string similarity (rapidfuzz),
embedding similarity (the optional ``embeddings`` extra) and the code graders, which
run a program in the sandbox (:mod:`~rewardsvc.graders.code`), with the answer extraction
they share (:mod:`~rewardsvc.graders.extract`). Each grader is a pure function of the
rollout and its typed spec (``rewardsvc.core.graders_spec``) and returns a score in
[0, 1] with its evidence. :class:`~rewardsvc.graders.registry.Graders`, the one entry point
the scoring engine uses, runs every grader but the embedding and code ones in worker
processes with a hard deadline, queued fairly between requests (:mod:`~rewardsvc.graders.worker`),
and reports a grader that cannot finish as no score with a typed error kind, never as 0.

A grader is its spec class in ``rewardsvc.core.graders_spec`` (listed in ``GRADERS``),
which declares what the grader needs (a reference answer, a worker process, a time limit),
and one entry in ``FUNCTIONS`` (``SANDBOXED`` for a code grader) of
:mod:`~rewardsvc.graders.registry` binding its function to that class (a test checks
every spec has exactly one).

May import: ``rewardsvc.core``, ``rewardsvc.sandbox`` (the code graders' runs),
``rewardsvc.safety`` (the tamper detector on the code they run) and its
grading libraries (re2, jsonschema, math-verify, rapidfuzz; sentence-transformers
lazily). Never the application, the server, scoring,
judges, storage, wire models, HTTP or client libraries.

A request reaches it through the scoring room: the engine grades a rubric's grader
criteria (:func:`~rewardsvc.graders.registry.grade_criteria`) and the recipe runner its
grader components, each within the request's deadline, before any judge is asked.
"""
