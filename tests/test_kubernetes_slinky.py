"""Slurm hosted in Kubernetes through Slinky's slurm-operator v1.2.1.

A Slurm pool with ``cluster`` runs its slurmd as the pods of a ``NodeSet`` that joins the
estate's own slurmctld (an external ``Controller``). Each semantic test cites the upstream
file at tag v1.2.1 (SlinkyProject/slurm-operator, commit 87313dac) or SlinkyProject/containers
it checks; custom resources are validated against the pinned CRDs in
``tests/upstream/slurm-operator-v1.2.1`` with closed schemas and their CEL rules.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest
import test_kubernetes_semantics as semantics
import yaml
from test_kubernetes_semantics import objects, one, rendered

from estategen import hostlist, load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.kubernetes import slinky
from estategen.kubernetes_facts import KUBELET_RESERVATION_FLAGS
from estategen.plan.compare import plan
from estategen.render import render
from estategen.write import with_manifest, write_tree

from conftest import run_cli
from crd import UPSTREAM, crd_set
from slurmlab import (
    SlurmLab,
    fake_nvidia_driver,
    have_slurm,
    installed_slurm_at_least,
    machine_cpu,
    machine_cpus,
    set_keys,
)

Obj = dict[str, Any]
SLINKY_CRDS = UPSTREAM / "slurm-operator-v1.2.1"

# An on-prem pool and a hosted pool share partition `gpu`; the hosted pool's pods take H100s
# from the cluster's Kubernetes pool, whose other GPUs stay Kueue's.
ESTATE = """\
estate: hybrid
versions: {slurm: "25.11", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}]
  teams:
    - {name: vision, gid: 21001, members: [ana]}
node_pools:
  - name: h100
    scheduler: slurm
    hosts: gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 16, threads_per_core: 2}
    memory_gb: 512
    gpus: {model: h100-sxm-80gb, count: 8}
  - name: h100-hosted
    scheduler: slurm
    cluster: k8s
    nodes: {max: 2}
    cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}
    memory_gb: 256
    gpus: {model: h100-sxm-80gb, count: 8}
    features: [hosted]
  - name: k8s-h100
    scheduler: kubernetes
    cluster: k8s
    hosts: k8s-gpu-[01-04]
    gpus: {model: h100-sxm-80gb, count: 8}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
slurm:
  controllers: [ctl-01]
  packages:
    source: site
    apt_repository: "deb https://slurm.example.org/debian bookworm main"
    nvml: true
    jwt: true
  auth_key: {secret: slurm_key}
  accounting:
    host: dbd-01
    database: {host: db-01, password: {secret: slurmdbd_db}}
  rest_api: {host: ctl-01, jwt_key: {secret: slurm_jwt}}
  partitions:
    - {name: gpu, pools: [h100, h100-hosted], default: true}
kubernetes:
  clusters:
    - name: k8s
      queues:
        cohort: k8s
        teams:
          - {team: vision, quota: {h100-sxm-80gb: 16}}
