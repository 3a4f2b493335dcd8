"""Storage classes for the file systems the estate declares, and volumes over them.

Each ``storage[].kubernetes.storage_class`` becomes a StorageClass, and every team namespace
gets a PersistentVolumeClaim bound to a static volume over the same tree the hosts mount, so a
pod sees what a batch job on the Slurm side sees. How a volume reaches the file system depends
on its type and the cluster's provider (``ACCESS``; ``docs/kubernetes-upstream-requirements.md``
section 6):

- NFS, everywhere: csi-driver-nfs (dynamic claims of the class get a sub-directory each).
- Lustre: on-prem through the host's own mount, on the pools that mount it; on EKS through the
  FSx for Lustre CSI driver; on GKE through the Managed Lustre CSI driver (a GKE add-on).
- BeeGFS, GPFS and WEKA: on-prem through the host's own mount (Ansible installs the vendor's
  client); their clients need the hosts estategen builds, so managed clusters are refused.
- S3: Mountpoint for Amazon S3's CSI driver, on EKS and on-prem, with the bucket's credentials
  in a Secret the Pulumi program makes from its secret config.

Drivers that only mount existing file systems (no dynamic provisioning from these classes)
get a ``kubernetes.io/no-provisioner`` class naming their static volumes.
"""

from __future__ import annotations

from estategen.facts import storage_classes
from estategen.kubernetes.objects import (
    TEAM_LABEL,
    ClusterView,
    HelmRelease,
    Obj,
    ReleaseSecret,
    meta,
)
from estategen.kubernetes_facts import POOL_LABEL
from estategen.model import NodePool, Storage, Team

NFS_DRIVER = "nfs.csi.k8s.io"
NFS_CHART = "csi-driver-nfs"
NFS_REPOSITORY = "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
NFS_VERSION = "4.13.4"
NFS_NAMESPACE = "kube-system"
# kubernetes-sigs/aws-fsx-csi-driver, chart 1.17.0 = driver v1.9.0 (tag
# helm-chart-aws-fsx-csi-driver-1.17.0; docs/install.md names the repository)
FSX_DRIVER = "fsx.csi.aws.com"
FSX_CHART = "aws-fsx-csi-driver"
FSX_REPOSITORY = "https://kubernetes-sigs.github.io/aws-fsx-csi-driver"
FSX_VERSION = "1.17.0"
# awslabs/mountpoint-s3-csi-driver v2.7.0 (chart 2.7.0; docs/INSTALL.md names the repository)
S3_DRIVER = "s3.csi.aws.com"
S3_CHART = "aws-mountpoint-s3-csi-driver"
S3_REPOSITORY = "https://awslabs.github.io/mountpoint-s3-csi-driver"
S3_VERSION = "2.7.0"
# README.md at v2.7.0: "compatible with Kubernetes versions v1.30+" (R6.13)
S3_MIN_KUBERNETES = (1, 30)
# the chart's awsAccessSecret defaults: the driver reads static credentials from this Secret
S3_SECRET = "aws-secret"
S3_SECRET_KEYS = ("key_id", "access_key")
# GoogleCloudPlatform/lustre-csi-driver (v0.6.11): GKE runs it as the LustreCsiDriver add-on
GKE_LUSTRE_DRIVER = "lustre.csi.storage.gke.io"
DRIVER_NAMESPACE = "kube-system"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
# what a claim of the whole tree asks for; these volumes do not enforce a size
CLAIM_SIZE = "1Ti"

# (type, provider) -> how pods reach the file system; a pair not listed is refused
# (checks.storage_class_drivers) with the reason in REFUSED
HOST_MOUNT = "host mount"
ACCESS: dict[tuple[str, str], str] = {
    **{("nfs", p): NFS_DRIVER for p in ("on-prem", "gke", "eks", "aks")},
    ("lustre", "on-prem"): HOST_MOUNT,
    ("lustre", "eks"): FSX_DRIVER,
    ("lustre", "gke"): GKE_LUSTRE_DRIVER,
    ("beegfs", "on-prem"): HOST_MOUNT,
    ("gpfs", "on-prem"): HOST_MOUNT,
    ("weka", "on-prem"): HOST_MOUNT,
    ("s3", "on-prem"): S3_DRIVER,
    ("s3", "eks"): S3_DRIVER,
}
_CLIENT_ON_NODES = (
    "its CSI driver needs the vendor's client on every node, and estategen installs clients "
    "with Ansible on the hosts it builds, not on {provider} nodes; offer it from an on-prem "
    "cluster whose pools mount it"
)
REFUSED: dict[str, str] = {
    "lustre": "estategen renders Lustre for on-prem clusters (the host mount), eks (FSx for "
    "Lustre CSI driver) and gke (Managed Lustre CSI driver); not for {provider}",
    "beegfs": _CLIENT_ON_NODES,
    "gpfs": _CLIENT_ON_NODES,
    "weka": _CLIENT_ON_NODES,
    "s3": "Mountpoint for Amazon S3's CSI driver is rendered for eks and on-prem clusters "
    "(static credentials); not for {provider}",
}


