"""A tampered output folder: everything estategen reads back from DIR is input.

``render --check`` and ``plan`` run in CI on committed output that a pull request may have
changed, and ``render`` reads MANIFEST.json and carries over the files a user added. Each case
below builds an attack in a temporary folder and runs the real CLI under a 1 GiB address-space
cap with a timeout: it must end with exit 2 and one line that names the path, within seconds,
and never show a byte from outside the folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from capped import SECONDS, Run, assert_one_line_exit_2, run_capped

from conftest import BLUEPRINTS

SECRET = "TOP-SECRET-OUTSIDE-DIR"


def assert_refused(run: Run, message: str) -> None:
    """Exit 2 with one line naming the problem, quickly, and nothing from outside DIR."""
    assert_one_line_exit_2(run, message)
    assert SECRET not in run.stdout + run.stderr


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    """Campus rendered into tmp/out, a secret file beside it (outside DIR)."""
    out = tmp_path / "out"
    assert run_capped("render", BLUEPRINTS / "campus.yaml", "-o", out).returncode == 0
    (tmp_path / "secret").write_text(f"{SECRET}\n")
    return out


def list_in_manifest(out: Path, path: str, content: bytes = b"") -> None:
    """Add ``path`` to MANIFEST.json as if estategen had written it (a consistent tamper)."""
    import hashlib

    manifest = json.loads((out / "MANIFEST.json").read_text())
    manifest["files"][path] = {"sha256": hashlib.sha256(content).hexdigest(), "mode": "0644"}
    (out / "MANIFEST.json").write_text(json.dumps(manifest))


def rewrite(out: Path, path: str, content: bytes) -> None:
    """Replace a listed file's content and its MANIFEST.json digest."""
    (out / path).write_bytes(content)
    list_in_manifest(out, path, content)


def check(out: Path) -> Run:
    return run_capped("render", BLUEPRINTS / "campus.yaml", "-o", out, "--check")


def plan(out: Path) -> Run:
    return run_capped("plan", BLUEPRINTS / "campus.yaml", "-o", out)


def render(out: Path) -> Run:
    return run_capped("render", BLUEPRINTS / "campus.yaml", "-o", out)


Attack = Callable[[Path], None]


def link_a_file_out(out: Path) -> None:
    (out / "slurm" / "slurm.conf").unlink()
    (out / "slurm" / "slurm.conf").symlink_to(out.parent / "secret")


def link_a_folder_out(out: Path) -> None:
    outside = out.parent / "elsewhere"
    outside.mkdir()
    shutil.copy(out.parent / "secret", outside / "slurm.conf")
    shutil.rmtree(out / "slurm")
    (out / "slurm").symlink_to(outside)


def link_the_manifest_out(out: Path) -> None:
    shutil.move(out / "MANIFEST.json", out.parent / "MANIFEST.json")
    (out / "MANIFEST.json").symlink_to(out.parent / "MANIFEST.json")


def list_an_absolute_path(out: Path) -> None:
    list_in_manifest(out, str(out.parent / "secret"))


def list_a_parent_path(out: Path) -> None:
    list_in_manifest(out, "../secret")


def list_a_dotted_path(out: Path) -> None:
    list_in_manifest(out, "slurm/./../../secret")


FOLDER_ATTACKS: dict[str, tuple[Attack, str]] = {
    "file-link-out": (link_a_file_out, "slurm/slurm.conf: a symbolic link"),
    "folder-link-out": (link_a_folder_out, "out/slurm: a symbolic link"),
    "manifest-link-out": (link_the_manifest_out, "MANIFEST.json: a symbolic link"),
    "manifest-absolute-path": (list_an_absolute_path, "not a path estategen writes"),
    "manifest-parent-path": (list_a_parent_path, "lists '../secret', not a path estategen"),
    "manifest-dotted-path": (list_a_dotted_path, "not a path estategen writes"),
}


@pytest.mark.parametrize("command", [check, plan], ids=["check", "plan"])
@pytest.mark.parametrize("name", FOLDER_ATTACKS)
def test_check_and_plan_never_read_outside_the_output_folder(
    name: str, command: Callable[[Path], Run], rendered: Path
) -> None:
    """`ln -s /etc/secret out/slurm/slurm.conf` or a MANIFEST entry `/abs/file` must not
    print the file into a CI log: refused, one line, exit 2."""
    attack, message = FOLDER_ATTACKS[name]
    attack(rendered)
    assert_refused(command(rendered), message)


