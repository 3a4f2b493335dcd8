"""Specification of a site's own Slurm settings (estategen.checks.slurm_site): a blueprint fragment
in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks
from estategen.errors import Finding

from .base import CLOUD_POOL, estate, only, run, where

# --- partition_site_settings_valid ---------------------------------------------------------------


def nodeset_findings(*nodesets: str) -> list[Finding]:
    parts = ", ".join(
        f"{{name: p{i}, pools: [a100], nodeset: {name}}}" for i, name in enumerate(nodesets)
    )
    return run(checks.partition_site_settings_valid, f"slurm: {{partitions: [{parts}]}}")


def test_a_partition_nodeset_passes() -> None:
    assert nodeset_findings("gpu_nodes") == []


@pytest.mark.parametrize(
    ("names", "path", "text"),
    [
        (("ALL",), "slurm.partitions[0].nodeset", "means every node"),
        (("lab-gpu-01",), "slurm.partitions[0].nodeset", "already the name of a node"),
        (("gpu_nodes", "gpu_nodes"), "slurm.partitions[1].nodeset", "the NodeSet of partition p0"),
    ],
)
def test_a_nodeset_name_slurm_would_confuse_is_refused(
    names: tuple[str, ...], path: str, text: str
) -> None:
    only(nodeset_findings(*names), path, text)


ADDRESSED = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        addresses: {addresses}
        cpu: {{sockets: 2, cores_per_socket: 32}}
        memory_gb: 512
        gpus: {{model: a100-sxm-80gb, count: 4}}
"""


# --- pool_site_settings_valid --------------------------------------------------------------------


def test_one_address_per_host_passes() -> None:
    found = run(checks.pool_site_settings_valid, ADDRESSED.format(addresses="'10.1.0.[1-2]'"))
    assert found == []
    addresses = estate(ADDRESSED.format(addresses="[10.1.0.7, 'fe80::2']")).node_pools[0].addresses
    assert addresses == ("10.1.0.7", "fe80::2")


def test_an_address_count_other_than_the_hosts_is_refused() -> None:
    found = run(checks.pool_site_settings_valid, ADDRESSED.format(addresses="10.1.0.1"))
    only(found, "node_pools[0].addresses", "1 addresses for 2 hosts")


def test_addresses_of_a_cloud_pool_are_refused() -> None:
    pools = CLOUD_POOL.replace(
        "hosts: burst-[01-04]", "hosts: burst-[01-04]\n        addresses: 'b[1-4]'"
    )
    found = run(checks.pool_site_settings_valid, pools)
    only(found, "node_pools[1].addresses", "the one its slurmd registers from")


def test_a_controller_address_names_a_controller() -> None:
    fragment = "slurm: {controller_addresses: {lab-ctl: 10.1.0.254, other: 10.1.0.253}}"
    found = run(checks.pool_site_settings_valid, fragment)
    only(found, "slurm.controller_addresses.other", "not in slurm.controllers")


def test_cpus_other_than_the_cores_are_refused() -> None:
    pools = ADDRESSED.replace("        addresses: {addresses}\n", "").replace(
        "cores_per_socket: 32}}", "cores_per_socket: 32, threads_per_core: 2, cpus: {cpus}}}"
    )
    assert run(checks.pool_site_settings_valid, pools.format(cpus=64)) == []
    found = run(checks.pool_site_settings_valid, pools.format(cpus=100))
    only(found, "node_pools[0].cpu.cpus", "give the cores (64")


# --- a site's own Slurm settings -----------------------------------------------------------------


def test_base_estate_keeps_estategens_slurm_settings() -> None:
    for check in (
        checks.slurm_site_settings_valid,
        checks.pool_site_settings_valid,
        checks.partition_site_settings_valid,
        checks.accounting_site_settings_valid,
    ):
        assert run(check) == []


def test_slurmd_port_inside_the_slurmctld_range_is_an_error() -> None:
    found = run(
        checks.slurm_site_settings_valid, 'slurm: {ports: {slurmctld: "6817-6820", slurmd: 6819}}'
    )
    only(found, "slurm.ports.slurmd", "port 6819 is slurmctld's (6817-6820)")


