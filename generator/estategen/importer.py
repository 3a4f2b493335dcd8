"""``estategen import``: a site's slurm.conf (with gres.conf, topology.conf and a
``sacctmgr dump``) as a blueprint.

Nodes with the same shape (CPUs, memory, GRES, features, weight, leaf switch) and the same
partitions become one pool; a partition is the union of its pools. Global parameters follow
one table, :data:`PARAMETERS` (slurm.conf key -> blueprint key path + converter); a key the
table lacks goes to ``slurm.options`` when the blueprint may pass it through, and otherwise
into a comment block naming the key, its value and its source line. A key estategen renders
whose site value is what estategen renders anyway counts as mapped. Nothing is dropped
silently: every setting read ends up in :attr:`Imported.outcomes`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from estategen import hostlist, slurmconf
from estategen.declarations import PARTITION_LIMITS
from estategen.errors import clip
from estategen.limits import MAX_PARTITIONS, MAX_POOLS
from estategen.model import DAEMON_FOLDERS, SLURM_PATH_DEFAULTS, shares_state_and_spool
from estategen.record import Record, field
from estategen.schema import (
    ACCOUNTING_ENFORCE,
    DAEMON_PATH,
    ENFORCE_PART_LIMITS,
    FEATURE,
    GRES_TYPE,
    GROUP,
    JOB_ACCT_GATHER_TYPES,
    JOB_COMP_TYPES,
    NODESET,
    OVERSUBSCRIBE,
    PARTITION_STATES,
    PRIORITY_TYPES,
    PROCTRACK_TYPES,
    PROLOG_FLAGS,
    SCHEDULER_PARAMETER,
    SCHEDULER_TYPES,
    SELECT_MODIFIERS,
    SELECT_RESOURCES,
    SELECT_TYPES,
    TASK_PLUGINS,
    TRES,
    USER,
)
from estategen.slurm_facts import address_list, real_memory_mib
from estategen.slurm_keys import MULTIFACTOR_OPTIONS, REFUSED_IN_OPTIONS, password_key
from estategen.slurm_removed import RemovedKey, removed_key
from estategen.slurmconf import (
    GRES_RECORDS,
    TOPOLOGY_RECORDS,
    ConfFile,
    ConfRecord,
    ConfSyntaxError,
    Setting,
    Where,
)

# mapped: the blueprint key keeps it; passed: slurm.options keeps it as written; changed: kept
# in another form that slurmctld reads differently (a host name in lower case); dropped: no
# effect on the target release (a key Slurm removed); refused: not kept
Kind = Literal["mapped", "passed", "changed", "dropped", "refused"]
# the kinds whose settings the render does not give slurmctld as the site did
UNFAITHFUL: tuple[Kind, ...] = ("changed", "refused")

_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
_HOST = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_FEATURE = re.compile(FEATURE)
_TIME = re.compile(r"(UNLIMITED|INFINITE|([0-9]{1,12}-)?[0-9]{1,12}(:[0-9]{1,12}){0,2})")
_OPTION_KEY = re.compile(r"[A-Z][A-Za-z0-9]{1,63}")
_OPTION_VALUE = re.compile(r"[A-Za-z0-9_.,:/=+@%-]{1,256}")
_GIB = 1024

# Placeholder memory of GPU models the catalog does not know, by GRES Type; a review note
# says it was guessed. It sets the model's billing weight only: pools keep the site's Weight.
_GPU_MEMORY_GUESS = {
    "k80": 12,
    "p100": 16,
    "t4": 16,
    "v100": 32,
    "a10": 24,
    "a40": 48,
    "a100": 80,
    "h100": 80,
    "h200": 141,
    "l4": 24,
    "l40": 48,
    "l40s": 48,
    "rtx-3090": 24,
    "rtx-2080ti": 11,
}
_GPU_MEMORY_DEFAULT = 16


class Unsayable(ValueError):
    """A value the blueprint key cannot hold; the message says why."""


class Outcome(Record):
    """What became of one setting: mapped to ``target``, passed through, or refused."""

    kind: Kind
    where: Where
    key: str
    value: str
    target: str

    def format(self) -> str:
        return f"{self.where}: {self.kind}: {self.key}={clip(self.value)} -> {self.target}"


class Imported(Record):
    text: str
    outcomes: tuple[Outcome, ...]
    reviews: tuple[str, ...]
    inputs: tuple[str, ...] = ()  # every file read (Includes too): never the output
    # what validate still finds in the blueprint written (key path: message), when import
    # could not trace a finding to a site setting it could refuse
    findings: tuple[str, ...] = ()

    @property
    def faithful(self) -> bool:
        """The blueprint validates and its render gives slurmctld every setting as the site
        did: nothing changed or refused."""
        return not self.findings and not any(o.kind in UNFAITHFUL for o in self.outcomes)


# --- converters ----------------------------------------------------------------------------


def _name(value: str) -> str:
    name = value.lower().replace("_", "-")
    if not _NAME.fullmatch(name):
        raise Unsayable(f"{value!r} is not a name estategen can carry ({_NAME.pattern})")
    return name


def _host(value: str) -> str:
    """A host name, in lower case (``SlurmctldHost=Todo`` is todo): a blueprint's host names
    are DNS names in lower case."""
    host = value.split("(", 1)[0].strip().lower()
    if not _HOST.fullmatch(host):
        raise Unsayable(f"{value!r} is not a host name")
    return host


def _lowered(value: str) -> bool:
    """Whether a host name (NAME or NAME(ADDRESS)) loses upper case in the blueprint."""
    name = value.split("(", 1)[0]
    return name != name.lower()


_LOWER_CASE = (
    "a blueprint's host names are lower case, and Slurm compares host names case by case: "
    "rename the host {name} (or start its slurmd with -N {name})"
)


_WHOLE = re.compile(r"-?[0-9]{1,20}")  # ASCII digits only: int() reads '١٢', '1_0' and ' 1'


def _int(low: int, high: int) -> Callable[[str], int]:
    def convert(value: str) -> int:
        if not _WHOLE.fullmatch(value):
            raise Unsayable(f"{clip(value)!r} is not a whole number")
        number = int(value)
        if not low <= number <= high:
            raise Unsayable(f"{number} is outside {low}..{high}")
        return number

    return convert


def _time(value: str) -> str:
    if not _TIME.fullmatch(value.upper()):
        raise Unsayable(f"{value!r} is not a Slurm time")
    return value.upper() if value.upper() in ("UNLIMITED", "INFINITE") else value


def _choice(table: Mapping[str, str]) -> Callable[[str], str]:
    def convert(value: str) -> str:
        found = table.get(value.lower())
        if found is None:
            raise Unsayable(f"{value!r} is not one of {', '.join(sorted(table))}")
        return found

    return convert


def _list_of(
    item: Callable[[str], Any], sep: str = ",", none: tuple[str, ...] = ()
) -> Callable[[str], list[Any]]:
    """A comma-separated slurm.conf value as a list; a value of ``none`` is the empty list."""

    def convert(value: str) -> list[Any]:
        if value.lower() in none:
            return []
        return list(dict.fromkeys(item(part) for part in value.split(sep) if part))

    return convert


def _pattern(pattern: str, hint: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def convert(value: str) -> str:
        if not compiled.fullmatch(value):
            raise Unsayable(f"{value!r} is not {hint}")
        return value

    return convert


def _prefixed(prefix: str, names: tuple[str, ...], bare: bool = False) -> Callable[[str], str]:
    """A plugin name like select/cons_tres, as the blueprint's short name (cons_tres). With
    ``bare``, the name without its prefix too, where slurmd adds it (TaskPlugin=affinity:
    src/slurmd/common/task_plugin.c prefixes task/ to a name without it)."""
    table = {f"{prefix}/{name}": name for name in names}
    if bare:
        table.update({name.lower(): name for name in names})
    return _choice(table)


# AccountingStorageEnforce as slurmctld expands it (src/common/read_config.c of 22.05,
# _validate_accounting_storage_enforce): each word turns on the flags below, 1 and 2 are the
# old spellings of associations and limits, and all is every flag but nojobs and nosteps.
_ENFORCE_EXPANDS = {
    "1": ("associations",),
    "associations": ("associations",),
    "2": ("associations", "limits"),
    "limits": ("associations", "limits"),
    "safe": ("associations", "limits", "safe"),
    "wckeys": ("associations", "wckeys"),
    "qos": ("associations", "qos"),
    "all": ("associations", "limits", "qos", "safe", "wckeys"),
    "nojobs": ("nojobs", "nosteps"),
    "nosteps": ("nosteps",),
}


def _enforce(value: str) -> list[str]:
    """AccountingStorageEnforce as the flags slurmctld turns on, in the order
    ``scontrol show config`` prints them (src/common/slurm_protocol_defs.c,
    accounting_enforce_string)."""
    if value.lower() in ("none", "0", ""):
        return []
    flags: set[str] = set()
    for word in value.split(","):
        found = _ENFORCE_EXPANDS.get(word.lower())
        if found is None:
            known = ", ".join(sorted(_ENFORCE_EXPANDS))
            raise Unsayable(f"{word!r} is not one of {known} (slurmctld refuses it)")
        flags.update(found)
    return [flag for flag in ACCOUNTING_ENFORCE if flag in flags]


def _canonical(names: tuple[str, ...]) -> Callable[[str], str]:
    """A word slurm.conf reads in any case, as the blueprint spells it."""
    return _choice({name.lower(): name for name in names})


def _port(value: str) -> int | str:
    if re.fullmatch(r"[0-9]{1,5}", value):
        return _int(1, 65_535)(value)
    if re.fullmatch(r"[0-9]{1,5}-[0-9]{1,5}", value):
        return value
    raise Unsayable(f"{value!r} is not a port or a port range")


def _weights(value_of: Callable[[str], Any]) -> Callable[[str], dict[str, Any]]:
    """KEY=VALUE,... (TRESBillingWeights, PriorityWeightTRES) as a mapping."""
    from estategen.schema import BILLING_TRES

    def convert(value: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in filter(None, value.split(",")):
            key, sep, weight = item.partition("=")
            if not sep or not re.fullmatch(BILLING_TRES, key):
                raise Unsayable(f"{item!r} is not TRES=WEIGHT")
            out[key] = value_of(weight)
        if not out:
            raise Unsayable("no TRES weights")
        return out

    return convert


def _billing_weight(value: str) -> str:
    """Kept as written (slurmctld shows the weights as the file writes them)."""
    from estategen.schema import BILLING_WEIGHT

    if not re.fullmatch(BILLING_WEIGHT, value):
        raise Unsayable(f"{value!r} is not a billing weight")
    return value


def _excluded_nodes(value: str) -> list[str]:
    """SuspendExcNodes: hostlist expressions, kept as written (slurmctld shows them so)."""
    try:
        items = hostlist.split_items(value)
    except hostlist.HostlistError as why:
        raise Unsayable(str(why)) from None
    for item in items:
        if ":" in item or not re.fullmatch(r"[a-z0-9\[\],-]{1,256}", item):
            raise Unsayable(f"{item!r} is not a hostlist of nodes (NODES:COUNT is not imported)")
    return items


def _folder(value: str) -> str:
    """A daemon folder (StateSaveLocation, SlurmdSpoolDir): Slurm opens ``/var/spool/x/`` as
    ``/var/spool/x``, so a trailing ``/`` is dropped, the folder kept."""
    folder = value.rstrip("/") if len(value) > 1 else value
    return _pattern(DAEMON_PATH, "a daemon path")(folder or value)


def _mpi_ports(value: str) -> str:
    match = re.fullmatch(r"ports=([0-9]{1,5}-[0-9]{1,5})", value)
    if not match:
        raise Unsayable(f"{value!r}: only MpiParams=ports=LOW-HIGH is a blueprint key")
    return match[1]


class Row(Record):
    """One slurm.conf parameter the blueprint can say: where it goes and how."""

    path: str  # blueprint key path, dotted
    convert: Callable[[str], Any]
    append: bool = False  # the key may repeat; each value is appended to a list


# slurm.conf parameter (lower case) -> blueprint key. The site override keys (daemon paths,
# ReturnToService, SelectTypeParameters, ...) add their rows here.
PARAMETERS: dict[str, Row] = {
    "clustername": Row("slurm.cluster_name", _name),
    "slurmctldhost": Row("slurm.controllers", _host, append=True),
    "controlmachine": Row("slurm.controllers", _host, append=True),
    "backupcontroller": Row("slurm.controllers", _host, append=True),
    "accountingstoragehost": Row("slurm.accounting.host", _host),
    "accountingstorageport": Row("slurm.accounting.port", _int(1, 65_535)),
    "prioritydecayhalflife": Row("slurm.scheduling.fairshare_half_life", _time),
    "priorityweightfairshare": Row(
        "slurm.scheduling.priority_weights.fairshare", _int(0, 4_294_967_295)
    ),
    "priorityweightage": Row("slurm.scheduling.priority_weights.age", _int(0, 4_294_967_295)),
    "priorityweightqos": Row("slurm.scheduling.priority_weights.qos", _int(0, 4_294_967_295)),
    "priorityweightjobsize": Row(
        "slurm.scheduling.priority_weights.job_size", _int(0, 4_294_967_295)
    ),
    "priorityweightpartition": Row(
        "slurm.scheduling.priority_weights.partition", _int(0, 4_294_967_295)
    ),
    "priorityweightassoc": Row("slurm.scheduling.priority_weights.assoc", _int(0, 4_294_967_295)),
    "preempttype": Row(
        "slurm.scheduling.preemption.type",
        _choice(
            {
                "preempt/none": "none",
                "preempt/qos": "qos",
                "preempt/partition_prio": "partition_prio",
            }
        ),
    ),
    "preemptmode": Row(
        "slurm.scheduling.preemption.mode",
        _choice({m: m for m in ("off", "cancel", "requeue", "suspend")}),
    ),
    "mpidefault": Row("slurm.mpi.default", _choice({m: m for m in ("none", "pmi2", "pmix")})),
    "mpiparams": Row("slurm.mpi.ports", _mpi_ports),
    # --- the site override keys ---
    **{
        key.replace("_", ""): Row(
            f"slurm.paths.{key}",
            _folder if key in DAEMON_FOLDERS else _pattern(DAEMON_PATH, "a daemon path"),
        )
        for key in SLURM_PATH_DEFAULTS
    },
    "slurmctldport": Row("slurm.ports.slurmctld", _port),
    "slurmdport": Row("slurm.ports.slurmd", _int(1, 65_535)),
    "slurmduser": Row("slurm.slurmd_user", _pattern(USER, "a user name")),
    "returntoservice": Row("slurm.return_to_service", _int(0, 2)),
    "selecttype": Row("slurm.select.type", _prefixed("select", SELECT_TYPES)),
    "selecttypeparameters": Row(
        "slurm.select.parameters", _list_of(_canonical((*SELECT_RESOURCES, *SELECT_MODIFIERS)))
    ),
    "taskplugin": Row("slurm.task_plugins", _list_of(_prefixed("task", TASK_PLUGINS, bare=True))),
    "jobacctgathertype": Row(
        "slurm.job_acct_gather", _prefixed("jobacct_gather", JOB_ACCT_GATHER_TYPES)
    ),
    "prologflags": Row("slurm.prolog_flags", _list_of(_canonical(PROLOG_FLAGS), none=("none",))),
    "schedulerparameters": Row(
        "slurm.scheduler_parameters",
        _list_of(_pattern(SCHEDULER_PARAMETER, "a SchedulerParameters option")),
    ),
    "priorityweighttres": Row(
        "slurm.scheduling.priority_weight_tres", _weights(_int(-2_147_483_648, 4_294_967_295))
    ),
    "accountingstoragetres": Row(
        "slurm.accounting.tres", _list_of(_pattern(TRES, "a TRES estategen can carry"))
    ),
    "accountingstorageenforce": Row("slurm.accounting.enforce", _enforce),
    "prioritytype": Row("slurm.scheduling.priority_type", _prefixed("priority", PRIORITY_TYPES)),
    "schedulertype": Row("slurm.scheduler", _prefixed("sched", SCHEDULER_TYPES)),
    # slurm.conf(5): YES is the old spelling of ANY
    "enforcepartlimits": Row(
        "slurm.enforce_part_limits",
        _choice({**{v: v for v in ENFORCE_PART_LIMITS if v != "none"}, "yes": "any", "no": "none"}),
    ),
    "proctracktype": Row("slurm.proctrack", _prefixed("proctrack", PROCTRACK_TYPES)),
    "jobcomptype": Row("slurm.job_completion.type", _prefixed("jobcomp", JOB_COMP_TYPES)),
    "jobcomploc": Row(
        "slurm.job_completion.location", _pattern(DAEMON_PATH, "a file path estategen can carry")
    ),
    # power saving of the site's State=CLOUD nodes (pools with `state: cloud`)
    "suspendtime": Row("slurm.power_saving.suspend_time", _int(10, 2_592_000)),
    "resumetimeout": Row("slurm.power_saving.resume_timeout", _int(30, 65_533)),
    "suspendtimeout": Row("slurm.power_saving.suspend_timeout", _int(10, 65_533)),
    **{
        f"{kind}program": Row(
            f"slurm.power_saving.{kind.replace('fail', '_fail')}_program",
            _pattern(DAEMON_PATH, "a program's absolute path"),
        )
        for kind in ("resume", "suspend", "resumefail")
    },
    "suspendexcnodes": Row("slurm.power_saving.exclude_nodes", _excluded_nodes),
}
# slurm.conf(5) of 22.05: ResumeTimeout 60 and SuspendTimeout 30 seconds when unset. (Unset
# SuspendTime never suspends, which slurm.power_saving cannot say: estategen's 600 stays.)
_POWER_SAVING_DEFAULTS = {"resume_timeout": 60, "suspend_timeout": 30}
# The rows above that only State=CLOUD nodes give a meaning to.
_POWER_SAVING = {name for name, row in PARAMETERS.items() if ".power_saving." in row.path}

# Keys only priority/multifactor reads: with priority/basic (Slurm's default) import refuses
# them, as the blueprint does (checks.priority_basic_keys).
_MULTIFACTOR_ROWS = frozenset(
    k for k in PARAMETERS if k.startswith("priority") and k != "prioritytype"
)
# slurm.conf(5) 22.05: the file jobcomp/filetxt writes when JobCompLoc is not set
_JOBCOMP_DEFAULT_LOCATION = "/var/log/slurm_jobcomp.log"

# Keys whose Slurm default (what a slurm.conf without them runs) is not what estategen
# renders without its blueprint key: import writes Slurm's default, so the render keeps it.
# slurm.conf(5) of 22.05: ReturnToService 0, PrologFlags none, JobAcctGatherType none,
# TaskPlugin none (scontrol shows task/none), SchedulerParameters none; and
# AccountingStorageEnforce none (with slurmdbd, below).
_SLURM_DEFAULTS: dict[str, tuple[str, Any]] = {
    "returntoservice": ("slurm.return_to_service", 0),
    "prologflags": ("slurm.prolog_flags", []),
    "jobacctgathertype": ("slurm.job_acct_gather", "none"),
    "taskplugin": ("slurm.task_plugins", ["none"]),
    "schedulerparameters": ("slurm.scheduler_parameters", []),
    "prioritytype": ("slurm.scheduling.priority_type", "basic"),
    "enforcepartlimits": ("slurm.enforce_part_limits", "none"),
}

# Parameters the blueprint derives from what import maps elsewhere (nodes, GRES, topology,
# accounting): their site value is checked against the render, like the keys estategen owns.
_DERIVED = {"grestypes", "topologyplugin", "accountingstoragetype"}

# Options slurm.options may hold in general, but whose value contradicts what estategen
# renders: slurmctld would refuse the rendered slurm.conf.
_CONFLICTS: dict[str, tuple[Callable[[str, Mapping[str, Any]], bool], str]] = {
    "jobacctgatherparams": (
        lambda value, slurm: (
            "overmemorykill" in value.lower() and "cgroup" in slurm.get("task_plugins", ["cgroup"])
        ),
        "OverMemoryKill with TaskPlugin=task/cgroup: slurmctld refuses two memory "
        "enforcement mechanisms",
    ),
}

# Node record keys -> handled by the grouping (the rest are refused per record line).
_NODE_KEYS = {
    "cpus",
    "boards",
    "sockets",
    "socketsperboard",
    "corespersocket",
    "threadspercore",
    "realmemory",
    "gres",
    "feature",
    "features",
    "weight",
    "state",
    "nodeaddr",
}

# --- the import ----------------------------------------------------------------------------


class _Run(Record, frozen=False):
    outcomes: list[Outcome] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    _seen: set[Outcome] = field(default_factory=set)
    # what the site's files may still spend: bytes, Includes, settings, host names
    budget: slurmconf.Budget = field(default_factory=slurmconf.Budget)
    # blueprint key path (pools, partitions and teams by name: node_pools[gpu].gpus) -> the
    # site settings that gave it its value, to refuse them if validate refuses the value
    sources: dict[str, dict[Setting, None]] = field(default_factory=dict)

    def source(self, path: str, setting: Setting) -> None:
        self.sources.setdefault(path, {})[setting] = None

    def withdraw(self, setting: Setting) -> None:
        """Take back what was recorded of ``setting`` (it is refused after all)."""
        for outcome in [
            o for o in self.outcomes if (o.where, o.key) == (setting.where, setting.key)
        ]:
            if outcome.kind != "refused":
                self.outcomes.remove(outcome)
                self._seen.discard(outcome)

    def _add(self, outcome: Outcome) -> bool:
        """Record ``outcome`` once (NodeName=DEFAULT values reach every line after them)."""
        if outcome in self._seen:
            return False
        self._seen.add(outcome)
        self.outcomes.append(outcome)
        return True

    def mapped(self, setting: Setting, target: str) -> None:
        self._add(Outcome("mapped", setting.where, setting.key, setting.value, target))

    def unmap(self, setting: Setting, target: str) -> None:
        """Take back a mapping (a later look found the value cannot stay)."""
        outcome = Outcome("mapped", setting.where, setting.key, setting.value, target)
        self.outcomes.remove(outcome)
        self._seen.discard(outcome)

    def passed(self, setting: Setting, target: str) -> None:
        self._add(Outcome("passed", setting.where, setting.key, setting.value, target))

    def refused(self, setting: Setting, reason: str, context: str = "") -> None:
        self._note("refused", setting, reason, context)

    def changed(self, setting: Setting, how: str, context: str = "") -> None:
        """Kept in another form than the site's, which slurmctld reads differently."""
        self._note("changed", setting, how, context)

    def dropped(self, setting: Setting, why: str) -> None:
        """Left out because it has no effect on the release the blueprint targets."""
        self._note("dropped", setting, why)

    def _note(self, kind: Kind, setting: Setting, reason: str, context: str = "") -> None:
        if self._add(Outcome(kind, setting.where, setting.key, setting.value, reason)):
            what = f"{context} " if context else ""
            label = "" if kind == "refused" else f"{kind}: "
            self.comments.append(
                f"{setting.where}: {what}{setting.key}={setting.value}  # {label}{reason}"
            )


