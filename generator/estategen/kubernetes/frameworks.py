"""Training frameworks: what each queue engine admits, the operators, and example jobs.

``kubernetes.clusters[].frameworks`` names the kinds a cluster runs. Each becomes Kueue's
``integrations.frameworks`` entries (or, under Volcano, the job plugins that run it), the pinned
operator release that serves its CRD, and per team an example job in
``kubernetes/<cluster>/examples/`` that shows how to reach the team's queue; the examples are
not in the kustomization, so nothing applies them (section 13, R13.1-R13.11).
"""

from __future__ import annotations

from estategen.kubernetes import kueue, volcano
from estategen.kubernetes.objects import (
    TEAM_LABEL,
    ClusterView,
    HelmRelease,
    Obj,
    UpstreamManifest,
    container_security_context,
    meta,
    pod_security_context,
)
from estategen.model import Team

# Volcano v1.15.1's job plugins (pkg/controllers/job/plugins/factory.go) that run a framework
# as a batch.volcano.sh Job; svc (and ssh for MPI) as the job webhook would add them
VOLCANO_PLUGINS: dict[str, dict[str, list[str]]] = {
    "trainjob": {"pytorch": [], "svc": []},
    "mpijob": {"mpi": [], "ssh": [], "svc": []},
    "rayjob": {"ray": [], "svc": []},
}
# the roles each plugin expects its tasks to be named (their --master/--head/--worker defaults)
_PLUGIN_TASKS = {
    "pytorch": ("master", "worker"),
    "mpi": ("master", "worker"),
    "ray": ("head", "worker"),
}

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
EXAMPLE_IMAGE = "nvcr.io/nvidia/pytorch:25.08-py3"

JOBSET_CHART = "oci://registry.k8s.io/jobset/charts/jobset"
JOBSET_VERSION = "0.12.0"
TRAINER_CHART = "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
TRAINER_VERSION = "2.3.0"
TRAINER_RUNTIME = "torch-distributed"
# the runtime's one replicated job and its trainer container (the chart's
# files/runtimes/torch-distributed.yaml at v2.3.0), which a TrainJob's runtimePatches name
TRAINER_NODE = "node"
# who owns the example's runtime patch (RuntimePatch.manager, required)
PATCH_MANAGER = "estategen.io/example"
KUBERAY_REPOSITORY = "https://ray-project.github.io/kuberay-helm/"
KUBERAY_VERSION = "1.7.0"
KUBERAY_NAMESPACE = "kuberay-system"
# the Ray head's dashboard port: KubeRay's RayJob controller submits and follows a job through
# it, from the operator's pod (ray-operator/controllers/ray/rayjob_controller.go GetJobInfo,
# utils/constant.go DefaultDashboardPort, v1.7.0)
RAY_DASHBOARD_PORT = 8265
# Argo Workflows from its own chart (argoproj/argo-helm, tag argo-workflows-1.0.18, app v4.0.6)
ARGO_REPOSITORY = "https://argoproj.github.io/argo-helm"
ARGO_CHART = "argo-workflows"
ARGO_VERSION = "1.0.18"
ARGO_NAMESPACE = "argo"
ARGO_API = "argoproj.io/v1alpha1"
# the service account a team's Workflows run their pods as (the chart's own default name,
# workflow.serviceAccount.name), and the Role the Argo executor needs with it: create and patch
# the WorkflowTaskResults it reports each step's outputs in (docs/workflow-rbac.md at v4.0.6)
WORKFLOW_ACCOUNT = "argo-workflow"
EXECUTOR_ROLE = "argo-workflow-executor"
MPI_OPERATOR_VERSION = "v0.8.0"
MPI_OPERATOR_REPOSITORY = "https://github.com/kubeflow/mpi-operator"
MPI_OPERATOR_MANIFEST = "deploy/v2beta1/mpi-operator.yaml"


