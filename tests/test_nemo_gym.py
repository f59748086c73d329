"""The NeMo Gym verify route against the real ``nemo-gym`` package's own models.

nemo-gym 0.7.0 requires Python >= 3.13.14 and every earlier release >= 3.12, newer than
the Python here (3.11), so no release installs normally: the test installs **0.7.0 with
``--no-deps --ignore-requires-python``** into its own cached venv, plus the modules that
``nemo_gym.base_resources_server`` imports, and uses that module's ``BaseVerifyRequest``
to build the request and ``BaseVerifyResponse`` to parse the reply. The route is served
in process, scored by the engine with the real CPU judges (a fake judge only for the
failure path).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakejudge import FakeJudge, Script
from fastapi import FastAPI

from rewardsvc.application.targets import score_batch
from rewardsvc.core.pool import JudgeConfig, JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import Judge, build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.protocol.agents import NemoGymVerifyRequest
from rewardsvc.protocol.rewards import RewardOptions, RewardResponse
from rewardsvc.scoring.engine import Engine
from rewardsvc.server import agents
from tests.trainers.venvs import cache_dir

ROOT = Path(__file__).resolve().parent.parent
NEMO_GYM = "nemo-gym==0.7.0"
RECIPE: list[list[str]] = [
    ["--no-deps", "--ignore-requires-python", NEMO_GYM],
    # What nemo_gym.base_resources_server imports (its own pins where it has them).
    [
        "openai==2.44.0",
        "fastapi",
        "pydantic>=2",
        "uvicorn",
        "httptools",
        "hydra-core",
        "omegaconf",
        "rich",
        "scipy>=1.14.1",
        "aiohttp>=3.14.4",
        "pandas",
        "orjson>=3.11.6",
        "requests",
        "devtools",
        "psutil",
        "jinja2",
        "tqdm",
        "itsdangerous",
        "ray>=2.58.0",
        "yappi>=1.7.6",
        "pydot",
        "wandb>=0.30.0",
    ],
]

# One process per test module: importing nemo_gym takes seconds (ray, wandb). It reads a
# JSON line {"op": "build" | "parse", "body": text} and answers a JSON line.
WORKER = """
import json, sys
from importlib.metadata import version
from nemo_gym.base_resources_server import BaseVerifyRequest, BaseVerifyResponse
for line in sys.stdin:
    ask = json.loads(line)
    if ask["op"] == "build":
        request = BaseVerifyRequest.model_validate(json.loads(ask["body"]))
        out = json.loads(request.model_dump_json())
    else:
        reply = BaseVerifyResponse.model_validate_json(ask["body"])
        out = reply.model_dump(
            mode="json", include={"reward", "mask_sample", "failure_kind", "failure_reason"}
        )
        out["output_types"] = [item.type for item in reply.response.output]
        out["version"] = version("nemo-gym")
    print(json.dumps(out), flush=True)
"""


class NemoGym:
    """A python process of the nemo-gym venv that builds requests and parses replies with
    nemo-gym's own models."""

    def __init__(self, python: Path):
        self.process = subprocess.Popen(
            [str(python), "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, op: str, body: str) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, "body": body}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the nemo-gym process ended ({self.process.poll()})"
        return json.loads(line)

    def build(self, request: dict[str, Any]) -> str:
        """``request`` validated by ``BaseVerifyRequest`` and dumped by it, as JSON text."""
        return json.dumps(self.ask("build", json.dumps(request)))

    def parse(self, reply: str) -> dict[str, Any]:
        """The fields of ``reply`` as ``BaseVerifyResponse`` parses them."""
        return dict(self.ask("parse", reply))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def nemo_gym_python() -> Path:
    """The python of the cached nemo-gym venv, installed on first use."""
    base = cache_dir() / "trainer-venvs"
    venv = base / "nemo-gym"
    python = venv / "bin" / "python"
    marker = venv / ".rewardsvc-recipe"
    log = base / "nemo-gym.log"
    base.mkdir(parents=True, exist_ok=True)
    with (base / "nemo-gym.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and python.exists() and json.loads(marker.read_text()) == RECIPE:
            return python
        shutil.rmtree(venv, ignore_errors=True)
        steps = [[sys.executable, "-m", "venv", str(venv)]]
        steps += [[str(python), "-m", "pip", "install", "--quiet", *s] for s in RECIPE]
        with log.open("a") as out:
            for command in steps:
                done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=1800)
                if done.returncode != 0:
                    pytest.fail(f"{' '.join(command)} failed:\n{log.read_text()[-3000:]}")
        marker.write_text(json.dumps(RECIPE))
    return python


class EngineScorer:
    """The route's scorer: library rubrics scored by an engine (the service does the same)."""

    def __init__(self, engine: Engine, rubrics: dict[str, Rubric]):
        self.engine = engine
        self.rubrics = rubrics

    async def score_rubric(
        self,
        rubric_id: str,
        items: list[dict[str, Any]],
        options: RewardOptions,
        field_name: str = "items",
    ) -> RewardResponse:
        return await score_batch(self.engine, self.rubrics[rubric_id], items, options)


def app_with(engine: Engine, rubric: Rubric) -> FastAPI:
    app = FastAPI()
    app.include_router(agents.router)
    app.state.service = EngineScorer(engine, {rubric.id: rubric})
    return app


def verify_request() -> dict[str, Any]:
    """A NeMo Gym rollout: a tool call, its output and the answer, as Responses items."""
    output = [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Oslo: 4 C, rain"},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "It is 4 C and raining in Oslo.", "annotations": []}
            ],
        },
    ]
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": "What is the weather in Oslo?"}],
            "tools": [],
        },
        "response": {
            "id": "resp_1",
            "created_at": 0,
            "model": "policy",
            "object": "response",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        },
    }


