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
from estategen.render import Files, json_file, renderer, text

PROMETHEUS = "observability/prometheus"
NODE_JOB = "node-exporter"
DCGM_JOB = "dcgm-exporter"


def _group(
    hosts: Iterable[str], port: int, labels: Mapping[str, str], meta: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "targets": [f"{host}:{port}" for host in hosts],
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
        if pool.gpus and pool.hosts and not pool.elastic  # cloud nodes: not built by Ansible
    ]


_SCRAPE_CONFIGS = """\
# Prometheus scrape jobs for the hosts of estate {estate} that Ansible builds.
# Rendered by estategen. Copy this folder next to prometheus.yml and add these jobs under its
# scrape_configs; Prometheus re-reads the target files by itself when they change.
# Kubernetes GPU nodes are scraped through each cluster's dcgm-exporter Service, with the
# same job name, instance form (<node>:<port>) and labels.
scrape_configs:
  - job_name: {node_job}
    file_sd_configs:
      - files: [targets/{node_job}.json]
{dcgm}"""

_DCGM_JOB = """\
  - job_name: {dcgm_job}
    honor_labels: true
    file_sd_configs:
      - files: [targets/{dcgm_job}.json]
"""


@renderer
def observability_files(estate: Estate) -> Files:
    nodes = node_exporter_targets(estate)
    if not nodes:
        return {}
    dcgm = dcgm_exporter_targets(estate)
    files: Files = {
        f"{PROMETHEUS}/targets/{NODE_JOB}.json": json_file(nodes),
        f"{PROMETHEUS}/scrape-configs.yml": text(
            _SCRAPE_CONFIGS.format(
                estate=estate.name,
                node_job=NODE_JOB,
                dcgm=_DCGM_JOB.format(dcgm_job=DCGM_JOB) if dcgm else "",
            )
        ),
    }
    if dcgm:
        files[f"{PROMETHEUS}/targets/{DCGM_JOB}.json"] = json_file(dcgm)
    return files
