"""The mapping tables of ``estategen import``: slurm.conf parameters (:data:`PARAMETERS`)
and partition keys (:data:`PARTITION_KEYS`) to blueprint keys, and the keys import treats
apart (Slurm's defaults, derived keys, conflicting options)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from estategen.declarations import (
    PARTITION_PARAMETERS,
    OneOf,
    PartitionParameter,
    WholeNumber,
    YesNo,
)
from estategen.importer.converters import (
    _accounts,
    _all_or,
    _billing_weight,
    _canonical,
    _choice,
    _cluster_name,
    _enforce,
    _excluded_nodes,
    _folder,
    _host,
    _int,
    _limit,
    _list_of,
    _memory_or_unlimited,
    _mpi_ports,
    _partition_state,
    _pattern,
    _port,
    _preempt_mode,
    _prefixed,
    _qos_name,
    _team,
    _time,
    _weights,
    _word,
    _yes_no,
)
from estategen.model import DAEMON_FOLDERS, SLURM_PATH_DEFAULTS
from estategen.schema.patterns import (
    DAEMON_PATH,
    ENFORCE_PART_LIMITS,
    GROUP,
    JOB_ACCT_GATHER_TYPES,
    JOB_COMP_TYPES,
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
from estategen.slurm_removed import at_least


@dataclass(frozen=True, slots=True)
class Row:
    """One slurm.conf parameter the blueprint can say: where it goes and how."""

    path: str  # blueprint key path, dotted
    convert: Callable[[str], Any]
    append: bool = False  # the key may repeat; each value is appended to a list


# slurm.conf parameter (lower case) -> blueprint key. The site override keys (daemon paths,
# ReturnToService, SelectTypeParameters, ...) add their rows here.
PARAMETERS: dict[str, Row] = {
    "clustername": Row("slurm.cluster_name", _cluster_name),
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
        _preempt_mode,
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
# TaskPlugin none (scontrol shows task/none), SchedulerParameters none, PriorityType
# priority/basic, SelectType select/linear; and AccountingStorageEnforce none (with slurmdbd,
# below).
_SLURM_DEFAULTS: dict[str, tuple[str, Any]] = {
    "returntoservice": ("slurm.return_to_service", 0),
    "prologflags": ("slurm.prolog_flags", []),
    "jobacctgathertype": ("slurm.job_acct_gather", "none"),
    "taskplugin": ("slurm.task_plugins", ["none"]),
    "schedulerparameters": ("slurm.scheduler_parameters", []),
    "prioritytype": ("slurm.scheduling.priority_type", "basic"),
    "selecttype": ("slurm.select.type", "linear"),
    "enforcepartlimits": ("slurm.enforce_part_limits", "none"),
}
# Defaults a later release changed (Slurm's NEWS, "Changes in Slurm 23.11.0rc1": "Changed the
# default SelectType to select/cons_tres (from select/linear)", "Changed default value of
# PriorityType from priority/basic to priority/multifactor"; slurm.conf(5) of 24.11 says the
# same), oldest first.
_DEFAULTS_CHANGED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("23.11", {"prioritytype": "multifactor", "selecttype": "cons_tres"}),
)


def slurm_defaults(release: str) -> dict[str, tuple[str, Any]]:
    """What slurmctld ``release`` runs for each key of :data:`_SLURM_DEFAULTS` a slurm.conf
    leaves out: (blueprint key path, value)."""
    defaults = dict(_SLURM_DEFAULTS)
    for since, changed in _DEFAULTS_CHANGED:
        if at_least(release, since):
            for name, value in changed.items():
                defaults[name] = (defaults[name][0], value)
    return defaults


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

# Why import refuses what only priority/multifactor reads (the global keys above, a
# partition's PriorityJobFactor) when the site runs priority/basic.
_BASIC_IGNORES = (
    "priority/basic (PriorityType, Slurm's default) orders jobs first in, first out and "
    "ignores it; slurm.scheduling.priority_type basic refuses it"
)


def _declared(parameter: PartitionParameter) -> Row:
    """How import reads a parameter :mod:`estategen.declarations` declares, by the kind of its
    value."""
    value = parameter.value
    if isinstance(value, WholeNumber):
        low, high = value.low, value.high
        return Row(parameter.key, _limit(low, high) if value.unlimited_word else _int(low, high))
    if isinstance(value, YesNo):
        return Row(parameter.key, _yes_no)
    if isinstance(value, OneOf):
        return Row(parameter.key, _choice({word: word for word in value.words}))
    return Row(parameter.key, _word(value.pattern))


# Partition record key (lower case) -> key of the blueprint partition.
PARTITION_KEYS: dict[str, Row] = {
    "default": Row("default", _yes_no),
    "maxtime": Row("max_time", _time),
    "defaulttime": Row("default_time", _time),
    "allowaccounts": Row("teams", _accounts),
    "qos": Row("qos", _qos_name),
    "prioritytier": Row("priority_tier", _int(0, 65_533)),
    # the old Priority sets PriorityJobFactor and PriorityTier (slurm.conf(5))
    "priority": Row("priority_tier", _int(0, 65_533)),
    "hidden": Row("hidden", _yes_no),
    # --- the site override keys ---
    "state": Row("state", _partition_state),
    "allowqos": Row("allow_qos", _all_or(_qos_name)),
    "allowgroups": Row("allow_groups", _all_or(_pattern(GROUP, "a group name"))),
    "denyaccounts": Row("deny_accounts", _all_or(_team)),
    # the declared parameters, by their names and old names
    **{
        name.lower(): _declared(parameter)
        for parameter in PARTITION_PARAMETERS
        for name in (parameter.slurm, *parameter.old_names)
    },
    "defmempercpu": Row("def_mem_per_cpu", _int(1, 67_108_864)),
    "defmempernode": Row("def_mem_per_node", _memory_or_unlimited),
    "defcpupergpu": Row("def_cpu_per_gpu", _int(1, 4_294_967_294)),
    "defmempergpu": Row("def_mem_per_gpu", _int(1, 67_108_864)),
    "tresbillingweights": Row("billing_weights", _weights(_billing_weight)),
}
# the old Priority sets PriorityJobFactor as well as PriorityTier (slurm.conf(5))
_ALSO = {"priority": PARTITION_KEYS["priorityjobfactor"]}
