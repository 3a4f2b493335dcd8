"""Volcano as the queue engine, and the training frameworks, on rendered manifests.

Each test names the requirement it checks (R7.x for Volcano v1.15.1, R8.x for the frameworks,
``docs/kubernetes-upstream-requirements.md`` sections 11 and 12) and the upstream source at the
tag we pin. Custom resources are validated against the pinned CRDs in
``tests/upstream/`` with closed schemas and their CEL rules (``tests/crd.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_kubernetes_semantics as semantics
import yaml
from test_kubernetes_semantics import nodes, objects, one, rendered, values

from estategen.kubernetes import frameworks as k8s_frameworks
from estategen.kubernetes import kueue as k8s_kueue
from estategen.kubernetes import volcano as k8s_volcano
from estategen.kubernetes.objects import ClusterView

from crd import UPSTREAM, crd_set

Obj = dict[str, Any]
VOLCANO_CRDS = UPSTREAM / "volcano-v1.15.1"
# the keys a resource group of the admission webhook's configuration may have: the yaml
# fields of ResGroupConfig, volcano v1.15.1 pkg/webhooks/config/config.go lines 39-46
RESOURCE_GROUP_KEYS = {
    "resourceGroup",
    "object",
    "schedulerName",
    "tolerations",
    "labels",
    "affinity",
}

# One estate, two clusters: `hpc` runs Volcano over a MIG pool and a time-sliced pool,
# `ml` runs Kueue; both name every framework.
ESTATE = """\
estate: delta
versions: {slurm: "24.05", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}, {name: ben, uid: 11002}, {name: cy, uid: 11003}]
  teams:
    - {name: vision, gid: 21001, members: [ana], fairshare: 60}
    - {name: nlp, gid: 21002, members: [ben], fairshare: 40}
    - {name: ops, gid: 21003, members: [cy]}
node_pools:
  - name: h100-mig
    scheduler: kubernetes
    cluster: hpc
    hosts: hpc-mig-[01-02]
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gb: 1024
    gpus: {model: h100-sxm-80gb, count: 8, mig: ["3g.40gb", "3g.40gb"]}
    taints: [{key: dedicated, value: training, effect: NoSchedule}]
  - name: l40s
    scheduler: kubernetes
    cluster: hpc
    hosts: hpc-l40s-[01-02]
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
  - name: l4
    scheduler: kubernetes
    cluster: ml
    hosts: ml-[01-02]
    gpus: {model: l4-24gb, count: 2}
kubernetes:
  clusters:
    - name: hpc
      device_plugin: {mig_strategy: mixed}
      frameworks: [job, jobset, trainjob, mpijob, rayjob]
      queues:
        engine: volcano
        teams:
          - {team: vision, quota: {h100-sxm-80gb/3g.40gb: 20, l40s-48gb: 4}, borrowing_limit: 4}
          - {team: nlp, quota: {h100-sxm-80gb/3g.40gb: 12, l40s-48gb: 2}, lending_limit: 1}
    - name: ml
      frameworks: [job, jobset, trainjob, mpijob, rayjob]
      queues:
        cohort: ml
        teams:
          - {team: vision, quota: {l4-24gb: 2}}
          - {team: nlp, quota: {l4-24gb: 2}, lending_limit: 1}