def import_site(
    slurm_conf: str | Path,
    gres: str | Path | None = None,
    topology: str | Path | None = None,
    sacct: str | Path | None = None,
    slurm_version: str | None = None,
) -> Imported:
    """Read the site's files and build the blueprint text; raises ConfSyntaxError on files
    it cannot read, and BlueprintInvalid if the blueprint it built does not validate."""
    run = _Run()
    conf = slurmconf.parse_file(slurm_conf, budget=run.budget)
    conf = _successors(conf, slurm_version or _DEFAULT_RELEASE, run)
    for where, target, read in conf.moved:
        run.reviews.append(
            f"{where}: Include {target} is not on this machine; import read {read}, the file "
            "of that name beside the file given"
        )
    gres_conf = slurmconf.parse_file(gres, GRES_RECORDS, run.budget) if gres else None
    topo = slurmconf.parse_file(topology, TOPOLOGY_RECORDS, run.budget) if topology else None
    doc: dict[str, Any] = {}
    slurm: dict[str, Any] = {}
    _parameters(conf, slurm, run)
    cluster = slurm.get("cluster_name") or "imported"
    doc["estate"] = cluster
    doc["description"] = f"imported from {Path(slurm_conf).name} by estategen import"
    if slurm_version:
        doc["versions"] = {"slurm": slurm_version}
    leaves = _leaf_switches(topo, run) if topo else {}
    models: dict[str, dict[str, Any]] = {}
    site = _Site(
        accounting="accounting" in slurm,
        basic=slurm.get("scheduling", {}).get("priority_type") == "basic",
        memory_default=any(conf.parameter(k) for k in ("DefMemPerCPU", "DefMemPerNode")),
    )
    pools, partitions, teams, qos = _nodes_and_partitions(
        conf, gres_conf, leaves, models, run, site
    )
    if models:
        doc["gpu_models"] = list(models.values())
    accounts = _sacct(Path(sacct), run) if sacct else {}
    team_list = _teams(teams, accounts, run)
    if team_list:
        doc["identity"] = {"teams": team_list}
    doc["node_pools"] = pools
    _power_saving(conf, slurm, pools, run)
    _tracked_gpu_types(slurm, pools, run)
    if qos:
        slurm["qos"] = [{"name": name} for name in sorted(qos)]
    slurm["partitions"] = partitions
    doc["slurm"] = _ordered_slurm(slurm)
    findings = _settle(doc, run)
    if not findings:
        _compare_rendered(conf, doc, run)
    return Imported(
        _blueprint_text(doc, run, findings),
        tuple(run.outcomes),
        tuple(run.reviews),
        tuple(dict.fromkeys(run.budget.read)),
        findings,
    )


