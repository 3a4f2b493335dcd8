"""What the GPU Operator receives: the ClusterPolicy NVIDIA's chart renders from our values.

A cluster with ``device_plugin: {install: gpu-operator}`` installs the ``gpu-operator`` chart
(v26.7.0) with the values ``nvidia.gpu_operator_values`` writes. The operator reads none of
those values; it reads the one ClusterPolicy the chart's ``templates/clusterpolicy.yaml``
renders from them over the chart's ``values.yaml``. These tests run ``helm template`` on the
vendored template and values (``tests/upstream/gpu-operator-v26.7.0/gpu-operator/``, with the
stand-in ``Chart.yaml`` and label helpers ``tests/helm.py`` writes) and check the ClusterPolicy:
valid against the vendored CRD, and carrying each choice our values make. Line numbers are
those of the vendored files: ``CP`` the template, ``V`` the chart's values.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from test_k8s_gpu_runtime import AKS as AKS_CLUSTER

from estategen import kubernetes, load, pipeline
from estategen.kubernetes import nvidia
from estategen.kubernetes.objects import ClusterView
from estategen.kubernetes_facts import MIG_CONFIG_LABEL, MIG_DISABLED, registration_labels
from estategen.model import Estate

import helm
from conftest import BLUEPRINTS
from crd import UPSTREAM, crd_set
from k8s_harness import MESA

Obj = dict[str, Any]
GPU_OPERATOR = UPSTREAM / "gpu-operator-v26.7.0"

# an on-prem cluster running the GPU Operator: a MIG pool whose nodes carry a taint of their
# own, and a time-sliced pool without MIG
LAB = """\
estate: lab
identity:
  teams: [{{name: ml, gid: 30001}}]
node_pools:
  - name: a100-mig
    scheduler: kubernetes
    cluster: lab
    hosts: k8s-a100-[01-02]
    cpu: {{sockets: 2, cores_per_socket: 32, threads_per_core: 2}}
    memory_gb: 1024
    gpus: {{model: a100-sxm-80gb, count: 8, mig: [{mig}]}}
    taints: [{{key: dedicated, value: ml, effect: NoExecute}}]
  - name: l40s
    scheduler: kubernetes
    cluster: lab
    hosts: k8s-l40s-[01-02]
    cpu: {{sockets: 1, cores_per_socket: 64, threads_per_core: 2}}
    memory_gb: 512
    gpus: {{model: l40s-48gb, count: 4, sharing: {{time_slicing: 4}}}}
kubernetes:
  clusters:
    - name: lab
      device_plugin: {{install: gpu-operator, mig_strategy: {strategy}}}
"""
WITH_MIG = LAB.format(mig="3g.40gb, 3g.40gb", strategy="single")
WITHOUT_MIG = LAB.format(mig="", strategy="none")

# AKS, the same cluster as test_k8s_gpu_runtime.py's, running the GPU Operator
AKS = AKS_CLUSTER + "      device_plugin: {install: gpu-operator}\n"

# every blueprint here that runs the GPU Operator: (source, cluster)
OPERATOR_CLUSTERS = [
    (WITH_MIG, "lab"),
    (WITHOUT_MIG, "lab"),
    (AKS, "az"),
    (MESA, "operator"),
    ("frontier.yaml", "train"),
]
OPERATOR_IDS = ["mig", "no-mig", "aks", "mesa", "frontier"]
# the keys of our values the chart hands to a dependency, not to the ClusterPolicy template:
# Helm gives a subchart the values under its name (upstream Chart.yaml, dependencies)
DEPENDENCY_VALUES = {"node-feature-discovery"}


def estate_of(source: str) -> Estate:
    text = (BLUEPRINTS / source).read_text() if source.endswith(".yaml") else source
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    return pipeline.validate_document(document).estate


def view_of(source: str, cluster: str) -> ClusterView:
    estate = estate_of(source)
    (found,) = [c for c in estate.kubernetes_clusters if c.name == cluster]
    view = ClusterView.of(estate, found)
    assert view.runs_gpu_operator, cluster
    return view


def rendered(view: ClusterView) -> list[Obj]:
    """What the gpu-operator release estategen builds for the cluster installs."""
    (release,) = [r for r in kubernetes.releases(view) if r.name == "gpu-operator"]
    assert (release.chart, release.version) == ("gpu-operator", "v26.7.0")
    return helm.installed_release(release)


def policy(source: str, cluster: str) -> Obj:
    """The ClusterPolicy's spec the chart renders for the cluster."""
    (found,) = [o for o in rendered(view_of(source, cluster)) if o["kind"] == "ClusterPolicy"]
    spec: Obj = found["spec"]
    return spec


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each scalar or list of a mapping, by its path of keys."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    else:
        yield path, value


