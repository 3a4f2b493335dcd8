"""Facts derived from the model, each computed here once.

Slurm, Ansible, the Pulumi data file, the report, the checks and the plan all need the same
derived facts: a GPU's MIG layout, the GRES a node offers, a node's RealMemory, the file
systems a pool mounts, its health checks, reservations' nodes, Ansible group names, daemon
ports. Every output imports them from this module (and Kubernetes nodes' facts from
``kubernetes_facts``), so two outputs cannot disagree about one fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from estategen.model import (
    SLURMCTLD_PORT,
    SLURMD_PORT,
    Estate,
    GpuType,
    NodePool,
    Reservation,
    Storage,
    slurm_seconds,
)

# where the slurm_packages role saves slurm.packages.apt_key_url (a source line names it with
# signed-by=)
SLURM_APT_KEYRING = "/etc/apt/keyrings/slurm.asc"


def topology_plugin(pools: Iterable[tuple[Sequence[str], Sequence[str]]]) -> str | None:
    """The TopologyPlugin for Slurm pools given as (blocks, switches): block when any pool
    names blocks, tree when any names switches, none otherwise.

    One decision for slurm.conf and topology.conf (from the model) and for plan (from a
    recorded model), so that what plan says restarts slurmctld is what the renderer writes.
    """
    pools = list(pools)
    if any(blocks for blocks, _ in pools):
        return "block"
    if any(switches for _, switches in pools):
        return "tree"
    return None


def slurmctld_ports(estate: Estate) -> tuple[int, int]:
    """The lowest and highest port slurmctld listens on (SlurmctldPort may be a range)."""
    return estate.slurm.site.slurmctld_ports or (SLURMCTLD_PORT, SLURMCTLD_PORT)


def slurmctld_port_text(estate: Estate) -> str:
    """SlurmctldPort as slurm.conf writes it: one port, or LOW-HIGH."""
    low, high = slurmctld_ports(estate)
    return str(low) if low == high else f"{low}-{high}"


def slurmd_port(estate: Estate) -> int:
    """The port slurmd listens on (SlurmdPort)."""
    return estate.slurm.site.slurmd_port or SLURMD_PORT


# --- reservations, MPI and the REST API ---
# Where the controllers and slurmrestd read the JWT signing key (AuthAltParameters=jwt_key=).
JWT_KEY_PATH = "/etc/slurm/jwt_hs256.key"
# The recurrence flags of a reservation: at most one, each with its period.
RESERVATION_PERIODS = {
    "hourly": timedelta(hours=1),
    "daily": timedelta(days=1),
    "weekly": timedelta(weeks=1),
    "weekday": timedelta(days=1),
    "weekend": timedelta(days=1),
}


def reservation_name(estate: Estate, reservation: Reservation) -> str:
    """The ReservationName slurmctld knows a blueprint reservation by: ``ESTATE.NAME``.

    The dot cannot appear in a blueprint name, so the prefix marks the reservations estategen
    created; the Ansible task deletes only those when the blueprint drops one.
    """
    return f"{reservation_prefix(estate)}{reservation.name}"


def reservation_prefix(estate: Estate) -> str:
    return f"{estate.name}."


def partition_hosts(estate: Estate, partition: str) -> Sequence[str]:
    """Hosts of a partition's pools, in pool order; [] for a partition the blueprint lacks."""
    return _pools_hosts(estate, partition_pools(estate, partition))


def reservation_hosts(estate: Estate, reservation: Reservation) -> Sequence[str]:
    """The nodes a reservation holds: its `hosts`, else its `pools`' hosts, else its
    partition's."""
    if reservation.hosts:
        return reservation.hosts
    if reservation.pools:
        return _pools_hosts(estate, [n for n in reservation.pools if n in estate.pools_by_name])
    if reservation.partition:
        return partition_hosts(estate, reservation.partition)
    return []


