"""Who may use what capacity, and what looks wrong in it: the facts the checks' capacity
warnings and the capacity report both derive from the model.

Capacity follows what the renderers deploy: Kueue flavours and their units come from
:mod:`estategen.facts`, as the Kueue objects' do (a MIG flavour counts MIG instances, a
whole-GPU flavour only GPUs that are not partitioned), an autoscaled pool counts at ``nodes.max``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from estategen.facts import mig_instances_per_gpu, pool_mounts, slurmd_port, storage_classes
from estategen.kubernetes_facts import Flavor, cluster_flavors, quota_keys
from estategen.model import Estate, KubernetesCluster, NodePool, Partition, QueueTeam

# Every kind of capacity warning, with what it means for the people running the estate; each
# is a rule id of its own (check/<kind>).
WARNING_KINDS: dict[str, str] = {
    "stranded-capacity": "capacity that no partition or queue can hand out",
    "oversubscribed-cohort": "a Kueue cohort promises more than its cluster has",
    "one-sided-team": "a team has GPU access on one scheduler only",
    "team-without-access": "a team has GPU access on neither scheduler",
    "pool-without-observability": "a pool whose exporters cannot run or lose the estate labels",
    "pool-without-storage": "a pool without the file systems its jobs expect",
}

# Ports the schedulers' own daemons hold on a pool's hosts; an exporter on one of them cannot
# start: slurmd's (facts.slurmd_port, as slurm.conf renders it); kubelet on 10250 (and 10248 for
# health), kube-proxy on 10249 and 10256.
KUBERNETES_NODE_PORTS = {
    10248: "kubelet",
    10249: "kube-proxy",
    10250: "kubelet",
    10256: "kube-proxy",
}


@dataclass(frozen=True, slots=True)
class CapacityWarning:
    """One thing in the estate that is valid but probably not intended."""

    kind: str
    subject: str
    message: str
    pools: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    path: str = ""  # the blueprint key it is about, where validate points


@dataclass(frozen=True, slots=True)
class TeamAccess:
    """Where a team can run: what the warnings read of it, derived with them before any
    report is asked for (validate and render warn; only `report` needs a team's other facts)."""

    name: str
    partitions: tuple[Partition, ...]
    kubernetes: tuple[str, ...]  # "<cluster>: ..." per cluster
    kubernetes_gpus: int
    kubernetes_pools: frozenset[str]


def slots(pool: NodePool) -> tuple[int, str]:
    """(count, what) of the devices jobs are given: MIG instances, replicas, shards or GPUs."""
    gpus = pool.gpus
    if not gpus:
        return 0, ""
    per_gpu = mig_instances_per_gpu(pool)
    if gpus.sharing.time_slicing:
        return pool.gpu_count * per_gpu * gpus.sharing.time_slicing, "time-sliced replicas"
    if gpus.sharing.mps and pool.scheduler == "slurm":
        return pool.gpu_count * gpus.sharing.mps, "MPS shares (besides whole GPUs)"
    if gpus.sharing.mps:
        return pool.gpu_count * per_gpu * gpus.sharing.mps, "MPS clients"
    if gpus.mig:
        return pool.gpu_count * per_gpu, "MIG instances"
    if gpus.sharing.shard:
        return pool.gpu_count * gpus.sharing.shard, "shards (besides whole GPUs)"
    return pool.gpu_count, "GPUs"


class CapacityIndex:
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


def cluster_named(estate: Estate, name: str | None) -> KubernetesCluster | None:
    return next((c for c in estate.kubernetes_clusters if c.name == name), None)


def access_of_teams(estate: Estate, index: CapacityIndex) -> list[TeamAccess]:
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


def _kubernetes_access(
    estate: Estate, index: CapacityIndex, team: str
) -> tuple[list[str], int, set[str]]:
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


def find_warnings(
    estate: Estate, index: CapacityIndex, flavors: Sequence[Flavor], teams: Sequence[TeamAccess]
) -> list[CapacityWarning]:
    """Every warning, in a fixed order: by kind, then in blueprint order."""
    return [
        *_stranded(estate, index, flavors),
        *_oversubscribed(estate, flavors),
        *_team_access(estate, flavors, teams),
        *_observability(estate),
        *_storage(estate),
    ]


def _stranded(
    estate: Estate, index: CapacityIndex, flavors: Sequence[Flavor]
) -> Iterable[CapacityWarning]:
    for pool in estate.slurm_pools:
        if not index.partitions_of(pool):
            what = f"{pool.gpu_count} GPUs on " if pool.gpus else ""
            yield CapacityWarning(
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
                yield CapacityWarning(
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
                yield CapacityWarning(
                    "stranded-capacity",
                    f"cohort {cluster.queues.cohort}",
                    f"{flavor.units - nominal} of the {flavor.units} {flavor.key} in cluster "
                    f"{cluster.name} are in no team's nominal quota; borrowing only lends "
                    "quota, so Kueue never admits work onto them",
                    pools=flavor.pools,
                    path=f"{cluster.path}.queues",
                )


def _oversubscribed(estate: Estate, flavors: Sequence[Flavor]) -> Iterable[CapacityWarning]:
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
                yield CapacityWarning(
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
) -> Iterable[CapacityWarning]:
    has_slurm = bool(estate.slurm_pools)
    has_kube = any(flavors)
    if not (has_slurm or has_kube):
        return
    for team in teams:
        slurm = has_slurm and bool(team.partitions)
        kube = team.kubernetes_gpus > 0
        if not slurm and not kube:
            yield CapacityWarning(
                "team-without-access",
                f"team {team.name}",
                f"team {team.name} can run on no partition and has no Kubernetes GPU quota",
                teams=(team.name,),
                path=estate.teams_by_name[team.name].path,
            )
        elif has_slurm and has_kube and slurm != kube:
            side, other = ("Slurm", "Kubernetes") if slurm else ("Kubernetes", "Slurm")
            yield CapacityWarning(
                "one-sided-team",
                f"team {team.name}",
                f"team {team.name} has GPU access on {side} only; on {other} it has "
                + ("no queue with quota" if other == "Kubernetes" else "no partition"),
                teams=(team.name,),
                path=estate.teams_by_name[team.name].path,
            )


def _observability(estate: Estate) -> Iterable[CapacityWarning]:
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
                yield CapacityWarning(
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
        cluster = cluster_named(estate, pool.cluster)
        if pool.gpus and cluster and not cluster.prometheus_operator:
            labels = ", ".join(f"{k}={v}" for k, v in obs.labels.items())
            yield CapacityWarning(
                "pool-without-observability",
                f"pool {pool.name}",
                f"GPU metrics of pool {pool.name} are scraped through prometheus.io/scrape "
                f"annotations in cluster {cluster.name}, without the estate labels ({labels}) "
                "the Slurm side carries; set prometheus_operator: true for a ServiceMonitor "
                "that adds them",
                pools=(pool.name,),
                path=pool.path,
            )


def _storage(estate: Estate) -> Iterable[CapacityWarning]:
    bare = [pool for pool in estate.slurm_pools if not pool_mounts(estate, pool)]
    if len(bare) > 1 and not estate.storage:
        # a blueprint without storage (an imported site's, say) is told once, not per pool
        yield CapacityWarning(
            "pool-without-storage",
            "node pools",
            f"no shared file system is mounted on any of the {len(bare)} Slurm pools (the "
            "blueprint has no storage): batch jobs start in the user's home directory and "
            "expect the same files on every node",
            pools=tuple(pool.name for pool in bare),
            path="node_pools",
        )
    else:
        for pool in bare:
            yield CapacityWarning(
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
                    yield CapacityWarning(
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
            yield CapacityWarning(
                "pool-without-storage",
                f"partition {part.name}",
                f"partition {part.name} spans pools with different file systems: "
                f"{', '.join(partial)} is missing on {', '.join(missing)}; a job sees "
                "different files depending on the node it lands on",
                pools=tuple(missing),
                path=part.path,
            )


def warnings_of(estate: Estate) -> list[CapacityWarning]:
    """The estate's warnings, as validate reports them (checks.capacity_warnings)."""
    return list(basis(estate).warnings)


@dataclass(frozen=True, slots=True)
class Basis:
    """The flavours, who reaches which partitions and queues, and the warnings of one estate."""

    flavors: tuple[Flavor, ...]
    index: CapacityIndex
    access: tuple[TeamAccess, ...]
    warnings: tuple[CapacityWarning, ...]


def basis(estate: Estate) -> Basis:
    """What the checks' warnings and the report both derive from an estate."""
    flavors = [f for c in estate.kubernetes_clusters for f in cluster_flavors(estate, c.name)]
    index = CapacityIndex(estate, flavors)
    access = access_of_teams(estate, index)
    return Basis(
        tuple(flavors), index, tuple(access), tuple(find_warnings(estate, index, flavors, access))
    )
