"""A blueprint is read with a bound, whatever the path names: ``estategen validate /dev/zero``
or ``<(yes)`` is refused as too large after 16 MiB, not read until memory runs out. Pipes stay
readable, so a generated blueprint can be fed through process substitution."""

from __future__ import annotations

import shlex
import socket
import sys
from pathlib import Path

import pytest
from capped import SECONDS, assert_one_line_exit_2, run_capped

from conftest import BLUEPRINTS

CLI = f"{shlex.quote(sys.executable)} -m estategen"


@pytest.mark.parametrize("command", ["validate", "render", "report", "plan"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_after_the_size_limit(
    command: str, device: str, tmp_path: Path
) -> None:
    result = (
        run_capped(command, device, "-o", tmp_path / "out")
        if command != "validate"
        else (run_capped(command, device))
    )
    if command == "plan":  # plan says why there is nothing to plan on a second line
        assert result.returncode == 2
        assert "above the blueprint size limit of 16777216 bytes" in result.stderr
        assert result.seconds < SECONDS
    else:
        assert_one_line_exit_2(result, "above the blueprint size limit of 16777216 bytes")
    assert not (tmp_path / "out").exists()


def test_sarif_validation_reads_with_the_same_bound() -> None:
    result = run_capped("validate", "--format", "sarif", "/dev/zero")
    assert_one_line_exit_2(result, "above the blueprint size limit of 16777216 bytes")


def test_an_endless_pipe_is_refused_after_the_size_limit() -> None:
    result = run_capped(f"exec {CLI} validate <(yes)", shell=True)
    assert_one_line_exit_2(result, "above the blueprint size limit of 16777216 bytes")


def test_a_blueprint_through_process_substitution_still_validates() -> None:
    lab = shlex.quote(str(BLUEPRINTS / "lab.yaml"))
    result = run_capped(f"exec {CLI} validate <(cat {lab})", shell=True)
    assert result.returncode == 0, result.stderr
    assert "valid estate 'lab'" in result.stdout


def test_a_socket_is_not_a_blueprint(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "bp.sock"))
        result = run_capped("validate", tmp_path / "bp.sock")
    assert_one_line_exit_2(result, "bp.sock: cannot read")
