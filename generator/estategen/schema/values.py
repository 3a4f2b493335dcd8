"""The value checks the rules name by ``check_with``: each says why a value the pattern lets
through is refused, or None. And the system folders no mount point or daemon path may take.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from estategen import hostlist
from estategen.errors import quote
from estategen.model import STATE_SAVE_LOCATION
from estategen.schema.patterns import (
    BILLING_WEIGHT,
    DAEMON_PATH,
    MOUNT,
    PATTERN_HINTS,
    SLURM_OPTION_VALUE,
    compiled,
)


def hostlists_problem(value: object) -> str | None:
    """Why a hostlist value (an expression or a list of them) is refused, or None."""
    expressions = value if isinstance(value, list) else [value]
    for expression in expressions:
        if not isinstance(expression, str):
            return f"hostlist entries must be strings, not {expression!r}"
        try:
            names = hostlist.count(expression)
        except hostlist.HostlistError as err:
            return str(err)
        if names > hostlist.MAX_EXPANSION:
            # the model expands each expression with this limit; refuse it here, with a
            # position, instead of failing there
            return (
                f"hostlist {expression!r} expands to {names} names, above the limit of "
                f"{hostlist.MAX_EXPANSION} for one expression (check the bracket ranges)"
            )
    return None


def addresses_problem(value: object) -> str | None:
    """Why a pool's `addresses` (an expression or a list of them, of IPv4, IPv6 or DNS
    names, like 10.1.0.[1-4]) is refused, or None; how many it names is checks.slurm_site's."""
    expressions = value if isinstance(value, list) else [value]
    for expression in expressions:
        if not isinstance(expression, str):
            return f"address entries must be strings, not {expression!r}"
        try:
            names = hostlist.count(expression, addresses=True)
        except hostlist.HostlistError as err:
            return str(err).replace("hostlist", "address list")
        if names > hostlist.MAX_EXPANSION:
            # the model expands each expression with this limit, as it does hosts
            return (
                f"address list {expression!r} expands to {names} addresses, above the limit "
                f"of {hostlist.MAX_EXPANSION} for one expression (check the bracket ranges)"
            )
    return None


def local_datetime_problem(value: object) -> str | None:
    """Why a date and time the pattern lets through is no date (``2027-02-30T08:00``), or None."""
    try:
        datetime.fromisoformat(str(value))
    except ValueError as err:
        return f"{quote(str(value))} is not a date and time: {err}"
    return None


def finite_problem(value: object) -> str | None:
    # NaN passes min and max (every comparison with it is false)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a number; give a finite value"
    return None


def slurm_option_value_problem(value: object) -> str | None:
    text = str(value)
    if not compiled(SLURM_OPTION_VALUE).fullmatch(text):
        return f"{text!r} is not a valid {PATTERN_HINTS[SLURM_OPTION_VALUE]}"
    return None


# Mounting a file system over one of these would hide the operating system of every host.
# Mount points that would hide the system's own files: these folders themselves...
SYSTEM_DIRECTORIES = frozenset({"/", "/tmp", "/var"})
# ...and these with everything under them (programs, libraries and kernel modules,
# configuration such as /etc/slurm, /etc/munge and /etc/ssh, daemons' state, spools and logs
# such as /var/lib/mysql and /var/spool/slurmd)...
SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/cache",
    "/var/lib",
    "/var/lock",
    "/var/log",
    "/var/run",
    "/var/spool",
)


# Folders of programs, configuration and the kernel: the system trees but the runtime, state,
# spool and log folders, where daemon files do belong. No file of slurm.paths lies there.
PROGRAM_TREES = tuple(t for t in SYSTEM_TREES if t != "/run" and not t.startswith("/var/"))


# ...except Slurm's StateSaveLocation (Debian's default, which slurm.conf keeps): a backup
# slurmctld takes over from the state the primary saved there, so that folder is where shared
# storage belongs on the controllers (slurm.conf(5), StateSaveLocation).
SHARED_STATE_MOUNTS = frozenset({STATE_SAVE_LOCATION})