"""
JOB_ONLY = ESTATE.replace(
    "frameworks: [job, jobset, trainjob, mpijob, rayjob]", "frameworks: [job]"
)


def releases(source: str, cluster: str) -> dict[str, Obj]:
    _, files = rendered(source)
    data = json.loads(files[f"pulumi/{cluster}/cluster.json"].content)
    return {r["name"]: r for r in data["releases"]}


def examples(source: str, cluster: str) -> dict[str, list[Obj]]:
    _, files = rendered(source)
    prefix = f"kubernetes/{cluster}/examples/"
    return {
        path[len(prefix) :]: [o for o in yaml.safe_load_all(f.content) if o]
        for path, f in files.items()
        if path.startswith(prefix)
    }


def scheduler_conf(source: str = ESTATE) -> Obj:
    text = values(source, "hpc", "volcano")["custom"]["scheduler_config_override"]
    conf: Obj = yaml.safe_load(text)
    return conf


def plugins(conf: Obj) -> dict[str, Obj]:
    return {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}


# --- one engine per cluster ----------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["hpc", "ml"])
def test_kubectl_kustomize_builds_the_volcano_and_kueue_clusters(
    cluster: str, tmp_path: Path
) -> None:
    """The examples sit in the folder kubectl builds, yet only the listed manifests build."""
    semantics.test_kubectl_kustomize_builds_exactly_the_rendered_objects(ESTATE, cluster, tmp_path)


def test_a_volcano_cluster_gets_volcano_and_no_kueue() -> None:
    """A cluster has one engine: Volcano's release and Queues, no Kueue objects or release."""
    hpc, ml = objects(ESTATE, "hpc"), objects(ESTATE, "ml")
    kinds = {o["kind"] for o in hpc}
    assert "Queue" in kinds
    assert not kinds & {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"}
    assert "volcano" in releases(ESTATE, "hpc") and "kueue" not in releases(ESTATE, "hpc")
    assert "kueue" in releases(ESTATE, "ml") and "volcano" not in releases(ESTATE, "ml")
    assert not [o for o in ml if o["apiVersion"].startswith("scheduling.volcano.sh")]
    _, files = rendered(ESTATE)
    assert "kubernetes/hpc/kueue.yaml" not in files
    assert "kubernetes/hpc/helm/kueue.values.yaml" not in files


def test_volcano_release_is_the_pinned_chart_from_volcanos_repository() -> None:
    """R12.1: `helm repo add volcano-sh https://volcano-sh.github.io/helm-charts; helm install
    volcano volcano-sh/volcano -n volcano-system` (README.md at v1.15.1, lines 143-144); the
    chart's version is 1.15.1 (installer/helm/chart/volcano/Chart.yaml)."""
    release = releases(ESTATE, "hpc")["volcano"]
    assert (release["chart"], release["version"]) == ("volcano", "1.15.1")
    assert release["repository"] == "https://volcano-sh.github.io/helm-charts"
    assert release["namespace"] == "volcano-system" and release["create_namespace"]
    assert {"scheduling.volcano.sh", "batch.volcano.sh"} <= set(release["provides"])


# --- Queues ----------------------------------------------------------------------------------


def queue(name: str, source: str = ESTATE) -> Obj:
    return one(objects(source, "hpc"), "Queue", name)


def test_every_queue_is_valid_against_the_pinned_crd_closed() -> None:
    """R12.2: scheduling.volcano.sh/v1beta1 Queue as Volcano v1.15.1 serves it (no unknown
    fields; weight within 1..65535), on create and as an update of itself."""
    crds = crd_set(VOLCANO_CRDS)
    queues = [o for o in objects(ESTATE, "hpc") if o["kind"] == "Queue"]
    assert {q["metadata"]["name"] for q in queues} == {"vision", "nlp"}
    for obj in queues:
        assert crds.validate(obj) == [], obj["metadata"]["name"]
        assert crds.validate(obj, obj) == []


def test_a_weight_above_the_crd_bound_is_what_the_check_refuses() -> None:
    """The CRD's maximum (65535) is the bound checks.queue_engine_keys enforces."""
    crds = crd_set(VOLCANO_CRDS)
    obj = queue("vision")
    schema = crds.find(obj["apiVersion"], "Queue").schema("v1beta1")
    weight = schema["properties"]["spec"]["properties"]["weight"]
    from estategen.checks import VOLCANO_MAX_WEIGHT

    assert weight["maximum"] == VOLCANO_MAX_WEIGHT
    heavy = {**obj, "spec": {**obj["spec"], "weight": VOLCANO_MAX_WEIGHT + 1}}
    assert crds.validate(heavy) != []


def test_queue_weight_is_the_teams_fairshare() -> None:
    """R12.5: proportion divides the cluster by Queue.spec.weight
    (pkg/scheduler/plugins/proportion/proportion.go 200-230)."""
    assert queue("vision")["spec"]["weight"] == 60
    assert queue("nlp")["spec"]["weight"] == 40


def test_queue_amounts_are_kueues_units_per_resource() -> None:
    """deserved is the nominal quota and capability nominal + borrowing limit, in the units
    Kueue counts (MIG instances; time-sliced GPUs times their replicas); without a borrowing
    limit the capability is the whole cluster's, as for the namespace's ResourceQuota."""
    mig, l40s = "nvidia.com/mig-3g.40gb", "nvidia.com/gpu"
    vision, nlp = queue("vision")["spec"], queue("nlp")["spec"]
    assert vision["deserved"] == {l40s: "8", mig: "20"}  # 4 GPUs x 2 replicas
    assert vision["capability"] == {l40s: "16", mig: "24"}  # 8 replicas in all; 20 + 4
    assert nlp["deserved"] == {l40s: "4", mig: "12"}
    assert nlp["capability"] == {l40s: "16", mig: "32"}  # no borrowing limit: the cluster
    estate, _ = rendered(ESTATE)
    view = ClusterView.of(estate, estate.kubernetes_clusters[0])
    units = {f.resource: 0 for f in k8s_kueue.flavors(view)}
    for f in k8s_kueue.flavors(view):
        units[f.resource] += f.flavor.units * f.flavor.factor
    assert units == {l40s: 16, mig: 32}
    (quota,) = [
        o
        for o in objects(ESTATE, "hpc")
        if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "vision"
    ]
    assert quota["spec"]["hard"] == {f"requests.{k}": v for k, v in vision["capability"].items()}


def test_deserved_never_exceeds_capability() -> None:
    """R12.3: the queue webhook refuses deserved > capability and guarantee > deserved per
    resource (pkg/webhooks/admission/queues/validate/validate_queue.go 227-293)."""
    for name in ("vision", "nlp"):
        spec = queue(name)["spec"]
        for resource, amount in spec["deserved"].items():
            assert int(amount) <= int(spec["capability"][resource])
        for resource, amount in spec.get("guarantee", {}).get("resource", {}).items():
            assert int(amount) <= int(spec["deserved"][resource])


def test_lending_limit_keeps_the_rest_of_the_quota_guaranteed_and_queues_reclaimable() -> None:
    """R12.6: proportion takes every queue's guarantee out of the others' real capability
    (proportion.go 96-138), so nominal - lending_limit is what the team never lends; a queue
    is reclaimable so what it borrowed goes back (pkg/scheduler/actions/reclaim/reclaim.go
    197)."""
    nlp, vision = queue("nlp")["spec"], queue("vision")["spec"]
    assert nlp["guarantee"] == {"resource": {"nvidia.com/gpu": "2", "nvidia.com/mig-3g.40gb": "11"}}
    assert "guarantee" not in vision  # no lending limit: all of its quota may be lent
    assert vision["reclaimable"] is True and nlp["reclaimable"] is True


# --- scheduler configuration -------------------------------------------------------------------


def reference_conf() -> Obj:
    conf: Obj = yaml.safe_load((VOLCANO_CRDS / "volcano-scheduler.conf").read_text())
    return conf


def test_scheduler_configuration_keeps_the_charts_plugins_and_adds_reclaim() -> None:
    """R12.5: the chart's volcano-scheduler.conf at v1.15.1 is the reference; we keep each of its
    plugins (gang, priority, drf, proportion, predicates, ...), and add the preempt and reclaim
    actions, without which a reclaimable queue is never reclaimed from."""
    ours, reference = scheduler_conf(), reference_conf()
    assert set(plugins(reference)) <= set(plugins(ours))
    assert {"gang", "priority", "proportion", "drf", "predicates"} <= set(plugins(ours))
    actions = [a.strip() for a in ours["actions"].split(",")]
    known = {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle",
             "gangpreempt", "gangreclaim"}  # fmt: skip  # pkg/scheduler/actions/ at v1.15.1
    assert set(actions) <= known
    assert actions[0] == "enqueue" and "reclaim" in actions and "preempt" in actions
    # each plugin once, in the tier the reference puts it
    for tier, reference_tier in zip(ours["tiers"], reference["tiers"], strict=True):
        names = [p["name"] for p in reference_tier["plugins"]]
        assert set(names) <= {p["name"] for p in tier["plugins"]}


def test_gpu_pods_are_placed_by_node_affinity_and_taints_not_by_volcanos_gpu_sharing() -> None:
    """R12.7: predicates' NodeAffinity and TaintToleration keep GPU pods on the pools their
    labels and tolerations admit (pkg/scheduler/plugins/predicates/predicates.go 61-146,
    arguments as booleans: pkg/scheduler/framework/arguments.go 82-98); deviceshare (Volcano's
    own GPU sharing, volcano.sh/gpu-memory) would count the NVIDIA plugin's GPUs twice."""
    found = plugins(scheduler_conf())
    arguments = found["predicates"]["arguments"]
    assert arguments["predicate.NodeAffinityEnable"] is True
    assert arguments["predicate.TaintTolerationEnable"] is True
    assert "deviceshare" not in found


def test_scheduler_configuration_reaches_the_chart_through_its_override_value() -> None:
    """R12.8: templates/scheduler.yaml writes custom.scheduler_config_override as
    volcano-scheduler.conf, or else the chart's file (lines 18-23 at v1.15.1)."""
    custom = values(ESTATE, "hpc", "volcano")["custom"]
    assert isinstance(custom["scheduler_config_override"], str)
    estate, _ = rendered(ESTATE)
    view = ClusterView.of(estate, estate.kubernetes_clusters[0])
    assert yaml.safe_load(custom["scheduler_config_override"]) == (
        k8s_volcano.scheduler_configuration(view)
    )


# --- the namespace's default queue -------------------------------------------------------------


def test_team_namespaces_name_their_queue_and_the_webhook_that_reads_it_is_on() -> None:
    """R12.4: the podgroups mutating webhook sets spec.queue of a PodGroup left in `default` from
    its namespace's scheduling.volcano.sh/queue-name annotation
    (pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go 104-124); the chart serves that
    webhook only when custom.enabled_admissions lists /podgroups/mutate, which its default does
    not (values.yaml, templates/admission.yaml 66)."""
    hpc = objects(ESTATE, "hpc")
    for team in ("vision", "nlp"):
        annotations = one(hpc, "Namespace", team)["metadata"]["annotations"]
        assert annotations[k8s_volcano.QUEUE_ANNOTATION] == team
    # ops has no queue in hpc: no annotation, and its ResourceQuota admits no GPU
    ops = one(hpc, "Namespace", "ops")["metadata"]["annotations"]
    assert k8s_volcano.QUEUE_ANNOTATION not in ops
    hard = next(
        o["spec"]["hard"]
        for o in hpc
        if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "ops"
    )
    assert set(hard.values()) == {"0"}
    admissions = values(ESTATE, "hpc", "volcano")["custom"]["enabled_admissions"].split(",")
    chart_default = [
        "/jobs/mutate",
        "/jobs/validate",
        "/podgroups/validate",
        "/queues/mutate",
        "/queues/validate",
        "/hypernodes/validate",
        "/cronjobs/validate",
    ]
    assert "/podgroups/mutate" in admissions and set(chart_default) <= set(admissions)
    # a Kueue cluster's namespaces carry no Volcano annotation
    for obj in objects(ESTATE, "ml"):
        if obj["kind"] == "Namespace":
            assert k8s_volcano.QUEUE_ANNOTATION not in obj["metadata"].get("annotations", {})


def test_every_pod_of_a_team_namespace_is_handed_to_volcano() -> None:
    """R12.9: the pods mutating webhook (/pods/mutate) patches spec.schedulerName for pods in a
    resource group's namespaces (pkg/webhooks/admission/pods/mutate/mutate_pod.go 107-157,
    namespace.go 33-41; config from custom.admission_config_override, templates/admission.yaml
    18-20), so a plain Job or Deployment of the team reaches the queue too."""
    custom = values(ESTATE, "hpc", "volcano")["custom"]
    assert "/pods/mutate" in custom["enabled_admissions"].split(",")
    (group,) = yaml.safe_load(custom["admission_config_override"])["resourceGroups"]
    assert group["object"] == {"key": "namespace", "value": ["vision", "nlp"]}  # not ops
    assert group["schedulerName"] == k8s_volcano.SCHEDULER_NAME
    assert set(group) == {"resourceGroup", "object", "schedulerName"}  # nothing else patched


# --- frameworks ----------------------------------------------------------------------------------


def kueue_config(cluster: str, source: str = ESTATE) -> Obj:
    text = values(source, cluster, "kueue")["managerConfig"]["controllerManagerConfigYaml"]
    config: Obj = yaml.safe_load(text)
    return config


def chart_frameworks() -> list[str]:
    chart = yaml.safe_load((UPSTREAM / "kueue-v0.19.2/values.yaml").read_text())
    config = yaml.safe_load(chart["managerConfig"]["controllerManagerConfigYaml"])
    names: list[str] = config["integrations"]["frameworks"]
    return names


def test_kueue_integrations_follow_the_frameworks_named() -> None:
    """R13.1: Kueue 0.19.2 knows these integration names (charts/kueue/values.yaml, the
    uncommented list); `job` keeps batch/job with pod, deployment, statefulset."""
    every = kueue_config("ml")["integrations"]["frameworks"]
    assert every == [
        "batch/job",
        "pod",
        "deployment",
        "statefulset",
        "jobset.x-k8s.io/jobset",
        "trainer.kubeflow.org/trainjob",
        "kubeflow.org/mpijob",
        "ray.io/rayjob",
    ]
    assert set(every) <= set(chart_frameworks())
    only_jobs = kueue_config("ml", JOB_ONLY)["integrations"]["frameworks"]
    assert only_jobs == ["batch/job", "pod", "deployment", "statefulset"]


@pytest.mark.parametrize("source", [ESTATE, JOB_ONLY], ids=["every-framework", "job-only"])
def test_kueue_requirements_hold_with_every_framework(source: str) -> None:
    """R5.1-R5.6 of the Kueue cluster still hold with the framework integrations added."""
    semantics.test_kueue_configuration_keeps_the_chart_defaults_and_names_only_its_fields(
        source, "ml"
    )
    semantics.test_kueue_fair_sharing_and_all_or_nothing_admission_are_on(source, "ml")


def test_operators_are_installed_pinned_and_only_for_the_frameworks_named() -> None:
    """R13.2-R13.5: JobSet 0.12.0 (site/content/en/docs/installation/_index.md 57 at v0.12.0),
    Kubeflow Trainer 2.3.0 (charts/kubeflow-trainer/README.md), KubeRay 1.7.0
    (helm-chart/kuberay-operator/README.md 30-33 at v1.7.0)."""
    for cluster in ("hpc", "ml"):
        found = releases(ESTATE, cluster)
        assert (found["jobset"]["chart"], found["jobset"]["version"]) == (
            "oci://registry.k8s.io/jobset/charts/jobset",
            "0.12.0",
        )
        trainer = found["kubeflow-trainer"]
        assert (trainer["chart"], trainer["version"]) == (
            "oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
            "2.3.0",
        )
        ray = found["kuberay-operator"]
        assert (ray["chart"], ray["version"], ray["repository"]) == (
            "kuberay-operator",
            "1.7.0",
            "https://ray-project.github.io/kuberay-helm/",
        )
        assert "jobset.x-k8s.io" in found["jobset"]["provides"]
    for cluster in ("hpc", "ml"):
        assert not {"jobset", "kubeflow-trainer", "kuberay-operator"} & set(
            releases(JOB_ONLY, cluster)
        )


def test_trainer_does_not_install_a_second_jobset_and_ships_the_example_runtime() -> None:
    """R13.4: charts/kubeflow-trainer/Chart.yaml at v2.3.0 depends on jobset 0.12.0 under
    condition jobset.install (values.yaml: true, 'must be set to false if jobset
    controller/webhook has already been installed'); runtimes.torchDistributed.enabled ships
    ClusterTrainingRuntime torch-distributed (files/runtimes/torch-distributed.yaml)."""
    trainer = values(ESTATE, "ml", "kubeflow-trainer")
    assert trainer["jobset"] == {"install": False}
    assert trainer["runtimes"]["torchDistributed"]["enabled"] is True
    assert k8s_frameworks.JOBSET_VERSION == "0.12.0"  # the version the trainer chart depends on


def test_kuberay_uses_volcano_for_gang_scheduling_on_a_volcano_cluster() -> None:
    """R13.6: batchScheduler.name selects the batch scheduler the operator creates PodGroups for
    (helm-chart/kuberay-operator/values.yaml 96-102 at v1.7.0)."""
    assert values(ESTATE, "hpc", "kuberay-operator") == {"batchScheduler": {"name": "volcano"}}
    assert values(ESTATE, "ml", "kuberay-operator") == {}


# --- examples --------------------------------------------------------------------------------


def test_examples_are_written_beside_the_manifests_but_never_applied() -> None:
    _, files = rendered(ESTATE)
    for cluster in ("hpc", "ml"):
        kustomization = yaml.safe_load(files[f"kubernetes/{cluster}/kustomization.yaml"].content)
        assert not [r for r in kustomization["resources"] if "examples" in r]
        assert set(examples(ESTATE, cluster)) == {"vision.yaml", "nlp.yaml"}
    assert examples(JOB_ONLY, "ml") == {}


@pytest.mark.parametrize(
    ("kind", "folder"),
    [("JobSet", "jobset-v0.12.0"), ("TrainJob", "trainer-v2.3.0")],
)
def test_kueue_examples_carry_the_queue_label_and_are_valid_with_cel(
    kind: str, folder: str
) -> None:
    """R13.7: Kueue finds a job's LocalQueue by the kueue.x-k8s.io/queue-name label; a job
    created suspended is started by Kueue on admission. Valid against the pinned CRD, closed,
    with its CEL rules."""
    crds = crd_set(UPSTREAM / folder)
    for team, jobs in examples(ESTATE, "ml").items():
        (job,) = [j for j in jobs if j["kind"] == kind]
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == Path(team).stem
        assert job["metadata"]["namespace"] == Path(team).stem
        assert job["spec"]["suspend"] is True
        assert crds.validate(job) == [], (team, crds.validate(job))


def test_volcano_examples_name_the_queue_and_the_matching_job_plugins() -> None:
    """R13.8: Volcano runs TrainJob-, MPIJob- and RayJob-style training as batch.volcano.sh Jobs
    with its pytorch, mpi and ray job plugins (pkg/controllers/job/plugins/factory.go at v1.15.1),
    with svc (and ssh for mpi) as the job webhook adds them (mutate_job.go 235-266); a JobSet's
    pods name the scheduler and the queue. Jobs are valid against the pinned Job CRD."""
    crds = crd_set(VOLCANO_CRDS)
    jobset_crds = crd_set(UPSTREAM / "jobset-v0.12.0")
    for team, jobs in examples(ESTATE, "hpc").items():
        name = Path(team).stem
        by_kind: dict[str, Obj] = {}
        for job in jobs:
            if job["kind"] == "Job":
                by_kind[job["metadata"]["name"].removeprefix(f"{name}-")] = job
                assert job["spec"]["queue"] == name and job["spec"]["schedulerName"] == "volcano"
                assert crds.validate(job) == [], crds.validate(job)
            else:
                assert job["kind"] == "JobSet"
                pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
                assert pod["spec"]["schedulerName"] == "volcano"
                assert pod["metadata"]["annotations"][k8s_volcano.QUEUE_ANNOTATION] == name
                assert jobset_crds.validate(job) == []
        assert set(by_kind["trainjob-example"]["spec"]["plugins"]) == {"pytorch", "svc"}
        assert set(by_kind["mpijob-example"]["spec"]["plugins"]) == {"mpi", "ssh", "svc"}
        assert set(by_kind["rayjob-example"]["spec"]["plugins"]) == {"ray", "svc"}
        roles = {t["name"] for t in by_kind["rayjob-example"]["spec"]["tasks"]}
        assert roles == {"head", "worker"}
        # no Kueue to add its flavour's tolerations: the pods tolerate the MIG pool's taint
        training = {"key": "dedicated", "operator": "Equal", "value": "training"}
        for task in by_kind["mpijob-example"]["spec"]["tasks"]:
            pod = task["template"]["spec"]
            (requested,) = pod["containers"][0]["resources"]["limits"]
            expected = [{**training, "effect": "NoSchedule"}] if "mig" in requested else None
            assert pod.get("tolerations") == expected, (name, requested)


# --- Argo Workflows ------------------------------------------------------------------------------

ARGO = UPSTREAM / "argo-workflows-1.0.18"
EVERY = "frameworks: [job, jobset, trainjob, mpijob, rayjob]"
WORKFLOWS = ESTATE.replace(EVERY, "frameworks: [job, jobset, trainjob, mpijob, rayjob, workflow]")
# without `job`, nothing else turns on Kueue's pod integration
JOBSET_ONLY = ESTATE.replace(EVERY, "frameworks: [jobset]")
JOBSET_WORKFLOW = ESTATE.replace(EVERY, "frameworks: [jobset, workflow]")


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """A label selector's matchLabels and Exists/DoesNotExist/In/NotIn expressions."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        value = labels.get(key)
        held = {
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
            "In": value in expression.get("values", []),
            "NotIn": value not in expression.get("values", []),
        }[operator]
        if not held:
            return False
    return True


def test_kueue_queues_argo_workflow_pods_through_the_pod_integration_exactly_when_named() -> None:
    """Kueue 0.19.2 has no Argo Workflows integration: it queues a Workflow's pods as plain
    pods (site/content/en/docs/tasks/run/external_workloads/argo_workflow.md), so `workflow`
    turns Kueue's `pod` integration on, once (`job` names it too), and nothing else does. The
    pod webhook then gates a pod only in a namespace that managedJobsNamespaceSelector selects
    (pkg/controller/jobs/pod/pod_webhook.go PodWebhook.Default), and the chart's webhooks take
    their namespaceSelector from the same key of the manager configuration
    (charts/kueue/templates/webhook/manifests.yaml): the team namespaces, not the NVIDIA one,
    kube-system or Kueue's own, whose pods must never wait for a queue."""
    assert kueue_config("ml", JOBSET_ONLY)["integrations"]["frameworks"] == [
        "jobset.x-k8s.io/jobset"
    ]
    config = kueue_config("ml", JOBSET_WORKFLOW)
    assert config["integrations"]["frameworks"] == ["jobset.x-k8s.io/jobset", "pod"]
    every = kueue_config("ml", WORKFLOWS)["integrations"]["frameworks"]
    assert every.count("pod") == 1
    assert set(every) <= set(chart_frameworks())
    selector = config["managedJobsNamespaceSelector"]
    estate, _ = rendered(JOBSET_WORKFLOW)
    teams = {t.namespace for t in estate.identity.teams}
    namespaces = {
        o["metadata"]["name"]: o["metadata"]["labels"]
        for o in objects(JOBSET_WORKFLOW, "ml")
        if o["kind"] == "Namespace"
    }
    namespaces.update({n: {} for n in ("kube-system", "kueue-system", "default")})
    assert {n for n, labels in namespaces.items() if selects(selector, labels)} == teams


def test_argo_workflows_is_installed_from_its_own_chart_pinned_and_listed_in_the_readme() -> None:
    """Argo Workflows' chart `argo-workflows` 1.0.18 (argoproj/argo-helm, tag
    argo-workflows-1.0.18, charts/argo-workflows/Chart.yaml: appVersion v4.0.6), from the
    repository https://argoproj.github.io/argo-helm; the objects of its CRD group (argoproj.io)
    wait for the release. Only where a cluster names `workflow`."""
    _, files = rendered(WORKFLOWS)
    _, without = rendered(ESTATE)
    for cluster in ("hpc", "ml"):
        release = releases(WORKFLOWS, cluster)["argo-workflows"]
        pinned = (release["chart"], release["version"], release["repository"])
        assert pinned == ("argo-workflows", "1.0.18", "https://argoproj.github.io/argo-helm")
        assert (release["namespace"], release["provides"]) == ("argo", ["argoproj.io"])
        readme = files[f"kubernetes/{cluster}/README.md"].content.decode()
        assert (
            "helm upgrade --install argo-workflows argo-workflows --repo "
            "https://argoproj.github.io/argo-helm --version 1.0.18 --namespace argo "
            "--create-namespace -f helm/argo-workflows.values.yaml"
        ) in readme
        assert f"kubernetes/{cluster}/helm/argo-workflows.values.yaml" in files
        assert "argo-workflows" not in releases(ESTATE, cluster)
        assert "argo" not in without[f"kubernetes/{cluster}/README.md"].content.decode()


def test_argo_workflows_runs_its_controller_alone_with_values_the_chart_knows() -> None:
    """charts/argo-workflows/values.yaml at 1.0.18 (vendored): `server.enabled` (true by
    default) deploys the Argo Server, UI and API: off, nothing is exposed. `createAggregateRoles`
    (true) adds Argo's kinds to every edit, admin and view role of the cluster
    (templates/controller/workflow-aggregate-roles.yaml): off, teams get them from
    estategen-team-jobs, in their own namespaces. `workflow.rbac.create` (true) makes the
    executor's Role in the release namespace and `controller.workflowNamespaces`
    (templates/controller/workflow-role.yaml): off, estategen renders it in each team
    namespace. `executor.securityContext` is what the controller gives the `init` and `wait`
    containers of every workflow pod (argo-workflows v4.0.6 workflow/controller/workflowpod.go
    newExecContainer, standardInitContainer, newWaitContainer): Pod Security's restricted
    level asks each container for no privilege escalation and no capabilities."""
    chart = yaml.safe_load((ARGO / "values.yaml").read_text())

    def known(ours: Obj, theirs: Obj, path: str) -> None:
        for key, value in ours.items():
            assert key in theirs, f"{path}{key} is not a value of the chart"
            if isinstance(value, dict) and theirs[key]:
                known(value, theirs[key], f"{path}{key}.")

    for cluster in ("hpc", "ml"):
        ours = values(WORKFLOWS, cluster, "argo-workflows")
        known(ours, chart, "")
        assert (chart["server"]["enabled"], ours["server"]["enabled"]) == (True, False)
        assert (chart["createAggregateRoles"], ours["createAggregateRoles"]) == (True, False)
        assert chart["workflow"]["rbac"]["create"] is True
        assert ours["workflow"]["rbac"]["create"] is False
        assert chart["executor"]["securityContext"] == {}
        executor = ours["executor"]["securityContext"]
        assert executor["allowPrivilegeEscalation"] is False
        assert "ALL" in executor["capabilities"]["drop"]


def test_each_teams_example_workflow_reaches_its_queue_and_is_valid_against_the_crd() -> None:
    """Argo copies a Workflow's `spec.podMetadata` onto every pod it creates, and its
    `spec.schedulerName` and `spec.tolerations` into each pod's spec (argo-workflows v4.0.6
    workflow/controller/workflowpod.go addMetadata, addSchedulingConstraints). Kueue: the pod
    webhook gates a pod carrying the queue label until its Workload is admitted to the named
    LocalQueue (kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook.go PodWebhook.Default; the
    Argo Workflow page's "single LocalQueue" example). Volcano: its PodGroup controller gives a
    pod that names the volcano scheduler and has no PodGroup one of its own, in the queue the
    pod's `scheduling.volcano.sh/queue-name` annotation names (volcano v1.15.1
    pkg/controllers/podgroup/pg_controller.go processNextReq, pg_controller_handler.go
    buildPodGroupFromPod). The GPU step asks for the GPU the team's JobSet example asks for,
    with the same tolerations, and the Workflow is valid against the chart's full Workflow
    CRD, closed, with its CEL rules, on create and as an update of itself."""
    crds = crd_set(ARGO)
    for cluster in ("hpc", "ml"):
        queues = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
            for o in objects(WORKFLOWS, cluster)
            if o["kind"] in ("LocalQueue", "Queue")
        }
        for team, jobs in examples(WORKFLOWS, cluster).items():
            name = Path(team).stem
            (workflow,) = [j for j in jobs if j["kind"] == "Workflow"]
            (jobset,) = [j for j in jobs if j["kind"] == "JobSet"]
            spec = workflow["spec"]
            assert workflow["metadata"]["namespace"] == name
            if cluster == "ml":
                queue = spec["podMetadata"]["labels"]["kueue.x-k8s.io/queue-name"]
                assert ("LocalQueue", name, queue) in queues
                assert "schedulerName" not in spec
            else:
                assert spec["schedulerName"] == "volcano"
                queue = spec["podMetadata"]["annotations"]["scheduling.volcano.sh/queue-name"]
                assert ("Queue", None, queue) in queues
            assert queue == name
            (step,) = spec["templates"]
            assert step["name"] == spec["entrypoint"]
            pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
            limits = step["container"]["resources"]["limits"]
            assert limits == pod["containers"][0]["resources"]["limits"]
            assert spec.get("tolerations") == pod.get("tolerations")
            assert crds.validate(workflow) == [], crds.validate(workflow)
            assert crds.validate(workflow, workflow) == []
        assert not [
            j
            for js in examples(ESTATE, cluster).values()
            for j in js
            if "argoproj" in j["apiVersion"]
        ]


