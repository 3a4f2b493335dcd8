"""Specification of node pools and Slurm cloud nodes (estategen.checks.pools): a blueprint fragment
in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import CLOUD_POOL, MANAGED_POOL, SITE_CLOUD_POOL, joined, only, run, where

# --- pool_fields_for_provider --------------------------------------------------------------------


def test_pool_fields_for_provider_passes_onprem_and_complete_managed_pools() -> None:
    assert run(checks.pool_fields_for_provider) == []
    assert run(checks.pool_fields_for_provider, MANAGED_POOL) == []


def test_pool_fields_for_provider_slurm_cloud_pool_needs_names_shape_and_cloud() -> None:
    """A Slurm pool with a provider is State=CLOUD nodes, no longer refused outright."""
    found = run(
        checks.pool_fields_for_provider,
        MANAGED_POOL.replace("scheduler: kubernetes", "scheduler: slurm"),
    )
    assert [(f.path, f.message) for f in found] == [
        (
            "node_pools[0]",
            "a Slurm gke pool names its nodes with `hosts` (slurm.conf defines them "
            "State=CLOUD; slurmctld creates an instance of that name when it needs one)",
        ),
        ("node_pools[0]", "a Slurm gke pool needs `cpu`"),
        ("node_pools[0]", "a Slurm gke pool needs `memory_gb`"),
        ("node_pools[0]", "a Slurm gke pool needs `cloud`"),
    ]


def test_pool_fields_for_provider_managed_pool_needs_instance_type_and_nodes() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - {name: cloud, scheduler: kubernetes, cluster: lab-k8s, provider: eks}
        """,
    )
    assert [(f.path, f.message) for f in found] == [
        ("node_pools[0]", "an eks pool needs `instance_type`"),
        ("node_pools[0]", "an eks pool needs `nodes`"),
    ]


def test_pool_fields_for_provider_managed_pool_with_hosts_is_refused() -> None:
    found = run(checks.pool_fields_for_provider, MANAGED_POOL + "        hosts: n[1-2]\n")
    only(found, "node_pools[0].hosts", "a gke pool gets its nodes from the provider")


def test_pool_fields_for_provider_nodes_min_above_max_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider,
        MANAGED_POOL.replace("{min: 1, max: 4}", "{min: 5, max: 2}"),
    )
    only(found, "node_pools[0].nodes", "min 5 is above max 2")


def test_pool_fields_for_provider_onprem_pool_needs_hosts() -> None:
    found = run(
        checks.pool_fields_for_provider,
        "node_pools: [{name: k, scheduler: kubernetes, cluster: lab-k8s}]",
    )
    only(found, "node_pools[0]", "an on-prem pool needs `hosts`")


def test_pool_fields_for_provider_onprem_pool_refuses_managed_keys() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - name: k
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: n[1-2]
            instance_type: g6.xlarge
            nodes: {max: 2}
        """,
    )
    assert where(found) == [
        ("node_pools[0].instance_type", "error"),
        ("node_pools[0].nodes", "error"),
    ]
    assert all("is for managed pools" in f.message for f in found)


def test_pool_fields_for_provider_slurm_pool_needs_cpu_and_memory() -> None:
    found = run(
        checks.pool_fields_for_provider,
        "node_pools: [{name: a, scheduler: slurm, hosts: n1}]",
    )
    assert [f.message for f in found] == [
        "a Slurm pool needs `cpu` for its NodeName line",
        "a Slurm pool needs `memory_gb` for its NodeName line",
    ]


# --- pool_cluster_resolves -----------------------------------------------------------------------


def test_pool_cluster_resolves_passes_the_base() -> None:
    assert run(checks.pool_cluster_resolves) == []


def test_pool_cluster_resolves_slurm_pool_with_an_unknown_cluster_is_refused() -> None:
    """A Slurm pool with `cluster` is hosted there: the cluster must exist."""
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: a100, scheduler: slurm, cluster: elsewhere, nodes: {max: 1}}
          - {name: l4, scheduler: kubernetes, cluster: lab-k8s, hosts: m1}
        """,
    )
    only(found, "node_pools[0].cluster", "'elsewhere' is not in kubernetes.clusters")


def test_pool_cluster_resolves_slurm_pool_with_labels_and_taints_is_refused() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n1
            labels: {tier: train}
            taints: [{key: gpu, effect: NoSchedule}]
          - {name: l4, scheduler: kubernetes, cluster: lab-k8s, hosts: m1}
        """,
    )
    assert where(found) == [("node_pools[0].labels", "error"), ("node_pools[0].taints", "error")]
    assert "use `features` for Slurm pools" in found[0].message


def test_pool_cluster_resolves_kubernetes_pool_needs_cluster() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: l4, scheduler: kubernetes, hosts: m1}
          - {name: l4b, scheduler: kubernetes, cluster: lab-k8s, hosts: m2}
        """,
    )
    only(found, "node_pools[0]", "a Kubernetes pool needs `cluster`; known: lab-k8s")


