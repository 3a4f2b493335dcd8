"""The rendered Pulumi projects, run in-process under Pulumi's mocks.

Each test renders a blueprint, runs one project's ``__main__.py`` as the Pulumi CLI would (its
``Pulumi.yaml`` project and its project config) with a fresh mock monitor, and asserts on what
the program registered: exactly the objects of ``kubernetes/<cluster>/`` under stable logical
names, the Helm releases with the values rendered next to them, and the cloud resources only
Pulumi creates (GKE node pools, EKS node groups and their IAM role). What the objects hold is
checked on the manifests themselves, without Pulumi, in tests/test_kubernetes_objects.py.
"""

from __future__ import annotations

import copy
import json
import runpy
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime import stack as pulumi_stack
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.sync_await import _sync_await

from k8s_harness import (
    ALL_PROJECTS,
    BLUEPRINTS,
    IDS,
    MESA,
    STORAGE_ESTATE,
    Obj,
    estate_folder,
    logical_name,
    manifests,
    rendered,
)

__all__ = ["MESA", "rendered", "run_project"]  # tests/test_facts.py runs projects too

SUBNETS = ["subnet-0a1b2c3d", "subnet-4e5f6a7b"]


# --- harness ------------------------------------------------------------------------------

Key = tuple[str, str]  # (Pulumi type, logical name)


@dataclass(frozen=True)
class Resource:
    """One registered resource: its Pulumi type, logical name and inputs as sent."""

    type: str
    name: str
    inputs: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[1]

    @property
    def key(self) -> Key:
        return (self.type, self.name)


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


class DependencyMonitor(MockMonitor):
    """Pulumi's mock monitor, keeping what each registration waits for.

    ``MockResourceArgs`` carries no dependencies, but the register request does: the URNs of
    ``depends_on`` and of the resources whose outputs the inputs use, as the engine gets them.
    """

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.dependencies: dict[Key, frozenset[Key]] = {}
        self.deleted_first: set[Key] = set()  # registered with delete_before_replace
        self.retained: set[Key] = set()  # registered with retain_on_delete
        self.replaced_on: dict[Key, frozenset[str]] = {}  # registered with replace_on_changes

    def RegisterResource(self, request: Any) -> Any:
        self.dependencies[(request.type, request.name)] = frozenset(
            _key_of(urn) for urn in request.dependencies
        )
        if request.deleteBeforeReplace:
            self.deleted_first.add((request.type, request.name))
        if request.retainOnDelete:
            self.retained.add((request.type, request.name))
        if request.replaceOnChanges:
            self.replaced_on[(request.type, request.name)] = frozenset(request.replaceOnChanges)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


def _key_of(urn: str) -> Key:
    """``urn:pulumi:<stack>::<project>::[<parent type>$]<type>::<name>`` as (type, name)."""
    _, qualified_type, name = urn.rsplit("::", 2)
    return (qualified_type.rsplit("$", 1)[-1], name)


def _whole_numbers(value: Any) -> Any:
    """Inputs travel as protobuf Structs, where every number is a double; JSON has no such
    distinction, so 9400.0 goes to the API server as 9400. Undo it for comparisons."""
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
    dependencies: dict[Key, frozenset[Key]]
    project: Path
    deleted_first: frozenset[Key] = frozenset()  # replaced by deleting, then creating
    retained: frozenset[Key] = frozenset()  # left in the cluster when taken out of the program
    # the inputs whose change replaces a resource, though its provider would update it
    replaced_on: dict[Key, frozenset[str]] = field(default_factory=dict)
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

    def kubernetes_objects(self) -> Iterator[Resource]:
        """Registered Kubernetes objects: every kubernetes: resource but the Helm releases."""
        for resource in self.resources:
            if resource.type.startswith("kubernetes:") and resource.kind != "Release":
                yield resource

    def waits_for(self, resource: Resource) -> frozenset[Key]:
        return self.dependencies[resource.key]


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
    monitor = DependencyMonitor(recorder)
    pulumi_settings.ROOT.set(None)  # a new root stack resource for this run
    pulumi.runtime.set_mocks(recorder, project=name, stack=stack, preview=False, monitor=monitor)
    program = str(project / "__main__.py")
    _sync_await(pulumi_stack.run_pulumi_func(lambda: runpy.run_path(program, run_name="__main__")))
    return Run(
        recorder.resources,
        recorder.calls,
        monitor.dependencies,
        project,
        frozenset(monitor.deleted_first),
        frozenset(monitor.retained),
        dict(monitor.replaced_on),
    )