# --- the Pulumi program applies the same ---------------------------------------------------------


def test_pulumi_program_registers_the_queues_releases_and_the_mpi_operator(
    tmp_path: Path,
) -> None:
    """The program registers every rendered object, each release, and the MPI Operator's
    manifest at its pinned tag (it has no chart: README.md 21 at v0.8.0)."""
    from test_pulumi import rendered as render_to
    from test_pulumi import run_project

    folder = render_to(ESTATE, tmp_path)
    for cluster in ("hpc", "ml"):
        run = run_project(folder / "pulumi" / cluster)
        registered = {
            (r.kind, r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"])
            for r in run.kubernetes_objects()
            if "metadata" in r.inputs  # not the MPI Operator's ConfigFile
        }
        expected = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
            for o in objects(ESTATE, cluster)
        }  # fmt: skip
        assert registered == expected
        names = {r.inputs["name"] for r in run.by_kind["Release"]}
        assert names == set(releases(ESTATE, cluster))
        (mpi,) = run.by_kind["ConfigFile"]
        assert mpi.inputs["file"] == (
            "https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/"
            "mpi-operator.yaml"
        )
    _, files = rendered(ESTATE)
    assert "kubectl apply --server-side -f https://raw.githubusercontent.com/kubeflow/" in (
        files["kubernetes/hpc/README.md"].content.decode()
    )
    _, job_only = rendered(JOB_ONLY)
    assert "upstream_manifests" not in json.loads(job_only["pulumi/ml/cluster.json"].content)
    assert "mpi-operator" not in job_only["kubernetes/ml/README.md"].content.decode()


