"""A Kubernetes pool's `max_pods`: the most pods each node runs, in every output that decides
it, and in the memory EKS and AKS reserve per pod.

On-prem nodes: kubelet's --max-pods (role k8s_gpu_node). GKE: the node pool's
max_pods_per_node. AKS: the agent pool's maxPods. EKS: the NodeConfig nodeadm reads from the
node group's launch template. A blueprint fragment in, a fact about the output out.
"""

from __future__ import annotations

import base64
import email
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_facts import templated
from test_pulumi import run_project

from estategen import kubernetes_facts, load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.kubernetes import cloud
from estategen.kubernetes.objects import ClusterView
from estategen.model import Estate, NodePool
from estategen.plan.keys import model_changes
from estategen.plan.kubernetes import kubernetes_changes
from estategen.plan.steps import Action, merge_steps
from estategen.render import render
from estategen.renderers.estate_json import estate_data

needs_ansible = pytest.mark.skipif(not shutil.which("ansible"), reason="needs ansible-core")

BLUEPRINT = """\
estate: pods
versions: {kubernetes: "1.33"}
node_pools:
  - name: onprem
    scheduler: kubernetes
    cluster: local
    hosts: k8s-[01-02]
    cpu: {sockets: 1, cores_per_socket: 64, threads_per_core: 2}
    memory_gb: 512
    gpus: {model: l40s-48gb, count: 4}
    max_pods: 64
  - name: gke-h100
    scheduler: kubernetes
    cluster: burst
    provider: gke
    instance_type: a3-highgpu-8g
    nodes: {min: 0, max: 4}
    cpu: {sockets: 2, cores_per_socket: 52, threads_per_core: 2}
    memory_gb: 1872
    gpus: {model: h100-sxm-80gb, count: 8}
    max_pods: 48
  - name: aksh100
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_ND96isr_H100_v5
    nodes: {min: 0, max: 2}
    cpu: {sockets: 1, cores_per_socket: 96, threads_per_core: 1}
    memory_gb: 1900
    gpus: {model: h100-sxm-80gb, count: 8}
    max_pods: 30
  - name: eks-l40s
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {min: 0, max: 4}
    cpu: {sockets: 1, cores_per_socket: 48, threads_per_core: 1}
    memory_gb: 384
    gpus: {model: l40s-48gb, count: 4}
    max_pods: 40
kubernetes:
  clusters:
    - name: local
    - name: burst
      provider: gke
      region: us-central1
    - name: az
      provider: aks
      region: westeurope
      resource_group: rg-gpu
    - name: aws
      provider: eks
      region: eu-west-1
"""


def estate_of(text: str = BLUEPRINT) -> Estate:
    document = load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")
    return pipeline.validate_document(document).estate


def findings(text: str) -> list[tuple[str, str]]:
    """(key path, message) of each error of an invalid blueprint."""
    with pytest.raises(BlueprintInvalid) as refused:
        estate_of(text)
    return [(f.path, f.message) for f in refused.value.findings if f.level == "error"]


def pool_of(estate: Estate, name: str) -> NodePool:
    return next(p for p in estate.node_pools if p.name == name)