@pytest.fixture(scope="session")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pulumi")


def project(out: Path, blueprint: str, cluster: str) -> Path:
    return estate_folder(out, blueprint) / "pulumi" / cluster


def run(out: Path, blueprint: str, cluster: str) -> Run:
    return run_project(project(out, blueprint, cluster))


def cluster_data(out: Path, blueprint: str, cluster: str) -> Obj:
    data: Obj = json.loads((project(out, blueprint, cluster) / "cluster.json").read_text())
    return data


# --- the example clusters ------------------------------------------------------------------

# every cluster's team namespaces: a quota, the team's RoleBindings and NetworkPolicy each,
# and the ClusterRole of the job kinds the cluster runs
TENANCY = {"Namespace", "ResourceQuota", "RoleBinding", "NetworkPolicy", "ClusterRole"}
# the device plugin, GFD and the MPS daemon are NVIDIA's chart, a Release
CORE_ONPREM = TENANCY | {
    "RuntimeClass",
    "ConfigMap",
    "DaemonSet",
    "Service",
    "Release",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
}
QUEUES = TENANCY | {"Release", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
EKS_NODES = {"NodeGroup", "Role", "RolePolicyAttachment"}
# a node group that grows from zero: the Cluster Autoscaler's role, its tags on the group
EKS_AUTOSCALER = {"RolePolicy", "PodIdentityAssociation", "Tag"}

REGISTERED_KINDS = {
    "lab-k8s": CORE_ONPREM,
    "serving": CORE_ONPREM
    | {
        "PriorityClass",
        "ServiceMonitor",
        "PrometheusRule",
        "WorkloadPriorityClass",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
    },
    # GKE runs its own device plugin: only the DCGM exporter and its counters
    "burst": QUEUES | {"DaemonSet", "Service", "ConfigMap", "NodePool"},
    # mig-manager's account and its binding
    "onprem": CORE_ONPREM
    | {"PriorityClass", "ServiceMonitor", "PrometheusRule", "WorkloadPriorityClass", "Topology"}
    | {"ServiceAccount", "ClusterRoleBinding"},
    # the GPU Operator brings the device plugin, its RuntimeClass and service accounts
    "operator": QUEUES | {"ConfigMap", "DaemonSet", "Service"},
    "aws": CORE_ONPREM | EKS_NODES | EKS_AUTOSCALER,
    "gcp": QUEUES | {"DaemonSet", "Service", "ConfigMap", "NodePool"},
}


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_each_example_cluster_registers_the_kinds_its_provider_and_install_need(
    out: Path, blueprint: str, cluster: str
) -> None:
    assert run(out, blueprint, cluster).kinds() == REGISTERED_KINDS[cluster]


# --- exactly the rendered objects, under stable names --------------------------------------

# (type, logical name) of every resource besides the Kubernetes objects, per example cluster
RELEASE = "kubernetes:helm.sh/v3:Release"
DEVICE_PLUGIN, KUEUE = (RELEASE, "nvidia-device-plugin"), (RELEASE, "kueue")
EKS_ROLE = [
    ("aws:iam/role:Role", "aws-nodes"),
    *(
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", f"aws-nodes-{policy}")
        for policy in (
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryReadOnly",
        )
    ),
]
OTHER_RESOURCES = {
    "lab-k8s": {DEVICE_PLUGIN, KUEUE},
    "serving": {DEVICE_PLUGIN, KUEUE},
    "burst": {KUEUE, ("gcp:container/nodePool:NodePool", "gke-h100")},
    "onprem": {DEVICE_PLUGIN, KUEUE},
    "operator": {(RELEASE, "gpu-operator"), KUEUE},
    "aws": {
        DEVICE_PLUGIN,
        KUEUE,
        (RELEASE, "cluster-autoscaler"),
        ("aws:eks/nodeGroup:NodeGroup", "eks-l40s"),
        *EKS_ROLE,
        ("aws:iam/role:Role", "aws-cluster-autoscaler"),
        ("aws:iam/rolePolicy:RolePolicy", "aws-cluster-autoscaler"),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "aws-cluster-autoscaler"),
    },
    "gcp": {KUEUE, ("gcp:container/nodePool:NodePool", "gke-mig")},
}


