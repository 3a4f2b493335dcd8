"""``pulumi/<cluster>/``: one Pulumi project per Kubernetes cluster.

The program itself is plain Python kept in ``stacks/`` (shipped as ``estategen_stacks``) and
copied verbatim; this renderer only writes the project files around it and ``cluster.json``,
the model's view of that one cluster. It never imports Pulumi: the CLI stays fast and the
program is tested where it lives, under Pulumi's mocks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from estategen.facts import (
    cluster_flavors,
    host_labels,
    mig_instances_per_gpu,
    mig_layout,
    mig_parted_layouts,
    node_labels,
    node_taint,
    replicas,
    storage_class_names,
)
from estategen.model import Estate, KubernetesCluster, NodePool, spread
from estategen.render import Files, OutputFile, json_file, renderer, text, to_data

DATA_SCHEMA = "estategen/pulumi-cluster-v1"

# Exact versions written to each project's requirements.txt. The `test` extra installs the
# same ones, and a test fails when they drift apart: a rendered project runs what was tested.
PULUMI = "3.272.0"
PULUMI_KUBERNETES = "4.34.2"
PULUMI_GCP = "10.2.0"
PULUMI_AWS = "7.51.1"

# Images and charts the program deploys, pinned by tag so a render means one thing. They live
# in the data file (not the program) so a version bump shows up in `render --check` diffs.
COMPONENTS: dict[str, dict[str, str]] = {
    "device_plugin": {"image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"},
    "mig_manager": {"image": "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.10.0-ubuntu20.04"},
    "dcgm_exporter": {"image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"},
    "gpu_operator": {
        "chart": "gpu-operator",
        "repository": "https://helm.ngc.nvidia.com/nvidia",
        "version": "v25.3.0",
    },
    "kueue": {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "0.19.2"},
}


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
    return config


def _requirements(cluster: KubernetesCluster, pools: Sequence[NodePool]) -> str:
    providers = {p.provider for p in pools} | {cluster.provider}
    pins = [("pulumi", PULUMI), ("pulumi-kubernetes", PULUMI_KUBERNETES)]
    if "gke" in providers:
        pins.append(("pulumi-gcp", PULUMI_GCP))
    if "eks" in providers:
        pins.append(("pulumi-aws", PULUMI_AWS))
    return "".join(f"{name}=={version}\n" for name, version in sorted(pins))


def dcgm_counters() -> str:
    """The DCGM counter list the Ansible role installs, so both schedulers export the same."""
    role = resources.files("estategen").joinpath("playbooks/roles/dcgm_exporter/files")
    return role.joinpath("counters.csv").read_text(encoding="utf-8")


def cluster_data(estate: Estate, cluster: KubernetesCluster) -> dict[str, Any]:
    """The model's view of one cluster: everything its program needs, nothing else.

    Derived facts (node labels and taints, MIG layouts, flavours and their units) come from
    :mod:`estategen.facts`, so the program registers what Ansible and Slurm also use.
    """
    pools = list(estate.pools_in_cluster(cluster.name))
    plugin_pools = [p for p in pools if p.gpus and p.provider != "gke"]
    cluster_info = to_data(cluster)
    for key in ("queues", "priority_classes", "name"):
        cluster_info.pop(key)
    return {
        "schema": DATA_SCHEMA,
        "estate": estate.name,
        "name": cluster.name,
        "kubernetes_version": estate.versions.kubernetes.text,
        "cluster": cluster_info,
        "components": COMPONENTS,
        "pools": [_pool_data(estate, pool) for pool in pools],
        # a list: the ConfigMap keeps mig-parted's order (MIG off first, then the pools')
        "mig_configs": [
            {"name": name, "config": config}
            for name, config in mig_parted_layouts(plugin_pools).items()
        ],
        "flavors": [
            {
                "key": flavor.key,
                "name": flavor.name,
                "model": flavor.model,
                "profile": flavor.profile,
                "pools": list(flavor.pools),
                "units": flavor.units,
                "factor": flavor.factor,
            }
            for flavor in cluster_flavors(estate, cluster.name)
        ],
        "teams": [
            {
                "name": team.name,
                "namespace": team.namespace,
                "gid": team.gid,
                "fairshare": team.fairshare,
            }
            for team in estate.identity.teams
        ],
        "queues": to_data(cluster.queues),
        "priority_classes": to_data(cluster.priority_classes),
        "observability": {**to_data(estate.observability), "dcgm_counters": dcgm_counters()},
        "storage_classes": storage_class_names(estate, cluster.name),
    }


def _pool_data(estate: Estate, pool: NodePool) -> dict[str, Any]:
    gpu: dict[str, Any] | None = None
    if pool.gpus:
        model = estate.gpu_models[pool.gpus.model]
        offer = model.clouds.get(pool.provider)
        gpu = {
            "model": model.name,
            "count": pool.gpus.count,
            "memory_gb": model.memory_gb,
            "resource": model.resource,
            "mig": mig_layout(pool),
            "mig_instances": mig_instances_per_gpu(pool),
            "replicas": replicas(pool),
            "time_slicing": pool.gpus.sharing.time_slicing,
            "mps": pool.gpus.sharing.mps,
            "accelerator": offer.accelerator if offer else None,
        }
    return {
        "name": pool.name,
        "provider": pool.provider,
        "hosts": list(pool.hosts),
        "switches": [
            {"name": name, "hosts": hosts} for name, hosts in spread(pool.hosts, pool.switches)
        ]
        if pool.switches
        else [],
        "instance_type": pool.instance_type,
        "nodes": {"min": pool.nodes_min or 0, "max": pool.nodes_max}
        if pool.nodes_max is not None
        else None,
        "cpu_threads": pool.cpu.threads if pool.cpu else None,
        "memory_gb": pool.memory_gb,
        "gpu": gpu,
        "taints": to_data(pool.taints),
        "node_labels": node_labels(estate, pool),
        "host_labels": host_labels(pool),
        "node_taints": [node_taint(t) for t in pool.taints],
    }
