"""Storage on the Kubernetes side: each file system type through the CSI driver its cluster's
provider offers.

Each test names the requirement of docs/kubernetes-upstream-requirements.md section 6 it
checks and the upstream source it comes from, at the tag estategen pins. The blueprint is
``STORAGE_ESTATE``: one file system of each type, offered on an on-prem cluster (onprem), EKS
(aws) and GKE (gcp). Objects are read from the rendered ``kubernetes/<cluster>/`` manifests
and the Pulumi project's ``cluster.json``, as kubectl and the program read them.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from estategen.kubernetes import storage as k8s_storage

from k8s_harness import STORAGE_ESTATE, Manifests, Obj, estate_folder, estate_of, manifests


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("storage")


def cluster(out: Path, name: str) -> Manifests:
    return manifests(out, STORAGE_ESTATE, name)


def volumes(result: Manifests, name: str) -> list[Obj]:
    """The team volumes of one file system, one per team namespace."""
    return [v for v in result.all("PersistentVolume") if v["spec"]["claimRef"]["name"] == name]


def release(result: Manifests, name: str) -> Obj:
    (found,) = [r for r in result.releases() if r["name"] == name]
    return found


TEAMS = [t.namespace for t in estate_of(STORAGE_ESTATE).identity.teams]


@pytest.mark.parametrize("name", ["onprem", "aws", "gcp"])
def test_storage_objects_are_valid_for_the_target_kubernetes(out: Path, name: str) -> None:
    result = cluster(out, name)
    for obj in result.all("StorageClass") + result.all("PersistentVolume"):
        kubernetes_validate.validate(obj, result.version, strict=True)


def test_every_class_offered_names_one_volume_and_claim_per_team(out: Path) -> None:
    """A class per file system on each cluster that offers it; each team's claim binds its own
    volume, which names the claim back (claimRef), so no other claim takes it."""
    offered = {
        "onprem": {"home", "projects", "archive", "fast", "datasets"},
        "aws": {"home", "fsx", "datasets"},
        "gcp": {"home", "lustre"},
    }
    for name, classes in offered.items():
        result = cluster(out, name)
        assert {c["metadata"]["name"] for c in result.all("StorageClass")} == classes
        for claim in result.all("PersistentVolumeClaim"):
            volume = result.one("PersistentVolume", claim["spec"]["volumeName"])
            assert volume["spec"]["claimRef"] == {
                "namespace": claim["metadata"]["namespace"],
                "name": claim["metadata"]["name"],
            }
            assert volume["spec"]["storageClassName"] == claim["spec"]["storageClassName"]
        assert len(result.all("PersistentVolumeClaim")) == len(classes) * len(TEAMS)


def test_fsx_volumes_name_the_existing_file_system(out: Path) -> None:
    """R6.6 (aws-fsx-csi-driver v1.9.0 examples/kubernetes/static_provisioning/specs/pv.yaml):
    driver fsx.csi.aws.com, volumeHandle the file system id, volumeAttributes dnsname and
    mountname, ReadWriteMany, Retain; the blueprint's options (flock) as mountOptions."""
    result = cluster(out, "aws")
    for volume in volumes(result, "fsx"):
        spec = volume["spec"]
        assert spec["csi"] == {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": "fs-0123456789abcdef0",
            "volumeAttributes": {
                "dnsname": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
                "mountname": "abcdefgh",
            },
        }
        assert spec["mountOptions"] == ["flock"]
        assert (spec["accessModes"], spec["persistentVolumeReclaimPolicy"]) == (
            ["ReadWriteMany"],
            "Retain",
        )
        assert "nodeAffinity" not in spec  # every node of the cluster runs the driver
    assert len(volumes(result, "fsx")) == len(TEAMS)


def test_fsx_driver_is_the_pinned_chart_from_its_repository(out: Path) -> None:
    """docs/install.md (v1.9.0) 97-103: repository kubernetes-sigs.github.io/aws-fsx-csi-driver;
    chart 1.17.0 is tag helm-chart-aws-fsx-csi-driver-1.17.0 (appVersion 1.9.0)."""
    fsx = release(cluster(out, "aws"), "aws-fsx-csi-driver")
    assert (fsx["chart"], fsx["version"], fsx["repository"], fsx["namespace"]) == (
        "aws-fsx-csi-driver",
        "1.17.0",
        "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
        "kube-system",
    )
    assert "aws-fsx-csi-driver" not in {r["name"] for r in cluster(out, "onprem").releases()}


def test_gke_managed_lustre_volumes_name_the_instance_and_its_mount_point(out: Path) -> None:
    """R6.8 (lustre-csi-driver v0.6.11 examples/pre-prov/preprov-pvc-pv.yaml and
    docs/preprov-guide.md): volumeHandle PROJECT/LOCATION/INSTANCE; volumeAttributes.mountpoint
    IP@tcp:/FSNAME overrides ip and filesystem."""
    result = cluster(out, "gcp")
    for volume in volumes(result, "lustre"):
        assert volume["spec"]["csi"] == {
            "driver": "lustre.csi.storage.gke.io",
            "volumeHandle": "mesa-gpu-prod/europe-west4-a/scratch",
            "volumeAttributes": {"mountpoint": "10.90.1.4@tcp:/scratch"},
        }
    assert len(volumes(result, "lustre")) == len(TEAMS)


def test_gke_managed_lustre_driver_is_the_clusters_add_on(out: Path) -> None:
    """R6.7/6c: on GKE the driver is the LustreCsiDriver add-on (disabled by default), not a
    release of ours: the cluster's README says how to enable it."""
    result = cluster(out, "gcp")
    assert not {"lustre-csi-driver", "aws-fsx-csi-driver"} & {r["name"] for r in result.releases()}
    readme = (result.folder / "README.md").read_text()
    assert "--update-addons=LustreCsiDriver=ENABLED" in readme
    assert "LustreCsiDriver" not in (cluster(out, "aws").folder / "README.md").read_text()


