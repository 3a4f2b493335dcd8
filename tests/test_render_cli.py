"""Rendering through the real CLI: determinism, --check, atomic and careful writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_two_renders_of_campus_are_byte_identical(campus: Path, tmp_path: Path) -> None:
    assert run_cli("render", campus, "-o", tmp_path / "a").returncode == 0
    assert run_cli("render", campus, "-o", tmp_path / "b").returncode == 0
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_render_is_independent_of_hash_seed(campus: Path, tmp_path: Path) -> None:
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        import subprocess
        import sys

        subprocess.run(
            [sys.executable, "-m", "estategen", "render", str(campus), "-o", str(tmp_path / seed)],
            env=env,
            check=True,
            capture_output=True,
        )
    assert tree(tmp_path / "0") == tree(tmp_path / "12345")


def test_manifest_lists_every_file_with_digest_and_mode(campus: Path, tmp_path: Path) -> None:
    run_cli("render", campus, "-o", tmp_path)
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    written = set(tree(tmp_path)) - {"MANIFEST.json"}
    assert set(manifest["files"]) == written
    assert manifest["estate"] == "campus"
    assert len(manifest["blueprint_sha256"]) == 64
    for path, entry in manifest["files"].items():
        assert entry["mode"] == f"{(tmp_path / path).stat().st_mode & 0o7777:04o}"


def test_default_output_folder_is_build_estate(campus: Path, tmp_path: Path) -> None:
    result = run_cli("render", campus, cwd=tmp_path)
    assert result.returncode == 0
    assert (tmp_path / "build" / "campus" / "MANIFEST.json").is_file()


def test_check_is_clean_on_fresh_output(campus: Path, tmp_path: Path) -> None:
    run_cli("render", campus, "-o", tmp_path)
    result = run_cli("render", campus, "-o", tmp_path, "--check")
    assert result.returncode == 0, result.stdout


def test_check_reports_an_edited_file_as_drift(campus: Path, tmp_path: Path) -> None:
    run_cli("render", campus, "-o", tmp_path)
    edited = tmp_path / "estate.json"
    edited.write_text(edited.read_text().replace('"campus"', '"edited"', 1))
    result = run_cli("render", campus, "-o", tmp_path, "--check")
    assert result.returncode == 1
    assert "--- a/estate.json" in result.stdout
    assert '-  "estate": "edited"' in result.stdout or '"edited"' in result.stdout


def test_check_reports_a_deleted_file_and_writes_nothing(campus: Path, tmp_path: Path) -> None:
    run_cli("render", campus, "-o", tmp_path)
    (tmp_path / "estate.json").unlink()
    result = run_cli("render", campus, "-o", tmp_path, "--check")
    assert result.returncode == 1
    assert "+++ b/estate.json" in result.stdout
    assert not (tmp_path / "estate.json").exists()


def test_check_against_a_missing_folder_is_drift(campus: Path, tmp_path: Path) -> None:
    result = run_cli("render", campus, "-o", tmp_path / "nothing", "--check")
    assert result.returncode == 1
    assert not (tmp_path / "nothing").exists()


def test_invalid_blueprint_leaves_earlier_output_byte_identical(
    campus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run_cli("render", campus, "-o", out)
    before = tree(out)
    broken = tmp_path / "broken.yaml"
    broken.write_text(campus.read_text().replace("count: 8}", "count: 99}", 1))
    result = run_cli("render", broken, "-o", out)
    assert result.returncode == 1
    assert "node_pools[0].gpus.count" in result.stderr
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.yaml", "out"]


def test_rerender_replaces_estategen_files_and_keeps_user_files(
    campus: Path, lab: Path, tmp_path: Path
) -> None:
    run_cli("render", campus, "-o", tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    assert run_cli("render", lab, "-o", tmp_path).returncode == 0
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert manifest["estate"] == "lab"
    assert "notes/mine.txt" not in manifest["files"]


def _inodes(folder: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``folder`` (the folder too): its inode and modification time."""
    entries = [folder, *folder.rglob("*")]
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in entries}


