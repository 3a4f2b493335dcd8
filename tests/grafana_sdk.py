"""The Grafana dashboard built with grafana-foundation-sdk's builders: the reference that
estategen.renderers.grafana writes as plain data (tests/test_grafana.py requires the two to be
equal; benchmarks/grafana_dashboard.py times both)."""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DashboardCursorSync, DataSourceRef

from estategen import facts
from estategen import prometheus_rules as rules
from estategen.model import Estate, NodePool
from estategen.renderers import grafana
from estategen.renderers.grafana import DATASOURCE, HEIGHT, SCHEDULERS, WIDTH


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return (
        prometheus.Dataquery()
        .expr(expr)
        .legend_format(legend)
        .datasource(DataSourceRef(type_val="prometheus", uid=DATASOURCE))
    )


def _timeseries(title: str, description: str, unit: str) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DataSourceRef(type_val="prometheus", uid=DATASOURCE))
        .unit(unit)
        .min(0)
        .line_width(1)
        .fill_opacity(10)
        .span(WIDTH)
        .height(HEIGHT)
    )


def _stat(title: str, description: str, expr: str, unit: str = "none") -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DataSourceRef(type_val="prometheus", uid=DATASOURCE))
        .unit(unit)
        .span(WIDTH)
        .height(4)
        .with_target(_query(expr, ""))
    )


def _pool_panel(estate: Estate, pool: NodePool) -> timeseries.Panel:
    selector = f'{{estate="{estate.name}", pool="{pool.name}"}}'
    units_per_gpu = facts.mig_instances_per_gpu(pool) * facts.replicas(pool)
    assert pool.gpus is not None
    shape = (
        f", autoscaled to {pool.nodes_max} nodes; its nodes run no node exporter, so only "
        "what it installs is shown"
        if pool.managed
        else f", {len(pool.hosts)} hosts"
    )
    panel = (
        _timeseries(
            f"{pool.name}: GPUs busy and idle",
            f"Pool {pool.name} ({pool.gpus.count} {pool.gpus.model} per node{shape}): GPUs "
            "with any utilisation (busy) and without (idle), against what the blueprint "
            "installs.",
            "none",
        )
        .with_target(_query(f"{rules.POOL_BUSY}{selector}", "busy"))
        .with_target(_query(f"{rules.POOL_IDLE}{selector}", "idle"))
        .with_target(_query(f"{rules.POOL_GPUS}{selector}", "installed"))
    )
    if units_per_gpu > 1:
        kind = "MIG instances" if facts.mig_instances_per_gpu(pool) > 1 else "time-sliced GPUs"
        panel = panel.with_target(_query(f"{rules.POOL_UNITS}{selector}", kind))
    return panel


def _utilisation_panel(estate: Estate, scheduler: str, pools: list[NodePool]) -> timeseries.Panel:
    names = "|".join(pool.name for pool in pools)
    return _timeseries(
        "GPU utilisation per pool",
        "Average GPU utilisation of each pool's GPUs that report it (DCGM exporter).",
        "percentunit",
    ).with_target(
        _query(
            f'{rules.POOL_UTILISATION}{{estate="{estate.name}", scheduler="{scheduler}", '
            f'pool=~"{names}"}}',
            "{{pool}}",
        )
    )


def _team_panel(estate: Estate, scheduler: str) -> timeseries.Panel:
    selector = f'{{estate="{estate.name}", scheduler="{scheduler}"}}'
    if scheduler == "slurm":
        return (
            _timeseries(
                "Teams: GPUs in use and fairshare",
                "GPUs each team's Slurm account runs on, and its normalised fairshare shares "
                "against its normalised usage (Slurm exporter).",
                "none",
            )
            .with_target(_query(f"{rules.TEAM_GPUS_IN_USE}{selector}", "{{team}} GPUs"))
            .with_target(_query(f"{rules.TEAM_FAIRSHARE_SHARES}{selector}", "{{team}} shares"))
            .with_target(_query(f"{rules.TEAM_FAIRSHARE_USAGE}{selector}", "{{team}} usage"))
        )
    return (
        _timeseries(
            "Teams: GPUs in use against quota",
            "GPU units each team's ClusterQueue has admitted, against its nominal quota (Kueue).",
            "none",
        )
        .with_target(_query(f"{rules.TEAM_GPUS_IN_USE}{selector}", "{{team}} in use"))
        .with_target(_query(f"{rules.TEAM_GPU_QUOTA}{selector}", "{{team}} quota"))
    )