def access(storage: Storage, provider: str) -> str | None:
    return ACCESS.get((storage.type, provider))


def refusal(storage: Storage, provider: str) -> str:
    return REFUSED[storage.type].format(provider=provider)


def _drivers(view: ClusterView) -> set[str]:
    return {
        access(s, view.cluster.provider) or ""
        for s, _ in storage_classes(view.estate, view.cluster.name)
    }


def uses_nfs_driver(view: ClusterView) -> bool:
    return NFS_DRIVER in _drivers(view)


def uses_gke_lustre(view: ClusterView) -> bool:
    return GKE_LUSTRE_DRIVER in _drivers(view)


def nfs_server_and_share(storage: Storage) -> tuple[str, str]:
    """``nfs01:/export/home`` as the driver's ``server`` and ``share`` parameters (R6.2)."""
    server, _, share = storage.source.partition(":")
    return server, share


def fsx_file_system(storage: Storage) -> tuple[str, str, str]:
    """An FSx for Lustre mount source ``fs-ID.fsx.REGION.amazonaws.com@tcp:/MOUNTNAME`` as the
    driver's volume handle (the file system id), ``dnsname`` and ``mountname`` (R6.6)."""
    nid, _, fs_name = storage.source.partition(":/")
    dns_name = nid.partition("@")[0]
    return dns_name.partition(".")[0], dns_name, fs_name


def s3_credentials(view: ClusterView) -> list[Storage]:
    """The S3 file systems a cluster offers, whose credentials the driver's Secret holds."""
    return [s for s, _ in storage_classes(view.estate, view.cluster.name) if s.type == "s3"]


def releases(view: ClusterView) -> list[HelmRelease]:
    drivers = _drivers(view)
    out = []
    if NFS_DRIVER in drivers:
        out.append(
            HelmRelease(
                "csi-driver-nfs",
                NFS_CHART,
                NFS_VERSION,
                NFS_NAMESPACE,
                {},
                repository=NFS_REPOSITORY,
            )
        )
    if FSX_DRIVER in drivers:
        out.append(
            HelmRelease(
                FSX_CHART, FSX_CHART, FSX_VERSION, DRIVER_NAMESPACE, {}, repository=FSX_REPOSITORY
            )
        )
    if S3_DRIVER in drivers:
        first = s3_credentials(view)[0]
        assert first.access_key_id and first.secret_access_key
        key_id, access_key = S3_SECRET_KEYS
        out.append(
            HelmRelease(
                S3_CHART,
                S3_CHART,
                S3_VERSION,
                DRIVER_NAMESPACE,
                # driver-level static credentials (docs/CONFIGURATION.md, "Driver-Level
                # Credentials with Kubernetes Secrets"): the node reads them at start (R6.12)
                {"awsAccessSecret": {"name": S3_SECRET, "keyId": key_id, "accessKey": access_key}},
                repository=S3_REPOSITORY,
                secrets=(
                    ReleaseSecret(
                        S3_SECRET,
                        (
                            (key_id, first.access_key_id.name),
                            (access_key, first.secret_access_key.name),
                        ),
                    ),
                ),
            )
        )
    return out


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


def storage_class(storage: Storage, provider: str) -> Obj:
    assert storage.storage_class is not None
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta(storage.storage_class),
        "reclaimPolicy": "Retain",
    }
    if access(storage, provider) == NFS_DRIVER:
        server, share = nfs_server_and_share(storage)
        obj["provisioner"] = NFS_DRIVER
        obj["parameters"] = {"server": server, "share": share}
        obj["volumeBindingMode"] = "Immediate"
        if storage.options:
            obj["mountOptions"] = list(storage.options)
    else:
        # the class names static volumes over an existing file system (R6.8, R6.9, R6.11, R6.14)
        obj["provisioner"] = NO_PROVISIONER
        obj["volumeBindingMode"] = "WaitForFirstConsumer"
    return obj