def system_tree(mount: str) -> str | None:
    """The system folder ``mount`` is, or lies under; None when it is neither."""
    if mount in SHARED_STATE_MOUNTS:
        return None
    if mount in SYSTEM_DIRECTORIES:
        return mount
    return next(
        (tree for tree in SYSTEM_TREES if mount == tree or mount.startswith(tree + "/")), None
    )


def daemon_path_problem(value: object) -> str | None:
    """A daemon's folder or file may not be a system folder the roles would take over."""
    if not isinstance(value, str) or not compiled(DAEMON_PATH).fullmatch(value):
        return None  # the pattern reports it
    if value in SYSTEM_DIRECTORIES or value in SYSTEM_TREES:
        return (
            f"{quote(value)} is a system folder; a daemon's folder or file must lie below one, "
            "like /var/spool/slurmctld or /var/log/slurm/slurmctld.log"
        )
    return None


def port_or_range_problem(value: object) -> str | None:
    """SlurmctldPort: one port, or a range 'LOW-HIGH' of at most 64 ports."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return f"{value!r} is not a port; give a port like 6817 or a range like '6817-6820'"
    text = str(value)
    match = re.fullmatch(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", text)
    if not match:
        return f"{text!r} is not a port; give a port like 6817 or a range like '6817-6820'"
    low = int(match[1])
    high = int(match[2] or low)
    if not 1 <= low <= high <= 65_535 or high - low >= 64:
        return (
            f"{text!r} is no port range slurmctld takes: give ports 1-65535, low first, "
            "at most 64 of them (like '6817-6820')"
        )
    return None


def count_or_none_problem(value: object) -> str | None:
    """DefCpuPerGPU: CPUs (1 to 4294967294) or none."""
    if value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4_294_967_294:
        return None
    return f"{value!r} is not a CPU count; give 1 to 4294967294, or none"


def memory_or_unlimited_problem(value: object) -> str | None:
    """DefMemPerNode: MiB (1 to 64 TiB) or unlimited."""
    if value == "unlimited":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 67_108_864:
        return None
    return f"{value!r} is not a memory size; give MiB from 1 to 67108864, or unlimited"


def billing_weight_problem(value: object) -> str | None:
    """A TRESBillingWeights weight: a finite number, or a number with a K-P unit."""
    if isinstance(value, bool):
        return f"{value!r} is not a {PATTERN_HINTS[BILLING_WEIGHT]}"
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, str) and compiled(BILLING_WEIGHT).fullmatch(value):
        return None
    return f"{value!r} is not a {PATTERN_HINTS[BILLING_WEIGHT]}"


def mount_point_problem(value: object) -> str | None:
    """One spelling per mount point, never over the system's own folders.

    MOUNT lets `/x/../etc` and `/scratch/` through: the first mounts over /etc on every host,
    the second slips past the duplicate mount point check.
    """
    if not isinstance(value, str) or not compiled(MOUNT).fullmatch(value):
        return None  # the pattern reports it
    if value != "/" and any(part in ("", ".", "..") for part in value.split("/")[1:]):
        return (
            f"mount point {value!r} must be a plain absolute path "
            "(no '.', '..', '//' or trailing '/')"
        )
    tree = system_tree(value)
    if tree == value:
        return (
            f"mounting over {value} would hide the system's own files on every host; "
            "choose another mount point"
        )
    if tree:
        return (
            f"mounting over {quote(value)} would hide the system's own files under {tree} "
            "on every host; choose another mount point"
        )
    return None


VALUE_CHECKS = {
    "mount_point": mount_point_problem,
    "hostlists": hostlists_problem,
    "addresses": addresses_problem,
    "finite": finite_problem,
    "slurm_option_value": slurm_option_value_problem,
    "local_datetime": local_datetime_problem,
    "daemon_path": daemon_path_problem,
    "port_or_range": port_or_range_problem,
    "billing_weight": billing_weight_problem,
    "memory_or_unlimited": memory_or_unlimited_problem,
    "count_or_none": count_or_none_problem,
}
