"""A blueprint's rendered Kubernetes side, read as kubectl, Argo CD or Flux read it: no Pulumi.

``rendered`` writes a blueprint's files into a folder once per session. ``Manifests`` holds
one cluster's ``kubernetes/<cluster>/``: the objects its ``kustomization.yaml`` lists, indexed
by kind, namespace and name, and the Helm values written next to them. The MESA estate covers
every provider, install mode, MIG strategy and sharing mode the generator handles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from estategen import load, pipeline
from estategen.model import Estate
from estategen.render import render

import helm

ROOT = Path(__file__).resolve().parent.parent
BLUEPRINTS = ROOT / "blueprints"

Obj = dict[str, Any]

# Every provider, install mode, MIG strategy and sharing mode the generator handles, in one
# estate: on-prem (MIG mixed, MPS, time-slicing over switches, a CPU pool), the GPU Operator
# with MIG single, EKS with time-slicing, and GKE with MIG partitions shared by time-slicing.
MESA = """\
estate: mesa
versions: {slurm: "24.05", kubernetes: "1.33"}
identity:
  users: [{name: ana, uid: 11001}, {name: ben, uid: 11002}]
  teams:
    - {name: vision, gid: 21001, members: [ana], fairshare: 30}
    - {name: nlp, gid: 21002, members: [ben], fairshare: 70, namespace: nlp-prod}
    - {name: ops, gid: 21003, fairshare: 10}
