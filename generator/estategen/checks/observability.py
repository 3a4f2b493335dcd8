"""Observability: the Slurm exporter's port, free on the controller it runs on."""

from __future__ import annotations

from collections.abc import Iterator

from estategen.checks.core import check, slurmctld_port_list
from estategen.errors import Finding, issue
from estategen.facts import slurmd_port
from estategen.model import Estate
from estategen.prometheus_rules import slurm_exporter_host


@check
def slurm_exporter_port_free(estate: Estate) -> Iterator[Finding]:
    """The Slurm exporter runs on the primary controller beside slurmctld and the node exporter
    (and slurmdbd, slurmd or the DCGM exporter when they run there): a port one of them holds
    keeps it from starting."""
    host = slurm_exporter_host(estate)
    if host is None:
        return
    obs = estate.observability
    holders = [(obs.node_exporter_port, "the node exporter")]
    holders += [(port, "slurmctld") for port in slurmctld_port_list(estate)]
    accounting = estate.slurm.accounting
    if accounting and accounting.host == host:
        holders.append((accounting.port, "slurmdbd"))
    for pool in estate.slurm_pools:
        if host in pool.hosts:
            holders.append((slurmd_port(estate), "slurmd"))
            if pool.gpus:
                holders.append((obs.dcgm_exporter_port, "the DCGM exporter"))
    for port, holder in holders:
        if obs.slurm_exporter_port == port:
            yield issue(
                "observability.slurm_exporter.port",
                f"port {port} is taken on {host} by {holder}; the Slurm exporter runs on the "
                "primary controller beside it: choose another port",
            )
            return
