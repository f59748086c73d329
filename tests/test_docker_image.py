"""The container image proven on a real Docker engine, not only linted.

The session starts its own ``dockerd`` (Debian's ``docker.io``, installed when absent) on a
socket and data root of its own under ``${REWARDSVC_CACHE:-~/.cache/rewardsvc}/docker``, so
that images and the build cache stay warm between runs, and stops it at the end. No
registry is assumed: the Dockerfile's base image (a build argument, by default the official
Python slim image) is replaced by one bootstrapped from Debian packages with
``deploy/docker/debian-python-base.sh``. The build gets this machine's pip CA bundle and
index the documented way (a build secret and build arguments), then the image runs with the
hardening of ``deploy/compose.yaml``'s rewardsvc service, on the host's network (the CPU
judges listen on its loopback) with a real Redis as its shared state, and scores a batch.

Skipped only where no Docker engine can be had: ``docker.io`` cannot be installed or
``dockerd`` does not start (the reason is in the skip message).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from redis_server import RedisServer, spare_port
from test_deploy_static import COMPOSE, ROOT, interpolate, load_yaml

from rewardsvc.core.pool import JudgePool

CACHE = Path(os.environ.get("REWARDSVC_CACHE", Path.home() / ".cache" / "rewardsvc")) / "docker"
BASE_IMAGE = "rewardsvc-test/python-base:bookworm"
IMAGE = "rewardsvc:docker-test"
BASE_SCRIPT = ROOT / "deploy" / "docker" / "debian-python-base.sh"
CPU_POOL = ROOT / "deploy" / "cpu-judge" / "judges.yaml"
TRAINER_KEY = "trainer-key-for-the-docker-test"
METRICS_KEY = "metrics-key-for-the-docker-test"
REDIS_PASSWORD = "redis-password-for-the-docker-test"
UID = 10001
EXEC_ROOT_PREFIX = "rwsvc-docker-"

ITEMS = [
    {"id": "right", "prompt": "What is 2 + 2?", "completion": "The answer is 4.", "reference": "4"},
    {
        "id": "wrong",
        "prompt": "What is 3 * 3?",
        "completion": "The answer is 10.",
        "reference": "9",
    },
    {
        "id": "capital",
        "prompt": "What is the capital of France?",
        "completion": "The capital of France is Paris.",
        "reference": "Paris",
    },
]


def _apt_install(*packages: str) -> str | None:
    """Install Debian packages; None when done, else what apt-get said."""
    command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=env)
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    return None if done.returncode == 0 else (done.stdout + done.stderr)[-1500:]


def _engine_client(dockerd: str) -> str | None:
    """The docker CLI shipped with the engine's package.

    Another, newer CLI may come first on PATH; without the buildx plugin it cannot run a
    BuildKit build, while the engine package's own CLI can (DOCKER_BUILDKIT=1).
    """
    owner = subprocess.run(["dpkg-query", "-S", dockerd], capture_output=True, text=True)
    if owner.returncode == 0:
        package = owner.stdout.split(":", 1)[0]
        files = subprocess.run(["dpkg-query", "-L", package], capture_output=True, text=True)
        for line in files.stdout.splitlines():
            if line.endswith("/bin/docker") and os.access(line, os.X_OK):
                return line
    return shutil.which("docker")


@dataclass
class Engine:
    """A running Docker engine: the CLI to use and the environment that points it there."""

    client: str
    env: dict[str, str]
    log: Path

    def run(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run one docker CLI command; fail the test with its output when ``check``."""
        done = subprocess.run(
            [self.client, *args], capture_output=True, text=True, env=self.env, timeout=timeout
        )
        if check and done.returncode != 0:
            pytest.fail(
                f"docker {' '.join(args[:3])} exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def answers(self) -> bool:
        """Whether the engine answers on its socket."""
        return self.run("version", check=False, timeout=30).returncode == 0


def _start_engine() -> tuple[Engine, Callable[[], None]]:
    """An engine on this session's own socket: reuse one left running, else start dockerd."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        failure = _apt_install("docker.io")
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            pytest.skip(f"no Docker engine here: apt-get install docker.io failed:\n{failure}")
    client = _engine_client(dockerd)
    if client is None:
        pytest.skip("no Docker engine here: docker.io installed no docker CLI")
    CACHE.mkdir(parents=True, exist_ok=True)
    socket_path = CACHE / "docker.sock"
    env = {
        **os.environ,
        "DOCKER_HOST": f"unix://{socket_path}",
        "DOCKER_BUILDKIT": "1",
        "DOCKER_CONFIG": str(CACHE / "client"),
    }
    engine = Engine(client, env, CACHE / "dockerd.log")
    pidfile = CACHE / "dockerd.pid"
    if socket_path.exists() and engine.answers():
        # Left running by an interrupted session: use it, and stop it at the end all the same.
        pid = int(pidfile.read_text())
        return engine, lambda: _stop_dockerd(pid, None)
    # The exec root holds containerd's sockets, whose paths must stay short: a fresh
    # temporary folder, not the cache. No bridge and no iptables rules: containers and
    # builds use the host's network, so the test leaves the host's network untouched.
    exec_root = Path(tempfile.mkdtemp(prefix=EXEC_ROOT_PREFIX))
    process = subprocess.Popen(
        [
            dockerd,
            "--data-root", str(CACHE / "data"),
            "--exec-root", str(exec_root),
            "--pidfile", str(pidfile),
            "--host", env["DOCKER_HOST"],
            "--bridge", "none",
            "--iptables=false",
            "--ip6tables=false",
        ],
        stdout=engine.log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not engine.answers():
        if process.poll() is not None or time.monotonic() > deadline:
            _stop_dockerd(process.pid, process)
            log = engine.log.read_text(errors="replace")[-2000:]
            pytest.skip(f"no Docker engine here: dockerd did not start:\n{log}")
        time.sleep(0.5)
    return engine, lambda: _stop_dockerd(process.pid, process)


def _stop_dockerd(pid: int, process: subprocess.Popen[bytes] | None) -> None:
    """Stop the test's dockerd (SIGTERM lets it stop its containers and containerd), then
    remove its exec root, where it leaves the bind mount of its network namespace.

    ``process`` is the dockerd when this session started it; None for one left running
    by an earlier session (not a child of this process: wait for it to disappear).
    """
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        args = []
    exec_root = Path(args[args.index("--exec-root") + 1]) if "--exec-root" in args else None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if process is not None:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    else:
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if exec_root is not None and exec_root.name.startswith(EXEC_ROOT_PREFIX):
        for netns in exec_root.glob("netns/*"):
            subprocess.run(["umount", str(netns)], capture_output=True)
        shutil.rmtree(exec_root, ignore_errors=True)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    """The Docker engine, started for this session and stopped after it."""
    running, stop = _start_engine()
    yield running
    stop()


def _pip_settings() -> dict[str, str]:
    """This machine's pip settings (configuration files and PIP_* variables), by key."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    return found


def build_arguments() -> list[str]:
    """What this machine's pip needs to reach its index, passed the documented way.

    The CA bundle pip trusts goes in as the ``pip_ca`` build secret; http(s) index URLs as
    build arguments. Local ``file:`` indexes name folders of this machine that a build cannot
    see, so they are left out.
    """
    pip = _pip_settings()
    args: list[str] = []
    for source in (pip.get("cert"), os.environ.get("SSL_CERT_FILE")):
        if source and Path(source).is_file():
            args += ["--secret", f"id=pip_ca,src={source}"]
            break
    for key, arg in (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL")):
        urls = [u for u in pip.get(key, "").split() if u.startswith(("http://", "https://"))]
        if urls:
            args += ["--build-arg", f"{arg}={' '.join(urls)}"]
    return args


@pytest.fixture(scope="session")
def image(engine: Engine) -> str:
    """The rewardsvc image built from deploy/Dockerfile on a Debian-bootstrapped Python."""
    if engine.run("image", "inspect", BASE_IMAGE, check=False).returncode != 0:
        if shutil.which("debootstrap") is None and (failure := _apt_install("debootstrap")):
            pytest.fail(f"apt-get install debootstrap failed:\n{failure}")
        done = subprocess.run(
            ["bash", str(BASE_SCRIPT), BASE_IMAGE],
            capture_output=True,
            text=True,
            env=engine.env,
            timeout=1800,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    engine.run(
        "build",
        "--file", str(ROOT / "deploy" / "Dockerfile"),
        "--build-arg", f"PYTHON_IMAGE={BASE_IMAGE}",
        # The engine of this test has no bridge: the build's steps use the host's network.
        "--network", "host",
        *build_arguments(),
        "--tag", IMAGE,
        str(ROOT),
        timeout=1800,
    )  # fmt: skip
    # Keep the cache warm but bounded: drop replaced images and build cache unused for a week.
    engine.run("image", "prune", "--force")
    engine.run("builder", "prune", "--force", "--filter", "until=168h")
    return IMAGE


def _compose_service() -> tuple[dict[str, Any], dict[str, Any]]:
    """deploy/compose.yaml's rewardsvc service, with its required variables set."""
    given = {
        "REWARDSVC_API_KEYS": TRAINER_KEY,
        "METRICS_API_KEY": METRICS_KEY,
        "REDIS_PASSWORD": REDIS_PASSWORD,
    }
    compose = interpolate(load_yaml(COMPOSE), set(), given)
    return compose, compose["services"]["rewardsvc"]


def _long_volume(volume: str | dict[str, Any]) -> dict[str, Any]:
    """A compose volume entry in the long syntax (type, source, target)."""
    if isinstance(volume, dict):
        return volume
    source, target = volume.split(":")[:2]
    kind = "bind" if source.startswith((".", "/", "~")) else "volume"
    return {"type": kind, "source": source, "target": target}


def hardening_flags(service: dict[str, Any]) -> list[str]:
    """The ``docker run`` flags that the compose service's hardening keys mean."""
    flags: list[str] = []
    if service.get("read_only"):
        flags.append("--read-only")
    for path in service.get("tmpfs", []):
        flags += ["--tmpfs", path]
    for cap in service.get("cap_drop", []):
        flags += ["--cap-drop", cap]
    for option in service.get("security_opt", []):
        flags += ["--security-opt", option]
    if "user" in service:
        flags += ["--user", str(service["user"])]
    return flags


@dataclass
class Container:
    """The running rewardsvc container: its id, URL, Redis and engine."""

    id: str
    url: str
    redis_url: str
    engine: Engine

    def logs(self) -> str:
        """What the service printed."""
        done = self.engine.run("logs", self.id, check=False)
        return (done.stdout + done.stderr)[-4000:]

    def inspect(self, template: str) -> str:
        """One ``docker inspect --format`` value."""
        return self.engine.run("inspect", "--format", template, self.id).stdout.strip()


@pytest.fixture(scope="session")
def container(
    engine: Engine, image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Container]:
    """The image run as compose runs it, but on the host's network beside the CPU judges."""
    folder = tmp_path_factory.mktemp("docker")
    # Behind the password compose gives its Redis, so the service authenticates as there.
    redis_server = RedisServer(folder / "redis", password=REDIS_PASSWORD)
    redis_server.start()
    compose, service = _compose_service()
    env = dict(service["environment"])
    port = spare_port()
    # On the host's network, 0.0.0.0 would expose the service beyond this machine, and
    # the compose service names (redis, the judges) do not resolve.
    env.update(
        REWARDSVC_HOST="127.0.0.1",
        REWARDSVC_PORT=str(port),
        REWARDSVC_REDIS_URL=redis_server.url,
    )
    mounts = ["--volume", f"{CPU_POOL}:{env['REWARDSVC_JUDGE_POOL']}:ro"]
    for volume in map(_long_volume, service["volumes"]):
        if volume["type"] == "bind" and volume["target"] == env["REWARDSVC_RUBRICS_DIR"]:
            mounts += ["--volume", f"{ROOT / 'rubrics'}:{volume['target']}:ro"]
        elif volume["type"] == "volume":
            mounts += ["--volume", volume["target"]]  # an anonymous volume, removed with it
    for ref in service.get("configs", []):
        content = folder / ref["source"]
        content.write_text(compose["configs"][ref["source"]]["content"], encoding="utf-8")
        content.chmod(0o444)
        mounts += ["--volume", f"{content}:{ref['target']}:ro"]
    run = engine.run(
        "run", "--detach", "--network", "host",
        # The image's HEALTHCHECK command, probed more often than its 15 s in production.
        "--health-interval", "2s",
        *hardening_flags(service),
        *mounts,
        *[arg for name, value in env.items() for arg in ("--env", f"{name}={value}")],
        image,
    )  # fmt: skip
    cid = run.stdout.strip()
    running = Container(cid, f"http://127.0.0.1:{port}", redis_server.url, engine)
    try:
        deadline = time.monotonic() + 120
        while (state := running.inspect("{{.State.Status}} {{.State.Health.Status}}")) != (
            "running healthy"
        ):
            if not state.startswith("running") or time.monotonic() > deadline:
                pytest.fail(f"container is {state}:\n{running.logs()}")
            time.sleep(1)
        yield running
    finally:
        engine.run("rm", "--force", "--volumes", cid, check=False)
        redis_server.stop()


def _process_status(container: Container) -> dict[str, str]:
    """/proc/PID/status of the container's PID 1, as the host's kernel sees it."""
    pid = container.inspect("{{.State.Pid}}")
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_image_serves_healthy_as_non_root_with_compose_hardening(container: Container) -> None:
    status = _process_status(container)
    assert status["Uid"].split() == [str(UID)] * 4, status["Uid"]
    assert status["Gid"].split() == [str(UID)] * 4, status["Gid"]
    # cap_drop: [ALL] and no-new-privileges:true, as the kernel applies them.
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0, status
    assert status["NoNewPrivs"] == "1"
    assert container.inspect("{{.Config.User}}") == f"{UID}:{UID}"
    assert container.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
    probe = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path + '/probe', 'w').close()\n"
        "        print(path, 'writable')\n"
        "    except OSError as exc:\n"
        "        print(path, exc.strerror)\n"
    )
    done = container.engine.run(
        "exec", container.id, "python", "-c", probe, "/etc/rewardsvc", "/usr", "/tmp",
        "/var/lib/rewardsvc",
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert "/etc/rewardsvc Read-only file system" in lines, lines
    assert "/usr Read-only file system" in lines, lines
    assert "/tmp writable" in lines and "/var/lib/rewardsvc writable" in lines, lines


@pytest.mark.judges
def test_image_scores_a_batch_against_the_cpu_judges_with_redis(
    container: Container, cpu_pool: JudgePool
) -> None:
    client = httpx.Client(base_url=container.url, timeout=300)
    body = {"rubric": "short-answer-correctness", "items": ITEMS}
    # The compose file's key handling: its trainers' keys and Prometheus' key file both
    # work, and nothing works without a key.
    assert client.post("/v1/rewards", json=body).status_code == 401
    assert client.get("/metrics").status_code == 401
    metrics = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_KEY}"})
    assert metrics.status_code == 200, metrics.text
    reply = client.post(
        "/v1/rewards", json=body, headers={"Authorization": f"Bearer {TRAINER_KEY}"}
    )
    assert reply.status_code == 200, reply.text + container.logs()
    results = {r["id"]: r for r in reply.json()["results"]}
    assert list(results) == [item["id"] for item in ITEMS]
    for result in results.values():
        # degraded: one judge answered (the other failed after its retries), as a trainer
        # would be told on a loaded machine.
        assert result["status"] in ("ok", "degraded"), f"{result}\n{container.logs()}"
        assert 0.0 <= result["reward"] <= 1.0, result
        assert set(result["judges"]) == {"primary", "secondary"}, result
    assert reply.json()["usage"]["judge_calls"] > 0
    # The verdicts went to the shared state, where another replica would find them.
    with redis.Redis.from_url(container.redis_url) as shared:
        keys = shared.keys("*")
    assert keys, "nothing was written to Redis:\n" + container.logs()


def _recipe_results(
    container: Container, recipe: dict[str, Any], items: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The results, by item id, of ``items`` scored by the inline ``recipe`` with a trainer
    key (a sandboxed grader's runs take seconds each on a loaded machine)."""
    client = httpx.Client(base_url=container.url, timeout=180)
    reply = client.post(
        "/v1/rewards",
        json={"rubric": recipe, "items": items},
        headers={"Authorization": f"Bearer {TRAINER_KEY}"},
    )
    assert reply.status_code == 200, reply.text + container.logs()
    return {r["id"]: r for r in reply.json()["results"]}


# Prints the sum of two integers only when it can neither reach the service (its port on
# the loopback it shares with the container) nor read a trainer key from any process.
_CONFINED_SUM = """\
import os, socket, sys
port = int(sys.argv[1]) if len(sys.argv) > 1 else {port}
leaks = []
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    leaks.append("service port")
except OSError:
    pass
for pid in os.listdir("/proc"):
    try:
        if {key!r} in open(f"/proc/{{pid}}/environ").read():
            leaks.append(pid)
    except OSError:
        pass
print(sum(map(int, input().split())) if not leaks else leaks)
"""


def test_image_runs_code_graders_in_its_sandbox_under_compose_hardening(
    container: Container,
) -> None:
    """The image ships bubblewrap, and compose's security options let it make its
    sandbox inside the hardened container: an inline recipe's ``io_cases`` grader runs
    the programs, a wrong one scores 0, and the program sees neither the service's port
    nor its keys."""
    port = container.url.rsplit(":", 1)[1]
    recipe = {
        "kind": "recipe",
        "id": "sum-in-container",
        "components": [
            {
                "id": "cases",
                "grader": {
                    "type": "io_cases",
                    "cases": [{"input": "2 3", "output": "5"}, {"input": "4 4", "output": "8"}],
                },
            }
        ],
    }
    programs = {
        "right": "print(sum(map(int, input().split())))",
        "wrong": "a, b = map(int, input().split())\nprint(a * b + 1)",
        "confined": _CONFINED_SUM.format(port=port, key=TRAINER_KEY),
    }
    items = [
        {"id": name, "prompt": "Add two integers.", "completion": f"```python\n{code}\n```"}
        for name, code in programs.items()
    ]
    results = _recipe_results(container, recipe, items)
    rewards = {name: r["reward"] for name, r in results.items()}
    assert rewards["right"] == 1.0 and rewards["wrong"] == 0.0, f"{results}\n{container.logs()}"
    # The confined program printed the sum on both cases: it reached neither the port nor a
    # key. Its socket use is flagged (the tamper detector), which costs it the reward.
    confined = results["confined"]
    assert confined["components"]["cases"]["evidence"]["passed"] == 2, confined
    assert confined["flags"] == ["tamper_network"], confined


_HIDDEN_TESTS = """\
from solution import add


def test_small():
    assert add(2, 3) == 5


def test_negative():
    assert add(-4, 1) == -3
"""


def test_image_runs_hidden_unit_tests_in_its_sandbox(container: Container) -> None:
    """The image carries what ``unit_tests`` needs (pytest for the image's Python, which the
    sandbox sees read-only): a right function passes the hidden tests, a wrong one fails
    one of two, and a conftest.py that passes everything is removed and flagged."""
    recipe = {
        "kind": "recipe",
        "id": "add-in-container",
        "components": [
            {
                "id": "tests",
                "grader": {"type": "unit_tests", "tests": {"test_add.py": _HIDDEN_TESTS}},
            }
        ],
    }
    right = "def add(a, b):\n    return a + b"
    wrong = "def add(a, b):\n    return abs(a) + b"
    items = [
        {"id": "right", "prompt": "Write add(a, b).", "completion": f"```python\n{right}\n```"},
        {"id": "wrong", "prompt": "Write add(a, b).", "completion": f"```python\n{wrong}\n```"},
        {
            "id": "conftest",
            "prompt": "Write add(a, b).",
            "completion": "",
            "files": {
                "solution.py": wrong,
                "conftest.py": "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
                "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
                "    outcome.get_result().outcome = 'passed'\n",
            },
        },
    ]
    results = _recipe_results(container, recipe, items)
    rewards = {name: r["reward"] for name, r in results.items()}
    # The conftest was removed before the run (the wrong code's 0.5), and flagged, which
    # costs it the reward.
    assert rewards == {"right": 1.0, "wrong": 0.5, "conftest": 0.0}, (
        f"{results}\n{container.logs()}"
    )
    tests = results["conftest"]["components"]["tests"]
    assert tests["evidence"]["score_before_flags"] == 0.5, tests
    assert results["conftest"]["flags"] == ["tamper_runner_config"], results["conftest"]