def releases(view: ClusterView) -> list[HelmRelease]:
    """The operators of the frameworks named, pinned; none for ``job`` (built into Kubernetes)."""
    named = set(view.cluster.frameworks)
    on_volcano = volcano.uses_volcano(view)
    out: list[HelmRelease] = []
    if "jobset" in named:
        out.append(
            HelmRelease(
                "jobset",
                JOBSET_CHART,
                JOBSET_VERSION,
                "jobset-system",
                {},
                create_namespace=True,
                provides=("jobset.x-k8s.io",),
            )
        )
    if "trainjob" in named:
        # JobSet is its own release above (checks require it listed): the chart must not
        # install a second copy, and the example runtime comes with the chart (R13.4)
        out.append(
            HelmRelease(
                "kubeflow-trainer",
                TRAINER_CHART,
                TRAINER_VERSION,
                "kubeflow-system",
                {"jobset": {"install": False}, "runtimes": {"torchDistributed": {"enabled": True}}},
                create_namespace=True,
                provides=("trainer.kubeflow.org",),
            )
        )
    if "rayjob" in named:
        values: Obj = {"batchScheduler": {"name": volcano.SCHEDULER_NAME}} if on_volcano else {}
        out.append(
            HelmRelease(
                "kuberay-operator",
                "kuberay-operator",
                KUBERAY_VERSION,
                KUBERAY_NAMESPACE,
                values,
                repository=KUBERAY_REPOSITORY,
                create_namespace=True,
                provides=("ray.io",),
            )
        )
    if "workflow" in named:
        out.append(
            HelmRelease(
                "argo-workflows",
                ARGO_CHART,
                ARGO_VERSION,
                ARGO_NAMESPACE,
                argo_values(),
                repository=ARGO_REPOSITORY,
                create_namespace=True,
                provides=("argoproj.io",),
            )
        )
    return out


def argo_values() -> Obj:
    """The Argo Workflows chart's values (charts/argo-workflows/values.yaml at 1.0.18).

    The controller only: no Argo Server (``server.enabled``), so no UI or API is exposed; teams
    submit Workflows with kubectl, or the argo CLI against the Kubernetes API. The controller
    watches every namespace (the chart's one alternative, ``singleNamespace``, confines it to
    its own), and teams create Workflows only in their namespaces, through
    ``estategen-team-jobs``: the chart's aggregated roles, which would add Argo's kinds to
    every ``edit`` and ``admin`` binding of the cluster, are off (``createAggregateRoles``). The
    executor's service account and Role in each team namespace are ours
    (:func:`workflow_accounts`), so the chart makes none (``workflow.rbac.create``). The
    executor's own containers (``init``, ``wait``) get the securityContext Pod Security's
    restricted level asks of each container (the controller gives them
    ``executor.securityContext``: workflow/controller/workflowpod.go newExecContainer at
    v4.0.6); the pod-level fields come from the Workflow's ``spec.securityContext``. Setting it
    makes the chart write the executor's pull policy too, ``images.pullPolicy`` (Always) unless
    ``executor.image.pullPolicy`` says otherwise
    (templates/controller/workflow-controller-config-map.yaml): the pinned executor image is
    pulled only when missing, not for every step.
    """
    return {
        "createAggregateRoles": False,
        "server": {"enabled": False},
        "workflow": {"rbac": {"create": False}},
        "executor": {
            "image": {"pullPolicy": "IfNotPresent"},
            "securityContext": container_security_context(),
        },
    }


def workflow_accounts(view: ClusterView) -> list[Obj]:
    """Per team namespace on a cluster that runs ``workflow``: the service account its
    Workflows run as, and the Role that lets Argo's executor report each step's results."""
    if "workflow" not in view.cluster.frameworks:
        return []
    out: list[Obj] = []
    for team in view.estate.identity.teams:
        labels = {TEAM_LABEL: team.kubernetes_name}
        out += [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": meta(WORKFLOW_ACCOUNT, team.namespace, **labels),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta(EXECUTOR_ROLE, team.namespace, **labels),
                "rules": [
                    {
                        "apiGroups": ["argoproj.io"],
                        "resources": ["workflowtaskresults"],
                        "verbs": ["create", "patch"],
                    }
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta(EXECUTOR_ROLE, team.namespace, **labels),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": EXECUTOR_ROLE,
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": WORKFLOW_ACCOUNT,
                        "namespace": team.namespace,
                    }
                ],
            },
        ]
    return out


