"""The Slurm exporter: installed pinned on the primary controller, scraped there, and producing
every Slurm metric the estate's rules read.

The exporter is sckyzo/slurm_exporter (Debian 12 packages none). Its metric names per
collector are those of its docs/metrics.md at the pinned tag v1.8.4; the rules must name only
metrics of collectors the role enables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from estategen import load
from estategen.output import Files
from estategen.pipeline import validate_document
from estategen.prometheus_rules import observability_rules
from estategen.render import render

from ansible_template import ANSIBLE_PLAYBOOK, template
from conftest import BLUEPRINTS, ROOT

ROLE = ROOT / "playbooks" / "roles" / "slurm_exporter"
# sckyzo/slurm_exporter v1.8.4, docs/metrics.md: the metrics each collector exports
COLLECTOR_METRICS = {
    "accounts": {
        "slurm_account_jobs_pending",
        "slurm_account_jobs_running",
        "slurm_account_cpus_running",
        "slurm_account_gpus_running",
        "slurm_account_jobs_suspended",
    },
    "fairshare": {
        "slurm_account_fairshare",
        "slurm_account_fairshare_norm_shares",
        "slurm_account_fairshare_norm_usage",
        "slurm_account_fairshare_raw_shares",
        "slurm_account_fairshare_raw_usage_cpu_seconds",
    },
    "node": {
        "slurm_node_cpu_alloc",
        "slurm_node_cpu_idle",
        "slurm_node_cpu_other",
        "slurm_node_cpu_total",
        "slurm_node_mem_alloc",
        "slurm_node_mem_total",
        "slurm_node_status",
    },
    "partitions": {
        "slurm_partition_cpus_allocated",
        "slurm_partition_cpus_idle",
        "slurm_partition_cpus_other",
        "slurm_partition_cpus_total",
        "slurm_partition_jobs_pending",
        "slurm_partition_jobs_running",
        "slurm_partition_gpus_idle",
        "slurm_partition_gpus_allocated",
    },
    "scheduler": {
        "slurm_scheduler_threads",
        "slurm_scheduler_queue_size",
        "slurm_scheduler_dbd_queue_size",
        "slurm_scheduler_last_cycle",
        "slurm_scheduler_mean_cycle",
    },
}


def campus() -> tuple[Files, str]:
    estate = validate_document(load.read_blueprint(BLUEPRINTS / "campus.yaml")).estate
    return render(estate), estate.slurm.controllers[0]


def enabled_collectors() -> list[str]:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    collectors: list[str] = defaults["slurm_exporter_collectors"]
    return collectors


def test_the_role_installs_one_pinned_release_checked_against_its_checksums() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", defaults["slurm_exporter_version"])
    (task,) = [
        task
        for task in yaml.safe_load((ROLE / "tasks" / "install.yml").read_text())
        if "ansible.builtin.get_url" in task
    ]
    download = task["ansible.builtin.get_url"]
    assert download["checksum"].startswith("sha256:{{ slurm_exporter_release_url }}/")
    assert "{{ slurm_exporter_version }}" in task["vars"]["slurm_exporter_archive"]


def test_the_exporter_runs_where_prometheus_scrapes_it() -> None:
    files, primary = campus()
    estate_vars = yaml.safe_load(files["ansible/group_vars/all/estate.yml"].content)
    assert estate_vars["estate_slurm_exporter_host"] == primary
    (group,) = json.loads(files["observability/prometheus/targets/slurm-exporter.json"].content)
    assert group["targets"] == [f"{primary}:{estate_vars['estate_slurm_exporter_port']}"]
    site = yaml.safe_load(files["ansible/site.yml"].content)
    (play,) = [p for p in site if any(r["role"] == "slurm_exporter" for r in p["roles"])]
    assert play["hosts"] == "slurm_controller"
    # after the node exporter, whose package creates the user the exporter runs as
    exporters = next(p for p in site if any(r["role"] == "node_exporter" for r in p["roles"]))
    assert site.index(play) > site.index(exporters)
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    assert [task["when"] for task in main] == ["inventory_hostname == slurm_exporter_host"]


def test_estate_without_slurm_has_no_slurm_exporter() -> None:
    text = """\
estate: serve
node_pools:
  - {name: l4, scheduler: kubernetes, cluster: k8s, hosts: "k8s-[01-02]",
     gpus: {model: l4-24gb, count: 2}}
kubernetes:
  clusters: [{name: k8s}]
"""
    estate = validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate
    files = render(estate)
    assert "slurm_exporter" not in files["ansible/site.yml"].content.decode()
    assert "observability/prometheus/targets/slurm-exporter.json" not in files


@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason="needs ansible-playbook")
def test_the_unit_listens_on_the_blueprint_port_with_the_collectors(tmp_path: Path) -> None:
    text = (BLUEPRINTS / "lab.yaml").read_text() + "  slurm_exporter: {port: 9555}\n"
    estate = validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate
    out = tmp_path / "out"
    for path, output in render(estate).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(output.content)
    unit = tmp_path / "slurm-exporter.service"
    template(out / "ansible", None, "slurm_exporter/templates/slurm-exporter.service.j2", unit)
    (exec_start,) = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart")]
    words = exec_start.split("=", 1)[1].split()
    assert words[0] == "/opt/slurm_exporter-1.8.4/slurm_exporter"
    assert "--web.listen-address=:9555" in words
    assert {w.removeprefix("--collector.") for w in words[2:]} == set(enabled_collectors())


def slurm_metrics_named(expressions: list[str]) -> set[str]:
    return {
        name
        for expr in expressions
        for name in re.findall(r"\b(slurm_[a-z0-9_]+)\{", re.sub(r'"[^"]*"', '""', expr))
    }


def test_every_slurm_metric_the_rules_read_comes_from_an_enabled_collector() -> None:
    estate = validate_document(load.read_blueprint(BLUEPRINTS / "campus.yaml")).estate
    expressions = [r["expr"] for g in observability_rules(estate) for r in g["rules"]]
    named = slurm_metrics_named(expressions)
    assert "slurm_node_status" in named and "slurm_scheduler_dbd_queue_size" in named
    produced = set().union(*(COLLECTOR_METRICS[c] for c in enabled_collectors()))
    assert named - produced == set()
