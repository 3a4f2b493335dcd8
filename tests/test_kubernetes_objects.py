"""The Kubernetes objects estategen renders, read from ``kubernetes/<cluster>/`` without Pulumi.

Each test renders a blueprint once per session and reads one cluster's manifests as kubectl,
Argo CD or Flux read them: the files its ``kustomization.yaml`` lists, and the Helm values
written next to them. Core objects are checked against the API schema of the blueprint's
Kubernetes version (kubernetes-validate, strict); Kueue objects against the CRDs of the pinned
Kueue release in tests/upstream/kueue-v0.19.2, closed so that a misspelt field fails,
with their CEL rules evaluated (tests/crd.py), on create and on update from the previous render.
The kustomization lists no Node: the labels each on-prem node registers with are in
``nodes.yaml``, which nothing applies (``Manifests.nodes``).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from estategen.plan.compare import plan
from estategen.plan.steps import Action
from estategen.render import render
from estategen.write import with_manifest, write_tree

from crd import UPSTREAM, crd_set
from k8s_harness import (
    ALL_PROJECTS,
    BLUEPRINTS,
    IDS,
    MESA,
    ROOT,
    Manifests,
    Obj,
    estate_of,
    logical_name,
    manifests,
)

KUEUE_CRDS = UPSTREAM / "kueue-v0.19.2"  # the release estategen.kubernetes.kueue pins


@pytest.fixture(scope="session")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kubernetes")


# --- the example clusters ------------------------------------------------------------------

# every cluster's team namespaces: a quota, the team's RoleBindings and NetworkPolicy each,
# and the ClusterRole of the job kinds the cluster runs
TENANCY = {"Namespace", "ResourceQuota", "RoleBinding", "NetworkPolicy", "ClusterRole"}
# the device plugin, GFD and the MPS daemon come from NVIDIA's chart (the cluster's releases)
CORE_ONPREM = TENANCY | {
    "RuntimeClass",
    "ConfigMap",
    "DaemonSet",
    "Service",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
}


def test_lab_cluster_creates_the_on_prem_gpu_stack(out: Path) -> None:
    result = manifests(out, "lab.yaml", "lab-k8s")
    assert result.kinds() == CORE_ONPREM
    names = {r["metadata"]["name"] for r in result.all("DaemonSet")}
    assert names == {"dcgm-exporter"}
    installed = {r["metadata"]["name"] for r in result.with_charts().all("DaemonSet")}
    # the chart's MPS daemon too: it schedules only where GFD labels a node MPS-capable
    assert installed - names == {
        "nvidia-device-plugin",
        "nvidia-device-plugin-gpu-feature-discovery",
        "nvidia-device-plugin-mps-control-daemon",
    }
    assert {r["metadata"]["name"] for r in result.nodes()} == {"lab-k8s-01", "lab-k8s-02"}


def test_campus_serving_creates_tenancy_sharing_metrics_and_queues(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    assert result.kinds() == CORE_ONPREM | {
        "PriorityClass",
        "ServiceMonitor",
        "PrometheusRule",
        "WorkloadPriorityClass",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
    }
    assert len(result.nodes()) == 16


def test_campus_burst_creates_a_gke_node_pool_and_no_device_plugin(out: Path) -> None:
    """GKE installs its own device plugin; the node pool is a cloud resource (test_pulumi)."""
    result = manifests(out, "campus.yaml", "burst")
    assert result.kinds() == TENANCY | {
        "DaemonSet",
        "Service",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "ConfigMap",
    }
    assert [r["metadata"]["name"] for r in result.all("DaemonSet")] == ["dcgm-exporter-gke"]
    assert [r["metadata"]["name"] for r in result.all("ConfigMap")] == ["dcgm-exporter-counters"]


def test_dcgm_exporters_use_the_counters_of_the_slurm_side(out: Path) -> None:
    """The DaemonSet reads the counter list the Ansible role installs on Slurm nodes."""
    result = manifests(out, "campus.yaml", "serving")
    role_counters = (ROOT / "playbooks/roles/dcgm_exporter/files/counters.csv").read_text()
    (counters,) = [
        r for r in result.all("ConfigMap") if r["metadata"]["name"] == "dcgm-exporter-counters"
    ]
    assert counters["data"]["counters.csv"] == role_counters
    (exporter,) = [r for r in result.all("DaemonSet") if r["metadata"]["name"] == "dcgm-exporter"]
    container = exporter["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/counters.csv"


def helm_values_files(result: Manifests) -> set[str]:
    return {p.name.removesuffix(".values.yaml") for p in (result.folder / "helm").glob("*")}


def test_mesa_clusters_create_what_their_provider_and_install_need(out: Path) -> None:
    onprem = manifests(out, MESA, "onprem")
    assert onprem.kinds() == CORE_ONPREM | {
        "PriorityClass",
        "ServiceMonitor",
        "PrometheusRule",
        "WorkloadPriorityClass",
        "Topology",
        # mig-manager's account and its binding
        "ServiceAccount",
        "ClusterRoleBinding",
    }
    assert {r["metadata"]["name"] for r in onprem.with_charts().all("DaemonSet")} == {
        "nvidia-device-plugin",
        "nvidia-device-plugin-gpu-feature-discovery",
        "nvidia-device-plugin-mps-control-daemon",
        "nvidia-mig-manager",
        "dcgm-exporter",
    }
    operator = manifests(out, MESA, "operator")
    assert [r["metadata"]["name"] for r in operator.all("DaemonSet")] == ["dcgm-exporter"]
    assert helm_values_files(operator) == {"gpu-operator", "kueue"}
    # managed node groups and pools get their labels from the cloud: no nodes.yaml
    assert not manifests(out, MESA, "aws").nodes()
    gcp = manifests(out, MESA, "gcp")
    assert not gcp.nodes() and "RuntimeClass" not in gcp.kinds()


# --- tenancy ------------------------------------------------------------------------------


def test_a_namespace_per_team_labelled_with_team_estate_and_gid(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    teams = {
        r["metadata"]["name"]: r["metadata"]
        for r in result.all("Namespace")
        if "estategen.io/team" in r["metadata"]["labels"]
    }
    assert set(teams) == {"vision", "nlp-prod", "climate"}
    assert teams["nlp-prod"]["labels"]["estategen.io/team"] == "nlp"
    assert teams["nlp-prod"]["labels"]["estategen.io/estate"] == "campus"
    assert teams["nlp-prod"]["annotations"]["estategen.io/gid"] == "20002"
    system = result.one("Namespace", "nvidia-gpu")
    assert system["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_resource_quota_holds_what_the_team_queue_can_admit(out: Path) -> None:
    serving = manifests(out, "campus.yaml", "serving")

    def hard(result: Manifests, namespace: str) -> dict[str, str]:
        return dict(result.one("ResourceQuota", "gpu", namespace)["spec"]["hard"])

    # l40s time-sliced 4 ways: vision 32 nominal + 16 borrowable GPUs, nlp may borrow all 64
    assert hard(serving, "vision") == {"requests.nvidia.com/gpu": "192"}
    assert hard(serving, "nlp-prod") == {"requests.nvidia.com/gpu": "256"}
    assert hard(serving, "climate") == {"requests.nvidia.com/gpu": "0"}
    onprem = manifests(out, MESA, "onprem")
    vision = hard(onprem, "vision")
    assert vision["requests.nvidia.com/mig-3g.40gb"] == "20"  # 16 nominal + 4 borrowed
    assert set(vision) == {
        "requests.nvidia.com/gpu",
        "requests.nvidia.com/mig-1g.10gb",
        "requests.nvidia.com/mig-2g.20gb",
        "requests.nvidia.com/mig-3g.40gb",
    }


def test_priority_classes_and_workload_priority_classes_match(out: Path) -> None:
    result = manifests(out, MESA, "onprem")
    classes = {r["metadata"]["name"]: r for r in result.all("PriorityClass")}
    workload = {r["metadata"]["name"]: r for r in result.all("WorkloadPriorityClass")}
    assert set(classes) == set(workload) == {"training", "serving-critical"}
    assert classes["training"]["value"] == workload["training"]["value"] == 1000
    assert classes["training"]["description"] == "Batch training"
    assert classes["serving-critical"]["globalDefault"] is False


# --- nodes ----------------------------------------------------------------------------------


def test_every_on_prem_node_gets_its_pool_labels_and_never_its_taints(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    patches = result.nodes()
    assert len(patches) == 16
    node = result.node("k8s-l40s-07")
    labels = node["metadata"]["labels"]
    assert labels["tier"] == "inference"
    assert labels["nvidia.com/device-plugin.config"] == "l40s-serve"
    assert labels["nvidia.com/mig.config"] == "all-disabled"
    assert labels["estategen.io/gpu-model"] == "l40s-48gb"
    # spec.taints is an atomic list: applying it would remove taints others set; kubelet
    # registers the pool's taints (Ansible), and the GPU deploy labels mig-manager flips
    assert "spec" not in node
    assert not [k for k in labels if k.startswith("nvidia.com/gpu.deploy.")]
    # the patch holds labels only (the Pulumi program adds its patchForce annotation)
    assert set(node["metadata"]) == {"name", "labels"}
    assert result.one("RuntimeClass", "nvidia")["handler"] == "nvidia"


def test_mig_nodes_select_their_layout_and_switch_labels_follow_the_hostlist(out: Path) -> None:
    result = manifests(out, MESA, "onprem")
    mig = result.node("k8s-a100-03")["metadata"]["labels"]
    assert mig["nvidia.com/mig.config"] == "a100-mig"
    assert mig["estategen.io/mig"] == "true"
    switches = {
        r["metadata"]["name"]: r["metadata"]["labels"].get("estategen.io/switch")
        for r in result.nodes()
        if r["metadata"]["name"].startswith("k8s-l40s")
    }
    assert switches == {f"k8s-l40s-0{i}": "leaf-01" if i <= 3 else "leaf-02" for i in range(1, 7)}
    cpu = result.node("k8s-cpu-01")
    assert cpu["metadata"]["labels"] == {
        "estategen.io/estate": "mesa",
        "estategen.io/pool": "cpu-k8s",
    }
    assert "spec" not in cpu


# --- device plugin, MIG, GFD ----------------------------------------------------------------


def plugin_configs(result: Manifests) -> dict[str, Any]:
    """The device plugin's configs: the chart's ConfigMap, or ours for the GPU Operator."""
    configmap = result.with_charts().one("ConfigMap", "nvidia-device-plugin-configs", "nvidia-gpu")
    return {name: yaml.safe_load(text) for name, text in configmap["data"].items()}


def test_device_plugin_config_time_slices_the_serving_pool(out: Path) -> None:
    configs = plugin_configs(manifests(out, "campus.yaml", "serving"))
    assert set(configs) == {"default", "l40s-serve"}
    # a pool without MIG exposes whole GPUs, whatever the cluster's strategy (R1.15)
    assert configs["l40s-serve"] == {
        "version": "v1",
        "flags": {"migStrategy": "none", "failOnInitError": True},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert "sharing" not in configs["default"]


def test_device_plugin_config_per_pool_mps_mig_and_none(out: Path) -> None:
    result = manifests(out, MESA, "onprem")
    configs = plugin_configs(result)
    assert configs["l4-mps"]["sharing"] == {
        "mps": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    }
    assert configs["a100-mig"] == {
        "version": "v1",
        "flags": {"migStrategy": "mixed", "failOnInitError": True},
    }
    mig = result.one("ConfigMap", "nvidia-mig-parted-config", "nvidia-gpu")
    parted = yaml.safe_load(mig["data"]["config.yaml"])
    assert parted == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "a100-mig": [
                {
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
                }
            ],
        },
    }


def test_nvidia_daemonsets_reach_every_gpu_node_and_read_existing_configs(out: Path) -> None:
    result = manifests(out, MESA, "onprem").with_charts()
    configmaps = {r["metadata"]["name"] for r in result.all("ConfigMap")}
    accounts = {r["metadata"]["name"] for r in result.all("ServiceAccount")}
    for ds in result.all("DaemonSet"):
        spec = ds["spec"]["template"]["spec"]
        assert ds["spec"]["selector"]["matchLabels"].items() <= (
            ds["spec"]["template"]["metadata"]["labels"].items()
        )
        tolerated = {(t["key"], t.get("effect")) for t in spec["tolerations"]}
        assert {("nvidia.com/gpu", "NoSchedule"), ("dedicated", "NoSchedule")} <= tolerated
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in configmaps
        assert spec.get("serviceAccountName", "default") in accounts | {"default"}
        for container in spec["containers"] + spec.get("initContainers", []):
            assert container["image"].startswith("nvcr.io/nvidia/")
            assert ":" in container["image"] and not container["image"].endswith(":latest")
    plugin = result.one("DaemonSet", "nvidia-device-plugin", "nvidia-gpu")
    init = plugin["spec"]["template"]["spec"]["initContainers"][0]
    env = {e["name"]: e.get("value") for e in init["env"]}
    assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config"
    assert env["DEFAULT_CONFIG"] in plugin_configs(manifests(out, MESA, "onprem"))


def test_gpu_operator_release_carries_the_same_choices(out: Path) -> None:
    """The Operator's values (``helm/gpu-operator.values.yaml``) point at our ConfigMaps and
    select the layout our Node labels name."""
    result = manifests(out, MESA, "operator")
    (release,) = [r for r in result.releases() if r["name"] == "gpu-operator"]
    values = result.values("gpu-operator")
    assert release["version"].startswith("v")
    assert values["mig"] == {"strategy": "single"}
    assert values["devicePlugin"]["config"]["name"] in {
        r["metadata"]["name"] for r in result.all("ConfigMap")
    }
    assert values["migManager"]["config"]["name"] == "nvidia-mig-parted-config"
    assert values["dcgmExporter"] == {"enabled": False}
    label = result.node("k8s-h100-01")["metadata"]["labels"]
    parted = result.one("ConfigMap", "nvidia-mig-parted-config", "nvidia-gpu")["data"]
    layouts = yaml.safe_load(parted["config.yaml"])["mig-configs"]
    assert layouts[label["nvidia.com/mig.config"]][0]["mig-devices"] == {"3g.40gb": 2}


# --- observability --------------------------------------------------------------------------


def test_dcgm_exporter_service_and_monitor_carry_the_estate_labels(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    ds = result.one("DaemonSet", "dcgm-exporter", "nvidia-gpu")
    container = ds["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9400}]
    assert {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"} in container["env"]
    service = result.one("Service", "dcgm-exporter", "nvidia-gpu")
    assert (
        service["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    )
    monitor = result.one("ServiceMonitor", "dcgm-exporter", "nvidia-gpu")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    relabel = monitor["spec"]["endpoints"][0]["relabelings"]
    assert {"targetLabel": "site", "replacement": "campus-a", "action": "replace"} in relabel


def test_without_prometheus_operator_the_service_is_annotated_for_scraping(out: Path) -> None:
    result = manifests(out, MESA, "gcp")
    assert "ServiceMonitor" not in result.kinds()
    service = result.one("Service", "dcgm-exporter", "nvidia-gpu")
    assert service["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9500",
    }
    gke = result.one("DaemonSet", "dcgm-exporter-gke", "nvidia-gpu")
    assert (
        service["spec"]["selector"].items() <= gke["spec"]["template"]["metadata"]["labels"].items()
    )


# --- Kueue ----------------------------------------------------------------------------------


def test_resource_flavor_selects_exactly_its_pools_nodes(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    flavor = result.one("ResourceFlavor", "l40s-48gb")
    selected = {
        r["metadata"]["name"]
        for r in result.nodes()
        if flavor["spec"]["nodeLabels"].items() <= r["metadata"]["labels"].items()
    }
    assert selected == {f"k8s-l40s-{i:02d}" for i in range(1, 17)}
    assert flavor["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def test_cluster_queue_per_team_in_the_cohort_with_a_local_queue(out: Path) -> None:
    result = manifests(out, "campus.yaml", "serving")
    queue = result.one("ClusterQueue", "vision")["spec"]
    assert queue["cohortName"] == "serving"
    assert queue["fairSharing"] == {"weight": 40}
    assert queue["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "vision"}}
    assert queue["preemption"]["reclaimWithinCohort"] == "Any"
    (group,) = queue["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    (flavor,) = group["flavors"]
    gpu = {r["name"]: r for r in flavor["resources"]}["nvidia.com/gpu"]
    # quota is written in physical GPUs; time-slicing makes each one 4 schedulable devices
    assert gpu == {"name": "nvidia.com/gpu", "nominalQuota": "128", "borrowingLimit": "64"}
    local = result.one("LocalQueue", "nlp", "nlp-prod")
    assert local["spec"] == {"clusterQueue": "nlp"}
    (nlp,) = result.one("ClusterQueue", "nlp")["spec"]["resourceGroups"][0]["flavors"]
    assert nlp["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": "128"}


def test_mig_flavors_topology_and_lending_limits(out: Path) -> None:
    result = manifests(out, MESA, "onprem")
    assert result.one("Topology", "network")["spec"]["levels"] == [
        {"nodeLabel": "estategen.io/switch"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert result.one("ResourceFlavor", "l40s-48gb")["spec"]["topologyName"] == "network"
    assert "topologyName" not in result.one("ResourceFlavor", "l4-24gb")["spec"]
    queue = result.one("ClusterQueue", "vision")["spec"]
    (group,) = queue["resourceGroups"]
    flavors = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
    assert set(flavors) == {
        "a100-sxm-80gb-1g.10gb",
        "a100-sxm-80gb-2g.20gb",
        "a100-sxm-80gb-3g.40gb",
        "l4-24gb",
        "l40s-48gb",
    }
    assert flavors["a100-sxm-80gb-3g.40gb"]["nvidia.com/mig-3g.40gb"] == {
        "name": "nvidia.com/mig-3g.40gb",
        "nominalQuota": "16",
        "borrowingLimit": "4",
        "lendingLimit": "2",
    }
    # 4 MIG instances per A100, 128 threads and 1024 GB per 8-GPU node: 4 CPUs each, and the
    # node's allocatable memory (976562 MiB less kubelet's 100Mi eviction threshold) / 32
    assert flavors["a100-sxm-80gb-3g.40gb"]["cpu"]["nominalQuota"] == "64000m"
    assert flavors["a100-sxm-80gb-3g.40gb"]["memory"]["nominalQuota"] == f"{16 * 30514}Mi"
    assert flavors["l40s-48gb"]["nvidia.com/gpu"]["nominalQuota"] == "16"  # 8 x 2 replicas


def test_every_flavor_lists_every_covered_resource_in_order(out: Path) -> None:
    """Kueue's CEL rules, which a JSON Schema check does not evaluate."""
    for blueprint, cluster in ALL_PROJECTS:
        result = manifests(out, blueprint, cluster)
        flavors = {r["metadata"]["name"] for r in result.all("ResourceFlavor")}
        for queue in result.all("ClusterQueue"):
            for group in queue["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    assert flavor["name"] in flavors
                    names = [r["name"] for r in flavor["resources"]]
                    assert names == group["coveredResources"], (cluster, flavor["name"])


# --- API schemas ----------------------------------------------------------------------------

CUSTOM_GROUPS = ("kueue.x-k8s.io/", "monitoring.coreos.com/")


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_core_objects_are_valid_for_the_target_kubernetes(
    out: Path, blueprint: str, cluster: str
) -> None:
    result = manifests(out, blueprint, cluster)
    checked = 0
    for obj in result:
        if obj["apiVersion"].startswith(CUSTOM_GROUPS):
            continue
        try:
            kubernetes_validate.validate(obj, result.version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {err.message}")
        checked += 1
    assert checked > 0


def test_strict_validation_rejects_a_misspelt_field(out: Path) -> None:
    result = manifests(out, "lab.yaml", "lab-k8s")
    ds = copy.deepcopy(result.one("DaemonSet", "dcgm-exporter", "nvidia-gpu"))
    ds["spec"]["template"]["spec"]["tolerationz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, result.version, strict=True)


def kueue_violations(obj: Obj, old: Obj | None = None, closed: bool = True) -> list[str]:
    """What Kueue's API server (the pinned release's CRDs, CEL rules included) refuses."""
    return [str(v) for v in crd_set(KUEUE_CRDS).validate(obj, old, closed)]


def test_kueue_crds_are_those_of_the_pinned_release(out: Path) -> None:
    releases = manifests(out, "lab.yaml", "lab-k8s").releases()
    (kueue,) = [r for r in releases if r["name"] == "kueue"]
    assert KUEUE_CRDS.name == f"kueue-v{kueue['version']}"


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_kueue_objects_satisfy_the_pinned_crds_and_their_cel_rules(
    out: Path, blueprint: str, cluster: str
) -> None:
    result = manifests(out, blueprint, cluster)
    kueue = [o for o in result if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert {o["apiVersion"] for o in kueue} == {"kueue.x-k8s.io/v1beta2"}
    for obj in kueue:
        assert kueue_violations(obj) == [], (obj["kind"], obj["metadata"]["name"])


def test_closed_kueue_schema_rejects_the_v1beta1_field_name(out: Path) -> None:
    queue = copy.deepcopy(manifests(out, "lab.yaml", "lab-k8s").one("ClusterQueue", "vision"))
    queue["spec"]["cohort"] = queue["spec"].pop("cohortName")
    # the published schema leaves objects open: only the CEL rule notices the queue has no
    # cohort (v1beta2 calls it cohortName) yet may borrow
    assert kueue_violations(queue, closed=False) == [
        "spec: borrowingLimit must be nil when cohort is empty"
    ]
    assert any("'cohort' was unexpected" in v for v in kueue_violations(queue))


# --- Kueue updates: transition rules against the previous render ----------------------------

PAIRS = ROOT / "tests" / "plan_pairs"
MESA_RETAINTED = MESA.replace(
    "taints: [{key: dedicated, value: inference, effect: NoSchedule}]",
    "taints: [{key: dedicated, value: serving, effect: NoSchedule}]",
)


def _before_of(pair: Path) -> str | None:
    found = re.search(r"^# before: (\S+)", pair.read_text(), re.M)
    return str(PAIRS / found.group(1)) if found else None


# (id, previous blueprint, next blueprint): every plan pair, a taint change on MESA's switched
# pool, and lab and campus re-rendered unchanged
TRANSITIONS = [
    *((p.stem, before, str(p)) for p in sorted(PAIRS.glob("*.yaml")) if (before := _before_of(p))),
    ("mesa-retainted", MESA, MESA_RETAINTED),
    ("lab", str(BLUEPRINTS / "lab.yaml"), str(BLUEPRINTS / "lab.yaml")),
    ("campus", str(BLUEPRINTS / "campus.yaml"), str(BLUEPRINTS / "campus.yaml")),
]


@cache
def written(source: str, out: Path) -> Path:
    """``estategen render`` of a blueprint (text or path), MANIFEST.json included, once."""
    blueprint = Path(source).read_bytes() if source.endswith(".yaml") else source.encode()
    estate = estate_of(source)
    folder = out / "written" / hashlib.sha256(blueprint).hexdigest()[:12]
    if not folder.is_dir():
        write_tree(with_manifest(render(estate), blueprint, estate.name), folder)
    return folder


def kueue_objects(folder: Path, source: str) -> dict[tuple[str, str | None, str], Obj]:
    """A cluster's Kueue objects as rendered from ``source``, by kind, namespace and name."""
    version = estate_of(source).versions.kubernetes.text
    return {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in Manifests.read(folder, version)
        if o["apiVersion"].startswith("kueue.x-k8s.io/")
    }


@dataclass(frozen=True)
class Transition:
    """Kueue objects the API server refuses to update, and the plan's replacements."""

    refused: dict[tuple[str, str], tuple[list[str], str]]  # (cluster, "Kind name") -> why, URN
    replaced: dict[tuple[str, str], Any]  # (cluster, subject) -> the plan's Change


def transition(out: Path, before: str, after: str) -> Transition:
    old, new = written(before, out), written(after, out)
    estate = estate_of(after)
    result = plan(estate, render(estate), old)
    replaced = {
        (c.file.split("/")[1], c.subject): c
        for f in result.files
        for c in f.changes
        # a managed pool's replacement (pulumi/<cluster>/cluster.json) is the cloud's, not Kueue's
        if c.kind == "kubernetes-replace" and c.file.startswith("kubernetes/")
    }
    refused: dict[tuple[str, str], tuple[list[str], str]] = {}

    def clusters(folder: Path) -> set[str]:
        return {p.parent.name for p in folder.glob("kubernetes/*/kustomization.yaml")}

    for cluster in sorted(clusters(old) & clusters(new)):
        project_name = yaml.safe_load((old / "pulumi" / cluster / "Pulumi.yaml").read_text())
        was, now = (
            kueue_objects(folder / "kubernetes" / cluster, source)
            for folder, source in ((old, before), (new, after))
        )
        for key in sorted(was.keys() & now.keys(), key=str):
            violations = kueue_violations(now[key], was[key])
            if violations:
                obj = was[key]
                # the Pulumi program registers a custom object as kubernetes:<apiVersion>:<kind>
                urn = (
                    f"urn:pulumi:{estate.name}::{project_name['name']}::"
                    f"kubernetes:{obj['apiVersion']}:{obj['kind']}::{logical_name(obj)}"
                )
                refused[(cluster, f"{key[0]} {key[2]}")] = (violations, urn)
    return Transition(refused, replaced)


@pytest.mark.parametrize(
    ("before", "after"), [t[1:] for t in TRANSITIONS], ids=[t[0] for t in TRANSITIONS]
)
def test_kueue_updates_the_api_server_refuses_are_replacements_in_the_plan(
    out: Path, before: str, after: str
) -> None:
    found = transition(out, before, after)
    assert set(found.refused) == set(found.replaced), found.refused
    for key, (_, urn) in found.refused.items():
        assert Action("pulumi-replace", f"{key[0]} {urn}") in found.replaced[key].actions


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("k8s-switched-taints", "tolerations are immutable when topologyName is set"),
        ("k8s-unswitched", "topologyName is immutable when topologyName is set"),
        ("mesa-retainted", "tolerations are immutable when topologyName is set"),
    ],
)
def test_a_flavor_with_a_topology_cannot_change_its_tolerations_or_topology(
    out: Path, case: str, message: str
) -> None:
    before, after = next(t[1:] for t in TRANSITIONS if t[0] == case)
    found = transition(out, before, after)
    cluster = "onprem" if case.startswith("mesa") else "serving"
    flavor = (cluster, "ResourceFlavor l40s-48gb")
    assert list(found.refused) == [flavor]
    assert found.refused[flavor][0] == [f"spec: {message}"]
    assert "take it out of the ClusterQueues first" in found.replaced[flavor].meaning


def test_gaining_a_topology_is_an_update_kueue_accepts(out: Path) -> None:
    found = transition(out, str(PAIRS / "base.yaml"), str(PAIRS / "k8s-switched.yaml"))
    assert found.refused == {} and found.replaced == {}


# --- upstream requirements schemas cannot see (docs/kubernetes-upstream-requirements.md) ------


def pod_specs(result: Manifests) -> Iterator[tuple[str, Obj]]:
    for kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
        for obj in result.all(kind):
            yield f"{kind} {obj['metadata']['name']}", obj["spec"]["template"]["spec"]


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_no_pod_shares_its_process_namespace_and_the_hosts(
    out: Path, blueprint: str, cluster: str
) -> None:
    """kubernetes/kubernetes pkg/apis/core/validation/validation.go,
    validatePodSpecSecurityContext: "ShareProcessNamespace and HostPID cannot both be enabled"
    (R8.1); kubernetes-validate checks the OpenAPI schema only and cannot see it."""
    specs = list(pod_specs(manifests(out, blueprint, cluster).with_charts()))
    assert specs
    for name, spec in specs:
        assert not (spec.get("hostPID") and spec.get("shareProcessNamespace")), name


def test_mps_daemon_runs_in_the_hosts_pid_namespace_and_the_plugin_sees_its_shm(
    out: Path,
) -> None:
    """NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin:
    daemonset-mps-control-daemon.yml (hostPID, `mps.enableHostPID`, R1.18) and
    daemonset-device-plugin.yml (host <mps root>/shm mounted at /dev/shm, R1.2)."""
    result = manifests(out, MESA, "onprem").with_charts()
    mps = result.one("DaemonSet", "nvidia-device-plugin-mps-control-daemon", "nvidia-gpu")
    assert mps["spec"]["template"]["spec"]["hostPID"] is True
    plugin = result.one("DaemonSet", "nvidia-device-plugin", "nvidia-gpu")["spec"]["template"]
    volumes = {v["name"]: v for v in plugin["spec"]["volumes"]}
    container = next(
        c for c in plugin["spec"]["containers"] if c["name"] == "nvidia-device-plugin-ctr"
    )
    shm = next(m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm")
    assert volumes[shm["name"]]["hostPath"]["path"] == "/run/nvidia/mps/shm"


def test_feature_discovery_writes_node_features_in_its_own_namespace(out: Path) -> None:
    """NVIDIA/k8s-device-plugin v0.20.0 daemonset-gfd.yml: env NAMESPACE and POD_NAME from the
    pod's fields (the namespace flag defaults to `default`, internal/flags/node.go; R1.22),
    and templates/role.yml grants `get` on pods for the owner reference (R1.23)."""
    result = manifests(out, MESA, "onprem").with_charts()
    gfd_set = result.one("DaemonSet", "nvidia-device-plugin-gpu-feature-discovery", "nvidia-gpu")
    gfd = gfd_set["spec"]["template"]
    container = next(
        c for c in gfd["spec"]["containers"] if c["name"] == "gpu-feature-discovery-ctr"
    )
    fields = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"]
        for e in container["env"]
        if "valueFrom" in e
    }
    assert fields["NAMESPACE"] == "metadata.namespace"
    assert fields["POD_NAME"] == "metadata.name"
    account = gfd["spec"]["serviceAccountName"]
    (binding,) = [
        b
        for b in result.all("ClusterRoleBinding")
        if any(subject["name"] == account for subject in b["subjects"])
    ]
    role = result.one("ClusterRole", binding["roleRef"]["name"])
    assert any("pods" in rule["resources"] and "get" in rule["verbs"] for rule in role["rules"])


@pytest.mark.parametrize(
    ("blueprint", "cluster"), [("campus.yaml", "burst"), (MESA, "gcp")], ids=["burst", "gcp"]
)
def test_gke_admits_our_critical_pods_and_counts_gpus_by_device_name(
    out: Path, blueprint: str, cluster: str
) -> None:
    """GKE admits system-node-critical pods only in a namespace with a ResourceQuota scoped to
    that PriorityClass (its gcp-critical-pods quota in kube-system; Kubernetes "limit priority
    class consumption", R3.10); Google's DCGM manifest (GoogleCloudPlatform/prometheus-engine
    examples/nvidia-dcgm/exporter.yaml) sets DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=device-name,
    since GKE's device plugin names devices (R3.3, R3.9)."""
    result = manifests(out, blueprint, cluster)
    quotas = [
        q
        for q in result.all("ResourceQuota")
        if any(
            e["scopeName"] == "PriorityClass" and "system-node-critical" in e["values"]
            for e in q["spec"].get("scopeSelector", {}).get("matchExpressions", [])
        )
    ]
    for name, spec in pod_specs(result):
        if spec.get("priorityClassName") == "system-node-critical":
            namespace = next(
                obj["metadata"]["namespace"]
                for kind in ("DaemonSet", "Deployment")
                for obj in result.all(kind)
                if f"{kind} {obj['metadata']['name']}" == name
            )
            assert any(q["metadata"]["namespace"] == namespace for q in quotas), name
    exporter = result.one("DaemonSet", "dcgm-exporter-gke", "nvidia-gpu")["spec"]["template"]
    env = {e["name"]: e.get("value") for e in exporter["spec"]["containers"][0]["env"]}
    assert env["DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"] == "device-name"
