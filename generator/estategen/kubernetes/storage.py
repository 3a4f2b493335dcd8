"""Storage classes for the file systems the Slurm side mounts, and volumes over them.

Each ``storage[].kubernetes.storage_class`` becomes a StorageClass, and every team namespace
gets a PersistentVolumeClaim bound to a static volume over the same tree the hosts mount, so a
pod sees what a batch job on the Slurm side sees. NFS goes through csi-driver-nfs (dynamic
claims of the class get a sub-directory each); Lustre through the host's own mount, on the
pools that mount it (``docs/kubernetes-upstream-requirements.md`` section 6).
"""

from __future__ import annotations

from estategen.facts import POOL_LABEL, storage_classes
from estategen.kubernetes.objects import TEAM_LABEL, ClusterView, Obj, meta
from estategen.model import NodePool, Storage

NFS_DRIVER = "nfs.csi.k8s.io"
NFS_CHART = "csi-driver-nfs"
NFS_REPOSITORY = "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
NFS_VERSION = "4.13.4"
NFS_NAMESPACE = "kube-system"
# what a claim of the whole tree asks for; NFS and hostPath volumes do not enforce a size
CLAIM_SIZE = "1Ti"


def uses_nfs_driver(view: ClusterView) -> bool:
    return any(s.type == "nfs" for s, _ in storage_classes(view.estate, view.cluster.name))


def nfs_server_and_share(storage: Storage) -> tuple[str, str]:
    """``nfs01:/export/home`` as the driver's ``server`` and ``share`` parameters (R6.2)."""
    server, _, share = storage.source.partition(":")
    return server, share


def _on_pools(pools: list[NodePool]) -> Obj:
    return {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": POOL_LABEL, "operator": "In", "values": [p.name for p in pools]}
                    ]
                }
            ]
        }
    }


def storage_class(storage: Storage) -> Obj:
    assert storage.storage_class is not None
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta(storage.storage_class),
        "reclaimPolicy": "Retain",
    }
    if storage.type == "nfs":
        server, share = nfs_server_and_share(storage)
        obj["provisioner"] = NFS_DRIVER
        obj["parameters"] = {"server": server, "share": share}
        obj["volumeBindingMode"] = "Immediate"
        if storage.options:
            obj["mountOptions"] = list(storage.options)
    else:
        # the hosts mount Lustre themselves; the class names their volumes (R6.9)
        obj["provisioner"] = "kubernetes.io/no-provisioner"
        obj["volumeBindingMode"] = "WaitForFirstConsumer"
    return obj


def _volume(storage: Storage, pools: list[NodePool], namespace: str) -> Obj:
    spec: Obj = {
        "capacity": {"storage": CLAIM_SIZE},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage.storage_class,
        "claimRef": {"namespace": namespace, "name": storage.name},
        "nodeAffinity": _on_pools(pools),
    }
    if storage.type == "nfs":
        server, share = nfs_server_and_share(storage)
        # server#share#subdir#uniquifier: one volume per namespace over the same export (R6.3)
        spec["csi"] = {
            "driver": NFS_DRIVER,
            "volumeHandle": f"{server}#{share}##{namespace}",
            "volumeAttributes": {"server": server, "share": share},
        }
        if storage.options:
            spec["mountOptions"] = list(storage.options)
    else:
        spec["hostPath"] = {"path": storage.mount, "type": "Directory"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta(f"{storage.name}-{namespace}"),
        "spec": spec,
    }


def objects(view: ClusterView) -> list[Obj]:
    out: list[Obj] = []
    for storage, pools in storage_classes(view.estate, view.cluster.name):
        out.append(storage_class(storage))
        for team in view.estate.identity.teams:
            out.append(_volume(storage, pools, team.namespace))
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": meta(storage.name, team.namespace, **{TEAM_LABEL: team.name}),
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": storage.storage_class,
                        "volumeName": f"{storage.name}-{team.namespace}",
                        "resources": {"requests": {"storage": CLAIM_SIZE}},
                    },
                }
            )
    return out
