"""A node of two GPU types, imported, rendered and read back from a real slurmd.

slurm.conf(5) Gres lists a node's GRES of several types (``gpu:p100:2,gpu:v100:2``), and
gres.conf(5) gives each Type its own line of device files; a job asking ``--gres=gpu:TYPE:N``
gets GPUs of that type only. The site is imported to ``gpus`` and ``gpus.other_types``, the
render writes one gres.conf line a type, and the slurmd that reads them registers both types
and gives a job the device files of the type it asked for.
"""

from __future__ import annotations

from collections.abc import Iterator

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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("gputypes")
    site = gpu_node_site(
        work,
        "gpu",
        "gpu:p100:2,gpu:v100:2",
        f"NodeName={GPU_NODE} Name=gpu Type=p100 File=/dev/nvidia[0-1]\n"
        f"NodeName={GPU_NODE} Name=gpu Type=v100 File=/dev/nvidia[2-3]\n",
    )
    data = imported_blueprint(work, *site)
    gpus = data["node_pools"][0]["gpus"]
    assert (gpus["model"], gpus["count"], gpus["other_types"]) == (
        "p100",
        2,
        [{"model": "v100", "count": 2}],
    )
    with running_one_gpu_node(work, data, gpu_files=4) as cluster:
        yield cluster


def _visible_devices(lab: SlurmLab, gres: str) -> str:
    job = ["srun", "-w", GPU_NODE, f"--gres={gres}", "-t", "1"]
    return lab.run(*job, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES").strip()


def test_slurmd_registers_both_gpu_types(lab: SlurmLab) -> None:
    node = lab.run("scontrol", "show", "node", GPU_NODE)
    assert "Gres=gpu:p100:2,gpu:v100:2" in node
    assert "State=IDLE" in node


def test_a_job_gets_the_gpus_of_the_type_it_asks_for(lab: SlurmLab) -> None:
    # the v100 are the node's third and fourth device files, the p100 its first two
    assert _visible_devices(lab, "gpu:v100:2") == "2,3"
    assert _visible_devices(lab, "gpu:p100:2") == "0,1"


def test_a_job_asking_for_more_of_a_type_than_a_node_has_is_refused(lab: SlurmLab) -> None:
    out = lab.run("srun", "-w", GPU_NODE, "--gres=gpu:v100:3", "-t", "1", "true", check=False)
    assert "Requested node configuration is not available" in out