def test_pool_cluster_resolves_unknown_cluster_is_refused() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: l4, scheduler: kubernetes, cluster: prod, hosts: m1}
          - {name: l4b, scheduler: kubernetes, cluster: lab-k8s, hosts: m2}
        """,
    )
    only(found, "node_pools[0].cluster", "'prod' is not in kubernetes.clusters; known: lab-k8s")


def test_pool_cluster_resolves_managed_pool_provider_must_match_cluster() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: p, scheduler: kubernetes, cluster: c, provider: eks, nodes: {max: 2}}
        kubernetes:
          clusters: [{name: c, provider: gke, region: us-central1}]
        """,
    )
    only(found, "node_pools[0].provider", "pool is eks but cluster 'c' is gke")


def test_pool_cluster_resolves_warns_about_a_cluster_without_pools() -> None:
    found = run(
        checks.pool_cluster_resolves,
        "kubernetes: {clusters: [{name: lab-k8s}, {name: idle}]}",
    )
    only(found, "kubernetes.clusters[1]", "cluster 'idle' has no node pools", level="warning")


def test_pool_cluster_resolves_cloud_cluster_needs_region() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: p, scheduler: kubernetes, cluster: c, provider: aks, nodes: {max: 2}}
        kubernetes:
          clusters: [{name: c, provider: aks}]
        """,
    )
    only(found, "kubernetes.clusters[0]", "an aks cluster needs `region`")


# --- node_labels_kubelet_may_set -----------------------------------------------------------------


def test_a_pool_label_kubelet_may_not_set_is_refused_at_the_pool_labels() -> None:
    found = run(
        checks.node_labels_kubelet_may_set,
        """
        node_pools:
          - name: l4-serve
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: lab-k8s-[01-02]
            labels: {node-role.kubernetes.io/gpu: "", example.com/role: gpu}
        """,
    )
    only(found, "node_pools[0].labels", "kubelet may not set node-role.kubernetes.io/gpu")


def test_pool_labels_kubelet_may_set_pass() -> None:
    fragment = """
        node_pools:
          - name: l4-serve
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: lab-k8s-[01-02]
            labels: {node.kubernetes.io/role: gpu, example.com/role: gpu}
        """
    assert run(checks.node_labels_kubelet_may_set, fragment) == []


# --- elastic cloud nodes -------------------------------------------------------------------------


EKS_CLOUD_POOL = (
    CLOUD_POOL.replace("provider: gke", "provider: eks")
    .replace("a3-highgpu-8g", "p5.48xlarge")
    .replace(
        """image: projects/aurora-hpc/global/images/slurm-v3, zone: us-central1-a,
                project: aurora-hpc""",
        "image: ami-0123456789abcdef0, region: us-east-1",
    )
)


@pytest.mark.parametrize("pools", [CLOUD_POOL, EKS_CLOUD_POOL], ids=["gke", "eks"])
def test_a_complete_slurm_cloud_pool_passes(pools: str) -> None:
    for function in (
        checks.pool_fields_for_provider,
        checks.instance_type_carries_gpus,
        checks.gpu_models_offered_by_cloud,
        checks.host_in_one_pool,
    ):
        assert run(function, pools) == [], function.__name__


def test_a_slurm_cloud_pool_needs_its_providers_location() -> None:
    found = run(
        checks.pool_fields_for_provider,
        CLOUD_POOL.replace("zone: us-central1-a,", "region: us-central1,"),
    )
    assert [(f.path, f.message) for f in found] == [
        ("node_pools[1].cloud", "a Slurm gke pool needs `zone`"),
        (
            "node_pools[1].cloud.region",
            "`region` is for provider eks; a gke pool sets zone and project",
        ),
    ]


def test_a_slurm_cloud_pool_image_is_the_providers() -> None:
    found = run(
        checks.pool_fields_for_provider,
        EKS_CLOUD_POOL.replace("ami-0123456789abcdef0", "projects/aurora-hpc/global/images/x"),
    )
    only(found, "node_pools[1].cloud.image", "is not an eks image; give an AMI id")


def test_a_slurm_cloud_pool_creates_at_most_its_named_nodes() -> None:
    found = run(checks.pool_fields_for_provider, CLOUD_POOL.replace("max: 4", "max: 8"))
    only(found, "node_pools[1].nodes.max", "max 8, but `hosts` names 4 nodes")


def test_a_slurm_aks_pool_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider, CLOUD_POOL.replace("provider: gke", "provider: aks")
    )
    only(found, "node_pools[1].provider", "Slurm cloud pools are created on gke")


def test_cloud_on_an_onprem_or_kubernetes_pool_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n[1-2]
            cpu: {sockets: 1, cores_per_socket: 2}
            memory_gb: 4
            cloud: {image: ami-0123456789abcdef0, region: us-east-1}
        """,
    )
    only(found, "node_pools[0].cloud", "set provider, or remove `cloud`")


