"""Pulumi program for one Kubernetes cluster of an estategen estate.

estategen copies this file unchanged into every ``pulumi/<cluster>/`` project next to
``cluster.json``, the blueprint's view of that cluster; everything cluster-specific comes from
there. It shapes the GPU side of the cluster: team namespaces and quotas, node labels and taints,
the NVIDIA device plugin (or GPU Operator), MIG layouts, GPU metrics, Kueue queues, and the
managed GKE/EKS node pools. Kubernetes objects are built as plain dicts (the API's own field
names, so they read like the manifests they become) and registered with pulumi-kubernetes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

Data = dict[str, Any]
Obj = dict[str, Any]

SCHEMA = "estategen/pulumi-cluster-v1"
DATA_FILE = Path(__file__).with_name("cluster.json")

NVIDIA_NAMESPACE = "nvidia-gpu"
KUEUE_NAMESPACE = "kueue-system"
DEVICE_PLUGIN_CONFIGS = "nvidia-device-plugin-configs"
MIG_PARTED_CONFIG = "nvidia-mig-parted-config"
DCGM_COUNTERS = "dcgm-exporter-counters"
DCGM_COUNTERS_DIR = "/etc/dcgm-exporter"
DEFAULT_CONFIG = "default"
MIG_DISABLED = "all-disabled"
RUNTIME_CLASS = "nvidia"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
TOPOLOGY = "network"

# Labels estategen puts on nodes (on-prem by NodePatch, managed pools through the provider).
ESTATE_LABEL = "estategen.io/estate"
TEAM_LABEL = "estategen.io/team"
MODEL_LABEL = "estategen.io/gpu-model"
MIG_LABEL = "estategen.io/mig"
SWITCH_LABEL = "estategen.io/switch"
HOSTNAME_LABEL = "kubernetes.io/hostname"
PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
MANAGED_BY = {"app.kubernetes.io/managed-by": "estategen"}

GKE_TAINT_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}
EKS_NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
)


class StackError(Exception):
    """The data file does not belong to this stack, or is not one this program reads."""


# --- the data file ---------------------------------------------------------------------------


def load(path: Path = DATA_FILE) -> Data:
    data: Data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise StackError(f"{path} is {data.get('schema')!r}; this program reads {SCHEMA}")
    return data


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
    wanted = {"kubernetes:context": data["name"]}
    if cluster["provider"] == "gke":
        wanted.update({"gcp:project": cluster.get("project"), "gcp:region": cluster.get("region")})
    elif cluster["provider"] == "eks":
        wanted["aws:region"] = cluster.get("region")
    for key, expected in wanted.items():
        namespace, _, name = key.partition(":")
        configured = pulumi.Config(namespace).get(name)
        if expected is not None and configured is not None and configured != expected:
            raise StackError(
                f"stack config says {key} {configured!r} but the blueprint says {expected!r}; "
                "remove the key from the stack settings (Pulumi.<stack>.yaml): estategen sets "
                "it in Pulumi.yaml"
            )


def gpu_pools(data: Data) -> list[Data]:
    return [p for p in data["pools"] if p["gpu"]]


def plugin_pools(data: Data) -> list[Data]:
    """GPU pools whose device plugin we run: GKE runs its own on its GPU nodes."""
    return [p for p in gpu_pools(data) if p["provider"] != "gke"]


def mig_resource(data: Data, pool: Data, profile: str) -> str:
    """The resource MIG devices are scheduled by: per profile under ``mixed``, else plain."""
    if pool["provider"] == "gke" or data["cluster"]["mig_strategy"] != "mixed":
        return str(pool["gpu"]["resource"])
    return f"nvidia.com/mig-{profile}"


def node_resources(data: Data, pool: Data) -> dict[str, int]:
    """Devices one node of a GPU pool advertises, by resource name."""
    gpu = pool["gpu"]
    out: dict[str, int] = {}
    if gpu["mig"]:
        for profile, count in gpu["mig"].items():
            name = mig_resource(data, pool, profile)
            out[name] = out.get(name, 0) + gpu["count"] * count * gpu["replicas"]
    else:
        out[gpu["resource"]] = gpu["count"] * gpu["replicas"]
    return out


# --- small YAML writer for embedded config files ---------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def to_yaml(value: Any) -> str:
    """Block-style YAML for configs of dicts, lists and scalars; strings always quoted."""
    lines: list[str] = []
    _emit(value, 0, lines)
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return json.dumps(str(value))


def _emit(value: Any, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    if isinstance(value, dict):
        for key, item in value.items():
            shown = key if _BARE_KEY.fullmatch(key) else json.dumps(key)
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{shown}:")
                _emit(item, depth + 1, lines)
            else:
                lines.append(f"{pad}{shown}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                nested: list[str] = []
                _emit(item, depth + 1, nested)
                nested[0] = f"{pad}- {nested[0].lstrip()}"
                lines.extend(nested)
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:
        lines.append(f"{pad}{_scalar(value)}")


# --- NVIDIA configuration files ----------------------------------------------------------


def device_plugin_config(data: Data, pool: Data | None) -> Obj:
    """k8s-device-plugin config file (version v1) for one pool, or the default one."""
    config: Obj = {
        "version": "v1",
        "flags": {
            "migStrategy": data["cluster"]["mig_strategy"],
            "failOnInitError": True,
        },
    }
    if pool is None:
        return config
    gpu = pool["gpu"]
    names = sorted(node_resources(data, pool))
    if gpu["time_slicing"]:
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": False,
                # a request for 2 replicas would not mean twice the GPU; refuse it
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": n, "replicas": gpu["time_slicing"]} for n in names],
            }
        }
    elif gpu["mps"]:
        config["sharing"] = {
            "mps": {
                "renameByDefault": False,
                "resources": [{"name": n, "replicas": gpu["mps"]} for n in names],
            }
        }
    return config


# mig-parted's own field order in a device filter (cluster.json sorts keys)
MIG_DEVICE_FIELDS = ("devices", "mig-enabled", "mig-devices")


def mig_configs(data: Data) -> Obj:
    """mig-parted ``mig-configs`` as the generator lays them out, in its order."""
    return {
        entry["name"]: [
            {key: device[key] for key in MIG_DEVICE_FIELDS if key in device}
            for device in entry["config"]
        ]
        for entry in data["mig_configs"]
    }


# --- Kueue flavors and quotas --------------------------------------------------------------


@dataclass(frozen=True)
class Flavor:
    """One ResourceFlavor: a GPU model (or model/MIG profile), its pools and its units.

    The generator counts units and replicas (cluster.json ``flavors``); this adds what the
    program needs to write the objects.
    """

    key: str  # the blueprint's quota key: MODEL or MODEL/PROFILE
    name: str
    resource: str
    model: str
    mig: bool
    pools: tuple[Data, ...]
    profile: str | None
    units: int  # physical GPUs (or MIG instances) of this flavor in the cluster
    factor: int  # schedulable devices per physical unit (quota is written in physical units)

    def per_unit(self, key: str, scale: int) -> int | None:
        """CPU (millicores) or memory (MiB) that come with one unit; None when unknown."""
        shares: list[int] = []
        for pool in self.pools:
            amount = pool[key]
            if amount is None:
                return None
            shares.append(amount * scale // (pool["gpu"]["count"] * pool["gpu"]["mig_instances"]))
        return min(shares)

    @property
    def topology(self) -> bool:
        return all(p["switches"] for p in self.pools)


def flavors(data: Data) -> list[Flavor]:
    pools = {p["name"]: p for p in data["pools"]}
    out = []
    for entry in data["flavors"]:
        members = tuple(pools[name] for name in entry["pools"])
        profile = entry["profile"]
        out.append(
            Flavor(
                key=entry["key"],
                name=entry["name"],
                resource=mig_resource(data, members[0], profile)
                if profile
                else members[0]["gpu"]["resource"],
                model=entry["model"],
                mig=profile is not None,
                pools=members,
                profile=profile,
                units=entry["units"],
                factor=entry["factor"],
            )
        )
    return out


def covers_cpu_and_memory(all_flavors: Sequence[Flavor]) -> bool:
    """Queues cover CPU and memory too when every pool says how much comes with a GPU."""
    return all(
        f.per_unit("cpu_threads", 1000) is not None and f.per_unit("memory_gb", 1024) is not None
        for f in all_flavors
    )


def admissible(data: Data, team: Data, flavor: Flavor) -> int:
    """Devices Kueue can admit for a team on a flavor: nominal quota plus what it may borrow."""
    queues = data["queues"]
    if queues is None:
        return flavor.units * flavor.factor
    entry = next((q for q in queues["teams"] if q["team"] == team["name"]), None)
    if entry is None:
        return 0
    nominal = int(entry["quota"].get(flavor.key, 0))
    borrow = entry["borrowing_limit"]
    ceiling = flavor.units if borrow is None else min(flavor.units, nominal + borrow)
    return max(nominal, ceiling) * flavor.factor


def quota_hard(data: Data, team: Data) -> dict[str, str]:
    """ResourceQuota hard limits: a namespace can hold what its queue can admit, no more."""
    hard: dict[str, int] = {}
    for flavor in flavors(data):
        key = f"requests.{flavor.resource}"
        hard[key] = hard.get(key, 0) + admissible(data, team, flavor)
    return {k: str(v) for k, v in sorted(hard.items())}


# --- Kubernetes objects ---------------------------------------------------------------------


def meta(name: str, namespace: str | None = None, **labels: str) -> Obj:
    out: Obj = {"name": name, "labels": {**MANAGED_BY, **labels}}
    if namespace:
        out["namespace"] = namespace
    return out


def namespace_objects(data: Data) -> list[Obj]:
    out = []
    for team in data["teams"]:
        metadata_ = meta(
            team["namespace"], **{ESTATE_LABEL: data["estate"], TEAM_LABEL: team["name"]}
        )
        # the same GID as the team's Unix group on the Slurm side, for fsGroup on shared mounts
        metadata_["annotations"] = {"estategen.io/gid": str(team["gid"])}
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata_})
    if gpu_pools(data):
        metadata_ = meta(NVIDIA_NAMESPACE, **{ESTATE_LABEL: data["estate"]})
        # device plugin, MIG manager and DCGM exporter need host paths and privileges
        metadata_["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata_})
    return out


def quota_objects(data: Data) -> list[Obj]:
    if not gpu_pools(data):
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": meta("gpu", team["namespace"], **{TEAM_LABEL: team["name"]}),
            "spec": {"hard": quota_hard(data, team)},
        }
        for team in data["teams"]
    ]


def priority_class_objects(data: Data) -> list[Obj]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": meta(pc["name"]),
            "value": pc["value"],
            "description": pc["description"] or f"{pc['name']} (estate {data['estate']})",
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for pc in data["priority_classes"]
    ]


def node_patch_objects(data: Data) -> list[Obj]:
    """Labels and taints for each on-prem node, applied server-side."""
    out = []
    for pool in data["pools"]:
        if pool["provider"] != "on-prem":
            continue
        for host in pool["hosts"]:
            labels = {**pool["node_labels"], **pool["host_labels"].get(host, {})}
            node_meta: Obj = {
                "name": host,
                "labels": dict(sorted(labels.items())),
                # take over these fields from whoever set them by hand before
                "annotations": {"pulumi.com/patchForce": "true"},
            }
            obj: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": node_meta}
            if pool["node_taints"]:
                obj["spec"] = {"taints": pool["node_taints"]}
            out.append(obj)
    return out


def runtime_class_objects(data: Data) -> list[Obj]:
    if not plugin_pools(data):
        return []
    return [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": meta(RUNTIME_CLASS),
            "handler": "nvidia",
        }
    ]


def gpu_tolerations(data: Data) -> list[Obj]:
    """What the NVIDIA DaemonSets tolerate: the GPU taint and every taint of a GPU pool."""
    seen = {("CriticalAddonsOnly", ""), ("nvidia.com/gpu", "NoSchedule")}
    out: list[Obj] = [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    for pool in gpu_pools(data):
        for taint in pool["taints"]:
            if (taint["key"], taint["effect"]) not in seen:
                seen.add((taint["key"], taint["effect"]))
                out.append({"key": taint["key"], "operator": "Exists", "effect": taint["effect"]})
    return out


def _require(key: str, operator: str = "Exists", values: Sequence[str] = ()) -> Obj:
    expression: Obj = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


def _env(**values: str) -> list[Obj]:
    return [{"name": k, "value": v} for k, v in values.items()]


def _field_env(name: str, field_path: str) -> Obj:
    """An env var the kubelet fills from the pod's own fields."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


