"""The value parsers of ``estategen import``: a slurm.conf value as the blueprint key's
value, or :class:`Unsayable` saying why the key cannot hold it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from estategen import hostlist
from estategen.errors import clip
from estategen.schema.patterns import (
    ACCOUNTING_ENFORCE,
    CLUSTER_NAME,
    DAEMON_PATH,
    PARTITION_STATES,
    PATTERN_HINTS,
    SLURM_PARTITION,
    SLURM_QOS,
    TEAM,
)
from estategen.slurm_names import kubernetes_name

_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
_HOST = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_TIME = re.compile(r"(UNLIMITED|INFINITE|([0-9]{1,12}-)?[0-9]{1,12}(:[0-9]{1,12}){0,2})")


class Unsayable(ValueError):
    """A value the blueprint key cannot hold; the message says why."""


def _name(value: str) -> str:
    name = value.lower().replace("_", "-")
    if not _NAME.fullmatch(name):
        raise Unsayable(f"{value!r} is not a name estategen can carry ({_NAME.pattern})")
    return name


def _pattern(pattern: str, hint: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def convert(value: str) -> str:
        if not compiled.fullmatch(value):
            raise Unsayable(f"{value!r} is not {hint}")
        return value

    return convert


def _slurm_name(pattern: str) -> Callable[[str], str]:
    """A partition's or a QoS's name, kept as the site writes it: the blueprint holds every
    name estategen's outputs carry unchanged, and refuses the others rather than rename them
    (a renamed QoS is not the one slurmdbd has, a renamed partition not the one users name)."""
    return _pattern(pattern, f"a {PATTERN_HINTS[pattern]}")


_partition_name = _slurm_name(SLURM_PARTITION)
_qos_name = _slurm_name(SLURM_QOS)


def _cluster_name(value: str) -> str:
    """ClusterName in lower case, as slurmctld reads it (read_config.c lower-cases it)."""
    name = value.lower()
    if not re.fullmatch(CLUSTER_NAME, name):
        raise Unsayable(f"{value!r} is not a {PATTERN_HINTS[CLUSTER_NAME]}")
    return name


def _estate_name(cluster: str | None) -> str:
    """The estate's name from the site's ClusterName, which the blueprint keeps as
    slurm.cluster_name: as a Kubernetes name (``hpc.example`` names estate hpc-example),
    ``imported`` when that is no estate name (no ClusterName, or a digit first)."""
    name = kubernetes_name(cluster or "")[:40].rstrip("-")
    return name if _NAME.fullmatch(name) else "imported"


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


_PREEMPT_MODES = ("off", "cancel", "requeue", "suspend")


def _preempt_mode(value: str) -> str:
    """PreemptMode as estategen renders it: one mode, suspend written SUSPEND,GANG (slurm.conf(5)
    of 22.05: SUSPEND "always needs the GANG option to be specified at the cluster level")."""
    words = sorted(word.strip().lower() for word in value.split(",") if word.strip())
    if words == ["gang", "suspend"]:
        return "suspend"
    if len(words) == 1 and words[0] in _PREEMPT_MODES:
        return words[0]
    if "gang" in words:
        raise Unsayable(
            f"{value!r}: estategen renders GANG only with suspend (SUSPEND,GANG); gang "
            "scheduling beside another mode, or alone, is not kept"
        )
    raise Unsayable(f"{value!r} is not one of {', '.join(_PREEMPT_MODES)}")


def _list_of(
    item: Callable[[str], Any], sep: str = ",", none: tuple[str, ...] = ()
) -> Callable[[str], list[Any]]:
    """A comma-separated slurm.conf value as a list; a value of ``none`` is the empty list."""

    def convert(value: str) -> list[Any]:
        if value.lower() in none:
            return []
        return list(dict.fromkeys(item(part) for part in value.split(sep) if part))

    return convert


def _prefixed(prefix: str, names: tuple[str, ...], bare: bool = False) -> Callable[[str], str]:
    """A plugin name like select/cons_tres, as the blueprint's short name (cons_tres). With
    ``bare``, the name without its prefix too, where slurmd adds it (TaskPlugin=affinity:
    src/slurmd/common/task_plugin.c prefixes task/ to a name without it)."""
    table = {f"{prefix}/{name}": name for name in names}
    if bare:
        table.update({name.lower(): name for name in names})
    convert = _choice(table)
    PLUGIN_SPELLINGS[convert] = frozenset(
        [f"{prefix}/{name}" for name in names] + (list(names) if bare else [])
    )
    return convert


# each plugin converter's names as Slurm spells them: slurmctld loads a plugin by its exact
# name (22.05 given JobCompType=jobcomp/None logs "cannot find jobcomp plugin for
# jobcomp/None"), where the converter reads any case
PLUGIN_SPELLINGS: dict[Callable[[str], str], frozenset[str]] = {}


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
    from estategen.schema.patterns import BILLING_TRES

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
    from estategen.schema.patterns import BILLING_WEIGHT

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


def _yes_no(value: str) -> bool:
    if value.upper() not in ("YES", "NO"):
        raise Unsayable(f"{value!r} is not YES or NO")
    return value.upper() == "YES"


def _team(value: str) -> str:
    """A Slurm account as the team of that name: in lower case, as slurmdbd holds it
    (``sacctmgr load`` lower-cases every name but a user's: ``_parse_options`` in
    src/sacctmgr/file_functions.c) and slurmctld reads it (AllowAccounts and DenyAccounts in
    ``_parse_partitionname``, src/common/read_config.c; a job's account in
    ``validate_job_create_req``, src/slurmctld/job_mgr.c), and otherwise as written
    (``chem_lab`` stays ``chem_lab``, so that ``sbatch -A chem_lab`` names it after
    cut-over); a name a team cannot carry (a Unix group, a Kubernetes name) is refused with
    the reason."""
    name = value.lower()
    if not re.fullmatch(TEAM, name):
        raise Unsayable(f"{value!r} is not a {PATTERN_HINTS[TEAM]}")
    return name


def _accounts(value: str) -> list[str] | None:
    """AllowAccounts: ALL (every account, no `teams`) or team names."""
    if value.upper() == "ALL":
        return None
    return list(dict.fromkeys(_team(account) for account in value.split(",") if account))


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


def _word(pattern: str) -> Callable[[str], str]:
    """A word slurm.conf writes in upper case, as the blueprint's lower-case word."""

    def convert(value: str) -> str:
        lowered = value.lower()
        if not re.fullmatch(pattern, lowered):
            raise Unsayable(f"{value!r} is not {PATTERN_HINTS[pattern]}")
        return lowered

    return convert


def _partition_state(value: str) -> str | None:
    state = _choice({s: s for s in PARTITION_STATES})(value)
    return None if state == "up" else state  # UP: as estategen renders partitions


def _memory_or_unlimited(value: str) -> int | str:
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return "unlimited"
    return _int(1, 67_108_864)(value)