def object_id(kind: str, obj: Obj) -> tuple[str, str | None, str]:
    return (kind, obj["metadata"].get("namespace"), obj["metadata"]["name"])


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_program_registers_exactly_the_rendered_objects_releases_and_cloud_resources(
    out: Path, blueprint: str, cluster: str
) -> None:
    result = run(out, blueprint, cluster)
    rendered_objects = {object_id(o["kind"], o): o for o in manifests(out, blueprint, cluster)}
    registered: dict[tuple[str, str | None, str], Obj] = {}
    for resource in result.kubernetes_objects():
        inputs = copy.deepcopy(resource.inputs)
        key = object_id(resource.kind, inputs)
        assert key not in registered, key
        registered[key] = inputs
    assert set(registered) == set(rendered_objects)
    for key, obj in rendered_objects.items():
        assert registered[key] == obj, key
    others = {
        r.key for r in result.resources if r.type == RELEASE or not r.type.startswith("kubernetes:")
    }
    # the autoscaler's node-template tags, one per label and taint, are checked in
    # tests/test_pulumi_cloud.py; here only that the discovery tags are among them
    tags = {name for kind, name in others if kind == "aws:autoscaling/tag:Tag"}
    assert (cluster == "aws") == bool(tags)
    if tags:
        assert {
            "eks-l40s-k8s.io/cluster-autoscaler/enabled",
            "eks-l40s-k8s.io/cluster-autoscaler/aws",
        } <= tags
    others = {(kind, name) for kind, name in others if kind != "aws:autoscaling/tag:Tag"}
    assert others == OTHER_RESOURCES[cluster]


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_every_object_is_registered_under_its_kind_namespace_and_name(
    out: Path, blueprint: str, cluster: str
) -> None:
    """Pulumi keys state by logical name: one derived from the object alone keeps an upgrade an
    update, and it is the name ``estategen plan`` writes in the URNs it replaces."""
    result = run(out, blueprint, cluster)
    for resource in result.kubernetes_objects():
        metadata = resource.inputs["metadata"]
        parts = [resource.inputs["kind"], metadata.get("namespace"), metadata["name"]]
        assert resource.name == "-".join(p for p in parts if p).lower(), resource.key
    assert {logical_name(o) for o in manifests(out, blueprint, cluster)} == {
        r.name for r in result.kubernetes_objects()
    }


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_namespaces_volumes_and_claims_stay_when_taken_out_of_the_program(
    out: Path, blueprint: str, cluster: str
) -> None:
    """As a GitOps prune leaves them (kustomize.toolkit.fluxcd.io/prune: disabled), pulumi up
    leaves a removed team's namespace, or a removed volume or claim, in the cluster: the
    program registers them with retain_on_delete, and nothing else."""
    result = run(out, blueprint, cluster)
    kept = {r.key for r in result.kubernetes_objects() if r.key in result.retained}
    expected = {
        r.key
        for r in result.kubernetes_objects()
        if r.kind in {"Namespace", "PersistentVolume", "PersistentVolumeClaim"}
    }
    assert expected and kept == expected == set(result.retained)


def test_logical_names_of_the_mesa_on_prem_cluster_do_not_change(out: Path) -> None:
    """Names earlier releases of estategen registered: renaming one replaces the object."""
    names = {(r.kind, r.name) for r in run(out, MESA, "onprem").resources}
    assert {
        ("Namespace", "namespace-nlp-prod"),
        ("ResourceQuota", "resourcequota-vision-gpu"),
        ("DaemonSet", "daemonset-nvidia-gpu-nvidia-mig-manager"),
        ("ConfigMap", "configmap-nvidia-gpu-nvidia-mig-parted-config"),
        ("ClusterRole", "clusterrole-nvidia-mig-manager"),
        ("PriorityClass", "priorityclass-training"),
        ("ResourceFlavor", "resourceflavor-a100-sxm-80gb-1g.10gb"),
        ("ClusterQueue", "clusterqueue-vision"),
        ("LocalQueue", "localqueue-nlp-prod-nlp"),
        ("Topology", "topology-network"),
        ("Release", "kueue"),
        ("Release", "nvidia-device-plugin"),
    } <= names


@pytest.mark.parametrize(("blueprint", "cluster"), ALL_PROJECTS, ids=IDS)
def test_objects_of_a_group_a_release_provides_wait_for_that_release(
    out: Path, blueprint: str, cluster: str
) -> None:
    """A ClusterQueue cannot be created before Kueue's chart has installed its CRD."""
    result = run(out, blueprint, cluster)
    providers = {
        group: (RELEASE, release["name"])
        for release in cluster_data(out, blueprint, cluster)["releases"]
        for group in release["provides"]
    }
    waiting = 0
    for resource in result.kubernetes_objects():
        group = resource.inputs["apiVersion"].rpartition("/")[0]
        if group in providers:
            assert providers[group] in result.waits_for(resource), resource.key
            waiting += 1
    assert waiting > 0  # every example cluster has queues


