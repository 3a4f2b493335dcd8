"""Volcano as a cluster's queue engine: its release, scheduler configuration and Queues.

The same ``queues.teams`` that become Kueue ClusterQueues become ``scheduling.volcano.sh/v1beta1``
Queues, counted in the units Kueue's flavours use (physical GPUs, MIG instances, or replicas of
shared GPUs), as Volcano v1.15.1 serves and schedules them
(``docs/kubernetes-upstream-requirements.md`` section 11, R12.1-R12.9).
"""

from __future__ import annotations

from dataclasses import dataclass

from estategen.kubernetes import kueue
from estategen.kubernetes.nvidia import config_text
from estategen.kubernetes.objects import TEAM_LABEL, ClusterView, Obj, meta
from estategen.model import QueueTeam, Team

API = "scheduling.volcano.sh/v1beta1"
CHART = "volcano"
REPOSITORY = "https://volcano-sh.github.io/helm-charts"
VERSION = "1.15.1"
NAMESPACE = "volcano-system"
SCHEDULER_NAME = "volcano"
# a PodGroup left in the default queue takes the queue its namespace names here (R12.4)
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# the chart's enabled_admissions (values.yaml at v1.15.1) plus /podgroups/mutate, the webhook
# that reads the namespace's queue annotation (R12.4), and /pods/mutate, which hands every pod
# of a team namespace to Volcano (R12.9)
ADMISSIONS = (
    "/jobs/mutate",
    "/jobs/validate",
    "/pods/mutate",
    "/podgroups/mutate",
    "/podgroups/validate",
    "/queues/mutate",
    "/queues/validate",
    "/hypernodes/validate",
    "/cronjobs/validate",
)


def uses_volcano(view: ClusterView) -> bool:
    queues = view.cluster.queues
    return queues is not None and queues.volcano


def scheduler_configuration(view: ClusterView) -> Obj:
    """The chart's volcano-scheduler.conf with reclaim and preemption added (R12.5-R12.7).

    ``gang`` admits a job only when all its pods fit, ``priority`` orders jobs by their
    PriorityClass, ``proportion`` divides the cluster among the queues by weight within each
    queue's capability and reclaims what a queue lent once its owner asks, ``drf`` orders jobs
    by dominant share, and ``predicates`` keeps GPU pods on nodes whose labels and taints admit
    them. GPUs stay NVIDIA device-plugin resources: ``deviceshare`` (Volcano's own GPU sharing)
    is not enabled.
    """
    return {
        "actions": "enqueue, allocate, preempt, reclaim, backfill",
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    {"name": "gang", "enablePreemptable": False},
                    {"name": "conformance"},
                ]
            },
            {
                "plugins": [
                    {"name": "overcommit"},
                    {"name": "drf", "enablePreemptable": False},
                    {
                        "name": "predicates",
                        "arguments": {
                            "predicate.NodeAffinityEnable": True,
                            "predicate.TaintTolerationEnable": True,
                        },
                    },
                    {"name": "proportion"},
                    {"name": "nodeorder"},
                    {"name": "binpack"},
                ]
            },
        ],
    }


