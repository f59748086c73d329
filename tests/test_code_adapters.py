"""Code tasks through the trainer adapters, on a real ``rewardsvc serve`` and the real
sandbox: a dataset's hidden test cases (a TRL column, a veRL ``ground_truth``: lists of
``{input, output}`` objects, as datasets hold them, and numpy arrays of them, as veRL's
non-tensor batch holds them) reach the ``io_cases`` grader as the item's reference, so a
right program earns 1.0 and a wrong one 0.0 (before, a structured label was sent as
Python's ``str()`` of it: no case could be read and every reward was missing)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Service, start_service, stop_service

from rewardsvc_client.trl import trl_reward_func
from rewardsvc_client.verl import compute_score, compute_score_async
from tests.debian import debian_binary

RECIPE = """\
kind: recipe
id: code-sum
description: Sums two integers read from stdin; the item's reference holds the hidden cases.
components:
  - id: cases
    grader: {type: io_cases, wall_s: 5, cpu_s: 2}
"""
CASES = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7", "output": "12"}]
RIGHT = "```python\nprint(sum(map(int, input().split())))\n```"
WRONG = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"


@pytest.fixture(scope="module")
def code_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A real service whose library is the ``code-sum`` recipe, on the real sandbox."""
    debian_binary("bwrap", "bubblewrap")
    folder = tmp_path_factory.mktemp("code-service")
    (folder / "rubrics" / "recipes").mkdir(parents=True)
    (folder / "rubrics" / "recipes" / "code-sum.yaml").write_text(RECIPE)
    running = start_service(
        {"REWARDSVC_RUBRICS_DIR": str(folder / "rubrics")}, Path(folder / "service.log")
    )
    yield running
    stop_service(running)


def test_trl_sends_the_tests_column_to_the_code_grader(code_service: Service) -> None:
    reward_func = trl_reward_func(code_service.url, "code-sum", reference_column="tests")
    prompts = ["Read two integers and print their sum."] * 2
    logged: dict[str, list[Any]] = {}
    # As GRPOTrainer._calculate_rewards calls an async reward function: the dataset's
    # other columns as lists, one value per completion.
    rewards = asyncio.run(
        reward_func(
            prompts=prompts,
            completions=[RIGHT, WRONG],
            completion_ids=[[1], [2]],
            tests=[CASES, CASES],
            log_extra=lambda column, values: logged.setdefault(column, []).extend(values),
            log_metric=lambda name, value: None,
        )
    )
    assert rewards == [1.0, 0.0], (rewards, logged, code_service.log.read_text()[-2000:])


@pytest.mark.parametrize(
    "ground_truth",
    [CASES, np.array(CASES, dtype=object)],
    ids=["list", "numpy"],
)
def test_verl_sends_the_ground_truth_cases_to_the_code_grader(
    code_service: Service, ground_truth: Any
) -> None:
    scores = [
        compute_score(
            "code/sum",
            solution,
            ground_truth,
            {"index": i},
            url=code_service.url,
            rubric="code-sum",
        )
        for i, solution in enumerate((RIGHT, WRONG))
    ]
    assert [s["score"] for s in scores] == [1.0, 0.0], scores


async def test_verl_async_scores_a_json_text_ground_truth(code_service: Service) -> None:
    """A dataset that stores its cases as JSON text already (many code datasets do) is sent
    unchanged."""
    got = await compute_score_async(
        "code/sum", RIGHT, json.dumps(CASES), None, url=code_service.url, rubric="code-sum"
    )
    assert got["score"] == 1.0 and not math.isnan(got["score"]), got