def upstream_manifests(view: ClusterView) -> list[UpstreamManifest]:
    """The MPI Operator has no Helm chart (v0.8.0 installs with ``kubectl apply --server-side
    -f deploy/v2beta1/mpi-operator.yaml``, README.md 21): its manifest at the pinned tag."""
    if "mpijob" not in view.cluster.frameworks:
        return []
    return [
        UpstreamManifest(
            "mpi-operator",
            MPI_OPERATOR_REPOSITORY,
            MPI_OPERATOR_VERSION,
            MPI_OPERATOR_MANIFEST,
            ("kubeflow.org",),
        )
    ]


def examples(view: ClusterView) -> dict[str, list[Obj]]:
    """Example jobs per team with a queue, by file name under ``examples/``."""
    queues = view.cluster.queues
    if queues is None:
        return {}
    teams = {t.name: t for t in view.estate.identity.teams}
    all_flavors = kueue.flavors(view)
    out: dict[str, list[Obj]] = {}
    for entry in queues.teams:
        team = teams[entry.team]
        keyed = [f for f in all_flavors if entry.quota.get(f.flavor.key, 0) > 0]
        flavor = (keyed or all_flavors)[0] if all_flavors else None
        resource = flavor.resource if flavor else None
        # Kueue adds its flavour's tolerations on admission; under Volcano the pod carries them
        tolerations = kueue.flavor_tolerations(flavor) if flavor and queues.volcano else []
        found: list[Obj] = []
        if "jobset" in view.cluster.frameworks:
            pod = _pod(view, team, resource, tolerations, "Never")
            found.append(_jobset(view, team, pod))
        if "trainjob" in view.cluster.frameworks and not queues.volcano:
            found.append(_trainjob(view, team, resource))
        if "workflow" in view.cluster.frameworks:
            found.append(_workflow(view, team, resource, tolerations))
        if queues.volcano:
            for kind, plugins in VOLCANO_PLUGINS.items():
                if kind in view.cluster.frameworks:
                    pod = _pod(view, team, resource, tolerations, "OnFailure")
                    found.append(_volcano_job(team, kind, plugins, pod))
        if found:
            out[f"examples/{team.name}.yaml"] = found
    return out


def _limits(resource: str | None) -> Obj:
    return {"limits": {resource: "1"}} if resource else {}


def _container(resource: str | None) -> Obj:
    out: Obj = {"name": "train", "image": EXAMPLE_IMAGE, "command": ["nvidia-smi"]}
    limits = _limits(resource)
    if limits:
        out["resources"] = limits
    out["securityContext"] = container_security_context()
    return out


def _pod(
    view: ClusterView, team: Team, resource: str | None, tolerations: list[Obj], restart: str
) -> Obj:
    """The example's pod, which its namespace's Pod Security level admits."""
    pod: Obj = {
        "restartPolicy": restart,
        "securityContext": pod_security_context(view.estate, team),
        "containers": [_container(resource)],
    }
    if tolerations:
        pod["tolerations"] = tolerations
    return pod


def _queue_metadata(view: ClusterView, name: str, team: Team) -> Obj:
    """Kueue reads the queue label on the job; Volcano the annotation on its pods."""
    metadata = meta(name, team.namespace)
    if not volcano.uses_volcano(view):
        metadata["labels"][QUEUE_LABEL] = team.kubernetes_name
    return metadata


