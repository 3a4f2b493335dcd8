"""GPUs reach the containers that ask for them, as NVIDIA's device plugin documents it.

The device plugin hands a container its GPUs only as the ``NVIDIA_VISIBLE_DEVICES`` variable
(its default device-list strategy, ``envvar``); a runtime that does not read it (runc) starts
the container without /dev/nvidia* and without the driver's libraries. NVIDIA's answer is
nvidia-container-runtime as the node's default runtime, which the ``k8s_gpu_node`` role makes
it. Each test cites the upstream source it relies on, at the tag we pin, and checks what
estategen renders (the device plugin's chart rendered by a real ``helm``); where Debian's
containerd is installed, containerd itself reads the configuration the role leaves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import kubernetes, load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.kubernetes import nvidia
from estategen.kubernetes.objects import ClusterView
from estategen.model import Estate

import helm
from conftest import BLUEPRINTS

ROOT = Path(__file__).resolve().parent.parent
ROLES = ROOT / "playbooks" / "roles"
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook")
CONTAINERD = shutil.which("containerd")
# the configuration file Debian's containerd package installs (a conffile of the package)
DEBIAN_CONTAINERD_CONFIG = Path("/etc/containerd/config.toml")
CRI = "io.containerd.grpc.v1.cri"

needs_ansible = pytest.mark.skipif(
    not ANSIBLE_PLAYBOOK or os.geteuid() != 0, reason="needs ansible-playbook, run as root"
)


def estate_of(source: str) -> Estate:
    document = load.parse_blueprint(source.encode(), "blueprint.yaml")
    return pipeline.validate_document(document).estate


def converge_containerd_tasks(tmp: Path, config: str) -> tuple[Path, Path]:
    """Run the role's containerd tasks on localhost against a config.toml holding ``config``
    and a drop-in folder beside it; returns both paths."""
    config_path = tmp / "config.toml"
    config_path.write_text(config)
    dropins = tmp / "conf.d"
    play = {
        "name": "containerd of a Kubernetes GPU node",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [
            {
                "name": "The role's containerd tasks",
                "ansible.builtin.include_role": {
                    "name": "k8s_gpu_node",
                    "tasks_from": "containerd",
                },
                "vars": {
                    "k8s_gpu_node_containerd_config": str(config_path),
                    "k8s_gpu_node_containerd_dropins": str(dropins),
                },
            }
        ],
    }
    playbook = tmp / "playbook.yml"
    playbook.write_text(yaml.safe_dump([play], sort_keys=False))
    assert ANSIBLE_PLAYBOOK
    result = subprocess.run(
        [
            ANSIBLE_PLAYBOOK,
            "-i",
            "localhost,",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(playbook),
        ],
        env={
            **os.environ,
            "ANSIBLE_ROLES_PATH": str(ROLES),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "False",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return config_path, dropins


def dropin(tmp: Path) -> dict[str, Any]:
    """The drop-in the role writes, as TOML."""
    _, dropins = converge_containerd_tasks(tmp, "version = 2\n")
    return tomllib.loads((dropins / "99-nvidia.toml").read_text())


def test_the_device_plugin_hands_gpus_to_the_runtime_as_an_environment_variable() -> None:
    """k8s-device-plugin v0.20.0 ``cmd/nvidia-device-plugin/main.go`` (flag
    ``device-list-strategy``, env ``DEVICE_LIST_STRATEGY``, default ``envvar``) and
    ``internal/plugin/server.go`` ``getAllocateResponse``: under ``envvar`` the Allocate
    response is ``NVIDIA_VISIBLE_DEVICES`` and nothing else. The estate's plugin keeps that
    default (neither its environment nor any per-pool config names another strategy), so
    every GPU node needs a runtime that reads the variable."""
    estate = estate_of((BLUEPRINTS / "campus.yaml").read_text())
    views = [ClusterView.of(estate, c) for c in estate.kubernetes_clusters]
    assert any(v.runs_device_plugin for v in views)
    for view in (v for v in views if v.runs_device_plugin):
        (plugin,) = [
            o
            for o in plugin_chart(view)
            if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-device-plugin"
        ]
        env = [
            e["name"]
            for c in plugin["spec"]["template"]["spec"]["containers"]
            for e in c.get("env", [])
        ]
        assert "DEVICE_LIST_STRATEGY" not in env
        for text in nvidia.device_plugin_configs(view).values():
            assert "deviceListStrategy" not in yaml.safe_load(text)["flags"].get("plugin", {})


@needs_ansible
def test_gpu_nodes_make_the_nvidia_runtime_containerds_default(tmp_path: Path) -> None:
    """k8s-device-plugin v0.20.0 ``README.md`` "Prerequisites": "nvidia-container-runtime
    configured as the default low-level runtime" (else every GPU pod must name a RuntimeClass,
    which workloads, examples and Slinky NodeSets do not). The role's drop-in makes runtime
    ``nvidia`` (nvidia-container-runtime) containerd's default, in config version 2 as
    containerd 1.6 (Debian 12) and 1.7 (Debian 13) read it."""
    cri = dropin(tmp_path)["plugins"][CRI]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == (
        "/usr/bin/nvidia-container-runtime"
    )


@needs_ansible
def test_the_role_has_containerd_import_its_drop_in_folder(tmp_path: Path) -> None:
    """Debian's containerd packages (1.6.20 in Debian 12, 1.7.24 in Debian 13) install a
    config.toml without ``imports``: a drop-in folder is read only when config.toml names it.
    The role puts the line first (a top-level key must precede every table) and converges
    unchanged the second time."""
    config = 'version = 2\n\n[plugins]\n  [plugins."io.containerd.internal.v1.opt"]\n'
    config_path, dropins = converge_containerd_tasks(tmp_path, config)
    lines = config_path.read_text().splitlines()
    assert lines[0] == f'imports = ["{dropins}/*.toml"]'
    assert "\n".join(lines[1:]) + "\n" == config
    converge_containerd_tasks(tmp_path, config_path.read_text())
    assert config_path.read_text().splitlines().count(lines[0]) == 1


@pytest.mark.skipif(
    not CONTAINERD
    or not ANSIBLE_PLAYBOOK
    or os.geteuid() != 0
    or not DEBIAN_CONTAINERD_CONFIG.is_file(),
    reason="needs Debian's containerd package (containerd config dump), ansible-playbook, root",
)
def test_containerd_reads_the_nvidia_runtime_as_default_and_keeps_debians_cni_folders(
    tmp_path: Path,
) -> None:
    """The real ``containerd config dump`` of Debian's containerd reads Debian's own
    config.toml after the role ran on it: the default runtime is ``nvidia``, runc is still
    there, and the CNI folders are Debian's. containerd 1.6 (Debian 12) replaces the whole CRI
    section of config.toml with an imported file's (1.7 and 2.x merge it), so without them in
    the drop-in the node would look for CNI plugins in /opt/cni/bin."""
    packaged = tomllib.loads(DEBIAN_CONTAINERD_CONFIG.read_text())
    config_path, _ = converge_containerd_tasks(tmp_path, DEBIAN_CONTAINERD_CONFIG.read_text())
    assert CONTAINERD
    dump = subprocess.run(
        [CONTAINERD, "--config", str(config_path), "config", "dump"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    cri = tomllib.loads(dump)["plugins"][CRI]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    runtimes = cri["containerd"]["runtimes"]
    assert runtimes["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert runtimes["runc"]["runtime_type"] == "io.containerd.runc.v2"
    packaged_cni = packaged.get("plugins", {}).get(CRI, {}).get("cni", {})
    for key, value in packaged_cni.items():
        assert cri["cni"][key] == value, key


# --- AKS: the runtime handlers its GPU nodes define -----------------------------------------


AKS = """\
estate: azure
versions: {kubernetes: "1.33"}
identity:
  teams: [{name: ml, gid: 30001}]
