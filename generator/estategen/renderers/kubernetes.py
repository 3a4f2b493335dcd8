"""``kubernetes/<cluster>/``: each cluster's objects as plain manifests, for GitOps or kubectl.

The objects come from :mod:`estategen.kubernetes`, the same ones the Pulumi program registers.
A ``kustomization.yaml`` lists the manifests (``kubectl apply --server-side -k``, Argo CD and
Flux read it); the Helm releases the objects need are written as values files with a README
that names chart, version and namespace, in the order to install them.
"""

from __future__ import annotations

import posixpath
import textwrap
from typing import Any

from estategen.kubernetes import (
    ClusterObjects,
    autoscaler,
    cluster_objects,
    gitops,
    slinky,
    storage,
)
from estategen.kubernetes.gitops import cluster_folder
from estategen.kubernetes.objects import FIELD_MANAGER, ClusterView, HelmRelease, Obj
from estategen.model import Estate, GitOps, KubernetesCluster
from estategen.output import Files, renderer, text
from estategen.yamltext import manifest

HEADER = "# Rendered by estategen from estate {estate}; edit the blueprint, not this file.\n"
EXAMPLES_NOTE = (
    "# Examples, not applied (the kustomization does not list them): copy one, change the\n"
    "# image and command, and submit it to reach your team's queue.\n"
)
NODES_FILE = "nodes.yaml"
NODES_NOTE = (
    "# Not applied (the kustomization does not list it): the labels each node registers with\n"
    "# (kubelet's --node-labels, from Ansible). Labels of running nodes change through the\n"
    "# label-nodes steps of estategen plan; applying a Node would create one for a host not yet\n"
    "# joined, and a GitOps prune would delete the Node of a host taken out of the blueprint.\n"
)


def dump_all(values: list[Any]) -> str:
    return "".join(f"---\n{manifest(value)}" for value in values)


def values_file(release: HelmRelease) -> str:
    return f"helm/{release.name}.values.yaml"


@renderer
def kubernetes_manifests(estate: Estate) -> Files:
    files: Files = {}
    header = HEADER.format(estate=estate.name)
    for cluster in estate.kubernetes_clusters:
        built = cluster_objects(estate, cluster)
        base = cluster_folder(cluster)
        for name, objs in built.files.items():
            files[f"{base}/{name}"] = text(header + dump_all(objs))
        kustomization = _kustomization(list(built.files))
        files[f"{base}/kustomization.yaml"] = text(header + manifest(kustomization))
        for release in built.releases:
            files[f"{base}/{values_file(release)}"] = text(header + manifest(release.values))
        for name, objs in built.examples.items():
            files[f"{base}/{name}"] = text(header + EXAMPLES_NOTE + dump_all(objs))
        if built.nodes:
            files[f"{base}/{NODES_FILE}"] = text(header + NODES_NOTE + dump_all(built.nodes))
        files.update(gitops_files(estate, cluster, built))
        files[f"{base}/README.md"] = text(_readme(estate, cluster, built))
    return files


def _kustomization(resources: list[str]) -> Obj:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }


def _before_secrets(estate: Estate, cluster: KubernetesCluster, built: ClusterObjects) -> list[Obj]:
    """The folder's Namespaces a Flux namespaces stage applies before the SOPS Secrets."""
    if cluster.gitops is None or cluster.gitops.sops is None or cluster.gitops.engine != "flux":
        return []
    secrets = [*release_secrets(built), *slurm_secrets(ClusterView.of(estate, cluster))]
    return gitops.secret_namespaces(
        [namespace for namespace, _, _ in secrets],
        [o for objs in built.files.values() for o in objs if o["kind"] == "Namespace"],
        gitops.release_namespaces(built.releases, built.files.get("namespaces.yaml", [])),
    )


def gitops_files(estate: Estate, cluster: KubernetesCluster, built: ClusterObjects) -> Files:
    """``gitops/<cluster>/``: the engine's objects, which the cluster's kustomization does not
    list: what is applied once, the folder the engine syncs the releases from, and the
    cluster's folder as the engine syncs it."""
    config = cluster.gitops
    if config is None:
        return {}
    header = HEADER.format(estate=estate.name)
    base = gitops.engine_folder(cluster)
    namespaces = gitops.release_namespaces(built.releases, built.files.get("namespaces.yaml", []))
    before_secrets = _before_secrets(estate, cluster, built)
    objs: dict[str, list[Obj]] = {
        "objects/kustomization.yaml": [
            gitops.objects_kustomization(cluster, [*namespaces, *before_secrets])
        ]
    }
    if before_secrets:
        objs["namespaces/namespaces.yaml"] = before_secrets
        objs["namespaces/kustomization.yaml"] = [_kustomization(["namespaces.yaml"])]
    if config.engine == "flux":
        objs["sync.yaml"] = gitops.flux_sync(estate, cluster, config, bool(before_secrets))
        objs["releases/releases.yaml"] = gitops.flux_releases(
            built.releases, built.upstream, namespaces
        )
        objs["releases/kustomization.yaml"] = [_kustomization(["releases.yaml"])]
    else:
        objs["root.yaml"] = [gitops.argocd_root(estate, cluster, config)]
        objs["application-health.yaml"] = [gitops.application_health()]
        objs["applications.yaml"] = gitops.argocd_applications(
            estate, cluster, config, built.releases, built.upstream
        )
        resources = ["applications.yaml"]
        if namespaces:
            objs["namespaces.yaml"] = gitops.argocd_namespaces(namespaces)
            resources.insert(0, "namespaces.yaml")
        objs["kustomization.yaml"] = [_kustomization(resources)]
    return {f"{base}/{name}": text(header + dump_all(values)) for name, values in objs.items()}


