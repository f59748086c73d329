"""The invariant of ``test_invariant.py`` under hostile judge replies: every number a trainer
sees unflagged is a real score, and no request ends in a 500, when the judges answer with
damaged logprobs, hostile usage counts or hostile rate-limit headers.

The cases are generated, not picked: a seeded generator draws, for every surface (the
routes and the client adapters of ``test_invariant.SURFACES``) and every kind of hostility,
what the fake judges do to their replies during the case:

- ``logprob``: the answer's logprob (the decoded token's, its top entry's, or another
  answer's) becomes NaN, an infinity, a huge number, a positive one, ``null``, a string, a
  bool, an object, or leaves the reply; the judges' answers are damaged, so a sample is
  flagged unless a judge's reply still reads (a completion's map that lost an entry);
- ``usage``: each count of ``usage`` becomes negative, huge, fractional, NaN, an infinity,
  a string, a bool, ``null`` or an object; usage is bookkeeping, so every sample must still
  score, unflagged, with its real value;
- ``headers``: the case's first reply (a 429 or an answer) carries ``Retry-After``,
  ``retry-after-ms`` and ``x-ratelimit-*`` values that are huge, infinite, NaN, negative,
  tiny or unreadable; the judges are hosted (``rate_limit: {}``, so the headers move their
  limiters) with ``retry_after_max_s`` of :data:`HOLD_S`, and after the case a request
  must score again: no header takes a judge out for longer.

The healthy scores come from ``test_invariant``'s healthy rig; the hostile rig is its rig
with the hosted judge settings. Draws are fixed per case (shown in its id) by :data:`SEED`.
"""

from __future__ import annotations

import contextlib
import math
import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import test_invariant
from test_invariant import (
    SURFACES,
    Answer,
    Fault,
    Rig,
    Rigs,
    Surface,
    judged,
    native_rewards,
    real_scores,
)

# test_invariant's fixtures, found here by their names: its rigs (one at a time), its healthy
# reference rig and its clients' environment.
rigs, healthy_rig = test_invariant.rigs, test_invariant.healthy_rig
client_env = test_invariant._client_env

SEED = 36
V1_REWARDS = next(s for s in SURFACES if s.name == "v1-rewards")
HOLD_S = 0.3
"""retry_after_max_s of the hostile rig's judges: the longest a header may hold them."""
HOSTED = Fault("hostile-judges", judge_settings={"rate_limit": {}, "retry_after_max_s": HOLD_S})

MISSING = "<missing>"
"""The key left out of the reply."""
LOGPROBS: list[Any] = [math.nan, math.inf, 1e308, 0.5, None, "-0.1", True, {}, MISSING]
DECODED_ONLY: list[Any] = [-math.inf]  # an alternative at -inf is probability 0, a reading
USAGE: list[Any] = [-5, -1e18, 1e30, 2**70, 12.5, math.nan, math.inf, "12", True, None, {}, [3]]
COUNTS = [
    ("prompt_tokens",),
    ("completion_tokens",),
    ("prompt_tokens_details", "cached_tokens"),
    ("completion_tokens_details", "reasoning_tokens"),
]
HEADER_NAMES = ["retry-after", "retry-after-ms"] + [
    f"x-ratelimit-{what}-{kind}"
    for what in ("remaining", "limit", "reset")
    for kind in ("requests", "tokens")
]
HEADER_VALUES = [
    "1e9", "inf", "-inf", "nan", "-1e18", "1e-300", "1e400", "0", "-1", "1e308", "99999h",
    "Fri, 31 Dec 9999 23:59:59 GMT", "soon", "",
]  # fmt: skip


@dataclass(frozen=True)
class Hostility:
    """What the fake judges do during one case, and what the case may then expect."""

    label: str
    rewrite: Callable[[dict[str, Any]], None] | None = None
    first: str = "ok"  # the behaviour of the case's first reply
    headers: dict[str, str] | None = None  # on the case's first reply
    retry_after: str = "1"
    scores: bool = False  # the judges' answers hold: every sample scores, unflagged
    recovers: bool = False  # a request after the case scores again


def _put(entry: dict[str, Any], key: Any, value: Any) -> None:
    if value == MISSING:
        entry.pop(key, None)
    else:
        entry[key] = value


