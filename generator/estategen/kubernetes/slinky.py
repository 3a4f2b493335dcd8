"""Slurm hosted in Kubernetes: a Slurm pool with ``cluster`` runs its slurmd as pods there.

Slinky's slurm-operator (pinned below) turns ``slinky.slurm.net/v1beta1`` objects into pods.
The estate keeps one slurmctld, on its own controllers: the ``Controller`` here is *external*
(the operator's docs/usage/hybrid.md, "External Slurmctld"), so the hosted slurmd fetch the
estate's own slurm.conf from it (configless) and register as dynamic nodes (``slurmd -Z``) with
the NodeSet's name as a feature, which slurm.conf's ``NodeSet=`` line and partitions name.
Accounting is the estate's slurmdbd, external too. The operator needs a slurmrestd of its own
in the cluster to act on Slurm (hybrid.md, "External Slurmrestd"): the ``RestApi``.

Keys are Kubernetes Secret references, never values: the auth/slurm key and the JWT key the
on-prem slurmrestd reads (``slurm.rest_api.jwt_key``, one key for both sides).
"""

from __future__ import annotations

from estategen.kubernetes.objects import ClusterView, HelmRelease, Obj, meta
from estategen.kubernetes_facts import (
    MODEL_LABEL,
    POOL_LABEL,
    hosted_backing_pools,
    hosted_pod_cpus,
    node_taint,
)
from estategen.model import SLURMCTLD_PORT, Estate, NodePool
from estategen.slurm_facts import hosted_pod_memory_mib, node_line
from estategen.slurm_names import kubernetes_name

API = "slinky.slurm.net/v1beta1"
GROUP = "slinky.slurm.net"
# the operator's chart, as docs/installation.md installs it, with its CRDs as a subchart
CHART = "oci://ghcr.io/slinkyproject/charts/slurm-operator"
VERSION = "1.2.1"
RELEASE = "slurm-operator"
OPERATOR_NAMESPACE = "slinky"
NAMESPACE = "slurm"
# Slurm releases SlinkyProject/containers publishes daemon images for (schedmd/slurm/<x.y>/),
# and the base image every one of them is built on (ubuntu24.04); the operator needs at least
# 25.11 (slurm-operator Chart.yaml, slinky.slurm.net/minimum-slurm-version).
IMAGE_REGISTRY = "ghcr.io/slinkyproject"
IMAGE_FLAVOR = "ubuntu24.04"
SLURM_RELEASES = ("25.11", "26.05")
# the Secrets the objects name, and the keys in them (the names hybrid.md's kubectl uses)
SLURM_KEY_SECRET = "slurm-auth-slurm"
SLURM_KEY_FILE = "slurm.key"
JWT_KEY_SECRET = "slurm-auth-jwt"
JWT_KEY_FILE = "jwt.key"
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"


def image(estate: Estate, daemon: str) -> str:
    """The pinned image of a Slurm daemon for the blueprint's ``versions.slurm``."""
    return f"{IMAGE_REGISTRY}/{daemon}:{estate.versions.slurm.text}-{IMAGE_FLAVOR}"


def uses_slinky(view: ClusterView) -> bool:
    return bool(view.estate.hosted_pools(view.cluster.name))


def release(view: ClusterView) -> HelmRelease:
    return HelmRelease(
        RELEASE,
        CHART,
        VERSION,
        OPERATOR_NAMESPACE,
        # CRDs from the subchart; certificates self-signed by the chart (no cert-manager)
        {"crds": {"enabled": True}, "certManager": {"enabled": False}},
        create_namespace=True,
        provides=(GROUP,),
    )


def secrets(view: ClusterView) -> list[tuple[str, str, str]]:
    """(Secret name, key in it, blueprint secret name) of each Secret the objects reference;
    the Pulumi program creates them from its secret config, GitOps users with kubectl."""
    slurm = view.estate.slurm
    if not uses_slinky(view) or slurm.auth_key is None or slurm.rest_api is None:
        return []
    return [
        (SLURM_KEY_SECRET, SLURM_KEY_FILE, slurm.auth_key.name),
        (JWT_KEY_SECRET, JWT_KEY_FILE, slurm.rest_api.jwt_key.name),
    ]


def _ref(name: str, key: str) -> Obj:
    return {"name": name, "key": key}


def controller_name(estate: Estate) -> str:
    """The Controller's and the Accounting's name: the ClusterName as a Kubernetes name
    (``hpc.example`` is hpc-example); the Controller's clusterName keeps it as written."""
    return kubernetes_name(estate.slurm.cluster_name)


