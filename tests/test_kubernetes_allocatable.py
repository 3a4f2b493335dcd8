"""Kueue's CPU and memory quotas count what a node's pods can have: its allocatable.

kubelet gives pods a node's allocatable, its capacity less ``--system-reserved``,
``--kube-reserved`` and the hard eviction threshold (kubernetes v1.31
``pkg/kubelet/cm/node_container_manager_linux.go`` ``GetNodeAllocatableReservation``, which
``pkg/kubelet/nodestatus/setters.go`` ``MachineInfo`` subtracts from capacity). The
``k8s_gpu_node`` role sets none of those flags (``test_kubernetes_slinky.py`` reads its
template), so on-prem nodes keep the kubelet defaults: nothing reserved, and
``memory.available<100Mi`` evicts (``pkg/kubelet/apis/config/v1beta1/defaults_linux.go``
``DefaultEvictionHard``; unchanged from 1.29 to 1.34, every release the schema accepts).
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from test_kubernetes_semantics import objects, one
from test_upstream import UPSTREAM

from estategen import checks, load, model
from estategen.catalog import builtin_models
from estategen.kubernetes_facts import (
    EKS_MAX_PODS,
    NodeResources,
    kubelet_reserved,
    node_allocatable,
    node_capacity,
)
from estategen.model import Estate, NodePool
from estategen.schema.validation import normalise

Obj = dict[str, Any]

NODES, THREADS, MEMORY_GB, GPUS = 4, 128, 256, 8

ESTATE = f"""\
estate: alloc
versions: {{kubernetes: "1.31"}}
identity:
  users: [{{name: ana, uid: 11001}}, {{name: ben, uid: 11002}}]
  teams:
    - {{name: vision, gid: 21001, members: [ana]}}
    - {{name: nlp, gid: 21002, members: [ben]}}
node_pools:
  - name: l40s
    scheduler: kubernetes
    cluster: k8s
    hosts: k8s-l40s-[01-0{NODES}]
    cpu: {{sockets: 2, cores_per_socket: 32, threads_per_core: 2}}
    memory_gb: {MEMORY_GB}
    gpus: {{model: l40s-48gb, count: {GPUS}}}
kubernetes:
  clusters:
    - name: k8s
      queues:
        cohort: k8s
        teams:
          - {{team: vision, quota: {{l40s-48gb: VISION}}}}
          - {{team: nlp, quota: {{l40s-48gb: NLP}}}}
"""


def blueprint(vision: int, nlp: int) -> str:
    return ESTATE.replace("VISION", str(vision)).replace("NLP", str(nlp))


def estate_of(text: str) -> Estate:
    document = load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")
    normalised, problems = normalise(document.data)
    assert not problems, [(p.path, p.message) for p in problems]
    return model.build(normalised)


def quota(text: str, cluster: str, team: str) -> dict[str, str]:
    spec = one(objects(text, cluster), "ClusterQueue", team)["spec"]
    (group,) = spec["resourceGroups"]
    (flavor,) = group["flavors"]
    return {r["name"]: r["nominalQuota"] for r in flavor["resources"]}


def test_a_quota_of_the_whole_pool_is_its_nodes_allocatable_not_their_capacity() -> None:
    """A team with every GPU of a pool of 4 nodes gets 4 nodes' allocatable CPU and memory:
    all 128 threads each (the kubelet defaults reserve no CPU), and each node's memory
    capacity (MemTotal, at most 256 GB read as 10^9 bytes: 244140 MiB) less the 100Mi hard
    eviction threshold. Before, the quota counted the machine's 256 GiB."""
    text = blueprint(NODES * GPUS, 0)
    (pool,) = estate_of(text).node_pools
    capacity, allocatable = node_capacity(pool), node_allocatable(pool)
    assert capacity is not None and allocatable is not None
    assert capacity.memory_mib == MEMORY_GB * 10**9 // 2**20 == 244140
    assert allocatable == NodeResources(THREADS * 1000, 244140 - 100)
    assert quota(text, "k8s", "vision") == {
        "cpu": f"{NODES * THREADS * 1000}m",
        "memory": f"{NODES * (244140 - 100)}Mi",
        "nvidia.com/gpu": str(NODES * GPUS),
    }
    assert quota(text, "k8s", "vision")["memory"] != f"{NODES * MEMORY_GB * 1024}Mi"


