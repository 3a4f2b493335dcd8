"""The slurm_controller role's reservation module: which scontrol commands it runs.

The module's comparison, as pure functions over `scontrol -o show reservation` records; the
real slurmctld runs it in tests/test_slurm_reservations.py.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from conftest import ROOT

PATH = ROOT / "playbooks/roles/slurm_controller/library/estategen_slurm_reservations.py"
WANTED = (
    "# comment\n"
    "create reservation ReservationName=e.maint StartTime=2030-01-07T06:00:00 "
    "Duration=04:00:00 Nodes=n[1-2] Flags=MAINT,WEEKLY Accounts=ops\n"
)
# as slurmctld 22.05 shows it
SHOWN = (
    "ReservationName=e.maint StartTime=2030-01-07T06:00:00 EndTime=2030-01-07T10:00:00 "
    "Duration=04:00:00 Nodes=n[1-2] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) "
    "Flags=MAINT,WEEKLY,SPEC_NODES TRES=cpu=4 Users=(null) Groups=(null) Accounts=ops "
    "Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)"
)


def module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("estategen_slurm_reservations", PATH)
    assert spec and spec.loader
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def expand(hosts: str) -> list[str]:
    return {"n[1-2]": ["n1", "n2"], "n1,n2": ["n1", "n2"], "n1": ["n1"]}.get(hosts, [])


def commands(wanted: str, shown: str, prefix: str = "e.") -> list[list[str]]:
    m = module()
    return list(m.commands(m.parse_wanted(wanted), m.parse_shown(shown), prefix, expand))


def test_a_reservation_slurmctld_shows_as_rendered_needs_nothing() -> None:
    assert commands(WANTED, SHOWN) == []
    assert commands(WANTED, SHOWN.replace("Nodes=n[1-2]", "Nodes=n1,n2")) == []


def test_a_weekly_reservation_slurmctld_moved_on_by_whole_weeks_is_unchanged() -> None:
    moved = SHOWN.replace("2030-01-07T", "2030-01-21T")
    assert commands(WANTED, moved) == []
    odd = SHOWN.replace("2030-01-07T06:00:00", "2030-01-22T06:00:00")
    assert commands(WANTED, odd)[0][:3] == [
        "update",
        "ReservationName=e.maint",
        "StartTime=2030-01-07T06:00:00",
    ]


def test_an_absent_one_is_created_and_a_changed_one_updated() -> None:
    assert commands(WANTED, "No reservations in the system\n") == [WANTED.splitlines()[1].split()]
    longer = SHOWN.replace("EndTime=2030-01-07T10:00:00", "EndTime=2030-01-07T12:00:00")
    assert commands(WANTED, longer) == [["update", "ReservationName=e.maint", "Duration=04:00:00"]]
    assert commands(WANTED, SHOWN.replace("Accounts=ops", "Accounts=ops,vision")) == [
        ["update", "ReservationName=e.maint", "Accounts=ops"]
    ]


def test_changed_flags_delete_and_create_again() -> None:
    found = commands(WANTED, SHOWN.replace("MAINT,WEEKLY", "MAINT"))
    assert found == [["delete", "ReservationName=e.maint"], WANTED.splitlines()[1].split()]


def test_only_reservations_with_the_estate_prefix_are_deleted() -> None:
    others = (
        SHOWN.replace("e.maint", "e.old")
        + "\n"
        + SHOWN.replace("e.maint", "admin-hold")
        + "\n"
        + SHOWN.replace("e.maint", "eu.maint")
    )
    assert commands("", others) == [["delete", "ReservationName=e.old"]]
