"""Building blocks shared by every family of Kubernetes objects.

Objects are plain dicts with the API's own field names, so they read like the manifests they
become; the writer and the Pulumi program take them as they are.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from estategen.model import Estate, KubernetesCluster, NodePool, QueueTeam, Team

Obj = dict[str, Any]

MANAGED_BY = {"app.kubernetes.io/managed-by": "estategen"}
# the server-side apply field manager of every apply estategen prescribes: the cluster README's
# kubectl apply, the Pulumi program's ClusterQueues and the plan's steps that change them by hand
FIELD_MANAGER = "estategen"
NVIDIA_NAMESPACE = "nvidia-gpu"
KUEUE_NAMESPACE = "kueue-system"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TEAM_LABEL = "estategen.io/team"
# the prefix of Pod Security admission's namespace labels (kubernetes.io "Pod Security Admission")
POD_SECURITY = "pod-security.kubernetes.io"


# Kinds whose deletion takes data or running work with it: a namespace deletes everything in
# it, a volume or claim the data behind it (a Delete reclaim policy). A GitOps engine that
# prunes what the folder no longer lists must leave them, so a removed team or file system
# is deleted by hand. Flux's kustomize-controller skips objects annotated (or labelled)
# kustomize.toolkit.fluxcd.io/prune: disabled (docs/spec/v1/kustomizations.md, "Prune", at
# v1.9.4); Argo CD skips those with the sync option Prune=false (docs/user-guide/
# sync-options.md, "No Prune Resources", at v3.5.1); the Pulumi program retains them.
KEPT_ON_PRUNE = frozenset({"Namespace", "PersistentVolume", "PersistentVolumeClaim"})
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
PRUNE_DISABLED = {FLUX_PRUNE: "disabled", ARGOCD_SYNC_OPTIONS: "Prune=false"}


def kept_on_prune(obj: Obj) -> Obj:
    """``obj`` with the annotations that keep it from a GitOps prune, when its kind is one of
    :data:`KEPT_ON_PRUNE`; otherwise ``obj`` unchanged."""
    if obj["kind"] not in KEPT_ON_PRUNE:
        return obj
    metadata = obj["metadata"]
    annotations = {**metadata.get("annotations", {}), **PRUNE_DISABLED}
    return {**obj, "metadata": {**metadata, "annotations": annotations}}


def meta(name: str, namespace: str | None = None, **labels: str) -> Obj:
    """``metadata`` with the managed-by label every object of ours carries."""
    out: Obj = {"name": name, "labels": {**MANAGED_BY, **labels}}
    if namespace:
        out["namespace"] = namespace
    return out


def require_node(key: str, operator: str = "Exists", values: Sequence[str] = ()) -> Obj:
    """Pod affinity to nodes with a label (of one of ``values``)."""
    expression: Obj = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


# the uid of the "nobody" user (Debian's base-passwd): a team with no members runs as it
NOBODY = 65534


def container_security_context() -> Obj:
    """What Pod Security's restricted level requires of each container of a team's pod
    (kubernetes.io "Pod Security Standards", Restricted: Privilege Escalation, Capabilities)."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def team_users(estate: Estate, team: Team) -> dict[int, str]:
    """The users a team's pods may run as, uid -> name: its members, as on the Slurm side, or
    ``nobody`` for a team with no members."""
    uids = {u.name: u.uid for u in estate.identity.users}
    members = {uids[m]: m for m in team.members if m in uids}
    return members or {NOBODY: "nobody"}


def team_uid(estate: Estate, team: Team) -> int:
    """The uid a team's example pods run as: its first member's, as a batch job runs as its
    user on the Slurm side; ``nobody`` for a team with no members."""
    return next(iter(team_users(estate, team)))