def test_two_daemon_paths_may_not_be_one_file() -> None:
    found = run(
        checks.slurm_site_settings_valid,
        "slurm: {paths: {slurmd_log_file: /var/log/slurm/slurmctld.log}}",
    )
    only(found, "slurm.paths.slurmd_log_file", "also slurm.paths.slurmctld_log_file")


def test_a_log_file_inside_the_state_folder_is_an_error() -> None:
    found = run(
        checks.slurm_site_settings_valid,
        "slurm: {paths: {state_save_location: /srv/slurm, "
        "slurmctld_log_file: /srv/slurm/ctld.log}}",
    )
    only(found, "slurm.paths.slurmctld_log_file", "inside slurm.paths.state_save_location")


def test_a_daemon_path_under_etc_is_an_error() -> None:
    found = run(
        checks.slurm_site_settings_valid, "slurm: {paths: {slurmd_pid_file: /etc/slurm/d.pid}}"
    )
    only(found, "slurm.paths.slurmd_pid_file", "lies under /etc")


@pytest.mark.parametrize(
    ("select", "text"),
    [
        ("{type: cons_tres, parameters: [CR_CPU, CR_Core_Memory]}", "CR_CPU and CR_Core_Memory"),
        ("{type: cons_tres, parameters: [CR_ONE_TASK_PER_CORE]}", "needs a consumable resource"),
        ("{type: cons_tres, parameters: []}", "needs a consumable resource"),
    ],
)
def test_select_parameters_name_one_resource(select: str, text: str) -> None:
    only(
        run(checks.slurm_site_settings_valid, f"slurm: {{select: {select}}}"),
        "slurm.select.parameters",
        text,
    )


def test_one_task_per_core_with_cpus_as_the_resource_is_an_error() -> None:
    # found by the real slurmctld (tests/test_slurm_site.py): it refuses the pair and exits
    fragment = "slurm: {select: {parameters: [CR_CPU_Memory, CR_ONE_TASK_PER_CORE]}}"
    only(
        run(checks.slurm_site_settings_valid, fragment),
        "slurm.select.parameters",
        "CR_ONE_TASK_PER_CORE does not go with CR_CPU_Memory",
    )
    fine = "slurm: {select: {parameters: [CR_Core_Memory, CR_ONE_TASK_PER_CORE]}}"
    assert run(checks.slurm_site_settings_valid, fine) == []


def test_linear_select_takes_only_memory_and_one_task_per_core() -> None:
    cpu_only = (
        "node_pools: [{name: cpu, scheduler: slurm, hosts: 'c-[1-2]', "
        "cpu: {sockets: 1, cores_per_socket: 4}, memory_gb: 16}]\n"
        "slurm: {partitions: [{name: cpu, pools: [cpu]}], select: %s}"
    )
    linear = cpu_only % "{type: linear, parameters: [CR_Memory, CR_ONE_TASK_PER_CORE]}"
    assert run(checks.slurm_site_settings_valid, linear) == []
    wrong = cpu_only % "{type: linear, parameters: [CR_Core_Memory]}"
    only(
        run(checks.slurm_site_settings_valid, wrong),
        "slurm.select.parameters",
        "not CR_Core_Memory",
    )


def test_gpu_pools_with_linear_select_are_an_error() -> None:
    # the real slurmd refuses a step asking for a GPU under select/linear
    found = run(checks.slurm_site_settings_valid, "slurm: {select: {type: linear, parameters: []}}")
    only(found, "node_pools[0].gpus", "select type linear gives jobs whole nodes but no GPUs")


def test_gpu_pools_with_cons_res_are_a_warning() -> None:
    found = run(checks.slurm_site_settings_valid, "slurm: {select: {type: cons_res}}")
    only(found, "node_pools[0].gpus", "only with --gres=gpu:N", level="warning")


