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


# --- reading scontrol's records by field ---------------------------------------------------

ADMIN = (
    "ReservationName=admin-hold StartTime=2030-02-01T00:00:00 EndTime=2030-02-01T01:00:00 "
    "Duration=01:00:00 Nodes=n9 NodeCnt=1 CoreCnt=4 Features=(null) PartitionName=(null) "
    "Flags=SPEC_NODES TRES=cpu=4 Users=(null) Groups=(null) Accounts=ops Licenses=(null) "
    "State=INACTIVE BurstBuffer=(null) MaxStartDelay=(null) Comment={comment}"
)


def commands_shown(shown: str, show: dict[str, str], wanted: str = WANTED) -> list[list[str]]:
    """The commands for ``shown``, each reservation of ours read again as ``show`` answers
    ``scontrol -o show reservation NAME``."""
    m = module()
    records = m.parse_shown(shown, "e.", lambda name: show.get(name, ""))
    return list(m.commands(m.parse_wanted(wanted), records, "e.", expand))


def test_a_comment_naming_our_reservation_changes_nothing_of_it() -> None:
    comment = "copy of ReservationName=e.maint Nodes=n9 Flags=MAINT Accounts=admin"
    shown = SHOWN + "\n" + ADMIN.format(comment=comment)
    assert commands(WANTED, shown) == []
    assert commands_shown(shown, {"e.maint": SHOWN}) == []
    admin = module().parse_shown(shown)["admin-hold"]
    assert (admin["Accounts"], admin["Comment"]) == ("ops", comment)


def test_a_record_written_inside_a_comment_is_neither_deleted_nor_compared() -> None:
    forged_old = SHOWN.replace("e.maint", "e.old")
    forged_maint = SHOWN.replace("Accounts=ops", "Accounts=nobody")
    shown = ADMIN.format(comment=f"see below\n{forged_old}\n{forged_maint}") + "\n" + SHOWN
    # slurmctld has no e.old, and e.maint as rendered
    assert commands_shown(shown, {"e.maint": SHOWN}) == []
    # read again, e.maint's own comment may forge records too: its first record counts
    own = SHOWN + " Comment=x\n" + forged_maint
    assert commands_shown(shown, {"e.maint": own}) == []


def test_every_field_of_each_release_is_read_in_place() -> None:
    m = module()
    # 22.05: Watts, no comment; 25.11: AllowedPartitions and QOS, no Watts; core
    # specifications between Flags and TRES; a feature and a comment with spaces and "Key="
    newest = (
        "ReservationName=e.maint StartTime=2030-01-07T06:00:00 EndTime=2030-01-07T10:00:00 "
        "Duration=04:00:00 Nodes=n[1-2] NodeCnt=2 CoreCnt=2 Features=a Flags=b "
        "PartitionName=gpu Flags=MAINT,SPEC_NODES   NodeName=n1 CoreIDs=0   NodeName=n2 "
        "CoreIDs=0 TRES=cpu=2 AllowedPartitions=(null) QOS=(null) Users=(null) Groups=(null) "
        "Accounts=ops Licenses=(null) State=INACTIVE BurstBuffer=(null) MaxStartDelay=(null) "
        "Comment=held for Nodes=n3 State=ACTIVE"
    )
    old, new = m.records(SHOWN + "\n" + newest)
    assert (old["Watts"], "Comment" in old, "QOS" in old) == ("n/a", False, False)
    assert (new["Features"], new["PartitionName"], new["Flags"]) == (
        "a Flags=b",
        "gpu",
        "MAINT,SPEC_NODES",
    )
    assert (new["Nodes"], new["State"], new["QOS"]) == ("n[1-2]", "INACTIVE", "(null)")
    assert new["Comment"] == "held for Nodes=n3 State=ACTIVE"
    assert "Watts" not in new
