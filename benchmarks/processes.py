"""Whole `estategen` processes against their floors (not a test): prints a Markdown table.

    python benchmarks/processes.py [--repeat N] [--shape NAME ...] [--command TEXT ...]
                                   [--no-inventory]

Every figure is a whole process, start to exit, as a user runs it, next to its floor: a
Python process that loads the same blueprint with libyaml's ``CSafeLoader`` and then writes,
compares or prints the same bytes (``benchmarks/floor.py``); for ``schema`` and ``--help`` a
bare interpreter printing the same bytes. The two run alternately, N pairs, and the ratio
is the median of the pairs' ratios (the machine is shared: a pair sees the same load). Peak
RSS is the estategen process's own (``wait4``), not this script's. The estategen package is
byte-compiled first (``compileall``), as ``pip install`` does: with PYTHONDONTWRITEBYTECODE
set, every run would otherwise compile each module from source.

Shapes (blueprints/large.py):

- ``large``: the 100,000-GPU estate, 250 pools of 50 nodes, 200 partitions, 300 teams;
- ``wide``: 100,000 GPUs as 50 pools of 250 nodes, 200 partitions, 300 teams;
- ``teams-20`` and ``teams-2000``: the large estate with 20 and 2,000 teams (the limit) of 5
  users each: `validate` and `report` should grow with the blueprint, not as teams x pools.

With the ``large`` shape it also times ``ansible-inventory --list`` on the rendered Ansible tree
(12,500 hosts), its peak RSS and the size of what it prints.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "blueprints"))

import large  # noqa: E402

FLOOR = [sys.executable, str(ROOT / "benchmarks" / "floor.py")]
ESTATEGEN = [sys.executable, "-m", "estategen"]
SHAPES = {
    "large": {},
    "wide": {"slurm_pools": 40, "k8s_pools": 10, "nodes_per_pool": 250, "partitions": 200},
    "teams-20": {"teams": 20, "users_per_team": 5},
    "teams-2000": {"teams": 2000, "users_per_team": 5},
}
TARGET = 2.0  # each command within 2x its floor
TARGET_STATIC = 1.5  # schema and --help within 1.5x of a bare interpreter


def run(command: list[str], cwd: Path | None = None) -> tuple[float, float, bytes]:
    """(seconds, peak RSS in MiB, stdout) of one process, its RSS alone."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read()
    if process.returncode not in (0, 1):  # render --check and plan exit 1 on drift
        raise SystemExit(f"{' '.join(command)}: exit {process.returncode}")
    return seconds, usage.ru_maxrss / 1024, stdout


def pairs(
    repeat: int, command: list[str], floor: list[str], before: list[str] | None = None
) -> tuple[float, float, float, float]:
    """(median estategen s, median floor s, median of ratios, estategen peak RSS MiB)."""
    ours, floors, ratios, rss = [], [], [], 0.0
    for _ in range(repeat):
        if before:
            subprocess.run(before, check=True)
        seconds, peak, _ = run(command)
        if before:
            subprocess.run(before, check=True)
        floor_seconds, _, _ = run(floor)
        ours.append(seconds)
        floors.append(floor_seconds)
        ratios.append(seconds / floor_seconds)
        rss = max(rss, peak)
    return statistics.median(ours), statistics.median(floors), statistics.median(ratios), rss


