"""Prometheus targets for the hosts Ansible builds, so one Prometheus sees both schedulers alike.

The Kubernetes side is scraped through the DCGM exporter's Service (a ServiceMonitor when a
cluster sets ``prometheus_operator``), which sets ``instance`` to ``<node>:<port>``, adds
``observability.labels`` and ends up with ``job="dcgm-exporter"``. The hosts Ansible builds
(Slurm pools, on-prem Kubernetes nodes, controllers, slurmdbd and its database) have no service
discovery of their own: these ``file_sd`` files give them the same job names, the same
``instance`` form and the same labels, so a query such as
``avg by (site) (DCGM_FI_DEV_GPU_UTIL{job="dcgm-exporter"})`` covers both schedulers.

Where a host comes from travels as ``__meta_estategen_*`` labels: available to
``relabel_configs``, dropped after relabelling, so the stored series of both sides keep one
label set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from estategen.model import Estate
from estategen.output import Files, json_file, renderer, text
from estategen.prometheus_rules import (
    DCGM_JOB,
    NODE_JOB,
    SLURM_JOB,
    observability_rules,
    slurm_exporter_host,
)
from estategen.yamltext import prometheus_block

PROMETHEUS = "observability/prometheus"
RULES_FILE = "rules/estategen.rules.yml"


def _group(
    hosts: Iterable[str], port: int, labels: Mapping[str, str], meta: Mapping[str, str]
) -> dict[str, Any]:
    suffix = f":{port}"  # (concatenation: a third of an f-string per host, 22,500 of them)
    return {
        "targets": [host + suffix for host in hosts],
        "labels": {**labels, **{f"__meta_estategen_{k}": v for k, v in meta.items()}},
    }


def service_hosts(estate: Estate) -> list[tuple[str, list[str]]]:
    """(role, hosts) of the Slurm service hosts Ansible builds, each host once, in role order."""
    if not estate.slurm_pools:
        return []
    roles: list[tuple[str, list[str]]] = [("slurm_controller", list(estate.slurm.controllers))]
    accounting = estate.slurm.accounting
    if accounting:
        roles.append(("slurmdbd", [accounting.host]))
        if accounting.database.host != "localhost":
            roles.append(("slurm_database", [accounting.database.host]))
    pool_hosts = {host for pool in estate.node_pools for host in pool.hosts}
    seen: set[str] = set()
    out = []
    for role, hosts in roles:
        fresh = [h for h in hosts if h not in seen and h not in pool_hosts]
        seen.update(fresh)
        if fresh:
            out.append((role, fresh))
    return out


def has_node_exporter_targets(estate: Estate) -> bool:
    """Whether :func:`node_exporter_targets` has any: whether Ansible builds any host."""
    return any(not pool.managed and pool.hosts for pool in estate.node_pools) or bool(
        service_hosts(estate)
    )


def node_exporter_targets(estate: Estate) -> list[dict[str, Any]]:
    """Every host Ansible builds runs the node exporter (role node_exporter, hosts: all)."""
    labels = dict(estate.observability.labels)
    port = estate.observability.node_exporter_port
    groups = [
        _group(pool.hosts, port, labels, {"pool": pool.name, "scheduler": pool.scheduler})
        for pool in estate.node_pools
        if not pool.managed and pool.hosts
    ]
    groups += [
        _group(hosts, port, labels, {"role": role, "scheduler": "slurm"})
        for role, hosts in service_hosts(estate)
    ]
    return groups


def dcgm_exporter_targets(estate: Estate) -> list[dict[str, Any]]:
    """GPU hosts of the Slurm side; Kubernetes GPU nodes are scraped through their cluster."""
    labels = dict(estate.observability.labels)
    port = estate.observability.dcgm_exporter_port
    return [
        _group(pool.hosts, port, labels, {"pool": pool.name, "scheduler": pool.scheduler})
        for pool in estate.slurm_pools
        if pool.gpus and pool.hosts and not pool.cloud_nodes  # cloud nodes: not built by Ansible
    ]


def slurm_exporter_targets(estate: Estate) -> list[dict[str, Any]]:
    """The Slurm exporter's target (role slurm_exporter)."""
    controller = slurm_exporter_host(estate)
    if controller is None:
        return []
    port = estate.observability.slurm_exporter_port
    meta = {"role": "slurm_controller", "scheduler": "slurm"}
    return [_group([controller], port, dict(estate.observability.labels), meta)]


