"""Prometheus recording and alerting rules for the estate, as plain data.

Recording rules put both schedulers' GPUs in one vocabulary: every series they record carries
``estate``, ``scheduler`` and ``pool`` (or ``team``) plus ``observability.labels``. Pool and
scheduler reach GPU series by joining on the host: the node exporter on every host Ansible
builds publishes ``estategen_node_info{estate, pool, scheduler}`` (role node_exporter), and
both sides scrape exporters as ``instance="<host>:<port>"`` (file_sd targets here, the
ServiceMonitor's relabelling on Kubernetes), so ``host`` is the instance without its port.

Alerting rules carry a ``runbook`` annotation: what the alert means and what to do first.
Their thresholds come from ``observability.alerts``.

:func:`observability_rules` returns the rule groups as plain data: the renderer writes them
as a Prometheus rule file, and a ``PrometheusRule`` object can carry the same groups.
"""

from __future__ import annotations

from typing import Any

from estategen import facts
from estategen.model import Estate

NODE_JOB = "node-exporter"
DCGM_JOB = "dcgm-exporter"
SLURM_JOB = "slurm-exporter"

NODE_INFO = "estategen_node_info"
HOST_INFO = "estategen:host_info"
# per GPU, joined with the host's estate, pool and scheduler
GPU_UTILISATION = "estategen:gpu_utilisation:ratio"
GPU_MEMORY_USED = "estategen:gpu_memory_used:bytes"
GPU_POWER = "estategen:gpu_power:watts"
GPU_XID = "estategen:gpu_xid_error:last"
HOST_GPUS = "estategen:host_gpus:count"
# per pool
POOL_GPUS_PER_HOST = "estategen:pool_gpus_per_host:installed"
POOL_GPUS = "estategen:pool_gpus:installed"
POOL_UNITS = "estategen:pool_gpu_units:installed"
POOL_UTILISATION = "pool:gpu_utilisation:avg"
POOL_BUSY = "pool:gpus_busy:count"
POOL_IDLE = "pool:gpus_idle:count"
POOL_MEMORY = "pool:gpu_memory_used:bytes"
POOL_POWER = "pool:gpu_power:watts"
POOL_XID = "pool:gpus_with_xid_errors:count"
# per scheduler
SCHEDULER_UTILISATION = "scheduler:gpu_utilisation:avg"
SCHEDULER_POWER = "scheduler:gpu_power:watts"
# per team
TEAM_GPUS_IN_USE = "team:gpus_in_use:count"
TEAM_GPU_QUOTA = "team:gpu_quota:count"
TEAM_FAIRSHARE_SHARES = "team:fairshare_shares:ratio"
TEAM_FAIRSHARE_USAGE = "team:fairshare_usage:ratio"

# XID 79: "GPU has fallen off the bus" (NVIDIA's XID catalogue)
XID_FELL_OFF_THE_BUS = 79
# Kueue's GPU resources: whole GPUs, MIG profiles and shared replicas all start with this
GPU_RESOURCES = "nvidia.com/.+"
_HOST_FROM_INSTANCE = '"host", "$1", "instance", "(.+):[0-9]+"'


def slurm_exporter_host(estate: Estate) -> str | None:
    """Where the Slurm exporter runs: the primary controller, once per cluster, so scheduler
    state is counted once (the role installs it there, Prometheus scrapes it there)."""
    if not (estate.slurm_pools and estate.slurm.controllers):
        return None  # no Slurm side, or one without controllers (refused by a check)
    return estate.slurm.controllers[0]


def _by(*labels: str, estate: Estate) -> str:
    """A ``by`` clause: the given labels, then the estate's own labels (observability.labels)."""
    return f"by ({', '.join([*labels, *estate.observability.labels])})"


def _alert(
    name: str, expr: str, severity: str, summary: str, runbook: str, duration: str | None = None
) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if duration:
        rule["for"] = duration
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary, "runbook": runbook}
    return rule


def _gpu_pools(estate: Estate) -> list[Any]:
    return [pool for pool in estate.node_pools if pool.gpus]


def _host_gpu_pools(estate: Estate) -> list[Any]:
    """GPU pools whose hosts Ansible builds (they publish estategen_node_info)."""
    return [pool for pool in _gpu_pools(estate) if not pool.managed and pool.hosts]


