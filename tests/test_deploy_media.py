"""The deployed judges' vLLM fetches no image URL the pool does not allow (no engine needed).

rewardsvc passes an ``http(s)`` image URL to a judge only when the pool's ``media_domains``
lists its host; the judge's vLLM then fetches it, from any host when its own
``--allowed-media-domains`` is empty or absent. So every judge of the compose file and of
the Kubernetes manifests names exactly its pool's domains, or, when the pool allows none, a
host under the reserved ``.invalid`` TLD (which never resolves), and follows no redirects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_deploy_static import (
    COMPOSE,
    DEPLOY,
    K8S,
    REQUIRED_COMPOSE_VARIABLES,
    interpolate,
    load_yaml,
    load_yaml_all,
)


def allowed_domains(args: list[str]) -> list[str]:
    """The hosts after ``--allowed-media-domains`` (vLLM reads one or more)."""
    assert "--allowed-media-domains" in args, f"vLLM would fetch from any host: {args}"
    rest = args[args.index("--allowed-media-domains") + 1 :]
    hosts = []
    for arg in rest:
        if arg.startswith("--"):
            break
        hosts.append(arg)
    return hosts


def assert_matches_pool(hosts: list[str], pool: Path, where: str) -> None:
    """``hosts`` are the pool's media_domains, or one name that never resolves."""
    wanted = load_yaml(pool).get("media_domains") or []
    if wanted:
        assert sorted(hosts) == sorted(wanted), where
    else:
        assert hosts and all(h.endswith(".invalid") for h in hosts), (where, hosts)


def test_compose_judges_fetch_only_the_pools_media_domains() -> None:
    compose = interpolate(load_yaml(COMPOSE), set(), REQUIRED_COMPOSE_VARIABLES)
    judges = {
        name: svc
        for name, svc in compose["services"].items()
        if str(svc.get("image", "")).startswith("vllm/vllm-openai")
    }
    assert len(judges) == 2
    for name, svc in judges.items():
        assert_matches_pool(
            allowed_domains(svc["command"]), DEPLOY / "judges.gpu.yaml", f"compose {name}"
        )
        assert str(svc["environment"].get("VLLM_MEDIA_URL_ALLOW_REDIRECTS")) == "0", name


def k8s_judges() -> list[dict[str, Any]]:
    """The vLLM containers of deploy/k8s/judges/."""
    containers = []
    for path in sorted((K8S / "judges").glob("judge-*.yaml")):
        for doc in load_yaml_all(path.read_text(encoding="utf-8")):
            if doc["kind"] == "Deployment":
                containers.extend(doc["spec"]["template"]["spec"]["containers"])
    return containers


@pytest.mark.parametrize("index", [0, 1])
def test_kubernetes_judges_fetch_only_the_pools_media_domains(index: int) -> None:
    vllm = k8s_judges()[index]
    assert_matches_pool(allowed_domains(vllm["args"]), K8S / "judges.k8s.yaml", vllm["image"])
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert env.get("VLLM_MEDIA_URL_ALLOW_REDIRECTS") == "0"