def _pools_hosts(estate: Estate, names: Sequence[str]) -> Sequence[str]:
    """The hosts of pools, each once, in pool order: one pool's own tuple when it lists each
    host once (no copy of a large pool for each reservation over it)."""
    pools = [estate.pools_by_name[n] for n in names]
    if len(pools) == 1 and estate.host_pools.size[pools[0].name] == len(pools[0].hosts):
        return pools[0].hosts
    return list(dict.fromkeys(h for pool in pools for h in pool.hosts))


@dataclass(frozen=True, slots=True)
class HeldNodes:
    """The nodes a reservation holds, as pools held whole and hosts held one by one.

    A reservation over a pool (or a partition, or a hostlist naming every host of a pool) holds
    the pool: two reservations are compared pool by pool, and by host only where one names
    hosts, so comparing them never expands a pool's hosts again.
    """

    pools: frozenset[str]  # node pools held whole
    hosts: frozenset[str]  # hosts held outside those pools
    host_pools: frozenset[str]  # the pools those hosts belong to ("" for a host of none)


def reservation_nodes(estate: Estate, reservation: Reservation) -> HeldNodes:
    """The nodes :func:`reservation_hosts` lists, as :class:`HeldNodes`."""
    if reservation.hosts:
        owners = estate.host_pools
        by_pool: dict[str, set[str]] = {}
        for host in reservation.hosts:
            by_pool.setdefault(owners.pool.get(host, ""), set()).add(host)
        whole = {n for n, hosts in by_pool.items() if n and len(hosts) == owners.size[n]}
        partial = frozenset(n for n in by_pool if n not in whole)
        loose = frozenset(h for n in partial for h in by_pool[n])
        return HeldNodes(frozenset(whole), loose, partial)
    if reservation.pools:
        names = [n for n in reservation.pools if n in estate.pools_by_name]
    elif reservation.partition:
        names = partition_pools(estate, reservation.partition)
    else:
        names = []
    return HeldNodes(frozenset(names), frozenset(), frozenset())


def shared_nodes(estate: Estate, one: HeldNodes, other: HeldNodes) -> tuple[list[str], list[str]]:
    """What two reservations both hold: (pools both hold whole, other hosts both hold); no
    host of a pool held whole is listed."""
    owners = estate.host_pools.pool
    hosts: set[str] = set()
    if one.host_pools & other.pools:
        hosts.update(h for h in one.hosts if owners.get(h) in other.pools)
    if other.host_pools & one.pools:
        hosts.update(h for h in other.hosts if owners.get(h) in one.pools)
    if not one.host_pools.isdisjoint(other.host_pools):
        small, large = sorted((one.hosts, other.hosts), key=len)
        hosts.update(h for h in small if h in large)
    return sorted(one.pools & other.pools), sorted(hosts)


def partition_pools(estate: Estate, partition: str) -> list[str]:
    """The names of a partition's pools the blueprint has; [] for a partition it lacks."""
    for part in estate.slurm.partitions:
        if part.name == partition:
            return [n for n in part.pools if n in estate.pools_by_name]
    return []


def reservation_start(reservation: Reservation) -> datetime:
    return datetime.fromisoformat(reservation.start)


def reservation_end(reservation: Reservation) -> datetime | None:
    """When the (first occurrence of the) reservation ends; None for an UNLIMITED duration."""
    if reservation.end:
        return datetime.fromisoformat(reservation.end)
    seconds = slurm_seconds(reservation.duration or "UNLIMITED")
    if seconds is None:
        return None
    return reservation_start(reservation) + timedelta(seconds=seconds)


# --- Ansible ---------------------------------------------------------------------------------


def group_name(kind: str, name: str) -> str:
    """Ansible group names may not hold '-': ``pool_a100_mig``."""
    return f"{kind}_{name.replace('-', '_')}"


def pool_group(pool: str) -> str:
    """The Ansible group of a pool's hosts."""
    return group_name("pool", pool)


# --- GPUs ------------------------------------------------------------------------------------


def mig_layout(pool: NodePool) -> dict[str, int]:
    """Instances of each MIG profile on one GPU of the pool, by profile name; empty without MIG."""
    if not pool.gpus or not pool.gpus.mig:
        return {}  # most pools; the renderers ask for each pool thousands of times
    counts: dict[str, int] = {}
    for profile in pool.gpus.mig:
        counts[profile] = counts.get(profile, 0) + 1
    return dict(sorted(counts.items()))


