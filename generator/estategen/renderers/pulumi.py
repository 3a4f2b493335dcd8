"""``pulumi/<cluster>/``: one Pulumi project per Kubernetes cluster.

The program itself is plain Python kept in ``stacks/`` (shipped as ``estategen_stacks``) and
copied verbatim; it registers the objects written under ``kubernetes/<cluster>/``. This
renderer writes the project files around it and ``cluster.json``: where the manifests are, the
Helm releases and the managed node pools. It never imports Pulumi: the CLI stays fast and the
program is tested where it lives, under Pulumi's mocks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from estategen.kubernetes import autoscaler, cloud, frameworks, releases, slinky
from estategen.kubernetes.gitops import cluster_folder
from estategen.kubernetes.objects import ClusterView
from estategen.model import Estate, KubernetesCluster, NodePool
from estategen.output import Files, OutputFile, json_file, renderer, text
from estategen.renderers.kubernetes import values_file

DATA_SCHEMA = "estategen/pulumi-cluster-v2"

# Exact versions written to each project's requirements.txt. The `test` extra installs the
# same ones, and a test fails when they drift apart: a rendered project runs what was tested.
PULUMI = "3.272.0"
PULUMI_KUBERNETES = "4.34.2"
PULUMI_GCP = "10.2.0"
PULUMI_AWS = "7.51.1"
PULUMI_AZURE_NATIVE = "3.29.0"  # large (about 360 MB installed): pinned only where AKS pools are


def project_name(estate: Estate, cluster: KubernetesCluster) -> str:
    return f"{estate.name}-{cluster.name}"


@renderer
def pulumi_projects(estate: Estate) -> Files:
    files: Files = {}
    program = _program()
    for cluster in estate.kubernetes_clusters:
        base = f"pulumi/{cluster.name}"
        pools = list(estate.pools_in_cluster(cluster.name))
        files[f"{base}/Pulumi.yaml"] = text(_pulumi_yaml(estate, cluster))
        files[f"{base}/__main__.py"] = program
        files[f"{base}/requirements.txt"] = text(_requirements(cluster, pools))
        files[f"{base}/cluster.json"] = json_file(cluster_data(estate, cluster))
    return files


def _program() -> OutputFile:
    source = resources.files("estategen_stacks").joinpath("__main__.py").read_bytes()
    return OutputFile(source)


def _pulumi_yaml(estate: Estate, cluster: KubernetesCluster) -> str:
    """The project file, with the config every stack of the project needs as project config.

    The stack settings file ``Pulumi.<estate>.yaml`` is left to Pulumi and its user: Pulumi
    writes ``encryptionsalt`` or ``secretsprovider`` there and users add their own keys, so
    estategen never renders it. Pulumi reads the project's own keys' ``default`` and other
    namespaces' ``value`` from here; a stack's own setting of the same key wins.
    """
    return (
        "# Rendered by estategen; edit the blueprint, not this file. Stack settings\n"
        f"# (Pulumi.{estate.name}.yaml) belong to Pulumi and you; estategen does not write them.\n"
        f"name: {project_name(estate, cluster)}\n"
        f"description: GPU node pools, device plugin and queues of cluster {cluster.name} "
        f"in estate {estate.name}\n"
        "runtime:\n"
        "  name: python\n"
        "  options:\n"
        "    toolchain: pip\n"
        "    virtualenv: venv\n"
        "config:\n"
        + "".join(
            f"  {key}:\n    {'value' if ':' in key else 'default'}: {json.dumps(value)}\n"
            for key, value in sorted(project_config(estate, cluster).items())
        )
    )


def project_config(estate: Estate, cluster: KubernetesCluster) -> dict[str, str]:
    """Config keys every stack of the project reads: which cluster and cloud it talks to.

    The project's own keys are unqualified (``cluster``); other namespaces' keys carry theirs.
    """
    config = {
        "cluster": cluster.name,
        "estate": estate.name,
        # the kubeconfig context must be named after the cluster, so a stack never applies to
        # whatever context happens to be current
        "kubernetes:context": cluster.name,
    }
    if cluster.provider == "gke":
        if cluster.project:
            config["gcp:project"] = cluster.project
        if cluster.region:
            config["gcp:region"] = cluster.region
    elif cluster.provider == "eks" and cluster.region:
        config["aws:region"] = cluster.region
    elif cluster.provider == "aks" and cluster.region:
        config["azure-native:location"] = cluster.region
    return config


def _requirements(cluster: KubernetesCluster, pools: Sequence[NodePool]) -> str:
    providers = {p.provider for p in pools} | {cluster.provider}
    pins = [("pulumi", PULUMI), ("pulumi-kubernetes", PULUMI_KUBERNETES)]
    if "gke" in providers:
        pins.append(("pulumi-gcp", PULUMI_GCP))
    if "eks" in providers:
        pins.append(("pulumi-aws", PULUMI_AWS))
    if any(p.provider == "aks" for p in pools):
        pins.append(("pulumi-azure-native", PULUMI_AZURE_NATIVE))
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins))


def cluster_data(estate: Estate, cluster: KubernetesCluster) -> dict[str, Any]:
    """What the program needs beyond the manifests: where they are, the Helm releases (their
    values are rendered next to the manifests) and the managed node pools' arguments."""
    view = ClusterView.of(estate, cluster)
    data: dict[str, Any] = {
        "schema": DATA_SCHEMA,
        "estate": estate.name,
        "name": cluster.name,
        "kubernetes_version": estate.versions.kubernetes.text,
        "cluster": {
            "provider": cluster.provider,
            "region": cluster.region,
            "project": cluster.project,
            "resource_group": cluster.resource_group,
        },
        "manifests": f"../../{cluster_folder(cluster)}",
        "releases": [
            {
                "name": release.name,
                "chart": release.chart,
                "version": release.version,
                "repository": release.repository,
                "namespace": release.namespace,
                "create_namespace": release.create_namespace,
                "values_file": values_file(release),
                "provides": list(release.provides),
                # only where a chart reads a Secret, so other releases' data stays as it was
                **(
                    {
                        "secrets": [
                            {"name": secret.name, "config": dict(secret.keys)}
                            for secret in release.secrets
                        ]
                    }
                    if release.secrets
                    else {}
                ),
            }
            for release in releases(view)
        ],
        "node_pools": cloud.node_pools(view),
        # the Cluster Autoscaler release whose service account the program gives an IAM role
        "autoscaler": {
            "release": autoscaler.RELEASE,
            "namespace": autoscaler.NAMESPACE,
            "service_account": autoscaler.SERVICE_ACCOUNT,
        }
        if autoscaler.needed(view)
        else None,
    }
    if cluster.gitops is not None:
        # the GitOps engine installs the releases and syncs the objects: the program makes
        # only what the engine cannot, the cloud's node pools and roles
        data["gitops"] = cluster.gitops.engine
        data["releases"] = []
        return data
    hosted = slinky.secrets(view)
    if hosted:
        # Secrets the Slinky objects reference, from the stack's secret config
        data["secrets"] = [
            {"name": name, "namespace": slinky.NAMESPACE, "key": key, "config": config}
            for name, key, config in hosted
        ]
    upstream = frameworks.upstream_manifests(view)
    if upstream:
        # only where a framework needs one, so other clusters' data stays as it was
        data["upstream_manifests"] = [
            {"name": m.name, "url": m.url, "version": m.version, "provides": list(m.provides)}
            for m in upstream
        ]
    return data