def _jobset(view: ClusterView, team: Team, pod: Obj) -> Obj:
    template: Obj = {"spec": pod}
    if volcano.uses_volcano(view):
        pod["schedulerName"] = volcano.SCHEDULER_NAME
        template["metadata"] = {"annotations": {volcano.QUEUE_ANNOTATION: team.kubernetes_name}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _queue_metadata(view, f"{team.kubernetes_name}-jobset-example", team),
        "spec": {
            "suspend": not volcano.uses_volcano(view),
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "backoffLimit": 0,
                            "template": template,
                        }
                    },
                }
            ],
        },
    }


def _trainjob(view: ClusterView, team: Team, resource: str | None) -> Obj:
    metadata = meta(f"{team.kubernetes_name}-trainjob-example", team.namespace)
    metadata["labels"][QUEUE_LABEL] = team.kubernetes_name
    trainer: Obj = {"numNodes": 2, "image": EXAMPLE_IMAGE, "command": ["nvidia-smi"]}
    limits = _limits(resource)
    if limits:
        trainer["resourcesPerNode"] = limits
    # the runtime's pods set no securityContext: the TrainJob patches it in, as Trainer merges
    # runtimePatches into the runtime's JobSet (pkg/runtime/core/trainingruntime.go,
    # mergeRuntimePatches, v2.3.0), so its namespace's Pod Security level admits them
    pod: Obj = {
        "securityContext": pod_security_context(view.estate, team),
        "containers": [{"name": TRAINER_NODE, "securityContext": container_security_context()}],
    }
    patch: Obj = {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": TRAINER_NODE, "template": {"spec": {"template": {"spec": pod}}}}
                    ]
                }
            }
        },
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": metadata,
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": TRAINER_RUNTIME},
            "trainer": trainer,
            "runtimePatches": [patch],
        },
    }


def _workflow(view: ClusterView, team: Team, resource: str | None, tolerations: list[Obj]) -> Obj:
    """An Argo Workflow of one GPU step. Kueue queues each step's pod as a plain pod by the queue
    label ``spec.podMetadata`` puts on it; under Volcano the pods name the scheduler and carry
    the queue annotation, which the PodGroup Volcano makes for a pod of its own reads. Argo
    copies both onto every pod it creates (workflow/controller/workflowpod.go addMetadata,
    addSchedulingConstraints at v4.0.6)."""
    container = _container(resource)
    del container["name"]  # Argo names a container template's container "main"
    spec: Obj = {"entrypoint": "train", "serviceAccountName": WORKFLOW_ACCOUNT}
    if volcano.uses_volcano(view):
        spec["schedulerName"] = volcano.SCHEDULER_NAME
        spec["podMetadata"] = {"annotations": {volcano.QUEUE_ANNOTATION: team.kubernetes_name}}
    else:
        spec["podMetadata"] = {"labels": {QUEUE_LABEL: team.kubernetes_name}}
    spec["securityContext"] = pod_security_context(view.estate, team)
    if tolerations:
        spec["tolerations"] = tolerations
    spec["templates"] = [{"name": "train", "container": container}]
    return {
        "apiVersion": ARGO_API,
        "kind": "Workflow",
        "metadata": meta(f"{team.kubernetes_name}-workflow-example", team.namespace),
        "spec": spec,
    }


def _volcano_job(team: Team, kind: str, plugins: dict[str, list[str]], pod: Obj) -> Obj:
    framework = next(p for p in plugins if p in _PLUGIN_TASKS)
    tasks = [
        {"name": role, "replicas": 1 if index == 0 else 2, "template": {"spec": pod}}
        for index, role in enumerate(_PLUGIN_TASKS[framework])
    ]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta(f"{team.kubernetes_name}-{kind}-example", team.namespace),
        "spec": {
            "schedulerName": volcano.SCHEDULER_NAME,
            "queue": team.kubernetes_name,
            "minAvailable": 3,
            "plugins": {name: list(args) for name, args in plugins.items()},
            "tasks": tasks,
        },
    }
