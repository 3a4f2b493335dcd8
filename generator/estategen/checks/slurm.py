"""Slurm's partitions, QoS, preemption and controllers; its reservations, the MPI ports and
the REST API.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime

from estategen import hostlist
from estategen.checks.core import check, choices, slurmctld_port_list
from estategen.errors import Finding, issue, quote
from estategen.facts import (
    RESERVATION_PERIODS,
    HeldNodes,
    partition_pools,
    reservation_end,
    reservation_nodes,
    reservation_start,
    shared_nodes,
    slurmctld_port_text,
    slurmd_port,
)
from estategen.model import Estate, Reservation
from estategen.reserved import SYSTEM_USERS
from estategen.slurm_facts import SLURM_USER
from estategen.slurm_names import qos_key


@check
def slurm_section_present(estate: Estate) -> Iterator[Finding]:
    if estate.slurm_pools and not estate.slurm.controllers:
        yield issue(
            "slurm" if estate.slurm.declared else "node_pools",
            "Slurm pools need slurm.controllers (the slurmctld hosts)",
        )


@check
def partitions_resolve(estate: Estate) -> Iterator[Finding]:
    pools = estate.pools_by_name
    teams = estate.teams_by_name
    qos = {q.name for q in estate.slurm.qos}
    qos_keys = {qos_key(q) for q in qos}
    for part in estate.slurm.partitions:
        for i, name in enumerate(part.pools):
            if name not in pools:
                yield issue(
                    f"{part.path}.pools[{i}]",
                    f"{name!r} is not a node pool"
                    f"{choices((p.name for p in estate.slurm_pools), name)}",
                )
            elif pools[name].scheduler != "slurm":
                yield issue(
                    f"{part.path}.pools[{i}]",
                    f"pool {name!r} is scheduled by Kubernetes; partitions draw on Slurm pools",
                )
        for i, name in enumerate(part.teams):
            if name not in teams:
                yield issue(
                    f"{part.path}.teams[{i}]", f"{name!r} is not a team{choices(teams, name)}"
                )
        # slurmctld finds a partition's QOS= in any case
        if part.qos and qos_key(part.qos) not in qos_keys:
            yield issue(f"{part.path}.qos", f"{part.qos!r} is not a QoS{choices(qos, part.qos)}")
    defaults = [p for p in estate.slurm.partitions if p.default]
    for extra in defaults[1:]:
        yield issue(
            f"{extra.path}.default",
            f"partition {defaults[0].name!r} is already the default; only one may be",
        )


@check
def qos_resolves(estate: Estate) -> Iterator[Finding]:
    names = {q.name for q in estate.slurm.qos}
    keys = {qos_key(name) for name in names}
    for qos in estate.slurm.qos:
        for i, other in enumerate(qos.preempt):
            # sacctmgr finds Preempt= QoS in any case (str_2_slurmdb_qos, slurmdb_defs.c)
            if qos_key(other) not in keys:
                yield issue(
                    f"{qos.path}.preempt[{i}]", f"{other!r} is not a QoS{choices(names, other)}"
                )
            elif qos_key(other) == qos_key(qos.name):
                yield issue(f"{qos.path}.preempt[{i}]", "a QoS cannot preempt itself")
        if qos.preempt and estate.slurm.scheduling.preemption.type != "qos":
            yield issue(
                f"{qos.path}.preempt",
                "QoS preemption needs slurm.scheduling.preemption.type: qos",
                level="warning",
            )
        if qos.preempt_mode and estate.slurm.scheduling.preemption.type != "qos":
            yield issue(
                f"{qos.path}.preempt_mode",
                "Slurm reads a QoS's PreemptMode only with PreemptType=preempt/qos: set "
                "slurm.scheduling.preemption.type: qos, or remove it",
            )
    uses_qos = estate.slurm.qos or any(p.qos for p in estate.slurm.partitions)
    if uses_qos and estate.slurm.accounting is None:
        yield issue("slurm.qos", "QoS live in slurmdbd: set slurm.accounting to use them")
    if (
        estate.slurm_pools
        and estate.slurm.scheduling.preemption.type == "qos"
        and not any(q.preempt for q in estate.slurm.qos)
    ):
        tiers = {p.priority_tier for p in estate.slurm.partitions}
        yield issue(
            "slurm.scheduling.preemption.type",
            "preemption type qos preempts only jobs whose QoS another QoS lists in `preempt`; "
            "no QoS lists another, so no job is ever preempted"
            + (
                " (partition priority_tier preempts only with type: partition_prio)"
                if len(tiers) > 1
                else ""
            ),
            level="warning",
        )


@check
def partition_preempt_mode_applies(estate: Estate) -> Iterator[Finding]:
    """slurm.conf(5): a partition's PreemptMode is read only with
    PreemptType=preempt/partition_prio. Under another type it is accepted only where it says
    what Slurm does anyway (the cluster-wide mode); a different mode would never apply."""
    preemption = estate.slurm.scheduling.preemption
    if preemption.type == "partition_prio":
        return
    applies = "off" if preemption.type == "none" else preemption.mode
    for part in estate.slurm.partitions:
        if part.preempt_mode is None or part.preempt_mode == applies:
            continue
        fix = (
            "set preempt_mode on the QoS its jobs run under (slurm.qos[].preempt_mode)"
            if preemption.type == "qos"
            else "set slurm.scheduling.preemption"
        )
        yield issue(
            f"{part.path}.preempt_mode",
            f"Slurm ignores a partition's PreemptMode with preemption.type {preemption.type}: "
            f"its jobs are preempted in mode {applies!r}, never {part.preempt_mode!r}; {fix}, "
            "or use preemption.type: partition_prio",
        )


@check
def preemption_has_a_mode(estate: Estate) -> Iterator[Finding]:
    """slurm.conf(5) of 22.05, PreemptMode OFF (the default): "only compatible with
    PreemptType=preempt/none at a global level"; slurmctld 22.05 stops at start on any other
    type with it ("PreemptType and PreemptMode values incompatible")."""
    preemption = estate.slurm.scheduling.preemption
    if preemption.type != "none" and preemption.mode == "off":
        yield issue(
            "slurm.scheduling.preemption.type",
            f"preemption type {preemption.type} needs a mode (cancel, requeue or suspend): "
            "with mode off, the default, slurmctld stops at start ('PreemptType and "
            "PreemptMode values incompatible')",
        )


@check
def controllers_share_state(estate: Estate) -> Iterator[Finding]:
    """A backup slurmctld takes over from the state the primary saved: it must see that state."""
    controllers = estate.slurm.controllers
    if len(controllers) < 2 or not estate.slurm_pools:
        return
    state = estate.slurm.site.paths.state_save_location
    for storage in estate.storage:
        # the folders above it are system folders, which the schema refuses as mount points
        if storage.mount != state:
            continue
        hosts = {h for p in estate.node_pools if storage.mounted_on(p.name) for h in p.hosts}
        if storage.pools is None or hosts.issuperset(controllers):
            return
    yield issue(
        "slurm.controllers",
        f"{len(controllers)} controllers, but StateSaveLocation={state} is local "
        "disk: a backup controller takes over from the state the primary saved there, so it "
        "must be shared storage. Mount it on every controller (a storage entry with mount "
        f"{state} and no pools), or list one controller",
        level="warning",
    )


# --- reservations, MPI and the REST API ---


def now() -> datetime:
    """The local time reservations are compared with; tests replace it with a fixed one.

    Only findings depend on it, never rendered bytes: the same blueprint renders the same
    reservations.scontrol whenever it is rendered.
    """
    return datetime.now()


@check
def reservations_valid(estate: Estate) -> Iterator[Finding]:
    """Each reservation names existing nodes, people and a time Slurm can still hold."""
    seen: set[str] = set()
    for res in estate.slurm.reservations:
        if res.name in seen:
            yield issue(f"{res.path}.name", f"reservation {res.name!r} is listed twice")
        seen.add(res.name)
        yield from _reservation_nodes(estate, res)
        yield from _reservation_people(estate, res)
        yield from _reservation_time(res)
    yield from _reservations_overlap(estate)


def _reservation_nodes(estate: Estate, res: Reservation) -> Iterator[Finding]:
    if not (res.pools or res.partition or res.hosts):
        yield issue(res.path, "a reservation needs its nodes: set pools, partition or hosts")
        return
    if res.pools and res.hosts:
        yield issue(f"{res.path}.hosts", "set pools or hosts, not both")
    for i, name in enumerate(res.pools):
        pool = estate.pools_by_name.get(name)
        if pool is None:
            yield issue(
                f"{res.path}.pools[{i}]",
                f"{name!r} is not a node pool{choices((p.name for p in estate.slurm_pools), name)}",
            )
        elif pool.scheduler != "slurm":
            yield issue(
                f"{res.path}.pools[{i}]",
                f"pool {name!r} is scheduled by Kubernetes; reservations hold Slurm nodes",
            )
    slurm_hosts = estate.slurm_hosts
    outside = [h for h in res.hosts if h not in slurm_hosts]
    if outside:
        yield issue(
            f"{res.path}.hosts",
            f"{len(outside)} host(s) in no Slurm pool: {quote(hostlist.compress(outside))}",
        )
    if res.partition:
        names = {p.name for p in estate.slurm.partitions}
        if res.partition not in names:
            yield issue(
                f"{res.path}.partition",
                f"{res.partition!r} is not a partition{choices(names, res.partition)}",
            )
            return
        # compared pool by pool: a pool's hosts are listed only when it is outside
        allowed = set(partition_pools(estate, res.partition))
        held = reservation_nodes(estate, res)
        owners = estate.host_pools
        slurm_pools = {p.name for p in estate.slurm_pools}
        pools = sorted(n for n in held.pools - allowed if n in slurm_pools)
        hosts = [h for h in held.hosts if owners.pool.get(h, "") in slurm_pools - allowed]
        if pools or hosts:
            key = "hosts" if res.hosts else "pools"
            count = sum(owners.size[n] for n in pools) + len(hosts)
            yield issue(
                f"{res.path}.{key}",
                f"{count} host(s) outside partition {res.partition!r}: "
                f"{quote(_held_hostlist(estate, pools, hosts))}; a reservation's nodes must be "
                "in its partition (the partition's jobs could never use the others)",
            )


def _held_hostlist(estate: Estate, pools: Iterable[str], hosts: Iterable[str]) -> str:
    """One hostlist of whole pools and single hosts; a pool's hosts are compressed once."""
    parts = [estate.pools_by_name[name].compressed_hosts for name in pools]
    hosts = list(hosts)
    if hosts:
        parts.append(hostlist.compress(hosts))
    return ",".join(parts)


