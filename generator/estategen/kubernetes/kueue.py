"""Kueue: its manager configuration, ResourceFlavors, a Topology, queues and priority classes.

Objects are ``kueue.x-k8s.io/v1beta2`` as served by the pinned release (0.19.2); the manager
Configuration is ``config.kueue.x-k8s.io/v1beta2`` (``docs/kubernetes-upstream-requirements.md``
section 5, R5.1-R5.13).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from estategen.facts import mig_instances_per_gpu
from estategen.kubernetes.nvidia import config_text, mig_resource
from estategen.kubernetes.objects import (
    FIELD_MANAGER,
    HOSTNAME_LABEL,
    TEAM_LABEL,
    ClusterView,
    Obj,
    meta,
)
from estategen.kubernetes_facts import (
    MIG_LABEL,
    MODEL_LABEL,
    SWITCH_LABEL,
    Flavor,
    cluster_flavors,
    node_allocatable,
)
from estategen.model import KubernetesCluster, NodePool, QueueTeam, Team

KUEUE_API = "kueue.x-k8s.io/v1beta2"

# Kueue 0.19.2's integration names (charts/kueue/values.yaml); `job` keeps what every cluster
# had: batch Jobs plus plain pods, Deployments and StatefulSets in team namespaces. Kueue has
# no Argo Workflows integration: it queues a Workflow's step pods as plain pods
# (site/content/en/docs/tasks/run/external_workloads/argo_workflow.md at v0.19.2)
KUEUE_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "job": ("batch/job", "pod", "deployment", "statefulset"),
    "jobset": ("jobset.x-k8s.io/jobset",),
    "trainjob": ("trainer.kubeflow.org/trainjob",),
    "mpijob": ("kubeflow.org/mpijob",),
    "rayjob": ("ray.io/rayjob",),
    "workflow": ("pod",),
}


def kueue_frameworks(cluster: KubernetesCluster) -> list[str]:
    """Kueue's ``integrations.frameworks`` for the kinds the cluster runs, in schema order,
    each once (``job`` and ``workflow`` both need ``pod``)."""
    names = [name for kind in KUEUE_FRAMEWORKS if kind in cluster.frameworks for name in
             KUEUE_FRAMEWORKS[kind]]  # fmt: skip
    return list(dict.fromkeys(names))


CHART = "oci://registry.k8s.io/kueue/charts/kueue"
VERSION = "0.19.2"
TOPOLOGY = "network"
# The Pulumi program applies a ClusterQueue as the same field manager as the cluster README's
# kubectl apply and the plan's take-out of a replaced flavor (pulumi-kubernetes
# provider.go fieldManagerName: the annotation before the random pulumi-kubernetes-<id> kept in
# state), and forces, so fields a stack's earlier random manager still holds move over
# instead of conflicting (resourceGroups is an atomic list: one owner for all of it).
PULUMI_APPLY = {"pulumi.com/patchFieldManager": FIELD_MANAGER, "pulumi.com/patchForce": "true"}
# how long an admitted workload's pods have to all be ready before Kueue evicts it, frees its
# quota and requeues it (queues.pods_ready_timeout); Kueue's own default is 30m
PODS_READY_TIMEOUT = "10m"


@dataclass(frozen=True)
class KueueFlavor:
    """A flavour as Kueue sees it: the resource it is scheduled by and its pools."""

    flavor: Flavor
    resource: str
    pools: tuple[NodePool, ...]

    @property
    def name(self) -> str:
        return self.flavor.name

    def _per_unit(self, amount: str) -> int | None:
        """CPU (millicores) or memory (MiB) that come with one unit: a node's allocatable
        (what its pods can have, less than its capacity) shared by its units; None when
        unknown."""
        shares: list[int] = []
        for pool in self.pools:
            allocatable = node_allocatable(pool)
            if allocatable is None or pool.gpus is None:
                return None
            value = allocatable.cpu_millis if amount == "cpu" else allocatable.memory_mib
            shares.append(value // (pool.gpus.count * mig_instances_per_gpu(pool)))
        return min(shares)

    @cached_property
    def cpu_millis(self) -> int | None:
        """Millicores that come with one unit (asked for each team's queue)."""
        return self._per_unit("cpu")

    @cached_property
    def memory_mib(self) -> int | None:
        """MiB of memory that come with one unit."""
        return self._per_unit("memory")

    @property
    def topology(self) -> bool:
        return all(p.switches for p in self.pools)

    @property
    def node_labels(self) -> dict[str, str]:
        """The node labels (kubernetes_facts.node_labels sets them) that select the flavour's
        nodes."""
        return {
            MODEL_LABEL: self.flavor.model,
            MIG_LABEL: str(self.flavor.profile is not None).lower(),
        }


def flavors(view: ClusterView) -> list[KueueFlavor]:
    pools = {p.name: p for p in view.pools}
    out = []
    for flavor in cluster_flavors(view.estate, view.cluster.name):
        members = tuple(pools[name] for name in flavor.pools)
        first = members[0]
        assert first.gpus is not None
        resource = (
            mig_resource(view, first, flavor.profile)
            if flavor.profile
            else view.estate.gpu_models[first.gpus.model].resource
        )
        out.append(KueueFlavor(flavor, resource, members))
    return out


def covers_cpu_and_memory(all_flavors: Sequence[KueueFlavor]) -> bool:
    """Queues cover CPU and memory too when every pool says how much comes with a GPU."""
    return all(f.cpu_millis is not None and f.memory_mib is not None for f in all_flavors)


def queue_entry(view: ClusterView, team: Team) -> QueueTeam | None:
    return view.queue_of.get(team.name)


def admissible(view: ClusterView, team: Team, flavor: KueueFlavor) -> int:
    """Devices Kueue can admit for a team on a flavor: nominal quota plus what it may borrow."""
    units, factor = flavor.flavor.units, flavor.flavor.factor
    if view.cluster.queues is None:
        return units * factor
    entry = queue_entry(view, team)
    if entry is None:
        return 0
    nominal = int(entry.quota.get(flavor.flavor.key, 0))
    borrow = entry.borrowing_limit
    ceiling = units if borrow is None else min(units, nominal + borrow)
    return max(nominal, ceiling) * factor


def quota_hard(view: ClusterView, team: Team, all_flavors: Sequence[KueueFlavor]) -> dict[str, str]:
    """ResourceQuota hard limits: a namespace can hold what its queue can admit, no more."""
    hard: dict[str, int] = {}
    for flavor in all_flavors:
        key = f"requests.{flavor.resource}"
        hard[key] = hard.get(key, 0) + admissible(view, team, flavor)
    return {k: str(v) for k, v in sorted(hard.items())}


def manager_configuration(view: ClusterView) -> Obj:
    """Kueue's whole manager Configuration: the chart's defaults (R5.1) and the estate's.

    v1beta2 turns features on by their presence, with no ``enable`` keys (R5.2).
    """
    all_flavors = flavors(view)
    config: Obj = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # quota and usage per ClusterQueue, which the estate's Kueue rules read
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        # pods and their owners are queued only in team namespaces (R5.6)
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]
        },
        "integrations": {"frameworks": kueue_frameworks(view.cluster)},
        # all-or-nothing without stalling other teams (R5.4): a workload whose pods are not
        # all ready within the timeout gives its quota back and is requeued with a backoff;
        # admission is never blocked, which would hold every ClusterQueue of the cluster while
        # any one workload waits for its pods (or for nodes to boot)
        "waitForPodsReady": {
            "timeout": pods_ready_timeout(view),
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 3600,
            },
        },
        # the ClusterQueues' weights come from the teams' fairshare (R5.3, R5.12)
        "fairSharing": {
            "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        },
    }
    if not covers_cpu_and_memory(all_flavors):
        # queues hold GPUs only: Kueue must not leave a pod pending for its cpu (R5.5)
        config["resources"] = {"excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage"]}
    return config