def pod_security_context(estate: Estate, team: Team) -> Obj:
    """A team pod's securityContext, which every Pod Security level admits (restricted: Running
    as Non-root, Running as Non-root user, Seccomp): the team's member and Unix group, as on
    the Slurm side. No ``fsGroup``: kubelet would change the group of every file of a volume
    whose driver lets it (csi-driver-nfs), the whole shared tree, on each mount."""
    return {
        "runAsNonRoot": True,
        "runAsUser": team_uid(estate, team),
        "runAsGroup": team.gid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def env(**values: str) -> list[Obj]:
    return [{"name": k, "value": v} for k, v in values.items()]


def field_env(name: str, field_path: str) -> Obj:
    """An env var the kubelet fills from the pod's own fields."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


NODE_NAME_ENV = field_env("NODE_NAME", "spec.nodeName")


def host_path(name: str, path: str, kind: str | None = None) -> Obj:
    host: Obj = {"path": path}
    if kind:
        host["type"] = kind
    return {"name": name, "hostPath": host}


def namespaced(obj: Obj) -> str | None:
    namespace: str | None = obj["metadata"].get("namespace")
    return namespace


def object_key(obj: Obj) -> str:
    """Kind, namespace and name, as Kubernetes itself keys objects; Pulumi's logical name."""
    parts = [obj["kind"].lower(), namespaced(obj), obj["metadata"]["name"]]
    return "-".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class HelmRelease:
    """A chart the cluster needs, pinned, with the values the generator computed."""

    name: str
    chart: str
    version: str
    namespace: str
    values: Obj
    repository: str | None = None
    create_namespace: bool = False
    # API groups of the CRDs the chart installs: objects of these groups wait for it
    provides: tuple[str, ...] = ()
    # Secrets the chart reads and does not create, made by the Pulumi program from its secret
    # config before the release (never written to the manifests: values are references)
    secrets: tuple[ReleaseSecret, ...] = ()


@dataclass(frozen=True, slots=True)
class ReleaseSecret:
    """A Secret in the release's namespace: each key's value is the Pulumi secret config of
    that name (``pulumi config set --secret NAME``), the blueprint's secret reference."""

    name: str
    keys: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class UpstreamManifest:
    """An operator its project publishes as one manifest and no Helm chart (the MPI Operator):
    applied from its URL at the pinned tag, server-side, as the project's README says."""

    name: str
    repository: str  # its GitHub repository, https
    version: str  # the tag
    path: str  # the manifest's path in the repository
    provides: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """The manifest's file at the tag, as GitHub serves it raw."""
        owner_name = self.repository.removeprefix("https://github.com/")
        return f"https://raw.githubusercontent.com/{owner_name}/{self.version}/{self.path}"

    @property
    def folder(self) -> str:
        """The manifest's folder, which a GitOps engine applies (it holds only the manifest)."""
        return posixpath.dirname(self.path)


@dataclass(frozen=True)
class ClusterView:
    """One Kubernetes cluster of an estate, with the pools that join it."""

    estate: Estate
    cluster: KubernetesCluster
    pools: tuple[NodePool, ...]

    @classmethod
    def of(cls, estate: Estate, cluster: KubernetesCluster) -> ClusterView:
        return cls(estate, cluster, tuple(estate.pools_in_cluster(cluster.name)))

    @cached_property
    def queue_of(self) -> Mapping[str, QueueTeam]:
        """Each team's queue in this cluster (the first the blueprint lists), by team name."""
        out: dict[str, QueueTeam] = {}
        for queue in self.cluster.queues.teams if self.cluster.queues else ():
            out.setdefault(queue.team, queue)
        return out

    @property
    def gpu_pools(self) -> list[NodePool]:
        return [p for p in self.pools if p.gpus]

    @property
    def plugin_pools(self) -> list[NodePool]:
        """GPU pools whose device plugin we run: GKE runs its own on its GPU nodes."""
        return [p for p in self.gpu_pools if p.provider != "gke"]

    @property
    def runs_device_plugin(self) -> bool:
        """The plain device-plugin install (not the GPU Operator) serves some pool."""
        return bool(self.plugin_pools) and self.cluster.device_plugin_install == "device-plugin"

    @property
    def runs_gpu_operator(self) -> bool:
        return bool(self.plugin_pools) and self.cluster.device_plugin_install == "gpu-operator"
