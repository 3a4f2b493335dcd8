"""gres.conf's gpu lines: which node each names, and what becomes of each setting once the
node's pool is known (its GPU type, count and device files)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from estategen import slurmconf
from estategen.facts import NVIDIA_AUTODETECT_RELEASE
from estategen.importer.outcomes import _Run
from estategen.schema.patterns import DEVICE_FILE, MPS_SHARES_MAX, SHARDS_MAX
from estategen.slurm_removed import at_least
from estategen.slurmconf import ConfFile, ConfRecord, Setting, Where

# the gres.conf AutoDetect values a pool's gpus.autodetect holds
DETECT = ("nvml", "off", "nvidia")
# what estategen writes a global AutoDetect=nvidia line for (renderers.slurm.gres_conf)
_HOSTED = (
    "gres.conf's AutoDetect for nodes no line names: estategen writes it for hosted Slurm "
    "pools (node_pools[].cluster) whose nodes a provider names"
)
# gres.conf(5) File: a path with an optional numeric range suffix, several joined by ","
_FILE_ITEM = re.compile(r"(?P<stem>/[^\[\],]+)(?:\[(?P<ranges>[0-9,-]+)\])?")
_DEVICE_FILE = re.compile(DEVICE_FILE)
_KEPT = "node_pools[].gpus (estategen writes gres.conf from pools)"
# the gres.conf lines a node's GPUs are read from: its GPUs, and the MPS shares or shards on them
_READ = ("gpu", "mps", "shard")


def gres_lines(
    gres_conf: ConfFile | None, hosts: Iterable[str], run: _Run
) -> tuple[dict[str, tuple[ConfRecord, ...]], Setting | None, dict[str, Setting]]:
    """host -> gres.conf's gpu, mps and shard lines for it (a line without NodeName is every
    node's), in file order; gres.conf's AutoDetect line for every node (off, nvml or nvidia),
    if it has one; and host -> the AutoDetect of its own gpu line (gres.conf(5): on a NodeName
    line it applies to those nodes only; estategen writes it there). The settings of the lines
    are left to :func:`settle_gpu_lines` and :func:`settle_shared`, which know the node's pool;
    AutoDetect is decided here."""
    lines: dict[str, list[ConfRecord]] = {}
    autodetect = None
    per_host: dict[str, Setting] = {}
    if gres_conf is None:
        return {}, autodetect, per_host
    every = list(hosts)
    for record in gres_conf.records:
        name = record.get("Name")
        scope = record.get("NodeName")
        detect = record.get("AutoDetect")
        if name is None and detect is not None and len(record.settings) == 1 + bool(scope):
            # a line of its own: AutoDetect for every node, or for the nodes it names
            # (gres.conf(5); estategen writes `NodeName=... AutoDetect=nvml` so)
            if detect.value.lower() not in DETECT:
                run.refused(detect, "gpus.autodetect is off, nvml or nvidia", "gres.conf")
            elif scope is None:
                autodetect = detect
                run.mapped(detect, "node_pools[].gpus.autodetect")
            else:
                run.mapped(detect, "node_pools[].gpus.autodetect")
                for host in slurmconf.expand_hosts(scope.value, scope.where, run.budget):
                    per_host.setdefault(host, detect)
            continue
        if name is None or name.value.lower() not in _READ:
            why = (
                "only gpu, mps and shard GRES are imported"
                if name
                else "estategen writes gres.conf"
            )
            for setting in record.settings:
                if setting.name != "nodename":
                    run.refused(setting, why, "gres.conf")
            if scope is not None:
                run.refused(scope, why, "gres.conf")
            continue
        if detect is not None and name.value.lower() in SHARED_NAMES:
            run.refused(detect, "AutoDetect is the gpu lines' (gpus.autodetect)", "gres.conf")
            detect = None
        if detect is not None:
            if scope is not None and detect.value.lower() in DETECT:
                run.mapped(detect, "node_pools[].gpus.autodetect")
            else:
                run.refused(detect, "estategen writes gres.conf from the pools", "gres.conf")
        if scope is not None:
            named = slurmconf.expand_hosts(scope.value, scope.where, run.budget)
        else:
            run.budget.spend_names(len(every), record.where)
            named = every
        for host in named:
            lines.setdefault(host, []).append(record)
            if detect is not None and detect.value.lower() in DETECT and scope is not None:
                per_host.setdefault(host, detect)
    for setting in gres_conf.parameters:
        run.refused(setting, "estategen writes gres.conf from the pools", "gres.conf")
    return {host: tuple(records) for host, records in lines.items()}, autodetect, per_host


def named(lines: Iterable[ConfRecord], gres: str) -> tuple[ConfRecord, ...]:
    """The lines of one GRES name (gpu, mps, shard) among a node's gres.conf lines."""
    return tuple(r for r in lines if (n := r.get("Name")) is not None and n.value.lower() == gres)