def release_secrets(built: ClusterObjects) -> list[tuple[str, str, str]]:
    """(namespace, name, kubectl's value arguments) of each Secret a chart reads: each key's
    value is the environment variable named after the blueprint's secret reference."""
    return [
        (
            release.namespace,
            secret.name,
            " ".join(f'--from-literal={key}="${name.upper()}"' for key, name in secret.keys),
        )
        for release in built.releases
        for secret in release.secrets
    ]


def slurm_secrets(view: ClusterView) -> list[tuple[str, str, str]]:
    """(namespace, name, kubectl's value arguments) of each Secret the hosted Slurm objects
    name: the key files of the estate's Slurm hosts."""
    return [
        (slinky.NAMESPACE, name, f"--from-file={key}=<file holding {secret}>")
        for name, key, secret in slinky.secrets(view)
    ]


def _sops_readme(
    cluster: KubernetesCluster, config: GitOps, secrets: list[tuple[str, str, str]]
) -> list[str]:
    """How the Secrets reach a Flux-synced cluster from Git: written as the steps above would
    create them, encrypted with SOPS into ``gitops.sops.path``, decrypted by Flux."""
    assert config.sops is not None
    here = posixpath.join(config.folder, cluster_folder(cluster))
    folder = posixpath.relpath(config.sops.folder, here)
    key = config.sops.key_secret
    lines = [
        f"Keep the Secrets in the repository's folder `{config.sops.folder}`, encrypted with SOPS:",
        f"Flux applies them first, decrypted with the private key in Secret `{key}` of",
        f"`{gitops.FLUX_NAMESPACE}` (an age key; OpenPGP keys are read as well). Once:",
        "",
        "```sh",
        f"kubectl --namespace {gitops.FLUX_NAMESPACE} create secret generic {key} "
        "--from-file=age.agekey=<age key file>",
        "```",
        "",
    ]
    if secrets:
        lines += [
            "and each Secret, from the same values, encrypted for that key:",
            "",
            "```sh",
        ]
        for namespace, name, values in secrets:
            file = f"{folder}/{namespace}-{name}.yaml"
            lines += [
                f"kubectl create secret generic {name} --namespace {namespace} {values} "
                f"--dry-run=client --output yaml > {file}",
                f"sops --encrypt --age <age public key> --encrypted-regex '^(data|stringData)$' "
                f"--in-place {file}",
            ]
        lines += ["```", ""]
    return lines


