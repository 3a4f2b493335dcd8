"""The capacity and ownership report: what the estate is, who may use what, and what looks wrong.

A pure function of the model: :func:`build` gathers the facts once (pools, partitions, queues,
teams, storage, metrics) and the warnings found in them; :func:`markdown` and :func:`html`
present the same facts, the HTML with an SVG picture of the estate (:mod:`estategen.picture`).
Nothing reads a clock or the environment, so the same blueprint gives the same report.

Capacity follows what the renderers deploy: Kueue flavours and their units come from
:mod:`estategen.facts`, as the Kueue objects' do (a MIG flavour counts MIG instances, a
whole-GPU flavour only GPUs that are not partitioned), an autoscaled pool counts at ``nodes.max``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from estategen import __version__
from estategen.checks import WARNING_KINDS
from estategen.facts import (
    Flavor,
    cluster_flavors,
    mig_instances_per_gpu,
    mig_layout,
    pool_mounts,
    quota_keys,
    slurmd_port,
    storage_classes,
)
from estategen.model import (
    Estate,
    KubernetesCluster,
    NodePool,
    Partition,
    QueueTeam,
)
from estategen.record import Record, field

# Ports the schedulers' own daemons hold on a pool's hosts; an exporter on one of them cannot
# start: slurmd's (facts.slurmd_port, as slurm.conf renders it); kubelet on 10250 (and 10248 for
# health), kube-proxy on 10249 and 10256.
KUBERNETES_NODE_PORTS = {
    10248: "kubelet",
    10249: "kube-proxy",
    10250: "kubelet",
    10256: "kube-proxy",
}

TIMES = "\N{MULTIPLICATION SIGN}"


class ReportWarning(Record):
    """One thing in the estate that is valid but probably not intended."""

    kind: str
    subject: str
    message: str
    pools: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    path: str = ""  # the blueprint key it is about, where validate points


class PoolFacts(Record):
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


class TeamFacts(Record):
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


class TeamAccess(Record):
    """Where a team can run: what the warnings read of it, derived with them before any
    report is asked for (validate and render warn; only `report` needs a team's other facts)."""

    name: str
    partitions: tuple[Partition, ...]
    kubernetes: tuple[str, ...]  # "<cluster>: ..." per cluster
    kubernetes_gpus: int
    kubernetes_pools: frozenset[str]


class CohortRow(Record):
    cluster: str
    cohort: str
    flavor: str
    units: int
    factor: int
    nominal: int
    teams: str


class Report(Record):
    """Everything the Markdown and HTML show, computed once."""

    estate: Estate
    version: str
    totals: dict[str, int]
    pools: tuple[PoolFacts, ...]
    teams: tuple[TeamFacts, ...]
    cohorts: tuple[CohortRow, ...]
    flavors: tuple[Flavor, ...]
    warnings: tuple[ReportWarning, ...]
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def warnings_for_pool(self, name: str) -> list[ReportWarning]:
        return [w for w in self.warnings if name in w.pools]


# --- capacity ---------------------------------------------------------------------------------


def slots(pool: NodePool) -> tuple[int, str]:
    """(count, what) of the devices jobs are given: MIG instances, replicas, shards or GPUs."""
    gpus = pool.gpus
    if not gpus:
        return 0, ""
    per_gpu = mig_instances_per_gpu(pool)
    if gpus.sharing.time_slicing:
        return pool.gpu_count * per_gpu * gpus.sharing.time_slicing, "time-sliced replicas"
    if gpus.sharing.mps:
        return pool.gpu_count * per_gpu * gpus.sharing.mps, "MPS clients"
    if gpus.mig:
        return pool.gpu_count * per_gpu, "MIG instances"
    if gpus.sharing.shard:
        return pool.gpu_count * gpus.sharing.shard, "shards (besides whole GPUs)"
    return pool.gpu_count, "GPUs"


def mig_layout_text(pool: NodePool) -> str:
    """``3g.40gb + 2g.20gb + 2x1g.10gb`` (with a multiplication sign): a GPU's MIG layout."""
    counts = mig_layout(pool)
    ordered = sorted(counts, key=lambda p: (-int(p.split("g", 1)[0]), p))
    return " + ".join(p if counts[p] == 1 else f"{counts[p]}{TIMES}{p}" for p in ordered)


class _Index:
    """Who relates to what, gathered once per report in one pass over partitions and queues.

    Each pool and each team then looks up its own partitions, queues and Kubernetes access,
    so the report grows with the estate and its relations, never as teams times pools.
    """

    def __init__(self, estate: Estate, flavors: Sequence[Flavor]) -> None:
        self.estate = estate
        self.order = {p.name: i for i, p in enumerate(estate.node_pools)}
        self.of_pool: dict[str, list[Partition]] = {}
        self.open_to_all: list[tuple[int, Partition]] = []
        self.listing: dict[str, list[tuple[int, Partition]]] = {}
        for i, part in enumerate(estate.slurm.partitions):
            for name in dict.fromkeys(part.pools):
                self.of_pool.setdefault(name, []).append(part)
            if not part.teams:
                self.open_to_all.append((i, part))
            for team in dict.fromkeys(part.teams):
                self.listing.setdefault(team, []).append((i, part))
        self.flavors: dict[str, list[Flavor]] = {}
        for flavor in flavors:
            self.flavors.setdefault(flavor.cluster, []).append(flavor)
        # per cluster with queues: team -> its queue, quota key -> (position, queue)
        self.queue_of: dict[str, dict[str, QueueTeam]] = {}
        self.with_key: dict[str, dict[str, list[tuple[int, QueueTeam]]]] = {}
        for cluster in estate.kubernetes_clusters:
            if not cluster.queues:
                continue
            first: dict[str, QueueTeam] = {}
            by_key: dict[str, list[tuple[int, QueueTeam]]] = {}
            for i, queue in enumerate(cluster.queues.teams):
                first.setdefault(queue.team, queue)
                for key in queue.quota:
                    by_key.setdefault(key, []).append((i, queue))
            self.queue_of[cluster.name] = first
            self.with_key[cluster.name] = by_key

    def partitions_of(self, pool: NodePool) -> list[Partition]:
        return self.of_pool.get(pool.name, [])

    def partitions_open_to(self, team: str) -> list[Partition]:
        """In blueprint order: those without `teams` and those that list ``team``."""
        listed = self.listing.get(team, [])
        if not self.open_to_all:
            return [p for _, p in listed]
        return [p for _, p in sorted([*self.open_to_all, *listed], key=lambda e: e[0])]

    def queues_of(self, pool: NodePool) -> list[tuple[KubernetesCluster, QueueTeam]]:
        """The queues of the pool's cluster with quota for a key the pool backs."""
        out: list[tuple[KubernetesCluster, QueueTeam]] = []
        for cluster in self.estate.kubernetes_clusters:
            by_key = self.with_key.get(cluster.name)
            if cluster.name != pool.cluster or by_key is None:
                continue
            found = {i: q for key in quota_keys(pool) for i, q in by_key.get(key, ())}
            out += [(cluster, found[i]) for i in sorted(found)]
        return out

    def in_order(self, pools: set[str]) -> tuple[str, ...]:
        """Pool names in blueprint order."""
        return tuple(sorted((n for n in pools if n in self.order), key=self.order.__getitem__))


# --- facts ------------------------------------------------------------------------------------


def _pool_facts(estate: Estate, index: _Index, pool: NodePool) -> PoolFacts:
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
        gpus = f"{pool.gpus.count} {TIMES} {pool.gpus.model} per node = {pool.gpu_count} GPUs"
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
            cluster = _cluster(estate, pool.cluster)
            via = "ServiceMonitor" if cluster and cluster.prometheus_operator else "annotations"
            parts.append(f"DCGM DaemonSet ({via})")
    return ", ".join(parts) or "none"


def _cluster(estate: Estate, name: str | None) -> KubernetesCluster | None:
    return next((c for c in estate.kubernetes_clusters if c.name == name), None)


def _access_of_teams(estate: Estate, index: _Index) -> list[TeamAccess]:
    out = []
    for team in estate.identity.teams:
        kube, kube_gpus, kube_pools = _kubernetes_access(estate, index, team.name)
        out.append(
            TeamAccess(
                team.name,
                tuple(index.partitions_open_to(team.name)),
                tuple(kube),
                kube_gpus,
                frozenset(kube_pools),
            )
        )
    return out


def _team_facts(estate: Estate, index: _Index, access: Sequence[TeamAccess]) -> list[TeamFacts]:
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


def _kubernetes_access(estate: Estate, index: _Index, team: str) -> tuple[list[str], int, set[str]]:
    """What a team may run per cluster, the GPUs behind it, and the pools it can land on.

    As the Pulumi program's ResourceQuota: a cluster without queues lets every namespace use
    all of it; with queues, a team without a queue there gets nothing.
    """
    lines: list[str] = []
    gpus = 0
    pools: set[str] = set()
    for cluster in estate.kubernetes_clusters:
        mine = index.flavors.get(cluster.name, [])
        if not mine:
            continue
        if cluster.queues is None:
            lines.append(f"{cluster.name}: whole cluster (no queues)")
            gpus += _physical(estate, cluster.name)
            pools.update(n for f in mine for n in f.pools)
            continue
        entry = index.queue_of[cluster.name].get(team)
        if entry is None:
            lines.append(f"{cluster.name}: none")
            continue
        quotas = []
        reach: set[str] = set()
        for key, amount in entry.quota.items():
            quotas.append(f"{amount} {key}")
            flavor = next((f for f in mine if f.key == key), None)
            if flavor and (amount or entry.borrowing_limit != 0):
                reach.update(flavor.pools)
        borrow = (
            "borrows idle quota"
            if entry.borrowing_limit is None
            else f"borrows ≤ {entry.borrowing_limit}"
        )
        lines.append(f"{cluster.name}: {', '.join(quotas)}; {borrow}")
        gpus += sum(estate.pools_by_name[n].gpu_count for n in reach)
        pools.update(reach)
    return lines, gpus, pools


def _physical(estate: Estate, cluster: str) -> int:
    return sum(p.gpu_count for p in estate.pools_in_cluster(cluster))


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


# --- warnings ---------------------------------------------------------------------------------


def find_warnings(
    estate: Estate, index: _Index, flavors: Sequence[Flavor], teams: Sequence[TeamAccess]
) -> list[ReportWarning]:
    """Every warning, in a fixed order: by kind, then in blueprint order."""
    return [
        *_stranded(estate, index, flavors),
        *_oversubscribed(estate, flavors),
        *_team_access(estate, flavors, teams),
        *_observability(estate),
        *_storage(estate),
    ]


def _stranded(estate: Estate, index: _Index, flavors: Sequence[Flavor]) -> Iterable[ReportWarning]:
    for pool in estate.slurm_pools:
        if not index.partitions_of(pool):
            what = f"{pool.gpu_count} GPUs on " if pool.gpus else ""
            yield ReportWarning(
                "stranded-capacity",
                f"pool {pool.name}",
                f"no partition draws on pool {pool.name}: its {what}{len(pool.hosts)} nodes "
                "cannot run jobs",
                pools=(pool.name,),
                path=pool.path,
            )
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        quotas: Counter[str] = Counter()
        for queue in cluster.queues.teams:
            quotas.update(queue.quota)
        for pool in estate.pools_in_cluster(cluster.name):
            keys = quota_keys(pool)
            if keys and not any(quotas[k] for k in keys):
                yield ReportWarning(
                    "stranded-capacity",
                    f"pool {pool.name}",
                    f"no queue in cluster {cluster.name} has quota for {', '.join(keys)}: "
                    f"Kueue admits no workload onto the {pool.gpu_count} GPUs of pool "
                    f"{pool.name}",
                    pools=(pool.name,),
                    path=pool.path,
                )
        for flavor in flavors:
            nominal = quotas[flavor.key]
            if flavor.cluster == cluster.name and 0 < nominal < flavor.units:
                yield ReportWarning(
                    "stranded-capacity",
                    f"cohort {cluster.queues.cohort}",
                    f"{flavor.units - nominal} of the {flavor.units} {flavor.key} in cluster "
                    f"{cluster.name} are in no team's nominal quota; borrowing only lends "
                    "quota, so Kueue never admits work onto them",
                    pools=flavor.pools,
                    path=f"{cluster.path}.queues",
                )


def _oversubscribed(estate: Estate, flavors: Sequence[Flavor]) -> Iterable[ReportWarning]:
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        quotas: Counter[str] = Counter()
        for queue in cluster.queues.teams:
            quotas.update(queue.quota)
        for key, nominal in sorted(quotas.items()):
            flavor = next((f for f in flavors if f.cluster == cluster.name and f.key == key), None)
            units = flavor.units if flavor else 0
            if nominal > units:
                backing = (
                    f"the {units} the cluster has"
                    if flavor
                    else f"nothing: no pool in cluster {cluster.name} offers {key} as a "
                    "flavour (MIG pools offer MODEL/PROFILE keys)"
                )
                yield ReportWarning(
                    "oversubscribed-cohort",
                    f"cohort {cluster.queues.cohort}",
                    f"nominal quotas for {key} in cluster {cluster.name} add up to {nominal}, "
                    f"above {backing}; admitted workloads wait for GPUs that do not exist",
                    pools=flavor.pools if flavor else (),
                    teams=tuple(q.team for q in cluster.queues.teams if key in q.quota),
                    path=f"{cluster.path}.queues",
                )


def _team_access(
    estate: Estate, flavors: Sequence[Flavor], teams: Sequence[TeamAccess]
) -> Iterable[ReportWarning]:
    has_slurm = bool(estate.slurm_pools)
    has_kube = any(flavors)
    if not (has_slurm or has_kube):
        return
    for team in teams:
        slurm = has_slurm and bool(team.partitions)
        kube = team.kubernetes_gpus > 0
        if not slurm and not kube:
            yield ReportWarning(
                "team-without-access",
                f"team {team.name}",
                f"team {team.name} can run on no partition and has no Kubernetes GPU quota",
                teams=(team.name,),
                path=estate.teams_by_name[team.name].path,
            )
        elif has_slurm and has_kube and slurm != kube:
            side, other = ("Slurm", "Kubernetes") if slurm else ("Kubernetes", "Slurm")
            yield ReportWarning(
                "one-sided-team",
                f"team {team.name}",
                f"team {team.name} has GPU access on {side} only; on {other} it has "
                + ("no queue with quota" if other == "Kubernetes" else "no partition"),
                teams=(team.name,),
                path=estate.teams_by_name[team.name].path,
            )


def _observability(estate: Estate) -> Iterable[ReportWarning]:
    obs = estate.observability
    for pool in estate.node_pools:
        ports: list[tuple[int, str]] = []
        if not pool.managed:
            ports.append((obs.node_exporter_port, "node exporter"))
            if pool.scheduler == "slurm":
                ports.append((slurmd_port(estate), "slurmd"))
            else:
                ports.extend((p, d) for p, d in sorted(KUBERNETES_NODE_PORTS.items()))
        if pool.gpus and (pool.scheduler == "slurm" or not pool.managed):
            ports.append((obs.dcgm_exporter_port, "DCGM exporter"))
        holders: dict[int, list[str]] = {}
        for port, daemon in ports:
            if daemon not in holders.setdefault(port, []):
                holders[port].append(daemon)
        for port, daemons in sorted(holders.items()):
            if len(daemons) > 1 and any("exporter" in d for d in daemons):
                yield ReportWarning(
                    "pool-without-observability",
                    f"pool {pool.name}",
                    f"{' and '.join(daemons)} both listen on port {port} on the hosts of pool "
                    f"{pool.name}; the exporter cannot start",
                    pools=(pool.name,),
                    path=pool.path,
                )
    if not obs.labels:
        return
    for pool in estate.kubernetes_pools:
        cluster = _cluster(estate, pool.cluster)
        if pool.gpus and cluster and not cluster.prometheus_operator:
            labels = ", ".join(f"{k}={v}" for k, v in obs.labels.items())
            yield ReportWarning(
                "pool-without-observability",
                f"pool {pool.name}",
                f"GPU metrics of pool {pool.name} are scraped through prometheus.io/scrape "
                f"annotations in cluster {cluster.name}, without the estate labels ({labels}) "
                "the Slurm side carries; set prometheus_operator: true for a ServiceMonitor "
                "that adds them",
                pools=(pool.name,),
                path=pool.path,
            )


def _storage(estate: Estate) -> Iterable[ReportWarning]:
    for pool in estate.slurm_pools:
        if not pool_mounts(estate, pool):
            yield ReportWarning(
                "pool-without-storage",
                f"pool {pool.name}",
                f"no shared file system is mounted on pool {pool.name}: batch jobs start in "
                "the user's home directory and expect the same files on every node",
                pools=(pool.name,),
                path=pool.path,
            )
    for cluster in estate.kubernetes_clusters:
        for storage, mounting in storage_classes(estate, cluster.name):
            if not mounting:
                continue  # offered through the cluster's CSI driver on every node
            for pool in estate.pools_in_cluster(cluster.name):
                if storage not in pool_mounts(estate, pool):
                    why = (
                        f"{pool.provider} nodes are not built by Ansible"
                        if pool.managed
                        else f"storage {storage.name} does not list it"
                    )
                    yield ReportWarning(
                        "pool-without-storage",
                        f"pool {pool.name}",
                        f"cluster {cluster.name} offers storage class {storage.storage_class}, "
                        f"but {storage.mount} is not mounted on pool {pool.name} ({why}); "
                        "pods claiming it cannot start there",
                        pools=(pool.name,),
                        path=pool.path,
                    )
    for part in estate.slurm.partitions:
        pools = [estate.pools_by_name[n] for n in part.pools if n in estate.pools_by_name]
        seen = {p.name: {s.mount for s in pool_mounts(estate, p)} for p in pools}
        everywhere = set.intersection(*seen.values()) if seen else set()
        partial = sorted(set().union(*seen.values()) - everywhere)
        if partial:
            missing = [n for n, m in seen.items() if not set(partial) <= m]
            yield ReportWarning(
                "pool-without-storage",
                f"partition {part.name}",
                f"partition {part.name} spans pools with different file systems: "
                f"{', '.join(partial)} is missing on {', '.join(missing)}; a job sees "
                "different files depending on the node it lands on",
                pools=tuple(missing),
                path=part.path,
            )


# --- the report -------------------------------------------------------------------------------


def warnings_of(estate: Estate) -> list[ReportWarning]:
    """The estate's warnings, as validate reports them (checks.report_warnings)."""
    return list(_basis(estate).warnings)


class _Basis(Record):
    flavors: tuple[Flavor, ...]
    index: _Index
    access: tuple[TeamAccess, ...]
    warnings: tuple[ReportWarning, ...]


_LAST_BASIS: list[tuple[Estate, _Basis]] = []


def _basis(estate: Estate) -> _Basis:
    """What the checks' warnings and the report both derive from an estate, derived once for
    the estate asked for last (`estategen report` validates, then reports, the same one)."""
    if _LAST_BASIS and _LAST_BASIS[0][0] is estate:
        return _LAST_BASIS[0][1]
    flavors = [f for c in estate.kubernetes_clusters for f in cluster_flavors(estate, c.name)]
    index = _Index(estate, flavors)
    access = _access_of_teams(estate, index)
    basis = _Basis(
        tuple(flavors), index, tuple(access), tuple(find_warnings(estate, index, flavors, access))
    )
    _LAST_BASIS[:] = [(estate, basis)]
    return basis


def build(estate: Estate, suppressed: frozenset[str] = frozenset()) -> Report:
    """All facts and warnings of an estate; warnings whose rule id is ``suppressed`` (the
    blueprint's ``suppress`` and ``--suppress``) are left out, as validate leaves them out."""
    basis = _basis(estate)
    flavors, index = basis.flavors, basis.index
    teams = _team_facts(estate, index, basis.access)
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
        warnings=tuple(w for w in basis.warnings if f"check/{w.kind}" not in silenced),
        links=_links(estate, index, pools, teams),
    )


def _links(
    estate: Estate, index: _Index, pools: Sequence[PoolFacts], teams: Sequence[TeamFacts]
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


class Table(Record):
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


_MARKDOWN_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_~[]<>|&"})


def md(value: object) -> str:
    """Text safe in Markdown (and a table cell): markup characters escaped, never interpreted."""
    return str(value).translate(_MARKDOWN_SPECIAL)


@cache
def _environment() -> Any:
    import jinja2

    from estategen.templating import bytecode_cache

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("estategen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # HTML (and its inline SVG) is escaped everywhere; Markdown values go through `md`
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",)),
        bytecode_cache=bytecode_cache(),
    )
    env.filters["md"] = md
    return env


def markdown(report: Report) -> str:
    """The report as Markdown, for pull requests, wikis and terminals."""
    return str(
        _environment()
        .get_template("report/report.md.j2")
        .render(r=report, kinds=WARNING_KINDS, e=report.estate, tables=tables(report))
    )


def html(report: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, SVG and script; no fetches)."""
    from estategen.picture import picture

    return str(
        _environment()
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
