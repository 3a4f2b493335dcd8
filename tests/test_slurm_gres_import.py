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
import yaml

from estategen.importer.blueprint import write
from estategen.importer.site import import_site

from slurmlab import (
    GPU_NODE,
    SlurmLab,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    machine_shape,
    render_blueprint,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]


def site_files(folder: Path) -> tuple[Path, Path]:
    shape = machine_shape()
    slurm = folder / "slurm.conf"
    slurm.write_text(
        "ClusterName=site\nSlurmctldHost=lab-ctl\nSelectType=select/cons_tres\nGresTypes=gpu\n"
        f"NodeName={GPU_NODE} Sockets={shape['sockets']} "
        f"CoresPerSocket={shape['cores_per_socket']} ThreadsPerCore={shape['threads_per_core']} "
        "RealMemory=2048 Gres=gpu:l4:2\n"
        f"PartitionName=gpu Nodes={GPU_NODE} Default=YES\n"
    )
    gres = folder / "gres.conf"
    gres.write_text(f"NodeName={GPU_NODE} Name=gpu Type=l4 File=/dev/nvidia1,/dev/nvidia3\n")
    return slurm, gres


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("gresfiles")
    imported = import_site(*site_files(work), slurm_version=installed_slurm_version())
    assert imported.faithful, imported.outcomes
    blueprint = work / "imported.yaml"
    write(imported, blueprint)
    data = yaml.safe_load(blueprint.read_text())
    assert data["node_pools"][0]["gpus"]["files"] == ["/dev/nvidia1", "/dev/nvidia3"]
    data["slurm"]["packages"] = {"source": installed_slurm_source()}
    rendered = render_blueprint(work, yaml.safe_dump(data, sort_keys=False), "imported")
    with SlurmLab.running(
        rendered,
        work / "run",
        [GPU_NODE, "lab-ctl"],
        controller="lab-ctl",
        nodes=[GPU_NODE],
        gpu_files=4,  # /dev/nvidia0..3 in the lab; gres.conf names 1 and 3 of them
    ) as cluster:
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
