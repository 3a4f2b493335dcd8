"""Facts of the Slurm side derived once from the model: node shapes and the memory they
register, hostlists, TRES, partition memory defaults, the account tree's root.

slurm.conf and its siblings, the checks, import and the Slurm pods hosted in Kubernetes all
read them here, so each is computed in one place and none of them imports a renderer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from estategen import hostlist
from estategen.facts import gpu_gres
from estategen.kubernetes_facts import node_allocatable
from estategen.model import Estate, NodePool, Partition

# RealMemory and its reserve are derived in facts, because a Kubernetes node's capacity
# follows them; the Slurm side imports them from here too
from estategen.facts import (  # isort: skip
    MEMORY_RESERVE_FRACTION as MEMORY_RESERVE_FRACTION,
    MEMORY_RESERVE_MAX_FRACTION as MEMORY_RESERVE_MAX_FRACTION,
    MEMORY_RESERVE_MIN_MIB as MEMORY_RESERVE_MIN_MIB,
    pool_real_memory as pool_real_memory,
    real_memory_mib as real_memory_mib,
)

# the user slurmctld and slurmdbd run as (SlurmUser)
SLURM_USER = "slurm"


# a range that more of the name follows: "]" before anything but "," (the next item) or the end
_TEXT_AFTER_RANGE = re.compile(r"\][^,]")


def slurm_hostlist(names: Iterable[str]) -> str:
    """A hostlist Slurm reads: ranges as :func:`hostlist.compress` writes them, except that a
    range followed by more text (``gpu-[01-02]-ib``) is written out name by name, because
    Slurm's hostlists allow nothing after the bracket."""
    compressed = hostlist.compress(names)
    if not _TEXT_AFTER_RANGE.search(compressed):
        return compressed  # every range ends its item (most pools)
    items: list[str] = []
    for item in hostlist.split_items(compressed):
        if "[" in item and not item.endswith("]"):
            items.extend(hostlist.expand(item))
        else:
            items.append(item)
    return ",".join(items)


def gpu_device_files(pool: NodePool) -> list[str]:
    """The device files gres.conf names for each GPU type of a pool (File=), in type order:
    the site's (files, as one comma-separated list, which Slurm reads as a hostlist, one file
    a GPU), else /dev/nvidiaN numbered on after the types before (/dev/nvidia[0-1] for two
    GPUs of the first type, /dev/nvidia[2-3] for two of the next)."""
    assert pool.gpus is not None
    files = []
    first = 0
    for kind in pool.gpus.types:
        last = first + kind.count - 1
        if kind.files:
            files.append(",".join(kind.files))
        else:
            files.append(f"/dev/nvidia[{first}-{last}]" if last > first else f"/dev/nvidia{first}")
        first = last + 1
    return files


def shards(pool: NodePool) -> int:
    """Shards per node (shard GRES), 0 when the pool does not share GPUs in Slurm."""
    if pool.gpus and pool.gpus.sharing.shard:
        return pool.gpus.count * pool.gpus.sharing.shard
    return 0


def mps_shares(pool: NodePool) -> int:
    """A node's gres/mps count (Gres=mps:N), 0 when the pool does not share GPUs with MPS.

    ``gpus.sharing.mps`` is the number of equal MPS shares each GPU is split into, on either
    side: the Kubernetes device plugin advertises that many replicas of a GPU, and Slurm
    counts that many gres/mps per GPU, so a job asking ``--gres=mps:K`` gets K of them
    (slurmd sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE to K x 100 / the GPU's count,
    src/plugins/gres/mps/gres_mps.c at slurm-22-05-8-1 and slurm-24-11-0-1). slurm.conf
    gives the node's total, which slurmd spreads evenly over its GPUs (doc/html/gres.shtml,
    "MPS Management"); 100 a GPU makes the request a percentage.
    """
    if pool.gpus and pool.gpus.sharing.mps:
        return pool.gpus.count * pool.gpus.sharing.mps
    return 0