def test_render_replaces_a_listed_file_that_became_a_link_without_reading_it(
    rendered: Path,
) -> None:
    """Render writes a new tree and reads nothing it lists: the link is simply replaced."""
    link_a_file_out(rendered)
    result = render(rendered)
    assert result.returncode == 0, result.stderr
    assert not (rendered / "slurm" / "slurm.conf").is_symlink()
    assert (rendered.parent / "secret").read_text() == f"{SECRET}\n"


# --- non-regular files and unbounded reads ------------------------------------------------


def manifest_is_a_fifo(out: Path) -> None:
    (out / "MANIFEST.json").unlink()
    os.mkfifo(out / "MANIFEST.json")


def manifest_is_dev_zero(out: Path) -> None:
    (out / "MANIFEST.json").unlink()
    os.mknod(out / "MANIFEST.json", stat.S_IFCHR | 0o644, os.makedev(1, 5))


def manifest_links_to_dev_zero(out: Path) -> None:
    (out / "MANIFEST.json").unlink()
    (out / "MANIFEST.json").symlink_to("/dev/zero")


def listed_file_is_a_fifo(out: Path) -> None:
    (out / "slurm" / "gres.conf").unlink()
    os.mkfifo(out / "slurm" / "gres.conf")


def listed_file_is_huge(out: Path) -> None:
    with open(out / "estate.json", "r+b") as sparse:
        sparse.truncate(8 * 1024**3)  # 8 GiB of zeros, sparse on disk


def manifest_is_huge(out: Path) -> None:
    with open(out / "MANIFEST.json", "r+b") as sparse:
        sparse.truncate(8 * 1024**3)


READ_ATTACKS: dict[str, tuple[Attack, str]] = {
    "manifest-fifo": (manifest_is_a_fifo, "MANIFEST.json: a named pipe (FIFO)"),
    "manifest-dev-zero": (manifest_is_dev_zero, "MANIFEST.json: a device"),
    "manifest-link-dev-zero": (manifest_links_to_dev_zero, "MANIFEST.json: a symbolic link"),
    "listed-fifo": (listed_file_is_a_fifo, "gres.conf: a named pipe (FIFO)"),
    "listed-8-gib": (listed_file_is_huge, "estate.json: larger than 16777216 bytes"),
    "manifest-8-gib": (manifest_is_huge, "MANIFEST.json: larger than 16777216 bytes"),
}


@pytest.mark.parametrize("command", [check, plan, render], ids=["check", "plan", "render"])
@pytest.mark.parametrize("name", READ_ATTACKS)
def test_what_is_read_back_is_a_regular_file_read_with_a_bound(
    name: str, command: Callable[[Path], Run], rendered: Path
) -> None:
    """A FIFO used to hang these commands and /dev/zero to eat all memory."""
    attack, message = READ_ATTACKS[name]
    attack(rendered)
    if command is render and name.startswith("listed"):
        result = render(rendered)  # render reads only MANIFEST.json, and replaces the rest
        assert result.returncode == 0, result.stderr
        assert stat.S_ISREG((rendered / "slurm" / "gres.conf").stat().st_mode)
        return
    assert_refused(command(rendered), message)


# --- content beyond the limits a blueprint obeys ------------------------------------------


def deep_json(depth: int) -> bytes:
    return b'{"files": ' + b"[" * depth + b"]" * depth + b"}"


def nest_the_manifest(out: Path) -> None:
    (out / "MANIFEST.json").write_bytes(deep_json(200_000))


def nest_estate_json(out: Path) -> None:
    rewrite(out, "estate.json", deep_json(200_000))


def nest_cluster_json(out: Path) -> None:
    listed = json.loads((out / "MANIFEST.json").read_text())["files"]
    cluster = next(p for p in sorted(listed) if p.endswith("/cluster.json"))
    rewrite(out, cluster, deep_json(100))