def settle_global_autodetect(every: Setting | None, taken: bool, release: str, run: _Run) -> None:
    """The AutoDetect line for every node when no pool took it (each GPU node of slurm.conf
    sets its own): an ``nvidia`` line then finds GPUs only on nodes slurm.conf does not
    list, the dynamic nodes estategen writes it for (hosted pools,
    renderers.slurm.gres_conf), and no on-prem pool takes it. Before Slurm 24.11 no slurmd
    knows the value (gres.conf(5) AutoDetect: nvidia "Added in Slurm 24.11")."""
    if every is None or taken or every.value.lower() != "nvidia":
        return
    run.withdraw(every)
    if not at_least(release, NVIDIA_AUTODETECT_RELEASE):
        run.refused(
            every,
            f"AutoDetect=nvidia came with Slurm {NVIDIA_AUTODETECT_RELEASE} (gres.conf(5)); "
            f"slurmd {release}, the release import targets (--slurm-version), does not know it",
            "gres.conf",
        )
        return
    run.mapped(every, _HOSTED)
    run.reviews.append(
        f"{every.where}: AutoDetect=nvidia is no pool's: every GPU node of slurm.conf sets "
        "its own AutoDetect. estategen writes this line for hosted Slurm pools whose nodes a "
        "provider names; declare those pools (scheduler slurm, cluster) to keep it"
    )


def first_type(lines: Iterable[ConfRecord]) -> str | None:
    """The Type of a node's first gpu line that gives one (the type of an untyped
    ``Gres=gpu:N`` in slurm.conf)."""
    for record in lines:
        kind = record.get("Type")
        if kind is not None:
            return kind.value
    return None


def device_files(value: str) -> list[str] | None:
    """The device files a gres.conf File= names (``/dev/nvidia[0-3]``,
    ``/dev/nvidia0,/dev/nvidia2``), in order; None for a value that is not such a list of
    files estategen can write (gpus.files)."""
    out: list[str] = []
    position = 0
    while position < len(value):
        match = _FILE_ITEM.match(value, position)
        if match is None:
            return None
        stem, ranges = match.group("stem"), match.group("ranges")
        if ranges is None:
            out.append(stem)
        else:
            for part in ranges.split(","):
                low, _, high = part.partition("-")
                if not low.isdigit() or not (high or low).isdigit() or len(out) > 16:
                    return None
                first, last = int(low), int(high or low)
                if last < first or last - first > 16:
                    return None
                width = len(low) if low.startswith("0") and len(low) > 1 else 0
                out += [f"{stem}{n:0{width}d}" for n in range(first, last + 1)]
        position = match.end()
        if position < len(value):
            if value[position] != ",":
                return None
            position += 1
    if not out or not all(_DEVICE_FILE.fullmatch(name) for name in out):
        return None
    return out


def default_files(count: int, first: int = 0) -> list[str]:
    """The device files estategen writes for ``count`` GPUs without gpus.files, numbered
    from ``first`` (the GPUs of the node's types before)."""
    return [f"/dev/nvidia{n}" for n in range(first, first + count)]


Decided = dict[tuple[Where, str], tuple[str, str]]


def _decide(run: _Run, decided: Decided, setting: Setting, kind: str, target: str) -> None:
    """One outcome for ``setting``: a line naming several nodes is decided once per node;
    where the nodes differ, the setting is refused with the reason."""
    key = (setting.where, setting.key)
    earlier = decided.get(key)
    if earlier == (kind, target) or (earlier is not None and earlier[0] == "differs"):
        return
    if earlier is not None:
        decided[key] = ("differs", "")
        run.withdraw(setting)
        run.refused(
            setting,
            "the nodes this gres.conf line names differ in what import keeps of it "
            f"({target}; and {earlier[1]})",
            "gres.conf",
        )
        return
    decided[key] = (kind, target)
    if kind == "mapped":
        run.mapped(setting, target)
    else:
        run.refused(setting, target, "gres.conf")