def without_max_pods(text: str, pool: str) -> str:
    """The blueprint with ``pool``'s `max_pods` line taken out."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  - name: {pool}\n")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("    max_pods:"))
    return "".join(lines[:end] + lines[end + 1 :])


def with_max_pods(text: str, pool: str, value: int) -> str:
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  - name: {pool}\n")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("    max_pods:"))
    lines[end] = f"    max_pods: {value}\n"
    return "".join(lines)


def node_pool_entry(estate: Estate, cluster: str, pool: str) -> dict[str, Any]:
    view = ClusterView.of(estate, next(c for c in estate.kubernetes_clusters if c.name == cluster))
    return next(p for p in cloud.node_pools(view) if p["name"] == pool)


def node_config(user_data: str) -> dict[str, Any]:
    """The NodeConfig of an EKS launch template's user data, read as nodeadm reads
    user data: a MIME multi-part document whose application/node.eks.aws parts are
    NodeConfig objects (amazon-eks-ami v20260724 nodeadm/doc/examples.md)."""
    message = email.message_from_string(user_data)
    assert message.is_multipart()
    parts = [p for p in message.get_payload() if p.get_content_type() == "application/node.eks.aws"]
    assert len(parts) == 1
    config: dict[str, Any] = yaml.safe_load(parts[0].get_payload())
    assert (config["apiVersion"], config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    return config


# --- refused -------------------------------------------------------------------------------


def test_max_pods_on_a_slurm_pool_is_refused() -> None:
    text = BLUEPRINT.replace(
        "node_pools:\n",
        "node_pools:\n  - name: batch\n    scheduler: slurm\n    hosts: gpu-[01-02]\n"
        "    cpu: {sockets: 1, cores_per_socket: 8}\n    memory_gb: 64\n    max_pods: 64\n",
        1,
    ).replace(
        "kubernetes:\n  clusters:",
        "slurm:\n  partitions: [{name: b, pools: [batch]}]\nkubernetes:\n  clusters:",
        1,
    )
    ((path, message),) = [f for f in findings(text) if f[0].endswith("max_pods")]
    assert path == "node_pools[0].max_pods"
    assert "Kubernetes node" in message and "Slurm pool" in message


@pytest.mark.parametrize(
    ("pool", "value", "bounds"),
    [
        ("gke-h100", 257, "8 to 256"),
        ("gke-h100", 7, "8 to 256"),
        ("aksh100", 9, "10 to 250"),
        ("aksh100", 251, "10 to 250"),
    ],
)
def test_max_pods_outside_the_providers_bounds_is_refused_with_them(
    pool: str, value: int, bounds: str
) -> None:
    """GKE max_pods_per_node 8 to 256 (flexible-pod-cidr); AKS maxPods 10 to 250
    (azure-cni-overlay, "Maximum pods per node")."""
    errors = findings(with_max_pods(BLUEPRINT, pool, value))
    index = [p.name for p in estate_of().node_pools].index(pool)
    assert [m for p, m in errors if p == f"node_pools[{index}].max_pods"] == [
        f"{value} is outside "
        + (
            "a GKE node pool's max_pods_per_node"
            if pool.startswith("gke")
            else "an AKS agent pool's maxPods"
        )
        + f": {bounds}"
    ]


def test_more_pods_than_an_eks_instance_type_has_addresses_for_is_refused() -> None:
    """nodeadm lets a g6e.12xlarge node run its default network card's ENIs times their IPv4
    addresses less one, plus 2 (kubernetes_facts.EKS_MAX_PODS, recomputed from
    instance-info.jsonl by tests/test_kubernetes_allocatable.py): one more is refused, with the
    limit."""
    limit = kubernetes_facts.EKS_MAX_PODS["g6e.12xlarge"]
    errors = findings(with_max_pods(BLUEPRINT, "eks-l40s", limit + 1))
    ((_, message),) = [e for e in errors if e[0] == "node_pools[3].max_pods"]
    assert f"{limit + 1} pods per node" in message and f"at most {limit}" in message
    estate_of(with_max_pods(BLUEPRINT, "eks-l40s", limit))  # the limit itself is accepted


def test_max_pods_above_the_widest_bound_is_refused_by_the_schema() -> None:
    errors = findings(with_max_pods(BLUEPRINT, "onprem", kubernetes_facts.MAX_PODS_CEILING + 1))
    assert [p for p, _ in errors] == ["node_pools[0].max_pods"]


# --- each output -----------------------------------------------------------------------------


@needs_ansible
def test_on_prem_kubelet_runs_with_the_pools_max_pods(tmp_path: Path) -> None:
    """kubelet.env.j2 gives kubelet --max-pods from the pool's group variables."""
    folder = tmp_path / "out"
    for path, output in render(estate_of()).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    group_vars = yaml.safe_load((folder / "ansible/group_vars/pool_onprem.yml").read_text())
    assert group_vars["pool_max_pods"] == 64
    kubelet = templated(folder / "ansible", "pool_onprem", "k8s_gpu_node/templates/kubelet.env.j2")
    assert set(kubelet) == {"k8s-01", "k8s-02"}
    for env_file in kubelet.values():
        assert env_file.count("--max-pods=") == 1
        assert ' --max-pods=64"' in env_file


def test_a_pool_without_max_pods_leaves_every_output_to_its_default() -> None:
    """Without the key nothing is rendered for it: kubelet, GKE and AKS keep their own
    defaults and nodeadm its instance-type count (the examples render as before)."""
    text = BLUEPRINT
    for pool in ("onprem", "gke-h100", "aksh100", "eks-l40s"):
        text = without_max_pods(text, pool)
    estate = estate_of(text)
    assert "max_pods_per_node" not in node_pool_entry(estate, "burst", "gke-h100")["args"]
    assert "max_pods" not in node_pool_entry(estate, "az", "aksh100")["args"]
    assert "launch_template" not in node_pool_entry(estate, "aws", "eks-l40s")
    files = render(estate)
    assert "pool_max_pods" not in files["ansible/group_vars/pool_onprem.yml"].content.decode()
    assert all("max_pods" not in pool for pool in estate_data(estate)["node_pools"])


