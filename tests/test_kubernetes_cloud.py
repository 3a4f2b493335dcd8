"""Managed node pools as data: AKS agent pool arguments and the EKS Cluster Autoscaler.

The generator computes every argument of the cloud resources (``estategen.kubernetes.cloud``,
``estategen.kubernetes.autoscaler``); the Pulumi program only passes them on. These tests read
them from the model without Pulumi: a blueprint fragment in, an argument out.
"""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from estategen import load, pipeline
from estategen.kubernetes import autoscaler, cloud, releases
from estategen.kubernetes.objects import ClusterView
from estategen.model import Estate
from estategen.renderers import pulumi as pulumi_renderer

from conftest import BLUEPRINTS

HYBRID = """\
estate: hybrid
versions: {kubernetes: "1.33"}
identity:
  teams: [{name: ml, gid: 30001}]
node_pools:
  - name: h100mig
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_ND96isr_H100_v5
    nodes: {min: 0, max: 3}
    gpus: {model: h100-sxm-80gb, count: 8, mig: [3g.40gb, 3g.40gb]}
    labels: {example.com/tier: train}
    taints:
      - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
      - {key: spot, effect: NoExecute}
  - name: nvl
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_NC80adis_H100_v5
    nodes: {min: 1, max: 2}
    gpus: {model: h100-nvl-94gb, count: 2, sharing: {time_slicing: 4}}
  - name: l40s-ts
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {min: 0, max: 4}
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  - name: l4-fixed
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6.xlarge
    nodes: {min: 2, max: 2}
    gpus: {model: l4-24gb, count: 1}
kubernetes:
  clusters:
    - name: az
      provider: aks
      region: westeurope
      resource_group: rg-gpu-prod
      device_plugin: {mig_strategy: single}
    - name: aws
      provider: eks
      region: eu-west-1
"""


def estate(text: str = HYBRID) -> Estate:
    document = load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")
    return pipeline.validate_document(document).estate


def view(name: str, text: str = HYBRID) -> ClusterView:
    built = estate(text)
    (cluster,) = [c for c in built.kubernetes_clusters if c.name == name]
    return ClusterView.of(built, cluster)


def pools(name: str, text: str = HYBRID) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in cloud.node_pools(view(name, text))}


# --- AKS ------------------------------------------------------------------------------------


def test_aks_pool_is_an_agent_pool_on_the_blueprints_cluster_and_resource_group() -> None:
    pool = pools("az")["h100mig"]
    assert pool["provider"] == "aks"
    args = pool["args"]
    assert args["resource_group_name"] == "rg-gpu-prod"
    assert args["resource_name_"] == "az"
    assert args["agent_pool_name"] == "h100mig"
    assert (args["mode"], args["os_type"], args["type"]) == (
        "User",
        "Linux",
        "VirtualMachineScaleSets",
    )
    assert args["vm_size"] == "Standard_ND96isr_H100_v5"


def test_aks_pool_autoscales_between_the_blueprints_bounds() -> None:
    args = pools("az")["h100mig"]["args"]
    assert args["enable_auto_scaling"] is True
    assert (args["min_count"], args["max_count"], args["count"]) == (0, 3, 0)
    nvl = pools("az")["nvl"]["args"]
    assert (nvl["min_count"], nvl["max_count"], nvl["count"]) == (1, 2, 1)


def test_aks_taints_are_written_as_aks_reads_them_and_labels_are_the_registration_labels() -> None:
    args = pools("az")["h100mig"]["args"]
    assert args["node_taints"] == ["nvidia.com/gpu=present:NoSchedule", "spot:NoExecute"]
    labels = args["node_labels"]
    assert labels["example.com/tier"] == "train"
    assert labels["estategen.io/pool"] == "h100mig"
    # the plain device plugin serves AKS nodes: its config and deploy labels are set at join
    assert labels["nvidia.com/device-plugin.config"] == "h100mig"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true"