def alias_bomb_in_group_vars(out: Path) -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    rewrite(out, "ansible/group_vars/all/estate.yml", "\n".join(lines).encode() + b"\n")


def million_hosts_per_line(path: str) -> Attack:
    def attack(out: Path) -> None:
        text = (out / path).read_text()
        rewrite(out, path, (text + "NodeName=n[000000-999999] Gres=gpu:1\n" * 1000).encode())

    return attack


def many_large_lines(path: str) -> Attack:
    def attack(out: Path) -> None:
        text = (out / path).read_text()
        rewrite(out, path, (text + "NodeName=n[00000-59999] Gres=gpu:1\n" * 100).encode())

    return attack


def repeated_parameter_lines(out: Path) -> None:
    rewrite(out, "slurm/slurm.conf", b"SchedulerParameters=x\n" * 150_000)


def flow_list_in_group_vars(out: Path) -> None:
    values = ", ".join(["0"] * 300_000)
    rewrite(out, "ansible/group_vars/all/estate.yml", f"x: [{values}]\n".encode())


def deep_flow_yaml(out: Path) -> None:
    rewrite(out, "ansible/inventory.yml", b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n")


def more_hosts_than_an_estate(out: Path) -> None:
    """Two 60,000-host pools: each within an expression's limit, together above an estate's."""
    text = (out / "slurm" / "slurm.conf").read_text()
    extra = "".join(f"NodeName=p{i}-[00000-59999] CPUs=1\n" for i in range(2))
    rewrite(out, "slurm/slurm.conf", (text + extra).encode())


def long_manifest_key(out: Path) -> None:
    list_in_manifest(out, "x" * 5000)


def bad_manifest_entry(out: Path) -> None:
    manifest = json.loads((out / "MANIFEST.json").read_text())
    manifest["files"]["estate.json"] = {"sha256": "not hex", "mode": "0644"}
    (out / "MANIFEST.json").write_text(json.dumps(manifest))


def manifest_of_a_list(out: Path) -> None:
    (out / "MANIFEST.json").write_text('{"files": ["estate.json"]}')


CONTENT_ATTACKS: dict[str, tuple[Attack, str, tuple[str, ...]]] = {
    "manifest-deep": (
        nest_the_manifest,
        "nested deeper than the limit of 64",
        ("check", "plan", "render"),
    ),
    "estate-json-deep": (nest_estate_json, "nested deeper than the limit of 64", ("plan",)),
    "cluster-json-deep": (nest_cluster_json, "nested deeper than the limit of 64", ("plan",)),
    "group-vars-alias-bomb": (alias_bomb_in_group_vars, "an alias bomb", ("plan",)),
    "slurm-conf-million-per-line": (
        million_hosts_per_line("slurm/slurm.conf"),
        "above the limit of 100000 for one",
        ("plan",),
    ),
    "gres-conf-million-per-line": (
        million_hosts_per_line("slurm/gres.conf"),
        "above the limit of 100000 for one",
        ("plan",),
    ),
    "slurm-conf-each-host-once": (
        more_hosts_than_an_estate,
        "host names in this file, above the limit of 100000 for one expression "
        "and 100000 for this file",
        ("plan",),
    ),
    "gres-conf-many-lines": (
        many_large_lines("slurm/gres.conf"),
        "and 400000 for this file",
        ("plan",),
    ),
    "slurm-conf-150k-lines": (
        repeated_parameter_lines,
        "150000 lines, above the limit of 100000 for a file plan reads",
        ("plan",),
    ),
    "group-vars-300k-values": (
        flow_list_in_group_vars,
        "more than 250000 YAML values",
        ("plan",),
    ),
    "inventory-deep-flow": (deep_flow_yaml, "nested deeper than the limit of 64", ("plan",)),
    "manifest-long-key": (
        long_manifest_key,
        "(5000 characters), not a path estategen",
        ("check", "plan", "render"),
    ),
    "manifest-bad-entry": (bad_manifest_entry, "is not {sha256", ("check", "plan", "render")),
    "manifest-not-a-mapping": (
        manifest_of_a_list,
        "no `files` mapping",
        ("check", "plan", "render"),
    ),
}
COMMANDS = {"check": check, "plan": plan, "render": render}


@pytest.mark.parametrize(
    ("name", "command"),
    [(name, command) for name, case in CONTENT_ATTACKS.items() for command in case[2]],
)
def test_tampered_content_is_refused_within_the_blueprint_limits(
    name: str, command: str, rendered: Path
) -> None:
    """RecursionError, MemoryError and a minute of hostlist expansion used to be exit 3."""
    attack, message, _ = CONTENT_ATTACKS[name]
    attack(rendered)
    assert_refused(COMMANDS[command](rendered), message)


def test_check_summarises_a_file_too_long_to_diff(rendered: Path) -> None:
    """difflib over millions of lines takes minutes and gigabytes: one line says they differ."""
    rewrite(rendered, "estate.json", b"".join(b"%d\n" % i for i in range(250_000)))
    result = check(rendered)
    assert result.returncode == 1, result.stderr
    assert result.seconds < SECONDS
    assert (
        "Files a/estate.json and b/estate.json differ (250000 and" in result.stdout
        and "above the 200000 lines --check shows as a diff" in result.stdout
    )


# --- what a user added is carried over ------------------------------------------------------


def test_a_rerender_carries_over_fifos_and_empty_folders_without_reading_them(
    rendered: Path,
) -> None:
    os.mkfifo(rendered / "ansible" / "pipe", 0o600)
    (rendered / "ansible" / "host_vars").mkdir()
    (rendered / "ansible" / "host_vars").chmod(0o750)
    (rendered / "notes" / "empty").mkdir(parents=True)
    (rendered / "link").symlink_to(rendered.parent / "secret")
    result = render(rendered)
    assert result.returncode == 0, result.stderr
    assert result.seconds < SECONDS
    pipe = (rendered / "ansible" / "pipe").lstat()
    assert stat.S_ISFIFO(pipe.st_mode) and stat.S_IMODE(pipe.st_mode) == 0o600
    assert stat.S_IMODE((rendered / "ansible" / "host_vars").stat().st_mode) == 0o750
    assert (rendered / "notes" / "empty").is_dir()
    assert os.readlink(rendered / "link") == str(rendered.parent / "secret")
    assert check(rendered).returncode == 0


def test_a_socket_in_the_output_folder_is_refused_not_dropped(rendered: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(rendered / "agent.sock"))
        result = render(rendered)
    assert_refused(result, "agent.sock: a socket, which a render cannot carry over")
    assert (rendered / "agent.sock").exists()


def test_a_user_file_in_the_way_of_a_rendered_folder_is_refused(rendered: Path) -> None:
    shutil.rmtree(rendered / "slurm")
    (rendered / "slurm").write_text("mine")
    assert_refused(render(rendered), "slurm not written by estategen but would now be rendered")
    assert (rendered / "slurm").read_text() == "mine"


def test_report_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """`report -o DIR` used to stage into DIR/.report.md.tmp, following a link planted there."""
    out, outside = tmp_path / "r", tmp_path / "outside.txt"
    out.mkdir()
    outside.write_text(SECRET)
    for name in ("report.md", "report.html"):
        (out / f".{name}.tmp").symlink_to(outside)
    result = run_capped("report", BLUEPRINTS / "campus.yaml", "-o", out)
    assert result.returncode == 0, result.stderr
    assert outside.read_text() == SECRET
    assert not (out / "report.md").is_symlink()
    assert "# " in (out / "report.md").read_text()


def test_names_like_a_staging_folder_are_user_files_when_they_are_not_folders(
    rendered: Path,
) -> None:
    """Only a real folder named `.estategen-PID-*` is a killed render's staging folder."""
    (rendered / ".estategen-999999-notes").write_text("mine")
    (rendered.parent / "elsewhere").mkdir()
    (rendered.parent / "elsewhere" / "keep.txt").write_text(SECRET)
    (rendered / ".estategen-999998-link").symlink_to(rendered.parent / "elsewhere")
    result = render(rendered)
    assert result.returncode == 0, result.stderr
    assert (rendered / ".estategen-999999-notes").read_text() == "mine"
    assert (rendered / ".estategen-999998-link").is_symlink()
    assert (rendered.parent / "elsewhere" / "keep.txt").read_text() == SECRET