def _queued(estate: Estate) -> dict[str, str]:
    """Each team with a ClusterQueue in some cluster, by its queue's name: the team's
    Kubernetes name (``chem_lab``'s queue is ``chem-lab``)."""
    names = {team.name: team.kubernetes_name for team in estate.identity.teams}
    return {
        names.get(entry.team, entry.team): entry.team
        for cluster in estate.kubernetes_clusters
        if cluster.queues
        for entry in cluster.queues.teams
    }


def queued_teams(estate: Estate) -> list[str]:
    """The ClusterQueues of teams in some cluster, by name (each named after its team's
    Kubernetes name)."""
    return sorted(_queued(estate))


def _by_team_from_queue(metric: str, selector: str, estate: Estate) -> str:
    """A Kueue series per ClusterQueue with the label ``team`` its team's name: the queue's
    name where the two are one, the team's name set outright where its queue has the
    Kubernetes form (``chem-lab`` for team ``chem_lab``), so that both schedulers' series of a
    team carry the Slurm account's name."""
    queued = _queued(estate)
    same = [queue for queue, team in sorted(queued.items()) if queue == team]
    parts = []
    if same:
        series = f'{metric}{{cluster_queue=~"{"|".join(same)}", {selector}}}'
        parts.append(f'label_replace({series}, "team", "$1", "cluster_queue", "(.+)")')
    for queue, team in sorted(queued.items()):
        if queue != team:
            series = f'{metric}{{cluster_queue="{queue}", {selector}}}'
            parts.append(f'label_replace({series}, "team", "{team}", "", "")')
    return " or ".join(parts)


def _dcgm(field: str) -> str:
    return f'{field}{{job="{DCGM_JOB}"}}'


def _joined(expr: str) -> str:
    """A per-GPU series with the host's estate, pool and scheduler."""
    return (
        f"label_replace({expr}, {_HOST_FROM_INSTANCE})"
        f" * on (host) group_left (estate, pool, scheduler) {HOST_INFO}"
    )


def _gpu_rules(estate: Estate) -> list[dict[str, Any]]:
    pool_by = _by("estate", "scheduler", "pool", estate=estate)
    rules: list[dict[str, Any]] = [
        {
            "record": HOST_INFO,
            "expr": f"max by (host, estate, pool, scheduler) (label_replace("
            f'{NODE_INFO}{{job="{NODE_JOB}", estate="{estate.name}"}}, {_HOST_FROM_INSTANCE}))',
        },
        {"record": GPU_UTILISATION, "expr": _joined(f"{_dcgm('DCGM_FI_DEV_GPU_UTIL')} / 100")},
        {"record": GPU_MEMORY_USED, "expr": _joined(f"{_dcgm('DCGM_FI_DEV_FB_USED')} * 1048576")},
        {"record": GPU_POWER, "expr": _joined(_dcgm("DCGM_FI_DEV_POWER_USAGE"))},
        {"record": GPU_XID, "expr": _joined(_dcgm("DCGM_FI_DEV_XID_ERRORS"))},
        {
            # MIG instances report memory per instance: count each physical GPU once
            "record": HOST_GPUS,
            "expr": f"count by (estate, scheduler, pool, host) "
            f"(count by (estate, scheduler, pool, host, gpu) ({GPU_MEMORY_USED}))",
        },
        {"record": POOL_UTILISATION, "expr": f"avg {pool_by} ({GPU_UTILISATION})"},
        {"record": POOL_BUSY, "expr": f"sum {pool_by} ({GPU_UTILISATION} > bool 0)"},
        {"record": POOL_IDLE, "expr": f"sum {pool_by} ({GPU_UTILISATION} == bool 0)"},
        {"record": POOL_MEMORY, "expr": f"sum {pool_by} ({GPU_MEMORY_USED})"},
        {"record": POOL_POWER, "expr": f"sum {pool_by} ({GPU_POWER})"},
        {"record": POOL_XID, "expr": f"sum {pool_by} ({GPU_XID} > bool 0)"},
        {
            "record": SCHEDULER_UTILISATION,
            "expr": f"avg {_by('estate', 'scheduler', estate=estate)} ({GPU_UTILISATION})",
        },
        {
            "record": SCHEDULER_POWER,
            "expr": f"sum {_by('estate', 'scheduler', estate=estate)} ({GPU_POWER})",
        },
    ]
    return rules