def mig_instances_per_gpu(pool: NodePool) -> int:
    """MIG instances one GPU of the pool is split into; 1 for a whole GPU."""
    return sum(mig_layout(pool).values()) or 1


def gres_type(pool: NodePool, kind: GpuType | None = None) -> str | None:
    """The GRES Type of a pool's whole GPUs of one type (the first by default): the site's
    name (gres_type), else the catalog model name; None when the pool's GRES has no type
    (gpus.typed false)."""
    assert pool.gpus is not None
    if not pool.gpus.typed:
        return None
    kind = kind or pool.gpus.types[0]
    return kind.gres_type or kind.model


# gres.conf AutoDetect=nvidia: Slurm's gpu/nvidia plugin, which came with 24.11 (SchedMD/slurm
# slurm-24-11-5-1 doc/man/man5/gres.conf.5, AutoDetect: "Added in Slurm 24.11"; 24.05's
# src/interfaces/gres.c _handle_autodetect_flags logs "unknown autodetect flag" for it).
# src/plugins/gpu/nvidia/gpu_nvidia.c reads /proc/driver/nvidia/gpus/<bus>/information (the
# model, and the minor number of /dev/nvidia<minor>) with no library, one whole GPU per entry:
# it finds no MIG instance (gres.conf(5): "doesn't detect MIGs or NVlinks"), and
# src/plugins/gpu/Makefile.am builds it always, without NVML.
NVIDIA_AUTODETECT_RELEASE = "24.11"


def gpu_autodetect(pool: NodePool) -> str | None:
    """The gres.conf AutoDetect plugin slurmd finds the pool's GPUs with, or None where
    gres.conf lists their device files (AutoDetect=off): nvml for MIG instances and
    gpus.autodetect nvml, nvidia for gpus.autodetect nvidia."""
    if pool.gpus is None:
        return None
    if pool.gpus.mig:
        return "nvml"
    if pool.gpus.autodetect in ("nvml", "nvidia"):
        return pool.gpus.autodetect
    return None


def autodetects_nvml(pool: NodePool) -> bool:
    """gres.conf finds the pool's GPUs with NVML (AutoDetect=nvml), which needs a Slurm built
    with the gpu_nvml plugin: MIG instances always, whole GPUs with gpus.autodetect nvml."""
    return gpu_autodetect(pool) == "nvml"


def mig_instances(pool: NodePool) -> list[tuple[str, int]]:
    """(MIG profile, instances per node) of a MIG pool; empty for whole GPUs."""
    assert pool.gpus is not None
    return [(profile, count * pool.gpus.count) for profile, count in mig_layout(pool).items()]


def mig_gres_type(pool: NodePool, profile: str) -> str:
    """The GRES Type of a MIG pool's ``profile`` instances: the profile (3g.40gb), or with
    gpus.gres_type the name NVML gives them, that type, '_' and the profile
    (nvidia_a100_3g.20gb; Slurm's src/plugins/gpu/nvml/gpu_nvml.c names a MIG instance by
    its GPU's name up to the first '-', '_' and the profile, and cuts it down to a configured
    Type that is part of it, src/plugins/gres/gpu/gres_gpu.c ``_normalize_sys_gres_types``)."""
    assert pool.gpus is not None
    return f"{pool.gpus.gres_type}_{profile}" if pool.gpus.gres_type else profile


def gpu_gres(pool: NodePool) -> list[tuple[str | None, int]]:
    """(type, count per node) for the gpu GRES of a pool: whole GPUs of each type (type None
    when the GRES is untyped), or MIG instances."""
    if not pool.gpus:
        return []
    if pool.gpus.mig:
        return [(mig_gres_type(pool, profile), n) for profile, n in mig_instances(pool)]
    return [(gres_type(pool, kind), kind.count) for kind in pool.gpus.types]


def replicas(pool: NodePool) -> int:
    """Schedulable devices one physical device becomes on Kubernetes (time-slicing or MPS)."""
    if not pool.gpus:
        return 1
    return pool.gpus.sharing.time_slicing or pool.gpus.sharing.mps or 1