def test_aks_installs_the_driver_and_partitions_mig_with_one_instance_profile() -> None:
    az = pools("az")
    assert az["h100mig"]["args"]["gpu_profile"] == {"driver": "Install"}
    assert az["h100mig"]["args"]["gpu_instance_profile"] == "MIG3g"
    assert "gpu_instance_profile" not in az["nvl"]["args"]


@pytest.mark.parametrize(
    ("model", "size", "layout", "profile"),
    [
        ("a100-sxm-40gb", "Standard_ND96asr_v4", ["1g.5gb"] * 7, "MIG1g"),
        ("a100-sxm-40gb", "Standard_ND96asr_v4", ["2g.10gb"] * 3, "MIG2g"),
        ("a100-sxm-80gb", "Standard_ND96amsr_A100_v4", ["1g.10gb"] * 7, "MIG1g"),
        ("h200-sxm-141gb", "Standard_ND96isr_H200_v5", ["4g.71gb"], "MIG4g"),
        ("h100-nvl-94gb", "Standard_NC40ads_H100_v5", ["7g.94gb"], "MIG7g"),
    ],
)
def test_aks_gpu_instance_profile_per_model(
    model: str, size: str, layout: list[str], profile: str
) -> None:
    count = 1 if size == "Standard_NC40ads_H100_v5" else 8
    text = HYBRID.replace(
        "instance_type: Standard_ND96isr_H100_v5", f"instance_type: {size}"
    ).replace(
        "gpus: {model: h100-sxm-80gb, count: 8, mig: [3g.40gb, 3g.40gb]}",
        f"gpus: {{model: {model}, count: {count}, mig: [{', '.join(layout)}]}}",
    )
    assert pools("az", text)["h100mig"]["args"]["gpu_instance_profile"] == profile


def test_a_cpu_aks_pool_has_no_gpu_settings() -> None:
    text = HYBRID.replace(
        "    gpus: {model: h100-nvl-94gb, count: 2, sharing: {time_slicing: 4}}\n", ""
    ).replace("Standard_NC80adis_H100_v5", "Standard_D8s_v5")
    args = pools("az", text)["nvl"]["args"]
    assert "gpu_profile" not in args and "gpu_instance_profile" not in args
    assert args["vm_size"] == "Standard_D8s_v5"


def test_aks_cluster_runs_our_device_plugin_and_no_cluster_autoscaler() -> None:
    names = {r.name for r in releases(view("az"))}
    assert "nvidia-device-plugin" in names
    assert autoscaler.RELEASE not in names


def test_aks_projects_pin_azure_native_and_take_the_clusters_location() -> None:
    built = estate()
    files = pulumi_renderer.pulumi_projects(built)
    az = files["pulumi/az/requirements.txt"].content.decode()
    assert f"pulumi-azure-native=={pulumi_renderer.PULUMI_AZURE_NATIVE}\n" in az
    assert "pulumi-azure-native" not in files["pulumi/aws/requirements.txt"].content.decode()
    (cluster,) = [c for c in built.kubernetes_clusters if c.name == "az"]
    config = pulumi_renderer.project_config(built, cluster)
    assert config["azure-native:location"] == "westeurope"
    data = pulumi_renderer.cluster_data(built, cluster)
    assert data["cluster"]["resource_group"] == "rg-gpu-prod"
    assert data["autoscaler"] is None


# --- EKS: the Cluster Autoscaler -------------------------------------------------------------


def test_a_growing_eks_cluster_gets_the_pinned_cluster_autoscaler_of_its_kubernetes() -> None:
    (release,) = [r for r in releases(view("aws")) if r.name == autoscaler.RELEASE]
    assert (release.chart, release.version, release.repository) == (
        "cluster-autoscaler",
        "9.59.0",
        "https://kubernetes.github.io/autoscaler",
    )
    assert release.namespace == "kube-system"
    assert release.values == {
        "cloudProvider": "aws",
        "awsRegion": "eu-west-1",
        "autoDiscovery": {"clusterName": "aws"},
        "image": {"tag": "v1.33.6"},
        "rbac": {"serviceAccount": {"create": True, "name": "cluster-autoscaler"}},
    }