def test_objects_in_a_namespace_of_the_estate_wait_for_it(out: Path) -> None:
    result = run(out, MESA, "onprem")
    namespaces = {r["metadata"]["name"] for r in result.all("Namespace")}
    for resource in result.kubernetes_objects():
        namespace = resource.inputs["metadata"].get("namespace")
        if namespace in namespaces:
            expected = ("kubernetes:core/v1:Namespace", f"namespace-{namespace}")
            assert expected in result.waits_for(resource), resource.key


# --- Helm releases --------------------------------------------------------------------------

# campus with a storage class on its NFS home: the cluster needs csi-driver-nfs
CAMPUS_NFS = (
    (BLUEPRINTS / "campus.yaml")
    .read_text()
    .replace(
        '{name: home, type: nfs, source: "nfs01:/export/home", mount: /home}',
        '{name: home, type: nfs, source: "nfs01:/export/home", mount: /home, '
        "kubernetes: {storage_class: home}}",
    )
)
RELEASES = [
    *((b, c, sorted(n for t, n in OTHER_RESOURCES[c] if t == RELEASE)) for b, c in ALL_PROJECTS),
    (CAMPUS_NFS, "serving", ["csi-driver-nfs", "kueue", "nvidia-device-plugin"]),
]


@pytest.mark.parametrize(
    ("blueprint", "cluster", "names"), RELEASES, ids=[*IDS, "campus-nfs-serving"]
)
def test_helm_releases_install_the_pinned_charts_with_the_rendered_values(
    out: Path, blueprint: str, cluster: str, names: list[str]
) -> None:
    result = run(out, blueprint, cluster)
    folder = manifests(out, blueprint, cluster)
    pinned = {r["name"]: r for r in cluster_data(out, blueprint, cluster)["releases"]}
    registered = {r["name"]: r for r in result.all("Release")}
    assert sorted(registered) == sorted(pinned) == names
    for name, release in registered.items():
        wanted = pinned[name]
        assert release["name"] == name
        assert release["chart"] == wanted["chart"]
        assert release["version"] == wanted["version"] and "latest" not in release["version"]
        assert release["namespace"] == wanted["namespace"]
        assert release.get("createNamespace", False) == wanted["create_namespace"]
        assert release.get("repositoryOpts") == (
            {"repo": wanted["repository"]} if wanted["repository"] else None
        )
        assert wanted["values_file"] == f"helm/{name}.values.yaml"
        assert release["values"] == folder.values(name)


@pytest.mark.parametrize(
    ("cluster", "drivers"),
    [
        ("aws", ["aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver", "csi-driver-nfs"]),
        ("gcp", ["csi-driver-nfs"]),
        ("onprem", ["aws-mountpoint-s3-csi-driver", "csi-driver-nfs"]),
    ],
)
def test_storage_drivers_are_installed_where_a_class_needs_them(
    out: Path, cluster: str, drivers: list[str]
) -> None:
    """Each cluster installs the CSI drivers its storage classes use, pinned, with
    the rendered values; GKE's Managed Lustre driver is an add-on, not a release."""
    result = run_project(
        project(out, STORAGE_ESTATE, cluster),
        {
            f"mesa-{cluster}:s3_key_id": "AKIDEXAMPLE",
            f"mesa-{cluster}:s3_secret_key": "wJalrEXAMPLE",
        },
    )
    registered = {r["name"]: r for r in result.all("Release")}
    assert sorted(n for n in registered if "csi" in n) == drivers
    folder = manifests(out, STORAGE_ESTATE, cluster)
    for name in drivers:
        assert registered[name]["values"] == folder.values(name)


def test_s3_credentials_secret_is_made_from_secret_config_before_the_driver(out: Path) -> None:
    """R6.12 (mountpoint-s3-csi-driver v2.7.0 docs/CONFIGURATION.md 283-284: the secret must
    exist before installation): the program makes aws-secret in kube-system from the stack's
    secret config named by the blueprint's references, and the release waits for it."""
    result = run_project(
        project(out, STORAGE_ESTATE, "aws"),
        {"mesa-aws:s3_key_id": "AKIDEXAMPLE", "mesa-aws:s3_secret_key": "wJalrEXAMPLE"},
    )
    (secret,) = [r for r in result.resources if r.kind == "Secret"]
    assert secret.inputs["metadata"] == {"name": "aws-secret", "namespace": "kube-system"}
    # sent to the engine as a secret: Pulumi encrypts it in the state and masks it in output
    data = secret.inputs["stringData"]
    assert data[rpc._special_sig_key] == rpc._special_secret_sig
    assert data["value"] == {"key_id": "AKIDEXAMPLE", "access_key": "wJalrEXAMPLE"}
    (driver,) = [
        r
        for r in result.resources
        if r.kind == "Release" and r.inputs["name"] == "aws-mountpoint-s3-csi-driver"
    ]
    assert secret.key in result.waits_for(driver)