def _default_release() -> str:
    from estategen.model import DEBIAN_SLURM_BUILDS, DEFAULT_SLURM_SOURCE

    return DEBIAN_SLURM_BUILDS[DEFAULT_SLURM_SOURCE].release or "22.05"


# the release a blueprint without versions.slurm targets (its default package source's)
_DEFAULT_RELEASE = _default_release()

# Removed keys whose value a successor in the same file keeps, given no line sets it already:
# slurm.conf of 20.11 read DefaultStorage* as the default of AccountingStorage*.
_SUCCESSOR_KEYS = {
    "defaultstoragetype": ("AccountingStorageType", "accounting_storage/{}"),
    "defaultstoragehost": ("AccountingStorageHost", "{}"),
    "defaultstorageport": ("AccountingStoragePort", "{}"),
    "defaultstorageuser": ("AccountingStorageUser", "{}"),
}
# Removed keys whose value turns on a flag of a key that replaced them (merged into the site's
# own line of that key, if it has one); other values had no effect and are dropped.
_SUCCESSOR_FLAGS = {
    "fastschedule": ("2", "SlurmdParameters", "config_overrides"),
    "accountingstorejobcomment": ("yes", "AccountingStoreFlags", "job_comment"),
}
# Removed keys with a meaning no successor keeps by itself: refused (with what to use) unless
# their value is the one that did nothing.
_NO_SUCCESSOR = {"memlimitenforce": "no", "fastschedule": "1", "sallocdefaultcommand": None}


