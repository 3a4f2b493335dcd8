"""`estategen import` keeps a site's partition, QoS and cluster names as the site wrote them
(users name the partition in sbatch -p, slurmdbd has the QoS and the cluster under those
names), reads ClusterName in lower case as slurmctld does (``_validate_and_set_defaults`` in
src/common/read_config.c, slurm-22-05-8-1 and slurm-24-11-5-1), takes QoS that differ only in
case as the one QoS slurmdbd has (sacctmgr lower-cases the names it adds:
``slurm_addto_char_list`` in src/common/slurm_protocol_defs.c), and refuses, with the reason,
a name estategen cannot carry rather than rename it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_slurm_names import lines, partition_lines

from estategen.importer.outcomes import summary
from estategen.importer.site import import_site
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.render import render

SITE_CONF = """\
ClusterName=hpc.example
SlurmctldHost=ctl
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=dbd
NodeName=n[1-2] CPUs=4 RealMemory=8000
PartitionName=gpu_priority Nodes=n[1-2] Default=YES QOS=part_eic
PartitionName=rocsLong Nodes=n[1-2] AllowQos=rocsLong,part_eic
PartitionName=eic Nodes=n1 QOS=part_eic
"""


def imported(tmp_path: Path, text: str) -> tuple[Any, dict[str, Any]]:
    source = tmp_path / "slurm.conf"
    source.write_text(text)
    result = import_site(source)
    return result, yaml.safe_load(result.text)


def test_import_keeps_partition_qos_and_cluster_names_as_the_site_wrote_them(
    tmp_path: Path,
) -> None:
    result, doc = imported(tmp_path, SITE_CONF)
    slurm = doc["slurm"]
    assert slurm["cluster_name"] == "hpc.example"
    assert doc["estate"] == "hpc-example"
    assert [p["name"] for p in slurm["partitions"]] == ["gpu_priority", "rocsLong", "eic"]
    assert slurm["partitions"][0]["qos"] == "part_eic"
    assert slurm["partitions"][1]["allow_qos"] == ["rocsLong", "part_eic"]
    assert [q["name"] for q in slurm["qos"]] == ["part_eic", "rocsLong"]
    report = summary(result)
    assert "PartitionName=gpu_priority -> slurm.partitions[gpu_priority]" in report
    assert "PartitionName=rocsLong -> slurm.partitions[rocsLong]" in report
    assert "ClusterName=hpc.example -> slurm.cluster_name" in report
    assert not [o for o in result.outcomes if o.kind in ("changed", "refused")]
    assert result.faithful


def test_the_imported_blueprint_renders_the_sites_names(tmp_path: Path) -> None:
    result, _ = imported(tmp_path, SITE_CONF)
    estate = validate_document(parse_blueprint(result.text.encode(), "imported.yaml")).estate
    rendered = {p: f.content.decode() for p, f in render(estate).items()}
    conf = lines(rendered["slurm/slurm.conf"])
    assert "ClusterName=hpc.example" in conf
    assert list(partition_lines(rendered)) == ["gpu_priority", "rocsLong", "eic"]
    assert partition_lines(rendered)["eic"]["QOS"] == "part_eic"
    assert "add qos part_eic" in lines(rendered["slurm/qos.sacctmgr"])


def test_import_reads_clustername_in_lower_case_as_slurmctld_does(tmp_path: Path) -> None:
    _, doc = imported(tmp_path, SITE_CONF.replace("hpc.example", "HPC.Example"))
    assert doc["slurm"]["cluster_name"] == "hpc.example"


def test_import_takes_one_qos_for_names_that_differ_only_in_case(tmp_path: Path) -> None:
    conf = SITE_CONF.replace("AllowQos=rocsLong,part_eic", "AllowQos=rocslong,PART_EIC")
    conf = conf.replace(
        "PartitionName=eic Nodes=n1 QOS=part_eic", "PartitionName=eic Nodes=n1 QOS=rocsLong"
    )
    result, doc = imported(tmp_path, conf)
    assert [q["name"] for q in doc["slurm"]["qos"]] == ["PART_EIC", "rocsLong"]
    assert result.faithful


def test_import_refuses_a_partition_name_it_cannot_carry_with_the_reason(tmp_path: Path) -> None:
    result, doc = imported(tmp_path, SITE_CONF.replace("PartitionName=eic ", "PartitionName=-eic "))
    assert [p["name"] for p in doc["slurm"]["partitions"]] == ["gpu_priority", "rocsLong"]
    (refused,) = [o for o in result.outcomes if o.kind == "refused"]
    assert refused.value == "-eic" and "not '-' first" in refused.target
