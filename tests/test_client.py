"""rewardsvc_client.Client / AsyncClient against scripted HTTP answers (no service needed)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from rewardsvc_client import AsyncClient, Client, RewardResponse, RewardServiceError, StageUsage
from rewardsvc_client.client import _normalize_base_url, _retry_after_seconds

URL = "http://rewards.test:8000"


def result(item: dict[str, Any], reward: float | None = 0.5, status: str = "ok") -> dict[str, Any]:
    return {
        "id": item["id"],
        "reward": reward,
        "status": status,
        "uncertainty": 0.1 if reward is not None else None,
        "judges": {"primary": {"score": reward, "criteria": {}}},
        "flags": [],
        "cached": False,
        "error": None,
    }


def echo_body(request: httpx.Request, reward_of: Callable[[dict], float | None] | None = None):
    """A RewardResponse for the request's items: reward = float(completion) by default."""
    body = json.loads(request.content)
    reward_of = reward_of or (lambda item: float(item["completion"]))
    return {
        "rubric": {"id": body["rubric"], "version": "sha256:test"},
        "results": [result(item, reward_of(item)) for item in body["items"]],
        "usage": {"judge_calls": len(body["items"]), "latency_ms": 1.5},
    }


class Recorder:
    """A MockTransport handler that records requests and answers from a script."""

    def __init__(self, answers: list[httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.answers = list(answers or [])

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.answers:
            return self.answers.pop(0)
        return httpx.Response(200, json=echo_body(request))

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def items(n: int) -> list[dict[str, Any]]:
    return [{"prompt": f"q{i}", "completion": str(i / 10)} for i in range(n)]


def test_batches_are_split_numbered_globally_and_joined_in_order() -> None:
    rec = Recorder()
    with Client(URL, max_batch=2, transport=httpx.MockTransport(rec)) as client:
        response = client.rewards("helpful-answer", items(5))
    assert [len(b["items"]) for b in rec.bodies()] == [2, 2, 1]
    # ids are indexes in the whole batch, not restarting per chunk
    assert [i["id"] for b in rec.bodies() for i in b["items"]] == ["0", "1", "2", "3", "4"]
    assert [r.id for r in response.results] == ["0", "1", "2", "3", "4"]
    assert response.rewards == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert response.usage.judge_calls == 5
    assert response.usage.latency_ms == pytest.approx(4.5)
    assert response.rubric.id == "helpful-answer"
    assert all("options" not in b for b in rec.bodies())


def test_given_ids_and_options_are_sent_unchanged() -> None:
    rec = Recorder()
    with Client(URL, transport=httpx.MockTransport(rec)) as client:
        client.rewards(
            "r",
            [{"id": "a", "prompt": "p", "completion": "1", "reference": "x"}],
            {"judges": ["primary"]},
        )
    body = rec.bodies()[0]
    assert body["items"] == [{"id": "a", "prompt": "p", "completion": "1", "reference": "x"}]
    assert body["options"] == {"judges": ["primary"]}


def test_inline_rubric_is_sent_as_object() -> None:
    rec = Recorder(
        [httpx.Response(200, json={"rubric": {"id": "x", "version": "v"}, "results": []})]
    )
    inline = {"id": "x", "criteria": [{"id": "c", "text": "t"}]}
    with (
        Client(URL, transport=httpx.MockTransport(rec)) as client,
        pytest.raises(RewardServiceError, match="0 results for 1 items"),
    ):
        client.rewards(inline, items(1))
    assert rec.bodies()[0]["rubric"] == inline


def test_empty_items_make_no_request() -> None:
    rec = Recorder()
    with Client(URL, transport=httpx.MockTransport(rec)) as client:
        assert client.rewards("r", []).results == []
    assert rec.requests == []


def test_api_key_is_a_bearer_header() -> None:
    rec = Recorder()
    with Client(URL, api_key="k-123", transport=httpx.MockTransport(rec)) as client:
        client.rewards("r", items(1))
    assert rec.requests[0].headers["Authorization"] == "Bearer k-123"
    assert rec.requests[0].url.path == "/v1/rewards"


@pytest.mark.parametrize(
    "given", [URL, URL + "/", URL + "/v1", URL + "/v1/", URL + "/v1/rewards", f"  {URL}  "]
)
def test_base_url_forms(given: str) -> None:
    assert _normalize_base_url(given) == URL


def test_retry_after_forms() -> None:
    assert _retry_after_seconds("3") == 3.0
    assert _retry_after_seconds("0.25") == 0.25
    assert _retry_after_seconds(None) is None
    assert _retry_after_seconds("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (_retry_after_seconds(later) or 0) <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert _retry_after_seconds(past) == 0.0


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_overload_answers_are_retried_honouring_retry_after(status: int) -> None:
    rec = Recorder([httpx.Response(status, headers={"Retry-After": "0.2"})])
    with Client(URL, retries=2, transport=httpx.MockTransport(rec)) as client:
        started = time.monotonic()
        response = client.rewards("r", items(2))
        waited = time.monotonic() - started
    assert len(rec.requests) == 2
    assert waited >= 0.2
    assert response.rewards == pytest.approx([0.0, 0.1])


def test_retry_after_is_capped_by_max_retry_wait() -> None:
    rec = Recorder([httpx.Response(503, headers={"Retry-After": "3600"})])
    with Client(URL, max_retry_wait=0.05, transport=httpx.MockTransport(rec)) as client:
        started = time.monotonic()
        client.rewards("r", items(1))
    assert time.monotonic() - started < 5
    assert len(rec.requests) == 2


def test_retries_are_bounded() -> None:
    rec = Recorder([httpx.Response(503, headers={"Retry-After": "0"}) for _ in range(10)])
    with (
        Client(URL, retries=2, transport=httpx.MockTransport(rec)) as client,
        pytest.raises(RewardServiceError) as info,
    ):
        client.rewards("r", items(1))
    assert info.value.status_code == 503
    assert len(rec.requests) == 3  # first try + 2 retries


def test_client_errors_are_not_retried_and_carry_the_service_detail() -> None:
    detail = {"error": "invalid_request", "message": "bad judge", "field": "options.judges"}
    rec = Recorder([httpx.Response(422, json=detail)])
    with (
        Client(URL, transport=httpx.MockTransport(rec)) as client,
        pytest.raises(RewardServiceError) as info,
    ):
        client.rewards("r", items(1))
    assert len(rec.requests) == 1
    err = info.value
    assert (err.status_code, err.error, err.field) == (422, "invalid_request", "options.judges")
    assert "bad judge" in str(err) and "options.judges" in str(err)


def test_plain_fastapi_error_body_and_non_json_body() -> None:
    rec = Recorder(
        [httpx.Response(404, json={"detail": "Not Found"}), httpx.Response(500, text="boom")]
    )
    with Client(URL, transport=httpx.MockTransport(rec)) as client:
        with pytest.raises(RewardServiceError, match="Not Found"):
            client.rewards("r", items(1))
        with pytest.raises(RewardServiceError, match="boom") as info:
            client.rewards("r", items(1))
    assert info.value.status_code == 500


def test_unreachable_service_raises_with_no_status() -> None:
    # Port 9 (discard) on localhost: nothing listens; no transport retries to stay fast.
    with (
        Client("http://127.0.0.1:9", retries=0, timeout=2) as client,
        pytest.raises(RewardServiceError, match="cannot reach") as info,
    ):
        client.rewards("r", items(1))
    assert info.value.status_code is None


def test_unreadable_success_body_is_an_error() -> None:
    rec = Recorder([httpx.Response(200, text="<html>proxy</html>")])
    with (
        Client(URL, transport=httpx.MockTransport(rec)) as client,
        pytest.raises(RewardServiceError, match="unreadable"),
    ):
        client.rewards("r", items(1))


def test_score_returns_the_reward_or_none() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        item = body["items"][0]
        if item["completion"] == "fail":
            return httpx.Response(
                200,
                json={
                    "rubric": {"id": "r", "version": "v"},
                    "results": [result(item, None, "judge_error")],
                    "usage": {},
                },
            )
        assert item["reference"] == "ref"
        return httpx.Response(200, json=echo_body(request))

    with Client(URL, transport=httpx.MockTransport(handler)) as client:
        assert client.score("r", "p", "0.7", reference="ref") == pytest.approx(0.7)
        assert client.score("r", "p", "fail", reference="ref") is None


def test_response_parsing_ignores_unknown_keys() -> None:
    parsed = RewardResponse.from_json(
        {
            "rubric": {"id": "r", "version": "v", "new": 1},
            "results": [{"id": "0", "reward": 1, "status": "ok", "future_field": [1]}],
            "usage": {"judge_calls": 2, "other": 3},
            "extra": True,
        }
    )
    assert parsed.results[0].reward == 1.0 and parsed.results[0].scored
    assert parsed.usage.judge_calls == 2


def cascade_body(request: httpx.Request) -> dict[str, Any]:
    """An echo answer from a two-stage cascade: the first stage answers every item, the
    second (priced) is asked again of the first item of the chunk only."""
    body = echo_body(request)
    n = len(json.loads(request.content)["items"])
    first = {"judges": ["small"], "questions": n, "judge_calls": n, "prompt_tokens": 10 * n}
    second = {"judges": ["big", "bigger"], "questions": 1, "judge_calls": 2, "cost": 0.25}
    body["usage"]["stages"] = [first, second] if n > 1 else [first]
    return body


def test_usage_stages_are_read_and_summed_stage_by_stage_over_chunks() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=cascade_body(request))

    with Client(URL, max_batch=2, transport=httpx.MockTransport(handler)) as client:
        one = client.rewards("r", items(2))
        response = client.rewards("r", items(5))
    assert one.usage.stages == [
        StageUsage(["small"], questions=2, judge_calls=2, prompt_tokens=20),
        StageUsage(["big", "bigger"], questions=1, judge_calls=2, cost=0.25),
    ]
    # Chunks of 2, 2 and 1 items: the last one escalated nothing.
    first, second = response.usage.stages
    assert (first.judges, first.questions, first.prompt_tokens, first.cost) == (
        ["small"],
        5,
        50,
        None,
    )
    assert (second.judges, second.questions, second.judge_calls) == (["big", "bigger"], 2, 4)
    assert second.cost == pytest.approx(0.5)
    assert RewardResponse.from_json({"results": [], "usage": {}}).usage.stages == []


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        Client(URL, max_batch=0)
    with pytest.raises(ValueError):
        Client(URL, retries=-1)
    with pytest.raises(ValueError):
        Client("  ")
    with Client(URL, transport=httpx.MockTransport(Recorder())) as client, pytest.raises(TypeError):
        client.rewards("r", {"prompt": "p", "completion": "c"})  # type: ignore[arg-type]


async def test_async_chunks_run_concurrently_and_join_in_order() -> None:
    in_flight = 0
    peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        body = json.loads(request.content)
        # Later chunks answer first, to prove the join is by position, not arrival.
        await asyncio.sleep(0.05 * (10 - int(body["items"][0]["id"])) / 10)
        in_flight -= 1
        return httpx.Response(200, json=echo_body(request))

    async with AsyncClient(
        URL, max_batch=2, max_concurrent_batches=3, transport=httpx.MockTransport(handler)
    ) as client:
        response = await client.rewards("r", items(9))
    assert [r.id for r in response.results] == [str(i) for i in range(9)]
    assert response.rewards == pytest.approx([i / 10 for i in range(9)])
    assert peak == 3
    assert response.usage.judge_calls == 9


async def test_async_retry_and_errors() -> None:
    rec = Recorder(
        [
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(401, json={"error": "unauthorized", "message": "missing API key"}),
        ]
    )
    async with AsyncClient(URL, transport=httpx.MockTransport(rec)) as client:
        with pytest.raises(RewardServiceError) as info:
            await client.rewards("r", items(1))
    assert info.value.status_code == 401 and info.value.error == "unauthorized"
    assert len(rec.requests) == 2


async def test_async_score() -> None:
    async with AsyncClient(URL, transport=httpx.MockTransport(Recorder())) as client:
        assert await client.score("r", [{"role": "user", "content": "q"}], "0.3") == 0.3


def test_the_clients_usage_reads_every_figure_the_service_reports() -> None:
    """On the base the client dropped judge_calls_skipped, grader_calls and cost_per_reward."""
    from dataclasses import fields

    from rewardsvc.protocol import rewards as wire
    from rewardsvc_client.types import Usage as ClientUsage

    summed = {f.name for f in fields(ClientUsage)}
    assert set(wire.Usage.model_fields) - summed == {"cost_per_reward"}
    assert {f.name for f in fields(StageUsage)} == set(wire.StageUsage.model_fields)
    usage = {"judge_calls": 1, "judge_calls_skipped": 4, "grader_calls": 3, "cost": 0.5}
    one = RewardResponse.from_json({"results": [], "usage": usage}).usage
    assert (one + one).judge_calls_skipped == 8 and (one + one).grader_calls == 6
    body = {"results": [{"id": "0", "reward": 1, "status": "ok"}] * 2, "usage": usage}
    assert RewardResponse.from_json(body).cost_per_reward == 0.25