def at(obj: Obj, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def chart_values(ours: Obj) -> Obj:
    """The values the chart and its dependencies see: ours over the chart's values.yaml, as
    Helm coalesces them (mappings merge key by key; anything else, lists included, is
    replaced)."""

    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            out = dict(base)
            for key, value in over.items():
                out[key] = merge(base[key], value) if key in base else value
            return out
        return over

    defaults = yaml.safe_load((GPU_OPERATOR / "gpu-operator/values.yaml").read_text())
    merged: Obj = merge(defaults, ours)
    return merged


def tolerates(tolerations: list[Obj], key: str, value: str, effect: str) -> bool:
    """Whether a pod with these tolerations may run on a node with this taint."""
    for t in tolerations:
        if t.get("effect") not in (None, "", effect):
            continue
        if t.get("operator", "Equal") == "Exists":
            if t.get("key") in (None, "", key):
                return True
        elif t.get("key") == key and t.get("value", "") == value:
            return True
    return False


@pytest.mark.parametrize(("source", "cluster"), OPERATOR_CLUSTERS, ids=OPERATOR_IDS)
def test_the_chart_renders_a_cluster_policy_the_operators_crd_accepts(
    source: str, cluster: str
) -> None:
    """CP 1-5: with ``clusterPolicy.deployCR`` (V 565-566, true) the template renders one
    ClusterPolicy ``cluster-policy`` (nvidia.com/v1). The API server checks it against the
    CRD (``nvidia.com_clusterpolicies.yaml``: closed objects, enums such as
    ``mig.strategy`` none|single|mixed and ``migManager.config.default`` all-disabled|"",
    and the required operands); a refused one leaves the operator with nothing to do."""
    objs = rendered(view_of(source, cluster))
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    ]
    violations = crd_set(GPU_OPERATOR).validate(objs[0])
    assert [str(v) for v in violations] == []


@pytest.mark.parametrize(("source", "cluster"), OPERATOR_CLUSTERS, ids=OPERATOR_IDS)
def test_every_value_we_write_reaches_the_cluster_policy_where_we_meant_it(
    source: str, cluster: str
) -> None:
    """Each key of our values is one the template copies into the spec at the same path (CP
    22-25 ``operator.runtimeClass``, 44-46 ``daemonsets.tolerations``, 139-142 ``mig``, 151
    ``driver.enabled``, 441 ``toolkit.enabled``, 470 and 495-499 ``devicePlugin``, 533
    ``dcgmExporter.enabled``, 590 ``gfd.enabled``, 619 and 644-650 ``migManager``): a key the
    template never reads would never reach the operator, and a value the template reshapes
    would not be what the operator is told. The values of the chart's dependency, Node Feature
    Discovery, go to that chart instead (checked below)."""
    values = nvidia.gpu_operator_values(view_of(source, cluster))
    spec = policy(source, cluster)
    written = {path: value for path, value in leaves(values) if path[0] not in DEPENDENCY_VALUES}
    assert written
    assert {path: at(spec, path) for path in written} == written


