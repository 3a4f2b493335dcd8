"""Tenancy and nodes: team namespaces and GPU quotas, priority classes, node labels."""

from __future__ import annotations

from estategen.kubernetes import frameworks, kueue, volcano
from estategen.kubernetes.objects import (
    NVIDIA_NAMESPACE,
    POD_SECURITY,
    TEAM_LABEL,
    ClusterView,
    Obj,
    meta,
    team_users,
)
from estategen.kubernetes_facts import ESTATE_LABEL, labels_of_hosts
from estategen.model import Team

GID_ANNOTATION = "estategen.io/gid"
# one annotation per uid a team's pods may run as, estategen.io/uid-<uid>: <user name>; the
# admission policy looks a pod's uid up among them (a team cannot change its namespace)
UID_ANNOTATION = "estategen.io/uid-"


def pod_security_labels(view: ClusterView, team: Team) -> dict[str, str]:
    """The Pod Security admission labels of a team's namespace: the team's level on the
    cluster (its own, else the cluster's), enforced and warned about, each pinned to the
    Kubernetes minor the blueprint targets.

    kubernetes.io "Pod Security Admission" (kubernetes/website, content/en/docs/concepts/
    security/pod-security-admission.md): ``pod-security.kubernetes.io/<mode>`` names the
    level of a mode, ``<mode>-version`` the minor whose checks apply. Pinning the version
    keeps the checks a namespace gets from moving when the cluster is upgraded, as "Enforce
    Pod Security Standards with Namespace Labels" recommends; ``warn`` makes the API server
    warn when a Deployment or Job is applied whose pods the level would refuse (``enforce``
    refuses only the pods, later).
    """
    level = view.cluster.team_pod_security(team)
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
            **{
                ESTATE_LABEL: estate,
                TEAM_LABEL: team.kubernetes_name,
                **pod_security_labels(view, team),
            },
        )
        # the same GID as the team's Unix group on the Slurm side, for fsGroup on shared mounts
        metadata["annotations"] = {
            GID_ANNOTATION: str(team.gid),
            **volcano.namespace_annotations(view, team),
        }
        if view.cluster.unix_identity:
            for uid, name in team_users(view.estate, team).items():
                metadata["annotations"][f"{UID_ANNOTATION}{uid}"] = name
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
            "metadata": meta("gpu", team.namespace, **{TEAM_LABEL: team.kubernetes_name}),
            "spec": {"hard": kueue.quota_hard(view, team, flavors)},
        }
        for team in view.estate.identity.teams
    ]


# the built-in ClusterRole a team gets in its namespace (kubernetes.io "Using RBAC
# Authorization", User-facing roles)
TEAM_ROLE = "edit"
RBAC_API = "rbac.authorization.k8s.io"


# the ClusterRole of the job kinds a cluster's frameworks and queue engine add, which ``edit``
# does not cover: none of the pinned charts (JobSet 0.12.0, Trainer 2.3.0, KubeRay 1.7.0,
# Volcano 1.15.1) aggregates its kinds into edit, and Argo Workflows' (1.0.18) is told not to
# (frameworks.argo_values)
JOBS_ROLE = "estategen-team-jobs"
_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_READ = ["get", "list", "watch"]
# framework -> (API group, the kinds a team writes, whether they serve a status subresource:
# Argo's Workflow CRD keeps its status in the object, with no subresource)
_FRAMEWORK_KINDS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "jobset": ("jobset.x-k8s.io", ("jobsets",), True),
    "trainjob": ("trainer.kubeflow.org", ("trainjobs",), True),
    "mpijob": ("kubeflow.org", ("mpijobs",), True),
    "rayjob": ("ray.io", ("rayjobs", "rayclusters"), True),
    "workflow": ("argoproj.io", ("workflows", "workflowtemplates", "cronworkflows"), False),
}


def _jobs_rules(view: ClusterView) -> list[Obj]:
    """What a team needs beyond ``edit`` to run the cluster's job kinds in its namespace: write
    the frameworks' kinds (and Volcano's Job), read its queue's LocalQueue and Workloads."""
    rules: list[Obj] = []
    for framework, (group, kinds, has_status) in _FRAMEWORK_KINDS.items():
        if framework in view.cluster.frameworks:
            rules.append({"apiGroups": [group], "resources": list(kinds), "verbs": _WRITE})
            if has_status:
                status = [f"{kind}/status" for kind in kinds]
                rules.append({"apiGroups": [group], "resources": status, "verbs": _READ})
    queues = view.cluster.queues
    if queues is not None and queues.volcano:
        rules.append({"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": _WRITE})
        rules.append(
            {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": _READ}
        )
    elif queues is not None:
        queued = ["localqueues", "workloads"]
        rules.append({"apiGroups": ["kueue.x-k8s.io"], "resources": queued, "verbs": _READ})
    return rules


def team_jobs_role(view: ClusterView) -> list[Obj]:
    """The ClusterRole the team RoleBindings ``team-jobs`` grant in each team namespace (a
    RoleBinding grants a ClusterRole's namespaced rules in its own namespace only)."""
    rules = _jobs_rules(view)
    if not rules:
        return []
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "ClusterRole",
            "metadata": meta(JOBS_ROLE),
            "rules": rules,
        }
    ]


