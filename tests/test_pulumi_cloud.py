"""The Pulumi program's cloud resources under Pulumi's mocks: AKS agent pools, the EKS
Cluster Autoscaler (its IAM role, Pod Identity association and Auto Scaling group tags), and
how every managed pool is replaced.

The blueprint is the one tests/test_kubernetes_cloud.py reads as data; here the rendered
project runs as the Pulumi CLI would (the harness of tests/test_pulumi.py), and the tests
check that what the generator computed is what the program registers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_kubernetes_cloud import HYBRID
from test_pulumi import Run, rendered, run_project

from estategen.kubernetes import autoscaler


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rendered(HYBRID, tmp_path_factory.mktemp("cloud")) / "pulumi"


def run(projects: Path, cluster: str, config: dict[str, str] | None = None) -> Run:
    return run_project(projects / cluster, config)


def data(projects: Path, cluster: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((projects / cluster / "cluster.json").read_text())
    return loaded


# --- AKS ------------------------------------------------------------------------------------


def test_aks_pools_are_registered_as_azure_native_agent_pools(projects: Path) -> None:
    result = run(projects, "az")
    pools = {r.name: r for r in result.resources if r.kind == "AgentPool"}
    assert set(pools) == {"h100mig", "nvl"}
    assert pools["h100mig"].type == "azure-native:containerservice:AgentPool"
    args = pools["h100mig"].inputs
    assert args["resourceGroupName"] == "rg-gpu-prod"
    assert args["resourceName"] == "az"
    assert args["agentPoolName"] == "h100mig"
    assert args["vmSize"] == "Standard_ND96isr_H100_v5"
    assert (args["enableAutoScaling"], args["minCount"], args["maxCount"]) == (True, 0, 3)
    assert args["gpuProfile"] == {"driver": "Install"}
    assert args["gpuInstanceProfile"] == "MIG3g"
    assert args["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule", "spot:NoExecute"]
    assert args["nodeLabels"]["estategen.io/pool"] == "h100mig"


def test_aks_cluster_applies_the_device_plugin_and_no_aws_resource(projects: Path) -> None:
    result = run(projects, "az")
    assert "DaemonSet" in result.kinds()
    assert not [r for r in result.resources if r.type.startswith("aws:")]
    assert "nvidia-device-plugin" in {r["name"] for r in result.all("Release")}


def test_aks_project_refuses_a_stack_location_other_than_the_blueprints(projects: Path) -> None:
    settings = yaml.safe_load((projects / "az" / "Pulumi.yaml").read_text())
    assert settings["config"]["azure-native:location"] == {"value": "westeurope"}
    with pytest.raises(Exception, match="azure-native:location 'eastus2'"):
        run(projects, "az", {"azure-native:location": "eastus2"})


# --- EKS: the Cluster Autoscaler -------------------------------------------------------------


def test_the_autoscaler_release_is_installed_with_its_rendered_values(projects: Path) -> None:
    result = run(projects, "aws")
    (release,) = [r for r in result.all("Release") if r["name"] == autoscaler.RELEASE]
    assert release["chart"] == "cluster-autoscaler"
    assert release["version"] == autoscaler.VERSION
    assert release["repositoryOpts"] == {"repo": autoscaler.REPOSITORY}
    assert release["namespace"] == "kube-system"
    assert release["values"]["autoDiscovery"] == {"clusterName": "aws"}
    assert release["values"]["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"


def test_the_autoscalers_role_reaches_its_service_account_by_pod_identity(projects: Path) -> None:
    result = run(projects, "aws")
    roles = {r["name"]: r for r in result.all("Role")}
    role = roles["hybrid-aws-cluster-autoscaler"]
    trust = json.loads(role["assumeRolePolicy"])["Statement"]
    assert trust == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
        }
    ]
    (association,) = result.all("PodIdentityAssociation")
    assert association == {
        "clusterName": "aws",
        "namespace": "kube-system",
        "serviceAccount": "cluster-autoscaler",
        "roleArn": "arn:aws:iam::123456789012:role/hybrid-aws-cluster-autoscaler",
    }


def test_the_autoscaler_may_scale_only_this_clusters_groups(projects: Path) -> None:
    result = run(projects, "aws")
    (policy,) = result.all("RolePolicy")
    statements = json.loads(policy["policy"])["Statement"]
    describe, scale = statements
    assert "autoscaling:DescribeAutoScalingGroups" in describe["Action"]
    assert "eks:DescribeNodegroup" in describe["Action"]
    assert scale["Action"] == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    assert scale["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/aws": "owned"}
    }


def test_each_growing_groups_auto_scaling_group_gets_its_tags(projects: Path) -> None:
    result = run(projects, "aws")
    tags = result.all("Tag")
    wanted = data(projects, "aws")["node_pools"]
    assert isinstance(wanted, list)
    (growing,) = [p for p in wanted if p["scaling_tags"]]
    assert {t["tag"]["key"]: t["tag"]["value"] for t in tags} == growing["scaling_tags"]
    assert {t["autoscalingGroupName"] for t in tags} == {"eks-l40s-ts-asg"}
    assert all(t["tag"]["propagateAtLaunch"] is False for t in tags)
    groups = {r["nodeGroupName"]: r for r in result.all("NodeGroup")}
    assert groups["l40s-ts"]["tags"]["k8s.io/cluster-autoscaler/aws"] == "owned"
    assert "tags" not in groups["l4-fixed"] or not groups["l4-fixed"]["tags"]


def test_the_node_role_keeps_only_the_node_policies(projects: Path) -> None:
    result = run(projects, "aws")
    attached = {r["role"] for r in result.all("RolePolicyAttachment")}
    assert attached == {"hybrid-aws-nodes"}


# --- replacing a managed pool ---------------------------------------------------------------


POOL_TYPES = {
    "gcp:container/nodePool:NodePool",
    "aws:eks/nodeGroup:NodeGroup",
    "azure-native:containerservice:AgentPool",
}


@pytest.mark.parametrize("cluster", ["aws", "az"])
def test_a_managed_pool_is_deleted_before_its_replacement_is_created(
    projects: Path, cluster: str
) -> None:
    """Pools keep their blueprint names and a cloud refuses two of one name, so the program
    registers each with delete_before_replace (estategen plan drains it first); nothing else
    of the project is replaced that way. GKE: tests/test_pulumi.py's campus pool."""
    result = run(projects, cluster)
    pools = {r.key for r in result.resources if r.type in POOL_TYPES}
    wanted = data(projects, cluster)["node_pools"]
    assert isinstance(wanted, list)
    assert {name for _, name in pools} == {p["name"] for p in wanted} != set()
    assert result.deleted_first == pools
