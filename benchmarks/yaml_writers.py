"""Why estategen writes block YAML itself (not a test): prints a Markdown table.

    python benchmarks/yaml_writers.py [--repeat N]

The Kubernetes manifests of the 100,000-GPU estate (blueprints/large.py), written by
estategen's block writer (``estategen.yamltext``), by PyYAML's pure-Python dumper that it
reproduces, and by libyaml's C emitter (``CSafeDumper``) with the same options; CPU seconds
(best of N) and whether the text is the same bytes. libyaml cannot indent lists under their
key (yamllint's and ansible-lint's style) and still represents every node in Python.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "blueprints"))

from estategen import yamltext  # noqa: E402
from estategen.kubernetes import cluster_objects  # noqa: E402
from estategen.load import parse_blueprint  # noqa: E402
from estategen.pipeline import validate_document  # noqa: E402

import large  # noqa: E402


class _CManifestDumper(yaml.CSafeDumper):
    """libyaml's emitter with the manifests' representer (| blocks for embedded files)."""


def _literal(dumper: Any, value: str) -> Any:
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None
    )


_CManifestDumper.add_representer(str, _literal)


def best(repeat: int, write: Any, documents: list[Any]) -> tuple[float, str]:
    seconds, text = float("inf"), ""
    for _ in range(repeat):
        start = time.process_time()
        text = "".join(write(document) for document in documents)
        seconds = min(seconds, time.process_time() - start)
    return seconds, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    estate = validate_document(parse_blueprint(large.blueprint().encode(), "large.yaml")).estate
    documents = [
        obj
        for cluster in estate.kubernetes_clusters
        for objs in cluster_objects(estate, cluster).files.values()
        for obj in objs
    ]
    writers = {
        "estategen.yamltext": yamltext.manifest,
        "PyYAML (pure Python)": lambda d: yamltext._dump(d, manifest=True),
        "libyaml CSafeDumper": lambda d: yaml.dump(
            d, Dumper=_CManifestDumper, default_flow_style=False, sort_keys=False, width=1000
        ),
    }
    reference = ""
    print(f"{len(documents)} manifests of the 100,000-GPU estate\n")
    print("| writer | CPU | same bytes as PyYAML |")
    print("|---|---|---|")
    results = {name: best(args.repeat, write, documents) for name, write in writers.items()}
    reference = results["PyYAML (pure Python)"][1]
    for name, (seconds, text) in results.items():
        print(f"| {name} | {seconds * 1000:.0f} ms | {'yes' if text == reference else 'no'} |")


if __name__ == "__main__":
    main()
