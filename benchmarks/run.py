"""Benchmark the 100,000-GPU estate (not a test): prints a Markdown table of timings and sizes.

    python benchmarks/run.py [--repeat N] [--no-slurm]

On this machine: validate, render and write in-process (best of N, with estategen's caches
emptied before every run, as in a fresh process), the same as a real `estategen render`
process, the floor (the same YAML loaded with libyaml plus writing the same bytes), peak RSS,
the output's size, `estategen --help` start-up, and how long Slurm's own slurmctld takes to
start on the rendered configuration (with slurmdbd on a throwaway MariaDB, host names from a
private /etc/hosts; needs root, slurm-wlm, slurmdbd, munge and mariadb-server).
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "blueprints"))
sys.path.insert(0, str(ROOT / "tests"))

from estategen import hostlist, yamltext  # noqa: E402
from estategen.pipeline import validate_file  # noqa: E402
from estategen.render import render  # noqa: E402
from estategen.renderers import slurm  # noqa: E402
from estategen.write import with_manifest, write_tree  # noqa: E402

import large  # noqa: E402

TARGET_FLOOR_RATIO = 3.0
TARGET_RENDER_S = 2.0
TARGET_HELP_S = 0.150


def cold() -> None:
    """Forget what an earlier run in this process computed (hostlists, quoted YAML, files)."""
    hostlist._compress.cache_clear()
    hostlist._parse.cache_clear()
    hostlist._SPLIT.clear()
    yamltext._STRINGS.clear()
    yamltext._KEYS.clear()
    slurm._last = None


def best_of(repeat: int, action: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeat):
        cold()
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def process_time(repeat: int, command: list[str]) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        timings.append(time.perf_counter() - start)
    return min(timings)


def slurmctld_startup(blueprint: Path, rendered: Path, work: Path) -> list[tuple[str, str]]:
    """Start slurmdbd (on MariaDB, loaded with sacct.cfg) and then time slurmctld's start."""
    from mariadb import MariaDB, have_mariadb
    from slurmlab import SlurmLab, have_slurm

    if not (have_slurm() and have_mariadb() and shutil.which("slurmdbd")):
        return [("slurmctld start-up", "not measured (needs slurm-wlm, slurmdbd, mariadb)")]
    estate = validate_file(blueprint).estate
    accounting = estate.slurm.accounting
    assert accounting is not None
    hosts = [h for pool in estate.slurm_pools for h in pool.hosts]
    names = [*hosts, *estate.slurm.controllers, accounting.host, accounting.database.host]
    lab = SlurmLab(rendered, work / "slurm", names)
    database = MariaDB(work / "mariadb")
    try:
        lab.install_configs()
        lab.start_munge()
        database.start()
        database.create(accounting.database.name, accounting.database.user, "benchmark-only")
        lab.install_slurmdbd(database.port, "benchmark-only")
        lab.start_slurmdbd(accounting.host)
        lab.run("sacctmgr", "-i", "load", f"file={lab.etc / 'sacct.cfg'}", timeout=900)
        for line in (lab.etc / "qos.sacctmgr").read_text().splitlines():
            if line.startswith("add qos "):
                lab.run("sacctmgr", "-i", *line.split(), check=False)
        conf = str(lab.etc / "slurm.conf")
        controller = estate.slurm.controllers[0]
        start = time.perf_counter()
        lab.start("slurmctld", controller, "/usr/sbin/slurmctld", "-D", "-c", "-i", "-f", conf)
        lab.wait_for(lambda: lab.port_open(lab.ports["ctld"]), "slurmctld port", timeout=600)
        listening = time.perf_counter() - start
        nodes = lab.run("sinfo", "-h", "-o", "%D", timeout=600).split()
        answering = time.perf_counter() - start
        log = (lab.work / "log" / "slurmctld.log").read_text()
    finally:
        lab.stop()
        database.stop()
    resolving = re.search(r"processing time from _validate_slurmd_addr: usec=([0-9]+)", log)
    rows = [
        ("slurmctld start-up (port open)", f"{listening:.1f} s"),
        (f"slurmctld answers sinfo ({sum(map(int, nodes))} nodes)", f"{answering:.1f} s"),
    ]
    if resolving:
        seconds = int(resolving[1]) / 1e6
        rows.append(("of which resolving node names (/etc/hosts)", f"{seconds:.1f} s"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-slurm", action="store_true", help="skip the slurmctld start-up")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="estategen-bench-"))
    try:
        blueprint = work / "large.yaml"
        blueprint.write_text(large.blueprint())
        out = work / "out"

        def render_only() -> None:
            render(validate_file(blueprint).estate)

        def full_render() -> None:
            result = validate_file(blueprint)
            files = with_manifest(render(result.estate), result.document.raw, result.estate.name)
            write_tree(files, out)

        validate_s = best_of(args.repeat, lambda: validate_file(blueprint))
        render_only_s = best_of(args.repeat, render_only)
        render_s = best_of(args.repeat, full_render)
        files = with_manifest(
            render(validate_file(blueprint).estate), blueprint.read_bytes(), "large"
        )
        floor_out = work / "floor"

        def floor() -> None:
            yaml.load(blueprint.read_bytes(), Loader=yaml.CSafeLoader)
            shutil.rmtree(floor_out, ignore_errors=True)
            for path, output in files.items():
                target = floor_out / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(output.content)

        floor_s = best_of(args.repeat, floor)
        estategen = [sys.executable, "-m", "estategen"]
        render_process = [*estategen, "render", str(blueprint), "-o", str(work / "process")]
        process_s = process_time(3, render_process)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run(render_process, check=True, capture_output=True)
        rss_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        help_s = process_time(10, [*estategen, "--help"])
        size = sum(len(f.content) for f in files.values())
        slurm_conf = files["slurm/slurm.conf"].content
        slurm_lines = slurm_conf.count(b"\n")
        rows = [
            ("blueprint", f"{blueprint.stat().st_size / 1024:.0f} KiB: 12,500 nodes, 100,000 GPUs"),
            ("validate", f"{validate_s * 1000:.0f} ms"),
            ("validate + render", f"{render_only_s * 1000:.0f} ms"),
            ("validate + render + write", f"{render_s * 1000:.0f} ms"),
            ("floor (libyaml load + write the same bytes)", f"{floor_s * 1000:.0f} ms"),
            (
                "render / floor",
                f"{render_s / floor_s:.1f}x (target {TARGET_FLOOR_RATIO:.0f}x)",
            ),
            ("`estategen render` process, start to exit", f"{process_s * 1000:.0f} ms"),
            ("peak RSS (`estategen render`)", f"{rss_mb:.0f} MiB"),
            ("output", f"{len(files)} files, {size / 1024:.0f} KiB"),
            ("slurm.conf", f"{slurm_lines} lines, {len(slurm_conf) / 1024:.0f} KiB"),
            ("`estategen --help`", f"{help_s * 1000:.0f} ms (target 150 ms)"),
        ]
        if not args.no_slurm:
            rows += slurmctld_startup(blueprint, work / "process", work)
        print("| measure | value |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        missed = []
        if render_s / floor_s > TARGET_FLOOR_RATIO:
            missed.append("render within 3x of the floor")
        if render_s > TARGET_RENDER_S:
            missed.append("render under 2 s")
        if help_s > TARGET_HELP_S:
            missed.append("--help under 150 ms")
        if missed:
            print(f"\nmissed: {', '.join(missed)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
