"""rewardsvc_client's comparative calls (groups, preferences), group adapters and the
OpenRLHF agent helper against a scripted local service; one group against the real one."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from rewardsvc_client import AsyncClient, Client, RewardServiceError
from rewardsvc_client.agent import AgentRewarder, make_agent_rewarder
from rewardsvc_client.groups import (
    consecutive_groups,
    make_comparative_group_scorer,
    make_group_rm,
    trl_group_reward_func,
    verifiers_comparative_reward_func,
)
from rewardsvc_client.verifiers import verifiers_group_reward_func

Handler = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def group_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Rewards = float(completion) when every completion is a number; 'fail' fails the group."""
    results = []
    for group in body["groups"]:
        texts = [c if isinstance(c, str) else "0.5" for c in group["completions"]]
        if "fail" in texts:
            results.append(
                {
                    "id": group["id"],
                    "rewards": [None] * len(texts),
                    "status": "judge_error",
                    "error_kind": "sandbox_busy",
                }
            )
            continue
        results.append(
            {
                "id": group["id"],
                "rewards": [float(t) for t in texts],
                "position_consistency": 0.75,
                "status": "ok",
                "uncertainty": [0.1] * len(texts),
                "judges": {"primary": {"rewards": [float(t) for t in texts]}},
            }
        )
    usage = {
        "judge_calls": 2 * len(results),
        "cache_hits": len(results),
        "calls_by_order": {"order1": 1, "order2": 1},
    }
    return 200, {
        "rubric": {"id": body["rubric"], "version": "sha256:g"},
        "method": body.get("options", {}).get("method", "listwise"),
        "results": results,
        "usage": usage,
    }


def preference_answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    results = []
    for pair in body["pairs"]:
        ab = 0.9 if pair["a"] > pair["b"] else 0.2
        ba = 0.7 if pair["a"] > pair["b"] else 0.6
        results.append(
            {
                "id": pair["id"],
                "p_a_better": (ab + ba) / 2,
                "orders": {"ab": ab, "ba": ba},
                "consistent": (ab > 0.5) == (ba > 0.5),
                "label": "a" if (ab + ba) / 2 > 0.55 else "tie",
                "status": "ok",
            }
        )
    return 200, {
        "rubric": {"id": body["rubric"], "version": "sha256:p"},
        "results": results,
        "usage": {"judge_calls": 2 * len(results), "calls_by_order": {"ab": 1, "ba": 1}},
    }