def _reservation_people(estate: Estate, res: Reservation) -> Iterator[Finding]:
    if not (res.teams or res.users):
        yield issue(
            res.path,
            "a reservation needs who may use it: set teams (Slurm accounts) or users "
            "(slurmctld refuses a reservation without either)",
        )
    teams = estate.teams_by_name
    for i, name in enumerate(res.teams):
        if name not in teams:
            yield issue(f"{res.path}.teams[{i}]", f"{name!r} is not a team{choices(teams, name)}")
    users = {u.name for u in estate.identity.users}
    for i, name in enumerate(res.users):
        if name not in users:
            yield issue(f"{res.path}.users[{i}]", f"{name!r} is not a user{choices(users, name)}")


def _reservation_time(res: Reservation) -> Iterator[Finding]:
    if res.duration is None and res.end is None:
        yield issue(res.path, "set duration (a Slurm time) or end (a date and time)")
        return
    if res.duration is not None and res.end is not None:
        yield issue(f"{res.path}.end", "set duration or end, not both")
        return
    try:
        end = reservation_end(res)
    except ValueError as err:
        yield issue(f"{res.path}.duration", f"{res.duration!r} is not a valid Slurm time: {err}")
        return
    start = reservation_start(res)
    if end is not None and end <= start and res.end is None:
        yield issue(
            f"{res.path}.duration",
            f"duration {res.duration!r} is no time at all: a reservation lasts at least a "
            "minute; give a Slurm time such as '30' (minutes), '4:00:00' or '2-00:00:00', or "
            "UNLIMITED",
        )
        return
    if end is not None and end <= start:
        yield issue(f"{res.path}.end", f"end {res.end} is not after start {res.start}")
        return
    periods = [f for f in res.flags if f in RESERVATION_PERIODS]
    if len(periods) > 1:
        yield issue(f"{res.path}.flags", f"one recurrence at most, not {', '.join(periods)}")
    moment = now()
    if start >= moment:
        return
    if not periods and end is not None and end <= moment:
        yield issue(
            f"{res.path}.start",
            f"reservation {res.name!r} ended at {end.isoformat()}, in the past; remove it or "
            "move it (the Ansible task deletes reservations the blueprint drops)",
        )
    else:
        yield issue(
            f"{res.path}.start",
            f"starts in the past ({res.start}); slurmctld refuses to create a reservation that "
            "started more than 10 minutes ago, so only one that already exists is kept",
            level="warning",
        )


