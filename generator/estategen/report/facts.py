"""The capacity and ownership report's facts: what the estate is, who may use what, and what
looks wrong, gathered once by :func:`build` (pools, partitions, queues, teams, storage, metrics,
and the capacity warnings of :mod:`estategen.capacity`).

A pure function of the model: nothing reads a clock or the environment, so the same blueprint
gives the same report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from estategen import __version__
from estategen.capacity import (
    CapacityIndex,
    CapacityWarning,
    TeamAccess,
    basis,
    cluster_named,
    slots,
)
from estategen.facts import mig_layout, pool_mounts
from estategen.kubernetes_facts import Flavor
from estategen.model import Estate, NodePool

TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True, slots=True)
class PoolFacts:
    pool: NodePool
    side: str  # "slurm" or "kubernetes · <cluster>"
    nodes: str
    shape: str
    gpus: str
    slots: str
    partitions: tuple[str, ...]
    queues: tuple[str, ...]  # "<cluster>/<team>"
    storage: tuple[str, ...]
    metrics: str


@dataclass(frozen=True, slots=True)
class TeamFacts:
    name: str
    gid: int
    namespace: str
    members: tuple[tuple[str, int | None], ...]
    account: str
    fairshare: str
    fairshare_share: float | None
    partitions: tuple[str, ...]
    slurm_gpus: int
    qos: str
    kubernetes: tuple[str, ...]  # "<cluster>: ..." per cluster
    kubernetes_gpus: int
    pools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CohortRow:
    cluster: str
    cohort: str
    flavor: str
    units: int
    factor: int
    nominal: int
    teams: str


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the Markdown and HTML show, computed once."""

    estate: Estate
    version: str
    totals: dict[str, int]
    pools: tuple[PoolFacts, ...]
    teams: tuple[TeamFacts, ...]
    cohorts: tuple[CohortRow, ...]
    flavors: tuple[Flavor, ...]
    warnings: tuple[CapacityWarning, ...]
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def warnings_for_pool(self, name: str) -> list[CapacityWarning]:
        return [w for w in self.warnings if name in w.pools]


def mig_layout_text(pool: NodePool) -> str:
    """``3g.40gb + 2g.20gb + 2x1g.10gb`` (with a multiplication sign): a GPU's MIG layout."""
    counts = mig_layout(pool)
    ordered = sorted(counts, key=lambda p: (-int(p.split("g", 1)[0]), p))
    return " + ".join(p if counts[p] == 1 else f"{counts[p]}{TIMES}{p}" for p in ordered)


def _pool_facts(estate: Estate, index: CapacityIndex, pool: NodePool) -> PoolFacts:
    if pool.elastic:
        # elastic cloud nodes: State=CLOUD nodes named by hosts
        nodes = (
            f"{pool.provider} {pool.instance_type or ''}, "
            f"{pool.nodes_min or 0}-{len(pool.hosts)} cloud nodes"
        )
    elif pool.site_cloud:
        # `state: cloud`: State=CLOUD nodes the site's own programs start
        nodes = f"{len(pool.hosts)} cloud nodes"
    elif pool.managed:
        instance = pool.instance_type or ""
        nodes = f"{pool.provider} {instance}, {pool.nodes_min or 0}-{pool.nodes_max} nodes"
    else:
        nodes = f"{len(pool.hosts)} nodes"
    shape = ""
    if pool.cpu:
        shape = f"{pool.cpu.sockets}{TIMES}{pool.cpu.cores_per_socket} cores"
    if pool.memory_gb:
        shape += f"{', ' if shape else ''}{pool.memory_gb} GB"
    gpus = "no GPUs"
    if pool.gpus:
        kinds = " + ".join(f"{kind.count} {TIMES} {kind.model}" for kind in pool.gpus.types)
        gpus = f"{kinds} per node = {pool.gpu_count} GPUs"
    count, what = slots(pool)
    slot_text = ""
    if pool.gpus and pool.gpus.mig:
        slot_text = f"MIG {mig_layout_text(pool)} per GPU"
    if pool.gpus and what not in ("GPUs", ""):
        slot_text += f"{'; ' if slot_text else ''}{count} {what}"
    return PoolFacts(
        pool=pool,
        side="slurm" if pool.scheduler == "slurm" else f"kubernetes · {pool.cluster}",
        nodes=nodes,
        shape=shape,
        gpus=gpus,
        slots=slot_text,
        partitions=tuple(p.name for p in index.partitions_of(pool)),
        queues=tuple(f"{c.name}/{q.team}" for c, q in index.queues_of(pool)),
        storage=tuple(s.mount for s in pool_mounts(estate, pool)),
        metrics=_metrics(estate, pool),
    )


def _metrics(estate: Estate, pool: NodePool) -> str:
    parts = []
    if not pool.managed:
        parts.append("node exporter (file_sd)")
    if pool.gpus and not pool.elastic:  # cloud nodes: no host Ansible builds, no targets
        if pool.scheduler == "slurm":
            parts.append("DCGM exporter (file_sd)")
        else:
            cluster = cluster_named(estate, pool.cluster)
            via = "ServiceMonitor" if cluster and cluster.prometheus_operator else "annotations"
            parts.append(f"DCGM DaemonSet ({via})")
    return ", ".join(parts) or "none"


