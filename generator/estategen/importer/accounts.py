"""A ``sacctmgr dump``'s accounts, and the teams of the blueprint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estategen import slurmconf
from estategen.errors import clip
from estategen.importer.converters import Unsayable, _int, _qos_name, _team
from estategen.importer.outcomes import _Run
from estategen.slurmconf import ConfSyntaxError, Setting, Where

# a line of a ``sacctmgr dump`` file: a title, ' - ', then ':'-separated options, the first
# the entity's name; names and values may be quoted (sacctmgr(1), FLAT FILE DUMP AND LOAD)
_SACCT_LINE = re.compile(r"([A-Za-z]+)\s*-\s*(.*)")
_OPTION = re.compile(r"""(?:[^:'"]|'[^']*'|"[^"]*")+""")
# the titles ``sacctmgr load`` reads, in any case (load_sacctmgr_cfg_file in
# src/sacctmgr/file_functions.c, slurm-22-05-8-1 and slurm-24-11-5-1): any other line is
# "Misformatted"
_TITLES = {
    "cluster": "Cluster",
    "machine": "Cluster",
    "parent": "Parent",
    "account": "Account",
    "project": "Account",
    "user": "User",
}
_NO_QOS_LINES = (
    "not a line sacctmgr load reads (only Cluster, Parent, Account and User lines; "
    "sacctmgr dump writes no QoS, see sacctmgr(1) FLAT FILE DUMP AND LOAD): import reads "
    "the QoS from slurm.conf's partitions and from the QOS= of the dump's Cluster and "
    "Account lines; declare any other as slurm.qos"
)


def _unquoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


@dataclass(frozen=True, slots=True)
class Dump:
    """What a ``sacctmgr dump`` gives the blueprint: its team accounts with their
    Fairshare, and the QoS its associations name."""

    shares: dict[str, int]
    qos: set[str]


def _sacct(path: Path, run: _Run, accounting: bool) -> Dump:
    """Accounts of a ``sacctmgr dump`` file with their Fairshare: leaf accounts (those no
    other account sits under) become teams, under their names in lower case, as slurmdbd
    keeps them; the QoS named in QOS= of its Cluster and Account lines become slurm.qos."""
    text = slurmconf.read_text(path, run.budget)
    slurmconf.refuse_hidden_breaks(text, str(path))
    shares: dict[str, int] = {}
    parents: set[str] = set()
    qos: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _SACCT_LINE.fullmatch(line)
        where = Where(str(path), number)
        options = _OPTION.findall(match[2]) if match else []
        if not match or not options or not _unquoted(options[0]):
            raise ConfSyntaxError(where, "expected `Title - name:Key=Value...`")
        name = _unquoted(options[0])
        fields = {
            key.strip().lower(): _unquoted(value)
            for key, sep, value in (option.partition("=") for option in options[1:])
            if sep
        }
        kind = _TITLES.get(match[1].lower())
        setting = Setting(kind or match[1], name, where)
        if kind is None:
            run.refused(setting, _NO_QOS_LINES, "sacct")
            continue
        if kind in ("Cluster", "Account") and "qos" in fields:
            qos.update(_dump_qos(kind, Setting("QOS", fields["qos"], where), run, accounting))
        if kind == "Parent":
            parents.add(name.lower())
            run.mapped(setting, "the account tree estategen renders")
        elif kind == "Account":
            try:
                team = _team(name)
            except Unsayable as why:
                run.refused(setting, f"identity.teams[].name: {why}", "sacct")
                continue
            shares[team] = _fairshare(fields, setting, run)
            run.mapped(setting, f"identity.teams[{team}]")
        elif kind == "Cluster":
            run.mapped(setting, "slurm.cluster_name")
        else:
            run.refused(setting, "users need a UID; add them to identity.users", "sacct")
    return Dump({name: share for name, share in shares.items() if name not in parents}, qos)


def _dump_qos(kind: str, setting: Setting, run: _Run, accounting: bool) -> set[str]:
    """The QoS an association of the dump may use, as slurm.qos. The render grants every
    slurm.qos to every team (qos.sacctmgr), which is the Cluster line's grant but more than
    an Account line's; a QoS name estategen cannot carry is refused with the reason."""
    if not accounting:
        run.refused(setting, "QoS live in slurmdbd, and this site's slurm.conf has no accounting")
        return set()
    names: set[str] = set()
    for part in filter(None, setting.value.split(",")):
        try:
            names.add(_qos_name(part.lstrip("+-=")))
        except Unsayable as why:
            run.refused(Setting("QOS", part, setting.where), f"slurm.qos[].name: {why}", kind)
    if kind == "Cluster":
        run.mapped(setting, "slurm.qos")
    else:
        run.changed(
            setting,
            "slurm.qos: the render grants every QoS to every team, this account's too",
            kind,
        )
    return names


# identity.teams[].fairshare as the schema bounds it (a test keeps the two equal)
MAX_FAIRSHARE = 1_000_000


def _fairshare(fields: Mapping[str, str], account: Setting, run: _Run) -> int:
    """An account's Fairshare in the dump, 1 when it sets none. One the blueprint cannot hold
    (``parent``, 0, not a number in ASCII digits, out of range) is refused with its line, and
    the team keeps Slurm's default of 1."""
    value = fields.get("fairshare")
    if value is None:
        return 1
    share = Setting("Fairshare", clip(value.strip("'")), account.where)
    try:
        return _int(1, MAX_FAIRSHARE)(share.value)
    except Unsayable as why:
        run.refused(share, f"identity.teams[].fairshare: {why}", f"Account {account.value}")
        return 1


def _teams(referenced: set[str], accounts: Mapping[str, int], run: _Run) -> list[dict[str, Any]]:
    names = sorted(set(referenced) | set(accounts))
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
