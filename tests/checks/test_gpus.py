"""Specification of GPU models, instance types, MIG and sharing (estategen.checks.gpus): a
blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import pytest

from estategen import checks

from .base import CLOUD_POOL, MANAGED_POOL, only, run, where

# --- gpu_models_resolve --------------------------------------------------------------------------


def test_gpu_models_resolve_passes_builtin_and_declared_models() -> None:
    assert run(checks.gpu_models_resolve) == []
    found = run(
        checks.gpu_models_resolve,
        """
        gpu_models: [{name: b200-192gb, memory_gb: 192}]
        node_pools:
          - {name: a, scheduler: slurm, hosts: n1, gpus: {model: b200-192gb, count: 8}}
        """,
    )
    assert found == []


def test_gpu_models_resolve_unknown_model_is_refused_with_the_catalog() -> None:
    found = run(
        checks.gpu_models_resolve,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: n1, gpus: {model: b200, count: 8}}
        """,
    )
    finding = only(found, "node_pools[0].gpus.model", "unknown GPU model 'b200'")
    assert "a100-sxm-80gb, h100-nvl-94gb" in finding.message


def test_gpu_models_resolve_warns_when_a_builtin_model_is_replaced() -> None:
    found = run(checks.gpu_models_resolve, "gpu_models: [{name: l4-24gb, memory_gb: 24}]")
    assert [(f.path, f.level) for f in found] == [("gpu_models[0]", "warning")]


# --- gpu_types_on_one_node ------------------------------------------------------------------------


def _two_types(gpus: str, pool: str = "scheduler: slurm, hosts: n1") -> str:
    return f"""
        node_pools:
          - {{name: a, {pool}, gpus: {gpus}}}
        """


def test_gpu_types_on_one_node_passes_two_models_of_an_on_prem_slurm_node() -> None:
    fragment = _two_types("{model: l4-24gb, count: 2, other_types: [{model: l40s-48gb, count: 2}]}")
    assert run(checks.gpu_types_on_one_node, fragment) == []


def test_gpu_types_on_one_node_passes_every_type_with_its_own_device_files() -> None:
    fragment = _two_types(
        "{model: l4-24gb, count: 1, files: [/dev/nvidia1], other_types: "
        "[{model: l40s-48gb, count: 1, files: [/dev/nvidia0]}]}"
    )
    assert run(checks.gpu_types_on_one_node, fragment) == []


@pytest.mark.parametrize(
    "pool",
    [
        "scheduler: kubernetes, cluster: k8s, hosts: n1",
        "scheduler: slurm, provider: gke, instance_type: g2-standard-24, hosts: n1, "
        "nodes: {max: 1}",
    ],
)
def test_gpu_types_on_one_node_are_refused_off_on_prem_slurm(pool: str) -> None:
    fragment = _two_types(
        "{model: l4-24gb, count: 2, other_types: [{model: l40s-48gb, count: 2}]}", pool
    )
    only(
        run(checks.gpu_types_on_one_node, fragment),
        "node_pools[0].gpus.other_types",
        "on-prem Slurm nodes only",
    )


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("mig: [3g.40gb]", "mig"),
        ("sharing: {shard: 4}", "sharing"),
        ("sharing: {mps: 4}", "sharing"),
        ("autodetect: nvml", "autodetect"),
        ("typed: false", "typed"),
    ],
)
def test_gpu_types_on_one_node_refuse_settings_written_for_one_model(
    setting: str, key: str
) -> None:
    fragment = _two_types(
        f"{{model: a100-sxm-80gb, count: 2, {setting}, "
        "other_types: [{model: l40s-48gb, count: 2}]}"
    )
    only(
        run(checks.gpu_types_on_one_node, fragment),
        f"node_pools[0].gpus.{key}",
        "written for one GPU model a node",
    )


def test_gpu_types_on_one_node_refuse_an_unknown_or_repeated_model() -> None:
    fragment = _two_types(
        "{model: l4-24gb, count: 2, other_types: "
        "[{model: l40s, count: 1}, {model: l4-24gb, count: 1}]}"
    )
    found = run(checks.gpu_types_on_one_node, fragment)
    assert where(found) == [
        ("node_pools[0].gpus.other_types[0].model", "error"),
        ("node_pools[0].gpus.other_types[1].model", "error"),
    ]
    assert "unknown GPU model 'l40s'" in found[0].message
    assert "already a type of this node" in found[1].message


