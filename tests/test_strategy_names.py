"""No string comparison on a scoring method, API shape, scope, combine or rubric kind name
selects behaviour outside its strategy object: such code asks the strategy (the method
object, ``Rubric.implicit_combine``, ``Criterion.per_step``, ``Recipe.combination``...)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rewardsvc"

_METHODS = "logprob|structured|sampled|batched|reward_model|listwise|pairwise"
_SHAPES = "chat|completion"
_NAME = rf"""["'](?:{_METHODS}|{_SHAPES})["']"""
PATTERNS = (
    re.compile(rf"(?:==|!=)\s*{_NAME}"),  # x == "logprob"
    re.compile(rf"{_NAME}\s*(?:==|!=)"),  # "chat" != x
    re.compile(rf"\bin\s*[(\[{{][^)\]}}]*{_NAME}"),  # x in ("chat", ...)
    re.compile(r"\bscope\s*(?:==|!=)|\.scope\s+(?:not\s+)?in\b"),  # c.scope == "step"
    re.compile(r"\bcombine\s*(?:==|!=)|\.combine\s+(?:not\s+)?in\b"),  # combine == "worst"
    re.compile(r"""\bkind\s*(?:==|!=)\s*["'](?:constitution|rubric)["']"""),
)

ALLOWED: dict[str, set[str]] = {
    # The strategy objects' own definitions: the rubric's properties that read its fields.
    "core/rubric.py": {
        'return self.kind == "constitution"',
        'return self.combine == "implicit"',
        'return self.combine == "worst"',
    },
    "core/criterion.py": {'return self.scope == "step"'},
    "core/cascade.py": {'return self.scope == "item"'},
    # Parsing: the pool file refuses chat-only fields on a completion judge (the core
    # cannot see the API shapes of ``rewardsvc.judges.shapes``).
    "core/pool.py": {'if self.api != "chat" and given:'},
}


def name_branches(package: Path) -> list[str]:
    """``path:line: code`` of every comparison on a strategy's name under ``package``
    (comments ignored), the allowed ones left out."""
    found = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0].strip()
            if code in ALLOWED.get(where, set()):
                continue
            if any(p.search(code) for p in PATTERNS):
                found.append(f"{where}:{number}: {code}")
    return found


def test_no_comparison_on_a_strategy_name_outside_its_strategy() -> None:
    assert name_branches(PACKAGE) == []


def test_every_allowed_comparison_is_still_there() -> None:
    # An allow-list entry whose line is gone is stale: drop it rather than leave a hole.
    for where, lines in ALLOWED.items():
        code = {
            line.split("#", 1)[0].strip() for line in (PACKAGE / where).read_text().splitlines()
        }
        assert lines <= code, (where, lines - code)


def test_the_patterns_catch_the_comparisons_they_name() -> None:
    caught = [
        'if method == "structured":',
        'if self.method != "reward_model" and x:',
        'if any(c.scope != "step" for c in rubric.criteria):',
        'per_judge = 1 if rubric.combine == "implicit" else 2',
        'return criterion is not None and rubric.kind != "constitution"',
        'if config.api in ("chat", "completion"):',
    ]
    missed = ["for scope in scopes:", 'if kind == "recipe":', 'if e.kind == "message":']
    assert all(any(p.search(code) for p in PATTERNS) for code in caught)
    assert not any(any(p.search(code) for p in PATTERNS) for code in missed)
