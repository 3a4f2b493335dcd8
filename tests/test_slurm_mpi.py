"""An MPI program across two real slurmd, launched by srun with the blueprint's MPI plugin.

A two-node estate with `slurm.mpi.default: pmix` runs munged, slurmctld and two slurmd on
this machine, each under its own NodeName (its own UTS namespace) and port. Debian's Open MPI
compiles a hello program that reduces over all ranks; `srun -N 2 -n 4` starts it through
Slurm's mpi/pmix plugin and every rank must report from its node.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmlab import (
    SBIN,
    SlurmLab,
    free_port,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    render_blueprint,
    set_keys,
)

PLUGINS = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
    pytest.mark.skipif(not shutil.which("mpicc"), reason="needs openmpi-bin and libopenmpi-dev"),
    pytest.mark.skipif(
        not Path("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2").exists(),
        reason="needs libpmix2",
    ),
]

NODES = ("mpi-node-01", "mpi-node-02")
HELLO = r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, sum = 0;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    /* every rank talks to every other: the sum of all ranks reaches each of them */
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"""


def blueprint() -> str:
    return textwrap.dedent(
        f"""\
        estate: mpilab
        versions: {{slurm: "{installed_slurm_version()}"}}
        node_pools:
          - name: cpu
            scheduler: slurm
            hosts: mpi-node-[01-02]
            cpu: {machine_cpu()}
            memory_gb: 4
        slurm:
          packages: {{source: {installed_slurm_source()}}}
          controllers: [mpi-ctl]
          mpi: {{default: pmix}}
          partitions:
            - {{name: batch, pools: [cpu], default: true, max_time: "10:00"}}
        """
    )


def two_slurmd_on_one_machine(lab: SlurmLab) -> dict[str, int]:
    """Give each node its own slurmd port, and keep jobs out of cgroups.

    Both slurmd run on this machine: each needs its own port (slurm.conf's per-node Port), and
    with cgroup v1 both would put the steps of one job into the same cgroup folder, so
    processes are tracked by parent id here. The rendered MPI settings are kept as they are.
    """
    ports = {node: free_port() for node in NODES}
    path = lab.etc / "slurm.conf"
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("NodeName="):
            attributes = line.split(" ", 1)[1]
            lines += [f"NodeName={node} Port={ports[node]} {attributes}" for node in NODES]
        else:
            lines.append(line)
    conf = set_keys(
        "\n".join(lines),
        {
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/affinity",
            "JobAcctGatherType": "jobacct_gather/linux",
        },
        drop=["PrologFlags"],  # Contain needs proctrack/cgroup
    )
    path.write_text(conf)
    (lab.etc / "cgroup.conf").unlink()
    return ports


def start_slurmd_with_its_own_tmp(lab: SlurmLab, node: str) -> None:
    """slurmd as the lab starts it, with a folder of its own at the job's TMPDIR.

    The PMIx plugin puts each step's client folder under PMIxCliTmpDirBase; two nodes must not
    share it, as two machines would not. Each slurmd runs in its own mount namespace, where its
    folder is bind-mounted over the shared path.
    """
    (lab.work / "spool" / node).mkdir(exist_ok=True)
    own = lab.work / f"tmp-{node}"
    own.mkdir()
    conf = str(lab.etc / "slurm.conf")
    bind = f'mount --bind "{own}" "{lab.work.parent / "tmp"}" && exec "$0" -D -f "$1"'
    lab.start(f"slurmd-{node}", node, "sh", "-c", bind, str(SBIN / "slurmd"), conf)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("mpilab")

    def install(cluster: SlurmLab) -> None:
        two_slurmd_on_one_machine(cluster)
        # the PMIx plugin's per-step client folders: under a path each slurmd sees its own
        # folder at (the default, /tmp, is one folder for both "nodes" on this machine)
        (work / "tmp").mkdir()
        (cluster.etc / "mpi.conf").write_text(f"PMIxCliTmpDirBase={work / 'tmp'}\n")

    with SlurmLab.running(
        render_blueprint(work, blueprint(), "mpilab"),
        work / "run",
        [*NODES, "mpi-ctl"],
        controller="mpi-ctl",
        configure=install,
    ) as cluster:
        for node in NODES:
            start_slurmd_with_its_own_tmp(cluster, node)
        cluster.wait_for(
            lambda: cluster.run("sinfo", "-h", "-o", "%D %t").split() == ["2", "idle"],
            "two idle nodes",
        )
        yield cluster


def test_the_rendered_mpi_default_is_what_slurmctld_runs(lab: SlurmLab) -> None:
    config = lab.run("scontrol", "show", "config")
    assert re.search(r"^MpiDefault\s+= pmix$", config, re.M), config


def test_an_mpi_program_runs_across_two_slurmd_and_every_rank_reports(lab: SlurmLab) -> None:
    source = lab.work / "hello.c"
    source.write_text(HELLO)
    program = lab.work / "hello"
    lab.run("mpicc", "-o", str(program), str(source))
    # ranks on the two "nodes" reach each other over loopback (Open MPI skips it by default)
    lab.env["OMPI_MCA_btl_tcp_if_include"] = "lo"
    out = lab.run("srun", "--mpi=pmix", "-N", "2", "-n", "4", "-t", "2", str(program), timeout=120)
    ranks = sorted(re.findall(r"^rank (\d) of (\d) on (\S+) sum (\d+)$", out, re.M))
    assert [r[0] for r in ranks] == ["0", "1", "2", "3"], out
    assert {r[1] for r in ranks} == {"4"} and {r[3] for r in ranks} == {"6"}, out
    assert {r[2] for r in ranks} == set(NODES), out


def test_srun_uses_the_default_without_being_told(lab: SlurmLab) -> None:
    out = lab.run("srun", "-N", "2", "-n", "2", "-t", "1", "sh", "-c", "echo ${PMIX_RANK:-none}")
    assert sorted(out.split()) == ["0", "1"], out
