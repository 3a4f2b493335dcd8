"""Specification of node health checks (estategen.checks.health): a blueprint fragment in, a
finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import estate, joined, only, run

# --- node health checks --------------------------------------------------------------------------


HEALTH = "slurm: {health_check: {interval: 60}}"


def test_health_checks_default_to_what_the_pool_declares() -> None:
    from estategen.facts import health_checks

    lab = estate(HEALTH + "\nstorage: [{name: home, type: nfs, source: 'nas:/home', mount: /home}]")
    assert health_checks(lab, lab.pools_by_name["a100"]) == ("gpus", "mounts", "memory")
    assert run(checks.health_checks_have_facts, HEALTH) == []


def test_a_health_check_without_its_fact_is_refused() -> None:
    found = run(
        checks.health_checks_have_facts,
        joined(
            HEALTH,
            """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n[1-2]
            cpu: {sockets: 1, cores_per_socket: 2}
            memory_gb: 4
            gpus: {model: a100-sxm-80gb, count: 4}
            health_check: {checks: [gpus, mig, mounts]}
        storage: []
        """,
        ),
    )
    assert [(f.path, f.message) for f in found] == [
        (
            "node_pools[0].health_check.checks[1]",
            "check 'mig' verifies a MIG layout (`gpus.mig`), which pool 'a100' does not declare",
        ),
        (
            "node_pools[0].health_check.checks[2]",
            "check 'mounts' verifies file systems mounted on it (`storage[]`), which pool 'a100' "
            "does not declare",
        ),
    ]


def test_a_pool_health_check_needs_slurm_health_check() -> None:
    found = run(
        checks.health_checks_have_facts,
        """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: n1, memory_gb: 4,
             health_check: {checks: [memory]}}
        """,
    )
    only(found, "node_pools[0].health_check", "set slurm.health_check")


def test_a_kubernetes_pool_health_check_is_refused() -> None:
    found = run(
        checks.health_checks_have_facts,
        joined(
            HEALTH,
            """
        node_pools:
          - {name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n1,
             health_check: {checks: [gpus]}}
        """,
        ),
    )
    only(found, "node_pools[0].health_check", "health checks are run by slurmd")


@pytest.mark.parametrize(
    ("states", "text"),
    [
        ("[any, idle]", "`any` already runs the check in every state; remove idle"),
        ("[cycle]", "`cycle` spreads the runs over the interval and names no state"),
        ("[idle, idle]", "a node state is listed twice"),
    ],
)
def test_health_check_node_states_that_say_nothing_are_refused(states: str, text: str) -> None:
    found = run(
        checks.health_check_node_state_valid,
        f"slurm: {{health_check: {{node_state: {states}}}}}",
    )
    only(found, "slurm.health_check.node_state", text)


def test_health_check_node_states_that_combine_pass() -> None:
    for states in ("[any]", "[any, cycle]", "[idle, mixed, cycle]"):
        found = run(
            checks.health_check_node_state_valid,
            f"slurm: {{health_check: {{node_state: {states}}}}}",
        )
        assert found == [], states
