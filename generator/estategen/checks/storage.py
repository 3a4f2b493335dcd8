"""Storage: the pools that mount each file system, its storage class, its type's source and
settings, and the CSI drivers that offer it in each cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from estategen.checks.core import check, choices
from estategen.errors import Finding, issue, quote
from estategen.facts import pool_mounts, storage_classes
from estategen.kubernetes import storage as k8s_storage
from estategen.model import Estate, Storage
from estategen.schema.patterns import STORAGE_SOURCES


@check
def storage_pools_resolve(estate: Estate) -> Iterator[Finding]:
    pools = estate.pools_by_name
    for storage in estate.storage:
        for i, name in enumerate(storage.pools or ()):
            if name not in pools:
                yield issue(
                    f"{storage.path}.pools[{i}]",
                    f"{name!r} is not a node pool{choices(pools, name)}",
                )
            elif pools[name].managed:
                yield issue(
                    f"{storage.path}.pools[{i}]",
                    f"pool {name!r} is a managed {pools[name].provider} pool: estategen mounts "
                    "file systems with Ansible on the hosts it builds, and the cloud's nodes are "
                    "not among them; list on-prem pools"
                    + choices(n for n, p in pools.items() if not p.managed),
                )
        if (
            storage.storage_class
            and not storage.class_clusters
            and not any(
                pools[n].scheduler == "kubernetes" and not pools[n].managed
                for n in (pools if storage.pools is None else storage.pools)
                if n in pools
            )
        ):
            yield issue(
                f"{storage.path}.kubernetes.storage_class",
                "a storage class exposes the file system the hosts mount, so it needs an "
                "on-prem Kubernetes pool that mounts it (managed gke/eks nodes mount nothing), "
                "or the clusters whose CSI driver reaches it in kubernetes.clusters"
                + choices(
                    n for n, p in pools.items() if p.scheduler == "kubernetes" and not p.managed
                ),
            )
        if storage.type == "lustre" and "@" not in storage.source:
            yield issue(
                f"{storage.path}.source",
                f"{storage.source!r}: a Lustre source names the MGS NID, like "
                "'10.0.0.1@o2ib:/scratch'",
            )


@check
def storage_without_storage_class(estate: Estate) -> Iterator[Finding]:
    """A file system listed on a Kubernetes pool is mounted on its hosts only: pods reach a
    file system through a storage class (storage[].kubernetes), and without one nothing in
    the cluster offers it."""
    pools = estate.pools_by_name
    for storage in estate.storage:
        if storage.storage_class is not None:
            continue
        named = [
            name
            for name in storage.pools or ()
            if name in pools and pools[name].scheduler == "kubernetes" and not pools[name].managed
        ]
        if named:
            yield issue(
                storage.path,
                f"{storage.name} is listed on Kubernetes pool{'s' if len(named) > 1 else ''} "
                f"{', '.join(named)}, whose hosts mount it at {storage.mount}, but pods cannot "
                f"use it: add kubernetes: {{storage_class: {storage.name}}} so pods claim it "
                "through a storage class, or list Slurm pools only",
                level="warning",
            )


# --- file system types and the CSI drivers that offer them ----------------------------------------

# FSx for Lustre's mount source (aws fsx describe-file-systems: DNSName, MountName)
_FSX_SOURCE = re.compile(
    r"fs-[0-9a-f]{8,17}\.fsx\.[a-z]{2}(-[a-z]+)+-[0-9]\.amazonaws\.com@tcp:/[a-z0-9]{1,8}"
)


# a Managed Lustre instance's mountPoint, IP_ADDRESS@tcp:/FILESYSTEM
_GKE_LUSTRE_SOURCE = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}@tcp:/[A-Za-z][A-Za-z0-9]{0,7}")


# Mountpoint options estategen sets itself, from source and s3.region
_S3_OWNED_OPTIONS = ("region", "prefix", "foreground", "bucket")


def _offering_clusters(estate: Estate, storage: Storage) -> list[str]:
    """Clusters that offer a storage class of this file system, in blueprint order."""
    return [
        c.name
        for c in estate.kubernetes_clusters
        if storage.storage_class and any(s is storage for s, _ in storage_classes(estate, c.name))
    ]


@check
def storage_types_and_drivers(estate: Estate) -> Iterator[Finding]:
    """Each type's source form and settings, and a CSI driver for each cluster offering it."""
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    credentials: dict[str, tuple[str, tuple[str, str]]] = {}
    for storage in estate.storage:
        pattern, form = STORAGE_SOURCES[storage.type]
        if not re.fullmatch(pattern, storage.source):
            yield issue(
                f"{storage.path}.source",
                f"{quote(storage.source)} is not a {storage.type} source: expected {form}",
            )
            continue
        for block, owner in (("s3", "s3"), ("beegfs", "beegfs")):
            present = storage.region is not None if block == "s3" else storage.conn_auth is not None
            if present and storage.type != owner:
                yield issue(
                    f"{storage.path}.{block}",
                    f"'{block}' settings are for type {owner}, not {storage.type}",
                )
            elif not present and storage.type == owner:
                yield issue(
                    f"{storage.path}.{block}",
                    "an s3 file system needs s3: {region, access_key_id: {secret: NAME}, "
                    "secret_access_key: {secret: NAME}}"
                    if owner == "s3"
                    else "a beegfs file system needs beegfs: {conn_auth: {secret: NAME}}, the "
                    "shared secret of BeeGFS connection authentication (connAuthFile)",
                )
        if storage.options and storage.type in ("gpfs", "beegfs"):
            yield issue(
                f"{storage.path}.options",
                f"{storage.type} mount options are set on the file system's own side "
                + (
                    "(mmchfs -o), not by the client"
                    if storage.type == "gpfs"
                    else "(beegfs-client.conf), not in a mount table"
                )
                + "; remove them",
            )
        for i, option in enumerate(storage.options):
            if storage.type == "s3" and option.partition("=")[0] in _S3_OWNED_OPTIONS:
                yield issue(
                    f"{storage.path}.options[{i}]",
                    f"{quote(option)}: estategen sets Mountpoint's {option.partition('=')[0]} "
                    "from source and s3.region",
                )
        for i, name in enumerate(storage.class_clusters):
            if name not in clusters:
                yield issue(
                    f"{storage.path}.kubernetes.clusters[{i}]",
                    f"{name!r} is not a Kubernetes cluster{choices(clusters)}",
                )
        offering = _offering_clusters(estate, storage)
        gke_lustre = False
        for name in offering:
            cluster = clusters[name]
            where = (
                f"{storage.path}.kubernetes.clusters[{storage.class_clusters.index(name)}]"
                if name in storage.class_clusters
                else f"{storage.path}.kubernetes.storage_class"
            )
            driver = k8s_storage.access(storage, cluster.provider)
            if driver is None:
                yield issue(
                    where,
                    f"cluster {name!r} ({cluster.provider}) cannot offer {storage.type} "
                    f"storage: {k8s_storage.refusal(storage, cluster.provider)}",
                )
                continue
            mounting = [
                p
                for p in estate.pools_in_cluster(name)
                if not p.managed and storage.mounted_on(p.name)
            ]
            if storage.team_directory and driver not in k8s_storage.TEAM_DIRECTORY_ACCESS:
                yield issue(
                    f"{storage.path}.kubernetes.team_directory",
                    f"cluster {name!r} reaches {storage.type} through {driver}, which mounts a "
                    "whole file system and no directory of it; remove team_directory, or offer "
                    "the file system where a host mount or NFS reaches it",
                )
            if driver == k8s_storage.HOST_MOUNT and not mounting:
                yield issue(
                    where,
                    f"cluster {name!r} reaches {storage.type} through its hosts' mount, and "
                    "none of its pools mounts it; add one of its pools to pools",
                )
            if driver == k8s_storage.FSX_DRIVER and not _FSX_SOURCE.fullmatch(storage.source):
                yield issue(
                    f"{storage.path}.source",
                    f"cluster {name!r} reaches Lustre through the FSx for Lustre CSI driver, "
                    "which mounts an FSx file system: the source must be its DNS name and "
                    "mount name like 'fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/"
                    "abcdefgh'",
                )
            if driver == k8s_storage.GKE_LUSTRE_DRIVER:
                gke_lustre = True
                if not _GKE_LUSTRE_SOURCE.fullmatch(storage.source):
                    yield issue(
                        f"{storage.path}.source",
                        f"cluster {name!r} reaches Lustre through GKE's Managed Lustre CSI "
                        "driver: the source must be the instance's mount point like "
                        "'10.90.1.4@tcp:/scratch'",
                    )
                if storage.instance is None:
                    yield issue(
                        f"{storage.path}.kubernetes",
                        f"cluster {name!r} reaches Lustre through GKE's Managed Lustre CSI "
                        "driver, whose volumes name the instance: set kubernetes.instance to "
                        "'PROJECT/ZONE/NAME'",
                    )
            if driver == k8s_storage.S3_DRIVER:
                minimum = ".".join(map(str, k8s_storage.S3_MIN_KUBERNETES))
                if not estate.versions.kubernetes.at_least(minimum):
                    yield issue(
                        where,
                        f"Mountpoint for Amazon S3's CSI driver {k8s_storage.S3_VERSION} needs "
                        f"Kubernetes {minimum} or later; versions.kubernetes is "
                        f"{estate.versions.kubernetes.text}",
                    )
                if not (storage.access_key_id and storage.secret_access_key):
                    continue  # no s3 block: a finding at storage[].s3 above
                pair = (storage.access_key_id.name, storage.secret_access_key.name)
                first = credentials.setdefault(name, (storage.name, pair))
                if first[1] != pair:
                    yield issue(
                        f"{storage.path}.s3",
                        f"cluster {name!r} already reaches S3 storage {first[0]!r} with other "
                        "credentials: Mountpoint's CSI driver holds one set per cluster; use "
                        "the same access_key_id and secret_access_key",
                    )
        if storage.instance is not None and not gke_lustre:
            yield issue(
                f"{storage.path}.kubernetes.instance",
                "kubernetes.instance names a GKE Managed Lustre instance; it is for a lustre "
                "file system offered in a gke cluster",
            )
    for pool in estate.node_pools:
        beegfs = [s.name for s in pool_mounts(estate, pool) if s.type == "beegfs"]
        if len(beegfs) > 1:
            yield issue(
                f"{pool.path}",
                f"pool {pool.name!r} mounts {len(beegfs)} BeeGFS file systems "
                f"({', '.join(beegfs)}); the storage_client role runs one BeeGFS client per "
                "host, so list one of them on this pool",
            )