# --- plan ----------------------------------------------------------------------------------------


def test_plan_explains_queue_and_example_changes_and_a_new_operator(tmp_path: Path) -> None:
    """A team's weight is a live Queue update; examples change nothing on the cluster; a newly
    named framework adds its operator (a release, or the MPI Operator's pinned manifest)."""
    from estategen import load, pipeline
    from estategen.plan.compare import plan
    from estategen.render import render
    from estategen.write import with_manifest, write_tree

    def estate_of(text: str) -> Any:
        return pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate

    before = JOB_ONLY
    write_tree(with_manifest(render(estate_of(before)), before.encode(), "delta"), tmp_path)
    after = ESTATE.replace("fairshare: 60", "fairshare: 70")
    result = plan(estate_of(after), render(estate_of(after)), tmp_path)
    by_subject = {c.subject: c for f in result.files for c in f.changes}
    assert by_subject["Queue vision"].kind == "volcano-quota"
    assert "Queue nlp" not in by_subject
    assert by_subject["hpc examples for vision"].kind == "kubernetes-examples"
    assert by_subject["upstream_manifests"].kind == "kubernetes-components"
    assert by_subject["Helm release jobset"].kind == "kubernetes-components"


def test_the_estate_picture_names_volcano_queues_not_a_cohort() -> None:
    """The report's picture shows a Volcano cluster's queues as Volcano Queues, with no cohort."""
    from estategen.report import facts as report
    from estategen.report.picture import picture

    estate, _ = rendered(ESTATE)
    drawn = picture(report.build(estate))
    frames = {f.label for f in drawn.frames if f.label.startswith("cluster")}
    assert "cluster hpc · volcano queues" in frames and "cluster ml · cohort ml" in frames
    titles = {b.title.split("\n")[0] for b in drawn.boxes if b.kind == "queue"}
    assert {"Volcano Queue vision", "ClusterQueue vision in cohort ml"} <= titles