"""


ACCOUNTING = (
    "  accounting:\n"
    "    host: dbd-01\n"
    "    database: {host: db-01, password: {secret: slurmdbd_db}}\n"
)


def findings(source: str) -> list[str]:
    document = load.parse_blueprint(source.encode(), "blueprint.yaml")
    try:
        pipeline.validate_document(document)
    except BlueprintInvalid as error:
        return [f.format() for f in error.findings]
    return []


def slinky_objects(source: str = ESTATE) -> list[Obj]:
    return [o for o in objects(source, "k8s") if o["apiVersion"] == slinky.API]


def slurm_conf(source: str = ESTATE) -> str:
    _, files = rendered(source)
    return files["slurm/slurm.conf"].content.decode()


# --- the objects are what the pinned CRDs accept -----------------------------------------


def test_every_slinky_object_is_valid_against_the_pinned_crds_with_cel() -> None:
    crds = crd_set(SLINKY_CRDS)
    found = slinky_objects()
    assert sorted(o["kind"] for o in found) == ["Accounting", "Controller", "NodeSet", "RestApi"]
    for obj in found:
        assert crds.validate(obj) == [], (obj["kind"], crds.validate(obj))
        assert crds.validate(obj, obj) == []  # a re-render applies as an update


def test_the_crds_cel_rules_are_evaluated_on_the_controller() -> None:
    """slinky.slurm.net_controllers.yaml: 'externalConfig must be set when external is true'
    and 'slurmKeyRef must be set when external is false' — the validator enforces them."""
    crds = crd_set(SLINKY_CRDS)
    controller = one(slinky_objects(), "Controller", "hybrid")
    broken = json.loads(json.dumps(controller))
    del broken["spec"]["externalConfig"]
    assert any("externalConfig" in v.message for v in crds.validate(broken))
    internal = json.loads(json.dumps(controller))
    internal["spec"]["external"] = False
    del internal["spec"]["slurmKeyRef"]
    assert any("slurmKeyRef" in v.message for v in crds.validate(internal))


# --- one slurmctld per estate ------------------------------------------------------------


def test_the_controller_is_the_estates_own_slurmctld() -> None:
    """docs/usage/hybrid.md "External Slurmctld": `external: true` with externalConfig host
    and port; the operator then runs no slurmctld and its slurmd use --conf-server there
    (internal/builder/common/common.go ConfiglessArgs)."""
    spec = one(slinky_objects(), "Controller", "hybrid")["spec"]
    assert spec["external"] is True
    assert spec["externalConfig"] == {"host": "ctl-01", "port": 6817}
    assert spec["clusterName"] == "hybrid"
    assert "SlurmctldHost=ctl-01" in slurm_conf()


def test_accounting_is_the_estates_slurmdbd_and_absent_without_it() -> None:
    """hybrid.md "External Slurmdbd": Accounting `external: true` with the slurmdbd's host
    and port; the Controller refers to it (controllers CRD `accountingRef`)."""
    objs = slinky_objects()
    accounting = one(objs, "Accounting", "hybrid")["spec"]
    assert accounting == {"external": True, "externalConfig": {"host": "dbd-01", "port": 6819}}
    assert one(objs, "Controller", "hybrid")["spec"]["accountingRef"] == {"name": "hybrid"}
    lean = ESTATE.replace(ACCOUNTING, "")
    kinds = {o["kind"] for o in slinky_objects(lean)}
    assert "Accounting" not in kinds
    assert "accountingRef" not in one(slinky_objects(lean), "Controller", "hybrid")["spec"]


def test_a_restapi_runs_in_the_cluster_for_the_operator() -> None:
    """hybrid.md "External Slurmrestd": the operator acts on Slurm through a slurmrestd pod
    of its own, whatever runs outside; restapis CRD requires controllerRef."""
    spec = one(slinky_objects(), "RestApi", "hybrid")["spec"]
    assert spec["controllerRef"] == {"name": "hybrid"}
    assert spec["slurmrestd"]["image"] == "ghcr.io/slinkyproject/slurmrestd:25.11-ubuntu24.04"


# --- slurm.conf: what Slinky needs of the slurmctld, and how it names hosted nodes ---------


def test_slurm_conf_has_the_auth_slinky_requires() -> None:
    """hybrid.md "Slurm": Slinky requires configless, auth/slurm, auth/jwt and use_client_ids
    (internal/builder/common/const.go AuthType, CredType, AuthInfo)."""
    conf = slurm_conf()
    for line in (
        "AuthType=auth/slurm",
        "CredType=cred/slurm",
        "AuthInfo=use_client_ids",
        "AuthAltTypes=auth/jwt",
        "SlurmctldParameters=enable_configless",
    ):
        assert line in conf.splitlines(), line
    assert "auth/munge" not in conf


def test_hosted_nodes_join_partitions_through_their_nodeset_feature() -> None:
    """internal/builder/workerbuilder/worker_app.go: slurmd runs `-Z --conf 'Features=<NodeSet
    name> ...'`; controller_config.go buildNodeSetConf writes `NodeSet=<name> Feature=<name>`
    and a partition `Nodes=<name>`. The estate's partition mixes both kinds of nodes."""
    lines = slurm_conf().splitlines()
    assert "NodeSet=h100-hosted Feature=h100-hosted" in lines
    (partition,) = [x for x in lines if x.startswith("PartitionName=gpu ")]
    assert " Nodes=gpu-[01-02],h100-hosted " in partition
    assert not any(x.startswith("NodeName=") and "hosted" in x for x in lines)
    # dynamic nodes need room: the static nodes plus the NodeSet's pods
    assert "MaxNodeCount=4" in lines


def test_the_nodeset_carries_the_pools_slurm_node_line() -> None:
    """nodesets CRD `extraConf`: added to the slurmd args as `--conf`; the same GRES and
    features as slurm.conf gives an on-prem pool of that shape, the memory and CPUs of the pod
    (see the test on the pods' size)."""
    spec = one(slinky_objects(), "NodeSet", "h100-hosted")["spec"]
    conf = dict(item.split("=", 1) for item in spec["extraConf"].split())
    assert conf["Gres"] == "gpu:h100-sxm-80gb:8"
    assert conf["Features"] == "hosted,h100-sxm-80gb"
    assert conf["RealMemory"] == str(256 * 10**9 // 2**20 - 100)
    assert spec["partition"] == {"enabled": False}  # the estate's partitions rule
    assert spec["replicas"] == 2


def test_a_gpu_job_by_default_fits_the_memory_a_hosted_node_registers() -> None:
    """slurm.conf(5) DefMemPerGPU: a GPU job gets that much memory per GPU unless it asks; a
    partition's default above what its hosted node registers (the pod's limit, not the
    node's memory) leaves every default GPU job unschedulable ("Requested node configuration
    is not available")."""
    _, files = rendered(ESTATE)
    spec = one(slinky_objects(), "NodeSet", "h100-hosted")["spec"]
    registered = dict(item.split("=", 1) for item in spec["extraConf"].split())
    conf = files["slurm/slurm.conf"].content.decode()
    (gpu,) = [line for line in conf.splitlines() if line.startswith("PartitionName=gpu ")]
    fields = dict(item.split("=", 1) for item in gpu.split())
    assert int(fields["DefMemPerGPU"]) * 8 <= int(registered["RealMemory"])


def test_the_nodeset_pods_request_the_pools_gpus() -> None:
    """nodesets CRD `slurmd`: a corev1.Container; its resources request the node's whole
    GPUs (requests equal limits for extended resources), on nodes of that model, tolerating
    the taints of the pools that have them."""
    spec = one(slinky_objects(), "NodeSet", "h100-hosted")["spec"]
    resources = spec["slurmd"]["resources"]
    assert resources["requests"] == resources["limits"]
    assert resources["requests"]["nvidia.com/gpu"] == "8"
    assert resources["requests"]["cpu"] == "32"  # 16 cores x 2 threads, nothing reserved
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"estategen.io/gpu-model": "h100-sxm-80gb"}
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}.items() <= (
        pod["tolerations"][0].items()
    )


