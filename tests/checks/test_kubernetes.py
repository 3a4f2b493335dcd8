"""Specification of Kubernetes clusters: AKS, the EKS autoscaler's tags, queue engines and
frameworks (estategen.checks.kubernetes): a blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks, load, pipeline
from estategen.errors import BlueprintInvalid
from estategen.schema.validation import normalise

from .base import blueprint, estate, line_of, only, parse, queues, run

# --- AKS: aks_cluster_settings, aks_pools_buildable ----------------------------------------------


AKS = """
node_pools:
  - name: {name}
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_ND96isr_H100_v5
    nodes: {{min: 0, max: 4}}
    gpus: {{model: h100-sxm-80gb, count: 8{mig}}}
    labels: {labels}
kubernetes:
  clusters:
    - name: az
      provider: aks
      region: {region}
{resource_group}
"""


def aks(
    name: str = "h100",
    mig: str = "",
    labels: str = "{}",
    region: str = "westeurope",
    resource_group: str = "      resource_group: rg-gpu",
) -> str:
    return AKS.format(
        name=name, mig=mig, labels=labels, region=region, resource_group=resource_group
    )


def test_aks_cluster_with_azure_region_and_resource_group_passes() -> None:
    assert run(checks.aks_cluster_settings, aks()) == []
    assert run(checks.aks_pools_buildable, aks()) == []


def test_aks_cluster_needs_its_resource_group() -> None:
    found = run(checks.aks_cluster_settings, aks(resource_group=""))
    only(found, "kubernetes.clusters[0]", "an aks cluster needs `resource_group`")


def test_resource_group_is_refused_on_other_providers() -> None:
    fragment = aks().replace("provider: aks", "provider: eks").replace("westeurope", "eu-west-1")
    found = run(checks.aks_cluster_settings, fragment)
    only(found, "kubernetes.clusters[0].resource_group", "this cluster is eks: remove it")


@pytest.mark.parametrize(
    ("provider", "region", "text"),
    [
        ("aks", "west-europe", "'west-europe' is not an Azure region"),
        ("eks", "westeurope", "'westeurope' is not a eks region; it names regions like eu-west-1"),
        ("gke", "europewest4", "is not a gke region; it names regions like us-central1"),
    ],
)
def test_a_clusters_region_takes_its_clouds_form(provider: str, region: str, text: str) -> None:
    fragment = aks(region=region, resource_group="") if provider != "aks" else aks(region=region)
    fragment = fragment.replace("provider: aks", f"provider: {provider}")
    found = run(checks.aks_cluster_settings, fragment)
    only(found, "kubernetes.clusters[0].region", text)


def test_the_azure_region_form_passes_the_schema() -> None:
    _, problems = normalise(parse(blueprint(aks(region="eastus2"))).data)
    assert problems == []


def test_aks_pool_name_is_an_agent_pool_name() -> None:
    found = run(checks.aks_pools_buildable, aks(name="h100-burst"))
    only(found, "node_pools[0].name", "'h100-burst' cannot name an AKS agent pool")
    assert run(checks.aks_pools_buildable, aks(name="gpupool12345")) == []
    found = run(checks.aks_pools_buildable, aks(name="gpupool123456"))
    only(found, "node_pools[0].name", "at most 12")


def test_aks_pool_labels_kubelet_or_aks_would_refuse() -> None:
    labels = "{kubernetes.azure.com/mode: user, node-role.kubernetes.io/gpu: '', team: ml}"
    found = run(checks.aks_pools_buildable, aks(labels=labels))
    finding = only(found, "node_pools[0].labels", "AKS nodes cannot carry")
    assert "kubernetes.azure.com/mode, node-role.kubernetes.io/gpu" in finding.message
    assert "team" not in finding.message.split(":")[0]


@pytest.mark.parametrize(
    "layout",
    [
        "[1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]",
        "[2g.20gb, 2g.20gb, 2g.20gb]",
        "[3g.40gb, 3g.40gb]",
        "[4g.40gb]",
        "[7g.80gb]",
    ],
)
def test_aks_builds_uniform_mig_layouts_that_fill_the_gpu(layout: str) -> None:
    assert run(checks.aks_pools_buildable, aks(mig=f", mig: {layout}")) == []


@pytest.mark.parametrize(
    "layout",
    [
        "[3g.40gb]",  # one of two that fit
        "[3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]",  # mixed sizes
        "[1g.20gb, 1g.20gb, 1g.20gb, 1g.20gb]",  # no MIGng profile yields 1g.20gb
    ],
)
def test_aks_refuses_mig_layouts_it_cannot_build(layout: str) -> None:
    found = run(checks.aks_pools_buildable, aks(mig=f", mig: {layout}"))
    finding = only(found, "node_pools[0].gpus.mig", "AKS partitions every GPU of a pool")
    assert "7 x 1g.10gb (MIG1g), 3 x 2g.20gb (MIG2g), 2 x 3g.40gb (MIG3g)" in finding.message


def test_aks_findings_carry_the_blueprint_line() -> None:
    text = blueprint(aks(name="h100-burst"))
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))
    (finding,) = [f for f in caught.value.findings if f.path == "node_pools[0].name"]
    assert finding.line == line_of(text, "name: h100-burst")


# --- eks_autoscaler_tags_fit ---------------------------------------------------------------------


EKS_GROWING = """
node_pools:
  - name: l40s
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {{min: {low}, max: 4}}
    gpus: {{model: l40s-48gb, count: 4}}
    labels: {{{key}: x}}