def test_s3_credentials_missing_from_the_stack_config_stop_the_program(out: Path) -> None:
    with pytest.raises(Exception, match=r"Missing required configuration variable 'mesa-aws:s3_"):
        run_project(project(out, STORAGE_ESTATE, "aws"))


def test_gpu_operator_release_takes_its_values_from_the_rendered_file(out: Path) -> None:
    (release,) = [
        r for r in run(out, MESA, "operator").all("Release") if r["name"] == "gpu-operator"
    ]
    values = manifests(out, MESA, "operator").values("gpu-operator")
    assert release["values"] == values and values["mig"] == {"strategy": "single"}
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}


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
    # its name is fixed: a replacement deletes it first (tests/test_pulumi_cloud.py: EKS, AKS)
    assert result.deleted_first == {("gcp:container/nodePool:NodePool", "gke-h100")}


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

    # registrations complete in any order; the resources, their inputs and what each waits
    # for may not vary
    def key(r: Resource) -> Key:
        return r.key

    assert sorted(first.resources, key=key) == sorted(second.resources, key=key)
    assert first.dependencies == second.dependencies
    assert len({r.key for r in first.resources}) == len(first.resources)


# --- Slurm hosted in Kubernetes -----------------------------------------------------------------


def test_hosted_slurm_objects_wait_for_the_operator_and_the_secrets_they_name(
    tmp_path: Path,
) -> None:
    """The Slinky objects are registered as rendered, after the slurm-operator release that
    installs their CRDs and after the Secrets the Controller names, which the program makes
    from the stack's secret config (never from a file)."""
    from test_kubernetes_slinky import ESTATE

    from estategen import load as blueprint_load
    from estategen.pipeline import validate_document
    from estategen.render import render
    from estategen.write import with_manifest, write_tree

    estate = validate_document(blueprint_load.parse_blueprint(ESTATE.encode(), "b.yaml")).estate
    write_tree(with_manifest(render(estate), ESTATE.encode(), estate.name), tmp_path / "out")
    folder = tmp_path / "out" / "pulumi" / "k8s"
    name = yaml.safe_load((folder / "Pulumi.yaml").read_text())["name"]
    result = run_project(folder, {f"{name}:slurm_key": "k" * 32, f"{name}:slurm_jwt": "j" * 32})
    secrets = {r.inputs["metadata"]["name"]: r for r in result.by_kind["Secret"]}
    assert set(secrets) == {"slurm-auth-slurm", "slurm-auth-jwt"}
    # the key travels as a Pulumi secret (the engine's secret signature), not as plain input
    data = secrets["slurm-auth-slurm"].inputs["stringData"]
    assert data["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
    assert data["value"] == {"slurm.key": "k" * 32}
    operator = (RELEASE, "slurm-operator")
    nodeset = next(r for r in result.kubernetes_objects() if r.kind == "NodeSet")
    assert nodeset.inputs["spec"]["replicas"] == 2
    for resource in result.kubernetes_objects():
        if resource.inputs.get("apiVersion") == "slinky.slurm.net/v1beta1":
            waits = result.waits_for(resource)
            assert operator in waits, resource.key
            assert {r.key for r in secrets.values()} <= waits, resource.key


# a cluster Argo CD syncs: lab.yaml's, with the engine named
SYNCED_LAB = (
    (BLUEPRINTS / "lab.yaml")
    .read_text()
    .replace(
        "    - name: lab-k8s\n",
        "    - name: lab-k8s\n"
        "      gitops: {engine: argocd, repository: 'https://git.example.org/platform/estate'}\n",
        1,
    )
)


def test_the_program_of_a_cluster_a_gitops_engine_syncs_makes_no_object_and_no_release(
    out: Path,
) -> None:
    """Two appliers of the same objects undo each other's changes: where Flux or Argo CD
    syncs the cluster (its releases included), the program keeps to what they cannot make."""
    assert "gitops:" in SYNCED_LAB
    assert run(out, SYNCED_LAB, "lab-k8s").resources == []
    assert run(out, "lab.yaml", "lab-k8s").kinds() == REGISTERED_KINDS["lab-k8s"]
