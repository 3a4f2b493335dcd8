"""Specification of Slurm hosted in Kubernetes (estategen.checks.hosted): a blueprint fragment in,
a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

from estategen import checks

from .base import only, run, where

# --- hosted_slurm_pools, hosted_options_not_owned ------------------------------------------------


HOSTED = """
        versions: {slurm: "25.11"}
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
            hosts: lab-k8s-[01-02]
            gpus: {model: l4-24gb, count: 2}
          - name: l4-slurm
            scheduler: slurm
            cluster: lab-k8s
            nodes: {max: 1}
            cpu: {sockets: 1, cores_per_socket: 8}
            memory_gb: 64
            gpus: {model: l4-24gb, count: 2}
        slurm:
          auth_key: {secret: slurm_key}
          rest_api: {host: lab-ctl, jwt_key: {secret: slurm_jwt}}
"""


def test_hosted_slurm_pools_pass_a_complete_hosted_pool() -> None:
    assert run(checks.hosted_slurm_pools, HOSTED) == []
    assert run(checks.hosted_options_not_owned, HOSTED) == []


def test_a_slurm_release_slinky_publishes_no_image_for_is_refused() -> None:
    only(
        run(checks.hosted_slurm_pools, HOSTED.replace('slurm: "25.11"', 'slurm: "24.05"')),
        "versions.slurm",
        "need one of 25.11, 26.05",
    )


def test_a_hosted_pool_needs_the_auth_key_and_its_pods_count() -> None:
    fragment = HOSTED.replace("          auth_key: {secret: slurm_key}\n", "").replace(
        "            nodes: {max: 1}\n", ""
    )
    found = run(checks.hosted_slurm_pools, fragment)
    assert where(found) == [("slurm", "error"), ("node_pools[2]", "error")], found


def test_hosted_pools_take_gpus_the_cluster_has() -> None:
    only(
        run(checks.hosted_slurm_pools, HOSTED.replace("nodes: {max: 1}", "nodes: {max: 3}")),
        "node_pools[2]",
        "take 6 l4-24gb GPUs of cluster 'lab-k8s', whose Kubernetes pools offer 4",
    )


def test_the_auth_key_without_hosted_pools_is_refused() -> None:
    only(
        run(checks.hosted_slurm_pools, "slurm: {auth_key: {secret: k}}"),
        "slurm.auth_key",
        "remove slurm.auth_key",
    )


def test_options_rendered_for_hosted_pools_are_refused() -> None:
    fragment = HOSTED.replace(
        "          auth_key:", "          options: {MaxNodeCount: 10}\n          auth_key:"
    )
    only(run(checks.hosted_options_not_owned, fragment), "slurm.options.MaxNodeCount", "hosted")
    assert run(checks.hosted_options_not_owned, "slurm: {options: {MaxNodeCount: 10}}") == []
