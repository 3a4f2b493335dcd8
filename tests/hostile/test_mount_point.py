"""An output folder that is a mount point (a container volume) cannot be renamed, so it cannot
be swapped with a staged tree: the output is staged inside it and its entries are swapped in
one by one, MANIFEST.json last. Each test mounts in a private mount namespace (unshare), so
nothing leaks out of the test."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import BLUEPRINTS, run_cli

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mounting needs root and unshare(1)",
)

CLI = f"{shlex.quote(sys.executable)} -m estategen"


def tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode & 0o7777)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def in_private_mounts(script: str) -> subprocess.CompletedProcess[str]:
    """Run a shell script in its own mount namespace; its mounts vanish when it ends."""
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-euc", script],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def reference(tmp_path: Path) -> dict[str, tuple[bytes, int]]:
    """Campus rendered into an ordinary folder: what a mount point must end up holding."""
    assert run_cli("render", BLUEPRINTS / "campus.yaml", "-o", tmp_path / "ref").returncode == 0
    return tree(tmp_path / "ref")


@pytest.mark.parametrize("mount", ["tmpfs", "bind"])
def test_a_mount_point_renders_twice_and_keeps_user_files(
    mount: str, tmp_path: Path, reference: dict[str, tuple[bytes, int]]
) -> None:
    """A tmpfs (another file system) and a folder bind-mounted onto itself (the same one)."""
    out, copy = tmp_path / "volume", tmp_path / "copy"
    out.mkdir()
    copy.mkdir()
    mount_it = f"mount -t tmpfs none {out}" if mount == "tmpfs" else f"mount --bind {out} {out}"
    lab, campus = BLUEPRINTS / "lab.yaml", BLUEPRINTS / "campus.yaml"
    result = in_private_mounts(
        f"""
        {mount_it}
        mountpoint -q {out}
        {CLI} render {lab} -o {out}
        mkdir {out}/ansible/host_vars
        echo mine > {out}/notes.txt
        {CLI} render {campus} -o {out}
        {CLI} render {campus} -o {out}
        {CLI} render {campus} -o {out} --check
        cp -a {out}/. {copy}/
        """
    )
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    got = tree(copy)
    assert got.pop("notes.txt") == (b"mine\n", 0o644)
    assert got == reference  # lab's files are gone, campus's are all there
    assert sorted(p.name for p in copy.iterdir() if p.name.startswith(".")) == []
    assert (copy / "ansible" / "host_vars").is_dir()


def test_an_interrupted_swap_into_a_mount_point_is_finished_by_the_next_render(
    tmp_path: Path, reference: dict[str, tuple[bytes, int]]
) -> None:
    """A render that dies while swapping entries leaves no MANIFEST.json but its records;
    the next render counts every path the old or the new manifest lists as estategen's."""
    out = tmp_path / "volume"
    assert run_cli("render", BLUEPRINTS / "lab.yaml", "-o", out).returncode == 0
    (out / "mine.txt").write_text("keep")
    crash = textwrap.dedent(
        f"""
        import errno, sys
        from pathlib import Path
        from estategen import write
        from estategen.pipeline import validate_file
        from estategen.render import render

        exchanged = []
        real = write._exchange

        def exchange_twice(a, b):
            if len(exchanged) == 2:
                raise OSError(errno.EIO, "injected fault", str(b))
            exchanged.append(b)
            return real(a, b)

        write._is_mount_point = lambda path: True
        write._exchange = exchange_twice
        result = validate_file({str(BLUEPRINTS / "campus.yaml")!r})
        files = write.with_manifest(render(result.estate), result.document.raw, "campus")
        write.write_tree(files, Path({str(out)!r}))
        """
    )
    crashed = subprocess.run(
        [sys.executable, "-c", crash], capture_output=True, text=True, timeout=120
    )
    assert "swapping in the new output failed: injected fault" in crashed.stderr
    assert not (out / "MANIFEST.json").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".estategen-")]

    result = in_private_mounts(
        f"mount --bind {out} {out}; {CLI} render {BLUEPRINTS / 'campus.yaml'} -o {out}"
    )
    assert result.returncode == 0, result.stderr
    got = tree(out)
    assert got.pop("mine.txt") == (b"keep", 0o644)
    assert got == reference
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert json.loads((out / "MANIFEST.json").read_text())["estate"] == "campus"
