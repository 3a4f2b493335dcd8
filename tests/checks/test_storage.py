"""Specification of storage: mounts, storage classes, types and CSI drivers
(estategen.checks.storage): a blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import MANAGED_POOL, only, run, where

# --- storage_pools_resolve -----------------------------------------------------------------------


def storage(entry: str) -> str:
    return f"storage: [{entry}]"


def test_storage_pools_resolve_passes_known_pools_and_a_lustre_nid() -> None:
    found = run(
        checks.storage_pools_resolve,
        """
        storage:
          - {name: home, type: nfs, source: "nas:/home", mount: /home, pools: [a100]}
          - name: scratch
            type: lustre
            source: "10.0.0.1@o2ib:/scratch"
            mount: /scratch
            kubernetes: {storage_class: scratch}
        """,
    )
    assert found == []


def test_storage_naming_an_unknown_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage('{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [h100]}'),
    )
    only(found, "storage[0].pools[0]", "'h100' is not a node pool; known: a100, l4-serve")


def test_storage_naming_a_managed_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        MANAGED_POOL
        + "    "
        + storage('{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [cloud]}'),
    )
    only(found, "storage[0].pools[0]", "pool 'cloud' is a managed gke pool")
    assert "list on-prem pools" in found[0].message


def test_storage_class_without_a_kubernetes_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [a100], '
            "kubernetes: {storage_class: home}}"
        ),
    )
    only(
        found,
        "storage[0].kubernetes.storage_class",
        "needs an on-prem Kubernetes pool that mounts it",
        "error",
    )


def test_storage_class_mounted_on_no_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [], '
            "kubernetes: {storage_class: home}}"
        ),
    )
    only(
        found,
        "storage[0].kubernetes.storage_class",
        "needs an on-prem Kubernetes pool that mounts it",
        "error",
    )


def test_lustre_source_without_an_mgs_nid_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage('{name: scratch, type: lustre, source: "mds01:/scratch", mount: /scratch}'),
    )
    only(found, "storage[0].source", "a Lustre source names the MGS NID")


# --- storage_types_and_drivers: file system types, CSI drivers per provider ----------------------


CLOUD_CLUSTERS = """
    kubernetes:
      clusters:
        - {name: lab-k8s}
        - {name: eks, provider: eks, region: us-east-1}
        - {name: gke, provider: gke, region: us-central1, project: lab-gpu-prod}
        - {name: aks, provider: aks, region: westeurope, resource_group: lab-rg}
