"""The rendered ansible/ tree: self-contained, lint-clean, and grouped as the model says."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from estategen import hostlist
from estategen.pipeline import validate_file
from estategen.renderers.ansible import ansible_patterns, group_name

from conftest import BLUEPRINTS, run_cli

EXAMPLES = ["lab", "campus"]
ROLES = [
    "common",
    "munge",
    "slurmdbd",
    "slurm_controller",
    "slurm_compute",
    "nvidia_gpu",
    "k8s_gpu_node",
    "dcgm_exporter",
    "node_exporter",
    "storage_client",
]
needs_ansible = pytest.mark.skipif(
    not shutil.which("ansible-playbook") or not shutil.which("ansible-lint"),
    reason="needs ansible and ansible-lint",
)


@pytest.fixture(scope="module", params=EXAMPLES)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered output of one example; its folder name is the example's name."""
    out = tmp_path_factory.mktemp("render") / request.param
    assert run_cli("render", BLUEPRINTS / f"{request.param}.yaml", "-o", out).returncode == 0
    return out


def expand_patterns(patterns: dict[str, None] | None) -> set[str]:
    """Ansible ``name-[01:04]`` patterns back to host names."""
    hosts: set[str] = set()
    for pattern in patterns or {}:
        hosts.update(hostlist.expand(pattern.replace(":", "-")))
    return hosts


def group_hosts(inventory: dict, group: str) -> set[str]:
    node = inventory["all"]["children"][group]
    hosts = expand_patterns(node.get("hosts"))
    for child in node.get("children") or {}:
        hosts |= group_hosts(inventory, child)
    return hosts


def test_ansible_patterns_split_gapped_ranges() -> None:
    names = ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "login"]
    assert ansible_patterns(names) == ["gpu-[01:03]", "gpu-07", "login"]


def test_inventory_groups_match_the_model(rendered: Path) -> None:
    estate = validate_file(BLUEPRINTS / f"{rendered.name}.yaml").estate
    inventory = yaml.safe_load((rendered / "ansible" / "inventory.yml").read_text())
    for pool in estate.node_pools:
        if pool.managed:
            assert group_name("pool", pool.name) not in inventory["all"]["children"]
            continue
        assert group_hosts(inventory, group_name("pool", pool.name)) == set(pool.hosts)
    slurm_hosts = {h for p in estate.slurm_pools for h in p.hosts}
    k8s_gpu = {h for p in estate.kubernetes_pools if p.gpus and not p.managed for h in p.hosts}
    assert group_hosts(inventory, "slurm_compute") == slurm_hosts
    assert group_hosts(inventory, "slurm_controller") == set(estate.slurm.controllers)
    assert group_hosts(inventory, "k8s_gpu_nodes") == k8s_gpu
    assert not slurm_hosts & k8s_gpu
    if estate.slurm.accounting:
        assert group_hosts(inventory, "slurmdbd") == {estate.slurm.accounting.host}


def test_roles_install_the_rendered_slurm_files_byte_for_byte(rendered: Path) -> None:
    for path in (rendered / "slurm").iterdir():
        copy = rendered / "ansible" / "files" / "slurm" / path.name
        assert copy.read_bytes() == path.read_bytes()
        assert copy.stat().st_mode == path.stat().st_mode


def test_every_role_has_defaults_handlers_meta_and_a_readme(rendered: Path) -> None:
    for role in ROLES:
        folder = rendered / "ansible" / "roles" / role
        for part in ("defaults/main.yml", "handlers/main.yml", "meta/main.yml", "tasks/main.yml"):
            assert (folder / part).is_file(), f"{role}/{part}"
        assert (folder / "README.md").read_text().startswith(f"# {role}")


def test_no_secret_value_is_rendered(rendered: Path) -> None:
    estate_vars = (rendered / "ansible" / "group_vars" / "all" / "estate.yml").read_text()
    assert "password:" not in estate_vars
    dbd = rendered / "ansible" / "files" / "slurm" / "slurmdbd.conf"
    if dbd.exists():
        assert "StoragePass={{ slurmdbd_db }}" in dbd.read_text()


def test_kubernetes_nodes_register_with_pool_labels(rendered: Path) -> None:
    estate = validate_file(BLUEPRINTS / f"{rendered.name}.yaml").estate
    for pool in estate.kubernetes_pools:
        if pool.managed:
            continue
        data = yaml.safe_load(
            (
                rendered / "ansible" / "group_vars" / f"{group_name('pool', pool.name)}.yml"
            ).read_text()
        )
        for key, value in pool.labels.items():
            assert data["pool_node_labels"][key] == value
        assert data["pool_node_labels"]["nvidia.com/device-plugin.config"] == pool.name
        assert len(data["pool_node_taints"]) == len(pool.taints)


@needs_ansible
def test_site_passes_syntax_check(rendered: Path) -> None:
    result = subprocess.run(
        ["ansible-playbook", "--syntax-check", "site.yml"],
        cwd=rendered / "ansible",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_ansible
def test_ansible_lint_production_profile_passes(rendered: Path) -> None:
    result = subprocess.run(
        ["ansible-lint", "--profile", "production", "--offline", "--nocolor", "--format", "pep8"],
        cwd=rendered / "ansible",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
