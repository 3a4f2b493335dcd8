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


# --- accounts: a team keeps its Slurm account's name ----------------------------------------

DUMP = """\
Cluster - 'hpc.example':Fairshare=1:QOS='normal'
Parent - 'root'
Account - 'chem_lab':Description='chemistry':Fairshare=30
Account - 'physics':Fairshare=70
"""


def imported_with_dump(tmp_path: Path, conf: str, dump: str) -> tuple[Any, dict[str, Any]]:
    sacct = tmp_path / "sacct.cfg"
    sacct.write_text(dump)
    source = tmp_path / "slurm.conf"
    source.write_text(conf)
    result = import_site(source, sacct=sacct)
    return result, yaml.safe_load(result.text)


def test_import_keeps_an_accounts_underscore_so_sbatch_a_names_the_same_team(
    tmp_path: Path,
) -> None:
    conf = SITE_CONF.replace(
        "PartitionName=eic Nodes=n1 ", "PartitionName=eic Nodes=n1 AllowAccounts=chem_lab "
    )
    result, doc = imported_with_dump(tmp_path, conf, DUMP)
    teams = {t["name"]: t.get("fairshare", 1) for t in doc["identity"]["teams"]}
    assert teams == {"chem_lab": 30, "physics": 70}
    assert doc["slurm"]["partitions"][2]["teams"] == ["chem_lab"]
    report = summary(result)
    assert "Account=chem_lab -> identity.teams[chem_lab]" in report
    assert "AllowAccounts=chem_lab -> slurm.partitions[eic].teams" in report
    assert not [o for o in result.outcomes if o.kind in ("changed", "refused")]
    estate = validate_document(parse_blueprint(result.text.encode(), "imported.yaml")).estate
    rendered = {p: f.content.decode() for p, f in render(estate).items()}
    assert "Account - 'chem_lab':Description='team chem_lab'" in rendered["slurm/sacct.cfg"]
    assert partition_lines(rendered)["eic"]["AllowAccounts"] == "chem_lab"


def test_import_reads_an_account_in_lower_case_as_sacctmgr_load_stores_it(
    tmp_path: Path,
) -> None:
    """sacctmgr load lower-cases every name but a user's (``_parse_options`` in
    src/sacctmgr/file_functions.c, slurm-22-05-8-1 and slurm-24-11-5-1)."""
    _, doc = imported_with_dump(tmp_path, SITE_CONF, DUMP.replace("'chem_lab'", "'Chem_Lab'"))
    assert [t["name"] for t in doc["identity"]["teams"]] == ["chem_lab", "physics"]


def test_import_refuses_an_account_a_team_cannot_carry_with_the_reason(tmp_path: Path) -> None:
    conf = SITE_CONF.replace(
        "PartitionName=eic Nodes=n1 ", "PartitionName=eic Nodes=n1 AllowAccounts=chem.lab "
    )
    result, doc = imported_with_dump(tmp_path, conf, DUMP.replace("'physics'", "'phys.ics'"))
    assert [t["name"] for t in doc["identity"]["teams"]] == ["chem_lab"]
    refused = {o.value: o.target for o in result.outcomes if o.kind == "refused"}
    assert "team name like 'chem_lab'" in refused["chem.lab"]
    assert "identity.teams[].name" in refused["phys.ics"] and "lowercase" in refused["phys.ics"]


# --- a sacctmgr dump as sacctmgr writes and loads it ------------------------------------------


def test_import_reads_the_dump_forms_of_sacctmgr1_with_names_unquoted(tmp_path: Path) -> None:
    """sacctmgr(1), FLAT FILE DUMP AND LOAD, writes ``Cluster - tux:...`` and
    ``Account - cs:...:FairShare=399:Description='Computer Science'``: quotes are optional and
    the option names are read in any case (``_parse_options``, src/sacctmgr/file_functions.c)."""
    dump = (
        "Cluster - hpc.example:MaxTRESPerJob=node=15\nParent - root\n"
        "Account - cs:MaxJobs=4:FairShare=399:Description='Computer Science':Organization='LC'\n"
        "Parent - cs\nAccount - test:FairShare=1:Description='Test Account'\n"
    )
    result, doc = imported_with_dump(tmp_path, SITE_CONF, dump)
    assert doc["identity"]["teams"] == [{"name": "test", "gid": 60000}]
    assert "Account=cs -> identity.teams[cs]" in summary(result)


def test_a_qos_line_is_refused_as_no_line_sacctmgr_load_reads(tmp_path: Path) -> None:
    """sacctmgr load reads Cluster, Parent, Account and User lines and stops at any other as
    "Misformatted" (load_sacctmgr_cfg_file in src/sacctmgr/file_functions.c); sacctmgr dump
    writes no QoS (sacctmgr(1): "QOS information is not currently included")."""
    result, _ = imported_with_dump(tmp_path, SITE_CONF, DUMP + "QOS - 'high':Priority=10\n")
    (refused,) = [o for o in result.outcomes if o.kind == "refused"]
    assert (refused.key, refused.value) == ("QOS", "high")
    assert "not a line sacctmgr load reads" in refused.target
    assert "UID" not in refused.target


def test_the_qos_the_dumps_associations_name_become_slurm_qos(tmp_path: Path) -> None:
    """The dump's QoS are the QOS= of its Cluster and Account lines (sacctmgr dump writes
    ``:QOS='...'``: print_file_add_limits_to_line in src/sacctmgr/file_functions.c): each
    becomes a slurm.qos; an Account line's grant is listed as changed, since the render
    grants every QoS to every team."""
    dump = DUMP.replace("'physics':Fairshare=70", "'physics':Fairshare=70:QOS='high,Low_prio'")
    result, doc = imported_with_dump(tmp_path, SITE_CONF, dump)
    assert [q["name"] for q in doc["slurm"]["qos"]] == [
        "Low_prio",
        "high",
        "normal",
        "part_eic",
        "rocsLong",
    ]
    by_kind = {
        o.value: o.kind for o in result.outcomes if o.key == "QOS" and "sacct" in str(o.where)
    }
    assert by_kind == {"normal": "mapped", "high,Low_prio": "changed"}
