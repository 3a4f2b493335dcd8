"""Prometheus file_sd targets: one Prometheus scrapes the hosts Ansible builds like the clusters.

The targets must name exactly the hosts the Ansible inventory builds (node exporter) and the
Slurm GPU hosts (DCGM exporter), as ``host:port`` with the estate labels, under the same job
names the Kubernetes side's Service gives its series.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import hostlist, load
from estategen.model import Estate
from estategen.output import Files
from estategen.pipeline import validate_document
from estategen.render import render

from conftest import BLUEPRINTS

TARGETS = "observability/prometheus/targets"


def rendered(blueprint: Path | str) -> tuple[Estate, Files]:
    document = (
        load.read_blueprint(blueprint)
        if isinstance(blueprint, Path)
        else load.parse_blueprint(blueprint.encode(), "bp.yaml")
    )
    estate = validate_document(document).estate
    return estate, render(estate)


def groups(files: Files, job: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(files[f"{TARGETS}/{job}.json"].content)
    return data


def inventory_hosts(files: Files) -> set[str]:
    """Every host the rendered Ansible inventory names (Ansible ranges as [a:b])."""
    inventory = yaml.safe_load(files["ansible/inventory.yml"].content)
    hosts: set[str] = set()
    for body in inventory["all"]["children"].values():
        for pattern in (body or {}).get("hosts") or {}:
            hosts.update(hostlist.expand(re.sub(r"\[(\w+):(\w+)\]", r"[\1-\2]", pattern)))
    return hosts


@pytest.fixture(scope="module")
def campus() -> tuple[Estate, Files]:
    return rendered(BLUEPRINTS / "campus.yaml")


def test_node_exporter_targets_are_exactly_the_hosts_ansible_builds(
    campus: tuple[Estate, Files],
) -> None:
    _, files = campus
    targets = [t for g in groups(files, "node-exporter") for t in g["targets"]]
    assert len(targets) == len(set(targets)), "a host is scraped twice"
    assert set(targets) == {f"{host}:9100" for host in inventory_hosts(files)}


def test_dcgm_targets_are_the_slurm_gpu_hosts(campus: tuple[Estate, Files]) -> None:
    estate, files = campus
    targets = {t for g in groups(files, "dcgm-exporter") for t in g["targets"]}
    expected = {f"{h}:9400" for p in estate.slurm_pools if p.gpus for h in p.hosts}
    assert targets == expected
    assert not any(t.startswith("k8s-") for t in targets)  # scraped through their cluster


def test_targets_carry_the_estate_labels_and_only_hidden_extras(
    campus: tuple[Estate, Files],
) -> None:
    estate, files = campus
    for job in ("node-exporter", "dcgm-exporter"):
        for group in groups(files, job):
            visible = {k: v for k, v in group["labels"].items() if not k.startswith("__")}
            assert visible == dict(estate.observability.labels)
            hidden = set(group["labels"]) - set(visible)
            assert hidden <= {
                "__meta_estategen_pool",
                "__meta_estategen_role",
                "__meta_estategen_scheduler",
            }


def test_labels_match_what_the_kubernetes_side_adds(campus: tuple[Estate, Files]) -> None:
    """The ServiceMonitor adds the same labels, as the rendered manifests carry it."""
    _, files = campus
    monitors = [
        obj
        for path, output in files.items()
        if path.startswith("kubernetes/") and path.endswith("/nvidia.yaml")
        for obj in yaml.safe_load_all(output.content)
        if obj["kind"] == "ServiceMonitor"
    ]
    assert monitors
    for monitor in monitors:
        (endpoint,) = monitor["spec"]["endpoints"]
        labels = {
            r["targetLabel"]: r["replacement"]
            for r in endpoint["relabelings"]
            if r["targetLabel"] != "instance"
        }
        for group in groups(files, "dcgm-exporter"):
            assert {k: v for k, v in group["labels"].items() if "__" not in k} == labels


def test_scrape_configs_use_the_kubernetes_job_names_and_existing_files(
    campus: tuple[Estate, Files],
) -> None:
    _, files = campus
    config = yaml.safe_load(files["observability/prometheus/scrape-configs.yml"].content)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"node-exporter", "dcgm-exporter", "slurm-exporter"}
    for name, job in jobs.items():
        (sd,) = job["file_sd_configs"]
        assert sd["files"] == [f"targets/{name}.json"]
        assert f"observability/prometheus/targets/{name}.json" in files
    # the Kubernetes side's DCGM Service (and so its job label) is named dcgm-exporter
    services = [
        obj["metadata"]["name"]
        for path, output in files.items()
        if path.startswith("kubernetes/") and path.endswith("/nvidia.yaml")
        for obj in yaml.safe_load_all(output.content)
        if obj["kind"] == "Service"
    ]
    assert services and set(services) == {"dcgm-exporter"}


def test_a_host_in_two_service_roles_is_scraped_once() -> None:
    text = (
        (BLUEPRINTS / "lab.yaml")
        .read_text()
        .replace(
            "  controllers: [lab-ctl]\n",
            "  controllers: [lab-ctl]\n  accounting:\n    host: lab-ctl\n"
            "    database: {host: localhost, password: {secret: db}}\n",
        )
    )
    _, files = rendered(text)
    by_role = {
        g["labels"].get("__meta_estategen_role"): g["targets"]
        for g in groups(files, "node-exporter")
    }
    assert by_role["slurm_controller"] == ["lab-ctl:9100"]
    assert "slurmdbd" not in by_role  # lab-ctl is already a target; localhost is not a host


def test_estate_without_slurm_gpus_has_no_dcgm_job() -> None:
    text = (
        (BLUEPRINTS / "lab.yaml")
        .read_text()
        .replace("    gpus: {model: a100-sxm-80gb, count: 4}\n", "")
    )
    _, files = rendered(text)
    assert f"{TARGETS}/dcgm-exporter.json" not in files
    config = yaml.safe_load(files["observability/prometheus/scrape-configs.yml"].content)
    assert [job["job_name"] for job in config["scrape_configs"]] == [
        "node-exporter",
        "slurm-exporter",
    ]


def test_managed_only_estate_has_no_targets() -> None:
    text = """\