def test_the_hosts_keep_their_own_driver_and_container_toolkit() -> None:
    """CP 150-151 ``driver.enabled`` and 440-441 ``toolkit.enabled`` from our values (V 137-138
    and 229-230 enable both): the estate's Ansible roles install the driver and the NVIDIA
    container toolkit, so the operator installs neither."""
    spec = policy(WITH_MIG, "lab")
    assert spec["driver"]["enabled"] is False
    assert spec["toolkit"]["enabled"] is False


def test_the_operator_runs_no_dcgm_exporter_beside_the_estates() -> None:
    """CP 532-533 ``dcgmExporter.enabled``, false from our values (V 299-300 enables it, with
    a ServiceMonitor, V 326-327): the estate runs its own exporter, with the Slurm side's
    counters and labels; a second one would double every GPU series. The standalone DCGM host
    engine (CP 503-504, V 287-289) stays off."""
    spec = policy(WITH_MIG, "lab")
    assert spec["dcgmExporter"]["enabled"] is False
    assert spec["dcgm"]["enabled"] is False
    exporters = [
        o for o in nvidia.dcgm_exporter(view_of(WITH_MIG, "lab")) if o["kind"] == "DaemonSet"
    ]
    assert [o["metadata"]["name"] for o in exporters] == ["dcgm-exporter"]


def test_the_device_plugin_reads_each_pools_config_from_the_estates_configmap() -> None:
    """CP 495-499: ``devicePlugin.config`` reaches the spec only when it names a ConfigMap
    (V 271-279 name none). Ours names the ConfigMap estategen writes in the operator's
    namespace, with a config per pool, each node picking its own by label, and ``default``
    for a node without one."""
    view = view_of(WITH_MIG, "lab")
    spec = policy(WITH_MIG, "lab")
    assert spec["devicePlugin"]["enabled"] is True
    assert spec["devicePlugin"]["config"] == {
        "name": nvidia.DEVICE_PLUGIN_CONFIGS,
        "default": nvidia.DEFAULT_CONFIG,
    }
    (configmap,) = [
        o for o in nvidia.configmaps(view) if o["metadata"]["name"] == nvidia.DEVICE_PLUGIN_CONFIGS
    ]
    assert configmap["metadata"]["namespace"] == helm_namespace(view)
    assert set(configmap["data"]) == {nvidia.DEFAULT_CONFIG, "a100-mig", "l40s"}


def helm_namespace(view: ClusterView) -> str:
    (release,) = [r for r in kubernetes.releases(view) if r.name == "gpu-operator"]
    return release.namespace


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_the_operator_is_told_the_blueprints_mig_strategy(strategy: str) -> None:
    """CP 139-142 writes ``mig.strategy`` whenever the value is non-empty; the chart's own is
    ``single`` (V 134-135), which the operator would set as MIG_STRATEGY on the plugin of every
    node. The blueprint's strategy arrives instead, ``none`` included."""
    mig = "" if strategy == "none" else "3g.40gb, 3g.40gb"
    source = LAB.format(mig=mig, strategy=strategy)
    assert policy(source, "lab")["mig"] == {"strategy": strategy}


def test_mig_manager_runs_with_the_estates_layouts_exactly_when_a_pool_has_mig() -> None:
    """CP 618-619 ``migManager.enabled`` and 644-650 ``migManager.config``. The chart enables
    the MIG manager (V 370-371) and, without a config name, it generates its layouts from the
    hardware (V 379-381, 419-428): ours enables it only where a pool has MIG, names the
    ConfigMap of the blueprint's layouts (one per pool, the name each node's
    ``nvidia.com/mig.config`` label gives), and keeps ``all-disabled`` for unlabelled nodes."""
    spec = policy(WITH_MIG, "lab")
    assert spec["migManager"]["enabled"] is True
    assert spec["migManager"]["config"] == {
        "name": nvidia.MIG_PARTED_CONFIG,
        "default": MIG_DISABLED,
    }
    view = view_of(WITH_MIG, "lab")
    layouts = nvidia.mig_manager_data(view)["config.yaml"]
    for pool in view.plugin_pools:
        label = dict(registration_labels(view.estate, pool))[MIG_CONFIG_LABEL]
        assert re.search(rf"^  {re.escape(label)}:$", layouts, re.MULTILINE), label
    assert policy(WITHOUT_MIG, "lab")["migManager"]["enabled"] is False