def _capacity_rules(estate: Estate) -> list[dict[str, Any]]:
    """What each GPU pool has installed, from the blueprint: the baseline panels and alerts
    compare live series with (an autoscaled pool counts at its ``nodes.max``)."""
    rules: list[dict[str, Any]] = []
    for pool in _gpu_pools(estate):
        assert pool.gpus is not None
        labels = {"estate": estate.name, "scheduler": pool.scheduler, "pool": pool.name}
        units = pool.gpu_count * facts.mig_instances_per_gpu(pool) * facts.replicas(pool)
        rules += [
            {"record": record, "expr": f"vector({value})", "labels": dict(labels)}
            for record, value in (
                (POOL_GPUS_PER_HOST, pool.gpus.per_node),
                (POOL_GPUS, pool.gpu_count),
                (POOL_UNITS, units),
            )
        ]
    return rules


def _team_rules(estate: Estate) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    teams = [team.name for team in estate.identity.teams]
    team_by = _by("team", estate=estate)
    if estate.slurm_pools and teams:
        accounts = f'job="{SLURM_JOB}", account=~"{"|".join(teams)}"'
        slurm = {"estate": estate.name, "scheduler": "slurm"}
        for record, metric in (
            (TEAM_GPUS_IN_USE, "slurm_account_gpus_running"),
            (TEAM_FAIRSHARE_SHARES, "slurm_account_fairshare_norm_shares"),
            (TEAM_FAIRSHARE_USAGE, "slurm_account_fairshare_norm_usage"),
        ):
            by_team = f'label_replace({metric}{{{accounts}}}, "team", "$1", "account", "(.+)")'
            labels = dict(slurm)
            rules.append({"record": record, "expr": f"sum {team_by} ({by_team})", "labels": labels})
    if queued_teams(estate):
        gpus = f'resource=~"{GPU_RESOURCES}"'
        kubernetes = {"estate": estate.name, "scheduler": "kubernetes"}
        for record, metric in (
            (TEAM_GPUS_IN_USE, "kueue_cluster_queue_resource_usage"),
            (TEAM_GPU_QUOTA, "kueue_cluster_queue_nominal_quota"),
        ):
            by_team = _by_team_from_queue(metric, gpus, estate)
            rules.append(
                {"record": record, "expr": f"sum {team_by} ({by_team})", "labels": dict(kubernetes)}
            )
    return rules


def _gpu_alerts(estate: Estate) -> list[dict[str, Any]]:
    alerts = estate.observability.alerts
    xid = _dcgm("DCGM_FI_DEV_XID_ERRORS")
    rules = [
        _alert(
            "GpuFellOffTheBus",
            f"{xid} == {XID_FELL_OFF_THE_BUS}",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.instance }} fell off the bus (XID 79)",
            "The driver lost the GPU; jobs on it have failed. Drain the node (Slurm: scontrol "
            "update nodename=<node> state=drain reason=xid79; Kubernetes: kubectl cordon), "
            "collect nvidia-bug-report.sh, then reset the GPU or power-cycle the node. Check "
            "seating, power and cooling before returning it to service.",
        ),
        _alert(
            "GpuXidError",
            f"({xid} > 0) != {XID_FELL_OFF_THE_BUS}",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.instance }} reported XID {{ $value }}",
            "Look the XID up in NVIDIA's XID catalogue. Application XIDs (13, 31, 43) point at "
            "the job; 48 (double-bit ECC), 63/64 (row remapping), 74 (NVLink), 92/94/95 "
            "(ECC) and 119/120 (GSP) point at the GPU: drain the node and run dcgmi diag -r 3.",
        ),
        _alert(
            "GpuDoubleBitEccError",
            f"increase({_dcgm('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL')}[10m]) > 0",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.instance }} had a double-bit ECC error",
            "Uncorrectable memory error: the job on the GPU got corrupt data. Drain the node, "
            "let running jobs finish elsewhere, reset the GPU (row remapping happens on reset) "
            "and run dcgmi diag -r 3; replace the GPU if remapping failed "
            "(DCGM_FI_DEV_ROW_REMAP_FAILURE).",
        ),
        _alert(
            "GpuThermalThrottling",
            f"rate({_dcgm('DCGM_FI_DEV_THERMAL_VIOLATION')}[5m]) / 1e6"
            f" > {alerts.gpu_thermal_throttling_percent / 100:g}",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.instance }} is thermally throttled "
            "{{ $value | humanizePercentage }} of the time",
            "The GPU slows its clocks to stay within temperature. Check the node's fans, inlet "
            "temperature and airflow (blanking panels, hot aisle), and DCGM_FI_DEV_GPU_TEMP "
            "against its neighbours; a single hot GPU points at its heatsink.",
            alerts.gpu_thermal_throttling_for,
        ),
    ]
    if _host_gpu_pools(estate):
        rules.append(
            _alert(
                "GpuMissing",
                f"{HOST_GPUS} < on (estate, pool) group_left {POOL_GPUS_PER_HOST}",
                "critical",
                "{{ $labels.host }} reports {{ $value }} GPUs, fewer than pool "
                "{{ $labels.pool }} has per host",
                "A GPU dropped off the PCIe bus or out of the driver. Run nvidia-smi on the "
                "host and check dmesg for XID 79 or PCIe errors; drain the node and reseat or "
                "replace the GPU.",
                "5m",
            )
        )
    return rules