def settle_gpu_lines(
    lines: tuple[ConfRecord, ...],
    site_types: tuple[tuple[str | None, int], ...],
    mig: tuple[str, ...],
    run: _Run,
    decided: Decided,
    names_gpu: bool = True,
) -> tuple[tuple[tuple[str, ...], ...], list[Setting]]:
    """Decide the settings of a node's gres.conf gpu lines once its pool is known: the pool
    keeps, for each of ``site_types`` in order, its count of GPUs of that GRES type (the
    site's; None untyped, with count 0 when the node's gpu GRES is not imported), or MIG
    instances of ``mig``. Lines of a type the node's Gres does not name are refused; the
    device files of the kept lines are the render's default (numbered on from type to type),
    or each type's files, or refused. Returns the files to write a type (all empty for the
    default) and the File settings that gave them. ``names_gpu``: the node's Gres names gpu."""
    none: tuple[tuple[str, ...], ...] = tuple(() for _ in site_types)
    count = sum(n for _, n in site_types)
    of_type: list[list[ConfRecord]] = [[] for _ in site_types]
    names = [kind.lower() if kind else None for kind, _ in site_types]
    for record in lines:
        kind = record.get("Type")
        index = 0
        if not count and not names_gpu:
            # src/common/gres.c of 22.05: slurmctld ignores a count above slurm.conf's
            why = "the node's Gres in slurm.conf gives it no gpu, so slurmctld schedules none"
        elif not count:
            why = "the node's gpu GRES in slurm.conf is not imported"
        elif mig:
            why = (
                "" if kind is not None and kind.value in mig else "not one of the node's MIG types"
            )
        elif kind is None or names[0] is None:
            why = "" if len(names) == 1 else "no Type on a node of several GPU types"
        elif kind.value.lower() in names:
            why, index = "", names.index(kind.value.lower())
        else:
            why = (
                f"Type={kind.value} is not a GPU type of the node's Gres in slurm.conf "
                f"({', '.join(str(n) for n in names)})"
            )
        if why:
            for setting in record.settings:
                if setting.name != "autodetect":
                    _decide(run, decided, setting, "refused", why)
            continue
        of_type[index].append(record)
    for kept, (_, type_count) in zip(of_type, site_types, strict=True):
        _settle_counts(kept, type_count, bool(mig), run, decided)
    given = [[file for r in kept if (file := r.get("File")) is not None] for kept in of_type]
    every = [setting for files in given for setting in files]
    if not every:
        return none, []

    def settle(kind: str, target: str) -> None:
        for setting in every:
            _decide(run, decided, setting, kind, target)

    if mig:
        settle("refused", "MIG instances are found by NVML: the render writes no File")
        return none, []
    files: list[list[str]] = []
    first = 0
    for settings, (_, type_count) in zip(given, site_types, strict=True):
        named: list[str] = []
        for setting in settings:
            listed = device_files(setting.value)
            if listed is None:
                settle(
                    "refused",
                    f"File={setting.value} is not a list of device files under /dev "
                    "(node_pools[].gpus.files)",
                )
                return none, []
            named += listed
        # a type without File lines keeps the render's files
        files.append(named if settings else default_files(type_count, first))
        first += type_count
    flat = [file for named in files for file in named]
    for named, (site_type, type_count) in zip(files, site_types, strict=True):
        if len(named) != type_count or len(set(named)) != len(named):
            of_kind = f" of type {site_type}" if len(site_types) > 1 else ""
            settle(
                "refused",
                f"the node's gpu lines name {len(named)} device files for its {type_count} "
                f"GPUs{of_kind}",
            )
            return none, []
    if len(set(flat)) != len(flat):
        settle("refused", "the node's gpu lines name one device file for GPUs of two types")
        return none, []
    if flat == default_files(count):
        settle("mapped", f"{_KEPT}: the same files")
        return none, []
    settle("mapped", "node_pools[].gpus.files")
    return tuple(tuple(named) for named in files), every


