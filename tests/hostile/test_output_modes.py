"""The files and folders render writes have the modes estategen chose, whatever the umask, and
a file under more than one name is not estategen's.

`ansible/files/slurm/power` holds the ResumeProgram slurmctld runs as root: a folder of the
output writable by others would let them replace it. Every folder render makes is 0755 and
every file has the mode MANIFEST.json lists, under umask 000 as under 077. A rendered file
replaced by a hard link to a file outside the folder is refused by `render --check` and `plan`
as a symbolic link is (exit 2), never shown in a diff.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path

import pytest
from capped import SECONDS, Run, run_capped

from conftest import BLUEPRINTS

BLUEPRINT = BLUEPRINTS / "frontier.yaml"  # cloud nodes: the power programs' folder
SECRET = "TOP-SECRET-OUTSIDE-DIR"


def render_under(umask: str, *args: str | Path) -> Run:
    command = shlex.join([sys.executable, "-m", "estategen", "render", *map(str, args)])
    return run_capped(f"umask {umask} && exec {command}", shell=True)


def modes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(folder -> mode, file -> mode) under ``root``, root itself included as ''."""
    folders = {"": stat.S_IMODE(root.stat().st_mode)}
    files = {}
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_dir():
            folders[relative] = stat.S_IMODE(path.stat().st_mode)
        else:
            files[relative] = stat.S_IMODE(path.stat().st_mode)
    return folders, files


@pytest.mark.parametrize("umask", ["000", "077"])
def test_every_folder_is_0755_and_every_file_as_the_manifest_says_whatever_the_umask(
    tmp_path: Path, umask: str
) -> None:
    out = tmp_path / "build" / "out"  # render makes build/ too
    run = render_under(umask, BLUEPRINT, "-o", out)
    assert run.returncode == 0, run.stderr[-2000:]
    folders, files = modes(out)
    assert "ansible/files/slurm/power" in folders
    assert {path: oct(mode) for path, mode in folders.items() if mode != 0o755} == {}
    assert oct(stat.S_IMODE((tmp_path / "build").stat().st_mode)) == oct(0o755)
    listed = json.loads((out / "MANIFEST.json").read_text())["files"]
    assert {path: f"{mode:04o}" for path, mode in files.items() if path != "MANIFEST.json"} == {
        path: entry["mode"] for path, entry in listed.items()
    }
    assert files["MANIFEST.json"] == 0o644


def test_a_users_folder_keeps_its_mode_and_ours_are_0755_on_a_render_under_umask_000(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert render_under("022", BLUEPRINT, "-o", out).returncode == 0
    private = out / "notes" / "private"
    private.mkdir(parents=True)
    (private / "todo.txt").write_text("mine\n")
    private.chmod(0o700)
    (out / "notes").chmod(0o750)
    (out / "ansible" / "notes.txt").write_text("mine too\n")
    # another blueprint, so that the render writes the folder anew
    run = render_under("000", BLUEPRINT.with_name("campus.yaml"), "-o", out)
    assert run.returncode == 0, run.stderr[-2000:]
    folders, _ = modes(out)
    assert (folders["notes"], folders["notes/private"]) == (0o750, 0o700)
    ours = {path: mode for path, mode in folders.items() if not path.startswith("notes")}
    assert {path: oct(mode) for path, mode in ours.items() if mode != 0o755} == {}
    assert (private / "todo.txt").read_text() == "mine\n"


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """frontier rendered into tmp/out, its slurm.conf replaced by a hard link to a secret
    beside the folder."""
    out = tmp_path / "out"
    assert render_under("022", BLUEPRINT, "-o", out).returncode == 0
    secret = tmp_path / "secret"
    secret.write_text(f"{SECRET}\n")
    (out / "slurm" / "slurm.conf").unlink()
    os.link(secret, out / "slurm" / "slurm.conf")
    return out


@pytest.mark.parametrize("command", [["render", "--check"], ["plan"]], ids=["check", "plan"])
def test_a_rendered_file_replaced_by_a_hard_link_is_refused_unread(
    linked: Path, command: list[str]
) -> None:
    verb, *flags = command
    run = run_capped(verb, BLUEPRINT, "-o", linked, *flags)
    assert run.returncode == 2, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    last = run.stderr.splitlines()[-1]
    assert last.startswith(f"estategen: {linked}/slurm/slurm.conf: a hard link "), last
    assert SECRET not in run.stdout + run.stderr
    assert "internal error" not in run.stderr and run.seconds < SECONDS


def test_render_replaces_a_hard_link_of_ours_and_carries_a_users_over_unread(
    linked: Path, tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.write_text("a user's file\n")
    os.link(mine, linked / "linked-note.txt")
    run = render_under("022", BLUEPRINT, "-o", linked)
    assert run.returncode == 0, run.stderr[-2000:]
    conf = linked / "slurm" / "slurm.conf"
    assert conf.stat().st_nlink == 1 and SECRET not in conf.read_text()
    assert (tmp_path / "secret").read_text() == f"{SECRET}\n"
    assert (linked / "linked-note.txt").stat().st_ino == mine.stat().st_ino


@pytest.mark.parametrize("umask", ["000", "077"])
def test_the_report_folder_and_its_pages_have_render_modes_whatever_the_umask(
    tmp_path: Path, umask: str
) -> None:
    out = tmp_path / "reports" / "campus"  # report makes reports/ too
    command = shlex.join(
        [
            sys.executable,
            "-m",
            "estategen",
            "report",
            str(BLUEPRINTS / "campus.yaml"),
            "-o",
            str(out),
        ]
    )
    run = run_capped(f"umask {umask} && exec {command}", shell=True)
    assert run.returncode == 0, run.stderr[-2000:]
    folders, files = modes(tmp_path / "reports")
    assert {path: oct(mode) for path, mode in folders.items()} == {"": "0o755", "campus": "0o755"}
    assert set(files.values()) == {0o644}
