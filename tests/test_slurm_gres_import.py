"""A site's own GPU device files, imported, rendered and read back from a real slurmd.

gres.conf(5) File names the device files of a node's GPUs, with a numeric range suffix or
several joined by ','; slurmd counts the files as the node's GPUs and gives a job's cgroup the
files of its GPUs. A node whose GPUs sit at minors 1 and 3 (`File=/dev/nvidia1,/dev/nvidia3`)
is imported to ``gpus.files``; the render names those files, and the slurmd that reads them
registers both GPUs, which a job then gets.
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
    return gpu_node_site(
        folder,
        "gpu",
        "gpu:l4:2",
        f"NodeName={GPU_NODE} Name=gpu Type=l4 File=/dev/nvidia1,/dev/nvidia3\n",
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("gresfiles")
    data = imported_blueprint(work, *site_files(work))
    assert data["node_pools"][0]["gpus"]["files"] == ["/dev/nvidia1", "/dev/nvidia3"]
    # /dev/nvidia0..3 in the lab; gres.conf names 1 and 3 of them
    with running_one_gpu_node(work, data, gpu_files=4) as cluster:
        yield cluster


def test_the_rendered_gres_conf_names_the_sites_device_files(lab: SlurmLab) -> None:
    lines = [line for line in (lab.etc / "gres.conf").read_text().splitlines() if "File=" in line]
    (line,) = lines
    files = re.search(r"File=(\S+)", line)
    assert files is not None
    assert [Path(f).name for f in files[1].split(",")] == ["nvidia1", "nvidia3"]


def test_slurmd_registers_one_gpu_per_device_file(lab: SlurmLab) -> None:
    node = lab.run("scontrol", "show", "node", GPU_NODE)
    assert "Gres=gpu:l4:2" in node
    assert "State=IDLE" in node


def test_a_job_gets_both_gpus(lab: SlurmLab) -> None:
    out = lab.run("srun", "-w", GPU_NODE, "--gres=gpu:l4:2", "-t", "1", "sh", "-c", "echo ok")
    assert out.strip() == "ok"
