"""Elastic cloud nodes on the installed slurmctld: a job in the cloud partition makes slurmctld
run the rendered ResumeProgram with the nodes it chose, which creates them with the cloud's
CLI; idle nodes are deleted again after SuspendTime.

slurmctld runs on localhost (tests/slurmlab.py) with the lab's configuration folder
bind-mounted over /etc/slurm, where the controller role installs the programs. ``gcloud`` is
a recording stub in a folder bind-mounted over /usr/local/bin, which the programs search
before /usr/bin: it writes each call to a log, and an ``instances create`` starts slurmd under
each node name (the instance booting), an ``instances delete`` stops it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmlab import (
    SlurmLab,
    have_slurm,
    installed_slurm_at_least,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    render_blueprint,
    set_keys,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

NODES = ["burst-1", "burst-2"]
INSTANCE_TYPE = "g2-standard-4"
IMAGE = "projects/aurora-hpc/global/images/slurm-l4-v3"
SUSPEND_TIME = 10


def elastic_blueprint() -> str:
    return textwrap.dedent(
        f"""\
        estate: cloudlab
        versions: {{slurm: "{installed_slurm_version()}"}}
        node_pools:
          - name: burst
            scheduler: slurm
            provider: gke
            instance_type: {INSTANCE_TYPE}
            hosts: burst-[1-2]
            nodes: {{min: 0, max: 2}}
            cpu: {machine_cpu()}
            memory_gb: 2
            gpus: {{model: l4-24gb, count: 1}}
            cloud: {{image: {IMAGE}, zone: us-central1-a, project: aurora-hpc}}
        slurm:
          packages: {{source: {installed_slurm_source()}}}
          controllers: [lab-ctl]
          power_saving: {{suspend_time: {SUSPEND_TIME}, resume_timeout: 60, suspend_timeout: 10}}
          partitions:
            - {{name: cloud, pools: [burst], default: true}}
        """
    )


def gcloud_stub(log: Path, lab: SlurmLab) -> str:
    """A gcloud that records its arguments and boots (starts slurmd) or deletes (stops it).

    The booted slurmd starts in a session of its own, as an instance's slurmd runs apart from
    the ResumeProgram that created it: from 23.02 slurmscriptd runs ResumeProgram, and once it
    exits kills its process group (SchedMD/slurm src/common/run_command.c at slurm-24-11-5-1,
    run_command_waitpid_timeout: "_kill_pg(pid); /* kill children too */"). slurmd leaves that
    group only in its daemon child's setsid() after the first fork (src/common/daemonize.c,
    xdaemon), so a slurmd started in it was at times killed before it had logged a line, the
    node never registered, and slurmctld set it DOWN at ResumeTimeout and requeued the job.
    ``setsid -w`` moves it to a new session before the stub returns, and waits for it there.
    """
    conf = lab.etc / "slurm.conf"
    spool = lab.work / "spool"
    pids = lab.work / "run"
    return textwrap.dedent(
        f"""\
        #!/bin/sh
        echo "$*" >> "{log}"
        case "$1 $2 $3" in
            "compute instances create") action=create ;;
            "compute instances delete") action=delete ;;
            *) exit 0 ;;
        esac
        shift 3
        for name in "$@"; do
            case "$name" in -*) continue ;; esac
            if [ "$action" = create ]; then
                mkdir -p "{spool}/$name"
                # -b: report the boot time as now, as a new instance would
                setsid -w /usr/sbin/slurmd -b -N "$name" -f "{conf}" </dev/null
            else
                kill "$(cat "{pids}/slurmd-$name.pid")"
            fi
        done
        """
    )


@dataclass
class Lab:
    cluster: SlurmLab
    calls: Path

    def gcloud(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def state(self, node: str) -> str:
        return self.cluster.run("sinfo", "-h", "-N", "-n", node, "-o", "%t").strip()

    def programs(self) -> list[str]:
        """Each run of the rendered programs, as they log it: "PROGRAM HOSTLIST"."""
        log = self.cluster.work / "log" / "power_save.log"
        text = log.read_text() if log.exists() else ""
        return [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("20")]

    def power_log(self, action: str) -> list[str]:
        """Hostlists slurmctld handed its programs ("waking" or "suspending nodes ...").

        slurmctld 22.05 runs them itself and logs their pid; from 23.02 slurmscriptd runs them
        (RELEASE_NOTES 23.02: "Run the following scripts in slurmscriptd instead of
        slurmctld: ResumeProgram, ResumeFailProgram, SuspendProgram, ...") and slurmctld logs
        "power_save: waking nodes HOSTLIST" without one.
        """
        log = (self.cluster.work / "log" / "slurmctld.log").read_text()
        pid = "" if installed_slurm_at_least("23.02") else r"pid \d+ "
        return re.findall(rf"power_save: {pid}{action} nodes (\S+)", log)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("cloudlab")
    fake = work / "bin"
    fake.mkdir()
    calls = work / "gcloud.calls"

    def install(cluster: SlurmLab) -> None:
        cluster.binds["/usr/local/bin"] = fake
        cluster.binds["/etc/slurm"] = cluster.etc
        cluster.binds["/var/log/slurm"] = cluster.work / "log"
        # what the slurm_controller role installs under /etc/slurm/power
        shutil.copytree(cluster.rendered / "slurm" / "power", cluster.etc / "power")
        conf = cluster.etc / "slurm.conf"
        text = conf.read_text()
        assert "ResumeProgram=/etc/slurm/power/resume.sh" in text
        # slurmctld logs the hostlist it hands each program only with the Power flag
        conf.write_text(set_keys(text, {"DebugFlags": "Power"}))
        (fake / "gcloud").write_text(gcloud_stub(calls, cluster))
        (fake / "gcloud").chmod(0o755)

    try:
        with SlurmLab.running(
            render_blueprint(work, elastic_blueprint(), "cloudlab"),
            work / "run",
            [*NODES, "lab-ctl"],
            controller="lab-ctl",
            gpu_files=1,
            configure=install,
        ) as cluster:
            yield Lab(cluster, calls)
    finally:
        for pidfile in (work / "run" / "run").glob("slurmd-burst-*.pid"):
            stop_booted_slurmd(pidfile)


def stop_booted_slurmd(pidfile: Path) -> None:
    """Stop a slurmd the stub started (its pid file names it)."""
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.kill(int(pidfile.read_text()), signal.SIGTERM)


def test_cloud_nodes_start_powered_down(lab: Lab) -> None:
    assert [lab.state(node) for node in NODES] == ["idle~", "idle~"]
    config = lab.cluster.run("scontrol", "show", "config")
    assert re.search(rf"SuspendTime\s+= {SUSPEND_TIME} sec", config)
    # a cloud node's address is the one it registers from: cloud_reg_addrs before 23.11, and
    # always since, where slurmctld logs the option as defunct
    assert ("cloud_reg_addrs" in config) == (not installed_slurm_at_least("23.11"))
    controller_log = "\n".join(
        path.read_text(errors="replace") for path in (lab.cluster.work / "log").glob("*ctld*")
    )
    assert "defunct" not in controller_log


def test_a_job_creates_the_nodes_slurm_chose_and_idle_ones_are_deleted(lab: Lab) -> None:
    job = lab.cluster.run(
        "sbatch",
        "--parsable",
        "-p",
        "cloud",
        "-N",
        "1",
        "--gres=gpu:l4-24gb:1",
        "-t",
        "1",
        "-o",
        "/dev/null",
        "--wrap",
        "hostname",
    ).strip()
    lab.cluster.wait_for(lambda: lab.power_log("waking"), "slurmctld running ResumeProgram")
    chosen = re.search(r"\bNodeList=(\S+)", lab.cluster.run("scontrol", "show", "job", job))
    assert chosen and chosen[1] in NODES
    # ResumeProgram got exactly the hostlist Slurm chose for the job ...
    assert lab.power_log("waking") == [chosen[1]]
    assert lab.programs() == [f"/etc/slurm/power/resume.sh {chosen[1]}"]
    # ... and created that instance with the pool's machine type and pinned image
    lab.cluster.wait_for(lambda: lab.gcloud(), "a gcloud call")
    assert lab.gcloud() == [
        f"compute instances create {chosen[1]} --project=aurora-hpc --zone=us-central1-a "
        f"--machine-type={INSTANCE_TYPE} --image={IMAGE} --maintenance-policy=TERMINATE "
        "--labels=estategen-estate=cloudlab,estategen-pool=burst --quiet"
    ]
    # the instance booted: its slurmd runs (and registers, within ResumeTimeout) ...
    pidfile = lab.cluster.work / "run" / f"slurmd-{chosen[1]}.pid"
    lab.cluster.wait_for(pidfile.exists, "the slurmd of the created instance")
    # ... and the job ran on it
    lab.cluster.wait_for(
        lambda: "JobState=COMPLETED" in lab.cluster.run("scontrol", "show", "job", job),
        "the job completed on the created node",
        timeout=90,
    )
    # idle for SuspendTime, the node is deleted and powered down again
    lab.cluster.wait_for(lambda: lab.power_log("suspending"), "SuspendProgram", timeout=90)
    assert lab.power_log("suspending") == [chosen[1]]
    lab.cluster.wait_for(lambda: len(lab.programs()) == 2, "SuspendProgram's log line")
    assert lab.programs()[1] == f"/etc/slurm/power/suspend.sh {chosen[1]}"
    lab.cluster.wait_for(lambda: len(lab.gcloud()) == 2, "the delete call")
    assert lab.gcloud()[1] == (
        f"compute instances delete {chosen[1]} --project=aurora-hpc --zone=us-central1-a --quiet"
    )
    lab.cluster.wait_for(lambda: lab.state(chosen[1]) == "idle~", "the node powered down")
