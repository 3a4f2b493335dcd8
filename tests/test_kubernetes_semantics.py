"""What upstream components need from our objects, beyond what any schema checks.

Each test names the requirement it checks (R-numbers of docs/kubernetes-upstream-requirements.md)
and the upstream source it comes from, at the tag we pin. The objects are read from the rendered
``kubernetes/<cluster>/`` manifests, as kubectl, Argo CD or the Pulumi program read them; no
Pulumi here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import kubernetes_facts, load, pipeline
from estategen.kubernetes import slinky
from estategen.kubernetes import storage as k8s_storage
from estategen.model import Estate
from estategen.output import Files
from estategen.render import render

import helm
from conftest import BLUEPRINTS
from crd import UPSTREAM
from k8s_harness import MESA

Obj = dict[str, Any]
NVIDIA_NAMESPACE = "nvidia-gpu"


@cache
def rendered(source: str) -> tuple[Estate, Files]:
    text = (BLUEPRINTS / source).read_text() if source.endswith(".yaml") else source
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    estate = pipeline.validate_document(document).estate
    return estate, render(estate)


def objects(source: str, cluster: str) -> list[Obj]:
    """The cluster's objects in the order its kustomization lists their files."""
    _, files = rendered(source)
    base = f"kubernetes/{cluster}"
    kustomization = yaml.safe_load(files[f"{base}/kustomization.yaml"].content)
    return [
        obj
        for name in kustomization["resources"]
        for obj in yaml.safe_load_all(files[f"{base}/{name}"].content)
        if obj
    ]


def installed(source: str, cluster: str) -> list[Obj]:
    """The cluster's objects and what NVIDIA's device plugin chart installs with the rendered
    values, where the cluster runs it."""
    _, files = rendered(source)
    charts = [
        obj
        for release in helm.releases_of(files, cluster)
        if release == "nvidia-device-plugin"
        for obj in helm.installed(files, cluster, release)
    ]
    return objects(source, cluster) + charts


def nodes(source: str, cluster: str) -> list[Obj]:
    """The labels each on-prem node registers with (``nodes.yaml``, which no kustomization
    lists)."""
    _, files = rendered(source)
    found = files.get(f"kubernetes/{cluster}/nodes.yaml")
    return [obj for obj in yaml.safe_load_all(found.content) if obj] if found else []


def one(objs: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def values(source: str, cluster: str, release: str) -> Obj:
    _, files = rendered(source)
    data: Obj = yaml.safe_load(files[f"kubernetes/{cluster}/helm/{release}.values.yaml"].content)
    return data


def container(daemonset: Obj, name: str) -> Obj:
    spec = daemonset["spec"]["template"]["spec"]
    (found,) = [c for c in spec["containers"] if c["name"] == name]
    return found


def env_of(item: Obj) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in item.get("env", [])}


CLUSTERS = [
    ("lab.yaml", "lab-k8s"),
    ("campus.yaml", "serving"),
    ("campus.yaml", "burst"),
    (MESA, "onprem"),
    (MESA, "operator"),
    (MESA, "aws"),
    (MESA, "gcp"),
]
IDS = ["lab-k8s", "serving", "burst", "onprem", "operator", "aws", "gcp"]
# the frontier estate's clusters: every seed system at once
FRONTIER = [("frontier.yaml", c) for c in ("train", "serve", "gcp", "aws", "azure")]
CLUSTERS += FRONTIER
IDS += [f"frontier-{c}" for _, c in FRONTIER]
# the clusters Kueue queues (frontier's `train` runs Volcano: tests/test_kubernetes_volcano.py)
KUEUE_CLUSTERS = [c for c in CLUSTERS if c != ("frontier.yaml", "train")]
KUEUE_IDS = [i for i in IDS if i != "frontier-train"]
WITH_PLUGIN = [(MESA, "onprem"), ("campus.yaml", "serving"), ("lab.yaml", "lab-k8s")]


# --- the manifests are a kustomization kubectl builds ----------------------------------------


