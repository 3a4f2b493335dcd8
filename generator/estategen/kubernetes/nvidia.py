"""NVIDIA on Kubernetes: the device plugin chart's values (the plugin, GPU Feature Discovery,
the MPS control daemon), the GPU Operator chart's values, and two components written here:
the MIG manager, which NVIDIA publishes as a chart only inside the GPU Operator, and the DCGM
exporter, whose own chart (dcgm-exporter 4.8.3, from tag 4.6.0-4.8.3) the tests hold no copy
of to render, so these objects stay proven by the tests that read them.

The charts are NVIDIA's at the pinned tags (device plugin v0.20.0, GPU Operator v26.7.0); the
hand-written objects follow mig-manager v0.15.0 and dcgm-exporter 4.6.0-4.8.3. The requirement
each field meets is numbered in ``docs/kubernetes-upstream-requirements.md``; the tests render
the vendored charts with these values (``tests/helm.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from importlib import resources

from estategen.facts import mig_layout, replicas
from estategen.kubernetes.objects import (
    NODE_NAME_ENV,
    NVIDIA_NAMESPACE,
    ClusterView,
    Obj,
    env,
    field_env,
    host_path,
    meta,
    require_node,
)
from estategen.kubernetes_facts import (
    GPU_DEPLOY_LABELS,
    MIG_CONFIG_LABEL,
    MIG_DISABLED,
    PLUGIN_CONFIG_LABEL,
    mig_parted_layouts,
)
from estategen.model import NodePool
from estategen.prometheus_rules import observability_rules
from estategen.yamltext import manifest

DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
DEVICE_PLUGIN_REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"
DEVICE_PLUGIN_VERSION = "0.20.0"
MIG_MANAGER_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
# the ubuntu flavour: the GKE exporter runs with the host's driver libraries on its path
DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-ubuntu22.04"

DEVICE_PLUGIN_CONFIGS = "nvidia-device-plugin-configs"
MIG_PARTED_CONFIG = "nvidia-mig-parted-config"
DCGM_COUNTERS = "dcgm-exporter-counters"
DCGM_COUNTERS_DIR = "/etc/dcgm-exporter"
DEFAULT_CONFIG = "default"
RUNTIME_CLASS = "nvidia"
# the containerd runtime AKS GPU nodes run every container with (their default); they define
# no `nvidia` handler, so a pod naming RuntimeClass `nvidia` never gets a sandbox there
AKS_NVIDIA_RUNTIME = "nvidia-container-runtime"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
# the pod template annotation that rolls a DaemonSet when the configs it reads change: the
# config-manager signals only when a node's label changes, not when a config's content does
CONFIG_CHECKSUM = "estategen.io/config-checksum"
# the `app` labels mig-manager waits on before it repartitions a node (R2.7)
GPU_CLIENT_APPS = {
    "nvidia-device-plugin": "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
}


def mig_resource(view: ClusterView, pool: NodePool, profile: str) -> str:
    """The resource MIG devices are scheduled by: per profile under ``mixed``, else plain."""
    assert pool.gpus is not None
    resource = view.estate.gpu_models[pool.gpus.model].resource
    if pool.provider == "gke" or view.cluster.mig_strategy != "mixed":
        return resource
    return f"nvidia.com/mig-{profile}"


def node_resources(view: ClusterView, pool: NodePool) -> dict[str, int]:
    """Devices one node of a GPU pool advertises, by resource name."""
    assert pool.gpus is not None
    out: dict[str, int] = {}
    layout = mig_layout(pool)
    for profile, count in layout.items():
        name = mig_resource(view, pool, profile)
        out[name] = out.get(name, 0) + pool.gpus.count * count * replicas(pool)
    if not layout:
        resource = view.estate.gpu_models[pool.gpus.model].resource
        out[resource] = pool.gpus.count * replicas(pool)
    return out


def pool_mig_strategy(view: ClusterView, pool: NodePool | None) -> str:
    """The plugin's MIG strategy on a pool's nodes: the cluster's on MIG pools, else none.

    MPS is refused under ``mixed`` (R1.15), and a pool without MIG has nothing to expose.
    """
    if pool is not None and not mig_layout(pool):
        return "none"
    return view.cluster.mig_strategy


def device_plugin_config(view: ClusterView, pool: NodePool | None) -> Obj:
    """k8s-device-plugin config file (version v1) for one pool, or the default one."""
    config: Obj = {
        "version": "v1",
        "flags": {"migStrategy": pool_mig_strategy(view, pool), "failOnInitError": True},
    }
    if pool is None or pool.gpus is None:
        return config
    sharing = pool.gpus.sharing
    names = sorted(node_resources(view, pool))
    if sharing.time_slicing:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": False,
                # a request for 2 replicas would not mean twice the GPU; refuse it
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": n, "replicas": sharing.time_slicing} for n in names],
            }
        }
    elif sharing.mps:
        config["sharing"] = {
            "mps": {
                "renameByDefault": False,
                "resources": [{"name": n, "replicas": sharing.mps} for n in names],
            }
        }
    return config


def config_text(value: object) -> str:
    """An embedded config file: block YAML in the order written."""
    return manifest(value)


def checksum(data: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def device_plugin_configs(view: ClusterView) -> dict[str, str]:
    """The device plugin's named configs: a default, and one per pool (R1.16)."""
    configs = {DEFAULT_CONFIG: config_text(device_plugin_config(view, None))}
    configs.update({p.name: config_text(device_plugin_config(view, p)) for p in view.plugin_pools})
    return dict(sorted(configs.items()))