def test_the_operands_tolerate_every_taint_of_the_gpu_pools() -> None:
    """CP 44-46: ``daemonsets.tolerations`` go to every operand the operator deploys; a list
    replaces the chart's (V 45-48, the ``nvidia.com/gpu`` taint alone), so ours carry it too,
    and each taint a GPU pool's nodes register with, whatever its effect."""
    view = view_of(WITH_MIG, "lab")
    tolerations = policy(WITH_MIG, "lab")["daemonsets"]["tolerations"]
    assert tolerates(tolerations, "nvidia.com/gpu", "present", "NoSchedule")
    taints = [(t.key, t.value, t.effect) for pool in view.gpu_pools for t in pool.taints]
    assert taints == [("dedicated", "ml", "NoExecute")]
    assert all(tolerates(tolerations, *taint) for taint in taints)
    # frontier's training pool is tainted dedicated=training:NoSchedule
    tolerations = policy("frontier.yaml", "train")["daemonsets"]["tolerations"]
    assert tolerates(tolerations, "dedicated", "training", "NoSchedule")


def test_operands_run_under_the_runtime_class_the_nodes_define() -> None:
    """CP 22-25: ``operator.runtimeClass`` reaches the spec when set, and the chart sets
    ``nvidia`` (V 81); the operator creates a RuntimeClass of that name with the same handler
    and puts it on every operand (gpu-operator v26.7.0 ``controllers/object_controls.go``
    2740-2753, ``getRuntimeClassName`` and ``setRuntimeClassName``). AKS GPU nodes define the
    handler ``nvidia-container-runtime`` and no ``nvidia`` (test_k8s_gpu_runtime.py); on-prem
    and EKS nodes define ``nvidia``."""
    assert policy(AKS, "az")["operator"] == {"runtimeClass": nvidia.AKS_NVIDIA_RUNTIME}
    assert "operator" not in nvidia.gpu_operator_values(view_of(WITH_MIG, "lab"))
    assert policy(WITH_MIG, "lab")["operator"] == {"runtimeClass": nvidia.RUNTIME_CLASS}
    assert policy("frontier.yaml", "train")["operator"] == {"runtimeClass": "nvidia"}


def test_the_virtual_machine_operands_stay_off_for_container_workloads() -> None:
    """The chart enables, by default, operands that serve GPUs to virtual machines: the
    sandbox and Kata device plugins, the VFIO manager, the vGPU device manager and the
    confidential computing manager with ``defaultMode: "on"`` (V 486-561; CP 333-334,
    378-379, 410-412, 738-740, 769-771). The operator deploys them only on nodes whose GPU
    workload is a VM one, and with ``sandboxWorkloads.enabled`` false (V 19-23, CP 730-737)
    every node's workload is ``container`` (``controllers/state_manager.go``
    ``gpuStateLabels``): none of them runs.
    The vGPU manager, Kata manager and node status exporter are off outright (V 464-465,
    518-519, 433-434; CP 253-254, 301-302, 657-658)."""
    spec = policy(WITH_MIG, "lab")
    assert spec["sandboxWorkloads"]["enabled"] is False
    assert spec["sandboxWorkloads"]["defaultWorkload"] == "container"
    for operand in ("vgpuManager", "kataManager", "nodeStatusExporter"):
        assert spec[operand]["enabled"] is False, operand
    vm_only = {
        name
        for name in ("sandboxDevicePlugin", "kataSandboxDevicePlugin", "vfioManager",
                     "vgpuDeviceManager", "ccManager")
        if spec[name].get("enabled")
    }  # fmt: skip
    assert vm_only == {
        "sandboxDevicePlugin",
        "kataSandboxDevicePlugin",
        "vfioManager",
        "vgpuDeviceManager",
        "ccManager",
    }