def test_every_supported_kubernetes_version_has_an_autoscaler_image() -> None:
    from estategen.schema.patterns import KUBERNETES_VERSIONS

    assert sorted(autoscaler.IMAGE_TAGS) == sorted(KUBERNETES_VERSIONS)
    for version, tag in autoscaler.IMAGE_TAGS.items():
        assert tag.startswith(f"v{version}.")


def test_no_autoscaler_where_no_eks_group_can_grow() -> None:
    text = HYBRID.replace("nodes: {min: 0, max: 4}", "nodes: {min: 4, max: 4}")
    assert autoscaler.RELEASE not in {r.name for r in releases(view("aws", text))}
    built = estate(text)
    (cluster,) = [c for c in built.kubernetes_clusters if c.name == "aws"]
    assert pulumi_renderer.cluster_data(built, cluster)["autoscaler"] is None


def test_the_program_learns_which_service_account_gets_the_autoscalers_role() -> None:
    built = estate()
    (cluster,) = [c for c in built.kubernetes_clusters if c.name == "aws"]
    assert pulumi_renderer.cluster_data(built, cluster)["autoscaler"] == {
        "release": "cluster-autoscaler",
        "namespace": "kube-system",
        "service_account": "cluster-autoscaler",
    }


def test_a_growing_node_group_carries_the_discovery_tags() -> None:
    group = pools("aws")["l40s-ts"]
    discovery = {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/aws": "owned",
    }
    assert group["args"]["tags"] == discovery
    assert discovery.items() <= group["scaling_tags"].items()


def test_scale_from_zero_tags_say_what_a_node_would_carry() -> None:
    tags = pools("aws")["l40s-ts"]["scaling_tags"]
    template = "k8s.io/cluster-autoscaler/node-template"
    # 4 GPUs time-sliced 2 ways: the device plugin advertises 8, as the autoscaler must know
    assert tags[f"{template}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{template}/taint/nvidia.com/gpu"] == ":NoSchedule"
    assert tags[f"{template}/label/estategen.io/pool"] == "l40s-ts"
    assert tags[f"{template}/label/nvidia.com/device-plugin.config"] == "l40s-ts"
    labels = pools("aws")["l40s-ts"]["args"]["labels"]
    assert {k.removeprefix(f"{template}/label/") for k in tags if "/label/" in k} == set(labels)


def test_a_growing_eks_gpu_group_registers_its_nodes_as_gpu_nodes_from_zero() -> None:
    """kubernetes/autoscaler cluster-autoscaler-1.33.6 (the image of versions.kubernetes 1.33),
    cluster-autoscaler/cloudprovider/aws/README.md:272-286 "Special note on GPU instances":
    until the device plugin advertises the GPUs, the autoscaler sees a node without them and
    scales out again, unless kubelet registers it with ``k8s.amazonaws.com/accelerator``
    (aws_cloud_provider.go:38 GPULabel; utils/gpu/gpu.go:101 NodeHasGpu counts a node with
    the label as a GPU node whatever its allocatable). At zero nodes the autoscaler reads the
    label from the group's node-template tag (README:208, "Auto-Discovery Setup")."""
    group = pools("aws")["l40s-ts"]
    label = "k8s.amazonaws.com/accelerator"
    assert group["args"]["labels"][label] == "l40s-48gb"
    template = f"k8s.io/cluster-autoscaler/node-template/label/{label}"
    assert group["scaling_tags"][template] == "l40s-48gb"


