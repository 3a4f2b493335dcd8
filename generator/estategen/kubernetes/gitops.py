"""The GitOps engine's own objects for a cluster: what makes Flux or Argo CD install the Helm
releases from their charts and then sync ``kubernetes/<cluster>/``, in that order.

The charts, versions, namespaces and values are the releases the README's ``helm`` lines
install (:func:`estategen.kubernetes.releases`); only the engine that installs them changes.
Each release keeps its Helm name and namespace, so a release installed by hand before is
taken over, not installed twice.

- **Flux** (helm-controller v1.6.3, source-controller v1.9.1, kustomize-controller v1.9.4):
  each release is a ``HelmRelease`` of a ``HelmRepository`` (https charts) or of an
  ``OCIRepository`` (``oci://`` charts, the form docs/spec/v2/helmreleases.md "Recommended
  settings" gives), each depending on the one before (``spec.dependsOn``, HelmReleases only).
  A Kustomization applies them and waits for them to be ready (``wait: true``); the
  Kustomization of the folder depends on it (``dependsOn`` names Kustomizations only), so
  the folder's ClusterQueues, NodeSets and ServiceMonitors meet their CRDs.
- **Argo CD** (v3.5.1): an Application per release (a Helm source, or an ``oci://`` source
  with path ``.`` as docs/user-guide/oci.md says) and one for the folder, ordered by sync
  waves in a parent Application. Argo CD waits on a child Application's health only with the
  health check docs/operator-manual/health.md ("Argocd App") asks to add to ``argocd-cm``,
  which :func:`application_health` writes as a patch.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Sequence
from typing import Any

from estategen.kubernetes.objects import HelmRelease, Obj, UpstreamManifest, meta
from estategen.model import Estate, GitOps, KubernetesCluster
from estategen.yamltext import manifest

# the render output's folders of the clusters' manifests and of their engines' objects
CLUSTERS_FOLDER = "kubernetes"
ENGINES_FOLDER = "gitops"
FLUX_NAMESPACE = "flux-system"
ARGOCD_NAMESPACE = "argocd"
# the media type of a Helm chart's layer in an OCI artifact (OCIRepository layerSelector)
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
# how often the engine looks at the sources, and how long a release may take to be ready
SOURCE_INTERVAL = "10m"
RELEASE_INTERVAL = "30m"
RELEASE_TIMEOUT = "15m"
# the cluster an Argo CD installed in it reaches itself at
IN_CLUSTER = "https://kubernetes.default.svc"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# argocd-cm's key of a resource kind's health check in Lua (docs/operator-manual/health.md)
APPLICATION_HEALTH_KEY = "resource.customizations.health.argoproj.io_Application"


def sync_name(estate: Estate, cluster: KubernetesCluster) -> str:
    """The name of the engine's objects that sync this cluster's folder."""
    return f"{estate.name}-{cluster.name}"


def repository_path(gitops: GitOps, *parts: str) -> str:
    """A folder of the render output as the engine names it: relative to the repository's
    root."""
    return posixpath.normpath(posixpath.join(gitops.folder, *parts))


def cluster_folder(cluster: KubernetesCluster) -> str:
    """``kubernetes/<cluster>``: the cluster's manifests, which the engine syncs (and the
    renderers write)."""
    return f"{CLUSTERS_FOLDER}/{cluster.name}"


def engine_folder(cluster: KubernetesCluster) -> str:
    """Where the engine's objects are written: beside ``kubernetes/``, as kustomize builds an
    overlay only outside the folder it takes as its base."""
    return f"{ENGINES_FOLDER}/{cluster.name}"


def release_namespaces(releases: Sequence[HelmRelease], namespaces: Sequence[Obj]) -> list[Obj]:
    """The folder's Namespaces a release installs into without creating it (the GPU
    Operator's, whose Pod Security label must be there before its pods): the engine applies
    them with the releases, and the folder's sync leaves them out, so one stage owns each."""
    wanted = {r.namespace for r in releases if not r.create_namespace}
    return [copy.deepcopy(n) for n in namespaces if n["metadata"]["name"] in wanted]