NODE_NAME_ENV = _field_env("NODE_NAME", "spec.nodeName")


def _host_path(name: str, path: str, kind: str | None = None) -> Obj:
    host: Obj = {"path": path}
    if kind:
        host["type"] = kind
    return {"name": name, "hostPath": host}


def _config_manager(image: str, oneshot: bool, process: str) -> Obj:
    """NVIDIA's config-manager: copies the config the node label names into place."""
    return {
        "name": "config-manager-init" if oneshot else "config-manager",
        "image": image,
        "command": ["config-manager"],
        "env": [
            NODE_NAME_ENV,
            *_env(
                ONESHOT="true" if oneshot else "false",
                KUBECONFIG="",
                NODE_LABEL=PLUGIN_CONFIG_LABEL,
                CONFIG_FILE_SRCDIR="/available-configs",
                CONFIG_FILE_DST="/config/config.yaml",
                DEFAULT_CONFIG=DEFAULT_CONFIG,
                FALLBACK_STRATEGIES="named,single",
                SEND_SIGNAL="false" if oneshot else "true",
                SIGNAL="1",
                PROCESS_TO_SIGNAL=process,
            ),
        ],
        "volumeMounts": [
            {"name": "available-configs", "mountPath": "/available-configs"},
            {"name": "config", "mountPath": "/config"},
        ],
    }


