"""Pulumi program for one Kubernetes cluster of an estategen estate.

estategen copies this file unchanged into every ``pulumi/<cluster>/`` project. The generator
has already built every Kubernetes object of the cluster and written them as plain manifests
under ``kubernetes/<cluster>/``; this program registers exactly those objects, installs the Helm
releases they need with the values rendered next to them, and creates what only Pulumi can: the
managed GKE node pools, EKS node groups and AKS agent pools, the IAM role EKS nodes run as and
the one the EKS Cluster Autoscaler acts with. ``cluster.json`` says where the manifests are and
carries the releases and node pool arguments.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

Data = dict[str, Any]
Obj = dict[str, Any]

SCHEMA = "estategen/pulumi-cluster-v2"
DATA_FILE = Path(__file__).with_name("cluster.json")
EKS_NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
)


class StackError(Exception):
    """The data file does not belong to this stack, or is not one this program reads."""


# --- what the generator rendered ----------------------------------------------------------


def load(path: Path = DATA_FILE) -> Data:
    data: Data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise StackError(f"{path} is {data.get('schema')!r}; this program reads {SCHEMA}")
    return data


def manifests(data: Data, base: Path = DATA_FILE.parent) -> Path:
    folder: Path = (base / str(data["manifests"])).resolve()
    if not (folder / "kustomization.yaml").is_file():
        raise StackError(
            f"no kustomization.yaml in {folder}: run the program from the folder estategen "
            "rendered, where kubernetes/ sits next to pulumi/"
        )
    return folder


def rendered_objects(folder: Path) -> list[Obj]:
    """The objects of the kustomization's resources, in the order it lists them."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text(encoding="utf-8"))
    out: list[Obj] = []
    for name in kustomization.get("resources") or []:
        text = (folder / name).read_text(encoding="utf-8")
        out.extend(obj for obj in yaml.safe_load_all(text) if obj)
    return out


def check_stack(data: Data, config: pulumi.Config) -> None:
    """Refuse to run a project against the data of another cluster or estate, or with a stack
    setting that overrides the cluster's context, project or region (Pulumi.yaml sets them)."""
    for key, expected in (("cluster", data["name"]), ("estate", data["estate"])):
        configured = config.require(key)
        if configured != expected:
            raise StackError(
                f"stack config says {key} {configured!r} but {DATA_FILE.name} is for "
                f"{expected!r}; render the estate again instead of copying files between projects"
            )
    cluster = data["cluster"]
    wanted: dict[str, str | None] = {"kubernetes:context": data["name"]}
    if cluster["provider"] == "gke":
        wanted.update({"gcp:project": cluster.get("project"), "gcp:region": cluster.get("region")})
    elif cluster["provider"] == "eks":
        wanted["aws:region"] = cluster.get("region")
    elif cluster["provider"] == "aks":
        wanted["azure-native:location"] = cluster.get("region")
    for key, expected in wanted.items():
        namespace, _, name = key.partition(":")
        setting = pulumi.Config(namespace).get(name)
        if expected is not None and setting is not None and setting != expected:
            raise StackError(
                f"stack config says {key} {setting!r} but the blueprint says {expected!r}; "
                "remove the key from the stack settings (Pulumi.<stack>.yaml): estategen sets "
                "it in Pulumi.yaml"
            )


# --- registration ---------------------------------------------------------------------------

_TYPED: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("node.k8s.io/v1", "RuntimeClass"): k8s.node.v1.RuntimeClass,
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
}
# what a DaemonSet's pods read when they start: registered before it
_POD_INPUTS = frozenset({"ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"})


class KubernetesObject(pulumi.CustomResource):
    """A custom resource registered exactly as written, top-level fields included.

    pulumi-kubernetes' CustomResource takes only ``spec``; WorkloadPriorityClass keeps
    ``value`` at the top level, so every custom kind goes through this one path.
    """

    def __init__(self, name: str, obj: Obj, opts: pulumi.ResourceOptions | None = None) -> None:
        version = pulumi.ResourceOptions(version=metadata.version("pulumi_kubernetes"))
        super().__init__(
            f"kubernetes:{obj['apiVersion']}:{obj['kind']}",
            name,
            dict(obj),
            pulumi.ResourceOptions.merge(version, opts),
        )


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def logical_name(obj: Obj) -> str:
    """Unique and stable: kind, namespace and name, as Kubernetes itself keys objects."""
    parts = [obj["kind"].lower(), obj["metadata"].get("namespace"), obj["metadata"]["name"]]
    return "-".join(p for p in parts if p)


# the annotation the generator puts on what a GitOps prune must leave (namespaces, volumes,
# claims): an object taken out of the manifests is then left in the cluster by pulumi up too
KEPT = ("kustomize.toolkit.fluxcd.io/prune", "disabled")


