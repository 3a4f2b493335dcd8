"""`estategen import` reads every slurm.conf slurmctld reads, keeps what the site runs, and says
what it could not keep: a slurm.conf fragment in, a blueprint or account fact out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import slurmconf
from estategen.importer.outcomes import Imported
from estategen.importer.site import import_site

from conftest import run_cli

BASE = "ClusterName=lab\nSlurmctldHost=ctl\n"
NODES = "NodeName=n[1-2] CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n[1-2] Default=YES\n"


def imported(tmp_path: Path, text: str, version: str | None = None, **files: str) -> Imported:
    paths = {}
    for name, body in files.items():
        paths[name] = tmp_path / f"{name}.conf"
        paths[name].write_text(body)
    source = tmp_path / "slurm.conf"
    source.write_text(text)
    return import_site(source, slurm_version=version, **paths)  # type: ignore[arg-type]


def data(result: Imported) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(result.text)
    return loaded


def kinds(result: Imported) -> dict[str, str]:
    return {o.key: o.kind for o in result.outcomes}


# --- read what slurmctld reads -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ClusterName = fyr",
        "ClusterName= fyr",
        "ClusterName =fyr",
        "ClusterName\t=\tfyr",
        'ClusterName = "fyr"',
    ],
)
def test_spaces_around_the_equals_sign_are_read_as_slurmctld_reads_them(
    tmp_path: Path, line: str
) -> None:
    """parse_config.c: KEY[[:space:]]*=[[:space:]]*VALUE (Puppet writes `Key = Value`)."""
    result = imported(tmp_path, f"{line}\nSlurmctldHost = ctl\n{NODES}")
    assert data(result)["slurm"]["cluster_name"] == "fyr"
    assert data(result)["slurm"]["controllers"] == ["ctl"]


def test_a_record_line_with_spaces_around_equals_keeps_every_pair(tmp_path: Path) -> None:
    conf = slurmconf.parse_text(
        "NodeName = n1 CPUs = 4 RealMemory= 8000 Feature =a,b\n", "slurm.conf"
    )
    (node,) = conf.records
    assert node.name == "n1"
    assert [(s.key, s.value) for s in node.settings] == [
        ("CPUs", "4"),
        ("RealMemory", "8000"),
        ("Feature", "a,b"),
    ]


def test_an_empty_quoted_value_does_not_take_the_next_word(tmp_path: Path) -> None:
    conf = slurmconf.parse_text('NodeName=n1 Feature="" Weight=5\n', "slurm.conf")
    assert [(s.key, s.value) for s in conf.records[0].settings] == [
        ("Feature", ""),
        ("Weight", "5"),
    ]


def test_host_names_in_upper_case_are_read_and_each_line_says_it_changed(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "ClusterName=fyr\nSlurmctldHost=Todo\nNodeName=FyrHead CPUs=4 RealMemory=8000\n"
        "PartitionName=p Nodes=FyrHead Default=YES\n",
    )
    doc = data(result)
    assert doc["slurm"]["controllers"] == ["todo"]
    assert doc["node_pools"][0]["hosts"] == "fyrhead"
    assert kinds(result)["NodeName"] == kinds(result)["SlurmctldHost"] == "changed"
    assert "rename the host fyrhead" in result.text
    assert not result.faithful


@pytest.mark.parametrize(
    ("lines", "addresses"),
    [
        ("ControlMachine=ctl\nControlAddr=10.1.2.3\n", {"ctl": "10.1.2.3"}),
        (
            "ControlMachine=ctl\nControlAddr=10.1.2.3\nBackupController=bak\nBackupAddr=10.1.2.4\n",
            {"ctl": "10.1.2.3", "bak": "10.1.2.4"},
        ),
        ("ControlMachine=Ctl\nControlAddr=10.1.2.3\n", {"ctl": "10.1.2.3"}),
    ],
)
def test_control_addr_beside_control_machine_is_the_controllers_address(
    tmp_path: Path, lines: str, addresses: dict[str, str]
) -> None:
    """ControlMachine=ctl with ControlAddr=ADDR is SlurmctldHost=ctl(ADDR) (slurm.conf(5) of
    22.05: both deprecated, "see SlurmctldHost"); slurmctld 22.05 shows SlurmctldHost[0]=
    ctl(ADDR) for them, but only ctl for SlurmctldHost=ctl followed by ControlAddr=ADDR, the
    ControlAddr line ignored: passed to slurm.options, the address was lost."""
    result = imported(tmp_path, "ClusterName=lab\n" + lines + NODES)
    doc = data(result)
    assert doc["slurm"]["controller_addresses"] == addresses
    assert "options" not in doc["slurm"]
    assert kinds(result)["ControlAddr"] == "mapped"
    blueprint = tmp_path / "blueprint.yaml"
    blueprint.write_text(result.text)
    rendered = run_cli("render", blueprint, "-o", tmp_path / "out")
    assert rendered.returncode == 0, rendered.stderr
    conf = (tmp_path / "out" / "slurm" / "slurm.conf").read_text().splitlines()
    for host, address in addresses.items():
        assert f"SlurmctldHost={host}({address})" in conf
    assert not [line for line in conf if line.startswith(("ControlAddr", "BackupAddr"))]


def test_control_addr_that_is_the_control_machine_adds_no_address(tmp_path: Path) -> None:
    """slurmctld defaults ControlAddr to ControlMachine: the same name is no address."""
    result = imported(tmp_path, "ClusterName=lab\nControlMachine=ctl\nControlAddr=ctl\n" + NODES)
    assert "controller_addresses" not in data(result)["slurm"]
    assert "options" not in data(result)["slurm"]
    assert kinds(result)["ControlAddr"] == "mapped"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("JobCompType=jobcomp/None", "JobCompType"),
        ("SchedulerType=sched/Backfill", "SchedulerType"),
    ],
)
def test_a_plugin_name_in_another_case_is_said_to_change(
    tmp_path: Path, line: str, key: str
) -> None:
    """slurmctld loads a plugin by its exact name: 22.05 given JobCompType=jobcomp/None logs
    "cannot find jobcomp plugin for jobcomp/None" and shows that name, the render loads
    jobcomp/none: the reading is kept, the line says it changed."""
    result = imported(tmp_path, BASE + line + "\n" + NODES)
    assert kinds(result)[key] == "changed"
    assert not result.faithful


def test_a_plugin_name_as_slurm_spells_it_is_mapped(tmp_path: Path) -> None:
    result = imported(tmp_path, BASE + "JobCompType=jobcomp/none\n" + NODES)
    assert kinds(result)["JobCompType"] == "mapped"


@pytest.mark.parametrize("value", ["suspend,gang", "SUSPEND,GANG", "GANG,SUSPEND"])
def test_preempt_mode_suspend_with_gang_is_the_suspend_mode_estategen_renders(
    tmp_path: Path, value: str
) -> None:
    """slurm.conf(5) of 22.05, PreemptMode: SUSPEND "always needs the GANG option to be
    specified at the cluster level" (slurmctld 22.05 stops at SUSPEND alone: "PreemptMode=
    SUSPEND requires GANG too"); estategen renders mode suspend as SUSPEND,GANG."""
    result = imported(
        tmp_path,
        BASE + f"PreemptType=preempt/partition_prio\nPreemptMode={value}\n" + NODES,
    )
    preemption = data(result)["slurm"]["scheduling"]["preemption"]
    assert preemption == {"type": "partition_prio", "mode": "suspend"}
    assert kinds(result)["PreemptMode"] == "mapped"