_CONFIG_VOLUMES = [
    {"name": "available-configs", "configMap": {"name": DEVICE_PLUGIN_CONFIGS}},
    {"name": "config", "emptyDir": {}},
]


def _daemonset(
    name: str,
    pod_spec: Obj,
    *,
    data: Data,
    affinity: Obj,
    runtime_class: bool = True,
) -> Obj:
    selector = {"app.kubernetes.io/name": name}
    spec: Obj = {
        "priorityClassName": "system-node-critical",
        "affinity": affinity,
        "tolerations": gpu_tolerations(data),
        **pod_spec,
    }
    if runtime_class:
        spec["runtimeClassName"] = RUNTIME_CLASS
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta(name, NVIDIA_NAMESPACE, **selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": {**MANAGED_BY, **selector}}, "spec": spec},
        },
    }


def device_plugin_configmaps(data: Data) -> list[Obj]:
    pools = plugin_pools(data)
    if not pools:
        return []
    configs = {DEFAULT_CONFIG: to_yaml(device_plugin_config(data, None))}
    configs.update({p["name"]: to_yaml(device_plugin_config(data, p)) for p in pools})
    out = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(DEVICE_PLUGIN_CONFIGS, NVIDIA_NAMESPACE),
            "data": dict(sorted(configs.items())),
        }
    ]
    if any(p["gpu"]["mig"] for p in pools):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta(MIG_PARTED_CONFIG, NVIDIA_NAMESPACE),
                "data": {
                    "config.yaml": to_yaml({"version": "v1", "mig-configs": mig_configs(data)})
                },
            }
        )
    return out


