"""slurm.conf's NodeName lines (with gres.conf and topology.conf) as node pools: nodes of
one shape and the same partitions are one pool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from estategen import hostlist, slurmconf
from estategen.declarations import NODE_POOL_PARAMETERS, NodePoolParameter
from estategen.importer.converters import _LOWER_CASE, _WHOLE, Unsayable, _host, _lowered
from estategen.importer.gres import (
    SHARED,
    Decided,
    default_files,
    first_type,
    gres_lines,
    named,
    settle_global_autodetect,
    settle_gpu_lines,
    settle_shared,
    unsettled,
)
from estategen.importer.node_gpus import gres_item, mig_gres, mig_profiles, node_gpu_types
from estategen.importer.outcomes import _Run
from estategen.importer.partitions import _partition, _Site, _slurm_partition_defaults
from estategen.limits import MAX_PARTITIONS, MAX_POOLS
from estategen.model import spread
from estategen.schema.patterns import FEATURE, NODESET
from estategen.slurm_facts import address_list, real_memory_mib
from estategen.slurmconf import ConfFile, ConfRecord, ConfSyntaxError, Setting, Where

_FEATURE = re.compile(FEATURE)
_GIB = 1024

# Node record keys -> handled by the grouping (the rest are refused per record line).
_NODE_KEYS = {
    "cpus",
    "procs",
    "boards",
    "sockets",
    "socketsperboard",
    "corespersocket",
    "threadspercore",
    "gres",
    "feature",
    "features",
    "state",
    "nodeaddr",
    *(parameter.slurm.lower() for parameter in NODE_POOL_PARAMETERS),
}
# the declared parameters the shape reads, by their keys
_DECLARED = {parameter.key: parameter for parameter in NODE_POOL_PARAMETERS}


@dataclass(frozen=True, slots=True)
class _Shape:
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int | None  # CPUs= when it counts the cores, not the threads
    real_memory: int  # MiB, the site's RealMemory
    gpu_model: str | None
    gpu_type: str | None  # the site's GRES type name when it is not the model's name
    gpu_count: int
    gpu_typed: bool  # False: Gres=gpu:N with no type in slurm.conf or gres.conf
    gpu_mig: tuple[str, ...]  # one GPU's MIG layout, when the GRES are MIG profiles
    features: tuple[str, ...]
    weight: int
    switch: str | None
    cloud: bool = False  # State=CLOUD
    addressed: bool = False  # NodeAddr given (each host's is in _node_addresses)
    gpu_files: tuple[str, ...] = ()  # the GPUs' device files, when not the render's default
    # gpus.sharing: MPS shares or shards a GPU, by GRES name (mps, shard)
    gpu_sharing: tuple[tuple[str, int], ...] = ()
    # the GPUs of the node's other types: (model, the site's GRES type, count, device files)
    gpu_other_types: tuple[tuple[str, str | None, int, tuple[str, ...]], ...] = ()


def _memory(real_mib: int) -> dict[str, int]:
    """memory_gb (the whole GiB that hold the site's RealMemory) and, unless estategen's
    reserve lands on it anyway, real_memory_mib: the site's RealMemory exactly."""
    memory_gb = max(1, -(-real_mib // _GIB))
    if real_memory_mib(memory_gb) == real_mib:
        return {"memory_gb": memory_gb}
    return {"memory_gb": memory_gb, "real_memory_mib": real_mib}


def _leaf_switches(topo: ConfFile, plugin: Setting | None, run: _Run) -> dict[str, str]:
    """host -> the leaf switch (a SwitchName with Nodes=) it hangs from. slurmctld reads
    topology.conf only for the tree plugin (``plugin``, slurm.conf's TopologyPlugin):
    without it the site schedules as if flat, and so does the blueprint."""
    out: dict[str, str] = {}
    reader = plugin.value.lower() if plugin else None
    unread = (
        f"slurm.conf sets {f'TopologyPlugin={plugin.value}' if plugin else 'no TopologyPlugin'}, "
        "so slurmctld does not read this line and schedules as if the nodes it names hung "
        "from one switch; so does the blueprint"
    )
    for record in topo.records:
        head = Setting(record.kind, record.name, record.where)
        block = record.kind != "SwitchName"
        if reader != ("topology/block" if block else "topology/tree"):
            run.dropped(head, unread)
            continue
        if record.kind != "SwitchName":
            run.refused(head, "topology/block records are not imported", "topology.conf")
            continue
        nodes = record.get("Nodes")
        if nodes is None:
            run.mapped(head, "the spine estategen renders above the leaf switches")
            continue
        try:
            name = _host(record.name.lower())  # switch names appear in no scontrol fact
        except Unsayable as why:
            run.refused(head, f"node_pools[].network.switch: {why}", "topology.conf")
            continue
        for host in slurmconf.expand_hosts(nodes.value, nodes.where, run.budget):
            out[host] = name
        run.mapped(head, "node_pools[].network.switch")
        for setting in record.settings:
            if setting.name != "nodes":
                run.refused(setting, "not a blueprint key", f"topology.conf SwitchName={name}")
    for setting in topo.parameters:
        if reader in ("topology/tree", "topology/block"):
            run.refused(setting, "not a blueprint key", "topology.conf")
        else:
            run.dropped(setting, unread)
    return out


def _pool_autodetect(
    hosts: list[str], per_host: Mapping[str, Setting], every: Setting | None, run: _Run
) -> Setting | None:
    """The AutoDetect setting a pool's hosts run: their gpu lines' own (one value for them
    all), else the line for every node. Hosts of one pool that differ keep the line for every
    node, and their own lines are refused."""
    own = {host: per_host[host] for host in hosts if host in per_host}
    values = {setting.value.lower() for setting in own.values()}
    if own and len(own) == len(hosts) and len(values) == 1:
        return next(iter(own.values()))
    for setting in dict.fromkeys(own.values()):
        run.withdraw(setting)
        run.refused(
            setting,
            "gpus.autodetect is one value per pool, and this pool's nodes (same shape and "
            "partitions) do not all have this one",
            "gres.conf",
        )
    return every


def _node_shape(
    record: ConfRecord,
    gres_records: tuple[ConfRecord, ...],
    switch: str | None,
    models: dict[str, dict[str, Any]],
    run: _Run,
    seen: set[Where],
    label: str,
    addressed: bool = False,
    sources: dict[str, list[Setting]] | None = None,
    decided: Decided | None = None,
) -> _Shape:
    """The shape of a NodeName line's nodes, whose gres.conf gpu, mps and shard lines are
    ``gres_records``;
    ``sources`` gets, by pool key (gpus, features), the settings that gave it."""
    first = record.where not in seen
    seen.add(record.where)
    gpu_lines = named(gres_records, "gpu")
    by_name = {s.name: s for s in record.settings}  # the last one wins, as ConfRecord.get

    def get(key: str) -> Setting | None:
        return by_name.get(key.lower())

    def note_mapped(setting: Setting | None, target: str) -> None:
        if setting is not None and sources is not None and target.startswith("node_pools[]."):
            sources.setdefault(target.removeprefix("node_pools[].").split(" ")[0], []).append(
                setting
            )
        if setting is not None and first:
            run.mapped(setting, target)

    def note_refused(setting: Setting, reason: str) -> None:
        if first:
            run.refused(setting, reason, f"NodeName={label}")

    def number(key: str, default: int) -> int:
        setting = get(key)
        if setting is None:
            return default
        if not _WHOLE.fullmatch(setting.value):
            raise ConfSyntaxError(setting.where, f"{setting.key} must be a number")
        return int(setting.value)

    def declared(parameter: NodePoolParameter) -> int:
        """The line's value of a declared parameter (Slurm's default without it), mapped to
        its key; beyond the key's bounds it is refused and the nearest bound kept."""
        value = number(parameter.slurm, parameter.slurm_default)
        setting = get(parameter.slurm)
        low, high = parameter.value.low, parameter.value.high
        if low <= value <= high:
            note = f" ({parameter.import_note})" if parameter.import_note else ""
            note_mapped(setting, f"{parameter.path}{note}")
            return value
        note_refused(
            setting or record.settings[0], f"{parameter.slurm} out of range ({low} to {high})"
        )
        return min(max(value, low), high)

    boards = number("Boards", 1)
    sockets = number("Sockets", 0) or number("SocketsPerBoard", 0) * boards
    cores = number("CoresPerSocket", 1)
    threads = number("ThreadsPerCore", 1)
    # Procs is slurmctld's old name of CPUs, read where no CPUs is given (read_config.c,
    # _parse_nodename of 22.05 and 24.11)
    cpus_key = "CPUs" if get("CPUs") is not None else "Procs"
    cpus = number(cpus_key, 0)
    if not sockets:
        if cpus and get("CoresPerSocket") is None and get("ThreadsPerCore") is None:
            # Only CPUs: slurmctld makes each CPU a socket of one core (slurm.conf(5)
            # Sockets: "by default ... the value of CPUs"); a pool has at most 16 sockets.
            sockets, cores, threads = (cpus, 1, 1) if cpus <= 16 else (1, cpus, 1)
        elif cpus:
            sockets = max(1, cpus // max(1, cores * threads))
        else:
            sockets = 1
    for key in ("Sockets", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "Boards"):
        note_mapped(get(key), "node_pools[].cpu")
    cpus_setting = get(cpus_key)
    unread = get("Procs") if cpus_key == "CPUs" else None
    if unread is not None and first:
        run.dropped(unread, "slurmctld reads Procs only where no CPUs is given")
    core_cpus = None
    if cpus_setting is not None:
        if cpus and threads > 1 and cpus == sockets * cores:
            core_cpus = cpus  # each core a CPU
            note_mapped(cpus_setting, "node_pools[].cpu.cpus")
        elif cpus and cpus != sockets * cores * threads:
            note_refused(cpus_setting, "CPUs other than the cores or the threads")
        else:
            note_mapped(cpus_setting, "node_pools[].cpu")
    if sockets > 16:
        sockets, cores = 1, sockets * cores
    real = declared(_DECLARED["real_memory_mib"])
    model, kind, count, typed = None, None, 0, True
    # the node's GPUs of other types than the first: (model, GRES type, count)
    others: tuple[tuple[str, str | None, int], ...] = ()
    mig: tuple[str, ...] = ()
    gres = get("Gres")
    features: list[str] = []
    for key in ("Feature", "Features"):
        setting = get(key)
        if setting is None:
            continue
        kept = []
        for item in filter(None, setting.value.split(",")):
            if _FEATURE.fullmatch(item):
                kept.append(item)
            else:
                note_refused(Setting(setting.key, item, setting.where), "not a feature name")
        features += kept
        note_mapped(setting, "node_pools[].features")
    if gres is not None and mig_profiles(gres.value):
        model, count, mig, kind = mig_gres(gres, features, note_mapped, note_refused, run)
    elif gres is not None:
        types, typed = node_gpu_types(
            gres, first_type(gpu_lines), models, note_mapped, note_refused, run
        )
        if types:
            (model, kind, count), others = types[0], types[1:]
    site_type = (kind or model) if typed and not mig else None
    mig_types = tuple(f"{kind}_{p}" if kind else p for p in dict.fromkeys(mig))
    type_files, file_settings = settle_gpu_lines(
        gpu_lines,
        ((site_type, count if model else 0), *((k or m, n) for m, k, n in others)),
        mig_types,
        run,
        {} if decided is None else decided,
        names_gpu=gres_item(gres, "gpu") is not None,
    )
    files = type_files[0]
    if sources is not None and file_settings:
        sources.setdefault("gpus.files", []).extend(file_settings)
    items = {shared.name: gres_item(gres, shared.name) for shared in SHARED}
    # slurmctld ties one shared GRES to a node's GPUs (checks.gpus.sharing_fits_scheduler)
    both = (
        "shard and mps on one node: slurmctld ties one shared GRES to a node's GPUs and "
        "miscounts them with both, and the blueprint refuses gpus.sharing with shard and mps"
        if all(items.values())
        else "a node of several GPU types: the blueprint shares the GPUs of one model a node "
        "(gpus.sharing with gpus.other_types)"
        if others
        else ""
    )
    sharing: dict[str, int] = {}
    for shared in SHARED:
        given = items[shared.name]
        per_gpu, why, lines = settle_shared(
            shared,
            given,
            named(gres_records, shared.name),
            count if model else 0,
            bool(mig),
            list(files) or default_files(count),
            run,
            {} if decided is None else decided,
            both,
        )
        if given is None:
            continue
        if why:
            note_refused(given, why)
        elif per_gpu is not None:
            sharing[shared.name] = per_gpu
            note_mapped(given, shared.key)
            # refused with the Gres item if validate refuses the count
            if sources is not None:
                key = shared.key.removeprefix("node_pools[].")
                sources.setdefault(key, []).extend(lines)
    weight = declared(_DECLARED["weight"])
    state = get("State")
    cloud = False
    if state is not None:
        if state.value.upper() in ("UNKNOWN", "IDLE"):
            note_mapped(state, "State=UNKNOWN, as estategen renders nodes")
        elif state.value.upper() == "CLOUD":
            cloud = True
            note_mapped(state, "node_pools[].state")
        else:
            note_refused(state, "node State other than UNKNOWN or CLOUD is not a blueprint key")
    for setting in record.settings:
        if setting.name not in _NODE_KEYS:
            note_refused(setting, "not a blueprint key")
    if addressed:
        note_mapped(get("NodeAddr"), "node_pools[].addresses")
    return _Shape(
        sockets,
        cores,
        threads,
        core_cpus,
        real,
        model,
        kind,
        count,
        typed,
        mig,
        tuple(dict.fromkeys(features)),
        weight,
        switch,
        cloud,
        addressed,
        files,
        tuple(sorted(sharing.items())),
        tuple((m, k, n, f) for (m, k, n), f in zip(others, type_files[1:], strict=True)),
    )


def _node_addresses(conf: ConfFile, run: _Run) -> dict[str, str]:
    """host -> its NodeAddr: a NodeName line's addresses pair with its hosts in order; a line
    whose addresses are not one per host is refused (its nodes are reached by name)."""
    out: dict[str, str] = {}
    for record in slurmconf.with_defaults(conf.records, "NodeName"):
        setting = record.get("NodeAddr")
        if setting is None:
            continue
        hosts = slurmconf.expand_hosts(record.name, record.where, run.budget)
        try:
            addresses = hostlist.expand(setting.value, addresses=True)
            run.budget.spend_names(len(addresses), setting.where)
        except hostlist.HostlistError as err:
            run.refused(setting, f"node_pools[].addresses: {err}", f"NodeName={record.name}")
            continue
        if len(addresses) != len(hosts):
            run.refused(
                setting,
                f"node_pools[].addresses: {len(addresses)} addresses for {len(hosts)} nodes "
                "(one per node)",
                f"NodeName={record.name}",
            )
            continue
        out.update(zip(hosts, addresses, strict=True))
    return out


def _nodeset_hosts(
    conf: ConfFile, all_nodes: Mapping[str, ConfRecord], run: _Run
) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    for record in conf.of_kind("NodeSet"):
        head = Setting("NodeSet", record.name, record.where)
        nodes = record.get("Nodes")
        feature = record.get("Feature")
        if nodes is not None:
            sets[record.name] = _hosts_of(nodes, all_nodes, sets, run.budget)
        elif feature is not None:
            run.budget.spend_names(len(all_nodes), feature.where)  # every node is looked at
            sets[record.name] = [
                host
                for host, node in all_nodes.items()
                if any(
                    feature.value in (s.value.split(","))
                    for s in node.settings
                    if s.name in ("feature", "features")
                )
            ]
        run.mapped(head, "expanded into the partitions that name it")
    return sets


def _hosts_of(
    setting: Setting,
    all_nodes: Mapping[str, ConfRecord],
    sets: Mapping[str, list[str]],
    budget: slurmconf.Budget,
) -> list[str]:
    """The hosts a partition's or NodeSet's Nodes= names (hosts, NodeSets or ALL), each name
    counted against ``budget`` before it is expanded."""
    if setting.value.upper() == "ALL":
        budget.spend_names(len(all_nodes), setting.where)
        return list(all_nodes)
    try:
        items = (
            hostlist.split_items(setting.value)
            if "[" in setting.value or "]" in setting.value
            else setting.value.split(",")
        )
    except hostlist.HostlistError as err:
        raise ConfSyntaxError(setting.where, f"Nodes: {err}") from None
    hosts: list[str] = []
    for item in items:
        if item in sets:
            budget.spend_names(len(sets[item]), setting.where)
            hosts += sets[item]
            continue
        for host in slurmconf.expand_hosts(item, setting.where, budget):
            if host not in all_nodes:
                raise ConfSyntaxError(setting.where, f"node {host!r} has no NodeName line")
            hosts.append(host)
    return hosts


def _nodes_and_partitions(
    conf: ConfFile,
    gres_conf: ConfFile | None,
    leaves: Mapping[str, str],
    models: dict[str, dict[str, Any]],
    run: _Run,
    site: _Site,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], set[str], set[str]]:
    all_nodes = slurmconf.nodes(conf, run.budget)
    for record in conf.of_kind("NodeName"):
        head = Setting("NodeName", record.name, record.where)
        if record.name.upper() == "DEFAULT":
            run.mapped(head, "folded into the NodeName lines that follow")
        elif _lowered(record.name):
            lower = record.name.lower()
            run.changed(head, f"node_pools[].hosts: {lower}; {_LOWER_CASE.format(name=lower)}")
        else:
            run.mapped(head, "node_pools[].hosts (pools group nodes by shape and partitions)")
    for kind in ("DownNodes", "FrontendName"):
        for record in conf.of_kind(kind):
            run.refused(Setting(kind, record.name, record.where), "not a blueprint key")
    sets = _nodeset_hosts(conf, all_nodes, run)
    addresses = _node_addresses(conf, run)
    gpu_lines, every_detect, host_detect = gres_lines(gres_conf, all_nodes, run)
    decided: Decided = {}
    part_records = slurmconf.with_defaults(conf.records, "PartitionName")
    if len(part_records) > MAX_PARTITIONS:
        raise ConfSyntaxError(
            part_records[MAX_PARTITIONS].where,
            f"more than {MAX_PARTITIONS} partitions, the blueprint's limit",
        )
    for record in conf.of_kind("PartitionName"):
        if record.name.upper() == "DEFAULT":
            run.mapped(Setting("PartitionName", "DEFAULT", record.where), "folded into partitions")
    membership: dict[str, list[str]] = {host: [] for host in all_nodes}
    part_hosts: dict[str, list[str]] = {}
    for record in part_records:
        nodes = record.get("Nodes")
        hosts = _hosts_of(nodes, all_nodes, sets, run.budget) if nodes is not None else []
        part_hosts[record.name] = hosts
        for host in dict.fromkeys(hosts):
            membership[host].append(record.name)
    seen: set[Where] = set()
    line_names = {r.where: r.name for r in conf.of_kind("NodeName")}
    groups: dict[tuple[_Shape, tuple[str, ...]], list[str]] = {}
    # the hosts of one NodeName line share a shape unless gres.conf, topology.conf or NodeAddr
    # set them apart: derived once per line and difference (100,000 hosts, a few lines)
    # nodes that differ only in their Weight are one pool, each host keeping its weight
    # (node_pools[].host_weights): the shapes are kept without it, each host's aside
    shapes: dict[tuple[Where, tuple[Where, ...], str | None, bool], tuple[_Shape, int]] = {}
    shape_sources: dict[_Shape, dict[str, list[Setting]]] = {}
    host_weight: dict[str, int] = {}
    for host, record in all_nodes.items():
        lines = gpu_lines.get(host, ())
        key = (record.where, tuple(r.where for r in lines), leaves.get(host), host in addresses)
        known = shapes.get(key)
        if known is not None:
            shape, host_weight[host] = known
        else:
            given: dict[str, list[Setting]] = {}
            weighed = _node_shape(
                record,
                lines,
                key[2],
                models,
                run,
                seen,
                line_names.get(record.where, host),
                key[3],
                given,
                decided,
            )
            shape = replace(weighed, weight=0)
            shapes[key] = (shape, weighed.weight)
            host_weight[host] = weighed.weight
            for pool_key, settings in given.items():
                shape_sources.setdefault(shape, {}).setdefault(pool_key, []).extend(settings)
        groups.setdefault((shape, tuple(membership[host])), []).append(host)
    unsettled(gres_conf, run)
    groups = _across_switches(groups, shape_sources)
    if len(groups) > MAX_POOLS:
        beyond = all_nodes[list(groups.values())[MAX_POOLS][0]]
        raise ConfSyntaxError(
            beyond.where,
            f"nodes of more than {MAX_POOLS} shapes and partition sets, and a blueprint holds "
            f"at most {MAX_POOLS} node pools; this line's nodes are the first beyond",
        )
    pools: list[dict[str, Any]] = []
    pool_of: dict[str, str] = {}
    used: set[str] = set()
    every_taken = False  # a pool's gpus.autodetect is gres.conf's line for every node
    # the renderer names a pool's addresses in one NodeAddr expression, which names at most
    # hostlist.MAX_EXPANSION: nodes with addresses go to pools of at most that many
    chunk = hostlist.MAX_EXPANSION
    pieces = [
        (shape, hosts[start : start + chunk] if shape.addressed else hosts)
        for (shape, _), hosts in groups.items()
        for start in (range(0, len(hosts), chunk) if shape.addressed else (0,))
    ]
    for shape, hosts in pieces:
        name = _pool_name(hosts, used)
        pool: dict[str, Any] = {
            "name": name,
            "scheduler": "slurm",
            "hosts": _host_expressions(hosts),
            "cpu": {
                "sockets": shape.sockets,
                "cores_per_socket": shape.cores_per_socket,
                "threads_per_core": shape.threads_per_core,
                **({"cpus": shape.cpus} if shape.cpus else {}),
            },
            **_memory(shape.real_memory),
        }
        detect = (
            _pool_autodetect(hosts, host_detect, every_detect, run) if shape.gpu_model else None
        )
        if shape.gpu_model:
            gpus: dict[str, Any] = {"model": shape.gpu_model, "count": shape.gpu_count}
            if shape.gpu_mig:
                gpus["mig"] = list(shape.gpu_mig)
            if shape.gpu_type:
                gpus["gres_type"] = shape.gpu_type
            if not shape.gpu_typed:
                gpus["typed"] = False  # the site's Gres=gpu:N names no type
            if shape.gpu_other_types:
                gpus["other_types"] = [
                    {
                        "model": model,
                        "count": count,
                        **({"gres_type": kind} if kind else {}),
                        **({"files": list(files)} if files else {}),
                    }
                    for model, kind, count, files in shape.gpu_other_types
                ]
            every_model = [shape.gpu_model, *(kind[0] for kind in shape.gpu_other_types)]
            if any(model not in shape.features for model in every_model):
                # the site's nodes do not carry the models as features
                gpus["feature"] = False
            if detect is not None:
                gpus["autodetect"] = detect.value.lower()
            if shape.gpu_files:
                gpus["files"] = list(shape.gpu_files)
            if shape.gpu_sharing:
                gpus["sharing"] = dict(shape.gpu_sharing)
            pool["gpus"] = gpus
        if shape.addressed:
            pool["addresses"] = address_list(addresses[h] for h in hostlist.expand(pool["hosts"]))
        if shape.switch:
            pool["network"] = {"switch": shape.switch}
        if shape.features:
            pool["features"] = list(shape.features)
        expressions = pool["hosts"] if isinstance(pool["hosts"], list) else [pool["hosts"]]
        weights = [host_weight[h] for e in expressions for h in hostlist.expand(e)]
        if len(set(weights)) == 1:
            pool["weight"] = weights[0]
        else:
            pool["host_weights"] = weights
        if shape.cloud:
            pool["state"] = "cloud"
        pools.append(pool)
        for host in hosts:
            pool_of[host] = name
        for pool_key, settings in shape_sources.get(shape, {}).items():
            for setting in settings:
                run.source(f"node_pools[{name}].{pool_key}", setting)
        if detect is not None:
            run.source(f"node_pools[{name}].gpus.autodetect", detect)
            every_taken = every_taken or detect is every_detect
    settle_global_autodetect(every_detect, every_taken, site.release, run)
    gpu_pools = {pool["name"] for pool in pools if "gpus" in pool}
    partitions: list[dict[str, Any]] = []
    teams: set[str] = set()
    qos: set[str] = set()
    named: dict[str, str] = {}  # NodeSet -> the partition that names it
    for record in part_records:
        part = _partition(record, part_hosts[record.name], pool_of, teams, qos, run, site)
        if part is None:
            continue
        _slurm_partition_defaults(part, site, gpu_pools, run)
        nodes = record.get("Nodes")
        nodeset = nodes.value if nodes is not None and nodes.value in sets else None
        if nodeset is not None and re.fullmatch(NODESET, nodeset) and nodeset not in all_nodes:
            if nodeset in named:
                run.reviews.append(
                    f"slurm.partitions[{part['name']}]: its NodeSet {nodeset} is partition "
                    f"{named[nodeset]}'s, whose NodeSet the blueprint renders; this partition "
                    "lists the hosts instead"
                )
            else:
                named[nodeset] = part["name"]
                part["nodeset"] = nodeset
        partitions.append(part)
    return pools, partitions, teams, qos


def _host_expressions(hosts: list[str]) -> str | list[str]:
    """A pool's hosts as one hostlist expression, or as several when they are more than one
    expression may name (hostlist.MAX_EXPANSION)."""
    chunk = hostlist.MAX_EXPANSION
    if len(hosts) <= chunk:
        return hostlist.compress(hosts)
    return [hostlist.compress(hosts[i : i + chunk]) for i in range(0, len(hosts), chunk)]


def _across_switches(
    groups: dict[tuple[_Shape, tuple[str, ...]], list[str]],
    shape_sources: dict[_Shape, dict[str, list[Setting]]],
) -> dict[tuple[_Shape, tuple[str, ...]], list[str]]:
    """Groups of one shape and partition set that differ only in their leaf switch, as one
    group naming every switch, where the blueprint's ``network.switch`` list places the hosts
    as the site does: in order, near-equal runs, one per switch (model.spread, which the
    renderers follow). So a node line that spans four switches stays one pool."""
    buckets: dict[tuple[_Shape, tuple[str, ...]], list[tuple[_Shape, list[str]]]] = {}
    for (shape, membership), hosts in groups.items():
        bare = replace(shape, switch=None)
        buckets.setdefault((bare, membership), []).append((shape, hosts))
    out: dict[tuple[_Shape, tuple[str, ...]], list[str]] = {}
    for (bare, membership), members in buckets.items():
        switches = [shape.switch or "" for shape, _ in members]
        hosts = [host for _, group in members for host in group]
        expression = _switch_expression(switches)
        placed = [(shape.switch, group) for shape, group in members]
        if len(members) == 1 or expression is None or spread(hosts, switches) != placed:
            out.update({(shape, membership): group for shape, group in members})
            continue
        merged = replace(bare, switch=expression)
        for shape, _ in members:
            for key, settings in shape_sources.get(shape, {}).items():
                shape_sources.setdefault(merged, {}).setdefault(key, []).extend(settings)
        out[(merged, membership)] = hosts
    return out


def _switch_expression(names: list[str]) -> str | None:
    """One hostlist expression that expands to the switch ``names`` in their order, or None
    (a group without a switch is named "")."""
    if "" in names or len(set(names)) != len(names):
        return None
    try:
        expression = hostlist.compress(names)
    except hostlist.HostlistError:
        return None
    return expression if hostlist.expand(expression) == names else None


def _pool_name(hosts: list[str], used: set[str]) -> str:
    stem = re.sub(r"[0-9-]+$", "", hosts[0]) or "nodes"
    stem = re.sub(r"[^a-z0-9-]", "-", stem)
    if not stem[0].isalpha():
        stem = f"n{stem}"
    stem = stem[:34].rstrip("-")
    name, number = stem, 1
    while name in used:
        number += 1
        name = f"{stem}-{number}"
    used.add(name)
    return name