def shape_rows(
    name: str, work: Path, repeat: int, inventory: bool, only: list[str] | None = None
) -> list[tuple[str, ...]]:
    folder = work / name
    folder.mkdir()
    blueprint = folder / "estate.yaml"
    blueprint.write_text(large.blueprint(**SHAPES[name]))  # type: ignore[arg-type]
    changed = folder / "changed.yaml"
    changed.write_text(
        blueprint.read_text().replace("max_time: 2-00:00:00}", "max_time: 1-00:00:00}", 1)
    )
    reference = folder / "reference"
    run([*ESTATEGEN, "render", str(blueprint), "-o", str(reference)])
    report_reference = folder / "report-reference"
    run([*ESTATEGEN, "report", str(blueprint), "-o", str(report_reference)])
    validate_out = folder / "validate.txt"
    validate_out.write_bytes(run([*ESTATEGEN, "validate", str(blueprint)])[2])
    plan_out = folder / "plan.txt"
    plan_out.write_bytes(run([*ESTATEGEN, "plan", str(changed), "-o", str(reference)])[2])
    fresh, floor_fresh = folder / "fresh", folder / "floor-fresh"
    rm = ["rm", "-rf", str(fresh), str(floor_fresh)]
    bp = str(blueprint)
    cases = [
        ("validate", [*ESTATEGEN, "validate", bp], [*FLOOR, "print", bp, str(validate_out)], None),
        (
            "render into a fresh folder",
            [*ESTATEGEN, "render", bp, "-o", str(fresh)],
            [*FLOOR, "write", bp, str(reference), str(floor_fresh)],
            rm,
        ),
        (
            "re-render, nothing changed",
            [*ESTATEGEN, "render", bp, "-o", str(reference)],
            [*FLOOR, "compare", bp, str(reference), str(reference)],
            None,
        ),
        (
            "render --check",
            [*ESTATEGEN, "render", "--check", bp, "-o", str(reference)],
            [*FLOOR, "compare", bp, str(reference), str(reference)],
            None,
        ),
        (
            "plan, one partition changed",
            [*ESTATEGEN, "plan", str(changed), "-o", str(reference)],
            [*FLOOR, "compare-print", str(changed), str(reference), str(reference), str(plan_out)],
            None,
        ),
        (
            "report -o",
            [*ESTATEGEN, "report", bp, "-o", str(folder / "report")],
            [*FLOOR, "write", bp, str(report_reference), str(folder / "floor-report")],
            None,
        ),
    ]
    rows = []
    for label, command, floor, before in cases:
        if only and not any(text in label for text in only):
            continue
        ours, theirs, ratio, rss = pairs(repeat, command, floor, before)
        mark = "" if ratio <= TARGET else " (above 2x)"
        rows.append(
            (
                name,
                label,
                f"{ours * 1000:.0f} ms",
                f"{theirs * 1000:.0f} ms",
                f"{ratio:.2f}x{mark}",
                f"{rss:.0f} MiB",
            )
        )
    if inventory and shutil.which("ansible-inventory"):
        seconds, rss, listed = run(
            ["ansible-inventory", "-i", "inventory.yml", "--list"], cwd=reference / "ansible"
        )
        rows.append(
            (
                name,
                "`ansible-inventory --list` (12,500 hosts)",
                f"{seconds:.1f} s",
                "-",
                f"{len(listed) / 2**20:.0f} MiB printed",
                f"{rss:.0f} MiB",
            )
        )
    return rows


def static_rows(work: Path, repeat: int) -> list[tuple[str, ...]]:
    rows = []
    for label, args in (("schema", ["schema"]), ("--help", ["--help"])):
        text = work / f"{label.strip('-')}.txt"
        text.write_bytes(run([*ESTATEGEN, *args])[2])
        floor = [
            sys.executable,
            "-c",
            f"import sys; sys.stdout.buffer.write(open({str(text)!r}, 'rb').read())",
        ]
        ours, theirs, ratio, rss = pairs(repeat, [*ESTATEGEN, *args], floor)
        mark = "" if ratio <= TARGET_STATIC else " (above 1.5x)"
        rows.append(
            (
                "-",
                label,
                f"{ours * 1000:.0f} ms",
                f"{theirs * 1000:.0f} ms (bare interpreter)",
                f"{ratio:.2f}x{mark}",
                f"{rss:.0f} MiB",
            )
        )
    return rows


def byte_compile() -> None:
    """Byte-compile the estategen package the processes import, as an install does."""
    where = subprocess.run(
        [sys.executable, "-c", "import estategen, os; print(os.path.dirname(estategen.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shape", action="append", choices=list(SHAPES))
    parser.add_argument(
        "--command",
        action="append",
        metavar="TEXT",
        help="only the rows whose command contains TEXT (repeatable), without schema and --help",
    )
    parser.add_argument("--no-inventory", action="store_true")
    args = parser.parse_args()
    byte_compile()
    work = Path(tempfile.mkdtemp(prefix="estategen-processes-"))
    try:
        rows = [] if args.command else static_rows(work, args.repeat * 2)
        for shape in args.shape or list(SHAPES):
            inventory = not args.no_inventory and shape == "large"
            rows += shape_rows(shape, work, args.repeat, inventory, args.command)
        print("| shape | command | estategen | floor | estategen / floor | peak RSS |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            print(f"| {' | '.join(row)} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
