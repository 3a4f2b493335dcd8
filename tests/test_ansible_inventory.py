"""Every host a blueprint names reaches Ansible: the rendered inventory.yml, read by the real
``ansible-inventory``, holds each pool's hosts exactly once, whatever the hostlist shape."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from estategen import hostlist
from estategen.renderers.ansible import group_name

from conftest import run_cli

pytestmark = pytest.mark.skipif(
    not shutil.which("ansible-inventory"), reason="needs ansible-inventory"
)

# One pool per hostlist corner: padding that gains a digit (the range Ansible refuses when
# written whole), ranges that keep their width across 9 -> 10, unpadded ranges, single hosts
# with and without digits, several ranges in one bracket, padded and unpadded in one pool,
# text after the range, and several bracket groups in one item.
CORNERS = {
    "pad": "gpu-[01-100]",
    "wide": "node[001-1000]",
    "edge": "edge-[08-11],edge-[098-101]",
    "plain": "solo,one-7,mix-[8-12],zero-[0-10]",
    "multi": "multi-[1-3,7,10-12],multi-[0001-0003,0998-1001]",
    "suffix": "suf-[01-03]-ib,suf[9-10]b,tail[099-100]x",
    "groups": "rack[1-2]n[01-03],r[8-10]c[099-100]",
}


def _blueprint() -> dict[str, object]:
    shape = {"sockets": 1, "cores_per_socket": 2, "threads_per_core": 1}
    return {
        "estate": "corners",
        "versions": {"slurm": "22.05"},
        "node_pools": [
            {"name": name, "scheduler": "slurm", "hosts": hosts, "cpu": shape, "memory_gb": 8}
            for name, hosts in CORNERS.items()
        ],
        "slurm": {
            "controllers": ["ctl"],
            "partitions": [{"name": "all", "pools": list(CORNERS), "default": True}],
        },
    }


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    """``ansible-inventory --list`` of the rendered corner estate: group -> hosts."""
    folder = tmp_path_factory.mktemp("corners")
    blueprint = folder / "corners.yaml"
    blueprint.write_text(yaml.safe_dump(_blueprint(), sort_keys=False))
    out = folder / "out"
    assert run_cli("render", blueprint, "-o", out).returncode == 0
    result = subprocess.run(
        ["ansible-inventory", "-i", "inventory.yml", "--list"],
        cwd=out / "ansible",
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    listed = json.loads(result.stdout)
    return {group: node.get("hosts", []) for group, node in listed.items() if group != "_meta"}


@pytest.mark.parametrize("pool", list(CORNERS))
def test_every_host_of_the_pool_is_in_its_group_exactly_once(
    inventory: dict[str, list[str]], pool: str
) -> None:
    hosts = inventory[group_name("pool", pool)]
    assert len(hosts) == len(set(hosts))
    assert sorted(hosts) == sorted(hostlist.expand(CORNERS[pool]))


def test_the_inventory_holds_exactly_the_blueprint_hosts(inventory: dict[str, list[str]]) -> None:
    everything = [host for hosts in inventory.values() for host in hosts]
    expected = {host for hosts in CORNERS.values() for host in hostlist.expand(hosts)} | {"ctl"}
    assert len(everything) == len(expected)
    assert set(everything) == expected


def test_the_graph_shows_the_padded_range_that_gains_a_digit(tmp_path: Path) -> None:
    blueprint = tmp_path / "pad.yaml"
    data = _blueprint()
    data["node_pools"] = data["node_pools"][:1]  # type: ignore[index]
    data["slurm"]["partitions"][0]["pools"] = ["pad"]  # type: ignore[index]
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False))
    assert run_cli("render", blueprint, "-o", tmp_path / "out").returncode == 0
    result = subprocess.run(
        ["ansible-inventory", "-i", "inventory.yml", "--graph", "pool_pad"],
        cwd=tmp_path / "out" / "ansible",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    shown = [line.split("--", 1)[1] for line in result.stdout.splitlines() if "--gpu-" in line]
    assert sorted(shown) == sorted(f"gpu-{n:02d}" for n in range(1, 101))