def gpu_billing_weight(estate: Estate, model: str) -> int:
    """A GPU bills a quarter of its memory in GB: 20 for an 80 GB H100, 6 for an L4."""
    return max(1, estate.gpu_models[model].memory_gb // 4)


@dataclass(frozen=True, slots=True)
class NodeLine:
    pool: str
    hosts: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory: int
    cpus: int | None
    gres: str
    features: str
    weight: int
    state: str = "UNKNOWN"
    addresses: str = ""  # NodeAddr, in the order Slurm expands `hosts`


def address_list(addresses: Iterable[str]) -> str:
    """NodeAddr as slurm.conf writes it: the addresses in order, each run of consecutive
    last numbers (10.1.0.1, 10.1.0.2, ...) as one bracket range (10.1.0.[1-2]); IPv6
    addresses one by one."""
    items: list[str] = []
    run: list[tuple[str, str]] = []  # (prefix, digits) of the current run

    def close() -> None:
        if len(run) == 1:
            items.append("".join(run[0]))
        elif run:
            items.append(f"{run[0][0]}[{run[0][1]}-{run[-1][1]}]")
        run.clear()

    for address in addresses:
        match = re.fullmatch(r"(.*?)([0-9]+)", address)
        if match is None or ":" in address:
            close()
            items.append(address)
            continue
        prefix, digits = match.groups()
        if run and (
            prefix != run[-1][0]
            or int(digits) != int(run[-1][1]) + 1
            or (
                len(digits) != len(run[-1][1])
                and (digits.startswith("0") or run[0][1].startswith("0"))
            )
        ):
            close()
        run.append((prefix, digits))
    close()
    return ",".join(items)


def _node_addresses(pool: NodePool, hosts: str) -> str:
    """The pool's NodeAddr in the order Slurm expands the NodeName hostlist ``hosts``."""
    if not pool.addresses:
        return ""
    of = dict(zip(pool.hosts, pool.addresses, strict=True))
    return address_list(of[host] for host in hostlist.expand(hosts))


def node_line(estate: Estate, pool: NodePool) -> NodeLine:
    """A pool's node shape as slurm.conf writes it; hosted pools' slurmd take it as --conf."""
    assert pool.cpu is not None and pool.memory_gb is not None
    gres = [f"gpu:{kind}:{count}" if kind else f"gpu:{count}" for kind, count in gpu_gres(pool)]
    if shards(pool):
        gres.append(f"shard:{shards(pool)}")
    if mps_shares(pool):
        gres.append(f"mps:{mps_shares(pool)}")
    features = list(pool.features)
    if pool.gpus and pool.gpus.feature is not False:
        features.extend(kind.model for kind in pool.gpus.types)
        if pool.gpus.mig:
            features.append("mig")
    if pool.weight is not None:
        weight = pool.weight
    elif pool.gpus:
        weight = 1 + max(estate.gpu_models[kind.model].memory_gb for kind in pool.gpus.types)
    else:
        weight = 1
    hosts = slurm_hostlist(pool.hosts) if pool.hosts else ""
    return NodeLine(
        pool=pool.name,
        hosts=hosts,
        sockets=pool.cpu.sockets,
        cores_per_socket=pool.cpu.cores_per_socket,
        threads_per_core=pool.cpu.threads_per_core,
        cpus=pool.cpu.cpus,
        real_memory=pool_real_memory(pool),
        gres=",".join(gres),
        features=",".join(dict.fromkeys(features)),
        weight=weight,
        state="CLOUD" if pool.cloud_nodes else "UNKNOWN",
        addresses=_node_addresses(pool, hosts),
    )


def node_lines(estate: Estate, pool: NodePool) -> list[NodeLine]:
    """A pool's NodeName lines: one, or with host_weights one per weight, in the order the
    weights first appear, each naming the hosts of that weight (and their NodeAddr)."""
    line = node_line(estate, pool)
    if not pool.host_weights:
        return [line]
    hosts_of: dict[int, list[str]] = {}
    for host, weight in zip(pool.hosts, pool.host_weights, strict=True):
        hosts_of.setdefault(weight, []).append(host)
    lines = []
    for weight, hosts in hosts_of.items():
        names = slurm_hostlist(hosts)
        lines.append(
            replace(line, hosts=names, weight=weight, addresses=_node_addresses(pool, names))
        )
    return lines


# slurm.conf's global memory defaults, which a partition line without its own replaces
GLOBAL_MEMORY_DEFAULTS = frozenset({"defmempercpu", "defmempernode", "defmempergpu"})


def site_memory_default(estate: Estate) -> bool:
    """slurm.options sets a global DefMemPerCPU, DefMemPerNode or DefMemPerGPU: a partition
    without a default of its own in the blueprint gets none from estategen, so the site's
    applies (a partition's value replaces the global one in slurmctld)."""
    return any(key.lower() in GLOBAL_MEMORY_DEFAULTS for key in estate.slurm.options)


def def_mem_per_cpu(estate: Estate, part: Partition) -> int | None:
    """A partition's DefMemPerCPU (MiB): the blueprint's, else the smallest RealMemory per
    CPU of its pools; None when no pool has a shape, the blueprint gives DefMemPerNode, or
    slurm.options gives a global memory default."""
    if part.overrides.def_mem_per_cpu is not None:
        return part.overrides.def_mem_per_cpu
    if part.overrides.def_mem_per_node is not None or site_memory_default(estate):
        return None
    # (checks call this before partitions_resolve has refused an unknown pool)
    pools = [estate.pools_by_name[name] for name in part.pools if name in estate.pools_by_name]
    shaped = [p for p in pools if p.cpu and p.memory_gb]
    return min(memory_per_cpu(p) for p in shaped) if shaped else None


def gpus_per_node(pool: NodePool) -> int:
    """Schedulable GPUs per node: whole GPUs, or MIG instances on MIG pools."""
    return max(1, sum(count for _, count in gpu_gres(pool)))


def cpus_per_gpu(pool: NodePool) -> int:
    assert pool.cpu is not None
    return max(1, pool.cpu.slurm_cpus // gpus_per_node(pool))


def registered_memory(pool: NodePool) -> int:
    """RealMemory (MiB) a pool's nodes register with slurmctld: a hosted pool's slurmd pod
    registers its memory limit, less than the node has."""
    return hosted_pod_memory_mib(pool) if pool.hosted else pool_real_memory(pool)


def memory_per_gpu(pool: NodePool) -> int:
    assert pool.memory_gb is not None
    return max(1, registered_memory(pool) // gpus_per_node(pool))


def memory_per_cpu(pool: NodePool) -> int:
    assert pool.cpu is not None and pool.memory_gb is not None
    return max(1, registered_memory(pool) // pool.cpu.slurm_cpus)


def accounting_tres(estate: Estate) -> list[str]:
    """TRES slurmdbd records: GPUs in total, per type, and shards and MPS shares when used.

    None without accounting: slurmctld refuses GRES TRES unless slurmdbd stores them.
    """
    if estate.slurm.accounting is None:
        return []
    if estate.slurm.accounting.tres is not None:
        return list(estate.slurm.accounting.tres)
    return required_tres(estate)


def required_tres(estate: Estate) -> list[str]:
    """The GRES TRES estategen's partitions (billing weights) and QoS (GPU limits) name:
    slurmctld refuses TRESBillingWeights naming a TRES it does not track."""
    if estate.slurm.accounting is None:
        return []
    tres = ["gres/gpu"] if any(p.gpus for p in estate.slurm_pools) else []
    kinds = sorted({kind for p in estate.slurm_pools for kind, _ in gpu_gres(p) if kind})
    tres += [f"gres/gpu:{kind}" for kind in kinds]
    if any(shards(p) for p in estate.slurm_pools):
        tres.append("gres/shard")
    if any(mps_shares(p) for p in estate.slurm_pools):
        tres.append("gres/mps")
    return tres


def named_tres(estate: Estate) -> list[str]:
    """The GRES TRES the render names, which slurmdbd must track: estategen's billing weights
    (:func:`required_tres`) wherever a partition has no weights of the site's, and
    ``gres/gpu`` for the QoS GPU limits (``MaxTRESPerUser=gres/gpu``). A site's own weights
    are checked key by key against the tracked TRES, so a site that bills its GPUs by
    nothing but CPUs need not track them."""
    if estate.slurm.accounting is None:
        return []
    if any(part.overrides.billing_weights is None for part in estate.slurm.partitions):
        return required_tres(estate)
    if estate.slurm.qos and any(p.gpus for p in estate.slurm_pools):
        return ["gres/gpu"]
    return []


def parent_account(estate: Estate) -> str:
    """The account above every team: the estate's name (``root`` is Slurm's own)."""
    return estate.name if estate.name != "root" else f"{estate.name}-estate"


def renders_power_saving(estate: Estate) -> bool:
    """slurm.conf has power saving (SuspendTime, ResumeTimeout, ...): a Slurm pool has cloud
    nodes."""
    return any(p.cloud_nodes for p in estate.slurm_pools)


def hosted_pod_memory_mib(pool: NodePool) -> int:
    """Memory (MiB) a hosted pool's slurmd pod requests and slurmd registers (``RealMemory=``):
    the node's allocatable memory, so the pod fits the node."""
    allocatable = node_allocatable(pool)
    assert allocatable is not None
    return allocatable.memory_mib