# --- the pods fit their node and reach slurmctld ---------------------------------------------


def quantity_bytes(text: str) -> int:
    """A Kubernetes memory quantity with a binary or decimal suffix, in bytes."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6}
    units |= {"G": 10**9, "T": 10**12}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * units[suffix]
    return int(text)


def test_slurmd_pods_fit_the_nodes_allocatable_and_register_their_limits() -> None:
    """A node sold with 768 GB has at most 768 x 10^9 bytes of capacity (MemTotal, less);
    allocatable is capacity less system- and kube-reserved (none: the k8s_gpu_node role's
    kubelet.env sets neither) less evictionHard memory.available, 100Mi by default
    (kubernetes/kubernetes pkg/kubelet/eviction/defaults_linux.go DefaultEvictionHard). The
    pod asks no more, and slurmd, which sees its cgroup, registers exactly the pod's limits
    (worker_app.go slurmdConfArgs: extraConf becomes `--conf`), so Slurm never schedules
    memory the pod cannot have."""
    source = ESTATE.replace("memory_gb: 256", "memory_gb: 768")
    spec = one(slinky_objects(source), "NodeSet", "h100-hosted")["spec"]
    limits = spec["slurmd"]["resources"]["limits"]
    allocatable = 768 * 10**9 - 100 * 2**20
    assert quantity_bytes(limits["memory"]) <= allocatable
    assert int(limits["cpu"]) <= 1 * 16 * 2
    conf = dict(item.split("=", 1) for item in spec["extraConf"].split())
    assert int(conf["RealMemory"]) * 2**20 == quantity_bytes(limits["memory"])
    assert conf["CPUs"] == limits["cpu"]


def test_the_reservations_the_pods_are_sized_by_are_the_kubelets_own() -> None:
    """facts.KUBELET_RESERVED_* assume the kubelet defaults: the k8s_gpu_node role's
    kubelet.env, which configures the kubelet of these nodes, sets none of the reservation
    flags (if it did, the pods' size would have to follow it)."""
    template = Path("playbooks/roles/k8s_gpu_node/templates/kubelet.env.j2")
    text = (Path(__file__).resolve().parent.parent / template).read_text()
    assert "KUBELET_EXTRA_ARGS" in text
    assert [flag for flag in KUBELET_RESERVATION_FLAGS if flag in text] == []


def test_slurmd_pods_use_the_host_network_with_cluster_dns() -> None:
    """docs/usage/hybrid.md:61-80 (v1.2.1): Slurm needs every daemon reachable both ways
    without NAT; with slurmctld outside the cluster the slurmd pods use `hostNetwork: true`
    and `dNSPolicy: ClusterFirstWithHostNet`, a typo for the PodSpec field `dnsPolicy`: the
    template's keys are PodSpec fields (as the vendored JobSet CRD's PodSpec schema lists
    them; the NodeSet CRD keeps `template.spec` free-form)."""
    pod = one(slinky_objects(), "NodeSet", "h100-hosted")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    jobset = yaml.safe_load(
        (UPSTREAM / "jobset-v0.12.0" / "jobset.x-k8s.io_jobsets.yaml").read_text()
    )
    schema = jobset["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    replicated = schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]
    job = replicated["properties"]["template"]["properties"]["spec"]
    pod_spec = job["properties"]["template"]["properties"]["spec"]
    assert set(pod) <= set(pod_spec["properties"]), set(pod) - set(pod_spec["properties"])


def test_the_slurm_namespace_admits_host_network_pods() -> None:
    """Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards):
    baseline and restricted forbid `hostNetwork`, so the namespace of the slurmd pods enforces
    `privileged`, as the GPU operator's does; the cluster README says why."""
    (namespace,) = [
        o
        for o in objects(ESTATE, "k8s")
        if o["kind"] == "Namespace" and o["metadata"]["name"] == "slurm"
    ]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    _, files = rendered(ESTATE)
    readme = files["kubernetes/k8s/README.md"].content.decode()
    assert "hostNetwork" in readme and "privileged" in readme


def test_two_hosted_pools_on_the_same_kubernetes_nodes_are_refused() -> None:
    """On the host network both NodeSets' slurmd would register as the same node names."""
    second = (
        "  - name: h100-more\n    scheduler: slurm\n    cluster: k8s\n    nodes: {max: 1}\n"
        "    cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}\n"
        "    memory_gb: 256\n    gpus: {model: h100-sxm-80gb, count: 8}\n"
    )
    source = ESTATE.replace("  - name: k8s-h100\n", second + "  - name: k8s-h100\n")
    found = findings(source)
    assert any("'h100-hosted' and 'h100-more' may both run on k8s-gpu-01" in f for f in found), (
        found
    )


# --- keys are Secret references --------------------------------------------------------------


def test_keys_are_secret_references_shared_with_the_on_prem_slurmrestd() -> None:
    """hybrid.md "Slurm Configuration": slurmKeyRef and jwtKeyRef name the Secrets holding
    the estate's slurm.key and JWT key; the Pulumi program creates them from secret config,
    and no key appears in any rendered file."""
    spec = one(slinky_objects(), "Controller", "hybrid")["spec"]
    assert spec["slurmKeyRef"] == {"name": "slurm-auth-slurm", "key": "slurm.key"}
    assert spec["jwtKeyRef"] == {"name": "slurm-auth-jwt", "key": "jwt.key"}
    _, files = rendered(ESTATE)
    data = json.loads(files["pulumi/k8s/cluster.json"].content)
    assert {s["name"]: s["config"] for s in data["secrets"]} == {
        "slurm-auth-slurm": "slurm_key",
        "slurm-auth-jwt": "slurm_jwt",  # the same secret slurm.rest_api.jwt_key names
    }
    assert "AuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key" in slurm_conf()


# --- the release and images are pinned --------------------------------------------------------


def test_the_operator_release_is_pinned_with_its_crds() -> None:
    """helm/slurm-operator/Chart.yaml v1.2.1: CRDs come from the `slurm-operator-crds`
    subchart when `crds.enabled`; docs/installation.md: without cert-manager, set
    `certManager.enabled=false`."""
    _, files = rendered(ESTATE)
    data = json.loads(files["pulumi/k8s/cluster.json"].content)
    (release,) = [r for r in data["releases"] if r["name"] == "slurm-operator"]
    assert release["chart"] == "oci://ghcr.io/slinkyproject/charts/slurm-operator"
    assert release["version"] == "1.2.1"
    assert release["provides"] == ["slinky.slurm.net"]
    values = yaml.safe_load(files["kubernetes/k8s/helm/slurm-operator.values.yaml"].content)
    assert values == {"crds": {"enabled": True}, "certManager": {"enabled": False}}


@pytest.mark.parametrize("version", ["25.11", "26.05"])
def test_images_follow_versions_slurm(version: str) -> None:
    """SlinkyProject/containers schedmd/slurm/<x.y>/ubuntu24.04 (docker-bake.hcl format_tag:
    `<registry>/<daemon>:<version>-<flavor>`)."""
    source = ESTATE.replace('slurm: "25.11"', f'slurm: "{version}"')
    spec = one(slinky_objects(source), "NodeSet", "h100-hosted")["spec"]
    assert spec["slurmd"]["image"] == f"ghcr.io/slinkyproject/slurmd:{version}-ubuntu24.04"


def test_a_slurm_without_slinky_images_is_refused_with_the_valid_ones() -> None:
    """Slinky publishes images for 25.11 and 26.05 only (and needs 25.11 at least:
    helm/slurm-operator/Chart.yaml slinky.slurm.net/minimum-slurm-version)."""
    found = findings(ESTATE.replace('slurm: "25.11"', 'slurm: "24.11"'))
    assert any("versions.slurm" in f and "24.11" in f and "25.11, 26.05" in f for f in found), found


# --- the boundary: a GPU on one side only, no slurmd hosts for Ansible -------------------------


def test_gpus_the_nodeset_takes_are_not_kueue_capacity() -> None:
    """32 H100 in the Kubernetes pool, 16 taken by slurmd pods: Kueue may promise 16, not 17."""
    assert findings(ESTATE) == []
    over = findings(ESTATE.replace("{h100-sxm-80gb: 16}", "{h100-sxm-80gb: 17}"))
    assert any("above the 16 h100-sxm-80gb" in f for f in over), over


def test_a_nodeset_needs_gpus_the_cluster_has() -> None:
    found = findings(ESTATE.replace("nodes: {max: 2}", "nodes: {max: 5}"))
    assert any("take 40 h100-sxm-80gb GPUs" in f and "offer 32" in f for f in found), found


def test_hosted_pools_get_no_ansible_hosts() -> None:
    _, files = rendered(ESTATE)
    inventory = yaml.safe_load(files["ansible/inventory.yml"].content)
    compute = inventory["all"]["children"]["slurm_compute"]["children"]
    assert list(compute) == ["pool_h100"]
    assert "pool_h100_hosted" not in inventory["all"]["children"]
    assert "ansible/group_vars/pool_h100_hosted.yml" not in files


def test_gres_conf_names_the_kubernetes_nodes_the_slurmd_pods_run_on() -> None:
    """slurm-operator v1.2.1 internal/controller/nodeset/utils/utils.go:336-337
    (GetSlurmNodeName): a StatefulSet-mode pod with `hostNetwork` registers as its
    `spec.nodeName`; docs/usage/hybrid.md:87-90: a host-network pod 'will inherit the node's
    hostname'. A pod takes every GPU of its node, so gres.conf names the device files of each
    node of the backing Kubernetes pool, not of pod names."""
    _, files = rendered(ESTATE)
    gres = files["slurm/gres.conf"].content.decode().splitlines()
    assert (
        "NodeName=k8s-gpu-[01-04] AutoDetect=off Name=gpu Type=h100-sxm-80gb File=/dev/nvidia[0-7]"
    ) in gres
    assert not any("h100-hosted-" in line for line in gres)
    assert one(slinky_objects(), "NodeSet", "h100-hosted")["spec"]["ordinalPadding"] == 0


# The hosted pool's pods land on nodes GKE creates (no names in advance); pool cpu is on-prem.
PROVIDER = (
    ESTATE.replace(
        "    hosts: k8s-gpu-[01-04]\n",
        "    provider: gke\n    instance_type: a3-highgpu-8g\n    nodes: {min: 0, max: 4}\n",
    )
    .replace(
        "    - name: k8s\n",
        "    - name: k8s\n      provider: gke\n      region: us-central1\n      project: hybrid\n",
    )
    .replace(
        "  - name: h100-hosted\n",
        "  - name: cpu\n"
        "    scheduler: slurm\n"
        "    hosts: cpu-[01-02]\n"
        "    cpu: {sockets: 1, cores_per_socket: 8, threads_per_core: 1}\n"
        "    memory_gb: 64\n"
        "  - name: h100-hosted\n",
    )
)


def node_autodetect(gres: list[str], node: str) -> list[str]:
    """The AutoDetect values of the NodeName lines whose hostlist holds ``node``."""
    found = []
    for line in gres:
        if not line.startswith("NodeName="):
            continue
        fields = dict(f.split("=", 1) for f in line.split())
        if "AutoDetect" in fields and node in hostlist.expand(fields["NodeName"]):
            found.append(fields["AutoDetect"])
    return found


def test_gres_conf_lets_slurmd_find_the_gpus_of_nodes_a_provider_creates() -> None:
    """A NodeName line reaches only the nodes its hostlist names (SchedMD/slurm
    slurm-25-11-7-1 and slurm-26-05-3-1, src/interfaces/gres.c _parse_gres_config_node), and a
    GKE node's name exists only once GKE creates it: the one line that reaches it is an
    AutoDetect line without NodeName, which gres.conf(5) (AutoDetect) applies to every node
    unless a node's own AutoDetect overrides it (_handle_global_autodetect). `nvidia` needs no
    NVML (src/plugins/gpu/nvidia/gpu_nvidia.c), which Slinky's images lack (SlinkyProject/
    containers schedmd/slurm/25.11/ubuntu24.04/Dockerfile builds Slurm's debian/control, no
    NVML); slurm-operator v1.2.1 docs/installation.md "With GPUs" sets the same line. Every
    node gres.conf names keeps what it had: its own AutoDetect (off for CPU nodes)."""
    _, files = rendered(PROVIDER)
    gres = files["slurm/gres.conf"].content.decode().splitlines()
    assert "AutoDetect=nvidia" in gres
    assert (
        "NodeName=gpu-[01-02] AutoDetect=off Name=gpu Type=h100-sxm-80gb File=/dev/nvidia[0-7]"
    ) in gres
    for node in ("gpu-01", "gpu-02", "cpu-01", "cpu-02"):
        assert node_autodetect(gres, node) == ["off"], (node, gres)
    # no line names the pods' nodes, so no File: those come from the detection
    assert [line for line in gres if "File=" in line and "gpu-[01-02]" not in line] == []


def test_an_on_prem_nvidia_pool_keeps_its_own_line_beside_the_hosted_one() -> None:
    """An on-prem pool with gpus.autodetect nvidia gets its own NodeName line, as every named
    node does (gres.conf(5) AutoDetect: a node's own line overrides the global one), and its
    counts without File; the global line stays the hosted pool's."""
    source = PROVIDER.replace(
        "    gpus: {model: h100-sxm-80gb, count: 8}\n",
        "    gpus: {model: h100-sxm-80gb, count: 8, gres_type: h100, autodetect: nvidia}\n",
        1,
    )
    _, files = rendered(source)
    gres = files["slurm/gres.conf"].content.decode().splitlines()
    assert gres.count("AutoDetect=nvidia") == 1
    assert node_autodetect(gres, "gpu-01") == ["nvidia"]
    assert "NodeName=gpu-[01-02] Name=gpu Type=h100 Count=8" in gres
    assert node_autodetect(gres, "cpu-01") == ["off"]
    assert [line for line in gres if "File=" in line] == []


def test_gres_conf_names_no_autodetect_where_every_node_is_named() -> None:
    """Where the hosted pool's Kubernetes nodes are known (on-prem), gres.conf lists their
    device files and nothing detects: no AutoDetect line without NodeName, no line for CPU
    nodes."""
    source = PROVIDER.replace(
        "    provider: gke\n    instance_type: a3-highgpu-8g\n    nodes: {min: 0, max: 4}\n",
        "    hosts: k8s-gpu-[01-04]\n",
    ).replace("      provider: gke\n      region: us-central1\n      project: hybrid\n", "")
    _, files = rendered(source)
    gres = files["slurm/gres.conf"].content.decode()
    assert "\nAutoDetect=" not in gres
    assert "cpu-[01-02]" not in gres
    assert "NodeName=k8s-gpu-[01-04] AutoDetect=off Name=gpu" in gres


def warnings(source: str) -> list[str]:
    document = load.parse_blueprint(source.encode(), "blueprint.yaml")
    return [f.format() for f in pipeline.validate_document(document).findings]


def test_a_catalog_type_on_detected_gpus_is_warned_with_the_fix() -> None:
    """A detected GPU keeps a configured Type only where it is part of the driver's model name
    (src/plugins/gres/gpu/gres_gpu.c _normalize_sys_gres_types and _match_gres, both
    releases); the catalog's h100-sxm-80gb is in no driver's name (NVIDIA H100 80GB HBM3)."""
    found = [w for w in warnings(PROVIDER) if "AutoDetect=nvidia" in w]
    assert len(found) == 1 and "node_pools[2].gpus" in found[0] and "gres_type" in found[0]
    named = PROVIDER.replace(
        "count: 8}\n    features: [hosted]", "count: 8, gres_type: h100}\n    features: [hosted]"
    )
    assert [w for w in warnings(named) if "AutoDetect=nvidia" in w] == []
    assert not [w for w in warnings(ESTATE) if "AutoDetect" in w]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("  auth_key: {secret: slurm_key}\n", ""), "slurm.auth_key"),
        (("  rest_api: {host: ctl-01, jwt_key: {secret: slurm_jwt}}\n", ""), "slurm.rest_api"),
        (("    nodes: {max: 2}\n", "    nodes: {max: 2}\n    hosts: pod-[1-2]\n"), "`hosts`"),
        (("cluster: k8s\n    nodes", "cluster: nowhere\n    nodes"), "'nowhere' is not in"),
        (("count: 8}\n    features", "count: 8, mig: ['3g.40gb']}\n    features"), "whole GPUs"),
        (("count: 8}\n    features", "count: 4}\n    features"), "every GPU of its node"),
        (("hosts: gpu-[01-02]", "hosts: k8s-gpu-[01-02]"), "k8s-gpu-01 is also a host"),
    ],
)
def test_hosted_pool_mistakes_are_refused(change: tuple[str, str], message: str) -> None:
    found = findings(ESTATE.replace(*change))
    assert any(message in f for f in found), found


