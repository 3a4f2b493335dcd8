"""Node pools: their hosts, CPUs, memory and GPUs, taints and cloud nodes; how a pool's hosts
spread over its switches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from estategen import hostlist


@dataclass(frozen=True, slots=True)
class Cpu:
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int | None = None  # the site's slurm.conf CPUs= (the cores); None: every thread

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def threads(self) -> int:
        return self.cores * self.threads_per_core

    @property
    def slurm_cpus(self) -> int:
        """The CPUs Slurm schedules on a node: every thread, or each core with `cpus`."""
        return self.cpus or self.threads


@dataclass(frozen=True, slots=True)
class Sharing:
    time_slicing: int | None
    mps: int | None
    shard: int | None


@dataclass(frozen=True, slots=True)
class GpuType:
    """The GPUs of one model on a node: its count, GRES type and device files."""

    model: str
    count: int
    gres_type: str | None = None  # the site's GRES type name; None: the model name
    files: tuple[str, ...] = ()  # gres.conf File=; (): the numbering after the types before


@dataclass(frozen=True, slots=True)
class Gpus:
    model: str
    count: int
    mig: tuple[str, ...]
    sharing: Sharing
    # the site's GRES type name (None: the model name); the model as a node feature
    gres_type: str | None = None
    feature: bool | None = None  # None: the model is a node feature (Slurm pools)
    autodetect: str | None = None  # gres.conf AutoDetect; None: nvml for MIG, off otherwise
    typed: bool = True  # False: Gres=gpu:N, without a type
    files: tuple[str, ...] = ()  # gres.conf File= of the GPUs; (): /dev/nvidia0..count-1
    # the node's GPUs of other models, after these (gpus.other_types; Slurm pools only)
    other_types: tuple[GpuType, ...] = ()

    @property
    def types(self) -> tuple[GpuType, ...]:
        """Every GPU type of a node, the first (model, count) first."""
        return (GpuType(self.model, self.count, self.gres_type, self.files), *self.other_types)

    @property
    def per_node(self) -> int:
        """Physical GPUs of a node, of every type."""
        return self.count + sum(kind.count for kind in self.other_types)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


# --- elastic cloud nodes ---
@dataclass(frozen=True, slots=True)
class CloudNodes:
    """Where a Slurm cloud pool's instances are created, and the pinned image they boot."""

    image: str
    zone: str | None
    project: str | None
    region: str | None
    subnet: str | None


@dataclass(frozen=True)
class NodePool:
    path: str
    name: str
    scheduler: str
    cluster: str | None
    provider: str
    hosts: tuple[str, ...]
    host_expressions: tuple[str, ...]
    instance_type: str | None
    nodes_min: int | None
    nodes_max: int | None
    cpu: Cpu | None
    memory_gb: int | None
    gpus: Gpus | None
    switches: tuple[str, ...]
    blocks: tuple[str, ...]
    features: tuple[str, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    weight: int | None
    # the health checks the blueprint chose; None = every check the pool supports
    health_checks: tuple[str, ...] | None = None
    # elastic cloud nodes: where the instances are created and the image they boot
    cloud: CloudNodes | None = None
    # the site's exact RealMemory (MiB); None keeps estategen's reserve
    real_memory_mib: int | None = None
    # `state: cloud`: State=CLOUD nodes the site's own programs create
    site_cloud: bool = False
    # the site's NodeAddr of each host (in `hosts` order); empty: nodes reached by name
    addresses: tuple[str, ...] = ()
    # the site's Weight of each host (in `hosts` order), instead of one weight; empty: one
    host_weights: tuple[int, ...] = ()
    # a Kubernetes pool's most pods per node; None: the provider's (or kubelet's) default
    max_pods: int | None = None

    @property
    def managed(self) -> bool:
        """Nodes come from a cloud provider's autoscaler rather than a host list."""
        return self.provider != "on-prem"

    @property
    def hosted(self) -> bool:
        """A Slurm pool whose slurmd run as pods of a Kubernetes cluster (Slinky's NodeSet)."""
        return self.scheduler == "slurm" and self.cluster is not None

    @property
    def elastic(self) -> bool:
        """A Slurm pool of cloud nodes: named by `hosts`, created and deleted by slurmctld's
        power saving (State=CLOUD)."""
        return self.managed and self.scheduler == "slurm"

    @property
    def cloud_nodes(self) -> bool:
        """A Slurm pool of State=CLOUD nodes: created by estategen's power programs (elastic)
        or by the site's own (`state: cloud`, slurm.power_saving's programs)."""
        return self.elastic or self.site_cloud

    @cached_property
    def node_count(self) -> int:
        """Nodes that back the pool's capacity; an autoscaled pool counts at its maximum
        (asked thousands of times per command, by checks, the report and the renderers)."""
        if self.elastic:
            return len(self.hosts)
        if self.hosted:
            return self.nodes_max or 0
        return (self.nodes_max or 0) if self.managed else len(self.hosts)

    @cached_property
    def gpu_count(self) -> int:
        """Physical GPUs in the pool."""
        return self.node_count * self.gpus.per_node if self.gpus else 0

    @cached_property
    def compressed_hosts(self) -> str:
        """The pool's hosts as one hostlist (named in a finding of each reservation over it)."""
        return hostlist.compress(self.hosts)


def spread(hosts: Sequence[str], groups: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Hosts split into contiguous, near-equal runs, one per switch or block, in order.

    Both schedulers place a pool's nodes under its `network.switch` (or `block`) names this
    way, so Slurm's topology and Kubernetes' topology labels agree.
    """
    out = []
    base, extra = divmod(len(hosts), len(groups))
    start = 0
    for index, group in enumerate(groups):
        size = base + (1 if index < extra else 0)
        out.append((group, list(hosts[start : start + size])))
        start += size
    return out