def test_under_the_operator_the_device_plugin_hands_gpus_to_the_nodes_default_runtime() -> None:
    """CP 145-149 ``cdi.enabled`` is true by default (V 15-17); the operator then runs the
    device plugin with ``DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri`` (gpu-operator v26.7.0
    ``controllers/object_controls.go`` 1527-1535, ``transformDevicePluginCtrForCDI``) and
    leaves containerd's CDI to the toolkit it installs (NVIDIA/gpu-operator pull request 1285:
    with CDI the toolkit configures the runtime; containerd 1.7 applies CDI devices only with
    ``enable_cdi``, off by default, and Debian 12's 1.6 not at all). The estate's hosts bring
    their own toolkit (``toolkit.enabled: false``) with nvidia-container-runtime as
    containerd's default runtime (the ``k8s_gpu_node`` role; AKS's GPU nodes), which reads
    ``NVIDIA_VISIBLE_DEVICES``: the values turn CDI off, so the plugin keeps its ``envvar``
    default (only the CDI branch sets ``DEVICE_LIST_STRATEGY``), as under the plain chart.
    The NRI plugin is off with it (CP 147-149), so the operands keep the runtime class."""
    for source, cluster in OPERATOR_CLUSTERS:
        spec = policy(source, cluster)
        assert spec["cdi"]["enabled"] is False, cluster
        assert spec["cdi"].get("nriPluginEnabled") in (None, False)
        assert "DEVICE_LIST_STRATEGY" not in {
            e["name"] for e in spec["devicePlugin"].get("env", [])
        }
    assert policy(WITH_MIG, "lab")["operator"] == {"runtimeClass": nvidia.RUNTIME_CLASS}


@pytest.mark.parametrize(("source", "cluster"), OPERATOR_CLUSTERS, ids=OPERATOR_IDS)
def test_node_feature_discovery_runs_on_every_gpu_node_so_the_operator_finds_it(
    source: str, cluster: str
) -> None:
    """The operator finds GPU nodes only by Node Feature Discovery's PCI labels (gpu-operator
    v26.7.0 ``controllers/state_manager.go`` 170-174 ``gpuNodeLabels``,
    ``feature.node.kubernetes.io/pci-10de.present``): ``reconcileCommonGPULabel``
    (``controllers/nodelabeling_controller.go`` 239-256) sets ``nvidia.com/gpu.present`` from
    them, sets it to ``false`` on a node without them, and deploys no operand (device plugin,
    GFD, MIG manager) on a node without it. The labels come from NFD's worker, which the chart
    installs (dependency ``node-feature-discovery`` 0.19.0, ``nfd.enabled``, V 8-9) with the
    tolerations of
    ``node-feature-discovery.worker.tolerations`` (V 626-638: the control plane's taint and
    ``nvidia.com/gpu:NoSchedule`` only; the dependency's ``templates/worker.yaml`` 203-206).
    A GPU pool tainted otherwise (frontier's ``dedicated=training``) would get no worker, no
    labels and no GPUs: the worker tolerates every taint of the cluster's GPU pools."""
    view = view_of(source, cluster)
    values = chart_values(nvidia.gpu_operator_values(view))
    assert values["nfd"]["enabled"] is True
    tolerations = values["node-feature-discovery"]["worker"]["tolerations"]
    for pool in view.plugin_pools:
        for taint in pool.taints:
            if taint.effect in ("NoSchedule", "NoExecute"):
                assert tolerates(tolerations, taint.key, taint.value, taint.effect), (
                    pool.name,
                    taint,
                )
