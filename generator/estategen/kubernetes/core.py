"""Tenancy and nodes: team namespaces and GPU quotas, priority classes, node labels."""

from __future__ import annotations

from estategen.facts import ESTATE_LABEL, labels_of_hosts
from estategen.kubernetes import frameworks, kueue, volcano
from estategen.kubernetes.objects import (
    NVIDIA_NAMESPACE,
    POD_SECURITY,
    TEAM_LABEL,
    ClusterView,
    Obj,
    meta,
)


def pod_security_labels(view: ClusterView) -> dict[str, str]:
    """The Pod Security admission labels of a team namespace: the cluster's level, enforced and
    warned about, each pinned to the Kubernetes minor the blueprint targets.

    Pinning the version keeps the checks a namespace gets from moving when the cluster is
    upgraded, as kubernetes.io "Enforce Pod Security Standards with Namespace Labels"
    recommends; ``warn`` makes the API server warn when a Deployment or Job is applied whose
    pods the level would refuse (``enforce`` refuses only the pods, later).
    """
    level = view.cluster.pod_security
    version = f"v{view.estate.versions.kubernetes.text}"
    out = {}
    for mode in ("enforce", "warn"):
        out[f"{POD_SECURITY}/{mode}"] = level
        out[f"{POD_SECURITY}/{mode}-version"] = version
    return out


def namespaces(view: ClusterView) -> list[Obj]:
    estate = view.estate.name
    out = []
    for team in view.estate.identity.teams:
        metadata = meta(
            team.namespace,
            **{ESTATE_LABEL: estate, TEAM_LABEL: team.name, **pod_security_labels(view)},
        )
        # the same GID as the team's Unix group on the Slurm side, for fsGroup on shared mounts
        metadata["annotations"] = {
            "estategen.io/gid": str(team.gid),
            **volcano.namespace_annotations(view, team),
        }
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
    if view.gpu_pools:
        metadata = meta(NVIDIA_NAMESPACE, **{ESTATE_LABEL: estate})
        # device plugin, MIG manager and DCGM exporter need host paths and privileges
        metadata["labels"][f"{POD_SECURITY}/enforce"] = "privileged"
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
    return out


def team_quotas(view: ClusterView) -> list[Obj]:
    """A ResourceQuota per team: its namespace holds what its queue can admit, no more."""
    if not view.gpu_pools:
        return []
    flavors = kueue.flavors(view)
    return [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": meta("gpu", team.namespace, **{TEAM_LABEL: team.name}),
            "spec": {"hard": kueue.quota_hard(view, team, flavors)},
        }
        for team in view.estate.identity.teams
    ]


# the built-in ClusterRole a team gets in its namespace (kubernetes.io "Using RBAC
# Authorization", User-facing roles)
TEAM_ROLE = "edit"
RBAC_API = "rbac.authorization.k8s.io"


def team_role_bindings(view: ClusterView) -> list[Obj]:
    """A RoleBinding per team namespace: the team's group may ``edit`` there, and nowhere else.

    ``edit`` is Kubernetes' user-facing role for working in a namespace: workloads, Jobs,
    Services, ConfigMaps, Secrets, claims. It grants no Roles or RoleBindings, so a team cannot
    let anyone else in, and only reads the ResourceQuota, so it cannot raise its own GPU quota;
    the namespace itself (and its Pod Security labels) stays the cluster admin's. What it may
    change that estategen applies, NetworkPolicies, opens only the team's own namespace.
    """
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "RoleBinding",
            "metadata": meta(f"team-{TEAM_ROLE}", team.namespace, **{TEAM_LABEL: team.name}),
            "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": TEAM_ROLE},
            "subjects": [
                {
                    "apiGroup": RBAC_API,
                    "kind": "Group",
                    "name": view.cluster.team_group(team.name),
                }
            ],
        }
        for team in view.estate.identity.teams
    ]


# the label the API server gives every namespace, its name (kubernetes.io "Well-Known Labels,
# Annotations and Taints", kubernetes.io/metadata.name)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _from_namespace(namespace: str, port: int) -> Obj:
    return {
        "from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}}],
        "ports": [{"protocol": "TCP", "port": port}],
    }


def team_network_policies(view: ClusterView) -> list[Obj]:
    """A NetworkPolicy per team namespace: its pods take connections from its own pods only,
    and from the estategen components that must reach them, on the port they use.

    Selecting every pod for ingress denies what no rule allows (kubernetes.io "Network
    Policies", Default policies); a peer with only a ``podSelector`` is a pod of the policy's
    own namespace. Connections from the pod's own node (kubelet's probes) are always allowed.
    Of estategen's components only KubeRay's operator connects to team pods (the Ray head's
    dashboard, to submit and follow a RayJob); Prometheus scrapes the DCGM exporter and Kueue,
    in their own namespaces, not team pods. Egress stays open. A team adds its own policies
    to open more (an ingress controller): policies add up, and they only ever open its own
    namespace.
    """
    ingress: list[Obj] = [{"from": [{"podSelector": {}}]}]
    if "rayjob" in view.cluster.frameworks:
        ingress.append(_from_namespace(frameworks.KUBERAY_NAMESPACE, frameworks.RAY_DASHBOARD_PORT))
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": meta("team-ingress", team.namespace, **{TEAM_LABEL: team.name}),
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress},
        }
        for team in view.estate.identity.teams
    ]


def priority_classes(view: ClusterView) -> list[Obj]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": meta(pc.name),
            "value": pc.value,
            "description": pc.description or f"{pc.name} (estate {view.estate.name})",
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for pc in view.cluster.priority_classes
    ]


def node_labels_patches(view: ClusterView) -> list[Obj]:
    """The labels estategen owns on each on-prem node, for a server-side apply.

    kubelet registers a node with these labels and the pool's taints (Ansible), but sets
    labels only at registration; this carries later label changes to existing nodes. It holds
    labels only: ``spec.taints`` is an atomic list, and applying it would remove every taint
    someone else set (maintenance, admins), and the GPU deploy labels mig-manager flips stay
    with kubelet (R2.8).
    """
    out = []
    for pool in view.pools:
        if pool.provider != "on-prem":
            continue
        # the pool's labels and each host's own, from the runs the inventory gives kubelet
        for host, labels in labels_of_hosts(view.estate, pool).items():
            out.append(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": host, "labels": labels}}
            )
    return out