def test_the_slurmd_pods_of_a_hosted_pool_and_kueue_count_the_same_allocatable() -> None:
    """One function sizes both: a hosted pool's slurmd pod requests a node's allocatable
    (``kubernetes_facts.hosted_pod_cpus``, ``slurm_facts.hosted_pod_memory_mib``), and a Kueue
    quota of a whole node is the same amount."""
    from estategen.kubernetes_facts import hosted_pod_cpus
    from estategen.slurm_facts import hosted_pod_memory_mib

    (pool,) = estate_of(blueprint(0, 0)).node_pools
    allocatable = node_allocatable(pool)
    assert allocatable is not None
    assert hosted_pod_cpus(pool) * 1000 == allocatable.cpu_millis
    assert hosted_pod_memory_mib(pool) == allocatable.memory_mib


def test_quotas_above_the_pool_are_refused_and_what_they_can_promise_fits_allocatable() -> None:
    """GPU quotas carry their share of a node's CPU and memory, so the largest cohort the
    capacity check lets through (every GPU) promises at most the nodes' allocatable; one GPU
    more is refused, as before."""
    text = blueprint(NODES * GPUS // 2, NODES * GPUS // 2)
    (pool,) = estate_of(text).node_pools
    allocatable = node_allocatable(pool)
    assert allocatable is not None
    assert list(checks.quotas_within_capacity(estate_of(text))) == []
    promised = [quota(text, "k8s", team) for team in ("vision", "nlp")]
    assert sum(int(q["cpu"].removesuffix("m")) for q in promised) <= (
        NODES * allocatable.cpu_millis
    )
    assert sum(int(q["memory"].removesuffix("Mi")) for q in promised) <= (
        NODES * allocatable.memory_mib
    )
    over = list(checks.quotas_within_capacity(estate_of(blueprint(NODES * GPUS // 2 + 1, 16))))
    assert [f.message for f in over] == [
        "nominal quotas for l40s-48gb add up to 33, above the 32 in cluster 'k8s'"
    ]


GKE = """\
estate: cloud
versions: {kubernetes: "1.31"}
identity:
  users: [{name: ana, uid: 11001}]
  teams: [{name: vision, gid: 21001, members: [ana]}]
node_pools:
  - name: gke-h100
    scheduler: kubernetes
    cluster: burst
    provider: gke
    instance_type: a3-highgpu-8g
    nodes: {min: 0, max: 2}
    cpu: {sockets: 2, cores_per_socket: 52, threads_per_core: 2}
    memory_gb: 1872
    gpus: {model: h100-sxm-80gb, count: 8}
kubernetes:
  clusters:
    - name: burst
      provider: gke
      region: us-central1
      queues:
        cohort: burst
        teams: [{team: vision, quota: {h100-sxm-80gb: 16}}]
"""


def test_gke_nodes_count_the_reservations_gke_configures_its_kubelet_with() -> None:
    """GKE reserves a share of each tier of a node's CPU and memory, and 100 MiB for eviction
    (cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes, "Memory and CPU
    reservations"): on a 208-thread, 1872 GiB a3-highgpu-8g that is 6% of the first core, 1%
    of the second, 0.5% of the next two and 0.25% of the other 204 (590m), and 25%, 20%, 10%,
    6% and 2% of the first 4, next 4, next 8, next 112 GiB and the rest (45261 MiB, rounded
    up)."""
    (pool,) = estate_of(GKE).node_pools
    reserved_cpu = 60 + 10 + 10 + 204_000 * 25 // 10_000
    reserved_memory = -(
        -(4096 * 2500 + 4096 * 2000 + 8192 * 1000 + 114_688 * 600 + (1872 * 1024 - 131_072) * 200)
        // 10_000
    )
    assert (reserved_cpu, reserved_memory) == (590, 45261)
    capacity = node_capacity(pool)
    assert capacity is not None
    assert node_allocatable(pool) == NodeResources(
        208_000 - reserved_cpu, capacity.memory_mib - reserved_memory - 100
    )
    per_gpu_cpu, per_gpu_memory = (208_000 - 590) // 8, (capacity.memory_mib - 45361) // 8
    assert quota(GKE, "burst", "vision") == {
        "cpu": f"{16 * per_gpu_cpu}m",
        "memory": f"{16 * per_gpu_memory}Mi",
        "nvidia.com/gpu": "16",
    }


def provider_pool(
    provider: str, instance_type: str, cluster: str, threads: int, memory_gb: int
) -> NodePool:
    """GKE's pool and cluster moved to ``provider``, on ``instance_type`` with ``threads``
    vCPUs and ``memory_gb`` of memory."""
    text = (
        GKE.replace("provider: gke", f"provider: {provider}")
        .replace("instance_type: a3-highgpu-8g", f"instance_type: {instance_type}")
        .replace(
            "cpu: {sockets: 2, cores_per_socket: 52, threads_per_core: 2}",
            f"cpu: {{sockets: 1, cores_per_socket: {threads}, threads_per_core: 1}}",
        )
        .replace("memory_gb: 1872", f"memory_gb: {memory_gb}")
        .replace("region: us-central1", cluster)
    )
    (pool,) = estate_of(text).node_pools
    return pool


def eks_max_pods(instance_type: str) -> int:
    """The pods nodeadm lets an EKS node of ``instance_type`` run: its default network card's
    ENIs times their IPv4 addresses less one, plus 2 (amazon-eks-ami v20260724
    nodeadm/internal/kubelet/eni_max_pods.go calculateStandardMaxPods), from the instance
    facts nodeadm embeds."""
    for line in (UPSTREAM / "amazon-eks-ami-v20260724/instance-info.jsonl").open():
        row = json.loads(line)
        if row["instanceType"] == instance_type:
            return int(row["defaultMaxENIs"] * (row["ipv4AddressesPerInterface"] - 1) + 2)
    raise KeyError(instance_type)


def test_the_pods_eks_nodes_may_run_are_nodeadms_for_every_catalog_instance_type() -> None:
    catalog = {
        shape
        for gpu in builtin_models().values()
        if "eks" in gpu.clouds
        for shape in gpu.clouds["eks"].shapes
    }
    assert catalog == set(EKS_MAX_PODS)
    assert {shape: eks_max_pods(shape) for shape in catalog} == EKS_MAX_PODS


def test_eks_nodes_count_the_reservation_nodeadm_writes_for_their_instance_type() -> None:
    """nodeadm's kube-reserved on an EKS AL2023 node (amazon-eks-ami v20260724
    nodeadm/internal/kubelet/config.go): CPU 6% of the first core, 1% of the second, 0.5% of
    the next two and 0.25% of the rest (getCPUMillicoresToReserve), memory 11 MiB per pod the
    node may run plus 255 MiB (getMemoryMebibytesToReserve), over evictionHard
    memory.available 100Mi (defaultKubeletSubConfig). A p5.48xlarge runs 100 pods: 550m and
    1355 MiB kept from pods, where kubelet's defaults alone would keep 0m and 100 MiB and a
    slurmd pod sized to that would never schedule."""
    pool = provider_pool("eks", "p5.48xlarge", "region: eu-west-1", 192, 2048)
    pods = eks_max_pods("p5.48xlarge")
    assert pods == 100
    reserved_cpu = 60 + 10 + 10 + (192_000 - 4000) * 25 // 10_000
    capacity = node_capacity(pool)
    assert capacity is not None
    assert node_allocatable(pool) == NodeResources(
        192_000 - reserved_cpu, capacity.memory_mib - (11 * pods + 255) - 100
    )


def test_aks_nodes_count_the_most_aks_reserves_for_their_size() -> None:
    """AKS on Kubernetes 1.29 and later (learn.microsoft.com/azure/aks/
    node-resource-reservations): kube-reserved CPU by its table (60, 100, 140, 180, 260, 420
    and 740 millicores for 1, 2, 4, 8, 16, 32 and 64 cores), memory the lesser of 20 MiB per
    pod plus 50 MiB and a quarter of the memory, over a 100Mi eviction threshold. The pods per
    node depend on the cluster's network plugin, so they are counted at AKS's most, 250."""
    table = {1: 60, 2: 100, 4: 140, 8: 180, 16: 260, 32: 420, 64: 740}
    for cores, millicores in table.items():
        pool = provider_pool("aks", "Standard_ND96isr_H100_v5", AKS_CLUSTER, cores, 1900)
        assert kubelet_reserved(pool).cpu_millis == millicores, cores
    big = provider_pool("aks", "Standard_ND96isr_H100_v5", AKS_CLUSTER, 96, 1900)
    assert kubelet_reserved(big) == NodeResources(1060, 20 * 250 + 50 + 100)
    small = provider_pool("aks", "Standard_ND96isr_H100_v5", AKS_CLUSTER, 4, 16)
    assert kubelet_reserved(small).memory_mib == 16 * 1024 // 4 + 100


AKS_CLUSTER = "region: westeurope\n      resource_group: rg-gpu"