def test_preempt_mode_gang_beside_another_mode_is_refused_and_says_why(tmp_path: Path) -> None:
    result = imported(
        tmp_path, BASE + "PreemptType=preempt/qos\nPreemptMode=REQUEUE,GANG\n" + NODES
    )
    (refusal,) = [o for o in result.outcomes if o.key == "PreemptMode"]
    assert refusal.kind == "refused"
    assert "GANG only with suspend" in refusal.target


def test_preempt_type_without_a_mode_slurmctld_accepts_is_refused_with_it(tmp_path: Path) -> None:
    """slurmctld 22.05 stops at PreemptType=preempt/qos with PreemptMode OFF, the default
    ("PreemptType and PreemptMode values incompatible"): the blueprint written keeps neither,
    so its render starts."""
    result = imported(tmp_path, BASE + "PreemptType=preempt/qos\n" + NODES)
    assert kinds(result)["PreemptType"] == "refused"
    assert not data(result)["slurm"]["scheduling"].get("preemption")
    assert not result.findings


def test_old_controller_keys_beside_slurmctld_host_are_dropped(tmp_path: Path) -> None:
    """src/common/read_config.c of 22.05: with SlurmctldHost set, slurmctld logs "Ignoring
    ControlMachine since SlurmctldHost is set" (and so for ControlAddr, BackupController,
    BackupAddr) and reads none of them."""
    result = imported(
        tmp_path,
        "ClusterName=lab\nSlurmctldHost=ctl\nControlMachine=old\nControlAddr=10.0.0.9\n"
        "BackupController=bak\nBackupAddr=10.0.0.8\n" + NODES,
    )
    assert data(result)["slurm"]["controllers"] == ["ctl"]
    assert "controller_addresses" not in data(result)["slurm"]
    assert "options" not in data(result)["slurm"]
    for key in ("ControlMachine", "ControlAddr", "BackupController", "BackupAddr"):
        assert kinds(result)[key] == "dropped"


