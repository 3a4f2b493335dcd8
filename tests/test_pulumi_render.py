"""The pulumi renderer: project files per cluster, exact pins, deterministic data, goldens.

Set ESTATEGEN_UPDATE_GOLDEN=1 to rewrite tests/golden/pulumi/ after an intended change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from estategen import model, pipeline
from estategen.output import OutputFile
from estategen.render import render
from estategen.renderers import pulumi as pulumi_renderer

ROOT = Path(__file__).resolve().parent.parent
BLUEPRINTS = ROOT / "blueprints"
GOLDEN = Path(__file__).resolve().parent / "golden" / "pulumi"
PROGRAM = ROOT / "stacks" / "__main__.py"


def pulumi_files(blueprint: str) -> dict[str, OutputFile]:
    estate = pipeline.validate_file(BLUEPRINTS / blueprint).estate
    return {p: f for p, f in render(estate).items() if p.startswith(("pulumi/", "kubernetes/"))}


def test_one_project_per_cluster_with_the_contract_files() -> None:
    files = pulumi_files("campus.yaml")
    for cluster in ("serving", "burst"):
        assert {p.rsplit("/", 1)[1] for p in files if p.startswith(f"pulumi/{cluster}/")} == {
            "Pulumi.yaml",
            "__main__.py",
            "requirements.txt",
            "cluster.json",
        }
    assert {p.split("/")[1] for p in files} == {"serving", "burst"}


def test_program_is_the_stacks_program_byte_for_byte() -> None:
    files = pulumi_files("lab.yaml")
    assert files["pulumi/lab-k8s/__main__.py"].content == PROGRAM.read_bytes()


def test_project_runs_python_and_stack_config_names_its_cluster() -> None:
    files = pulumi_files("campus.yaml")
    project = yaml.safe_load(files["pulumi/burst/Pulumi.yaml"].content)
    assert project["name"] == "campus-burst"
    assert project["runtime"]["name"] == "python"
    # the project's own keys as defaults, other namespaces' keys as values (Pulumi refuses a
    # `default` on a key of another namespace); no stack settings file: Pulumi and the user
    # own Pulumi.<stack>.yaml
    assert project["config"] == {
        "cluster": {"default": "burst"},
        "estate": {"default": "campus"},
        "kubernetes:context": {"value": "burst"},
        "gcp:region": {"value": "us-central1"},
    }
    assert not [p for p in files if re.fullmatch(r"pulumi/[^/]+/Pulumi\.[^/]+\.yaml", p)]


def test_requirements_pin_exactly_the_providers_a_cluster_needs() -> None:
    files = pulumi_files("campus.yaml")

    def pins(cluster: str) -> dict[str, str]:
        lines = files[f"pulumi/{cluster}/requirements.txt"].content.decode().splitlines()
        return dict(line.split("==") for line in lines)

    assert set(pins("serving")) == {"pulumi", "pulumi-kubernetes"}
    assert set(pins("burst")) == {"pulumi", "pulumi-kubernetes", "pulumi-gcp"}
    assert pins("burst")["pulumi-gcp"] == pulumi_renderer.PULUMI_GCP


def test_pins_are_the_versions_the_tests_run() -> None:
    """A rendered project installs exactly what these tests exercised."""
    assert metadata.version("pulumi") == pulumi_renderer.PULUMI
    assert metadata.version("pulumi-kubernetes") == pulumi_renderer.PULUMI_KUBERNETES
    assert metadata.version("pulumi-gcp") == pulumi_renderer.PULUMI_GCP
    assert metadata.version("pulumi-aws") == pulumi_renderer.PULUMI_AWS
    assert metadata.version("pulumi-azure-native") == pulumi_renderer.PULUMI_AZURE_NATIVE


def test_cluster_data_points_at_the_manifests_and_carries_releases_and_pools() -> None:
    files = pulumi_files("campus.yaml")
    raw = files["pulumi/serving/cluster.json"].content.decode()
    data = json.loads(raw)
    assert raw == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["schema"] == pulumi_renderer.DATA_SCHEMA
    assert data["manifests"] == "../../kubernetes/serving"
    assert data["kubernetes_version"] == "1.31"
    releases = {r["name"]: r for r in data["releases"]}
    assert list(releases) == ["nvidia-device-plugin", "kueue"]
    for release in releases.values():
        assert f"kubernetes/serving/{release['values_file']}" in files
    assert releases["kueue"]["provides"] == ["kueue.x-k8s.io"]
    assert data["node_pools"] == []
    burst = json.loads(files["pulumi/burst/cluster.json"].content)
    (pool,) = burst["node_pools"]
    assert pool["provider"] == "gke"
    (accelerator,) = pool["args"]["node_config"]["guest_accelerators"]
    assert accelerator["type"] == "nvidia-h100-80gb"


def test_switch_spread_matches_the_slurm_topology_split() -> None:
    spread = model.spread([f"n{i}" for i in range(7)], ["a", "b", "c"])
    assert spread == [("a", ["n0", "n1", "n2"]), ("b", ["n3", "n4"]), ("c", ["n5", "n6"])]


def test_rendering_never_imports_pulumi(tmp_path: Path) -> None:
    """The CLI stays fast: the renderer copies the program, it does not load it."""
    code = (
        "import sys\n"
        "from estategen import cli\n"
        f"assert cli.main(['render', {str(BLUEPRINTS / 'campus.yaml')!r}, '-o', "
        f"{str(tmp_path / 'out')!r}]) == 0\n"
        "heavy = ('pulumi', 'pulumi_kubernetes', 'pulumi_gcp', 'pulumi_aws', "
        "'kubernetes_validate')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy "
        "or m == 'estategen_stacks.__main__')\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "pulumi" / "serving" / "cluster.json").is_file()


@pytest.mark.parametrize("cluster", ["serving", "burst"])
def test_campus_projects_match_the_golden_files(cluster: str) -> None:
    """The project (but __main__.py, which is pinned to stacks/ above) and the manifests."""
    files = {
        path.split("/", 2)[2]: output.content
        for path, output in pulumi_files("campus.yaml").items()
        if path.startswith(f"pulumi/{cluster}/") and not path.endswith("/__main__.py")
    } | {
        "kubernetes." + path.split("/", 2)[2].replace("/", "."): output.content
        for path, output in pulumi_files("campus.yaml").items()
        if path.startswith(f"kubernetes/{cluster}/")
    }
    folder = GOLDEN / "campus" / cluster
    if os.environ.get("ESTATEGEN_UPDATE_GOLDEN") == "1":
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, content in files.items():
            (folder / name).write_bytes(content)
    golden = {p.name: p.read_bytes() for p in folder.iterdir()} if folder.is_dir() else {}
    assert set(golden) == set(files), "run with ESTATEGEN_UPDATE_GOLDEN=1 after a change"
    for name, content in files.items():
        assert content.decode() == golden[name].decode(), name
