"""Managed node pools: the arguments of GKE node pools, EKS node groups and AKS agent pools.

Only Pulumi creates these (they are cloud resources, not Kubernetes objects); the generator
computes their arguments from the model, so the program only passes them on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from estategen.facts import mig_layout, replicas
from estategen.kubernetes import autoscaler
from estategen.kubernetes.objects import ClusterView, Obj
from estategen.kubernetes_facts import (
    aks_gpu_instance_profile,
    kubelet_taint,
    node_taint,
    pods_per_node,
    registration_labels,
)
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
    if pool.max_pods is not None:
        # the pool's max_pods_per_node; GKE sizes each node's pod range to it
        args["max_pods_per_node"] = pods_per_node(pool)
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


# The user data of an EKS pool's launch template: one NodeConfig part that nodeadm merges
# into the one EKS writes for the cluster (docs.aws.amazon.com/eks/latest/userguide/
# launch-templates.html: with no AMI in the launch template, EKS merges its own NodeConfig
# into the user data; the MIME multi-part form is awslabs/amazon-eks-ami v20260724
# nodeadm/doc/examples.md "Merging multiple configuration objects"). maxPodsExpression, a
# constant, is what nodeadm reserves kube-reserved memory for (withDefaultReservedResources,
# nodeadm/internal/kubelet/config.go, through CalcMaxPods in eni_max_pods.go; nodeadm has it
# since v20251007); kubelet.config.maxPods wins over it for kubelet itself (doc/api.md
# KubeletOptions), should nodeadm fail to look the instance type up.
EKS_USER_DATA_BOUNDARY = "ESTATEGEN"


def eks_user_data(pool: NodePool) -> str | None:
    """The launch template user data that gives an EKS node its pool's `max_pods`; None when
    the pool leaves them to nodeadm (the instance type's count)."""
    if pool.max_pods is None:
        return None
    pods = pods_per_node(pool)
    boundary = EKS_USER_DATA_BOUNDARY
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{boundary}"\n'
        "\n"
        f"--{boundary}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        "---\n"
        "apiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\n"
        "spec:\n"
        "  kubelet:\n"
        f'    maxPodsExpression: "{pods}"\n'
        "    config:\n"
        f"      maxPods: {pods}\n"
        "\n"
        f"--{boundary}--\n"
    )


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
    if pool.max_pods is not None:
        args["max_pods"] = pods_per_node(pool)
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
            entry: Obj = {
                "provider": "eks",
                "name": pool.name,
                "args": eks_node_group(view, pool),
                "scaling_tags": eks_scaling_tags(view, pool),
            }
            user_data = eks_user_data(pool)
            if user_data is not None:
                # the program creates the launch template and gives the group its version
                entry["launch_template"] = {"user_data": user_data}
            out.append(entry)
        elif pool.provider == "aks":
            out.append({"provider": "aks", "name": pool.name, "args": aks_agent_pool(view, pool)})
    return out


# --- what a change of the arguments does ---------------------------------------------------

REPLACE = "replace"  # the pool is deleted and created again: its nodes and their pods go
UPDATE = "update"  # the pool changes in place
RECREATE_NODES = "recreate-nodes"  # in place, but the cloud replaces the nodes one by one