def secret_namespaces(
    secrets: Sequence[str], folder: Sequence[Obj], owned_by_releases: Sequence[Obj]
) -> list[Obj]:
    """The folder's Namespaces the Secrets of a SOPS folder go into (Slurm's, for its key
    Secrets), unless the releases stage applies them: a namespaces stage applies them
    before the Secrets, and the folder's sync leaves them out, so one stage owns each."""
    taken = {n["metadata"]["name"] for n in owned_by_releases}
    wanted = set(secrets) - taken
    return [copy.deepcopy(n) for n in folder if n["metadata"]["name"] in wanted]


def objects_kustomization(cluster: KubernetesCluster, owned_elsewhere: Sequence[Obj]) -> Obj:
    """``gitops/<cluster>/objects/``: the cluster's folder as its kustomization lists it, less
    the Namespaces another stage applies (a strategic-merge ``$patch: delete`` each)."""
    out: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"../../../{cluster_folder(cluster)}"],
    }
    if owned_elsewhere:
        out["patches"] = [
            {
                "patch": manifest(
                    {
                        "$patch": "delete",
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": n["metadata"]["name"]},
                    }
                )
            }
            for n in owned_elsewhere
        ]
    return out


def _oci(release: HelmRelease) -> bool:
    return release.repository is None and release.chart.startswith("oci://")


def _chart_name(release: HelmRelease) -> str:
    return release.chart.rsplit("/", 1)[-1] if _oci(release) else release.chart


# --- Flux ------------------------------------------------------------------------------------


def flux_sources(releases: Sequence[HelmRelease]) -> list[Obj]:
    """One source per release: the Helm repository it comes from, or its OCI artifact at the
    pinned version."""
    out: list[Obj] = []
    for release in releases:
        if _oci(release):
            out.append(
                {
                    "apiVersion": "source.toolkit.fluxcd.io/v1",
                    "kind": "OCIRepository",
                    "metadata": meta(release.name, FLUX_NAMESPACE),
                    "spec": {
                        "interval": SOURCE_INTERVAL,
                        "url": release.chart,
                        "ref": {"tag": release.version},
                        "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
                    },
                }
            )
        else:
            out.append(
                {
                    "apiVersion": "source.toolkit.fluxcd.io/v1",
                    "kind": "HelmRepository",
                    "metadata": meta(release.name, FLUX_NAMESPACE),
                    "spec": {"interval": SOURCE_INTERVAL, "url": release.repository},
                }
            )
    return out


def flux_release(release: HelmRelease, after: HelmRelease | None) -> Obj:
    """A HelmRelease installing the chart as the README's ``helm`` line does: same release
    name, target and storage namespace (so helm-controller takes over a release installed by
    hand), CRDs created and kept current (``crds: CreateReplace``; Helm alone never upgrades a
    chart's CRDs), retried rather than rolled back while a Secret it reads is not there yet."""
    chart: Obj
    if _oci(release):
        chart = {"chartRef": {"kind": "OCIRepository", "name": release.name}}
    else:
        chart = {
            "chart": {
                "spec": {
                    "chart": release.chart,
                    "version": release.version,
                    "sourceRef": {"kind": "HelmRepository", "name": release.name},
                }
            }
        }
    spec: Obj = {
        "interval": RELEASE_INTERVAL,
        "timeout": RELEASE_TIMEOUT,
        "releaseName": release.name,
        "targetNamespace": release.namespace,
        "storageNamespace": release.namespace,
        **chart,
        "install": {
            "createNamespace": release.create_namespace,
            "crds": "CreateReplace",
            "strategy": {"name": "RetryOnFailure"},
        },
        "upgrade": {"crds": "CreateReplace", "strategy": {"name": "RetryOnFailure"}},
        "values": release.values,
    }
    if after is not None:
        spec["dependsOn"] = [{"name": after.name}]
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": meta(release.name, FLUX_NAMESPACE),
        "spec": spec,
    }