def _settle_counts(
    kept: list[ConfRecord], count: int, mig: bool, run: _Run, decided: Decided
) -> None:
    """Decide the settings other than File of the gpu lines kept for one GPU type."""
    counts = [c for record in kept if (c := record.get("Count")) is not None]
    total = sum(int(c.value) if c.value.isdigit() else -1 for c in counts)
    # whole GPUs counted on every line: the render counts the node's GPUs from slurm.conf
    miscounted = not mig and counts and len(counts) == len(kept) and total != count
    for record in kept:
        for setting in record.settings:
            if setting.name == "count" and miscounted:
                _decide(
                    run,
                    decided,
                    setting,
                    "refused",
                    f"the node's gpu lines count {total} GPUs and its Gres {count}: the "
                    "render counts the Gres",
                )
            elif setting.name in ("name", "type", "nodename", "count"):
                _decide(run, decided, setting, "mapped", _KEPT)
            elif setting.name == "cores":
                _decide(
                    run,
                    decided,
                    setting,
                    "refused",
                    "GPU-to-CPU affinity (Cores=) is not a blueprint key: the render lets "
                    "slurmd find it (or use none)",
                )
            elif setting.name not in ("file", "autodetect"):
                _decide(
                    run, decided, setting, "refused", "estategen writes gres.conf from the pools"
                )


@dataclass(frozen=True, slots=True)
class Shared:
    """A GRES that shares a node's GPUs (gres.conf(5) "MPS/Sharding"), as the blueprint holds
    it: one count on every GPU (``low`` to ``high``), in ``key``."""

    name: str  # the GRES name: mps, shard
    one: str  # one GRES item of it, with its article: an MPS GRES
    key: str  # the blueprint key that holds its count a GPU
    noun: str  # what one unit of it is called, plural
    low: int
    high: int
    mig: str  # why it is refused on MIG instances; "" when kept there


MPS = Shared(
    "mps",
    "an MPS GRES",
    "node_pools[].gpus.sharing.mps",
    "MPS shares",
    2,
    MPS_SHARES_MAX,
    "MPS on MIG instances: the blueprint refuses gpus.sharing.mps with gpus.mig",
)
# kept on MIG nodes: the render writes their Gres count (slurm_facts.shards: GPUs x shards)
# and a shard line without File, which slurmd spreads over the instances it finds
SHARD = Shared(
    "shard", "a shard GRES", "node_pools[].gpus.sharing.shard", "shards", 1, SHARDS_MAX, ""
)
SHARED = (MPS, SHARD)
SHARED_NAMES = tuple(shared.name for shared in SHARED)


def settle_shared(
    gres: Shared,
    item: Setting | None,
    lines: tuple[ConfRecord, ...],
    count: int,
    mig: bool,
    files: list[str],
    run: _Run,
    decided: Decided,
    refused: str = "",
) -> tuple[int | None, str, list[Setting]]:
    """The count of ``gres`` (MPS shares, shards) a GPU of a node whose Gres holds ``item``
    (``mps:N``, ``shard:N``) and whose gres.conf lines of that name are ``lines``: ``count``
    GPUs (0 when the node's gpu GRES is not imported), of MIG instances or not, at device
    ``files``; ``refused``, when not "", is why ``item`` is not kept whatever its count.
    Returns (the count a GPU, or None; why not, for ``item``, when it is not kept; the
    lines' settings that gave the count). The lines' settings are decided here.

    Slurm handles mps and shard alike (src/plugins/gres/common/gres_c_s.c at slurm-22-05-8-1
    and slurm-24-11-0-1; gres.conf(5) File: "The exception to this is MPS/Sharding"): one
    line without File spreads its Count over the node's GPUs, each a Count / GPUs share
    (rounded, the rest on the last ones); a line with File gives each file Count / files;
    a File no gpu line names is dropped, a GPU no line names gets none; lines with and
    without File on one node are fatal. slurm.conf's Gres count is what slurmctld
    schedules. The blueprint holds one count on every GPU: Gres / GPUs.
    """
    why = ""
    shares = None
    if item is not None:
        parts = item.value.split(":")
        total = parts[-1].split("(")[0]
        if len(parts) != 2 or not total.isdigit():
            why = f"{gres.one} is {gres.name}:N (Slurm gives {gres.name} no type of its own)"
        elif refused:
            why = refused
        elif not count:
            why = f"{gres.one} shares a node's GPUs, and the node's gpu GRES is not imported"
        elif mig and gres.mig:
            why = gres.mig
        elif int(total) % count:
            why = (
                f"{gres.name}:{total} over {count} GPUs is not one count on each GPU, which "
                f"{gres.key.removeprefix('node_pools[].')} is"
            )
        elif not gres.low <= int(total) // count <= gres.high:
            why = (
                f"{int(total) // count} {gres.noun} a GPU; "
                f"{gres.key.removeprefix('node_pools[].')} holds {gres.low} to {gres.high}"
            )
        else:
            shares = int(total) // count
    if not lines:
        return shares, why, []
    line_why = (
        f"the node's Gres in slurm.conf gives it no {gres.name}, so slurmctld schedules none"
        if item is None
        else f"the node's {gres.name} GRES in slurm.conf is not imported"
        if shares is None
        else _shared_lines_differ(gres, lines, shares, count, files, mig)
    )
    kept: list[Setting] = []
    for record in lines:
        for setting in record.settings:
            if line_why:
                _decide(run, decided, setting, "refused", line_why)
            elif setting.name in ("type", "cores"):
                _decide(
                    run,
                    decided,
                    setting,
                    "mapped",
                    f"{gres.key}: slurmd takes {gres.name} Type and Cores from the gpu lines",
                )
                kept.append(setting)
            elif setting.name in ("name", "nodename", "count", "file"):
                _decide(run, decided, setting, "mapped", gres.key)
                kept.append(setting)
            else:
                _decide(
                    run, decided, setting, "refused", "estategen writes gres.conf from the pools"
                )
    return shares, why, kept