def _gitops_readme(estate: Estate, cluster: KubernetesCluster, built: ClusterObjects) -> list[str]:
    """How the blueprint's GitOps engine takes the steps above over, once the render output
    is committed where ``gitops.path`` says."""
    config = cluster.gitops
    if config is None:
        return []
    where = f"`{config.repository}` (branch `{config.branch}`, folder `{config.folder}`)"
    view = ClusterView.of(estate, cluster)
    folder = f"../../{gitops.engine_folder(cluster)}"
    engine, home = (
        ("Flux", gitops.FLUX_NAMESPACE)
        if config.engine == "flux"
        else ("Argo CD", gitops.ARGOCD_NAMESPACE)
    )
    lines = [
        f"## Synced by {engine} from {where}",
        "",
        f"With {engine} installed in namespace `{home}`, commit the render output there.",
        "",
    ]
    secrets = [*release_secrets(built), *slurm_secrets(view)]
    if config.sops is not None:
        lines += _sops_readme(cluster, config, secrets)
    elif secrets:
        lines += [
            "Create the Secrets of the steps above first: they are never in the repository.",
            "",
        ]
    if config.engine == "flux":
        if config.sops is None:
            stages = [
                f"`{folder}/sync.yaml` holds the repository and two Kustomizations: one "
                "applies the",
                "releases and waits until they are ready; the other syncs this folder (less those",
                f"Namespaces: `{folder}/objects/`) and depends on it, so the objects meet their",
                "CRDs. Apply it once:",
            ]
        else:
            first = (
                f"the Namespaces the Secrets go into (`{folder}/namespaces/`); "
                if _before_secrets(estate, cluster, built)
                else ""
            )
            stages = textwrap.wrap(
                f"`{folder}/sync.yaml` holds the repository and a Kustomization per stage, "
                f"each depending on the one before: {first}the Secrets of "
                f"`{config.sops.folder}`, decrypted; the releases, ready before the next "
                f"stage; this folder (less the Namespaces of other stages: "
                f"`{folder}/objects/`), so its objects meet their Secrets and CRDs. "
                "Apply it once:",
                width=86,
            )
        return [
            *lines,
            f"`{folder}/releases/` installs each release above from its chart, with the same",
            "values, release name and namespace (helm-controller takes over a release installed",
            "by hand, it does not install it twice), each after the one before, and the",
            "Namespaces a release installs into without creating it.",
            *stages,
            "",
            "```sh",
            f"kubectl apply --server-side -f {folder}/sync.yaml",
            "```",
            "",
        ]
    return [
        *lines,
        f"`{folder}/applications.yaml` has an Application per release above (its chart,",
        "version, values and release name), one for each operator published as a manifest,",
        "and one for this folder (less the Namespaces a release installs into without",
        f"creating it: `{folder}/objects/`), in sync waves in that order. The parent",
        f"Application `{folder}/root.yaml` syncs those Namespaces first, then them; Argo CD",
        "waits on a wave's Applications only with the health check for Applications that",
        f"`{folder}/application-health.yaml` adds to `argocd-cm`. Once:",
        "",
        "```sh",
        f"kubectl --namespace {gitops.ARGOCD_NAMESPACE} patch configmap argocd-cm --type merge "
        f"--patch-file {folder}/application-health.yaml",
        f"kubectl apply --server-side -f {folder}/root.yaml",
        "```",
        "",
        "Argo CD applies a chart's objects itself (`helm template`): a release installed",
        "before with `helm` keeps its Helm record; delete that record's Secrets",
        "(`sh.helm.release.v1.NAME.*`), never `helm uninstall`, which would delete the",
        "objects Argo CD now keeps.",
        "",
    ]


# what makes each provider's network plugin enforce NetworkPolicies
ENFORCES_NETWORK_POLICY = {
    "on-prem": "Calico or Cilium do, flannel alone does not",
    "gke": "turn on GKE Dataplane V2 or network policy enforcement",
    "eks": 'set `enableNetworkPolicy: "true"` in the Amazon VPC CNI add-on\'s configuration',
    "aks": "choose a network policy engine when creating the cluster (Azure, Calico or Cilium)",
}