def mig_manager_data(view: ClusterView) -> dict[str, str]:
    layouts = mig_parted_layouts(view.plugin_pools)
    return {"config.yaml": config_text({"version": "v1", "mig-configs": layouts})}


def has_mig(view: ClusterView) -> bool:
    return any(mig_layout(p) for p in view.plugin_pools)


def configmaps(view: ClusterView) -> list[Obj]:
    """The configs the GPU Operator's device plugin and GFD, and the MIG manager, select per
    node by label; the device plugin chart writes its own from its values."""
    if not view.plugin_pools:
        return []
    out: list[Obj] = []
    if view.runs_gpu_operator:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta(DEVICE_PLUGIN_CONFIGS, NVIDIA_NAMESPACE),
                "data": device_plugin_configs(view),
            }
        )
    if has_mig(view):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta(MIG_PARTED_CONFIG, NVIDIA_NAMESPACE),
                "data": mig_manager_data(view),
            }
        )
    return out


def runtime_class_name(view: ClusterView) -> str | None:
    """The RuntimeClass NVIDIA's pods name on the cluster's GPU nodes, or None where none is
    needed and ``nvidia`` is no runtime handler: AKS GPU nodes run every container under
    nvidia-container-runtime, their default, and define only that handler and ``untrusted``.
    Elsewhere the nodes define ``nvidia`` (the k8s_gpu_node role, the EKS GPU images)."""
    if view.cluster.provider == "aks":
        return None
    return RUNTIME_CLASS


def runtime_class(view: ClusterView) -> list[Obj]:
    """RuntimeClass ``nvidia`` for the plain install; the GPU Operator owns its own (R4.5)."""
    if not view.runs_device_plugin or runtime_class_name(view) is None:
        return []
    return [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": meta(RUNTIME_CLASS),
            "handler": "nvidia",
        }
    ]


def gpu_tolerations(view: ClusterView) -> list[Obj]:
    """What the NVIDIA DaemonSets tolerate: the GPU taint and every taint of a GPU pool."""
    seen = {("CriticalAddonsOnly", ""), ("nvidia.com/gpu", "NoSchedule")}
    out: list[Obj] = [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    for pool in view.gpu_pools:
        for taint in pool.taints:
            if (taint.key, taint.effect) not in seen:
                seen.add((taint.key, taint.effect))
                out.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
    return out


def daemonset(
    name: str,
    pod_spec: Obj,
    *,
    view: ClusterView,
    affinity: Obj,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    runtime_class: bool = True,
    configs: Mapping[str, str] | None = None,
) -> Obj:
    """A system-node-critical DaemonSet on GPU nodes, tolerating the GPU pools' taints."""
    selector = {"app.kubernetes.io/name": name}
    spec: Obj = {
        "priorityClassName": "system-node-critical",
        "affinity": affinity,
        "tolerations": gpu_tolerations(view),
        **pod_spec,
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    name_of_class = runtime_class_name(view)
    if runtime_class and name_of_class is not None:
        spec["runtimeClassName"] = name_of_class
    template_meta: Obj = {"labels": {**meta(name)["labels"], **selector, **(labels or {})}}
    if configs is not None:
        template_meta["annotations"] = {CONFIG_CHECKSUM: checksum(configs)}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta(name, NVIDIA_NAMESPACE, **selector, **(labels or {})),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": template_meta, "spec": spec},
        },
    }