def team_role_bindings(view: ClusterView) -> list[Obj]:
    """RoleBindings per team namespace: the team's group may ``edit`` there, and run the
    cluster's job kinds there (``estategen-team-jobs``), and nowhere else.

    ``edit`` is Kubernetes' user-facing role for working in a namespace: workloads, Jobs,
    Services, ConfigMaps, Secrets, claims. It grants no Roles or RoleBindings, so a team cannot
    let anyone else in, and only reads the ResourceQuota, so it cannot raise its own GPU quota;
    the namespace itself (and its Pod Security labels) stays the cluster admin's. What it may
    change that estategen applies, NetworkPolicies, opens only the team's own namespace.
    """
    roles = [TEAM_ROLE] + ([JOBS_ROLE] if _jobs_rules(view) else [])
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "RoleBinding",
            "metadata": meta(
                f"team-{role.rpartition('-')[2]}",
                team.namespace,
                **{TEAM_LABEL: team.kubernetes_name},
            ),
            "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": role},
            "subjects": [
                {
                    "apiGroup": RBAC_API,
                    "kind": "Group",
                    "name": view.cluster.team_group(team.name),
                }
            ],
        }
        for team in view.estate.identity.teams
        for role in roles
    ]


ADMISSION_API = "admissionregistration.k8s.io/v1"
IDENTITY_POLICY = "estategen-team-identity"
_SECURITY = "object.spec.securityContext"
# CEL over the pod (``object``) and its namespace (``namespaceObject``): each container's
# effective runAsUser and runAsGroup (its own, else the pod's, else -1: not set)
_IDENTITY_VARIABLES = {
    "annotations": "namespaceObject.metadata.annotations",
    "podUser": f"has({_SECURITY}) && has({_SECURITY}.runAsUser) ? {_SECURITY}.runAsUser : -1",
    "podGroup": f"has({_SECURITY}) && has({_SECURITY}.runAsGroup) ? {_SECURITY}.runAsGroup : -1",
    "containers": "object.spec.containers"
    " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
    " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])",
    "users": "variables.containers.map(c, has(c.securityContext)"
    " && has(c.securityContext.runAsUser) ? c.securityContext.runAsUser : variables.podUser)",
    "groups": "variables.containers.map(c, has(c.securityContext)"
    " && has(c.securityContext.runAsGroup) ? c.securityContext.runAsGroup : variables.podGroup)",
}
_GID = f"variables.annotations['{GID_ANNOTATION}']"
_IDENTITY_VALIDATIONS = [
    (
        f"variables.users.all(u, ('{UID_ANNOTATION}' + string(u)) in variables.annotations)",
        "every container must run as a member of the namespace's team: set runAsUser (pod "
        f"or container) to a uid the namespace's {UID_ANNOTATION}<uid> annotations list",
    ),
    (
        f"variables.groups.all(g, string(g) == {_GID})",
        "every container must run in the team's group: set runAsGroup (pod or container) to "
        f"the namespace's {GID_ANNOTATION}",
    ),
    (
        f"!has({_SECURITY}) || !has({_SECURITY}.supplementalGroups)"
        f" || {_SECURITY}.supplementalGroups.all(g, string(g) == {_GID})",
        f"supplementalGroups may name only the team's group, the namespace's {GID_ANNOTATION}",
    ),
    (
        f"!has({_SECURITY}) || !has({_SECURITY}.fsGroup) || string({_SECURITY}.fsGroup) == {_GID}",
        f"fsGroup may only be the team's group, the namespace's {GID_ANNOTATION}",
    ),
]


def team_identity_policy(view: ClusterView) -> list[Obj]:
    """With ``tenancy.unix_identity``: a ValidatingAdmissionPolicy that lets a pod into a team
    namespace only when every container runs as one of the team's members in the team's
    group, as a batch job does on the Slurm side, and its supplementalGroups and fsGroup name
    no other group; the same for an ephemeral container added later (``kubectl debug``).

    The policy reads the team's uids and gid from its namespace's annotations
    (``namespaceObject``), which ``edit`` cannot change; its binding selects the estate's team
    namespaces by label (kubernetes.io "Validating Admission Policy", v1 from Kubernetes 1.30).
    """
    if not view.cluster.unix_identity:
        return []
    policy: Obj = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": meta(IDENTITY_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    },
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["pods/ephemeralcontainers"],
                    },
                ]
            },
            "variables": [{"name": k, "expression": v} for k, v in _IDENTITY_VARIABLES.items()],
            "validations": [
                {"expression": expression, "message": message}
                for expression, message in _IDENTITY_VALIDATIONS
            ],
        },
    }
    binding: Obj = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": meta(IDENTITY_POLICY),
        "spec": {
            "policyName": IDENTITY_POLICY,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchLabels": {ESTATE_LABEL: view.estate.name},
                    "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}],
                }
            },
        },
    }
    return [policy, binding]


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
            "metadata": meta("team-ingress", team.namespace, **{TEAM_LABEL: team.kubernetes_name}),
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


def registered_labels(view: ClusterView) -> list[Obj]:
    """The labels estategen gives each on-prem node, one Node per host holding labels only.

    kubelet registers a node with these labels and the pool's taints (Ansible); labels of
    running nodes change through the plan's ``label-nodes`` steps, which compare these. They
    are never applied (no kustomization lists them). They hold labels only: the GPU deploy
    labels mig-manager flips stay with kubelet (R2.8).
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