# --- a team's GPUs stay on the models its quota names ---------------------------------------

# Two whole-GPU models in one Volcano cluster: both are nvidia.com/gpu to a Volcano Queue.
TWO_MODELS = """\
estate: echo
versions: {kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}, {name: ben, uid: 11002}]
  teams:
    - {name: vision, gid: 21001, members: [ana]}
    - {name: nlp, gid: 21002, members: [ben]}
node_pools:
  - name: l4
    scheduler: kubernetes
    cluster: hpc
    hosts: hpc-l4-[01-02]
    gpus: {model: l4-24gb, count: 4}
    taints: [{key: gpu-model, value: l4, effect: NoSchedule}]
  - name: l40s
    scheduler: kubernetes
    cluster: hpc
    hosts: hpc-l40s-[01-02]
    gpus: {model: l40s-48gb, count: 4}
kubernetes:
  clusters:
    - name: hpc
      queues:
        engine: volcano
        teams:
          - {team: vision, quota: {l4-24gb: 4}}
          - {team: nlp, quota: {NLP_QUOTA}}
"""


def admission_groups(source: str) -> list[Obj]:
    custom = values(source, "hpc", "volcano")["custom"]
    groups: list[Obj] = yaml.safe_load(custom["admission_config_override"])["resourceGroups"]
    return groups


