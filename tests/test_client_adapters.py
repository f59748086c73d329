"""Trainer adapters of rewardsvc_client against a scripted local HTTP service.

These pin the adapters' own logic (what they send, how they map statuses, retries and
failures to what each trainer can take); tests/test_trainer_contracts.py runs them against
the real service and judges.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import math
import pickle
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import rewardsvc_client.openrlhf as openrlhf_adapter
from rewardsvc_client import verl as verl_adapter
from rewardsvc_client._adapt import status_numbers, to_reference, to_wire_text
from rewardsvc_client.openrlhf import make_reward_func, response_text
from rewardsvc_client.trl import TRLReward, trl_reward_func
from rewardsvc_client.verifiers import verifiers_group_reward_func, verifiers_reward_func

Script = Callable[[dict[str, Any]], list[dict[str, Any]] | tuple[int, dict[str, Any]]]


def by_completion(item: dict[str, Any]) -> dict[str, Any]:
    """Default verdicts: the completion text decides (a number, 'fail', 'reject', 'flag')."""
    text = item["completion"] if isinstance(item["completion"], str) else "0.5"
    if text == "fail":
        return {"reward": None, "status": "judge_error", "error": "judges failed"}
    if text == "reject":
        return {"reward": None, "status": "rejected", "error": "completion: too long"}
    if text == "flag":
        return {"reward": 0.2, "status": "degraded", "uncertainty": 0.3, "flags": ["fake_score"]}
    return {"reward": float(text), "status": "ok", "uncertainty": 0.05, "cached": True}


class FakeService:
    """POST /v1/rewards answered by ``script`` (items -> verdicts, or (status, body))."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: Script = lambda body: [by_completion(i) for i in body["items"]]
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests.append(body)
                service.headers.append(dict(self.headers))
                answer = service.script(body)
                if isinstance(answer, tuple):
                    status, payload = answer
                else:
                    status = 200
                    payload = {
                        "rubric": {"id": body["rubric"], "version": "sha256:x"},
                        "results": [
                            {"id": item["id"], "judges": {}, "flags": [], **verdict}
                            for item, verdict in zip(body["items"], answer, strict=True)
                        ],
                        "usage": {"judge_calls": len(answer)},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status in (429, 503):
                    self.send_header("Retry-After", "0")
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

    def items(self) -> list[dict[str, Any]]:
        return [item for body in self.requests for item in body["items"]]

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
    for name in ("REWARDSVC_URL", "REWARDSVC_RUBRIC", "REWARDSVC_API_KEY", "REWARDSVC_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("REWARDSVC_FAILURE_SCORE", raising=False)


# ------------------------------------------------------------------ shared helpers


def test_to_wire_text_keeps_tool_calls_reasoning_and_content_parts() -> None:
    class Msg:  # verifiers' pydantic messages read like this
        role = "assistant"
        content = ({"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {}})
        tool_calls = None

    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    assert to_wire_text("plain") == "plain"
    assert to_wire_text(None) == ""
    assert to_wire_text(
        [
            {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "x"},
            {"role": "tool", "content": "5", "tool_call_id": "c1"},
        ]
    ) == [
        {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "x"},
        {"role": "tool", "content": "5", "tool_call_id": "c1"},
    ]
    assert to_wire_text([Msg()]) == [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {}}],
        }
    ]
    assert to_wire_text({"role": "user", "content": "one"}) == [{"role": "user", "content": "one"}]
    assert to_wire_text(["not", "messages"]) == "['not', 'messages']"
    responses_item = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"}
    assert to_wire_text([responses_item]) == [responses_item]
    assert to_reference(5) == "5" and to_reference("") is None and to_reference(None) is None


def test_to_reference_joins_accepted_answers() -> None:
    np: Any = None
    if importlib.util.find_spec("numpy") is not None:
        import numpy as np
    assert to_reference(["  4 ", "four"]) == "4 | four"
    assert to_reference(("a", 2, None, "")) == "a | 2"
    assert to_reference([]) is None
    if np is not None:
        assert to_reference(np.array([" x", "y "])) == "x | y"


def test_to_reference_sends_structured_labels_as_json() -> None:
    """A code task's hidden cases or test files reach the service as JSON, which the code
    graders read (before: Python's str() of each case, joined by " | ")."""
    cases = [{"input": "1 2", "output": "3"}, {"input": "é", "output": "ok"}]
    assert json.loads(to_reference(cases) or "") == cases
    files = {"test_sum.py": "def test_one(): pass"}
    assert json.loads(to_reference(files) or "") == files
    assert to_reference({}) is None and to_reference([[]]) == "[[]]"
    if importlib.util.find_spec("numpy") is not None:
        import numpy as np

        wrapped = np.array([{"input": np.int64(2), "output": "2"}], dtype=object)
        assert json.loads(to_reference(wrapped) or "") == [{"input": 2, "output": "2"}]


def test_image_only_content_is_sent_for_the_service_to_flag() -> None:
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}
    assert to_wire_text([message]) == [message]


