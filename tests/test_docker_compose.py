"""Static checks of deploy/compose.yaml and the deploy docs (no Docker engine needed): the
Compose Specification JSON Schema (vendored under tests/data/compose-spec/), then what the
deployment needs of it (judges, rewardsvc, Redis, Prometheus, the required API keys that
``serve`` accepts); judge pools and env variables in step with ``rewardsvc.settings``;
deploy/README.md documenting every setting and compose variable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from test_deploy_static import (
    COMPOSE,
    COMPOSE_SCHEMA,
    DEPLOY,
    DOCKERFILE,
    ENV_RE,
    K8S,
    REQUIRED_COMPOSE_VARIABLES,
    ROOT,
    SETTINGS_ENV,
    _command_flags,
    dockerfile_env,
    interpolate,
    load_yaml,
)

from rewardsvc.judges.keys import missing_keys
from rewardsvc.library.registry import Registry, load_pool
from rewardsvc.settings import Settings


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """deploy/compose.yaml as Compose sees it with only its required variables set."""
    return interpolate(load_yaml(COMPOSE), set(), REQUIRED_COMPOSE_VARIABLES)


def test_compose_requires_exactly_the_api_keys() -> None:
    """Compose refuses to start without keys (rewardsvc publishes its port), and with
    anything else unset it starts."""
    raw = load_yaml(COMPOSE)
    for name in REQUIRED_COMPOSE_VARIABLES:
        missing = {k: v for k, v in REQUIRED_COMPOSE_VARIABLES.items() if k != name}
        with pytest.raises(AssertionError, match=f"{name}}} is required"):
            interpolate(raw, set(), missing)
        empty = {**REQUIRED_COMPOSE_VARIABLES, name: ""}
        with pytest.raises(AssertionError, match=f"{name}}} is required"):
            interpolate(raw, set(), empty)
    interpolate(raw, set(), REQUIRED_COMPOSE_VARIABLES)


def test_compose_api_keys_are_accepted_by_serve(compose: dict[str, Any], tmp_path: Path) -> None:
    """The keys compose hands rewardsvc are what `serve` accepts: the trainers' keys from
    the environment and Prometheus' key from the config file, none empty."""
    from rewardsvc.cli import _check_api_keys

    svc = compose["services"]["rewardsvc"]
    env = dict(svc["environment"])
    (ref,) = [c for c in svc["configs"] if c["target"] == env["REWARDSVC_API_KEYS_FILE"]]
    key_file = tmp_path / "metrics.key"
    key_file.write_text(compose["configs"][ref["source"]]["content"], encoding="utf-8")
    env["REWARDSVC_API_KEYS_FILE"] = str(key_file)
    settings = Settings(**{k.removeprefix("REWARDSVC_").lower(): v for k, v in env.items()})
    _check_api_keys(settings)
    trainer_keys = REQUIRED_COMPOSE_VARIABLES["REWARDSVC_API_KEYS"].split(",")
    expected = [*trainer_keys, REQUIRED_COMPOSE_VARIABLES["METRICS_API_KEY"]]
    assert settings.api_key_list() == expected
    # Prometheus sends the key rewardsvc reads: the same config, mounted in both.
    prometheus = compose["services"]["prometheus"]
    assert ref["source"] in [c["source"] for c in prometheus["configs"]]