def test_mig_instances_are_the_template_resources_of_a_mig_group() -> None:
    text = (
        HYBRID.replace("instance_type: g6e.12xlarge", "instance_type: p5.48xlarge")
        .replace(
            "gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}",
            "gpus: {model: h100-sxm-80gb, count: 8, mig: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]}",
        )
        .replace(
            "      region: eu-west-1",
            "      region: eu-west-1\n      device_plugin: {mig_strategy: mixed}",
        )
    )
    tags = pools("aws", text)["l40s-ts"]["scaling_tags"]
    resources = {k.rsplit("/resources/", 1)[1]: v for k, v in tags.items() if "/resources/" in k}
    assert resources == {
        "nvidia.com/mig-1g.10gb": "16",
        "nvidia.com/mig-2g.20gb": "8",
        "nvidia.com/mig-3g.40gb": "8",
    }


def test_a_fixed_size_group_is_left_to_its_size() -> None:
    group = pools("aws")["l4-fixed"]
    assert group["args"]["tags"] == {}
    assert group["scaling_tags"] == {}


# --- plan ------------------------------------------------------------------------------------


def test_plan_says_an_aks_taint_change_updates_the_agent_pool_in_place() -> None:
    """API 2025-09-01 (the one azure-native 3.29.0 uses) lets nodeTaints change: no
    x-ms-mutability on it, and azure-native's forceNewMap does not list it."""
    from estategen.plan.kubernetes import kubernetes_changes

    after = HYBRID.replace("{key: spot, effect: NoExecute}", "{key: spot, effect: NoSchedule}")
    changes = kubernetes_changes(estate(HYBRID), estate(after))["pulumi/az/cluster.json"]
    (pool,) = [c for c in changes if c.subject == "pool h100mig"]
    assert pool.kind == "kubernetes-pool"
    assert pool.meaning.startswith("the AKS agent pool changes node_taints in place")
    assert {a.id for a in pool.actions} == {"pulumi-up"}


def test_plan_drains_an_aks_pool_whose_vm_size_changes_before_pulumi_replaces_it() -> None:
    from estategen.plan.kubernetes import kubernetes_changes
    from estategen.plan.steps import merge_steps

    after = HYBRID.replace("Standard_NC80adis_H100_v5", "Standard_NC40ads_H100_v5").replace(
        "{model: h100-nvl-94gb, count: 2", "{model: h100-nvl-94gb, count: 1"
    )
    assert after != HYBRID
    changes = kubernetes_changes(estate(HYBRID), estate(after))["pulumi/az/cluster.json"]
    (pool,) = [c for c in changes if c.subject == "pool nvl"]
    assert pool.kind == "kubernetes-replace"
    assert "cannot change vm_size in place" in pool.meaning
    steps = merge_steps(pool.actions, "hybrid")
    assert [s.id for s in steps] == ["drain-kubernetes-pool", "pulumi-up"]
    assert steps[0].commands[1:] == (
        "kubectl cordon -l estategen.io/pool=nvl",
        "kubectl drain -l estategen.io/pool=nvl --ignore-daemonsets --delete-emptydir-data",
    )


def test_plan_drains_an_eks_group_the_blueprint_drops_before_pulumi_deletes_it() -> None:
    from estategen.plan.kubernetes import kubernetes_changes

    start = HYBRID.index("  - name: l4-fixed")
    after = HYBRID[:start] + HYBRID[HYBRID.index("kubernetes:\n") :]
    changes = kubernetes_changes(estate(HYBRID), estate(after))["pulumi/aws/cluster.json"]
    (pool,) = [c for c in changes if c.subject == "pool l4-fixed"]
    assert (pool.kind, pool.after) == ("kubernetes-pool", "")
    assert [a.id for a in pool.actions] == ["drain-kubernetes-pool", "pulumi-up"]
    assert pool.actions[0].target == "aws l4-fixed"


def test_plan_says_when_the_cluster_autoscaler_comes_and_goes() -> None:
    from estategen.plan.kubernetes import kubernetes_changes

    fixed = HYBRID.replace("nodes: {min: 0, max: 4}", "nodes: {min: 4, max: 4}")
    changes = kubernetes_changes(estate(fixed), estate(HYBRID))["pulumi/aws/cluster.json"]
    kinds = {c.subject: c for c in changes}
    assert "installs (or removes) the Cluster Autoscaler" in kinds["autoscaler"].meaning
    assert "tags the Cluster Autoscaler reads" in kinds["pool l40s-ts"].meaning
    assert kinds["releases"].kind == "kubernetes-components"


