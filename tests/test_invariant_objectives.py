"""The invariant of ``test_invariant`` over the objectives: every objective value a trainer
sees unflagged is a real score, under every failure kind.

A rubric's or recipe's ``objectives`` (``rewardsvc.core.objectives``) reach trainers as
several rewards per sample: ``/v1/rewards``' ``objectives``, TRL's one reward function per
objective, veRL's dict keys, NeMo-RL's dict rewards. Each such **surface** is crossed with
every failure kind of ``test_invariant`` (scored against that kind's rubric with objectives
added) and with one more, ``secondary-down``: the judge ``secondary`` unreachable, so the
reward exists (``degraded``, from ``primary`` alone) while the objective of ``secondary``
has no value. A case reads back one :class:`~test_invariant.Outcome` per sample and
objective: its value, and whether the trainer is told it is a stand-in (None for TRL and
the route; ``rewardsvc_valid`` or ``rewardsvc_objectives_valid`` 0 for veRL and NeMo-RL).
The check is ``test_invariant``'s own: every value not flagged equals the same surface's
value for the same samples on a healthy service.

The client package's adapters that read objectives are found by the test (any public
module that reads a result's ``objectives`` or uses ``rewardsvc_client._objectives``);
each must have a surface here.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import pkgutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import test_invariant as inv
from test_api_support import TINY_RUBRIC
from test_invariant import (
    FAULTS,
    GRADED_CODE,
    GRADED_JSON,
    GRADED_MATH,
    RESEND_WAIT_S,
    Answer,
    Fault,
    Outcome,
    Probe,
    Rig,
    Rigs,
    Surface,
    _client_env,  # noqa: F401  (autouse: the adapters' environment)
    no_answer,
    planned_rigs,
    raised,
    running_rig,
)
from yaml import safe_load

import rewardsvc_client
from rewardsvc_client.nemo_rl import RewardsvcEnvironment
from rewardsvc_client.trl import trl_objective_funcs
from rewardsvc_client.verl import make_compute_score

# ------------------------------------------------------------------ rubrics with objectives

OBJECTIVES: dict[str, dict[str, Any]] = {
    "tiny": {
        "correct": {"criteria": ["correct"]},
        "overall": {"judges": ["primary"]},
        "second_opinion": {"judges": ["secondary"]},
    },
    "graded-json": {"nested": {"criteria": ["nested"]}, "overall": {"judges": ["primary"]}},
    "graded-math": {"answer": {"criteria": ["answer"]}, "overall": {"judges": ["primary"]}},
    "graded-code": {"passes": {"criteria": ["passes"]}, "overall": {"judges": ["primary"]}},
}
"""The objectives added to each rubric of ``test_invariant``'s library."""
SUFFIX = "-objectives"


def _with_objectives(rubric: dict[str, Any]) -> dict[str, Any]:
    return {**rubric, "id": rubric["id"] + SUFFIX, "objectives": OBJECTIVES[rubric["id"]]}


RUBRICS = tuple(
    _with_objectives(r) for r in (safe_load(TINY_RUBRIC), GRADED_JSON, GRADED_MATH, GRADED_CODE)
)


def names(probe: Probe) -> list[str]:
    """The objectives of the probe's rubric, in the order outcomes are read."""
    return sorted(OBJECTIVES[probe.rubric.removesuffix(SUFFIX)])


def objectified(probe: Callable[[str], Probe]) -> Callable[[str], Probe]:
    """``probe``'s samples, scored against its rubric with objectives."""

    def made(tag: str) -> Probe:
        samples = probe(tag)
        return dataclasses.replace(samples, rubric=samples.rubric + SUFFIX)

    return made


NOWHERE = "http://127.0.0.1:9/v1"
"""The discard port, where nothing listens: a judge there fails at once."""

KINDS = [
    *(
        dataclasses.replace(
            f, probe=objectified(f.probe), healthy=objectified(f.healthy), rubrics=RUBRICS
        )
        for f in FAULTS
    ),
    Fault(
        "secondary-down",
        probe=objectified(inv.judged),
        healthy=objectified(inv.judged),
        rubrics=RUBRICS,
        secondary_url=NOWHERE,
    ),
]

# ------------------------------------------------------------------ the surfaces


def per_objective(
    probe: Probe, values: Sequence[dict[str, float | None]], flagged: Sequence[bool]
) -> Answer:
    """One outcome per sample and objective (``names`` order); a value is flagged when
    its sample is, or when it is None."""
    return Answer(
        [
            Outcome(row.get(name), flag or row.get(name) is None)
            for row, flag in zip(values, flagged, strict=True)
            for name in names(probe)
        ]
    )


async def native_rewards(url: str, probe: Probe) -> Answer:
    items = [
        {"id": str(i), "prompt": probe.prompt, "completion": c, "reference": probe.reference}
        for i, c in enumerate(probe.completions)
    ]
    reply = await inv._post(url, "/v1/rewards", {"rubric": probe.rubric, "items": items})
    if reply.status_code != 200:
        return no_answer(f"HTTP {reply.status_code}: {reply.text[:300]}", reply.status_code)
    results = reply.json()["results"]
    return per_objective(probe, [r["objectives"] for r in results], [False] * len(results))


