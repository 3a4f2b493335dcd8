"""Blueprint reservations on the real slurmctld, applied by the rendered Ansible task.

A one-node estate runs munged, slurmctld and slurmd. The rendered reservations.scontrol is
applied with ansible-playbook running the slurm_controller role's own reservations.yml (and
its module), as a site would; `scontrol show reservation` is then read back, a job of a team
outside a maint reservation's accounts is run against it, and the blueprint is changed and
applied again.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

from estategen.schema.patterns import RESERVATION_FLAGS

from conftest import ROOT
from slurmlab import (
    SlurmLab,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    render_blueprint,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
    pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="needs ansible-playbook"),
]

NODE = "res-node-01"
ESTATE = "reslab"


def blueprint(reservations: str) -> str:
    return (
        textwrap.dedent(
            f"""\
            estate: {ESTATE}
            versions: {{slurm: "{installed_slurm_version()}"}}
            identity:
              users: [{{name: alice, uid: 10001}}]
              teams:
                - {{name: ops, gid: 20001}}
                - {{name: vision, gid: 20002, members: [alice]}}
            node_pools:
              - name: gpu
                scheduler: slurm
                hosts: {NODE}
                cpu: {machine_cpu()}
                memory_gb: 2
            slurm:
              packages: {{source: {installed_slurm_source()}}}
              controllers: [res-ctl]
              partitions:
                - {{name: open, pools: [gpu], default: true, max_time: "1:00:00"}}
            """
        )
        + reservations
    )


# The lab's reservations start now (to the minute) and tomorrow morning, in local time, the
# time zone slurmctld reads StartTime in. "Now" is taken when the lab starts, not when the
# module is collected: slurmctld refuses a StartTime already past.
NOW = datetime.now().replace(second=0, microsecond=0)
TOMORROW = NOW
MAINT = DEMO = FIRST = SECOND = ""


def set_window() -> None:
    global NOW, TOMORROW, MAINT, DEMO, FIRST, SECOND
    NOW = datetime.now().replace(second=0, microsecond=0)
    TOMORROW = (NOW + timedelta(days=1)).replace(hour=8, minute=0)
    MAINT = f"""\
    - name: maint
      start: "{NOW:%Y-%m-%dT%H:%M}"
      duration: "1:00:00"
      pools: [gpu]
      flags: [maint, ignore_jobs]
      teams: [ops]
"""
    DEMO = f"""\
    - name: demo
      start: "{TOMORROW:%Y-%m-%dT%H:%M}"
      end: "{TOMORROW + timedelta(hours=4):%Y-%m-%dT%H:%M}"
      hosts: {NODE}
      partition: open
      teams: [vision]
