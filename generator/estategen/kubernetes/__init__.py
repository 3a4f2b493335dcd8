"""The Kubernetes side of an estate, built once from the model.

For each cluster this builds every Kubernetes object (one module per family: ``core`` for
tenancy and nodes, ``nvidia``, ``kueue`` or ``volcano``, ``storage``, ``frameworks``), the Helm
releases they rely on and the managed node pools (``cloud``). The ``kubernetes/<cluster>/``
manifests and the Pulumi program both apply exactly these objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estategen.kubernetes import (
    autoscaler,
    cloud,
    core,
    frameworks,
    kueue,
    nvidia,
    slinky,
    storage,
    volcano,
)
from estategen.kubernetes.objects import (
    KUEUE_NAMESPACE,
    NVIDIA_NAMESPACE,
    ClusterView,
    HelmRelease,
    Obj,
    UpstreamManifest,
    kept_on_prune,
)
from estategen.model import Estate, KubernetesCluster

GPU_OPERATOR_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
GPU_OPERATOR_VERSION = "v26.7.0"


@dataclass(frozen=True, slots=True)
class ClusterObjects:
    """Everything estategen applies to one cluster, grouped as the manifests are written."""

    files: dict[str, list[Obj]]
    releases: list[HelmRelease]
    node_pools: list[Obj] = field(default_factory=list)
    # examples/<team>.yaml: jobs that show how to reach a queue; written, never applied
    examples: dict[str, list[Obj]] = field(default_factory=dict)
    # operators published as a manifest, not a chart, applied after the releases
    upstream: list[UpstreamManifest] = field(default_factory=list)
    # nodes.yaml: the labels each on-prem node registers with (kubelet's flags), one Node per
    # host; written for the plan's label-nodes steps and for reading, never applied: applying
    # a Node creates one without status for a host not yet joined, and a GitOps prune deletes
    # the Node of a host the blueprint no longer lists
    nodes: list[Obj] = field(default_factory=list)


def releases(view: ClusterView) -> list[HelmRelease]:
    out: list[HelmRelease] = []
    if view.runs_device_plugin:
        # with GPU Feature Discovery, the MPS control daemon and Node Feature Discovery, whose
        # CRDs the chart installs
        out.append(
            HelmRelease(
                "nvidia-device-plugin",
                nvidia.DEVICE_PLUGIN_CHART,
                nvidia.DEVICE_PLUGIN_VERSION,
                NVIDIA_NAMESPACE,
                nvidia.device_plugin_values(view),
                repository=nvidia.DEVICE_PLUGIN_REPOSITORY,
                provides=("nfd.k8s-sigs.io",),
            )
        )
    if view.runs_gpu_operator:
        out.append(
            HelmRelease(
                "gpu-operator",
                "gpu-operator",
                GPU_OPERATOR_VERSION,
                NVIDIA_NAMESPACE,
                nvidia.gpu_operator_values(view),
                repository=GPU_OPERATOR_REPOSITORY,
                provides=("nvidia.com", "nfd.k8s-sigs.io"),
            )
        )
    # the CSI drivers of the cluster's storage classes (csi-driver-nfs, FSx, Mountpoint for S3)
    out.extend(storage.releases(view))
    if autoscaler.needed(view):
        # EKS node groups that may grow, from zero too
        out.append(
            HelmRelease(
                autoscaler.RELEASE,
                autoscaler.CHART,
                autoscaler.VERSION,
                autoscaler.NAMESPACE,
                autoscaler.helm_values(view),
                repository=autoscaler.REPOSITORY,
            )
        )
    if view.cluster.queues is not None and not view.cluster.queues.volcano:
        out.append(
            HelmRelease(
                "kueue",
                kueue.CHART,
                kueue.VERSION,
                KUEUE_NAMESPACE,
                kueue.helm_values(view),
                create_namespace=True,
                provides=("kueue.x-k8s.io",),
            )
        )
    if volcano.uses_volcano(view):
        out.append(
            HelmRelease(
                "volcano",
                volcano.CHART,
                volcano.VERSION,
                volcano.NAMESPACE,
                volcano.helm_values(view),
                repository=volcano.REPOSITORY,
                create_namespace=True,
                provides=("scheduling.volcano.sh", "batch.volcano.sh"),
            )
        )
    out.extend(frameworks.releases(view))
    if slinky.uses_slinky(view):
        # Slurm pools hosted in the cluster
        out.append(slinky.release(view))
    return out


def cluster_objects(estate: Estate, cluster: KubernetesCluster) -> ClusterObjects:
    view = ClusterView.of(estate, cluster)
    files = {
        "namespaces.yaml": core.namespaces(view),
        "tenancy.yaml": [
            *core.team_quotas(view),
            *core.team_jobs_role(view),
            *core.team_role_bindings(view),
            *frameworks.workflow_accounts(view),
            *core.team_network_policies(view),
            *core.team_identity_policy(view),
            *core.priority_classes(view),
        ],
        "nvidia.yaml": [
            *nvidia.runtime_class(view),
            *nvidia.configmaps(view),
            *nvidia.mig_manager(view),
            *nvidia.dcgm_exporter(view),
        ],
        "storage.yaml": storage.objects(view),
        "kueue.yaml": kueue.objects(view),
        "volcano.yaml": volcano.queues(view),
        "slurm.yaml": slinky.objects(view),
    }
    return ClusterObjects(
        {name: [kept_on_prune(o) for o in objs] for name, objs in files.items() if objs},
        releases(view),
        cloud.node_pools(view),
        frameworks.examples(view),
        frameworks.upstream_manifests(view),
        core.registered_labels(view),
    )