@pytest.mark.parametrize("kind", ["cons_res", "linear"])
@pytest.mark.parametrize("sharing", ["shard: 2", "mps: 100"])
def test_shared_gres_without_cons_tres_are_an_error(kind: str, sharing: str) -> None:
    """gres/shard and gres/mps are shared GRES: slurmctld exits without select/cons_tres
    (src/common/gres.c of slurm-22-05-8-1; gres.conf(5): gres/[mps|shard])."""
    fragment = (
        "node_pools: [{name: a100, scheduler: slurm, hosts: 'lab-gpu-[01-02]', "
        "cpu: {sockets: 2, cores_per_socket: 32}, memory_gb: 512, "
        f"gpus: {{model: a100-sxm-80gb, count: 4, sharing: {{{sharing}}}}}}}]\n"
        f"slurm: {{select: {{type: {kind}, parameters: []}}}}"
    )
    found = [f for f in run(checks.slurm_site_settings_valid, fragment) if f.level == "error"]
    found = [f for f in found if f.path != "slurm.select.parameters"]
    key = sharing.split(":")[0]
    only(found, f"node_pools[0].gpus.sharing.{key}", "Use of shared gres requires")


@pytest.mark.parametrize("value", ["OverMemoryKill", "NoShared,overmemorykill"])
def test_over_memory_kill_with_task_cgroup_is_an_error(value: str) -> None:
    # the real slurmctld exits on the pair (tests/test_slurm_site.py)
    found = run(
        checks.memory_enforcement_single, f"slurm: {{options: {{JobAcctGatherParams: '{value}'}}}}"
    )
    only(found, "slurm.options.JobAcctGatherParams", "OverMemoryKill with task plugin cgroup")


def test_over_memory_kill_without_task_cgroup_is_fine() -> None:
    fragment = "slurm: {task_plugins: [affinity], options: {JobAcctGatherParams: OverMemoryKill}}"
    assert run(checks.memory_enforcement_single, fragment) == []
    other = "slurm: {options: {JobAcctGatherParams: NoShared}}"
    assert run(checks.memory_enforcement_single, other) == []


def test_task_plugin_none_goes_alone() -> None:
    found = run(checks.slurm_site_settings_valid, "slurm: {task_plugins: [none, affinity]}")
    only(found, "slurm.task_plugins", "cannot go with affinity")
    assert run(checks.slurm_site_settings_valid, "slurm: {task_plugins: [none]}") == []


@pytest.mark.parametrize(
    ("flags", "text"), [("[NoHold]", "NoHold needs Alloc"), ("[X11]", "add Contain")]
)
def test_prolog_flags_that_need_another(flags: str, text: str) -> None:
    only(
        run(checks.slurm_site_settings_valid, f"slurm: {{prolog_flags: {flags}}}"),
        "slurm.prolog_flags",
        text,
    )


def test_real_memory_above_physical_memory_is_an_error() -> None:
    pool = (
        "node_pools: [{name: a100, scheduler: slurm, hosts: lab-gpu-01, "
        "cpu: {sockets: 2, cores_per_socket: 32}, memory_gb: 512, real_memory_mib: %d}]"
    )
    assert run(checks.pool_site_settings_valid, pool % (512 * 1024)) == []
    found = run(checks.pool_site_settings_valid, pool % (512 * 1024 + 1))
    only(found, "node_pools[0].real_memory_mib", "more than the node's memory_gb (524288 MiB)")


def test_one_gres_type_names_one_gpu_model() -> None:
    pools = """
node_pools:
  - {name: a, scheduler: slurm, hosts: a-1, cpu: {sockets: 1, cores_per_socket: 8}, memory_gb: 64,
     gpus: {model: a100-sxm-80gb, count: 1, gres_type: GA100}}
  - {name: b, scheduler: slurm, hosts: b-1, cpu: {sockets: 1, cores_per_socket: 8}, memory_gb: 64,
     gpus: {model: l4-24gb, count: 1, gres_type: GA100}}
"""
    only(
        run(checks.pool_site_settings_valid, pools),
        "node_pools[1].gpus.gres_type",
        "'GA100' is a100-sxm-80gb",
    )