def test_a_team_with_quota_on_one_model_gets_pods_only_on_that_models_nodes() -> None:
    """A Volcano Queue counts `nvidia.com/gpu` whatever model serves it (its deserved and
    capability are resource lists, scheduling.volcano.sh_queues.yaml), so a team with quota
    on L4s could spend it on the untainted L40S nodes. The pods webhook patches the pods of
    the first resource group whose `object` lists their namespace (volcano v1.15.1
    pkg/webhooks/admission/pods/mutate/mutate_pod.go createPatch, namespace.go
    IsBelongResGroup): it merges the group's `labels` into the pod's nodeSelector over the
    pod's own keys (patchLabels) and appends its `tolerations` (patchTaintToleration). So the
    L4 team's namespace has a group of its own, first, selecting the nodes labelled L4 only,
    with the L4 pool's taint tolerated; the keys are ResGroupConfig's yaml fields
    (pkg/webhooks/config/config.go)."""
    source = TWO_MODELS.replace("NLP_QUOTA", "l40s-48gb: 8")
    groups = admission_groups(source)
    first = next(g for g in groups if "vision" in g["object"]["value"])
    assert first["object"] == {"key": "namespace", "value": ["vision"]}
    assert first["schedulerName"] == k8s_volcano.SCHEDULER_NAME
    selected = {
        o["metadata"]["name"]
        for o in nodes(source, "hpc")
        if first["labels"].items() <= o["metadata"]["labels"].items()
    }
    assert selected == {"hpc-l4-01", "hpc-l4-02"}
    assert first["tolerations"] == [
        {"key": "gpu-model", "operator": "Equal", "value": "l4", "effect": "NoSchedule"}
    ]
    nlp = next(g for g in groups if "nlp" in g["object"]["value"])
    assert nlp["labels"] == {"estategen.io/gpu-model": "l40s-48gb", "estategen.io/mig": "false"}
    assert "tolerations" not in nlp  # the L40S pool has no taints
    # every namespace is in one group, so the first match is the team's own
    listed = [ns for g in groups for ns in g["object"]["value"]]
    assert sorted(listed) == ["nlp", "vision"]
    assert {key for g in groups for key in g} <= RESOURCE_GROUP_KEYS