def damaged_logprob(where: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A rewrite putting ``value`` at the answer's logprob: the ``decoded`` token's, the
    ``top`` entry of it, or the ``other`` answers' entries."""

    def rewrite(reply: dict[str, Any]) -> None:
        for choice in reply["choices"]:
            logprobs = choice.get("logprobs") or {}
            if "content" in logprobs:  # chat
                answer = logprobs["content"][0]
                if where == "decoded":
                    _put(answer, "logprob", value)
                for entry in answer["top_logprobs"]:
                    if (entry["token"] == answer["token"]) == (where == "top"):
                        _put(entry, "logprob", value)
            elif "tokens" in logprobs:  # completion: the top entries are a {token: logprob} map
                token, top = logprobs["tokens"][0], logprobs["top_logprobs"][0]
                if where == "decoded":
                    _put(logprobs, "token_logprobs", [value] if value != MISSING else MISSING)
                for other in [t for t in top if (t == token) == (where == "top")]:
                    top[other] = None if value == MISSING else value

    return rewrite


def hostile_usage(values: list[Any]) -> Callable[[dict[str, Any]], None]:
    """A rewrite putting ``values`` at the usage counts (``COUNTS``, in order)."""

    def rewrite(reply: dict[str, Any]) -> None:
        usage = reply.setdefault("usage", {})
        for path, value in zip(COUNTS, values, strict=True):
            where = usage
            for key in path[:-1]:
                where = where.setdefault(key, {})
            _put(where, path[-1], value)

    return rewrite


def draw(kind: str, rng: random.Random) -> Hostility:
    """One hostile reply of ``kind``."""
    if kind == "logprob":
        where = rng.choice(["decoded", "top", "other"])
        value = rng.choice(LOGPROBS + (DECODED_ONLY if where == "decoded" else []))
        return Hostility(f"logprob-{where}={value!r}", damaged_logprob(where, value))
    if kind == "usage":
        values = [rng.choice(USAGE) for _ in COUNTS]
        return Hostility(f"usage={values!r}", hostile_usage(values), scores=True)
    names = rng.sample(HEADER_NAMES, rng.randint(1, 4))
    headers = {name: rng.choice(HEADER_VALUES) for name in names}
    first = rng.choice(["429", "ok"])
    retry_after = rng.choice(HEADER_VALUES)
    label = f"headers-{first}-retry-after={retry_after!r}-{headers!r}"
    return Hostility(label, None, first, headers, retry_after, recovers=True)


def cases() -> list[Any]:
    """Every surface crossed with every kind, each with its own draw."""
    rng = random.Random(SEED)
    return [
        pytest.param(surface, hostility, id=f"{surface.name}-{hostility.label}")
        for kind in ("logprob", "usage", "headers")
        for surface in SURFACES
        for hostility in [draw(kind, rng)]
    ]


@contextlib.asynccontextmanager
async def hostile(rig: Rig, hostility: Hostility) -> AsyncIterator[None]:
    """The fake judges hostile for the case, healthy again after it."""
    script = rig.script
    script.rewrite = hostility.rewrite
    script.queue.append(hostility.first)
    if hostility.headers is not None:
        script.reply_headers.append(hostility.headers)
    script.retry_after = hostility.retry_after
    try:
        yield
    finally:
        script.rewrite = None
        script.queue.clear()
        script.reply_headers.clear()
        script.retry_after = 1.0


@pytest.mark.parametrize(("surface", "hostility"), cases())
async def test_no_number_unless_real_under_hostile_judges(
    rigs: Rigs, healthy_rig: Rig, surface: Surface, hostility: Hostility
) -> None:
    tag = f"{surface.name}-hostile-{uuid.uuid4().hex[:8]}"
    real = await real_scores(healthy_rig, surface, judged(tag))
    rig = rigs.get(HOSTED)
    async with hostile(rig, hostility):
        answer: Answer = await surface.call(rig.url, judged(tag))

    if answer.failure is None:
        assert len(answer.outcomes) == len(real), answer
    for index, outcome in enumerate(answer.outcomes):
        if outcome.flagged:
            continue  # a stand-in the trainer is told about
        assert outcome.value == pytest.approx(real[index], abs=1e-9), (
            f"sample {index}: {outcome.value} is not a real score ({real[index]}) "
            "and is not flagged",
            answer,
        )
    if hostility.scores:
        assert answer.failure is None and not any(o.flagged for o in answer.outcomes), answer
    if hostility.recovers:
        after = await native_rewards(rig.url, judged(f"{tag}-after"))
        healthy = await real_scores(healthy_rig, V1_REWARDS, judged(tag))
        assert [o.value for o in after.outcomes] == pytest.approx(healthy), after
        assert not any(o.flagged for o in after.outcomes), after