"""


S3 = (
    "s3: {region: us-east-1, access_key_id: {secret: s3_key_id}, "
    "secret_access_key: {secret: s3_secret_key}}"
)


FSX_SOURCE = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"


def storage_on_clusters(*entries: str) -> str:
    return CLOUD_CLUSTERS + "    storage:\n" + "".join(f"      - {e}\n" for e in entries)


def test_each_new_type_with_its_own_source_passes() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: projects, type: beegfs, source: "beegfs://mgmtd01:8008", mount: /projects, '
            "beegfs: {conn_auth: {secret: beegfs_auth}}, pools: [l4-serve], "
            "kubernetes: {storage_class: projects}}",
            "{name: archive, type: gpfs, source: gpfs0, mount: /gpfs/archive, pools: [l4-serve], "
            "kubernetes: {storage_class: archive}}",
            '{name: fast, type: weka, source: "weka01,weka02/default", mount: /weka, '
            "options: [net=udp], pools: [l4-serve], kubernetes: {storage_class: fast}}",
            '{name: datasets, type: s3, source: "s3://lab-datasets/train", mount: /datasets, '
            f"options: [allow-delete], {S3}, "
            "kubernetes: {storage_class: datasets, clusters: [eks]}}",
            f'{{name: fsx, type: lustre, source: "{FSX_SOURCE}", mount: /fsx, pools: [], '
            "kubernetes: {storage_class: fsx, clusters: [eks]}}",
            '{name: lustre, type: lustre, source: "10.90.1.4@tcp:/scratch", mount: /lustre, '
            "pools: [], kubernetes: {storage_class: lustre, clusters: [gke], "
            "instance: lab-gpu-prod/us-central1-a/scratch}}",
            '{name: home, type: nfs, source: "nas:/home", mount: /home, '
            "kubernetes: {storage_class: home, clusters: [eks, gke, aks]}}",
        ),
    )
    assert found == []


@pytest.mark.parametrize(
    ("kind", "source", "expected"),
    [
        ("nfs", "gpfs0", "an NFS export like"),
        ("beegfs", "nas:/projects", "the BeeGFS management host"),
        ("gpfs", "s3://lab-archive", "the GPFS (IBM Storage Scale) device name"),
        ("weka", "weka01", "WEKA backend host(s) and file system"),
        ("s3", "nas:/datasets", "an S3 bucket and optional prefix"),
    ],
)
def test_a_source_in_another_types_form_is_refused_with_the_types_own_form(
    kind: str, source: str, expected: str
) -> None:
    extra = {"s3": f", {S3}", "beegfs": ", beegfs: {conn_auth: {secret: beegfs_auth}}"}
    found = run(
        checks.storage_types_and_drivers,
        storage(f'{{name: fs, type: {kind}, source: "{source}", mount: /fs{extra.get(kind, "")}}}'),
    )
    finding = only(found, "storage[0].source", f"is not a {kind} source: expected {expected}")
    assert source in finding.message


def test_type_settings_belong_to_their_type() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage('{name: home, type: nfs, source: "nas:/home", mount: /home, ' + S3 + "}"),
    )
    only(found, "storage[0].s3", "'s3' settings are for type s3, not nfs")
    found = run(
        checks.storage_types_and_drivers,
        storage('{name: p, type: beegfs, source: "beegfs://mgmtd01", mount: /p}'),
    )
    only(found, "storage[0].beegfs", "needs beegfs: {conn_auth: {secret: NAME}}")


def test_gpfs_and_beegfs_options_are_refused_as_they_would_do_nothing() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage("{name: a, type: gpfs, source: gpfs0, mount: /a, options: [noatime]}"),
    )
    only(found, "storage[0].options", "(mmchfs -o), not by the client")


def test_s3_options_estategen_sets_are_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage(
            '{name: d, type: s3, source: "s3://lab-data", mount: /d, '
            f"options: [allow-delete, region=eu-west-1], {S3}}}"
        ),
    )
    only(found, "storage[0].options[1]", "estategen sets Mountpoint's region")


def test_an_unknown_cluster_is_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, '
            "kubernetes: {storage_class: home, clusters: [azure]}}"
        ),
    )
    only(found, "storage[0].kubernetes.clusters[0]", "'azure' is not a Kubernetes cluster")


@pytest.mark.parametrize(
    ("entry", "cluster", "reason"),
    [
        (
            '{name: p, type: beegfs, source: "beegfs://m", mount: /p, pools: [], '
            "beegfs: {conn_auth: {secret: a}}, kubernetes: {storage_class: p, clusters: [eks]}}",
            "eks",
            "needs the vendor's client on every node",
        ),
        (
            "{name: p, type: gpfs, source: gpfs0, mount: /p, pools: [], "
            "kubernetes: {storage_class: p, clusters: [gke]}}",
            "gke",
            "needs the vendor's client on every node",
        ),
        (
            '{name: p, type: weka, source: "w1/fs", mount: /p, pools: [], '
            "kubernetes: {storage_class: p, clusters: [aks]}}",
            "aks",
            "needs the vendor's client on every node",
        ),
        (
            f'{{name: p, type: s3, source: "s3://lab-data", mount: /p, pools: [], {S3}, '
            "kubernetes: {storage_class: p, clusters: [gke]}}",
            "gke",
            "rendered for eks and on-prem clusters",
        ),
        (
            '{name: p, type: lustre, source: "10.0.0.1@tcp:/fs", mount: /p, pools: [], '
            "kubernetes: {storage_class: p, clusters: [aks]}}",
            "aks",
            "not for aks",
        ),
    ],
)
def test_a_type_no_driver_serves_on_a_provider_is_refused(
    entry: str, cluster: str, reason: str
) -> None:
    found = run(checks.storage_types_and_drivers, storage_on_clusters(entry))
    finding = only(
        found, "storage[0].kubernetes.clusters[0]", f"cluster {cluster!r} ({cluster}) cannot"
    )
    assert reason in finding.message


def test_lustre_on_eks_must_be_an_fsx_file_system() -> None:
    """R6.6: the FSx driver's volume handle and attributes come from an FSx source."""
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, pools: [], '
            "kubernetes: {storage_class: s, clusters: [eks]}}"
        ),
    )
    only(found, "storage[0].source", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/")


def test_lustre_on_gke_needs_the_instance_and_its_mount_point() -> None:
    """R6.8: the volume handle is PROJECT/LOCATION/INSTANCE; the mount point IP@tcp:/FS."""
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, pools: [], '
            "kubernetes: {storage_class: s, clusters: [gke]}}"
        ),
    )
    assert where(found) == [("storage[0].source", "error"), ("storage[0].kubernetes", "error")]
    assert "'10.90.1.4@tcp:/scratch'" in found[0].message
    assert "set kubernetes.instance to 'PROJECT/ZONE/NAME'" in found[1].message


