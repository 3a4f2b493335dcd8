"""The slurm.conf keys estategen knows: who sets each one, and what a change to it needs.

One table, :data:`SLURM_KEYS`, is read by the check that refuses ``slurm.options`` keys
estategen owns (:mod:`estategen.checks`) and by ``estategen plan`` (:mod:`estategen.plan`),
which explains a changed key as ``scontrol reconfigure``, a slurmctld restart, or a restart of
slurmctld and every slurmd. A test renders the example blueprints and a blueprint that turns on
every optional key, and fails when the slurm.conf template writes a key this table lacks.

Change policies follow slurm.conf(5) as Debian 12 ships it (slurm-client 22.05.8,
``man 5 slurm.conf``): "Changes to the configuration file take effect upon restart of Slurm
daemons, daemon receipt of the SIGHUP signal, or execution of the command "scontrol
reconfigure" unless otherwise noted"; a key is "noted" by sentences such as "A restart of
slurmctld is required for changes to this parameter to take effect" or "A restart of slurmctld
and the slurmd daemons is required". Where estategen asks for more than the page notes, the
key's ``source`` says why (a daemon reads the key, binds the port or loads the plugin only when
it starts); later pages say so too ("Changes to TCP listening settings will require a daemon
restart", slurm.conf(5) from 23.11).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from enum import Enum
from importlib import resources


class ChangePolicy(Enum):
    """What a changed key needs on a running estate."""

    RECONFIGURE = "scontrol reconfigure"
    RESTART_SLURMCTLD = "restart slurmctld"
    RESTART_ALL = "restart slurmctld and every slurmd"


class Owner(Enum):
    """Who may write a key."""

    RENDERED = "rendered"  # the slurm.conf template writes it from the blueprint
    RESERVED = "reserved"  # not written, yet refused in options (whom daemons trust, and more)
    OPTIONS = "options"  # `slurm.options` may set it; listed for what a change to it needs


@dataclass(frozen=True, slots=True)
class SlurmKey:
    """One slurm.conf parameter: who may write it, and what a change to it needs."""

    name: str  # as slurm.conf(5) spells it; slurm.conf keys are case-insensitive
    owner: Owner
    change: ChangePolicy
    source: str = "slurm.conf(5)"  # where the change policy comes from


# Reasons for a policy the page (22.05) does not note.
_SLURMD_READS_AT_START = "slurmd reads it only when it starts"
_SLURMD_PLUGIN = "slurmd and slurmstepd load this plugin only when slurmd starts"
_SLURMCTLD_PLUGIN = "slurmctld loads this plugin only when it starts"
_SLURMCTLD_READS_AT_START = "slurmctld reads it only when it starts"
_AUTH = "every daemon loads its authentication plugins and their options only when it starts"
_LISTENS = "slurm.conf(5) notes a slurmctld restart; slurmd binds or dials it only when it starts"

_R, _S, _A = ChangePolicy.RECONFIGURE, ChangePolicy.RESTART_SLURMCTLD, ChangePolicy.RESTART_ALL
_RENDERED, _RESERVED, _OPTIONS = Owner.RENDERED, Owner.RESERVED, Owner.OPTIONS

SLURM_KEYS: tuple[SlurmKey, ...] = (
    # Cluster identity, daemons, trust
    SlurmKey(
        "ClusterName",
        _RENDERED,
        _A,
        "slurmctld refuses a StateSaveLocation of another cluster; plan reports a rename",
    ),
    SlurmKey("SlurmctldHost", _RENDERED, _A, _LISTENS),
    SlurmKey("SlurmUser", _RENDERED, _A, _SLURMD_READS_AT_START),
    SlurmKey("SlurmctldPort", _RENDERED, _A, _LISTENS),
    SlurmKey("SlurmdPort", _RENDERED, _A, _LISTENS),
    # written only when slurm.slurmd_user sets it
    SlurmKey("SlurmdUser", _RENDERED, _A, _SLURMD_READS_AT_START),
    SlurmKey("AuthType", _RENDERED, _A),  # "All Slurm daemons ... must be terminated"
    SlurmKey("AuthAltTypes", _RENDERED, _A, _AUTH),
    SlurmKey("AuthAltParameters", _RENDERED, _A, _AUTH),
    SlurmKey("CredType", _RENDERED, _S),
    SlurmKey("StateSaveLocation", _RENDERED, _S),
    SlurmKey("SlurmdSpoolDir", _RENDERED, _A, _SLURMD_READS_AT_START),
    SlurmKey("SlurmctldPidFile", _RENDERED, _S, _SLURMCTLD_READS_AT_START),
    SlurmKey("SlurmdPidFile", _RENDERED, _A, "slurmd writes its pid file only when it starts"),
    SlurmKey("SlurmctldLogFile", _RENDERED, _R),
    SlurmKey("SlurmdLogFile", _RENDERED, _R),
    SlurmKey("ReturnToService", _RENDERED, _R),
    SlurmKey("MpiDefault", _RENDERED, _R),
    SlurmKey("MpiParams", _RENDERED, _R),
    # node health checks and power saving: scontrol reconfigure applies them
    SlurmKey("HealthCheckProgram", _RENDERED, _R),
    SlurmKey("HealthCheckInterval", _RENDERED, _R),
    SlurmKey("HealthCheckNodeState", _RENDERED, _R),
    SlurmKey("ResumeProgram", _RENDERED, _R),
    SlurmKey("ResumeFailProgram", _RENDERED, _R),
    SlurmKey("SuspendProgram", _RENDERED, _R),
    SlurmKey("SuspendTime", _RENDERED, _R),
    SlurmKey("ResumeTimeout", _RENDERED, _R),
    SlurmKey("SuspendTimeout", _RENDERED, _R),
    SlurmKey("SuspendExcNodes", _RENDERED, _R),
    # Resources and isolation
    SlurmKey("SelectType", _RENDERED, _A),
    SlurmKey("SelectTypeParameters", _RENDERED, _S),
    SlurmKey("GresTypes", _RENDERED, _A),
    SlurmKey("ProctrackType", _RENDERED, _A, f"slurm.conf(5) notes slurmctld; {_SLURMD_PLUGIN}"),
    SlurmKey("TaskPlugin", _RENDERED, _A, _SLURMD_PLUGIN),
    SlurmKey("JobAcctGatherType", _RENDERED, _A, _SLURMD_PLUGIN),
    SlurmKey("PrologFlags", _RENDERED, _A, _SLURMD_READS_AT_START),
    # Scheduling
    SlurmKey("SchedulerType", _RENDERED, _S),
    # The page's restart note under SchedulerParameters belongs to its no_backup_scheduling
    # option, which estategen does not write.
    SlurmKey("SchedulerParameters", _RENDERED, _R),
    SlurmKey("PriorityType", _RENDERED, _S, _SLURMCTLD_PLUGIN),
    SlurmKey("PriorityDecayHalfLife", _RENDERED, _R),
    SlurmKey("PriorityWeightAge", _RENDERED, _R),
    SlurmKey("PriorityWeightAssoc", _RENDERED, _R),
    SlurmKey("PriorityWeightFairshare", _RENDERED, _R),
    SlurmKey("PriorityWeightJobSize", _RENDERED, _R),
    SlurmKey("PriorityWeightPartition", _RENDERED, _R),
    SlurmKey("PriorityWeightQOS", _RENDERED, _R),
    SlurmKey("PriorityWeightTRES", _RENDERED, _R),  # with slurm.scheduling.priority_weight_tres
    SlurmKey("EnforcePartLimits", _RENDERED, _R),
    SlurmKey(
        "PreemptType",
        _RENDERED,
        _S,
        "slurmctld keeps the old preempt plugin at reconfigure (read_config.c)",
    ),
    SlurmKey("PreemptMode", _RENDERED, _R),
    SlurmKey("TopologyPlugin", _RENDERED, _S, _SLURMCTLD_PLUGIN),
    # Accounting
    SlurmKey("AccountingStorageType", _RENDERED, _S, _SLURMCTLD_PLUGIN),
    SlurmKey("AccountingStorageHost", _RENDERED, _S, "slurmctld connects to slurmdbd at start"),
    SlurmKey("AccountingStoragePort", _RENDERED, _S, "slurmctld connects to slurmdbd at start"),
    SlurmKey("AccountingStorageEnforce", _RENDERED, _S),
    SlurmKey("AccountingStorageTRES", _RENDERED, _S, _SLURMCTLD_READS_AT_START),
    SlurmKey("JobCompType", _RENDERED, _S, _SLURMCTLD_PLUGIN),
    # written with slurm.job_completion type filetxt
    SlurmKey(
        "JobCompLoc",
        _RENDERED,
        _S,
        "the jobcomp plugin slurmctld loads at start is given it; plan restarts slurmctld",
    ),
    # Not written, but they decide whom the daemons trust, where the controller is, or what
    # estategen's priority and topology mean: `slurm.options` may not set them.
    SlurmKey("AuthInfo", _RESERVED, _A, _AUTH),
    SlurmKey("ControlMachine", _RESERVED, _A, "slurm.conf(5): deprecated, see SlurmctldHost"),
    SlurmKey("Include", _RESERVED, _R),
    SlurmKey("TopologyParam", _RESERVED, _R),
    # `slurm.options` may set these; a change needs more than scontrol reconfigure.
    SlurmKey("PluginDir", _OPTIONS, _A),
    SlurmKey("SwitchType", _OPTIONS, _A),  # "All Slurm daemons, commands and running jobs"
    SlurmKey(
        "CoreSpecPlugin",
        _OPTIONS,
        _A,
        "slurm.conf(5) notes a restart of the slurmd daemons; plan restarts slurmctld with them",
    ),
    SlurmKey("JobContainerType", _OPTIONS, _S),
    SlurmKey("MaxJobCount", _OPTIONS, _S),
    SlurmKey("MaxNodeCount", _OPTIONS, _S),
    SlurmKey("PowerPlugin", _OPTIONS, _S),
    SlurmKey("SlurmctldParameters", _OPTIONS, _S),
)

# Keys that open a record (a node, partition, node set, front end, switch or block) rather
# than set a parameter. estategen writes the node, partition, switch and block records, and
# `slurm.options` (one `Key=value` line per entry) may not add any.
RECORD_KEYS = frozenset(
    {"NodeName", "PartitionName", "NodeSet", "DownNodes", "FrontendName", "SwitchName", "BlockName"}
)

# A node's hardware as its NodeName record states it: slurm.conf(5), NodeName: "Changes in
# node configuration (e.g. adding nodes, changing their processor count, etc.) require
# restarting both the slurmctld daemon and the slurmd daemons" (ChangePolicy.RESTART_ALL);
# its other attributes (Features, Weight) take effect with scontrol reconfigure.
NODE_HARDWARE = frozenset(
    {"Sockets", "CoresPerSocket", "ThreadsPerCore", "CPUs", "RealMemory", "Gres"}
)

# `slurm.options` keys only priority/multifactor reads (slurm.conf(5) 22.05: "applicable only
# if PriorityType=priority/multifactor", or a fair-share setting of that plugin), lower case:
# refused with priority type basic
MULTIFACTOR_OPTIONS = frozenset(
    {
        "fairsharedampeningfactor",
        "prioritycalcperiod",
        "priorityfavorsmall",
        "priorityflags",
        "prioritymaxage",
        "priorityparameters",
        "prioritysitefactorparameters",
        "prioritysitefactorplugin",
        "priorityusageresetperiod",
    }
)

# Keys whose value is a password, with the blueprint key to use instead. slurm.conf(5):
# AccountingStoragePass, JobCompPass; slurmdbd.conf(5): StoragePass (slurm.conf knows no such
# key). slurm.conf "must be readable by all users of Slurm" (slurm.conf(5)), so no secret can
# be written there, not even one resolved at deploy time: `slurm.options` refuses these keys,
# and `estategen import` copies none of their values.
_DATABASE_PASSWORD = (
    "slurmdbd's database password is slurm.accounting.database.password, which renders into "
    "slurmdbd.conf (mode 0600) from a secret reference"
)
PASSWORD_KEYS: dict[str, str] = {
    "AccountingStoragePass": _DATABASE_PASSWORD,
    "StoragePass": _DATABASE_PASSWORD,
    "JobCompPass": (
        "the job completion types estategen writes (slurm.jobcomp.type none or filetxt) use no "
        "database and no password"
    ),
}
# Any other key named as a password (acct_gather.conf(5)'s ProfileInfluxDBPass, a later
# release's *Pass or *Password key) is one too.
_PASSWORD_NAME = re.compile(r".*(pass|password|passwd)", re.IGNORECASE)
_PASSWORD_BY_NAME = {name.lower(): why for name, why in PASSWORD_KEYS.items()}


def password_key(name: str) -> str | None:
    """For a slurm.conf key (in any case) that holds a password: the blueprint key that holds
    it instead, or why none is needed; None for other keys."""
    why = _PASSWORD_BY_NAME.get(name.lower())
    if why is None and _PASSWORD_NAME.fullmatch(name):
        why = "estategen writes no configuration that reads it"
    return why


def password_refusal(key: str) -> str | None:
    """Why `slurm.options` refuses ``key``, a password key (None for other keys): one message
    whatever the value is (a literal, a secret reference, a malformed one), never quoting it."""
    instead = password_key(key)
    if instead is None:
        return None
    return (
        f"{key} is a password: a password is a secret reference {{secret: NAME}}, never a "
        "literal, and slurm.conf, which every user of Slurm reads, cannot hold one, so "
        f"slurm.options refuses the key; {instead}"
    )


_BY_NAME = {key.name.lower(): key for key in SLURM_KEYS}

RENDERED_KEYS = frozenset(key.name for key in SLURM_KEYS if key.owner is Owner.RENDERED)
# What `slurm.options` may not set, as slurm.conf(5) spells it.
REFUSED_IN_OPTIONS = RECORD_KEYS | {k.name for k in SLURM_KEYS if k.owner is not Owner.OPTIONS}


def slurm_key(name: str) -> SlurmKey | None:
    """The table's entry for a slurm.conf key, in any case (slurm.conf keys ignore case)."""
    return _BY_NAME.get(name.lower())