def register(obj: Obj, opts: pulumi.ResourceOptions | None = None) -> pulumi.CustomResource:
    if (obj["metadata"].get("annotations") or {}).get(KEPT[0]) == KEPT[1]:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True))
    typed = _TYPED.get((obj["apiVersion"], obj["kind"]))
    if typed is None:
        return KubernetesObject(logical_name(obj), obj, opts)
    args = {_snake(k): v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    resource: pulumi.CustomResource = typed(logical_name(obj), opts=opts, **args)
    return resource


def _group(obj: Obj) -> str:
    version: str = obj["apiVersion"]
    return version.rpartition("/")[0] if "/" in version else ""


def build(data: Data, objects: Sequence[Obj], folder: Path) -> None:
    """Register the rendered objects, their releases and the managed node pools."""
    namespaces: dict[str, pulumi.Resource] = {}
    for obj in objects:
        if obj["kind"] == "Namespace":
            namespaces[obj["metadata"]["name"]] = register(obj)
    providers: dict[str, list[pulumi.Resource]] = {}
    for release in data["releases"]:
        values = yaml.safe_load((folder / release["values_file"]).read_text(encoding="utf-8"))
        waits = [namespaces[release["namespace"]]] if release["namespace"] in namespaces else []
        # Secrets the chart reads at start (S3 credentials), from the stack's secret config:
        # made before the release, never written to the manifests
        waits.extend(_release_secret(release, secret) for secret in release.get("secrets", []))
        installed = k8s.helm.v3.Release(
            release["name"],
            name=release["name"],
            chart=release["chart"],
            version=release["version"],
            repository_opts={"repo": release["repository"]} if release["repository"] else None,
            namespace=release["namespace"],
            create_namespace=release["create_namespace"],
            values=values or {},
            opts=pulumi.ResourceOptions(depends_on=waits) if waits else None,
        )
        for group in release["provides"]:
            providers.setdefault(group, []).append(installed)
    for upstream in data.get("upstream_manifests", []):
        # an operator published as one manifest at a pinned tag, no chart (the MPI Operator)
        applied = k8s.yaml.v2.ConfigFile(upstream["name"], file=upstream["url"])
        for group in upstream["provides"]:
            providers.setdefault(group, []).append(applied)
    pod_inputs: list[tuple[str | None, pulumi.Resource]] = []
    count = len(namespaces)
    config = pulumi.Config()
    keys: dict[str, list[pulumi.Resource]] = {}
    for secret in data.get("secrets", []):
        # a key the rendered objects reference by Secret name, from the stack's secret config
        # (`pulumi config set --secret NAME`): never in the manifests or the data file
        where = secret["namespace"]
        created = k8s.core.v1.Secret(
            f"secret-{where}-{secret['name']}",
            metadata={"name": secret["name"], "namespace": where},
            string_data={secret["key"]: config.require_secret(secret["config"])},
            opts=pulumi.ResourceOptions(depends_on=[namespaces[where]])
            if where in namespaces
            else None,
        )
        keys.setdefault(where, []).append(created)
        count += 1
    for obj in objects:
        if obj["kind"] == "Namespace":
            continue
        namespace = obj["metadata"].get("namespace")
        waits = list(providers.get(_group(obj), []))
        if namespace in namespaces:
            waits.append(namespaces[namespace])
        if obj["kind"] == "DaemonSet":
            waits.extend(r for where, r in pod_inputs if where in (namespace, None))
        waits.extend(keys.get(namespace or "", []))
        resource = register(obj, pulumi.ResourceOptions(depends_on=waits) if waits else None)
        if obj["kind"] in _POD_INPUTS:
            pod_inputs.append((namespace, resource))
        count += 1
    pools = data["node_pools"]
    if any(p["provider"] == "gke" for p in pools):
        import pulumi_gcp as gcp

        for pool in (p for p in pools if p["provider"] == "gke"):
            gcp.container.NodePool(pool["name"], **pool["args"], opts=_named_pool())
    if any(p["provider"] == "eks" for p in pools):
        _eks_node_groups(data, [p for p in pools if p["provider"] == "eks"])
    if data.get("autoscaler"):
        _eks_autoscaler_role(data, data["autoscaler"])
    if any(p["provider"] == "aks" for p in pools):
        _aks_agent_pools([p for p in pools if p["provider"] == "aks"])
    pulumi.export("namespaces", sorted(namespaces))
    pulumi.export("resources", count)


def _named_pool(opts: pulumi.ResourceOptions | None = None) -> pulumi.ResourceOptions:
    """A managed pool keeps the name the blueprint gives it, and a cloud refuses a second pool
    of one name: a change that replaces it (estategen plan says which) deletes it first."""
    return pulumi.ResourceOptions.merge(pulumi.ResourceOptions(delete_before_replace=True), opts)


def _release_secret(release: Data, secret: Data) -> pulumi.Resource:
    """A Secret in the release's namespace; each key's value is the stack's secret config of
    the name the blueprint's reference gives (``pulumi config set --secret NAME``)."""
    config = pulumi.Config()
    return k8s.core.v1.Secret(
        f"secret-{release['namespace']}-{secret['name']}",
        metadata={"name": secret["name"], "namespace": release["namespace"]},
        string_data={key: config.require_secret(name) for key, name in secret["config"].items()},
    )


def _trust(service: str, action: str | list[str]) -> str:
    """An IAM role's trust policy: the AWS service that may assume it."""
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, sort_keys=True)