def test_the_manifests_readme_says_the_autoscaler_needs_the_pulumi_project() -> None:
    from estategen.renderers.kubernetes import kubernetes_manifests

    files = kubernetes_manifests(estate())
    readme = files["kubernetes/aws/README.md"].content.decode()
    assert "kube-system/cluster-autoscaler through EKS Pod Identity" in readme
    assert "Cluster Autoscaler" not in files["kubernetes/az/README.md"].content.decode()


# --- what a change of a pool's arguments does (kubernetes.cloud.POOL_FIELDS) ---------------


def example_pools() -> Iterator[dict[str, Any]]:
    """Every managed pool of the shipped blueprints and of HYBRID, as cluster.json has it."""
    named = ("frontier.yaml", "campus.yaml")
    built = [estate(), *(estate((BLUEPRINTS / name).read_text()) for name in named)]
    for one in built:
        for cluster in one.kubernetes_clusters:
            yield from cloud.node_pools(ClusterView.of(one, cluster))


def leaves(value: Any, path: str = "") -> Iterator[str]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for item in value:
            yield from leaves(item, f"{path}[]")
    else:
        yield path


def test_every_argument_of_a_managed_pool_is_in_its_providers_table() -> None:
    """A new argument in cloud.py needs its line in the table: plan would otherwise take its
    change for a replacement."""
    seen = set()
    for pool in example_pools():
        for path in leaves(pool["args"]):
            assert cloud.field_of(cloud.POOL_FIELDS[pool["provider"]], path), (pool["name"], path)
        seen.add(pool["provider"])
    assert seen == {"gke", "eks", "aks"}


