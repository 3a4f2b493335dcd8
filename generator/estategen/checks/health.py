"""Node health checks: each verifies a fact the blueprint states about its pool, in node
states slurmd knows.
"""

from __future__ import annotations

from collections.abc import Iterator

from estategen.checks.core import check
from estategen.errors import Finding, issue
from estategen.facts import pool_mounts
from estategen.model import Estate

_HEALTH_FACTS = {
    "gpus": "`gpus`",
    "mig": "a MIG layout (`gpus.mig`)",
    "mounts": "file systems mounted on it (`storage[]`)",
    "memory": "`memory_gb`",
}


@check
def health_checks_have_facts(estate: Estate) -> Iterator[Finding]:
    """A pool's health check verifies what the blueprint says about it: a check without that
    fact would check nothing, and a check outside Slurm or without slurm.health_check never
    runs."""
    for pool in estate.node_pools:
        if pool.health_checks is None:
            continue
        path = f"{pool.path}.health_check"
        if pool.scheduler != "slurm":
            yield issue(
                path,
                "health checks are run by slurmd and drain Slurm nodes; a Kubernetes pool's "
                "node health belongs to its cluster (node-problem-detector, GPU operator)",
            )
            continue
        if estate.slurm.health_check is None:
            yield issue(
                path,
                "set slurm.health_check ({interval, node_state}) so that slurmd runs this "
                "pool's health check",
            )
        facts = {
            "gpus": pool.gpus is not None,
            "mig": bool(pool.gpus and pool.gpus.mig),
            "mounts": bool(pool_mounts(estate, pool)),
            "memory": pool.memory_gb is not None,
        }
        seen: set[str] = set()
        for i, name in enumerate(pool.health_checks):
            if name in seen:
                yield issue(f"{path}.checks[{i}]", f"check {name!r} is listed twice")
            seen.add(name)
            if not facts[name]:
                yield issue(
                    f"{path}.checks[{i}]",
                    f"check {name!r} verifies {_HEALTH_FACTS[name]}, which pool {pool.name!r} "
                    "does not declare",
                )


@check
def health_check_node_state_valid(estate: Estate) -> Iterator[Finding]:
    """HealthCheckNodeState: ANY already covers every state, and CYCLE only spreads the runs."""
    health = estate.slurm.health_check
    if health is None:
        return
    states = set(health.node_state)
    path = "slurm.health_check.node_state"
    if len(states) < len(health.node_state):
        yield issue(path, "a node state is listed twice")
    if "any" in states and states - {"any", "cycle"}:
        yield issue(
            path,
            f"`any` already runs the check in every state; remove "
            f"{', '.join(sorted(states - {'any', 'cycle'}))}",
        )
    if states == {"cycle"}:
        yield issue(
            path,
            "`cycle` spreads the runs over the interval and names no state; add `any`, or "
            "idle, alloc, mixed",
        )
    if not estate.slurm_pools:
        yield issue("slurm.health_check", "the estate has no Slurm pools to check")