node_pools:
  - name: nvl
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_NC80adis_H100_v5
    nodes: {min: 1, max: 2}
    gpus: {model: h100-nvl-94gb, count: 2, sharing: {time_slicing: 4}}
kubernetes:
  clusters:
    - name: az
      provider: aks
      region: westeurope
      resource_group: rg-gpu-prod
"""


# Azure/AgentBaker v0.20260821.0 aks-node-controller/parser/templates/containerd.toml.gtpl
# lines 29-41 (config version 2) and containerd_v2.toml.gtpl lines 31-42 (version 3), the GPU
# branch (`getEnableNvidia`): the runtime handlers AKS GPU nodes define, the first the default
AKS_GPU_RUNTIMES = ("nvidia-container-runtime", "untrusted")


def plugin_chart(view: ClusterView) -> list[dict[str, Any]]:
    """What the device plugin chart installs with the values estategen renders for the cluster."""
    (release,) = [r for r in kubernetes.releases(view) if r.name == "nvidia-device-plugin"]
    return helm.installed_release(release)


def pod_specs(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["spec"]["template"]["spec"] for o in objs if o["kind"] == "DaemonSet"]


def test_aks_gpu_pods_name_no_runtime_class_the_nodes_lack() -> None:
    """Azure/AgentBaker v0.20260821.0 ``aks-node-controller/parser/templates/
    containerd.toml.gtpl`` lines 29-41 (and ``containerd_v2.toml.gtpl`` 31-42): AKS GPU nodes
    define the runtimes ``nvidia-container-runtime`` (the default) and ``untrusted``, no
    ``nvidia``; a pod naming RuntimeClass ``nvidia`` gets no sandbox and no GPU is
    advertised. On AKS the NVIDIA DaemonSets name none (the default runtime is NVIDIA's) and
    no RuntimeClass ``nvidia`` is created."""
    assert AKS_GPU_RUNTIMES[0] == nvidia.AKS_NVIDIA_RUNTIME
    built = estate_of(AKS)
    (cluster,) = built.kubernetes_clusters
    view = ClusterView.of(built, cluster)
    assert view.runs_device_plugin
    objs = [*nvidia.runtime_class(view), *plugin_chart(view), *nvidia.dcgm_exporter(view)]
    specs = pod_specs(objs)
    assert {s["containers"][-1]["name"] for s in specs} >= {"nvidia-device-plugin-ctr"}
    assert [s["runtimeClassName"] for s in specs if "runtimeClassName" in s] == []
    assert [o for o in objs if o["kind"] == "RuntimeClass"] == []
    # an on-prem cluster's nodes define `nvidia` (the k8s_gpu_node role): named there
    campus = estate_of((BLUEPRINTS / "campus.yaml").read_text())
    onprem = [ClusterView.of(campus, c) for c in campus.kubernetes_clusters]
    view = next(v for v in onprem if v.runs_device_plugin and v.cluster.provider == "on-prem")
    assert {s.get("runtimeClassName") for s in pod_specs(plugin_chart(view))} == {"nvidia"}


def test_aks_gpu_operator_names_the_runtime_handler_aks_nodes_define() -> None:
    """gpu-operator v26.7.0 ``controllers/object_controls.go``: ``setRuntimeClassName`` puts
    ``getRuntimeClassName`` (ClusterPolicy ``operator.runtimeClass``, default ``nvidia``) on
    every operand and ``transformRuntimeClass`` creates that RuntimeClass with the same name
    as its handler. On AKS the values name ``nvidia-container-runtime``, a handler AgentBaker's
    GPU template defines; elsewhere the operator's default stays."""
    built = estate_of(AKS + "      device_plugin: {install: gpu-operator}\n")
    (cluster,) = built.kubernetes_clusters
    view = ClusterView.of(built, cluster)
    assert view.runs_gpu_operator
    handler = nvidia.gpu_operator_values(view)["operator"]["runtimeClass"]
    assert handler == AKS_GPU_RUNTIMES[0]


# --- GPU Operator: the MIG strategy it sets on every node -----------------------------------

MPS_POOL = """\
estate: serving
identity:
  teams: [{{name: ml, gid: 30001}}]
node_pools:
  - name: a100-mig
    scheduler: kubernetes
    cluster: c
    hosts: k8s-a100-[01-02]
    cpu: {{sockets: 2, cores_per_socket: 32, threads_per_core: 2}}
    memory_gb: 1024
    gpus: {{model: a100-sxm-80gb, count: 8, mig: [3g.40gb, 3g.40gb]}}
  - name: l40s-mps
    scheduler: kubernetes
    cluster: c
    hosts: k8s-l40s-[01-02]
    cpu: {{sockets: 1, cores_per_socket: 64, threads_per_core: 2}}
    memory_gb: 512
    gpus: {{model: l40s-48gb, count: 4, sharing: {{mps: 4}}}}
kubernetes:
  clusters:
    - name: c
      device_plugin: {{install: {install}, mig_strategy: {strategy}}}
"""


def validation_errors(text: str) -> list[tuple[str, str]]:
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    try:
        pipeline.validate_document(document)
    except BlueprintInvalid as invalid:
        return [(f.path, f.message) for f in invalid.findings if f.level == "error"]
    return []


def test_gpu_operator_with_mixed_mig_refuses_an_mps_pool_with_the_fix() -> None:
    """gpu-operator v26.7.0 ``controllers/object_controls.go`` ``applyMIGConfiguration`` sets
    ``MIG_STRATEGY`` from ``mig.strategy`` on the plugin of every node (the environment wins
    over the per-pool config file), and k8s-device-plugin v0.20.0
    ``cmd/nvidia-device-plugin/main.go`` exits "using --mig-strategy=mixed is not supported
    with MPS". Validation refuses the pair; single, or the plain device-plugin install (each
    pool its own strategy), passes."""
    refused = validation_errors(MPS_POOL.format(install="gpu-operator", strategy="mixed"))
    assert [path for path, _ in refused] == ["node_pools[1].gpus.sharing.mps"]
    assert "MIG_STRATEGY=mixed" in refused[0][1]
    assert "device_plugin.mig_strategy to single or none" in refused[0][1]
    assert validation_errors(MPS_POOL.format(install="gpu-operator", strategy="single")) == []
    assert validation_errors(MPS_POOL.format(install="device-plugin", strategy="mixed")) == []
