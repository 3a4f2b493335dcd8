#!/usr/bin/python
"""Apply the rendered reservations.scontrol to slurmctld, idempotently.

Reservations live in slurmctld's state, not in slurm.conf, so copying a file changes nothing:
this module reads what slurmctld holds (``scontrol -o show reservation``) and runs only the
``scontrol`` commands that make it match the file. It creates reservations the file lists and
slurmctld lacks, updates those that differ, and deletes reservations whose name starts with
``prefix`` (the estate's marker) that the file no longer lists. Reservations without the
prefix are never touched.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from datetime import datetime, timedelta

DOCUMENTATION = r"""
module: estategen_slurm_reservations
short_description: Make slurmctld's reservations match estategen's reservations.scontrol
description:
  - Creates, updates and deletes Slurm reservations with scontrol so that those named with
    C(prefix) are exactly the ones the rendered file lists.
options:
  content:
    description: The text of the rendered reservations.scontrol (empty when it has none).
    type: str
    default: ""
  prefix:
    description: The name prefix of the reservations this estate owns.
    type: str
    required: true
"""
EXAMPLES = r"""
- name: Apply the reservations
  estategen_slurm_reservations:
    content: "{{ lookup('ansible.builtin.file', 'files/slurm/reservations.scontrol') }}"
    prefix: "aurora."
"""
RETURN = r"""
commands:
  description: The scontrol commands run (or, in check mode, that would run).
  type: list
  elements: str
  returned: always
