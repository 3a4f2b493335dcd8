"""`helm template` of the vendored charts: what Helm installs from a chart at the version a
release pins, given the values estategen renders.

The helm binary is the one the test extras install (package ``helm-binary``) beside this
Python. The charts are vendored without their dependencies (the device plugin's
node-feature-discovery), so each is rendered from a copy whose ``Chart.yaml`` lists none:
helm refuses a chart whose dependencies are missing from ``charts/``, and nothing is fetched.
What a dependency installs is therefore not checked here; that a chart's values enable it
is (its ``condition``, read from the vendored ``Chart.yaml``).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from estategen.kubernetes.objects import HelmRelease

from crd import UPSTREAM

HELM = Path(sys.executable).with_name("helm")
# the Kubernetes version charts are rendered for (their kubeVersion and Capabilities checks)
KUBE_VERSION = "1.33.0"
# (chart, version) -> the vendored chart folder
CHARTS: dict[tuple[str, str], Path] = {
    ("nvidia-device-plugin", "0.20.0"): UPSTREAM / "k8s-device-plugin-v0.20.0/nvidia-device-plugin",
}


def template(
    chart: str, version: str, release: str, namespace: str, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The objects ``helm install`` would create (CRDs included), as ``helm template`` renders."""
    done = subprocess.run(
        [
            str(HELM),
            "template",
            release,
            str(_without_dependencies(chart, version)),
            "--namespace",
            namespace,
            "--values",
            "-",
            "--include-crds",
            "--kube-version",
            KUBE_VERSION,
        ],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@cache
def _without_dependencies(chart: str, version: str) -> Path:
    """A copy of the vendored chart whose Chart.yaml lists no dependencies."""
    folder = Path(tempfile.mkdtemp(prefix="chart-")) / chart
    shutil.copytree(CHARTS[chart, version], folder)
    metadata = yaml.safe_load((folder / "Chart.yaml").read_text())
    metadata.pop("dependencies", None)
    (folder / "Chart.yaml").write_text(yaml.safe_dump(metadata))
    return folder


def template_cached(
    chart: str, version: str, release: str, namespace: str, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """:func:`template`, rendered once per input: callers get their own copy."""
    key = json.dumps(values, sort_keys=True)
    return copy.deepcopy(list(_rendered(chart, version, release, namespace, key)))


def installed(files: Mapping[str, Any], cluster: str, release: str) -> list[dict[str, Any]]:
    """What the release of this name installs on the cluster: the chart, version and namespace
    ``pulumi/<cluster>/cluster.json`` pins (as the README's helm line does) with the values file
    both use, rendered from the vendored chart at that version."""
    releases = json.loads(files[f"pulumi/{cluster}/cluster.json"].content)["releases"]
    (found,) = [r for r in releases if r["name"] == release]
    values = yaml.safe_load(files[f"kubernetes/{cluster}/{found['values_file']}"].content)
    return template_cached(found["chart"], found["version"], release, found["namespace"], values)


def installed_release(release: HelmRelease) -> list[dict[str, Any]]:
    """What a release estategen builds installs, rendered from the vendored chart."""
    return template_cached(
        release.chart, release.version, release.name, release.namespace, release.values
    )


def releases_of(files: Mapping[str, Any], cluster: str) -> list[str]:
    """The names of the releases the cluster installs."""
    releases = json.loads(files[f"pulumi/{cluster}/cluster.json"].content)["releases"]
    return [r["name"] for r in releases]


@cache
def _rendered(
    chart: str, version: str, release: str, namespace: str, values: str
) -> tuple[dict[str, Any], ...]:
    return tuple(template(chart, version, release, namespace, json.loads(values)))
