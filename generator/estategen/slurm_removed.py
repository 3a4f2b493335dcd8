"""slurm.conf keys and plugins Slurm removed, and the release from which slurmctld refuses each.

Read from Slurm's own tables (``slurm_conf_options`` in src/common/read_config.c, at each
release's tag): a key the table of 21.08 lacks is refused from 21.08 (slurmctld stops at a key
it does not know), and so on. Four keys 22.05 still lists are read only to stop slurmctld with
``fatal()`` (FastSchedule other than 1, AccountingStorageLoc, AccountingStoreJobComment,
SallocDefaultCommand). ``estategen import`` maps each to its successor or drops it with a note;
validate refuses them in ``slurm.options`` for the release the blueprint targets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RemovedKey:
    """A slurm.conf key Slurm removed: from ``release`` on, slurmctld refuses a file that sets
    it (an unknown key is a parse error; the keys 22.05 still lists end in ``fatal: ...
    removed``). ``successor``: what a site writes instead, when something is needed."""

    name: str
    release: str
    successor: str = ""


# Read from Slurm's own tables (slurm_conf_options in src/common/read_config.c, at each
# release's tag): a key the table of 21.08 lacks was refused from 21.08, and so on; the four
# 22.05 still lists call fatal() with the message quoted in successor.
REMOVED_KEYS: tuple[RemovedKey, ...] = (
    RemovedKey("DynAllocPort", "15.08"),
    RemovedKey("SlurmdPlugstack", "17.11"),
    RemovedKey("ChosLoc", "20.11"),
    RemovedKey("Layouts", "20.11"),
    RemovedKey("MsgAggregationParams", "20.11"),
    RemovedKey("CacheGroups", "21.08"),
    RemovedKey("CheckpointType", "21.08"),
    RemovedKey("JobCheckpointDir", "21.08"),
    RemovedKey("SchedulerPort", "21.08"),
    RemovedKey("SchedulerRootFilter", "21.08"),
    RemovedKey("MemLimitEnforce", "21.08", "JobAcctGatherParams=OverMemoryKill"),
    RemovedKey("DefaultStorageType", "21.08", "AccountingStorageType"),
    RemovedKey("DefaultStorageHost", "21.08", "AccountingStorageHost"),
    RemovedKey("DefaultStoragePort", "21.08", "AccountingStoragePort"),
    RemovedKey("DefaultStorageUser", "21.08", "AccountingStorageUser"),
    RemovedKey("DefaultStorageLoc", "21.08"),
    RemovedKey("DefaultStoragePass", "21.08"),
    # still in 22.05's table, each read only to stop slurmctld with fatal()
    RemovedKey("FastSchedule", "22.05", "SlurmdParameters=config_overrides (FastSchedule=2)"),
    RemovedKey("AccountingStorageLoc", "22.05"),
    RemovedKey("AccountingStoreJobComment", "22.05", "AccountingStoreFlags=job_comment"),
    RemovedKey("SallocDefaultCommand", "22.05", "LaunchParameters=use_interactive_step"),
    RemovedKey("SlurmctldPlugstack", "23.11"),
    RemovedKey("SchedulerAuth", "24.05"),
)
_REMOVED = {key.name.lower(): key for key in REMOVED_KEYS}


def removed_key(name: str, release: str) -> RemovedKey | None:
    """The removal of slurm.conf key ``name`` (any case) that slurmctld ``release`` ("22.05")
    refuses, or None when that release still reads the key."""
    key = _REMOVED.get(name.lower())
    if key is None or not at_least(release, key.release):
        return None
    return key


def ever_removed(name: str) -> bool:
    """Whether ``name`` (any case) is a key some release removed: releases before that read it,
    documented or not (SchedulerAuth, read until 24.05, is on no page since 21.08)."""
    return name.lower() in _REMOVED


@dataclass(frozen=True, slots=True)
class RemovedPlugin:
    """A plugin Slurm removed: from ``release`` on, slurmctld cannot load ``key=plugin``.
    ``successor``: the plugin that reads its state and its parameters instead."""

    key: str
    plugin: str
    release: str
    successor: str


# Slurm's NEWS, "Changes in Slurm 23.11.0rc1": "Removed select/cons_res. Please update your
# configuration to select/cons_tres." slurm.conf(5) of 24.11, SelectType: changing "from the
# legacy cons_res to cons_tres" is the one change of plugin that keeps the jobs' state.
REMOVED_PLUGINS: tuple[RemovedPlugin, ...] = (
    RemovedPlugin("SelectType", "select/cons_res", "23.11", "select/cons_tres"),
)


def removed_plugin(key: str, plugin: str, release: str) -> RemovedPlugin | None:
    """The removal of ``key=plugin`` (any case) that slurmctld ``release`` cannot load, or
    None when that release still has the plugin."""
    for removed in REMOVED_PLUGINS:
        if (removed.key.lower(), removed.plugin) == (key.lower(), plugin.lower()):
            return removed if at_least(release, removed.release) else None
    return None


def at_least(release: str, than: str) -> bool:
    """Whether Slurm ``release`` ("24.11") is ``than`` or later."""
    return _release(release) >= _release(than)


def _release(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor)
