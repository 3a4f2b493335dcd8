"""Node pools: the fields each provider takes, Slurm cloud nodes (a provider's, or the site's
own programs' with power saving), and the Kubernetes cluster a pool joins.
"""

from __future__ import annotations

from collections.abc import Iterator

from estategen import hostlist
from estategen.checks.core import article, check, choices
from estategen.errors import Finding, issue
from estategen.kubernetes_facts import EKS_MAX_PODS, kubelet_may_set, max_pods_bounds
from estategen.model import Estate, NodePool

# slurm.conf keys estategen renders only for cloud nodes: refused in `slurm.options` when the
# estate has them
CLOUD_SLURM_OPTIONS = frozenset({"PrivateData", "SlurmctldParameters", "TreeWidth"})


@check
def pool_fields_for_provider(estate: Estate) -> Iterator[Finding]:
    """Managed pools are shaped by the cloud; on-prem pools by their hosts."""
    for pool in estate.node_pools:
        if pool.cloud is not None and not pool.elastic:
            yield issue(
                f"{pool.path}.cloud",
                "`cloud` says where slurmctld creates a Slurm cloud pool's instances "
                "(a Slurm pool with provider gke or eks); "
                + (
                    "Kubernetes node pools get theirs from the cluster's provider"
                    if pool.scheduler == "kubernetes"
                    else "set provider, or remove `cloud`"
                ),
            )
        if pool.elastic:
            yield from _elastic_pool_fields(pool)
            continue
        if pool.hosted:
            continue  # checked by hosted_slurm_pools
        if pool.managed:
            for key in ("instance_type", "nodes"):
                if (
                    getattr(pool, "instance_type" if key == "instance_type" else "nodes_max")
                    is None
                ):
                    yield issue(
                        pool.path, f"{article(pool.provider)} {pool.provider} pool needs `{key}`"
                    )
            if pool.host_expressions:
                yield issue(
                    f"{pool.path}.hosts",
                    f"{article(pool.provider)} {pool.provider} pool gets its nodes from the "
                    "provider; remove `hosts`",
                )
            if (
                pool.nodes_min is not None
                and pool.nodes_max is not None
                and pool.nodes_min > pool.nodes_max
            ):
                yield issue(
                    f"{pool.path}.nodes",
                    f"min {pool.nodes_min} is above max {pool.nodes_max}",
                )
            yield from _cloud_pool_shape(estate, pool)
        else:
            if not pool.host_expressions:
                yield issue(pool.path, "an on-prem pool needs `hosts`")
            for key, value in (("instance_type", pool.instance_type), ("nodes", pool.nodes_max)):
                if value is not None:
                    yield issue(
                        f"{pool.path}.{key}",
                        f"`{key}` is for managed pools (provider gke, eks or aks); "
                        "on-prem pools list `hosts`",
                    )
            if pool.scheduler == "slurm":
                for key, missing in (
                    ("cpu", pool.cpu is None),
                    ("memory_gb", pool.memory_gb is None),
                ):
                    if missing:
                        yield issue(pool.path, f"a Slurm pool needs `{key}` for its NodeName line")


# --- elastic cloud nodes ---
ELASTIC_PROVIDERS = ("gke", "eks")


# which `cloud` keys each provider needs and which it refuses
_CLOUD_KEYS = {
    "gke": (("zone", "project"), ("region",)),
    "eks": (("region",), ("zone", "project")),
}


def _elastic_pool_fields(pool: NodePool) -> Iterator[Finding]:
    """A Slurm pool with a provider is State=CLOUD nodes: slurm.conf names them (`hosts`) and
    shapes them (`cpu`, `memory_gb`); slurmctld's ResumeProgram creates each as an instance of
    `instance_type` from the pinned `cloud.image`, and SuspendProgram deletes it."""
    if pool.provider not in ELASTIC_PROVIDERS:
        yield issue(
            f"{pool.path}.provider",
            f"Slurm cloud pools are created on gke (GCE instances) or eks (EC2 instances); "
            f"estategen does not create {pool.provider} instances for Slurm",
        )
        return
    if not pool.host_expressions:
        yield issue(
            pool.path,
            f"a Slurm {pool.provider} pool names its nodes with `hosts` (slurm.conf defines "
            "them State=CLOUD; slurmctld creates an instance of that name when it needs one)",
        )
    for key, missing in (
        ("instance_type", pool.instance_type is None),
        ("cpu", pool.cpu is None),
        ("memory_gb", pool.memory_gb is None),
        ("cloud", pool.cloud is None),
    ):
        if missing:
            yield issue(pool.path, f"a Slurm {pool.provider} pool needs `{key}`")
    if pool.cloud is not None:
        needed, refused = _CLOUD_KEYS[pool.provider]
        for key in needed:
            if getattr(pool.cloud, key) is None:
                yield issue(f"{pool.path}.cloud", f"a Slurm {pool.provider} pool needs `{key}`")
        for key in refused:
            if getattr(pool.cloud, key) is not None:
                yield issue(
                    f"{pool.path}.cloud.{key}",
                    f"`{key}` is for provider {'eks' if pool.provider == 'gke' else 'gke'}; "
                    f"a {pool.provider} pool sets {' and '.join(needed)}",
                )
        image_kind = "ami-" if pool.provider == "eks" else "projects/"
        if not pool.cloud.image.startswith(image_kind):
            yield issue(
                f"{pool.path}.cloud.image",
                f"{pool.cloud.image!r} is not {article(pool.provider)} {pool.provider} image; "
                + (
                    "give an AMI id like 'ami-0123456789abcdef0'"
                    if pool.provider == "eks"
                    else "give 'projects/PROJECT/global/images/NAME'"
                ),
            )
    if pool.nodes_max is not None and pool.host_expressions and pool.nodes_max != len(pool.hosts):
        yield issue(
            f"{pool.path}.nodes.max",
            f"max {pool.nodes_max}, but `hosts` names {len(pool.hosts)} nodes: slurmctld creates "
            f"at most the nodes slurm.conf names; set max to {len(pool.hosts)} or change `hosts`",
        )
    if (
        pool.nodes_min is not None
        and pool.nodes_max is not None
        and pool.nodes_min > pool.nodes_max
    ):
        yield issue(f"{pool.path}.nodes", f"min {pool.nodes_min} is above max {pool.nodes_max}")