def test_crypto_type_is_read_as_the_cred_type_slurmctld_reads_it_as(tmp_path: Path) -> None:
    """src/common/read_config.c of 22.05 (and 24.11): without CredType, CryptoType is read as
    CredType with crypto swapped for cred; slurmctld 22.05 starts on CryptoType=crypto/munge."""
    result = imported(tmp_path, BASE + "CryptoType=crypto/munge\n" + NODES, version="22.05")
    assert kinds(result)["CryptoType"] == "mapped"
    assert kinds(result)["CredType"] == "mapped"
    assert result.faithful


def test_crypto_type_beside_cred_type_has_no_effect(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        BASE + "CredType=cred/munge\nCryptoType=crypto/munge\n" + NODES,
        version="22.05",
    )
    assert kinds(result)["CryptoType"] == "dropped"
    assert result.faithful


def test_task_plugin_names_without_their_prefix_are_the_plugins(tmp_path: Path) -> None:
    """src/slurmd/common/task_plugin.c prefixes task/ to a name without it."""
    result = imported(tmp_path, BASE + "TaskPlugin=affinity,cgroup\n" + NODES)
    assert data(result)["slurm"]["task_plugins"] == ["affinity", "cgroup"]
    assert kinds(result)["TaskPlugin"] == "mapped"


@pytest.mark.parametrize(
    ("value", "flags"),
    [
        ("all", ["associations", "limits", "qos", "safe", "wckeys"]),
        ("limits", ["associations", "limits"]),
        ("2", ["associations", "limits"]),
        ("1", ["associations"]),
        ("safe,qos", ["associations", "limits", "qos", "safe"]),
        ("nojobs", ["nojobs", "nosteps"]),
        ("Limits,QOS", ["associations", "limits", "qos"]),
    ],
)
def test_accounting_enforce_is_expanded_as_slurmctld_expands_it(
    tmp_path: Path, value: str, flags: list[str]
) -> None:
    """read_config.c _validate_accounting_storage_enforce; printed in the order of
    slurm_protocol_defs.c accounting_enforce_string."""
    result = imported(
        tmp_path,
        BASE + "AccountingStorageType=accounting_storage/slurmdbd\n"
        f"AccountingStorageEnforce={value}\n" + NODES,
    )
    assert data(result)["slurm"]["accounting"]["enforce"] == flags


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("CacheGroups=0", "dropped"),
        ("SchedulerPort=7321", "dropped"),
        ("JobCheckpointDir=/var/slurm/checkpoint", "dropped"),
        ("FastSchedule=1", "dropped"),
        ("FastSchedule=0", "refused"),
        ("MemLimitEnforce=yes", "refused"),
        ("SallocDefaultCommand=srun", "refused"),
    ],
)
def test_keys_slurm_removed_never_reach_slurm_options(tmp_path: Path, line: str, kind: str) -> None:
    """slurmctld 22.05 refuses each of them (unknown key, or fatal: ... removed)."""
    result = imported(tmp_path, BASE + line + "\n" + NODES)
    key = line.split("=")[0]
    assert key not in data(result)["slurm"].get("options", {})
    (outcome,) = [o for o in result.outcomes if o.key == key]
    assert outcome.kind == kind
    assert "removed" in outcome.target
    assert result.faithful is (kind == "dropped")