"""
    FIRST = "  reservations:\n" + MAINT + DEMO
    # the maint window grows to two hours, demo is dropped
    SECOND = "  reservations:\n" + MAINT.replace('"1:00:00"', '"2:00:00"')


def render(work: Path, name: str, reservations: str) -> Path:
    return render_blueprint(work, blueprint(reservations), name)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("reslab")
    set_window()
    with SlurmLab.running(
        render(work, "first", FIRST),
        work / "run",
        [NODE, "res-ctl"],
        controller="res-ctl",
        nodes=[NODE],
    ) as cluster:
        yield cluster


def apply(lab: SlurmLab) -> dict[str, object]:
    """ansible-playbook running the rendered role's reservations.yml; the task's result."""
    role = lab.rendered / "ansible" / "roles" / "slurm_controller"
    playbook = lab.work / "apply.yml"
    playbook.write_text(
        json.dumps(
            [
                {
                    "name": "Apply the reservations",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "vars": {
                        "estate_name": ESTATE,
                        # the module runs under this Python, which has ansible-core
                        "ansible_python_interpreter": sys.executable,
                        "slurm_controller_files_dir": str(lab.rendered / "ansible/files/slurm"),
                    },
                    "tasks": [
                        {"ansible.builtin.import_tasks": str(role / "tasks/reservations.yml")}
                    ],
                }
            ]
        )
    )
    env = {
        "ANSIBLE_LIBRARY": str(role / "library"),
        "ANSIBLE_STDOUT_CALLBACK": "json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
    }
    saved = dict(lab.env)
    lab.env.update(env)
    try:
        out = lab.run("ansible-playbook", "-i", "localhost,", str(playbook), timeout=120)
    finally:
        lab.env.clear()
        lab.env.update(saved)
    result = json.loads(out[out.index("{") :])
    task = result["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert not task.get("failed"), task
    return dict(task)


def reservations(lab: SlurmLab) -> dict[str, dict[str, str]]:
    out = lab.run("scontrol", "-o", "show", "reservation", check=False)
    return dict(reservation_module().parse_shown(out))


def test_reservations_apply_idempotently_and_show_as_the_blueprint_says(lab: SlurmLab) -> None:
    # a reservation an admin made by hand, which estategen must never touch
    lab.run(
        "scontrol", "create", "reservation", "ReservationName=admin-hold",
        f"StartTime={NOW + timedelta(days=3):%Y-%m-%dT%H:%M:%S}", "Duration=60",
        f"Nodes={NODE}", "Accounts=ops",
    )  # fmt: skip
    first = apply(lab)
    assert first["changed"] is True
    shown = reservations(lab)
    assert set(shown) == {f"{ESTATE}.maint", f"{ESTATE}.demo", "admin-hold"}
    maint = shown[f"{ESTATE}.maint"]
    assert maint["StartTime"] == f"{NOW:%Y-%m-%dT%H:%M:%S}"
    assert maint["EndTime"] == f"{NOW + timedelta(hours=1):%Y-%m-%dT%H:%M:%S}"
    assert maint["Nodes"] == NODE
    assert {"MAINT", "IGNORE_JOBS"} <= set(maint["Flags"].split(","))
    assert maint["Accounts"] == "ops"
    demo = shown[f"{ESTATE}.demo"]
    assert demo["StartTime"] == f"{TOMORROW:%Y-%m-%dT%H:%M:%S}"
    assert demo["EndTime"] == f"{TOMORROW + timedelta(hours=4):%Y-%m-%dT%H:%M:%S}"
    assert (demo["Nodes"], demo["PartitionName"], demo["Accounts"]) == (NODE, "open", "vision")

    again = apply(lab)
    assert again["changed"] is False, again["commands"]


def test_a_team_outside_the_maint_reservation_does_not_start_on_its_nodes(lab: SlurmLab) -> None:
    if f"{ESTATE}.maint" not in reservations(lab):
        apply(lab)
    job = lab.run(
        "sbatch", "--parsable", "-A", "vision", "-w", NODE, "-t", "1", "--wrap", "true"
    ).strip()
    try:
        time.sleep(5)  # several scheduling passes (the main scheduler runs at least each minute)
        lab.run("scontrol", "reconfigure")
        time.sleep(3)
        state, reason = lab.run("squeue", "-h", "-j", job, "-o", "%T %r").split(maxsplit=1)
        assert state == "PENDING", (state, reason)
        assert "maint" in reason.lower() or "reserv" in reason.lower(), reason
    finally:
        lab.run("scancel", job, check=False)
    # the reservation's own team runs inside it
    out = lab.run(
        "srun", "-A", "ops", f"--reservation={ESTATE}.maint", "-w", NODE, "-t", "1",
        "sh", "-c", "echo inside",
    )  # fmt: skip
    assert out.strip() == "inside"


def test_a_changed_blueprint_updates_ours_and_deletes_only_what_we_created(lab: SlurmLab) -> None:
    if f"{ESTATE}.demo" not in reservations(lab):
        apply(lab)
    render(lab.work.parent, "second", SECOND)
    result = apply(lab)
    assert result["changed"] is True
    shown = reservations(lab)
    assert set(shown) == {f"{ESTATE}.maint", "admin-hold"}
    assert shown[f"{ESTATE}.maint"]["EndTime"] == f"{NOW + timedelta(hours=2):%Y-%m-%dT%H:%M:%S}"
    assert apply(lab)["changed"] is False


def test_a_hand_made_reservation_whose_name_holds_ours_is_left_alone(lab: SlurmLab) -> None:
    """Values are printed as they are: a name with a space and "ReservationName=" in it is
    one reservation, not ours, and is neither deleted nor mistaken for ours."""
    if f"{ESTATE}.maint" not in reservations(lab):
        apply(lab)
    odd = f"hold ReservationName={ESTATE}.gone Nodes={NODE}"
    lab.run(
        "scontrol", "create", "reservation", f"ReservationName={odd}",
        f"StartTime={NOW + timedelta(days=5):%Y-%m-%dT%H:%M:%S}", "Duration=60",
        f"Nodes={NODE}", "Accounts=ops",
    )  # fmt: skip
    try:
        assert odd in reservations(lab)
        result = apply(lab)
        assert not any(odd in c or f"{ESTATE}.gone" in c for c in result["commands"]), result
        assert odd in reservations(lab)
    finally:
        lab.run("scontrol", "delete", f"ReservationName={odd}", check=False)


def reservation_module() -> ModuleType:
    path = ROOT / "playbooks/roles/slurm_controller/library/estategen_slurm_reservations.py"
    spec = importlib.util.spec_from_file_location("estategen_slurm_reservations", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("flag", RESERVATION_FLAGS)
def test_every_flag_a_blueprint_may_set_reads_back_as_unchanged(lab: SlurmLab, flag: str) -> None:
    """slurmctld shows some flags under other names (STATIC for STATIC_ALLOC): the module must
    still see a reservation it created as unchanged, or every run would recreate it."""
    module = reservation_module()
    name = f"{ESTATE}.flag-{flag.replace('_', '-')}"
    start = NOW + timedelta(days=10)
    line = (
        f"create reservation ReservationName={name} StartTime={start:%Y-%m-%dT%H:%M:%S} "
        f"Duration=01:00:00 Nodes={NODE} Flags={flag.upper()} Accounts=ops"
    )
    wanted = module.parse_wanted(line)
    lab.run("scontrol", *line.split())
    try:
        shown = module.parse_shown(lab.run("scontrol", "-o", "show", "reservation", name))

        def expand(hosts: str) -> list[str]:
            return lab.run("scontrol", "show", "hostnames", hosts).split() if hosts else []

        assert module.differences(wanted[name], shown[name], expand) == [], shown[name]["Flags"]
    finally:
        lab.run("scontrol", "delete", f"ReservationName={name}")
