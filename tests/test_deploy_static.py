"""Static checks of the deployment files (no Docker engine, no cluster needed): shared
helpers, and the Kubernetes manifests.

- deploy/k8s/: every manifest against the Kubernetes schemas of
  ``kubernetes-validate`` (offline), the kustomization's references, and,
  where ``kubectl`` is installed, the rendered kustomization with its cross
  references (selectors, ConfigMaps, probes, judge URLs, Redis).
- The helpers that read deploy/Dockerfile and deploy/compose.yaml as Docker and Compose
  do, used by tests/test_dockerfile_static.py (the Dockerfile and its build context) and
  tests/test_docker_compose.py (the compose file, judge pools and env names, the docs).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate.utils as kv
import pytest
from ruamel.yaml import YAML

from rewardsvc.core.pool import JudgePool
from rewardsvc.library.registry import RUBRIC_SUFFIXES, Registry
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


# ----------------------------------------------------------------- compose

_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


# The variables compose refuses to start without (${VAR:?message}): the API keys, since
# rewardsvc publishes its port. Sample values stand in for them here.
REQUIRED_COMPOSE_VARIABLES = {
    "REWARDSVC_API_KEYS": "trainer-key-1,trainer-key-2",
    "METRICS_API_KEY": "prometheus-key",
    "REDIS_PASSWORD": "redis-pass-0123abcd",
}


def interpolate(value: Any, used: set[str], given: dict[str, str] | None = None) -> Any:
    """Compose variable interpolation with only ``given`` set: each ${VAR:-default} gives its
    default; ${VAR:?message} gives the value in ``given``; a variable without a default that
    is not given fails (compose up would need it set)."""
    given = given or {}
    if isinstance(value, dict):
        return {k: interpolate(v, used, given) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, used, given) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(m: re.Match[str]) -> str:
        name, op, default = m.groups()
        used.add(name)
        if op == "?":
            assert given.get(name), f"${{{name}}} is required: {default}"
            return given[name]
        assert op == "-", f"${{{name}}} has no default: compose up fails unless it is set"
        return default

    return _INTERPOLATION.sub(substitute, value)


def _command_flags(command: list[str]) -> dict[str, str | None]:
    flags: dict[str, str | None] = {}
    for i, arg in enumerate(command):
        if arg.startswith("--"):
            nxt = command[i + 1] if i + 1 < len(command) else None
            flags[arg] = None if nxt is None or nxt.startswith("--") else nxt
    return flags


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
    # An optional component (a folder with a kustomization of its own, holding patches)
    # is named in kustomization.yaml's comments; its files are the component's.
    components = {p.parent for p in K8S.rglob("kustomization.yaml") if p.parent != K8S}
    listed = {
        p.relative_to(K8S).as_posix()
        for p in K8S.rglob("*.yaml")
        if p.name not in {"kustomization.yaml", "judges.k8s.yaml"}
        and not components.intersection(p.parents)
    }
    used = set(kz["resources"])
    assert used <= listed, used - listed
    # A manifest left out is an optional custom resource (its CRD may be missing from a
    # cluster, which would fail the whole apply), named in kustomization.yaml's comments.
    kz_text = (K8S / "kustomization.yaml").read_text(encoding="utf-8")
    comments = "\n".join(line for line in kz_text.splitlines() if line.lstrip().startswith("#"))
    for component in components:
        rel = component.relative_to(K8S).as_posix()
        assert rel in comments, f"{rel}: a component not named in kustomization.yaml"
    for rel in sorted(listed - used):
        assert rel in comments, f"{rel}: neither in kustomization.yaml nor named as optional"
        for doc in load_yaml_all((K8S / rel).read_text(encoding="utf-8")):
            group = doc["apiVersion"].rpartition("/")[0]
            assert "." in group and not group.endswith(".k8s.io"), (
                f"{rel}: {doc['kind']} is a built-in kind: list it in kustomization.yaml"
            )


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
        "Deployment/rewardsvc-redis",
        "Service/rewardsvc-redis",
        "NetworkPolicy/rewardsvc-redis",
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


def test_code_sandbox_component_relaxes_only_what_bubblewrap_needs(tmp_path: Path) -> None:
    """deploy/k8s/components/code-sandbox, rendered over the base as its comment says to
    enable it: the rewardsvc pod gets its own user namespace, an unmasked /proc and
    unconfined seccomp and AppArmor, valid on every Kubernetes schema checked, and keeps
    its non-root user, dropped capabilities and no privilege escalation. The base
    kustomization leaves it off (it needs Kubernetes 1.33 user namespaces)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: the rendered kustomization is not checked")
    base = Path(os.path.relpath(K8S, tmp_path)).as_posix()
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{base}]\ncomponents: [{base}/components/code-sandbox]\n"
    )
    done = subprocess.run(
        [kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    deployment = _one(load_yaml_all(done.stdout), "Deployment", "rewardsvc")
    _validate_k8s(deployment, "code-sandbox component")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert pod["hostUsers"] is False and sc["procMount"] == "Unmasked"
    assert sc["seccompProfile"]["type"] == "Unconfined"
    assert sc["appArmorProfile"]["type"] == "Unconfined"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False
    assert "components" not in kustomization(), "the base leaves the sandbox component off"


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


_BYTES = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def _bytes(size: str) -> float:
    """A Redis (768mb) or Kubernetes (1Gi) memory size in bytes."""
    found = re.fullmatch(r"(\d+)([A-Za-z]*)", size)
    assert found and found.group(2) in {"", *_BYTES}, size
    return int(found.group(1)) * _BYTES.get(found.group(2), 1)


def test_rendered_redis_is_shared_and_private(rendered: list[dict[str, Any]]) -> None:
    """Every rewardsvc pod points at one Redis Service, whose single bounded server only
    rewardsvc pods may reach."""
    pod = _one(rendered, "Deployment", "rewardsvc")["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    url = urlsplit(env["REWARDSVC_REDIS_URL"])
    assert url.scheme == "redis", url
    service = _one(rendered, "Service", url.hostname)
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == (url.port or 6379)]
    (redis,) = [
        d
        for d in rendered
        if d["kind"] == "Deployment"
        and _matches(service["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
    ]
    assert redis["spec"]["replicas"] == 1 and redis["spec"]["strategy"]["type"] == "Recreate"
    redis_pod = redis["spec"]["template"]["spec"]
    (server,) = redis_pod["containers"]
    image, _, tag = server["image"].partition(":")
    assert image in {"redis", "valkey/valkey"} and tag and tag != "latest", server["image"]
    flags = _command_flags(server["args"])
    assert flags["--maxmemory-policy"] == "allkeys-lru", flags
    assert _bytes(flags["--maxmemory"]) < _bytes(server["resources"]["limits"]["memory"])
    assert redis_pod["securityContext"]["runAsNonRoot"] is True
    sc = server["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert port["targetPort"] in {p["name"] for p in server["ports"]}
    # Ingress only from rewardsvc pods, only to the Redis port.
    redis_labels = redis["spec"]["template"]["metadata"]["labels"]
    (policy,) = [
        d
        for d in rendered
        if d["kind"] == "NetworkPolicy"
        and _matches(d["spec"]["podSelector"]["matchLabels"], redis_labels)
    ]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    assert set(source) == {"podSelector"}, source
    assert _matches(source["podSelector"]["matchLabels"], pod["metadata"]["labels"])
    assert [p["port"] for p in rule["ports"]] == [port["port"]]


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


def test_rendered_redis_requires_the_password_rewardsvc_reads(
    rendered: list[dict[str, Any]],
) -> None:
    """Redis asks every client for the password of one Secret; rewardsvc reads the same
    Secret's key as its password file."""
    redis_pod = _one(rendered, "Deployment", "rewardsvc-redis")["spec"]["template"]["spec"]
    (server,) = redis_pod["containers"]
    flags = _command_flags(server["args"])
    variable = re.fullmatch(r"\$\((\w+)\)", flags["--requirepass"] or "")
    assert variable, flags
    (secret_env,) = [e for e in server["env"] if e["name"] == variable.group(1)]
    ref = secret_env["valueFrom"]["secretKeyRef"]
    # The probe authenticates (valkey-cli reads REDISCLI_AUTH) and wants PONG, not any reply.
    assert variable.group(1) == "REDISCLI_AUTH"
    assert "PONG" in " ".join(server["readinessProbe"]["exec"]["command"])

    pod = _one(rendered, "Deployment", "rewardsvc")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    password_file = Path(env["REWARDSVC_REDIS_PASSWORD_FILE"])
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    mount = mounts[password_file.parent.as_posix()]
    volume = {v["name"]: v for v in pod["volumes"]}[mount["name"]]
    assert volume["secret"]["secretName"] == ref["name"]
    items = {i["key"]: i["path"] for i in volume["secret"]["items"]}
    assert items[ref["key"]] == password_file.name
    assert urlsplit(env["REWARDSVC_REDIS_URL"]).password is None  # not in the manifest