"""

# Flags slurmctld adds or spells differently when it shows a reservation.
_SHOWN_ONLY_FLAGS = frozenset({"SPEC_NODES", "ALL_NODES", "PART_NODES"})
_FLAG_SPELLINGS = {"NO_HOLD_JOBS_AFTER_END": "NO_HOLD_JOBS_AFTER", "STATIC": "STATIC_ALLOC"}
# How far a recurring reservation's StartTime moves after each occurrence.
_PERIODS = {
    "HOURLY": timedelta(hours=1),
    "DAILY": timedelta(days=1),
    "WEEKDAY": timedelta(days=1),
    "WEEKEND": timedelta(days=1),
    "WEEKLY": timedelta(weeks=1),
}
# Keys an update cannot remove or change in place: a change deletes and creates again.
_RECREATE_KEYS = ("Flags", "PartitionName")
_LIST_KEYS = ("Users", "Accounts")
_TIME = "%Y-%m-%dT%H:%M:%S"


def parse_wanted(content: str) -> dict[str, dict[str, str]]:
    """The reservations a rendered file lists, by name, each as its Key=value arguments."""
    wanted: dict[str, dict[str, str]] = {}
    for line in content.splitlines():
        words = line.split()
        if words[:2] != ["create", "reservation"]:
            continue
        fields = dict(word.split("=", 1) for word in words[2:])
        wanted[fields["ReservationName"]] = fields
    return wanted


# `scontrol -o show reservation` prints each reservation on one line: its fields in the order
# slurm_sprint_reservation_info (src/api/reservation_info.c) writes them, one space between
# them and each value as it is, spaces included:
#   ReservationName StartTime EndTime Duration Nodes NodeCnt CoreCnt Features PartitionName
#   Flags [NodeName CoreIDs]... TRES [AllowedPartitions QOS] Users Groups Accounts Licenses
#   State BurstBuffer [Watts] MaxStartDelay [Comment]
# (Watts up to 23.11; Comment from 23.02, when set; AllowedPartitions and QOS from 25.11). A
# name, a feature, a burst buffer or a comment may hold any text, "Key=" and newlines
# included; every other value is Slurm's own and holds no space. So a record is matched whole,
# field by field in that order, Slurm's own values anchoring the free ones; the comment is the
# rest of the line, and of every line after it that is no record.
_RECORD = re.compile(
    r"ReservationName=(?P<ReservationName>.*?)"
    r" StartTime=(?P<StartTime>\S+) EndTime=(?P<EndTime>\S+) Duration=(?P<Duration>\S+)"
    r" Nodes=(?P<Nodes>\S*) NodeCnt=(?P<NodeCnt>[0-9]+) CoreCnt=(?P<CoreCnt>[0-9]+)"
    r" Features=(?P<Features>.*?) PartitionName=(?P<PartitionName>\S*) Flags=(?P<Flags>\S*)"
    r"(?: +NodeName=\S* CoreIDs=\S*)*"
    r" TRES=(?P<TRES>\S*)"
    r"(?: AllowedPartitions=(?P<AllowedPartitions>\S*) QOS=(?P<QOS>\S*))?"
    r" Users=(?P<Users>\S*) Groups=(?P<Groups>\S*) Accounts=(?P<Accounts>\S*)"
    r" Licenses=(?P<Licenses>\S*) State=(?P<State>\S+) BurstBuffer=(?P<BurstBuffer>.*?)"
    r"(?: Watts=(?P<Watts>\S*))? MaxStartDelay=(?P<MaxStartDelay>\S*)"
    r"(?: Comment=(?P<Comment>.*))?"
)


def records(output: str) -> list[dict[str, str]]:
    """The reservations of ``scontrol -o show reservation`` output, in order, each by field
    (a field Slurm did not print is absent)."""
    found: list[dict[str, str]] = []
    for line in output.splitlines():
        match = _RECORD.fullmatch(line)
        if match:
            found.append({k: v for k, v in match.groupdict().items() if v is not None})
        elif found:  # a comment's next line
            found[-1]["Comment"] = found[-1].get("Comment", "") + "\n" + line
    return found


Show = Callable[[str], str]


def parse_shown(
    output: str, prefix: str | None = None, show: Show | None = None
) -> dict[str, dict[str, str]]:
    """``scontrol -o show reservation`` output, by name.

    A comment may hold a newline and, after it, a line that reads as a whole record. With
    ``show`` (the output of ``scontrol -o show reservation NAME``), each reservation named with
    ``prefix`` is read again on its own and only the first record of that answer counts: a
    record written inside another's comment names no reservation slurmctld has (dropped) or
    one it has (read from slurmctld itself), so it is never deleted or compared by mistake.
    """
    shown: dict[str, dict[str, str]] = {}
    for record in records(output):
        name = record["ReservationName"]
        if show is None or prefix is None or not name.startswith(prefix):
            shown.setdefault(name, record)
        elif name not in shown:
            own = [r for r in records(show(name))[:1] if r["ReservationName"] == name]
            if own:
                shown[name] = own[0]
    return shown


def flags(text: str) -> set[str]:
    # slurmctld shows a flag's value after it (PURGE_COMP=00:05:00)
    bare = (f.partition("=")[0] for f in text.split(","))
    names = {_FLAG_SPELLINGS.get(f, f) for f in bare if f and f != "(null)"}
    return names - _SHOWN_ONLY_FLAGS


def seconds(text: str) -> int | None:
    """Seconds of a Slurm time as scontrol shows durations ([D-]HH:MM:SS); None if UNLIMITED."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return ((int(days or 0) * 24 + parts[0]) * 60 + parts[1]) * 60 + parts[2]


def _blank(text: str) -> str:
    """A value scontrol shows as ``(null)`` when it is unset."""
    return "" if text == "(null)" else text


def _names(text: str) -> set[str]:
    return {n for n in text.split(",") if n and n != "(null)"}


def _wanted_seconds(fields: dict[str, str]) -> int | None:
    if "EndTime" in fields:
        delta = datetime.strptime(fields["EndTime"], _TIME) - datetime.strptime(
            fields["StartTime"], _TIME
        )
        return int(delta.total_seconds())
    return seconds(fields.get("Duration", "UNLIMITED"))


def _shown_seconds(have: dict[str, str]) -> int | None:
    if have.get("Duration", "").upper() in ("UNLIMITED", "INFINITE"):
        return None
    end, start = (datetime.strptime(have[k], _TIME) for k in ("EndTime", "StartTime"))
    return int((end - start).total_seconds())


