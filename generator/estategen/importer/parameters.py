"""slurm.conf's global parameters as the blueprint's ``slurm`` keys: mapped by the table,
passed through in ``slurm.options``, or refused; and the settings the blueprint refuses
together (plugins, daemon paths, power saving without cloud nodes)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from estategen import hostlist
from estategen.importer.converters import (
    _LOWER_CASE,
    PLUGIN_SPELLINGS,
    Unsayable,
    _host,
    _lowered,
)
from estategen.importer.outcomes import Outcome, _Run
from estategen.importer.tables import (
    _BASIC_IGNORES,
    _CONFLICTS,
    _DERIVED,
    _JOBCOMP_DEFAULT_LOCATION,
    _MULTIFACTOR_ROWS,
    _POWER_SAVING,
    _POWER_SAVING_DEFAULTS,
    PARAMETERS,
    slurm_defaults,
)
from estategen.model import DAEMON_FOLDERS, SLURM_PATH_DEFAULTS, shares_state_and_spool
from estategen.slurm_keys import MULTIFACTOR_OPTIONS, REFUSED_IN_OPTIONS, password_key
from estategen.slurm_removed import removed_plugin
from estategen.slurmconf import ConfFile, Setting

_OPTION_KEY = re.compile(r"[A-Z][A-Za-z0-9]{1,63}")
_OPTION_VALUE = re.compile(r"[A-Za-z0-9_.,:/=+@%-]{1,256}")


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
        from estategen.checks.slurm_conf import OPTIONS_WITHOUT_POWER_SAVING

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


# What slurmdbd tracks when slurm.conf sets no AccountingStorageTRES (slurm.conf(5) of 22.05
# and 24.11, AccountingStorageTRES: "Billing, CPU, Energy, Memory, Node, FS/Disk, Pages and
# VMem are tracked by default"), in the order `scontrol show config` lists them.
SLURM_DEFAULT_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")


def _tracked_gpu_types(slurm: dict[str, Any], pools: list[dict[str, Any]], run: _Run) -> None:
    """The TRES slurmdbd tracks: the site's AccountingStorageTRES, or with GPU pools and none
    set, Slurm's default TRES (estategen would add the GPU TRES); with the GPU TRES estategen's
    billing weights or QoS GPU limits name added: slurmctld refuses weights for a TRES it does
    not track. Runs after the partitions and QoS are imported."""
    accounting = slurm.get("accounting")
    gpus = [pool["gpus"] for pool in pools if "gpus" in pool]
    if accounting is None or (accounting.get("tres") is None and not gpus):
        return
    tres = accounting.get("tres")
    if tres is None:
        tres = accounting["tres"] = list(SLURM_DEFAULT_TRES)
        run.reviews.append(
            "slurm.accounting.tres: slurm.conf sets no AccountingStorageTRES, so slurmdbd "
            "tracks Slurm's default TRES and no GPU TRES; import wrote them, so that the "
            "render does not add the GPU TRES estategen tracks by default"
        )
    needed: list[str] = []
    if any("billing_weights" not in p for p in slurm.get("partitions", [])):
        needed = ["gres/gpu"] if gpus else []
        needed += sorted(
            {f"gres/gpu:{g.get('gres_type', g['model'])}" for g in gpus if g.get("typed", True)}
        )
    elif gpus and slurm.get("qos"):
        needed = ["gres/gpu"]
    missing = [t for t in needed if t.lower() not in {k.lower() for k in tres}]
    if missing:
        tres += missing
        run.reviews.append(
            f"slurm.accounting.tres: import added {', '.join(missing)} to the site's "
            "AccountingStorageTRES: the partitions' billing weights or the QoS GPU limits "
            "name them, and slurmctld refuses weights for a TRES it does not track"
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


def _parameters(conf: ConfFile, slurm: dict[str, Any], release: str, run: _Run) -> None:
    """Global parameters as slurmctld ``release`` reads them: by the table, into
    slurm.options, or refused (after rendering, :func:`_compare_rendered` decides for the keys
    estategen renders)."""
    root: dict[str, Any] = {"slurm": slurm}
    refused_in_options = {k.lower() for k in REFUSED_IN_OPTIONS}
    options: dict[str, str] = {}
    given = {setting.name for setting in conf.parameters}
    defaulted = []
    defaults = slurm_defaults(release)
    for name, (path, value) in defaults.items():
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
    if priority is None:
        basic = defaults["prioritytype"][1] == "basic"
    else:
        basic = priority.value.lower() == "priority/basic"
    for setting in ordered:
        instead = password_key(setting.name)
        if instead is not None:  # its value is never copied: not to the blueprint, nor printed
            withheld = Setting(setting.key, "(a password, not copied)", setting.where)
            run.refused(withheld, f"a password is a secret reference {{secret: NAME}}; {instead}")
            continue
        if "slurmctldhost" in given and setting.name in _OLD_CONTROLLER_KEYS:
            run.dropped(setting, f"slurmctld ignores {setting.key} since SlurmctldHost is set")
            continue
        if _ADDRESS_OF.get(setting.name) in given:
            continue  # decided by _controller_addresses
        row = PARAMETERS.get(setting.name)
        if basic and (setting.name in _MULTIFACTOR_ROWS or setting.name in MULTIFACTOR_OPTIONS):
            run.refused(setting, _BASIC_IGNORES)
            continue
        if row is not None:
            gone = removed_plugin(setting.name, setting.value, release)
            try:
                value = row.convert(gone.successor if gone else setting.value)
            except Unsayable as why:
                run.refused(setting, f"{row.path}: {why}")
                continue
            _set(root, row.path, value, row.append)
            run.source(row.path, setting)
            if gone is not None:
                run.changed(
                    setting,
                    f"{row.path}: {value}; Slurm {gone.release} removed {gone.plugin}, which "
                    f"slurmctld {release} cannot load: its successor {gone.successor} reads "
                    "the jobs' state and the same parameters",
                )
            elif row.convert is _host and _lowered(setting.value):
                run.changed(setting, f"{row.path}: {value}; {_LOWER_CASE.format(name=value)}")
            elif setting.value not in PLUGIN_SPELLINGS.get(row.convert, (setting.value,)):
                run.changed(
                    setting,
                    f"{row.path}: {value}; slurmctld loads a plugin by its exact name and "
                    f"finds none named {setting.value}: the render names the plugin as Slurm "
                    "spells it",
                )
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


# the deprecated address keys, each of the controller its key names: slurmctld 22.05 reads
# ControlMachine=NAME with ControlAddr=ADDRESS as SlurmctldHost=NAME(ADDRESS) and ignores
# ControlAddr beside SlurmctldHost (slurm.conf(5): "Deprecated option, see SlurmctldHost")
_ADDRESS_OF = {"controladdr": "controlmachine", "backupaddr": "backupcontroller"}
# the old-style keys slurmctld ignores beside SlurmctldHost (src/common/read_config.c of 22.05:
# "Ignoring ControlMachine since SlurmctldHost is set", and so for the others)
_OLD_CONTROLLER_KEYS = {*_ADDRESS_OF, *_ADDRESS_OF.values()}


def _controller_addresses(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """SlurmctldHost=NAME(ADDRESS), or ControlMachine=NAME with ControlAddr=ADDRESS (and
    BackupController with BackupAddr): the address goes to slurm.controller_addresses (mapped
    with the name; refused with its line, the name kept, when it is not one address)."""
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
    if conf.parameter("SlurmctldHost") is not None:
        return  # the old-style keys were dropped: slurmctld ignores them
    for key, host_key in _ADDRESS_OF.items():
        given, host = conf.parameter(key), conf.parameter(host_key)
        if given is None or host is None:
            continue
        setting = given
        name = _host(host.value)
        address = setting.value.strip()
        if address.lower() == name:
            run.mapped(setting, "slurm.controllers")  # slurmctld's default: the name itself
            continue
        try:
            if hostlist.count(address, addresses=True) != 1:
                raise hostlist.HostlistError("not one address")
        except hostlist.HostlistError:
            run.refused(setting, "slurm.controller_addresses: not one address")
            continue
        if name not in slurm.get("controllers", []):
            run.refused(setting, f"slurm.controller_addresses: {name} is not a controller kept")
            continue
        slurm.setdefault("controller_addresses", {}).setdefault(name, address)
        run.mapped(setting, f"slurm.controller_addresses.{name}")


def _paths_apart(conf: ConfFile, slurm: dict[str, Any], run: _Run) -> None:
    """Site daemon paths that slurm.paths refuses together (one path for two daemon files, a
    file inside a daemon's folder, a system folder): the later lines go back to estategen's
    paths, one at a time, until the rest hold, and are refused."""
    from estategen.schema.values import PROGRAM_TREES, daemon_path_problem

    site = slurm.get("paths", {})

    def problems(paths: Mapping[str, str]) -> bool:
        values = list(paths.values())
        if shares_state_and_spool(paths):
            values.remove(paths["slurmd_spool_dir"])
            if slurm.get("slurmd_user", "root") != "root":
                return True
        if len(set(values)) < len(values):
            return True
        if any(daemon_path_problem(v) for v in values):
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
