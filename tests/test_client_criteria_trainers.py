"""Per-prompt rubrics through each trainer's own, current package and the real service on
the CPU judges: a row of a rubric dataset (tests/data/rubric_datasets) carries its rubric in
the field the trainer gives it, and the service judged it by that rubric.

veRL, OpenRLHF, ART and verifiers run in their cached venvs (tests/trainers/venvs.py) with
tests/trainers/criteria_run.py; slime (not on PyPI) and TRL's reward function run in this
process (TRL's own GRPOTrainer is in test_trl_run.py). The proof that an item was judged by
its own criteria: asking the service for the same item directly is a verdict-cache hit (the
cache is keyed by the rubric version, here the template's with the item's criteria), with
that rubric's version (not the template's), a breakdown over the item's own criteria (their
ids as the format gives them: ``c1..cn`` for HealthBench, title slugs for RaR), and the
reward the trainer got.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from conftest import Service
from trainers import venvs

from rewardsvc.core.criteria_formats import read_criteria
from rewardsvc_client import Client
from rewardsvc_client.slime import make_rm, route_url
from rewardsvc_client.trl import trl_reward_func

pytestmark = [pytest.mark.judges, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parent / "trainers" / "criteria_run.py"
DATA = Path(__file__).resolve().parent / "data" / "rubric_datasets"
HB = {r["prompt_id"]: r for r in map(json.loads, (DATA / "healthbench.jsonl").open())}
TEMPLATE = "per-prompt"


def own_rubric(service: Service, item: dict[str, Any], reward: Any) -> None:
    """``item`` (prompt, completion, criteria, format, reference) was judged by its own
    criteria, and ``reward`` is that verdict's reward."""
    sent = {k: item[k] for k in ("prompt", "completion", "criteria")}
    if item.get("reference"):
        sent["reference"] = item["reference"]
    with Client(service.url) as client:
        reply = client.rewards(TEMPLATE, [sent], {"criteria_format": item["format"]})
    (result,) = reply.results
    assert result.cached, "the trainer's request did not score this item with its own rubric"
    assert result.version is not None and result.version != reply.rubric.version
    ids = {c["id"] for c in read_criteria(item["format"], item["criteria"])}  # c1.. or slugs
    assert ids and all(set(judge["criteria"]) == ids for judge in result.judges.values()), (
        result.judges
    )
    assert result.status in ("ok", "degraded")
    assert reward == pytest.approx(result.reward, rel=1e-6)


def run_script(trainer: str, service: Service, tmp_path: Path, *extra: str) -> dict[str, Any]:
    python = venvs.ensure(trainer)
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        [str(python), str(SCRIPT), trainer, service.url, str(out), *extra],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-6000:])
    got: dict[str, Any] = json.loads(out.read_text())
    return got


@pytest.mark.parametrize("trainer", ["verl", "openrlhf", "art", "verifiers"])
def test_a_trainer_package_sends_each_rows_rubric(
    trainer: str, service: Service, tmp_path: Path
) -> None:
    extra = [str(venvs.cache_dir() / "cpu-judge" / "models" / "smollm2-135m-instruct")]
    got = run_script(trainer, service, tmp_path, *(extra if trainer == "verl" else []))
    for path, rewards in got["rewards"].items():  # each of the trainer's code paths
        assert len(rewards) == len(got["items"]), path
        for item, reward in zip(got["items"], rewards, strict=True):
            own_rubric(service, item, reward)


async def test_slime_label_and_route_carry_the_rows_rubric(service: Service) -> None:
    row = HB["hb-fever-child"]
    prompt = row["prompt"][-1]["content"]
    label = {"criteria": row["rubrics"]}  # slime keeps a dataset's label object as it is
    sample = SimpleNamespace(prompt=prompt, response="Give fluids and rest; see a doctor.",
                             label=label, metadata={}, remove_sample=False)  # fmt: skip
    scorer = make_rm(service.url, TEMPLATE, criteria_format="healthbench", run="slime-criteria")
    (reward,) = await scorer.group_rm(SimpleNamespace(rm_url=None), [sample])
    item = {"prompt": prompt, "completion": sample.response, "criteria": row["rubrics"],
            "format": "healthbench"}  # fmt: skip
    own_rubric(service, item, reward)
    # slime's own remote_rm posts the sample to the route built by route_url.
    url = route_url(service.url, TEMPLATE, criteria_format="healthbench", format="dict")
    other = "Rest, fluids, and aspirin."
    body = {"prompt": prompt, "response": other, "label": label}
    reply = httpx.post(url, json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    own_rubric(service, {**item, "completion": other}, reply.json()["reward"])


async def test_trl_reward_function_sends_the_rubric_column(service: Service) -> None:
    rows = [HB["hb-sunburn"], HB["hb-fever-child"]]
    reward = trl_reward_func(
        service.url, TEMPLATE, reference_column=None, criteria_column="rubrics",
        criteria_format="healthbench", run="trl-criteria",
    )  # fmt: skip
    columns: dict[str, list[Any]] = {}
    completions = ["Cool showers and aloe vera.", "Fluids, rest, and watch for a stiff neck."]
    rewards = await reward(
        prompts=[r["prompt"] for r in rows], completions=completions,
        rubrics=[r["rubrics"] for r in rows], log_metric=lambda name, value: None,
        log_extra=lambda name, values: columns.__setitem__(name, values),
    )  # fmt: skip
    for row, completion, value in zip(rows, completions, rewards, strict=True):
        item = {"prompt": row["prompt"], "completion": completion, "criteria": row["rubrics"],
                "format": "healthbench"}  # fmt: skip
        own_rubric(service, item, value)
    versions = columns[f"rewardsvc/{TEMPLATE}/version"]
    assert len(set(versions)) == 2  # two prompts, two rubrics