def by_effect(fields: dict[str, str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {cloud.REPLACE: set(), cloud.RECREATE_NODES: set()}
    out[cloud.UPDATE] = set()
    for key, effect in fields.items():
        out[effect].add(key)
    return out


def example(provider: str) -> dict[str, Any]:
    return next(
        p
        for p in example_pools()
        if p["provider"] == provider
        and p["args"].get(
            {"gke": "node_config", "eks": "taints", "aks": "gpu_instance_profile"}[provider]
        )
    )["args"]


def changed(args: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(args)
    *parents, last = path.split(".")
    where = out
    for key in parents:
        where = where[key][0] if isinstance(where[key], list) else where[key]
    where[last] = value
    return out


def test_gke_node_pool_fields_as_terraform_provider_google_declares_them() -> None:
    """hashicorp/terraform-provider-google (pulumi-gcp 10.2.0 bridges its -beta twin, 8.x),
    google/services/container/ at main e03b7622a2 (8.0.0 merged; node_config.go as at tag
    v7.45.0): ForceNew are name, cluster, location, project, max_pods_per_node
    (resource_container_node_pool.go; max_pods_per_node read at 069a33d4) and oauth_scopes,
    guest_accelerator and each of its fields (node_config.go); machine_type, labels and taint
    are sent with NodePools.Update, and GKE recreates the nodes for a new
    machine type (its node upgrade strategy), not for labels or taints."""
    effects = by_effect(cloud.GKE_POOL_FIELDS)
    assert effects[cloud.REPLACE] == {
        "name",
        "cluster",
        "location",
        "project",
        "max_pods_per_node",
        "node_config.oauth_scopes",
        "node_config.guest_accelerators",
        "node_config.guest_accelerators[].type",
        "node_config.guest_accelerators[].count",
        "node_config.guest_accelerators[].gpu_driver_installation_config",
        "node_config.guest_accelerators[].gpu_partition_size",
        "node_config.guest_accelerators[].gpu_sharing_config",
    }
    assert effects[cloud.RECREATE_NODES] == {"node_config.machine_type"}
    assert effects[cloud.UPDATE] == {
        "autoscaling",
        "management",
        "node_config.labels",
        "node_config.taints",
    }
    args = example("gke")
    sharing = {"gpu_sharing_strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 2}
    path = "node_config.guest_accelerators.gpu_sharing_config"
    assert cloud.pool_change("gke", args, changed(args, path, sharing)) == cloud.PoolChange(
        ("node_config.guest_accelerators[].gpu_sharing_config",), (), ()
    )
    bigger = changed(args, "node_config.machine_type", "a3-edgegpu-8g")
    assert cloud.pool_change("gke", args, bigger).recreate_nodes == ("node_config.machine_type",)
    more = changed(args, "autoscaling.total_max_node_count", 99)
    assert cloud.pool_change("gke", args, more) == cloud.PoolChange((), (), ("autoscaling",))


def test_eks_node_group_fields_as_terraform_provider_aws_declares_them() -> None:
    """hashicorp/terraform-provider-aws internal/service/eks/node_group.go (pulumi-aws 7.51.1
    bridges 6.x; read at 012e0a32 and b11fc0fd, which agree on these): ForceNew are
    cluster_name, node_group_name, instance_types, ami_type and capacity_type, and a launch
    template's id (so gaining or losing one); scaling_config, update_config, labels, taint and
    tags change in place (UpdateNodegroupConfig, tags); a launch template's new version rolls
    the nodes (UpdateNodegroupVersion, read at b11fc0fd)."""
    effects = by_effect(cloud.EKS_POOL_FIELDS)
    assert effects[cloud.REPLACE] == {
        "cluster_name",
        "node_group_name",
        "instance_types",
        "ami_type",
        "capacity_type",
        "launch_template",
    }
    assert effects[cloud.RECREATE_NODES] == {"launch_template.user_data"}
    assert effects[cloud.UPDATE] == {"scaling_config", "update_config", "labels", "taints", "tags"}
    args = example("eks")
    bigger = changed(args, "instance_types", ["g6e.24xlarge"])
    assert cloud.pool_change("eks", args, bigger).replace == ("instance_types",)
    untainted = changed(args, "taints", [])
    assert cloud.pool_change("eks", args, untainted) == cloud.PoolChange((), (), ("taints",))


def test_aks_agent_pool_fields_as_azure_native_decides_them() -> None:
    """pulumi-azure-native 3.29.0 (AgentPool at API 2025-09-01) replaces on its forceNewMap
    (provider/pkg/gen/replacement.go: vmSize, gpuInstanceProfile), on x-ms-mutability without
    update (Azure/azure-rest-api-specs .../aks/stable/2025-09-01/managedClusters.json marks
    none in ManagedClusterAgentPoolProfileProperties) and on its URL's path parameters
    (provider/pkg/provider/diff.go); node taints, labels and the autoscaler's bounds change in
    place. maxPods, though neither lists it, AKS sets only when it creates a pool: the program
    replaces the pool on it (replace_on_changes)."""
    effects = by_effect(cloud.AKS_POOL_FIELDS)
    assert effects[cloud.REPLACE] == {
        "resource_group_name",
        "resource_name_",
        "agent_pool_name",
        "vm_size",
        "gpu_instance_profile",
        "max_pods",
    }
    assert effects[cloud.RECREATE_NODES] == set()
    assert "node_taints" in effects[cloud.UPDATE] and "node_labels" in effects[cloud.UPDATE]
    args = example("aks")
    smaller = changed(args, "gpu_instance_profile", "MIG2g")
    assert cloud.pool_change("aks", args, smaller).replace == ("gpu_instance_profile",)
    calm = changed(args, "node_taints", [])
    assert cloud.pool_change("aks", args, calm) == cloud.PoolChange((), (), ("node_taints",))


def test_an_argument_no_table_knows_is_taken_for_a_replacement() -> None:
    change = cloud.pool_change("eks", {"ami_type": "x"}, {"ami_type": "x", "new_field": 1})
    assert change == cloud.PoolChange(("new_field",), (), ())
