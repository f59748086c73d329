"""Verifier fuzzing: adversarial completions against the deterministic graders.

``rewardsvc fuzz-graders`` (:mod:`~rewardsvc.fuzzing.commands`) generates, from a seed,
completions in mutation families (:mod:`~rewardsvc.fuzzing.answers` for the answer
graders: several final answers, the right answer only in the reasoning, a retraction after
it, unicode digits and look-alikes, LaTeX and units, nested and multiple boxes, negations,
trailing junk, truncation; :mod:`~rewardsvc.fuzzing.texts` and
:mod:`~rewardsvc.fuzzing.jsons` for regex, length, sections and JSON). Each target of
:mod:`~rewardsvc.fuzzing.targets` (one grader, one spec) grades them and is held to a
stricter reference check written here, sharing no code with the graders
(:mod:`~rewardsvc.fuzzing.strict`, :mod:`~rewardsvc.fuzzing.reference`). The runner
counts agreement, false positives and false negatives per grader and family; a false
positive is *explained* when :mod:`~rewardsvc.fuzzing.explained` documents it as a
choice, and the command exits 1 on any other.

May import: ``rewardsvc.graders`` (the grader table's ``grade_here``, in this process) and
``rewardsvc.core``. Never the application, the server, scoring, judges or storage: the
graders are fuzzed as pure functions, no request passes through this room.
"""