def _exporter_alerts(estate: Estate) -> list[dict[str, Any]]:
    jobs = [NODE_JOB, DCGM_JOB] + ([SLURM_JOB] if estate.slurm_pools else [])
    return [
        _alert(
            "EstateExporterDown",
            f'up{{job=~"{"|".join(jobs)}"}} == 0',
            "warning",
            "{{ $labels.job }} on {{ $labels.instance }} is down",
            "Prometheus cannot scrape the exporter, so the host's alerts are blind. Check the "
            "host is up, then the service (systemctl status prometheus-node-exporter, "
            "dcgm-exporter or slurm-exporter; on Kubernetes the dcgm-exporter pod on that "
            "node) and that the port is open from Prometheus.",
            estate.observability.alerts.exporter_down_for,
        )
    ]


def _slurm_alerts(estate: Estate) -> list[dict[str, Any]]:
    alerts = estate.observability.alerts
    status = f'slurm_node_status{{job="{SLURM_JOB}", status=~"%s"}}'
    rules = [
        _alert(
            "SlurmNodeDown",
            f"max by (node) ({status % '(down|fail).*|.*[*]'})",
            "critical",
            "Slurm node {{ $labels.node }} is down or not responding",
            "slurmctld cannot reach slurmd on the node. scontrol show node <node> gives the "
            "reason; check the host, slurmd (systemctl status slurmd), munge and the clock. "
            "Once fixed: scontrol update nodename=<node> state=resume.",
            alerts.slurm_node_down_for,
        ),
        _alert(
            "SlurmNodeDrainedTooLong",
            f"max by (node) ({status % 'drain.*'})",
            "warning",
            "Slurm node {{ $labels.node }} has been drained too long",
            "Drained capacity is lost capacity. sinfo -R lists the reason and who set it; "
            "finish the repair or resume the node (scontrol update nodename=<node> "
            "state=resume).",
            alerts.slurm_node_drained_for,
        ),
        _alert(
            "SlurmctldUnreachable",
            f'up{{job="{SLURM_JOB}"}} == 1 unless on (instance) '
            f'slurm_scheduler_threads{{job="{SLURM_JOB}"}}',
            "critical",
            "slurmctld does not answer the Slurm exporter on {{ $labels.instance }}",
            "sdiag fails: no job starts while slurmctld is unreachable. Check slurmctld on "
            "the controllers (systemctl status slurmctld, "
            f"{estate.slurm.site.paths.slurmctld_log_file}), "
            "munge, and that a backup controller took over (scontrol ping).",
            alerts.slurm_controller_unreachable_for,
        ),
    ]
    if not estate.slurm.accounting:
        return rules
    return [
        *rules,
        _alert(
            "SlurmdbdUnreachable",
            # healthy, the queue empties within seconds: not once in 5 minutes is a warning sign
            f'min_over_time(slurm_scheduler_dbd_queue_size{{job="{SLURM_JOB}"}}[5m]) > 0',
            "critical",
            "slurmctld has not emptied its queue for slurmdbd in "
            f"{alerts.slurmdbd_unreachable_for}",
            "Accounting messages pile up in slurmctld: slurmdbd or its database is "
            "unreachable, and when the queue fills, job records are lost. Check slurmdbd "
            "(systemctl status slurmdbd, sacctmgr show cluster) and the database.",
            alerts.slurmdbd_unreachable_for,
        ),
    ]


