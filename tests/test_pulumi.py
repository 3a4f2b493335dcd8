"""The rendered Pulumi projects, run in-process under Pulumi's mocks.

Each test renders a blueprint, runs one project's ``__main__.py`` as the Pulumi CLI would (its
``Pulumi.yaml`` project and its project config) with a fresh mock monitor, and
asserts on the resources the program registered. Core Kubernetes objects are checked against
the API schema of the blueprint's Kubernetes version (kubernetes-validate, strict); Kueue
objects against the CRDs of the pinned Kueue release in ../shared/conformance/kueue-v0.19.2,
closed so that a misspelt field fails, with their CEL rules evaluated (tests/crd.py).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import runpy
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime import stack as pulumi_stack
from pulumi.runtime.sync_await import _sync_await

from estategen import load, pipeline
from estategen.plan import Action, plan
from estategen.render import render
from estategen.write import with_manifest, write_tree

from crd import CONFORMANCE, crd_set

ROOT = Path(__file__).resolve().parent.parent
BLUEPRINTS = ROOT / "blueprints"
KUEUE_CRDS = CONFORMANCE / "kueue-v0.19.2"  # the release renderers/pulumi.py pins
SUBNETS = ["subnet-0a1b2c3d", "subnet-4e5f6a7b"]

# Every provider, install mode, MIG strategy and sharing mode the program handles, in one
# estate: on-prem (MIG mixed, MPS, time-slicing over switches, a CPU pool), the GPU Operator
# with MIG single, EKS with time-slicing, and GKE with MIG partitions shared by time-slicing.
MESA = """\
estate: mesa
versions: {slurm: "24.05", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}, {name: ben, uid: 11002}]
  teams:
    - {name: vision, gid: 21001, members: [ana], fairshare: 30}
    - {name: nlp, gid: 21002, members: [ben], fairshare: 70, namespace: nlp-prod}
    - {name: ops, gid: 21003, fairshare: 10}
