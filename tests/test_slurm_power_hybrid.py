"""A hybrid estate on the installed slurmctld: an on-prem pool beside a cloud pool stays out of
power saving (SuspendExcNodes, as `scontrol show config` shows it), so slurmctld never hands
its nodes to SuspendProgram. slurmctld runs on localhost (tests/slurmlab.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_slurm_elastic import elastic_blueprint
from test_slurm_engine import machine_shape

from estategen import hostlist

from conftest import run_cli
from slurmlab import SlurmLab, have_slurm

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]


def hybrid_blueprint() -> str:
    """The elastic lab's blueprint with an on-prem pool in the same partition."""
    shape = machine_shape()
    on_prem = textwrap.indent(
        textwrap.dedent(
            f"""\
            - name: rack
              scheduler: slurm
              hosts: rack-[1-2]
              cpu: {{sockets: {shape["sockets"]}, cores_per_socket: {shape["cores_per_socket"]},
                     threads_per_core: {shape["threads_per_core"]}}}
              memory_gb: 2
            """
        ),
        "  ",
    )
    text = elastic_blueprint().replace("node_pools:\n", "node_pools:\n" + on_prem, 1)
    return text.replace("pools: [burst], default: true", "pools: [rack, burst], default: true")


def test_slurmctld_keeps_the_on_prem_nodes_out_of_power_saving(tmp_path: Path) -> None:
    blueprint = tmp_path / "hybrid.yaml"
    blueprint.write_text(hybrid_blueprint())
    result = run_cli("render", blueprint, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    cluster = SlurmLab(
        tmp_path / "out", tmp_path / "run", ["rack-1", "rack-2", "burst-1", "lab-ctl"]
    )
    cluster.binds["/etc/slurm"] = cluster.etc
    cluster.binds["/var/log/slurm"] = cluster.work / "log"
    try:
        cluster.install_configs(gpu_files=1)
        cluster.start_munge()
        cluster.start_slurmctld("lab-ctl")
        config = cluster.run("scontrol", "show", "config")
    finally:
        cluster.stop()
    (line,) = [x for x in config.splitlines() if x.startswith("SuspendExcNodes")]
    value = line.split("=", 1)[1].strip()  # "(null)" when no node is excluded
    items = [] if value == "(null)" else value.split(",")
    excluded = {h for item in items for h in hostlist.expand(item)}
    assert {"rack-1", "rack-2"} <= excluded
    assert not {"burst-1", "burst-2"} & excluded
