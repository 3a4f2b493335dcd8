"""Semantic checks over the model: each a small function yielding findings.

Checks see only the frozen model. They never stop at the first problem: the pipeline runs all
of them and fails on any error-level finding.

Each module of this package holds the checks of one domain (:mod:`.names`, :mod:`.slurm`,
...), each registered with :func:`~estategen.checks.core.check` under the rule id
``check/`` and its name in kebab case. Findings come out module after module in the order
of DOMAINS, each module's checks in the order they are written.
"""

from __future__ import annotations

from estategen.capacity import WARNING_KINDS
from estategen.checks import (
    capacity,
    gpus,
    health,
    hosted,
    kubernetes,
    names,
    observability,
    pools,
    queues,
    slurm,
    slurm_conf,
    slurm_site,
    storage,
    suppress,
)
from estategen.checks.capacity import capacity_warnings
from estategen.checks.core import CHECKS, RULES, Check, check, rule_id, run_checks
from estategen.checks.gpus import (
    gpu_models_offered_by_cloud,
    gpu_models_resolve,
    gpu_types_on_one_node,
    instance_type_carries_gpus,
    mig_layout_fits,
    mig_strategy_matches_pools,
    sharing_fits_scheduler,
    slurm_mps_daemon_started,
)
from estategen.checks.health import health_check_node_state_valid, health_checks_have_facts
from estategen.checks.hosted import (
    HOSTED_SLURM_OPTIONS,
    hosted_options_not_owned,
    hosted_slurm_pools,
)
from estategen.checks.kubernetes import (
    VOLCANO_MAX_WEIGHT,
    aks_cluster_settings,
    aks_pools_buildable,
    eks_autoscaler_tags_fit,
    frameworks_resolve,
    gitops_repository_access,
    gitops_sops_secrets,
    queue_engine_keys,
    team_pod_security_applies,
    team_pod_security_privileged,
    unix_identity_needs_admission_policies,
)
from estategen.checks.names import (
    directory_complete,
    host_budget,
    host_in_one_pool,
    hosts_within_bounds,
    names_not_reserved,
    team_members_known,
    unique_ids,
    unique_names,
)
from estategen.checks.observability import slurm_exporter_port_free
from estategen.checks.pools import (
    CLOUD_SLURM_OPTIONS,
    cloud_options_not_owned,
    max_pods_fits_provider,
    node_labels_kubelet_may_set,
    pool_cluster_resolves,
    pool_fields_for_provider,
    power_saving_has_cloud_nodes,
    site_cloud_pools,
)
from estategen.checks.queues import queues_resolve, quotas_within_capacity
from estategen.checks.slurm import (
    controllers_share_state,
    mpi_ports_valid,
    partition_preempt_mode_applies,
    partitions_resolve,
    preemption_has_a_mode,
    qos_resolves,
    reservations_valid,
    rest_api_valid,
    slurm_section_present,
)
from estategen.checks.slurm_conf import (
    OPTIONS_WITHOUT_POWER_SAVING,
    gpu_autodetect_release,
    slurm_build_has_plugins,
    slurm_options_documented,
    slurm_options_not_owned,
    slurm_options_not_removed,
    slurm_package_source,
    slurm_plugins_not_removed,
    slurm_times_valid,
    switches_cover_hosts,
    topology_version_gates,
)
from estategen.checks.slurm_site import (
    accounting_site_settings_valid,
    memory_enforcement_single,
    partition_site_settings_valid,
    pool_site_settings_valid,
    priority_basic_keys,
    slurm_plugins_fit,
    slurm_site_settings_valid,
)
from estategen.checks.storage import (
    storage_pools_resolve,
    storage_types_and_drivers,
    storage_without_storage_class,
)
from estategen.checks.suppress import suppressed_rules_exist

# the order findings come out in (tests and golden outputs hold it): module after module,
# each module's checks in the order they are written
DOMAINS = (
    names,
    pools,
    gpus,
    slurm,
    slurm_conf,
    queues,
    storage,
    kubernetes,
    observability,
    health,
    hosted,
    suppress,
    slurm_site,
    capacity,
)
_POSITION = {module.__name__: i for i, module in enumerate(DOMAINS)}
CHECKS.sort(key=lambda function: _POSITION[function.__module__])

# every check's rule id, for `suppress` and --suppress (checks register at import, above), with
# the check that raises it; the report's warnings are raised under their kinds' ids
RULES.update(
    {rule_id(function): function for function in CHECKS if function is not capacity_warnings}
    | {f"check/{kind}": None for kind in WARNING_KINDS}
)
RULE_IDS = frozenset(RULES)

__all__ = [
    "CHECKS",
    "CLOUD_SLURM_OPTIONS",
    "HOSTED_SLURM_OPTIONS",
    "OPTIONS_WITHOUT_POWER_SAVING",
    "RULES",
    "RULE_IDS",
    "VOLCANO_MAX_WEIGHT",
    "Check",
    "accounting_site_settings_valid",
    "aks_cluster_settings",
    "aks_pools_buildable",
    "capacity_warnings",
    "check",
    "cloud_options_not_owned",
    "controllers_share_state",
    "directory_complete",
    "eks_autoscaler_tags_fit",
    "frameworks_resolve",
    "gitops_repository_access",
    "gitops_sops_secrets",
    "gpu_autodetect_release",
    "gpu_models_offered_by_cloud",
    "gpu_models_resolve",
    "gpu_types_on_one_node",
    "health_check_node_state_valid",
    "health_checks_have_facts",
    "host_budget",
    "host_in_one_pool",
    "hosted_options_not_owned",
    "hosted_slurm_pools",
    "hosts_within_bounds",
    "instance_type_carries_gpus",
    "max_pods_fits_provider",
    "memory_enforcement_single",
    "mig_layout_fits",
    "mig_strategy_matches_pools",
    "mpi_ports_valid",
    "names_not_reserved",
    "node_labels_kubelet_may_set",
    "partition_preempt_mode_applies",
    "partition_site_settings_valid",
    "partitions_resolve",
    "pool_cluster_resolves",
    "pool_fields_for_provider",
    "pool_site_settings_valid",
    "power_saving_has_cloud_nodes",
    "preemption_has_a_mode",
    "priority_basic_keys",
    "qos_resolves",
    "queue_engine_keys",
    "queues_resolve",
    "quotas_within_capacity",
    "reservations_valid",
    "rest_api_valid",
    "rule_id",
    "run_checks",
    "sharing_fits_scheduler",
    "site_cloud_pools",
    "slurm_build_has_plugins",
    "slurm_exporter_port_free",
    "slurm_mps_daemon_started",
    "slurm_options_documented",
    "slurm_options_not_owned",
    "slurm_options_not_removed",
    "slurm_package_source",
    "slurm_plugins_fit",
    "slurm_plugins_not_removed",
    "slurm_section_present",
    "slurm_site_settings_valid",
    "slurm_times_valid",
    "storage_pools_resolve",
    "storage_types_and_drivers",
    "storage_without_storage_class",
    "suppressed_rules_exist",
    "switches_cover_hosts",
    "team_members_known",
    "team_pod_security_applies",
    "team_pod_security_privileged",
    "topology_version_gates",
    "unique_ids",
    "unique_names",
    "unix_identity_needs_admission_policies",
]
