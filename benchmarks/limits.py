"""Time the worst blueprints the limits of docs/blueprint.md allow (not a test): wall time and
peak RSS.

    python benchmarks/limits.py [--case NAME ...] [--scale F]

Each case writes one blueprint at (or, with ``--scale`` above 1, beyond) a limit and runs the
real CLI on it in a fresh process under ``/usr/bin/time``, so start-up and peak memory count as
a user sees them. The limits promise every command under 10 s and 1 GiB on 2 cores; a row that
breaks either is marked. With ``--scale`` above 1 the blueprints exceed the limits and each
command must refuse them (exit 1 or 2) as quickly.

Cases:

- ``values``: one unknown key holding a flat list ``[0, 0, ...]`` of as many values as allowed;
- ``aliases``: one anchored list of wrong values aliased until the value limit, so that one
  mistake is found once per copy, in each output format;
- ``pools``: as many single-host Slurm pools as allowed, in one partition;
- ``names``: as many teams and users as allowed;
- ``large``: the 100,000-GPU benchmark estate (blueprints/large.py).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "blueprints"))

from estategen import limits  # noqa: E402

import large  # noqa: E402

BUDGET_S = 10.0
BUDGET_MIB = 1024.0

_LAB_HEAD = """\
estate: lab
versions: {slurm: "23.11", kubernetes: "1.31"}
identity:
  users: [{name: alice, uid: 10001}]
  teams: [{name: vision, gid: 20001, members: [alice]}]
"""
_LAB_POOL = """\
node_pools:
  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]", memory_gb: 512,
     cpu: {sockets: 2, cores_per_socket: 32}, gpus: {model: a100-sxm-80gb, count: 4}}
slurm:
  controllers: [lab-ctl]
  partitions: [{name: gpu, pools: [a100], default: true}]
