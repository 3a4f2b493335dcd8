"""Kubernetes team queues: the teams they name, and quotas within the cluster's capacity."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator

from estategen.checks.core import check, choices
from estategen.errors import Finding, issue
from estategen.kubernetes_facts import quota_capacity
from estategen.model import Estate


@check
def queues_resolve(estate: Estate) -> Iterator[Finding]:
    teams = estate.teams_by_name
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        models = quota_capacity(estate, cluster.name)
        for queue in cluster.queues.teams:
            if queue.team not in teams:
                yield issue(
                    f"{queue.path}.team",
                    f"{queue.team!r} is not a team{choices(teams, queue.team)}",
                )
            for key in queue.quota:
                if key not in models:
                    yield issue(
                        f"{queue.path}.quota.{key}",
                        f"no pool in cluster {cluster.name!r} provides {key!r}"
                        f"{choices(models, key)}",
                    )


@check
def quotas_within_capacity(estate: Estate) -> Iterator[Finding]:
    """Nominal quotas of a cohort may not promise more GPUs than the cluster has."""
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        capacity = quota_capacity(estate, cluster.name)
        promised: dict[str, int] = defaultdict(int)
        askers: Counter[str] = Counter()
        for queue in cluster.queues.teams:
            for key, amount in queue.quota.items():
                promised[key] += amount
                askers[key] += 1
                if key in capacity and amount > capacity[key]:
                    yield issue(
                        f"{queue.path}.quota.{key}",
                        f"quota {amount} is above the {capacity[key]} {key} in cluster "
                        f"{cluster.name!r}",
                    )
        for key, amount in sorted(promised.items()):
            # one team's quota alone is reported above; the sum matters when teams share
            if key in capacity and amount > capacity[key] and askers[key] > 1:
                yield issue(
                    f"{cluster.path}.queues",
                    f"nominal quotas for {key} add up to {amount}, above the "
                    f"{capacity[key]} in cluster {cluster.name!r}",
                )