kubernetes:
  clusters: [{{name: aws, provider: eks, region: eu-west-1}}]
"""


LONG_KEY = "example.com/" + "k" * 63  # 121 characters as a tag key


def test_eks_growing_group_with_short_label_keys_passes() -> None:
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key="tier")) == []


def test_eks_label_key_too_long_for_the_autoscalers_tag_is_refused() -> None:
    key = "research-gpu-team.example.com/" + "k" * 63  # 139 characters as a tag key
    found = run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key=key))
    finding = only(found, "node_pools[0].labels", "too long for the Cluster Autoscaler")
    assert f"{key!r}" in finding.message and "of at most 128 in the key" in finding.message
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key=LONG_KEY)) == []


def test_a_fixed_size_group_needs_no_autoscaler_tags() -> None:
    key = "research-gpu-team.example.com/" + "k" * 63  # 139 characters as a tag key
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=4, key=key)) == []


# --- queue_engine_keys ---------------------------------------------------------------------------


VOLCANO = """
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                engine: volcano
                teams:
                  - {team: vision, quota: {l4-24gb: 2}}
                  - {team: nlp, quota: {l4-24gb: 2}}
"""


def test_queue_engine_keys_pass_kueue_with_a_cohort_and_volcano_without() -> None:
    assert run(checks.queue_engine_keys) == []
    assert run(checks.queue_engine_keys, VOLCANO) == []


def test_kueue_without_a_cohort_is_refused() -> None:
    fragment = VOLCANO.replace("engine: volcano", "engine: kueue")
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues",
        "'cohort' is required with engine kueue",
    )


def test_volcano_refuses_a_cohort_it_would_ignore() -> None:
    fragment = VOLCANO.replace("engine: volcano", "engine: volcano\n                cohort: lab")
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues.cohort",
        "Volcano has no cohorts",
    )


def test_volcano_refuses_a_weight_above_its_queue_crd_bound() -> None:
    """Queue.spec.weight has maximum 65535 (scheduling.volcano.sh_queues.yaml at v1.15.1)."""
    fragment = (
        VOLCANO
        + """
        identity:
          teams:
            - {name: vision, gid: 20001, members: [alice], fairshare: 65536}
            - {name: nlp, gid: 20002, members: [bob], fairshare: 65535}
    """
    )
    only(
        run(checks.queue_engine_keys, fragment),
        "identity.teams[0].fairshare",
        "at most 65535",
    )
    kueue = fragment.replace("engine: volcano", "engine: kueue\n                cohort: lab")
    assert run(checks.queue_engine_keys, kueue) == []


def test_volcano_refuses_a_team_named_like_its_own_default_queue() -> None:
    fragment = """
        identity:
          teams:
            - {name: default, gid: 20001, members: [alice], namespace: team-default}
            - {name: nlp, gid: 20002, members: [bob]}
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                engine: volcano
                teams: [{team: default, quota: {l4-24gb: 2}}]
    """
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues.teams[0].team",
        "Volcano creates its own queue 'default'",
    )


# --- frameworks_resolve --------------------------------------------------------------------------


def frameworks(names: str) -> str:
    return queues(
        "{team: vision, quota: {l4-24gb: 2}}", "{team: nlp, quota: {l4-24gb: 2}}"
    ).replace("              queues:", f"              frameworks: {names}\n              queues:")


def test_frameworks_resolve_passes_the_default_and_every_framework() -> None:
    assert estate().kubernetes_clusters[0].frameworks == ("job",)
    assert (
        run(checks.frameworks_resolve, frameworks("[job, jobset, trainjob, mpijob, rayjob]")) == []
    )


def test_a_framework_listed_twice_is_refused() -> None:
    only(
        run(checks.frameworks_resolve, frameworks("[job, jobset, job]")),
        "kubernetes.clusters[0].frameworks[2]",
        "'job' is listed twice",
    )


def test_trainjob_without_jobset_is_refused() -> None:
    only(
        run(checks.frameworks_resolve, frameworks("[job, trainjob]")),
        "kubernetes.clusters[0].frameworks[1]",
        "trainjob needs jobset",
    )


def test_an_unknown_framework_is_a_schema_error() -> None:
    document = parse(blueprint(frameworks("[job, pytorchjob]")))
    _, problems = normalise(document.data)
    assert [p.path for p in problems] == ["kubernetes.clusters[0].frameworks[1]"]


# --- unix_identity_needs_admission_policies ------------------------------------------------------


def unix_identity(kubernetes: str) -> str:
    return f"""