def _same_start(want: dict[str, str], have: dict[str, str]) -> bool:
    """A recurring reservation's StartTime moves on by its period after each occurrence."""
    wanted, shown = (datetime.strptime(x["StartTime"], _TIME) for x in (want, have))
    if wanted == shown:
        return True
    periods = [_PERIODS[f] for f in flags(want.get("Flags", "")) if f in _PERIODS]
    if not periods or shown < wanted:
        return False
    return (shown - wanted) % periods[0] == timedelta(0) or (
        periods[0] == timedelta(days=1) and shown.time() == wanted.time()
    )


Expand = Callable[[str], list[str]]


def differences(want: dict[str, str], have: dict[str, str], expand: Expand) -> list[str]:
    """The keys of ``want`` whose value slurmctld does not hold; ``expand`` turns a Slurm
    hostlist into its names."""
    changed = []
    if not _same_start(want, have):
        changed.append("StartTime")
    if _wanted_seconds(want) != _shown_seconds(have):
        changed.append("EndTime" if "EndTime" in want else "Duration")
    if set(expand(want["Nodes"])) != set(expand(have.get("Nodes", ""))):
        changed.append("Nodes")
    if want.get("PartitionName", "") != _blank(have.get("PartitionName", "")):
        changed.append("PartitionName")
    if flags(want.get("Flags", "")) != flags(have.get("Flags", "")):
        changed.append("Flags")
    for key in _LIST_KEYS:
        if _names(want.get(key, "")) != _names(have.get(key, "")):
            changed.append(key)
    return changed


def _create(fields: dict[str, str]) -> list[str]:
    return ["create", "reservation", *(f"{k}={v}" for k, v in fields.items())]


def commands(
    wanted: dict[str, dict[str, str]],
    shown: dict[str, dict[str, str]],
    prefix: str,
    expand: Expand,
) -> list[list[str]]:
    """The scontrol commands (argv after ``scontrol``) that make ``shown`` match ``wanted``."""
    out: list[list[str]] = []
    for name in sorted(shown):
        if name.startswith(prefix) and name not in wanted:
            out.append(["delete", f"ReservationName={name}"])
    for name, want in wanted.items():
        have = shown.get(name)
        if have is None:
            out.append(_create(want))
            continue
        changed = differences(want, have, expand)
        if not changed:
            continue
        dropped = [k for k in _LIST_KEYS if k in changed and not want.get(k)]
        if any(k in changed for k in _RECREATE_KEYS) or dropped:
            out.append(["delete", f"ReservationName={name}"])
            out.append(_create(want))
            continue
        update = ["update", f"ReservationName={name}"]
        for key in changed:
            if key == "StartTime":
                update.append(f"StartTime={want['StartTime']}")
                if "EndTime" not in want:
                    update.append(f"Duration={want['Duration']}")
            update.append(f"{key}={want[key]}")
        out.append(list(dict.fromkeys(update)))
    return out


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec={
            "content": {"type": "str", "default": ""},
            "prefix": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    prefix = module.params["prefix"]
    if not prefix:
        module.fail_json(msg="prefix must not be empty: it keeps other reservations untouched")

    def scontrol(*args: str, missing: str = "No reservations") -> str:
        # times as parse_shown reads them, whatever the site's SLURM_TIME_FORMAT
        rc, out, err = module.run_command(
            ["scontrol", *args], environ_update={"SLURM_TIME_FORMAT": "standard"}
        )
        if rc != 0 and missing in out + err:
            return ""
        if rc != 0:
            module.fail_json(msg=f"scontrol {shlex.join(args)} failed: {err or out}", rc=rc)
        return str(out)

    def show(name: str) -> str:
        return scontrol("-o", "show", "reservation", name, missing="not found")

    def expand(hosts: str) -> list[str]:
        return scontrol("show", "hostnames", hosts).split() if hosts else []

    wanted = parse_wanted(module.params["content"])
    shown = parse_shown(scontrol("-o", "show", "reservation"), prefix, show)
    plan = commands(wanted, shown, prefix, expand)
    if not module.check_mode:
        for command in plan:
            scontrol(*command)
    module.exit_json(changed=bool(plan), commands=[shlex.join(c) for c in plan])


if __name__ == "__main__":
    main()