def _rbac(name: str, rules: list[Obj]) -> list[Obj]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": meta(name, NVIDIA_NAMESPACE),
        },
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


def device_plugin_objects(data: Data) -> list[Obj]:
    """Device plugin, GPU Feature Discovery, MPS daemon and MIG manager, as plain DaemonSets."""
    pools = plugin_pools(data)
    if not pools or data["cluster"]["device_plugin_install"] != "device-plugin":
        return []
    image = data["components"]["device_plugin"]["image"]
    account = "nvidia-device-plugin"
    out = _rbac(
        account,
        [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
            # GFD reads its own pod to own the NodeFeature it writes
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {
                "apiGroups": ["nfd.k8s-sigs.io"],
                "resources": ["nodefeatures"],
                "verbs": ["get", "list", "watch", "create", "update"],
            },
        ],
    )
    config_env = _env(CONFIG_FILE="/config/config.yaml")
    config_mount = {"name": "config", "mountPath": "/config"}
    out.append(
        _daemonset(
            "nvidia-device-plugin",
            {
                "serviceAccountName": account,
                # the sidecar signals the plugin when the node's config label changes
                "shareProcessNamespace": True,
                "initContainers": [_config_manager(image, True, "")],
                "containers": [
                    _config_manager(image, False, "nvidia-device-plugin"),
                    {
                        "name": "nvidia-device-plugin",
                        "image": image,
                        "command": ["nvidia-device-plugin"],
                        "env": [
                            NODE_NAME_ENV,
                            *config_env,
                            *_env(NVIDIA_MIG_MONITOR_DEVICES="all", MPS_ROOT="/run/nvidia/mps"),
                        ],
                        "securityContext": {"privileged": True},
                        "volumeMounts": [
                            {
                                "name": "device-plugin",
                                "mountPath": "/var/lib/kubelet/device-plugins",
                            },
                            config_mount,
                            {"name": "mps-root", "mountPath": "/mps"},
                            # the plugin checks the MPS daemon's health through its shm
                            {"name": "mps-shm", "mountPath": "/dev/shm"},
                            {"name": "cdi-root", "mountPath": "/var/run/cdi"},
                        ],
                    },
                ],
                "volumes": [
                    _host_path("device-plugin", "/var/lib/kubelet/device-plugins"),
                    *_CONFIG_VOLUMES,
                    _host_path("mps-root", "/run/nvidia/mps", "DirectoryOrCreate"),
                    _host_path("mps-shm", "/run/nvidia/mps/shm"),
                    _host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
                ],
            },
            data=data,
            affinity=_require(PLUGIN_CONFIG_LABEL),
        )
    )
    out.append(
        _daemonset(
            "gpu-feature-discovery",
            {
                "serviceAccountName": account,
                "shareProcessNamespace": True,
                "initContainers": [_config_manager(image, True, "")],
                "containers": [
                    _config_manager(image, False, "gpu-feature-discovery"),
                    {
                        "name": "gpu-feature-discovery",
                        "image": image,
                        "command": ["gpu-feature-discovery"],
                        "env": [
                            NODE_NAME_ENV,
                            # NodeFeature objects go to this namespace (else `default`),
                            # owned by this pod
                            _field_env("NAMESPACE", "metadata.namespace"),
                            _field_env("POD_NAME", "metadata.name"),
                            *config_env,
                            *_env(GFD_USE_NODE_FEATURE_API="true"),
                        ],
                        "securityContext": {"privileged": True},
                        "volumeMounts": [
                            {"name": "host-sys", "mountPath": "/sys", "readOnly": True},
                            config_mount,
                        ],
                    },
                ],
                "volumes": [_host_path("host-sys", "/sys"), *_CONFIG_VOLUMES],
            },
            data=data,
            affinity=_require(PLUGIN_CONFIG_LABEL),
        )
    )
    if any(p["gpu"]["mps"] for p in pools):
        out.append(_mps_daemonset(data, image, account))
    if any(p["gpu"]["mig"] for p in pools):
        out.extend(_mig_manager(data))
    return out