async def trl_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        funcs = trl_objective_funcs(url, probe.rubric, names(probe), reference_column="answer")
        batch = {"prompts": [probe.prompt] * 2, "completions": list(probe.completions)}
        columns = await asyncio.gather(*(f(**batch, answer=[probe.reference] * 2) for f in funcs))
        by_sample = zip(*columns, strict=True)
        rows = [dict(zip(names(probe), values, strict=True)) for values in by_sample]
        return per_objective(probe, rows, [False] * len(rows))  # TRL masks None

    return await raised(run())


def flagged(numbers: dict[str, Any]) -> bool:
    """A sample's values are stand-ins, as veRL's and NeMo-RL's per-sample numbers say (a
    key that is absent flags nothing)."""
    return 0.0 in (numbers["rewardsvc_valid"], numbers.get("rewardsvc_objectives_valid"))


async def verl_batch_adapter(url: str, probe: Probe) -> Answer:
    async def run() -> Answer:
        score = make_compute_score(
            url, probe.rubric, kind="batch", judge_error_retries=0,
            judge_error_wait=RESEND_WAIT_S, objectives=names(probe),
        )  # fmt: skip
        columns = (["src"] * 2, list(probe.completions), [probe.reference] * 2)
        results = await asyncio.to_thread(score, *columns, [{"question": probe.prompt}] * 2)
        return per_objective(probe, results, [flagged(r) for r in results])

    return await raised(run())


async def nemo_rl_adapter(url: str, probe: Probe) -> Answer:
    """NeMo-RL's environment step with the objectives listed: dict rewards, one
    ``reward/<objective>`` column each, flagged in each sample's metadata."""

    async def run() -> Answer:
        cfg = {"url": url, "rubric": probe.rubric, "judge_error_wait": RESEND_WAIT_S,
               "objectives": names(probe)}  # fmt: skip
        env = RewardsvcEnvironment(cfg)
        logs = [
            [{"role": "user", "content": probe.prompt}, {"role": "assistant", "content": c}]
            for c in probe.completions
        ]
        metadata = [{"ground_truth": probe.reference}] * len(logs)
        out = await asyncio.to_thread(env.step, logs, metadata)
        columns = {k.removeprefix("reward/"): v.tolist() for k, v in out.rewards.items()}
        rows = [{n: columns[n][i] for n in columns} for i in range(len(logs))]
        return per_objective(probe, rows, [flagged(m) for m in out.metadata])

    return await raised(run())


# Each surface, and the client module whose objectives it reads (None: a route). veRL's
# kinds (sync, async, batch) share the objective numbers after their transport, which
# test_invariant crosses for each: one kind stands for them here.
SURFACES: list[tuple[Surface, str | None]] = [
    (Surface("objectives-v1-rewards", native_rewards), None),
    (Surface("objectives-trl", trl_adapter), "trl"),
    (Surface("objectives-verl-batch", verl_batch_adapter), "verl"),
    (Surface("objectives-nemo-rl", nemo_rl_adapter), "nemo_rl"),
]


def objective_readers() -> set[str]:
    """The public modules of the client package that read a result's ``objectives`` or use
    the package's objective numbers: every adapter that hands objectives to a trainer."""
    found = set()
    for module in pkgutil.iter_modules(rewardsvc_client.__path__):
        if module.name.startswith("_"):
            continue
        path = Path(rewardsvc_client.__path__[0]) / f"{module.name}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            reads = isinstance(node, ast.Attribute) and node.attr == "objectives"
            shared = (
                isinstance(node, ast.ImportFrom) and node.module == "rewardsvc_client._objectives"
            )
            if reads or shared:
                found.add(module.name)
                break
    return found


def test_every_adapter_that_reads_objectives_is_a_surface() -> None:
    readers = objective_readers()
    assert {"trl", "verl", "nemo_rl"} <= readers  # the finder finds what is known
    covered = {module for _, module in SURFACES if module is not None}
    assert readers <= covered, f"adapters with objectives and no surface: {readers - covered}"


# ------------------------------------------------------------------ the cases


@pytest.fixture(scope="module")
def rigs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rigs]:
    """This module's services of the failure kinds (one at a time), and its drain cases' own."""
    folder = tmp_path_factory.mktemp("objective-rigs")
    with contextlib.closing(Rigs(folder, planned_rigs(request))) as kept:
        yield kept


@pytest.fixture(scope="module")
def healthy_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """A service with nothing failing, for the real values."""
    with running_rig(KINDS[0], tmp_path_factory.mktemp("objectives-healthy")) as running:
        yield running


@pytest.mark.parametrize(
    ("fault", "surface"),
    [
        pytest.param(fault, surface, id=f"{surface.name}-{fault.name}")
        for fault in KINDS
        for surface, _ in SURFACES
    ],
)
async def test_no_objective_unless_real(
    rigs: Rigs, healthy_rig: Rig, fault: Fault, surface: Surface
) -> None:
    await inv.test_no_number_unless_real(rigs, healthy_rig, fault, surface)


async def test_secondary_down_is_the_degraded_case(tmp_path: Path) -> None:
    """The extra kind is what it claims: a real reward, an objective without a value."""
    fault = KINDS[-1]
    probe = fault.probe(f"check-{uuid.uuid4().hex[:8]}")
    item = {"prompt": probe.prompt, "completion": probe.completions[0], "reference": "4"}
    with running_rig(fault, tmp_path) as rig:
        reply = await inv._post(rig.url, "/v1/rewards", {"rubric": probe.rubric, "items": [item]})
    (result,) = reply.json()["results"]
    assert result["status"] == "degraded" and result["reward"] is not None
    assert result["objectives"]["second_opinion"] is None
    assert result["objectives"]["overall"] is not None