def test_partition_allow_qos_and_deny_accounts_must_resolve() -> None:
    fragment = """
slurm:
  accounting: {host: lab-dbd, database: {host: db, password: {secret: db}}}
  qos: [{name: normal}]
  partitions: [{name: gpu, pools: [a100], allow_qos: [normal, high], deny_accounts: [nobody]}]
"""
    found = run(checks.partition_site_settings_valid, fragment)
    assert where(found) == [
        ("slurm.partitions[0].allow_qos", "error"),
        ("slurm.partitions[0].deny_accounts", "error"),
    ]
    assert "unknown QoS 'high'; slurm.qos has normal" in found[0].message


def test_deny_accounts_with_teams_is_an_error() -> None:
    fragment = """
slurm:
  accounting: {host: lab-dbd, database: {host: db, password: {secret: db}}}
  partitions: [{name: gpu, pools: [a100], teams: [vision], deny_accounts: [nlp]}]
"""
    only(
        run(checks.partition_site_settings_valid, fragment),
        "slurm.partitions[0].deny_accounts",
        "not both",
    )


def test_allow_qos_without_accounting_is_an_error() -> None:
    fragment = (
        "slurm: {qos: [{name: normal}], "
        "partitions: [{name: gpu, pools: [a100], allow_qos: [normal]}]}"
    )
    only(
        run(checks.partition_site_settings_valid, fragment),
        "slurm.partitions[0]",
        "need slurm.accounting",
    )


def min_nodes_findings(limits: str) -> list[Finding]:
    fragment = f"slurm: {{partitions: [{{name: gpu, pools: [a100], {limits}}}]}}"
    return run(checks.partition_site_settings_valid, fragment)


def test_a_min_nodes_the_partition_can_give_passes() -> None:
    assert min_nodes_findings("min_nodes: 2, max_nodes: 2") == []


def test_a_min_nodes_above_max_nodes_is_refused() -> None:
    only(
        min_nodes_findings("min_nodes: 3, max_nodes: 2"),
        "slurm.partitions[0].min_nodes",
        "min_nodes (3) is above max_nodes (2)",
    )


def test_a_min_nodes_above_the_partitions_nodes_is_refused() -> None:
    nodes = len(estate().pools_by_name["a100"].hosts)
    only(
        min_nodes_findings(f"min_nodes: {nodes + 1}"),
        "slurm.partitions[0].min_nodes",
        f"min_nodes ({nodes + 1}) is above the {nodes} nodes of the partition's pools",
    )


def test_max_mem_per_cpu_and_per_node_exclude_each_other() -> None:
    fragment = (
        "slurm: {partitions: [{name: gpu, pools: [a100], "
        "max_mem_per_cpu: 100000, max_mem_per_node: 1000}]}"
    )
    only(
        run(checks.partition_site_settings_valid, fragment),
        "slurm.partitions[0].max_mem_per_node",
        "not both",
    )


def test_accounting_tres_must_keep_the_gpu_tres_estategen_bills() -> None:
    fragment = """
slurm:
  accounting: {host: lab-dbd, database: {host: db, password: {secret: db}}, tres: [%s]}
"""
    found = run(checks.accounting_site_settings_valid, fragment % "gres/gpu, license/matlab")
    only(found, "slurm.accounting.tres", "missing gres/gpu:a100-sxm-80gb")
    kept = fragment % "gres/gpu, gres/gpu:a100-sxm-80gb, license/matlab"
    assert run(checks.accounting_site_settings_valid, kept) == []


def test_accounting_tres_may_leave_out_gpus_no_weight_or_qos_names() -> None:
    """A site that bills CPUs only and tracks Slurm's default TRES (no AccountingStorageTRES)
    needs no GPU TRES: its partitions' own weights are checked key by key. The QoS GPU limits
    (MaxTRESPerUser=gres/gpu) still need gres/gpu."""
    fragment = """
slurm:
  accounting: {host: lab-dbd, database: {host: db, password: {secret: db}}, tres: [cpu, mem]}
  partitions: [{name: gpu, pools: [a100], default: true, billing_weights: {}}]
"""
    assert run(checks.accounting_site_settings_valid, fragment) == []
    with_qos = fragment + "  qos: [{name: normal}]\n"
    only(run(checks.accounting_site_settings_valid, with_qos), "slurm.accounting.tres", "gres/gpu")