def _mps_daemonset(data: Data, image: str, account: str) -> Obj:
    """The MPS control daemon the device plugin hands MPS-shared GPUs to."""
    return _daemonset(
        "nvidia-mps-control-daemon",
        {
            "serviceAccountName": account,
            # the MPS server finds its own PID in the host's namespace; the API server refuses
            # hostPID with shareProcessNamespace, and hostPID lets the sidecar see the daemon
            "hostPID": True,
            "initContainers": [
                _config_manager(image, True, ""),
                {
                    "name": "mps-control-daemon-mounts",
                    "image": image,
                    "command": ["mps-control-daemon", "mount-shm"],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {
                            "name": "mps-root",
                            "mountPath": "/mps",
                            "mountPropagation": "Bidirectional",
                        }
                    ],
                },
            ],
            "containers": [
                _config_manager(image, False, "/usr/bin/mps-control-daemon"),
                {
                    "name": "mps-control-daemon",
                    "image": image,
                    "command": ["mps-control-daemon"],
                    "env": [NODE_NAME_ENV, *_env(CONFIG_FILE="/config/config.yaml")],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {"name": "mps-root", "mountPath": "/mps"},
                        {"name": "mps-shm", "mountPath": "/dev/shm"},
                        {"name": "config", "mountPath": "/config"},
                    ],
                },
            ],
            "volumes": [
                _host_path("mps-root", "/run/nvidia/mps", "DirectoryOrCreate"),
                _host_path("mps-shm", "/run/nvidia/mps/shm"),
                *_CONFIG_VOLUMES,
            ],
        },
        data=data,
        affinity=_require(MPS_CAPABLE_LABEL, "In", ["true"]),
    )


def _mig_manager(data: Data) -> list[Obj]:
    """Applies the layout a node's nvidia.com/mig.config label names."""
    account = "nvidia-mig-manager"
    out = _rbac(
        account,
        [
            {
                "apiGroups": [""],
                "resources": ["nodes"],
                "verbs": ["get", "list", "watch", "patch", "update"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]},
        ],
    )
    out.append(
        _daemonset(
            "nvidia-mig-manager",
            {
                "serviceAccountName": account,
                "hostPID": True,
                "hostIPC": True,
                "containers": [
                    {
                        "name": "nvidia-mig-manager",
                        "image": data["components"]["mig_manager"]["image"],
                        "env": [
                            NODE_NAME_ENV,
                            *_env(
                                CONFIG_FILE="/mig-parted-config/config.yaml",
                                DEFAULT_GPU_CLIENTS_NAMESPACE=NVIDIA_NAMESPACE,
                                HOST_ROOT_MOUNT="/host",
                                WITH_REBOOT="false",
                            ),
                        ],
                        "securityContext": {"privileged": True},
                        "volumeMounts": [
                            {"name": "host-sys", "mountPath": "/sys"},
                            {"name": "host-root", "mountPath": "/host"},
                            {"name": "mig-parted-config", "mountPath": "/mig-parted-config"},
                        ],
                    }
                ],
                "volumes": [
                    _host_path("host-sys", "/sys", "Directory"),
                    _host_path("host-root", "/"),
                    {"name": "mig-parted-config", "configMap": {"name": MIG_PARTED_CONFIG}},
                ],
            },
            data=data,
            affinity=_require(MIG_CONFIG_LABEL),
        )
    )
    return out


def gpu_operator_values(data: Data) -> Obj:
    """GPU Operator values carrying the same choices as the plain device-plugin install."""
    pools = plugin_pools(data)
    has_mig = any(p["gpu"]["mig"] for p in pools)
    values: Obj = {
        # hosts are built by the estate's Ansible roles, driver and container toolkit included
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "daemonsets": {"tolerations": gpu_tolerations(data)},
        "devicePlugin": {
            "enabled": True,
            "config": {"name": DEVICE_PLUGIN_CONFIGS, "default": DEFAULT_CONFIG},
        },
        "gfd": {"enabled": True},
        "migManager": {"enabled": has_mig},
        # the estate's own DCGM exporter carries the estate labels on both schedulers
        "dcgmExporter": {"enabled": False},
    }
    if data["cluster"]["mig_strategy"] != "none":
        values["mig"] = {"strategy": data["cluster"]["mig_strategy"]}
    if has_mig:
        values["migManager"]["config"] = {"name": MIG_PARTED_CONFIG, "default": MIG_DISABLED}
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
                        "values": ["system-node-critical"],
                    }
                ]
            },
        },
    }