def test_an_instance_without_gke_lustre_is_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, '
            "pools: [l4-serve], kubernetes: {storage_class: s, instance: p-12345/us-east1-b/x}}"
        ),
    )
    only(found, "storage[0].kubernetes.instance", "for a lustre file system offered in a gke")


def test_s3_in_kubernetes_needs_kubernetes_1_30() -> None:
    """R6.13: Mountpoint for S3's CSI driver v2.7.0 supports Kubernetes v1.30+."""
    entry = (
        f'{{name: d, type: s3, source: "s3://lab-data", mount: /d, pools: [], {S3}, '
        "kubernetes: {storage_class: d, clusters: [eks]}}"
    )
    assert run(checks.storage_types_and_drivers, storage_on_clusters(entry)) == []
    found = run(
        checks.storage_types_and_drivers,
        '    versions: {kubernetes: "1.29"}\n' + storage_on_clusters(entry),
    )
    only(found, "storage[0].kubernetes.clusters[0]", "needs Kubernetes 1.30 or later")


def test_one_cluster_holds_one_set_of_s3_credentials() -> None:
    """R6.12: the driver reads one Secret, so every bucket on a cluster shares its key."""
    other = S3.replace("s3_key_id", "other_key_id")
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            f'{{name: a, type: s3, source: "s3://lab-a", mount: /a, pools: [], {S3}, '
            "kubernetes: {storage_class: a, clusters: [eks]}}",
            f'{{name: b, type: s3, source: "s3://lab-b", mount: /b, pools: [], {other}, '
            "kubernetes: {storage_class: b, clusters: [eks]}}",
        ),
    )
    only(found, "storage[1].s3", "already reaches S3 storage 'a' with other credentials")


def test_one_beegfs_file_system_per_pool() -> None:
    beegfs = '{{name: {0}, type: beegfs, source: "beegfs://{0}", mount: /{0}, ' + (
        "beegfs: {{conn_auth: {{secret: a}}}}}}"
    )
    found = run(
        checks.storage_types_and_drivers, storage(beegfs.format("p1") + ", " + beegfs.format("p2"))
    )
    assert where(found) == [("node_pools[0]", "error"), ("node_pools[1]", "error")]
    assert "mounts 2 BeeGFS file systems (p1, p2)" in found[0].message


# --- storage_without_storage_class ---------------------------------------------------------------


def storage_on(pools: str, kubernetes: str = "") -> str:
    return f"""
        storage:
          - {{name: data, type: nfs, source: "nfs01:/export/data", mount: /data,
             pools: {pools}{kubernetes}}}
    """


def test_storage_on_a_kubernetes_pool_without_a_storage_class_is_a_warning() -> None:
    found = run(checks.storage_without_storage_class, storage_on("[a100, l4-serve]"))
    finding = only(found, "storage[0]", "pods cannot use it", level="warning")
    assert "Kubernetes pool l4-serve" in finding.message
    assert "add kubernetes: {storage_class: data}" in finding.message


@pytest.mark.parametrize(
    "fragment",
    [
        storage_on("[a100, l4-serve]", ", kubernetes: {storage_class: data}"),
        storage_on("[a100]"),
        "",  # BASE: home on every pool, for the people on the hosts
    ],
    ids=["with-storage-class", "slurm-pools-only", "no-pools-listed"],
)
def test_storage_pods_can_claim_or_that_no_kubernetes_pool_lists_passes(fragment: str) -> None:
    assert run(checks.storage_without_storage_class, fragment) == []