def test_s3_volumes_are_static_mountpoint_volumes(out: Path) -> None:
    """R6.11 (mountpoint-s3-csi-driver v2.7.0 examples/kubernetes/static_provisioning/
    static_provisioning.yaml; mountpoint-s3 doc/CONFIGURATION.md --prefix): bucketName in
    volumeAttributes, region and a prefix ending in '/' as mountOptions, a volume handle unique
    in the cluster; static provisioning only, so the class provisions nothing."""
    for name in ("aws", "onprem"):
        result = cluster(out, name)
        for volume in volumes(result, "datasets"):
            spec = volume["spec"]
            assert spec["csi"]["driver"] == "s3.csi.aws.com"
            assert spec["csi"]["volumeAttributes"] == {"bucketName": "mesa-datasets"}
            assert spec["mountOptions"] == [
                "allow-delete",
                "uid=1000",
                "region us-east-1",
                "prefix train/",
            ]
        handles = [
            v["spec"].get("csi", {}).get("volumeHandle") for v in result.all("PersistentVolume")
        ]
        s3_handles = [v["spec"]["csi"]["volumeHandle"] for v in volumes(result, "datasets")]
        assert len(set(s3_handles)) == len(TEAMS)
        assert all(handles.count(h) == 1 for h in s3_handles)
        assert result.one("StorageClass", "datasets")["provisioner"] == (
            "kubernetes.io/no-provisioner"
        )


def test_s3_driver_reads_the_credentials_the_pulumi_program_makes(out: Path) -> None:
    """R6.10 (docs/INSTALL.md 68-76: the official repository), R6.12 (docs/CONFIGURATION.md
    232-287, chart values.yaml 113-117, templates/node.yaml 104-116): a Secret in the
    release's namespace with keys key_id and access_key, named by awsAccessSecret; its values
    are the blueprint's secret references, resolved from the stack's secret config, never
    written to the manifests."""
    for name in ("aws", "onprem"):
        result = cluster(out, name)
        s3 = release(result, "aws-mountpoint-s3-csi-driver")
        assert (s3["version"], s3["repository"], s3["namespace"]) == (
            "2.7.0",
            "https://awslabs.github.io/mountpoint-s3-csi-driver",
            "kube-system",
        )
        values = result.values("aws-mountpoint-s3-csi-driver")
        assert values["awsAccessSecret"] == {
            "name": "aws-secret",
            "keyId": "key_id",
            "accessKey": "access_key",
        }
        assert s3["secrets"] == [
            {"name": "aws-secret", "config": {"key_id": "s3_key_id", "access_key": "s3_secret_key"}}
        ]
        assert "Secret" not in result.kinds()
        readme = (result.folder / "README.md").read_text()
        assert readme.index("kubectl create secret generic aws-secret") < readme.index(
            "helm upgrade --install aws-mountpoint-s3-csi-driver"
        )
    assert "aws-mountpoint-s3-csi-driver" not in {r["name"] for r in cluster(out, "gcp").releases()}


def test_vendor_clients_reach_pods_through_the_host_mount_on_the_pools_that_mount_it(
    out: Path,
) -> None:
    """R6.14 (ThinkParQ/beegfs-csi-driver README.md 160-170: the driver needs the client on
    every node; likewise Storage Scale and WEKA): on-prem the hosts mount BeeGFS, GPFS and
    WEKA already, so each team volume is a hostPath over the mount, on the mounting pools."""
    result = cluster(out, "onprem")
    mounting = {"projects": ["a100-mig", "l40s-ts"], "archive": ["l40s-ts"], "fast": ["l40s-ts"]}
    paths = {"projects": "/projects", "archive": "/gpfs/archive", "fast": "/weka"}
    for name, pools in mounting.items():
        assert result.one("StorageClass", name)["provisioner"] == "kubernetes.io/no-provisioner"
        for volume in volumes(result, name):
            spec = volume["spec"]
            assert spec["hostPath"] == {"path": paths[name], "type": "Directory"}
            (term,) = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
            assert term["matchExpressions"] == [
                {"key": "estategen.io/pool", "operator": "In", "values": pools}
            ]


def test_nfs_on_managed_clusters_reaches_every_node_through_csi_driver_nfs(out: Path) -> None:
    """R6.1, R6.3: csi-driver-nfs serves managed clusters too; their nodes are not pools
    Ansible mounts, so the volumes carry no node affinity."""
    for name in ("aws", "gcp"):
        result = cluster(out, name)
        assert release(result, "csi-driver-nfs")["version"] == k8s_storage.NFS_VERSION
        for volume in volumes(result, "home"):
            assert volume["spec"]["csi"]["driver"] == "nfs.csi.k8s.io"
            assert "nodeAffinity" not in volume["spec"]


def test_the_manifests_hold_no_credentials_only_the_pulumi_data_names_them(out: Path) -> None:
    """Secrets are references: cluster.json names the stack config keys; nothing under
    kubernetes/ (what kubectl or Argo CD applies) mentions them."""
    folder = estate_folder(out, STORAGE_ESTATE)
    data = (folder / "pulumi" / "aws" / "cluster.json").read_text()
    assert data.count('"s3_secret_key"') == 1
    for path in (folder / "kubernetes").rglob("*.yaml"):
        text = path.read_text()
        assert "s3_secret_key" not in text and "s3_key_id" not in text, path