# --- Kubernetes nodes: what their pods can have ----------------------------------------------

# Memory the OS, slurmd and page cache keep: 5% of physical memory, at least 2 GiB, but never
# more than half, so a small node (1 or 2 GB) still offers memory to jobs.
MEMORY_RESERVE_FRACTION = 0.05
MEMORY_RESERVE_MIN_MIB = 2048
MEMORY_RESERVE_MAX_FRACTION = 0.5


def real_memory_mib(memory_gb: int) -> int:
    """RealMemory for a node: physical memory less the documented reserve.

    A pool's ``real_memory_mib`` replaces it: read a pool's RealMemory with
    :func:`pool_real_memory`."""
    physical = memory_gb * 1024
    reserve = max(MEMORY_RESERVE_MIN_MIB, int(physical * MEMORY_RESERVE_FRACTION))
    return physical - min(reserve, int(physical * MEMORY_RESERVE_MAX_FRACTION))


def pool_real_memory(pool: NodePool) -> int:
    """RealMemory of a pool's nodes (MiB): the blueprint's real_memory_mib, else physical
    memory less the reserve."""
    if pool.real_memory_mib is not None:
        return pool.real_memory_mib
    assert pool.memory_gb is not None
    return real_memory_mib(pool.memory_gb)


# --- storage ---------------------------------------------------------------------------------


def pool_mounts(estate: Estate, pool: NodePool) -> list[Storage]:
    """File systems mounted on a pool's hosts, in blueprint order; Ansible builds on-prem
    hosts only, so a managed pool has none."""
    if pool.managed:
        return []
    return [s for s in estate.storage if s.mounted_on(pool.name)]


def storage_classes(estate: Estate, cluster: str) -> list[tuple[Storage, list[NodePool]]]:
    """Storage a cluster offers through a storage class, with the cluster's pools that mount it.

    Only hosts Ansible builds mount file systems, so only on-prem pools count. A cluster named
    in ``kubernetes.clusters`` offers the class too, through its CSI driver: with no pool
    that mounts it, every node of the cluster may use it (the list of pools is empty).
    """
    pools = [p for p in estate.pools_in_cluster(cluster) if not p.managed]
    out = []
    for storage in estate.storage:
        mounting = [p for p in pools if storage.mounted_on(p.name)]
        if storage.storage_class and (mounting or cluster in storage.class_clusters):
            out.append((storage, mounting))
    return out


def storage_class_names(estate: Estate, cluster: str) -> list[str]:
    return sorted(s.storage_class for s, _ in storage_classes(estate, cluster) if s.storage_class)


# --- node health checks ---
# nvidia-smi reports a GPU's memory in MiB, a little above or below the GB a model is sold
# with (an L4 "24 GB" shows 23034 MiB, an H100 "80 GB" 81559 MiB): a GPU is the blueprint's
# model when its memory lies within these fractions of memory_gb (10^9 bytes) in MiB.
GPU_MEMORY_LOW = 0.90
GPU_MEMORY_HIGH = 1.15


def gpu_memory_mib_range(memory_gb: int) -> tuple[int, int]:
    """The memory.total (MiB) nvidia-smi may report for a GPU sold with ``memory_gb``."""
    mib = memory_gb * 10**9 / 2**20
    return int(mib * GPU_MEMORY_LOW), -int(-mib * GPU_MEMORY_HIGH // 1)


def health_checks(estate: Estate, pool: NodePool) -> tuple[str, ...]:
    """The checks a pool's health-check program runs: those its `health_check` lists, or every
    check the blueprint gives facts for (GPUs, a MIG layout, mounts, memory)."""
    if pool.health_checks is not None:
        return pool.health_checks
    available = (
        ("gpus", pool.gpus is not None),
        ("mig", bool(pool.gpus and pool.gpus.mig)),
        ("mounts", bool(pool_mounts(estate, pool))),
        ("memory", pool.memory_gb is not None),
    )
    return tuple(name for name, present in available if present)