def test_billing_weights_name_only_tracked_tres() -> None:
    fragment = "slurm: {partitions: [{name: gpu, pools: [a100], billing_weights: {%s: 2}}]}"
    only(
        run(checks.partition_site_settings_valid, fragment % "'GRES/gpu'"),
        "slurm.partitions[0].billing_weights.GRES/gpu",
        "need slurm.accounting",
    )
    assert run(checks.partition_site_settings_valid, fragment % "CPU") == []


def test_tres_priority_weights_name_only_tracked_tres() -> None:
    fragment = "slurm: {scheduling: {priority_weight_tres: {%s: 2}}}"
    only(
        run(checks.accounting_site_settings_valid, fragment % "'GRES/gpu'"),
        "slurm.scheduling.priority_weight_tres.GRES/gpu",
        "need slurm.accounting",
    )
    assert run(checks.accounting_site_settings_valid, fragment % "CPU") == []


def test_default_memory_per_cpu_above_the_partition_maximum_is_an_error() -> None:
    # the real slurmctld takes DefMemPerCPU=2000 MaxMemPerCPU=500, then fails every job that
    # asks for no memory ("CPU count per node can not be satisfied")
    fragment = "slurm: {partitions: [{name: gpu, pools: [a100], max_mem_per_cpu: 500%s}]}"
    only(
        run(checks.partition_site_settings_valid, fragment % ""),
        "slurm.partitions[0].max_mem_per_cpu",
        "DefMemPerCPU (7782 MiB, from its pools' RealMemory per CPU) is above",
    )
    assert run(checks.partition_site_settings_valid, fragment % ", def_mem_per_cpu: 500") == []


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("real_memory_mib", "real_memory_mib: 1000"),
        ("gpus.gres_type", "gpus: {model: l4-24gb, count: 2, gres_type: AD104}"),
        ("gpus.feature", "gpus: {model: l4-24gb, count: 2, feature: true}"),
        ("gpus.autodetect", "gpus: {model: l4-24gb, count: 2, autodetect: nvml}"),
    ],
)
def test_slurm_node_settings_on_a_kubernetes_pool_are_errors(key: str, fragment: str) -> None:
    pools = (
        "node_pools:\n"
        "  - {name: a100, scheduler: slurm, hosts: 'lab-gpu-[01-02]', "
        "cpu: {sockets: 2, cores_per_socket: 32}, memory_gb: 512, "
        "gpus: {model: a100-sxm-80gb, count: 4}}\n"
        "  - {name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, "
        f"hosts: 'lab-k8s-[01-02]', memory_gb: 64, {fragment}}}\n"
    )
    if "gpus" not in fragment:
        pools = pools.replace("memory_gb: 64,", "memory_gb: 64, gpus: {model: l4-24gb, count: 2},")
    only(run(checks.pool_site_settings_valid, pools), f"node_pools[1].{key}", "a Kubernetes pool")


# --- priority/basic, scheduler, process tracking and job completion ------------------------------


def test_priority_basic_alone_is_fine() -> None:
    assert run(checks.priority_basic_keys, "slurm: {scheduling: {priority_type: basic}}") == []


@pytest.mark.parametrize(
    ("fragment", "path"),
    [
        ("{priority_weights: {fairshare: 100}}", "slurm.scheduling.priority_weights.fairshare"),
        ("{priority_weight_tres: {CPU: 5}}", "slurm.scheduling.priority_weight_tres"),
        ("{fairshare_half_life: 7-0}", "slurm.scheduling.fairshare_half_life"),
    ],
)
def test_priority_basic_refuses_the_multifactor_settings(fragment: str, path: str) -> None:
    scheduling = fragment[:-1] + ", priority_type: basic}"
    found = run(checks.priority_basic_keys, f"slurm: {{scheduling: {scheduling}}}")
    only(found, path, "priority type basic orders jobs first in, first out and ignores it")