@pytest.mark.parametrize(
    ("gpus", "path", "text"),
    [
        (
            "{model: l4-24gb, count: 1, files: [/dev/nvidia0], "
            "other_types: [{model: l40s-48gb, count: 1}]}",
            "node_pools[0].gpus.other_types",
            "list the files of every type",
        ),
        (
            "{model: l4-24gb, count: 1, files: [/dev/nvidia0], "
            "other_types: [{model: l40s-48gb, count: 2, files: [/dev/nvidia1]}]}",
            "node_pools[0].gpus.other_types[0].files",
            "1 device files for 2 GPUs of this type",
        ),
        (
            "{model: l4-24gb, count: 1, files: [/dev/nvidia0], "
            "other_types: [{model: l40s-48gb, count: 1, files: [/dev/nvidia0]}]}",
            "node_pools[0].gpus.other_types",
            "/dev/nvidia0 named by more than one GPU",
        ),
    ],
)
def test_gpu_types_on_one_node_refuse_device_files_that_do_not_add_up(
    gpus: str, path: str, text: str
) -> None:
    only(run(checks.gpu_types_on_one_node, _two_types(gpus)), path, text)


# --- gpu_models_offered_by_cloud -----------------------------------------------------------------


def test_gpu_models_offered_by_cloud_passes_a_model_the_provider_offers() -> None:
    found = run(
        checks.gpu_models_offered_by_cloud,
        """
        node_pools:
          - name: p
            scheduler: kubernetes
            provider: gke
            nodes: {max: 2}
            gpus: {model: l4-24gb, count: 1}
        """,
    )
    assert found == []


def test_gpu_models_offered_by_cloud_refuses_a_model_and_names_the_offer() -> None:
    found = run(
        checks.gpu_models_offered_by_cloud,
        """
        node_pools:
          - name: p
            scheduler: kubernetes
            provider: aks
            nodes: {max: 2}
            gpus: {model: l4-24gb, count: 1}
        """,
    )
    only(
        found,
        "node_pools[0].gpus.model",
        "l4-24gb is not offered on aks; aks offers: a100-sxm-40gb, a100-sxm-80gb, "
        "h100-nvl-94gb, h100-sxm-80gb",
    )


def test_gpu_models_offered_by_cloud_ignores_onprem_pools_and_unknown_models() -> None:
    found = run(
        checks.gpu_models_offered_by_cloud,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: n1, gpus: {model: h100-nvl-94gb, count: 2}}
          - {name: p, scheduler: kubernetes, provider: gke, gpus: {model: b200, count: 1}}
        """,
    )
    assert found == []


# --- instance_type_carries_gpus ------------------------------------------------------------------


GPU_POOL = MANAGED_POOL + "        gpus: {model: h100-sxm-80gb, count: 8}\n"


def test_instance_type_carries_gpus_passes_a_catalog_shape_with_its_count() -> None:
    assert run(checks.instance_type_carries_gpus, GPU_POOL) == []
    eks = GPU_POOL.replace("provider: gke", "provider: eks").replace("a3-highgpu-8g", "p5.48xlarge")
    assert run(checks.instance_type_carries_gpus, eks) == []


def test_instance_type_carries_gpus_refuses_a_count_the_shape_does_not_have() -> None:
    found = run(checks.instance_type_carries_gpus, GPU_POOL.replace("count: 8", "count: 2"))
    only(
        found,
        "node_pools[0].gpus.count",
        "a3-highgpu-8g has 8 h100-sxm-80gb GPUs; set gpus.count to 8, "
        "or a machine type with 2: a3-highgpu-2g",
    )


def test_instance_type_carries_gpus_refuses_a_shape_without_the_model() -> None:
    found = run(
        checks.instance_type_carries_gpus, GPU_POOL.replace("a3-highgpu-8g", "n1-standard-8")
    )
    only(
        found,
        "node_pools[0].instance_type",
        "n1-standard-8 is not a gke machine type that carries h100-sxm-80gb. Machine types "
        "with h100-sxm-80gb, by GPU count: a3-highgpu-1g (1),",
    )


def test_instance_type_carries_gpus_leaves_cpu_pools_and_onprem_pools_alone() -> None:
    assert run(checks.instance_type_carries_gpus, MANAGED_POOL) == []
    assert run(checks.instance_type_carries_gpus) == []


def test_instance_type_carries_gpus_reads_shapes_of_declared_models() -> None:
    declared = """
    gpu_models:
      - name: b200-180gb
        memory_gb: 180
        clouds:
          gke: {accelerator: nvidia-b200, machine_types: {a4-highgpu-8g: 8}}
          eks: {instance_types: {p6-b200.48xlarge: 8}}
