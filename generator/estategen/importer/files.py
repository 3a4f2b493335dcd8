"""The site's files as ``estategen import`` reads them: slurm.conf (its Includes too),
gres.conf and topology.conf within the run's budget, and slurm.conf's settings as the target
release's slurmctld reads them (a key Slurm removed is read as its successor, dropped or
refused)."""

from __future__ import annotations

from pathlib import Path

from estategen import slurmconf
from estategen.importer.outcomes import _Run
from estategen.slurm_keys import password_key
from estategen.slurm_removed import RemovedKey, removed_key
from estategen.slurmconf import GRES_RECORDS, TOPOLOGY_RECORDS, ConfFile, Setting


def _site_files(
    slurm_conf: str | Path,
    gres: str | Path | None,
    topology: str | Path | None,
    slurm_version: str | None,
    run: _Run,
    site_root: Path | None = None,
) -> tuple[ConfFile, ConfFile | None, ConfFile | None]:
    """slurm.conf (its parameters as slurmctld of ``slurm_version`` reads them), gres.conf
    and topology.conf, each read within ``run.budget``; a review note names each Include
    of an absolute path and the file read for it: under ``site_root`` (the folder that
    stands for the site's ``/``) or beside the file given."""
    conf = slurmconf.parse_file(slurm_conf, budget=run.budget, site_root=site_root)
    conf = _successors(conf, slurm_version or _DEFAULT_RELEASE, run)
    gres_conf = slurmconf.parse_file(gres, GRES_RECORDS, run.budget, site_root) if gres else None
    topo = (
        slurmconf.parse_file(topology, TOPOLOGY_RECORDS, run.budget, site_root)
        if topology
        else None
    )
    for found in (conf, gres_conf, topo):
        for where, target, read in found.moved if found else ():
            if site_root is not None and Path(read).is_relative_to(site_root):
                how = f": import read {read}, the file at that path under the site root"
            else:
                lacking = (
                    f"is not under the site root {site_root}"
                    if site_root is not None
                    else "is not on this machine"
                )
                how = f" {lacking}; import read {read}, the file of that name beside the file given"
            run.reviews.append(f"{where}: Include {target}{how}")
    return conf, gres_conf, topo


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
# Former names slurmctld still reads in place of a key the file does not set (src/common/
# read_config.c of 22.05 and 24.11: CryptoType as CredType, crypto swapped for cred); beside
# that key they have no effect.
_FORMER_NAMES = {"cryptotype": ("CredType", "crypto", "cred")}
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
        former = _FORMER_NAMES.get(setting.name)
        if removed is None and former is not None:
            key, old, new_word = former
            if key.lower() in given:
                run.dropped(setting, f"slurmctld reads {key} instead, which the file sets")
                continue
            new = Setting(key, setting.value.replace(old, new_word, 1), setting.where)
            kept.append(new)
            run.mapped(setting, f"{key}, its former name: slurmctld reads it as {new.value}")
            continue
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