def test_compose_redis_is_private_and_shared(compose: dict[str, Any]) -> None:
    """rewardsvc's shared state is the compose Redis, reachable only on the compose network."""
    services = compose["services"]
    url = urlsplit(services["rewardsvc"]["environment"]["REWARDSVC_REDIS_URL"])
    assert url.scheme == "redis" and url.hostname in services, url
    redis = services[url.hostname]
    image, _, tag = redis["image"].partition(":")
    assert image in {"redis", "valkey/valkey"} and tag and tag != "latest", redis["image"]
    command = redis["command"]
    assert "--port" not in command and (url.port or 6379) == 6379, (url, command)
    assert "ports" not in redis and redis.get("network_mode") != "host"
    assert services["rewardsvc"]["depends_on"][url.hostname]["condition"] == "service_healthy"
    assert "ping" in " ".join(redis["healthcheck"]["test"])
    # Bounded: a cache that evicts, never one that refuses writes when full.
    flags = _command_flags(command)
    assert flags["--maxmemory"] and flags["--maxmemory-policy"] == "allkeys-lru", flags
    assert redis.get("read_only") is True and redis.get("cap_drop") == ["ALL"]
    assert str(redis["user"]).split(":")[0] != "0"


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
    # The code sandbox's needs (tests/test_docker_image.py runs code under exactly these),
    # beside the hardening they must not replace.
    assert set(svc["security_opt"]) == {
        "no-new-privileges:true",
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
    }


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
    binds = {
        (COMPOSE.parent / m["source"]).resolve(): m["target"]
        for m in svc["volumes"]
        if isinstance(m, dict) and m["type"] == "bind"
    }
    assert binds[DEPLOY / "prometheus.yml"] == "/etc/prometheus/prometheus.yml"
    config = load_yaml(DEPLOY / "prometheus.yml")
    # The monitor's alerting rules are mounted where the configuration loads rules from.
    rules = binds[DEPLOY / "prometheus" / "rewardsvc-monitor.rules.yml"]
    assert any(Path(rules).match(pattern) for pattern in config["rule_files"]), rules
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
    assert missing_keys(pool) == []


def test_rubric_library_validates_against_every_deploy_pool() -> None:
    for pool_file in (DEPLOY / "judges.gpu.yaml", K8S / "judges.k8s.yaml"):
        registry = Registry(ROOT / "rubrics", load_pool(pool_file))
        assert registry.errors() == {}, (pool_file, registry.errors())
        assert registry.entries(), pool_file


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
    interpolate(load_yaml(COMPOSE), used, REQUIRED_COMPOSE_VARIABLES)
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    missing = sorted(name for name in used if f"`{name}`" not in readme)
    assert not missing, f"deploy/README.md does not document compose variables {missing}"


def _documented_default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, dict | list | tuple):  # as the variable is written: JSON
        return json.dumps(value)
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
        # A default_factory (e.g. an empty {run: budget} map) is documented as what it makes.
        made = field.get_default(call_default_factory=True)
        assert default.strip("`") == _documented_default(made), name
        assert in_image.strip("`") == image.get(name, "–"), name


def test_compose_redis_requires_the_password_rewardsvc_sends(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """The compose Redis asks for REDIS_PASSWORD and rewardsvc's URL carries it: tried on a
    real redis-server started with the compose file's own flags."""
    import asyncio

    from redis_server import RedisServer

    from rewardsvc.storage.redis_link import RedisLink

    services = compose["services"]
    url = urlsplit(services["rewardsvc"]["environment"]["REWARDSVC_REDIS_URL"])
    redis = services[url.hostname]
    password = REQUIRED_COMPOSE_VARIABLES["REDIS_PASSWORD"]
    assert _command_flags(redis["command"])["--requirepass"] == password
    assert url.password == password
    # The healthcheck authenticates (valkey-cli reads REDISCLI_AUTH) and wants PONG.
    assert redis["environment"]["REDISCLI_AUTH"] == password
    assert "PONG" in " ".join(redis["healthcheck"]["test"])

    server = RedisServer(tmp_path / "redis", password=password)
    server.start()
    try:
        here = url._replace(netloc=f":{url.password}@127.0.0.1:{server.port}").geturl()
        bare = url._replace(netloc=f"127.0.0.1:{server.port}").geturl()

        async def answers(target: str) -> bool:
            link = RedisLink(target, retry_s=60.0)
            try:
                return await link.start()
            finally:
                await link.aclose()

        assert asyncio.run(answers(here)) is True
        assert asyncio.run(answers(bare)) is False
    finally:
        server.stop()