def objects(view: ClusterView) -> list[Obj]:
    """The namespace, the external Controller and Accounting, the RestApi and a NodeSet per
    hosted pool of the cluster."""
    if not uses_slinky(view):
        return []
    estate = view.estate
    slurm = estate.slurm
    name = controller_name(estate)
    # the slurmd pods use the host network: Pod Security's baseline and restricted levels
    # forbid it (kubernetes.io "Pod Security Standards", Host Namespaces)
    namespace = meta(NAMESPACE, **{POD_SECURITY_LABEL: "privileged"})
    out: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": namespace}]
    if slurm.accounting is not None:
        out.append(
            {
                "apiVersion": API,
                "kind": "Accounting",
                "metadata": meta(name, NAMESPACE),
                "spec": {
                    "external": True,
                    "externalConfig": {
                        "host": slurm.accounting.host,
                        "port": slurm.accounting.port,
                    },
                },
            }
        )
    controller: Obj = {
        "clusterName": slurm.cluster_name,
        "external": True,
        "externalConfig": {"host": slurm.controllers[0], "port": SLURMCTLD_PORT},
        "slurmKeyRef": _ref(SLURM_KEY_SECRET, SLURM_KEY_FILE),
        "jwtKeyRef": _ref(JWT_KEY_SECRET, JWT_KEY_FILE),
    }
    if slurm.accounting is not None:
        controller["accountingRef"] = {"name": name}
    out.append(
        {
            "apiVersion": API,
            "kind": "Controller",
            "metadata": meta(name, NAMESPACE),
            "spec": controller,
        }
    )
    out.append(
        {
            "apiVersion": API,
            "kind": "RestApi",
            "metadata": meta(name, NAMESPACE),
            "spec": {
                "controllerRef": {"name": name},
                "replicas": 1,
                "slurmrestd": {"image": image(estate, "slurmrestd")},
            },
        }
    )
    out.extend(nodeset(view, pool) for pool in estate.hosted_pools(view.cluster.name))
    return out


def extra_conf(estate: Estate, pool: NodePool) -> str:
    """slurmd's ``--conf`` node parameters: the GRES, features and weight of the pool's
    slurm.conf node line (the operator adds the NodeSet's name as a feature), with the CPUs and
    memory of the pod, not of the node: slurmd registers what its pod may use."""
    line = node_line(estate, pool)
    fields = [f"CPUs={hosted_pod_cpus(pool)}", f"RealMemory={hosted_pod_memory_mib(pool)}"]
    if line.gres:
        fields.append(f"Gres={line.gres}")
    if line.features:
        fields.append(f"Features={line.features}")
    fields.append(f"Weight={line.weight}")
    return " ".join(fields)


def resources(estate: Estate, pool: NodePool) -> Obj:
    """What one slurmd pod takes: what its node can allocate of the pool's CPUs and memory
    (kubernetes_facts.hosted_pod_cpus, hosted_pod_memory_mib) and every GPU of the node,
    requested and limited alike (extended resources such as GPUs cannot be overcommitted)."""
    amounts: Obj = {
        "cpu": str(hosted_pod_cpus(pool)),
        "memory": f"{hosted_pod_memory_mib(pool)}Mi",
    }
    if pool.gpus:
        amounts[estate.gpu_models[pool.gpus.model].resource] = str(pool.gpus.count)
    return {"requests": dict(amounts), "limits": dict(amounts)}


def nodeset(view: ClusterView, pool: NodePool) -> Obj:
    estate = view.estate
    tolerations = []
    for backing in hosted_backing_pools(estate, pool):
        for taint in backing.taints:
            entry = {**node_taint(taint), "operator": "Equal" if taint.value else "Exists"}
            if entry not in tolerations:
                tolerations.append(entry)
    # docs/usage/hybrid.md "Host Network": slurmctld runs outside the cluster and Slurm needs
    # both ways reachable without NAT; the PodSpec field is dnsPolicy (hybrid.md's dNSPolicy
    # is a typo), so the pod still resolves cluster names
    pod: Obj = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}
    if pool.gpus:
        pod["nodeSelector"] = {MODEL_LABEL: pool.gpus.model}
    if tolerations:
        pod["tolerations"] = tolerations
    spec: Obj = {
        "controllerRef": {"name": controller_name(estate)},
        "replicas": pool.nodes_max,
        "scalingMode": "StatefulSet",
        # pods are <pool>-0, <pool>-1, ...; on the host network their Slurm nodes take the
        # Kubernetes nodes' names (kubernetes_facts.hosted_node_names), which gres.conf names
        "ordinalPadding": 0,
        "slurmd": {
            "image": image(estate, "slurmd"),
            "resources": resources(estate, pool),
        },
        "extraConf": extra_conf(estate, pool),
        # partitions are the estate's, in its slurm.conf
        "partition": {"enabled": False},
        "template": {
            "metadata": {"labels": {POOL_LABEL: pool.name}},
            "spec": pod,
        },
    }
    return {
        "apiVersion": API,
        "kind": "NodeSet",
        "metadata": meta(pool.name, NAMESPACE),
        "spec": spec,
    }
