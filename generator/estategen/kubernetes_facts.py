"""Facts of Kubernetes nodes derived from the model, each computed here once: the labels and
taints estategen manages and kubelet registers, what a node's pods can have (capacity less
kubelet's reservations, the pods it may run), Kueue's quota keys, capacity and flavours, the
Slurm pools hosted in a cluster and the nodes backing them, and MIG layouts as mig-parted and
AKS name them. The Kubernetes objects, the checks, the Slurm renderer (hosted pools), the
report and the plan import them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from estategen.facts import mig_layout, pool_real_memory, replicas
from estategen.model import (
    Estate,
    NodePool,
    Taint,
    spread,
)
from estategen.schema.patterns import MAX_PODS_CEILING

# Node labels estategen manages. kubelet may set each of them itself (`--node-labels`): none is
# under kubernetes.io or k8s.io, the namespaces the NodeRestriction admission plugin reserves.
ESTATE_LABEL = "estategen.io/estate"
POOL_LABEL = "estategen.io/pool"
MODEL_LABEL = "estategen.io/gpu-model"
MIG_LABEL = "estategen.io/mig"
SWITCH_LABEL = "estategen.io/switch"
# Read by NVIDIA's config-manager (device plugin, GFD) and mig-manager: which named config of
# their ConfigMaps a node uses.
PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# The mig-parted config that turns MIG off; every node without a MIG layout selects it.
MIG_DISABLED = "all-disabled"
# The Cluster Autoscaler's GPU label on AWS (cluster-autoscaler/cloudprovider/aws/
# aws_cloud_provider.go GPULabel): a node carrying it counts as a GPU node whose GPUs are not
# advertised yet, so the autoscaler waits for its device plugin instead of growing the group
# again. Not under kubernetes.io or k8s.io: kubelet may register with it.
EKS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
# Labels mig-manager sets to `paused-for-mig-change` while it repartitions a node's GPUs and
# back to `true` after; each GPU DaemonSet of the plain install runs only where its label is
# `true`. kubelet sets them once, at registration: nothing may re-apply them later.
GPU_DEPLOY_LABELS = {
    component: f"nvidia.com/gpu.deploy.{component}"
    for component in ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "client")
}

# Label namespaces kubelet may not set on its own node (NodeRestriction), except the prefixes
# and keys below; a pool label in them must be refused, as kubelet would refuse to start.
KUBELET_RESTRICTED_NAMESPACES = ("kubernetes.io", "k8s.io")
KUBELET_ALLOWED_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_ALLOWED_KEYS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)


def kubelet_may_set(key: str) -> bool:
    """Whether kubelet may register its node with a label of this key (NodeRestriction)."""
    prefix, slash, _ = key.partition("/")

    def within(namespaces: tuple[str, ...]) -> bool:
        return any(prefix == ns or prefix.endswith("." + ns) for ns in namespaces)

    if not slash or not within(KUBELET_RESTRICTED_NAMESPACES):
        return True
    return key in KUBELET_ALLOWED_KEYS or within(KUBELET_ALLOWED_NAMESPACES)


def mig_parted_layouts(pools: list[NodePool]) -> dict[str, list[dict[str, object]]]:
    """mig-parted ``mig-configs``: MIG off, and one named layout per MIG pool given."""
    configs: dict[str, list[dict[str, object]]] = {
        MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]
    }
    for pool in pools:
        layout = mig_layout(pool)
        if layout:
            configs[pool.name] = [{"devices": "all", "mig-enabled": True, "mig-devices": layout}]
    return configs


# What the kubelet of a Kubernetes node keeps from pods: Node allocatable is capacity less
# --system-reserved, --kube-reserved and the hard eviction threshold (kubernetes v1.31
# pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableReservation;
# pkg/kubelet/nodestatus/setters.go MachineInfo sets allocatable to capacity less it). The
# k8s_gpu_node role's kubelet.env.j2 sets none of these flags (KUBELET_RESERVATION_FLAGS; a
# test reads the template), so on nodes estategen builds the kubelet defaults hold: nothing
# system- or kube-reserved, and evictionHard memory.available<100Mi
# (pkg/kubelet/apis/config/v1beta1/defaults_linux.go DefaultEvictionHard).
KUBELET_RESERVATION_FLAGS = (
    "--system-reserved",
    "--kube-reserved",
    "--reserved-cpus",
    "--eviction-hard",
)
KUBELET_RESERVED_CPUS = 0
KUBELET_RESERVED_MEMORY_MIB = 100  # evictionHard memory.available
# GKE configures its nodes' kubelet itself: it reserves a share of each tier of a node's CPU
# (millicores) and memory (MiB), in basis points, on top of the same 100Mi eviction threshold
# (cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes, "Memory and CPU
# reservations"). The last tier takes the rest.
GKE_CPU_TIERS = ((1000, 600), (1000, 100), (2000, 50), (None, 25))
GKE_MEMORY_TIERS = ((4096, 2500), (4096, 2000), (8192, 1000), (114_688, 600), (None, 200))
# EKS's AL2023 nodes reserve CPU in GKE's tiers, 11 MiB for each pod the node may run plus
# 255 MiB of memory, and the same 100Mi eviction threshold (awslabs/amazon-eks-ami v20260724
# nodeadm/internal/kubelet/config.go: defaultKubeletSubConfig, withDefaultReservedResources,
# getCPUMillicoresToReserve, getMemoryMebibytesToReserve). The pods a node may run are its
# instance type's: the default network card's ENIs times their IPv4 addresses less one, plus 2
# (eni_max_pods.go calculateStandardMaxPods, from the instance-info.jsonl nodeadm embeds); here
# for the catalog's EKS instance types, which a test recomputes from that file. nodeadm counts
# kubelet's default, 110, for a type it cannot look up; so does estategen for other types.
# A pool's `max_pods` reaches nodeadm as kubelet.maxPodsExpression (kubernetes.cloud
# eks_user_data): withDefaultReservedResources reserves for the expression's result, never
# for a kubelet.config.maxPods (nodeadm/doc/examples.md, "Defining a Max Pods Expression").
EKS_POD_MEMORY_MIB = 11
EKS_BASE_MEMORY_MIB = 255
EKS_DEFAULT_MAX_PODS = 110
EKS_MAX_PODS: dict[str, int] = {
    "g6.xlarge": 58,
    "g6.2xlarge": 58,
    "g6.4xlarge": 234,
    "g6.8xlarge": 234,
    "g6.12xlarge": 234,
    "g6.16xlarge": 737,
    "g6.24xlarge": 737,
    "g6.48xlarge": 737,
    "g6e.xlarge": 58,
    "g6e.2xlarge": 58,
    "g6e.4xlarge": 234,
    "g6e.8xlarge": 234,
    "g6e.12xlarge": 292,
    "g6e.16xlarge": 737,
    "g6e.24xlarge": 492,
    "g6e.48xlarge": 492,
    "p4d.24xlarge": 737,
    "p4de.24xlarge": 737,
    "p5.4xlarge": 118,
    "p5.48xlarge": 100,
    "p5e.48xlarge": 100,
    "p5en.48xlarge": 198,
}
# AKS nodes on Kubernetes 1.29 and later reserve CPU by the table of learn.microsoft.com/azure/
# aks/node-resource-reservations (60, 100, 140, 180, 260, 420 and 740 millicores for 1 to 64
# cores: 60 for the first core, 40 for the second, 20 for each of the next two, 10 beyond), and
# memory the lesser of 20 MiB per pod the node may run plus 50 MiB and a quarter of its memory,
# over the same 100Mi eviction threshold. A pool's pods per node follow the cluster's network
# plugin, which estategen does not choose: unless the pool's `max_pods` sets them (the agent
# pool's maxPods), they are counted at AKS's most, 250, so what pods are sized to is never
# more than AKS leaves them.
AKS_CPU_TIERS = ((1000, 600), (1000, 400), (2000, 200), (None, 100))
AKS_POD_MEMORY_MIB = 20
AKS_BASE_MEMORY_MIB = 50
AKS_MAX_PODS = 250
# The most pods a node may run, a pool's `max_pods`, within what each provider accepts:
# kubelet's maxPods on the nodes estategen's Ansible builds (kubernetes v1.31
# pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration sets 110 when
# unset; kubernetes.io/docs/setup/best-practices/cluster-large: at most 110 pods per node is
# what Kubernetes is tested with), up to MAX_PODS_CEILING, so that a typo is refused; GKE node
# pools' max_pods_per_node, 8 to 256 (cloud.google.com/kubernetes-engine/docs/how-to/
# flexible-pod-cidr, "Configure the maximum pods per node"; 110 when unset); AKS agent pools'
# maxPods, 10 to 250, the bounds of every network plugin together (learn.microsoft.com/azure/
# aks/azure-cni-overlay, "Maximum pods per node": 10 to 250; kubenet and Azure CNI with a pod
# subnet default lower, 110 and 30, within the same bounds); EKS nodes, 1 to their instance
# type's EKS_MAX_PODS (more pods than the VPC CNI has addresses for never start; prefix
# delegation, which lifts that limit, is not something estategen sets up).
KUBELET_DEFAULT_MAX_PODS = 110
MAX_PODS_BOUNDS: dict[str, tuple[int, int]] = {
    "on-prem": (1, MAX_PODS_CEILING),
    "gke": (8, 256),
    "aks": (10, AKS_MAX_PODS),
    "eks": (1, MAX_PODS_CEILING),
}


@dataclass(frozen=True)
class NodeResources:
    """CPU (millicores) and memory (MiB) of one node of a pool."""

    cpu_millis: int
    memory_mib: int


def node_capacity(pool: NodePool) -> NodeResources | None:
    """What kubelet reports as a node's capacity: every thread, and the memory the kernel
    offers (MemTotal), which is less than the machine has: at most the pool's RealMemory (the
    node's memory less the reserve that stands for what the kernel keeps) and at most
    ``memory_gb`` read as 10^9 bytes. None when the pool does not give its CPUs and memory."""
    if pool.cpu is None or pool.memory_gb is None:
        return None
    decimal = pool.memory_gb * 10**9 // 2**20
    return NodeResources(pool.cpu.threads * 1000, min(pool_real_memory(pool), decimal))


def _tiered(amount: int, tiers: Sequence[tuple[int | None, int]]) -> int:
    """The sum of each tier's share (basis points) of ``amount``, rounded up."""
    total, left = 0, amount
    for size, basis_points in tiers:
        part = left if size is None else min(left, size)
        total += part * basis_points
        left -= part
    return -(-total // 10_000)


def max_pods_bounds(pool: NodePool) -> tuple[int, int]:
    """The fewest and most pods per node a pool's provider accepts for `max_pods`: an EKS
    pool's most is its instance type's EKS_MAX_PODS (an instance type estategen does not know
    is bounded by MAX_PODS_CEILING only)."""
    low, high = MAX_PODS_BOUNDS[pool.provider]
    if pool.provider == "eks":
        high = EKS_MAX_PODS.get(pool.instance_type or "", high)
    return low, high


def pods_per_node(pool: NodePool) -> int:
    """The most pods a node of a Kubernetes pool runs: its `max_pods`, or else its provider's
    own count: an EKS node's instance type's (nodeadm's count), AKS's most (the default
    follows the cluster's network plugin, which estategen does not choose), kubelet's and
    GKE's default 110."""
    if pool.max_pods is not None:
        return pool.max_pods
    if pool.provider == "eks":
        return EKS_MAX_PODS.get(pool.instance_type or "", EKS_DEFAULT_MAX_PODS)
    if pool.provider == "aks":
        return AKS_MAX_PODS
    return KUBELET_DEFAULT_MAX_PODS


def kubelet_reserved(pool: NodePool) -> NodeResources:
    """What a node's kubelet keeps from pods (system- and kube-reserved and the hard eviction
    threshold): each managed provider's own reservations on its nodes (GKE, EKS, AKS above),
    the kubelet defaults on the nodes estategen's Ansible builds."""
    assert pool.cpu is not None and pool.memory_gb is not None
    millicores, memory_mib = pool.cpu.threads * 1000, pool.memory_gb * 1024
    if pool.provider == "gke":
        cpu = _tiered(millicores, GKE_CPU_TIERS)
        memory = _tiered(memory_mib, GKE_MEMORY_TIERS)
    elif pool.provider == "eks":
        cpu = _tiered(millicores, GKE_CPU_TIERS)
        memory = EKS_POD_MEMORY_MIB * pods_per_node(pool) + EKS_BASE_MEMORY_MIB
    elif pool.provider == "aks":
        cpu = _tiered(millicores, AKS_CPU_TIERS)
        pods = pods_per_node(pool)
        memory = min(AKS_POD_MEMORY_MIB * pods + AKS_BASE_MEMORY_MIB, memory_mib // 4)
    else:
        return NodeResources(KUBELET_RESERVED_CPUS * 1000, KUBELET_RESERVED_MEMORY_MIB)
    return NodeResources(cpu, memory + KUBELET_RESERVED_MEMORY_MIB)


def node_allocatable(pool: NodePool) -> NodeResources | None:
    """A node's allocatable CPU and memory: its capacity less what its kubelet reserves. Pods
    can request this much and no more; the slurmd pods of a hosted pool request all of it, and
    Kueue's quotas count it. None when the pool does not give its CPUs and memory."""
    capacity = node_capacity(pool)
    if capacity is None:
        return None
    reserved = kubelet_reserved(pool)
    return NodeResources(
        max(0, capacity.cpu_millis - reserved.cpu_millis),
        max(0, capacity.memory_mib - reserved.memory_mib),
    )


# --- Kueue -----------------------------------------------------------------------------------


def quota_keys(pool: NodePool) -> list[str]:
    """The Kueue quota keys a pool backs: MODEL, or MODEL/PROFILE for each MIG profile.

    A GPU split by MIG is scheduled as its instances, so it backs only its profiles' keys.
    """
    if not pool.gpus:
        return []
    return [f"{pool.gpus.model}/{p}" for p in mig_layout(pool)] or [pool.gpus.model]


def quota_units(pool: NodePool, key: str) -> int:
    """Units of a quota key a pool backs: its GPUs, or its MIG instances of the key's profile."""
    _, _, profile = key.partition("/")
    return pool.gpu_count * (mig_layout(pool).get(profile, 0) if profile else 1)


def quota_capacity(estate: Estate, cluster: str) -> dict[str, int]:
    """Units behind each quota key of a cluster: whole GPUs, or MIG instances of a profile.

    GPUs the cluster's hosted Slurm pools take (their slurmd pods request them) are Slurm's:
    they are not Kubernetes capacity, so a GPU is counted on one side only.
    """
    capacity: dict[str, int] = {}
    for pool in estate.pools_in_cluster(cluster):
        for key in quota_keys(pool):
            capacity[key] = capacity.get(key, 0) + quota_units(pool, key)
    for model, taken in hosted_gpus(estate, cluster).items():
        if model in capacity:
            capacity[model] = max(0, capacity[model] - taken)
    return capacity


# --- Slurm hosted in Kubernetes --------------------------------------------------------------


def hosted_pod_cpus(pool: NodePool) -> int:
    """CPUs a hosted pool's slurmd pod requests and slurmd registers (``CPUs=``): the whole
    CPUs of the node's allocatable."""
    allocatable = node_allocatable(pool)
    assert allocatable is not None
    return allocatable.cpu_millis // 1000


def hosted_backing_pools(estate: Estate, pool: NodePool) -> list[NodePool]:
    """The Kubernetes pools of a hosted pool's cluster whose nodes its slurmd pods may land on:
    those with its GPU model (or, for a pool without GPUs, those without GPUs)."""
    model = pool.gpus.model if pool.gpus else None
    return [
        p
        for p in estate.pools_in_cluster(pool.cluster or "")
        if (p.gpus.model if p.gpus else None) == model
    ]


def hosted_node_names(estate: Estate, pool: NodePool) -> list[str]:
    """The Slurm node names of a hosted pool's slurmd pods: the host names of the Kubernetes
    nodes they may run on. The pods use the host network, so slurmd takes the node's hostname
    (slurm-operator v1.2.1 docs/usage/hybrid.md "Host Network": a host-network pod 'will
    inherit the node's hostname'; internal/controller/nodeset/utils/utils.go GetSlurmNodeName
    returns the pod's spec.nodeName when spec.hostNetwork is set). Nodes a provider creates
    have no name before they exist: they are not listed."""
    if not pool.hosted:
        return []
    return [host for backing in hosted_backing_pools(estate, pool) for host in backing.hosts]


# how slurmd finds the GPUs of a node gres.conf cannot name (SchedMD/slurm 24.11 and later:
# src/plugins/gpu/nvidia/gpu_nvidia.c reads /proc/driver/nvidia/gpus, no NVML library)
HOSTED_AUTODETECT = "nvidia"


def hosted_unnamed_backing(estate: Estate, pool: NodePool) -> list[NodePool]:
    """The Kubernetes pools a hosted pool's slurmd pods may land on whose nodes a provider
    creates: their names, so the pods' Slurm node names, exist only once the nodes do."""
    if not pool.hosted:
        return []
    return [p for p in hosted_backing_pools(estate, pool) if not p.hosts]


def autodetected_hosted_pools(estate: Estate) -> list[NodePool]:
    """Hosted Slurm pools with GPUs whose slurmd pods may run on nodes a provider creates:
    gres.conf can name no device files for them, so slurmd finds their GPUs itself
    (AutoDetect=nvidia, renderers.slurm.gres_conf)."""
    return [p for p in estate.hosted_pools() if p.gpus and hosted_unnamed_backing(estate, p)]


def hosted_gpus(estate: Estate, cluster: str) -> dict[str, int]:
    """Whole GPUs of each model the cluster's hosted Slurm pools take, at their `nodes.max`."""
    taken: dict[str, int] = {}
    for pool in estate.hosted_pools(cluster):
        if pool.gpus:
            taken[pool.gpus.model] = taken.get(pool.gpus.model, 0) + pool.gpu_count
    return taken


def hosted_gpu_backing(estate: Estate, cluster: str, model: str) -> int:
    """Whole GPUs of a model the cluster's Kubernetes pools offer unshared and without MIG:
    what a hosted pool's pods can request."""
    return sum(
        p.gpu_count
        for p in estate.pools_in_cluster(cluster)
        if p.gpus and p.gpus.model == model and not p.gpus.mig and replicas(p) == 1
    )


@dataclass(frozen=True, slots=True)
class Flavor:
    """A Kueue ResourceFlavor: a quota key, the pools that back it and its units."""

    cluster: str
    key: str  # the blueprint's quota key: MODEL or MODEL/PROFILE
    pools: tuple[str, ...]
    units: int  # physical GPUs, or MIG instances for a MODEL/PROFILE key
    factor: int  # schedulable devices per unit (time-slicing or MPS replicas)

    @property
    def name(self) -> str:
        """The ResourceFlavor's name: the key with '-' for '/'."""
        return self.key.replace("/", "-")

    @property
    def model(self) -> str:
        return self.key.partition("/")[0]

    @property
    def profile(self) -> str | None:
        return self.key.partition("/")[2] or None


def cluster_flavors(estate: Estate, cluster: str) -> list[Flavor]:
    """A cluster's flavours, by key, with their units and replicas."""
    grouped: dict[str, list[NodePool]] = {}
    for pool in estate.pools_in_cluster(cluster):
        for key in quota_keys(pool):
            grouped.setdefault(key, []).append(pool)
    capacity = quota_capacity(estate, cluster)
    return [
        Flavor(cluster, key, tuple(p.name for p in pools), capacity[key], min(map(replicas, pools)))
        for key, pools in sorted(grouped.items())
    ]


# --- Kubernetes nodes ------------------------------------------------------------------------


def node_labels(estate: Estate, pool: NodePool) -> dict[str, str]:
    """Every label estategen sets on each node of a pool, the pool's own labels first.

    kubelet registers on-prem nodes with them (Ansible), the Pulumi program patches them on
    and gives them to managed node pools: one set everywhere.
    """
    labels = dict(pool.labels)
    labels[ESTATE_LABEL] = estate.name
    labels[POOL_LABEL] = pool.name
    if pool.gpus:
        labels[MODEL_LABEL] = pool.gpus.model
        labels[MIG_LABEL] = "true" if pool.gpus.mig else "false"
        if pool.provider != "gke":
            # select this pool's named config in the device plugin's ConfigMap, and its MIG
            # layout in the mig-parted ConfigMap; GKE runs its own device plugin
            labels[PLUGIN_CONFIG_LABEL] = pool.name
            labels[MIG_CONFIG_LABEL] = pool.name if pool.gpus.mig else MIG_DISABLED
        if pool.provider == "eks":
            # from registration on, before the device plugin advertises a GPU (the node
            # group's labels, and the node-template tag the autoscaler reads at zero nodes)
            labels[EKS_ACCELERATOR_LABEL] = pool.gpus.model
    return dict(sorted(labels.items()))


def registration_labels(estate: Estate, pool: NodePool) -> dict[str, str]:
    """Labels kubelet registers a node with: the managed ones, and on nodes served by our own
    device plugin the GPU deploy labels, set once so mig-manager may pause them."""
    labels = node_labels(estate, pool)
    if pool.gpus and pool.provider != "gke" and pool.cluster:
        cluster = next(c for c in estate.kubernetes_clusters if c.name == pool.cluster)
        if cluster.device_plugin_install == "device-plugin":
            labels.update(dict.fromkeys(GPU_DEPLOY_LABELS.values(), "true"))
    return dict(sorted(labels.items()))


@dataclass(frozen=True, slots=True)
class HostLabelRun:
    """Consecutive hosts of a pool that share their host-specific labels."""

    hosts: tuple[str, ...]
    labels: dict[str, str]


def host_label_runs(pool: NodePool) -> list[HostLabelRun]:
    """A pool's hosts that carry labels of their own (their switch, where the pool names
    switches), as runs of consecutive hosts with the same labels, in host order.

    Runs, not a map of every host: the inventory puts each run's labels on its hosts alone
    (a pool-wide map would make every host's variables grow with its pool), and the Node
    patches read the same runs, so kubelet and the patches cannot disagree.
    """
    runs: list[HostLabelRun] = []
    if not pool.switches:
        return runs
    for switch, hosts in spread(pool.hosts, pool.switches):
        if not hosts:
            continue
        labels = {SWITCH_LABEL: switch}
        if runs and runs[-1].labels == labels:
            runs[-1] = HostLabelRun((*runs[-1].hosts, *hosts), labels)
        else:
            runs.append(HostLabelRun(tuple(hosts), labels))
    return runs


def labels_of_hosts(estate: Estate, pool: NodePool) -> dict[str, dict[str, str]]:
    """The whole label set of each host of a pool: the pool's, then the host's own (what the
    Node patches carry and kubelet registers). Hosts with the same labels share one mapping:
    treat it as read-only."""
    shared = node_labels(estate, pool)
    plain = _label_set(shared, {})
    own = {}
    for run in host_label_runs(pool):
        labels = _label_set(shared, run.labels)  # one set per run, shared by its hosts
        own.update(dict.fromkeys(run.hosts, labels))
    return {host: own.get(host, plain) for host in pool.hosts}


def labels_of_host(estate: Estate, pool: NodePool, host: str) -> dict[str, str]:
    """The whole label set of one host (any name: one the pool does not list has the pool's)."""
    own = next((run.labels for run in host_label_runs(pool) if host in run.hosts), {})
    return _label_set(node_labels(estate, pool), own)


def _label_set(pool_labels: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    return dict(sorted({**pool_labels, **own}.items()))


def kubelet_taint(taint: Taint) -> str:
    """A taint as kubelet's ``--register-with-taints`` reads it: ``key[=value]:Effect``."""
    return (
        f"{taint.key}={taint.value}:{taint.effect}"
        if taint.value
        else f"{taint.key}:{taint.effect}"
    )


def node_taint(taint: Taint) -> dict[str, str]:
    """A taint as a Node's ``spec.taints`` entry (no empty value)."""
    out = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


# --- AKS -------------------------------------------------------------------------------------

# AKS agent pool names of Linux pools: a lowercase letter, then lowercase letters and digits,
# at most 12 (az aks nodepool add; the AgentPool resource's agentPoolName).
AKS_POOL_NAME = r"[a-z][a-z0-9]{0,11}"
# AKS partitions every GPU of a pool with one GPU instance profile (agent pool
# gpuInstanceProfile MIG1g, MIG2g, MIG3g, MIG4g or MIG7g): as many instances of the
# profile with that many compute slices as fit, each with the fewest memory slices (on
# Standard_ND96asr_v4: 7 x 1g.5gb, 3 x 2g.10gb, 2 x 3g.20gb, 1 x 4g.20gb, 1 x 7g.40gb).
AKS_MIG_COMPUTE = (1, 2, 3, 4, 7)


def aks_mig_profiles(estate: Estate, model: str) -> dict[str, str]:
    """MIG profile of a catalog model -> the AKS GPU instance profile that yields it."""
    gpu = estate.gpu_models.get(model)
    if gpu is None:
        return {}
    out: dict[str, str] = {}
    for compute in AKS_MIG_COMPUTE:
        shapes = [p for p in gpu.mig.values() if p.compute == compute]
        if shapes:
            smallest = min(shapes, key=lambda p: p.memory)
            out[smallest.name] = f"MIG{compute}g"
    return out


def aks_gpu_instance_profile(estate: Estate, pool: NodePool) -> str | None:
    """The pool's gpuInstanceProfile: its MIG layout when AKS can build it, else None."""
    layout = mig_layout(pool)
    if not pool.gpus or len(layout) != 1:
        return None
    ((profile, count),) = layout.items()
    gpu = estate.gpu_models.get(pool.gpus.model)
    aks = aks_mig_profiles(estate, pool.gpus.model).get(profile)
    if gpu is None or aks is None or count != gpu.mig[profile].max:
        return None
    return aks