def _successors(conf: ConfFile, release: str, run: _Run) -> ConfFile:
    """The site's parameters as slurmctld ``release`` reads them: a key Slurm removed (which
    that slurmctld refuses, estategen.slurm_removed) is read as its successor where one keeps
    its meaning, dropped with a note where it had no effect, and refused otherwise."""
    given = {setting.name for setting in conf.parameters}
    kept: list[Setting] = []
    flags: dict[str, list[str]] = {}  # successor key (lower case) -> flags to add
    flag_lines: dict[str, Setting] = {}
    for setting in conf.parameters:
        removed = removed_key(setting.name, release)
        if removed is None:
            kept.append(setting)
            continue
        gone = f"Slurm {removed.release} removed {removed.name} (slurmctld {release} refuses it)"
        if password_key(setting.name) is not None:
            run.dropped(Setting(setting.key, "(a password, not copied)", setting.where), gone)
            continue
        successor = _SUCCESSOR_KEYS.get(setting.name)
        if successor is not None and successor[0].lower() not in given:
            key, form = successor
            new = Setting(key, form.format(setting.value), setting.where)
            kept.append(new)
            run.dropped(setting, f"{gone}; read as its successor {new.key}={new.value}")
            continue
        flag = _SUCCESSOR_FLAGS.get(setting.name)
        if flag is not None and setting.value.lower() == flag[0]:
            flags.setdefault(flag[1].lower(), []).append(flag[2])
            flag_lines[flag[1].lower()] = Setting(flag[1], flag[2], setting.where)
            run.dropped(setting, f"{gone}; read as its successor {flag[1]}={flag[2]}")
            continue
        harmless = _NO_SUCCESSOR.get(setting.name, "")
        if harmless is None or (harmless and setting.value.lower() != harmless):
            run.refused(setting, _instead(gone, removed))
            continue
        run.dropped(setting, f"{gone}; it has no effect")
    for index, setting in enumerate(kept):
        added = flags.pop(setting.name, None)
        if added:
            value = ",".join(dict.fromkeys([*filter(None, setting.value.split(",")), *added]))
            kept[index] = Setting(setting.key, value, setting.where)
    kept += [flag_lines[name] for name in flags]  # successors the site's file does not set
    return ConfFile(tuple(kept), conf.records, conf.files, conf.moved)


def _instead(gone: str, removed: RemovedKey) -> str:
    if removed.successor:
        return f"{gone}; its successor is {removed.successor}: set it in slurm.options"
    return f"{gone}; no key replaced it"


def _power_saving(
    conf: ConfFile, slurm: dict[str, Any], pools: list[dict[str, Any]], run: _Run
) -> None:
    """Power saving is the site's State=CLOUD nodes' (pools with `state: cloud`): without
    them its settings are refused; with them and no ResumeProgram, a review note says that
    slurmctld only waits for the nodes."""
    saving = slurm.get("power_saving")
    if not any(pool.get("state") == "cloud" for pool in pools):
        if saving is None:
            return
        from estategen.checks import OPTIONS_WITHOUT_POWER_SAVING

        slurm.pop("power_saving")
        kept = {name.lower() for name in OPTIONS_WITHOUT_POWER_SAVING}
        for setting in conf.parameters:
            if setting.name in _POWER_SAVING:
                row = PARAMETERS[setting.name]
                mapped = Outcome("mapped", setting.where, setting.key, setting.value, row.path)
                if mapped in run.outcomes:
                    run.unmap(setting, row.path)
                    if setting.name in kept:
                        # ResumeTimeout also bounds `scontrol reboot` (RebootProgram)
                        slurm.setdefault("options", {})[setting.key] = setting.value
                        run.passed(setting, f"slurm.options.{setting.key}")
                        continue
                run.refused(
                    setting,
                    "estategen renders power saving for cloud nodes only, and this site has no "
                    "State=CLOUD nodes",
                )
        return
    saving = slurm.setdefault("power_saving", {})
    defaulted = []
    for key, value in _POWER_SAVING_DEFAULTS.items():
        if key not in saving:
            saving[key] = value
            defaulted.append(f"{key}: {value}")
    if defaulted:
        run.reviews.append(
            "slurm.conf leaves these power-saving times to Slurm's defaults, which import wrote "
            f"as slurm.power_saving keys so that the render keeps them: {'; '.join(defaulted)}"
        )
    if "suspend_time" not in saving:
        run.reviews.append(
            "slurm.power_saving.suspend_time: slurm.conf sets no SuspendTime, so its "
            "State=CLOUD nodes are never suspended; estategen suspends nodes idle 600 seconds "
            "unless you set suspend_time"
        )
    if "resume_program" not in saving:
        run.reviews.append(
            "slurm.power_saving.resume_program: slurm.conf names no ResumeProgram for its "
            "State=CLOUD nodes (node_pools[].state: cloud), so slurmctld only waits for their "
            "slurmd to register; name the program that starts them"
        )
    _on_prem_kept_up(saving, pools, run)


def _pool_hosts(pool: Mapping[str, Any]) -> list[str]:
    expressions = pool.get("hosts", [])
    if isinstance(expressions, str):
        expressions = [expressions]
    return [h for expression in expressions for h in hostlist.expand(expression)]


def _on_prem_kept_up(saving: dict[str, Any], pools: list[dict[str, Any]], run: _Run) -> None:
    """The render keeps every node of a pool that is not cloud out of power saving
    (SuspendExcNodes): the site's SuspendExcNodes keeps its cloud nodes in the blueprint, its
    on-prem ones are the render's already; a review note names the on-prem nodes the site's
    slurmctld suspended and estategen's will not."""
    cloud = {h for p in pools if p.get("state") == "cloud" for h in _pool_hosts(p)}
    on_prem = [h for p in pools if p.get("state") != "cloud" for h in _pool_hosts(p)]
    excluded: set[str] = set()
    kept = []
    for expression in saving.get("exclude_nodes", []):
        hosts = hostlist.expand(expression)
        excluded.update(hosts)
        if all(h in cloud for h in hosts):
            kept.append(expression)
        elif any(h in cloud for h in hosts):
            kept.append(hostlist.compress(h for h in hosts if h in cloud))
    if kept:
        saving["exclude_nodes"] = kept
    else:
        saving.pop("exclude_nodes", None)
    suspended = [h for h in on_prem if h not in excluded]
    if suspended:
        run.reviews.append(
            f"slurm.power_saving: the site's slurmctld suspends its idle on-prem nodes "
            f"{hostlist.compress(suspended)} (SuspendExcNodes leaves them out); estategen "
            "lists every node of a pool that is not cloud in SuspendExcNodes, so they stay up"
        )


def _tracked_gpu_types(slurm: dict[str, Any], pools: list[dict[str, Any]], run: _Run) -> None:
    """The site's AccountingStorageTRES, with the GPU TRES estategen's billing weights name
    added: slurmctld refuses weights for a TRES it does not track."""
    tres = slurm.get("accounting", {}).get("tres")
    if tres is None:
        return
    gpus = [pool["gpus"] for pool in pools if "gpus" in pool]
    needed = ["gres/gpu"] if gpus else []
    needed += sorted(
        {f"gres/gpu:{g.get('gres_type', g['model'])}" for g in gpus if g.get("typed", True)}
    )
    missing = [t for t in needed if t.lower() not in {k.lower() for k in tres}]
    if missing:
        tres += missing
        run.reviews.append(
            f"slurm.accounting.tres: import added {', '.join(missing)} to the site's "
            "AccountingStorageTRES: the partitions' billing weights name them, and slurmctld "
            "refuses weights for a TRES it does not track"
        )


def _set(doc: dict[str, Any], path: str, value: Any, append: bool = False) -> None:
    *parents, last = path.split(".")
    for part in parents:
        doc = doc.setdefault(part, {})
    if append:
        doc.setdefault(last, [])
        if value not in doc[last]:
            doc[last].append(value)
    else:
        doc[last] = value


