"""Names, identities and hosts: each thing named once, no name that already means something
where it is rendered, teams of known users, a complete directory, and every host in one pool
within the estate's bound.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from estategen.checks.core import article, check, choices, rule_id
from estategen.errors import Finding, issue
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.model import Estate, NodePool, Team
from estategen.reserved import (
    MARIADB_ACCOUNTS,
    POOL_NAMES,
    PROMETHEUS_LABELS,
    SLURM_ACCOUNTS,
    SLURM_NODES,
    SLURM_PARTITIONS,
    SLURM_QOS,
    SYSTEM_GROUPS,
    SYSTEM_USERS,
    namespace_reason,
)
from estategen.slurm_facts import parent_account
from estategen.slurm_names import qos_key

T = TypeVar("T")


def _duplicates(items: Iterable[T], key: Callable[[T], object]) -> Iterator[tuple[T, object]]:
    seen: set[object] = set()
    for item in items:
        value = key(item)
        if value in seen:
            yield item, value
        seen.add(value)


@check
def unique_names(estate: Estate) -> Iterator[Finding]:
    """Names identify things in slurm.conf, DNS, file names and groups: one each per kind."""
    kinds: list[tuple[str, list[tuple[str, str]]]] = [
        ("node pool", [(p.path, p.name) for p in estate.node_pools]),
        ("partition", [(p.path, p.name) for p in estate.slurm.partitions]),
        ("team", [(t.path, t.name) for t in estate.identity.teams]),
        ("user", [(u.path, u.name) for u in estate.identity.users]),
        ("Kubernetes cluster", [(c.path, c.name) for c in estate.kubernetes_clusters]),
        ("storage", [(s.path, s.name) for s in estate.storage]),
        ("mount point", [(s.path + ".mount", s.mount) for s in estate.storage]),
        (
            "team namespace",
            [(t.path, t.namespace) for t in _first_of_each_name(estate.identity.teams)],
        ),
        ("GPU model", list(estate.declared_gpu_models)),
    ]
    for cluster in estate.kubernetes_clusters:
        kinds.append(
            (
                f"priority class in {cluster.name}",
                [(c.path, c.name) for c in cluster.priority_classes],
            )
        )
        if cluster.queues:
            kinds.append(
                (f"queue team in {cluster.name}", [(t.path, t.team) for t in cluster.queues.teams])
            )
    for kind, entries in kinds:
        for (path, _), name in _duplicates(entries, key=lambda e: e[1]):
            yield issue(path, f"{kind} {name!r} is declared more than once")
    declared: dict[str, str] = {}
    for qos in estate.slurm.qos:
        other = declared.get(qos_key(qos.name))
        if other == qos.name:
            yield issue(qos.path, f"QoS {qos.name!r} is declared more than once")
        elif other is not None:
            yield issue(
                qos.path,
                f"QoS {qos.name!r} is QoS {other!r}: slurmdbd keeps QoS names in lower case "
                "and slurmctld finds them in any case; declare it once",
            )
        else:
            declared[qos_key(qos.name)] = qos.name
    dns: dict[str, str] = {}
    for team in _first_of_each_name(estate.identity.teams):
        first = dns.setdefault(team.kubernetes_name, team.name)
        if first != team.name:
            yield issue(
                f"{team.path}.name",
                f"team {team.name!r} and team {first!r} have one Kubernetes name, "
                f"{team.kubernetes_name!r} (their queues and labels): rename one",
            )


def _first_of_each_name(teams: Iterable[Team]) -> list[Team]:
    """Teams with a repeated name are reported once, as names, not again as namespaces."""
    seen: set[str] = set()
    out = []
    for team in teams:
        if team.name not in seen:
            seen.add(team.name)
            out.append(team)
    return out


@check
def unique_ids(estate: Estate) -> Iterator[Finding]:
    """A uid or gid names one identity on every host of both schedulers."""
    for user, uid in _duplicates(estate.identity.users, key=lambda u: u.uid):
        yield issue(f"{user.path}.uid", f"uid {uid} is already used by another user")
    for team, gid in _duplicates(estate.identity.teams, key=lambda t: t.gid):
        yield issue(f"{team.path}.gid", f"gid {gid} is already used by another team")


@check
def team_members_known(estate: Estate) -> Iterator[Finding]:
    users = {u.name for u in estate.identity.users}
    for team in estate.identity.teams:
        for i, member in enumerate(team.members):
            if member not in users:
                yield issue(
                    f"{team.path}.members[{i}]",
                    f"{member!r} is not a user in identity.users{choices(users, member)}",
                )


@check
def names_not_reserved(estate: Estate) -> Iterator[Finding]:
    """A name that already means something where it is rendered would change that meaning."""
    for user in estate.identity.users:
        if user.name in SYSTEM_USERS:
            yield _reserved(f"{user.path}.name", "user name", user.name, SYSTEM_USERS[user.name])
    estate_account = parent_account(estate)
    for team in estate.identity.teams:
        where = f"{team.path}.name"
        if team.name in SYSTEM_GROUPS:
            yield _reserved(
                where, "team name", team.name, f"as a Unix group, {SYSTEM_GROUPS[team.name]}"
            )
        if team.name in SLURM_ACCOUNTS:
            yield _reserved(
                where, "team name", team.name, f"as a Slurm account, {SLURM_ACCOUNTS[team.name]}"
            )
        if team.name == estate_account:
            yield _reserved(
                where,
                "team name",
                team.name,
                "as a Slurm account, the estate's account above every team",
            )
        reason = namespace_reason(team.namespace)
        if reason:
            yield _reserved(f"{team.path}.namespace", "team namespace", team.namespace, reason)
    for partition in estate.slurm.partitions:
        if partition.name.lower() in SLURM_PARTITIONS:
            yield _reserved(
                f"{partition.path}.name",
                "partition name",
                partition.name,
                SLURM_PARTITIONS[partition.name.lower()],
            )
    for qos in estate.slurm.qos:
        if qos_key(qos.name) in SLURM_QOS:
            yield _reserved(f"{qos.path}.name", "QoS name", qos.name, SLURM_QOS[qos_key(qos.name)])
    for pool in estate.node_pools:
        if pool.name in POOL_NAMES:
            yield _reserved(f"{pool.path}.name", "node pool name", pool.name, POOL_NAMES[pool.name])
    for label in estate.observability.labels:
        if label in PROMETHEUS_LABELS:
            yield _reserved(
                f"observability.labels.{label}", "label", label, PROMETHEUS_LABELS[label]
            )
    for pool in estate.slurm_pools:
        for host in sorted(SLURM_NODES.keys() & set(pool.hosts)):
            yield _reserved(f"{pool.path}.hosts", "Slurm node name", host, SLURM_NODES[host])
    accounting = estate.slurm.accounting
    if accounting and accounting.database.user in MARIADB_ACCOUNTS:
        account = accounting.database.user
        yield _reserved(
            "slurm.accounting.database.user",
            "accounting database user",
            account,
            f"as a MariaDB account, {MARIADB_ACCOUNTS[account]}; the slurmdbd role would set its "
            "password and leave it only the accounting database's privileges",
        )


def _reserved(path: str, what: str, name: str, reason: str) -> Finding:
    return issue(path, f"{what} {name!r} is reserved: {reason}; choose another name")


@check
def directory_complete(estate: Estate) -> Iterator[Finding]:
    directory = estate.identity.directory
    if directory.type in ("ldap", "freeipa"):
        for key in ("uri", "base_dn"):
            if getattr(directory, key) is None:
                yield issue(
                    "identity.directory",
                    f"{article(directory.type)} {directory.type} directory needs `{key}`",
                )
    if directory.bind_dn and not directory.bind_password:
        yield issue("identity.directory.bind_dn", "bind_dn needs bind_password: {secret: NAME}")


def host_budget(total: int, reserved: int = 0) -> list[Finding]:
    """The estate's host limit, for hosts counted in the model or in hostlists not expanded:
    ``total`` in its pools, ``reserved`` in its reservations' ``hosts`` (each reservation holds
    its own copy of the names; one over a whole pool or partition names it instead)."""
    found = []
    if total > MAX_ESTATE_HOSTS:
        found.append(
            issue(
                "node_pools",
                f"{total} hosts, above the estate limit of {MAX_ESTATE_HOSTS}",
                rule=rule_id(hosts_within_bounds),
            )
        )
    if reserved > MAX_ESTATE_HOSTS:
        found.append(
            issue(
                "slurm.reservations",
                f"their hosts name {reserved} hosts in all, above the limit of "
                f"{MAX_ESTATE_HOSTS}; hold a whole pool or partition with pools or partition",
                rule=rule_id(hosts_within_bounds),
            )
        )
    return found


@check
def hosts_within_bounds(estate: Estate) -> Iterator[Finding]:
    yield from host_budget(
        sum(len(p.hosts) for p in estate.node_pools),
        sum(len(r.hosts) for r in estate.slurm.reservations),
    )


@check
def host_in_one_pool(estate: Estate) -> Iterator[Finding]:
    """Every node belongs to exactly one pool and so to exactly one scheduler."""
    owner: dict[str, NodePool] = {}
    for pool in estate.node_pools:
        reported: set[str] = set()
        for host in pool.hosts:
            first = owner.setdefault(host, pool)
            if first is pool or first.name in reported:
                continue
            reported.add(first.name)
            across = (
                f" (both {first.scheduler} and {pool.scheduler})"
                if first.scheduler != pool.scheduler
                else ""
            )
            yield issue(
                f"{pool.path}.hosts",
                f"host {host} is already in pool {first.name!r}{across}; "
                "a host belongs to exactly one pool",
            )
        for host, times in Counter(pool.hosts).items():
            if times > 1:
                yield issue(f"{pool.path}.hosts", f"host {host} is listed {times} times")
                break
    for i, controller in enumerate(estate.slurm.controllers):
        node_pool = owner.get(controller)
        if node_pool and node_pool.scheduler == "kubernetes":
            yield issue(
                f"slurm.controllers[{i}]",
                f"{controller} is a Kubernetes node in pool {node_pool.name!r}; "
                "Slurm controllers stay on the Slurm side",
            )
