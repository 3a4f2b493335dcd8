"""scripts/check-tools.sh: a missing tool stops the test script in one line naming its package."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "check-tools.sh"
# Tools the script finds on PATH, and the package it names for each.
ON_PATH = {
    "slurmctld": "slurm-wlm",
    "slurmd": "slurm-wlm",
    "sinfo": "slurm-client",
    "sacctmgr": "slurm-client",
    "slurmdbd": "slurmdbd",
    "munged": "munge",
    "mariadbd": "mariadb-server",
    "unshare": "util-linux",
    "podman": "podman",
    "runc": "runc",
    "iptables": "iptables",
    "debootstrap": "debootstrap",
    "chromium": "chromium",
    "kubectl": "kubernetes-client",
    "promtool": "prometheus",
    "prometheus": "prometheus",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "mpicc": "libopenmpi-dev",
    "slurmrestd": "slurmrestd",
    "curl": "curl",
    "containerd": "containerd",
}
SHELL_TOOLS = ("bash", "cat", "awk", "env")


def path_without(tmp_path: Path, absent: str) -> str:
    """A PATH holding the shell's own tools and every tested tool but ``absent``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in (*SHELL_TOOLS, *ON_PATH):
        found = shutil.which(tool)
        if tool != absent and found:
            (folder / tool).symlink_to(found)
    return str(folder)


@pytest.mark.parametrize(
    "absent", ["iptables", "slurmctld", "chromium", "runc", "kubectl", "mpicc", "curl"]
)
def test_a_missing_tool_fails_in_one_line_naming_its_package(tmp_path: Path, absent: str) -> None:
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        env={**os.environ, "PATH": path_without(tmp_path, absent)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    first_missing = next(tool for tool in ON_PATH if tool == absent or not shutil.which(tool))
    assert lines == [
        f"scripts/check-tools.sh: missing {first_missing} (Debian package {ON_PATH[first_missing]})"
    ]


@pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ON_PATH), reason="the tools are not all installed"
)
def test_every_tool_present_reports_the_versions_it_found() -> None:
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "slurm" in result.stdout and "podman" in result.stdout
