"""GPU shards on a Slurm pool, on a real slurmctld and slurmd: a site's shard GRES imported,
the blueprint rendered, and the daemons reading the render.

Slurm's gres/shard (doc/html/gres.shtml "Sharding"; src/plugins/gres/shard/gres_shard.c at
slurm-22-05-8-1 and slurm-24-11-0-1): slurm.conf gives each node's count
(``Gres=...,shard:N``, GresTypes shard), gres.conf ``Name=shard`` lines that slurmd spreads
over the GPUs as it spreads MPS (one Count, or one line a GPU's File), and a job asking
``--gres=shard:K`` gets K shards of one GPU. The site here gives each of two GPUs four
shards, one line per GPU file; import keeps ``gpus.sharing.shard: 4`` and the render writes
one ``Count=8`` line, which slurmd spreads the same way. Passes on Debian's 22.05 and, with
``scripts/slurm-release.sh 24.11 -- python -m pytest tests/test_slurm_shard.py``, on 24.11.
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
    """A site sharding two GPUs as gres.conf(5) File shows it: one shard line a GPU file."""
    return gpu_node_site(
        folder,
        "gpu,shard",
        "gpu:l4:2,shard:8",
        f"NodeName={GPU_NODE} Name=gpu Type=l4 File=/dev/nvidia[0-1]\n"
        f"NodeName={GPU_NODE} Name=shard Count=4 File=/dev/nvidia0\n"
        f"NodeName={GPU_NODE} Name=shard Count=4 File=/dev/nvidia1\n",
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("shard")
    data = imported_blueprint(work, *site_files(work))
    assert data["node_pools"][0]["gpus"]["sharing"] == {"shard": 4}
    with running_one_gpu_node(work, data, gpu_files=2) as cluster:
        yield cluster


def test_the_render_writes_one_shard_line_with_the_nodes_count(lab: SlurmLab) -> None:
    lines = [x for x in (lab.etc / "gres.conf").read_text().splitlines() if "Name=shard" in x]
    assert lines == [f"NodeName={GPU_NODE} Name=shard Count=8"]


def test_slurmd_registers_the_shards(lab: SlurmLab) -> None:
    node = lab.run("scontrol", "show", "node", GPU_NODE)
    # slurmd gives the shard GRES its GPUs' type, as it does mps
    assert re.search(r"Gres=\S*\bshard:(l4:)?8\b", node), node
    assert "State=IDLE" in node


def test_a_job_asking_shards_runs_on_one_gpu(lab: SlurmLab) -> None:
    out = lab.run(
        "srun",
        "-w",
        GPU_NODE,
        "--gres=shard:2",
        "-t",
        "1",
        "sh",
        "-c",
        "echo ${CUDA_VISIBLE_DEVICES:-none}",
    )
    assert out.strip() in ("0", "1"), out
