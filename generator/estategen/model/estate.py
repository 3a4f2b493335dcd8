"""Storage, observability and the estate that holds every part."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from estategen.catalog import GpuModel
from estategen.model.identity import Identity, Team
from estategen.model.kubernetes import KubernetesCluster
from estategen.model.pools import NodePool
from estategen.model.slurm import Slurm
from estategen.model.values import SecretRef, Versions


@dataclass(frozen=True, slots=True)
class Storage:
    path: str
    name: str
    type: str
    source: str
    mount: str
    options: tuple[str, ...]
    pools: tuple[str, ...] | None
    storage_class: str | None
    # --- file system types and the CSI drivers that offer them ---
    # clusters that offer the class through their CSI driver, beyond those whose on-prem
    # pools mount the file system
    class_clusters: tuple[str, ...] = ()
    # a GKE Managed Lustre instance as PROJECT/ZONE/NAME (its CSI driver's volume handle)
    instance: str | None = None
    # each team's directory under the mount, {team} for its name: its volume reaches only that
    team_directory: str | None = None
    # s3: the bucket's region and the credentials, as secret references
    region: str | None = None
    access_key_id: SecretRef | None = None
    secret_access_key: SecretRef | None = None
    # beegfs: the shared secret of BeeGFS connection authentication (connAuthFile)
    conn_auth: SecretRef | None = None

    @property
    def bucket_and_prefix(self) -> tuple[str, str]:
        """``s3://bucket/a/b`` as ``("bucket", "a/b/")``; the prefix is empty or ends in '/'."""
        bucket, _, prefix = self.source.removeprefix("s3://").partition("/")
        prefix = prefix.strip("/")
        return bucket, f"{prefix}/" if prefix else ""

    def mounted_on(self, pool: str) -> bool:
        """A file system without `pools` is mounted on every pool; otherwise on those listed."""
        return self.pools is None or pool in self.pools


@dataclass(frozen=True, slots=True)
class AlertThresholds:
    """When the estate's alerts fire (``observability.alerts``): durations as Prometheus writes
    them (``15m``, ``1d``), shares in percent."""

    exporter_down_for: str
    gpu_thermal_throttling_percent: int
    gpu_thermal_throttling_for: str
    slurm_node_down_for: str
    slurm_node_drained_for: str
    slurm_controller_unreachable_for: str
    slurmdbd_unreachable_for: str
    kueue_pending_for: str
    stranded_quota_used_percent: int
    stranded_quota_for: str


@dataclass(frozen=True, slots=True)
class Observability:
    dcgm_exporter_port: int
    node_exporter_port: int
    slurm_exporter_port: int
    labels: Mapping[str, str]
    alerts: AlertThresholds


@dataclass(frozen=True, slots=True)
class HostPools:
    """Which pool each host belongs to (the first, for a host listed twice), and how many
    distinct hosts each pool has."""

    pool: Mapping[str, str]
    size: Mapping[str, int]


@dataclass(frozen=True)
class Estate:
    name: str
    description: str
    versions: Versions
    gpu_models: Mapping[str, GpuModel]
    declared_gpu_models: tuple[tuple[str, str], ...]
    identity: Identity
    node_pools: tuple[NodePool, ...]
    slurm: Slurm
    kubernetes_clusters: tuple[KubernetesCluster, ...]
    storage: tuple[Storage, ...]
    observability: Observability
    # rule ids whose warnings and notes the estate's owners have silenced on purpose
    suppress: tuple[str, ...] = ()

    @cached_property
    def pools_by_name(self) -> Mapping[str, NodePool]:
        return MappingProxyType({p.name: p for p in self.node_pools})

    @cached_property
    def teams_by_name(self) -> Mapping[str, Team]:
        return MappingProxyType({t.name: t for t in self.identity.teams})

    @cached_property
    def slurm_hosts(self) -> frozenset[str]:
        """Every host of the Slurm pools (asked for each reservation)."""
        return frozenset(h for p in self.slurm_pools for h in p.hosts)

    @cached_property
    def host_pools(self) -> HostPools:
        """Which pool each host belongs to, and each pool's distinct hosts (asked for each
        reservation, by the checks and the renderers)."""
        pool: dict[str, str] = {}
        size: dict[str, int] = {}
        for node_pool in self.node_pools:
            distinct = set(node_pool.hosts)
            size[node_pool.name] = len(distinct)
            for host in distinct:
                pool.setdefault(host, node_pool.name)
        return HostPools(MappingProxyType(pool), MappingProxyType(size))

    @property
    def slurm_pools(self) -> tuple[NodePool, ...]:
        return tuple(p for p in self.node_pools if p.scheduler == "slurm")

    @property
    def kubernetes_pools(self) -> tuple[NodePool, ...]:
        return tuple(p for p in self.node_pools if p.scheduler == "kubernetes")

    def pools_in_cluster(self, cluster: str) -> Iterator[NodePool]:
        return (p for p in self.kubernetes_pools if p.cluster == cluster)

    def hosted_pools(self, cluster: str | None = None) -> tuple[NodePool, ...]:
        """Slurm pools whose slurmd run as pods (of one cluster, or of any)."""
        return tuple(
            p for p in self.slurm_pools if p.hosted and (cluster is None or p.cluster == cluster)
        )