def rbac(name: str, rules: list[Obj]) -> list[Obj]:
    """A ServiceAccount in the NVIDIA namespace with a ClusterRole bound to it."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, NVIDIA_NAMESPACE)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(name),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(name),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NVIDIA_NAMESPACE}],
        },
    ]


def deploy_selector(component: str) -> dict[str, str]:
    """Run only where mig-manager has not paused this component for a MIG change (R2.6)."""
    return {GPU_DEPLOY_LABELS[component]: "true"}


def device_plugin_values(view: ClusterView) -> Obj:
    """Values of NVIDIA's device plugin chart: the plugin, GPU Feature Discovery and the MPS
    control daemon on the nodes of the cluster's plugin pools, each node reading the config
    its label names (R1.6, R1.16), and the chart's Node Feature Discovery, which turns GFD's
    NodeFeature objects into node labels (R1.20, R1.23)."""
    values: Obj = {
        # the chart writes this ConfigMap and rolls its pods when a config changes (R1.17)
        "config": {"map": device_plugin_configs(view), "default": DEFAULT_CONFIG},
        # no migStrategy: as MIG_STRATEGY env it would beat every pool's config file (R1.10)
        "gfd": {"enabled": True},
        # one label for the chart's three DaemonSets, which all hold GPUs: mig-manager waits
        # for the pods of that app to go before it repartitions a node (R2.7); the chart's
        # own selector is already one for all three
        "selectorLabelsOverride": {"app": GPU_CLIENT_APPS["nvidia-device-plugin"]},
        # the chart has one node selector for all three: they go together when mig-manager
        # pauses the device plugin (R2.6)
        "nodeSelector": deploy_selector("device-plugin"),
        "affinity": require_node(PLUGIN_CONFIG_LABEL),
        "tolerations": gpu_tolerations(view),
    }
    name_of_class = runtime_class_name(view)
    if name_of_class is not None:
        values["runtimeClassName"] = name_of_class
    return values


def mig_manager(view: ClusterView) -> list[Obj]:
    """Applies the layout a node's nvidia.com/mig.config label names (R2.4-R2.13), beside the
    device plugin chart: NVIDIA publishes mig-manager as a chart only inside the GPU Operator,
    which manages it itself."""
    if not view.runs_device_plugin or not has_mig(view):
        return []
    account = "nvidia-mig-manager"
    out = rbac(
        account,
        [
            {
                "apiGroups": [""],
                "resources": ["nodes"],
                "verbs": ["get", "list", "watch", "patch", "update"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]},
        ],
    )
    config = mig_manager_data(view)
    out.append(
        daemonset(
            "nvidia-mig-manager",
            {
                "serviceAccountName": account,
                "hostPID": True,
                "hostIPC": True,
                "containers": [
                    {
                        "name": "nvidia-mig-manager",
                        "image": MIG_MANAGER_IMAGE,
                        "env": [
                            NODE_NAME_ENV,
                            field_env("POD_NAME", "metadata.name"),
                            field_env("POD_NAMESPACE", "metadata.namespace"),
                            *env(
                                CONFIG_FILE="/mig-parted-config/config.yaml",
                                # the GPU clients it pauses run in this namespace (R2.7)
                                DEFAULT_GPU_CLIENTS_NAMESPACE=NVIDIA_NAMESPACE,
                                HOST_ROOT_MOUNT="/host",
                                WITH_REBOOT="false",
                            ),
                        ],
                        "securityContext": {"privileged": True},
                        "volumeMounts": [
                            {"name": "host-sys", "mountPath": "/sys"},
                            {
                                "name": "host-root",
                                "mountPath": "/host",
                                "mountPropagation": "HostToContainer",
                            },
                            {"name": "mig-parted-config", "mountPath": "/mig-parted-config"},
                        ],
                    }
                ],
                "volumes": [
                    host_path("host-sys", "/sys", "Directory"),
                    host_path("host-root", "/"),
                    {"name": "mig-parted-config", "configMap": {"name": MIG_PARTED_CONFIG}},
                ],
            },
            view=view,
            affinity=require_node(MIG_CONFIG_LABEL),
            configs=config,
        )
    )
    return out


def gpu_operator_values(view: ClusterView) -> Obj:
    """GPU Operator values carrying the same choices as the plain device-plugin install."""
    mig = has_mig(view)
    values: Obj = {
        # hosts are built by the estate's Ansible roles, driver and container toolkit included
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        # the device plugin hands GPUs over as NVIDIA_VISIBLE_DEVICES (its envvar default), as
        # under the plain chart: the nodes' default runtime is nvidia-container-runtime (the
        # k8s_gpu_node role, AKS's GPU nodes), and nothing configures containerd for CDI
        # devices, which the operator's toolkit would do when it installs the toolkit
        "cdi": {"enabled": False},
        "daemonsets": {"tolerations": gpu_tolerations(view)},
        # always explicit: the chart's default `single` would override every pool's config
        # through MIG_STRATEGY (R4.1)
        "mig": {"strategy": view.cluster.mig_strategy},
        "devicePlugin": {
            "enabled": True,
            "config": {"name": DEVICE_PLUGIN_CONFIGS, "default": DEFAULT_CONFIG},
        },
        "gfd": {"enabled": True},
        "migManager": {"enabled": mig},
        # the estate's own DCGM exporter carries the estate labels on both schedulers
        "dcgmExporter": {"enabled": False},
        # the operator finds GPU nodes only by the PCI labels Node Feature Discovery's worker
        # gives them (nvidia.com/gpu.present follows those), and deploys nothing where they
        # are missing: the chart's NFD worker tolerates only nvidia.com/gpu and the control
        # plane, so it must tolerate every taint of the GPU pools as the operands do
        "node-feature-discovery": {"worker": {"tolerations": gpu_tolerations(view)}},
    }
    if mig:
        values["migManager"]["config"] = {"name": MIG_PARTED_CONFIG, "default": MIG_DISABLED}
    if runtime_class_name(view) is None:
        # the operator names its RuntimeClass and the class's handler alike (operator
        # .runtimeClass, default `nvidia`) and sets it on every operand: name the handler
        # the nodes have
        values["operator"] = {"runtimeClass": AKS_NVIDIA_RUNTIME}
    return values


def critical_pods_quota(namespace: str) -> Obj:
    """GKE admits system-node-critical pods only in a namespace whose ResourceQuota is scoped
    to that PriorityClass (as its own gcp-critical-pods quota in kube-system, with 1G pods)."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": meta("critical-pods", namespace),
        "spec": {
            "hard": {"pods": "1G"},
            "scopeSelector": {
                "matchExpressions": [
                    {
                        "scopeName": "PriorityClass",
                        "operator": "In",
                        "values": ["system-node-critical", "system-cluster-critical"],
                    }
                ]
            },
        },
    }