def test_removed_keys_with_a_successor_are_read_as_it(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        BASE + "DefaultStorageType=slurmdbd\nDefaultStorageHost=dbd01\n"
        "FastSchedule=2\nSlurmdParameters=l3cache_as_socket\n"
        "AccountingStoreJobComment=YES\n" + NODES,
    )
    slurm = data(result)["slurm"]
    assert slurm["accounting"]["host"] == "dbd01"
    assert slurm["options"]["SlurmdParameters"] == "l3cache_as_socket,config_overrides"
    assert slurm["options"]["AccountingStoreFlags"] == "job_comment"
    assert {k: kinds(result)[k] for k in ("DefaultStorageHost", "FastSchedule")} == {
        "DefaultStorageHost": "dropped",
        "FastSchedule": "dropped",
    }
    assert result.faithful


def test_a_removed_key_a_later_release_still_reads_is_kept_for_an_earlier_target(
    tmp_path: Path,
) -> None:
    """SchedulerAuth is refused from 24.05 on; 23.11 reads it."""
    kept = imported(tmp_path, BASE + "SchedulerAuth=secret\n" + NODES, "23.11")
    assert kinds(kept)["SchedulerAuth"] == "passed"
    gone = imported(tmp_path, BASE + "SchedulerAuth=secret\n" + NODES, "24.11")
    assert kinds(gone)["SchedulerAuth"] == "dropped"


@pytest.mark.parametrize(
    ("release", "priority", "select"),
    [("22.05", "basic", "linear"), ("23.11", "multifactor", "cons_tres")],
)
def test_keys_a_site_leaves_out_get_the_default_of_the_release_it_runs(
    tmp_path: Path, release: str, priority: str, select: str
) -> None:
    """slurm.conf(5) of 22.05: PriorityType priority/basic and SelectType select/linear by
    default; Slurm's NEWS, 23.11.0rc1: both defaults changed (priority/multifactor,
    select/cons_tres), as slurm.conf(5) of 24.11 says."""
    result = imported(tmp_path, BASE + NODES, release)
    slurm = data(result)["slurm"]
    assert slurm["scheduling"]["priority_type"] == priority
    assert slurm["select"]["type"] == select


def test_a_gpu_site_on_selects_default_linear_is_told_its_steps_get_no_gpus(
    tmp_path: Path,
) -> None:
    """22.05 without SelectType runs select/linear, under which slurmd refuses a step that
    asks for a GPU (checks.slurm_site): the account says so at the GPU node's line."""
    gpus = "GresTypes=gpu\nNodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:a100:2\n"
    text = BASE + gpus + "PartitionName=p Nodes=g1\n"
    result = imported(tmp_path, text, "22.05")
    assert data(result)["slurm"]["select"]["type"] == "linear"
    refused = [o for o in result.outcomes if o.kind == "refused" and o.key == "Gres"]
    assert refused and "select type linear" in refused[0].target
    assert not result.faithful
    on_24 = imported(tmp_path, text, "24.11")
    assert data(on_24)["node_pools"][0]["gpus"]["count"] == 2


def test_a_multifactor_weight_is_kept_where_the_release_defaults_to_multifactor(
    tmp_path: Path,
) -> None:
    text = BASE + "PriorityWeightFairshare=1000\n" + NODES
    assert kinds(imported(tmp_path, text, "22.05"))["PriorityWeightFairshare"] == "refused"
    kept = imported(tmp_path, text, "24.11")
    assert kinds(kept)["PriorityWeightFairshare"] == "mapped"


def test_select_cons_res_is_read_as_cons_tres_where_the_release_removed_it(
    tmp_path: Path,
) -> None:
    """Slurm's NEWS, 23.11.0rc1: "Removed select/cons_res. Please update your configuration
    to select/cons_tres"; slurm.conf(5) of 24.11: that change keeps the jobs' state."""
    text = BASE + "SelectType=select/cons_res\nSelectTypeParameters=CR_Core\n" + NODES
    kept = imported(tmp_path, text, "22.05")
    assert data(kept)["slurm"]["select"]["type"] == "cons_res"
    assert kinds(kept)["SelectType"] == "mapped"
    moved = imported(tmp_path, text, "24.11")
    assert data(moved)["slurm"]["select"] == {"type": "cons_tres", "parameters": ["CR_Core"]}
    (outcome,) = [o for o in moved.outcomes if o.key == "SelectType"]
    assert outcome.kind == "changed"
    assert "Slurm 23.11 removed select/cons_res" in outcome.target
    assert not moved.findings


