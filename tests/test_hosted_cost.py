"""Prices, usage.cost, cost per run and budgets of hosted judges, through the service,
against the fake provider (``tests/fakeprovider.py``) with fixed token counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakeprovider import FakeProvider, Limits
from prometheus_client.parser import text_string_to_metric_families
from test_api_support import app_client, settings_for

from rewardsvc.core.pool import JudgePool, Prices
from rewardsvc.core.results import Usage
from rewardsvc.core.verdict import Verdict
from rewardsvc.library.registry import Registry
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc_client import BudgetExceededError, Client, RewardServiceError
from rewardsvc_client._adapt import is_configuration_error

RUBRIC = """\
id: paid
criteria:
  - id: correct
    text: The response answers the question correctly.
  - id: polite
    text: The response is polite.
judges: [hosted]
"""
# OpenAI-style prices per million tokens: input, cached input, output.
PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}
# Every reply of the fake counts 100 prompt tokens (40 of them cached) and 1 completion token.
PER_CALL = (60 * 2.5 + 40 * 1.25 + 1 * 10.0) / 1e6  # 210e-6 by hand


def judge_samples(text: str, judge: str) -> dict[tuple[str, str], float]:
    """The judge call samples of a /metrics scrape for ``judge``: (sample name, token kind
    or latency bound) -> value."""
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("rewardsvc_judge_"):
            for sample in family.samples:
                if sample.labels.get("judge") == judge and not sample.name.endswith("_created"):
                    key = sample.labels.get("kind") or sample.labels.get("le", "")
                    found[sample.name, key] = sample.value
    return found


def library(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "paid.yaml").write_text(RUBRIC)
    return folder


def pool(url: str, **judge: Any) -> JudgePool:
    entry = {"model": "gpt-judge", "base_urls": [url], "retries": 0, "prices": PRICES, **judge}
    return JudgePool.model_validate({"judges": {"hosted": entry}})


def items(n: int, tag: str) -> list[dict[str, Any]]:
    return [
        {"id": f"{tag}{i}", "prompt": f"({tag}) What is {i}+{i}?", "completion": str(2 * i)}
        for i in range(n)
    ]


def test_prices_give_the_hand_computed_cost() -> None:
    prices = Prices.model_validate(PRICES)
    assert prices.cost(100, 40, 1) == pytest.approx(PER_CALL)
    # No cached price: cached tokens are input tokens.
    assert Prices(input=2.0, output=8.0).cost(1000, 400, 10) == pytest.approx(2080e-6)
    # A provider that counts more cached tokens than prompt tokens is not believed.
    assert prices.cost(10, 99, 0) == pytest.approx(10 * 1.25 / 1e6)


def test_usage_sums_costs_and_keeps_null_without_prices() -> None:
    usage = Usage()
    usage.called(Verdict(0.5, prompt_tokens=100, cached_tokens=40, completion_tokens=1))
    assert usage.cost is None and usage.cached_tokens == 40
    usage.called(Verdict(0.5, cost=PER_CALL))
    total = usage + Usage(cost=PER_CALL)
    assert total.cost == pytest.approx(2 * PER_CALL)
    assert (Usage() + Usage()).cost is None


async def test_usage_cost_matches_the_hand_computation(tmp_path: Path) -> None:
    limits = Limits(rpm=10_000, tpm=10_000_000, prompt_tokens=100, cached_tokens=40)
    log = tmp_path / "rewards.jsonl"
    with FakeProvider(limits) as provider:
        settings = settings_for(library(tmp_path / "rubrics"), reward_log=log)
        async with app_client(settings, pool(provider.url)) as (http, _, _):
            before = judge_samples((await http.get("/metrics")).text, "hosted")
            reply = await http.post(
                "/v1/rewards", json={"rubric": "paid", "items": items(3, "a"), "run": "r1"}
            )
            assert reply.status_code == 200, reply.text
            again = await http.post(
                "/v1/rewards", json={"rubric": "paid", "items": items(3, "a"), "run": "r1"}
            )
            report = (await http.get("/v1/monitor")).json()
            metrics = (await http.get("/metrics")).text
    usage = reply.json()["usage"]
    # 3 items x 2 criteria = 6 calls of 100 prompt tokens (40 cached) and 1 completion token.
    assert (usage["judge_calls"], usage["prompt_tokens"], usage["cached_tokens"]) == (6, 600, 240)
    assert usage["cost"] == pytest.approx(6 * PER_CALL)
    assert usage["cost_per_reward"] == pytest.approx(2 * PER_CALL)
    # The same items again come from the verdict cache: no call, no cost.
    assert again.json()["usage"]["cache_hits"] == 6
    assert again.json()["usage"]["cost"] is None
    (spent,) = [s for s in report["spend"] if s["run"] == "r1"]
    assert spent["cost"] == pytest.approx(6 * PER_CALL) and spent["rewards"] == 6
    assert spent["budget"] is None and not spent["exceeded"]
    assert f'rewardsvc_run_cost{{run="r1"}} {6 * PER_CALL!r}' in metrics
    assert 'rewardsvc_judge_cost_total{judge="hosted"}' in metrics
    # The judge call metrics, as served: 6 calls, their latencies and their tokens (the
    # cache hits of the second request are not calls).
    after = judge_samples(metrics, "hosted")
    added = {key: value - before.get(key, 0.0) for key, value in after.items()}
    assert added["rewardsvc_judge_calls_total", ""] == 6
    assert added["rewardsvc_judge_latency_seconds_count", ""] == 6
    assert added["rewardsvc_judge_latency_seconds_bucket", "+Inf"] == 6
    assert added["rewardsvc_judge_latency_seconds_sum", ""] > 0
    tokens = {kind: added["rewardsvc_judge_tokens_total", kind] for kind in ("prompt", "cached")}
    assert tokens == {"prompt": 600, "cached": 240}
    assert added["rewardsvc_judge_tokens_total", "completion"] == 6


async def test_a_budget_stops_the_run_at_its_cap_with_a_typed_error_and_an_alert(
    tmp_path: Path,
) -> None:
    limits = Limits(rpm=10_000, tpm=10_000_000, prompt_tokens=100, cached_tokens=40)
    log = tmp_path / "rewards.jsonl"
    # Two batches of 2 items (4 calls each): the cap is reached during the second.
    budget = 6 * PER_CALL
    with FakeProvider(limits) as provider:
        settings = settings_for(
            library(tmp_path / "rubrics"), reward_log=log, run_budgets={"capped": budget}
        )
        async with app_client(settings, pool(provider.url)) as (http, _, _):
            answers = []
            for n in range(3):
                body = {"rubric": "paid", "items": items(2, f"b{n}-"), "run": "capped"}
                answers.append(await http.post("/v1/rewards", json=body))
            other = await http.post(
                "/v1/rewards", json={"rubric": "paid", "items": items(1, "c"), "run": "free"}
            )
            slime = await http.post(
                "/slime/paid?run=capped", json={"prompt": "p", "response": "r", "label": "l"}
            )
            report = (await http.get("/v1/monitor", params={"run": "capped"})).json()
            metrics = (await http.get("/metrics")).text
    first, second, third = answers
    assert first.status_code == 200 and second.status_code == 200
    assert third.status_code == 402, third.text
    refused = third.json()
    assert refused["error"] == "budget_exceeded" and refused["field"] == "run"
    assert "capped" in refused["message"] and "budget" in refused["message"]
    assert slime.status_code == 402 and slime.json()["error"] == "budget_exceeded"
    assert other.status_code == 200  # other runs go on
    calls_made = sum(1 for _, status, _ in limits.log if status == 200)
    assert calls_made == 4 + 4 + 2  # nothing was sent for the refused requests
    (spent,) = report["spend"]
    assert spent["exceeded"] and spent["cost"] == pytest.approx(8 * PER_CALL)
    assert spent["exceeded_since"] is not None
    assert 'rewardsvc_run_budget_exceeded{run="capped"} 1.0' in metrics
    events = [json.loads(line) for line in log.read_text().splitlines()]
    alerts = [e for e in events if e.get("alert") == "budget_exceeded"]
    assert len(alerts) == 1, alerts
    assert alerts[0]["run"] == "capped" and alerts[0]["state"] == "firing"
    assert alerts[0]["threshold"] == pytest.approx(budget)


def test_a_rubric_naming_a_judge_that_cannot_do_its_method_is_refused(tmp_path: Path) -> None:
    folder = library(tmp_path / "rubrics")
    unable = pool("http://127.0.0.1:9/v1", capabilities={"top_logprobs": False})
    registry = Registry(folder, unable)
    assert registry.entries() == []
    (problems,) = registry.errors().values()
    text = str(problems[0])
    assert "paid.yaml" in text and "judges[0]" in text
    assert "method logprob" in text and "top_logprobs" in text
    # Inline rubrics meet the same check.
    with pytest.raises(InvalidFile, match="top_logprobs"):
        registry.validate_text(RUBRIC)
    # The same judge with a method it can do serves the rubric.
    sampled = pool("http://127.0.0.1:9/v1", capabilities={"top_logprobs": False}, method="sampled")
    assert [e.rubric.id for e in Registry(folder, sampled).entries()] == ["paid"]
    no_json = pool("http://127.0.0.1:9/v1", capabilities={"structured_outputs": False})
    (problems,) = Registry(folder, no_json).errors().values()
    assert "structured_outputs" in str(problems[0])


def test_the_client_raises_budget_exceeded_which_adapters_never_mask() -> None:
    body = {"error": "budget_exceeded", "message": "run 'capped' has cost ...", "field": "run"}
    answers = [httpx.Response(402, json=body)]

    def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    with (
        Client("http://rewardsvc.test", transport=httpx.MockTransport(handler)) as client,
        pytest.raises(BudgetExceededError) as raised,
    ):
        client.rewards("paid", [{"prompt": "p", "completion": "c"}])
    assert isinstance(raised.value, RewardServiceError)
    assert (raised.value.status_code, raised.value.field) == (402, "run")
    assert not answers  # asked once: a 402 is not retried
    assert is_configuration_error(raised.value)  # the adapters raise it, never a fallback