def test_a_team_whose_quota_names_every_model_of_its_resource_is_not_pinned() -> None:
    """Where the team's quota keys are the only ones offering the resources its queue counts
    (the MIG profile and the time-sliced L40S of ESTATE's hpc cluster), the queue already
    keeps it to them: its namespace stays in the one group that sets only the scheduler."""
    assert admission_groups(ESTATE) == [
        {
            "resourceGroup": "estategen-teams",
            "object": {"key": "namespace", "value": ["vision", "nlp"]},
            "schedulerName": k8s_volcano.SCHEDULER_NAME,
        }
    ]


def test_quota_on_two_models_that_a_volcano_queue_counts_as_one_resource_is_refused() -> None:
    """A nodeSelector takes one value per label, the webhook's `affinity` is skipped for a
    pod with an affinity of its own (mutate_pod.go patchAffinity), and the queue would count
    4 L4 and 8 L40S as 12 `nvidia.com/gpu` of either model anyway: Volcano cannot keep such a
    quota to each model, so validation refuses it and says what to do."""
    from estategen import pipeline
    from estategen.errors import BlueprintInvalid

    source = TWO_MODELS.replace("NLP_QUOTA", "l4-24gb: 4, l40s-48gb: 8")  # within capacity
    document = semantics.load.parse_blueprint(source.encode(), "blueprint.yaml")
    with pytest.raises(BlueprintInvalid) as refused:
        pipeline.validate_document(document)
    messages = [f.message for f in refused.value.findings]
    assert len(messages) == 1, messages  # only this: the quotas fit the cluster
    assert "nvidia.com/gpu" in messages[0] and "engine: kueue" in messages[0]
    assert "team nlp" in messages[0]