# the drivers a team's volume can reach a directory of the file system through (the share's
# sub-directory, the bucket's prefix, the host path); FSx and Managed Lustre mount a whole one
TEAM_DIRECTORY_ACCESS = (NFS_DRIVER, S3_DRIVER, HOST_MOUNT)


def team_directory(storage: Storage, team: Team) -> str:
    """The team's directory under the mount (``storage[].kubernetes.team_directory``), or ''."""
    return (storage.team_directory or "").replace("{team}", team.name)


def _source(storage: Storage, provider: str, team: Team) -> Obj:
    """The volume source of one team's volume: a CSI volume or the host's mount, over the
    team's own directory when the blueprint names one."""
    namespace = team.namespace
    driver = access(storage, provider)
    directory = team_directory(storage, team)
    spec: Obj = {}
    if driver == NFS_DRIVER:
        server, share = nfs_server_and_share(storage)
        if directory:
            # the server exports the tree: a client mounts any directory of it
            share = f"{share.rstrip('/')}/{directory}"
        # server#share#subdir#uniquifier: one volume per namespace over the same export (R6.3)
        spec["csi"] = {
            "driver": NFS_DRIVER,
            "volumeHandle": f"{server}#{share}##{namespace}",
            "volumeAttributes": {"server": server, "share": share},
        }
        if storage.options:
            spec["mountOptions"] = list(storage.options)
    elif driver == FSX_DRIVER:
        file_system, dns_name, mount_name = fsx_file_system(storage)
        # volumeHandle is the file system id, dnsname and mountname its attributes (R6.6)
        spec["csi"] = {
            "driver": FSX_DRIVER,
            "volumeHandle": file_system,
            "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
        }
        if storage.options:
            spec["mountOptions"] = list(storage.options)
    elif driver == GKE_LUSTRE_DRIVER:
        assert storage.instance is not None
        # PROJECT/ZONE/NAME, and the instance's mount point IP@tcp:/FSNAME (R6.8)
        spec["csi"] = {
            "driver": GKE_LUSTRE_DRIVER,
            "volumeHandle": storage.instance,
            "volumeAttributes": {"mountpoint": storage.source},
        }
        if storage.options:
            spec["mountOptions"] = list(storage.options)
    elif driver == S3_DRIVER:
        bucket, prefix = storage.bucket_and_prefix
        if directory:
            prefix = f"{prefix}{directory}/"
        # bucketName in the attributes, Mountpoint's own options as mountOptions, a volume
        # handle unique in the cluster (R6.11)
        options = [*storage.options, f"region {storage.region}"]
        if prefix:
            options.append(f"prefix {prefix}")
        spec["mountOptions"] = options
        spec["csi"] = {
            "driver": S3_DRIVER,
            "volumeHandle": f"{storage.name}-{namespace}",
            "volumeAttributes": {"bucketName": bucket},
        }
    else:
        path = f"{storage.mount}/{directory}" if directory else storage.mount
        spec["hostPath"] = {"path": path, "type": "Directory"}
    return spec


def _volume(storage: Storage, pools: list[NodePool], team: Team, provider: str) -> Obj:
    namespace = team.namespace
    spec: Obj = {
        "capacity": {"storage": CLAIM_SIZE},
        "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage.storage_class,
        "claimRef": {"namespace": namespace, "name": storage.name},
    }
    if pools:
        spec["nodeAffinity"] = _on_pools(pools)
    spec.update(_source(storage, provider, team))
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta(f"{storage.name}-{namespace}"),
        "spec": spec,
    }


def objects(view: ClusterView) -> list[Obj]:
    out: list[Obj] = []
    provider = view.cluster.provider
    for storage, pools in storage_classes(view.estate, view.cluster.name):
        out.append(storage_class(storage, provider))
        for team in view.estate.identity.teams:
            out.append(_volume(storage, pools, team, provider))
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": meta(
                        storage.name, team.namespace, **{TEAM_LABEL: team.kubernetes_name}
                    ),
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": storage.storage_class,
                        "volumeName": f"{storage.name}-{team.namespace}",
                        "resources": {"requests": {"storage": CLAIM_SIZE}},
                    },
                }
            )
    return out