def _shared_lines_differ(
    gres: Shared,
    lines: tuple[ConfRecord, ...],
    shares: int,
    count: int,
    files: list[str],
    mig: bool,
) -> str:
    """Why a node's gres.conf lines of ``gres`` do not give each of its ``count`` GPUs
    (``files``) ``shares``, as the render's line does; "" when they do."""
    name = gres.name
    filed = [r for r in lines if r.get("File") is not None]
    if filed and len(filed) != len(lines):
        return f"{name} lines with and without File on one node: slurmd stops (gres_c_s.c)"
    if filed and mig:
        return f"MIG instances are found by NVML: the render writes no File on {name} lines"
    if not filed:
        if len(lines) > 1:
            return f"several {name} lines without File on one node: slurmd stops (gres_c_s.c)"
        given = lines[0].get("Count")
        if given is None or given.value != str(shares * count):
            return (
                f"Count={given.value if given else 'none'} where the node's Gres counts "
                f"{shares * count} gres/{name}: the render writes the Gres count"
            )
        return ""
    per_file: dict[str, int] = {}
    for record in filed:
        file, given = record.get("File"), record.get("Count")
        named_files = device_files(file.value) if file is not None else None
        if named_files is None:
            return f"File={file.value if file else ''} is not a list of device files"
        if given is None or not given.value.isdigit():
            return f"{name} lines with File need a Count"
        for device in named_files:
            if device in per_file:
                return f"{device} is named by two {name} lines"
            per_file[device] = int(given.value) // len(named_files)
    if set(per_file) != set(files):
        return (
            f"the {name} lines name {', '.join(sorted(per_file))}, the GPUs are "
            f"{', '.join(files)}: the blueprint shares every GPU of the node"
        )
    uneven = sorted({n for n in per_file.values() if n != shares})
    if uneven:
        return (
            f"GPUs with {', '.join(map(str, uneven))} {gres.noun} where the Gres gives each "
            f"{shares}: {gres.key.removeprefix('node_pools[].')} is one count on every GPU"
        )
    return ""


def unsettled(gres_conf: ConfFile | None, run: _Run) -> None:
    """Refuse the settings of gpu, mps and shard lines no node of slurm.conf took (names no such
    node)."""
    if gres_conf is None:
        return
    decided = {(o.where, o.key) for o in run.outcomes}
    for record in gres_conf.records:
        name = record.get("Name")
        if name is None or name.value.lower() not in _READ:
            continue
        for setting in record.settings:
            if (setting.where, setting.key) not in decided:
                run.refused(setting, "names no node of slurm.conf", "gres.conf")