def _eks_node_groups(data: Data, pools: Sequence[Data]) -> None:
    """One node role for the cluster's GPU node groups; subnets are the cluster's own."""
    import pulumi_aws as aws

    name = data["name"]
    role = aws.iam.Role(
        f"{name}-nodes",
        name=f"{data['estate']}-{name}-nodes",
        description=f"EKS node groups of cluster {name} (estate {data['estate']})",
        assume_role_policy=_trust("ec2.amazonaws.com", "sts:AssumeRole"),
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-nodes-{arn.rsplit('/', 1)[1]}", role=role.name, policy_arn=arn
        )
        for arn in EKS_NODE_POLICIES
    ]
    cluster = aws.eks.get_cluster_output(name=name)
    for pool in pools:
        group = aws.eks.NodeGroup(
            pool["name"],
            node_role_arn=role.arn,
            subnet_ids=cluster.vpc_config.subnet_ids,
            **pool["args"],
            **_eks_launch_template(pool),
            opts=_named_pool(
                pulumi.ResourceOptions(
                    depends_on=attachments,
                    # the cluster autoscaler owns the desired size once the group exists
                    ignore_changes=["scalingConfig.desiredSize"],
                )
            ),
        )
        # EKS does not copy a node group's tags to its Auto Scaling group, where the
        # autoscaler reads them: discovery, and what a node would carry when there is none
        group_name = group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)
        for key, value in pool.get("scaling_tags", {}).items():
            aws.autoscaling.Tag(
                f"{pool['name']}-{key}",
                autoscaling_group_name=group_name,
                tag={"key": key, "value": value, "propagate_at_launch": False},
            )


def _eks_launch_template(pool: Data) -> Data:
    """The launch template a group's nodes boot with, when the generator rendered user data
    for it (the NodeConfig that gives kubelet the pool's max_pods): no AMI, so EKS keeps
    choosing the image and merges its own NodeConfig into this one. Each change of the user
    data is a new version of the template, which the group rolls its nodes to."""
    if not pool.get("launch_template"):
        return {}
    import pulumi_aws as aws

    user_data = pool["launch_template"]["user_data"]
    template = aws.ec2.LaunchTemplate(
        f"{pool['name']}-nodes",
        description=f"EKS node group {pool['name']}: kubelet settings of its nodes",
        user_data=base64.b64encode(user_data.encode("utf-8")).decode("ascii"),
    )
    return {
        "launch_template": {
            "id": template.id,
            "version": template.latest_version.apply(str),
        }
    }


def _eks_autoscaler_role(data: Data, autoscaler: Data) -> None:
    """The Cluster Autoscaler's IAM role, given to its service account by EKS Pod Identity
    (the cluster runs the eks-pod-identity-agent add-on): the node role would not do, as with
    every group at zero there is no node of that role for the autoscaler to run on."""
    import pulumi_aws as aws

    name = data["name"]
    role = aws.iam.Role(
        f"{name}-cluster-autoscaler",
        name=f"{data['estate']}-{name}-cluster-autoscaler",
        description=f"Cluster Autoscaler of cluster {name} (estate {data['estate']})",
        assume_role_policy=_trust("pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"]),
    )
    # the autoscaler's AWS README, "Full Cluster Autoscaler Features Policy", with scaling
    # limited to the Auto Scaling groups tagged as this cluster's
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "autoscaling:DescribeTags",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                    "eks:DescribeNodegroup",
                ],
                "Resource": "*",
            },
            {
                "Effect": "Allow",
                "Action": [
                    "autoscaling:SetDesiredCapacity",
                    "autoscaling:TerminateInstanceInAutoScalingGroup",
                ],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{name}": "owned"}
                },
            },
        ],
    }
    aws.iam.RolePolicy(
        f"{name}-cluster-autoscaler", role=role.id, policy=json.dumps(policy, sort_keys=True)
    )
    aws.eks.PodIdentityAssociation(
        f"{name}-cluster-autoscaler",
        cluster_name=name,
        namespace=autoscaler["namespace"],
        service_account=autoscaler["service_account"],
        role_arn=role.arn,
    )


def _aks_agent_pools(pools: Sequence[Data]) -> None:
    """AKS agent pools on the blueprint's cluster; AKS's autoscaler owns their node count."""
    from pulumi_azure_native import containerservice

    for pool in pools:
        containerservice.AgentPool(
            pool["name"],
            **pool["args"],
            # AKS sets a pool's maxPods only when it creates the pool
            opts=_named_pool(
                pulumi.ResourceOptions(ignore_changes=["count"], replace_on_changes=["maxPods"])
            ),
        )


def main() -> None:
    data = load()
    check_stack(data, pulumi.Config())
    folder = manifests(data)
    # a cluster synced by Flux or Argo CD gets its objects and releases from the engine
    objects = [] if data.get("gitops") else rendered_objects(folder)
    build(data, objects, folder)


if __name__ == "__main__":
    main()
