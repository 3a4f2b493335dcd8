"""`helm template` of the vendored charts: what Helm installs from a chart at the version a
release pins, given the values estategen renders.

The helm binary is the one the test extras install (package ``helm-binary``) beside this
Python. The charts are vendored without their dependencies (the device plugin's
node-feature-discovery), so each is rendered from a copy whose ``Chart.yaml`` lists none:
helm refuses a chart whose dependencies are missing from ``charts/``, and nothing is fetched.
What a dependency installs is therefore not checked here; that a chart's values enable it
is (its ``condition``, read from the vendored ``Chart.yaml``).

The GPU Operator's chart is vendored only in part: its ``values.yaml`` and the template of
the ClusterPolicy, ``templates/clusterpolicy.yaml``, without its ``Chart.yaml`` and
``templates/_helpers.tpl``. Its copy gets two stand-ins written here (:data:`STAND_INS`): a
``Chart.yaml`` naming the chart and its version (``appVersion`` is what the template falls
back to for the validator's and node status exporter's image tags), and a ``_helpers.tpl``
defining only the two helpers the template includes, ``gpu-operator.labels`` and
``gpu-operator.operand-labels``. Those two only set metadata labels (the ClusterPolicy's, and
``spec.daemonsets.labels``), so the tests' stand-ins are not NVIDIA's and no test reads what
they render; every other field of the ClusterPolicy is the vendored template's, from the
vendored values and ours.
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
    ("gpu-operator", "v26.7.0"): UPSTREAM / "gpu-operator-v26.7.0/gpu-operator",
}
# (chart, version) -> files a partly vendored chart lacks, written into its copy: the tests'
# stand-ins, not upstream's (see the module docstring)
STAND_INS: dict[tuple[str, str], dict[str, str]] = {
    ("gpu-operator", "v26.7.0"): {
        "Chart.yaml": (
            "apiVersion: v2\nname: gpu-operator\nversion: v26.7.0\nappVersion: v26.7.0\n"
        ),
        # metadata labels only: the ClusterPolicy's and its operands' (spec.daemonsets.labels)
        "templates/_helpers.tpl": (
            '{{- define "gpu-operator.labels" -}}\n'
            "app.kubernetes.io/name: gpu-operator\n"
            "app.kubernetes.io/instance: {{ .Release.Name }}\n"
            "{{- end }}\n"
            '{{- define "gpu-operator.operand-labels" -}}\n'
            "helm.sh/chart: gpu-operator-{{ .Chart.Version }}\n"
            "app.kubernetes.io/managed-by: gpu-operator\n"
            "{{- end }}\n"
        ),
    },
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
    """A copy of the vendored chart whose Chart.yaml lists no dependencies, with the stand-ins
    of the files a partly vendored chart lacks."""
    folder = Path(tempfile.mkdtemp(prefix="chart-")) / chart
    shutil.copytree(CHARTS[chart, version], folder)
    for name, text in STAND_INS.get((chart, version), {}).items():
        assert not (folder / name).exists(), f"{chart} {version} vendors {name}: drop the stand-in"
        (folder / name).write_text(text)
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