def _kueue_alerts(estate: Estate) -> list[dict[str, Any]]:
    alerts = estate.observability.alerts
    queued = "|".join(queued_teams(estate))
    pending = f'sum by (cluster_queue) (kueue_pending_workloads{{cluster_queue=~"{queued}"}})'
    admitted = (
        f"sum by (cluster_queue) (increase(kueue_admitted_workloads_total"
        f'{{cluster_queue=~"{queued}"}}[{alerts.kueue_pending_for}]))'
    )
    gpu = f'cluster_queue=~"{queued}", resource=~"{GPU_RESOURCES}"'
    quota = f"sum by (cohort, cluster_queue) (kueue_cluster_queue_nominal_quota{{{gpu}}})"
    # a queue without a usage series counts as using none of its quota
    usage = (
        f"(sum by (cohort, cluster_queue) (kueue_cluster_queue_resource_usage{{{gpu}}})"
        f" or 0 * {quota})"
    )
    # pending workloads per cohort: the quota series name each queue's cohort
    cohort_pending = (
        f'sum by (cohort) (kueue_pending_workloads{{cluster_queue=~"{queued}"}}'
        f" + on (cluster_queue) group_left (cohort) (0 * max by (cluster_queue, cohort) "
        f"(kueue_cluster_queue_nominal_quota{{{gpu}}})))"
    )
    return [
        _alert(
            "KueueWorkloadsPendingTooLong",
            f"{pending} > 0 unless on (cluster_queue) ({admitted} > 0)",
            "warning",
            "ClusterQueue {{ $labels.cluster_queue }} has pending workloads and admitted none "
            f"in {alerts.kueue_pending_for}",
            "Workloads wait for quota. kubectl get workloads -A and kubectl describe "
            "clusterqueue <team> show why they are not admitted (quota used up, no flavor "
            "fits, a stopped queue); raise the quota or borrowing limit, or free capacity.",
            alerts.kueue_pending_for,
        ),
        _alert(
            "TeamQuotaStranded",
            f"({usage} / ({quota} > 0)) < {alerts.stranded_quota_used_percent / 100:g}"
            f" unless on (cluster_queue) ({pending} > 0)"
            f" and on (cohort) ({cohort_pending} > 0)",
            "warning",
            "Team {{ $labels.cluster_queue }} uses {{ $value | humanizePercentage }} of its GPU "
            "quota while others in cohort {{ $labels.cohort }} queue",
            "Stranded capacity: the quota is reserved but idle while other teams wait. Lend it "
            "(lendingLimit) or let others borrow (borrowingLimit) in the blueprint's queues, "
            "or move quota to the teams that queue.",
            alerts.stranded_quota_for,
        ),
    ]


def observability_rules(estate: Estate) -> list[dict[str, Any]]:
    """The estate's rule groups (``groups:`` of a Prometheus rule file), empty without GPUs
    or hosts to watch."""
    if not estate.node_pools:
        return []
    recording = _gpu_rules(estate) + _capacity_rules(estate) + _team_rules(estate)
    alerting = _exporter_alerts(estate)
    if _gpu_pools(estate):
        alerting += _gpu_alerts(estate)
    if estate.slurm_pools:
        alerting += _slurm_alerts(estate)
    if queued_teams(estate):
        alerting += _kueue_alerts(estate)
    return [
        {"name": f"estategen-{estate.name}-recording", "rules": recording},
        {"name": f"estategen-{estate.name}-alerts", "rules": alerting},
    ]
