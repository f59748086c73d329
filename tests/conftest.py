"""Shared fixtures: the real local CPU judges and a real running service.

Tests marked ``judges`` need the two vLLM CPU judges of ``deploy/cpu-judge``.
The fixture starts them when they are not running (idempotent; a first run
installs vLLM and converts the models, which takes minutes) and fails, never
skips, when they cannot be reached: a green run must mean they were tested.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import httpx
import pytest
import pytest_asyncio
from fakejudge import FakeJudge

from rewardsvc.core.pool import JudgePool
from rewardsvc.judges.judge import Judge
from rewardsvc.library.registry import load_pool
from rewardsvc.sandbox.bubblewrap import BubblewrapBackend
from rewardsvc.sandbox.lanes import SandboxLanes
from rewardsvc.sandbox.run import RunRequest, RunResult
from tests.debian import debian_binary

if TYPE_CHECKING:
    from trainers.harness import FaultProxy

pytest_plugins = ["module_durations"]  # wall time per test module (tests/module_durations.py)

ROOT = Path(__file__).resolve().parent.parent
CPU_JUDGE = ROOT / "deploy" / "cpu-judge" / "cpujudge.sh"
CPU_POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
RUBRICS = ROOT / "rubrics"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's root folder."""
    return ROOT


def cpu_judges(command: str, *keys: str) -> None:
    """Run ``cpujudge.sh COMMAND [KEY...]``; the test fails (never skips) when it fails."""
    done = subprocess.run(["bash", str(CPU_JUDGE), command, *keys], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(
            f"CPU judges unavailable ({CPU_JUDGE.name} {command} {' '.join(keys)} exited "
            f"{done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


class ExtraJudges:
    """cpujudge.sh's optional judges (its ``EXTRAS``), each up from the first test that
    asks for it to the last collected test that does: started when absent, and stopped
    after that test only if started here. One server serves several modules (a start costs
    40-90 s on CPU) yet lives no longer than the tests that need it (each holds 2-8 GB)."""

    FIXTURES: ClassVar[dict[str, str]] = {
        "rm_server": "smollm2-rm", "think_server": "smollm2-think", "prm_server": "smollm2-prm",
        "qwen_server": "qwen-1.5b", "vlm_server": "smolvlm",
    }  # fmt: skip
    """The fixture that asks for each server: tests name it, or a fixture they use does."""
    ALONE: ClassVar[frozenset[str]] = frozenset({"qwen-1.5b"})
    """Servers too big to share the machine with another optional one (the Qwen judge holds
    8 GB beside the default judges' 12 GB): their tests run last, after the others stop."""
    MAKE_ROOM: ClassVar[tuple[str, ...]] = ("smollm2",)
    """Default judges that the tests of a server that runs alone do not use, stopped before
    it starts: over a whole run the default judges grow to about 15 GB, and with the Qwen
    judge's 8 GB beside them a 24 GB machine ran out of memory (the kernel killed the Qwen
    engine). Their tests ran before (sorted first); the next run starts them again."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}
        self.ready: set[str] = set()
        self.started: set[str] = set()

    def plan(self, items: list[pytest.Item]) -> None:
        """Move the tests of a server that runs alone to the end (a stable sort, so each
        module keeps its order), then note the last test that needs each server."""
        items.sort(key=self._alone)
        for item in items:
            for fixture, key in self.FIXTURES.items():
                if fixture in getattr(item, "fixturenames", ()):
                    self.last[key] = item.nodeid

    def _alone(self, item: pytest.Item) -> bool:
        names = getattr(item, "fixturenames", ())
        return any(self.FIXTURES[f] in self.ALONE for f in self.FIXTURES if f in names)

    def up(self, key: str) -> None:
        """The server answering (started when absent; a server that runs alone first stops
        every other optional server started here, and the default judges of ``MAKE_ROOM``)."""
        if key in self.ready:
            return
        if key in self.ALONE:
            for other in sorted(self.started - {key}):
                self.stop(other)
            cpu_judges("stop", *self.MAKE_ROOM)
        status = ["bash", str(CPU_JUDGE), "status", key]
        if subprocess.run(status, capture_output=True, text=True).returncode != 0:
            cpu_judges("start", key)
            self.started.add(key)
        cpu_judges("wait", "900", key)
        self.ready.add(key)

    def release(self, item: pytest.Item) -> None:
        """After ``item``: stop what no later test needs."""
        for key, nodeid in self.last.items():
            if nodeid == item.nodeid:
                self.stop(key)

    def stop(self, key: str) -> None:
        """Stop ``key`` if started here."""
        self.ready.discard(key)
        if key in self.started:
            self.started.discard(key)
            cpu_judges("stop", key)


EXTRAS = ExtraJudges()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    EXTRAS.plan(items)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    EXTRAS.release(item)


def pytest_sessionfinish() -> None:
    """A run cut short (``-x``, an interrupt) leaves no server it started behind."""
    for key in list(EXTRAS.started):
        EXTRAS.stop(key)


@pytest.fixture
def rm_server() -> None:
    """The smollm2-rm reward-model server (pooling runner), up (:class:`ExtraJudges`)."""
    EXTRAS.up("smollm2-rm")


@pytest.fixture
def think_server() -> None:
    """The smollm2-think reasoning server, up (:class:`ExtraJudges`)."""
    EXTRAS.up("smollm2-think")


@pytest.fixture
def prm_server() -> None:
    """The smollm2-prm process-reward server (step pooling), up (:class:`ExtraJudges`)."""
    EXTRAS.up("smollm2-prm")


@pytest.fixture
def qwen_server() -> None:
    """The Qwen2.5-Coder-1.5B-Instruct server (a judge that judges, with tool calls), up
    (:class:`ExtraJudges`; its first start also fetches and converts the model)."""
    EXTRAS.up("qwen-1.5b")


@pytest.fixture(scope="module")
def lanes() -> Iterator[SandboxLanes]:
    """Two sandbox lanes on the real bubblewrap backend, with Debian's pytest for the
    sandbox's python3 (the code graders' and judge tools' tests)."""
    backend = BubblewrapBackend(debian_binary("bwrap", "bubblewrap"))
    debian_binary("pytest-3", "python3-pytest")
    available = backend.availability()
    assert available.ok, available.reason
    lanes = SandboxLanes(backend, lanes=2, queue_limit=64)
    yield lanes
    lanes.close()


@pytest.fixture
def vlm_server() -> None:
    """The smolvlm vision-language server (SmolLM2 behind an untrained vision tower), up
    (:class:`ExtraJudges`; its first start also assembles the model, ~10 s)."""
    EXTRAS.up("smolvlm")


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[RunRequest]:
    """The sandboxed runs the service starts (recorded, then run on the real bubblewrap
    backend): what a test of sandbox admission counts."""
    started: list[RunRequest] = []
    real = BubblewrapBackend.run

    def run(self: BubblewrapBackend, request: RunRequest) -> RunResult:
        started.append(request)
        return real(self, request)

    monkeypatch.setattr(BubblewrapBackend, "run", run)
    return started


@pytest.fixture
def fake() -> Iterator[FakeJudge]:
    """A scripted judge server (tests/fakejudge.py). A module whose ``fake`` is something
    else (a scripted rewardsvc for the client tests) defines its own, which wins there."""
    with FakeJudge() as judge:
        yield judge


@pytest.fixture(scope="session")
def cpu_pool() -> JudgePool:
    """The judge pool of the real CPU judges, after checking that both answer."""
    cpu_judges("start")
    cpu_judges("wait")
    return load_pool(CPU_POOL)


@pytest.fixture(scope="module")
def proxied_once(
    cpu_pool: JudgePool, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, list[FaultProxy]]]:
    """A service whose judges sit behind fault proxies, one per test module
    (tests/trainers/harness.py)."""
    from trainers.harness import proxied_service

    with proxied_service(tmp_path_factory.mktemp("proxied")) as running:
        yield running


@pytest.fixture
def proxied(proxied_once: tuple[Service, list[FaultProxy]]) -> tuple[Service, list[FaultProxy]]:
    """The module's proxied service, once every judge scores again after the last test's
    outage."""
    from trainers.harness import judges_back

    judges_back(proxied_once[0])
    return proxied_once


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Service:
    """A ``rewardsvc serve`` process: its base URL, environment and log file."""

    url: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]