# Per provider, what changing each argument above does, read from the provider the pinned
# Pulumi package runs (pyproject.toml). A key is an argument's path in ``args`` ("[]" for the
# items of a list); a changed path takes its longest key. pulumi-gcp 10.2.0 bridges
# hashicorp/terraform-provider-google-beta 8.x (pulumi-gcp's .gitmodules "upstream"); the
# snapshots hold hashicorp/terraform-provider-google, whose container files beta shares, up to
# main at e03b7622a2 ("Merge feature branch major release 8.0.0"); node_config.go there is
# byte-identical to tag v7.45.0. Lines: google/services/container/<file>:<line> at e03b7622a2.
GKE_POOL_FIELDS: dict[str, str] = {
    "name": REPLACE,  # resource_container_node_pool.go:510 "name" ForceNew
    "cluster": REPLACE,  # resource_container_node_pool.go:246 "cluster" ForceNew
    "location": REPLACE,  # resource_container_node_pool.go:252 "location" ForceNew
    "project": REPLACE,  # resource_container_node_pool.go:239 "project" ForceNew
    "autoscaling": UPDATE,  # resource_container_node_pool.go:318 no ForceNew; nodePoolUpdate
    "management": UPDATE,  # resource_container_node_pool.go:485 no ForceNew
    # node_config.go:536 no ForceNew, sent with NodePools.Update (node_config.go:3934); GKE then
    # recreates the nodes by the pool's upgrade strategy (surge by default): cloud.google.com/
    # kubernetes-engine/docs/concepts/node-pool-upgrade-strategies
    "node_config.machine_type": RECREATE_NODES,
    # node_config.go:420 no ForceNew, NodePools.Update (node_config.go:4195); GKE applies
    # labels and taints to the nodes without recreating them: cloud.google.com/
    # kubernetes-engine/docs/how-to/update-existing-nodepools
    "node_config.labels": UPDATE,
    "node_config.taints": UPDATE,  # node_config.go:673 "taint" no ForceNew; update at :4007
    # resource_container_node_pool.go schemaNodePool "max_pods_per_node" ForceNew (stored at
    # 069a33d4); GKE gives each node a pod range sized to it when it creates the node
    "max_pods_per_node": REPLACE,
    "node_config.oauth_scopes": REPLACE,  # node_config.go:560 ForceNew
    "node_config.guest_accelerators": REPLACE,  # node_config.go:316 "guest_accelerator" ForceNew
    "node_config.guest_accelerators[].type": REPLACE,  # node_config.go:330 ForceNew
    "node_config.guest_accelerators[].count": REPLACE,  # node_config.go:324 ForceNew
    # node_config.go:337 and :346 (gpu_driver_version) ForceNew
    "node_config.guest_accelerators[].gpu_driver_installation_config": REPLACE,
    "node_config.guest_accelerators[].gpu_partition_size": REPLACE,  # node_config.go:356 ForceNew
    # node_config.go:362, and :370/:376 (strategy, clients per GPU) ForceNew
    "node_config.guest_accelerators[].gpu_sharing_config": REPLACE,
}

# pulumi-aws 7.51.1 bridges hashicorp/terraform-provider-aws 6.x: internal/service/eks/
# node_group.go, resourceNodeGroup's schema (the snapshots hold it at 012e0a32; a 6.x tag could
# not be fetched, the repository is beyond the mirror's size limit). Taints are "taint" there.
EKS_POOL_FIELDS: dict[str, str] = {
    "cluster_name": REPLACE,  # node_group.go "cluster_name" ForceNew
    "node_group_name": REPLACE,  # node_group.go "node_group_name" ForceNew
    "instance_types": REPLACE,  # node_group.go "instance_types" ForceNew
    "ami_type": REPLACE,  # node_group.go "ami_type" ForceNew
    "capacity_type": REPLACE,  # node_group.go "capacity_type" ForceNew
    "scaling_config": UPDATE,  # node_group.go "scaling_config" no ForceNew (UpdateNodegroupConfig)
    "update_config": UPDATE,  # node_group.go "update_config" no ForceNew
    "labels": UPDATE,  # node_group.go "labels" no ForceNew
    "taints": UPDATE,  # node_group.go "taint" no ForceNew
    "tags": UPDATE,  # node_group.go tags: tftags.TagsSchema(), updated in place
    # the launch template of a pool with max_pods (cluster data "launch_template", not an
    # argument of the group: the program creates it and gives the group its id and version).
    # node_group.go "launch_template" "id" ForceNew: a group gaining or losing one is replaced;
    # a new version of its user data is "version", sent with UpdateNodegroupVersion
    # (resourceNodeGroupUpdate, stored at b11fc0fd), which replaces the nodes in a rolling
    # update (docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html)
    "launch_template": REPLACE,
    "launch_template.user_data": RECREATE_NODES,
}