def _flux_git_repository(name: str, url: str, ref: Obj, secret: str | None = None) -> Obj:
    spec: Obj = {"interval": SOURCE_INTERVAL, "url": url, "ref": ref}
    if secret:
        spec["secretRef"] = {"name": secret}
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": meta(name, FLUX_NAMESPACE),
        "spec": spec,
    }


def _flux_kustomization(name: str, source: str, path: str, interval: str, **settings: Any) -> Obj:
    """A Kustomization applying ``path`` of a GitRepository, pruning what leaves it; ``./``
    first, as Flux writes its paths."""
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": meta(name, FLUX_NAMESPACE),
        "spec": {
            "interval": interval,
            "sourceRef": {"kind": "GitRepository", "name": source},
            "path": f"./{path}",
            "prune": True,
            **settings,
        },
    }


def flux_upstream(upstream: UpstreamManifest) -> list[Obj]:
    """An operator published as a manifest: its repository at the pinned tag, and a
    Kustomization applying the manifest's folder."""
    name = upstream.name
    return [
        _flux_git_repository(name, upstream.repository, {"tag": upstream.version}),
        _flux_kustomization(
            name, name, upstream.folder, RELEASE_INTERVAL, wait=True, timeout=RELEASE_TIMEOUT
        ),
    ]


def flux_releases(
    releases: Sequence[HelmRelease],
    upstream: Sequence[UpstreamManifest],
    namespaces: Sequence[Obj],
) -> list[Obj]:
    """What ``gitops/<cluster>/releases/`` holds: the Namespaces releases install into,
    sources, then releases in the README's order, then the operators published as a
    manifest."""
    objs = [*namespaces, *flux_sources(releases)]
    objs += [flux_release(r, releases[i - 1] if i else None) for i, r in enumerate(releases)]
    for operator in upstream:
        objs += flux_upstream(operator)
    return objs


def flux_sync(
    estate: Estate, cluster: KubernetesCluster, gitops: GitOps, namespaces_stage: bool = False
) -> list[Obj]:
    """The objects applied once: the repository, a Kustomization that installs the releases and
    waits until they are ready, and the folder's Kustomization, which depends on it. With
    ``sops``, a Kustomization applying the encrypted Secrets comes first (the charts and the
    folder's objects read them at start), after one applying the Namespaces they go into
    when the folder creates those (``namespaces_stage``)."""
    name = sync_name(estate, cluster)
    base = engine_folder(cluster)
    releases = f"{name}-releases"
    objs = [_flux_git_repository(name, gitops.repository, {"branch": gitops.branch}, gitops.secret)]
    after: dict[str, Any] = {}
    if gitops.sops is not None:
        if namespaces_stage:
            namespaces = f"{name}-namespaces"
            objs.append(
                _flux_kustomization(
                    namespaces,
                    name,
                    repository_path(gitops, base, "namespaces"),
                    SOURCE_INTERVAL,
                )
            )
            after = {"dependsOn": [{"name": namespaces}]}
        secrets = f"{name}-secrets"
        objs.append(
            _flux_kustomization(
                secrets,
                name,
                posixpath.normpath(gitops.sops.folder),
                SOURCE_INTERVAL,
                decryption={"provider": "sops", "secretRef": {"name": gitops.sops.key_secret}},
                **after,
            )
        )
        after = {"dependsOn": [{"name": secrets}]}
    return [
        *objs,
        _flux_kustomization(
            releases,
            name,
            repository_path(gitops, base, "releases"),
            SOURCE_INTERVAL,
            wait=True,
            timeout=RELEASE_INTERVAL,
            **after,
        ),
        _flux_kustomization(
            name,
            name,
            repository_path(gitops, base, "objects"),
            SOURCE_INTERVAL,
            dependsOn=[{"name": releases}],
        ),
    ]


# --- Argo CD ---------------------------------------------------------------------------------


