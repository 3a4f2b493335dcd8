"""Why estategen writes the Grafana dashboard's data itself (not a test): prints a Markdown table.

    python benchmarks/grafana_dashboard.py [--repeat N]

The dashboard of the 100,000-GPU estate (blueprints/large.py), built by
``estategen.renderers.grafana.build_dashboard`` (plain data) and by grafana-foundation-sdk's
builders replaying the same panels (``tests/grafana_sdk.py``, the tests' reference), each in a
fresh process as a render does: CPU seconds (best of N) of importing what it needs, of building
the dashboard, and whether the two are the same JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "blueprints"))

import large  # noqa: E402

CHILD = """
import json, sys, time
sys.path.insert(0, {tests!r})
from estategen import load, pipeline
estate = pipeline.validate_document(load.read_blueprint({blueprint!r})).estate
start = time.process_time()
if {sdk!r}:
    from estategen.renderers.grafana import build_dashboard
    plain = build_dashboard(estate)  # what the SDK's builders replay: not timed
    start = time.process_time()
    import grafana_sdk
    build = lambda estate: grafana_sdk.sdk_dashboard(estate, plain)
else:
    from estategen.renderers.grafana import build_dashboard as build
imported = time.process_time()
dashboard = build(estate)
built = time.process_time()
print(json.dumps([imported - start, built - imported, dashboard], sort_keys=True))
"""


def run(blueprint: Path, sdk: bool) -> tuple[float, float, object]:
    code = CHILD.format(tests=str(ROOT / "tests"), blueprint=str(blueprint), sdk=sdk)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True).stdout
    imported, built, dashboard = json.loads(out)
    return imported, built, dashboard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        blueprint = Path(work) / "large.yaml"
        blueprint.write_text(large.blueprint())
        rows = []
        for label, sdk in (("estategen (plain data)", False), ("grafana-foundation-sdk", True)):
            runs = [run(blueprint, sdk) for _ in range(args.repeat)]
            rows.append((label, min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]))
    same = rows[0][3] == rows[1][3]
    print("| dashboard of the 100,000-GPU estate | import | build | same JSON |")
    print("|---|---|---|---|")
    for label, imported, built, _ in rows:
        print(f"| {label} | {imported * 1000:.0f} ms | {built * 1000:.0f} ms | {same} |")


if __name__ == "__main__":
    main()