def dcgm_objects(data: Data) -> list[Obj]:
    """DCGM exporter on every GPU node, with a Service (and ServiceMonitor) for Prometheus."""
    pools = gpu_pools(data)
    if not pools:
        return []
    obs = data["observability"]
    port = obs["dcgm_exporter_port"]
    image = data["components"]["dcgm_exporter"]["image"]
    # both exporter DaemonSets carry this label; the Service selects on it
    app = {"app.kubernetes.io/part-of": "dcgm-exporter"}

    def exporter(extra_env: list[Obj], mounts: list[Obj], privileged: bool) -> Obj:
        security: Obj = {"capabilities": {"add": ["SYS_ADMIN"]}, "runAsUser": 0}
        if privileged:
            security = {"privileged": True}
        return {
            "name": "dcgm-exporter",
            "image": image,
            "env": [
                NODE_NAME_ENV,
                *_env(
                    DCGM_EXPORTER_LISTEN=f":{port}",
                    DCGM_EXPORTER_KUBERNETES="true",
                    DCGM_EXPORTER_COLLECTORS=f"{DCGM_COUNTERS_DIR}/counters.csv",
                ),
                *extra_env,
            ],
            "ports": [{"name": "metrics", "containerPort": port}],
            "securityContext": security,
            "volumeMounts": [
                {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources"},
                {"name": "counters", "mountPath": DCGM_COUNTERS_DIR, "readOnly": True},
                *mounts,
            ],
        }

    pod_resources = _host_path("pod-resources", "/var/lib/kubelet/pod-resources")
    counters = {"name": "counters", "configMap": {"name": DCGM_COUNTERS}}
    out: list[Obj] = [
        {
            # the same counter list the Slurm side's exporters use (Ansible role dcgm_exporter)
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(DCGM_COUNTERS, NVIDIA_NAMESPACE, **app),
            "data": {"counters.csv": obs["dcgm_counters"]},
        }
    ]
    if plugin_pools(data):
        ds = _daemonset(
            "dcgm-exporter",
            {"containers": [exporter([], [], False)], "volumes": [pod_resources, counters]},
            data=data,
            affinity=_require(PLUGIN_CONFIG_LABEL),
        )
        _relabel(ds, app)
        out.append(ds)
    if any(p["provider"] == "gke" for p in pools):
        # GKE installs the driver under /home/kubernetes/bin/nvidia, outside any runtime class
        ds = _daemonset(
            "dcgm-exporter-gke",
            {
                "containers": [
                    exporter(
                        # GKE's device plugin names devices (nvidia0, ...), not by UUID
                        _env(
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
                    _host_path("nvidia-install-dir", "/home/kubernetes/bin/nvidia"),
                ],
            },
            data=data,
            affinity=_require(GKE_ACCELERATOR_LABEL),
            runtime_class=False,
        )
        _relabel(ds, app)
        out.append(ds)
        out.append(critical_pods_quota(NVIDIA_NAMESPACE))
    service_meta = meta("dcgm-exporter", NVIDIA_NAMESPACE, **app)
    if not data["cluster"]["prometheus_operator"]:
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
    if data["cluster"]["prometheus_operator"]:
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
                for k, v in sorted(obs["labels"].items())
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
    return out


def _relabel(daemonset: Obj, labels: Mapping[str, str]) -> None:
    daemonset["metadata"]["labels"].update(labels)
    daemonset["spec"]["template"]["metadata"]["labels"].update(labels)


def kueue_objects(data: Data) -> list[Obj]:
    """ResourceFlavors, a Topology, ClusterQueues, LocalQueues, WorkloadPriorityClasses."""
    queues = data["queues"]
    if queues is None:
        return []
    all_flavors = flavors(data)
    teams = {t["name"]: t for t in data["teams"]}
    out: list[Obj] = []
    if any(f.topology for f in all_flavors):
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "Topology",
                "metadata": meta(TOPOLOGY),
                "spec": {"levels": [{"nodeLabel": SWITCH_LABEL}, {"nodeLabel": HOSTNAME_LABEL}]},
            }
        )
    for flavor in all_flavors:
        spec: Obj = {"nodeLabels": {MODEL_LABEL: flavor.model, MIG_LABEL: str(flavor.mig).lower()}}
        tolerations = _flavor_tolerations(flavor)
        if tolerations:
            spec["tolerations"] = tolerations
        if flavor.topology:
            spec["topologyName"] = TOPOLOGY
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ResourceFlavor",
                "metadata": meta(flavor.name),
                "spec": spec,
            }
        )
    with_cpu = covers_cpu_and_memory(all_flavors)
    covered = (["cpu", "memory"] if with_cpu else []) + sorted({f.resource for f in all_flavors})
    for entry in queues["teams"]:
        team = teams[entry["team"]]
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": meta(team["name"], **{TEAM_LABEL: team["name"]}),
                "spec": {
                    "cohortName": queues["cohort"],
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": team["namespace"]}
                    },
                    "queueingStrategy": "BestEffortFIFO",
                    "fairSharing": {"weight": team["fairshare"]},
                    "preemption": {
                        "reclaimWithinCohort": "Any",
                        "borrowWithinCohort": {"policy": "LowerPriority"},
                        "withinClusterQueue": "LowerPriority",
                    },
                    "resourceGroups": [
                        {
                            "coveredResources": covered,
                            "flavors": [
                                {"name": f.name, "resources": _quotas(entry, f, covered)}
                                for f in all_flavors
                            ],
                        }
                    ],
                },
            }
        )
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": meta(team["name"], team["namespace"], **{TEAM_LABEL: team["name"]}),
                "spec": {"clusterQueue": team["name"]},
            }
        )
    for pc in data["priority_classes"]:
        out.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "WorkloadPriorityClass",
                "metadata": meta(pc["name"]),
                "value": pc["value"],
                "description": pc["description"] or f"{pc['name']} (estate {data['estate']})",
            }
        )
    return out


