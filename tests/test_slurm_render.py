"""Slurm rendering as specifications: a blueprint fragment in, a fact about the files out."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.render import render
from estategen.slurm_facts import slurm_hostlist

from conftest import BLUEPRINTS

GOLDEN = Path(__file__).parent / "golden" / "slurm"

BASE = """\
estate: t
versions: {slurm: "23.11"}
identity:
  users: [{name: alice, uid: 10001}, {name: bob, uid: 10002}]
  teams:
    - {name: vision, gid: 20001, members: [alice, bob], fairshare: 30}
    - {name: nlp, gid: 20002, members: [bob], fairshare: 70}
slurm:
  controllers: [ctl-01, ctl-02]
  packages:
    source: site
    apt_repository: "deb https://slurm.example.org/debian bookworm main"
    nvml: true
    jwt: true
"""

H100 = """\
  - name: h100
    scheduler: slurm
    hosts: gpu-[01-04]
    cpu: {sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    gpus: {model: h100-sxm-80gb, count: 8}
"""


ACCOUNTING = """\
  accounting:
    host: dbd
    database: {host: db, password: {secret: db_pw}}
"""


REST_API = """\
  rest_api: {host: ctl-01, jwt_key: {secret: slurm_jwt}}
"""


def rendered(extra: str, pools: str = H100, base: str = BASE) -> dict[str, str]:
    text = base + extra + "node_pools:\n" + pools
    result = validate_document(parse_blueprint(text.encode(), "t.yaml"))
    return {path: f.content.decode() for path, f in render(result.estate).items()}


def conf_lines(files: dict[str, str], path: str = "slurm/slurm.conf") -> list[str]:
    return [line for line in files[path].splitlines() if line and not line.startswith("#")]


def line_for(files: dict[str, str], prefix: str, path: str = "slurm/slurm.conf") -> str:
    (line,) = [line for line in conf_lines(files, path) if line.startswith(prefix)]
    return line


def fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def test_controllers_are_listed_primary_first() -> None:
    files = rendered("")
    hosts = [line for line in conf_lines(files) if line.startswith("SlurmctldHost=")]
    assert hosts == ["SlurmctldHost=ctl-01", "SlurmctldHost=ctl-02"]


def test_one_node_line_per_pool_with_hostlist_ranges() -> None:
    node = fields(line_for(rendered(""), "NodeName="))
    assert node["NodeName"] == "gpu-[01-04]"
    assert node["Sockets"] == "2" and node["CoresPerSocket"] == "56"
    assert node["ThreadsPerCore"] == "2"
    assert node["Gres"] == "gpu:h100-sxm-80gb:8"
    assert node["Feature"] == "h100-sxm-80gb"


def test_real_memory_keeps_a_five_percent_reserve() -> None:
    node = fields(line_for(rendered(""), "NodeName="))
    assert node["RealMemory"] == str(2048 * 1024 - int(2048 * 1024 * 0.05))


def test_small_nodes_keep_at_least_two_gib() -> None:
    pools = H100.replace("memory_gb: 2048", "memory_gb: 16")
    assert fields(line_for(rendered("", pools), "NodeName="))["RealMemory"] == str(16 * 1024 - 2048)


@pytest.mark.parametrize("memory_gb", [1, 2, 3])
def test_the_smallest_nodes_keep_half_their_memory_for_jobs(memory_gb: int) -> None:
    pools = H100.replace("memory_gb: 2048", f"memory_gb: {memory_gb}")
    node = fields(line_for(rendered(PARTITIONS, pools), "NodeName="))
    assert node["RealMemory"] == str(memory_gb * 512)


def test_a_pool_with_more_threads_than_mib_still_gets_memory_per_cpu_and_gpu() -> None:
    pools = H100.replace("memory_gb: 2048", "memory_gb: 1").replace(
        "cores_per_socket: 56", "cores_per_socket: 512"
    )
    part = fields(line_for(rendered(PARTITIONS, pools), "PartitionName="))
    assert part["DefMemPerCPU"] == "1"
    assert part["DefMemPerGPU"] == str(512 // 8)


def test_gres_types_and_accounting_tres_follow_the_gpus_used() -> None:
    files = rendered(ACCOUNTING)
    assert "GresTypes=gpu" in conf_lines(files)
    assert "AccountingStorageTRES=gres/gpu,gres/gpu:h100-sxm-80gb" in conf_lines(files)


def test_without_accounting_no_gres_tres_is_named() -> None:
    """slurmctld without slurmdbd: 'fatal: slurmdbd is required to run with TRES gres/gpu'."""
    files = rendered(PARTITIONS)
    assert not [line for line in conf_lines(files) if line.startswith("AccountingStorage")]
    part = fields(line_for(files, "PartitionName="))
    assert part["TRESBillingWeights"] == "CPU=1.0,Mem=0.25G"


@pytest.mark.parametrize(
    ("release", "line"),
    [(release, "AccountingStorageType=accounting_storage/none") for release in ("22.05", "23.02")]
    + [(release, None) for release in ("23.11", "24.05", "24.11", "25.05")],
)
def test_without_accounting_the_storage_type_is_none_until_slurm_removed_it(
    release: str, line: str | None
) -> None:
    """Up to 23.02 no accounting is accounting_storage/none; 23.11 removed that plugin, and
    its slurm.conf(5) lists only accounting_storage/slurmdbd: "When this is not set it
    indicates that account records are not maintained"."""
    files = rendered(PARTITIONS, base=BASE.replace('"23.11"', f'"{release}"'))
    shown = [line for line in conf_lines(files) if line.startswith("AccountingStorageType")]
    assert shown == ([line] if line else [])


def test_cpu_only_estate_has_no_gres() -> None:
    pools = "  - {name: cpu, scheduler: slurm, hosts: c1, cpu: {sockets: 1, cores_per_socket: 4},\n"
    pools += "     memory_gb: 8}\n"
    files = rendered("", pools)
    assert not any(line.startswith("GresTypes") for line in conf_lines(files))
    assert "Gres=" not in files["slurm/slurm.conf"]
    assert conf_lines(files, "slurm/gres.conf") == []


def test_gres_conf_names_device_files_per_gpu() -> None:
    gres = line_for(rendered(""), "NodeName=", "slurm/gres.conf")
    assert gres == (
        "NodeName=gpu-[01-04] AutoDetect=off Name=gpu Type=h100-sxm-80gb File=/dev/nvidia[0-7]"
    )


def test_mig_pool_counts_instances_per_profile_and_autodetects() -> None:
    pools = H100.replace(
        "count: 8}", 'count: 8, mig: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}'
    )
    files = rendered("", pools)
    node = fields(line_for(files, "NodeName="))
    assert node["Gres"] == "gpu:1g.10gb:16,gpu:2g.20gb:8,gpu:3g.40gb:8"
    gres = conf_lines(files, "slurm/gres.conf")
    assert "NodeName=gpu-[01-04] AutoDetect=nvml" in gres
    assert "NodeName=gpu-[01-04] Name=gpu Type=3g.40gb Count=8" in gres


def test_mig_instances_of_a_pool_with_a_gres_type_are_typed_as_nvml_names_them() -> None:
    """gpus.gres_type on a MIG pool is the name NVML gives the instances before their
    profile: Slurm's gpu_nvml names a MIG instance by its GPU's name up to the first '-', '_'
    and the profile (src/plugins/gpu/nvml/gpu_nvml.c, the MIG branch of
    ``_get_system_gpu_list_nvml`` and ``_handle_mig``, SchedMD/slurm slurm-24-11-0-1), and
    cuts a detected type down to a configured Type that is part of it
    (src/plugins/gres/gpu/gres_gpu.c ``_normalize_sys_gres_types``,
    ``_find_type_in_gres_list``: ``xstrcasestr``). slurm.conf, gres.conf, the TRES and the billing
    weights all name gpu:nvidia_h100_3g.40gb; the health check still counts nvidia-smi's
    "MIG 3g.40gb" devices."""
    from estategen.renderers.slurm import health_check_program

    pools = H100.replace(
        "count: 8}",
        'count: 8, mig: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], gres_type: nvidia_h100}',
    )
    files = rendered(ACCOUNTING + PARTITIONS, pools)
    node = fields(line_for(files, "NodeName="))
    assert node["Gres"] == (
        "gpu:nvidia_h100_1g.10gb:16,gpu:nvidia_h100_2g.20gb:8,gpu:nvidia_h100_3g.40gb:8"
    )
    gres = conf_lines(files, "slurm/gres.conf")
    assert "NodeName=gpu-[01-04] Name=gpu Type=nvidia_h100_3g.40gb Count=8" in gres
    assert "gres/gpu:nvidia_h100_3g.40gb" in fields(line_for(files, "AccountingStorageTRES="))[
        "AccountingStorageTRES"
    ].split(",")
    weights = line_for(files, "PartitionName=").split("TRESBillingWeights=")[1]
    assert "GRES/gpu:nvidia_h100_3g.40gb=8.57" in weights.split(",")
    text = BASE + ACCOUNTING + PARTITIONS + "node_pools:\n" + pools
    estate = validate_document(parse_blueprint(text.encode(), "t.yaml")).estate
    program = health_check_program(estate, estate.slurm_pools[0])
    assert "MIG 3g.40gb" in program and "nvidia_h100_3g" not in program


def test_gres_conf_names_a_pools_own_device_files() -> None:
    pools = H100.replace("count: 8}", "count: 2, files: [/dev/nvidia4, /dev/nvidia6]}")
    gres = line_for(rendered("", pools), "NodeName=", "slurm/gres.conf")
    assert gres == (
        "NodeName=gpu-[01-04] AutoDetect=off Name=gpu Type=h100-sxm-80gb "
        "File=/dev/nvidia4,/dev/nvidia6"
    )


def test_shards_add_a_shard_gres() -> None:
    files = rendered("", H100.replace("count: 8}", "count: 8, sharing: {shard: 4}}"))
    assert "GresTypes=gpu,shard" in conf_lines(files)
    assert fields(line_for(files, "NodeName="))["Gres"] == "gpu:h100-sxm-80gb:8,shard:32"
    assert "NodeName=gpu-[01-04] Name=shard Count=32" in conf_lines(files, "slurm/gres.conf")


def test_mps_shares_become_an_mps_gres_on_the_gpus_files() -> None:
    """gpus.sharing.mps is shares a GPU: the node's gres/mps count is shares x GPUs, and the
    gres.conf mps line names the gpu lines' files, over which slurmd spreads its Count
    (SchedMD/slurm slurm-22-05-8-1 doc/html/gres.shtml "MPS Management",
    src/plugins/gres/common/gres_c_s.c)."""
    files = rendered(ACCOUNTING, H100.replace("count: 8}", "count: 8, sharing: {mps: 100}}"))
    assert "GresTypes=gpu,mps" in conf_lines(files)
    assert fields(line_for(files, "NodeName="))["Gres"] == "gpu:h100-sxm-80gb:8,mps:800"
    gres = conf_lines(files, "slurm/gres.conf")
    assert "NodeName=gpu-[01-04] Name=mps Count=800 File=/dev/nvidia[0-7]" in gres
    tres = fields(line_for(files, "AccountingStorageTRES="))["AccountingStorageTRES"]
    assert "gres/mps" in tres.split(",")


def test_mps_names_a_pools_own_device_files_or_none_under_nvml() -> None:
    own = H100.replace(
        "count: 8}", "count: 2, files: [/dev/nvidia4, /dev/nvidia6], sharing: {mps: 50}}"
    )
    gres = conf_lines(rendered("", own), "slurm/gres.conf")
    assert "NodeName=gpu-[01-04] Name=mps Count=100 File=/dev/nvidia4,/dev/nvidia6" in gres
    nvml = H100.replace("count: 8}", "count: 8, autodetect: nvml, sharing: {mps: 100}}")
    gres = conf_lines(rendered("", nvml), "slurm/gres.conf")
    assert "NodeName=gpu-[01-04] Name=mps Count=800" in gres  # NVML finds the files


PARTITIONS = """\
  partitions:
    - {name: gpu, pools: [h100], default: true, max_time: "2-00:00:00", teams: [vision]}
"""


def test_partition_defaults_come_from_the_pool_shape() -> None:
    part = fields(line_for(rendered(PARTITIONS), "PartitionName="))
    assert part["Nodes"] == "gpu-[01-04]"
    assert part["Default"] == "YES"
    assert part["MaxTime"] == "2-00:00:00"
    assert part["AllowAccounts"] == "vision"
    assert part["DefCpuPerGPU"] == str(224 // 8)
    real_memory = 2048 * 1024 - int(2048 * 1024 * 0.05)
    assert part["DefMemPerGPU"] == str(real_memory // 8)


def test_gpus_are_billed_by_model() -> None:
    part = fields(line_for(rendered(ACCOUNTING + PARTITIONS), "PartitionName="))
    assert part["TRESBillingWeights"] == "CPU=1.0,Mem=0.25G,GRES/gpu:h100-sxm-80gb=20"


def test_cpu_partitions_get_memory_per_cpu() -> None:
    pools = "  - {name: cpu, scheduler: slurm, hosts: c1, cpu: {sockets: 2, cores_per_socket: 8},\n"
    pools += "     memory_gb: 64}\n"
    extra = "  partitions:\n    - {name: cpu, pools: [cpu]}\n"
    part = fields(line_for(rendered(extra, pools), "PartitionName="))
    assert part["DefMemPerCPU"] == str((64 * 1024 - 3276) // 16)
    assert "DefMemPerGPU" not in part


def test_a_partition_over_cpu_and_gpu_pools_gives_every_job_default_memory() -> None:
    """Without DefMemPerCPU a CPU-only job there would take a whole node's memory."""
    pools = H100 + "  - {name: cpu, scheduler: slurm, hosts: c1, memory_gb: 64,\n"
    pools += "     cpu: {sockets: 2, cores_per_socket: 8}}\n"
    extra = "  partitions:\n    - {name: all, pools: [h100, cpu]}\n"
    part = fields(line_for(rendered(extra, pools), "PartitionName="))
    gpu_node_per_cpu = (2048 * 1024 - int(2048 * 1024 * 0.05)) // 224
    cpu_node_per_cpu = (64 * 1024 - 3276) // 16
    assert part["DefMemPerCPU"] == str(min(gpu_node_per_cpu, cpu_node_per_cpu))
    assert part["DefCpuPerGPU"] == str(224 // 8)
    assert part["DefMemPerGPU"] == str((2048 * 1024 - int(2048 * 1024 * 0.05)) // 8)


@pytest.mark.parametrize(
    ("written", "rendered_as"),
    [
        ("7-0:00:99", "7-00:02:00"),
        ("2:75:00", "03:15:00"),
        ("1-25", "2-01:00:00"),
        ("90", "01:30:00"),
        ("0:90", "00:02:00"),
        ("INFINITE", "UNLIMITED"),
    ],
)
def test_partition_times_are_rendered_the_way_slurm_normalises_them(
    written: str, rendered_as: str
) -> None:
    extra = f'  partitions:\n    - {{name: gpu, pools: [h100], max_time: "{written}"}}\n'
    assert fields(line_for(rendered(extra), "PartitionName="))["MaxTime"] == rendered_as


def test_priority_and_preemption_follow_scheduling() -> None:
    extra = """\
  scheduling:
    priority_weights: {fairshare: 10000, qos: 5000}
    fairshare_half_life: 14-0
    preemption: {type: qos, mode: suspend}
"""
    lines = conf_lines(rendered(extra))
    assert "PriorityWeightFairshare=10000" in lines
    assert "PriorityWeightQOS=5000" in lines
    assert "PriorityDecayHalfLife=14-00:00:00" in lines
    assert "PreemptType=preempt/qos" in lines
    assert "PreemptMode=SUSPEND,GANG" in lines


def test_backfill_looks_as_far_ahead_as_the_longest_partition() -> None:
    extra = "  partitions:\n    - {name: long, pools: [h100], max_time: 14-00:00:00}\n"
    params = line_for(rendered(extra), "SchedulerParameters=")
    assert "bf_window=20160" in params.split("=", 1)[1].split(",")


def test_options_pass_through_after_the_owned_keys() -> None:
    lines = conf_lines(rendered("  options: {MaxJobCount: 50000, SlurmctldTimeout: 120}\n"))
    assert lines.index("MaxJobCount=50000") > lines.index("ClusterName=t")
    assert "SlurmctldTimeout=120" in lines


def test_tree_topology_spreads_hosts_over_leaves_under_a_spine() -> None:
    pools = H100.replace("    gpus:", '    network: {switch: "leaf-[1-2]"}\n    gpus:')
    pools += (
        "  - {name: cpu, scheduler: slurm, hosts: c1, cpu: {sockets: 1, cores_per_socket: 4},\n"
    )
    pools += "     memory_gb: 8}\n"
    files = rendered("", pools)
    assert "TopologyPlugin=topology/tree" in conf_lines(files)
    topology = conf_lines(files, "slurm/topology.conf")
    assert topology == [
        "SwitchName=cpu-leaf Nodes=c1",
        "SwitchName=leaf-1 Nodes=gpu-[01-02]",
        "SwitchName=leaf-2 Nodes=gpu-[03-04]",
        "SwitchName=t-spine Switches=cpu-leaf,leaf-[1-2]",
    ]


def test_block_topology_gets_block_sizes_from_24_05() -> None:
    pools = H100.replace("    gpus:", '    network: {block: "nvl-[1-2]"}\n    gpus:')
    old = rendered("", pools)
    new = rendered("", pools, BASE.replace('"23.11"', '"24.05"'))
    assert "TopologyPlugin=topology/block" in conf_lines(old)
    assert "BlockName=nvl-1 Nodes=gpu-[01-02]" in conf_lines(old, "slurm/topology.conf")
    assert not any(line.startswith("BlockSizes") for line in conf_lines(old, "slurm/topology.conf"))
    assert "BlockSizes=2" in conf_lines(new, "slurm/topology.conf")


ACCOUNTING = """\
  accounting:
    host: dbd-01
    database: {host: db-01, password: {secret: slurmdbd_db}}
  qos:
    - {name: normal}
    - {name: high, priority: 100, max_gpus_per_user: 16, preempt: [normal]}
"""


def test_slurmdbd_conf_is_private_and_holds_only_a_reference() -> None:
    text = BASE + ACCOUNTING + "node_pools:\n" + H100
    estate = validate_document(parse_blueprint(text.encode(), "t.yaml")).estate
    dbd = render(estate)["slurm/slurmdbd.conf"]
    assert dbd.mode == 0o600
    assert "StoragePass={{ slurmdbd_db }}" in dbd.content.decode().splitlines()
    assert "DbdHost=dbd-01" in dbd.content.decode().splitlines()


def test_accounting_enforces_associations_limits_and_qos() -> None:
    lines = conf_lines(rendered(ACCOUNTING))
    assert "AccountingStorageType=accounting_storage/slurmdbd" in lines
    assert "AccountingStorageHost=dbd-01" in lines
    assert "AccountingStorageEnforce=associations,limits,qos,safe" in lines


def test_sacct_cfg_has_an_account_per_team_and_users_under_them() -> None:
    lines = conf_lines(rendered(ACCOUNTING), "slurm/sacct.cfg")
    assert lines[0] == "Cluster - 't':Fairshare=1"
    assert "Account - 'vision':Description='team vision':Organization='t':Fairshare=30" in lines
    assert "Account - 'nlp':Description='team nlp':Organization='t':Fairshare=70" in lines
    nlp = lines.index("Parent - 'nlp'")
    assert lines[nlp + 1] == "User - 'bob':DefaultAccount='vision':Fairshare=1"


def test_partition_limits_are_written_on_the_partition_line_in_slurm_conf_order() -> None:
    limits = "min_nodes: 2, max_nodes: 4, grace_time: 60, max_cpus_per_node: 32"
    extra = f"  partitions:\n    - {{name: gpu, pools: [h100], default: true, {limits}}}\n"
    fields = line_for(rendered(extra), "PartitionName=gpu").split()
    written = [f for f in fields if f.split("=")[0] in {"GraceTime", "MinNodes", "MaxNodes",
                                                          "MaxCPUsPerNode"}]  # fmt: skip
    assert written == ["GraceTime=60", "MinNodes=2", "MaxNodes=4", "MaxCPUsPerNode=32"]


def test_qos_commands_define_limits_and_grant_the_qos() -> None:
    lines = conf_lines(rendered(ACCOUNTING), "slurm/qos.sacctmgr")
    assert lines[:2] == ["add qos normal", "add qos high"]
    assert (
        "modify qos where name=high set Priority=100 UsageFactor=1 Preempt=normal "
        "PreemptMode=cluster MaxTRESPerUser=gres/gpu=16 MaxWall=-1"
    ) in lines
    assert lines[-2:] == [
        "modify account where name=t cluster=t set QOS=normal,high DefaultQOS=normal",
        "modify account where parent=t cluster=t set QOS=normal,high DefaultQOS=normal",
    ]


@pytest.mark.parametrize(
    ("version", "teams_too"),
    [
        ("22.05", False),
        ("23.02", False),
        ("23.11", True),
        ("24.05", True),
        ("24.11", True),
        ("25.05", True),
        ("25.11", False),
    ],
)
def test_from_23_11_to_25_05_the_qos_are_granted_to_the_team_accounts_too(
    version: str, teams_too: bool
) -> None:
    """slurmdbd 23.11 to 25.05.0 sends a change of an account to its sub-accounts but not on
    to their users: granted on the estate's account alone, a running slurmctld 24.11 refused
    the QoS to every team's user (Invalid qos specification) until it next read the
    associations. Granted on the teams (by parent) as well, the change reaches their users."""
    base = BASE.replace('versions: {slurm: "23.11"}', f'versions: {{slurm: "{version}"}}')
    lines = conf_lines(rendered(ACCOUNTING, base=base), "slurm/qos.sacctmgr")
    grants = [line for line in lines if line.startswith("modify account ")]
    estate = "modify account where name=t cluster=t set QOS=normal,high DefaultQOS=normal"
    teams = "modify account where parent=t cluster=t set QOS=normal,high DefaultQOS=normal"
    assert grants == ([estate, teams] if teams_too else [estate])


def test_without_teams_the_qos_are_granted_to_the_estate_account_alone() -> None:
    """sacctmgr fails on a change that selects no account ("Request didn't affect anything",
    real sacctmgr 24.11), as the teams' grant would without teams."""
    base = BASE.replace('versions: {slurm: "23.11"}', 'versions: {slurm: "24.11"}')
    identity = base[base.index("identity:") : base.index("\nslurm:") + 1]
    lines = conf_lines(rendered(ACCOUNTING, base=base.replace(identity, "")), "slurm/qos.sacctmgr")
    grants = [line for line in lines if line.startswith("modify account ")]
    assert grants == ["modify account where name=t cluster=t set QOS=normal,high DefaultQOS=normal"]


def test_a_qos_preempt_mode_is_the_qos_preempt_mode_and_cluster_unsets_it() -> None:
    """sacctmgr(1): a QoS's PreemptMode overrides the cluster-wide one under preempt/qos, and
    "Cluster" unsets it, so a preempt_mode taken out of the blueprint is taken off the QoS."""
    fragment = (
        ACCOUNTING.replace("- {name: normal", "- {name: normal, preempt_mode: cancel")
        + "  scheduling: {preemption: {type: qos, mode: requeue}}\n"
    )
    assert fragment != ACCOUNTING
    lines = conf_lines(rendered(fragment), "slurm/qos.sacctmgr")
    (normal,) = [line for line in lines if line.startswith("modify qos where name=normal ")]
    (high,) = [line for line in lines if line.startswith("modify qos where name=high ")]
    assert " PreemptMode=cancel " in normal
    assert " PreemptMode=cluster " in high


def test_no_slurm_files_without_slurm_pools() -> None:
    pools = "  - {name: k, scheduler: kubernetes, cluster: c, hosts: k1}\n"
    extra = "kubernetes:\n  clusters: [{name: c}]\n"
    base = BASE.split("slurm:\n", 1)[0]
    assert not any(path.startswith("slurm/") for path in rendered(extra, pools, base))


def golden_cases() -> list[tuple[str, str]]:
    return (
        [("campus", version) for version in ("22.05", "23.11", "24.05")]
        + [("blocks", version) for version in ("23.11", "24.05")]
        # JWT for slurmrestd, on releases whose packages commonly carry auth_jwt.so
        + [("restapi", version) for version in ("23.11", "24.05")]
    )


def blueprint_text(name: str, version: str) -> str:
    if name == "campus":
        text = (BLUEPRINTS / "campus.yaml").read_text()
    elif name == "restapi":
        text = BASE + ACCOUNTING + REST_API + "node_pools:\n" + H100
    else:
        text = (
            BASE
            + ACCOUNTING
            + "node_pools:\n"
            + H100.replace("    gpus:", '    network: {block: "nvl-[1-2]"}\n    gpus:')
        )
    return re.sub(r'slurm: "\d+\.\d+"', f'slurm: "{version}"', text)


@pytest.mark.parametrize(("name", "version"), golden_cases())
def test_golden_slurm_files(name: str, version: str) -> None:
    """Pinned output; refresh with ESTATEGEN_UPDATE_GOLDEN=1 and read the diff."""
    text = blueprint_text(name, version)
    estate = validate_document(parse_blueprint(text.encode(), f"{name}.yaml")).estate
    files = {p: f.content for p, f in render(estate).items() if p.startswith("slurm/")}
    folder = GOLDEN / f"{name}-{version}"
    if os.environ.get("ESTATEGEN_UPDATE_GOLDEN") == "1":
        for path, content in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(content)
    pinned = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert pinned == files


def test_golden_versions_differ_only_where_slurm_did() -> None:
    old = (GOLDEN / "blocks-23.11" / "slurm" / "topology.conf").read_text()
    new = (GOLDEN / "blocks-24.05" / "slurm" / "topology.conf").read_text()
    assert "BlockSizes" not in old and "BlockSizes" in new
    assert textwrap.dedent(old).count("BlockName=") == new.count("BlockName=")


def test_host_names_with_text_after_the_number_are_written_out_for_slurm() -> None:
    """Slurm reads no text after a hostlist bracket: 'Invalid hostlist: n[1-2]-ib'."""
    pools = H100.replace("gpu-[01-04]", "gpu-[01-02]-ib")
    files = rendered(PARTITIONS, pools)
    assert fields(line_for(files, "NodeName="))["NodeName"] == "gpu-01-ib,gpu-02-ib"
    assert fields(line_for(files, "PartitionName="))["Nodes"] == "gpu-01-ib,gpu-02-ib"


def test_default_leaf_switches_of_several_pools_are_named_one_by_one() -> None:
    """Pools without `network.switch` get a leaf named after them: cpu1-leaf, cpu2-leaf."""
    pools = H100.replace("    gpus:", '    network: {switch: "sw-1"}\n    gpus:')
    for name in ("cpu1", "cpu2"):
        pools += f"  - {{name: {name}, scheduler: slurm, hosts: {name}-node, memory_gb: 8,\n"
        pools += "     cpu: {sockets: 1, cores_per_socket: 4}}\n"
    topology = conf_lines(rendered("", pools), "slurm/topology.conf")
    spine = [line for line in topology if line.startswith("SwitchName=t-spine")]
    assert spine == ["SwitchName=t-spine Switches=cpu1-leaf,cpu2-leaf,sw-1"]


@pytest.mark.parametrize(
    ("addresses", "written"),
    [
        (["10.1.0.9", "10.1.0.10", "10.1.0.11"], "10.1.0.[9-11]"),
        (["10.1.0.2", "10.1.0.1"], "10.1.0.2,10.1.0.1"),  # order is the hosts', kept
        (["n08", "n09", "n10"], "n[08-10]"),
        (["n09", "n010"], "n09,n010"),  # padding changes: not one range
        (["fe80::1", "fe80::2", "ctl.example.org"], "fe80::1,fe80::2,ctl.example.org"),
    ],
)
def test_node_addresses_are_written_in_host_order_with_ranges(
    addresses: list[str], written: str
) -> None:
    """slurm.conf(5) NodeAddr pairs with NodeName's hosts in order; runs become ranges."""
    from estategen import hostlist
    from estategen.slurm_facts import address_list

    assert address_list(addresses) == written
    assert hostlist.expand(written, addresses=True) == addresses


@pytest.mark.parametrize(
    ("names", "written"),
    [
        (["gpu-01", "gpu-02", "login"], "gpu-[01-02],login"),
        (["n1-ib", "n2-ib", "m1", "m2"], "m[1-2],n1-ib,n2-ib"),
        (["a1", "a2", "b1-x"], "a[1-2],b1-x"),
        (["n1-ib"], "n1-ib"),
    ],
)
def test_a_slurm_hostlist_writes_out_only_ranges_that_text_follows(
    names: list[str], written: str
) -> None:
    assert slurm_hostlist(names) == written


# --- several GPU types on one node ---------------------------------------------------------------

TWO_TYPES = """\
  - name: mixed
    scheduler: slurm
    hosts: gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 16, threads_per_core: 2}
    memory_gb: 512
    gpus: {model: l4-24gb, count: 2, other_types: [{model: l40s-48gb, count: 2}]}
"""
# what nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits prints for each
L4_MIB, L40S_MIB, H100_MIB = 23034, 46068, 81559


def test_a_node_of_two_gpu_types_has_a_typed_gres_and_a_feature_for_each() -> None:
    node = fields(line_for(rendered("", TWO_TYPES), "NodeName="))
    assert node["Gres"] == "gpu:l4-24gb:2,gpu:l40s-48gb:2"
    assert node["Feature"] == "l4-24gb,l40s-48gb"
    # the default weight follows the largest GPU: the node is chosen after smaller ones
    assert node["Weight"] == "49"


def test_each_gpu_type_gets_its_gres_conf_line_with_the_next_device_files() -> None:
    """gres.conf(5): one line a Type, whose File names that type's devices; without files the
    second type's numbering goes on after the first's."""
    assert conf_lines(rendered("", TWO_TYPES), "slurm/gres.conf") == [
        "NodeName=gpu-[01-02] AutoDetect=off Name=gpu Type=l4-24gb File=/dev/nvidia[0-1]",
        "NodeName=gpu-[01-02] AutoDetect=off Name=gpu Type=l40s-48gb File=/dev/nvidia[2-3]",
    ]
    own = TWO_TYPES.replace(
        "count: 2, other", "count: 2, files: [/dev/nvidia2, /dev/nvidia3], other"
    )
    own = own.replace("count: 2}]", "count: 2, files: [/dev/nvidia0, /dev/nvidia1]}]")
    assert [
        line.split("File=")[1] for line in conf_lines(rendered("", own), "slurm/gres.conf")
    ] == [
        "/dev/nvidia2,/dev/nvidia3",
        "/dev/nvidia0,/dev/nvidia1",
    ]


def test_partitions_count_and_bill_every_gpu_type_of_a_node() -> None:
    files = rendered(ACCOUNTING + PARTITIONS.replace("[h100]", "[mixed]"), TWO_TYPES)
    tres = fields(line_for(files, "AccountingStorageTRES="))["AccountingStorageTRES"].split(",")
    assert {"gres/gpu:l4-24gb", "gres/gpu:l40s-48gb"} <= set(tres)
    part = fields(line_for(files, "PartitionName="))
    assert part["TRESBillingWeights"] == (
        "CPU=1.0,Mem=0.25G,GRES/gpu:l4-24gb=6,GRES/gpu:l40s-48gb=12"
    )
    # 64 threads and the node's memory over its 4 GPUs, of both types
    assert part["DefCpuPerGPU"] == "16"
    real_memory = int(fields(line_for(files, "NodeName="))["RealMemory"])
    assert part["DefMemPerGPU"] == str(real_memory // 4)


def _health_check(tmp_path: Path, memory: list[int]) -> tuple[int, str]:
    """The pool's rendered health check run by sh with an nvidia-smi that prints ``memory``
    (MiB a GPU) and a scontrol that records its arguments; (exit status, the drain call)."""
    import subprocess

    from estategen.renderers.slurm import health_check_program

    text = (
        BASE
        + "  health_check: {interval: 60}\n"
        + "node_pools:\n"
        + TWO_TYPES.replace("memory_gb: 512", "memory_gb: 512\n    health_check: {checks: [gpus]}")
    )
    estate = validate_document(parse_blueprint(text.encode(), "t.yaml")).estate
    program = tmp_path / "healthcheck.sh"
    program.write_text(health_check_program(estate, estate.slurm_pools[0]))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(
        "#!/bin/sh\nprintf '%s\\n' " + " ".join(map(str, memory)) + "\n"
    )
    calls = tmp_path / "scontrol.log"
    (bin_dir / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    body = program.read_text().replace("PATH=/usr/local/sbin", f"PATH={bin_dir}:/usr/local/sbin")
    program.write_text(body)
    done = subprocess.run(
        ["sh", str(program)],
        env={"SLURMD_NODENAME": "gpu-01", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, calls.read_text().strip() if calls.exists() else ""


def test_the_health_check_passes_a_node_with_the_gpus_of_each_type(tmp_path: Path) -> None:
    assert _health_check(tmp_path, [L4_MIB, L4_MIB, L40S_MIB, L40S_MIB]) == (0, "")


@pytest.mark.parametrize(
    ("memory", "reason"),
    [
        ([L4_MIB, L4_MIB, L4_MIB, L40S_MIB], "1 of 2 l40s-48gb GPUs found"),
        ([L4_MIB, L4_MIB, L40S_MIB], "3 of 4 GPUs found"),
        ([L4_MIB, L4_MIB, L40S_MIB, H100_MIB], f"a GPU with {H100_MIB} MiB is none of"),
    ],
)
def test_the_health_check_drains_a_node_missing_gpus_of_a_type(
    tmp_path: Path, memory: list[int], reason: str
) -> None:
    status, drain = _health_check(tmp_path, memory)
    assert status == 1
    assert drain.startswith("update NodeName=gpu-01 State=DRAIN Reason=healthcheck gpus: ")
    assert reason in drain
