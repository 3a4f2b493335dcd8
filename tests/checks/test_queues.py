"""Specification of Kubernetes team queues and their quotas (estategen.checks.queues): a blueprint
fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import only, queues, run, where

# --- queues_resolve ------------------------------------------------------------------------------


MIG_K8S_POOL = """
        node_pools:
          - name: mig
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: n[1-2]
            gpus: {model: a100-sxm-80gb, count: 4, mig: [3g.40gb, 3g.40gb]}
"""


def test_queues_resolve_passes_the_base_and_mig_quota_keys() -> None:
    assert run(checks.queues_resolve) == []
    fragment = queues("{team: vision, quota: {a100-sxm-80gb/3g.40gb: 4}}", pools=MIG_K8S_POOL)
    assert run(checks.queues_resolve, fragment) == []


def test_queue_for_an_unknown_team_is_refused() -> None:
    found = run(checks.queues_resolve, queues("{team: robotics, quota: {l4-24gb: 1}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].team",
        "'robotics' is not a team; known: nlp, vision",
    )


def test_queue_quota_for_a_gpu_no_cluster_pool_has_is_refused() -> None:
    # the base has a100s, but in a Slurm pool: they are not capacity of the Kubernetes cluster
    found = run(checks.queues_resolve, queues("{team: vision, quota: {a100-sxm-80gb: 1}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].quota.a100-sxm-80gb",
        "no pool in cluster 'lab-k8s' provides 'a100-sxm-80gb'; known: l4-24gb",
    )


# --- quotas_within_capacity ----------------------------------------------------------------------


def test_quotas_within_capacity_passes_quotas_adding_up_to_capacity() -> None:
    assert run(checks.quotas_within_capacity) == []


def test_quota_above_cluster_capacity_is_refused() -> None:
    found = run(checks.quotas_within_capacity, queues("{team: vision, quota: {l4-24gb: 5}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].quota.l4-24gb",
        "quota 5 is above the 4 l4-24gb in cluster 'lab-k8s'",
    )


def test_quotas_adding_up_above_capacity_are_refused_at_the_queues() -> None:
    fragment = queues("{team: vision, quota: {l4-24gb: 3}}", "{team: nlp, quota: {l4-24gb: 3}}")
    found = run(checks.quotas_within_capacity, fragment)
    only(
        found,
        "kubernetes.clusters[0].queues",
        "nominal quotas for l4-24gb add up to 6, above the 4 in cluster 'lab-k8s'",
    )


def test_mig_gpus_back_profile_quotas_not_the_whole_gpu_model() -> None:
    profile = queues("{team: vision, quota: {a100-sxm-80gb/3g.40gb: 4}}", pools=MIG_K8S_POOL)
    assert run(checks.queues_resolve, profile) == []
    whole = queues("{team: vision, quota: {a100-sxm-80gb: 1}}", pools=MIG_K8S_POOL)
    only(
        run(checks.queues_resolve, whole),
        "kubernetes.clusters[0].queues.teams[0].quota.a100-sxm-80gb",
        "no pool in cluster 'lab-k8s' provides 'a100-sxm-80gb'",
    )


def test_quotas_count_a_managed_pool_at_its_maximum_nodes() -> None:
    pools = """
        node_pools:
          - name: cloud
            scheduler: kubernetes
            cluster: lab-k8s
            provider: gke
            nodes: {min: 0, max: 3}
            gpus: {model: l4-24gb, count: 2}
    """
    fits = queues("{team: vision, quota: {l4-24gb: 6}}", pools=pools)
    assert run(checks.quotas_within_capacity, fits) == []
    over = queues("{team: vision, quota: {l4-24gb: 7}}", pools=pools)
    found = run(checks.quotas_within_capacity, over)
    only(found, "kubernetes.clusters[0].queues.teams[0].quota.l4-24gb", "above the 6 l4-24gb")


def test_quotas_count_mig_instances_per_profile_in_the_layout() -> None:
    # 2 hosts x 4 GPUs x 2 instances of 3g.40gb = 16
    key = "a100-sxm-80gb/3g.40gb"
    fits = queues(f"{{team: vision, quota: {{{key}: 16}}}}", pools=MIG_K8S_POOL)
    assert run(checks.quotas_within_capacity, fits) == []
    over = queues(f"{{team: vision, quota: {{{key}: 17}}}}", pools=MIG_K8S_POOL)
    only(
        run(checks.quotas_within_capacity, over),
        f"kubernetes.clusters[0].queues.teams[0].quota.{key}",
        f"quota 17 is above the 16 {key}",
    )


@pytest.mark.parametrize("engine", ["kueue", "volcano"])
def test_quota_checks_hold_for_either_engine(engine: str) -> None:
    """Capacity and team resolution do not depend on which engine runs the queues."""
    head = queues("{team: robotics, quota: {l4-24gb: 5}}", "{team: nlp, quota: {l4-24gb: 3}}")
    if engine == "volcano":
        head = head.replace("cohort: lab", "engine: volcano")
    assert where(run(checks.queues_resolve, head)) == [
        ("kubernetes.clusters[0].queues.teams[0].team", "error")
    ]
    assert where(run(checks.quotas_within_capacity, head)) == [
        ("kubernetes.clusters[0].queues.teams[0].quota.l4-24gb", "error"),
        ("kubernetes.clusters[0].queues", "error"),
    ]