def pods_ready_timeout(view: ClusterView) -> str:
    """How long an admitted workload's pods have to all be ready: the queues' own, else 10m."""
    queues = view.cluster.queues
    return (queues.pods_ready_timeout if queues else None) or PODS_READY_TIMEOUT


def helm_values(view: ClusterView) -> Obj:
    text = config_text(manager_configuration(view))
    values: Obj = {"managerConfig": {"controllerManagerConfigYaml": text}}
    if view.cluster.prometheus_operator:
        # the chart's ServiceMonitor, so the Prometheus operator scrapes Kueue's metrics
        values["enablePrometheus"] = True
    return values


def objects(view: ClusterView) -> list[Obj]:
    """ResourceFlavors, a Topology, ClusterQueues, LocalQueues, WorkloadPriorityClasses."""
    queues = view.cluster.queues
    if queues is None or queues.volcano:
        return []
    all_flavors = flavors(view)
    teams = {t.name: t for t in view.estate.identity.teams}
    out: list[Obj] = []
    if any(f.topology for f in all_flavors):
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "Topology",
                "metadata": meta(TOPOLOGY),
                "spec": {"levels": [{"nodeLabel": SWITCH_LABEL}, {"nodeLabel": HOSTNAME_LABEL}]},
            }
        )
    for flavor in all_flavors:
        spec: Obj = {"nodeLabels": flavor.node_labels}
        tolerations = flavor_tolerations(flavor)
        if tolerations:
            spec["tolerations"] = tolerations
        if flavor.topology:
            spec["topologyName"] = TOPOLOGY
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ResourceFlavor",
                "metadata": meta(flavor.name),
                "spec": spec,
            }
        )
    with_cpu = covers_cpu_and_memory(all_flavors)
    covered = (["cpu", "memory"] if with_cpu else []) + sorted({f.resource for f in all_flavors})
    for entry in queues.teams:
        team = teams[entry.team]
        metadata = meta(team.kubernetes_name, **{TEAM_LABEL: team.kubernetes_name})
        metadata["annotations"] = dict(PULUMI_APPLY)
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": metadata,
                "spec": {
                    "cohortName": queues.cohort,
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": team.namespace}
                    },
                    "queueingStrategy": "BestEffortFIFO",
                    "fairSharing": {"weight": team.fairshare},
                    "preemption": {
                        "reclaimWithinCohort": "Any",
                        "borrowWithinCohort": {"policy": "LowerPriority"},
                        "withinClusterQueue": "LowerPriority",
                    },
                    "resourceGroups": [
                        {
                            "coveredResources": covered,
                            "flavors": [
                                {"name": f.name, "resources": _quotas(entry, f, covered)}
                                for f in all_flavors
                            ],
                        }
                    ],
                },
            }
        )
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": meta(
                    team.kubernetes_name, team.namespace, **{TEAM_LABEL: team.kubernetes_name}
                ),
                "spec": {"clusterQueue": team.kubernetes_name},
            }
        )
    for pc in view.cluster.priority_classes:
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "WorkloadPriorityClass",
                "metadata": meta(pc.name),
                "value": pc.value,
                "description": pc.description or f"{pc.name} (estate {view.estate.name})",
            }
        )
    return out