# pulumi-azure-native 3.29.0 (containerservice AgentPool, API 2025-09-01) replaces a resource
# when a property its generator marks ForceNew changes: x-ms-mutability without "update" in the
# API spec, or the hand list forceNewMap (pulumi/pulumi-azure-native provider/pkg/gen/
# replacement.go, stored at 1b7112af), or a parameter of the resource's URL path
# (provider/pkg/provider/diff.go calculateDetailedDiff, stored at 03707ff7).
# Azure/azure-rest-api-specs specification/containerservice/resource-manager/
# Microsoft.ContainerService/aks/stable/2025-09-01/managedClusters.json (stored at 1041da1a):
# ManagedClusterAgentPoolProfileProperties marks no property x-ms-mutability.
AKS_POOL_FIELDS: dict[str, str] = {
    "resource_group_name": REPLACE,  # diff.go: path parameter {resourceGroupName}
    "resource_name_": REPLACE,  # diff.go: path parameter {resourceName}
    "agent_pool_name": REPLACE,  # diff.go: path parameter {agentPoolName}
    "vm_size": REPLACE,  # replacement.go forceNewMap ContainerService AgentPool "vmSize"
    # replacement.go forceNewMap ContainerService AgentPool "gpuInstanceProfile"
    "gpu_instance_profile": REPLACE,
    "mode": UPDATE,  # managedClusters.json no x-ms-mutability; not in forceNewMap
    "os_type": UPDATE,  # managedClusters.json no x-ms-mutability; not in forceNewMap
    "type": UPDATE,  # managedClusters.json no x-ms-mutability; not in forceNewMap
    "count": UPDATE,  # managedClusters.json no x-ms-mutability (the program ignores it)
    "enable_auto_scaling": UPDATE,  # managedClusters.json no x-ms-mutability
    "min_count": UPDATE,  # managedClusters.json no x-ms-mutability
    "max_count": UPDATE,  # managedClusters.json no x-ms-mutability
    "node_labels": UPDATE,  # managedClusters.json no x-ms-mutability
    "node_taints": UPDATE,  # managedClusters.json no x-ms-mutability; not in forceNewMap
    "gpu_profile": UPDATE,  # managedClusters.json no x-ms-mutability; not in forceNewMap
    # not in forceNewMap either, but AKS sets a pool's maxPods only when it creates the pool
    # (learn.microsoft.com/azure/aks/concepts-network, Azure CNI: the maximum pods per node
    # is set when the cluster or a new node pool is created): the program asks Pulumi to
    # replace the pool on a change of it (replace_on_changes)
    "max_pods": REPLACE,
}

POOL_FIELDS: dict[str, dict[str, str]] = {
    "gke": GKE_POOL_FIELDS,
    "eks": EKS_POOL_FIELDS,
    "aks": AKS_POOL_FIELDS,
}


@dataclass(frozen=True, slots=True)
class PoolChange:
    """The table keys a change of a pool's arguments touches, by what each does."""

    replace: tuple[str, ...]
    recreate_nodes: tuple[str, ...]
    update: tuple[str, ...]


def changed_paths(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Paths where two argument values differ, descending through mappings and through lists
    of one length (their items under "[]")."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b)):
            yield from changed_paths(a.get(key), b.get(key), f"{path}.{key}" if path else key)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for x, y in zip(a, b, strict=True):
            yield from changed_paths(x, y, f"{path}[]")
    elif a != b:
        yield path


def field_of(fields: Mapping[str, str], path: str) -> str | None:
    """The longest key of ``fields`` that is ``path`` or one of its parents."""
    while path:
        if path in fields:
            return path
        cut = max(path.rfind("."), path.rfind("[]"))
        path = path[:cut] if cut > 0 else ""
    return None


def pool_arguments(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a change of one managed pool of :func:`node_pools` is judged by: its resource's
    arguments, and the launch template an EKS group runs with (keyed as POOL_FIELDS says)."""
    arguments = dict(entry.get("args") or {})
    if entry.get("launch_template") is not None:
        arguments["launch_template"] = entry["launch_template"]
    return arguments


def pool_change(provider: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> PoolChange:
    """What changing a pool's arguments from ``before`` to ``after`` does. A path the table
    does not know counts as replacing: the plan then asks for a drain it may not need, rather
    than promise an update that deletes the nodes."""
    fields = POOL_FIELDS[provider]
    found: dict[str, list[str]] = {REPLACE: [], RECREATE_NODES: [], UPDATE: []}
    for path in changed_paths(before, after):
        key = field_of(fields, path)
        effect = fields[key] if key else REPLACE
        name = key or path
        if name not in found[effect]:
            found[effect].append(name)
    return PoolChange(tuple(found[REPLACE]), tuple(found[RECREATE_NODES]), tuple(found[UPDATE]))
