"""What changes on each Kubernetes cluster both models have (:func:`kubernetes_changes`):
the objects of kubernetes/<cluster>/, the Helm values of its releases and the Pulumi
project's data, built from each model by the renderers' own functions and compared object by
object (``pulumi up``, a Kueue object replaced, a managed pool replaced or drained, node
labels set with ``kubectl label``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from estategen.kubernetes.core import JOBS_ROLE
from estategen.kubernetes.objects import FIELD_MANAGER, KEPT_ON_PRUNE, POD_SECURITY, Obj
from estategen.kubernetes_facts import POOL_LABEL
from estategen.model import Estate, KubernetesCluster
from estategen.plan.steps import Action, Change, pool_nodes
from estategen.plan.values import differing, plain, short
from estategen.renderers.pulumi import project_name


def _cluster_data_changes(
    path: str, cluster: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[Change]:
    """The Pulumi project's data (:func:`estategen.renderers.pulumi.cluster_data` of each
    model): its releases and managed node pools (the objects it applies are the manifests,
    explained per object)."""
    up = Action("pulumi-up", cluster)
    changes = []
    was = {p["name"]: p for p in old.get("node_pools") or []}
    now = {p["name"]: p for p in new.get("node_pools") or []}
    for name in sorted(set(was) | set(now)):
        if was.get(name) != now.get(name):
            changes.append(_pool_change(path, cluster, name, was.get(name), now.get(name)))
    if old.get("gitops") != new.get("gitops"):
        changes.append(_gitops_change(path, cluster, old.get("gitops"), new.get("gitops")))
    for key in sorted(set(old) | set(new)):
        if key in ("node_pools", "gitops") or old.get(key) == new.get(key):
            continue
        if new.get("gitops") and key in ("releases", "secrets", "upstream_manifests"):
            continue  # the engine's now, said by the change of gitops
        if key == "releases":
            meaning = "pinned charts change: the Helm releases upgrade with pulumi up"
            meaning += _release_secrets_note(old.get(key), new.get(key))
        else:
            meaning = _DATA_MEANINGS.get(key, "cluster settings change with pulumi up")
        kind = (
            "kubernetes-components"
            if key in ("releases", "upstream_manifests")
            else "kubernetes-cluster-settings"
        )
        changes.append(
            Change(path, kind, key, meaning, short(old.get(key)), short(new.get(key)), (up,))
        )
    return changes


def _gitops_change(path: str, cluster: str, was: str | None, now: str | None) -> Change:
    """A GitOps engine taking the cluster's objects and releases over from the Pulumi program,
    or giving them back. Pulumi deletes what its program stops making, so it forgets them
    first (``pulumi-hand-over``: the stack's state without its ``kubernetes:`` resources)."""
    up = Action("pulumi-up", cluster)
    if was is None:
        meaning = (
            f"{now} installs the releases and syncs the objects from now on, and the Pulumi "
            "program makes only cloud resources: take the cluster's Kubernetes resources out of "
            "the stack's state first, so pulumi up does not delete them, then commit the output "
            f"and apply gitops/{cluster}/ as kubernetes/{cluster}/README.md says"
        )
        return Change(
            path,
            "kubernetes-cluster-settings",
            "gitops",
            meaning,
            "",
            now or "",
            (
                Action("pulumi-hand-over", cluster),
                up,
            ),
        )
    if now is None:
        meaning = (
            f"the Pulumi program makes the objects and releases again: stop {was} first "
            "without deleting what it applied (delete its objects of gitops/"
            f"{cluster}/ with kubectl delete --cascade=orphan, after flux suspend for Flux's "
            "Kustomizations and HelmReleases), and uninstall nothing: pulumi up applies the "
            "objects over the running ones (server-side apply), and a Helm release it finds "
            "installed must be imported (pulumi import) or it refuses to install it again"
        )
    else:
        meaning = (
            f"{now} takes the cluster over from {was}: stop {was} without deleting what it "
            f"applied (kubectl delete --cascade=orphan of its objects), then apply gitops/"
            f"{cluster}/ as kubernetes/{cluster}/README.md says"
        )
    return Change(
        path,
        "kubernetes-cluster-settings",
        "gitops",
        meaning,
        was,
        now or "",
        (Action("review", f"{path} gitops"),),
    )


def _pods_ready_meaning(
    old: Estate, earlier: KubernetesCluster, new: Estate, cluster: KubernetesCluster
) -> str:
    """What a changed pods-ready timeout does once Kueue's manager reads it; "" when it is the
    same."""
    from estategen.kubernetes import kueue
    from estategen.kubernetes.objects import ClusterView

    was = kueue.pods_ready_timeout(ClusterView.of(old, earlier))
    now = kueue.pods_ready_timeout(ClusterView.of(new, cluster))
    if was == now:
        return ""
    return (
        f"; Kueue's manager restarts (the chart rolls it on a new configuration) and gives an "
        f"admitted workload {now} (was {was}) to have all its pods ready: one that misses it "
        "gives its quota back and is requeued, backing off from 60 s to an hour; admission is "
        "never blocked meanwhile, so the other teams' workloads keep being admitted"
    )


def kubernetes_changes(
    old: Estate, new: Estate, clusters: Collection[str] | None = None
) -> dict[str, list[Change]]:
    """What changes on each cluster both models have (of ``clusters``, or all), by the file
    that carries it: the objects of kubernetes/<cluster>/
    (:func:`estategen.kubernetes.cluster_objects`), the Helm values of its releases and the
    Pulumi project's data (:func:`cluster_data`), built from each model by the renderers' own
    functions and compared object by object."""
    from estategen.kubernetes import cluster_objects
    from estategen.kubernetes.gitops import cluster_folder
    from estategen.renderers.kubernetes import NODES_FILE, values_file
    from estategen.renderers.pulumi import cluster_data

    out: dict[str, list[Change]] = {}
    was = {c.name: c for c in old.kubernetes_clusters}
    for cluster in new.kubernetes_clusters:
        earlier = was.get(cluster.name)
        if clusters is not None and cluster.name not in clusters:
            continue
        if earlier is None:
            continue  # a new project: pulumi-new
        name = cluster.name
        base = cluster_folder(cluster)
        path = f"pulumi/{name}/cluster.json"
        out[path] = _cluster_data_changes(
            path, name, plain(cluster_data(old, earlier)), plain(cluster_data(new, cluster))
        )
        built, before = cluster_objects(new, cluster), cluster_objects(old, earlier)
        mig = earlier.mig_strategy != cluster.mig_strategy
        # the applied manifests, and nodes.yaml (not applied): the labels the label-nodes
        # steps set on running nodes
        was_files = {**before.files, NODES_FILE: before.nodes}
        now_files = {**built.files, NODES_FILE: built.nodes}
        for file in [*was_files, *(f for f in now_files if f not in was_files)]:
            path = f"{base}/{file}"
            out[path] = _object_changes(
                new, path, name, was_files.get(file, []), now_files.get(file, []), mig
            )
        values: dict[str, Any] = {values_file(r): r.values for r in before.releases}
        for release in built.releases:
            values.setdefault(values_file(release), None)
        now = {values_file(r): r.values for r in built.releases}
        for file in values:
            a, b = plain(values[file]), plain(now.get(file))
            if a == b:
                continue
            path = f"{base}/{file}"
            if a is not None and b is not None and file == DEVICE_PLUGIN_VALUES:
                configs = _device_plugin_config_changes(path, name, a, b, mig)
                a, b = _without_configs(a), _without_configs(b)
                out[path] = configs
                if a == b:
                    continue
            out.setdefault(path, [])
            out[path] += [
                Change(
                    path,
                    "kubernetes-components",
                    f"Helm release {file.removeprefix('helm/').removesuffix('.values.yaml')}",
                    "the release's values change: it upgrades with pulumi up (or helm upgrade)"
                    + (_pods_ready_meaning(old, earlier, new, cluster) if "kueue" in file else ""),
                    short(differing(a, b)[0]) if a is not None else "",
                    short(differing(a, b)[1]) if b is not None else "",
                    (Action("pulumi-up", name),),
                )
            ]
    return out


# the device plugin chart's values: its per-pool configs are under config.map
DEVICE_PLUGIN_VALUES = "helm/nvidia-device-plugin.values.yaml"


def _device_plugin_config_change(mig_strategy_changed: bool) -> tuple[str, str]:
    """What a change to the device plugin's configs means: the GPU Operator's ConfigMap, or
    the config map of the device plugin chart's values."""
    if mig_strategy_changed:
        return (
            "kubernetes-cluster-settings",
            "the MIG strategy changes the resource names pods request: the device "
            "plugin restarts and pods requesting the old names stay pending",
        )
    return (
        "gpu-sharing",
        "the device plugin's config for the pool changes: its pods roll and advertise "
        "the new devices; running pods keep theirs",
    )


def _without_configs(values: Any) -> Any:
    config = {k: v for k, v in values.get("config", {}).items() if k != "map"}
    return {**values, "config": config}


def _device_plugin_config_changes(
    path: str, cluster: str, a: Any, b: Any, mig_strategy_changed: bool
) -> list[Change]:
    """One change per config of the device plugin chart's values that changes, explained as
    the GPU Operator's ConfigMap of the same configs is."""
    was, now = a.get("config", {}).get("map", {}), b.get("config", {}).get("map", {})
    out = []
    for config in sorted(was.keys() | now.keys()):
        if was.get(config) == now.get(config):
            continue
        kind, meaning = _device_plugin_config_change(
            mig_strategy_changed and config in was and config in now
        )
        out.append(
            Change(
                path,
                kind,
                f"Helm release nvidia-device-plugin: config {config}",
                meaning,
                short(was.get(config, "")),
                short(now.get(config, "")),
                (Action("pulumi-up", cluster),),
            )
        )
    return out


def _release_secrets_note(old: Any, new: Any) -> str:
    """Secrets a chart reads (Mountpoint for S3's credentials, for one) come from the stack's
    secret config, which the user sets before pulumi up; the driver reads them only at start."""

    def names(releases: Any) -> set[str]:
        return {
            name
            for release in releases or []
            for secret in release.get("secrets", [])
            for name in secret["config"].values()
        }

    needed = sorted(names(new) - names(old))
    if not needed:
        return ""
    return (
        "; first set the secret config the charts' Secrets are made from ("
        + ", ".join(f"pulumi config set --secret {name}" for name in needed)
        + "); a CSI driver reads its Secret only at start, so a changed one needs its pods "
        "restarted"
    )


# What a managed pool is called on each cloud, and what a change of an EKS group also changes
# (the tags its Cluster Autoscaler reads); which of a pool's arguments replace it is
# kubernetes.cloud.POOL_FIELDS.
_POOL_NAMES = {"gke": "GKE node pool", "eks": "EKS node group", "aks": "AKS agent pool"}
_EKS_TAGS = "; the tags the Cluster Autoscaler reads follow the group's labels, taints and devices"


def _pool_change(
    path: str, cluster: str, name: str, was: Mapping[str, Any] | None, now: Mapping[str, Any] | None
) -> Change:
    """A managed pool of the Pulumi project changed: replaced or deleted (its nodes are
    drained first, as pulumi up deletes it) or updated in place, by the arguments that changed
    (:func:`estategen.kubernetes.cloud.pool_change`)."""
    from estategen.kubernetes.cloud import pool_arguments, pool_change

    before, after = differing(was, now)
    provider = str((now or was or {}).get("provider"))
    what = f"the {_POOL_NAMES.get(provider, 'cloud node pool')}"
    up = Action("pulumi-up", cluster)
    drain = Action("drain-kubernetes-pool", f"{cluster} {name}")
    if was is None:
        return Change(
            path,
            "kubernetes-pool",
            f"pool {name}",
            f"{what} is created with pulumi up",
            short(before),
            short(after),
            (up,),
        )
    if now is None:
        return Change(
            path,
            "kubernetes-pool",
            f"pool {name}",
            f"{what} is deleted with pulumi up, with its nodes and the pods on them: drain "
            f"them first (by their {POOL_LABEL} label) so the pods move while they can",
            short(before),
            short(after),
            (drain, up),
        )
    change = pool_change(provider, pool_arguments(was), pool_arguments(now))
    if change.replace:
        return Change(
            path,
            "kubernetes-replace",
            f"pool {name}",
            f"{what} cannot change {', '.join(change.replace)} in place: pulumi up deletes it "
            "and creates it again under the same name, so its nodes and the pods on them go; "
            f"drain them first (by their {POOL_LABEL} label) so the pods move before it goes",
            short(before),
            short(after),
            (drain, up),
        )
    fields = [*change.recreate_nodes, *change.update] or ["the Cluster Autoscaler's tags"]
    meaning = f"{what} changes {', '.join(fields)} in place with pulumi up"
    if change.recreate_nodes:
        recreating = list(change.recreate_nodes)
        named = ("it" if len(fields) == 1 else "them") if fields == recreating else None
        meaning += (
            f", but {provider.upper()} applies {named or ', '.join(recreating)} by recreating "
            "every node (surge upgrade, a few nodes at a time: their pods are evicted and "
            f"rescheduled); drain the pool by its {POOL_LABEL} label first to move them at "
            "your pace"
        )
    return Change(
        path,
        "kubernetes-pool",
        f"pool {name}",
        meaning + (_EKS_TAGS if provider == "eks" else ""),
        short(before),
        short(after),
        (up,),
    )


# what a change of a key of the Pulumi project's data means, beside its releases and pools
_DATA_MEANINGS = {
    "autoscaler": "an EKS node group may now grow, or no longer: pulumi up installs (or "
    "removes) the Cluster Autoscaler with its IAM role and Pod Identity association",
    "upstream_manifests": "operators applied from their pinned manifest change: pulumi up "
    "applies the new one (kubectl apply --server-side -f its URL without Pulumi)",
}


# object kind -> (change kind, what applying it means); ConfigMaps are told apart by name
_OBJECT_CHANGES: dict[str, tuple[str, str]] = {
    "Namespace": (
        "kubernetes-tenancy",
        "namespaces update live; a new Pod Security level admits or refuses pods as they are "
        "created, running pods stay",
    ),
    "RoleBinding": (
        "kubernetes-tenancy",
        "who may work in a team namespace changes at once, for every request after the apply",
    ),
    "NetworkPolicy": (
        "kubernetes-tenancy",
        "which connections reach a team's pods changes at once, for new connections",
    ),
    "ValidatingAdmissionPolicy": (
        "kubernetes-tenancy",
        "which users and groups a team's new pods may run as changes; running pods stay",
    ),
    "ValidatingAdmissionPolicyBinding": (
        "kubernetes-tenancy",
        "which namespaces the pod identity policy holds in changes; running pods stay",
    ),
    "ResourceQuota": (
        "kueue-quota",
        "a namespace's GPU ResourceQuota follows what its queue can admit; it updates live",
    ),
    "PriorityClass": (
        "kubernetes-priority-classes",
        "PriorityClass values are immutable: a changed one is replaced; running pods keep "
        "their priority",
    ),
    "WorkloadPriorityClass": (
        "kubernetes-priority-classes",
        "Kueue workload priorities update live; admitted workloads keep theirs",
    ),
    "Node": (
        "kubernetes-node-labels",
        "the kubectl label step sets the changed labels on the running nodes (kubelet, which "
        "registered them, owns them; nodes.yaml is not applied); pods already running stay",
    ),
    "ClusterQueue": (
        "kueue-quota",
        "Kueue quotas and borrowing are applied live: ClusterQueues update in place, "
        "admitted workloads keep running, new admissions follow the new numbers",
    ),
    "LocalQueue": ("kueue-quota", "a team's LocalQueue changes live"),
    "ResourceFlavor": (
        "kueue-flavors",
        "Kueue flavours follow the pools' GPUs, taints and switches; they update live",
    ),
    "Topology": ("kueue-flavors", "the switch topology Kueue places workloads by"),
    "StorageClass": (
        "kubernetes-storage",
        "storage classes change; existing volumes keep theirs (a changed class is replaced)",
    ),
    "PersistentVolume": (
        "kubernetes-storage",
        "team volumes over the shared file systems; a volume's source (server, bucket, file "
        "system, host path) is immutable, so a changed one is replaced, which waits until no "
        "pod uses its claim",
    ),
    "PersistentVolumeClaim": ("kubernetes-storage", "team claims on the shared file systems"),
    # --- Volcano ---
    "Queue": (
        "volcano-quota",
        "Volcano queues update live: weight, deserved, capability and guarantee apply to the "
        "next scheduling cycle; running pods stay, and what a queue holds above its new "
        "deserved may be reclaimed",
    ),
    # --- Slurm hosted in Kubernetes (Slinky) ---
    "NodeSet": (
        "slurm-hosted",
        "the slurm-operator applies the hosted pool's NodeSet: fewer replicas drain Slurm "
        "nodes and delete each pod once its node is drained, more add nodes to the pool's "
        "partitions, and a changed pod spec rolls the pods (updateStrategy RollingUpdate)",
    ),
    "Controller": (
        "slurm-hosted",
        "the NodeSets' link to the estate's slurmctld (host, port, keys) changes: every hosted "
        "slurmd pod restarts and registers again",
    ),
    "RestApi": (
        "slurm-hosted",
        "the operator's own slurmrestd rolls; the operator waits for it to act on Slurm again",
    ),
    "Accounting": (
        "slurm-hosted",
        "the operator's record of the estate's slurmdbd changes; no slurmd pod restarts",
    ),
    "Service": ("observability", "the DCGM exporter's Service changes"),
    "ServiceMonitor": ("observability", "the DCGM exporter's scrape configuration changes"),
    "PrometheusRule": (
        "observability",
        "the estate's recording and alerting rules change; the Prometheus operator reloads them",
    ),
}
_COMPONENTS = (
    "kubernetes-components",
    "the NVIDIA components change: DaemonSets roll node by node",
)
# The pinned Kueue (0.19.2) freezes a ResourceFlavor's nodeLabels, tolerations and topologyName
# once topologyName is set, a Topology's levels and a LocalQueue's clusterQueue (CEL rules of
# its CRDs); the Pulumi program names each object's resource so.
_KUEUE_FROZEN = {
    "ResourceFlavor": ("nodeLabels", "tolerations", "topologyName"),
    "Topology": ("levels",),
    "LocalQueue": ("clusterQueue",),
}


def _refused_fields(
    kind: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None
) -> list[str]:
    """The fields of an object Kueue refuses to change in place that change from ``a`` to
    ``b`` (a ResourceFlavor's only once it names a topology); none for a new or dropped one."""
    frozen = _KUEUE_FROZEN.get(kind, ())
    if a is None or b is None or not frozen:
        return []
    spec_a, spec_b = a.get("spec") or {}, b.get("spec") or {}
    if kind == "ResourceFlavor" and "topologyName" not in spec_a:
        return []
    return [f for f in frozen if spec_a.get(f) != spec_b.get(f)]


def _object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
    return str(obj.get("kind")), name


def _objects(objs: Iterable[Obj]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Objects by kind and name, as plain data (what the manifest says of each)."""
    return {_object_key(o): o for o in plain(list(objs))}


def _without_checksum(obj: Mapping[str, Any]) -> Any:
    """A DaemonSet without its config checksum, which changes with the ConfigMap it reads."""
    copy = plain(obj)
    template = copy.get("spec", {}).get("template", {}).get("metadata", {})
    template.get("annotations", {}).pop("estategen.io/config-checksum", None)
    return copy


# the Pod Security Standards levels, strictest first
_LEVELS = ("restricted", "baseline", "privileged")


def _pod_security_meaning(name: str, a: Any, b: Any) -> str:
    """What a namespace's new enforced Pod Security level does; "" when it keeps its level.

    kubernetes.io "Enforce Pod Security Standards with Namespace Labels" (kubernetes/website,
    content/en/docs/tasks/configure-pod-container/enforce-standards-namespace-labels.md): when
    the ``enforce`` label changes, the admission plugin tests the namespace's pods against the
    new level and returns the violations as warnings; running pods are not evicted, and
    ``kubectl label --dry-run=server`` runs the same test without the change.
    """
    label = f"{POD_SECURITY}/enforce"
    was = ((a or {}).get("metadata") or {}).get("labels", {}).get(label)
    now = ((b or {}).get("metadata") or {}).get("labels", {}).get(label)
    if was is None or now is None or was == now or {was, now} - set(_LEVELS):
        return ""
    if _LEVELS.index(now) < _LEVELS.index(was):
        return (
            f"the namespace's Pod Security level tightens from {was} to {now}: new pods must "
            f"pass {now}, running pods stay, and the apply warns of each running pod {now} "
            f"would refuse (kubectl label --dry-run=server --overwrite ns {name} "
            f"{label}={now} lists them first); a job whose pods do not pass has its next "
            "pods refused"
        )
    admitted = (
        "new pods are no longer checked at all, and may reach their node"
        if now == "privileged"
        else f"new pods need pass only {now}"
    )
    return (
        f"the namespace's Pod Security level loosens from {was} to {now}: {admitted}; "
        "running pods stay"
    )


def _object_change(
    kind: str, name: str, a: Any, b: Any, mig_strategy_changed: bool
) -> tuple[str, str]:
    if kind == "Namespace":
        meaning = _pod_security_meaning(name, a, b)
        if meaning:
            return "kubernetes-tenancy", meaning
    if kind == "ClusterRole" and name == JOBS_ROLE:
        return (
            "kubernetes-tenancy",
            "the job kinds teams may run in their namespaces change at once",
        )
    if kind == "ConfigMap":
        if name.endswith("/nvidia-mig-parted-config"):
            return (
                "mig-layout",
                "the MIG manager repartitions the pool's nodes: it pauses the GPU pods on each "
                "node (a drain) before changing the layout",
            )
        if name.endswith("/nvidia-device-plugin-configs"):
            return _device_plugin_config_change(bool(a and b and mig_strategy_changed))
        if "dcgm" in name:
            return ("observability", "the DCGM exporter's counters change; exporter pods roll")
    if kind == "DaemonSet" and "dcgm" in name:
        return ("observability", "the DCGM exporter DaemonSet changes; exporter pods roll")
    return _OBJECT_CHANGES.get(kind, _COMPONENTS)


def explains(kind: str) -> bool:
    """Whether a change to an object of ``kind`` has its own explanation, rather than the
    generic one of an installed component."""
    return kind in _OBJECT_CHANGES


def _object_changes(
    estate: Estate,
    path: str,
    cluster: str,
    before: list[Obj],
    after: list[Obj],
    mig_strategy_changed: bool,
) -> list[Change]:
    """Per object of a manifest (the objects each model builds): what changing, adding or
    removing it means."""
    up = Action("pulumi-up", cluster)
    old, new = _objects(before), _objects(after)
    labelling = node_label_actions(cluster, old, new)
    replaced = {
        name
        for (kind, name), a in old.items()
        if kind == "ResourceFlavor" and _refused_fields(kind, a, new.get((kind, name)))
    }
    # each ClusterQueue listing one of them, once without all of them (a queue applied once
    # per flavor would put the other back)
    taken_out: dict[str, list[Action]] = {}
    for (kind, _), queue in old.items():
        without = take_out(queue, replaced) if kind == "ClusterQueue" else None
        if without is not None:
            text = json.dumps(without, sort_keys=True, separators=(",", ":"))
            action = Action("kueue-take-out", f"{cluster}\t{text}")
            for group in (queue.get("spec") or {}).get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    taken_out.setdefault(flavor.get("name"), []).append(action)
    changes: list[Change] = []
    nodes: dict[str, list[str]] = {"added": [], "removed": []}
    for key in [*old, *(k for k in new if k not in old)]:
        a, b = old.get(key), new.get(key)
        kind, subject = key
        if a is not None and b is not None:
            if a == b or (kind == "DaemonSet" and _without_checksum(a) == _without_checksum(b)):
                continue
        elif kind == "Node":
            nodes["added" if a is None else "removed"].append(subject)
            continue
        change_kind, meaning = _object_change(kind, subject, a, b, mig_strategy_changed)
        frozen = _KUEUE_FROZEN.get(kind, ())
        spec_a, spec_b = (a or {}).get("spec") or {}, (b or {}).get("spec") or {}
        refused = _refused_fields(kind, a, b)
        if refused:
            assert b is not None
            fields = ", ".join(refused)
            urn = _kueue_urn(estate, cluster, kind, b)
            flavor = kind == "ResourceFlavor"
            changes.append(
                Change(
                    path,
                    "kubernetes-replace",
                    f"{kind} {subject}",
                    f"Kueue refuses to change {fields} of a {kind} in place"
                    + (" once it names a topology" if flavor else "")
                    + ", so it is deleted and created again"
                    + (
                        "; Kueue finishes that delete only when no ClusterQueue lists the "
                        "flavor (finalizer kueue.x-k8s.io/resource-in-use): take it out of "
                        "the ClusterQueues first (the kueue-take-out step: a server-side apply "
                        f"of each as field manager {FIELD_MANAGER}, which owns them); pulumi "
                        "up --refresh puts it back after the replacement; admission on it "
                        "stops meanwhile"
                        if flavor
                        else ""
                    ),
                    short({f: spec_a.get(f) for f in frozen}),
                    short({f: spec_b.get(f) for f in frozen}),
                    (
                        *taken_out.get(subject, ()),
                        Action("pulumi-replace", f"{cluster} {urn}"),
                        up,
                    ),
                )
            )
            continue
        before_part, after_part = differing(a, b)
        actions: tuple[Action, ...] = tuple(labelling.get(subject, ())) if kind == "Node" else (up,)
        if b is None and kind in KEPT_ON_PRUNE:
            meaning, actions = _kept(kind, subject), (_delete_by_hand(kind, subject),)
        changes.append(
            Change(
                path,
                change_kind,
                f"{kind} {subject}",
                meaning,
                "" if a is None else short(before_part),
                "" if b is None else short(after_part),
                actions,
            )
        )
    for way, hosts in nodes.items():
        if hosts:
            changes.append(
                Change(
                    path,
                    "carries-changes" if way == "added" else "kubernetes-nodes",
                    f"{len(hosts)} node(s) {way}",
                    "nodes.yaml (not applied) follows the host list: new hosts join the "
                    "cluster when Ansible builds them, kubelet registering them with their "
                    "labels"
                    if way == "added"
                    else "nodes.yaml (not applied) follows the host list: nothing deletes the "
                    "Node of a removed host; drain it, then delete it by hand",
                    "" if way == "added" else short(hosts),
                    short(hosts) if way == "added" else "",
                    ()
                    if way == "added"
                    else (Action("review", f"kubectl delete node {' '.join(sorted(hosts))}"),),
                )
            )
    return changes


def _kept(kind: str, subject: str) -> str:
    """What taking a namespace, volume or claim out of the manifests does: nothing, by design
    (:data:`estategen.kubernetes.objects.KEPT_ON_PRUNE`)."""
    what = (
        f"the namespace {subject} and everything in it (the team's workloads, claims, Secrets)"
        if kind == "Namespace"
        else f"the {kind} {subject} and the data behind it"
    )
    return (
        f"{what} is kept: neither pulumi up nor an Argo CD or Flux prune deletes it (prune "
        "disabled); it must be deleted by hand once nothing needs it"
    )


def _delete_by_hand(kind: str, subject: str) -> Action:
    namespace, _, name = subject.rpartition("/")
    where = f" --namespace {namespace}" if namespace else ""
    return Action("review", f"kubectl delete {kind.lower()}{where} {name}")


def take_out(queue: Mapping[str, Any], flavors: Collection[str]) -> Obj | None:
    """A ClusterQueue as applied, without ``flavors``; None when it lists none of them.

    resourceGroups is an atomic list and a group needs one flavor at least (the pinned
    ClusterQueue CRD): the whole list is applied again, a group left with no flavor dropped.
    """
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    if not any(f.get("name") in flavors for g in groups for f in g.get("flavors") or []):
        return None
    kept = []
    for group in groups:
        left = [f for f in group.get("flavors") or [] if f.get("name") not in flavors]
        if left:
            kept.append({**group, "flavors": left})
    out = plain(queue)
    out["spec"]["resourceGroups"] = kept
    return dict(out)


def node_label_actions(
    cluster: str,
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, list[Action]]:
    """``kubectl label`` arguments for each running node whose labels change, by node name:
    ``key=value`` for each new or changed label, ``key-`` for each dropped one. Nodes of a pool
    that change alike are named by the pool's label when they are the whole pool, else by name.
    A node that is new has no step: kubelet registers it with its labels."""
    changed: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    members: dict[str, int] = {}
    for (kind, name), obj in after.items():
        if kind != "Node":
            continue
        now = (obj.get("metadata") or {}).get("labels") or {}
        pool = str(now.get(POOL_LABEL))
        members[pool] = members.get(pool, 0) + 1
        earlier = before.get((kind, name))
        if earlier is None:
            continue
        was = (earlier.get("metadata") or {}).get("labels") or {}
        arguments = tuple(
            [f"{k}={v}" for k, v in sorted(now.items()) if was.get(k) != v]
            + [f"{k}-" for k in sorted(was) if k not in now]
        )
        if arguments:
            changed.setdefault((pool, arguments), []).append(name)
    out: dict[str, list[Action]] = {}
    for (pool, arguments), names in changed.items():
        nodes = pool_nodes(pool) if len(names) == members[pool] else " ".join(sorted(names))
        actions = [Action("label-nodes", f"{cluster}\t{nodes}\t{a}") for a in arguments]
        out.update(dict.fromkeys(names, actions))
    return out


def _kueue_urn(estate: Estate, cluster: str, kind: str, obj: Mapping[str, Any]) -> str:
    from estategen.kubernetes.objects import object_key

    project = next(
        (project_name(estate, c) for c in estate.kubernetes_clusters if c.name == cluster), ""
    )
    api = obj.get("apiVersion")
    return f"urn:pulumi:{estate.name}::{project}::kubernetes:{api}:{kind}::{object_key(dict(obj))}"
