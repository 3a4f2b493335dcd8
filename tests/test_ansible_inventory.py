"""Every host a blueprint names reaches Ansible: the rendered inventory.yml, read by the real
``ansible-inventory``, holds each pool's hosts exactly once, whatever the hostlist shape."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from estategen import hostlist
from estategen.kubernetes_facts import GPU_DEPLOY_LABELS, SWITCH_LABEL
from estategen.renderers.ansible import group_name

from conftest import BLUEPRINTS, run_cli

sys.path.insert(0, str(BLUEPRINTS))  # large.py: the benchmark estate's shape, scaled down

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


# --- what each host carries: the inventory stays small as the estate grows -----------------------


def _hostvars(tmp_path: Path, name: str, **shape: int) -> tuple[dict[str, dict], Path]:
    """``ansible-inventory --list``'s variables of every host of blueprints/large.py's shape."""
    import large  # type: ignore[import-not-found]

    blueprint = tmp_path / f"{name}.yaml"
    blueprint.write_text(large.blueprint(slurm_pools=2, k8s_pools=5, **shape))
    out = tmp_path / name
    assert run_cli("render", blueprint, "-o", out).returncode == 0
    result = subprocess.run(
        ["ansible-inventory", "-i", "inventory.yml", "--list"],
        cwd=out / "ansible",
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["_meta"]["hostvars"], out


def test_no_host_carries_the_users_or_teams(tmp_path: Path) -> None:
    hostvars, out = _hostvars(tmp_path, "teams", nodes_per_pool=2, teams=20)
    listed = json.dumps(hostvars)
    assert len(hostvars) == 2 * 2 + 5 * 2 + 4  # pools' hosts, controllers, dbd, database
    for name in ("u00000", "u00199", "team-000", "team-019"):
        assert f'"{name}"' not in listed and f"{name}," not in listed, name
    for path in (out / "ansible" / "group_vars").rglob("*.yml"):
        assert "estate_users" not in path.read_text() and "estate_teams" not in path.read_text()
    assert not (out / "ansible" / "host_vars").exists()


def test_a_host_carries_the_same_variables_at_any_number_of_users_teams_and_hosts(
    tmp_path: Path,
) -> None:
    small, _ = _hostvars(tmp_path, "small", nodes_per_pool=2, teams=10)
    large_, _ = _hostvars(tmp_path, "large", nodes_per_pool=4, teams=100)
    for host, variables in small.items():
        assert large_[host] == variables, host


def test_the_play_of_the_common_role_alone_loads_the_users_and_teams(tmp_path: Path) -> None:
    _, out = _hostvars(tmp_path, "identity", nodes_per_pool=2, teams=10, users_per_team=3)
    ansible = out / "ansible"
    plays = yaml.safe_load((ansible / "site.yml").read_text())
    loaded = {
        entry["role"]: [ansible / path for path in play.get("vars_files", [])]
        for play in plays
        for entry in play["roles"]
    }
    (identity,) = loaded["common"]
    data = yaml.safe_load(identity.read_text())
    assert [t["name"] for t in data["estate_teams"]] == [f"team-{t:03d}" for t in range(10)]
    assert data["estate_users"][4] == {
        "name": "u00004",
        "uid": 100004,
        "group": "team-001",
        "groups": [],
    }
    assert all(not files for role, files in loaded.items() if role != "common")


# --- a host's own labels are its own variables ---------------------------------------------------


def test_a_host_carries_its_own_switch_label_only_whatever_its_pools_size(tmp_path: Path) -> None:
    # two hosts per leaf switch: a Kubernetes pool of 4 hosts has 2 switches, one of 40 has 20
    small, _ = _hostvars(tmp_path, "small", nodes_per_pool=4, teams=10, k8s_hosts_per_switch=2)
    large_, _ = _hostvars(tmp_path, "large", nodes_per_pool=40, teams=10, k8s_hosts_per_switch=2)
    assert large_["k000n001"]["pool_host_labels"] == {SWITCH_LABEL: "k000sw001"}
    assert large_["k004n040"]["pool_host_labels"] == {SWITCH_LABEL: "k004sw020"}
    listed = json.dumps(large_["k000n001"])
    others = [f"k000sw{n:03d}" for n in range(2, 21)] + [f"k000n{n:03d}" for n in range(2, 41)]
    assert [name for name in others if name in listed] == []
    for host, variables in small.items():
        assert large_[host] == variables, host
    sizes = {len(json.dumps(v)) for h, v in large_.items() if h.startswith("k")}
    assert max(sizes) <= max(len(json.dumps(v)) for h, v in small.items() if h.startswith("k"))
    assert all("pool_node_host_labels" not in v for v in large_.values())


def test_the_inventory_gives_kubelet_the_labels_the_node_patches_carry(tmp_path: Path) -> None:
    """kubelet.env.j2 registers pool_node_labels combined with the host's pool_host_labels;
    the Node patches carry the same labels, less the GPU deploy labels left to kubelet."""
    hostvars, out = _hostvars(tmp_path, "agree", nodes_per_pool=6, teams=10, k8s_hosts_per_switch=4)
    patches = {
        node["metadata"]["name"]: node["metadata"]["labels"]
        for path in sorted((out / "kubernetes").glob("*/nodes.yaml"))
        for node in yaml.safe_load_all(path.read_text())
    }
    kubernetes_hosts = {h for h, v in hostvars.items() if v.get("pool_scheduler") == "kubernetes"}
    assert set(patches) == kubernetes_hosts and len(patches) == 5 * 6
    for host, labels in patches.items():
        variables = hostvars[host]
        registered = {**variables["pool_node_labels"], **variables["pool_host_labels"]}
        deploy = set(GPU_DEPLOY_LABELS.values())
        assert {k: v for k, v in registered.items() if k not in deploy} == labels, host
    # 6 hosts over switches of 4: hosts 1-3 on the first, 4-6 on the second (spread evenly)
    assert [patches[f"k002n{n:03d}"][SWITCH_LABEL] for n in range(1, 7)] == ["k002sw001"] * 3 + [
        "k002sw002"
    ] * 3