def flavor_tolerations(flavor: KueueFlavor) -> list[Obj]:
    out: list[Obj] = []
    for pool in flavor.pools:
        for taint in pool.taints:
            toleration: Obj = {"key": taint.key, "effect": taint.effect}
            if taint.value:
                toleration.update(operator="Equal", value=taint.value)
            else:
                toleration["operator"] = "Exists"
            if toleration not in out:
                out.append(toleration)
    return out


def _quotas(entry: QueueTeam, flavor: KueueFlavor, covered: Sequence[str]) -> list[Obj]:
    """One flavor's quotas in coveredResources order (Kueue requires every resource listed)."""
    units = entry.quota.get(flavor.flavor.key, 0)
    borrow, lend = entry.borrowing_limit, entry.lending_limit
    cpu, memory = flavor.cpu_millis, flavor.memory_mib

    def quota(name: str, per_unit: int, suffix: str = "") -> Obj:
        out: Obj = {"name": name, "nominalQuota": f"{units * per_unit}{suffix}"}
        if borrow is not None:
            out["borrowingLimit"] = f"{borrow * per_unit}{suffix}"
        if lend is not None:
            out["lendingLimit"] = f"{min(lend, units) * per_unit}{suffix}"
        return out

    out = []
    for name in covered:
        if name == "cpu":
            out.append(quota("cpu", cpu or 0, "m"))
        elif name == "memory":
            out.append(quota("memory", memory or 0, "Mi"))
        elif name == flavor.resource:
            out.append(quota(name, flavor.flavor.factor))
        else:
            out.append({"name": name, "nominalQuota": "0"})
    return out