@check
def cloud_options_not_owned(estate: Estate) -> Iterator[Finding]:
    if not any(p.elastic for p in estate.node_pools):
        return
    owned = {k.lower(): k for k in CLOUD_SLURM_OPTIONS}
    for key in estate.slurm.options:
        if key.lower() in owned:
            yield issue(
                f"slurm.options.{key}",
                f"{owned[key.lower()]} is rendered by estategen for the estate's cloud nodes "
                "(SlurmctldParameters, PrivateData=cloud, TreeWidth); it cannot be passed "
                "through",
            )


@check
def power_saving_has_cloud_nodes(estate: Estate) -> Iterator[Finding]:
    """slurm.power_saving times apply to cloud nodes only: without one they would do nothing."""
    if estate.slurm.power_saving.declared and not any(p.cloud_nodes for p in estate.node_pools):
        yield issue(
            "slurm.power_saving",
            "power saving creates and deletes cloud nodes, and no Slurm pool has a provider "
            "(gke or eks) or `state: cloud`; remove slurm.power_saving or add a Slurm cloud pool",
        )


# --- cloud nodes the site's own programs create ---
_SITE_PROGRAMS = ("resume_program", "suspend_program", "resume_fail_program")


@check
def site_cloud_pools(estate: Estate) -> Iterator[Finding]:
    """`state: cloud` makes a Slurm pool's nodes State=CLOUD, started by the site's programs
    (slurm.power_saving); a pool with a provider is State=CLOUD already, started by
    estategen's programs, and slurm.conf has one ResumeProgram."""
    for pool in estate.node_pools:
        if not pool.site_cloud:
            continue
        if pool.scheduler != "slurm" or pool.hosted:
            yield issue(
                f"{pool.path}.state",
                "`state: cloud` makes a Slurm pool's slurm.conf nodes State=CLOUD; "
                + (
                    "Kubernetes pools scale with their cluster's provider"
                    if pool.scheduler != "slurm"
                    else "a hosted pool's slurmd pods register dynamically"
                ),
            )
        elif pool.elastic:
            yield issue(
                f"{pool.path}.state",
                f"a Slurm {pool.provider} pool's nodes are State=CLOUD already, created by "
                "estategen's power programs; remove `state`",
            )
    saving = estate.slurm.power_saving
    elastic = next((p for p in estate.slurm_pools if p.elastic), None)
    if elastic is not None:
        for key in _SITE_PROGRAMS:
            if getattr(saving, key) is not None:
                yield issue(
                    f"slurm.power_saving.{key}",
                    f"pool {elastic.name!r} has a provider, whose instances estategen's own "
                    "ResumeProgram and SuspendProgram create and delete, and slurm.conf has "
                    "one of each; the site's programs serve pools with `state: cloud` only",
                )
    paths = estate.slurm.site.paths
    daemon_folders = {
        "state_save_location": paths.state_save_location,
        "slurmd_spool_dir": paths.slurmd_spool_dir,
    }
    for key in _SITE_PROGRAMS:
        program = getattr(saving, key)
        for folder_key, folder in daemon_folders.items():
            if program is not None and (program + "/").startswith(folder + "/"):
                yield issue(
                    f"slurm.power_saving.{key}",
                    f"{program} lies inside slurm.paths.{folder_key} ({folder}), which the "
                    "daemon fills and owns; slurmctld runs only a program others cannot write",
                )
    cloud_hosts = {h for p in estate.slurm_pools if p.cloud_nodes for h in p.hosts}
    for index, expression in enumerate(saving.exclude_nodes):
        strays = [h for h in hostlist.expand(expression) if h not in cloud_hosts]
        if strays:
            yield issue(
                f"slurm.power_saving.exclude_nodes[{index}]",
                f"{strays[0]!r} is not a node of a Slurm cloud pool (provider gke or eks, or "
                "`state: cloud`); only cloud nodes are suspended",
            )


