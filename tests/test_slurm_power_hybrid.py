"""A hybrid estate on the installed slurmctld: an on-prem pool beside a cloud pool stays out of
power saving (SuspendExcNodes, as `scontrol show config` shows it), so slurmctld never hands
its nodes to SuspendProgram. slurmctld runs on localhost (tests/slurmlab.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_slurm_elastic import elastic_blueprint

from estategen import hostlist

from slurmlab import SlurmLab, have_slurm, machine_cpu, render_blueprint

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]


def hybrid_blueprint() -> str:
    """The elastic lab's blueprint with an on-prem pool in the same partition."""
    on_prem = textwrap.indent(
        textwrap.dedent(
            f"""\
            - name: rack
              scheduler: slurm
              hosts: rack-[1-2]
              cpu: {machine_cpu()}
              memory_gb: 2
            """
        ),
        "  ",
    )
    text = elastic_blueprint().replace("node_pools:\n", "node_pools:\n" + on_prem, 1)
    return text.replace("pools: [burst], default: true", "pools: [rack, burst], default: true")


def test_slurmctld_keeps_the_on_prem_nodes_out_of_power_saving(tmp_path: Path) -> None:
    def install(cluster: SlurmLab) -> None:
        cluster.binds["/etc/slurm"] = cluster.etc
        cluster.binds["/var/log/slurm"] = cluster.work / "log"

    with SlurmLab.running(
        render_blueprint(tmp_path, hybrid_blueprint(), "hybrid"),
        tmp_path / "run",
        ["rack-1", "rack-2", "burst-1", "lab-ctl"],
        controller="lab-ctl",
        gpu_files=1,
        configure=install,
    ) as cluster:
        config = cluster.run("scontrol", "show", "config")
    (line,) = [x for x in config.splitlines() if x.startswith("SuspendExcNodes")]
    value = line.split("=", 1)[1].strip()  # "(null)" when no node is excluded
    items = [] if value == "(null)" else value.split(",")
    excluded = {h for item in items for h in hostlist.expand(item)}
    assert {"rack-1", "rack-2"} <= excluded
    assert not {"burst-1", "burst-2"} & excluded
