"""Safety: what protects judges from the text they grade. Pure functions, no I/O.

- ``detectors``: the attack-shape detectors and their table (the one place the
  flag names come from), run on every completion; ``rules`` and ``shapes`` hold
  their patterns and text heuristics, ``scan`` the bounded view they scan.
- ``defuse``: chat control-token defusing and the collapse of pathological
  backtick runs, applied to untrusted text before it is fenced into a judge prompt.
- ``attacks``: the red-team attack set that ``rewardsvc probe`` scores.
- ``tamper``: the tamper detector, a static (``ast``) check of the code a code grader
  runs, and of an agent's workspace, for shapes that game the verification (its flag
  table ``TAMPER``); ``tamper_rules`` holds its rules, ``tamper_names`` the names they
  look for, ``tamper_source`` the parsed module they read.

Everything here runs in time linear in its input: patterns are RE2 (``re2``,
no backtracking) or patterns whose every attempt is bounded, over a capped view
of the text. This package may import ``rewardsvc.core`` and the standard library
plus ``re2`` only: no application, server, scoring, judges, storage, wire models, HTTP
or client libraries (judges import it, not the other way).

A request passes through it twice: the engine runs the detectors on each completion
before it plans the judge calls (their flags go into the result and may be penalised),
and the judges' prompts defuse the completion before fencing it.
"""
