"""`estategen import`: a site's slurm.conf in, a blueprint that validates out.

Pools are groups of identical nodes with the same partitions; partitions are unions of
pools; every setting is mapped, passed through into slurm.options, or refused in a comment
naming its source line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen.importer.site import import_site
from estategen.importer.tables import PARAMETERS, PARTITION_KEYS

from conftest import run_cli

BASE = "ClusterName=lab\nSlurmctldHost=ctl\n"
# GPU sites say their select plugin: 22.05's default, select/linear, gives steps no GPUs
CONS_TRES = "SelectType=select/cons_tres\n"


def conf(tmp_path: Path, text: str, name: str = "slurm.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def blueprint(tmp_path: Path, text: str, **files: str) -> dict[str, Any]:
    paths = {k: conf(tmp_path, v, f"{k}.conf") for k, v in files.items()}
    imported = import_site(conf(tmp_path, BASE + text), **paths)  # type: ignore[arg-type]
    data: dict[str, Any] = yaml.safe_load(imported.text)
    return data


def pools(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in data["node_pools"]}


def test_identical_nodes_on_several_lines_are_one_pool(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=cn[01-02] Sockets=2 CoresPerSocket=8 RealMemory=64000\n"
        "NodeName=cn03 Sockets=2 CoresPerSocket=8 RealMemory=64000\n"
        "PartitionName=batch Nodes=cn[01-03] Default=YES\n",
    )
    assert [(p["hosts"], p["cpu"]["sockets"]) for p in data["node_pools"]] == [("cn[01-03]", 2)]
    assert data["slurm"]["partitions"] == [
        {
            "name": "batch",
            "pools": ["cn"],
            "default": True,
            "def_mem_per_node": "unlimited",
            "billing_weights": {},
        }
    ]


def test_nodes_differing_in_shape_are_separate_pools(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=cn01 CPUs=8 RealMemory=32000\nNodeName=cn02 CPUs=8 RealMemory=64000\n"
        "PartitionName=all Nodes=ALL\n",
    )
    assert [p["hosts"] for p in data["node_pools"]] == ["cn01", "cn02"]
    assert data["slurm"]["partitions"][0]["pools"] == ["cn", "cn-2"]


def test_pools_split_by_partition_membership(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=cn[1-4] CPUs=4 RealMemory=8000\n"
        "PartitionName=all Nodes=cn[1-4]\nPartitionName=short Nodes=cn[1-2]\n",
    )
    by_hosts = {p["hosts"]: p["name"] for p in data["node_pools"]}
    assert set(by_hosts) == {"cn[1-2]", "cn[3-4]"}
    parts = {p["name"]: p["pools"] for p in data["slurm"]["partitions"]}
    assert parts == {
        "all": [by_hosts["cn[1-2]"], by_hosts["cn[3-4]"]],
        "short": [by_hosts["cn[1-2]"]],
    }


def test_nodesets_expand_into_the_partitions_that_name_them(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=a[1-2] CPUs=4 Feature=fast\nNodeName=b1 CPUs=4\n"
        "NodeSet=quick Feature=fast\nPartitionName=q Nodes=quick\n",
    )
    (part,) = data["slurm"]["partitions"]
    assert [pools(data)[name]["hosts"] for name in part["pools"]] == ["a[1-2]"]


def test_gres_types_become_gpu_models_with_a_review_note(tmp_path: Path) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + "GresTypes=gpu\nNodeName=g[1-2] CPUs=32 RealMemory=500000 Gres=gpu:4\n"
            "PartitionName=gpu Nodes=g[1-2]\n" + CONS_TRES,
        ),
        gres=conf(tmp_path, "NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n", "gres"),
    )
    data = yaml.safe_load(imported.text)
    # the site's nodes do not carry the model as a feature: the pool says so
    assert data["node_pools"][0]["gpus"] == {"model": "a100", "count": 4, "feature": False}
    assert data["gpu_models"] == [{"name": "a100", "memory_gb": 80}]
    assert any("gpu_models.a100.memory_gb" in note for note in imported.reviews)
    assert "#   - gpu_models.a100.memory_gb" in imported.text


def rendered_conf(tmp_path: Path, text: str, **files: str) -> dict[str, str]:
    """The slurm.conf estategen renders from the imported blueprint: parameters, and each
    NodeName/PartitionName line by name, as key -> value."""
    from estategen import load
    from estategen.pipeline import validate_document
    from estategen.renderers.slurm import slurm_conf

    paths = {k: conf(tmp_path, v, f"{k}.conf") for k, v in files.items()}
    imported = import_site(conf(tmp_path, BASE + text), **paths)  # type: ignore[arg-type]
    estate = validate_document(load.parse_blueprint(imported.text.encode(), "i.yaml")).estate
    out: dict[str, str] = {}
    for line in slurm_conf(estate).splitlines():
        if line.startswith(("NodeName=", "PartitionName=")):
            head, _, rest = line.partition(" ")
            out[head] = rest
        elif line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def test_real_memory_is_the_sites_exactly(tmp_path: Path) -> None:
    data = blueprint(tmp_path, "NodeName=n1 CPUs=4 RealMemory=250000\nPartitionName=p Nodes=n1\n")
    pool = data["node_pools"][0]
    assert (pool["memory_gb"], pool["real_memory_mib"]) == (245, 250000)
    node = rendered_conf(
        tmp_path, "NodeName=n1 CPUs=4 RealMemory=250000\nPartitionName=p Nodes=n1\n"
    )
    assert "RealMemory=250000 " in node["NodeName=n1"]


def test_a_node_without_real_memory_keeps_slurms_default_of_one_mib(tmp_path: Path) -> None:
    node = rendered_conf(tmp_path, "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1\n")
    assert "RealMemory=1 " in node["NodeName=n1"]


def test_unknown_parameters_pass_through_slurm_options(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "KillWait=45\nNodeName=n1\nPartitionName=p Nodes=n1\n")
    )
    data = yaml.safe_load(imported.text)
    assert data["slurm"]["options"] == {"KillWait": "45"}
    (outcome,) = [o for o in imported.outcomes if o.key == "KillWait"]
    assert (outcome.kind, outcome.where.line, outcome.target) == (
        "passed",
        3,
        "slurm.options.KillWait",
    )


def test_keys_estategen_owns_are_refused_in_a_comment_with_their_line(tmp_path: Path) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + "AuthType=auth/none\nCredType=cred/none\n"
            "NodeName=n1\nPartitionName=p Nodes=n1\n",
        )
    )
    refused = {o.key: o for o in imported.outcomes if o.kind == "refused"}
    assert set(refused) == {"AuthType", "CredType"}
    assert refused["AuthType"].target == "estategen renders AuthType=auth/munge"
    assert f"#   {tmp_path / 'slurm.conf'}:3:1: AuthType=auth/none  #" in imported.text
    assert "CredType" not in yaml.safe_load(imported.text)["slurm"].get("options", {})


def test_a_site_value_equal_to_the_render_counts_as_mapped(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "AuthType=auth/munge\nNodeName=n1\nPartitionName=p Nodes=n1\n")
    )
    (outcome,) = [o for o in imported.outcomes if o.key == "AuthType"]
    assert (outcome.kind, outcome.target) == ("mapped", "the same value estategen renders")


def test_every_setting_read_has_an_outcome(tmp_path: Path) -> None:
    text = (
        BASE + "KillWait=45\nPriorityWeightAge=100\nProctrackType=proctrack/linuxproc\n"
        "NodeName=n[1-2] CPUs=4 NodeAddr=10.0.0.1 Weight=5\n"
        "PartitionName=p Nodes=n[1-2] MaxTime=1:00:00 OverSubscribe=YES\n"
    )
    imported = import_site(conf(tmp_path, text))
    seen = {(o.where.line, o.where.column) for o in imported.outcomes}
    from estategen import slurmconf

    parsed = slurmconf.parse_file(tmp_path / "slurm.conf")
    settings = list(parsed.parameters)
    for record in parsed.records:
        settings += record.settings
        assert (record.where.line, record.where.column) in seen
    assert all((s.where.line, s.where.column) in seen for s in settings)


def test_the_mapping_table_names_blueprint_keys() -> None:
    from estategen.schema.rules import BLUEPRINT

    for name, row in PARAMETERS.items():
        node: Any = {"schema": BLUEPRINT}
        for part in row.path.split("."):
            node = node["schema"][part]
        assert node, name


def test_the_partition_table_names_partition_keys() -> None:
    from estategen.importer.tables import _ALSO
    from estategen.schema.rules import BLUEPRINT

    partition = BLUEPRINT["slurm"]["schema"]["partitions"]["schema"]["schema"]
    rows = [*PARTITION_KEYS.values(), *_ALSO.values()]
    assert {row.path for row in rows} <= set(partition)


def test_partition_settings_map_to_their_keys(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "AccountingStorageType=accounting_storage/slurmdbd\n"
        "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\n"
        "NodeName=n1\nPartitionName=p Nodes=n1 Default=YES MaxTime=2-0 DefaultTime=60 "
        "AllowAccounts=ALL QOS=gold PriorityTier=5 PreemptMode=REQUEUE Hidden=YES\n",
    )
    assert data["slurm"]["partitions"] == [
        {
            "name": "p",
            "pools": ["n"],
            "default": True,
            "max_time": "2-0",
            "default_time": "60",
            "qos": "gold",
            "priority_tier": 5,
            "preempt_mode": "requeue",
            "hidden": True,
            "def_mem_per_node": "unlimited",
            "billing_weights": {},
        }
    ]
    assert data["slurm"]["qos"] == [{"name": "gold"}]


def test_partition_site_overrides_keep_the_sites_values(tmp_path: Path) -> None:
    text = (
        "AccountingStorageType=accounting_storage/slurmdbd\nPriorityType=priority/multifactor\n"
        "NodeName=n1 CPUs=4 RealMemory=8000\n"
        "PartitionName=p Nodes=n1 State=DOWN OverSubscribe=FORCE:2 ExclusiveUser=YES Priority=7 "
        "AllowQos=gold "
        "AllowGroups=lab DenyAccounts=guests GraceTime=30 MinNodes=1 MaxNodes=1 MaxCPUsPerNode=2 "
        "MaxMemPerCPU=900 DefMemPerCPU=500 TRESBillingWeights=CPU=1.0,Mem=0.5G\n"
        "PartitionName=q Nodes=n1 Shared=EXCLUSIVE MaxNodes=UNLIMITED AllowGroups=ALL "
        "ExclusiveUser=no\n"
    )
    data = blueprint(tmp_path, text)
    p, q = data["slurm"]["partitions"]
    assert {k: v for k, v in p.items() if k not in ("name", "pools")} == {
        "state": "down",
        "oversubscribe": "force:2",
        "exclusive_user": True,
        "priority_tier": 7,
        "priority_job_factor": 7,  # the old Priority sets both
        "allow_qos": ["gold"],
        "allow_groups": ["lab"],
        "deny_accounts": ["guests"],
        "grace_time": 30,
        "min_nodes": 1,
        "max_nodes": 1,
        "max_cpus_per_node": 2,
        "max_mem_per_cpu": 900,
        "def_mem_per_cpu": 500,
        "billing_weights": {"CPU": "1.0", "Mem": "0.5G"},
    }
    assert {k: v for k, v in q.items() if k not in ("name", "pools")} == {
        "oversubscribe": "exclusive",
        "exclusive_user": False,
        # Slurm's defaults, which estategen would replace: the whole memory, CPUs billed
        "def_mem_per_node": "unlimited",
        "billing_weights": {},
    }
    assert data["slurm"]["qos"] == [{"name": "gold"}]
    assert [t["name"] for t in data["identity"]["teams"]] == ["guests"]
    line = rendered_conf(tmp_path, text)["PartitionName=p"]
    for field in (
        "State=DOWN",
        "OverSubscribe=FORCE:2",
        "ExclusiveUser=YES",
        "PriorityJobFactor=7",
        "DenyAccounts=guests",
        "MinNodes=1",
        "MaxMemPerCPU=900",
        "DefMemPerCPU=500",
        "TRESBillingWeights=CPU=1.0,Mem=0.5G",
    ):
        assert field in line.split(), field


def test_a_partition_preempt_mode_slurm_ignores_is_refused_with_its_line(tmp_path: Path) -> None:
    """slurm.conf(5): without PreemptType=preempt/partition_prio a partition's PreemptMode is not
    read; import keeps it out of the blueprint and says so."""
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1 PreemptMode=REQUEUE\n")
    )
    (outcome,) = [o for o in imported.outcomes if o.key == "PreemptMode"]
    assert outcome.kind == "refused" and "ignores a partition's PreemptMode" in outcome.target
    assert "preempt_mode" not in yaml.safe_load(imported.text)["slurm"]["partitions"][0]


def test_a_partition_qos_without_accounting_is_refused(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1 QOS=gold\n")
    )
    (outcome,) = [o for o in imported.outcomes if o.key == "QOS"]
    assert outcome.kind == "refused" and "slurmdbd" in outcome.target
    assert "qos" not in yaml.safe_load(imported.text)["slurm"]["partitions"][0]


def test_partitions_keep_their_names_and_one_estategen_cannot_carry_is_refused(
    tmp_path: Path,
) -> None:
    """Users name a partition in sbatch -p: import keeps it as written, never renamed; a name
    another output cannot carry ('!' is no partition name estategen writes) is refused."""
    imported = import_site(
        conf(
            tmp_path,
            BASE + "NodeName=n1\nPartitionName=long_jobs Nodes=n1\nPartitionName=GPU! Nodes=n1\n",
        )
    )
    data = yaml.safe_load(imported.text)
    assert [p["name"] for p in data["slurm"]["partitions"]] == ["long_jobs"]
    assert any(o.kind == "refused" and o.value == "GPU!" for o in imported.outcomes)


def test_sacct_dump_accounts_become_teams(tmp_path: Path) -> None:
    sacct = conf(
        tmp_path,
        "Cluster - 'lab':Fairshare=1\nParent - 'root'\n"
        "Account - 'physics':Description='physics':Fairshare=30\n"
        "Account - 'chem':Fairshare=70\n",
        "sacct.cfg",
    )
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1 AllowAccounts=physics\n"),
        sacct=sacct,
    )
    data = yaml.safe_load(imported.text)
    teams = {t["name"]: t.get("fairshare", 1) for t in data["identity"]["teams"]}
    assert teams == {"chem": 70, "physics": 30}
    assert data["slurm"]["partitions"][0]["teams"] == ["physics"]
    assert any("gid" in note for note in imported.reviews)


def test_the_written_blueprint_validates_and_is_deterministic(tmp_path: Path) -> None:
    source = conf(
        tmp_path,
        BASE + "Include nodes.conf\nMinJobAge=600\nPartitionName=p Nodes=ALL Default=YES\n",
    )
    conf(tmp_path, "NodeName=DEFAULT Sockets=2 CoresPerSocket=4\nNodeName=n[1-3]\n", "nodes.conf")
    out = tmp_path / "out"
    out.mkdir()
    first = run_cli("import", source, "-o", out / "a.yaml")
    second = run_cli("import", source, "-o", out / "b.yaml")
    assert second.returncode == 0, second.stderr
    assert first.returncode == 0, first.stderr
    assert (out / "a.yaml").read_text() == (out / "b.yaml").read_text()
    assert "nodes.conf:2:1: mapped: NodeName=n[1-3]" in first.stdout
    assert "passed: MinJobAge=600 -> slurm.options.MinJobAge" in first.stdout
    validated = run_cli("validate", out / "a.yaml")
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_a_syntax_error_exits_1_with_its_place_and_writes_nothing(tmp_path: Path) -> None:
    source = conf(tmp_path, BASE + "NodeName=n1 CPUs\n")
    result = run_cli("import", source, "-o", tmp_path / "out.yaml")
    assert result.returncode == 1
    assert result.stderr == (
        f"estategen: {source}:3:13: expected Key=Value (or Include FILE): the word here has "
        "no '=' (is this file a Slurm configuration file?)\n"
    )
    assert not (tmp_path / "out.yaml").exists()


def test_an_output_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    source = conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1\n")
    result = run_cli("import", source, "-o", tmp_path / "nowhere" / "out.yaml")
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr


def test_an_unreadable_sacct_file_is_an_error_with_its_name(tmp_path: Path) -> None:
    source = conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1\n")
    result = run_cli(
        "import", source, "--sacct", tmp_path / "absent.cfg", "-o", tmp_path / "o.yaml"
    )
    assert result.returncode == 1
    assert f"{tmp_path / 'absent.cfg'}:0:0: cannot read" in result.stderr


REALWORLD = Path(__file__).parent / "realworld"


@pytest.mark.parametrize(
    "entry", sorted(p.name for p in REALWORLD.iterdir() if (p / "slurm.conf").is_file())
)
def test_every_corpus_config_imports_to_a_valid_blueprint(entry: str, tmp_path: Path) -> None:
    """The slow test compares what slurmctld shows; this one only that each imports cleanly
    (tests/realworld/*/SOURCE.md name the sources)."""
    source = REALWORLD / entry
    args: list[str | Path] = ["import", source / "slurm.conf", "-o", tmp_path / "b.yaml"]
    for option, name in (("--gres", "gres.conf"), ("--topology", "topology.conf")):
        if (source / name).exists():
            args += [option, source / name]
    result = run_cli(*args)
    blueprint_text = (tmp_path / "b.yaml").read_text()
    # exit 0 exactly when no setting is changed or refused; else 4, said in one line
    kept = "# Settings the blueprint does not keep" not in blueprint_text
    assert result.returncode == (0 if kept else 4), result.stderr
    assert kept or "but its render would not be the site's" in result.stdout.splitlines()[-1]
    assert run_cli("validate", tmp_path / "b.yaml").returncode == 0


# --- the site override keys --------------------------------------------------------------


def test_site_parameters_keep_the_sites_values_in_the_render(tmp_path: Path) -> None:
    text = (
        "ReturnToService=1\nSlurmdUser=root\nSelectType=select/cons_res\n"
        "SelectTypeParameters=CR_CPU_MEMORY\nTaskPlugin=task/affinity\n"
        "JobAcctGatherType=jobacct_gather/linux\nPrologFlags=Alloc,Contain\n"
        "SchedulerParameters=bf_continue,bf_window=4320\nSlurmctldPort=6817-6820\n"
        "SlurmdPort=6830\nStateSaveLocation=/srv/slurm/state\n"
        "SlurmdLogFile=/var/log/site/slurmd.log\n"
        "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1\n"
    )
    slurm = blueprint(tmp_path, text)["slurm"]
    assert slurm["return_to_service"] == 1
    assert slurm["slurmd_user"] == "root"
    assert slurm["select"] == {"type": "cons_res", "parameters": ["CR_CPU_Memory"]}
    assert slurm["task_plugins"] == ["affinity"]
    assert slurm["job_acct_gather"] == "linux"
    assert slurm["prolog_flags"] == ["Alloc", "Contain"]
    assert slurm["scheduler_parameters"] == ["bf_continue", "bf_window=4320"]
    assert slurm["ports"] == {"slurmctld": "6817-6820", "slurmd": 6830}
    assert slurm["paths"] == {
        "state_save_location": "/srv/slurm/state",
        "slurmd_log_file": "/var/log/site/slurmd.log",
    }
    assert "options" not in slurm
    rendered = rendered_conf(tmp_path, text)
    assert {k: rendered[k] for k in ("ReturnToService", "SelectType", "TaskPlugin")} == {
        "ReturnToService": "1",
        "SelectType": "select/cons_res",
        "TaskPlugin": "task/affinity",
    }
    assert rendered["SchedulerParameters"] == "bf_continue,bf_window=4320"
    assert rendered["StateSaveLocation"] == "/srv/slurm/state"


def test_keys_a_site_leaves_out_keep_slurms_defaults(tmp_path: Path) -> None:
    imported = import_site(conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1\n"))
    slurm = yaml.safe_load(imported.text)["slurm"]
    # slurm.conf(5): ReturnToService 0, PrologFlags none, JobAcctGatherType none, TaskPlugin
    # none, SchedulerParameters none
    assert slurm["return_to_service"] == 0
    assert slurm["prolog_flags"] == []
    assert slurm["job_acct_gather"] == "none"
    assert slurm["task_plugins"] == ["none"]
    assert slurm["scheduler_parameters"] == []
    assert any("Slurm's defaults" in note for note in imported.reviews)


def test_accounting_enforce_and_tres_are_the_sites(tmp_path: Path) -> None:
    text = (
        "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageTRES=gres/gpu\n"
        "NodeName=g1 CPUs=8 Gres=gpu:GV100GL:2\nPartitionName=p Nodes=g1\n"
    )
    imported = import_site(conf(tmp_path, BASE + text))
    accounting = yaml.safe_load(imported.text)["slurm"]["accounting"]
    assert accounting["enforce"] == []  # Slurm's default: none
    # the partition bills CPUs only (no TRESBillingWeights): no GPU TRES to add
    assert accounting["tres"] == ["gres/gpu"]
    enforced = blueprint(
        tmp_path,
        "AccountingStorageType=accounting_storage/slurmdbd\n"
        "AccountingStorageEnforce=associations,limits\nNodeName=n1\nPartitionName=p Nodes=n1\n",
    )
    assert enforced["slurm"]["accounting"]["enforce"] == ["associations", "limits"]


def test_daemon_paths_that_would_clash_go_back_to_estategens_and_are_refused(
    tmp_path: Path,
) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + "StateSaveLocation=/var/spool/slurmd\n"
            "SlurmctldLogFile=/var/spool/slurmd/ctld.log\nNodeName=n1\nPartitionName=p Nodes=n1\n",
        )
    )
    slurm = yaml.safe_load(imported.text)["slurm"]
    assert slurm["paths"] == {"state_save_location": "/var/spool/slurmd"}
    (outcome,) = [o for o in imported.outcomes if o.key == "SlurmctldLogFile"]
    assert outcome.kind == "refused" and "slurm.paths.slurmctld_log_file" in outcome.target


def test_gres_type_names_features_and_weights_are_the_sites(tmp_path: Path) -> None:
    text = (
        "AccountingStorageType=accounting_storage/slurmdbd\n"
        "NodeName=g1 CPUs=8 RealMemory=4096 Gres=gpu:rtx_3090:2 Feature=Rack:A1,rtx-3090 "
        "Weight=100000\nPartitionName=p Nodes=g1\n" + CONS_TRES
    )
    pool = blueprint(tmp_path, text)["node_pools"][0]
    # the model is among the site's features: estategen's GPU feature stays on
    assert pool["gpus"] == {"model": "rtx-3090", "count": 2, "gres_type": "rtx_3090"}
    assert pool["features"] == ["Rack:A1", "rtx-3090"]
    assert pool["weight"] == 100000
    node = rendered_conf(tmp_path, text)["NodeName=g1"].split()
    assert "Gres=gpu:rtx_3090:2" in node
    assert "Feature=Rack:A1,rtx-3090" in node
    assert "Weight=100000" in node


def test_gres_conf_autodetect_reaches_the_gpu_pools(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=g1 CPUs=8 Gres=gpu:a100:2\nPartitionName=p Nodes=g1\n" + CONS_TRES,
        gres="AutoDetect=off\nNodeName=g1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
    )
    assert data["node_pools"][0]["gpus"]["autodetect"] == "off"


def test_gres_conf_autodetect_nvml_on_debians_packages_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    """Debian's slurm-wlm has no gpu_nvml plugin (validate refuses gpus.autodetect nvml with
    it): the blueprint is written without it, and the line is refused with validate's reason."""
    gres = conf(
        tmp_path,
        "AutoDetect=nvml\nNodeName=g1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
        "gres.conf",
    )
    imported = import_site(
        conf(
            tmp_path,
            BASE + "NodeName=g1 CPUs=8 Gres=gpu:a100:2\nPartitionName=p Nodes=g1\n" + CONS_TRES,
        ),
        gres=gres,
    )
    data = yaml.safe_load(imported.text)
    assert "autodetect" not in data["node_pools"][0]["gpus"]
    (refused,) = [o for o in imported.outcomes if o.kind == "refused"]
    assert (refused.where.file, refused.where.line, refused.key) == (str(gres), 1, "AutoDetect")
    assert "gpu_nvml" in refused.target and "nvml: true" in refused.target
    assert f"#   {gres}:1:1: AutoDetect=nvml  # node_pools[0].gpus.autodetect:" in imported.text
    assert not imported.faithful


@pytest.mark.parametrize(
    ("plugin", "kind"), [("task/affinity", "passed"), ("task/cgroup", "refused")]
)
def test_over_memory_kill_passes_through_unless_task_cgroup_enforces_memory(
    tmp_path: Path, plugin: str, kind: str
) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + f"JobAcctGatherParams=OverMemoryKill\nTaskPlugin={plugin}\n"
            "NodeName=n1\nPartitionName=p Nodes=n1\n",
        )
    )
    (outcome,) = [o for o in imported.outcomes if o.key == "JobAcctGatherParams"]
    assert outcome.kind == kind


# --- priority, scheduler, partition limits, process tracking, job completion ---


def outcomes(tmp_path: Path, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The blueprint's slurm section, and each setting's outcome by key (the last, for keys
    given twice)."""
    imported = import_site(conf(tmp_path, BASE + text + "NodeName=n1\nPartitionName=p Nodes=n1\n"))
    data = yaml.safe_load(imported.text)
    return data["slurm"], {o.key: o for o in imported.outcomes} | {"reviews": imported.reviews}


def test_a_site_without_priority_type_keeps_slurms_basic_and_refuses_the_weights(
    tmp_path: Path,
) -> None:
    slurm, found = outcomes(
        tmp_path, "PriorityWeightAge=100\nPriorityFlags=SMALL_RELATIVE_TO_TIME\n"
    )
    assert slurm["scheduling"] == {"priority_type": "basic"}
    assert "options" not in slurm
    for key in ("PriorityWeightAge", "PriorityFlags"):
        assert found[key].kind == "refused"
        assert "priority/basic" in found[key].target


def test_multifactor_keeps_its_weights(tmp_path: Path) -> None:
    slurm, found = outcomes(tmp_path, "PriorityType=priority/multifactor\nPriorityWeightAge=100\n")
    assert slurm["scheduling"] == {"priority_type": "multifactor", "priority_weights": {"age": 100}}
    assert found["PriorityType"].target == "slurm.scheduling.priority_type"


def test_priority_on_a_basic_partition_keeps_the_tier_only(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1 Priority=50\n")
    )
    (part,) = yaml.safe_load(imported.text)["slurm"]["partitions"]
    assert part["priority_tier"] == 50
    assert "priority_job_factor" not in part
    assert any("priority/basic ignores the job factor" in r for r in imported.reviews)
    factor = import_site(
        conf(tmp_path, BASE + "NodeName=n1\nPartitionName=p Nodes=n1 PriorityJobFactor=3\n")
    )
    (outcome,) = [o for o in factor.outcomes if o.key == "PriorityJobFactor"]
    assert outcome.kind == "refused"


def test_sched_builtin_keeps_the_options_that_are_not_backfills(tmp_path: Path) -> None:
    slurm, found = outcomes(
        tmp_path, "SchedulerType=sched/builtin\nSchedulerParameters=bf_window=60,max_rpc_cnt=9\n"
    )
    assert (slurm["scheduler"], slurm["scheduler_parameters"]) == ("builtin", ["max_rpc_cnt=9"])
    assert (found["SchedulerParameters"].kind, found["SchedulerParameters"].value) == (
        "refused",
        "bf_window=60",
    )


@pytest.mark.parametrize(("value", "kept"), [(None, "none"), ("YES", "any"), ("ALL", "all")])
def test_enforce_part_limits_keeps_the_sites(tmp_path: Path, value: str | None, kept: str) -> None:
    slurm, _ = outcomes(tmp_path, f"EnforcePartLimits={value}\n" if value else "")
    assert slurm["enforce_part_limits"] == kept


def test_linuxproc_stays_unless_task_cgroup_needs_cgroup_tracking(tmp_path: Path) -> None:
    slurm, found = outcomes(tmp_path, "ProctrackType=proctrack/linuxproc\n")
    assert slurm["proctrack"] == "linuxproc"  # Slurm's default TaskPlugin is task/none
    slurm, found = outcomes(
        tmp_path, "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/cgroup,task/affinity\n"
    )
    assert "proctrack" not in slurm
    assert found["ProctrackType"].kind == "refused"
    assert "task/cgroup" in found["ProctrackType"].target


def test_a_completion_log_beside_slurmctlds_log_is_kept(tmp_path: Path) -> None:
    slurm, found = outcomes(
        tmp_path,
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log\nJobCompType=jobcomp/filetxt\n"
        "JobCompLoc=/var/log/slurm/jobcomp.log\n",
    )
    assert slurm["job_completion"] == {"type": "filetxt", "location": "/var/log/slurm/jobcomp.log"}
    assert found["JobCompLoc"].kind == "mapped"


def test_a_completion_log_elsewhere_is_refused_and_slurms_default_kept_where_it_can(
    tmp_path: Path,
) -> None:
    slurm, found = outcomes(tmp_path, "JobCompType=jobcomp/filetxt\nJobCompLoc=/srv/jobcomp.log\n")
    assert slurm["job_completion"] == {"type": "filetxt"}
    assert found["JobCompLoc"].kind == "refused"
    slurm, _ = outcomes(
        tmp_path, "SlurmctldLogFile=/var/log/slurmctld.log\nJobCompType=jobcomp/filetxt\n"
    )
    assert slurm["job_completion"]["location"] == "/var/log/slurm_jobcomp.log"
    slurm, found = outcomes(tmp_path, "JobCompType=jobcomp/none\nJobCompLoc=/var/log/x.log\n")
    assert "job_completion" not in slurm
    assert found["JobCompLoc"].kind == "refused"


def test_a_partition_without_memory_default_or_billing_keeps_slurms(tmp_path: Path) -> None:
    text = "NodeName=n1 CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n1\n"
    (part,) = blueprint(tmp_path, text)["slurm"]["partitions"]
    assert (part["def_mem_per_node"], part["billing_weights"]) == ("unlimited", {})
    line = rendered_conf(tmp_path, text)["PartitionName=p"]
    assert not [f for f in ("DefMem", "TRESBillingWeights") if f in line]
    node_default = blueprint(tmp_path, "NodeName=n1\nPartitionName=p Nodes=n1 DefMemPerNode=900\n")
    assert node_default["slurm"]["partitions"][0]["def_mem_per_node"] == 900
    # a global default memory applies to the partition: estategen's per-CPU default stays
    (kept,) = blueprint(tmp_path, "DefMemPerCPU=100\n" + text)["slurm"]["partitions"]
    assert "def_mem_per_node" not in kept


def test_an_untyped_gpu_gres_stays_untyped(tmp_path: Path) -> None:
    text = (
        "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageTRES=gres/gpu\n"
        "GresTypes=gpu\nNodeName=g1 CPUs=8 RealMemory=4096 Gres=gpu:2\nPartitionName=p Nodes=g1\n"
        + CONS_TRES
    )
    data = blueprint(tmp_path, text)
    assert data["node_pools"][0]["gpus"] == {
        "model": "gpu",
        "count": 2,
        "typed": False,
        "feature": False,
    }
    # no typed GPU TRES to add: the site's list stays as it is
    assert data["slurm"]["accounting"]["tres"] == ["gres/gpu"]
    conf_ = rendered_conf(tmp_path, text)
    assert "Gres=gpu:2" in conf_["NodeName=g1"].split()
    # nor a default CPU count per GPU: a GPU job gets the CPUs it asks for
    assert data["slurm"]["partitions"][0]["def_cpu_per_gpu"] == "none"
    assert "DefCpuPerGPU" not in conf_["PartitionName=p"]
    # typed in gres.conf: the type is the site's
    typed = blueprint(tmp_path, text, gres="NodeName=g1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n")
    assert "typed" not in typed["node_pools"][0]["gpus"]


def test_a_partition_memory_default_the_blueprint_cannot_keep_is_refused(tmp_path: Path) -> None:
    both = "NodeName=n1\nPartitionName=p Nodes=n1 DefMemPerCPU=100 DefMemPerNode=900\n"
    imported = import_site(conf(tmp_path, BASE + both))
    (part,) = yaml.safe_load(imported.text)["slurm"]["partitions"]
    assert part["def_mem_per_cpu"] == 100 and "def_mem_per_node" not in part
    (outcome,) = [o for o in imported.outcomes if o.key == "DefMemPerNode"]
    assert outcome.kind == "refused" and "not with def_mem_per_cpu" in outcome.target
    beside = "DefMemPerCPU=100\nNodeName=n1\nPartitionName=p Nodes=n1 DefMemPerNode=UNLIMITED\n"
    imported = import_site(conf(tmp_path, BASE + beside))
    (outcome,) = [o for o in imported.outcomes if o.key == "DefMemPerNode"]
    assert outcome.kind == "refused"


# --- State=CLOUD nodes: pools with `state: cloud` and the site's power saving ---------------

CLOUD = (
    "SuspendTime=300\nResumeTimeout=1600\n"
    "ResumeProgram=/opt/site/slurm/resume\nSuspendProgram=/opt/site/slurm/suspend\n"
    "SuspendExcNodes=st-[1-1]\n"
    "NodeName=st-[1-1] CPUs=8 RealMemory=16000 State=CLOUD Feature=static\n"
    "NodeName=dy-[1-4] CPUs=8 RealMemory=16000 State=CLOUD Feature=dynamic\n"
    "PartitionName=p Nodes=st-1,dy-[1-4]\n"
)


def test_state_cloud_nodes_become_state_cloud_pools_with_the_sites_power_saving(
    tmp_path: Path,
) -> None:
    """slurm.conf(5) of 22.05: SuspendTimeout defaults to 30 seconds, ResumeTimeout to 60."""
    data = blueprint(tmp_path, CLOUD)
    assert {name: p.get("state") for name, p in pools(data).items()} == {
        "st": "cloud",
        "dy": "cloud",
    }
    assert data["slurm"]["power_saving"] == {
        "suspend_time": 300,
        "resume_timeout": 1600,
        "resume_program": "/opt/site/slurm/resume",
        "suspend_program": "/opt/site/slurm/suspend",
        "exclude_nodes": ["st-[1-1]"],
        "suspend_timeout": 30,  # Slurm's default, written with a review note
    }


def test_state_cloud_nodes_render_as_the_site_wrote_them(tmp_path: Path) -> None:
    rendered = rendered_conf(tmp_path, CLOUD)
    assert rendered["NodeName=dy-[1-4]"].endswith(" State=CLOUD")
    assert (rendered["ResumeProgram"], rendered["SuspendProgram"]) == (
        "/opt/site/slurm/resume",
        "/opt/site/slurm/suspend",
    )
    assert (rendered["SuspendTime"], rendered["ResumeTimeout"]) == ("300", "1600")
    assert (rendered["SuspendTimeout"], rendered["SuspendExcNodes"]) == ("30", "st-[1-1]")
    assert "ResumeFailProgram" not in rendered and "TreeWidth" not in rendered


def test_cloud_nodes_without_a_resume_program_get_a_review_note(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=dy-[1-2] CPUs=4 State=CLOUD\nPartitionName=p Nodes=ALL\n")
    )
    assert any(
        note.startswith("slurm.power_saving.resume_program: slurm.conf names no ResumeProgram")
        for note in imported.reviews
    )
    assert any(note.startswith("slurm.power_saving.suspend_time:") for note in imported.reviews)


def test_power_saving_without_cloud_nodes_is_refused_with_its_line(tmp_path: Path) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + "SuspendTime=300\nResumeProgram=/opt/site/resume\n"
            "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1\n",
        )
    )
    refused = {o.key: o for o in imported.outcomes if o.kind == "refused"}
    assert set(refused) == {"SuspendTime", "ResumeProgram"}
    assert "no State=CLOUD nodes" in refused["SuspendTime"].target
    assert not [o for o in imported.outcomes if o.kind == "mapped" and o.key == "SuspendTime"]
    assert "power_saving" not in yaml.safe_load(imported.text)["slurm"]


def test_other_node_states_stay_refused(tmp_path: Path) -> None:
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n1 CPUs=4 State=FUTURE\nPartitionName=p Nodes=n1\n")
    )
    refused = [o for o in imported.outcomes if o.kind == "refused"]
    assert [(o.key, o.value) for o in refused] == [("State", "FUTURE")]


def test_a_partition_naming_one_nodeset_keeps_it(tmp_path: Path) -> None:
    data = blueprint(
        tmp_path,
        "NodeName=n[1-2] CPUs=4\nNodeSet=gpu_nodes Nodes=n[1-2]\n"
        "PartitionName=a Nodes=gpu_nodes\nPartitionName=b Nodes=gpu_nodes\n"
        "PartitionName=c Nodes=n1,n2\n",
    )
    parts = {p["name"]: p for p in data["slurm"]["partitions"]}
    # one NodeSet line, named by the first partition; the others list the hosts
    assert [parts[name].get("nodeset") for name in "abc"] == ["gpu_nodes", None, None]


def test_a_nodeset_renders_as_the_site_wrote_it(tmp_path: Path) -> None:
    rendered = rendered_conf(
        tmp_path,
        "NodeName=n[1-2] CPUs=4\nNodeSet=efa_nodes Nodes=n[1-2]\n"
        "PartitionName=efa Nodes=efa_nodes\n",
    )
    assert rendered["NodeSet"] == "efa_nodes Nodes=n[1-2]"
    assert rendered["PartitionName=efa"].startswith("Nodes=efa_nodes ")


def test_node_and_controller_addresses_are_the_sites(tmp_path: Path) -> None:
    imported = import_site(
        conf(
            tmp_path,
            "ClusterName=lab\nSlurmctldHost=ctl(10.0.0.254)\n"
            "NodeName=n[1-3] NodeAddr=10.0.0.[11-13] CPUs=4\nNodeName=m1 CPUs=4\n"
            "PartitionName=p Nodes=ALL\n",
        )
    )
    data = yaml.safe_load(imported.text)
    assert data["slurm"]["controllers"] == ["ctl"]
    assert data["slurm"]["controller_addresses"] == {"ctl": "10.0.0.254"}
    assert pools(data)["n"]["addresses"] == "10.0.0.[11-13]"
    assert "addresses" not in pools(data)["m"]
    assert not [o for o in imported.outcomes if o.kind == "refused"]


def test_node_and_controller_addresses_render_as_the_site_wrote_them(tmp_path: Path) -> None:
    rendered = rendered_conf(
        tmp_path,
        "NodeName=n[1-3] NodeAddr=10.0.0.13,10.0.0.[11-12] CPUs=4\nPartitionName=p Nodes=ALL\n",
    )
    # n1 is 10.0.0.13 wherever the addresses are written
    assert rendered["NodeName=n[1-3]"].startswith("NodeAddr=10.0.0.13,10.0.0.[11-12] ")


def test_nodeaddr_not_one_per_node_is_refused_with_its_line(tmp_path: Path) -> None:
    """slurm.conf(5) NodeAddr: a range "must exactly match the entries in the NodeName"."""
    imported = import_site(
        conf(tmp_path, BASE + "NodeName=n[1-3] NodeAddr=a,b CPUs=4\nPartitionName=p Nodes=ALL\n")
    )
    refused = [o for o in imported.outcomes if o.kind == "refused"]
    assert [(o.key, o.where.line, o.target) for o in refused] == [
        ("NodeAddr", 3, "node_pools[].addresses: 2 addresses for 3 nodes (one per node)")
    ]
    assert "addresses" not in pools(yaml.safe_load(imported.text))["n"]


def test_cpus_counting_the_cores_make_each_core_a_cpu(tmp_path: Path) -> None:
    """slurm.conf(5) CPUs: "It can be set to the total number of sockets (select/linear),
    cores or threads ... when you want to schedule only the cores on a hyper-threaded node"."""
    text = (
        "NodeName=n1 CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000\n"
        "PartitionName=p Nodes=n1\n"
    )
    data = blueprint(tmp_path, text)
    assert pools(data)["n"]["cpu"] == {
        "sockets": 2,
        "cores_per_socket": 8,
        "threads_per_core": 2,
        "cpus": 16,
    }
    rendered = rendered_conf(tmp_path, text)
    assert " CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 " in f" {rendered['NodeName=n1']}"
    # the per-CPU memory default estategen gives (when the partition does not keep Slurm's
    # whole-node default, as import does) counts the 16 CPUs Slurm schedules, not the 32 threads
    from estategen import load
    from estategen.pipeline import validate_document
    from estategen.renderers.slurm import slurm_conf

    (partition,) = data["slurm"]["partitions"]
    assert partition.pop("def_mem_per_node") == "unlimited"
    document = load.parse_blueprint(yaml.safe_dump(data).encode(), "i.yaml")
    (line,) = [
        line
        for line in slurm_conf(validate_document(document).estate).splitlines()
        if line.startswith("PartitionName=p ")
    ]
    assert line.split("DefMemPerCPU=")[1].split()[0] == str(64000 // 16)


def test_cpus_that_are_neither_cores_nor_threads_are_refused(tmp_path: Path) -> None:
    imported = import_site(
        conf(
            tmp_path,
            BASE + "NodeName=n1 CPUs=12 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2\n"
            "PartitionName=p Nodes=n1\n",
        )
    )
    refused = [o for o in imported.outcomes if o.kind == "refused"]
    assert [(o.key, o.value, o.target) for o in refused] == [
        ("CPUs", "12", "CPUs other than the cores or the threads")
    ]


# --- topology.conf ------------------------------------------------------------------------

TOPOLOGY = (
    "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
    "SwitchName=spine Switches=leaf[1-2]\n"
)
NODES = "NodeName=n[1-4] CPUs=8\nPartitionName=p Nodes=n[1-4] Default=YES\n"


def test_topology_conf_places_nodes_on_their_switches_under_the_tree_plugin(
    tmp_path: Path,
) -> None:
    data = blueprint(tmp_path, "TopologyPlugin=topology/tree\n" + NODES, topology=TOPOLOGY)
    # one pool: its hosts spread over the leaf switches as network.switch places them
    assert [p["network"]["switch"] for p in data["node_pools"]] == ["leaf[1-2]"]


@pytest.mark.parametrize("plugin", ["", "TopologyPlugin=topology/none\n"])
def test_topology_conf_slurmctld_does_not_read_turns_no_topology_on(
    tmp_path: Path, plugin: str
) -> None:
    """slurm.conf(5) TopologyPlugin: topology.conf is read by topology/tree (and block); with
    no plugin or topology/none (22.05's default) slurmctld never opens it, so the site
    schedules flat and the imported blueprint must not render TopologyPlugin=topology/tree."""
    text = BASE + plugin + NODES
    imported = import_site(conf(tmp_path, text), topology=conf(tmp_path, TOPOLOGY, "t.conf"))
    data = yaml.safe_load(imported.text)
    assert all("network" not in p for p in data["node_pools"]), data["node_pools"]
    switches = [o for o in imported.outcomes if o.key == "SwitchName"]
    assert [o.kind for o in switches] == ["dropped"] * 3, switches
    assert "slurmctld does not read this line" in switches[0].target
