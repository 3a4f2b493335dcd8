"""``kubernetes/<cluster>/`` as Argo CD and Flux sync it: the folder's kustomization, built with
``kubectl kustomize`` as both engines build it, for every cluster of every blueprint in
``blueprints/``.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen.render import render

from k8s_harness import BLUEPRINTS, estate_of

Obj = dict[str, Any]

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml"))
CLUSTERS = [
    (blueprint.name, cluster.name)
    for blueprint in EXAMPLES
    for cluster in estate_of(str(blueprint)).kubernetes_clusters
]


@cache
def _files(blueprint: str) -> dict[str, bytes]:
    return {p: f.content for p, f in render(estate_of(str(BLUEPRINTS / blueprint))).items()}


def built(blueprint: str, cluster: str, folder: Path) -> list[Obj]:
    """What ``kubectl kustomize kubernetes/<cluster>/`` resolves to."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian kubernetes-client) is missing: run scripts/test.sh"
    base = f"kubernetes/{cluster}/"
    for path, content in _files(blueprint).items():
        if path.startswith(base):
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    result = subprocess.run(
        [kubectl, "kustomize", str(folder / base)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [o for o in yaml.safe_load_all(result.stdout) if o]


def test_every_blueprint_has_a_kubernetes_cluster_to_check() -> None:
    assert len(CLUSTERS) >= 5


@pytest.mark.parametrize(("blueprint", "cluster"), CLUSTERS)
def test_no_kustomization_resolves_to_a_node(blueprint: str, cluster: str, tmp_path: Path) -> None:
    """A synced Node is created without status for a host that has not joined yet, and a
    prune deletes the Node of a host the blueprint no longer lists (its pods with it): kubelet
    registers nodes with their labels and taints (kubernetes v1.31
    pkg/kubelet/kubelet_node_status.go, tryRegisterWithAPIServer), the plan's label-nodes and
    taint-nodes steps change them on running nodes."""
    objects = built(blueprint, cluster, tmp_path)
    assert objects
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Node"] == []


KEPT = {"Namespace", "PersistentVolume", "PersistentVolumeClaim"}


@pytest.mark.parametrize(("blueprint", "cluster"), CLUSTERS)
def test_namespaces_volumes_and_claims_are_never_pruned(
    blueprint: str, cluster: str, tmp_path: Path
) -> None:
    """Pruning a namespace deletes the team's workloads in it, and a volume or claim the data
    behind it. Flux's kustomize-controller leaves an object annotated
    ``kustomize.toolkit.fluxcd.io/prune: disabled`` (v1.9.4 docs/spec/v1/kustomizations.md,
    "Prune"); Argo CD one whose ``argocd.argoproj.io/sync-options`` holds ``Prune=false``
    (v3.5.1 docs/user-guide/sync-options.md, "No Prune Resources"). Nothing else carries
    them: the rest of the folder is pruned as usual."""
    objects = built(blueprint, cluster, tmp_path)
    kept = [o for o in objects if o["kind"] in KEPT]
    assert any(o["kind"] == "Namespace" for o in kept)
    for obj in objects:
        annotations = obj["metadata"].get("annotations") or {}
        flux = annotations.get("kustomize.toolkit.fluxcd.io/prune")
        argo = annotations.get("argocd.argoproj.io/sync-options", "")
        if obj["kind"] in KEPT:
            assert flux == "disabled", obj["metadata"]
            assert "Prune=false" in [o.strip() for o in argo.split(",")], obj["metadata"]
        else:
            assert flux is None and "Prune=false" not in argo, obj["metadata"]