def test_status_numbers_have_fixed_keys() -> None:
    assert status_numbers(None).keys() == status_numbers(None).keys()
    from rewardsvc_client.types import RewardResult

    ok = status_numbers(RewardResult(id="0", reward=0.4, status="ok", uncertainty=0.2))
    assert ok.keys() == status_numbers(None).keys()
    assert ok["rewardsvc_valid"] == 1.0 and ok["rewardsvc_uncertainty"] == 0.2
    assert all(isinstance(v, float) for v in ok.values())


# ------------------------------------------------------------------ TRL


async def test_trl_reward_sends_one_batch_and_maps_statuses(fake: FakeService) -> None:
    reward = trl_reward_func(fake.url, "short-answer", reference_column="answer", api_key="k")
    assert reward.__name__ == "rewardsvc/short-answer"
    assert inspect.iscoroutinefunction(reward)
    metrics: dict[str, list[float]] = {}
    extra: dict[str, list[Any]] = {}

    class State:
        global_step = 7

    out = await reward(
        prompts=["p0", "p1", "p2", "p3"],
        completions=["0.9", "fail", "reject", "flag"],
        completion_ids=[[1], [2], [3], [4]],
        answer=[5, "b", None, "d"],
        trainer_state=State(),
        log_metric=lambda name, value: metrics.setdefault(name, []).append(value),
        log_extra=lambda column, values: extra.setdefault(column, []).extend(values),
    )
    assert out == [0.9, None, None, 0.2]
    assert len(fake.requests) == 1  # no judge_error retries for TRL: it masks None itself
    sent = fake.requests[0]["items"]
    assert [i.get("reference") for i in sent] == ["5", "b", None, "d"]
    assert all(i["metadata"]["step"] == 7 and i["metadata"]["trainer"] == "trl" for i in sent)
    assert fake.headers[0]["Authorization"] == "Bearer k"
    p = "rewardsvc/short-answer"
    assert metrics[f"{p}/ok"] == [0.25] and metrics[f"{p}/judge_error"] == [0.25]
    assert metrics[f"{p}/rejected"] == [0.25] and metrics[f"{p}/degraded"] == [0.25]
    assert metrics[f"{p}/uncertainty"] == [pytest.approx((0.05 + 0.3) / 2)]
    assert metrics[f"{p}/flagged"] == [0.25] and metrics[f"{p}/cached"] == [0.25]
    assert metrics[f"{p}/request_failed"] == [0.0]  # logged on success too, for TRL's mean
    assert extra[f"{p}/status"] == ["ok", "judge_error", "rejected", "degraded"]
    assert extra[f"{p}/flags"] == ["", "", "", "fake_score"]