def _reservations_overlap(estate: Estate) -> Iterator[Finding]:
    """slurmctld refuses a reservation over nodes another one holds at the same time, unless
    one of them is `maint` or `overlap`; the later one in the blueprint (created second) is
    the one refused.

    Swept in order of start: each reservation looks up, by the pools it holds whole and the
    hosts it holds one by one (:class:`HeldNodes`), which of those still running hold them.
    No pool's hosts are listed, and no two reservations apart in time are compared.
    """
    spans: list[tuple[datetime, int, datetime | None]] = []
    reservations = estate.slurm.reservations
    for index, res in enumerate(reservations):
        flags = set(res.flags)
        if flags & {"maint", "overlap"} or flags & set(RESERVATION_PERIODS):
            continue
        try:
            end = reservation_end(res)
        except ValueError:
            continue
        if end is None or reservation_start(res) < end:  # no time at all: a finding of its own
            spans.append((reservation_start(res), index, end))
    spans.sort(key=lambda span: (span[0], span[1]))
    # the reservations running at the sweep's time, by what they hold
    whole: defaultdict[str, set[int]] = defaultdict(set)  # pool -> holding it whole
    partly: defaultdict[str, set[int]] = defaultdict(set)  # pool -> holding some of its hosts
    by_host: defaultdict[str, set[int]] = defaultdict(set)  # host -> holding it alone
    ending: list[tuple[datetime, int]] = []
    # for the later of each pair in the blueprint: the earlier ones it meets
    refused: defaultdict[int, set[int]] = defaultdict(set)
    for start, index, end in spans:
        while ending and ending[0][0] <= start:
            _, gone = heapq.heappop(ending)
            _hold(reservation_nodes(estate, reservations[gone]), gone, whole, partly, by_host, -1)
        held = reservation_nodes(estate, reservations[index])
        met: set[int] = set()
        for pool in held.pools:
            met |= whole[pool] | partly[pool]
        for pool in held.host_pools:
            met |= whole[pool]
        for host in held.hosts:
            met |= by_host[host]
        for meeting in met:
            if reservations[meeting].name != reservations[index].name:
                refused[max(index, meeting)].add(min(index, meeting))
        _hold(held, index, whole, partly, by_host, +1)
        if end is not None:
            heapq.heappush(ending, (end, index))
    for index in sorted(refused):
        res = reservations[index]
        other = reservations[min(refused[index])]
        pools, hosts = shared_nodes(
            estate, reservation_nodes(estate, res), reservation_nodes(estate, other)
        )
        more = len(refused[index]) - 1
        yield issue(
            res.path,
            f"holds {quote(_held_hostlist(estate, pools, hosts))} while reservation "
            f"{other.name!r} does{f' (and {more} more reservation(s))' if more else ''}; "
            "slurmctld refuses the second unless one has flag maint or overlap",
        )