def _team_facts(
    estate: Estate, index: CapacityIndex, access: Sequence[TeamAccess]
) -> list[TeamFacts]:
    teams = estate.identity.teams
    has_slurm = bool(estate.slurm_pools)
    accounting = estate.slurm.accounting is not None and has_slurm
    total_share = sum(t.fairshare for t in teams) or 1
    basic = estate.slurm.scheduling.priority_type == "basic"
    uids = {u.name: u.uid for u in estate.identity.users}
    qos = ", ".join(_qos_text(q) for q in estate.slurm.qos) if accounting else "-"
    out = []
    for team, reach in zip(teams, access, strict=True):
        parts = reach.partitions
        slurm_pools = {name for p in parts for name in p.pools if name in estate.pools_by_name}
        out.append(
            TeamFacts(
                name=team.name,
                gid=team.gid,
                namespace=team.namespace,
                members=tuple((m, uids.get(m)) for m in team.members),
                account=team.name if accounting else "-",
                fairshare=f"{team.fairshare} ({100 * team.fairshare / total_share:.0f}%)"
                if accounting and not basic
                else f"{team.fairshare}, not used (priority/basic orders jobs first in, first out)"
                if accounting
                else "not enforced (no slurm.accounting)",
                fairshare_share=team.fairshare / total_share if accounting and not basic else None,
                partitions=tuple(p.name for p in parts) if has_slurm else (),
                slurm_gpus=sum(estate.pools_by_name[n].gpu_count for n in slurm_pools),
                qos=qos,
                kubernetes=reach.kubernetes,
                kubernetes_gpus=reach.kubernetes_gpus,
                pools=index.in_order(slurm_pools | reach.kubernetes_pools),
            )
        )
    return out


def _qos_text(qos: Any) -> str:
    limits = []
    if qos.max_gpus_per_user is not None:
        limits.append(f"≤{qos.max_gpus_per_user} GPUs/user")
    if qos.max_time:
        limits.append(f"≤{qos.max_time}")
    if qos.priority:
        limits.append(f"priority {qos.priority}")
    if qos.usage_factor != 1:
        limits.append(f"usage {TIMES}{qos.usage_factor:g}")
    return f"{qos.name} ({', '.join(limits)})" if limits else qos.name


def _cohorts(estate: Estate, flavors: Sequence[Flavor]) -> list[CohortRow]:
    rows = []
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        keys = [f.key for f in flavors if f.cluster == cluster.name]
        keys += sorted({k for q in cluster.queues.teams for k in q.quota} - set(keys))
        for key in keys:
            flavor = next((f for f in flavors if f.cluster == cluster.name and f.key == key), None)
            entries = [q for q in cluster.queues.teams if key in q.quota]
            rows.append(
                CohortRow(
                    cluster=cluster.name,
                    cohort=cluster.queues.cohort,
                    flavor=key,
                    units=flavor.units if flavor else 0,
                    factor=flavor.factor if flavor else 1,
                    nominal=sum(q.quota[key] for q in entries),
                    teams=", ".join(
                        f"{q.team} {q.quota[key]}"
                        + ("" if q.borrowing_limit is None else f" (+{q.borrowing_limit})")
                        for q in entries
                    )
                    or "-",
                )
            )
    return rows


def build(estate: Estate, suppressed: frozenset[str] = frozenset()) -> Report:
    """All facts and warnings of an estate; warnings whose rule id is ``suppressed`` (the
    blueprint's ``suppress`` and ``--suppress``) are left out, as validate leaves them out."""
    derived = basis(estate)
    flavors, index = derived.flavors, derived.index
    teams = _team_facts(estate, index, derived.access)
    pools = [_pool_facts(estate, index, p) for p in estate.node_pools]
    silenced = suppressed | set(estate.suppress)
    totals = {
        "pools": len(estate.node_pools),
        "nodes": sum(p.node_count for p in estate.node_pools),
        "slurm_gpus": sum(p.gpu_count for p in estate.slurm_pools),
        "kubernetes_gpus": sum(p.gpu_count for p in estate.kubernetes_pools),
        "teams": len(estate.identity.teams),
        "users": len(estate.identity.users),
        "partitions": len(estate.slurm.partitions),
        "queues": sum(len(c.queues.teams) for c in estate.kubernetes_clusters if c.queues),
    }
    return Report(
        estate=estate,
        version=__version__,
        totals=totals,
        pools=tuple(pools),
        teams=tuple(teams),
        cohorts=tuple(_cohorts(estate, flavors)),
        flavors=tuple(flavors),
        warnings=tuple(w for w in derived.warnings if f"check/{w.kind}" not in silenced),
        links=_links(estate, index, pools, teams),
    )


def _links(
    estate: Estate, index: CapacityIndex, pools: Sequence[PoolFacts], teams: Sequence[TeamFacts]
) -> dict[str, tuple[str, ...]]:
    """What each thing in the picture relates to, for highlighting on hover (symmetric)."""
    edges: set[tuple[str, str]] = set()
    for facts in pools:
        pool = f"pool:{facts.pool.name}"
        edges.update((pool, f"partition:{p}") for p in facts.partitions)
        edges.update((pool, f"queue:{q}") for q in facts.queues)
    for team in teams:
        for part in index.partitions_open_to(team.name):
            edges.add((f"partition:{part.name}", f"team:{team.name}"))
    for cluster in estate.kubernetes_clusters:
        for queue in cluster.queues.teams if cluster.queues else ():
            edges.add((f"queue:{cluster.name}/{queue.team}", f"team:{queue.team}"))
    for team in teams:
        edges.update((f"team:{team.name}", f"pool:{p}") for p in team.pools)
    links: dict[str, set[str]] = {}
    for a, b in edges:
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    return {k: tuple(sorted(v)) for k, v in sorted(links.items())}
