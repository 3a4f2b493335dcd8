"""Shared helpers: run the real CLI, and paths to the example blueprints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLUEPRINTS = ROOT / "blueprints"


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m estategen`` as a user would, capturing its output."""
    result = subprocess.run(
        [sys.executable, "-m", "estategen", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


@pytest.fixture
def campus() -> Path:
    return BLUEPRINTS / "campus.yaml"


@pytest.fixture
def lab() -> Path:
    return BLUEPRINTS / "lab.yaml"