"""
    pool = GPU_POOL.replace("h100-sxm-80gb", "b200-180gb")
    found = run(checks.instance_type_carries_gpus, declared + pool)
    only(
        found,
        "node_pools[0].instance_type",
        "Machine types with b200-180gb, by GPU count: a4-highgpu-8g (8)",
    )
    fixed = pool.replace("a3-highgpu-8g", "a4-highgpu-8g")
    assert run(checks.instance_type_carries_gpus, declared + fixed) == []


def test_a_slurm_cloud_instance_type_must_carry_the_gpus() -> None:
    found = run(
        checks.instance_type_carries_gpus, CLOUD_POOL.replace("a3-highgpu-8g", "a3-highgpu-4g")
    )
    only(found, "node_pools[1].gpus.count", "a3-highgpu-4g has 4 h100-sxm-80gb GPUs")


# --- mig_layout_fits -----------------------------------------------------------------------------


def mig_pool(layout: str, gpu: str = "a100-sxm-80gb") -> str:
    return f"""
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n[1-2]
            gpus: {{model: {gpu}, count: 4, mig: {layout}}}
    """


@pytest.mark.parametrize(
    "layout",
    ["[7g.80gb]", "[3g.40gb, 3g.40gb]", "[4g.40gb, 2g.20gb, 1g.10gb]"],
)
def test_mig_layout_fits_passes_layouts_within_one_gpu(layout: str) -> None:
    assert run(checks.mig_layout_fits, mig_pool(layout)) == []


def test_mig_layout_on_a_gpu_without_mig_is_refused() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[1g.10gb]", gpu="l4-24gb"))
    only(found, "node_pools[0].gpus.mig", "l4-24gb does not support MIG")


def test_mig_layout_unknown_profile_is_refused_at_its_index() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[3g.40gb, 3g.20gb]"))
    finding = only(
        found, "node_pools[0].gpus.mig[1]", "'3g.20gb' is not a MIG profile of a100-sxm-80gb"
    )
    assert "choose from: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" in finding.message


def test_mig_layout_repeated_unknown_profile_is_reported_at_each_index() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[1g.5gb, 1g.10gb, 1g.5gb]"))
    assert where(found) == [
        ("node_pools[0].gpus.mig[0]", "error"),
        ("node_pools[0].gpus.mig[2]", "error"),
    ]


def test_mig_layout_with_more_instances_of_a_profile_than_a_gpu_holds_is_refused() -> None:
    found = run(
        checks.mig_layout_fits,
        """
        gpu_models:
          - name: tiny
            memory_gb: 16
            mig: {1g.2gb: {compute: 1, memory: 1, max: 2}}
        node_pools:
          - name: a
            scheduler: slurm
            hosts: n1
            gpus: {model: tiny, count: 1, mig: [1g.2gb, 1g.2gb, 1g.2gb]}
        """,
    )
    only(found, "node_pools[0].gpus.mig", "3 x 1g.2gb on one GPU; tiny holds at most 2")


def test_mig_layout_over_seven_compute_slices_is_refused() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[2g.20gb, 2g.20gb, 2g.20gb, 1g.10gb, 1g.10gb]"))
    only(found, "node_pools[0].gpus.mig", "layout uses 8 compute slices; a GPU has 7")


def test_mig_layout_over_eight_memory_slices_is_refused() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[3g.40gb, 3g.40gb, 1g.10gb]"))
    only(found, "node_pools[0].gpus.mig", "layout uses 9 memory slices; a GPU has 8")


def test_mig_layout_reports_every_overflow_of_one_layout() -> None:
    found = run(checks.mig_layout_fits, mig_pool("[4g.40gb, 4g.40gb]"))
    assert [f.message for f in found] == [
        "2 x 4g.40gb on one GPU; a100-sxm-80gb holds at most 1",
        "layout uses 8 compute slices; a GPU has 7",
    ]


def test_mig_layout_fits_leaves_unknown_models_to_gpu_models_resolve() -> None:
    assert run(checks.mig_layout_fits, mig_pool("[1g.10gb]", gpu="b200")) == []


# --- sharing_fits_scheduler ----------------------------------------------------------------------


def sharing_pool(scheduler: str, sharing: str) -> str:
    return f"""
        node_pools:
          - name: p
            scheduler: {scheduler}
            cluster: lab-k8s
            hosts: n1
            gpus: {{model: l4-24gb, count: 2, sharing: {sharing}}}
    """


@pytest.mark.parametrize(
    ("scheduler", "sharing"),
    [
        ("slurm", "{shard: 4}"),
        ("slurm", "{mps: 100}"),
        ("kubernetes", "{time_slicing: 4}"),
        ("kubernetes", "{mps: 48}"),
    ],
)
def test_sharing_fits_scheduler_passes_each_schedulers_own_mode(
    scheduler: str, sharing: str
) -> None:
    assert run(checks.sharing_fits_scheduler, sharing_pool(scheduler, sharing)) == []


def test_sharing_time_slicing_on_a_slurm_pool_is_refused() -> None:
    found = run(checks.sharing_fits_scheduler, sharing_pool("slurm", "{time_slicing: 4}"))
    only(found, "node_pools[0].gpus.sharing.time_slicing", "Slurm pools share GPUs with `shard`")


def test_sharing_shard_and_mps_on_one_slurm_pool_are_refused() -> None:
    """slurmctld ties one shared GRES to a node's GPUs (gres_init_node_config, SchedMD/slurm
    slurm-22-05-8-1 src/common/gres.c): a real 22.05 node with both miscounted them."""
    found = run(checks.sharing_fits_scheduler, sharing_pool("slurm", "{shard: 4, mps: 100}"))
    only(found, "node_pools[0].gpus.sharing", "choose one of shard and mps")


def test_sharing_mps_on_a_mig_slurm_pool_is_refused() -> None:
    found = run(
        checks.sharing_fits_scheduler,
        "node_pools: [{name: a, scheduler: slurm, hosts: n1, gpus: "
        "{model: a100-sxm-80gb, count: 8, mig: [3g.40gb], sharing: {mps: 100}}}]",
    )
    only(found, "node_pools[0].gpus.sharing.mps", "MIG devices cannot be shared with MPS")


def test_sharing_mps_beyond_the_clients_an_mps_server_serves_is_refused_on_kubernetes() -> None:
    """On Kubernetes each MPS replica is one client; Slurm counts shares (100 a GPU)."""
    found = run(checks.sharing_fits_scheduler, sharing_pool("kubernetes", "{mps: 100}"))
    only(found, "node_pools[0].gpus.sharing.mps", "at most 48 clients a GPU")


def test_sharing_shard_on_a_kubernetes_pool_is_refused() -> None:
    found = run(checks.sharing_fits_scheduler, sharing_pool("kubernetes", "{shard: 4}"))
    only(found, "node_pools[0].gpus.sharing.shard", "shard is Slurm GRES sharing")


def test_sharing_time_slicing_and_mps_together_are_refused() -> None:
    found = run(
        checks.sharing_fits_scheduler, sharing_pool("kubernetes", "{time_slicing: 4, mps: 4}")
    )
    only(found, "node_pools[0].gpus.sharing", "choose one of time_slicing and mps")


# --- mig_strategy_matches_pools ------------------------------------------------------------------


def mig_cluster(strategy: str, layout: str) -> str:
    return f"""
        node_pools:
          - name: mig
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: n1
            gpus: {{model: a100-sxm-80gb, count: 8, mig: {layout}}}
        kubernetes:
          clusters: [{{name: lab-k8s, device_plugin: {{mig_strategy: {strategy}}}}}]
    """


@pytest.mark.parametrize(
    ("strategy", "layout"),
    [("mixed", "[3g.40gb, 2g.20gb, 1g.10gb]"), ("single", "[3g.40gb, 3g.40gb]")],
)
def test_mig_strategy_matches_pools_passes_fitting_strategies(strategy: str, layout: str) -> None:
    assert run(checks.mig_strategy_matches_pools, mig_cluster(strategy, layout)) == []


def test_mig_strategy_none_with_a_mig_pool_is_refused() -> None:
    found = run(checks.mig_strategy_matches_pools, mig_cluster("none", "[7g.80gb]"))
    only(found, "node_pools[0].gpus.mig", "has device_plugin.mig_strategy none")


def test_mig_strategy_single_with_two_profiles_is_refused() -> None:
    found = run(checks.mig_strategy_matches_pools, mig_cluster("single", "[4g.40gb, 3g.40gb]"))
    only(found, "node_pools[0].gpus.mig", "use mixed for this layout")


def test_mig_strategy_does_not_concern_slurm_pools() -> None:
    found = run(
        checks.mig_strategy_matches_pools,
        "node_pools: [{name: a, scheduler: slurm, hosts: n1, gpus: "
        "{model: a100-sxm-80gb, count: 8, mig: [3g.40gb, 1g.10gb]}}]",
    )
    assert found == []


# --- slurm_mps_daemon_started --------------------------------------------------------------------


def test_slurm_mps_without_a_prolog_warns_that_nothing_starts_the_mps_daemon() -> None:
    """Slurm sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; the site's Prolog starts the MPS daemon
    (SchedMD/slurm slurm-22-05-8-1 doc/html/gres.shtml "MPS Management")."""
    found = run(checks.slurm_mps_daemon_started, sharing_pool("slurm", "{mps: 100}"))
    only(found, "node_pools[0].gpus.sharing.mps", "nvidia-cuda-mps-control", level="warning")


def test_slurm_mps_with_a_site_prolog_or_on_kubernetes_does_not_warn() -> None:
    prolog = sharing_pool("slurm", "{mps: 100}").rstrip() + (
        "\n        slurm: {options: {Prolog: /etc/slurm/prolog}}\n"
    )
    assert run(checks.slurm_mps_daemon_started, prolog) == []
    assert run(checks.slurm_mps_daemon_started, sharing_pool("kubernetes", "{mps: 4}")) == []
