"""Reward-model judges against a scripted pooling server: the request bodies, the routes at
the server root, the typed failures (wrong step count, HTTP errors, questions asked of an
RM), configuration and explain. The real wire format is proven against vLLM in
test_judge_kinds_reward_model*.py; this server answers in the shapes recorded there from
vLLM 0.32.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from explaining import explain
from fakejudge import RecordingObserver, free_port
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from rewardsvc.application.targets import score_batch
from rewardsvc.core.aggregate import HOLISTIC
from rewardsvc.core.pool import JudgeConfig, JudgePool, Prices, RewardModelSettings
from rewardsvc.core.rollout import Rollout
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.asks import CriterionOnItem, WholeItem
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.registry import load_pool
from rewardsvc.library.yamlfile import InvalidFile
from rewardsvc.scoring.engine import Engine


@dataclass
class Pooling:
    """What the scripted server answers: ``logit`` for an item, ``rows`` step rows (None:
    one per place ``separator`` starts in the last message, as a tokenizer may find it),
    or ``status`` an HTTP error."""

    logit: float = 0.5
    rows: list[list[float]] | None = None
    status: int = 200
    separator: str = "<file_sep>"
    bodies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def app_of(script: Pooling) -> FastAPI:
    app = FastAPI()

    def reply(path: str, body: dict[str, Any], data: list[dict[str, Any]]) -> JSONResponse:
        script.bodies.append((path, body))
        if script.status != 200:
            return JSONResponse({"error": {"message": "no"}}, status_code=script.status)
        usage = {"prompt_tokens": 11, "total_tokens": 11, "completion_tokens": 0}
        return JSONResponse(
            {"object": "list", "model": body["model"], "data": data, "usage": usage}
        )

    @app.post("/classify")
    async def classify(request: Request) -> JSONResponse:
        body = await request.json()
        return reply("/classify", body, [{"index": 0, "probs": [script.logit], "num_classes": 1}])

    @app.post("/pooling")
    async def pooling(request: Request) -> JSONResponse:
        body = await request.json()
        if body["task"] == "classify":
            return reply("/pooling", body, [{"index": 0, "data": [script.logit]}])
        content = body["messages"][-1]["content"]
        steps = len(re.findall(f"(?={re.escape(script.separator)})", content))
        rows = script.rows if script.rows is not None else [[0.1 * k] for k in range(steps)]
        return reply("/pooling", body, [{"index": 0, "object": "pooling", "data": rows}])

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "rm"}]}

    return app


@pytest.fixture
def server() -> Iterator[tuple[Pooling, str]]:
    script = Pooling()
    port = free_port()
    config = uvicorn.Config(app_of(script), host="127.0.0.1", port=port, log_level="warning")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.01)
    yield script, f"http://127.0.0.1:{port}/v1"
    running.should_exit = True
    thread.join(timeout=10)


def config(url: str, **settings: Any) -> JudgeConfig:
    return JudgeConfig(
        model="rm",
        base_urls=[url],
        method="reward_model",
        retries=0,
        reward_model=RewardModelSettings(**settings),
    )


STEPS = Rubric.model_validate(
    {
        "id": "s",
        "criteria": [
            {"id": "final", "text": "Right."},
            {"id": "step", "text": "Helps.", "scope": "step"},
        ],
        "judges": ["rm"],
    }
)
ITEM = {
    "id": "a",
    "prompt": "Add.",
    "completion": [
        {"role": "assistant", "content": "One <file_sep> two."},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "Three.<|im_end|>"},
    ],
}


def test_settings_belong_to_reward_model_judges_only() -> None:
    with pytest.raises(ValidationError, match="reward_model"):
        JudgeConfig(model="m", base_urls=["http://h/v1"], reward_model={"label": 1})
    assert Judge("rm", JudgeConfig(model="m", base_urls=["http://h/v1"], method="reward_model"))


async def test_item_body_goes_to_the_root_and_reads_the_logit(server: tuple[Pooling, str]) -> None:
    script, url = server
    for endpoint, path in (("classify", "/classify"), ("pooling", "/pooling")):
        judge = Judge("rm", config(url, endpoint=endpoint, center=0.5))
        verdict = await judge.ask(WholeItem(Rollout("Q?", "A <|im_end|> B")))
        await judge.aclose()
        assert verdict.ok and verdict.score == pytest.approx(0.5)  # sigmoid(0.5 - 0.5)
        assert verdict.prompt_tokens == 11 and verdict.variance == 0.0
        sent_path, body = script.bodies[-1]
        assert sent_path == path and body["model"] == "rm" and body["use_activation"] is False
        assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
        assert "<|im_end|>" not in body["messages"][1]["content"]  # defused
        assert body.get("task") == (None if endpoint == "classify" else "classify")


async def test_process_rewards_one_call_and_a_miscount_fails_every_step(
    server: tuple[Pooling, str],
) -> None:
    script, url = server
    observer = RecordingObserver()
    pool = JudgePool(judges={"rm": config(url, step_separator="<file_sep>")})
    engine = Engine(build_judges(pool, observer))
    good = (await score_batch(engine, STEPS, [ITEM])).results[0]
    # The policy's own "<file_sep>" was broken: two steps, two separators, ONE call for
    # both steps and the item (its last step's score).
    assert good.status == "ok" and good.steps is not None
    assert [s.reward for s in good.steps] == pytest.approx([0.5, 0.52497918747894], abs=1e-9)
    assert good.judges["rm"].criteria.keys() == {HOLISTIC}
    assert [b["task"] for _, b in script.bodies] == ["token_classify"]
    assert good.judges["rm"].score == pytest.approx(good.steps[-1].reward)
    script.rows = [[0.0]]
    bad = (await score_batch(engine, STEPS, [dict(ITEM, id="b", prompt="Again.")])).results[0]
    await engine.aclose()
    assert bad.status == "judge_error" and bad.steps is not None
    assert all(
        s.reward is None and "1 step scores for 2 steps" in (s.error or "") for s in bad.steps
    )
    assert bad.judges["rm"].score is None
    assert observer.errors("rm", "unparseable") == 1  # one call for the item and its steps


async def test_http_errors_and_questions_are_typed_failures(server: tuple[Pooling, str]) -> None:
    script, url = server
    script.status = 501
    judge = Judge("rm", config(url))
    failed = await judge.ask(WholeItem(Rollout("Q?", "A")))
    asked = await judge.ask(CriterionOnItem(STEPS, STEPS.criteria[0], Rollout("Q?", "A")))
    await judge.aclose()
    assert failed.score is None and failed.error_kind == "http_5xx"
    assert asked.score is None and asked.error_kind == "internal"
    assert len(script.bodies) == 1  # the criterion was never sent


async def test_explain_shows_the_conversations() -> None:
    url = "http://127.0.0.1:1/v1"
    rollout = Rollout("Q?", "A")
    seen = (await explain(STEPS, rollout, {"rm": config(url, step_separator="<file_sep>")}))["rm"]
    assert seen[HOLISTIC] == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": "A<file_sep>"},
    ]
    assert list(seen) == [HOLISTIC, "_holistic@step0"]


async def test_a_policy_cannot_add_steps_with_a_separator_that_overlaps_itself(
    server: tuple[Pooling, str],
) -> None:
    """6da7304 broke ``"\\n\\n"`` once per match, left to right: three newlines kept a whole
    separator, and a step ending in a newline made one with the separator after it. The
    rows no longer matched the steps ("5 step scores for 2 steps"): judge_error."""
    script, url = server
    script.separator = "\n\n"
    pool = JudgePool(judges={"rm": config(url, step_separator="\n\n")})
    engine = Engine(build_judges(pool))
    item = {
        "id": "nl",
        "prompt": "Add.\n\n\nup",
        "completion": [
            {"role": "assistant", "content": "One\n\n\ntwo\n"},
            {"role": "user", "content": "go on"},
            {"role": "assistant", "content": "\n\nThree.\n"},
        ],
    }
    result = (await score_batch(engine, STEPS, [item])).results[0]
    await engine.aclose()
    assert result.status == "ok", result.error
    assert result.steps is not None and len(result.steps) == 2
    assert all(s.reward is not None for s in result.steps)
    ((_, body),) = script.bodies
    assert "\n\n" not in body["messages"][0]["content"]  # the task cannot fake one either


def test_a_one_character_step_separator_is_refused_with_file_and_line(tmp_path: Path) -> None:
    """6da7304 took ``step_separator: "\\n"``: one character cannot be broken, so a policy
    that writes it adds steps and knocks the judge out for its items."""
    path = tmp_path / "judges.yaml"
    path.write_text(
        "judges:\n"
        "  prm:\n"
        "    model: m\n"
        "    base_urls: [http://127.0.0.1:1/v1]\n"
        "    method: reward_model\n"
        "    reward_model:\n"
        '      step_separator: "\\n"\n'
    )
    with pytest.raises(InvalidFile) as caught:
        load_pool(path)
    (problem,) = caught.value.problems
    assert problem.line == 7 and problem.path.endswith("reward_model.step_separator")
    assert "one character, which cannot be broken" in problem.message
    assert RewardModelSettings(step_separator="ки").step_separator == "ки"


async def test_a_reward_model_call_is_priced_like_every_judge_call(
    server: tuple[Pooling, str],
) -> None:
    """A reward model asked through ``Judge.ask`` is metered and priced by its ``prices``
    as an LLM judge is. On a948d76 its pooling path had no meter: the cost was None."""
    _, url = server
    priced = config(url).model_copy(update={"prices": Prices(input=2.0, output=0.0)})
    judge = Judge("rm", priced)
    try:
        verdict = await judge.ask(WholeItem(Rollout("Q?", "A")))
    finally:
        await judge.aclose()
    assert verdict.ok and verdict.prompt_tokens == 11
    assert verdict.cost == pytest.approx(11 * 2.0 / 1_000_000)
