"""CUDA MPS on a Slurm pool, on a real slurmctld and slurmd: a site's MPS GRES imported, the
blueprint rendered, and the daemons reading the render.

Slurm's gres/mps (doc/html/gres.shtml "MPS Management", src/plugins/gres/mps/gres_mps.c at
slurm-22-05-8-1 and slurm-24-11-0-1): slurm.conf gives each node's count (``Gres=...,mps:N``,
GresTypes mps), gres.conf a ``Name=mps`` line whose Count slurmd spreads over the GPUs it
names, and a step asking ``--gres=mps:K`` gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = K x 100 /
the count of its GPU. The site here runs two GPUs with 100 shares each, the common form.
Passes on Debian's 22.05 and, with ``scripts/slurm-release.sh 24.11 -- python -m pytest
tests/test_slurm_mps.py``, on 24.11.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmlab import (
    GPU_NODE,
    SlurmLab,
    gpu_node_site,
    have_slurm,
    imported_blueprint,
    running_one_gpu_node,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]


def site_files(folder: Path) -> tuple[Path, Path]:
    """A site running MPS as gres.shtml shows it: 100 gres/mps a GPU, Count with no File."""
    return gpu_node_site(
        folder,
        "gpu,mps",
        "gpu:l4:2,mps:200",
        f"NodeName={GPU_NODE} Name=gpu Type=l4 File=/dev/nvidia[0-1]\n"
        f"NodeName={GPU_NODE} Name=mps Count=200\n",
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("mps")
    data = imported_blueprint(work, *site_files(work))
    assert data["node_pools"][0]["gpus"]["sharing"] == {"mps": 100}
    with running_one_gpu_node(work, data, gpu_files=2) as cluster:
        yield cluster


def test_the_render_names_mps_on_the_gpus_files(lab: SlurmLab) -> None:
    (line,) = [x for x in (lab.etc / "gres.conf").read_text().splitlines() if "Name=mps" in x]
    assert "Count=200" in line
    files = re.search(r"File=(\S+)", line)
    assert files is not None and files[1].endswith("/dev/nvidia[0-1]")


def test_slurmd_registers_the_mps_shares(lab: SlurmLab) -> None:
    node = lab.run("scontrol", "show", "node", GPU_NODE)
    # slurmd gives the mps GRES its GPUs' type (gres.shtml: "Type ... copied from the gres/gpu")
    assert re.search(r"Gres=\S*\bmps:(l4:)?200\b", node), node
    assert "State=IDLE" in node


@pytest.mark.parametrize("shares", [50, 25])
def test_a_job_asking_mps_gets_its_percentage_of_one_gpu(lab: SlurmLab, shares: int) -> None:
    out = lab.run(
        "srun",
        "-w",
        GPU_NODE,
        f"--gres=mps:{shares}",
        "-t",
        "1",
        "sh",
        "-c",
        "echo $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    )
    assert out.strip() == str(shares)  # 100 shares a GPU: K shares are K percent