def dcgm_counters() -> str:
    """The DCGM counter list the Ansible role installs, so both schedulers export the same."""
    role = resources.files("estategen").joinpath("playbooks/roles/dcgm_exporter/files")
    return role.joinpath("counters.csv").read_text(encoding="utf-8")


def dcgm_exporter(view: ClusterView) -> list[Obj]:
    """DCGM exporter on every GPU node, with a Service (and ServiceMonitor) for Prometheus."""
    if not view.gpu_pools:
        return []
    obs = view.estate.observability
    port = obs.dcgm_exporter_port
    # both exporter DaemonSets carry this label; the Service selects on it
    app = {"app.kubernetes.io/part-of": "dcgm-exporter"}
    counters_data = {"counters.csv": dcgm_counters()}

    def exporter(extra_env: list[Obj], mounts: list[Obj], privileged: bool) -> Obj:
        security: Obj = {"capabilities": {"add": ["SYS_ADMIN"]}, "runAsUser": 0}
        if privileged:
            security = {"privileged": True}
        return {
            "name": "dcgm-exporter",
            "image": DCGM_EXPORTER_IMAGE,
            "env": [
                NODE_NAME_ENV,
                *env(
                    DCGM_EXPORTER_LISTEN=f":{port}",
                    DCGM_EXPORTER_KUBERNETES="true",
                    DCGM_EXPORTER_COLLECTORS=f"{DCGM_COUNTERS_DIR}/counters.csv",
                ),
                *extra_env,
            ],
            "ports": [{"name": "metrics", "containerPort": port}],
            "securityContext": security,
            "volumeMounts": [
                {
                    "name": "pod-resources",
                    "mountPath": "/var/lib/kubelet/pod-resources",
                    "readOnly": True,
                },
                {"name": "counters", "mountPath": DCGM_COUNTERS_DIR, "readOnly": True},
                *mounts,
            ],
        }

    pod_resources = host_path("pod-resources", "/var/lib/kubelet/pod-resources")
    counters = {"name": "counters", "configMap": {"name": DCGM_COUNTERS}}
    out: list[Obj] = [
        {
            # the same counter list the Slurm side's exporters use (Ansible role dcgm_exporter)
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(DCGM_COUNTERS, NVIDIA_NAMESPACE, **app),
            "data": counters_data,
        }
    ]
    if view.plugin_pools:
        out.append(
            daemonset(
                "dcgm-exporter",
                {"containers": [exporter([], [], False)], "volumes": [pod_resources, counters]},
                view=view,
                affinity=require_node(PLUGIN_CONFIG_LABEL),
                labels={**app, "app": GPU_CLIENT_APPS["dcgm-exporter"]},
                node_selector=deploy_selector("dcgm-exporter"),
                configs=counters_data,
            )
        )
    if any(p.provider == "gke" for p in view.gpu_pools):
        # GKE installs the driver under /home/kubernetes/bin/nvidia, outside any runtime class
        out.append(
            daemonset(
                "dcgm-exporter-gke",
                {
                    "containers": [
                        exporter(
                            # GKE's device plugin names devices (nvidia0, ...), not by UUID
                            env(
                                LD_LIBRARY_PATH="/usr/local/nvidia/lib64",
                                DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE="device-name",
                            ),
                            [{"name": "nvidia-install-dir", "mountPath": "/usr/local/nvidia"}],
                            True,
                        )
                    ],
                    "volumes": [
                        pod_resources,
                        counters,
                        host_path("nvidia-install-dir", "/home/kubernetes/bin/nvidia"),
                    ],
                },
                view=view,
                affinity=require_node(GKE_ACCELERATOR_LABEL),
                labels=app,
                runtime_class=False,
                configs=counters_data,
            )
        )
        out.append(critical_pods_quota(NVIDIA_NAMESPACE))
    service_meta = meta("dcgm-exporter", NVIDIA_NAMESPACE, **app)
    if not view.cluster.prometheus_operator:
        service_meta["annotations"] = {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(port),
        }
    out.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": service_meta,
            "spec": {
                "selector": app,
                "ports": [{"name": "metrics", "port": port, "targetPort": port}],
            },
        }
    )
    if view.cluster.prometheus_operator:
        relabelings: list[Obj] = [
            # instance is node:port, as the Slurm side's exporters are scraped
            {
                "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                "targetLabel": "instance",
                "replacement": f"${{1}}:{port}",
                "action": "replace",
            },
            *(
                {"targetLabel": k, "replacement": v, "action": "replace"}
                for k, v in sorted(obs.labels.items())
            ),
        ]
        out.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "ServiceMonitor",
                "metadata": meta("dcgm-exporter", NVIDIA_NAMESPACE, **app),
                "spec": {
                    "selector": {"matchLabels": app},
                    "namespaceSelector": {"matchNames": [NVIDIA_NAMESPACE]},
                    "endpoints": [
                        {
                            "port": "metrics",
                            "interval": "15s",
                            "honorLabels": True,
                            "relabelings": relabelings,
                        }
                    ],
                },
            }
        )
        # the estate's recording and alerting rules, the same groups the Slurm side's
        # Prometheus loads from observability/prometheus/rules/
        groups = observability_rules(view.estate)
        if groups:
            out.append(
                {
                    "apiVersion": "monitoring.coreos.com/v1",
                    "kind": "PrometheusRule",
                    "metadata": meta(f"estategen-{view.estate.name}", NVIDIA_NAMESPACE),
                    "spec": {"groups": groups},
                }
            )
    return out