def test_gke_node_pool_sets_max_pods_per_node() -> None:
    args = node_pool_entry(estate_of(), "burst", "gke-h100")["args"]
    assert args["max_pods_per_node"] == 48


def test_aks_agent_pool_sets_max_pods() -> None:
    args = node_pool_entry(estate_of(), "az", "aksh100")["args"]
    assert args["max_pods"] == 30


def test_eks_launch_template_gives_nodeadm_the_max_pods_for_kubelet_and_its_reservation() -> None:
    """kubelet.config.maxPods is what kubelet runs with; maxPodsExpression is what nodeadm
    reserves kube-reserved memory for (nodeadm/internal/kubelet/config.go
    withDefaultReservedResources calls CalcMaxPods with it): both are the pool's max_pods."""
    entry = node_pool_entry(estate_of(), "aws", "eks-l40s")
    assert "launch_template" not in entry["args"]  # the program creates it
    kubelet = node_config(entry["launch_template"]["user_data"])["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 40
    assert kubelet["maxPodsExpression"] == "40"
    # no cluster details: EKS merges its own NodeConfig into a launch template without an AMI
    assert set(node_config(entry["launch_template"]["user_data"])["spec"]) == {"kubelet"}


def test_the_cluster_autoscaler_sizes_a_growing_eks_groups_template_node_to_max_pods() -> None:
    """Scaling from zero, the autoscaler builds a node from the Auto Scaling group's tags:
    110 pods unless a node-template/resources/pods tag says otherwise (kubernetes/autoscaler
    cluster-autoscaler-1.34.5 cloudprovider/aws/aws_manager.go buildNodeFromTemplate)."""
    entry = node_pool_entry(estate_of(), "aws", "eks-l40s")
    assert entry["scaling_tags"]["k8s.io/cluster-autoscaler/node-template/resources/pods"] == "40"
    unset = node_pool_entry(estate_of(without_max_pods(BLUEPRINT, "eks-l40s")), "aws", "eks-l40s")
    assert not any(key.endswith("/resources/pods") for key in unset["scaling_tags"])


def _project(tmp_path: Path, cluster: str) -> Path:
    for path, output in render(estate_of()).items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    return tmp_path / "pulumi" / cluster


def test_pulumi_creates_the_gke_and_aks_pools_with_their_max_pods(tmp_path: Path) -> None:
    gke = run_project(_project(tmp_path / "gke", "burst"))
    (pool,) = gke.all("NodePool")
    assert pool["maxPodsPerNode"] == 48
    aks = run_project(_project(tmp_path / "aks", "az"))
    (agent,) = aks.all("AgentPool")
    assert agent["maxPods"] == 30
    # AKS sets maxPods only when it creates the pool: a new value replaces it
    key = ("azure-native:containerservice:AgentPool", "aksh100")
    assert aks.replaced_on[key] == {"maxPods"} and key in aks.deleted_first


def test_pulumi_boots_the_eks_group_from_a_launch_template_with_the_node_config(
    tmp_path: Path,
) -> None:
    result = run_project(_project(tmp_path, "aws"))
    (template,) = result.all("LaunchTemplate")
    user_data = base64.b64decode(template["userData"]).decode()
    assert "imageId" not in template  # EKS keeps choosing the AL2023 NVIDIA image
    assert node_config(user_data)["spec"]["kubelet"]["config"]["maxPods"] == 40
    (group,) = result.all("NodeGroup")
    assert set(group["launchTemplate"]) == {"id", "version"}
    (resource,) = result.by_kind["LaunchTemplate"]
    assert resource.key in result.waits_for(result.by_kind["NodeGroup"][0])


# --- what nodes keep from pods -----------------------------------------------------------


def test_an_aks_pool_with_max_pods_reserves_memory_for_its_own_pod_count() -> None:
    """AKS keeps min(20 MiB per pod + 50 MiB, a quarter of the memory) plus the 100Mi
    eviction threshold (learn.microsoft.com/azure/aks/node-resource-reservations): for 30
    pods, 650 MiB + 100, not 5050 + 100 as for AKS's most, 250."""
    pool = pool_of(estate_of(), "aksh100")
    assert kubernetes_facts.pods_per_node(pool) == 30
    assert (
        kubernetes_facts.kubelet_reserved(pool).memory_mib
        == min(20 * 30 + 50, 1900 * 1024 // 4) + 100
    )
    small = pool_of(estate_of(BLUEPRINT.replace("memory_gb: 1900", "memory_gb: 2")), "aksh100")
    assert (
        kubernetes_facts.kubelet_reserved(small).memory_mib
        == min(20 * 30 + 50, 2 * 1024 // 4) + 100
    )
    unset = pool_of(estate_of(without_max_pods(BLUEPRINT, "aksh100")), "aksh100")
    assert kubernetes_facts.kubelet_reserved(unset).memory_mib == 20 * 250 + 50 + 100


def test_an_eks_pool_with_max_pods_reserves_what_nodeadm_reserves_for_them() -> None:
    """nodeadm's kube-reserved memory is 11 MiB per pod plus 255 MiB
    (getMemoryMebibytesToReserve), for the pods maxPodsExpression gives; plus 100Mi
    eviction."""
    estate = estate_of()
    pool = pool_of(estate, "eks-l40s")
    user_data = node_pool_entry(estate, "aws", "eks-l40s")["launch_template"]["user_data"]
    pods = int(node_config(user_data)["spec"]["kubelet"]["maxPodsExpression"])
    assert pods == kubernetes_facts.pods_per_node(pool) == 40
    assert kubernetes_facts.kubelet_reserved(pool).memory_mib == 11 * 40 + 255 + 100
    allocatable = kubernetes_facts.node_allocatable(pool)
    capacity = kubernetes_facts.node_capacity(pool)
    assert allocatable is not None and capacity is not None
    assert allocatable.memory_mib == capacity.memory_mib - (11 * 40 + 255 + 100)


def test_gke_and_on_prem_reservations_do_not_depend_on_max_pods() -> None:
    """GKE reserves by memory tiers and on-prem kubelet keeps its defaults: neither counts
    pods."""
    for name in ("gke-h100", "onprem"):
        set_ = pool_of(estate_of(), name)
        unset = pool_of(estate_of(without_max_pods(BLUEPRINT, name)), name)
        assert kubernetes_facts.kubelet_reserved(set_) == kubernetes_facts.kubelet_reserved(unset)


# --- the plan --------------------------------------------------------------------------------


def test_plan_restarts_kubelet_on_prem_with_the_role_that_sets_it() -> None:
    old, new = estate_of(), estate_of(with_max_pods(BLUEPRINT, "onprem", 32))
    changes = model_changes(estate_data(old), estate_data(new), new)
    (change,) = [c for c in changes if c.kind == "kubelet-max-pods"]
    assert (change.before, change.after) == ("64", "32")
    assert set(change.actions) == {Action("ansible-playbook", "pool_onprem:k8s_gpu_node")}
    assert "kubelet restarts" in change.meaning


@pytest.mark.parametrize(
    ("cluster", "pool", "field"),
    [("burst", "gke-h100", "max_pods_per_node"), ("az", "aksh100", "max_pods")],
)
def test_plan_drains_a_gke_or_aks_pool_whose_max_pods_changes_before_it_is_replaced(
    cluster: str, pool: str, field: str
) -> None:
    after = estate_of(with_max_pods(BLUEPRINT, pool, 32))
    changes = kubernetes_changes(estate_of(), after)[f"pulumi/{cluster}/cluster.json"]
    (change,) = [c for c in changes if c.subject == f"pool {pool}"]
    assert change.kind == "kubernetes-replace"
    assert f"cannot change {field} in place" in change.meaning
    steps = merge_steps(change.actions, "pods")
    assert [s.id for s in steps] == ["drain-kubernetes-pool", "pulumi-up"]


def test_plan_says_a_new_eks_max_pods_rolls_the_nodes_and_a_first_one_replaces_the_group() -> None:
    changes = kubernetes_changes(estate_of(), estate_of(with_max_pods(BLUEPRINT, "eks-l40s", 32)))
    (rolled,) = [c for c in changes["pulumi/aws/cluster.json"] if c.subject == "pool eks-l40s"]
    assert rolled.kind == "kubernetes-pool"
    assert (
        "launch_template.user_data" in rolled.meaning and "recreating every node" in rolled.meaning
    )
    first = kubernetes_changes(estate_of(without_max_pods(BLUEPRINT, "eks-l40s")), estate_of())
    (replaced,) = [c for c in first["pulumi/aws/cluster.json"] if c.subject == "pool eks-l40s"]
    assert replaced.kind == "kubernetes-replace"
    assert "cannot change launch_template in place" in replaced.meaning