node_pools:
  - name: a100-mig
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-a100-[01-04]"
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gb: 1024
    gpus: {model: a100-sxm-80gb, count: 8, mig: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  - name: l4-mps
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-l4-[01-02]"
    cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}
    memory_gb: 128
    gpus: {model: l4-24gb, count: 2, sharing: {mps: 4}}
  - name: l40s-ts
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-l40s-[01-06]"
    cpu: {sockets: 1, cores_per_socket: 64, threads_per_core: 2}
    memory_gb: 512
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
    network: {switch: "leaf-[01-02]"}
    labels: {tier: inference}
    taints: [{key: dedicated, value: inference, effect: NoSchedule}]
  - name: cpu-k8s
    scheduler: kubernetes
    cluster: onprem
    hosts: "k8s-cpu-[01-02]"
  - name: h100-single
    scheduler: kubernetes
    cluster: operator
    hosts: "k8s-h100-[01-02]"
    cpu: {sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    gpus: {model: h100-sxm-80gb, count: 8, mig: ["3g.40gb", "3g.40gb"]}
  - name: eks-l40s
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {min: 0, max: 4}
    gpus: {model: l40s-48gb, count: 4, sharing: {time_slicing: 2}}
    taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  - name: gke-mig
    scheduler: kubernetes
    cluster: gcp
    provider: gke
    instance_type: a3-highgpu-8g
    nodes: {min: 1, max: 2}
    gpus:
      model: h100-sxm-80gb
      count: 8
      mig: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
      sharing: {time_slicing: 2}
    labels: {tier: burst}
kubernetes:
  clusters:
    - name: onprem
      device_plugin: {mig_strategy: mixed}
      queues:
        cohort: onprem
        teams:
          - {team: vision, quota: {a100-sxm-80gb/3g.40gb: 16, l40s-48gb: 8},
             borrowing_limit: 4, lending_limit: 2}
          - {team: nlp, quota: {a100-sxm-80gb/1g.10gb: 32, l4-24gb: 4, l40s-48gb: 16}}
      priority_classes:
        - {name: training, value: 1000, description: Batch training}
        - {name: serving-critical, value: 100000}
      prometheus_operator: true
    - name: operator
      device_plugin: {install: gpu-operator, mig_strategy: single}
      queues:
        cohort: operator
        teams: [{team: ops, quota: {h100-sxm-80gb/3g.40gb: 8}}]
    - name: aws
      provider: eks
      region: us-east-1
      queues:
        cohort: aws
        teams: [{team: nlp, quota: {l40s-48gb: 16}}]
    - name: gcp
      provider: gke
      region: europe-west4
      project: mesa-gpu-prod
      device_plugin: {mig_strategy: single}
      queues:
        cohort: gcp
        teams: [{team: vision, quota: {h100-sxm-80gb/1g.10gb: 112}}]
observability:
  dcgm_exporter: {port: 9500}
  labels: {site: mesa, region: west}
"""

# MESA with one file system of each type, offered on on-prem (onprem), EKS (aws) and GKE (gcp)
# clusters through each provider's CSI driver
STORAGE_ESTATE = (
    MESA
    + """storage:
  - {name: home, type: nfs, source: "nfs01:/export/home", mount: /home,
     kubernetes: {storage_class: home, clusters: [aws, gcp]}}
  - name: fsx
    type: lustre
    source: "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"
    mount: /fsx
    pools: []
    options: [flock]
    kubernetes: {storage_class: fsx, clusters: [aws]}
  - name: lustre
    type: lustre
    source: "10.90.1.4@tcp:/scratch"
    mount: /lustre
    pools: []
    kubernetes: {storage_class: lustre, clusters: [gcp],
                 instance: mesa-gpu-prod/europe-west4-a/scratch}
  - {name: projects, type: beegfs, source: "beegfs://mgmtd01:8008", mount: /projects,
     pools: [a100-mig, l40s-ts], beegfs: {conn_auth: {secret: beegfs_conn_auth}},
     kubernetes: {storage_class: projects}}
  - {name: archive, type: gpfs, source: gpfs0, mount: /gpfs/archive, pools: [l40s-ts],
     kubernetes: {storage_class: archive}}
  - {name: fast, type: weka, source: "weka01,weka02/default", mount: /weka, pools: [l40s-ts],
     options: [net=udp], kubernetes: {storage_class: fast}}
  - name: datasets
    type: s3
    source: s3://mesa-datasets/train
    mount: /datasets
    pools: [l40s-ts]
    options: [allow-delete, uid=1000]
    s3: {region: us-east-1, access_key_id: {secret: s3_key_id},
         secret_access_key: {secret: s3_secret_key}}
    kubernetes: {storage_class: datasets, clusters: [aws]}
"""
)

# (blueprint file under blueprints/ or blueprint text, cluster): every example cluster
ALL_PROJECTS = [
    ("lab.yaml", "lab-k8s"),
    ("campus.yaml", "serving"),
    ("campus.yaml", "burst"),
    (MESA, "onprem"),
    (MESA, "operator"),
    (MESA, "aws"),
    (MESA, "gcp"),
]
IDS = ["lab-k8s", "serving", "burst", "onprem", "operator", "aws", "gcp"]


@cache
def estate_of(source: str) -> Estate:
    """The validated estate of blueprint text, or of a path ending in ``.yaml``."""
    text = Path(source).read_text() if source.endswith(".yaml") else source
    document = load.parse_blueprint(text.encode(), "blueprint.yaml")
    return pipeline.validate_document(document).estate


@cache
def rendered(source: str, folder: Path) -> Path:
    """Render blueprint text (or a path) into ``folder`` once per session."""
    for path, output in render(estate_of(source)).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    return folder


def source_of(blueprint: str) -> str:
    """An entry of ALL_PROJECTS as ``rendered`` takes it: a path, or the blueprint text."""
    return str(BLUEPRINTS / blueprint) if blueprint.endswith(".yaml") else blueprint


def estate_folder(out: Path, blueprint: str) -> Path:
    """Where ``blueprint`` (a file under blueprints/, MESA or other text) is rendered under
    ``out``."""
    if blueprint.endswith(".yaml"):
        label = blueprint
    else:
        label = "mesa" if blueprint == MESA else hashlib.sha256(blueprint.encode()).hexdigest()[:12]
    return rendered(source_of(blueprint), out / label)


def logical_name(obj: Obj) -> str:
    """The name the Pulumi program registers an object under, and the plan writes in URNs:
    ``<kind>-<namespace>-<name>``, the kind lowercased; cluster-scoped objects have no
    namespace part. Stable across renders, so an upgrade updates instead of replacing."""
    parts = [obj["kind"].lower(), obj["metadata"].get("namespace"), obj["metadata"]["name"]]
    return "-".join(p for p in parts if p)


@dataclass(frozen=True)
class Manifests:
    """One cluster's rendered ``kubernetes/<cluster>/``, and the Kubernetes version it targets."""

    folder: Path
    objects: tuple[Obj, ...]
    version: str

    @classmethod
    def read(cls, folder: Path, version: str) -> Manifests:
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        objects = tuple(
            obj
            for name in kustomization["resources"]
            for obj in yaml.safe_load_all((folder / name).read_text())
            if obj
        )
        return cls(folder, objects, version)

    def __iter__(self) -> Iterator[Obj]:
        return iter(self.objects)

    def kinds(self) -> set[str]:
        return {obj["kind"] for obj in self.objects}

    def all(self, kind: str) -> list[Obj]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def one(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        found = [
            obj
            for obj in self.all(kind)
            if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace
        ]
        assert len(found) == 1, (kind, name, namespace, [o["metadata"] for o in self.all(kind)])
        return found[0]

    def nodes(self) -> list[Obj]:
        """The labels each on-prem node registers with: ``nodes.yaml``, which the
        kustomization does not list (nothing applies it)."""
        path = self.folder / "nodes.yaml"
        if not path.is_file():
            return []
        return [obj for obj in yaml.safe_load_all(path.read_text()) if obj]

    def node(self, name: str) -> Obj:
        (found,) = [n for n in self.nodes() if n["metadata"]["name"] == name]
        return found

    def values(self, release: str) -> Obj:
        """The Helm values rendered for ``release`` (``helm/<release>.values.yaml``)."""
        values: Obj = yaml.safe_load((self.folder / "helm" / f"{release}.values.yaml").read_text())
        return values or {}

    def releases(self) -> list[Obj]:
        """The releases the cluster needs, as the Pulumi project's ``cluster.json`` pins them."""
        project = self.folder.parent.parent / "pulumi" / self.folder.name
        releases: list[Obj] = json.loads((project / "cluster.json").read_text())["releases"]
        return releases

    def with_charts(self) -> Manifests:
        """These objects and what each release whose chart is vendored installs, rendered by
        ``helm template`` from the chart at the pinned version with the rendered values."""
        installed = [
            obj
            for release in self.releases()
            if (release["chart"], release["version"]) in helm.CHARTS
            for obj in helm.template_cached(
                release["chart"],
                release["version"],
                release["name"],
                release["namespace"],
                self.values(release["name"]),
            )
        ]
        return Manifests(self.folder, (*self.objects, *installed), self.version)


@cache
def manifests(out: Path, blueprint: str, cluster: str) -> Manifests:
    """``kubernetes/<cluster>/`` of ``blueprint`` rendered under ``out``, read once: callers
    copy an object before changing it."""
    folder = estate_folder(out, blueprint) / "kubernetes" / cluster
    return Manifests.read(folder, estate_of(source_of(blueprint)).versions.kubernetes.text)