versions: {{kubernetes: "{kubernetes}"}}
kubernetes:
  clusters:
    - {{name: lab-k8s, tenancy: {{unix_identity: true}}}}
"""


def test_unix_identity_passes_from_kubernetes_1_30() -> None:
    assert run(checks.unix_identity_needs_admission_policies, unix_identity("1.30")) == []


def test_unix_identity_before_kubernetes_1_30_is_refused() -> None:
    """ValidatingAdmissionPolicy is v1, and served without a feature gate, from 1.30."""
    only(
        run(checks.unix_identity_needs_admission_policies, unix_identity("1.29")),
        "kubernetes.clusters[0].tenancy.unix_identity",
        "ValidatingAdmissionPolicy, which Kubernetes serves as v1 from 1.30",
    )


# --- team_pod_security_applies, team_pod_security_privileged -------------------------------------


def team_level(level: str, clusters: str = "") -> str:
    return (
        f"""
identity:
  teams:
    - {{name: vision, gid: 20001, members: [alice]}}
    - {{name: nlp, gid: 20002, members: [bob], pod_security: {level}}}
"""
        + clusters
    )


TWO_CLUSTERS = """
kubernetes:
  clusters:
    - {name: lab-k8s, tenancy: {unix_identity: true}}
    - {name: burst, provider: gke, region: us-central1}
"""


def test_a_teams_level_on_an_estate_with_clusters_applies() -> None:
    assert run(checks.team_pod_security_applies, team_level("baseline")) == []


def test_a_teams_level_without_kubernetes_clusters_is_refused() -> None:
    """The level is a label of the team's namespaces; with no cluster there is none."""
    only(
        run(checks.team_pod_security_applies, team_level("baseline", "kubernetes: ~\n")),
        "identity.teams[1].pod_security",
        "the estate has none (kubernetes.clusters): remove it",
    )


def test_a_team_at_baseline_or_restricted_is_no_warning() -> None:
    for level in ("baseline", "restricted"):
        assert run(checks.team_pod_security_privileged, team_level(level, TWO_CLUSTERS)) == []


def test_a_privileged_team_is_warned_of_what_its_pods_may_do_and_where() -> None:
    """kubernetes.io/docs/concepts/security/pod-security-standards (kubernetes/website,
    content/en/docs/concepts/security/pod-security-standards.md, Privileged): the level is
    unrestricted. The warning names the team's namespace, the clusters it is on, the controls
    of baseline its pods escape (privileged containers, capabilities, host namespaces, ports
    and paths, seccomp, AppArmor, SELinux, root), and tenancy.unix_identity where it is on:
    a privileged container is root on its node whatever user the policy made it name."""
    found = only(
        run(checks.team_pod_security_privileged, team_level("privileged", TWO_CLUSTERS)),
        "identity.teams[1].pod_security",
        "team nlp's namespace nlp enforces no Pod Security check on clusters lab-k8s, burst",
        level="warning",
    )
    for permitted in (
        "privileged containers",
        "add any capability",
        "the node's network, PID and IPC namespaces",
        "host ports",
        "hostPath volumes",
        "seccomp, AppArmor and SELinux",
        "as root",
        "tenancy.unix_identity on lab-k8s no longer holds",
    ):
        assert permitted in found.message
    single = run(checks.team_pod_security_privileged, team_level("privileged"))
    assert "on cluster lab-k8s:" in single[0].message
    assert "unix_identity" not in single[0].message