def _readme(estate: Estate, cluster: KubernetesCluster, built: ClusterObjects) -> str:
    lines = [
        f"# Cluster {cluster.name} of estate {estate.name}",
        "",
        "Rendered by estategen; edit the blueprint, not these files. The Pulumi project",
        f"`pulumi/{cluster.name}/` applies the same objects and releases; use one or the other.",
        "",
    ]
    step = 1
    if "namespaces.yaml" in built.files:
        # a release without --create-namespace installs into one of them (the GPU Operator's,
        # which needs its Pod Security label before its pods start), Secrets are created there
        names = ", ".join(o["metadata"]["name"] for o in built.files["namespaces.yaml"])
        lines += [
            f"{step}. Create the namespaces first: the releases and Secrets below go into them",
            f"   ({names}):",
            "",
            "   ```sh",
            f"   kubectl apply --server-side --field-manager={FIELD_MANAGER} -f namespaces.yaml",
            "   ```",
            "",
        ]
        step += 1
    secrets = release_secrets(built)
    if secrets:
        lines += [
            f"{step}. Create the Secrets the charts read at start, with the values of the",
            "   blueprint's secret references (the Pulumi project makes them from its secret",
            "   config, `pulumi config set --secret NAME`):",
            "",
            "   ```sh",
        ]
        lines += [
            f"   kubectl create secret generic {name} --namespace {namespace} {values}"
            for namespace, name, values in secrets
        ]
        lines += ["   ```", ""]
        step += 1
    keys = slurm_secrets(ClusterView.of(estate, cluster))
    if built.releases:
        lines += [
            f"{step}. Install the Helm releases, in this order (the objects of step "
            f"{step + 1 + bool(built.upstream) + bool(keys)}",
            "   need their CRDs and controllers):",
            "",
            "   ```sh",
        ]
        for release in built.releases:
            chart = f"{release.name} {release.chart}"
            if release.repository:
                chart += f" --repo {release.repository}"
            create = " --create-namespace" if release.create_namespace else ""
            lines.append(
                f"   helm upgrade --install {chart} --version {release.version} "
                f"--namespace {release.namespace}{create} -f {values_file(release)}"
            )
        lines += ["   ```", ""]
        step += 1
    if built.upstream:
        lines += [
            f"{step}. Apply the operators published as a manifest rather than a chart, at their",
            "   pinned tag:",
            "",
            "   ```sh",
            *(f"   kubectl apply --server-side -f {m.url}" for m in built.upstream),
            "   ```",
            "",
        ]
        step += 1
    if keys:
        # Slurm hosted in Kubernetes: the Secrets the Slinky objects name
        lines += [
            f"{step}. Create the Secrets the Slurm objects name, from the same keys as the",
            "   estate's Slurm hosts (Ansible Vault variables of these names). The slurmd pods",
            "   use the host network (`hostNetwork: true`, `dnsPolicy: ClusterFirstWithHostNet`)",
            "   so the estate's slurmctld reaches them without NAT; they register as Slurm",
            "   nodes named after their Kubernetes node, one per node. Pod Security forbids",
            "   host networking below `privileged`, which namespace "
            f"`{slinky.NAMESPACE}` enforces:",
            "",
            "   ```sh",
            f"   kubectl create namespace {slinky.NAMESPACE}",
            *(
                f"   kubectl --namespace {namespace} create secret generic {name} {values}"
                for namespace, name, values in keys
            ),
            "   ```",
            "",
        ]
        step += 1
    lines += [
        f"{step}. Apply the objects with server-side apply, so estategen owns only the fields",
        "   it sets (never a Node's: kubelet registers their labels and taints):",
        "",
        "   ```sh",
        f"   kubectl apply --server-side --field-manager={FIELD_MANAGER} -k .",
        "   ```",
        "",
    ]
    lines += _gitops_readme(estate, cluster, built)
    if built.nodes:
        lines += [
            f"`{NODES_FILE}` is not applied (the kustomization does not list it): kubelet",
            "registers each node with its labels and taints and owns them from then on. When",
            "the blueprint changes a label or taint of running nodes, run the `kubectl label",
            "nodes` and `kubectl taint nodes` steps `estategen plan` lists",
            "(`kubectl label nodes -l estategen.io/pool=POOL KEY=VALUE --overwrite`, `KEY-` to",
            "drop one).",
            "",
        ]
    if any(o["kind"] == "ResourceFlavor" for o in built.files.get("kueue.yaml", ())):
        lines += [
            "Kueue refuses to change a ResourceFlavor's node labels, tolerations or topology",
            "once it names a topology (its pools have switches), so `estategen plan` replaces",
            "it, and Kueue deletes a flavor only once no ClusterQueue lists it. Take it out",
            f"first: apply each ClusterQueue without it as field manager {FIELD_MANAGER} (the",
            "plan's `kueue-take-out` commands; `resourceGroups` is one atomic list, so a",
            "`kubectl patch` would take it over and the next apply would conflict), then",
            "`kubectl delete resourceflavor NAME` (it returns once Kueue lets the flavor go),",
            "then apply this folder again: it creates the flavor and puts it back into the",
            "ClusterQueues. Admission on the flavor stops meanwhile. With Pulumi the plan runs",
            "`pulumi up --target-replace` and then `pulumi up --refresh`, which sees the",
            "ClusterQueues it must put back only once it reads them again.",
            "",
        ]
    if any(o["kind"] == "NetworkPolicy" for o in built.files.get("tenancy.yaml", ())):
        lines += [
            "Each team namespace's NetworkPolicy `team-ingress` keeps other namespaces' pods",
            "out. It holds only where the cluster's network plugin enforces NetworkPolicies:",
            f"{ENFORCES_NETWORK_POLICY[cluster.provider]}.",
            "",
        ]
    if built.node_pools:
        names = ", ".join(p["name"] for p in built.node_pools)
        lines += [
            f"The managed node pools ({names}) are cloud resources: only the Pulumi project",
            "creates them.",
            "",
        ]
    if storage.uses_gke_lustre(ClusterView.of(estate, cluster)):
        lines += [
            "The Managed Lustre volumes need GKE's Lustre CSI driver, a cluster add-on estategen",
            "does not manage: enable it once with",
            f"`gcloud container clusters update {cluster.name} --location={cluster.region} "
            "--update-addons=LustreCsiDriver=ENABLED`.",
            "",
        ]
    if any(r.name == autoscaler.RELEASE for r in built.releases):
        lines += [
            "The Cluster Autoscaler acts with an IAM role the Pulumi project creates and gives",
            f"its service account {autoscaler.NAMESPACE}/{autoscaler.SERVICE_ACCOUNT} through "
            "EKS Pod Identity,",
            "and reads the tags the project puts on each node group's Auto Scaling group.",
            "",
        ]
    return "\n".join(lines)