"""


def values_case(scale: float) -> str:
    count = int(limits.MAX_VALUES * scale) - 60  # the rest of the blueprint holds ~60 values
    return _LAB_HEAD + _LAB_POOL + "x: [" + "0," * (count - 1) + "0]\n"


def aliases_case(scale: float) -> str:
    """An anchored list of 500 numbers where strings belong, aliased until the value limit:
    one mistake, found once per copy."""
    anchored = 500
    copies = int(limits.MAX_VALUES * scale) // (anchored + 1) - 2
    anchor = "[" + ", ".join(["0"] * anchored) + "]"
    return (
        _LAB_HEAD
        + "node_pools:\n"
        + '  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]", memory_gb: 512,\n'
        + "     cpu: {sockets: 2, cores_per_socket: 32}, gpus: {model: a100-sxm-80gb, count: 4},\n"
        + f"     features: &a {anchor}}}\n"
        + '  - {name: b100, scheduler: slurm, hosts: "lab-gpu-[03-04]", features: ['
        + ", ".join(["*a"] * copies)
        + "]}\n"
        + "slurm:\n  controllers: [lab-ctl]\n  partitions: [{name: gpu, pools: [a100]}]\n"
    )


def pools_case(scale: float) -> str:
    count = int(limits.MAX_POOLS * scale)
    lines = [_LAB_HEAD, "node_pools:\n"]
    for pool in range(count):
        lines.append(
            f"  - {{name: p{pool:06d}, scheduler: slurm, hosts: h{pool:06d}, memory_gb: 64, "
            "cpu: {sockets: 1, cores_per_socket: 8}, gpus: {model: l4-24gb, count: 1}}\n"
        )
    pools = ", ".join(f"p{pool:06d}" for pool in range(count))
    lines.append(
        f"slurm:\n  controllers: [ctl]\n  partitions:\n    - {{name: gpu, pools: [{pools}]}}\n"
    )
    return "".join(lines)


def names_case(scale: float) -> str:
    users = int(limits.MAX_USERS * scale)
    teams = int(limits.MAX_TEAMS * scale)
    lines = ["estate: lab\nidentity:\n  users:\n"]
    lines += [f"    - {{name: u{user:06d}, uid: {100000 + user}}}\n" for user in range(users)]
    lines.append("  teams:\n")
    per_team = max(1, users // teams)
    for team in range(teams):
        members = ", ".join(f"u{(team * per_team + i) % users:06d}" for i in range(per_team))
        lines.append(f"    - {{name: t{team:05d}, gid: {300000 + team}, members: [{members}]}}\n")
    return "".join(lines) + _LAB_POOL


def reservations_case(scale: float) -> str:
    """The most reservations, all at one time over one pool of the most hosts an expression
    allows, half by pool and half by partition: every pair meets."""
    count = int(limits.MAX_RESERVATIONS * scale)
    lines = [
        _LAB_HEAD.replace('slurm: "23.11", ', ""),
        "node_pools:\n  - {name: big, scheduler: slurm, hosts: 'n[00000-65535]', memory_gb: 16,\n"
        "     cpu: {sockets: 1, cores_per_socket: 4}}\n",
        "slurm:\n  controllers: [ctl]\n  partitions: [{name: all, pools: [big], default: true}]\n"
        "  reservations:\n",
    ]
    held = ("pools: [big]", "partition: all")
    lines += [
        f"    - {{name: r{i:05d}, start: '2031-01-01T00:00', duration: '1:00:00', "
        f"{held[i % 2]}, teams: [vision]}}\n"
        for i in range(count)
    ]
    return "".join(lines)


def large_case(scale: float) -> str:
    return large.blueprint()


CASES: dict[str, tuple[Callable[[float], str], tuple[tuple[str, ...], ...]]] = {
    "values": (values_case, (("validate",), ("validate", "--format", "sarif"))),
    "aliases": (
        aliases_case,
        (("validate",), ("validate", "--format", "json"), ("validate", "--format", "sarif")),
    ),
    "pools": (pools_case, (("validate",), ("render",), ("report",), ("plan",))),
    "names": (names_case, (("validate",), ("render",), ("report",), ("plan",))),
    "reservations": (reservations_case, (("validate",), ("validate", "--format", "json"))),
    "large": (large_case, (("validate",), ("render",), ("report",), ("plan",))),
}


def run(command: list[str]) -> tuple[int, float, float]:
    """Exit status, wall seconds and peak RSS in MiB of one command."""
    timed = ["/usr/bin/time", "-f", "%e %M", *command]
    done = subprocess.run(timed, capture_output=True, text=True, check=False)
    seconds, kib = done.stderr.strip().splitlines()[-1].split()
    return done.returncode, float(seconds), int(kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    parser.add_argument("--scale", type=float, default=1.0, help="size relative to the limit")
    args = parser.parse_args()
    estategen = [sys.executable, "-m", "estategen"]
    work = Path(tempfile.mkdtemp(prefix="estategen-limits-"))
    print(
        "| case | blueprint | command | exit | wall s | peak RSS MiB |\n|---|---|---|---|---|---|"
    )
    over = []
    try:
        for name in args.case or list(CASES):
            make, commands = CASES[name]
            blueprint = work / f"{name}.yaml"
            blueprint.write_text(make(args.scale))
            size = f"{blueprint.stat().st_size / 2**20:.1f} MiB"
            out = work / f"{name}-out"
            for command in commands:
                extra = ["-o", str(out)] if command[0] in ("render", "plan") else []
                status, seconds, mib = run([*estategen, *command, str(blueprint), *extra])
                mark = " **over**" if seconds > BUDGET_S or mib > BUDGET_MIB else ""
                if mark:
                    over.append(f"{name} {' '.join(command)}")
                shown = " ".join(command)
                print(f"| {name} | {size} | {shown} | {status} | {seconds:.1f}{mark} | {mib:.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if over:
        print(f"\nover {BUDGET_S:.0f} s or {BUDGET_MIB:.0f} MiB: {', '.join(over)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