def test_estates_without_hosted_pools_keep_munge_and_no_slinky() -> None:
    source = (
        ESTATE.replace("h100-hosted", "unused")
        .replace("    cluster: k8s\n    nodes: {max: 2}\n", "    hosts: gpu-[03-04]\n")
        .replace("  auth_key: {secret: slurm_key}\n", "")
    )
    assert "AuthType=auth/munge" in slurm_conf(source)
    assert slinky_objects(source) == []


# --- plan ---------------------------------------------------------------------------------------


def test_plan_explains_a_nodeset_change(tmp_path: Path) -> None:
    """Shrinking a hosted pool changes its NodeSet (replicas) and slurm.conf (MaxNodeCount):
    `estategen plan` says the operator drains the nodes it removes."""
    before = load.parse_blueprint(ESTATE.encode(), "blueprint.yaml")
    old = pipeline.validate_document(before).estate
    write_tree(with_manifest(render(old), ESTATE.encode(), old.name), tmp_path / "hybrid")
    grown = ESTATE.replace("nodes: {max: 2}", "nodes: {max: 1}")
    estate = pipeline.validate_document(load.parse_blueprint(grown.encode(), "b.yaml")).estate
    result = plan(estate, render(estate), tmp_path / "hybrid")
    changes = {c.subject: c for f in result.files for c in f.changes if c.kind == "slurm-hosted"}
    assert set(changes) == {"NodeSet slurm/h100-hosted"}
    change = changes["NodeSet slurm/h100-hosted"]
    assert change.file == "kubernetes/k8s/slurm.yaml"
    # docs/concepts/nodeset-controller.md "Scale-in Lifecycle": drain, then delete the pod
    assert "drain" in change.meaning


