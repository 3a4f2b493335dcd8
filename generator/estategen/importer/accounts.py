"""A ``sacctmgr dump``'s accounts, and the teams of the blueprint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from estategen import slurmconf
from estategen.errors import clip
from estategen.importer.converters import _NAME, Unsayable, _int
from estategen.importer.outcomes import _Run
from estategen.slurmconf import ConfSyntaxError, Setting, Where

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
