"""Benchmark the 100,000-GPU estate (not a test): prints a table of timings and sizes.

    python benchmarks/run.py [--repeat N]

Measures, on this machine: validate and full render time in-process (best of N), the floor
(the same YAML loaded with libyaml plus writing the same output bytes), peak RSS of a real
`estategen render` process, and `estategen --help` start-up time.
"""

from __future__ import annotations

import argparse
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

from estategen.pipeline import validate_file  # noqa: E402
from estategen.render import render  # noqa: E402
from estategen.write import with_manifest, write_tree  # noqa: E402

import large  # noqa: E402


def best_of(repeat: int, action: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="estategen-bench-"))
    try:
        blueprint = work / "large.yaml"
        blueprint.write_text(large.blueprint())
        out = work / "out"

        def full_render() -> None:
            result = validate_file(blueprint)
            files = with_manifest(render(result.estate), result.document.raw, result.estate.name)
            write_tree(files, out)

        validate_s = best_of(args.repeat, lambda: validate_file(blueprint))
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
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run(
            [sys.executable, "-m", "estategen", "render", str(blueprint), "-o", str(work / "rss")],
            check=True,
            capture_output=True,
        )
        rss_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        help_s = best_of(
            10,
            lambda: subprocess.run(
                [sys.executable, "-m", "estategen", "--help"], check=True, capture_output=True
            ),
        )
        size = sum(len(f.content) for f in files.values())
        rows = [
            ("blueprint", f"{blueprint.stat().st_size / 1024:.0f} KiB, 12,500 nodes, 100,000 GPUs"),
            ("validate", f"{validate_s * 1000:.0f} ms"),
            ("validate + render + write", f"{render_s * 1000:.0f} ms"),
            ("floor (libyaml load + write)", f"{floor_s * 1000:.0f} ms"),
            ("render / floor", f"{render_s / floor_s:.1f}x"),
            ("peak RSS (estategen render)", f"{rss_mb:.0f} MiB"),
            ("output", f"{len(files)} files, {size / 1024:.0f} KiB"),
            ("estategen --help", f"{help_s * 1000:.0f} ms"),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