@check
def max_pods_fits_provider(estate: Estate) -> Iterator[Finding]:
    """`max_pods` is a Kubernetes node's setting (kubelet's maxPods, or the managed pool's),
    within what the pool's provider accepts (kubernetes_facts.MAX_PODS_BOUNDS)."""
    for pool in estate.node_pools:
        if pool.max_pods is None:
            continue
        where = f"{pool.path}.max_pods"
        if pool.scheduler != "kubernetes":
            yield issue(
                where,
                "`max_pods` sets the most pods a Kubernetes node runs; a Slurm pool has no "
                "kubelet to set it on (a hosted Slurm pool's pods run on the nodes of its "
                "cluster's Kubernetes pools, which set their own)",
            )
            continue
        low, high = max_pods_bounds(pool)
        if low <= pool.max_pods <= high:
            continue
        if pool.provider == "eks" and pool.instance_type in EKS_MAX_PODS:
            yield issue(
                where,
                f"{pool.max_pods} pods per node is more than an EKS {pool.instance_type} "
                f"node has VPC CNI addresses for: at most {high} (its ENIs times their IPv4 "
                "addresses less one, plus 2)",
            )
        else:
            what = {
                "gke": "a GKE node pool's max_pods_per_node",
                "aks": "an AKS agent pool's maxPods",
            }.get(pool.provider, "kubelet's maxPods on estategen's nodes")
            yield issue(where, f"{pool.max_pods} is outside {what}: {low} to {high}")


@check
def pool_cluster_resolves(estate: Estate) -> Iterator[Finding]:
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.node_pools:
        if pool.scheduler == "slurm":
            if pool.cluster and pool.cluster not in clusters:
                # a Slurm pool with `cluster` runs its slurmd as pods there
                yield issue(
                    f"{pool.path}.cluster",
                    f"{pool.cluster!r} is not in kubernetes.clusters{choices(clusters)}",
                )
            for key, present in (("labels", pool.labels), ("taints", pool.taints)):
                if present:
                    yield issue(
                        f"{pool.path}.{key}",
                        f"`{key}` apply to Kubernetes nodes; use `features` for Slurm pools",
                    )
            continue
        if not pool.cluster:
            yield issue(pool.path, f"a Kubernetes pool needs `cluster`{choices(clusters)}")
        elif pool.cluster not in clusters:
            yield issue(
                f"{pool.path}.cluster",
                f"{pool.cluster!r} is not in kubernetes.clusters{choices(clusters, pool.cluster)}",
            )
        elif clusters[pool.cluster].provider != pool.provider and pool.managed:
            yield issue(
                f"{pool.path}.provider",
                f"pool is {pool.provider} but cluster {pool.cluster!r} is "
                f"{clusters[pool.cluster].provider}",
            )
    used = {p.cluster for p in estate.kubernetes_pools} | {p.cluster for p in estate.hosted_pools()}
    for cluster in estate.kubernetes_clusters:
        if cluster.name not in used:
            yield issue(
                cluster.path, f"cluster {cluster.name!r} has no node pools", level="warning"
            )
        if cluster.provider != "on-prem" and not cluster.region:
            yield issue(
                cluster.path,
                f"{article(cluster.provider)} {cluster.provider} cluster needs `region`",
            )
        if cluster.provider == "gke" and cluster.device_plugin_install == "gpu-operator":
            yield issue(
                f"{cluster.path}.device_plugin.install",
                "GKE installs the NVIDIA driver and device plugin on its GPU nodes and "
                "partitions and shares GPUs itself; leave device_plugin.install at "
                "device-plugin on a gke cluster",
            )


@check
def node_labels_kubelet_may_set(estate: Estate) -> Iterator[Finding]:
    """kubelet registers on-prem nodes with the pool's labels; NodeRestriction refuses some."""
    for pool in estate.kubernetes_pools:
        refused = [key for key in pool.labels if not kubelet_may_set(key)]
        if refused and not pool.managed:
            yield issue(
                f"{pool.path}.labels",
                f"kubelet may not set {', '.join(refused)} on its own node (the kubernetes.io "
                "and k8s.io namespaces are reserved, except node.kubernetes.io/ and "
                "kubelet.kubernetes.io/); use a label of your own domain, such as example.com/role",
            )


def _cloud_pool_shape(estate: Estate, pool: NodePool) -> Iterator[Finding]:
    """What the cloud can build: GKE splits every GPU of a pool into one MIG size."""
    gpus = pool.gpus
    if not gpus or gpus.model not in estate.gpu_models:
        return
    model = estate.gpu_models[gpus.model]
    if pool.provider == "gke" and gpus.mig and all(p in model.mig for p in gpus.mig):
        profile = gpus.mig[0]
        fits = model.mig[profile].max
        if set(gpus.mig) != {profile} or len(gpus.mig) != fits:
            yield issue(
                f"{pool.path}.gpus.mig",
                "GKE partitions every GPU into as many instances of one size as fit "
                f"(gpu_partition_size); for {profile} on {model.name} that is {fits} x {profile}",
            )