def change_for(name: str) -> ChangePolicy:
    """What changing a slurm.conf parameter needs; keys the table lacks take effect with
    scontrol reconfigure, as slurm.conf(5) says of every key it notes nothing else for."""
    key = slurm_key(name)
    return ChangePolicy.RECONFIGURE if key is None else key.change


@functools.cache
def _documented() -> dict[str, frozenset[str]]:
    """Release -> the keys its slurm.conf(5) documents, in lower case
    (data/slurm-conf-keys.json, written by scripts/slurm-conf-keys.py from each page)."""
    text = resources.files("estategen").joinpath("data/slurm-conf-keys.json").read_text()
    return {
        release: frozenset(k.lower() for k in keys) for release, keys in json.loads(text).items()
    }


def documented_releases() -> tuple[str, ...]:
    """The releases whose slurm.conf(5) keys estategen records, oldest first."""
    return tuple(sorted(_documented(), key=lambda r: tuple(map(int, r.split(".")))))


def documented_key(name: str) -> bool:
    """Whether any recorded release's slurm.conf(5) documents the key ``name`` (any case).
    slurmctld stops at a key it does not know ("Parsing error at unrecognized key", seen on
    22.05 and 24.11); a key one release documents may still be read, undocumented, by
    another (24.11 reads LaunchType and RoutePlugin, which its page no longer lists)."""
    return any(name.lower() in keys for keys in _documented().values())
