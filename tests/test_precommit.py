"""The pre-commit render check: a commit that touches a blueprint or its committed output is
checked alike, in a repository laid out as the hook's comments describe."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BLUEPRINTS, ROOT, run_cli

HOOKS = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
RENDER_CHECK = HOOKS["estategen-render-check"]


def hook(
    repo: Path, *args: str, files: str = RENDER_CHECK["files"]
) -> subprocess.CompletedProcess[str]:
    """The render-check hook's entry as pre-commit runs it: from the repository's root, with
    the staged paths its `files:` pattern matches, relative to that root."""
    entry = RENDER_CHECK["entry"].split()
    assert entry[0] == "python"
    staged = [a for a in args if not a.startswith("-") and "/" in a]
    assert all(re.search(files, f) for f in staged), staged
    return subprocess.run(
        [sys.executable, *entry[1:], *args], cwd=repo, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository of one blueprint whose file name is not its estate's name (site-a.yaml,
    estate lab), rendered where `estategen render` puts it: build/lab."""
    (tmp_path / "blueprints").mkdir()
    shutil.copy(BLUEPRINTS / "lab.yaml", tmp_path / "blueprints" / "site-a.yaml")
    assert run_cli("render", "blueprints/site-a.yaml", cwd=tmp_path).returncode == 0
    assert (tmp_path / "build" / "lab" / "MANIFEST.json").is_file()
    return tmp_path


def test_an_edit_to_committed_output_alone_fails_the_render_check(repo: Path) -> None:
    conf = repo / "build" / "lab" / "slurm" / "slurm.conf"
    assert hook(repo, "build/lab/slurm/slurm.conf").returncode == 0
    conf.write_text(conf.read_text() + "MaxJobCount=1\n")
    edited = hook(repo, "build/lab/slurm/slurm.conf")
    assert edited.returncode == 1
    assert "-MaxJobCount=1" in edited.stdout  # the diff back to what the blueprint renders
    assert "build/lab: 1 file(s) would change" in edited.stderr


def test_an_edit_to_the_blueprint_fails_the_render_check_as_before(repo: Path) -> None:
    blueprint = repo / "blueprints" / "site-a.yaml"
    assert hook(repo, "blueprints/site-a.yaml").returncode == 0
    blueprint.write_text(blueprint.read_text().replace("description:", "description: new", 1))
    changed = hook(repo, "blueprints/site-a.yaml")
    assert changed.returncode == 1
    assert "build/lab: 2 file(s) would change" in changed.stderr  # estate.json, MANIFEST.json


def test_with_an_output_root_a_rendered_file_maps_to_the_blueprint_of_its_folder_name(
    repo: Path,
) -> None:
    assert (
        run_cli("render", "blueprints/site-a.yaml", "-o", "rendered/site-a", cwd=repo).returncode
        == 0
    )
    conf = repo / "rendered" / "site-a" / "slurm" / "slurm.conf"
    conf.write_text(conf.read_text() + "MaxJobCount=1\n")
    # the example in the hook's comments: args and files for output kept under rendered/
    comment = (ROOT / ".pre-commit-hooks.yaml").read_text()
    files = re.search(r"#\s+files: (\S+)\n", comment)
    assert files and "args: [--output-root, rendered]" in comment
    assert re.search(files[1], "blueprints/site-a.yaml")
    edited = hook(
        repo, "--output-root", "rendered", "rendered/site-a/slurm/slurm.conf", files=files[1]
    )
    assert edited.returncode == 1
    assert "rendered/site-a: 1 file(s) would change" in edited.stderr


def test_output_no_blueprint_renders_to_is_reported_and_other_files_are_left_alone(
    repo: Path,
) -> None:
    shutil.move(repo / "build" / "lab", repo / "build" / "gone")
    (repo / "build" / "notes.md").write_text("not estategen output")
    (repo / "build" / "scratch").mkdir()
    (repo / "build" / "scratch" / "a.txt").write_text("nor this")
    orphan = hook(repo, "build/gone/slurm/slurm.conf", "build/gone/estate.json")
    assert orphan.returncode == 1
    assert orphan.stderr.splitlines() == [
        "build/gone: estategen output that no blueprint in blueprints/ renders to (expected a "
        "blueprint with estate: gone); render it from its blueprint or remove it"
    ]
    assert hook(repo, "build/notes.md", "build/scratch/a.txt").returncode == 0


def test_the_hook_runs_on_rendered_files_but_not_on_others() -> None:
    files = RENDER_CHECK["files"]
    assert "types" not in RENDER_CHECK  # rendered files are not all YAML (slurm.conf)
    for path in ("blueprints/lab.yaml", "sites/blueprints/a.yml", "build/lab/slurm/slurm.conf"):
        assert re.search(files, path), path
    for path in ("docs/index.md", "src/build/x.py", "blueprints/notes.txt"):
        assert not re.search(files, path), path
