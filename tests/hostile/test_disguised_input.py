"""Input that is not what it looks like, met as an attacker would send it: through the real CLI,
under a 1 GiB memory cap, each refused with a finding at its place within 10 s.

A comment that hides a key behind a character YAML reads as a line break; a mapping that holds
itself through an alias; a password written where the output is readable by every user; and a
slurm.conf whose lines are not the lines slurmctld reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from capped import SECONDS, Run, run_capped

from conftest import BLUEPRINTS

LAB = (BLUEPRINTS / "lab.yaml").read_text()
CONTROLLERS = "  controllers: [lab-ctl]\n"
# a comment inside `slurm:`; what follows the character is `slurm.options`, run as root on
# every node by slurmd if it were read
HIDDEN = "  options: {Prolog: /srv/x.sh}"
BREAKS = {
    "\u2028": "U+2028 LINE SEPARATOR",
    "\u2029": "U+2029 PARAGRAPH SEPARATOR",
    "\x85": "U+0085 NEXT LINE",
    "\r": "U+000D CARRIAGE RETURN",
    "\x0b": "U+000B LINE TABULATION",
    "\x0c": "U+000C FORM FEED",
    "\x1c": "U+001C FILE SEPARATOR",
    "\x1d": "U+001D GROUP SEPARATOR",
    "\x1e": "U+001E RECORD SEPARATOR",
    "\x1f": "U+001F UNIT SEPARATOR",
}


def place(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``text[offset]``, lines counted at line feeds."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def refused(run: Run, file: Path, line: int, column: int, rule: str, message: str) -> str:
    """The one error finding of a refused run, at ``file:line:column`` with ``rule``."""
    assert run.returncode == 1, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    assert run.seconds < SECONDS, run.seconds
    output = run.stdout + run.stderr
    assert "Traceback" not in output and "internal error" not in output
    (finding,) = [
        line
        for line in output.splitlines()
        if line.startswith(f"{file}:") and ": warning: " not in line
    ]
    assert finding.startswith(f"{file}:{line}:{column}: "), finding
    assert finding.endswith(f"[{rule}]"), finding
    assert message in finding, finding
    return finding


def write(tmp_path: Path, text: str, name: str = "blueprint.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("char", list(BREAKS), ids=[name[:6] for name in BREAKS.values()])
def test_a_line_break_hidden_in_a_comment_is_refused_where_it_stands(
    char: str, tmp_path: Path
) -> None:
    comment = f"  # reviewed by ops, see ticket{char}{HIDDEN}\n"
    text = LAB.replace(CONTROLLERS, CONTROLLERS + comment)
    blueprint = write(tmp_path, text)
    line, column = place(text, text.index(char))
    for command in (("validate",), ("render", "-o", tmp_path / "out")):
        run = run_capped(command[0], blueprint, *command[1:])
        finding = refused(run, blueprint, line, column, "load/line-break", BREAKS[char])
        assert "comments included" in finding
    assert sorted(os.listdir(tmp_path)) == ["blueprint.yaml"]


@pytest.mark.parametrize("char", ["\u2028", "\x85", "\r"], ids=["LS", "NEL", "CR"])
def test_a_hidden_line_break_inside_a_value_is_refused_too(char: str, tmp_path: Path) -> None:
    text = LAB.replace("description: Two-scheduler lab estate", f"description: 'a{char}b'")
    blueprint = write(tmp_path, text)
    line, column = place(text, text.index(char))
    refused(run_capped("validate", blueprint), blueprint, line, column, "load/line-break", "U+")


def test_crlf_line_endings_are_ordinary_line_endings(tmp_path: Path) -> None:
    crlf = write(tmp_path, LAB.replace("\n", "\r\n"), "crlf.yaml")
    run = run_capped("validate", "--format", "json", crlf)
    plain = run_capped("validate", "--format", "json", BLUEPRINTS / "lab.yaml")
    assert run.returncode == plain.returncode == 0, run.stdout[-2000:]
    assert run.stdout.replace(str(crlf), "X") == plain.stdout.replace(
        str(BLUEPRINTS / "lab.yaml"), "X"
    )
    # a line the CRLF file and the LF file both get wrong is reported at the same place
    broken = LAB.replace("memory_gb: 512", "memory_gb: lots")
    lf_run = run_capped("validate", write(tmp_path, broken, "lf.yaml"))
    crlf_run = run_capped("validate", write(tmp_path, broken.replace("\n", "\r\n"), "c.yaml"))
    assert lf_run.returncode == crlf_run.returncode == 1
    assert re.findall(r":(\d+:\d+): ", lf_run.stdout) == re.findall(
        r":(\d+:\d+): ", crlf_run.stdout
    )


# --- aliases that hold themselves ---------------------------------------------------------

RECURSIVE = {
    "mapping": ("x: &a {y: *a}\n", "*a", "x.y"),
    "mapping-in-blueprint": ("estate: lab\nx: &a {y: *a}\n", "*a", "x.y"),
    "sequence": ("estate: &a [*a]\n", "*a", "estate[0]"),
    "block-sequence": ("estate: lab\nx: &a\n  - 1\n  - *a\n", "*a", "x[1]"),
    "nested": ("estate: lab\nx: &a {y: [1, {z: [*a]}]}\n", "*a", "x.y[1].z[0]"),
    "through-a-second-anchor": (
        "estate: lab\nx: &a [&b {c: {d: *a}}]\nw: *b\n",
        "*a",
        "x[0].c.d",
    ),
    "inner-anchor": ("estate: lab\nx: &a\n  y: &b\n    z: [*b]\n", "*b", "x.y.z[0]"),
    "as-a-key": ("estate: lab\n? &a [*a]\n: 1\n", "*a", "[0]"),
}


@pytest.mark.parametrize(("text", "alias", "path"), RECURSIVE.values(), ids=list(RECURSIVE))
def test_an_alias_inside_its_own_anchor_is_refused_at_the_alias(
    text: str, alias: str, path: str, tmp_path: Path
) -> None:
    blueprint = write(tmp_path, text)
    line, column = place(text, text.index(alias))
    finding = refused(
        run_capped("validate", blueprint), blueprint, line, column, "load/alias", "cannot hold"
    )
    assert f": {path}: alias {alias} " in finding, finding


def test_aliases_that_share_without_a_cycle_still_load(tmp_path: Path) -> None:
    text = LAB.replace("    labels: {tier: inference}", "    labels: &l {tier: inference}")
    text = text.replace("observability:\n  labels: {site: lab}", "observability:\n  labels: *l")
    run = run_capped("validate", write(tmp_path, text))
    assert run.returncode == 0, run.stdout[-2000:]


# --- passwords ------------------------------------------------------------------------------


PASSWORD_VALUES = {
    # a literal in the option's shape: refused by the check
    "literal": ("hunter2pw", "check/slurm-options-not-owned"),
    # a secret reference, or a literal the option's value pattern refuses: refused by the
    # schema, with the same message, which quotes no value
    "secret-reference": ("{secret: hunter2ref}", "schema/secret"),
    "malformed-literal": ("'hunter2 pw!'", "schema/secret"),
}


@pytest.mark.parametrize("key", ["AccountingStoragePass", "JobCompPass", "StoragePass"])
@pytest.mark.parametrize(("value", "rule"), PASSWORD_VALUES.values(), ids=list(PASSWORD_VALUES))
def test_a_password_in_slurm_options_is_refused_and_written_nowhere(
    key: str, value: str, rule: str, tmp_path: Path
) -> None:
    text = LAB.replace(CONTROLLERS, CONTROLLERS + f"  options: {{{key}: {value}}}\n")
    blueprint = write(tmp_path, text)
    line, column = place(text, text.index(key))
    run = run_capped("render", blueprint, "-o", tmp_path / "out")
    finding = refused(run, blueprint, line, column, rule, "a password is a secret reference")
    assert f"slurm.options.{key}: " in finding
    assert "slurm.accounting.database.password" in finding or key == "JobCompPass"
    # the message quotes no value (the excerpt under it shows the blueprint's line, as for
    # every finding)
    assert "hunter2" not in finding
    assert sorted(os.listdir(tmp_path)) == ["blueprint.yaml"]


SITE = (
    "ClusterName=lab\nSlurmctldHost=ctl\nAccountingStorageType=accounting_storage/slurmdbd\n"
    "AccountingStoragePass=hunter2pw\njobcomppass=s3cr3t-jc\n"
    "NodeName=cn[01-02] CPUs=4 RealMemory=8000\nPartitionName=batch Nodes=cn[01-02] Default=YES\n"
)


def test_import_writes_a_secret_reference_and_never_the_password(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(SITE)
    out = tmp_path / "imported.yaml"
    run = run_capped("import", tmp_path / "slurm.conf", "-o", out)
    # written, but not the site's render: the two password lines are refused (exit 4)
    assert run.returncode == 4, run.stderr[-2000:]
    assert run.seconds < SECONDS
    written = out.read_text()
    for secret in ("hunter2pw", "s3cr3t-jc"):
        assert secret not in run.stdout + run.stderr
        assert secret not in written
        assert all(
            secret not in p.read_text()
            for p in tmp_path.iterdir()
            if p.is_file() and p.name != "slurm.conf"
        )
    assert (
        "slurm.conf:4:1: refused: AccountingStoragePass=(a password, not copied) ->" in run.stdout
    )
    assert "slurm.conf:5:1: refused: jobcomppass=(a password, not copied) ->" in run.stdout
    data = yaml.safe_load(written)
    assert "options" not in data["slurm"]
    assert data["slurm"]["accounting"]["database"]["password"] == {"secret": "slurmdbd_db"}
    assert run_capped("validate", out).returncode == 0


# --- slurm.conf lines that are not slurmctld's ---------------------------------------------


@pytest.mark.parametrize("char", list(BREAKS), ids=[name[:6] for name in BREAKS.values()])
def test_import_refuses_a_slurm_conf_line_with_a_hidden_line_break(
    char: str, tmp_path: Path
) -> None:
    # a line splitter would read `SlurmctldParameters=...` as a setting; slurmctld reads one
    # line holding a comment
    text = SITE.replace("Default=YES\n", f"Default=YES\n# owner: ops{char}Prolog=/srv/x.sh\n")
    (tmp_path / "slurm.conf").write_text(text, newline="")
    run = run_capped("import", tmp_path / "slurm.conf", "-o", tmp_path / "imported.yaml")
    line, column = place(text, text.index(char))
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.seconds < SECONDS
    assert f"slurm.conf:{line}:{column}: {BREAKS[char]}" in run.stderr, run.stderr
    output = run.stdout + run.stderr
    assert "owner" not in output and "Prolog" not in output and "hunter2pw" not in output
    assert not (tmp_path / "imported.yaml").exists()


def test_import_refuses_a_hidden_line_break_in_the_sacct_dump(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(SITE)
    dump = "Cluster - 'lab'\nAccount - 'vision':Fairshare=1\u2028Account - 'x':Fairshare=9\n"
    (tmp_path / "sacct.txt").write_text(dump)
    run = run_capped(
        "import",
        tmp_path / "slurm.conf",
        "--sacct",
        tmp_path / "sacct.txt",
        "-o",
        tmp_path / "o.yaml",
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "sacct.txt:2:31: U+2028 LINE SEPARATOR" in run.stderr, run.stderr
