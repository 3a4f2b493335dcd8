"""`estategen import` keeps the daemon folders a site runs (StateSaveLocation, SlurmdSpoolDir):
slurmctld restarted on another folder starts from an empty state and loses every queued and
running job. A slurm.conf fragment in, a blueprint, render or finding fact out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load
from estategen.errors import BlueprintInvalid
from estategen.importer.outcomes import Imported
from estategen.importer.site import import_site
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.renderers.ansible import slurm_folders
from estategen.renderers.slurm import slurm_conf

BASE = "ClusterName=lab\nSlurmctldHost=ctl\n"
NODES = "NodeName=n[1-2] CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n[1-2] Default=YES\n"


def imported(tmp_path: Path, text: str) -> Imported:
    source = tmp_path / "slurm.conf"
    source.write_text(BASE + text + NODES)
    return import_site(source)


def estate_of(result: Imported) -> Estate:
    return validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate


def conf_value(estate: Estate, key: str) -> str:
    (line,) = [x for x in slurm_conf(estate).splitlines() if x.startswith(key + "=")]
    return line.split("=", 1)[1]


def paths(result: Imported) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(result.text)["slurm"].get("paths", {})
    return found


@pytest.mark.parametrize(
    "folder",
    ["/var/spool/slurmctld/", "/var/spool/slurm-llnl", "/var/lib/slurmd", "/var/spool/slurm/"],
)
def test_the_sites_state_folder_is_rendered_trailing_slash_dropped(
    tmp_path: Path, folder: str
) -> None:
    result = imported(tmp_path, f"StateSaveLocation={folder}\n")
    assert result.faithful
    assert conf_value(estate_of(result), "StateSaveLocation") == folder.rstrip("/")


def test_one_folder_for_state_and_spool_is_kept_as_single_node_sites_run_it(
    tmp_path: Path,
) -> None:
    result = imported(
        tmp_path, "StateSaveLocation=/var/spool/slurmd\nSlurmdSpoolDir=/var/spool/slurmd/\n"
    )
    assert result.faithful
    estate = estate_of(result)
    assert conf_value(estate, "StateSaveLocation") == "/var/spool/slurmd"
    assert conf_value(estate, "SlurmdSpoolDir") == "/var/spool/slurmd"
    # the controller role owns the one folder (SlurmUser, 0755); the compute role leaves it,
    # or the two roles would take it from each other and slurmctld could not write its state
    assert "/var/spool/slurmd" in slurm_folders(estate, controller=True)
    assert "/var/spool/slurmd" not in slurm_folders(estate, controller=False)


def test_one_daemon_folder_inside_the_other_is_kept(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "StateSaveLocation=/var/spool/slurm-llnl\nSlurmdSpoolDir=/var/spool/slurm-llnl/d\n",
    )
    assert result.faithful
    assert paths(result) == {
        "state_save_location": "/var/spool/slurm-llnl",
        "slurmd_spool_dir": "/var/spool/slurm-llnl/d",
    }


def test_one_folder_for_state_and_spool_is_refused_when_slurmd_is_not_root(
    tmp_path: Path,
) -> None:
    result = imported(
        tmp_path,
        "SlurmdUser=slurmd\nStateSaveLocation=/var/spool/slurmd\nSlurmdSpoolDir=/var/spool/slurmd\n",
    )
    assert not result.faithful
    refused = {o.key for o in result.outcomes if o.kind == "refused"}
    assert refused & {"StateSaveLocation", "SlurmdSpoolDir"}


def blueprint_with_paths(tmp_path: Path, **site_paths: str) -> bytes:
    result = imported(tmp_path, "")
    data = yaml.safe_load(result.text)
    data["slurm"]["paths"] = site_paths
    return yaml.safe_dump(data).encode()


@pytest.mark.parametrize("folder", ["/", "/etc", "/tmp", "/var", "/var/spool", "/var/lib"])
def test_the_state_folder_key_refuses_system_folders(tmp_path: Path, folder: str) -> None:
    text = blueprint_with_paths(tmp_path, state_save_location=folder)
    with pytest.raises(BlueprintInvalid) as raised:
        validate_document(load.parse_blueprint(text, "b.yaml"))
    assert [f.path for f in raised.value.findings] == ["slurm.paths.state_save_location"]


def test_the_state_folder_key_refuses_a_trailing_slash_import_drops(tmp_path: Path) -> None:
    text = blueprint_with_paths(tmp_path, state_save_location="/var/spool/slurmctld/")
    with pytest.raises(BlueprintInvalid):
        validate_document(load.parse_blueprint(text, "b.yaml"))


def test_the_blueprint_refuses_one_spool_and_state_folder_for_a_slurmd_not_root(
    tmp_path: Path,
) -> None:
    data = yaml.safe_load(imported(tmp_path, "").text)
    data["slurm"]["paths"] = {
        "state_save_location": "/var/spool/slurmd",
        "slurmd_spool_dir": "/var/spool/slurmd",
    }
    data["slurm"]["slurmd_user"] = "slurmd"
    with pytest.raises(BlueprintInvalid) as raised:
        validate_document(load.parse_blueprint(yaml.safe_dump(data).encode(), "b.yaml"))
    assert any("could not write there" in f.message for f in raised.value.findings)


# --- a site's global memory default stands -----------------------------------------------

# a GPU site says its select plugin: 22.05's default, select/linear, gives steps no GPUs
GPU_SITE = (
    "GresTypes=gpu\nNodeName=g1 CPUs=8 RealMemory=64000 Gres=gpu:a100:2\nPartitionName=g Nodes=g1\n"
    "SelectType=select/cons_tres\n"
)


def partition_line(estate: Estate, name: str) -> str:
    (line,) = [x for x in slurm_conf(estate).splitlines() if x.startswith(f"PartitionName={name} ")]
    return line


@pytest.mark.parametrize("default", ["DefMemPerCPU=2000", "DefMemPerNode=4000"])
def test_a_global_memory_default_is_not_overridden_per_partition(
    tmp_path: Path, default: str
) -> None:
    result = imported(tmp_path, f"{default}\n{GPU_SITE}")
    assert result.faithful
    estate = estate_of(result)
    assert f"\n{default}\n" in slurm_conf(estate)
    for name in ("p", "g"):
        line = partition_line(estate, name)
        assert "DefMem" not in line, line


def test_a_partitions_own_default_stands_beside_the_global_one(tmp_path: Path) -> None:
    estate = estate_of(
        imported(
            tmp_path,
            "DefMemPerCPU=2000\nGresTypes=gpu\nNodeName=g1 CPUs=8 RealMemory=64000 "
            "Gres=gpu:a100:2\nPartitionName=g Nodes=g1 DefMemPerGPU=16000\n"
            "SelectType=select/cons_tres\n",
        )
    )
    assert " DefMemPerGPU=16000" in partition_line(estate, "g")
    assert "DefMemPerCPU" not in partition_line(estate, "g")