Targets = list[tuple[str, list[dict[str, Any]]]]


def exporter_targets(estate: Estate) -> Targets:
    """(job, target groups) of each exporter: the node, DCGM and Slurm exporters."""
    return [
        (NODE_JOB, node_exporter_targets(estate)),
        (DCGM_JOB, dcgm_exporter_targets(estate)),
        (SLURM_JOB, slurm_exporter_targets(estate)),
    ]


def scrape_configs(estate: Estate, targets: Targets | None = None) -> list[dict[str, Any]]:
    """One job per exporter with targets, each reading its file_sd file; ``targets`` are the
    estate's :func:`exporter_targets` when the caller has them already."""
    jobs: list[dict[str, Any]] = []
    for job, groups in exporter_targets(estate) if targets is None else targets:
        if groups:
            config: dict[str, Any] = {"job_name": job}
            # dcgm-exporter's own gpu/UUID/Hostname and (on Kubernetes) pod labels win
            if job == DCGM_JOB:
                config["honor_labels"] = True
            if job == SLURM_JOB:
                # each scrape runs squeue, sinfo, sshare and sdiag against slurmctld
                config["scrape_interval"] = "60s"
                config["scrape_timeout"] = "30s"
            config["file_sd_configs"] = [{"files": [f"targets/{job}.json"]}]
            jobs.append(config)
    return jobs


def _yaml(header: str, data: Any) -> str:
    """Block YAML in the data's own key order (a rule reads record or alert, then expr), as
    libyaml's emitter lays it out (lists not indented under their key)."""
    return f"{header}{prometheus_block(data)}"


_SCRAPE_HEADER = """\
# Prometheus scrape jobs for the hosts of estate {estate} that Ansible builds.
# Rendered by estategen. prometheus.yml beside this file loads them with the estate's rules;
# to add them to an existing Prometheus, copy this folder next to its prometheus.yml and add
# these jobs under its scrape_configs. Prometheus re-reads the target files when they change.
# Kubernetes GPU nodes are scraped through each cluster's dcgm-exporter Service, with the
# same job name, instance form (<node>:<port>) and labels.
"""

_PROMETHEUS_HEADER = """\
# A Prometheus configuration for estate {estate}, rendered by estategen: the scrape jobs of
# scrape-configs.yml and the estate's recording and alerting rules. Paths are relative to
# this file. Add alerting: (Alertmanager) and remote_write: as your site runs them.
"""

_RULES_HEADER = """\
# Recording and alerting rules for estate {estate}, rendered by estategen from the blueprint
# (thresholds: observability.alerts). promtool check rules accepts this file.
"""


@renderer
def observability_files(estate: Estate) -> Files:
    targets = exporter_targets(estate)
    if not targets[0][1]:  # no host runs the node exporter: Ansible builds none
        return {}
    jobs = scrape_configs(estate, targets)
    files: Files = {
        f"{PROMETHEUS}/scrape-configs.yml": text(
            _yaml(_SCRAPE_HEADER.format(estate=estate.name), {"scrape_configs": jobs})
        ),
        f"{PROMETHEUS}/prometheus.yml": text(
            _yaml(
                _PROMETHEUS_HEADER.format(estate=estate.name),
                {"rule_files": [RULES_FILE], "scrape_configs": jobs},
            )
        ),
        f"{PROMETHEUS}/{RULES_FILE}": text(
            _yaml(
                _RULES_HEADER.format(estate=estate.name),
                {"groups": observability_rules(estate)},
            )
        ),
    }
    for job, groups in targets:
        if groups:
            files[f"{PROMETHEUS}/targets/{job}.json"] = json_file(groups)
    return files
