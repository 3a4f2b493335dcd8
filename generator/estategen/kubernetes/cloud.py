"""Managed node pools: the arguments of GKE node pools, EKS node groups and AKS agent pools.

Only Pulumi creates these (they are cloud resources, not Kubernetes objects); the generator
computes their arguments from the model, so the program only passes them on.
"""

from __future__ import annotations

from estategen.facts import (
    aks_gpu_instance_profile,
    kubelet_taint,
    mig_layout,
    node_taint,
    registration_labels,
    replicas,
)
from estategen.kubernetes import autoscaler
from estategen.kubernetes.objects import ClusterView, Obj
from estategen.model import NodePool

TAINT_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}


def gke_node_pool(view: ClusterView, pool: NodePool) -> Obj:
    """``gcp.container.NodePool`` arguments for a GKE pool."""
    cluster = view.cluster
    node_config: Obj = {
        "machine_type": pool.instance_type,
        "labels": registration_labels(view.estate, pool),
        "taints": [
            {"key": t.key, "value": t.value, "effect": TAINT_EFFECTS[t.effect]} for t in pool.taints
        ],
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    if pool.gpus:
        offer = view.estate.gpu_models[pool.gpus.model].clouds.get("gke")
        accelerator: Obj = {
            "type": offer.accelerator if offer else None,
            "count": pool.gpus.count,
            "gpu_driver_installation_config": {"gpu_driver_version": "DEFAULT"},
        }
        layout = mig_layout(pool)
        if layout:
            # GKE partitions every GPU into one profile (a check enforces a uniform layout)
            accelerator["gpu_partition_size"] = next(iter(layout))
        sharing = pool.gpus.sharing
        if sharing.time_slicing or sharing.mps:
            accelerator["gpu_sharing_config"] = {
                "gpu_sharing_strategy": "TIME_SHARING" if sharing.time_slicing else "MPS",
                "max_shared_clients_per_gpu": replicas(pool),
            }
        node_config["guest_accelerators"] = [accelerator]
    args: Obj = {
        "name": pool.name,
        "cluster": cluster.name,
        "location": cluster.region,
        "node_config": node_config,
        "autoscaling": {
            "total_min_node_count": pool.nodes_min or 0,
            "total_max_node_count": pool.nodes_max,
            "location_policy": "ANY",
        },
        "management": {"auto_repair": True, "auto_upgrade": True},
    }
    if cluster.project:
        args["project"] = cluster.project
    return args


def eks_node_group(view: ClusterView, pool: NodePool) -> Obj:
    """``aws.eks.NodeGroup`` arguments for an EKS pool (role and subnets are added at run time)."""
    return {
        "cluster_name": view.cluster.name,
        "node_group_name": pool.name,
        "instance_types": [pool.instance_type],
        "ami_type": "AL2023_x86_64_NVIDIA" if pool.gpus else "AL2023_x86_64_STANDARD",
        "capacity_type": "ON_DEMAND",
        "scaling_config": {
            "min_size": pool.nodes_min or 0,
            "max_size": pool.nodes_max,
            "desired_size": pool.nodes_min or 0,
        },
        "update_config": {"max_unavailable": 1},
        "labels": registration_labels(view.estate, pool),
        "taints": [{**node_taint(t), "effect": TAINT_EFFECTS[t.effect]} for t in pool.taints],
        "tags": autoscaler.discovery_tags(view) if autoscaler.grows(pool) else {},
    }


def eks_scaling_tags(view: ClusterView, pool: NodePool) -> dict[str, str]:
    """Tags the program puts on the node group's Auto Scaling group (EKS does not copy a node
    group's own tags there): discovery and node templates, for a group the autoscaler grows."""
    if not autoscaler.grows(pool):
        return {}
    return {**autoscaler.discovery_tags(view), **autoscaler.node_template_tags(view, pool)}


def aks_agent_pool(view: ClusterView, pool: NodePool) -> Obj:
    """``azure-native.containerservice.AgentPool`` arguments for an AKS pool.

    AKS installs the NVIDIA driver (gpuProfile.driver Install: the GPU Operator's values leave
    the driver to the host) but not the device plugin, which the cluster runs as on EKS; AKS's
    own autoscaler keeps the pool between ``nodes.min`` and ``nodes.max``.
    """
    cluster = view.cluster
    args: Obj = {
        "resource_group_name": cluster.resource_group,
        "resource_name_": cluster.name,
        "agent_pool_name": pool.name,
        "mode": "User",
        "os_type": "Linux",
        "type": "VirtualMachineScaleSets",
        "vm_size": pool.instance_type,
        "count": pool.nodes_min or 0,
        "enable_auto_scaling": True,
        "min_count": pool.nodes_min or 0,
        "max_count": pool.nodes_max,
        "node_labels": registration_labels(view.estate, pool),
        "node_taints": [kubelet_taint(t) for t in pool.taints],
    }
    if pool.gpus:
        args["gpu_profile"] = {"driver": "Install"}
        profile = aks_gpu_instance_profile(view.estate, pool)
        if profile:
            args["gpu_instance_profile"] = profile
    return args


def node_pools(view: ClusterView) -> list[Obj]:
    """Every managed pool of the cluster: provider, name and the arguments of its resource."""
    out: list[Obj] = []
    for pool in view.pools:
        if pool.provider == "gke":
            out.append({"provider": "gke", "name": pool.name, "args": gke_node_pool(view, pool)})
        elif pool.provider == "eks":
            out.append(
                {
                    "provider": "eks",
                    "name": pool.name,
                    "args": eks_node_group(view, pool),
                    "scaling_tags": eks_scaling_tags(view, pool),
                }
            )
        elif pool.provider == "aks":
            out.append({"provider": "aks", "name": pool.name, "args": aks_agent_pool(view, pool)})
    return out