def test_priority_basic_refuses_partition_job_factors_qos_priorities_and_options() -> None:
    fragment = """
    slurm:
      scheduling: {priority_type: basic}
      qos: [{name: high, priority: 10}]
      options: {PriorityFlags: SMALL_RELATIVE_TO_TIME}
      partitions:
        - {name: gpu, pools: [a100], default: true, priority_job_factor: 5}
    """
    found = run(checks.priority_basic_keys, fragment)
    assert where(found) == [
        ("slurm.partitions[0].priority_job_factor", "error"),
        ("slurm.qos[0].priority", "error"),
        ("slurm.options.PriorityFlags", "error"),
    ]


def test_priority_basic_warns_of_a_fairshare_only_slurm_reads() -> None:
    fragment = """
    identity:
      teams:
        - {name: vision, gid: 20001, members: [alice], fairshare: 40}
        - {name: nlp, gid: 20002, members: [bob], fairshare: 60}
    slurm: {scheduling: {priority_type: basic}}
    """
    # the base estate's Kueue queues weigh both teams: nothing to warn of
    assert run(checks.priority_basic_keys, fragment) == []
    slurm_only = fragment + "kubernetes: {clusters: [{name: lab-k8s}]}\n"
    found = run(checks.priority_basic_keys, slurm_only)
    assert where(found) == [
        ("identity.teams[0].fairshare", "warning"),
        ("identity.teams[1].fairshare", "warning"),
    ]


def test_multifactor_takes_the_weights() -> None:
    fragment = "slurm: {scheduling: {priority_weights: {fairshare: 100}}}"
    assert run(checks.priority_basic_keys, fragment) == []


def test_builtin_scheduler_refuses_backfill_tuning() -> None:
    fragment = "slurm: {scheduler: builtin, scheduler_parameters: [bf_window=60, max_rpc_cnt=9]}"
    only(run(checks.slurm_plugins_fit, fragment), "slurm.scheduler_parameters", "bf_window=60")
    other = "slurm: {scheduler: builtin, scheduler_parameters: [max_rpc_cnt=9]}"
    assert run(checks.slurm_plugins_fit, other) == []


def test_proctrack_other_than_cgroup_needs_task_plugins_without_cgroup() -> None:
    found = run(checks.slurm_plugins_fit, "slurm: {proctrack: linuxproc}")
    only(found, "slurm.proctrack", "task plugin cgroup")
    fine = "slurm: {proctrack: pgid, task_plugins: [affinity]}"
    assert run(checks.slurm_plugins_fit, fine) == []


def test_x11_does_not_go_with_linuxproc() -> None:
    fragment = "slurm: {proctrack: linuxproc, task_plugins: [none], prolog_flags: [Contain, X11]}"
    only(run(checks.slurm_plugins_fit, fragment), "slurm.prolog_flags", "X11")
    pgid = "slurm: {proctrack: pgid, task_plugins: [none], prolog_flags: [Contain, X11]}"
    assert run(checks.slurm_plugins_fit, pgid) == []


@pytest.mark.parametrize(
    ("completion", "text"),
    [
        ("{location: /var/log/slurm/jobs.log}", "without a completion log"),
        ("{type: filetxt, location: /srv/jobs.log}", "outside the folder of slurmctld's log"),
        ("{type: filetxt, location: /var/log/slurm/slurmd.log}", "also a daemon path"),
    ],
)
def test_job_completion_location_lies_beside_slurmctlds_log(completion: str, text: str) -> None:
    found = run(checks.slurm_plugins_fit, f"slurm: {{job_completion: {completion}}}")
    only(found, "slurm.job_completion.location", text)


def test_job_completion_in_slurmctlds_log_folder_is_fine() -> None:
    fragment = """
    slurm:
      paths: {slurmctld_log_file: /srv/log/ctld.log}
      job_completion: {type: filetxt, location: /srv/log/jobs.txt}
    """
    assert run(checks.slurm_plugins_fit, fragment) == []