def _hold(
    held: HeldNodes,
    index: int,
    whole: defaultdict[str, set[int]],
    partly: defaultdict[str, set[int]],
    by_host: defaultdict[str, set[int]],
    step: int,
) -> None:
    """Enter (step +1) or remove (-1) a reservation in the sweep's lookup tables."""
    for table, keys in ((whole, held.pools), (partly, held.host_pools), (by_host, held.hosts)):
        for key in keys:
            if step > 0:
                table[key].add(index)
            else:
                table[key].discard(index)


@check
def mpi_ports_valid(estate: Estate) -> Iterator[Finding]:
    ports = estate.slurm.mpi.ports
    if ports is None:
        return
    low, high = ports
    if not 1024 <= low < high <= 65_535:
        yield issue(
            "slurm.mpi.ports",
            f"{low}-{high} is not a range of unprivileged ports: 1024 <= first < last <= 65535",
        )
    elif any(low <= port <= high for port in _slurm_daemon_ports(estate)):
        yield issue(
            "slurm.mpi.ports",
            f"{low}-{high} includes the slurmctld or slurmd port "
            f"({slurmctld_port_text(estate)}, {slurmd_port(estate)})",
        )


@check
def rest_api_valid(estate: Estate) -> Iterator[Finding]:
    rest = estate.slurm.rest_api
    if rest is None:
        return
    if not estate.slurm_pools:
        yield issue("slurm.rest_api", "slurmrestd needs Slurm: the estate has no Slurm pools")
    if rest.user in ("root", SLURM_USER):
        yield issue(
            "slurm.rest_api.user",
            f"slurmrestd must not run as {rest.user!r} (root or SlurmUser): anyone reaching it "
            "could act as that user; choose an unprivileged user such as 'slurmrestd'",
        )
    elif rest.user in SYSTEM_USERS:
        yield issue(
            "slurm.rest_api.user",
            f"slurmrestd must not run as {rest.user!r}: {SYSTEM_USERS[rest.user]}; the "
            "slurmrestd role would take that account over (its group, shell and home) and "
            "slurmrestd would act with its rights; choose a user of its own such as 'slurmrestd'",
        )
    if rest.user in {u.name for u in estate.identity.users}:
        yield issue(
            "slurm.rest_api.user",
            f"{rest.user!r} is a person of identity.users; slurmrestd runs as a service user",
        )
    taken = {port: "slurmctld" for port in slurmctld_port_list(estate)}
    taken[slurmd_port(estate)] = "slurmd"
    accounting = estate.slurm.accounting
    if accounting and accounting.host == rest.host:
        taken[accounting.port] = "slurmdbd"
    if rest.port in taken:
        yield issue(
            "slurm.rest_api.port",
            f"port {rest.port} is {taken[rest.port]}'s; slurmrestd's default is 6820",
        )


def _slurm_daemon_ports(estate: Estate) -> list[int]:
    return [*slurmctld_port_list(estate), slurmd_port(estate)]
