"""The monitor's alerting rules (checked and unit-tested by promtool), the Kubernetes
PrometheusRule that carries them, and the provisioned Grafana dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from rewardsvc.monitor import Monitor
from rewardsvc.server.monitor_metrics import render_gauges

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "rewardsvc-monitor.rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "rewardsvc-monitor.test.yml"
K8S_RULE = ROOT / "deploy" / "k8s" / "rewardsvc" / "prometheusrule.yaml"
GRAFANA = ROOT / "deploy" / "grafana"


def promtool() -> str:
    """Debian's promtool (package prometheus), installed when absent."""
    found = shutil.which("promtool")
    if found:
        return found
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "prometheus"]
    if subprocess.run(install, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, check=True)
        subprocess.run(install, capture_output=True, check=True)
    found = shutil.which("promtool")
    if not found:
        raise RuntimeError("promtool is not on PATH after installing the prometheus package")
    return found


def load(path: Path) -> object:
    return YAML(typ="safe").load(path.read_text())


def exported_metrics() -> set[str]:
    return {family.name for family in render_gauges(Monitor())}


@pytest.mark.parametrize("command", [["check", "rules", RULES], ["test", "rules", RULE_TESTS]])
def test_promtool_accepts_the_rules_and_their_unit_tests(command: list[object]) -> None:
    done = subprocess.run(
        [promtool(), *map(str, command)], capture_output=True, text=True, cwd=RULES.parent
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_catches_a_broken_rule(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(RULES.read_text().replace("rewardsvc_monitor_alert) == 1", "==", 1))
    done = subprocess.run(
        [promtool(), "check", "rules", str(broken)], capture_output=True, text=True
    )
    assert done.returncode != 0


def test_rules_use_only_exported_metrics() -> None:
    names = exported_metrics()
    rules = load(RULES)["groups"][0]["rules"]  # type: ignore[index]
    for rule in rules:
        used = set(re.findall(r"\b(rewardsvc_[a-z_]+)", rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)


def test_the_kubernetes_prometheusrule_carries_the_same_groups() -> None:
    k8s = load(K8S_RULE)
    assert k8s["kind"] == "PrometheusRule"  # type: ignore[index]
    assert k8s["spec"]["groups"] == load(RULES)["groups"]  # type: ignore[index]


def test_grafana_dashboard_is_provisioned_and_queries_exported_metrics() -> None:
    provider = load(GRAFANA / "provisioning" / "dashboards" / "rewardsvc.yaml")
    datasource = load(GRAFANA / "provisioning" / "datasources" / "prometheus.yaml")
    uid = datasource["datasources"][0]["uid"]  # type: ignore[index]
    assert provider["providers"][0]["options"]["path"]  # type: ignore[index]
    dashboard = json.loads((GRAFANA / "dashboards" / "rewardsvc-monitor.json").read_text())
    names = exported_metrics()
    titles = []
    for panel in dashboard["panels"]:
        titles.append(panel["title"])
        assert panel["datasource"]["uid"] == uid
        for target in panel["targets"]:
            used = set(re.findall(r"\b(rewardsvc_[a-z_]+)", target["expr"]))
            assert used and used <= names, (panel["title"], used - names)
    for word in ("Reward", "length", "correlation", "Flag", "disagreement", "Criterion", "Canar"):
        assert any(word in t for t in titles), word
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["rubric", "run"]