def _parameters(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """Global parameters: by the table, into slurm.options, or refused (after rendering,
    :func:`_compare_rendered` decides for the keys estategen renders)."""
    root: dict[str, Any] = {"slurm": slurm}
    refused_in_options = {k.lower() for k in REFUSED_IN_OPTIONS}
    options: dict[str, str] = {}
    given = {setting.name for setting in conf.parameters}
    defaulted = []
    for name, (path, value) in _SLURM_DEFAULTS.items():
        if name not in given:
            _set(root, path, value)
            defaulted.append(f"{path.removeprefix('slurm.')}: {value!r}")
    if defaulted:
        run.reviews.append(
            "slurm.conf leaves these to Slurm's defaults, which import wrote as the blueprint "
            f"keys so that the render keeps them: {'; '.join(defaulted)}"
        )
    # slurm.conf sets the task plugins before or after JobAcctGatherParams: map them first
    ordered = sorted(conf.parameters, key=lambda s: s.name not in PARAMETERS)
    priority = conf.parameter("PriorityType")
    basic = priority is None or priority.value.lower() == "priority/basic"
    for setting in ordered:
        instead = password_key(setting.name)
        if instead is not None:  # its value is never copied: not to the blueprint, nor printed
            withheld = Setting(setting.key, "(a password, not copied)", setting.where)
            run.refused(withheld, f"a password is a secret reference {{secret: NAME}}; {instead}")
            continue
        row = PARAMETERS.get(setting.name)
        if basic and (setting.name in _MULTIFACTOR_ROWS or setting.name in MULTIFACTOR_OPTIONS):
            run.refused(setting, _BASIC_IGNORES)
            continue
        if row is not None:
            try:
                value = row.convert(setting.value)
            except Unsayable as why:
                run.refused(setting, f"{row.path}: {why}")
                continue
            _set(root, row.path, value, row.append)
            run.source(row.path, setting)
            if row.convert is _host and _lowered(setting.value):
                run.changed(setting, f"{row.path}: {value}; {_LOWER_CASE.format(name=value)}")
            else:
                run.mapped(setting, row.path)
            continue
        if setting.name in refused_in_options or setting.name in _DERIVED:
            continue  # decided by _compare_rendered
        key = setting.key[0].upper() + setting.key[1:]
        conflict = _CONFLICTS.get(setting.name)
        if conflict is not None and conflict[0](setting.value, slurm):
            run.refused(setting, conflict[1])
            continue
        if not _OPTION_KEY.fullmatch(key) or not _OPTION_VALUE.fullmatch(setting.value):
            run.refused(setting, "slurm.options cannot hold this key or value as written")
            continue
        options[key] = setting.value
        run.passed(setting, f"slurm.options.{key}")
        run.source(f"slurm.options.{key}", setting)
    accounting = slurm.get("accounting")
    storage = conf.parameter("AccountingStorageType")
    if storage is not None and storage.value.lower() == "accounting_storage/slurmdbd":
        accounting = slurm.setdefault("accounting", {})
        if "host" not in accounting:
            controllers = slurm.get("controllers") or []
            if not controllers:
                run.refused(storage, "slurmdbd without AccountingStorageHost or SlurmctldHost")
                slurm.pop("accounting")
                accounting = None
            else:
                accounting["host"] = controllers[0]
        if accounting is not None and "enforce" not in accounting:
            accounting["enforce"] = []  # Slurm's default: AccountingStorageEnforce=none
        if accounting is not None:
            accounting["database"] = {
                "host": accounting["host"],
                "password": {"secret": "slurmdbd_db"},
            }
            run.reviews.append(
                "slurm.accounting.database: slurm.conf does not name slurmdbd's database; "
                f"import assumed it runs on {accounting['host']} with the password in "
                "secret slurmdbd_db"
            )
    elif accounting is not None:
        slurm.pop("accounting")  # a host without slurmdbd storage: nothing to account to
        for setting in conf.parameters:
            if setting.name in ("accountingstoragetres", "accountingstorageenforce"):
                run.refused(setting, "slurm.accounting needs AccountingStorageType slurmdbd")
    _controller_addresses(conf, slurm, run)
    _paths_apart(conf, slurm, run)
    _plugins_fit(conf, slurm, run)
    if options:
        slurm["options"] = dict(sorted(options.items()))


_BASIC_IGNORES = (
    "priority/basic (PriorityType, Slurm's default) orders jobs first in, first out and "
    "ignores it; slurm.scheduling.priority_type basic refuses it"
)


def _plugins_fit(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """Site plugin settings the blueprint refuses together (checks.slurm_plugins_fit): the
    site's ProctrackType with task/cgroup or X11, backfill options with sched/builtin, and a
    JobCompLoc estategen cannot keep. The setting that cannot stay is refused."""
    lines = {s.name: s for s in conf.parameters}
    proctrack = slurm.get("proctrack", "cgroup")
    tasks = slurm.get("task_plugins", ["cgroup", "affinity"])
    clash = None
    if proctrack != "cgroup" and "cgroup" in tasks:
        clash = "with TaskPlugin task/cgroup, whose limits processes it loses would escape"
    elif proctrack == "linuxproc" and "X11" in slurm.get("prolog_flags", []):
        clash = "with PrologFlags X11, which slurmctld refuses with it (slurm.conf(5))"
    if clash:
        setting = lines["proctracktype"]
        run.unmap(setting, "slurm.proctrack")
        run.refused(setting, f"slurm.proctrack: proctrack/{proctrack} is refused {clash}")
        del slurm["proctrack"]
    parameters = slurm.get("scheduler_parameters") or []
    if slurm.get("scheduler") == "builtin" and "schedulerparameters" in lines:
        setting = lines["schedulerparameters"]
        for item in [p for p in parameters if p.startswith("bf_")]:
            parameters.remove(item)
            run.refused(
                Setting(setting.key, item, setting.where),
                "a backfill option, and SchedulerType is sched/builtin",
            )
    completion = slurm.get("job_completion", {})
    location = lines.get("jobcomploc")
    folder = (
        slurm.get("paths", {})
        .get("slurmctld_log_file", SLURM_PATH_DEFAULTS["slurmctld_log_file"])
        .rsplit("/", 1)[0]
    )
    if completion.get("type", "none") == "none":
        if "location" in completion:
            assert location is not None
            run.unmap(location, "slurm.job_completion.location")
            run.refused(
                location,
                "slurm.job_completion.location: the blueprint keeps no completion log "
                "(JobCompType none, or refused)",
            )
        slurm.pop("job_completion", None)
        return
    if location is None:
        if _JOBCOMP_DEFAULT_LOCATION.rsplit("/", 1)[0] == folder:
            completion["location"] = _JOBCOMP_DEFAULT_LOCATION
        else:
            run.reviews.append(
                f"slurm.job_completion.location: slurm.conf leaves JobCompLoc to Slurm's "
                f"default {_JOBCOMP_DEFAULT_LOCATION}, outside the folder of slurmctld's log; "
                f"estategen writes {folder}/jobcomp.log"
            )
    elif completion["location"].rsplit("/", 1)[0] != folder or completion["location"] in (
        {**SLURM_PATH_DEFAULTS, **slurm.get("paths", {})}.values()
    ):
        run.unmap(location, "slurm.job_completion.location")
        run.refused(
            location,
            f"slurm.job_completion.location: estategen keeps the completion log in the folder "
            f"of slurmctld's log ({folder}), a file of its own",
        )
        del completion["location"]


def _controller_addresses(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """SlurmctldHost=NAME(ADDRESS): the address goes to slurm.controller_addresses (mapped with
    the name; refused with its line, the name kept, when it is not one address)."""
    for setting in conf.parameters:
        if setting.name not in ("slurmctldhost", "controlmachine") or "(" not in setting.value:
            continue
        name, _, rest = setting.value.partition("(")
        address = rest.removesuffix(")").strip()
        try:
            if not rest.endswith(")") or hostlist.count(address, addresses=True) != 1:
                raise hostlist.HostlistError("not one address")
        except hostlist.HostlistError:
            part = Setting(setting.key, address, setting.where)
            run.refused(part, "slurm.controller_addresses: not one address")
            continue
        if name.strip() in slurm.get("controllers", []):
            slurm.setdefault("controller_addresses", {})[name.strip()] = address


def _paths_apart(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """Site daemon paths that slurm.paths refuses together (one path for two daemon files, a
    file inside a daemon's folder, a system folder): the later lines go back to estategen's
    paths, one at a time, until the rest hold, and are refused."""
    from estategen.schema import PROGRAM_TREES, _daemon_path_problem

    site = slurm.get("paths", {})

    def problems(paths: Mapping[str, str]) -> bool:
        values = list(paths.values())
        if shares_state_and_spool(paths):
            values.remove(paths["slurmd_spool_dir"])
            if slurm.get("slurmd_user", "root") != "root":
                return True
        if len(set(values)) < len(values):
            return True
        if any(_daemon_path_problem(v) for v in values):
            return True
        if any(v.startswith(t + "/") for v in values for t in PROGRAM_TREES):
            return True
        # one daemon folder may hold the other (/var/spool/slurm and /var/spool/slurm/d): their
        # files never share a name; a log or pid file may not lie in either
        folders = [paths[key] for key in DAEMON_FOLDERS]
        files = [v for k, v in paths.items() if k not in DAEMON_FOLDERS]
        return any(v.startswith(f + "/") for v in files for f in folders)

    lines = {s.name: s for s in conf.parameters}
    order = sorted(site, key=lambda key: lines[key.replace("_", "")].where, reverse=True)
    for key in order:
        if not problems({**SLURM_PATH_DEFAULTS, **site}):
            break
        setting = lines[key.replace("_", "")]
        del site[key]
        run.unmap(setting, f"slurm.paths.{key}")
        run.refused(
            setting,
            f"slurm.paths.{key}: with the other daemon paths it would share a path or lie "
            "inside a daemon's folder, which slurm.paths refuses; estategen's path stays",
        )
    if "paths" in slurm and not site:
        slurm.pop("paths")


# --- nodes ---------------------------------------------------------------------------------


class _Shape(Record):
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int | None  # CPUs= when it counts the cores, not the threads
    real_memory: int  # MiB, the site's RealMemory
    gpu_model: str | None
    gpu_type: str | None  # the site's GRES type name when it is not the model's name
    gpu_count: int
    gpu_typed: bool  # False: Gres=gpu:N with no type in slurm.conf or gres.conf
    features: tuple[str, ...]
    weight: int
    switch: str | None
    cloud: bool = False  # State=CLOUD
    addressed: bool = False  # NodeAddr given (each host's is in _node_addresses)


def _memory(real_mib: int) -> dict[str, int]:
    """memory_gb (the whole GiB that hold the site's RealMemory) and, unless estategen's
    reserve lands on it anyway, real_memory_mib: the site's RealMemory exactly."""
    memory_gb = max(1, -(-real_mib // _GIB))
    if real_memory_mib(memory_gb) == real_mib:
        return {"memory_gb": memory_gb}
    return {"memory_gb": memory_gb, "real_memory_mib": real_mib}


def _leaf_switches(topo: ConfFile, run: _Run) -> dict[str, str]:
    """host -> the leaf switch (a SwitchName with Nodes=) it hangs from."""
    out: dict[str, str] = {}
    for record in topo.records:
        head = Setting(record.kind, record.name, record.where)
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
        run.refused(setting, "not a blueprint key", "topology.conf")
    return out


def _gres_types(gres_conf: ConfFile | None, run: _Run) -> tuple[dict[str, str], Setting | None]:
    """host -> the GPU Type gres.conf gives it (for slurm.conf lines with untyped gpu GRES),
    and gres.conf's AutoDetect line for every node (nvml or off), if it has one."""
    out: dict[str, str] = {}
    autodetect = None
    if gres_conf is None:
        return out, autodetect
    for record in gres_conf.records:
        name = record.get("Name")
        kind = record.get("Type")
        scope = record.get("NodeName")
        detect = record.get("AutoDetect")
        if name is None and scope is None and detect is not None and len(record.settings) == 1:
            # a line of its own: AutoDetect for every node (gres.conf(5))
            if detect.value.lower() in ("nvml", "off"):
                autodetect = detect
                run.mapped(detect, "node_pools[].gpus.autodetect")
            else:
                run.refused(detect, "gpus.autodetect is nvml or off", "gres.conf")
            continue
        if name is None or name.value.lower() != "gpu":
            why = "only gpu GRES are imported" if name else "estategen writes gres.conf"
            for setting in record.settings:
                if setting.name != "nodename":
                    run.refused(setting, why, "gres.conf")
            continue
        for setting in record.settings:
            if setting.name in ("name", "type", "nodename", "file", "count"):
                run.mapped(setting, "node_pools[].gpus (estategen writes gres.conf from pools)")
            else:
                run.refused(setting, "estategen writes gres.conf from the pools", "gres.conf")
        if kind is not None and scope is not None:
            for host in slurmconf.expand_hosts(scope.value, scope.where, run.budget):
                out.setdefault(host, kind.value)
    for setting in gres_conf.parameters:
        run.refused(setting, "estategen writes gres.conf from the pools", "gres.conf")
    return out, autodetect


def _node_shape(
    record: ConfRecord,
    gres_type: str | None,
    switch: str | None,
    models: dict[str, dict[str, Any]],
    run: _Run,
    seen: set[Where],
    label: str,
    addressed: bool = False,
    sources: dict[str, list[Setting]] | None = None,
) -> _Shape:
    """The shape of a NodeName line's nodes; ``sources`` gets, by pool key (gpus, features),
    the settings that gave it."""
    first = record.where not in seen
    seen.add(record.where)
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

    boards = number("Boards", 1)
    sockets = number("Sockets", 0) or number("SocketsPerBoard", 0) * boards
    cores = number("CoresPerSocket", 1)
    threads = number("ThreadsPerCore", 1)
    cpus = number("CPUs", 0)
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
    cpus_setting = get("CPUs")
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
    real = number("RealMemory", 1)  # slurm.conf(5): RealMemory defaults to 1
    if not 1 <= real <= 67_108_864:
        note_refused(get("RealMemory") or record.settings[0], "RealMemory out of range")
        real = 1
    else:
        note_mapped(get("RealMemory"), "node_pools[].real_memory_mib")
    model, kind, count, typed = None, None, 0, True
    gres = get("Gres")
    if gres is not None:
        model, kind, count, typed = _node_gres(
            gres, gres_type, models, note_mapped, note_refused, run
        )
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
    weight = number("Weight", 1)
    if not 1 <= weight <= 4_294_967_293:
        note_refused(get("Weight") or record.settings[0], "Weight above 4294967293")
        weight = 4_294_967_293
    else:
        note_mapped(get("Weight"), "node_pools[].weight")
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
        tuple(dict.fromkeys(features)),
        weight,
        switch,
        cloud,
        addressed,
    )


def _node_gres(
    gres: Setting,
    gres_type: str | None,
    models: dict[str, dict[str, Any]],
    note_mapped: Callable[[Setting | None, str], None],
    note_refused: Callable[[Setting, str], None],
    run: _Run,
) -> tuple[str | None, str | None, int, bool]:
    """(model, the site's GRES type when it is not the model's name, count, whether the
    GRES has a type). An untyped GRES (gpu:N, no Type in gres.conf) keeps no type: its
    model is a placeholder named gpu."""
    model, kind, count = None, None, 0
    typed = True
    for item in filter(None, gres.value.split(",")):
        parts = item.split(":")
        part = Setting(gres.key, item, gres.where)
        if parts[0].lower() != "gpu" or model is not None or len(parts) > 3:
            note_refused(part, "only one gpu GRES per node is a blueprint key")
            continue
        kind = parts[1] if len(parts) == 3 else gres_type or "gpu"
        typed = len(parts) == 3 or gres_type is not None
        try:
            count = int(parts[-1].split("(")[0])
        except ValueError:
            note_refused(part, "GRES count is not a number")
            continue
        if not 1 <= count <= 16:
            note_refused(part, "a pool has 1 to 16 GPUs a node")
            count = 0
            continue
        if not re.fullmatch(GRES_TYPE, kind):
            note_refused(part, f"GPU type {kind!r} is not a GRES type name ({GRES_TYPE})")
            continue
        try:
            model = _name(kind)
        except Unsayable as why:
            note_refused(part, f"GPU type: {why}")
            continue
        if model not in models and not _catalog_has(model):
            guess = _GPU_MEMORY_GUESS.get(model, _GPU_MEMORY_DEFAULT)
            models[model] = {"name": model, "memory_gb": guess}
            run.reviews.append(
                f"gpu_models.{model}.memory_gb: {guess} is a guess from the GRES type name; "
                "set the model's memory (it sets its billing weight)"
            )
        note_mapped(part, "node_pools[].gpus")
    if not (model and count):
        return None, None, 0, True
    return model, (kind if kind != model and typed else None), count, typed


def _catalog_has(model: str) -> bool:
    from estategen.catalog import builtin_models

    return model in builtin_models()


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
    gres_types, detect = _gres_types(gres_conf, run)
    autodetect = detect.value.lower() if detect is not None else None
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
    shapes: dict[tuple[Where, str | None, str | None, bool], _Shape] = {}
    shape_sources: dict[_Shape, dict[str, list[Setting]]] = {}
    for host, record in all_nodes.items():
        key = (record.where, gres_types.get(host), leaves.get(host), host in addresses)
        shape = shapes.get(key)
        if shape is None:
            given: dict[str, list[Setting]] = {}
            shape = shapes[key] = _node_shape(
                record,
                key[1],
                key[2],
                models,
                run,
                seen,
                line_names.get(record.where, host),
                key[3],
                given,
            )
            for pool_key, settings in given.items():
                shape_sources.setdefault(shape, {}).setdefault(pool_key, []).extend(settings)
        groups.setdefault((shape, tuple(membership[host])), []).append(host)
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
        if shape.gpu_model:
            gpus: dict[str, Any] = {"model": shape.gpu_model, "count": shape.gpu_count}
            if shape.gpu_type:
                gpus["gres_type"] = shape.gpu_type
            if not shape.gpu_typed:
                gpus["typed"] = False  # the site's Gres=gpu:N names no type
            if shape.gpu_model not in shape.features:
                gpus["feature"] = False  # the site's nodes do not carry the model as a feature
            if autodetect is not None:
                gpus["autodetect"] = autodetect
            pool["gpus"] = gpus
        if shape.addressed:
            pool["addresses"] = address_list(addresses[h] for h in hostlist.expand(pool["hosts"]))
        if shape.switch:
            pool["network"] = {"switch": shape.switch}
        if shape.features:
            pool["features"] = list(shape.features)
        pool["weight"] = shape.weight
        if shape.cloud:
            pool["state"] = "cloud"
        pools.append(pool)
        for host in hosts:
            pool_of[host] = name
        for pool_key, settings in shape_sources.get(shape, {}).items():
            for setting in settings:
                run.source(f"node_pools[{name}].{pool_key}", setting)
        if shape.gpu_model and detect is not None:
            run.source(f"node_pools[{name}].gpus.autodetect", detect)
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


def _yes_no(value: str) -> bool:
    if value.upper() not in ("YES", "NO"):
        raise Unsayable(f"{value!r} is not YES or NO")
    return value.upper() == "YES"


def _accounts(value: str) -> list[str] | None:
    """AllowAccounts: ALL (every account, no `teams`) or team names."""
    if value.upper() == "ALL":
        return None
    return [_name(account) for account in value.split(",") if account]


def _all_or(item: Callable[[str], Any]) -> Callable[[str], list[Any] | None]:
    """AllowQos, AllowGroups: ALL (the key left out) or names."""

    def convert(value: str) -> list[Any] | None:
        if value.upper() == "ALL":
            return None
        return list(dict.fromkeys(item(part) for part in value.split(",") if part)) or None

    return convert


def _limit(low: int, high: int) -> Callable[[str], int | None]:
    """A partition limit: UNLIMITED (the key left out) or a number."""

    def convert(value: str) -> int | None:
        if value.upper() in ("UNLIMITED", "INFINITE"):
            return None
        return _int(low, high)(value)

    return convert


def _oversubscribe(value: str) -> str:
    lowered = value.lower()
    if not re.fullmatch(OVERSUBSCRIBE, lowered):
        raise Unsayable(f"{value!r} is not NO, EXCLUSIVE, YES[:N] or FORCE[:N]")
    return lowered


def _partition_state(value: str) -> str | None:
    state = _choice({s: s for s in PARTITION_STATES})(value)
    return None if state == "up" else state  # UP: as estategen renders partitions


class _Site(Record):
    """What the site's global parameters decide for its partitions."""

    accounting: bool  # slurmdbd: QoS and accounts exist
    basic: bool  # priority/basic: no PriorityJobFactor
    memory_default: bool  # a global DefMemPerCPU or DefMemPerNode


def _memory_or_unlimited(value: str) -> int | str:
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return "unlimited"
    return _int(1, 67_108_864)(value)


# Partition record key (lower case) -> key of the blueprint partition.
PARTITION_KEYS: dict[str, Row] = {
    "default": Row("default", _yes_no),
    "maxtime": Row("max_time", _time),
    "defaulttime": Row("default_time", _time),
    "allowaccounts": Row("teams", _accounts),
    "qos": Row("qos", _name),
    "prioritytier": Row("priority_tier", _int(0, 65_533)),
    # the old Priority sets PriorityJobFactor and PriorityTier (slurm.conf(5))
    "priority": Row("priority_tier", _int(0, 65_533)),
    "preemptmode": Row(
        "preempt_mode", _choice({m: m for m in ("off", "cancel", "requeue", "suspend")})
    ),
    "hidden": Row("hidden", _yes_no),
    # --- the site override keys ---
    "state": Row("state", _partition_state),
    "oversubscribe": Row("oversubscribe", _oversubscribe),
    "shared": Row("oversubscribe", _oversubscribe),  # the old name of OverSubscribe
    "exclusiveuser": Row("exclusive_user", _yes_no),
    "priorityjobfactor": Row("priority_job_factor", _int(0, 65_533)),
    "allowqos": Row("allow_qos", _all_or(_name)),
    "allowgroups": Row("allow_groups", _all_or(_pattern(GROUP, "a group name"))),
    "denyaccounts": Row("deny_accounts", _all_or(_name)),
    **{
        limit.slurm.lower(): Row(
            limit.key,
            _limit(limit.low, limit.high) if limit.unlimited_word else _int(limit.low, limit.high),
        )
        for limit in PARTITION_LIMITS
    },
    "defmempercpu": Row("def_mem_per_cpu", _int(1, 67_108_864)),
    "defmempernode": Row("def_mem_per_node", _memory_or_unlimited),
    "defcpupergpu": Row("def_cpu_per_gpu", _int(1, 4_294_967_294)),
    "defmempergpu": Row("def_mem_per_gpu", _int(1, 67_108_864)),
    "tresbillingweights": Row("billing_weights", _weights(_billing_weight)),
}
# the old Priority sets PriorityJobFactor as well as PriorityTier (slurm.conf(5))
_ALSO = {"priority": Row("priority_job_factor", _int(0, 65_533))}


def _partition(
    record: ConfRecord,
    hosts: list[str],
    pool_of: Mapping[str, str],
    teams: set[str],
    qos: set[str],
    run: _Run,
    site: _Site,
) -> dict[str, Any] | None:
    head = Setting("PartitionName", record.name, record.where)
    try:
        name = _name(record.name)
    except Unsayable as why:
        run.refused(head, f"slurm.partitions[].name: {why}")
        return None
    if not hosts:
        run.refused(head, "a partition without nodes is not a blueprint partition")
        return None
    part: dict[str, Any] = {
        "name": name,
        "pools": list(dict.fromkeys(pool_of[h] for h in hosts)),
    }
    run.mapped(head, f"slurm.partitions[{name}]")
    run.source(f"slurm.partitions[{name}]", head)
    where = f"PartitionName={record.name}"
    for setting in record.settings:
        row = PARTITION_KEYS.get(setting.name)
        if setting.name == "nodes":
            run.mapped(setting, f"slurm.partitions[{name}].pools")
        elif row is not None:
            try:
                value = row.convert(setting.value)
                also = _ALSO.get(setting.name)
                extra = also.convert(setting.value) if also else None
            except Unsayable as why:
                run.refused(setting, f"{row.path}: {why}", where)
                continue
            if row.path in ("qos", "allow_qos", "deny_accounts") and value and not site.accounting:
                run.refused(
                    setting,
                    "QoS and accounts live in slurmdbd, and this site has no accounting",
                    where,
                )
                continue
            if site.basic and row.path == "priority_job_factor":
                run.refused(setting, f"slurm.partitions[].priority_job_factor: {_BASIC_IGNORES}")
                continue
            if value == "unlimited" and site.memory_default:
                # unlimited writes no line, so slurm.conf's own default would apply instead
                run.refused(
                    setting,
                    "slurm.partitions[].def_mem_per_node: unlimited beside slurm.conf's own "
                    "DefMemPerCPU or DefMemPerNode is not a blueprint key",
                    where,
                )
                continue
            if value is None:
                part.pop(row.path, None)
            else:
                part[row.path] = value
            if also is not None and site.basic:
                run.reviews.append(
                    f"slurm.partitions[{name}]: {setting.key}={setting.value} sets PriorityTier "
                    "and PriorityJobFactor; priority/basic ignores the job factor, so import "
                    "kept the tier"
                )
            elif also is not None:
                part[also.path] = extra
            if row.path == "qos":
                qos.add(value)
            elif row.path == "allow_qos" and value:
                qos.update(value)
            elif row.path in ("teams", "deny_accounts") and value:
                teams.update(value)
                for team in value:
                    run.source(f"identity.teams[{team}]", setting)
            run.mapped(setting, f"slurm.partitions[{name}].{row.path}")
            run.source(f"slurm.partitions[{name}].{row.path}", setting)
        else:
            run.refused(setting, "not a blueprint key", where)
    node_default = record.get("DefMemPerNode")
    others = [k for k in ("def_mem_per_cpu", "def_mem_per_gpu") if k in part]
    if "def_mem_per_node" in part and others and node_default is not None:
        # slurm.conf(5): DefMemPerCPU, DefMemPerGPU and DefMemPerNode are mutually exclusive
        del part["def_mem_per_node"]
        run.unmap(node_default, f"slurm.partitions[{name}].def_mem_per_node")
        run.refused(
            node_default,
            f"slurm.partitions[].def_mem_per_node: not with {' or '.join(others)}",
            where,
        )
    return part


def _slurm_partition_defaults(
    part: dict[str, Any], site: _Site, gpu_pools: set[str], run: _Run
) -> None:
    """Where a partition sets no default memory (and slurm.conf none for all), no billing
    weights, or no CPUs per GPU, Slurm gives a job its nodes' whole memory, bills its CPUs
    and gives a GPU job the CPUs it asks for: import writes those defaults, which estategen
    would otherwise replace with its own."""
    kept = []
    if "def_cpu_per_gpu" not in part and gpu_pools & set(part["pools"]):
        part["def_cpu_per_gpu"] = "none"
        kept.append("def_cpu_per_gpu: none (a GPU job gets the CPUs it asks for)")
    memory_keys = ("def_mem_per_cpu", "def_mem_per_gpu", "def_mem_per_node")
    if not site.memory_default and not any(k in part for k in memory_keys):
        part["def_mem_per_node"] = "unlimited"
        kept.append("def_mem_per_node: unlimited (a job gets its nodes' whole memory)")
    if "billing_weights" not in part:
        part["billing_weights"] = {}
        kept.append("billing_weights: {} (a job is billed its CPUs)")
    if kept:
        run.reviews.append(
            f"slurm.partitions[{part['name']}]: slurm.conf leaves these to Slurm's defaults, "
            f"which import wrote so that the render keeps them: {'; '.join(kept)}"
        )


# --- accounts ------------------------------------------------------------------------------

_SACCT_LINE = re.compile(r"(Cluster|Parent|Account|User|QOS)\s*-\s*'([^']*)'(.*)")


def _sacct(path: Path, run: _Run) -> dict[str, int]:
    """Accounts of a ``sacctmgr dump`` file (as our sacct.cfg writes it) with their
    Fairshare: leaf accounts (those no other account sits under) become teams."""
    text = slurmconf.read_text(path, run.budget)
    slurmconf.refuse_hidden_breaks(text, str(path))
    shares: dict[str, int] = {}
    parents: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _SACCT_LINE.fullmatch(line)
        where = Where(str(path), number)
        if not match:
            raise ConfSyntaxError(where, "expected `Kind - 'name':Key=Value...`")
        kind, name, rest = match.groups()
        fields = dict(f.split("=", 1) for f in rest.split(":") if "=" in f)
        setting = Setting(kind, name, where)
        if kind == "Parent":
            parents.add(name)
            run.mapped(setting, "the account tree estategen renders")
        elif kind == "Account":
            shares[name] = _fairshare(fields, setting, run)
            run.mapped(setting, "identity.teams")
        elif kind == "Cluster":
            run.mapped(setting, "slurm.cluster_name")
        else:
            run.refused(setting, "users need a UID; add them to identity.users", "sacct")
    return {name: share for name, share in shares.items() if name not in parents}


# identity.teams[].fairshare as the schema bounds it (a test keeps the two equal)
MAX_FAIRSHARE = 1_000_000


def _fairshare(fields: Mapping[str, str], account: Setting, run: _Run) -> int:
    """An account's Fairshare in the dump, 1 when it sets none. One the blueprint cannot hold
    (``parent``, 0, not a number in ASCII digits, out of range) is refused with its line, and
    the team keeps Slurm's default of 1."""
    value = fields.get("Fairshare")
    if value is None:
        return 1
    share = Setting("Fairshare", clip(value.strip("'")), account.where)
    try:
        return _int(1, MAX_FAIRSHARE)(share.value)
    except Unsayable as why:
        run.refused(share, f"identity.teams[].fairshare: {why}", f"Account {account.value}")
        return 1


def _teams(referenced: set[str], accounts: Mapping[str, int], run: _Run) -> list[dict[str, Any]]:
    names = sorted(set(referenced) | {a for a in accounts if _NAME.fullmatch(a)})
    teams = []
    for index, name in enumerate(names):
        team: dict[str, Any] = {"name": name, "gid": 60_000 + index}
        if accounts.get(name, 1) != 1:
            team["fairshare"] = accounts[name]
        teams.append(team)
    if teams:
        run.reviews.append(
            "identity.teams[].gid: Slurm accounts have no group ID; import numbered them from "
            "60000: set each team's real GID before rendering Ansible"
        )
    return teams


# --- output --------------------------------------------------------------------------------

_SLURM_ORDER = (
    "cluster_name",
    "controllers",
    "controller_addresses",
    "paths",
    "ports",
    "slurmd_user",
    "return_to_service",
    "select",
    "task_plugins",
    "job_acct_gather",
    "prolog_flags",
    "scheduler_parameters",
    "scheduler",
    "enforce_part_limits",
    "proctrack",
    "job_completion",
    "accounting",
    "scheduling",
    "mpi",
    "power_saving",
    "qos",
    "partitions",
    "options",
)


def _ordered_slurm(slurm: Mapping[str, Any]) -> dict[str, Any]:
    ordered = {key: slurm[key] for key in _SLURM_ORDER if key in slurm}
    return {**ordered, **slurm}


# Each pass of _settle refuses the settings behind one finding; a site has a handful.
MAX_SETTLE_PASSES = 200
_PATH_PART = re.compile(r"([^.\[\]]+)|\[([0-9]+)\]")
# list keys whose items the sources name by their name, not their index
_NAMED_LISTS = {("node_pools",), ("slurm", "partitions"), ("slurm", "qos"), ("identity", "teams")}


def _settle(doc: dict[str, Any], run: _Run) -> tuple[str, ...]:
    """Validate the blueprint built; while validate refuses a value that site settings gave
    (run.sources), take the value out and refuse those settings with the finding, so that
    the blueprint written validates. What validate still refuses (a value import gave, not
    the site) is returned as ``key.path: message`` lines."""
    from estategen import load
    from estategen.errors import BlueprintInvalid
    from estategen.pipeline import validate_document

    for _ in range(MAX_SETTLE_PASSES):
        text = _blueprint_text(doc, _Run())
        try:
            validate_document(load.parse_blueprint(text.encode(), "<imported>"))
        except BlueprintInvalid as invalid:
            errors = [f for f in invalid.findings if f.level == "error"]
            if not any(_refuse_at(doc, finding.path, finding.message, run) for finding in errors):
                return tuple(f"{f.path}: {f.message}" for f in errors)
            continue
        return ()
    return ("the blueprint: more than {MAX_SETTLE_PASSES} values refused; validate it",)


def _refuse_at(doc: dict[str, Any], path: str, message: str, run: _Run) -> bool:
    """Take out the value at ``path`` (or the nearest key above it) that site settings gave,
    and refuse them with ``message``; False when no site setting gave it."""
    parts: list[str | int] = [
        name if name else int(index) for name, index in _PATH_PART.findall(path)
    ]
    for length in range(len(parts), 0, -1):
        named = _named_path(doc, parts[:length])
        settings = run.sources.pop(named or "", None) if named else None
        if not settings:
            continue
        _remove(doc, parts[:length])
        for setting in settings:
            run.withdraw(setting)
            run.refused(setting, f"{path}: {message}")
        return True
    return False


def _named_path(doc: Mapping[str, Any], parts: list[str | int]) -> str | None:
    """``parts`` as run.sources names them: node_pools[2] as node_pools[NAME]."""
    out = ""
    node: Any = doc
    keys: list[str] = []
    for part in parts:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
            node = node[part]
            name = node.get("name") if isinstance(node, dict) else None
            out += f"[{name}]" if tuple(keys) in _NAMED_LISTS and name else f"[{part}]"
            keys = []
            continue
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
        keys.append(part)
        out += f".{part}" if out else part
    return out


def _remove(doc: dict[str, Any], parts: list[str | int]) -> None:
    """Delete the value at ``parts``; a team taken out leaves the partitions that name it."""
    parent: Any = doc
    for part in parts[:-1]:
        parent = parent[part]
    last = parts[-1]
    removed = parent[last]
    del parent[last]
    if parts[:2] == ["identity", "teams"] and len(parts) == 3 and isinstance(removed, dict):
        for part in doc.get("slurm", {}).get("partitions", []):
            for key in ("teams", "deny_accounts"):
                if removed["name"] in part.get(key, []):
                    part[key].remove(removed["name"])
                    if not part[key]:
                        del part[key]
        if not doc["identity"]["teams"]:
            del doc["identity"]


def _compare_rendered(conf: ConfFile, doc: dict[str, Any], run: _Run) -> None:
    """Keys estategen renders (or derives) that the table does not map: the site's value
    counts as mapped when the render writes the same, and is refused otherwise."""
    rendered = _render_slurm_conf(doc)
    ours = {s.name: s.value for s in rendered.parameters}
    owned = {k.lower() for k in REFUSED_IN_OPTIONS} | {k.lower() for k in _DERIVED}
    for setting in conf.parameters:
        if setting.name in PARAMETERS or setting.name not in owned:
            continue
        value = ours.get(setting.name)
        if value is not None and value.lower() == setting.value.lower():
            run.mapped(setting, "the same value estategen renders")
        elif value is None:
            run.refused(
                setting,
                "estategen writes this key only for features this blueprint does not use "
                "(or never), and slurm.options may not set it",
            )
        else:
            run.refused(setting, f"estategen renders {setting.key}={value}")


def _render_slurm_conf(doc: dict[str, Any]) -> ConfFile:
    """The parameters of the slurm.conf the blueprint renders (its record lines, one per pool
    and partition and as long as their hosts, are left out: only parameters are compared)."""
    from estategen import load
    from estategen.pipeline import validate_document
    from estategen.renderers.slurm import slurm_conf

    text = _blueprint_text(doc, _Run())
    validated = validate_document(load.parse_blueprint(text.encode(), "<imported>"))
    records = tuple(f"{kind}=" for kind in slurmconf.SLURM_RECORDS)
    rendered = slurm_conf(validated.estate).split("\n")
    parameters = "\n".join(line for line in rendered if not line.startswith(records))
    return slurmconf.parse_text(parameters, "<rendered>")


def _blueprint_text(doc: Mapping[str, Any], run: _Run, findings: tuple[str, ...] = ()) -> str:
    from estategen.yamltext import manifest

    out = [
        "# Written by `estategen import`. Review the notes below, then validate and render.",
    ]
    if run.reviews:
        out.append("#")
        out.append("# Review:")
        out += [f"#   - {note}" for note in run.reviews]
    out.append("")
    out.append(manifest(dict(doc)).rstrip("\n"))
    if run.comments:
        out.append("")
        out.append(
            "# Settings the blueprint does not keep as the site wrote them "
            "(file:line: key=value  # why):"
        )
        out += [f"#   {_one_line(c)}" for c in run.comments]
    if findings:
        out.append("")
        out.append("# What validate still refuses here, for you to decide (key.path: message):")
        out += [f"#   {_one_line(f)}" for f in findings]
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def summary(imported: Imported) -> str:
    """The report ``estategen import`` prints: each setting's fate with its source line."""
    lines = [o.format() for o in sorted(imported.outcomes, key=lambda o: (o.where, o.key))]
    counts = {
        kind: sum(o.kind == kind for o in imported.outcomes)
        for kind in ("mapped", "passed", "changed", "dropped", "refused")
    }
    lines.append(
        f"{counts['mapped']} mapped, {counts['passed']} passed through, {counts['changed']} "
        f"changed, {counts['dropped']} dropped, {counts['refused']} refused"
    )
    lines += [f"review: {note}" for note in imported.reviews]
    return "\n".join(lines) + "\n"


def unfaithful(imported: Imported) -> str:
    """Why the render of ``imported`` is not the site, in one line (for a blueprint that is
    not :attr:`Imported.faithful`)."""
    counts = {kind: sum(o.kind == kind for o in imported.outcomes) for kind in UNFAITHFUL}
    parts = [f"{n} {kind}" for kind, n in counts.items() if n]
    if imported.findings:
        parts.append(f"{len(imported.findings)} findings validate still refuses")
    return (
        "but its render would not be the site's: "
        + ", ".join(parts)
        + " (listed at the end of the blueprint)"
    )


def write(imported: Imported, output: Path) -> None:
    """Write the blueprint atomically, as :func:`estategen.write.write_file` writes one file:
    never over a file import read (slurm.conf, an Include, --gres, --topology, --sacct), a
    link, a device or a FIFO; a failed write leaves no temporary file and ``output`` as it
    was."""
    from estategen.write import write_file

    write_file(output, imported.text.encode("utf-8"), imported.inputs)


__all__ = [
    "PARAMETERS",
    "PARTITION_KEYS",
    "Imported",
    "Outcome",
    "Row",
    "import_site",
    "summary",
    "unfaithful",
    "write",
]