def test_procs_on_a_node_line_is_read_as_its_cpus_where_no_cpus_is_given(
    tmp_path: Path,
) -> None:
    """read_config.c of 22.05 and 24.11 (_parse_nodename): a node's CPUs come from CPUs=,
    else from Procs=, its old name; a Procs next to a CPUs is not read."""
    result = imported(tmp_path, BASE + "NodeName=n[0-1] Procs=2\nPartitionName=p Nodes=n[0-1]\n")
    (pool,) = data(result)["node_pools"]
    assert pool["cpu"] == {"sockets": 2, "cores_per_socket": 1, "threads_per_core": 1}
    assert kinds(result)["Procs"] == "mapped"
    both = imported(tmp_path, BASE + "NodeName=n1 CPUs=4 Procs=2\nPartitionName=p Nodes=n1\n")
    assert data(both)["node_pools"][0]["cpu"]["sockets"] == 4
    assert kinds(both)["Procs"] == "dropped"


def test_a_gpu_site_without_accounting_storage_tres_tracks_slurms_default_tres_only(
    tmp_path: Path,
) -> None:
    """slurm.conf(5) of 22.05 and 24.11, AccountingStorageTRES: without it slurmdbd tracks
    Billing, CPU, Energy, Memory, Node, FS/Disk, Pages and VMem only. Import writes them,
    so the render tracks no GPU TRES either (estategen's default adds gres/gpu and
    gres/gpu:TYPE); the partition bills CPUs only, so nothing names a GPU TRES."""
    text = (
        BASE + "AccountingStorageType=accounting_storage/slurmdbd\nGresTypes=gpu\n"
        "SelectType=select/cons_tres\n"
        "NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:nvidia:1\nPartitionName=p Nodes=g1\n"
    )
    result = imported(tmp_path, text, "24.11")
    tres = data(result)["slurm"]["accounting"]["tres"]
    assert tres == ["cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages"]
    assert not result.findings
    blueprint = tmp_path / "b.yaml"
    blueprint.write_text(result.text)
    assert run_cli("render", blueprint, "-o", tmp_path / "out").returncode == 0
    conf = slurmconf.parse_file(tmp_path / "out" / "slurm" / "slurm.conf")
    rendered = conf.parameter("AccountingStorageTRES")
    assert rendered is not None and "gres" not in rendered.value
    # a site that sets none and has no GPUs keeps estategen's default (nothing to add)
    plain = imported(tmp_path, BASE + "AccountingStorageType=accounting_storage/slurmdbd\n" + NODES)
    assert "tres" not in data(plain)["slurm"]["accounting"]


def test_a_release_only_the_next_debian_installs_gets_that_package_source(
    tmp_path: Path,
) -> None:
    result = imported(tmp_path, BASE + NODES, "24.11")
    assert data(result)["slurm"]["packages"] == {"source": "debian-13"}
    assert any("import chose debian-13" in note for note in result.reviews)
    assert not result.findings
    assert "packages" not in data(imported(tmp_path, BASE + NODES, "22.05"))["slurm"]


# --- never abort blind ---------------------------------------------------------------------


def test_a_value_validate_refuses_is_refused_at_its_line_and_the_rest_written(
    tmp_path: Path,
) -> None:
    """A team named admin is reserved: the AllowAccounts line is refused at its place with
    validate's reason, and the blueprint is written and validates."""
    result = imported(
        tmp_path,
        BASE + "AccountingStorageType=accounting_storage/slurmdbd\n"
        "NodeName=n[1-2] CPUs=4\nPartitionName=ops Nodes=n[1-2] AllowAccounts=admin\n",
    )
    (refused,) = [o for o in result.outcomes if o.kind == "refused"]
    assert (refused.key, refused.where.line, refused.where.column) == ("AllowAccounts", 5, 32)
    assert "'admin' is reserved" in refused.target
    assert "teams" not in data(result)["slurm"]["partitions"][0]
    assert "<imported>" not in result.text
    blueprint = tmp_path / "b.yaml"
    blueprint.write_text(result.text)
    assert run_cli("validate", blueprint).returncode == 0


