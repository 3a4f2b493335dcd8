"""Nodes that differ only in their Weight are one pool: node_pools[].host_weights keeps each
host's Weight in the order `hosts` names them, and slurm.conf gets one NodeName line per
weight, so slurmctld gives every node the Weight the site gave it.

slurmctld takes a node's Weight from the NodeName line that names it (``_build_single_
nodeline_info`` in src/common/node_conf.c, slurm-22-05-8-1 and slurm-24-11-5-1), and nodes of
one shape on several lines are one set of nodes to it: the lines change nothing but Weight.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_slurm_site import errors, files

from estategen import hostlist
from estategen.importer.site import import_site
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.render import render

from slurmlab import SlurmLab, have_slurm, installed_slurm_version, parse_records, render_blueprint

# a site's 33 nodes of one shape, each with a Weight of its own, not in host order
WEIGHTS = {f"w{i:02d}": 1000 - 7 * ((i * 5) % 33) for i in range(1, 34)}
SITE = (
    "ClusterName=weights\nSlurmctldHost=wctl\n"
    + "".join(f"NodeName={host} CPUs=4 RealMemory=8000 Weight={w}\n" for host, w in WEIGHTS.items())
    + "PartitionName=p Nodes=w[01-33] Default=YES\n"
)


def imported(tmp_path: Path, text: str = SITE, version: str | None = None) -> Any:
    source = tmp_path / "slurm.conf"
    source.write_text(text)
    return import_site(source, slurm_version=version)


def node_weights(conf: str) -> dict[str, int]:
    """Each node's Weight by the NodeName lines of a slurm.conf."""
    out: dict[str, int] = {}
    for line in conf.splitlines():
        if line.startswith("NodeName="):
            fields = dict(field.split("=", 1) for field in line.split())
            for host in hostlist.expand(fields["NodeName"]):
                out[host] = int(fields.get("Weight", "1"))
    return out


def test_nodes_that_differ_only_in_weight_are_one_pool_keeping_each_hosts_weight(
    tmp_path: Path,
) -> None:
    result = imported(tmp_path)
    (pool,) = yaml.safe_load(result.text)["node_pools"]
    assert pool["hosts"] == "w[01-33]"
    assert "weight" not in pool
    assert pool["host_weights"] == [WEIGHTS[h] for h in hostlist.expand("w[01-33]")]
    assert result.faithful
    assert len(result.text.splitlines()) < 120


def test_the_render_gives_each_node_the_sites_weight(tmp_path: Path) -> None:
    result = imported(tmp_path)
    estate = validate_document(parse_blueprint(result.text.encode(), "w.yaml")).estate
    conf = render(estate)["slurm/slurm.conf"].content.decode()
    assert node_weights(conf) == WEIGHTS


def test_nodes_of_one_weight_stay_one_pool_with_weight(tmp_path: Path) -> None:
    text = SITE.replace(
        "NodeName=w02 CPUs=4 RealMemory=8000 Weight", "NodeName=w02 CPUs=8 RealMemory=8000 Weight"
    )
    pools = yaml.safe_load(imported(tmp_path, text).text)["node_pools"]
    alone = next(p for p in pools if p["hosts"] == "w02")
    assert alone["weight"] == WEIGHTS["w02"] and "host_weights" not in alone


def test_host_weights_render_one_nodename_line_per_weight_with_its_hosts() -> None:
    fragment = """
    node_pools:
      - {name: cpu, scheduler: slurm, hosts: "c[1-5]", cpu: {sockets: 1, cores_per_socket: 4},
         memory_gb: 8, host_weights: [20, 10, 20, 30, 10]}
    slurm: {partitions: [{name: gpu, pools: [cpu], default: true}]}
    """
    conf = files(fragment)["slurm/slurm.conf"]
    lines = [line for line in conf.splitlines() if line.startswith("NodeName=")]
    assert [line.split()[0] for line in lines] == [
        "NodeName=c[1,3]",
        "NodeName=c[2,5]",
        "NodeName=c4",
    ]
    assert node_weights(conf) == {"c1": 20, "c2": 10, "c3": 20, "c4": 30, "c5": 10}


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        ("host_weights: [1, 2]", "2 weights for 3 hosts: give one weight per host"),
        ("host_weights: [1, 2, 3], weight: 5", "give weight (one for every host) or host_weights"),
        ("host_weights: [1, 0, 3]", "0 is below the minimum of 1"),
    ],
)
def test_host_weights_that_do_not_fit_the_hosts_are_refused(pool: str, message: str) -> None:
    fragment = f"""
    node_pools:
      - {{name: cpu, scheduler: slurm, hosts: "c[1-3]", cpu: {{sockets: 1, cores_per_socket: 4}},
         memory_gb: 8, {pool}}}
    slurm: {{partitions: [{{name: gpu, pools: [cpu], default: true}}]}}
    """
    found = [f for f in errors(fragment) if f.path.startswith("node_pools[0].host_weights")]
    assert found and message in found[0].message, [f.format() for f in errors(fragment)]


# --- a real slurmctld ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def weights_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    if not have_slurm():
        pytest.skip("needs slurm-wlm, munge and unshare")
    work = tmp_path_factory.mktemp("weights")
    result = imported(work, version=installed_slurm_version())
    out = render_blueprint(work, result.text, "weights")
    with SlurmLab.running(out, work / "run", [*WEIGHTS, "wctl"], controller="wctl") as lab:
        yield lab


@pytest.mark.slow
def test_a_real_slurmctld_gives_each_node_the_sites_weight(weights_lab: SlurmLab) -> None:
    """The site's 33 weights, imported into one pool and rendered: `scontrol show node`
    shows each node with the Weight the site's slurm.conf gave it."""
    shown = parse_records(weights_lab.run("scontrol", "-o", "show", "node"))
    assert {n["NodeName"]: int(n["Weight"]) for n in shown} == WEIGHTS
