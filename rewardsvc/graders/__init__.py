"""Deterministic graders: checks of a completion that cost no judge call.

Normalized exact match, numeric match with tolerance, mathematical equivalence
(math-verify), regex match / must-not-match (RE2), JSON validity and JSON Schema
conformance, word and token budgets, required sections, string similarity (rapidfuzz)
and embedding similarity (the optional ``embeddings`` extra), with the answer extraction
they share (:mod:`~rewardsvc.graders.extract`). Each grader is a pure function of the
rollout and its typed spec (``rewardsvc.core.graders_spec``), returns a score in [0, 1]
with its evidence, and runs in bounded time on any input: user patterns run on RE2, and
math parsing and regex-bearing schemas run in worker processes with a deadline.
:class:`~rewardsvc.graders.run.Graders` is the one entry point the scoring engine uses.

May import: ``rewardsvc.core`` and its grading libraries (re2, jsonschema, math-verify,
rapidfuzz; sentence-transformers lazily). Never the server, scoring, judges, HTTP or
client libraries.
"""
