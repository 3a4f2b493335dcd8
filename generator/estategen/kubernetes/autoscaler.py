"""Cluster Autoscaler for EKS: what lets a managed node group with ``nodes.min`` 0 grow.

EKS has no autoscaler of its own (GKE and AKS do): without one, a node group stays at its
desired size. The Cluster Autoscaler scales the node groups the Pulumi program creates, found
by their Auto Scaling groups' discovery tags; node-template tags tell it the labels, taints
and GPU resources of a group that has no node to look at (scale from zero). Its IAM role is
created by the program and given to its service account through EKS Pod Identity, not the
node role: with every group at zero there is no node of that role for it to run on.
"""

from __future__ import annotations

from estategen.kubernetes.nvidia import node_resources
from estategen.kubernetes.objects import ClusterView, Obj
from estategen.kubernetes_facts import pods_per_node, registration_labels
from estategen.model import NodePool

CHART = "cluster-autoscaler"
RELEASE = "cluster-autoscaler"
REPOSITORY = "https://kubernetes.github.io/autoscaler"
VERSION = "9.59.0"  # chart of kubernetes/autoscaler tag cluster-autoscaler-chart-9.59.0
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
# The autoscaler simulates the scheduler of its own Kubernetes minor: run the release of the
# cluster's version (the newest patch tag of each cluster-autoscaler-1.N branch).
IMAGE_TAGS = {
    "1.29": "v1.29.5",
    "1.30": "v1.30.7",
    "1.31": "v1.31.5",
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
}
TAG_PREFIX = "k8s.io/cluster-autoscaler"


def grows(pool: NodePool) -> bool:
    """A node group whose size the autoscaler decides: its bounds leave it room."""
    return (pool.nodes_min or 0) < (pool.nodes_max or 0)


def scaled_pools(view: ClusterView) -> list[NodePool]:
    return [p for p in view.pools if p.provider == "eks" and grows(p)]


def needed(view: ClusterView) -> bool:
    return view.cluster.provider == "eks" and bool(scaled_pools(view))


def discovery_tags(view: ClusterView) -> dict[str, str]:
    """The tags auto-discovery looks for (the chart's default autoDiscovery.tags)."""
    return {f"{TAG_PREFIX}/enabled": "true", f"{TAG_PREFIX}/{view.cluster.name}": "owned"}


def node_template_tags(view: ClusterView, pool: NodePool) -> dict[str, str]:
    """What a node of the group will carry, for scaling up from zero nodes: its labels, its
    taints, the devices it advertises (replicas and MIG instances, not physical GPUs) and,
    with `max_pods`, the pods it runs. The autoscaler's template node has 110 pods whatever
    the node's kubelet runs, and each resources tag overrides its capacity (kubernetes/
    autoscaler cluster-autoscaler-1.34.5 and every branch of IMAGE_TAGS, cloudprovider/aws/
    aws_manager.go buildNodeFromTemplate)."""
    tags = {
        f"{TAG_PREFIX}/node-template/label/{key}": value
        for key, value in registration_labels(view.estate, pool).items()
    }
    for taint in pool.taints:
        tags[f"{TAG_PREFIX}/node-template/taint/{taint.key}"] = f"{taint.value}:{taint.effect}"
    if pool.gpus:
        for resource, count in node_resources(view, pool).items():
            tags[f"{TAG_PREFIX}/node-template/resources/{resource}"] = str(count)
    if pool.max_pods is not None:
        tags[f"{TAG_PREFIX}/node-template/resources/pods"] = str(pods_per_node(pool))
    return dict(sorted(tags.items()))


def helm_values(view: ClusterView) -> Obj:
    return {
        "cloudProvider": "aws",
        "awsRegion": view.cluster.region,
        "autoDiscovery": {"clusterName": view.cluster.name},
        "image": {"tag": IMAGE_TAGS[view.estate.versions.kubernetes.text]},
        # the program associates its IAM role with this account (EKS Pod Identity)
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
    }
