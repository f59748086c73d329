"""Golden drift on real CPU judges: one served model name, ``swap-judge``, is served by
Qwen2.5-Coder-0.5B-Instruct, then (its vLLM server restarted on the same port) by
Qwen2.5-Coder-1.5B-Instruct: same family and chat template, different strength. The golden
re-scores of the unchanged 0.5B stay under the set's ``max_shift``; the first re-score
after the swap fires the golden alert, and the identity change (the endpoint's ``root``)
is recorded on the run's timeline.

(SmolLM2 and Gemma 3, the default judges, cannot be swapped under one name usefully: Gemma
has no chat template, and through the completion API both answer P(yes) ~0.82 and ~0.72 to
the two criteria of every golden item alike, a mean shift of 0.027 between them.)

The servers are started here from cpujudge.sh's venv and models (``setup``), each on a free
port beside the default judges, and stopped by their process group when the test ends."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import cpu_judges, free_port
from test_monitor import batch, item

from rewardsvc.application.monitoring import GOLDEN_LABEL, canary_scorer
from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.judges.judge import build_judges
from rewardsvc.library.yamlfile import load_file
from rewardsvc.monitor import AlertEvent, Monitor
from rewardsvc.monitor.golden_runner import GoldenRunner
from rewardsvc.monitor.golden_set import load_golden
from rewardsvc.scoring.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
RUBRIC_ID = "short-answer-correctness"
CACHE = Path(
    os.environ.get("REWARDSVC_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rewardsvc"
)
JUDGE_ROOT = CACHE / "cpu-judge"
SERVED = "swap-judge"

pytestmark = pytest.mark.judges


class Server:
    """A vLLM CPU server of one model folder under the served name ``swap-judge``."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, folder: str) -> None:
        """Serve ``folder`` (bfloat16 weights, as cpujudge.sh serves the Qwen judges) and
        wait until it answers ``GET /v1/models``."""
        env = os.environ | {
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_CACHE_ROOT": str(JUDGE_ROOT / "vllm-cache"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        args = [
            str(JUDGE_ROOT / "venv" / "bin" / "python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model", str(JUDGE_ROOT / "models" / folder),
            "--served-model-name", SERVED,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--max-model-len", "2048",
            "--max-logprobs", "20",
            "--block-size", "32",
            "--dtype", "bfloat16",
            "--enforce-eager",
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                args, env=env, stdout=out, stderr=out, start_new_session=True
            )
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/v1/models", timeout=2).is_success:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(2)
        pytest.fail(f"vLLM serving {folder} did not start in 900 s: {self.log}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    cpu_judges("setup")
    running = Server(free_port(), tmp_path / "vllm.log")
    try:
        yield running
    finally:
        running.stop()


async def test_swapping_the_model_behind_a_judge_fires_the_golden_alert(server: Server) -> None:
    rubric = load_file(ROOT / "rubrics" / f"{RUBRIC_ID}.yaml", Rubric)
    golden = load_golden(ROOT / "rubrics" / "golden")[RUBRIC_ID]
    pool = JudgePool(
        judges={
            "primary": {
                "model": SERVED,
                "base_urls": [f"http://127.0.0.1:{server.port}/v1"],
                "api": "chat",
                "method": "logprob",
                "timeout_s": 600,  # a shared 2-core machine: a timeout is not what is tested
                "max_context_tokens": 2048,
                "sampling": {"temperature": 0.0, "top_logprobs": 20},
            }
        }
    )
    judges = build_judges(pool)
    engine = Engine(judges)
    events: list[AlertEvent] = []
    monitor = Monitor(on_event=events.append)
    monitor.observe(RUBRIC_ID, "v1", "run-a", batch([item(0.5, 10)]))
    runner = GoldenRunner(
        monitor,
        {RUBRIC_ID: golden},
        {RUBRIC_ID: ["primary"]},
        canary_scorer(engine, lambda _: rubric, GOLDEN_LABEL),
        lambda name: judges[name].served_identity(),
    )
    try:
        server.start("qwen2.5-coder-0.5b-instruct")
        await runner.identify_all()
        records = [(await runner.rescore())[0][0] for _ in range(2)]  # baseline, unchanged
        unchanged = records[1].shift
        assert records[1].answered == len(golden.items)
        assert unchanged is not None and unchanged < golden.max_shift and not events

        server.stop()
        server.start("qwen2.5-coder-1.5b-instruct")
        (swapped,), _ = await runner.rescore()  # the first re-score after the swap
    finally:
        await engine.aclose()
    print(f"golden shift: unchanged 0.5B {unchanged:.4f}, after the swap {swapped.shift}")
    assert swapped.alert and swapped.shift is not None and swapped.shift >= golden.max_shift
    names = [(e.name, e.state) for e in events]
    assert ("golden:primary", "firing") in names
    assert ("judge_identity:primary", "firing") in names
    (ident,) = monitor.golden.identities()
    assert ident.previous is not None and "0.5b" in ident.previous["root"]
    assert "1.5b" in ident.identity["root"]
    (run,) = monitor.runs(RUBRIC_ID)
    assert [m.kind for m in run.events] == ["identity"]