def test_import_writes_the_blueprint_and_exits_4_with_one_line_when_it_is_not_the_site(
    tmp_path: Path,
) -> None:
    source = tmp_path / "slurm.conf"
    source.write_text(BASE + "AuthType=auth/none\n" + NODES)
    out = tmp_path / "site.yaml"
    result = run_cli("import", source, "-o", out)
    assert result.returncode == 4, result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"{out}: wrote the blueprint, but its render would not be the site's: 1 refused "
        "(listed at the end of the blueprint)"
    )
    assert f"#   {source}:3:1: AuthType=auth/none  # " in out.read_text()
    assert run_cli("validate", out).returncode == 0


def test_import_exits_0_when_the_render_keeps_every_setting(tmp_path: Path) -> None:
    source = tmp_path / "slurm.conf"
    source.write_text(BASE + "CacheGroups=0\n" + NODES)
    result = run_cli("import", source, "-o", tmp_path / "site.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"{tmp_path / 'site.yaml'}: wrote the blueprint"
    assert "dropped: CacheGroups=0 -> Slurm 21.08 removed CacheGroups" in result.stdout


def test_validate_refuses_a_removed_key_in_slurm_options_for_the_target_release(
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "b.yaml"
    blueprint.write_text(
        "estate: lab\nnode_pools:\n  - {name: n, scheduler: slurm, hosts: n1,\n"
        "     cpu: {sockets: 1, cores_per_socket: 4}, memory_gb: 8}\n"
        "slurm:\n  controllers: [ctl]\n  partitions: [{name: p, pools: [n]}]\n"
        '  options: {FastSchedule: "2"}\n'
    )
    result = run_cli("validate", blueprint)
    assert result.returncode == 1
    assert (
        "slurm.options.FastSchedule: Slurm 22.05 removed FastSchedule, and slurmctld 22.05 "
        "(versions.slurm) refuses a slurm.conf that sets it; use SlurmdParameters="
        "config_overrides (FastSchedule=2) [check/slurm-options-not-removed]"
    ) in result.stdout


def test_an_include_of_a_site_path_reads_the_file_of_that_name_beside_slurm_conf(
    tmp_path: Path,
) -> None:
    """Files copied from /opt/slurm/etc to a laptop keep their absolute Include lines."""
    (tmp_path / "nodes.conf").write_text("NodeName=n[1-2] CPUs=4\n")
    result = imported(
        tmp_path,
        BASE + "Include /opt/site-slurm/etc/nodes.conf\nPartitionName=p Nodes=n[1-2]\n",
    )
    assert data(result)["node_pools"][0]["hosts"] == "n[1-2]"
    assert str(tmp_path / "nodes.conf") in result.inputs
    assert any(
        "Include /opt/site-slurm/etc/nodes.conf is not on this machine; import read "
        f"{tmp_path / 'nodes.conf'}" in note
        for note in result.reviews
    )


def site_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A site's slurm.conf with an absolute Include, its files copied under site/ at their
    own paths, and a stale nodes.conf beside the slurm.conf given."""
    root = tmp_path / "site"
    (root / "opt/site-slurm/etc").mkdir(parents=True)
    (root / "opt/site-slurm/etc/nodes.conf").write_text("NodeName=n[1-2] CPUs=4\n")
    (tmp_path / "nodes.conf").write_text("NodeName=n[7-9] CPUs=2\n")
    source = tmp_path / "slurm.conf"
    source.write_text(BASE + "Include /opt/site-slurm/etc/nodes.conf\nPartitionName=p Nodes=ALL\n")
    return source, root


def test_site_root_reads_an_absolute_include_at_its_path_under_it(tmp_path: Path) -> None:
    """--site-root DIR stands for the site's /: Include /opt/site-slurm/etc/nodes.conf is
    DIR/opt/site-slurm/etc/nodes.conf, before the file of that name beside slurm.conf, and
    the report says which file was read."""
    source, root = site_tree(tmp_path)
    out = tmp_path / "site.yaml"
    result = run_cli("import", source, "--site-root", root, "-o", out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(out.read_text())["node_pools"][0]["hosts"] == "n[1-2]"
    read = root / "opt/site-slurm/etc/nodes.conf"
    assert f"{read}:1:1: mapped: NodeName=n[1-2]" in result.stdout
    assert (
        f"review: {source}:3:9: Include /opt/site-slurm/etc/nodes.conf: import read {read}, "
        "the file at that path under the site root"
    ) in result.stdout


def test_site_root_without_the_file_falls_back_to_the_file_beside_and_says_so(
    tmp_path: Path,
) -> None:
    source, root = site_tree(tmp_path)
    (root / "opt/site-slurm/etc/nodes.conf").unlink()
    result = import_site(source, site_root=root)
    assert data(result)["node_pools"][0]["hosts"] == "n[7-9]"
    assert any(
        f"Include /opt/site-slurm/etc/nodes.conf is not under the site root {root}; import "
        f"read {tmp_path / 'nodes.conf'}, the file of that name beside the file given" in note
        for note in result.reviews
    )


def test_site_root_that_is_not_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    source, root = site_tree(tmp_path)
    result = run_cli("import", source, "--site-root", root / "absent", "-o", tmp_path / "o.yaml")
    assert result.returncode == 2
    assert f"--site-root {root / 'absent'}: not a folder" in result.stderr
    assert "Traceback" not in result.stderr


# --- every form slurm.conf(5) allows ---------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SPACES = st.sampled_from(["", " ", "  ", "\t"])
_KEY_CASE = st.sampled_from([str, str.lower, str.upper])


@st.composite
def _pair(draw: st.DrawFn, key: str, value: str) -> str:
    """``key=value`` as slurm.conf(5) allows it written: any key case, spaces around ``=``
    (parse_config.c), the value quoted or not."""
    written = draw(_KEY_CASE)(key)
    quoted = f'"{value}"' if draw(st.booleans()) else value
    return f"{written}{draw(_SPACES)}={draw(_SPACES)}{quoted}"


@st.composite
def _site(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A slurm.conf in the forms slurm.conf(5) allows, and what slurmctld reads from it."""
    count = draw(st.integers(1, 12))
    cpus = draw(st.integers(1, 64))
    memory = draw(st.integers(1000, 500_000))
    weight = draw(st.integers(1, 1000))
    default_line = draw(st.booleans())
    lines = [draw(_pair("ClusterName", "lab")), draw(_pair("SlurmctldHost", "ctl"))]
    node = [draw(_pair("RealMemory", str(memory))), draw(_pair("Weight", str(weight)))]
    if default_line:  # NodeName=DEFAULT gives the CPUs to the lines after it
        lines.append(f"{draw(_pair('NodeName', 'DEFAULT'))} {draw(_pair('CPUs', str(cpus)))}")
    else:
        node.insert(0, draw(_pair("CPUs", str(cpus))))
    hosts = f"cn[1-{count}]" if count > 1 else "cn1"
    head = draw(_pair("NodeName", hosts))
    separator = draw(st.sampled_from([" ", " \\\n  ", "\t"]))  # continuation lines too
    lines.append(head + separator + separator.join(node) + draw(st.sampled_from(["", " # c"])))
    lines.append(f"{draw(_pair('PartitionName', 'batch'))} {draw(_pair('Nodes', hosts))}")
    expected = {"cpus": cpus, "memory": memory, "weight": weight, "hosts": hosts}
    return "\n".join(lines) + "\n", expected


@settings(max_examples=60, deadline=None)
@given(_site())
def test_import_reads_every_form_slurm_conf_allows(site: tuple[str, dict[str, Any]]) -> None:
    import tempfile

    text, expected = site
    with tempfile.TemporaryDirectory() as folder:
        result = imported(Path(folder), text)
    doc = data(result)
    (pool,) = doc["node_pools"]
    assert doc["slurm"]["cluster_name"] == "lab"
    assert doc["slurm"]["controllers"] == ["ctl"]
    assert pool["hosts"] == expected["hosts"]
    assert pool["cpu"]["sockets"] * pool["cpu"]["cores_per_socket"] == expected["cpus"]
    assert pool["memory_gb"] == -(-expected["memory"] // 1024)
    assert pool.get("real_memory_mib", expected["memory"]) == expected["memory"]
    assert pool["weight"] == expected["weight"]
    assert doc["slurm"]["partitions"][0]["pools"] == [pool["name"]]