@pytest.fixture(scope="module")
def nemo() -> Iterator[NemoGym]:
    worker = NemoGym(nemo_gym_python())
    yield worker
    worker.close()


def library(name: str) -> Rubric:
    return load_file(ROOT / "rubrics" / f"{name}.yaml", Rubric)


async def post(app: FastAPI, rubric: str, body: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rewardsvc") as http:
        return await http.post(
            f"/nemo-gym/{rubric}/verify",
            content=body,
            headers={"content-type": "application/json"},
        )


@pytest.mark.judges
async def test_nemo_gym_verify_round_trip_with_real_judges(
    cpu_pool: JudgePool, nemo: NemoGym
) -> None:
    body = nemo.build(verify_request())
    rubric = library("agent-task-completion")
    engine = Engine(build_judges(cpu_pool))
    try:
        reply = await post(app_with(engine, rubric), rubric.id, body)
    finally:
        await engine.aclose()
    assert reply.status_code == 200, reply.text
    parsed = nemo.parse(reply.text)
    assert parsed["version"] == "0.7.0"
    assert 0.0 <= parsed["reward"] <= 1.0
    assert parsed["mask_sample"] is False and parsed["failure_kind"] is None
    assert parsed["output_types"] == ["function_call", "function_call_output", "message"]
    # The reply is the request body plus the reward: the trainer's own fields come back.
    assert reply.json()["response"]["output"][0]["call_id"] == "call_1"


async def test_nemo_gym_judge_failure_is_a_masked_zero(nemo: NemoGym) -> None:
    body = nemo.build(verify_request())
    rubric = library("agent-task-completion").model_copy(
        update={"judges": library("agent-task-completion").judges[:1]}
    )
    with FakeJudge(Script(default="500")) as bad:
        config = JudgeConfig(model="fake", base_urls=[bad.url], timeout_s=5.0, retries=0)
        engine = Engine({"primary": Judge("primary", config)})
        try:
            reply = await post(app_with(engine, rubric), rubric.id, body)
        finally:
            await engine.aclose()
    assert reply.status_code == 200, reply.text
    parsed = nemo.parse(reply.text)
    assert parsed["reward"] == 0.0 and parsed["mask_sample"] is True
    assert parsed["failure_kind"] == "judge_failed"
    assert "primary" in (parsed["failure_reason"] or "")
    assert reply.json()["instance_config"]["mask_sample"] is True


async def test_nemo_gym_unscorable_item_is_a_masked_verifier_error(nemo: NemoGym) -> None:
    rubric = Rubric.model_validate(
        {
            "id": "needs-ref",
            "requires_reference": True,
            "criteria": [{"id": "c", "text": "Matches the reference."}],
            "judges": ["primary"],
        }
    )
    engine = Engine(
        {"primary": Judge("primary", JudgeConfig(model="x", base_urls=["http://127.0.0.1:9/v1"]))}
    )
    body = nemo.build(verify_request())
    try:
        reply = await post(app_with(engine, rubric), rubric.id, body)
        with_ref = json.loads(body) | {"answer": "4 C"}
        assert "reference" in agents.verify_item(
            NemoGymVerifyRequest.model_validate(with_ref), "answer"
        )
    finally:
        await engine.aclose()
    parsed = nemo.parse(reply.text)
    assert (parsed["reward"], parsed["mask_sample"]) == (0.0, True)
    assert parsed["failure_kind"] == "verifier_error"
    assert "requires a reference" in parsed["failure_reason"]
