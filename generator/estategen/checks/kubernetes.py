"""Kubernetes clusters by provider and what runs in them: AKS settings and agent pools, the
EKS Cluster Autoscaler's tags, queue engines and training frameworks.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from estategen.checks.core import check
from estategen.errors import Finding, issue
from estategen.kubernetes import autoscaler, volcano
from estategen.kubernetes.gitops import CLUSTERS_FOLDER, ENGINES_FOLDER
from estategen.kubernetes.objects import ClusterView
from estategen.kubernetes_facts import (
    AKS_POOL_NAME,
    aks_gpu_instance_profile,
    aks_mig_profiles,
    kubelet_may_set,
    quota_capacity,
)
from estategen.model import Estate
from estategen.slurm_names import kubernetes_name

# --- AKS -------------------------------------------------------------------------------------


@check
def aks_cluster_settings(estate: Estate) -> Iterator[Finding]:
    """An AKS cluster is found by resource group and name; Azure names regions in one word."""
    for cluster in estate.kubernetes_clusters:
        if cluster.provider == "aks" and cluster.resource_group is None:
            yield issue(
                cluster.path,
                "an aks cluster needs `resource_group`: the Azure resource group that holds "
                f"the AKS cluster {cluster.name!r}",
            )
        if cluster.provider != "aks" and cluster.resource_group is not None:
            yield issue(
                f"{cluster.path}.resource_group",
                "`resource_group` is the Azure resource group of an aks cluster; "
                f"this cluster is {cluster.provider}: remove it",
            )
        region = cluster.region
        if region is None or cluster.provider == "on-prem":
            continue
        if cluster.provider == "aks" and "-" in region:
            yield issue(
                f"{cluster.path}.region",
                f"{region!r} is not an Azure region; Azure names regions in one word, "
                "like westeurope or eastus2",
            )
        elif cluster.provider != "aks" and "-" not in region:
            example = "us-central1" if cluster.provider == "gke" else "eu-west-1"
            yield issue(
                f"{cluster.path}.region",
                f"{region!r} is not a {cluster.provider} region; it names regions like {example}",
            )


@check
def aks_pools_buildable(estate: Estate) -> Iterator[Finding]:
    """What an AKS agent pool accepts: its name, its labels, and MIG as one instance profile."""
    for pool in estate.node_pools:
        if pool.provider != "aks" or pool.scheduler != "kubernetes":
            continue
        if not re.fullmatch(AKS_POOL_NAME, pool.name):
            yield issue(
                f"{pool.path}.name",
                f"{pool.name!r} cannot name an AKS agent pool: a lowercase letter, then "
                "lowercase letters and digits, at most 12 (no '-')",
            )
        refused = [key for key in pool.labels if not kubelet_may_set(key)]
        refused += [key for key in pool.labels if key.split("/")[0] == "kubernetes.azure.com"]
        if refused:
            yield issue(
                f"{pool.path}.labels",
                f"AKS nodes cannot carry {', '.join(sorted(set(refused)))}: kubelet may not set "
                "labels of the kubernetes.io and k8s.io namespaces and AKS reserves "
                "kubernetes.azure.com; use a label of your own domain, such as example.com/role",
            )
        gpus = pool.gpus
        if not (gpus and gpus.mig and gpus.model in estate.gpu_models):
            continue
        model = estate.gpu_models[gpus.model]
        if not all(p in model.mig for p in gpus.mig):
            continue  # mig_layout_fits names the profiles of the model
        if aks_gpu_instance_profile(estate, pool) is None:
            offered = ", ".join(
                f"{model.mig[p].max} x {p} ({aks})"
                for p, aks in aks_mig_profiles(estate, model.name).items()
            )
            yield issue(
                f"{pool.path}.gpus.mig",
                "AKS partitions every GPU of a pool into as many instances of one size as fit "
                f"(gpuInstanceProfile); for {model.name} that is one of: {offered}",
            )


# --- EKS Cluster Autoscaler -----------------------------------------------------------------

# An AWS tag key holds at most 128 characters, a value 256 (Auto Scaling CreateOrUpdateTags).
AWS_TAG_KEY_MAX = 128


AWS_TAG_VALUE_MAX = 256


@check
def eks_autoscaler_tags_fit(estate: Estate) -> Iterator[Finding]:
    """The autoscaler learns a growing group's labels and taints from Auto Scaling group tags
    named after them; a label or taint key too long for a tag key could not be tagged."""
    for cluster in estate.kubernetes_clusters:
        view = ClusterView.of(estate, cluster)
        for pool in autoscaler.scaled_pools(view):
            if pool.gpus and pool.gpus.model not in estate.gpu_models:
                continue  # an unknown model: gpu_models_resolve's finding
            tags = autoscaler.node_template_tags(view, pool)
            for key, value in tags.items():
                if len(key) <= AWS_TAG_KEY_MAX and len(value) <= AWS_TAG_VALUE_MAX:
                    continue
                field = "taints" if "/node-template/taint/" in key else "labels"
                name = key.split("/node-template/", 1)[1].split("/", 1)[1]
                yield issue(
                    f"{pool.path}.{field}",
                    f"{name!r} is too long for the Cluster Autoscaler's node-template tag "
                    f"({len(key)} characters of at most {AWS_TAG_KEY_MAX} in the key, "
                    f"{len(value)} of {AWS_TAG_VALUE_MAX} in the value), which lets this "
                    "node group grow from zero; use a shorter key",
                )


# --- queue engines and training frameworks --------------------------------------------------------

# Volcano's Queue CRD (v1.15.1, scheduling.volcano.sh_queues.yaml) bounds spec.weight
VOLCANO_MAX_WEIGHT = 65535


# queues Volcano creates itself (pkg/webhooks/admission/queues/validate/validate_queue.go)
VOLCANO_OWN_QUEUES = ("default", "root")


@check
def queue_engine_keys(estate: Estate) -> Iterator[Finding]:
    """Each engine takes the keys it gives an effect to: Kueue a cohort and a pods-ready
    timeout, Volcano neither, and a Volcano queue only quota it can keep to its GPU models."""
    teams = estate.teams_by_name
    for cluster in estate.kubernetes_clusters:
        queues = cluster.queues
        if queues is None:
            continue
        if not queues.volcano:
            if not queues.cohort_declared:
                yield issue(
                    queues.path,
                    "'cohort' is required with engine kueue: the teams' ClusterQueues borrow "
                    "idle quota within it",
                )
            continue
        view = ClusterView.of(estate, cluster)
        models = quota_capacity(estate, cluster.name)
        known = all(p.gpus is None or p.gpus.model in estate.gpu_models for p in view.pools)
        if queues.cohort_declared:
            yield issue(
                f"{queues.path}.cohort",
                "Volcano has no cohorts: its proportion plugin divides the whole cluster among "
                "the queues by weight; remove 'cohort' (or use engine: kueue)",
            )
        if queues.pods_ready_timeout is not None:
            yield issue(
                f"{queues.path}.pods_ready_timeout",
                "the timeout is Kueue's (waitForPodsReady); Volcano's gang plugin holds a "
                "job's pods until all of them can be placed instead; remove "
                "'pods_ready_timeout' (or use engine: kueue)",
            )
        for entry in queues.teams:
            if kubernetes_name(entry.team) in VOLCANO_OWN_QUEUES:
                yield issue(
                    f"{entry.path}.team",
                    f"Volcano creates its own queue {kubernetes_name(entry.team)!r}; a team "
                    "queue cannot take that name",
                )
            team = teams.get(entry.team)
            if team is not None and team.fairshare > VOLCANO_MAX_WEIGHT:
                yield issue(
                    f"{team.path}.fairshare",
                    f"fairshare {team.fairshare} becomes the weight of the team's Volcano queue "
                    f"in cluster {cluster.name!r}, which is at most {VOLCANO_MAX_WEIGHT}",
                )
            # a queue's GPU count is kept to the models its quota names (volcano.Placement)
            if team is not None and known and all(k in models for k in entry.quota):
                refused = volcano.placement(view, entry).refused
                if refused:
                    yield issue(f"{entry.path}.quota", refused)


@check
def frameworks_resolve(estate: Estate) -> Iterator[Finding]:
    """A framework is listed once, and TrainJob comes with the JobSet it runs as."""
    for cluster in estate.kubernetes_clusters:
        seen: set[str] = set()
        for i, name in enumerate(cluster.frameworks):
            if name in seen:
                yield issue(f"{cluster.path}.frameworks[{i}]", f"{name!r} is listed twice")
            seen.add(name)
        if "trainjob" in seen and "jobset" not in seen:
            index = cluster.frameworks.index("trainjob")
            yield issue(
                f"{cluster.path}.frameworks[{index}]",
                "trainjob needs jobset: Kubeflow Trainer runs each TrainJob as a JobSet "
                "(its chart depends on JobSet 0.12.0); add jobset to frameworks",
            )


@check
def unix_identity_needs_admission_policies(estate: Estate) -> Iterator[Finding]:
    """tenancy.unix_identity is a ValidatingAdmissionPolicy, v1 (and on by default) from
    Kubernetes 1.30."""
    version = estate.versions.kubernetes
    for cluster in estate.kubernetes_clusters:
        if cluster.unix_identity and not version.at_least("1.30"):
            yield issue(
                f"{cluster.path}.tenancy.unix_identity",
                "estategen enforces it with a ValidatingAdmissionPolicy, which Kubernetes "
                f"serves as v1 from 1.30; versions.kubernetes is {version.text}",
            )


@check
def gitops_repository_access(estate: Estate) -> Iterator[Finding]:
    """Flux reads a repository with the Secret its GitRepository names (spec.secretRef), and an
    ssh:// one only with a key from it; Argo CD names no Secret on an Application, it matches
    its repository credentials by URL (source-controller v1.9.1 docs/spec/v1/gitrepositories.md,
    Secret reference; Argo CD v3.5.1 docs/operator-manual/declarative-setup.md, Repositories)."""
    for cluster in estate.kubernetes_clusters:
        gitops = cluster.gitops
        if gitops is None:
            continue
        if gitops.engine == "argocd" and gitops.secret is not None:
            yield issue(
                f"{gitops.path}.secret",
                "Argo CD finds a repository's credentials by its URL, in a Secret labelled "
                "argocd.argoproj.io/secret-type: repository, not by a name an Application "
                "gives: remove `secret` and create that Secret in namespace argocd",
            )
        if (
            gitops.engine == "flux"
            and gitops.secret is None
            and gitops.repository.startswith("ssh://")
        ):
            yield issue(
                f"{gitops.path}.secret",
                "Flux reads an ssh:// repository only with the key of a Secret its "
                "GitRepository names: set `secret` to the name of a Secret in flux-system "
                "(`flux create secret git NAME --url=...`), or use the https URL",
            )


@check
def gitops_sops_secrets(estate: Estate) -> Iterator[Finding]:
    """Flux decrypts SOPS-encrypted Secrets itself (kustomize-controller v1.9.4
    docs/spec/v1/kustomizations.md, Decryption); Argo CD v3.5.1 applies what it reads as it
    is, decrypting only through a config management plugin. The encrypted folder is the
    site's: not the repository's root (Flux would apply every manifest of it) and not a
    folder estategen writes."""
    for cluster in estate.kubernetes_clusters:
        gitops = cluster.gitops
        if gitops is None or gitops.sops is None:
            continue
        if gitops.engine != "flux":
            yield issue(
                f"{gitops.path}.sops",
                "Argo CD applies the Secrets it reads from Git as they are and decrypts SOPS "
                "only through a config management plugin estategen does not install: remove "
                "`sops` and create the Secrets as the cluster README says, or use engine flux",
            )
            continue
        folder = posixpath.normpath(gitops.sops.folder)
        rendered = [
            posixpath.normpath(posixpath.join(gitops.folder, top))
            for top in (CLUSTERS_FOLDER, ENGINES_FOLDER)
        ]
        if folder == "." or any(
            folder == tree or folder.startswith(f"{tree}/") for tree in rendered
        ):
            yield issue(
                f"{gitops.path}.sops.path",
                f"the encrypted Secrets' folder {gitops.sops.folder!r} is "
                + (
                    "the repository's root, whose every manifest Flux would apply"
                    if folder == "."
                    else "in a folder estategen writes (" + ", ".join(rendered) + ")"
                )
                + ": give a folder of the repository the site keeps, such as "
                f"secrets/{cluster.name}",
            )


# --- per-team Pod Security level -------------------------------------------------------------


@check
def team_pod_security_applies(estate: Estate) -> Iterator[Finding]:
    """identity.teams[].pod_security is the level of the team's namespaces on the Kubernetes
    clusters: without a cluster no namespace enforces it, so it is refused."""
    if estate.kubernetes_clusters:
        return
    for team in estate.identity.teams:
        if team.pod_security is not None:
            yield issue(
                f"{team.path}.pod_security",
                "it sets the Pod Security level of the team's namespaces on the Kubernetes "
                "clusters, and the estate has none (kubernetes.clusters): remove it",
            )


@check
def team_pod_security_privileged(estate: Estate) -> Iterator[Finding]:
    """Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards,
    Privileged): the privileged level is unrestricted, so a namespace labelled with it admits
    any pod. A team may have it, named for that team alone, with this warning saying what its
    pods may then do; tenancy.unix_identity's admission policy still checks the user a pod
    names, but a privileged container is root on its node whatever user it names."""
    for team in estate.identity.teams:
        if team.pod_security != "privileged" or not estate.kubernetes_clusters:
            continue
        clusters = [c.name for c in estate.kubernetes_clusters]
        identity = [c.name for c in estate.kubernetes_clusters if c.unix_identity]
        yield issue(
            f"{team.path}.pod_security",
            f"team {team.name}'s namespace {team.namespace} enforces no Pod Security check "
            f"on {'cluster' if len(clusters) == 1 else 'clusters'} {', '.join(clusters)}: "
            "its pods may run privileged containers, add any "
            "capability, use the node's network, PID and IPC namespaces, host ports and "
            "hostPath volumes, run unconfined by seccomp, AppArmor and SELinux, and as root; "
            "any of these reaches the node, and through it every other team's pods and files "
            "there"
            + (
                f" (tenancy.unix_identity on {', '.join(identity)} no longer holds for it: a "
                "privileged container is root on its node whatever user it runs as)"
                if identity
                else ""
            )
            + ". Give the team nodes of its own (taints) or use baseline, which admits root "
            "and the default capabilities but nothing of the host",
            level="warning",
        )
