"""Run the real CLI as an attacker would meet it: under a memory cap and a timeout."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MEMORY_CAP = 1024**3  # address space of the CLI process
SECONDS = 10  # what every refusal must take at most on a loaded 2-core machine
TIMEOUT = 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_capped(*args: str | Path, cwd: Path | None = None, shell: bool = False) -> Run:
    """``python -m estategen ARGS`` (or, with ``shell``, ``bash -c ARGS[0]``) capped at
    1 GiB of address space and killed after 30 s."""
    command = ["bash", "-c", str(args[0])] if shell else [sys.executable, "-m", "estategen"]
    start = time.monotonic()
    result = subprocess.run(
        command if shell else [*command, *map(str, args)],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd,
        timeout=TIMEOUT,
        preexec_fn=_cap_memory,
    )
    return Run(result.returncode, result.stdout, result.stderr, time.monotonic() - start)


# the blueprint line a finding points at, and the caret under its column
EXCERPT = re.compile(r" +([0-9]+ )?\| ")


def assert_one_line_exit_2(run: Run, message: str) -> None:
    """Exit 2 with one ``estategen:`` line holding ``message``, within :data:`SECONDS`.

    The blueprint's own warnings (each with the line it points at) may come first; nothing
    else may.
    """
    assert run.returncode == 2, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    *before, last = run.stderr.splitlines() or [""]
    assert last.startswith("estategen: "), run.stderr[-2000:]
    assert message in last, last
    assert all(
        ": warning: " in line or line.endswith("warning(s)") or EXCERPT.match(line)
        for line in before
    ), before
    assert "internal error" not in run.stderr
    assert run.seconds < SECONDS, run.seconds