def test_volcanos_webhooks_hold_only_the_team_namespaces_pods() -> None:
    """volcano v1.15.1 installer/helm/chart/volcano/templates/webhooks.yaml: every namespaced
    webhook, the pods webhook we enable included, has failurePolicy Fail and a
    namespaceSelector that leaves out only the release's namespace and kube-system, plus
    ``custom.webhooks_namespace_selector_expressions``. Without them, while the admission
    Deployment is down no pod of any other namespace (the NVIDIA components on a node that
    joins) could be created; with them the webhooks see the team namespaces only, as Kueue's
    do (managedJobsNamespaceSelector)."""
    expressions = values(ESTATE, "hpc", "volcano")["custom"][
        "webhooks_namespace_selector_expressions"
    ]
    selector = {"matchExpressions": expressions}
    namespaces = {
        o["metadata"]["name"]: o["metadata"].get("labels", {})
        for o in objects(ESTATE, "hpc")
        if o["kind"] == "Namespace"
    }
    assert semantics.NVIDIA_NAMESPACE in namespaces
    teams = {n for n, labels in namespaces.items() if "estategen.io/team" in labels}
    assert teams
    for name, labels in {**namespaces, "default": {}, "volcano-system": {}}.items():
        assert selects(selector, labels) == (name in teams), name