def _queue_panel(estate: Estate, scheduler: str) -> timeseries.Panel:
    if scheduler == "slurm":
        partitions = "|".join(p.name for p in estate.slurm.partitions)
        return (
            _timeseries(
                "Pending jobs and unavailable nodes",
                "Jobs pending per partition, and nodes down or drained (Slurm exporter).",
                "none",
            )
            .with_target(
                _query(
                    f'slurm_partition_jobs_pending{{job="{rules.SLURM_JOB}", '
                    f'partition=~"{partitions}"}}',
                    "{{partition}} pending",
                )
            )
            .with_target(
                _query(
                    f'count by (status) (slurm_node_status{{job="{rules.SLURM_JOB}", '
                    'status=~"(down|drain|fail).*|.*[*]"})',
                    "nodes {{status}}",
                )
            )
        )
    return _timeseries(
        "Pending workloads",
        "Workloads waiting in each team's ClusterQueue (Kueue).",
        "none",
    ).with_target(
        _query(
            "sum by (cluster_queue) (kueue_pending_workloads"
            f'{{cluster_queue=~"{"|".join(rules.queued_teams(estate))}"}})',
            "{{cluster_queue}}",
        )
    )


def sdk_dashboard(estate: Estate) -> dict[str, Any]:
    """The dashboard as grafana-foundation-sdk builds it from the same calls."""

    selector = f'{{estate="{estate.name}"}}'
    alerts = f'ALERTS{{alertstate="firing", alertname=~"{"|".join(grafana._alert_names(estate))}"}}'
    board = (
        dashboard.Dashboard(f"GPU estate {estate.name}")
        .uid(grafana.dashboard_uid(estate))
        .description(f"GPUs of estate {estate.name} on both schedulers, rendered by estategen")
        .tags(["estategen", "gpu", estate.name])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        )
        .with_row(dashboard.Row(f"Estate {estate.name}"))
        .with_panel(
            _stat(
                "GPUs installed",
                "Physical GPUs the blueprint declares (an autoscaled pool at nodes.max).",
                f"sum({rules.POOL_GPUS}{selector})",
            )
        )
        .with_panel(
            _stat(
                "GPUs busy",
                "GPUs with any utilisation, both schedulers.",
                f"sum({rules.POOL_BUSY}{selector})",
            )
        )
        .with_panel(
            _stat(
                "Alerts firing",
                "The estate's alerts firing now (observability/prometheus/rules/).",
                f"count({alerts}) or vector(0)",
            )
        )
    )
    for scheduler, title in SCHEDULERS:
        pools = [p for p in estate.node_pools if p.scheduler == scheduler and p.gpus]
        if not pools:
            continue
        board = board.with_row(dashboard.Row(f"{title}: a panel per pool"))
        for pool in pools:
            board = board.with_panel(_pool_panel(estate, pool))
        board = board.with_panel(_utilisation_panel(estate, scheduler, pools))
        if scheduler == "slurm" or rules.queued_teams(estate):
            board = board.with_panel(_team_panel(estate, scheduler))
            board = board.with_panel(_queue_panel(estate, scheduler))
    board = board.with_row(dashboard.Row("Alerts")).with_panel(
        _timeseries(
            "Alerts firing by name",
            "Which of the estate's alerts fire, over time.",
            "none",
        ).with_target(_query(f"count by (alertname) ({alerts})", "{{alertname}}"))
    )
    data: dict[str, Any] = json.loads(JSONEncoder().encode(board.build()))
    return data
