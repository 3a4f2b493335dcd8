"""``kubernetes/<cluster>/`` as Argo CD and Flux sync it: the folder's kustomization, built with
``kubectl kustomize`` as both engines build it, for every cluster of every blueprint in
``blueprints/``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa.lua51 import LuaRuntime

from estategen import load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.kubernetes.gitops import APPLICATION_HEALTH_KEY, APPLICATION_HEALTH_LUA
from estategen.render import render

from crd import UPSTREAM, crd_set
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


# --- the GitOps engine's own objects (kubernetes.clusters[].gitops) ---------------------------

FLUX = [
    UPSTREAM / "helm-controller-v1.6.3",
    UPSTREAM / "source-controller-v1.9.1",
    UPSTREAM / "kustomize-controller-v1.9.4",
]
ARGOCD = [UPSTREAM / "argo-cd-v3.5.1"]
ENGINE_CLUSTERS = [
    (blueprint.name, cluster.name, cluster.gitops.engine)
    for blueprint in EXAMPLES
    for cluster in estate_of(str(blueprint)).kubernetes_clusters
    if cluster.gitops is not None
]


def kustomize(folder: Path) -> list[Obj]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian kubernetes-client) is missing: run scripts/test.sh"
    result = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [o for o in yaml.safe_load_all(result.stdout) if o]


def written(blueprint: str, folder: Path) -> Path:
    """The whole render of an example, written under ``folder``."""
    for path, content in _files(blueprint).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder


def documents(path: Path) -> list[Obj]:
    return [o for o in yaml.safe_load_all(path.read_text()) if o]


def key(obj: Obj) -> tuple[str, str | None, str]:
    return (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])


def crd_of(obj: Obj, folders: list[Path]) -> Any:
    for folder in folders:
        for crd in crd_set(folder).crds:
            if (crd.group, crd.kind) == (obj["apiVersion"].split("/")[0], obj["kind"]):
                return crd
    raise AssertionError(f"no pinned CRD for {obj['kind']} {obj['apiVersion']}")


def readme_releases(root: Path, cluster: str) -> list[tuple[str, str, str]]:
    """(release, version, namespace) of each ``helm upgrade --install`` line of the cluster's
    README, in its order: what the engine must install instead."""
    lines = (root / f"kubernetes/{cluster}/README.md").read_text().splitlines()
    found = []
    for line in lines:
        words = line.split()
        if words[:3] == ["helm", "upgrade", "--install"]:
            found.append(
                (
                    words[3],
                    words[words.index("--version") + 1],
                    words[words.index("--namespace") + 1],
                )
            )
    return found


def test_the_examples_name_both_engines() -> None:
    assert {engine for _, _, engine in ENGINE_CLUSTERS} == {"flux", "argocd"}


@pytest.mark.parametrize(("blueprint", "cluster", "engine"), ENGINE_CLUSTERS)
def test_each_engine_object_is_valid_against_its_pinned_crd(
    blueprint: str, cluster: str, engine: str, tmp_path: Path
) -> None:
    root = written(blueprint, tmp_path)
    folders = FLUX if engine == "flux" else ARGOCD
    checked = 0
    for path in sorted((root / f"gitops/{cluster}").rglob("*.yaml")):
        for obj in documents(path):
            if obj["apiVersion"].startswith(("kustomize.config.k8s.io", "v1")):
                continue
            assert crd_of(obj, folders).validate(obj) == [], (path.name, key(obj))
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize(("blueprint", "cluster", "engine"), ENGINE_CLUSTERS)
def test_the_engine_syncs_every_object_of_the_folder_once(
    blueprint: str, cluster: str, engine: str, tmp_path: Path
) -> None:
    """The cluster's folder is synced through ``gitops/<cluster>/objects/`` less the
    Namespaces a release installs into without creating them (the GPU Operator's, which must
    carry its Pod Security label before the operator's pods start): those the releases stage
    applies. Each object has one owner: two Flux Kustomizations or two Argo CD Applications
    applying the same object would each take it back from the other."""
    root = written(blueprint, tmp_path)
    folder = {key(o): o for o in kustomize(root / f"kubernetes/{cluster}")}
    synced = {key(o): o for o in kustomize(root / f"gitops/{cluster}/objects")}
    if engine == "flux":
        stage = kustomize(root / f"gitops/{cluster}/releases")
    else:
        stage = kustomize(root / f"gitops/{cluster}")
    early = {key(o): o for o in stage if o["kind"] == "Namespace"}
    assert synced.keys().isdisjoint(early)
    assert synced.keys() | early.keys() == folder.keys()
    for name, obj in early.items():
        annotations = dict(obj["metadata"].get("annotations") or {})
        annotations.pop("argocd.argoproj.io/sync-wave", None)
        assert {**obj["metadata"], "annotations": annotations} == folder[name]["metadata"]
    release_namespaces = {n for _, _, n in readme_releases(root, cluster)}
    assert {name for _, _, name in early} <= release_namespaces


@pytest.mark.parametrize(
    ("blueprint", "cluster"), [(b, c) for b, c, e in ENGINE_CLUSTERS if e == "flux"]
)
def test_flux_installs_the_readme_releases_in_order_then_syncs_the_folder(
    blueprint: str, cluster: str, tmp_path: Path
) -> None:
    """helm-controller v1.6.3 docs/spec/v2/helmreleases.md: ``dependsOn`` holds a HelmRelease
    until the ones it names are Ready; ``releaseName`` and ``storageNamespace`` find the
    release the README's ``helm`` line installed, which helm-controller then upgrades rather
    than installing again (internal/reconcile/atomic_release.go, ReleaseStatusUnmanaged).
    kustomize-controller v1.9.4 docs/spec/v1/kustomizations.md: a Kustomization with ``wait``
    is Ready only once what it applied is, and ``dependsOn`` names Kustomizations only, so the
    folder's Kustomization depends on the one applying the releases."""
    root = written(blueprint, tmp_path)
    estate = estate_of(str(BLUEPRINTS / blueprint))
    gitops = next(c for c in estate.kubernetes_clusters if c.name == cluster).gitops
    assert gitops is not None
    assert kustomize(root / f"gitops/{cluster}/releases")
    # in the file's order (kustomize sorts by kind and name; dependsOn holds the order)
    objs = documents(root / f"gitops/{cluster}/releases/releases.yaml")
    releases = [o for o in objs if o["kind"] == "HelmRelease"]
    expected = readme_releases(root, cluster)
    assert expected
    assert [(r["spec"]["releaseName"], r["spec"]["targetNamespace"]) for r in releases] == [
        (name, namespace) for name, _, namespace in expected
    ]
    sources = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    for release, (name, version, namespace) in zip(releases, expected, strict=True):
        spec = release["spec"]
        assert spec["storageNamespace"] == namespace
        if "chartRef" in spec:
            source = sources[(spec["chartRef"]["kind"], spec["chartRef"]["name"])]
            assert source["spec"]["ref"] == {"tag": version}
            assert source["spec"]["url"].startswith("oci://")
        else:
            chart = spec["chart"]["spec"]
            assert chart["version"] == version
            assert ("HelmRepository", chart["sourceRef"]["name"]) in sources
        values = yaml.safe_load(
            (root / f"kubernetes/{cluster}/helm/{name}.values.yaml").read_text()
        )
        assert spec["values"] == (values or {})
    assert [r["spec"].get("dependsOn") for r in releases] == [None] + [
        [{"name": r["metadata"]["name"]}] for r in releases[:-1]
    ]
    sync = {
        (o["kind"], o["metadata"]["name"]): o
        for o in documents(root / f"gitops/{cluster}/sync.yaml")
    }
    name = f"{estate.name}-{cluster}"
    repository = sync[("GitRepository", name)]
    assert repository["spec"]["url"] == gitops.repository
    assert repository["spec"]["ref"] == {"branch": gitops.branch}
    assert repository["spec"].get("secretRef") == (
        {"name": gitops.secret} if gitops.secret else None
    )
    first, folder = sync[("Kustomization", f"{name}-releases")], sync[("Kustomization", name)]
    assert first["spec"]["wait"] is True and "dependsOn" not in first["spec"]
    assert folder["spec"]["dependsOn"] == [{"name": first["metadata"]["name"]}]
    # the paths are the render's folders where the blueprint says the repository holds it
    for stage, expected_folder in ((first, "releases"), (folder, "objects")):
        path = stage["spec"]["path"]
        assert path == f"./{gitops.folder}/gitops/{cluster}/{expected_folder}"
        assert (root / path.removeprefix(f"./{gitops.folder}/") / "kustomization.yaml").is_file()


@pytest.mark.parametrize(
    ("blueprint", "cluster"), [(b, c) for b, c, e in ENGINE_CLUSTERS if e == "argocd"]
)
def test_argo_cd_installs_the_readme_releases_wave_by_wave_then_syncs_the_folder(
    blueprint: str, cluster: str, tmp_path: Path
) -> None:
    """Argo CD v3.5.1 docs/user-guide/sync-waves.md: a parent's sync applies its resources
    wave by wave, lowest first, and goes on only once a wave is healthy; Namespaces come in
    wave -1. docs/user-guide/helm.md and oci.md: a Helm source names repoURL, chart and
    targetRevision, an OCI chart is ``oci://`` with path ``.``; helm.valuesObject and
    helm.releaseName carry the values and the release's name."""
    root = written(blueprint, tmp_path)
    estate = estate_of(str(BLUEPRINTS / blueprint))
    gitops = next(c for c in estate.kubernetes_clusters if c.name == cluster).gitops
    assert gitops is not None
    assert kustomize(root / f"gitops/{cluster}")
    # in the files' order (kustomize sorts by kind and name; the waves hold the order)
    namespaces = root / f"gitops/{cluster}/namespaces.yaml"
    children = documents(namespaces) if namespaces.is_file() else []
    children += documents(root / f"gitops/{cluster}/applications.yaml")
    wave = {
        key(o): int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for o in children
    }
    apps = [o for o in children if o["kind"] == "Application"]
    expected = readme_releases(root, cluster)
    releases = apps[: len(expected)]
    for app, (name, version, namespace) in zip(releases, expected, strict=True):
        source = app["spec"]["source"]
        assert source["targetRevision"] == version
        assert source["helm"]["releaseName"] == name
        assert app["spec"]["destination"]["namespace"] == namespace
        values = yaml.safe_load(
            (root / f"kubernetes/{cluster}/helm/{name}.values.yaml").read_text()
        )
        assert source["helm"]["valuesObject"] == (values or {})
        assert source.get("chart") or (
            source["repoURL"].startswith("oci://") and source["path"] == "."
        )
    order = [wave[key(a)] for a in apps]
    assert order == sorted(order) and len(set(order[: len(expected)])) == len(expected)
    folder = apps[-1]
    assert wave[key(folder)] > max(order[:-1])
    assert folder["spec"]["source"] == {
        "repoURL": gitops.repository,
        "path": f"{gitops.folder}/gitops/{cluster}/objects",
        "targetRevision": gitops.branch,
    }
    assert all(wave[key(o)] < min(order) for o in children if o["kind"] == "Namespace")
    root_app = documents(root / f"gitops/{cluster}/root.yaml")[0]
    assert root_app["spec"]["source"]["path"] == f"{gitops.folder}/gitops/{cluster}"
    assert crd_of(root_app, ARGOCD).validate(root_app) == []


def _health(status: Obj | None) -> tuple[str, str]:
    lua = LuaRuntime(unpack_returned_tuples=True)
    check = lua.eval(f"function(obj)\n{APPLICATION_HEALTH_LUA}\nend")
    obj: Obj = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"}
    if status is not None:
        obj["status"] = status
    result = check(lua.table_from(obj, recursive=True))
    return result["status"], result["message"]


def test_the_application_health_check_reports_a_child_application_as_its_status_says() -> None:
    """Argo CD v3.5.1 docs/operator-manual/health.md ("Argocd App"): without a health check
    for Applications, a parent's wave does not wait for its child Applications to be Healthy.
    The check is Lua run by gopher-lua (Lua 5.1), here by a Lua 5.1 runtime."""
    assert _health(None) == ("Progressing", "")
    assert _health({"health": {"status": "Healthy"}}) == ("Healthy", "")
    assert _health({"health": {"status": "Degraded", "message": "Back-off pulling"}}) == (
        "Degraded",
        "Back-off pulling",
    )


@pytest.mark.parametrize(
    ("blueprint", "cluster"), [(b, c) for b, c, e in ENGINE_CLUSTERS if e == "argocd"]
)
def test_the_argocd_cm_patch_adds_that_health_check(blueprint: str, cluster: str) -> None:
    patch = documents_of(_files(blueprint)[f"gitops/{cluster}/application-health.yaml"])
    assert [(p["kind"], p["metadata"]["namespace"], p["metadata"]["name"]) for p in patch] == [
        ("ConfigMap", "argocd", "argocd-cm")
    ]
    assert patch[0]["data"] == {APPLICATION_HEALTH_KEY: APPLICATION_HEALTH_LUA}


def documents_of(content: bytes) -> list[Obj]:
    return [o for o in yaml.safe_load_all(content) if o]


# --- the blueprint key -----------------------------------------------------------------------

LAB = (BLUEPRINTS / "lab.yaml").read_text()


def lab_with(gitops: str) -> str:
    """lab.yaml with ``gitops`` set on its cluster."""
    marker = "    - name: lab-k8s\n"
    assert marker in LAB
    return LAB.replace(marker, f"{marker}      gitops: {gitops}\n", 1)


def outcome(text: str) -> tuple[Any, list[tuple[str, str]]]:
    document = load.parse_blueprint(text.encode(), "lab.yaml")
    validated = pipeline.validate_document(document)
    errors = [(f.path, f.message) for f in validated.findings if f.level == "error"]
    return validated.estate, errors


def test_the_repository_folder_defaults_to_where_render_writes_the_estate() -> None:
    estate, errors = outcome(lab_with("{engine: flux, repository: 'https://git.example.org/p/e'}"))
    assert errors == []
    gitops = estate.kubernetes_clusters[0].gitops
    assert (gitops.engine, gitops.branch, gitops.folder) == ("flux", "main", "build/lab")
    files = render(estate)
    assert "gitops/lab-k8s/sync.yaml" in files
    assert not any(p.startswith("gitops/") for p in render(estate_of(str(BLUEPRINTS / "lab.yaml"))))


@pytest.mark.parametrize(
    ("gitops", "path", "words"),
    [
        (
            "{engine: flux, repository: 'git@git.example.org:p/e'}",
            "kubernetes.clusters[0].gitops.repository",
            "https or ssh URL",
        ),
        (
            "{engine: flux, repository: 'https://git.example.org/p/e', path: ../elsewhere}",
            "kubernetes.clusters[0].gitops.path",
            "folder in the repository",
        ),
        (
            "{engine: flux, repository: 'https://git.example.org/p/e', branch: 'a..b'}",
            "kubernetes.clusters[0].gitops.branch",
            "branch name",
        ),
        (
            "{engine: fleet, repository: 'https://git.example.org/p/e'}",
            "kubernetes.clusters[0].gitops.engine",
            "flux",
        ),
    ],
)
def test_a_repository_the_engine_cannot_read_is_refused_at_its_key(
    gitops: str, path: str, words: str
) -> None:
    with pytest.raises(BlueprintInvalid) as refused:
        outcome(lab_with(gitops))
    found = [(f.path, f.message) for f in refused.value.findings if f.level == "error"]
    assert [p for p, _ in found] == [path], found
    assert words in found[0][1]


# --- Secrets kept in Git, encrypted with SOPS (gitops.sops) ----------------------------------

FRONTIER = (BLUEPRINTS / "frontier.yaml").read_text()
GCP_GITOPS = """\
      gitops: {engine: argocd, repository: "https://git.frontier.example/platform/estate.git",
               branch: production, path: rendered/frontier}
"""
GCP_SOPS = """\
      gitops: {engine: flux, repository: "https://git.frontier.example/platform/estate.git",
               path: rendered/frontier, sops: {path: secrets/gcp, secret: sops-age}}
"""


@cache
def gcp_with_sops() -> dict[str, bytes]:
    """frontier's gcp cluster (hosted Slurm: its objects name the Slurm key Secrets) synced
    by Flux with its Secrets kept encrypted in secrets/gcp."""
    assert FRONTIER.count(GCP_GITOPS) == 1
    estate, errors = outcome(FRONTIER.replace(GCP_GITOPS, GCP_SOPS))
    assert errors == []
    return {p: f.content for p, f in render(estate).items()}


def test_flux_applies_the_encrypted_secrets_before_the_releases_and_objects_that_read_them(
    tmp_path: Path,
) -> None:
    """kustomize-controller v1.9.4 docs/spec/v1/kustomizations.md, "Decryption": a
    Kustomization with ``decryption.provider: sops`` decrypts the SOPS-encrypted Secrets it
    applies with the keys of the Secret ``decryption.secretRef`` names, in its own namespace;
    ``dependsOn`` holds a Kustomization until those it names are Ready. The Secrets come
    first: the charts and the hosted Slurm pods read them when they start. A Secret is
    created only in a namespace that exists, so Slurm's namespace (the folder creates it)
    comes in a stage before them, and the folder's sync leaves it out: one stage owns it."""
    files = gcp_with_sops()
    sync = documents_of(files["gitops/gcp/sync.yaml"])
    kustomizations = {o["metadata"]["name"]: o for o in sync if o["kind"] == "Kustomization"}
    assert list(kustomizations) == [
        "frontier-gcp-namespaces",
        "frontier-gcp-secrets",
        "frontier-gcp-releases",
        "frontier-gcp",
    ]
    first = kustomizations["frontier-gcp-namespaces"]["spec"]
    assert first["path"] == "./rendered/frontier/gitops/gcp/namespaces"
    assert "dependsOn" not in first
    secrets = kustomizations["frontier-gcp-secrets"]["spec"]
    assert secrets["path"] == "./secrets/gcp"
    assert secrets["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    assert secrets["dependsOn"] == [{"name": "frontier-gcp-namespaces"}]
    assert kustomizations["frontier-gcp-releases"]["spec"]["dependsOn"] == [
        {"name": "frontier-gcp-secrets"}
    ]
    assert kustomizations["frontier-gcp"]["spec"]["dependsOn"] == [
        {"name": "frontier-gcp-releases"}
    ]
    for obj in sync:
        assert crd_of(obj, FLUX).validate(obj) == [], key(obj)
    for path, content in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    stage = kustomize(tmp_path / "gitops/gcp/namespaces")
    assert [key(o) for o in stage] == [("Namespace", None, "slurm")]
    synced = kustomize(tmp_path / "gitops/gcp/objects")
    assert ("Namespace", None, "slurm") not in [key(o) for o in synced]
    assert ("Namespace", None, "slurm") in [key(o) for o in kustomize(tmp_path / "kubernetes/gcp")]


def test_the_readme_writes_each_secret_the_folder_names_into_the_encrypted_folder(
    tmp_path: Path,
) -> None:
    """The README's commands for the SOPS folder, run as written (``kubectl create secret
    --dry-run=client``, the real Debian kubectl, with the blueprint's secret values in
    files): each writes the Secret the cluster's objects name, in its namespace with its
    keys, into ``gitops.sops.path`` as the README's folder reaches it."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian kubernetes-client) is missing: run scripts/test.sh"
    files = gcp_with_sops()
    readme = files["kubernetes/gcp/README.md"].decode()
    by_hand = [
        line.split()
        for line in readme.splitlines()
        # the numbered steps' code is indented under them
        if line.startswith("   ") and "create secret generic" in line
    ]
    # the Secrets the by-hand steps create: (namespace, name)
    wanted = {
        (words[words.index("--namespace") + 1], words[words.index("generic") + 1])
        for words in by_hand
    }
    assert ("slurm", "slurm-auth-jwt") in wanted
    sops_lines = [line for line in readme.splitlines() if "--dry-run=client" in line]
    assert len(sops_lines) == len(wanted)
    assert sum(line.startswith("sops --encrypt ") for line in readme.splitlines()) == len(wanted)
    here = tmp_path / "rendered/frontier/kubernetes/gcp"
    here.mkdir(parents=True)
    (tmp_path / "secrets/gcp").mkdir(parents=True)
    key_file = tmp_path / "key"
    key_file.write_text("secret value\n")
    written_secrets = set()
    for line in sops_lines:
        command = re.sub(r"<file holding [^>]+>", str(key_file), line)
        subprocess.run(
            command.replace("kubectl ", f"{kubectl} ", 1),
            shell=True,
            cwd=here,
            check=True,
            timeout=60,
        )
        target = (here / command.split("> ")[-1]).resolve()
        assert target.parent == (tmp_path / "secrets/gcp").resolve()
        secret = yaml.safe_load(target.read_text())
        assert secret["kind"] == "Secret"
        assert secret["data"]
        written_secrets.add((secret["metadata"]["namespace"], secret["metadata"]["name"]))
    assert written_secrets == wanted
    # the objects name exactly these Secrets of their namespace
    named = {
        ("slurm", ref["name"])
        for obj in documents_of(files["kubernetes/gcp/slurm.yaml"])
        for ref in _secret_refs(obj)
    }
    assert named == {w for w in wanted if w[0] == "slurm"}


def _secret_refs(value: Any) -> list[Obj]:
    """Every ``secretKeyRef``/``secretRef`` (and Slinky's ``*KeyRef``) mapping in ``value``."""
    found: list[Obj] = []
    if isinstance(value, dict):
        for name, item in value.items():
            if name.endswith(("KeyRef", "secretRef")) and isinstance(item, dict):
                found.append(item)
            else:
                found += _secret_refs(item)
    elif isinstance(value, list):
        for item in value:
            found += _secret_refs(item)
    return found


def test_without_sops_a_flux_cluster_has_no_secrets_kustomization() -> None:
    sync = documents_of(_files("frontier.yaml")["gitops/train/sync.yaml"])
    assert [o["metadata"]["name"] for o in sync if o["kind"] == "Kustomization"] == [
        "frontier-train-releases",
        "frontier-train",
    ]