def _flavor_tolerations(flavor: Flavor) -> list[Obj]:
    out: list[Obj] = []
    for pool in flavor.pools:
        for taint in pool["taints"]:
            toleration = {"key": taint["key"], "effect": taint["effect"]}
            if taint["value"]:
                toleration.update(operator="Equal", value=taint["value"])
            else:
                toleration["operator"] = "Exists"
            if toleration not in out:
                out.append(toleration)
    return out


def _quotas(entry: Data, flavor: Flavor, covered: Sequence[str]) -> list[Obj]:
    """One flavor's quotas in coveredResources order (Kueue requires every resource listed)."""
    units = entry["quota"].get(flavor.key, 0)
    borrow, lend = entry["borrowing_limit"], entry["lending_limit"]
    cpu = flavor.per_unit("cpu_threads", 1000)
    memory = flavor.per_unit("memory_gb", 1024)

    def quota(name: str, per_unit: int, suffix: str = "") -> Obj:
        out: Obj = {"name": name, "nominalQuota": f"{units * per_unit}{suffix}"}
        if borrow is not None:
            out["borrowingLimit"] = f"{borrow * per_unit}{suffix}"
        if lend is not None:
            out["lendingLimit"] = f"{min(lend, units) * per_unit}{suffix}"
        return out

    out = []
    for name in covered:
        if name == "cpu":
            out.append(quota("cpu", cpu or 0, "m"))
        elif name == "memory":
            out.append(quota("memory", memory or 0, "Mi"))
        elif name == flavor.resource:
            out.append(quota(name, flavor.factor))
        else:
            out.append({"name": name, "nominalQuota": "0"})
    return out


# --- managed node pools --------------------------------------------------------------------


def gke_node_pool_args(data: Data, pool: Data) -> Obj:
    """gcp.container.NodePool arguments for a GKE pool."""
    cluster = data["cluster"]
    node_config: Obj = {
        "machine_type": pool["instance_type"],
        "labels": pool["node_labels"],
        "taints": [
            {"key": t["key"], "value": t["value"], "effect": GKE_TAINT_EFFECTS[t["effect"]]}
            for t in pool["taints"]
        ],
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    gpu = pool["gpu"]
    if gpu:
        accelerator: Obj = {
            "type": gpu["accelerator"],
            "count": gpu["count"],
            "gpu_driver_installation_config": {"gpu_driver_version": "DEFAULT"},
        }
        if gpu["mig"]:
            # GKE partitions every GPU into one profile (a check enforces a uniform layout)
            accelerator["gpu_partition_size"] = next(iter(gpu["mig"]))
        if gpu["time_slicing"] or gpu["mps"]:
            accelerator["gpu_sharing_config"] = {
                "gpu_sharing_strategy": "TIME_SHARING" if gpu["time_slicing"] else "MPS",
                "max_shared_clients_per_gpu": gpu["replicas"],
            }
        node_config["guest_accelerators"] = [accelerator]
    args: Obj = {
        "name": pool["name"],
        "cluster": data["name"],
        "location": cluster["region"],
        "node_config": node_config,
        "autoscaling": {
            "total_min_node_count": pool["nodes"]["min"],
            "total_max_node_count": pool["nodes"]["max"],
            "location_policy": "ANY",
        },
        "management": {"auto_repair": True, "auto_upgrade": True},
    }
    if cluster["project"]:
        args["project"] = cluster["project"]
    return args


def eks_node_group_args(data: Data, pool: Data) -> Obj:
    """aws.eks.NodeGroup arguments for an EKS pool (role and subnets are added at run time)."""
    return {
        "cluster_name": data["name"],
        "node_group_name": pool["name"],
        "instance_types": [pool["instance_type"]],
        "ami_type": "AL2023_x86_64_NVIDIA" if pool["gpu"] else "AL2023_x86_64_STANDARD",
        "capacity_type": "ON_DEMAND",
        "scaling_config": {
            "min_size": pool["nodes"]["min"],
            "max_size": pool["nodes"]["max"],
            "desired_size": pool["nodes"]["min"],
        },
        "update_config": {"max_unavailable": 1},
        "labels": pool["node_labels"],
        "taints": [{**t, "effect": GKE_TAINT_EFFECTS[t["effect"]]} for t in pool["node_taints"]],
    }


# --- registration ---------------------------------------------------------------------------

_TYPED: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Node"): k8s.core.v1.NodePatch,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("node.k8s.io/v1", "RuntimeClass"): k8s.node.v1.RuntimeClass,
}


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
    """Unique Pulumi name: kind, namespace and name, as Kubernetes itself keys objects."""
    parts = [obj["kind"].lower(), obj["metadata"].get("namespace"), obj["metadata"]["name"]]
    return "-".join(p for p in parts if p)