class FakeService:
    """POST /v1/groups, /v1/preferences and /v1/rewards answered by per-path scripts."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.routes: dict[str, Handler] = {
            "/v1/groups": group_answer,
            "/v1/preferences": preference_answer,
        }
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests.append((self.path, body))
                status, payload = service.routes[self.path](body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()
    yield service
    service.close()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REWARDSVC_URL", "REWARDSVC_RUBRIC", "REWARDSVC_API_KEY", "REWARDSVC_RUN"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------ client calls


def test_client_groups_numbers_chunks_and_joins(fake: FakeService) -> None:
    groups = [
        {"prompt": "p1", "completions": ["0.1", "0.9"], "reference": "r"},
        {"id": "g2", "prompt": "p2", "completions": ["0.4", "0.6", "0.5"]},
    ]
    with Client(fake.url, max_batch=1) as client:
        response = client.groups(
            "helpful-answer", groups, {"method": "pairwise", "tournament": "all_pairs"}, run="r1"
        )
    bodies = fake.bodies("/v1/groups")
    assert len(bodies) == 2
    assert [b["groups"][0]["id"] for b in bodies] == ["0", "g2"]
    assert bodies[0]["options"] == {"method": "pairwise", "tournament": "all_pairs"}
    assert bodies[0]["run"] == "r1" and bodies[0]["groups"][0]["reference"] == "r"
    assert [r.id for r in response.results] == ["0", "g2"]
    assert response.results[0].rewards == [0.1, 0.9]
    assert response.results[1].rewards == [0.4, 0.6, 0.5]
    assert response.results[0].position_consistency == 0.75
    assert response.method == "pairwise" and response.rubric.version == "sha256:g"
    assert response.usage.judge_calls == 4
    assert response.usage.cache_hits == 2  # comparisons the service answered from its cache
    assert response.usage.calls_by_order == {"order1": 2, "order2": 2}
    with Client(fake.url) as client:
        prefs = client.preferences(
            "helpful-answer", [{"id": "x", "prompt": "p", "a": "b", "b": "a"}]
        )
    assert prefs.results[0].id == "x" and prefs.results[0].label == "a"
    assert fake.bodies("/v1/preferences")[0]["pairs"][0]["a"] == "b"


async def test_async_client_groups_and_preferences(fake: FakeService) -> None:
    async with AsyncClient(fake.url, max_batch=2) as client:
        groups = await client.groups(
            "helpful-answer", [{"prompt": "p", "completions": ["0.2", "fail"]}]
        )
        prefs = await client.preferences(
            "helpful-answer",
            [{"prompt": "p", "a": "z", "b": "a"}, {"prompt": "p", "a": "a", "b": "z"}],
            {"margin": 0.1},
            run="r2",
        )
    assert groups.results[0].status == "judge_error" and groups.results[0].rewards == [None, None]
    assert groups.results[0].error_kind == "sandbox_busy"
    (body,) = fake.bodies("/v1/preferences")
    assert body["run"] == "r2" and body["options"] == {"margin": 0.1}
    assert [p["id"] for p in body["pairs"]] == ["0", "1"]
    first, second = prefs.results
    assert first.orders == {"ab": 0.9, "ba": 0.7} and first.consistent is True
    assert first.label == "a" and first.p_a_better == pytest.approx(0.8)
    assert second.consistent is False and second.label == "tie"
    assert prefs.usage.calls_by_order == {"ab": 1, "ba": 1}


def test_client_groups_error_and_count_mismatch(fake: FakeService) -> None:
    fake.routes["/v1/groups"] = lambda body: (
        422,
        {"error": "invalid_request", "message": "bad", "field": "groups.0.completions"},
    )
    with Client(fake.url, retries=0) as client:
        with pytest.raises(RewardServiceError) as raised:
            client.groups("helpful-answer", [{"prompt": "p", "completions": []}])
        assert raised.value.status_code == 422 and raised.value.field == "groups.0.completions"
        fake.routes["/v1/groups"] = lambda body: (200, {"rubric": {}, "results": []})
        with pytest.raises(RewardServiceError, match="0 results for 1 groups"):
            client.groups("helpful-answer", [{"prompt": "p", "completions": ["1"]}])


# ------------------------------------------------------------------ group adapters


def test_consecutive_groups() -> None:
    assert consecutive_groups(["a", "a", "b", "b", "a"]) == [range(0, 2), range(2, 4), range(4, 5)]
    assert consecutive_groups(["a", "a", "a", "a"], 2) == [range(0, 2), range(2, 4)]
    with pytest.raises(ValueError):
        consecutive_groups(["a", "a", "a"], 2)


async def test_trl_group_reward_sends_each_prompt_as_a_group(fake: FakeService) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    tool_completion = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "5", "tool_call_id": "c1"},
        {"role": "assistant", "content": "5"},
    ]
    reward = trl_group_reward_func(
        fake.url, "helpful-answer", reference_column="answer", method="pairwise", run="r"
    )
    metrics: dict[str, float] = {}
    rewards = await reward(
        prompts=["p1", "p1", "p2", "p2", "p3", "p3"],
        completions=["0.3", "0.8", tool_completion, "0.1", "fail", "0.2"],
        answer=["a1", "a1", "a2", "a2", None, None],
        log_metric=metrics.__setitem__,
    )
    assert rewards == [0.3, 0.8, 0.5, 0.1, None, None]
    (body,) = fake.bodies("/v1/groups")
    assert body["options"]["method"] == "pairwise" and body["run"] == "r"
    assert [g["completions"][:1] for g in body["groups"]] == [["0.3"], [tool_completion], ["fail"]]
    assert [g.get("reference") for g in body["groups"]] == ["a1", "a2", None]
    assert metrics[f"{reward.__name__}/judge_error"] == pytest.approx(2 / 6)


async def test_trl_group_reward_by_num_generations(fake: FakeService) -> None:
    reward = trl_group_reward_func(fake.url, "helpful-answer", num_generations=3)
    rewards = await reward(prompts=["p"] * 6, completions=["0.1", "0.2", "0.3"] * 2)
    assert rewards == [0.1, 0.2, 0.3] * 2
    assert [len(g["completions"]) for g in fake.bodies("/v1/groups")[0]["groups"]] == [3, 3]
    with pytest.raises(ValueError, match="method"):
        trl_group_reward_func(fake.url, "helpful-answer", method="pointwise")


async def test_verifiers_comparative_fills_failures_and_annotates(fake: FakeService) -> None:
    reward = verifiers_comparative_reward_func(
        fake.url, "helpful-answer", failure_score=-1.0, judge_error_wait=0.0
    )
    states: list[dict[str, Any]] = [{}, {}, {}, {}]
    rewards = await reward(["p", "p", "q", "q"], ["0.6", "0.4", "fail", "0.1"], None, states)
    assert rewards == [0.6, 0.4, -1.0, -1.0]
    assert states[0]["rewardsvc"]["status"] == "ok"
    assert states[2]["rewardsvc"] == {"status": "judge_error", "reward": None}
    assert len(fake.bodies("/v1/groups")[0]["groups"]) == 2


async def test_slime_group_rm_method_and_removal(fake: FakeService) -> None:
    scorer = make_group_rm(fake.url, "helpful-answer", method="pairwise", judge_error_wait=0.0)
    samples = [
        SimpleNamespace(prompt="p", response=r, label="5", metadata={}, remove_sample=False)
        for r in ("0.9", "0.2")
    ]
    assert await scorer.group_rm(None, samples) == [0.9, 0.2]
    (body,) = fake.bodies("/v1/groups")
    assert body["options"]["method"] == "pairwise"
    assert body["groups"] == [
        {
            "id": "0",
            "prompt": "p",
            "completions": ["0.9", "0.2"],
            "metadata": {"trainer": "slime"},
            "reference": "5",
        }
    ]
    failing = [SimpleNamespace(prompt="p", response=r, metadata={}) for r in ("fail", "0.3")]
    assert await scorer.group_rm(None, failing) == [0.0, 0.0]
    assert all(s.remove_sample for s in failing)
    assert failing[0].metadata["rewardsvc"]["status"] == "judge_error"


class Trajectory:
    def __init__(self, answer: str) -> None:
        self.messages_and_choices = [
            {"role": "user", "content": "2+3?"},
            {"role": "assistant", "content": answer},
        ]
        self.reward = 0.0
        self.metrics: dict[str, float] = {}
        self.metadata = {"reference": "5"}

    def messages(self) -> list[dict[str, str]]:
        return self.messages_and_choices


class TrajectoryGroup:
    def __init__(self, trajectories: list[Any], *, metadata: Any = None, metrics: Any = None,
                 logs: Any = None) -> None:  # fmt: skip
        self.trajectories = [t for t in trajectories if not isinstance(t, BaseException)]
        self.exceptions = [t for t in trajectories if isinstance(t, BaseException)]
        self.metadata, self.metrics, self.logs = metadata or {}, metrics or {}, logs or []


async def test_art_comparative_scorer(fake: FakeService) -> None:
    def by_last_message(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        for group in body["groups"]:
            group["completions"] = [c[-1]["content"] for c in group["completions"]]
        return group_answer(body)

    fake.routes["/v1/groups"] = by_last_message
    score = make_comparative_group_scorer(fake.url, "helpful-answer", judge_error_wait=0.0)
    scored = await score(TrajectoryGroup([Trajectory("0.7"), Trajectory("0.2")]))
    assert [t.reward for t in scored.trajectories] == [0.7, 0.2]
    assert scored.trajectories[0].metrics["rewardsvc_position_consistency"] == 0.75
    (body,) = fake.bodies("/v1/groups")
    assert body["groups"][0]["prompt"] == [{"role": "user", "content": "2+3?"}]
    assert body["groups"][0]["reference"] == "5"
    assert await score(TrajectoryGroup([Trajectory("fail"), Trajectory("0.2")])) is None


async def test_verifiers_view_final_or_trace(fake: FakeService) -> None:
    seen: list[Any] = []

    def rewards(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        seen.extend(item["completion"] for item in body["items"])
        results = [{"id": i["id"], "reward": 0.5, "status": "ok"} for i in body["items"]]
        return 200, {"rubric": {"id": "x", "version": "v"}, "results": results}

    fake.routes["/v1/rewards"] = rewards
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    completion = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "out", "tool_call_id": "c"},
        {"role": "assistant", "content": "done"},
    ]
    trace = verifiers_group_reward_func(fake.url, "helpful-answer")
    final = verifiers_group_reward_func(fake.url, "helpful-answer", view="final")
    assert await trace(["p"], [completion]) == [0.5]
    assert await final(["p"], [completion]) == [0.5]
    assert seen == [completion, [{"role": "assistant", "content": "done"}]]
    with pytest.raises(ValueError, match="view"):
        verifiers_group_reward_func(fake.url, "helpful-answer", view="tools")


# ------------------------------------------------------------------ OpenRLHF agent helper


async def test_openrlhf_agent_step_returns_per_turn_rewards(fake: FakeService) -> None:
    step_rewards = [0.2, 0.9]
    seen: list[dict[str, Any]] = []

    def rewards(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        (item,) = body["items"]
        seen.append(item)
        turns = sum(m["role"] == "assistant" for m in item["completion"])
        steps = [
            {"index": i, "reward": step_rewards[i], "status": "ok", "criteria": {}}
            for i in range(turns)
        ]
        result = {"id": "0", "reward": min(s["reward"] for s in steps), "status": "ok"}
        result["steps"] = steps
        return 200, {"rubric": {"id": "x", "version": "v"}, "results": [result]}

    fake.routes["/v1/rewards"] = rewards

    async def environment(action: str, label: Any) -> tuple[str, bool]:
        return f"checked {action}", False

    rewarder = make_agent_rewarder(
        fake.url, "agent-process", environment=environment, max_turns=2, run="r"
    )
    first = await rewarder.step({"observation_text": "task", "action_text": "a1", "label": "5"})
    second = await rewarder.step({"observation_text": "task...", "action_text": "a2"})
    assert set(first) == {
        "rewards",
        "scores",
        "environment_feedback",
        "done",
        "sampling_params",
        "extra_logs",
    }
    assert float(first["rewards"]) == pytest.approx(0.2)
    assert float(second["rewards"]) == pytest.approx(0.9)
    assert first["done"] is False and second["done"] is True
    assert first["environment_feedback"] == "checked a1"
    assert all(isinstance(v, float) for v in second["extra_logs"].values())
    assert second["extra_logs"]["rewardsvc_trajectory_reward"] == pytest.approx(0.2)
    assert seen[0]["prompt"] == "task" and seen[0]["reference"] == "5"
    assert seen[1]["completion"] == [
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "checked a1"},
        {"role": "assistant", "content": "a2"},
    ]


async def test_openrlhf_agent_failure_is_flagged(fake: FakeService) -> None:
    fake.routes["/v1/rewards"] = lambda body: (
        200,
        {
            "rubric": {"id": "x", "version": "v"},
            "results": [{"id": "0", "reward": None, "status": "judge_error"}],
        },
    )
    rewarder = make_agent_rewarder(fake.url, "agent-process", failure_score=0.0)
    rewarder.judge_error_wait = 0.0
    assert isinstance(rewarder, AgentRewarder)
    out = await rewarder.step({"observation_text": "t", "action_text": "a"})
    assert float(out["rewards"]) == 0.0 and out["done"] is True
    assert out["extra_logs"]["rewardsvc_valid"] == 0.0
    assert out["extra_logs"]["rewardsvc_judge_error"] == 1.0


# ------------------------------------------------------------------ the real service


@pytest.mark.judges
def test_groups_against_the_real_service(service: Any) -> None:
    completions = ["Paris.", "The capital of France is Paris.", "London.", "I do not know."]
    with Client(service.url, timeout=600) as client:
        response = client.groups(
            "short-answer-correctness",
            [
                {
                    "prompt": "Capital of France? One word.",
                    "completions": completions,
                    "reference": "Paris",
                }
            ],
            {"method": "listwise", "orders": 2},
        )
    (result,) = response.results
    assert len(result.rewards) == 4
    assert result.status in ("ok", "degraded")
    assert all(r is None or 0.0 <= r <= 1.0 for r in result.rewards)
    assert response.usage.judge_calls >= 2
    # Listwise with 2 orders asks the judge in each order.
    assert {"order1", "order2"} <= set(response.usage.calls_by_order)


async def test_openrlhf_agent_turn_without_a_step_reward_is_not_valid(fake: FakeService) -> None:
    # The trajectory has a reward but no judge scored the latest step: the turn's stand-in
    # reward must be flagged, not logged as valid.
    step = {"index": 0, "reward": None, "status": "judge_error", "criteria": {}}
    result = {"id": "0", "reward": 0.7, "status": "degraded", "steps": [step]}
    fake.routes["/v1/rewards"] = lambda body: (
        200,
        {"rubric": {"id": "x", "version": "v"}, "results": [result]},
    )
    rewarder = make_agent_rewarder(fake.url, "agent-process", failure_score=0.0)
    out = await rewarder.step({"observation_text": "t", "action_text": "a"})
    assert float(out["rewards"]) == 0.0
    assert out["extra_logs"]["rewardsvc_valid"] == 0.0
    assert out["extra_logs"]["rewardsvc_trajectory_reward"] == pytest.approx(0.7)