def test_a_kubernetes_pool_has_no_untyped_gres() -> None:
    fragment = """
    node_pools:
      - {name: a100, scheduler: slurm, hosts: 'lab-gpu-[01-02]', cpu: {sockets: 2,
         cores_per_socket: 32}, memory_gb: 512, gpus: {model: a100-sxm-80gb, count: 4}}
      - {name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: 'lab-k8s-[01-02]',
         gpus: {model: l4-24gb, count: 2, typed: false}}
    """
    found = run(checks.pool_site_settings_valid, fragment)
    only(found, "node_pools[1].gpus.typed", "a Kubernetes pool has none")


def test_untyped_gpus_of_two_models_share_no_billed_partition() -> None:
    fragment = """
    node_pools:
      - {name: a100, scheduler: slurm, hosts: 'lab-gpu-[01-02]', cpu: {sockets: 2,
         cores_per_socket: 32}, memory_gb: 512,
         gpus: {model: a100-sxm-80gb, count: 4, typed: false}}
      - {name: l4, scheduler: slurm, hosts: 'lab-l4-[01-02]', cpu: {sockets: 1,
         cores_per_socket: 16}, memory_gb: 128, gpus: {model: l4-24gb, count: 2, typed: false}}
    slurm:
      accounting: {host: lab-dbd, database: {host: lab-db, password: {secret: db}}}
      partitions: [{name: gpu, pools: [a100, l4], default: true}]
    """
    found = run(checks.partition_site_settings_valid, fragment)
    only(found, "slurm.partitions[0].pools", "several GPU models")
    without_accounting = fragment.replace(
        "accounting: {host: lab-dbd, database: {host: lab-db, password: {secret: db}}}", ""
    )
    assert run(checks.partition_site_settings_valid, without_accounting) == []


def device_files_pool(gpus: str) -> str:
    return (
        "node_pools: [{name: a100, scheduler: slurm, hosts: lab-gpu-01, "
        "cpu: {sockets: 2, cores_per_socket: 32}, memory_gb: 512, gpus: " + gpus + "}]"
    )


def test_one_device_file_per_gpu_passes() -> None:
    pool = device_files_pool(
        "{model: a100-sxm-80gb, count: 2, files: [/dev/nvidia1, /dev/nvidia3]}"
    )
    assert run(checks.pool_site_settings_valid, pool) == []


@pytest.mark.parametrize(
    ("gpus", "text"),
    [
        ("{model: a100-sxm-80gb, count: 2, files: [/dev/nvidia1]}", "1 device files for 2 GPUs"),
        (
            "{model: a100-sxm-80gb, count: 2, files: [/dev/nvidia1, /dev/nvidia1]}",
            "/dev/nvidia1 listed twice",
        ),
        (
            "{model: a100-sxm-80gb, count: 1, mig: [3g.40gb], files: [/dev/nvidia1]}",
            "NVML finds this pool's GPUs",
        ),
        (
            "{model: a100-sxm-80gb, count: 1, autodetect: nvml, files: [/dev/nvidia1]}",
            "NVML finds this pool's GPUs",
        ),
        (
            "{model: a100-sxm-80gb, count: 1, gres_type: a100, autodetect: nvidia,"
            " files: [/dev/nvidia1]}",
            "from the NVIDIA driver",
        ),
    ],
)
def test_device_files_other_than_one_per_gpu_or_beside_autodetection_are_refused(
    gpus: str, text: str
) -> None:
    only(
        run(checks.pool_site_settings_valid, device_files_pool(gpus)),
        "node_pools[0].gpus.files",
        text,
    )


def test_device_files_of_a_kubernetes_pool_are_refused() -> None:
    pool = """
node_pools:
  - {name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: lab-k8s-01,
     gpus: {model: l4-24gb, count: 1, files: [/dev/nvidia1]}}
"""
    only(
        run(checks.pool_site_settings_valid, pool),
        "node_pools[0].gpus.files",
        "a Kubernetes pool has none",
    )
