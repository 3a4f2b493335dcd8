"""The output folder under faults: a render killed at any moment, or a full disk, leaves either
the old or the new complete tree, never a mix."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import BLUEPRINTS, run_cli

Tree = dict[str, tuple[bytes, int]]
ATTEMPTS = 42  # two in three killed, half of those while the tree is being written


def tree(folder: Path) -> Tree:
    """Every file under ``folder`` with its bytes and permission bits."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode & 0o7777)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def staging_leftovers(parent: Path, target: str) -> list[Path]:
    return [p for p in parent.iterdir() if p.name.startswith(f".{target}.estategen-")]


def start_render(blueprint: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "estategen", "render", str(blueprint), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill_when_staging(process: subprocess.Popen[bytes], parent: Path, name: str) -> bool:
    """SIGKILL a render a random moment after its staging folder appears (the write window).

    True when the kill landed while the staging folder was there.
    """
    deadline = time.monotonic() + 30
    staged = False
    while time.monotonic() < deadline and process.poll() is None:
        if staging_leftovers(parent, name):
            time.sleep(random.uniform(0, 0.03))
            staged = process.poll() is None
            break
        time.sleep(0.0005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return staged


def test_a_killed_render_leaves_the_old_or_the_new_tree(tmp_path: Path) -> None:
    """Kill renders at random moments, alternating two estates into one folder; after every
    kill the folder is one estate's complete output, byte for byte and mode for mode."""
    blueprints = [BLUEPRINTS / "campus.yaml", BLUEPRINTS / "lab.yaml"]
    expected = []
    for index, blueprint in enumerate(blueprints):
        reference = tmp_path / f"reference{index}"
        assert run_cli("render", blueprint, "-o", reference).returncode == 0
        expected.append(tree(reference))
    work = tmp_path / "work"
    work.mkdir()
    out = work / "out"
    durations = []
    for blueprint in blueprints:
        started = time.monotonic()
        assert run_cli("render", blueprint, "-o", out).returncode == 0
        durations.append(time.monotonic() - started)
    duration = 1.3 * max(durations)

    in_write_window = 0
    for attempt in range(ATTEMPTS):
        process = start_render(blueprints[attempt % 2], out)
        phase = attempt % 6
        if phase in (0, 1):  # anywhere in the run, start-up included
            time.sleep(random.uniform(0, duration))
            process.send_signal(signal.SIGKILL)
            process.wait()
        elif phase in (2, 3):
            in_write_window += kill_when_staging(process, work, "out")
        else:  # let it finish, so the next kills interrupt a change of estate
            assert process.wait() == 0
        found = tree(out)
        assert found in expected, f"attempt {attempt}: a mixed tree ({len(found)} files)"
        if phase in (4, 5):
            assert found == expected[attempt % 2]
        # a killed render may leave its staging folder beside the output, nothing else
        beside = set(work.iterdir()) - {out}
        assert beside <= set(staging_leftovers(work, "out")), beside
    assert in_write_window >= ATTEMPTS // 6, f"only {in_write_window} kills while writing"
    assert run_cli("render", blueprints[0], "-o", out).returncode == 0
    assert tree(out) == expected[0]
    assert sorted(p.name for p in work.iterdir()) == ["out"], "abandoned stages are removed"


FULL_DISK = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pathlib import Path

    disk, campus, lab = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    def sh(*command):
        return subprocess.run(command, capture_output=True, text=True)
    def render(blueprint):
        return sh(sys.executable, "-m", "estategen", "render", blueprint, "-o", str(disk / "out"))
    def tree():
        return {str(p.relative_to(disk)): p.read_bytes().hex()
                for p in sorted(disk.rglob("*")) if p.is_file()}
    mounted = sh("mount", "-t", "tmpfs", "-o", "size=64m", "estategen-test", str(disk))
    if mounted.returncode:
        print(json.dumps({"skip": mounted.stderr.strip()}))
        sys.exit(0)
    result = {"first": render(campus).returncode}
    stat = os.statvfs(disk)
    used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize
    # room for the output that is there, not for a second copy beside it
    sh("mount", "-o", f"remount,size={used + 256 * 1024}", str(disk))
    before = tree()
    full = render(lab)
    result.update(code=full.returncode, stderr=full.stderr, same=tree() == before,
                  entries=sorted(os.listdir(disk)))
    sh("mount", "-o", "remount,size=64m", str(disk))
    result["after"] = render(lab).returncode
    print(json.dumps(result))
    """
)


def test_a_full_disk_leaves_the_old_output(tmp_path: Path) -> None:
    """A tmpfs with room for one output only: the next render fails clearly, changes nothing,
    and leaves no staging folder; with room again, it succeeds."""
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs root and unshare to mount a private, size-limited tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    command = ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", FULL_DISK]
    command += [str(disk), str(BLUEPRINTS / "campus.yaml"), str(BLUEPRINTS / "lab.yaml")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if run.returncode and "unshare" in run.stderr:
        pytest.skip(f"cannot create a mount namespace: {run.stderr.strip()}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(f"cannot mount a tmpfs: {result['skip']}")
    assert result["first"] == 0
    assert result["code"] == 2, result["stderr"]
    assert "No space left on device" in result["stderr"]
    assert "the folder is unchanged" in result["stderr"]
    assert "Traceback" not in result["stderr"]
    assert result["same"], "a failed render changed the output"
    assert result["entries"] == ["out"], "a failed render left its staging folder"
    assert result["after"] == 0


def test_a_render_removes_the_staging_folders_of_killed_renders_only(tmp_path: Path) -> None:
    """A dead writer's stage is garbage; a live one's (a concurrent render) is not."""
    out = tmp_path / "out"
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = tmp_path / f".out.estategen-{finished.stdout.strip()}-abc123"
    alive = tmp_path / f".out.estategen-{os.getpid()}-def456"
    other = tmp_path / f".other.estategen-{finished.stdout.strip()}-abc123"
    for folder in (dead, alive, other):
        (folder / "slurm").mkdir(parents=True)
    assert run_cli("render", BLUEPRINTS / "lab.yaml", "-o", out).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", alive.name, other.name])