def start_service(env_overrides: dict[str, str], log: Path, timeout_s: float = 60) -> Service:
    """Start ``rewardsvc serve`` with REWARDSVC_* settings; wait until /healthz answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSVC_")}
    env.update(
        {
            "REWARDSVC_HOST": "127.0.0.1",
            "REWARDSVC_PORT": str(port),
            "REWARDSVC_RUBRICS_DIR": str(RUBRICS),
            "REWARDSVC_JUDGE_POOL": str(CPU_POOL),
        }
    )
    env.update(env_overrides)
    out = log.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "rewardsvc.cli", "serve"], env=env, stdout=out, stderr=out
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"rewardsvc serve exited {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Service(url, env, log, process)
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"rewardsvc serve did not answer in {timeout_s} s:\n{log.read_text()}")


def stop_service(service: Service) -> None:
    """Stop a service started by ``start_service``."""
    service.process.terminate()
    try:
        service.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        service.process.kill()


@pytest.fixture(scope="session")
def service(cpu_pool: JudgePool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A real ``rewardsvc serve`` on the shipped rubrics and the CPU judges, with a reward log."""
    folder = tmp_path_factory.mktemp("service")
    running = start_service(
        {"REWARDSVC_REWARD_LOG": str(folder / "rewards.jsonl")}, folder / "service.log"
    )
    yield running
    stop_service(running)


@pytest_asyncio.fixture(loop_scope="function")  # the test's own loop, where the clients live
async def judges() -> AsyncIterator[list[Judge]]:
    """Judges a test makes, closed (their HTTP clients) when it ends."""
    made: list[Judge] = []
    yield made
    for j in made:
        await j.aclose()