def test_cloud_options_are_refused_only_with_cloud_nodes() -> None:
    options = "slurm: {options: {TreeWidth: 16}}"
    assert run(checks.cloud_options_not_owned, options) == []
    found = run(checks.cloud_options_not_owned, joined(CLOUD_POOL, options))
    only(
        found,
        "slurm.options.TreeWidth",
        "TreeWidth is rendered by estategen for the estate's cloud nodes",
    )


def test_power_saving_without_cloud_nodes_is_refused() -> None:
    saving = "slurm: {power_saving: {suspend_time: 300}}"
    assert run(checks.power_saving_has_cloud_nodes, joined(CLOUD_POOL, saving)) == []
    found = run(checks.power_saving_has_cloud_nodes, saving)
    only(found, "slurm.power_saving", "no Slurm pool has a provider")


# --- cloud nodes the site's own programs start ---------------------------------------------------


SITE_PROGRAMS = """
    slurm:
      power_saving:
        resume_program: /opt/site/slurm/resume
        suspend_program: /opt/site/slurm/suspend
        exclude_nodes: ["spot-[1-1]"]
"""


def test_a_site_cloud_pool_with_the_sites_programs_passes() -> None:
    for function in (
        checks.site_cloud_pools,
        checks.power_saving_has_cloud_nodes,
        checks.pool_fields_for_provider,
    ):
        assert run(function, joined(SITE_CLOUD_POOL, SITE_PROGRAMS)) == [], function.__name__


def test_power_saving_with_only_a_site_cloud_pool_is_not_refused() -> None:
    saving = "slurm: {power_saving: {suspend_time: 300}}"
    assert run(checks.power_saving_has_cloud_nodes, joined(SITE_CLOUD_POOL, saving)) == []


def test_state_cloud_on_a_provider_pool_is_refused() -> None:
    pools = CLOUD_POOL.replace("provider: gke", "provider: gke\n        state: cloud")
    only(run(checks.site_cloud_pools, pools), "node_pools[1].state", "State=CLOUD already")


def test_state_cloud_on_a_kubernetes_pool_is_refused() -> None:
    fragment = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: l4-serve
        scheduler: kubernetes
        cluster: lab-k8s
        state: cloud
        hosts: lab-k8s-[01-02]
        gpus: {model: l4-24gb, count: 2}
    """
    only(run(checks.site_cloud_pools, fragment), "node_pools[1].state", "Kubernetes pools")


def test_the_sites_programs_beside_a_provider_pool_are_refused() -> None:
    saving = "slurm: {power_saving: {resume_program: /opt/site/slurm/resume}}"
    found = run(checks.site_cloud_pools, joined(CLOUD_POOL, saving))
    only(found, "slurm.power_saving.resume_program", "estategen's own ResumeProgram")


def test_a_site_program_inside_the_state_folder_is_refused() -> None:
    saving = "slurm: {power_saving: {suspend_program: /var/spool/slurmctld/suspend}}"
    found = run(checks.site_cloud_pools, joined(SITE_CLOUD_POOL, saving))
    only(found, "slurm.power_saving.suspend_program", "slurm.paths.state_save_location")


def test_excluded_nodes_outside_the_cloud_pools_are_refused() -> None:
    saving = 'slurm: {power_saving: {exclude_nodes: ["spot-[1-2]", "lab-gpu-01"]}}'
    found = run(checks.site_cloud_pools, joined(SITE_CLOUD_POOL, saving))
    only(
        found, "slurm.power_saving.exclude_nodes[1]", "'lab-gpu-01' is not a node of a Slurm cloud"
    )


# --- max_pods_fits_provider ----------------------------------------------------------------------

SLURM_POOL = """
  - name: a100
    scheduler: slurm
    hosts: lab-gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 32}
    memory_gb: 512
    gpus: {model: a100-sxm-80gb, count: 4}
"""
ON_PREM_POOL = "{name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: 'lab-k8s-[01-02]'"
GKE_POOL = (
    "{name: cloud, scheduler: kubernetes, cluster: lab-k8s, provider: gke, "
    "instance_type: a3-highgpu-8g, nodes: {min: 1, max: 4}"
)


def max_pods(pool: str, slurm: str = "") -> str:
    return f"node_pools:{SLURM_POOL}{slurm}  - {pool}\n"


def test_max_pods_within_each_providers_bounds_passes() -> None:
    assert run(checks.max_pods_fits_provider, max_pods(ON_PREM_POOL + ", max_pods: 64}")) == []
    assert run(checks.max_pods_fits_provider, max_pods(GKE_POOL + ", max_pods: 32}")) == []


def test_max_pods_outside_a_gke_node_pools_bounds_is_refused() -> None:
    only(
        run(checks.max_pods_fits_provider, max_pods(GKE_POOL + ", max_pods: 300}")),
        "node_pools[1].max_pods",
        "300 is outside a GKE node pool's max_pods_per_node: 8 to 256",
    )


def test_max_pods_on_a_slurm_pool_is_refused() -> None:
    only(
        run(checks.max_pods_fits_provider, max_pods(ON_PREM_POOL + "}", "    max_pods: 50\n")),
        "node_pools[0].max_pods",
        "a Slurm pool has no kubelet to set it on",
    )