# --- gitops_repository_access --------------------------------------------------------------------


def gitops(settings: str) -> str:
    return f"""
kubernetes:
  clusters:
    - name: lab-k8s
      gitops: {settings}
"""


def test_gitops_repository_access_passes_what_each_engine_reads() -> None:
    https = "https://git.example.org/platform/estate"
    assert (
        run(checks.gitops_repository_access, gitops(f"{{engine: argocd, repository: {https}}}"))
        == []
    )
    assert (
        run(checks.gitops_repository_access, gitops(f"{{engine: flux, repository: {https}}}")) == []
    )
    ssh = "{engine: flux, repository: 'ssh://git@git.example.org/p/e', secret: deploy-key}"
    assert run(checks.gitops_repository_access, gitops(ssh)) == []
    assert estate(gitops(ssh)).kubernetes_clusters[0].gitops is not None


def test_flux_reads_an_ssh_repository_only_with_a_secret() -> None:
    only(
        run(
            checks.gitops_repository_access, gitops("{engine: flux, repository: 'ssh://git@h/p/e'}")
        ),
        "kubernetes.clusters[0].gitops.secret",
        "ssh:// repository only with the key of a Secret",
    )


def test_argo_cd_is_given_no_secret_name() -> None:
    only(
        run(
            checks.gitops_repository_access,
            gitops("{engine: argocd, repository: 'https://h/p/e', secret: deploy-key}"),
        ),
        "kubernetes.clusters[0].gitops.secret",
        "finds a repository's credentials by its URL",
    )


# --- gitops_sops_secrets -----------------------------------------------------------------------

FLUX_HTTPS = "engine: flux, repository: 'https://git.example.org/p/e'"


def test_gitops_sops_secrets_passes_a_flux_cluster_with_a_folder_the_site_keeps() -> None:
    settings = f"{{{FLUX_HTTPS}, sops: {{path: secrets/lab-k8s, secret: sops-age}}}}"
    assert run(checks.gitops_sops_secrets, gitops(settings)) == []
    sops = estate(gitops(settings)).kubernetes_clusters[0].gitops.sops
    assert (sops.folder, sops.key_secret) == ("secrets/lab-k8s", "sops-age")
    # beside the render output, or in its folder but outside what estategen writes
    inside = f"{{{FLUX_HTTPS}, path: build/lab, sops: {{path: build/lab/secrets, secret: k}}}}"
    assert run(checks.gitops_sops_secrets, gitops(inside)) == []


def test_argo_cd_is_given_no_sops_folder() -> None:
    only(
        run(
            checks.gitops_sops_secrets,
            gitops(
                "{engine: argocd, repository: 'https://h/p/e', "
                "sops: {path: secrets/lab, secret: sops-age}}"
            ),
        ),
        "kubernetes.clusters[0].gitops.sops",
        "decrypts SOPS only through a config management plugin",
    )


@pytest.mark.parametrize(
    ("folder", "path", "words"),
    [
        (".", ".", "the repository's root"),
        ("build/lab/kubernetes/secrets", "build/lab", "a folder estategen writes"),
        ("gitops", ".", "a folder estategen writes"),
        ("out/gitops/lab-k8s", "out", "a folder estategen writes"),
    ],
)
def test_the_sops_folder_is_neither_the_root_nor_one_estategen_writes(
    folder: str, path: str, words: str
) -> None:
    settings = f"{{{FLUX_HTTPS}, path: '{path}', sops: {{path: '{folder}', secret: sops-age}}}}"
    only(
        run(checks.gitops_sops_secrets, gitops(settings)),
        "kubernetes.clusters[0].gitops.sops.path",
        words,
    )