@pytest.mark.parametrize("key", ["MaxNodeCount", "slurmctldparameters", "AuthInfo"])
def test_keys_rendered_for_hosted_pools_are_refused_in_options(key: str) -> None:
    found = findings(ESTATE.replace("  controllers:", f"  options: {{{key}: x}}\n  controllers:"))
    assert any(f"slurm.options.{key}" in f for f in found), found


# --- a real slurmctld takes the mixed partition and a NodeSet's dynamic slurmd --------------


@pytest.mark.slow
@pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare")
def test_a_real_slurmctld_puts_a_nodeset_slurmd_in_the_mixed_partition(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """slurmctld reads the NodeSet line and the partition that mixes an on-prem hostlist with
    it; a slurmd started as Slinky starts it (worker_app.go: `-Z --conf` with the NodeSet's
    extraConf and its name as a feature) registers as a dynamic node of that partition.

    The installed Slurm (Debian 12: 22.05) predates auth/slurm and has no auth/jwt, so the lab
    keeps munge for authentication; everything else is the file as rendered for 25.11.
    """
    tmp_path = tmp_path_factory.mktemp("hosted")  # short: slurmstepd's sockets live there
    source = (
        ESTATE.replace(
            "cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}\n    memory_gb: 256",
            f"cpu: {machine_cpu()}\n    memory_gb: 2",
        )
        .replace("nodes: {max: 2}", "nodes: {max: 1}")
        .replace(ACCOUNTING, "")
    )
    estate = pipeline.validate_document(load.parse_blueprint(source.encode(), "b.yaml")).estate
    out = tmp_path / "out"
    write_tree(with_manifest(render(estate), source.encode(), estate.name), out)
    node = "k8s-gpu-01"  # host network: the Kubernetes node's name (gres.conf names it)

    def keep_munge(cluster: SlurmLab) -> None:
        conf = cluster.slurm_conf()
        assert "NodeSet=h100-hosted Feature=h100-hosted" in conf
        (cluster.etc / "slurm.conf").write_text(
            set_keys(
                conf,
                {"AuthType": "auth/munge", "CredType": "cred/munge"},
                drop=("AuthAltTypes", "AuthAltParameters"),
            )
        )

    with SlurmLab.running(
        out,
        tmp_path / "run",
        ["gpu-01", "gpu-02", "ctl-01", "dbd-01", node],
        controller="ctl-01",
        gpu_files=8,
        configure=keep_munge,
    ) as cluster:
        nodeset = one(objects(source, "k8s"), "NodeSet", "h100-hosted")["spec"]
        extra = nodeset["extraConf"].replace("Features=", "Features=h100-hosted,")
        (cluster.work / "spool" / node).mkdir(exist_ok=True)
        cluster.start(
            f"slurmd-{node}",
            node,
            "/usr/sbin/slurmd",
            "-D",
            "-f",
            str(cluster.etc / "slurm.conf"),
            "-Z",
            "--conf",
            extra,
        )
        cluster.wait_for(
            lambda: node in cluster.run("sinfo", "-h", "-p", "gpu", "-N", "-o", "%N"),
            "the dynamic node in partition gpu",
        )
        shown = cluster.run("scontrol", "show", "node", node)
        assert "ActiveFeatures=h100-hosted,hosted,h100-sxm-80gb" in shown, shown
        assert "Gres=gpu:h100-sxm-80gb:8" in shown, shown
        # gres.conf's line for the pod's name gave slurmd its 8 GPUs: the node is not drained
        cluster.wait_for(
            lambda: cluster.run("sinfo", "-h", "-n", node, "-o", "%t").strip() == "idle",
            "the dynamic node idle",
        )
        job = ("srun", "-p", "gpu", "-w", node, "--gres=gpu:h100-sxm-80gb:2", "-t", "1")
        assert cluster.run(*job, "sh", "-c", "echo ok").strip() == "ok"
        nodes = cluster.run("scontrol", "show", "partition", "gpu")
        assert "gpu-[01-02]" in nodes and node in nodes, nodes


def stop_slurmd(cluster: SlurmLab, node: str) -> None:
    """Stop ``node``'s slurmd and wait until the lab's slurmd port is free again."""
    process = cluster.processes.pop(f"slurmd-{node}")
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
    cluster.wait_for(lambda: not cluster.port_open(cluster.ports["slurmd"]), "slurmd port free")


@pytest.mark.slow
@pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare")
def test_a_real_slurmd_on_a_node_no_gres_conf_line_names_registers_its_gpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The NodeSet's slurmd on a node GKE named at creation (a name no gres.conf line holds)
    registers its 8 GPUs through gres.conf's AutoDetect=nvidia, from a faked NVIDIA driver
    (/proc/driver/nvidia, what src/plugins/gpu/nvidia/gpu_nvidia.c reads), and a job there gets
    them as CUDA_VISIBLE_DEVICES; the on-prem GPU and CPU nodes read the same gres.conf and
    register the GRES they had without it (their own AutoDetect=off, gres.conf(5)
    AutoDetect). Without the line the dynamic node's GPUs have no File and slurmd drops them
    (src/interfaces/gres.c: "Ignoring file-less GPU"), and slurmctld drains the node ("gres/gpu
    count reported lower than configured (0 < 8)").

    AutoDetect=nvidia came with Slurm 24.11 (gres.conf(5)): the test needs 24.11 (run it with
    scripts/slurm-release.sh 24.11). As in the test above, the lab keeps munge; the files are
    as rendered for 25.11.
    """
    if not installed_slurm_at_least("24.11"):
        pytest.skip("AutoDetect=nvidia needs Slurm 24.11: scripts/slurm-release.sh 24.11")
    tmp_path = tmp_path_factory.mktemp("detect")  # short: slurmstepd's sockets live there
    # every node is this machine: its CPUs, 2 GB
    shape = r"cpu: \{sockets: \d+, cores_per_socket: \d+, threads_per_core: \d+\}"
    source = re.sub(
        r"memory_gb: \d+", "memory_gb: 2", re.sub(shape, f"cpu: {machine_cpu()}", PROVIDER)
    )
    source = (
        source.replace("nodes: {max: 2}", "nodes: {max: 1}")
        # a Type that is part of the driver's model name (checks.hosted warns otherwise)
        .replace("count: 8}\n    features", "count: 8, gres_type: h100}\n    features")
        .replace(ACCOUNTING, "")
    )
    estate = pipeline.validate_document(load.parse_blueprint(source.encode(), "b.yaml")).estate
    out = tmp_path / "out"
    write_tree(with_manifest(render(estate), source.encode(), estate.name), out)
    node = "gke-k8s-9c1e-x7qd"  # GKE names a node it creates (shorter: stepd socket paths)
    gres = (out / "slurm" / "gres.conf").read_text()
    assert "AutoDetect=nvidia" in gres.splitlines() and node not in gres

    def keep_munge(cluster: SlurmLab) -> None:
        (cluster.etc / "slurm.conf").write_text(
            set_keys(
                cluster.slurm_conf(),
                {"AuthType": "auth/munge", "CredType": "cred/munge"},
                drop=("AuthAltTypes", "AuthAltParameters"),
            )
        )

    with SlurmLab.running(
        out,
        tmp_path / "run",
        ["gpu-01", "gpu-02", "cpu-01", "cpu-02", "ctl-01", "dbd-01", node],
        controller="ctl-01",
        gpu_files=8,
        configure=keep_munge,
    ) as cluster:
        # the on-prem nodes, one at a time (a lab's slurmd share one port): the GRES they
        # had, from their own lines, and no detection (gpu_nvidia.c would log its failure)
        for on_prem, registered in (("gpu-01", "gpu:h100-sxm-80gb:8"), ("cpu-01", "(null)")):
            cluster.start_slurmd(on_prem)
            # pool cpu is in no partition, which sinfo lists nodes by
            cluster.wait_for(
                lambda n=on_prem: "State=IDLE " in cluster.run("scontrol", "show", "node", n),
                f"{on_prem} idle",
            )
            shown = cluster.run("scontrol", "show", "node", on_prem)
            assert f"Gres={registered}" in shown, shown
            stop_slurmd(cluster, on_prem)
            log = (cluster.work / "log" / f"slurmd-{on_prem}.log").read_text()
            assert "GPU detection" not in log, log
        nodeset = one(objects(source, "k8s"), "NodeSet", "h100-hosted")["spec"]
        extra = nodeset["extraConf"].replace("Features=", "Features=h100-hosted,")
        assert "Gres=gpu:h100:8" in extra
        (cluster.work / "spool" / node).mkdir(exist_ok=True)
        driver = fake_nvidia_driver(tmp_path / "driver", 8, f"0-{machine_cpus() - 1}")
        slurmd = shlex.join(
            ["/usr/sbin/slurmd", "-D", "-f", str(cluster.etc / "slurm.conf"), "-Z", "--conf", extra]
        )
        cluster.start(f"slurmd-{node}", node, "sh", "-c", f"{driver} && exec {slurmd}")
        cluster.wait_for(
            lambda: node in cluster.run("sinfo", "-h", "-N", "-o", "%N"), "the dynamic node"
        )
        shown = cluster.run("scontrol", "show", "node", node)
        assert "Gres=gpu:h100:8" in shown, shown
        # slurmd registered the 8 GPUs it detected: the node is not drained for too few
        cluster.wait_idle(node)
        log = (cluster.work / "log" / f"slurmd-{node}.log").read_text()
        assert "file-less GPU" not in log, log
        job = ("srun", "-p", "gpu", "-w", node, "--gres=gpu:h100:2", "-t", "1")
        assert cluster.run(*job, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES").strip() == "0,1"


def test_validate_counts_each_physical_gpu_once(tmp_path: Path) -> None:
    """16 on-prem Slurm GPUs and 32 in the Kubernetes pool, 16 of which the NodeSet's pods take:
    48 GPUs, not 64."""
    blueprint = tmp_path / "hybrid.yaml"
    blueprint.write_text(ESTATE)
    result = run_cli("validate", blueprint)
    assert result.returncode == 0, result.stderr
    assert "3 pools, 6 hosts, 48 GPUs" in result.stdout


def test_the_manifest_readme_creates_the_secrets_before_the_objects() -> None:
    """With `kubectl apply -k` the Secrets the Controller names must exist first; the README
    names them and the blueprint secret each holds, never a value."""
    _, files = rendered(ESTATE)
    readme = files["kubernetes/k8s/README.md"].content.decode()
    create = readme.index("create secret generic slurm-auth-slurm --from-file=slurm.key=")
    assert create < readme.index("kubectl apply --server-side --field-manager=estategen -k .")
    assert "<file holding slurm_jwt>" in readme


def test_kubectl_kustomize_builds_the_hosted_slurm_cluster(tmp_path: Path) -> None:
    semantics.test_kubectl_kustomize_builds_exactly_the_rendered_objects(ESTATE, "k8s", tmp_path)
