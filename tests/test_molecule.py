"""Molecule converges the rendered roles in Debian 12 containers, twice, and verifies them.

Each scenario renders its blueprint, creates podman containers running systemd, converges
the rendered site.yml, converges again expecting no change, runs verify.yml, and destroys
the containers (see molecule/<scenario>/).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("podman") and shutil.which("molecule") and shutil.which("debootstrap")),
        reason="needs podman, debootstrap and molecule",
    ),
]


@pytest.mark.parametrize("scenario", ["slurm", "node"])
def test_scenario_converges_idempotently_and_verifies(scenario: str) -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "molecule.sh"), scenario],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-80:])
    assert result.returncode == 0, tail
    assert f"molecule scenario {scenario} passed" in result.stdout