def _application(
    name: str, wave: int | None, source: Obj, namespace: str, options: list[str] | None
) -> Obj:
    """An Application synced automatically, in its wave of the parent's sync (None: the
    parent itself), with its sync options (None: Argo CD's own)."""
    metadata: Obj = {"name": name, "namespace": ARGOCD_NAMESPACE}
    if wave is not None:
        metadata["annotations"] = {SYNC_WAVE: str(wave)}
    policy: Obj = {"automated": {"prune": True, "selfHeal": True}}
    if options is not None:
        policy["syncOptions"] = options
    # a release whose Secret the site has not created yet is tried again
    policy["retry"] = {
        "limit": 10,
        "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"},
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": metadata,
        "spec": {
            "project": "default",
            "source": source,
            "destination": {"server": IN_CLUSTER, "namespace": namespace},
            "syncPolicy": policy,
        },
    }


def argocd_release(prefix: str, release: HelmRelease, wave: int) -> Obj:
    """An Application installing one chart at its pinned version with the rendered values."""
    source: Obj
    helm: Obj = {"releaseName": release.name, "valuesObject": release.values}
    if _oci(release):
        source = {"repoURL": release.chart, "path": ".", "targetRevision": release.version}
    else:
        source = {
            "repoURL": release.repository,
            "chart": release.chart,
            "targetRevision": release.version,
        }
    source["helm"] = helm
    options = ["ServerSideApply=true"]
    if release.create_namespace:
        options.insert(0, "CreateNamespace=true")
    return _application(f"{prefix}-{release.name}", wave, source, release.namespace, options)


def argocd_upstream(prefix: str, upstream: UpstreamManifest, wave: int) -> Obj:
    source = {
        "repoURL": upstream.repository,
        "path": upstream.folder,
        "targetRevision": upstream.version,
    }
    return _application(
        f"{prefix}-{upstream.name}", wave, source, "default", ["ServerSideApply=true"]
    )


def argocd_applications(
    estate: Estate,
    cluster: KubernetesCluster,
    gitops: GitOps,
    releases: Sequence[HelmRelease],
    upstream: Sequence[UpstreamManifest],
) -> list[Obj]:
    """One Application per release, each in a wave of its own in the README's order, then the
    manifests' operators, then the folder, last."""
    prefix = sync_name(estate, cluster)
    apps = [argocd_release(prefix, r, i) for i, r in enumerate(releases)]
    wave = len(releases)
    apps += [argocd_upstream(prefix, m, wave) for m in upstream]
    folder: Obj = {
        "repoURL": gitops.repository,
        "path": repository_path(gitops, engine_folder(cluster), "objects"),
        "targetRevision": gitops.branch,
    }
    apps.append(
        _application(
            f"{prefix}-objects", wave + bool(upstream), folder, "default", ["ServerSideApply=true"]
        )
    )
    return apps


def argocd_namespaces(namespaces: Sequence[Obj]) -> list[Obj]:
    """The Namespaces releases install into, synced by the parent before every wave."""
    out = [copy.deepcopy(n) for n in namespaces]
    for namespace in out:
        namespace["metadata"].setdefault("annotations", {})[SYNC_WAVE] = "-1"
    return out


def argocd_root(estate: Estate, cluster: KubernetesCluster, gitops: GitOps) -> Obj:
    """The parent Application, applied once: it syncs ``gitops/<cluster>/`` (the Namespaces
    releases install into, then the Applications above)."""
    source: Obj = {
        "repoURL": gitops.repository,
        "path": repository_path(gitops, engine_folder(cluster)),
        "targetRevision": gitops.branch,
    }
    return _application(sync_name(estate, cluster), None, source, ARGOCD_NAMESPACE, None)


# Argo CD's health of an Application as its status says, so a parent's sync waits for a wave's
# children to be Healthy before the next (Argo CD removed this built-in check in 1.8)
APPLICATION_HEALTH_LUA = """\
local health = {status = "Progressing", message = ""}
if obj.status ~= nil and obj.status.health ~= nil then
  health.status = obj.status.health.status
  health.message = obj.status.health.message or ""
end
return health
"""


def application_health() -> Obj:
    """A merge patch for ``argocd-cm`` adding the health check above, and nothing else of
    ours (Argo CD's installation owns the ConfigMap and its labels)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": ARGOCD_NAMESPACE},
        "data": {APPLICATION_HEALTH_KEY: APPLICATION_HEALTH_LUA},
    }