async def test_trl_conversational_and_missing_column(fake: FakeService) -> None:
    reward = trl_reward_func(fake.url, "r", name="judge")
    assert reward.__name__ == "judge"
    out = await reward(
        [[{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]],
        [[{"role": "assistant", "content": "0.4"}]],
    )
    assert out == [0.5]  # message completions get the default 0.5 from the fake
    item = fake.requests[0]["items"][0]
    assert item["prompt"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    assert item["completion"] == [{"role": "assistant", "content": "0.4"}]
    assert "reference" not in item
    assert item["metadata"]["batch"] == 0
    await reward(["q"], ["0.1"])
    assert fake.requests[1]["items"][0]["metadata"]["batch"] == 1


async def test_trl_errors(fake: FakeService) -> None:
    fake.script = lambda body: (404, {"error": "unknown_rubric", "message": "no rubric"})
    reward = trl_reward_func(fake.url, "nope", on_error="none")
    with pytest.raises(Exception, match="unknown_rubric"):
        await reward(["q"], ["1"])  # a 4xx is a configuration error: always raised
    fake.script = lambda body: (500, {"error": "internal", "message": "boom"})
    metrics: dict[str, list[float]] = {}

    def log_metric(name: str, value: float) -> None:
        metrics.setdefault(name, []).append(value)

    assert await reward(["q", "q"], ["1", "1"], log_metric=log_metric) == [None, None]
    assert metrics == {"rewardsvc/nope/request_failed": [1.0]}
    strict = trl_reward_func(fake.url, "r", retries=0)
    with pytest.raises(Exception, match="boom"):
        await strict(["q"], ["1"])


async def test_trl_reward_object_pickles_and_is_async_callable(fake: FakeService) -> None:
    reward = trl_reward_func(fake.url, "r")
    impl: TRLReward = reward.rewardsvc  # type: ignore[attr-defined]
    await impl(["q"], ["0.3"])
    clone = pickle.loads(pickle.dumps(impl))
    assert clone.__name__ == "rewardsvc/r"
    assert inspect.iscoroutinefunction(type(clone).__call__)
    assert await clone(["q"], ["0.6"]) == [0.6]


def test_trl_reward_passes_trls_coroutine_check(fake: FakeService) -> None:
    # TRL awaits a reward function only when asyncio.iscoroutinefunction(f) is true.
    reward = trl_reward_func(fake.url, "r")
    assert asyncio.iscoroutinefunction(reward)
    assert asyncio.iscoroutinefunction(reward.rewardsvc)  # type: ignore[attr-defined]
    clone = pickle.loads(pickle.dumps(reward.rewardsvc))  # type: ignore[attr-defined]
    assert asyncio.iscoroutinefunction(clone)


def test_trl_config_from_environment(monkeypatch: pytest.MonkeyPatch, fake: FakeService) -> None:
    with pytest.raises(ValueError, match="REWARDSVC_URL"):
        trl_reward_func(None, "r")
    monkeypatch.setenv("REWARDSVC_URL", fake.url)
    monkeypatch.setenv("REWARDSVC_RUBRIC", "env-rubric")
    reward = trl_reward_func(None, None)
    assert reward.__name__ == "rewardsvc/env-rubric"
    assert asyncio.run(reward(["q"], ["0.2"])) == [0.2]
    # A second event loop gets its own connection pool.
    assert asyncio.run(reward(["q"], ["0.3"])) == [0.3]


# ------------------------------------------------------------------ veRL


async def test_verl_score_dict(fake: FakeService) -> None:
    out = await verl_adapter.compute_score_async(
        data_source="gsm8k",
        solution_str="0.75",
        ground_truth=42,
        extra_info={"question": "What?", "index": 3},
        url=fake.url,
        rubric="r",
        reward_router_address=None,  # veRL may pass more kwargs: ignored
    )
    assert out["score"] == 0.75 and out["rewardsvc_valid"] == 1.0
    item = fake.items()[0]
    assert item["prompt"] == "What?" and item["reference"] == "42"
    assert item["metadata"] == {"trainer": "verl", "data_source": "gsm8k"}


async def test_verl_failures_keep_the_same_keys(fake: FakeService) -> None:
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        calls["n"] += 1
        return [by_completion(i) for i in body["items"]]

    fake.script = script
    compute = verl_adapter.make_compute_score(
        fake.url, "r", judge_error_retries=2, judge_error_wait=0
    )
    ok = await compute("d", "0.5", "g", {"prompt": [{"role": "user", "content": "q"}]})
    start = calls["n"]
    failed = await compute("d", "fail", "g", {"question": "q"})
    assert calls["n"] - start == 3  # first try + 2 judge_error re-sends
    rejected = await compute("d", "reject", "g", {"question": "q"})
    assert ok.keys() == failed.keys() == rejected.keys()
    assert failed["score"] == 0.0 and failed["rewardsvc_valid"] == 0.0
    assert failed["rewardsvc_judge_error"] == 1.0
    assert rejected["rewardsvc_rejected"] == 1.0
    assert all(isinstance(v, float) and not math.isnan(v) for v in failed.values())
    assert fake.items()[0]["prompt"] == [{"role": "user", "content": "q"}]


async def test_verl_judge_error_recovers_on_retry(fake: FakeService) -> None:
    answers = iter([[{"reward": None, "status": "judge_error"}], [{"reward": 0.8, "status": "ok"}]])
    fake.script = lambda body: next(answers)
    out = await verl_adapter.compute_score_async(
        "d", "x", "g", {"question": "q"}, url=fake.url, rubric="r"
    )
    assert out["score"] == 0.8 and out["rewardsvc_valid"] == 1.0


async def test_verl_failure_score_and_outage(
    fake: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSVC_FAILURE_SCORE", "-1")
    compute = verl_adapter.make_compute_score(
        fake.url, "r", judge_error_retries=0, judge_error_wait=0
    )
    assert (await compute("d", "fail", "g", {"question": "q"}))["score"] == -1.0
    fake.script = lambda body: (503, {"error": "overloaded", "message": "busy"})
    # A saturated service is waited for until the adapter's timeout has run out.
    busy = verl_adapter.make_compute_score(fake.url, "r", failure_score=0.0, timeout=0.5)
    busy_settings = await busy("d", "x", "g", {"question": "q"})
    assert busy_settings["score"] == 0.0 and busy_settings["rewardsvc_request_failed"] == 1.0
    fake.script = lambda body: (401, {"error": "unauthorized", "message": "key"})
    with pytest.raises(Exception, match="unauthorized"):
        await busy("d", "x", "g", {"question": "q"})


# ------------------------------------------------------------------ OpenRLHF


@pytest.mark.parametrize(
    ("query", "prompt", "expected"),
    [
        ("<|im_start|>user\nq<|im_end|>\nA<|im_end|>", "<|im_start|>user\nq<|im_end|>\n", "A"),
        ("<s> [INST] q [/INST] answer</s>", "[INST] q [/INST]", " answer"),
        ("prompt and answer<|eot_id|><|end_of_text|>  ", "prompt and", " answer"),
        ("no prompt here<eos>", "zzz", "no prompt here"),
        # A policy repeating its prompt: the response starts after the first occurrence.
        ("<s> [INST] q [/INST] a [INST] q [/INST] b", "[INST] q [/INST]", " a [INST] q [/INST] b"),
    ],
)
def test_openrlhf_response_text(query: str, prompt: str, expected: str) -> None:
    assert response_text(query, prompt) == expected


def test_openrlhf_reward_func_shape(fake: FakeService) -> None:
    reward_func = make_reward_func(fake.url, "r", judge_error_retries=1, judge_error_wait=0)
    out = reward_func(["P0.25<|im_end|>", "Pfail", "Preject"], ["P", "P", "P"], ["5", "", None])
    assert out["rewards"] == [0.25, 0.0, 0.0] and out["scores"] == out["rewards"]
    assert set(out["extra_logs"]) == set(status_numbers(None))
    assert all(len(v) == 3 for v in out["extra_logs"].values())
    assert out["extra_logs"]["rewardsvc_valid"] == [1.0, 0.0, 0.0]
    sent = fake.items()
    assert sent[0]["completion"] == "0.25" and sent[0]["reference"] == "5"
    assert "reference" not in sent[1]


def test_openrlhf_module_hook_reads_the_environment(
    fake: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenRLHF loads the file by path under the module name "reward_func".
    path = Path(openrlhf_adapter.__file__)
    spec = importlib.util.spec_from_file_location("reward_func", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("REWARDSVC_URL", fake.url)
    monkeypatch.setenv("REWARDSVC_RUBRIC", "env-rubric")
    out = module.reward_func(["q 0.5"], ["q "], ["x"])
    assert out["rewards"] == [0.5]
    assert fake.requests[0]["rubric"] == "env-rubric"


def test_openrlhf_reward_func_pickles(fake: FakeService) -> None:
    reward_func = make_reward_func(fake.url, "r")
    assert reward_func(["q 0.5"], ["q "])["rewards"] == [0.5]  # a thread client exists now
    clone = pickle.loads(pickle.dumps(reward_func))
    assert clone(["q 0.25"], ["q "])["rewards"] == [0.25]


def _saturated_then_ok(fake: FakeService, busy: int, status: int = 429) -> dict[str, int]:
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] <= busy:
            return (status, {"error": "saturated", "message": "busy"})
        return [by_completion(i) for i in body["items"]]

    fake.script = script
    return calls


async def test_adapters_wait_out_a_saturated_service(
    fake: FakeService, caplog: pytest.LogCaptureFixture
) -> None:
    # retries=1: the client gives up after 2 answers; the adapter keeps going (Retry-After: 0).
    calls = _saturated_then_ok(fake, busy=5)
    compute = verl_adapter.make_compute_score(fake.url, "r", retries=1, timeout=30)
    with caplog.at_level("WARNING", logger="rewardsvc_client"):
        out = await compute("d", "0.75", "g", {"question": "q"})
    assert out["score"] == 0.75 and out["rewardsvc_valid"] == 1.0
    assert calls["n"] == 6
    assert not [r for r in caplog.records if r.levelname == "WARNING"]

    calls = _saturated_then_ok(fake, busy=4, status=503)
    reward_func = make_reward_func(fake.url, "r", retries=0, timeout=30)
    assert reward_func(["q 0.25"], ["q "])["rewards"] == [0.25]
    assert calls["n"] == 5

    calls = _saturated_then_ok(fake, busy=6)  # the client's default retries=3, plus 2
    group = verifiers_group_reward_func(fake.url, "r", timeout=30)
    assert await group(prompts=["a"], completions=["0.4"], answers=None, states=None) == [0.4]
    assert calls["n"] == 7


def test_failure_score_fallback_logs_a_warning(
    fake: FakeService, caplog: pytest.LogCaptureFixture
) -> None:
    reward_func = make_reward_func(
        fake.url, "r", judge_error_retries=0, judge_error_wait=0, failure_score=-1
    )
    with caplog.at_level("WARNING", logger="rewardsvc_client"):
        out = reward_func(["P0.5", "Pfail"], ["P", "P"])
    assert out["rewards"] == [0.5, -1.0]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "failure_score -1" in warnings[0]


def fail_after_first_request(fake: FakeService) -> dict[str, int]:
    """Script ``fake`` to score the first request and answer 500 to every later one.

    Returns the request counter (``{"n": requests so far}``).
    """
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return [by_completion(i) for i in body["items"]]
        return (500, {"error": "internal", "message": "boom"})

    fake.script = script
    return calls


def test_judge_error_resend_failure_keeps_scored_results(fake: FakeService) -> None:
    calls = fail_after_first_request(fake)
    reward_func = make_reward_func(
        fake.url, "r", judge_error_retries=3, judge_error_wait=0, retries=0
    )
    out = reward_func(["P0.5", "Pfail", "P0.75"], ["P", "P", "P"])
    assert out["rewards"] == [0.5, 0.0, 0.75]
    assert out["extra_logs"]["rewardsvc_judge_error"] == [0.0, 1.0, 0.0]
    assert calls["n"] == 2  # the first re-send failed: no more re-sends


async def test_judge_error_resend_failure_keeps_scored_results_async(fake: FakeService) -> None:
    calls = fail_after_first_request(fake)
    group = verifiers_group_reward_func(fake.url, "r", judge_error_retries=3)
    out = await group(prompts=["a", "b"], completions=["0.1", "fail"], answers=None, states=None)
    assert out == [0.1, 0.0] and calls["n"] == 2


# ------------------------------------------------------------------ verifiers


async def test_verifiers_functions(fake: FakeService) -> None:
    single = verifiers_reward_func(fake.url, "helpful-answer")
    group = verifiers_group_reward_func(
        fake.url, "helpful-answer", judge_error_retries=0, judge_error_wait=0
    )
    assert single.__name__ == group.__name__ == "rewardsvc_helpful_answer"
    # verifiers passes the parameters a function names: info carries a per-prompt rubric.
    assert set(inspect.signature(single).parameters) == {
        "prompt", "completion", "answer", "state", "info",
    }  # fmt: skip
    assert set(inspect.signature(group).parameters) == {
        "prompts",
        "completions",
        "answers",
        "states",
        "infos",
    }
    state: dict[str, Any] = {}
    assert await single(prompt="q", completion="0.7", answer="", state=state) == 0.7
    assert state["rewardsvc"]["status"] == "ok"
    assert "reference" not in fake.items()[0]
    states: list[dict[str, Any]] = [{}, {}]
    out = await group(
        prompts=["a", "b"], completions=["0.1", "fail"], answers=["x", "y"], states=states
    )
    assert out == [0.1, 0.0]
    assert states[1]["rewardsvc"]["status"] == "judge_error"
    assert [i["reference"] for i in fake.requests[-1]["items"]] == ["x", "y"]


async def test_verifiers_waits_out_a_judge_outage_like_the_other_adapters(
    fake: FakeService,
) -> None:
    # Judges fail for the first four answers (about 1 + 2 + 4 + 8 s of re-sending): the
    # classic adapter keeps re-sending, as the others do, instead of scoring failure_score
    # after its 2 retries.
    calls = {"n": 0}

    def script(body: dict[str, Any]) -> Any:
        calls["n"] += 1
        text = "fail" if calls["n"] <= 4 else "0.6"
        return [by_completion({**i, "completion": text}) for i in body["items"]]

    fake.script = script
    single = verifiers_reward_func(fake.url, "helpful-answer")
    state: dict[str, Any] = {}
    assert await single(prompt="q", completion="x", answer="", state=state) == 0.6
    assert state["rewardsvc"]["status"] == "ok" and calls["n"] == 5