def register(obj: Obj, opts: pulumi.ResourceOptions | None = None) -> pulumi.CustomResource:
    typed = _TYPED.get((obj["apiVersion"], obj["kind"]))
    if typed is None:
        return KubernetesObject(logical_name(obj), obj, opts)
    args = {_snake(k): v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    resource: pulumi.CustomResource = typed(logical_name(obj), opts=opts, **args)
    return resource


def build(data: Data) -> None:
    """Register every resource of the cluster."""
    created: dict[str, pulumi.CustomResource] = {}

    def add(objs: Iterable[Obj], depends_on: Sequence[pulumi.Resource] = ()) -> list[Any]:
        out = []
        for obj in objs:
            opts = pulumi.ResourceOptions(depends_on=list(depends_on)) if depends_on else None
            resource = register(obj, opts)
            created[logical_name(obj)] = resource
            out.append(resource)
        return out

    namespaces = add(namespace_objects(data))
    add(quota_objects(data), namespaces)
    add(priority_class_objects(data))
    add(node_patch_objects(data))
    add(runtime_class_objects(data))
    configmaps = add(device_plugin_configmaps(data), namespaces)
    plugin = device_plugin_objects(data)
    accounts = add([o for o in plugin if o["kind"] != "DaemonSet"], namespaces)
    add([o for o in plugin if o["kind"] == "DaemonSet"], [*namespaces, *configmaps, *accounts])
    if plugin_pools(data) and data["cluster"]["device_plugin_install"] == "gpu-operator":
        operator = data["components"]["gpu_operator"]
        k8s.helm.v3.Release(
            "gpu-operator",
            name="gpu-operator",
            chart=operator["chart"],
            version=operator["version"],
            repository_opts={"repo": operator["repository"]},
            namespace=NVIDIA_NAMESPACE,
            values=gpu_operator_values(data),
            opts=pulumi.ResourceOptions(depends_on=[*namespaces, *configmaps]),
        )
    dcgm = dcgm_objects(data)
    add([o for o in dcgm if o["kind"] != "ServiceMonitor"], namespaces)
    add([o for o in dcgm if o["kind"] == "ServiceMonitor"], namespaces)
    if data["queues"] is not None:
        kueue = data["components"]["kueue"]
        release = k8s.helm.v3.Release(
            "kueue",
            name="kueue",
            chart=kueue["chart"],
            version=kueue["version"],
            namespace=KUEUE_NAMESPACE,
            create_namespace=True,
        )
        objs = kueue_objects(data)
        cluster_scoped = add([o for o in objs if o["kind"] != "LocalQueue"], [release])
        add([o for o in objs if o["kind"] == "LocalQueue"], [*namespaces, *cluster_scoped])
    managed = [p for p in data["pools"] if p["provider"] in ("gke", "eks")]
    if any(p["provider"] == "gke" for p in managed):
        import pulumi_gcp as gcp

        for pool in (p for p in managed if p["provider"] == "gke"):
            gcp.container.NodePool(pool["name"], **gke_node_pool_args(data, pool))
    if any(p["provider"] == "eks" for p in managed):
        _eks_node_groups(data, [p for p in managed if p["provider"] == "eks"])
    pulumi.export("namespaces", sorted(t["namespace"] for t in data["teams"]))
    pulumi.export("nodes_patched", sum(len(p["hosts"]) for p in data["pools"]))
    pulumi.export("resources", len(created))


def _eks_node_groups(data: Data, pools: Sequence[Data]) -> None:
    """One node role for the cluster's GPU node groups; subnets are the cluster's own."""
    import pulumi_aws as aws

    name = data["name"]
    role = aws.iam.Role(
        f"{name}-nodes",
        name=f"{data['estate']}-{name}-nodes",
        description=f"EKS node groups of cluster {name} (estate {data['estate']})",
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            },
            sort_keys=True,
        ),
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-nodes-{arn.rsplit('/', 1)[1]}", role=role.name, policy_arn=arn
        )
        for arn in EKS_NODE_POLICIES
    ]
    cluster = aws.eks.get_cluster_output(name=name)
    for pool in pools:
        aws.eks.NodeGroup(
            pool["name"],
            node_role_arn=role.arn,
            subnet_ids=cluster.vpc_config.subnet_ids,
            **eks_node_group_args(data, pool),
            opts=pulumi.ResourceOptions(
                depends_on=attachments,
                # the cluster autoscaler owns the desired size once the group exists
                ignore_changes=["scalingConfig.desiredSize"],
            ),
        )


def main() -> None:
    data = load()
    check_stack(data, pulumi.Config())
    build(data)


if __name__ == "__main__":
    main()
