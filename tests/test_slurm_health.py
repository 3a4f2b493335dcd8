"""Node health checks on the installed Slurm daemons: the rendered program drains a node whose
hardware no longer matches the blueprint, with a reason naming the check.

slurmctld and slurmd run on localhost (tests/slurmlab.py). This machine has no GPU: a fake
``nvidia-smi`` answers from a file the test writes, in a folder bind-mounted over
/usr/local/bin in the daemons' mount namespace (the program searches it before /usr/bin, as
the real nvidia-smi lives in /usr/bin), and the lab's configuration folder over /etc/slurm.
slurmd runs the rendered program as it is, from /etc/slurm/healthcheck.sh, every few seconds.
"""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmlab import (
    SlurmLab,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    render_blueprint,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

NODE = "lab-node-01"
INTERVAL = 5
# what nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits prints for an L4
L4_MIB = "23034"


def health_blueprint() -> str:
    return textwrap.dedent(
        f"""\
        estate: healthlab
        versions: {{slurm: "{installed_slurm_version()}"}}
        node_pools:
          - name: gpu
            scheduler: slurm
            hosts: {NODE}
            cpu: {machine_cpu()}
            memory_gb: 2
            gpus: {{model: l4-24gb, count: 2}}
            health_check: {{checks: [gpus, memory]}}
        slurm:
          packages: {{source: {installed_slurm_source()}}}
          controllers: [lab-ctl]
          health_check: {{interval: {INTERVAL}, node_state: [any]}}
          partitions:
            - {{name: gpu, pools: [gpu], default: true}}
        """
    )


def report_gpus(gpus: Path, count: int) -> None:
    """What the fake nvidia-smi prints: ``count`` L4 GPUs."""
    gpus.write_text("".join(f"{L4_MIB}\n" for _ in range(count)))


class Lab:
    def __init__(self, cluster: SlurmLab, gpus: Path) -> None:
        self.cluster = cluster
        self.gpus = gpus

    def report_gpus(self, count: int) -> None:
        report_gpus(self.gpus, count)

    def reason(self) -> str:
        """The node's drain reason as `sinfo -R` lists it ('' when not drained)."""
        out = self.cluster.run("sinfo", "-R", "-h", "-n", NODE, "-o", "%n|%E")
        return next((r.split("|", 1)[1] for r in out.splitlines() if r.startswith(NODE)), "")

    def state(self) -> str:
        return self.cluster.node_state(NODE)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("healthlab")
    fake = work / "bin"
    fake.mkdir()
    gpus = work / "gpus"
    (fake / "nvidia-smi").write_text(f'#!/bin/sh\nexec cat "{gpus}"\n')
    (fake / "nvidia-smi").chmod(0o755)

    def install(cluster: SlurmLab) -> None:
        cluster.binds["/usr/local/bin"] = fake
        # slurmd gives the program no SLURM_CONF: scontrol reads /etc/slurm/slurm.conf, as on
        # a node the roles built
        cluster.binds["/etc/slurm"] = cluster.etc
        # what the slurm_compute role installs at /etc/slurm/healthcheck.sh on pool gpu
        program = cluster.etc / "healthcheck.sh"
        shutil.copy(cluster.rendered / "slurm" / "healthcheck" / "gpu.sh", program)
        program.chmod(0o755)
        assert "HealthCheckProgram=/etc/slurm/healthcheck.sh" in cluster.slurm_conf()

    report_gpus(gpus, 2)
    with SlurmLab.running(
        render_blueprint(work, health_blueprint(), "healthlab"),
        work / "run",
        [NODE, "lab-ctl"],
        controller="lab-ctl",
        nodes=[NODE],
        gpu_files=2,
        configure=install,
    ) as cluster:
        lab = Lab(cluster, gpus)
        cluster.wait_for(lambda: lab.state() == "idle", "idle node")
        yield lab


def wait(condition: object, what: str, lab: Lab, timeout: float = 8 * INTERVAL) -> None:
    lab.cluster.wait_for(condition, what, timeout=timeout)


def test_slurm_conf_runs_the_program_at_the_blueprint_interval(lab: Lab) -> None:
    config = lab.cluster.run("scontrol", "show", "config")
    assert f"HealthCheckInterval     = {INTERVAL} sec" in config
    assert "HealthCheckNodeState    = ANY" in config


def test_a_missing_gpu_drains_the_node_and_resume_sticks_once_restored(lab: Lab) -> None:
    reason = "healthcheck gpus: 1 of 2 l4-24gb GPUs found"
    lab.report_gpus(1)
    wait(lambda: lab.reason() == reason, "the node drained by the GPU check", lab)
    assert lab.state() in ("drain", "drng")

    # resumed while the GPU is still missing, the next check drains it again
    lab.cluster.run("scontrol", "update", f"NodeName={NODE}", "State=RESUME")
    wait(lambda: lab.reason() == reason, "the node drained again", lab)

    lab.report_gpus(2)
    lab.cluster.run("scontrol", "update", f"NodeName={NODE}", "State=RESUME")
    wait(lambda: lab.state() == "idle", "the resumed node idle", lab)
    time.sleep(3 * INTERVAL)  # three more checks pass
    assert (lab.state(), lab.reason()) == ("idle", "")
    out = lab.cluster.run("srun", "-w", NODE, "-t", "1", "--gres=gpu:l4-24gb:2", "echo", "ok")
    assert out.strip() == "ok"


def test_every_node_state_the_schema_allows_is_one_slurmctld_reads(tmp_path: Path) -> None:
    states = health_blueprint().replace(
        "node_state: [any]", "node_state: [idle, alloc, mixed, cycle]"
    )
    out = render_blueprint(tmp_path, states, "states")
    with SlurmLab.running(
        out, tmp_path / "run", [NODE, "lab-ctl"], controller="lab-ctl", gpu_files=2
    ) as cluster:
        config = cluster.run("scontrol", "show", "config")
    assert "HealthCheckNodeState    = CYCLE,IDLE,ALLOC,MIXED" in config
