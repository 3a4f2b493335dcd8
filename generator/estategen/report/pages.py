"""The report's pages: its tables, in Markdown (pull requests, wikis, terminals) and as one
self-contained HTML page with an SVG picture of the estate (:mod:`estategen.report.picture`).
"""

from __future__ import annotations

from dataclasses import dataclass

from estategen.capacity import WARNING_KINDS
from estategen.model import Estate
from estategen.report.facts import TIMES, Report, build
from estategen.report.picture import picture
from estategen.templating import environment


@dataclass(frozen=True, slots=True)
class Table:
    """One section of the report, the same in Markdown and HTML."""

    id: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


def tables(report: Report) -> list[Table]:
    """The report's tables, in reading order; sections without rows are left out."""
    estate = report.estate
    out = [
        Table(
            "pools",
            "Pools",
            (
                "pool",
                "scheduler",
                "nodes",
                "shape",
                "GPUs",
                "MIG / sharing",
                "drawn on by",
                "storage",
                "metrics",
            ),
            tuple(
                (
                    f.pool.name,
                    f.side,
                    f.nodes,
                    f.shape or "-",
                    f.gpus,
                    f.slots or "-",
                    ", ".join(
                        [
                            *(f"partition {p}" for p in f.partitions),
                            *(f"queue {q}" for q in f.queues),
                        ]
                    )
                    or "nothing",
                    ", ".join(f.storage) or "-",
                    f.metrics,
                )
                for f in report.pools
            ),
        ),
        Table(
            "partitions",
            "Slurm partitions",
            ("partition", "pools", "max time", "default time", "teams", "QoS", "tier", "preempt"),
            tuple(
                (
                    p.name + (" (default)" if p.default else ""),
                    ", ".join(p.pools),
                    p.max_time,
                    p.default_time or "-",
                    ", ".join(p.teams) or "all teams",
                    p.qos or "-",
                    str(p.priority_tier),
                    p.preempt_mode or "-",
                )
                for p in estate.slurm.partitions
            ),
            "A partition without teams has no AllowAccounts line: every account may use it.",
        ),
        Table(
            "qos",
            "Slurm QoS",
            ("QoS", "priority", "max GPUs per user", "max time", "preempts", "usage factor"),
            tuple(
                (
                    q.name,
                    str(q.priority),
                    "-" if q.max_gpus_per_user is None else str(q.max_gpus_per_user),
                    q.max_time or "-",
                    ", ".join(q.preempt) or "-",
                    f"{q.usage_factor:g}",
                )
                for q in estate.slurm.qos
            ),
            "Every QoS is granted to the estate's parent account, so every team may use it.",
        ),
        Table(
            "cohorts",
            "Kueue cohorts",
            (
                "cluster",
                "cohort",
                "flavour",
                "capacity",
                "nominal sum",
                "teams (+ borrowing limit)",
            ),
            tuple(
                (
                    c.cluster,
                    c.cohort,
                    c.flavor,
                    f"{c.units}"
                    + (
                        f" ({TIMES}{c.factor} = {c.units * c.factor} schedulable)"
                        if c.factor > 1
                        else ""
                    ),
                    str(c.nominal),
                    c.teams,
                )
                for c in report.cohorts
            ),
            "Capacity counts physical GPUs (MIG instances for MODEL/PROFILE flavours); "
            "an autoscaled pool counts at nodes.max.",
        ),
        Table(
            "teams",
            "Teams on both sides",
            (
                "team",
                "gid",
                "members (uid)",
                "Slurm account",
                "Fairshare",
                "partitions",
                "QoS",
                "namespace",
                "Kubernetes",
            ),
            tuple(
                (
                    t.name,
                    str(t.gid),
                    ", ".join(f"{m} ({'?' if uid is None else uid})" for m, uid in t.members)
                    or "-",
                    t.account,
                    t.fairshare,
                    ", ".join(t.partitions) or "-",
                    t.qos,
                    t.namespace,
                    "; ".join(t.kubernetes) or "-",
                )
                for t in report.teams
            ),
            "The same gid is the team's Unix group on Slurm hosts and its namespace's "
            "estategen.io/gid annotation on Kubernetes.",
        ),
        Table(
            "storage",
            "Storage",
            ("name", "type", "source", "mount", "pools", "storage class"),
            tuple(
                (
                    s.name,
                    s.type,
                    s.source,
                    s.mount,
                    "all on-prem pools" if s.pools is None else ", ".join(s.pools),
                    s.storage_class or "-",
                )
                for s in estate.storage
            ),
        ),
        Table(
            "observability",
            "Metrics",
            ("exporter", "port", "Slurm side", "Kubernetes side"),
            (
                (
                    "node exporter",
                    str(estate.observability.node_exporter_port),
                    "every host Ansible builds, file_sd targets/node-exporter.json",
                    "on-prem nodes, file_sd targets/node-exporter.json",
                ),
                (
                    "DCGM exporter",
                    str(estate.observability.dcgm_exporter_port),
                    "GPU hosts, file_sd targets/dcgm-exporter.json",
                    "DaemonSet per cluster, ServiceMonitor or scrape annotations",
                ),
            ),
            "Labels on every target: "
            + (", ".join(f"{k}={v}" for k, v in estate.observability.labels.items()) or "none")
            + ". Targets are under observability/prometheus/ in the rendered output.",
        ),
    ]
    return [t for t in out if t.rows]


def markdown(report: Report) -> str:
    """The report as Markdown, for pull requests, wikis and terminals."""
    return str(
        environment()
        .get_template("report/report.md.j2")
        .render(r=report, kinds=WARNING_KINDS, e=report.estate, tables=tables(report))
    )


def html(report: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, SVG and script; no fetches)."""
    return str(
        environment()
        .get_template("report/report.html.j2")
        .render(
            r=report,
            kinds=WARNING_KINDS,
            e=report.estate,
            tables=tables(report),
            p=picture(report),
        )
    )


def report_files(estate: Estate, suppressed: frozenset[str] = frozenset()) -> dict[str, str]:
    """``report.md`` and ``report.html`` for an estate."""
    report = build(estate, suppressed)
    return {"report.md": markdown(report), "report.html": html(report)}