@pytest.mark.parametrize(("source", "cluster"), CLUSTERS, ids=IDS)
def test_kubectl_kustomize_builds_exactly_the_rendered_objects(
    source: str, cluster: str, tmp_path: Path
) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian kubernetes-client) is missing: run scripts/test.sh"
    _, files = rendered(source)
    for path, output in files.items():
        if path.startswith(f"kubernetes/{cluster}/"):
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(output.content)
    built = subprocess.run(
        [kubectl, "kustomize", str(tmp_path / "kubernetes" / cluster)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    keys = Counter(
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in yaml.safe_load_all(built.stdout)
        if o
    )
    expected = Counter(
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in objects(source, cluster)
    )
    assert keys == expected and set(keys.values()) == {1}


# --- NVIDIA: mig-manager's pause protocol (mig-parted v0.15.0) --------------------------------


@pytest.mark.parametrize(("source", "cluster"), WITH_PLUGIN, ids=["onprem", "serving", "lab"])
def test_gpu_daemonsets_run_only_where_mig_manager_has_not_paused_them(
    source: str, cluster: str
) -> None:
    """R2.6: mig-manager sets nvidia.com/gpu.deploy.<component> to paused-for-mig-change and
    waits for the pods to go (pkg/mig/reconfigure/reconfigure.go); each DaemonSet selects
    `true`, and kubelet registers every GPU node of the plain install with them set. The
    device plugin chart has one nodeSelector for its three DaemonSets, so GFD and the MPS
    daemon go with the device plugin."""
    objs = installed(source, cluster)
    plugin = "nvidia.com/gpu.deploy.device-plugin"
    expected = {
        "nvidia-device-plugin": plugin,
        "nvidia-device-plugin-gpu-feature-discovery": plugin,
        "nvidia-device-plugin-mps-control-daemon": plugin,
        "dcgm-exporter": "nvidia.com/gpu.deploy.dcgm-exporter",
    }
    daemonsets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "DaemonSet"}
    for name, label in expected.items():
        spec = daemonsets[name]["spec"]["template"]["spec"]
        assert spec["nodeSelector"][label] == "true", name
    estate, _ = rendered(source)
    for pool in estate.pools_in_cluster(cluster):
        if pool.gpus and pool.provider == "on-prem":
            registered = kubernetes_facts.registration_labels(estate, pool)
            assert all(registered[label] == "true" for label in expected.values()), pool.name


@pytest.mark.parametrize(("source", "cluster"), WITH_PLUGIN, ids=["onprem", "serving", "lab"])
def test_mig_manager_finds_the_gpu_pods_it_waits_for(source: str, cluster: str) -> None:
    """R2.7: it waits for pods labelled app=nvidia-device-plugin-daemonset,
    app=gpu-feature-discovery and app=nvidia-dcgm-exporter in DEFAULT_GPU_CLIENTS_NAMESPACE
    (reconfigure.go 389-428). The device plugin chart's three DaemonSets share one selector
    (deployments/helm/nvidia-device-plugin/templates/_helpers.tpl `selectorLabels`), so all
    three carry the device plugin's app label, and mig-manager waits for each of them."""
    objs = installed(source, cluster)
    plugin = "nvidia-device-plugin-daemonset"
    apps = {
        "nvidia-device-plugin": plugin,
        "nvidia-device-plugin-gpu-feature-discovery": plugin,
        "dcgm-exporter": "nvidia-dcgm-exporter",
    }
    for name, app in apps.items():
        daemonset = one(objs, "DaemonSet", name)
        assert daemonset["spec"]["template"]["metadata"]["labels"]["app"] == app
        assert daemonset["metadata"]["namespace"] == NVIDIA_NAMESPACE
    managers = [
        o
        for o in objs
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-mig-manager"
    ]
    for manager in managers:
        env = env_of(container(manager, "nvidia-mig-manager"))
        assert env["DEFAULT_GPU_CLIENTS_NAMESPACE"] == NVIDIA_NAMESPACE
        # R2.11: POD_NAME and POD_NAMESPACE from the pod's own fields
        assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
        # R2.12: the generated-config path writes a ConfigMap
        rules = one(objs, "ClusterRole", "nvidia-mig-manager")["rules"]
        assert any("configmaps" in r["resources"] and "create" in r["verbs"] for r in rules)
    assert managers or cluster != "onprem"


def test_node_label_records_hold_no_taints_and_no_deploy_labels() -> None:
    """R2.8: mig-manager flips the deploy labels at run time, so the label-nodes steps may
    never set them; taints reach nodes at registration and through the taint-nodes steps."""
    for source, cluster in WITH_PLUGIN:
        assert nodes(source, cluster)
        for node in nodes(source, cluster):
            assert set(node) == {"apiVersion", "kind", "metadata"}
            assert not [k for k in node["metadata"]["labels"] if "gpu.deploy" in k]


@pytest.mark.parametrize(("source", "cluster"), WITH_PLUGIN, ids=["onprem", "serving", "lab"])
def test_every_config_a_node_label_names_exists(source: str, cluster: str) -> None:
    """R1.16, R2.4: the config-manager and mig-manager fail on a label naming a missing config
    (cmd/config-manager/main.go 335-393, cmd/nvidia-mig-manager/main.go 556-588)."""
    estate, _ = rendered(source)
    objs = installed(source, cluster)
    plugin = one(objs, "ConfigMap", "nvidia-device-plugin-configs")["data"]
    migs = [o for o in objs if o["kind"] == "ConfigMap" and "mig-parted" in o["metadata"]["name"]]
    layouts = yaml.safe_load(migs[0]["data"]["config.yaml"])["mig-configs"] if migs else {}
    for pool in estate.pools_in_cluster(cluster):
        labels = kubernetes_facts.registration_labels(estate, pool)
        if kubernetes_facts.PLUGIN_CONFIG_LABEL in labels:
            assert labels[kubernetes_facts.PLUGIN_CONFIG_LABEL] in plugin
        if (
            labels.get(kubernetes_facts.MIG_CONFIG_LABEL, kubernetes_facts.MIG_DISABLED)
            != kubernetes_facts.MIG_DISABLED
        ):
            assert labels[kubernetes_facts.MIG_CONFIG_LABEL] in layouts


def test_a_changed_config_rolls_the_pods_that_read_it() -> None:
    """R1.17: the config-manager signals only when a node's label changes, not when the
    ConfigMap's content does; the device plugin chart's pod templates carry a checksum of its
    configs (templates/_helpers.tpl `podAnnotations`), ours of the configs they read."""

    def checksums(source: str) -> dict[str, str]:
        annotations = {
            o["metadata"]["name"]: o["spec"]["template"]["metadata"]["annotations"]
            for o in installed(source, "onprem")
            if o["kind"] == "DaemonSet"
        }
        return {
            name: found.get("checksum/config") or found["estategen.io/config-checksum"]
            for name, found in annotations.items()
        }

    before = checksums(MESA)
    after = checksums(MESA.replace("sharing: {mps: 4}", "sharing: {mps: 3}"))
    assert before == checksums(MESA)  # deterministic
    for name in (
        "nvidia-device-plugin",
        "nvidia-device-plugin-gpu-feature-discovery",
        "nvidia-device-plugin-mps-control-daemon",
    ):
        assert before[name] != after[name], name
    assert before["dcgm-exporter"] == after["dcgm-exporter"]
    assert before["nvidia-mig-manager"] == after["nvidia-mig-manager"]


def test_mig_strategy_comes_from_each_pools_config_never_from_env() -> None:
    """R1.10: env beats the config file (api/config/v1/config.go 45-56), so the plugin has no
    MIG_STRATEGY env; R1.15: an MPS pool must not get `mixed` (cmd/nvidia-device-plugin)."""
    objs = installed(MESA, "onprem")
    for name, inner in (
        ("nvidia-device-plugin", "nvidia-device-plugin-ctr"),
        ("nvidia-device-plugin-gpu-feature-discovery", "gpu-feature-discovery-ctr"),
    ):
        assert "MIG_STRATEGY" not in env_of(container(one(objs, "DaemonSet", name), inner))
    configs = one(objs, "ConfigMap", "nvidia-device-plugin-configs")["data"]
    strategies = {k: yaml.safe_load(v)["flags"]["migStrategy"] for k, v in configs.items()}
    assert strategies["a100-mig"] == "mixed"
    assert strategies["l4-mps"] == strategies["l40s-ts"] == "none"


def test_device_containers_ask_the_runtime_for_every_gpu() -> None:
    """R1.5: NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES=compute,utility
    (deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml 202-205)."""
    objs = installed(MESA, "onprem")
    for name, inner in (
        ("nvidia-device-plugin", "nvidia-device-plugin-ctr"),
        ("nvidia-device-plugin-mps-control-daemon", "mps-control-daemon-ctr"),
    ):
        env = env_of(container(one(objs, "DaemonSet", name), inner))
        assert env["NVIDIA_VISIBLE_DEVICES"] == "all", name
        assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility", name


def test_feature_discovery_publishes_through_node_feature_discovery() -> None:
    """R1.20, R1.23: GFD writes NodeFeature objects (useNodeFeatureAPI defaults to true), whose
    CRD and labelling come from NFD, the chart dependency of device plugin v0.20.0
    (deployments/helm/nvidia-device-plugin/Chart.yaml: condition nfd.enabled,gfd.enabled, so
    GFD on and nfd.enabled unset install it); the MPS daemon schedules on
    nvidia.com/mps.capable, which only GFD sets."""
    chart = UPSTREAM / "k8s-device-plugin-v0.20.0/nvidia-device-plugin/Chart.yaml"
    (nfd,) = yaml.safe_load(chart.read_text())["dependencies"]
    assert (nfd["name"], nfd["alias"]) == ("node-feature-discovery", "nfd")
    # Helm takes the first condition path the values set (helm's ProcessDependencyConditions)
    _, files = rendered(MESA)
    chart_values = values(MESA, "onprem", "nvidia-device-plugin")
    paths = nfd["condition"].split(",")
    assert paths == ["nfd.enabled", "gfd.enabled"]
    assert "enabled" not in chart_values.get("nfd", {})
    assert chart_values["gfd"]["enabled"] is True
    # the release says it brings NFD's CRDs: objects of that group wait for it
    (release,) = [
        r
        for r in json.loads(files["pulumi/onprem/cluster.json"].content)["releases"]
        if r["name"] == "nvidia-device-plugin"
    ]
    assert "nfd.k8s-sigs.io" in release["provides"]
    objs = installed(MESA, "onprem")
    # GFD may write NodeFeature objects and read its own pod to own them
    rules = one(objs, "ClusterRole", "nvidia-device-plugin-role")["rules"]
    assert any("nodefeatures" in r["resources"] and "create" in r["verbs"] for r in rules)
    assert any("pods" in r["resources"] and "get" in r["verbs"] for r in rules)
    gfd = one(objs, "DaemonSet", "nvidia-device-plugin-gpu-feature-discovery")
    env = env_of(container(gfd, "gpu-feature-discovery-ctr"))
    assert env["NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    mps = one(objs, "DaemonSet", "nvidia-device-plugin-mps-control-daemon")
    assert mps["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/mps.capable"] == "true"


def _term_matches(term: Obj, labels: dict[str, str]) -> bool:
    """One nodeSelectorTerm (k8s.io/component-helpers scheduling/corev1/nodeaffinity)."""
    for expression in term.get("matchExpressions", []):
        key, operator, wanted = expression["key"], expression["operator"], expression.get("values")
        found = {
            "In": key in labels and labels[key] in (wanted or []),
            "NotIn": key not in labels or labels[key] not in (wanted or []),
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not found:
            return False
    return True


def _tolerates(tolerations: list[Obj], key: str, value: str, effect: str) -> bool:
    """ToleratesTaint of k8s.io/api core/v1 toleration.go: key (or none, with Exists), value
    (or Exists) and effect (or none) match."""
    return any(
        (not t.get("key") or t["key"] == key)
        and (t.get("operator", "Equal") == "Exists" or t.get("value", "") == value)
        and (not t.get("effect") or t["effect"] == effect)
        for t in tolerations
    )


def schedules_on(spec: Obj, labels: dict[str, str], taints: list[tuple[str, str, str]]) -> bool:
    """Whether kube-scheduler's NodeAffinity and TaintToleration filters let a DaemonSet's pod
    onto a node with these labels and taints (the DaemonSet controller applies the same)."""
    if any(labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    required = (
        spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required and not any(_term_matches(t, labels) for t in required["nodeSelectorTerms"]):
        return False
    return all(
        _tolerates(spec.get("tolerations", []), key, value, effect)
        for key, value, effect in taints
        if effect in ("NoSchedule", "NoExecute")
    )


@pytest.mark.parametrize(("source", "cluster"), WITH_PLUGIN, ids=["onprem", "serving", "lab"])
def test_the_device_plugin_charts_pods_run_on_every_gpu_node_and_on_no_other(
    source: str, cluster: str
) -> None:
    """The chart's device plugin and GFD pods (and its MPS daemon once GFD labels a node
    MPS-capable) are scheduled on each node of the cluster's GPU pools, as kubelet registers
    it, despite the pool's taints, and on no CPU node."""
    estate, _ = rendered(source)
    daemonsets = {o["metadata"]["name"]: o for o in installed(source, cluster)}
    plugin, gfd, mps = (
        daemonsets[name]["spec"]["template"]["spec"]
        for name in (
            "nvidia-device-plugin",
            "nvidia-device-plugin-gpu-feature-discovery",
            "nvidia-device-plugin-mps-control-daemon",
        )
    )
    pools = list(estate.pools_in_cluster(cluster))
    # mesa's on-prem cluster has a CPU pool too
    assert {bool(p.gpus) for p in pools} == ({True, False} if source == MESA else {True})
    for pool in pools:
        labels = dict(kubernetes_facts.registration_labels(estate, pool))
        taints = [(t.key, t.value, t.effect) for t in pool.taints]
        for spec in (plugin, gfd):
            assert schedules_on(spec, labels, taints) == bool(pool.gpus), pool.name
        shares = bool(pool.gpus and pool.gpus.sharing.mps)
        capable = {**labels, "nvidia.com/mps.capable": "true"} if shares else labels
        assert schedules_on(mps, capable, taints) == shares, pool.name


# --- NVIDIA: the GPU Operator (v26.7.0) ---------------------------------------------------------


def clusterpolicy_schema() -> Obj:
    crd = yaml.safe_load(
        (UPSTREAM / "gpu-operator-v26.7.0/nvidia.com_clusterpolicies.yaml").read_text()
    )
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    schema: Obj = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return schema


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_operator_is_told_the_mig_strategy_even_none(strategy: str) -> None:
    """R4.1: the chart's default `single` reaches every operand as MIG_STRATEGY
    (controllers/object_controls.go applyMIGConfiguration) unless the values say otherwise."""
    source = MESA.replace(
        "device_plugin: {install: gpu-operator, mig_strategy: single}",
        f"device_plugin: {{install: gpu-operator, mig_strategy: {strategy}}}",
    )
    if strategy == "none":
        source = source.replace('mig: ["3g.40gb", "3g.40gb"]', "mig: []").replace(
            "{h100-sxm-80gb/3g.40gb: 8}", "{h100-sxm-80gb: 8}"
        )
    operator = values(source, "operator", "gpu-operator")
    assert operator["mig"] == {"strategy": strategy}
    assert strategy in clusterpolicy_schema()["mig"]["properties"]["strategy"]["enum"]


def test_operator_owns_runtime_class_nvidia_and_we_keep_ours_without_it() -> None:
    """R4.5: the operator's pre-requisites state creates and updates RuntimeClass nvidia
    (assets/pre-requisites/0200_runtime_class.yaml): two owners would fight."""
    assert not [o for o in objects(MESA, "operator") if o["kind"] == "RuntimeClass"]
    assert one(objects(MESA, "onprem"), "RuntimeClass", "nvidia")["handler"] == "nvidia"


def test_mig_off_config_is_one_the_operator_accepts_as_default() -> None:
    """R2.2: ClusterPolicy restricts migManager.config.default to all-disabled or ''."""
    default = clusterpolicy_schema()["migManager"]["properties"]["config"]["properties"]["default"]
    assert kubernetes_facts.MIG_DISABLED in default["enum"]
    assert values(MESA, "operator", "gpu-operator")["migManager"]["config"]["default"] == (
        kubernetes_facts.MIG_DISABLED
    )


# --- Kueue's manager configuration (0.19.2) ----------------------------------------------------


def manager_configuration(source: str, cluster: str) -> Obj:
    text = values(source, cluster, "kueue")["managerConfig"]["controllerManagerConfigYaml"]
    config: Obj = yaml.safe_load(text)
    return config


def chart_configuration() -> tuple[Obj, set[str]]:
    """The chart's default Configuration, and every key it names, commented out or not."""
    chart = yaml.safe_load((UPSTREAM / "kueue-v0.19.2/values.yaml").read_text())
    text = chart["managerConfig"]["controllerManagerConfigYaml"]
    uncommented = "\n".join(line.replace("#", "", 1) for line in text.splitlines())
    keys = {
        line.strip().lstrip("- ").split(":", 1)[0]
        for line in uncommented.splitlines()
        if ":" in line
    }
    return yaml.safe_load(text), keys


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize(("source", "cluster"), KUEUE_CLUSTERS, ids=KUEUE_IDS)
def test_kueue_configuration_keeps_the_chart_defaults_and_names_only_its_fields(
    source: str, cluster: str
) -> None:
    """R5.1: setting controllerManagerConfigYaml replaces the chart's text, so its defaults are
    kept; R5.2: v1beta2 is decoded strictly and has no `enable` keys (charts/kueue/values.yaml
    at v0.19.2 names every field we use, commented out where off by default)."""
    config = manager_configuration(source, cluster)
    default, documented = chart_configuration()
    for key in ("apiVersion", "kind", "health", "webhook", "leaderElection"):
        assert config[key] == default[key], key
    # the chart's metrics address, and the per-queue metrics the estate's Kueue rules read
    assert config["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    assert config["controller"] == default["controller"]
    assert config["clientConnection"] == default["clientConnection"]
    ours = _keys({k: v for k, v in config.items() if k != "controller"})
    assert "enable" not in ours
    assert ours <= documented | {"key", "operator"}, ours - documented


@pytest.mark.parametrize(("source", "cluster"), KUEUE_CLUSTERS, ids=KUEUE_IDS)
def test_kueue_fair_sharing_and_all_or_nothing_admission_are_on(source: str, cluster: str) -> None:
    """R5.3: preemptionStrategies must be one of three lists (pkg/config/validation.go
    390-428); R5.4: waitForPodsReady needs a positive timeout, and all or nothing comes from
    evicting and requeuing a workload whose pods are not all ready in time, never from
    blockAdmission, which holds every ClusterQueue of the cluster (Kueue v0.19.2
    pkg/cache/scheduler/cache.go:250 podsReadyForAllAdmittedWorkloads); R5.6: with `pod`
    listed the namespace selector must be non-empty."""
    config = manager_configuration(source, cluster)
    assert config["fairSharing"]["preemptionStrategies"] in (
        ["LessThanOrEqualToFinalShare"],
        ["LessThanInitialShare"],
        ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
    )
    ready = config["waitForPodsReady"]
    assert ready["blockAdmission"] is False and ready["timeout"] not in ("0s", "0m", "")
    frameworks = config["integrations"]["frameworks"]
    assert frameworks and "pod" in frameworks
    assert config["managedJobsNamespaceSelector"]["matchExpressions"]
    # each team namespace matches the selector, kube-system and Kueue's own do not
    for obj in objects(source, cluster):
        if obj["kind"] == "Namespace":
            team = "estategen.io/team" in obj["metadata"]["labels"]
            # neither the GPU components' namespace nor Slinky's slurmd pods'
            assert team == (obj["metadata"]["name"] not in (NVIDIA_NAMESPACE, slinky.NAMESPACE))


@pytest.mark.parametrize(("source", "cluster"), KUEUE_CLUSTERS, ids=KUEUE_IDS)
def test_pods_asking_for_cpu_are_never_left_pending_by_a_gpu_only_queue(
    source: str, cluster: str
) -> None:
    """R5.5: without quotaCheckStrategy, Kueue blocks a workload requesting a resource its
    ClusterQueue does not cover: queues cover cpu and memory, or Kueue ignores them."""
    config = manager_configuration(source, cluster)
    excluded = config.get("resources", {}).get("excludeResourcePrefixes", [])
    assert config.get("resources", {}).get("quotaCheckStrategy") != "IgnoreUndeclared" or not (
        excluded
    )
    for queue in (o for o in objects(source, cluster) if o["kind"] == "ClusterQueue"):
        covered = {r for g in queue["spec"]["resourceGroups"] for r in g["coveredResources"]}
        for resource in ("cpu", "memory"):
            assert resource in covered or any(resource.startswith(p) for p in excluded)


# --- storage -----------------------------------------------------------------------------------

NFS_CLASS = (
    (BLUEPRINTS / "campus.yaml")
    .read_text()
    .replace(
        '{name: home, type: nfs, source: "nfs01:/export/home", mount: /home}',
        '{name: home, type: nfs, source: "nfs01:/export/home", mount: /home, '
        "options: [vers=4.2], kubernetes: {storage_class: home}}",
    )
)


def test_each_storage_class_exists_with_a_volume_per_team_over_the_same_tree() -> None:
    """R6.2, R6.3 (csi-driver-nfs v4.13.4 deploy/example/pv-nfs-csi.yaml,
    pkg/nfs/controllerserver.go getNfsVolFromID): server#share#subdir#uniquifier;
    R6.9: Lustre as a hostPath volume on the pools that mount it."""
    estate, files = rendered(NFS_CLASS)
    objs = objects(NFS_CLASS, "serving")
    classes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "StorageClass"}
    assert set(classes) == {"home", "scratch"}
    assert classes["home"]["provisioner"] == "nfs.csi.k8s.io"
    assert classes["home"]["parameters"] == {"server": "nfs01", "share": "/export/home"}
    assert classes["scratch"]["provisioner"] == "kubernetes.io/no-provisioner"
    teams = [t.namespace for t in estate.identity.teams]
    for namespace in teams:
        home = one(objs, "PersistentVolume", f"home-{namespace}")["spec"]
        assert home["csi"]["volumeHandle"].split("#") == ["nfs01", "/export/home", "", namespace]
        assert home["mountOptions"] == ["vers=4.2"]
        scratch = one(objs, "PersistentVolume", f"scratch-{namespace}")["spec"]
        assert scratch["hostPath"] == {"path": "/scratch", "type": "Directory"}
        (term,) = scratch["nodeAffinity"]["required"]["nodeSelectorTerms"]
        (expression,) = term["matchExpressions"]
        mounting = [
            p.name for p in estate.pools_in_cluster("serving") if p in _mounting(estate, "scratch")
        ]
        assert expression == {"key": "estategen.io/pool", "operator": "In", "values": mounting}
        claim = next(
            o
            for o in objs
            if o["kind"] == "PersistentVolumeClaim"
            and o["metadata"] == {**o["metadata"], "name": "scratch", "namespace": namespace}
        )
        assert claim["spec"]["volumeName"] == f"scratch-{namespace}"
    import json

    data = json.loads(files["pulumi/serving/cluster.json"].content)
    (nfs,) = [r for r in data["releases"] if r["name"] == "csi-driver-nfs"]
    assert (nfs["chart"], nfs["version"]) == ("csi-driver-nfs", k8s_storage.NFS_VERSION)


def _mounting(estate: Estate, name: str) -> list[Any]:
    return [
        p
        for p in estate.node_pools
        if not p.managed and any(s.name == name and s.mounted_on(p.name) for s in estate.storage)
    ]


def test_no_storage_class_means_no_csi_driver() -> None:
    _, files = rendered("campus.yaml")
    import json

    data = json.loads(files["pulumi/serving/cluster.json"].content)
    assert "csi-driver-nfs" not in {r["name"] for r in data["releases"]}


def test_clusters_with_the_prometheus_operator_get_the_estates_rules() -> None:
    """The Kubernetes side gets the same rule groups as PrometheusRule objects."""
    from estategen.prometheus_rules import observability_rules

    estate, files = rendered("campus.yaml")
    rules = yaml.safe_load(files["observability/prometheus/rules/estategen.rules.yml"].content)
    (rule,) = [o for o in objects("campus.yaml", "serving") if o["kind"] == "PrometheusRule"]
    assert rule["spec"]["groups"] == observability_rules(estate) == rules["groups"]
    assert not [o for o in objects("lab.yaml", "lab-k8s") if o["kind"] == "PrometheusRule"]


def test_kueue_metrics_reach_the_prometheus_operator_where_the_cluster_has_one() -> None:
    """The estate's Kueue alerts read kueue_cluster_queue_* series: the chart's enablePrometheus
    creates its ServiceMonitor (charts/kueue/values.yaml at v0.19.2, `enablePrometheus`)."""
    assert values("campus.yaml", "serving", "kueue")["enablePrometheus"] is True
    assert "enablePrometheus" not in values("lab.yaml", "lab-k8s", "kueue")