@dataclass(frozen=True)
class Placement:
    """Where a team's pods may run in a Volcano cluster, and why.

    A Volcano Queue counts resources by name, and every whole-GPU model is ``nvidia.com/gpu``
    (a MIG profile under the mixed strategy has its own name): a queue's ``nvidia.com/gpu``
    is spent on whichever model's node its pods land on. Where a resource the team's quota
    counts is offered by more than one quota key of the cluster (``shared``), the team's pods
    must be kept to the nodes of the keys it names. The admission webhook can do that for a
    namespace: a resource group's ``labels`` are merged into each new pod's nodeSelector over
    the pod's own keys, and its ``tolerations`` appended (volcano v1.15.1
    ``pkg/webhooks/admission/pods/mutate/mutate_pod.go`` ``patchLabels``,
    ``patchTaintToleration``; ``pkg/webhooks/config/config.go`` ``ResGroupConfig``). A
    nodeSelector takes one value per label, so it selects one model (``labels``); its
    ``affinity`` could name several, but the webhook skips it for any pod with an affinity of
    its own (``patchAffinity``), and even then the queue would still count the models as one
    resource. So a team with quota on models of different node labels that share a resource
    cannot be kept to each model's quota: ``refused`` says why, and a check refuses the
    blueprint (Kueue, with one ResourceFlavor per model, can). One queue per model would
    need the ``nodegroup`` plugin (a Queue's ``affinity.nodeGroupAffinity`` over nodes
    labelled ``volcano.sh/nodegroup-name``, ``pkg/scheduler/plugins/nodegroup``) and every
    job to name its model's queue: the namespace's annotation names one queue for the pods
    that name none, so they would still spend one model's quota wherever they land.
    """

    labels: dict[str, str]
    tolerations: list[Obj]
    shared: dict[str, tuple[str, ...]]  # resource -> every quota key offering it
    refused: str | None = None


def placement(view: ClusterView, entry: QueueTeam) -> Placement:
    """Where a team's pods may run in this Volcano cluster (see :class:`Placement`)."""
    all_flavors = kueue.flavors(view)
    offering: dict[str, list[str]] = {}
    for flavor in all_flavors:
        offering.setdefault(flavor.resource, []).append(flavor.flavor.key)
    named = [f for f in all_flavors if f.flavor.key in entry.quota]
    shared = {
        f.resource: tuple(offering[f.resource]) for f in named if len(offering[f.resource]) > 1
    }
    if not shared:
        return Placement({}, [], {})  # the queue's resources are the named keys' alone
    label_sets = {tuple(sorted(f.node_labels.items())) for f in named}
    (labels, *others) = sorted(label_sets)
    selected = dict(labels)
    # quota keys offering a shared resource on the same nodes (one model's MIG profiles as
    # nvidia.com/gpu) cannot be told apart by node labels either
    alike = sorted(
        f.flavor.key
        for f in all_flavors
        if f.resource in shared and f.flavor.key not in entry.quota and f.node_labels == selected
    )
    if others or alike:
        keys = sorted(k for keys in shared.values() for k in keys)
        resources = ", ".join(sorted(shared))
        return Placement(
            {},
            [],
            shared,
            f"Volcano queues count {resources} without telling {', '.join(keys)} apart, and "
            "its admission webhook keeps a namespace's pods to one node selector: team "
            f"{entry.team}'s quota on {', '.join(sorted(entry.quota))} cannot be kept to each "
            f"model in cluster {view.cluster.name!r}; give the team quota on one GPU model of "
            "the cluster, or use engine: kueue (one ResourceFlavor per model)",
        )
    tolerations: list[Obj] = []
    for flavor in named:
        for toleration in kueue.flavor_tolerations(flavor):
            if toleration not in tolerations:
                tolerations.append(toleration)
    return Placement(selected, tolerations, shared)


def admission_configuration(view: ClusterView) -> Obj:
    """Pods in a team namespace get ``schedulerName: volcano`` from the pods webhook, so a plain
    Job or Deployment is queued too, not only jobs that name the scheduler (R12.9).

    A team whose queue counts a resource other teams' GPU models offer too gets a resource
    group of its own, listed first (the webhook patches a pod by the first group its
    namespace is in, ``createPatch``): its pods get the nodeSelector of the model its quota
    names and the tolerations of that model's pools (:class:`Placement`). Every pod of the
    namespace is kept there, those without GPUs too.
    """
    groups: list[Obj] = []
    shared_group: list[str] = []
    for team in view.estate.identity.teams:
        entry = kueue.queue_entry(view, team)
        if entry is None:
            continue
        where = placement(view, entry)
        if not where.labels:
            shared_group.append(team.namespace)
            continue
        group: Obj = {
            "resourceGroup": f"estategen-team-{team.kubernetes_name}",
            "object": {"key": "namespace", "value": [team.namespace]},
            "schedulerName": SCHEDULER_NAME,
            "labels": where.labels,
        }
        if where.tolerations:
            group["tolerations"] = where.tolerations
        groups.append(group)
    if shared_group:
        groups.append(
            {
                "resourceGroup": "estategen-teams",
                "object": {"key": "namespace", "value": shared_group},
                "schedulerName": SCHEDULER_NAME,
            }
        )
    return {"resourceGroups": groups}