def test_rerendering_an_unchanged_estate_writes_nothing(campus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli("render", campus, "-o", out)
    before = _inodes(out)
    result = run_cli("render", campus, "-o", out)
    assert result.returncode == 0
    assert "nothing written" in result.stdout
    assert _inodes(out) == before


def test_rerendering_restores_an_edited_file_and_its_mode(campus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli("render", campus, "-o", out)
    expected = tree(out)
    (out / "slurm" / "slurm.conf").write_text("edited\n")
    assert run_cli("render", campus, "-o", out).returncode == 0
    assert tree(out) == expected
    (out / "ansible" / "site.yml").chmod(0o600)
    assert "wrote" in run_cli("render", campus, "-o", out).stdout
    assert (out / "ansible" / "site.yml").stat().st_mode & 0o777 == 0o644


def test_rerendering_deletes_a_file_estategen_no_longer_renders(lab: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli("render", lab, "-o", out)
    run_cli("render", lab, "-o", out)
    listed = set(json.loads((out / "MANIFEST.json").read_text())["files"])
    (out / "stale.txt").write_text("a file the manifest lists, as if estategen wrote it")
    manifest = json.loads((out / "MANIFEST.json").read_text())
    manifest["files"]["stale.txt"] = {"sha256": "0" * 64, "mode": "0644"}
    (out / "MANIFEST.json").write_text(json.dumps(manifest))
    assert "wrote" in run_cli("render", lab, "-o", out).stdout
    assert not (out / "stale.txt").exists()
    assert set(json.loads((out / "MANIFEST.json").read_text())["files"]) == listed


def test_a_folder_that_is_not_estategen_output_is_refused(campus: Path, tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("user data")
    result = run_cli("render", campus, "-o", tmp_path)
    assert result.returncode == 2
    assert "not estategen output" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]


# folders estategen did not write, each as a user would have it: (what it holds, the refusal)
NOT_OURS = {
    "files, no manifest": (
        {"notes.txt": "mine", "sub/data.csv": "1,2"},
        "{dir}: not estategen output: it holds files estategen did not write and no "
        "MANIFEST.json; choose a new or empty folder with -o, or move those files away",
    ),
    "another tool's manifest": (
        {"MANIFEST.json": '{"name": "site-docs", "version": 3}', "index.html": "<p>"},
        "{dir}/MANIFEST.json: has no `files` mapping; not written by estategen: choose a new "
        "or empty folder with -o, or move those files away",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_OURS))
def test_render_check_and_plan_refuse_a_folder_estategen_did_not_write_alike(
    case: str, campus: Path, tmp_path: Path
) -> None:
    """One folder, one answer: what render refuses, --check and plan refuse with its words."""
    holds, message = NOT_OURS[case]
    folder = tmp_path / "theirs"
    for path, text in holds.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    before = tree(folder)
    refusal = message.format(dir=folder)
    for command in (["render"], ["render", "--check"], ["plan"]):
        result = run_cli(command[0], campus, "-o", folder, *command[1:])
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.splitlines()[-1] == f"estategen: {refusal}", command
        assert result.stdout == "", command  # no diff, no plan of a folder not ours
    assert tree(folder) == before


def test_render_check_and_plan_refuse_a_file_as_output_folder_as_render_does(
    campus: Path, tmp_path: Path
) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    for command in (["render"], ["render", "--check"], ["plan"]):
        result = run_cli(command[0], campus, "-o", target, *command[1:])
        assert result.returncode == 2, command
        assert result.stderr.splitlines()[-1] == (
            f"estategen: {target}: exists and is not a folder; choose another output folder"
        )


def test_an_empty_folder_is_a_fine_target(campus: Path, tmp_path: Path) -> None:
    assert run_cli("render", campus, "-o", tmp_path).returncode == 0


def test_a_file_as_output_folder_is_refused(campus: Path, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    result = run_cli("render", campus, "-o", target)
    assert result.returncode == 2
    assert target.read_text() == "x"


def test_no_staging_folders_are_left_behind(campus: Path, tmp_path: Path) -> None:
    run_cli("render", campus, "-o", tmp_path / "out")
    run_cli("render", campus, "-o", tmp_path / "out")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# --- Pulumi stack settings belong to Pulumi and the user ---------------------------------------

STACK = "pulumi/lab-k8s/Pulumi.lab.yaml"
# what `pulumi stack init` with the passphrase provider and a user's `pulumi config set` leave
PULUMI_WROTE = (
    "secretsprovider: passphrase\n"
    "encryptionsalt: v1:0Y8pN2yJgQ4=:v1:Jq2kXUq1Uq2nY5tH:9xV3ag==\n"
    "config:\n"
    "  lab-lab-k8s:owner: platform-team\n"
)


def test_render_leaves_the_stack_settings_pulumi_wrote(lab: Path, tmp_path: Path) -> None:
    assert run_cli("render", lab, "-o", tmp_path).returncode == 0
    (tmp_path / STACK).write_text(PULUMI_WROTE)  # pulumi stack init; pulumi config set
    assert run_cli("render", lab, "-o", tmp_path).returncode == 0
    assert (tmp_path / STACK).read_text() == PULUMI_WROTE
    assert STACK not in json.loads((tmp_path / "MANIFEST.json").read_text())["files"]
    check = run_cli("render", lab, "-o", tmp_path, "--check")
    assert check.returncode == 0, check.stdout
    plan = run_cli("plan", lab, "-o", tmp_path)
    assert plan.returncode == 0 and "no changes" in plan.stdout


def earlier_output_with_stack_settings(lab: Path, target: Path) -> None:
    """An output folder as earlier versions wrote it: the stack settings file in the manifest."""
    from estategen import pipeline
    from estategen.output import text
    from estategen.render import render
    from estategen.write import with_manifest, write_tree

    estate = pipeline.validate_file(lab).estate
    files = {**render(estate), STACK: text("config:\n  lab-lab-k8s:cluster: lab-k8s\n")}
    write_tree(with_manifest(files, lab.read_bytes(), estate.name), target)


def test_an_earlier_stack_settings_file_pulumi_touched_is_handed_over(
    lab: Path, tmp_path: Path
) -> None:
    earlier_output_with_stack_settings(lab, tmp_path)
    (tmp_path / STACK).write_text(PULUMI_WROTE)
    plan = run_cli("plan", lab, "-o", tmp_path)
    assert "pulumi-stack-settings" in plan.stdout and "is kept as yours" in plan.stdout
    assert run_cli("render", lab, "-o", tmp_path).returncode == 0
    assert (tmp_path / STACK).read_text() == PULUMI_WROTE  # encryptionsalt survives
    assert STACK not in json.loads((tmp_path / "MANIFEST.json").read_text())["files"]
    assert run_cli("render", lab, "-o", tmp_path, "--check").returncode == 0
    assert run_cli("plan", lab, "-o", tmp_path).returncode == 0


def test_an_earlier_untouched_stack_settings_file_is_removed(lab: Path, tmp_path: Path) -> None:
    earlier_output_with_stack_settings(lab, tmp_path)
    assert run_cli("render", lab, "-o", tmp_path).returncode == 0
    assert not (tmp_path / STACK).exists()  # its keys are in Pulumi.yaml now
    assert run_cli("render", lab, "-o", tmp_path, "--check").returncode == 0


def test_templates_compiled_once_render_the_same_from_the_user_cache_folder(
    campus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run_cli("render", campus, "-o", tmp_path / "a").returncode == 0
    cached = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp_path / "cache").rglob("*")}
    assert any(p.suffix == ".cache" for p in cached)
    assert run_cli("render", campus, "-o", tmp_path / "b").returncode == 0
    # read back, not written again
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in cached} == cached
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_a_cache_folder_that_cannot_be_made_leaves_templates_compiled_in_each_run(
    campus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    assert run_cli("render", campus, "-o", tmp_path / "a").returncode == 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run_cli("render", campus, "-o", tmp_path / "b").returncode == 0
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