estate: cloud
node_pools:
  - {name: gke-h100, scheduler: kubernetes, cluster: burst, provider: gke,
     instance_type: a3-highgpu-8g, nodes: {min: 0, max: 2},
     gpus: {model: h100-sxm-80gb, count: 8}}
kubernetes:
  clusters: [{name: burst, provider: gke, region: us-central1}]
"""
    _, files = rendered(text)
    assert not any(path.startswith("observability/") for path in files)


def test_slurm_exporter_target_is_the_primary_controller_on_its_port() -> None:
    text = (
        (BLUEPRINTS / "lab.yaml")
        .read_text()
        .replace(
            "  labels: {site: lab}\n", "  labels: {site: lab}\n  slurm_exporter: {port: 9999}\n"
        )
        .replace("  controllers: [lab-ctl]\n", "  controllers: [lab-ctl, lab-ctl2]\n")
    )
    _, files = rendered(text)
    (group,) = groups(files, "slurm-exporter")
    assert group["targets"] == ["lab-ctl:9999"]  # once per cluster: scheduler state counted once
    assert {k: v for k, v in group["labels"].items() if "__" not in k} == {"site": "lab"}


def test_prometheus_yml_loads_the_rules_and_the_same_jobs(campus: tuple[Estate, Files]) -> None:
    _, files = campus
    config = yaml.safe_load(files["observability/prometheus/prometheus.yml"].content)
    pasted = yaml.safe_load(files["observability/prometheus/scrape-configs.yml"].content)
    assert config["scrape_configs"] == pasted["scrape_configs"]
    (rule_file,) = config["rule_files"]
    assert f"observability/prometheus/{rule_file}" in files
