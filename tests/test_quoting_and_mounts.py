"""Blueprint text that would reach a host or a reader other than as meant: mount points over
system folders, line breaks in free text, and keys too long to quote whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from estategen import limits
from estategen.errors import BlueprintInvalid, Finding
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document

ROOT = Path(__file__).resolve().parent.parent
LAB = (ROOT / "blueprints" / "lab.yaml").read_text()


def findings(text: str) -> list[Finding]:
    try:
        validate_document(parse_blueprint(text.encode(), "bp.yaml"))
    except BlueprintInvalid as invalid:
        return invalid.findings
    return []


def with_mount(mount: str) -> str:
    return (
        LAB + f'storage:\n  - {{name: home, type: nfs, source: "nfs01:/export", mount: {mount}}}\n'
    )


@pytest.mark.parametrize(
    ("mount", "tree"),
    [
        ("/usr/bin", "/usr"),
        ("/usr/lib", "/usr"),
        ("/usr/local/apps", "/usr"),
        ("/etc/slurm", "/etc"),
        ("/etc/munge", "/etc"),
        ("/etc/ssh", "/etc"),
        ("/var/lib", "/var/lib"),
        ("/var/lib/mysql", "/var/lib"),
        ("/var/spool/slurmd", "/var/spool"),
        ("/var/spool/slurmctld/x", "/var/spool"),
        ("/var/log/slurm", "/var/log"),
        ("/lib/modules", "/lib"),
        ("/boot/efi", "/boot"),
        ("/run/munge", "/run"),
        ("/root/.ssh", "/root"),
    ],
)
def test_a_mount_point_under_a_system_folder_is_refused(mount: str, tree: str) -> None:
    (finding,) = findings(with_mount(mount))
    assert finding.path == "storage[0].mount"
    hidden = "" if mount == tree else f" under {tree}"
    shown = mount if mount == tree else repr(mount)
    assert finding.message == (
        f"mounting over {shown} would hide the system's own files{hidden} on every host; "
        "choose another mount point"
    )


@pytest.mark.parametrize(
    "mount",
    ["/home", "/scratch", "/opt/apps", "/srv/data", "/var/scratch", "/mnt/lustre", "/usrdata"],
)
def test_a_mount_point_outside_the_system_folders_is_accepted(mount: str) -> None:
    assert findings(with_mount(mount)) == []


@pytest.mark.parametrize("escape", ["\\x85", "\\N", "\\u0085", "\\L", "\\u2028", "\\P", "\\u2029"])
def test_a_description_may_not_hold_a_unicode_line_break(escape: str) -> None:
    text = LAB.replace("description: Two-scheduler lab estate", f'description: "one{escape}two"')
    (finding,) = findings(text)
    assert finding.path == "description"
    assert "without control characters or line breaks" in finding.message


def test_a_description_may_hold_other_unicode() -> None:
    text = LAB.replace("description: Two-scheduler lab estate", 'description: "Café — 東京"')
    assert findings(text) == []


LONG_KEY = "k" * 5_000
LONG_KEY_TEXT = LAB.replace("observability:\n", f"observability:\n  ? {LONG_KEY}\n  : 1\n")


def _validate(*options: str, tmp_path: Path) -> str:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(LONG_KEY_TEXT)
    command = [sys.executable, "-m", "estategen", "validate", *options, str(blueprint)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_a_long_key_is_quoted_to_the_limit_in_text(tmp_path: Path) -> None:
    shown = "k" * limits.MAX_QUOTED
    (line, source, caret, _) = _validate(tmp_path=tmp_path).splitlines()
    assert line.endswith(
        f"observability.{shown}... (5000 characters): unknown key '{shown}'... (5000 characters). "
        "Valid keys here: alerts, dcgm_exporter, labels, node_exporter, slurm_exporter. "
        "[schema/unknown-key]"
    )
    assert LONG_KEY[: limits.MAX_QUOTED + 1] not in line
    # the blueprint line it points at is cut around the column, the caret under it
    assert len(source) < 200 and caret.endswith("^")


def test_a_long_key_is_quoted_to_the_limit_in_json(tmp_path: Path) -> None:
    report = json.loads(_validate("--format", "json", tmp_path=tmp_path))
    (finding,) = report["findings"]
    assert finding["path"] == f"observability.{'k' * limits.MAX_QUOTED}... (5000 characters)"
    assert LONG_KEY[: limits.MAX_QUOTED + 1] not in json.dumps(report)


def test_a_long_key_is_quoted_to_the_limit_in_sarif(tmp_path: Path) -> None:
    log = json.loads(_validate("--format", "sarif", tmp_path=tmp_path))
    (result,) = log["runs"][0]["results"]
    (location,) = result["locations"][0]["logicalLocations"]
    assert location["fullyQualifiedName"].endswith("... (5000 characters)")
    assert LONG_KEY[: limits.MAX_QUOTED + 1] not in json.dumps(log)