def queued_namespaces(view: ClusterView) -> list[str]:
    """Namespaces of the teams with a queue on the cluster."""
    return [
        team.namespace
        for team in view.estate.identity.teams
        if kueue.queue_entry(view, team) is not None
    ]


def helm_values(view: ClusterView) -> Obj:
    return {
        "custom": {
            "scheduler_config_override": config_text(scheduler_configuration(view)),
            "admission_config_override": config_text(admission_configuration(view)),
            "enabled_admissions": ",".join(ADMISSIONS),
            # the chart's webhooks fail closed on every namespace but its own and kube-system:
            # kept to the team namespaces (as Kueue's), so while the admission Deployment is
            # down the other namespaces' pods (the NVIDIA components on a joining node) are
            # still created (templates/webhooks.yaml)
            "webhooks_namespace_selector_expressions": [{"key": TEAM_LABEL, "operator": "Exists"}],
        }
    }


def _per_resource(amounts: list[tuple[str, int]]) -> dict[str, str]:
    total: dict[str, int] = {}
    for resource, amount in amounts:
        total[resource] = total.get(resource, 0) + amount
    return {k: str(v) for k, v in sorted(total.items())}


def queues(view: ClusterView) -> list[Obj]:
    """A Queue per team: weight, deserved, capability and guarantee in Kueue's GPU units.

    ``deserved`` is the nominal quota; ``capability`` what the team's namespace may hold
    (nominal plus borrowing limit, the same number its ResourceQuota caps); ``guarantee`` the
    part of the nominal quota the team does not lend (nominal minus ``lending_limit``), which
    proportion keeps out of every other queue's reach; every queue is ``reclaimable``, so what
    it borrowed goes back when the lender needs it (Kueue's reclaimWithinCohort: Any).
    """
    if not uses_volcano(view):
        return []
    assert view.cluster.queues is not None
    all_flavors = kueue.flavors(view)
    teams = {t.name: t for t in view.estate.identity.teams}
    out: list[Obj] = []
    for entry in view.cluster.queues.teams:
        team = teams[entry.team]
        deserved: list[tuple[str, int]] = []
        capability: list[tuple[str, int]] = []
        guarantee: list[tuple[str, int]] = []
        for flavor in all_flavors:
            nominal = entry.quota.get(flavor.flavor.key, 0)
            factor = flavor.flavor.factor
            deserved.append((flavor.resource, nominal * factor))
            capability.append((flavor.resource, kueue.admissible(view, team, flavor)))
            if entry.lending_limit is not None:
                kept = nominal - min(entry.lending_limit, nominal)
                guarantee.append((flavor.resource, kept * factor))
        spec: Obj = {
            "weight": team.fairshare,
            "reclaimable": True,
            "deserved": _per_resource(deserved),
            "capability": _per_resource(capability),
        }
        if guarantee:
            spec["guarantee"] = {"resource": _per_resource(guarantee)}
        out.append(
            {
                "apiVersion": API,
                "kind": "Queue",
                "metadata": meta(team.kubernetes_name, **{TEAM_LABEL: team.kubernetes_name}),
                "spec": spec,
            }
        )
    return out


def namespace_annotations(view: ClusterView, team: Team) -> dict[str, str]:
    """The team's queue as its namespace's default, for pods that name none (R12.4)."""
    if uses_volcano(view) and team.namespace in queued_namespaces(view):
        return {QUEUE_ANNOTATION: team.kubernetes_name}
    return {}
