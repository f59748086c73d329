"""The red-team search: completions that earn more than an honest wrong answer while
staying wrong, found under a judge-call budget (``rewardsvc redteam``).

What it holds: the mutation operators (``operators``: the probe catalogue's texts in other
placements and compositions, confidence claims, token-level edits, and rewrites by an
attacker model of the judge pool in ``attacker``), the gold checks that an attack stayed
wrong (``gold``), the beam search that keeps what gained (``search``), the regression file
and its replay by ``rewardsvc probe --replay`` (``regression``), and the command
(``commands``).

What it may import: the application room (it scores through ``compose_local`` and
``score_batch``, as the service does, with no cache and no monitor), the library, judges,
graders, safety and core rooms, and the wire models. Never the server, never
``rewardsvc.evaluation`` or ``rewardsvc.authoring`` (rooms beside it).

How a run passes through it: the items file is read (``gold.read_items``); per item the
honest wrong answer is scored (the baseline), then the probe catalogue (generation 0, the
figure ``probe`` would report), then generations of mutants of the best few, each batch cut
to the calls left; a candidate whose gold check fails is dropped unscored. The best
attack per item that passed the gold check goes into the regression file with its margin,
families, operators and flags; the summary gives the attack success rate at the budget,
the best margin and which flags caught which family.
"""