node_pools:
  - name: a100-mig
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-a100-[01-04]"
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gb: 1024
    gpus: {model: a100-sxm-80gb, count: 8, mig: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  - name: l4-mps
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-l4-[01-02]"
    cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}
    memory_gb: 128
    gpus: {model: l4-24gb, count: 2, sharing: {mps: 4}}
  - name: l40s-ts
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-l40s-[01-06]"
    cpu: {sockets: 1, cores_per_socket: 64, threads_per_core: 2}
    memory_gb: 512
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
    network: {switch: "leaf-[01-02]"}
    labels: {tier: inference}
    taints: [{key: dedicated, value: inference, effect: NoSchedule}]
  - name: cpu-k8s
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-cpu-[01-02]"
  - name: h100-single
    scheduler: kubernetes
    cluster: operator
    hosts: "k8s-h100-[01-02]"
    cpu: {sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    gpus: {model: h100-sxm-80gb, count: 8, mig: ["3g.40gb", "3g.40gb"]}
  - name: eks-l40s
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {min: 0, max: 4}
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  - name: gke-mig
    scheduler: kubernetes
    cluster: gcp
    provider: gke
    instance_type: a3-highgpu-8g
    nodes: {min: 1, max: 2}
    gpus:
      model: h100-sxm-80gb
      count: 8
      mig: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
      sharing: {time_slicing: 2}
    labels: {tier: burst}
kubernetes:
  clusters:
    - name: onprem
      device_plugin: {mig_strategy: mixed}
      queues:
        cohort: onprem
        teams:
          - {team: vision, quota: {a100-sxm-80gb/3g.40gb: 16, l40s-48gb: 8},
             borrowing_limit: 4, lending_limit: 2}
          - {team: nlp, quota: {a100-sxm-80gb/1g.10gb: 32, l4-24gb: 4, l40s-48gb: 16}}
      priority_classes:
        - {name: training, value: 1000, description: Batch training}
        - {name: serving-critical, value: 100000}
      prometheus_operator: true
    - name: operator
      device_plugin: {install: gpu-operator, mig_strategy: single}
      queues:
        cohort: operator
        teams: [{team: ops, quota: {h100-sxm-80gb/3g.40gb: 8}}]
    - name: aws
      provider: eks
      region: us-east-1
      queues:
        cohort: aws
        teams: [{team: nlp, quota: {l40s-48gb: 16}}]
    - name: gcp
      provider: gke
      region: europe-west4
      project: mesa-gpu-prod
      device_plugin: {mig_strategy: single}
      queues:
        cohort: gcp
        teams: [{team: vision, quota: {h100-sxm-80gb/1g.10gb: 112}}]
observability:
  dcgm_exporter: {port: 9500}
  labels: {site: mesa, region: west}
"""


# --- harness ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """One registered resource: its Pulumi type, logical name and inputs as sent."""

    type: str
    name: str
    inputs: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[1]


class Recorder(pulumi.runtime.Mocks):
    """Mock monitor that records registrations and answers the EKS cluster look-up."""

    def __init__(self) -> None:
        self.resources: list[Resource] = []
        self.calls: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(Resource(args.typ, args.name, _whole_numbers(args.inputs)))
        outputs = dict(args.inputs)
        if args.typ == "aws:iam/role:Role":
            outputs["arn"] = f"arn:aws:iam::123456789012:role/{args.inputs['name']}"
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            # EKS names the node group's Auto Scaling group; the program tags it
            outputs["resources"] = [{"autoscalingGroups": [{"name": f"eks-{args.name}-asg"}]}]
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.calls.append(args.token)
        if args.token == "aws:eks/getCluster:getCluster":
            return {"name": args.args["name"], "vpcConfig": {"subnetIds": SUBNETS}}
        return {}


def _whole_numbers(value: Any) -> Any:
    """Inputs travel as protobuf Structs, where every number is a double; JSON has no such
    distinction, so 9400.0 goes to the API server as 9400. Undo it for schema checks."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return copy.deepcopy(value)


@dataclass
class Run:
    """What one program run registered, with lookups by kind and name."""

    resources: list[Resource]
    calls: list[str]
    project: Path
    version: str
    by_kind: dict[str, list[Resource]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for resource in self.resources:
            self.by_kind.setdefault(resource.kind, []).append(resource)

    def kinds(self) -> set[str]:
        return set(self.by_kind)

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [r.inputs for r in self.by_kind.get(kind, [])]

    def one(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        found = [
            r
            for r in self.all(kind)
            if r["metadata"]["name"] == name and r["metadata"].get("namespace") == namespace
        ]
        assert len(found) == 1, (kind, name, namespace, [r["metadata"] for r in self.all(kind)])
        return found[0]

    def kubernetes_objects(self) -> Iterator[dict[str, Any]]:
        for resource in self.resources:
            if resource.type.startswith("kubernetes:") and "apiVersion" in resource.inputs:
                yield resource.inputs


@cache
def rendered(source: str, folder: Path) -> Path:
    """Render blueprint text (or a path) into ``folder`` once per session."""
    text = Path(source).read_text() if source.endswith(".yaml") else source
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    estate = pipeline.validate_document(document).estate
    for path, output in render(estate).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    return folder


def run_project(project: Path, config: dict[str, str] | None = None) -> Run:
    """Run a rendered project's program in-process with a fresh mock monitor and stack."""
    settings = yaml.safe_load((project / "Pulumi.yaml").read_text())
    name = settings["name"]
    # project config as Pulumi reads it: the project's keys' default, other namespaces' value
    project_config = {
        (key if ":" in key else f"{name}:{key}"): body.get("value", body.get("default"))
        for key, body in settings.get("config", {}).items()
    }
    stack = json.loads((project / "cluster.json").read_text())["estate"]
    stack_file = project / f"Pulumi.{stack}.yaml"
    stack_config = (
        yaml.safe_load(stack_file.read_text()).get("config") or {} if stack_file.is_file() else {}
    )
    pulumi.runtime.set_all_config({**project_config, **stack_config, **(config or {})})
    recorder = Recorder()
    pulumi_settings.ROOT.set(None)  # a new root stack resource for this run
    pulumi.runtime.set_mocks(recorder, project=name, stack=stack, preview=False)
    program = str(project / "__main__.py")
    _sync_await(pulumi_stack.run_pulumi_func(lambda: runpy.run_path(program, run_name="__main__")))
    version = yaml.safe_load((project / "cluster.json").read_text())["kubernetes_version"]
    return Run(recorder.resources, recorder.calls, project, version)


@pytest.fixture(scope="session")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pulumi")


def project(out: Path, blueprint: str, cluster: str) -> Path:
    label = blueprint if blueprint.endswith(".yaml") else "mesa"
    source = str(BLUEPRINTS / blueprint) if blueprint.endswith(".yaml") else blueprint
    return rendered(source, out / label) / "pulumi" / cluster


def run(out: Path, blueprint: str, cluster: str) -> Run:
    return run_project(project(out, blueprint, cluster))


ALL_PROJECTS = [
    ("lab.yaml", "lab-k8s"),
    ("campus.yaml", "serving"),
    ("campus.yaml", "burst"),
    (MESA, "onprem"),
    (MESA, "operator"),
    (MESA, "aws"),
    (MESA, "gcp"),
]
IDS = ["lab-k8s", "serving", "burst", "onprem", "operator", "aws", "gcp"]


# --- the example clusters ------------------------------------------------------------------

CORE_ONPREM = {
    "Namespace",
    "ResourceQuota",
    "NodePatch",
    "RuntimeClass",
    "ConfigMap",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "DaemonSet",
    "Service",
    "Release",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
}


def test_lab_cluster_creates_the_on_prem_gpu_stack(out: Path) -> None:
    result = run(out, "lab.yaml", "lab-k8s")
    assert result.kinds() == CORE_ONPREM
    names = {r["metadata"]["name"] for r in result.all("DaemonSet")}
    assert names == {"nvidia-device-plugin", "gpu-feature-discovery", "dcgm-exporter"}
    assert {r["metadata"]["name"] for r in result.all("NodePatch")} == {"lab-k8s-01", "lab-k8s-02"}


def test_campus_serving_creates_tenancy_sharing_metrics_and_queues(out: Path) -> None:
    result = run(out, "campus.yaml", "serving")
    assert result.kinds() == CORE_ONPREM | {
        "PriorityClass",
        "ServiceMonitor",
        "WorkloadPriorityClass",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
    }
    assert len(result.all("NodePatch")) == 16


def test_campus_burst_creates_a_gke_node_pool_and_no_device_plugin(out: Path) -> None:
    result = run(out, "campus.yaml", "burst")
    assert result.kinds() == {
        "Namespace",
        "ResourceQuota",
        "DaemonSet",
        "Service",
        "Release",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "NodePool",
        "ConfigMap",
    }
    assert [r["metadata"]["name"] for r in result.all("DaemonSet")] == ["dcgm-exporter-gke"]
    assert [r["metadata"]["name"] for r in result.all("ConfigMap")] == ["dcgm-exporter-counters"]


def test_dcgm_exporters_use_the_counters_of_the_slurm_side(out: Path) -> None:
    """The DaemonSet reads the counter list the Ansible role installs on Slurm nodes."""
    result = run(out, "campus.yaml", "serving")
    role_counters = (ROOT / "playbooks/roles/dcgm_exporter/files/counters.csv").read_text()
    (counters,) = [
        r for r in result.all("ConfigMap") if r["metadata"]["name"] == "dcgm-exporter-counters"
    ]
    assert counters["data"]["counters.csv"] == role_counters
    (exporter,) = [r for r in result.all("DaemonSet") if r["metadata"]["name"] == "dcgm-exporter"]
    container = exporter["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/counters.csv"


def test_mesa_clusters_create_what_their_provider_and_install_need(out: Path) -> None:
    onprem = run(out, MESA, "onprem")
    assert onprem.kinds() == CORE_ONPREM | {
        "PriorityClass",
        "ServiceMonitor",
        "WorkloadPriorityClass",
        "Topology",
    }
    assert {r["metadata"]["name"] for r in onprem.all("DaemonSet")} == {
        "nvidia-device-plugin",
        "gpu-feature-discovery",
        "nvidia-mps-control-daemon",
        "nvidia-mig-manager",
        "dcgm-exporter",
    }
    operator = run(out, MESA, "operator")
    assert [r["metadata"]["name"] for r in operator.all("DaemonSet")] == ["dcgm-exporter"]
    assert {r["name"] for r in operator.all("Release")} == {"gpu-operator", "kueue"}
    aws = run(out, MESA, "aws")
    assert {"NodeGroup", "Role", "RolePolicyAttachment"} <= aws.kinds()
    assert "NodePatch" not in aws.kinds()
    gcp = run(out, MESA, "gcp")
    assert "NodePool" in gcp.kinds() and "RuntimeClass" not in gcp.kinds()


# --- tenancy ------------------------------------------------------------------------------


def test_a_namespace_per_team_labelled_with_team_estate_and_gid(out: Path) -> None:
    result = run(out, "campus.yaml", "serving")
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
    serving = run(out, "campus.yaml", "serving")

    def hard(result: Run, namespace: str) -> dict[str, str]:
        return dict(result.one("ResourceQuota", "gpu", namespace)["spec"]["hard"])

    # l40s time-sliced 4 ways: vision 32 nominal + 16 borrowable GPUs, nlp may borrow all 64
    assert hard(serving, "vision") == {"requests.nvidia.com/gpu": "192"}
    assert hard(serving, "nlp-prod") == {"requests.nvidia.com/gpu": "256"}
    assert hard(serving, "climate") == {"requests.nvidia.com/gpu": "0"}
    onprem = run(out, MESA, "onprem")
    vision = hard(onprem, "vision")
    assert vision["requests.nvidia.com/mig-3g.40gb"] == "20"  # 16 nominal + 4 borrowed
    assert set(vision) == {
        "requests.nvidia.com/gpu",
        "requests.nvidia.com/mig-1g.10gb",
        "requests.nvidia.com/mig-2g.20gb",
        "requests.nvidia.com/mig-3g.40gb",
    }


def test_priority_classes_and_workload_priority_classes_match(out: Path) -> None:
    result = run(out, MESA, "onprem")
    classes = {r["metadata"]["name"]: r for r in result.all("PriorityClass")}
    workload = {r["metadata"]["name"]: r for r in result.all("WorkloadPriorityClass")}
    assert set(classes) == set(workload) == {"training", "serving-critical"}
    assert classes["training"]["value"] == workload["training"]["value"] == 1000
    assert classes["training"]["description"] == "Batch training"
    assert classes["serving-critical"]["globalDefault"] is False


# --- nodes ----------------------------------------------------------------------------------


def test_every_on_prem_node_gets_its_pool_labels_and_never_its_taints(out: Path) -> None:
    result = run(out, "campus.yaml", "serving")
    patches = result.all("NodePatch")
    assert len(patches) == 16
    node = result.one("NodePatch", "k8s-l40s-07")
    labels = node["metadata"]["labels"]
    assert labels["tier"] == "inference"
    assert labels["nvidia.com/device-plugin.config"] == "l40s-serve"
    assert labels["nvidia.com/mig.config"] == "all-disabled"
    assert labels["estategen.io/gpu-model"] == "l40s-48gb"
    # spec.taints is an atomic list: applying it would remove taints others set; kubelet
    # registers the pool's taints (Ansible), and the GPU deploy labels mig-manager flips
    assert "spec" not in node
    assert not [k for k in labels if k.startswith("nvidia.com/gpu.deploy.")]
    assert node["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert result.one("RuntimeClass", "nvidia")["handler"] == "nvidia"


def test_mig_nodes_select_their_layout_and_switch_labels_follow_the_hostlist(out: Path) -> None:
    result = run(out, MESA, "onprem")
    mig = result.one("NodePatch", "k8s-a100-03")["metadata"]["labels"]
    assert mig["nvidia.com/mig.config"] == "a100-mig"
    assert mig["estategen.io/mig"] == "true"
    switches = {
        r["metadata"]["name"]: r["metadata"]["labels"].get("estategen.io/switch")
        for r in result.all("NodePatch")
        if r["metadata"]["name"].startswith("k8s-l40s")
    }
    assert switches == {f"k8s-l40s-0{i}": "leaf-01" if i <= 3 else "leaf-02" for i in range(1, 7)}
    cpu = result.one("NodePatch", "k8s-cpu-01")
    assert cpu["metadata"]["labels"] == {
        "estategen.io/estate": "mesa",
        "estategen.io/pool": "cpu-k8s",
    }
    assert "spec" not in cpu


# --- device plugin, MIG, GFD ----------------------------------------------------------------


def plugin_configs(result: Run) -> dict[str, Any]:
    configmap = result.one("ConfigMap", "nvidia-device-plugin-configs", "nvidia-gpu")
    return {name: yaml.safe_load(text) for name, text in configmap["data"].items()}


def test_device_plugin_config_time_slices_the_serving_pool(out: Path) -> None:
    configs = plugin_configs(run(out, "campus.yaml", "serving"))
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
    result = run(out, MESA, "onprem")
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
    result = run(out, MESA, "onprem")
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
    assert env["DEFAULT_CONFIG"] in plugin_configs(result)


def test_gpu_operator_release_carries_the_same_choices(out: Path) -> None:
    result = run(out, MESA, "operator")
    (release,) = [r for r in result.all("Release") if r["name"] == "gpu-operator"]
    values = release["values"]
    assert release["version"].startswith("v")
    assert values["mig"] == {"strategy": "single"}
    assert values["devicePlugin"]["config"]["name"] in {
        r["metadata"]["name"] for r in result.all("ConfigMap")
    }
    assert values["migManager"]["config"]["name"] == "nvidia-mig-parted-config"
    assert values["dcgmExporter"] == {"enabled": False}
    label = result.one("NodePatch", "k8s-h100-01")["metadata"]["labels"]
    parted = result.one("ConfigMap", "nvidia-mig-parted-config", "nvidia-gpu")["data"]
    layouts = yaml.safe_load(parted["config.yaml"])["mig-configs"]
    assert layouts[label["nvidia.com/mig.config"]][0]["mig-devices"] == {"3g.40gb": 2}


# --- observability --------------------------------------------------------------------------


def test_dcgm_exporter_service_and_monitor_carry_the_estate_labels(out: Path) -> None:
    result = run(out, "campus.yaml", "serving")
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
    result = run(out, MESA, "gcp")
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
    result = run(out, "campus.yaml", "serving")
    flavor = result.one("ResourceFlavor", "l40s-48gb")
    selected = {
        r["metadata"]["name"]
        for r in result.all("NodePatch")
        if flavor["spec"]["nodeLabels"].items() <= r["metadata"]["labels"].items()
    }
    assert selected == {f"k8s-l40s-{i:02d}" for i in range(1, 17)}
    assert flavor["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def test_cluster_queue_per_team_in_the_cohort_with_a_local_queue(out: Path) -> None:
    result = run(out, "campus.yaml", "serving")
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
    result = run(out, MESA, "onprem")
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
    # 4 MIG instances per A100, 128 threads and 1 TiB per 8-GPU node: 4 CPUs, 32 GiB each
    assert flavors["a100-sxm-80gb-3g.40gb"]["cpu"]["nominalQuota"] == "64000m"
    assert flavors["a100-sxm-80gb-3g.40gb"]["memory"]["nominalQuota"] == "524288Mi"
    assert flavors["l40s-48gb"]["nvidia.com/gpu"]["nominalQuota"] == "16"  # 8 x 2 replicas


def test_every_flavor_lists_every_covered_resource_in_order(out: Path) -> None:
    """Kueue's CEL rules, which a JSON Schema check does not evaluate."""
    for blueprint, cluster in ALL_PROJECTS:
        result = run(out, blueprint, cluster)
        flavors = {r["metadata"]["name"] for r in result.all("ResourceFlavor")}
        for queue in result.all("ClusterQueue"):
            for group in queue["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    assert flavor["name"] in flavors
                    names = [r["name"] for r in flavor["resources"]]
                    assert names == group["coveredResources"], (cluster, flavor["name"])


# --- managed pools --------------------------------------------------------------------------


def test_gke_node_pool_for_the_campus_burst_cluster(out: Path) -> None:
    result = run(out, "campus.yaml", "burst")
    (pool,) = result.all("NodePool")
    assert pool["cluster"] == "burst" and pool["location"] == "us-central1"
    assert pool["autoscaling"]["totalMinNodeCount"] == 0
    assert pool["autoscaling"]["totalMaxNodeCount"] == 16
    config = pool["nodeConfig"]
    assert config["machineType"] == "a3-highgpu-8g"
    assert config["guestAccelerators"] == [
        {
            "type": "nvidia-h100-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
        }
    ]
    assert config["labels"]["estategen.io/gpu-model"] == "h100-sxm-80gb"
    assert "nvidia.com/device-plugin.config" not in config["labels"]


def test_gke_mig_partitions_shared_by_time_slicing(out: Path) -> None:
    result = run(out, MESA, "gcp")
    (pool,) = result.all("NodePool")
    (accelerator,) = pool["nodeConfig"]["guestAccelerators"]
    assert accelerator["gpuPartitionSize"] == "1g.10gb"
    assert accelerator["gpuSharingConfig"] == {
        "gpuSharingStrategy": "TIME_SHARING",
        "maxSharedClientsPerGpu": 2,
    }
    assert pool["project"] == "mesa-gpu-prod"
    # GKE exposes every partition as nvidia.com/gpu: 112 partitions x 2 clients
    queue = result.one("ClusterQueue", "vision")["spec"]["resourceGroups"][0]
    assert queue["flavors"][0]["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": "224"}]


def test_eks_node_group_uses_the_gpu_ami_a_node_role_and_the_cluster_subnets(out: Path) -> None:
    result = run(out, MESA, "aws")
    (group,) = result.all("NodeGroup")
    (role,) = [r for r in result.all("Role") if r["name"].endswith("-nodes")]
    assert group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group["instanceTypes"] == ["g6e.12xlarge"]
    assert group["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 0}
    assert group["subnetIds"] == SUBNETS
    assert group["nodeRoleArn"].endswith(f"role/{role['name']}")
    assert group["taints"] == [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}]
    assert group["labels"]["nvidia.com/device-plugin.config"] == "eks-l40s"
    assert "aws:eks/getCluster:getCluster" in result.calls
    policies = {r["policyArn"].rsplit("/", 1)[1] for r in result.all("RolePolicyAttachment")}
    assert policies == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
    }


# --- API schemas ----------------------------------------------------------------------------

CUSTOM_GROUPS = ("kueue.x-k8s.io/", "monitoring.coreos.com/")


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_core_objects_are_valid_for_the_target_kubernetes(
    out: Path, blueprint: str, cluster: str
) -> None:
    result = run(out, blueprint, cluster)
    checked = 0
    for obj in result.kubernetes_objects():
        if obj["apiVersion"].startswith(CUSTOM_GROUPS):
            continue
        try:
            kubernetes_validate.validate(obj, result.version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {err.message}")
        checked += 1
    assert checked > 0


def test_strict_validation_rejects_a_misspelt_field(out: Path) -> None:
    result = run(out, "lab.yaml", "lab-k8s")
    ds = copy.deepcopy(result.one("DaemonSet", "nvidia-device-plugin", "nvidia-gpu"))
    ds["spec"]["template"]["spec"]["tolerationz"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, result.version, strict=True)


def kueue_violations(
    obj: dict[str, Any], old: dict[str, Any] | None = None, closed: bool = True
) -> list[str]:
    """What Kueue's API server (the pinned release's CRDs, CEL rules included) refuses."""
    if not KUEUE_CRDS.is_dir():
        pytest.skip(f"Kueue CRDs not found at {KUEUE_CRDS}")
    return [str(v) for v in crd_set(KUEUE_CRDS).validate(obj, old, closed)]


def test_kueue_crds_are_those_of_the_pinned_release(out: Path) -> None:
    pinned = json.loads((project(out, "lab.yaml", "lab-k8s") / "cluster.json").read_text())
    (kueue,) = [r for r in pinned["releases"] if r["name"] == "kueue"]
    assert KUEUE_CRDS.name == f"kueue-v{kueue['version']}"


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_kueue_objects_satisfy_the_pinned_crds_and_their_cel_rules(
    out: Path, blueprint: str, cluster: str
) -> None:
    result = run(out, blueprint, cluster)
    kueue = [
        o for o in result.kubernetes_objects() if o["apiVersion"].startswith("kueue.x-k8s.io/")
    ]
    assert {o["apiVersion"] for o in kueue} == {"kueue.x-k8s.io/v1beta2"}
    for obj in kueue:
        assert kueue_violations(obj) == [], (obj["kind"], obj["metadata"]["name"])


def test_closed_kueue_schema_rejects_the_v1beta1_field_name(out: Path) -> None:
    queue = copy.deepcopy(run(out, "lab.yaml", "lab-k8s").one("ClusterQueue", "vision"))
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


def _estate(source: str) -> Any:
    text = Path(source).read_bytes() if source.endswith(".yaml") else source.encode()
    return pipeline.validate_document(load.parse_blueprint(text, "blueprint.yaml")).estate


@cache
def written(source: str, out: Path) -> Path:
    """``estategen render`` of a blueprint (text or path), MANIFEST.json included, once."""
    blueprint = Path(source).read_bytes() if source.endswith(".yaml") else source.encode()
    estate = _estate(source)
    folder = out / "written" / hashlib.sha256(blueprint).hexdigest()[:12]
    if not folder.is_dir():
        write_tree(with_manifest(render(estate), blueprint, estate.name), folder)
    return folder


@dataclass(frozen=True)
class Transition:
    """Kueue objects the API server refuses to update, and the plan's replacements."""

    refused: dict[tuple[str, str], tuple[list[str], str]]  # (cluster, "Kind name") -> why, URN
    replaced: dict[tuple[str, str], Any]  # (cluster, subject) -> the plan's Change


def transition(out: Path, before: str, after: str) -> Transition:
    old, new = written(before, out), written(after, out)
    estate = _estate(after)
    result = plan(estate, render(estate), old)
    replaced = {
        (c.file.split("/")[1], c.subject): c
        for f in result.files
        for c in f.changes
        if c.kind == "kubernetes-replace"
    }
    refused: dict[tuple[str, str], tuple[list[str], str]] = {}
    clusters = {p.parent.name for p in old.glob("pulumi/*/Pulumi.yaml")}
    for cluster in sorted(clusters & {p.parent.name for p in new.glob("pulumi/*/Pulumi.yaml")}):
        project_name = yaml.safe_load((old / "pulumi" / cluster / "Pulumi.yaml").read_text())
        was, now = (
            {
                (r.kind, r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"]): r
                for r in run_project(folder / "pulumi" / cluster).resources
                if r.type.startswith("kubernetes:kueue.x-k8s.io/")
            }
            for folder in (old, new)
        )
        for key in sorted(was.keys() & now.keys(), key=str):
            violations = kueue_violations(now[key].inputs, was[key].inputs)
            if violations:
                resource = was[key]
                urn = (
                    f"urn:pulumi:{estate.name}::{project_name['name']}::"
                    f"{resource.type}::{resource.name}"
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


# --- the program itself ---------------------------------------------------------------------


def test_program_refuses_data_of_another_cluster(out: Path) -> None:
    folder = project(out, "campus.yaml", "serving")
    with pytest.raises(Exception, match="stack config says cluster 'burst'"):
        run_project(folder, {"campus-serving:cluster": "burst"})


def test_project_config_alone_runs_the_program(out: Path) -> None:
    folder = project(out, "campus.yaml", "burst")
    assert not list(folder.glob("Pulumi.*.*"))  # no stack settings file: Pulumi writes it
    assert run_project(folder).resources


def test_program_refuses_a_stack_setting_that_overrides_the_blueprints_region(out: Path) -> None:
    folder = project(out, "campus.yaml", "burst")
    with pytest.raises(Exception, match="stack config says gcp:region 'europe-west4'"):
        run_project(folder, {"gcp:region": "europe-west4"})


def test_two_runs_register_identical_resources(out: Path) -> None:
    first = run(out, MESA, "onprem")
    second = run(out, MESA, "onprem")

    # registrations complete in any order; the set of resources and their inputs may not vary
    def key(r: Resource) -> tuple[str, str]:
        return (r.type, r.name)

    assert sorted(first.resources, key=key) == sorted(second.resources, key=key)
    assert len({(r.type, r.name) for r in first.resources}) == len(first.resources)


# --- upstream requirements schemas cannot see (docs/kubernetes-upstream-requirements.md) ------


def pod_specs(result: Run) -> Iterator[tuple[str, dict[str, Any]]]:
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
    for name, spec in pod_specs(run(out, blueprint, cluster)):
        assert not (spec.get("hostPID") and spec.get("shareProcessNamespace")), name


def test_mps_daemon_runs_in_the_hosts_pid_namespace_and_the_plugin_sees_its_shm(
    out: Path,
) -> None:
    """NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin:
    daemonset-mps-control-daemon.yml (hostPID, `mps.enableHostPID`, R1.18) and
    daemonset-device-plugin.yml (host <mps root>/shm mounted at /dev/shm, R1.2)."""
    result = run(out, MESA, "onprem")
    mps = result.one("DaemonSet", "nvidia-mps-control-daemon", "nvidia-gpu")
    assert mps["spec"]["template"]["spec"]["hostPID"] is True
    plugin = result.one("DaemonSet", "nvidia-device-plugin", "nvidia-gpu")["spec"]["template"]
    volumes = {v["name"]: v for v in plugin["spec"]["volumes"]}
    container = next(c for c in plugin["spec"]["containers"] if c["name"] == "nvidia-device-plugin")
    shm = next(m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm")
    assert volumes[shm["name"]]["hostPath"]["path"] == "/run/nvidia/mps/shm"


def test_feature_discovery_writes_node_features_in_its_own_namespace(out: Path) -> None:
    """NVIDIA/k8s-device-plugin v0.20.0 daemonset-gfd.yml: env NAMESPACE and POD_NAME from the
    pod's fields (the namespace flag defaults to `default`, internal/flags/node.go; R1.22),
    and templates/role.yml grants `get` on pods for the owner reference (R1.23)."""
    result = run(out, MESA, "onprem")
    gfd = result.one("DaemonSet", "gpu-feature-discovery", "nvidia-gpu")["spec"]["template"]
    container = next(c for c in gfd["spec"]["containers"] if c["name"] == "gpu-feature-discovery")
    fields = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"]
        for e in container["env"]
        if "valueFrom" in e
    }
    assert fields["NAMESPACE"] == "metadata.namespace"
    assert fields["POD_NAME"] == "metadata.name"
    account = gfd["spec"]["serviceAccountName"]
    role = result.one("ClusterRole", account)
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
    result = run(out, blueprint, cluster)
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
