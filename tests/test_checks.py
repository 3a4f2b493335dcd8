"""Specification of the semantic checks: a blueprint fragment in, a finding (or none) out.

Every test deep-merges a small YAML fragment into BASE (a trimmed lab.yaml), sends the
result through the real loader, schema and model, and runs ONE check on the estate. Mappings
merge key by key, lists replace the base list whole, and `~` removes a key from the base.
Because only one check runs, a fragment need only be consistent for the check under test.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import checks, load, model, pipeline, reserved, schema
from estategen.errors import BlueprintInvalid, Finding, UsageError
from estategen.model import Estate, slurm_minutes, slurm_time

ROOT = Path(__file__).resolve().parent.parent

BASE = """\
estate: lab
versions: {slurm: "22.05", kubernetes: "1.31"}
identity:
  users:
    - {name: alice, uid: 10001}
    - {name: bob, uid: 10002}
  teams:
    - {name: vision, gid: 20001, members: [alice]}
    - {name: nlp, gid: 20002, members: [bob]}
node_pools:
  - name: a100
    scheduler: slurm
    hosts: lab-gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 32}
    memory_gb: 512
    gpus: {model: a100-sxm-80gb, count: 4}
  - name: l4-serve
    scheduler: kubernetes
    cluster: lab-k8s
    hosts: lab-k8s-[01-02]
    gpus: {model: l4-24gb, count: 2}
slurm:
  controllers: [lab-ctl]
  partitions:
    - {name: gpu, pools: [a100], default: true, max_time: "1-00:00:00"}
storage:
  - {name: home, type: nfs, source: "nfs01:/export/home", mount: /home}
kubernetes:
  clusters:
    - name: lab-k8s
      queues:
        cohort: lab
        teams:
          - {team: vision, quota: {l4-24gb: 2}}
          - {team: nlp, quota: {l4-24gb: 2}}
"""

# Every check this file specifies; a check added to estategen.checks must be added here (with
# tests).
TESTED_CHECKS = [
    "unique_names",
    "unique_ids",
    "team_members_known",
    "names_not_reserved",
    "directory_complete",
    "hosts_within_bounds",
    "host_in_one_pool",
    "pool_fields_for_provider",
    "pool_cluster_resolves",
    "node_labels_kubelet_may_set",
    "gpu_models_resolve",
    "gpu_models_offered_by_cloud",
    "instance_type_carries_gpus",
    "mig_layout_fits",
    "sharing_fits_scheduler",
    "mig_strategy_matches_pools",
    "slurm_section_present",
    "partitions_resolve",
    "qos_resolves",
    "partition_preempt_mode_applies",
    "controllers_share_state",
    "slurm_times_valid",
    "slurm_options_not_owned",
    "slurm_options_not_removed",
    "topology_version_gates",
    "switches_cover_hosts",
    "queues_resolve",
    "quotas_within_capacity",
    "storage_pools_resolve",
    "storage_types_and_drivers",
    "slurm_exporter_port_free",
    "reservations_valid",
    "mpi_ports_valid",
    "rest_api_valid",
    # node health checks
    "health_checks_have_facts",
    "health_check_node_state_valid",
    # elastic cloud nodes
    "cloud_options_not_owned",
    "power_saving_has_cloud_nodes",
    # cloud nodes the site's own programs start
    "site_cloud_pools",
    "aks_cluster_settings",
    "aks_pools_buildable",
    "eks_autoscaler_tags_fit",
    "queue_engine_keys",
    "frameworks_resolve",
    "suppressed_rules_exist",
    "capacity_warnings",
    # Slurm hosted in Kubernetes
    "hosted_slurm_pools",
    "hosted_options_not_owned",
    # a site's own Slurm settings
    "slurm_site_settings_valid",
    "pool_site_settings_valid",
    "partition_site_settings_valid",
    "accounting_site_settings_valid",
    "memory_enforcement_single",
    "priority_basic_keys",
    "slurm_plugins_fit",
    # where the Slurm packages come from, and what their build can load
    "slurm_package_source",
    "slurm_build_has_plugins",
    "storage_without_storage_class",
]

Check = Callable[[Estate], Iterable[Finding]]
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# --- helpers ------------------------------------------------------------------------------


def _parse(text: str) -> load.Document:
    return load.parse_blueprint(textwrap.dedent(text).encode(), "bp.yaml")


@cache
def _base_data() -> dict[str, Any]:
    return _parse(BASE).data


def _merge(base: Any, patch: Any) -> Any:
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return patch
    merged = dict(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge(merged[key], value) if key in merged else value
    return merged


def blueprint(fragment: str = "") -> str:
    """BASE with the fragment merged in, as blueprint text."""
    if not fragment.strip():
        return BASE
    merged = _merge(_base_data(), _parse(fragment).data)
    return yaml.dump(merged, Dumper=_DUMPER, sort_keys=False)


@cache
def estate(fragment: str = "") -> Estate:
    """The estate of BASE merged with the fragment (models are frozen, so one per fragment)."""
    document = load.parse_blueprint(blueprint(fragment).encode(), "bp.yaml")
    normalised, problems = schema.normalise(document.data)
    assert not problems, [f"{p.path}: {p.message}" for p in problems]
    return model.build(normalised)


def run(check: Check, fragment: str = "") -> list[Finding]:
    return list(check(estate(fragment)))


def only(found: list[Finding], path: str, text: str, level: str = "error") -> Finding:
    """Assert exactly one finding, at ``path``, of ``level``, whose message holds ``text``."""
    assert len(found) == 1, [(f.path, f.message) for f in found]
    finding = found[0]
    assert (finding.path, finding.level) == (path, level), finding
    assert text in finding.message, finding.message
    return finding


def where(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.path, f.level) for f in found]


def line_of(text: str, needle: str) -> int:
    matches = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(matches) == 1, (needle, matches)
    return matches[0]


# --- the base and the registry -----------------------------------------------------------


def test_base_estate_passes_every_check() -> None:
    assert checks.run_checks(estate()) == []


def test_lab_blueprint_validates_with_the_warnings_its_report_shows() -> None:
    """The smallest example keeps two things a real site would fix, so that both validate and
    report show them: no shared file system, and GPU metrics without the estate labels."""
    findings = pipeline.validate_file(ROOT / "blueprints" / "lab.yaml").findings
    assert [(f.path, f.rule) for f in findings] == [
        ("node_pools[0]", "check/pool-without-storage"),
        ("node_pools[1]", "check/pool-without-observability"),
    ]


def test_every_public_check_function_is_registered_and_specified_here() -> None:
    modules = [
        importlib.import_module(f"{checks.__name__}.{info.name}")
        for info in pkgutil.iter_modules(checks.__path__)
        if info.name != "core"  # the registry and the helpers the domains share
    ]
    assert sorted(m.__name__ for m in modules) == sorted(m.__name__ for m in checks.DOMAINS)
    helpers = {"host_budget", "now"}
    public = {
        name
        for module in modules
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if function.__module__ == module.__name__
        and not name.startswith("_")
        and name not in helpers
    }
    registered = [function.__name__ for function in checks.CHECKS]
    assert len(registered) == len(set(registered)), "a check is registered twice"
    assert set(registered) == public, "a public function in estategen.checks lacks @check"
    assert sorted(registered) == sorted(TESTED_CHECKS), "a check has no tests in this file"


# --- unique_names ------------------------------------------------------------------------


def test_unique_names_passes_distinct_names() -> None:
    assert run(checks.unique_names) == []


@pytest.mark.parametrize(
    ("fragment", "path", "text"),
    [
        (
            """
            node_pools:
              - {name: a100, scheduler: slurm, hosts: "n[1-2]"}
              - {name: a100, scheduler: slurm, hosts: "m[1-2]"}
            """,
            "node_pools[1]",
            "node pool 'a100'",
        ),
        (
            """
            slurm:
              partitions:
                - {name: gpu, pools: [a100]}
                - {name: gpu, pools: [a100]}
            """,
            "slurm.partitions[1]",
            "partition 'gpu'",
        ),
        (
            """
            slurm:
              qos: [{name: high}, {name: low}, {name: high}]
            """,
            "slurm.qos[2]",
            "QoS 'high'",
        ),
        (
            """
            identity:
              users: [{name: alice, uid: 10001}, {name: alice, uid: 10002}]
            """,
            "identity.users[1]",
            "user 'alice'",
        ),
        (
            """
            storage:
              - {name: home, type: nfs, source: "nas:/home", mount: /home}
              - {name: home, type: nfs, source: "nas:/home2", mount: /home2}
            """,
            "storage[1]",
            "storage 'home'",
        ),
        (
            """
            storage:
              - {name: home, type: nfs, source: "nas:/home", mount: /home}
              - {name: home2, type: nfs, source: "nas:/home2", mount: /home}
            """,
            "storage[1].mount",
            "mount point '/home'",
        ),
        (
            """
            identity:
              teams:
                - {name: vision, gid: 20001}
                - {name: nlp, gid: 20002, namespace: vision}
            """,
            "identity.teams[1]",
            "team namespace 'vision'",
        ),
        (
            """
            kubernetes:
              clusters:
                - name: lab-k8s
                  priority_classes: [{name: batch, value: 10}, {name: batch, value: 20}]
            """,
            "kubernetes.clusters[0].priority_classes[1]",
            "priority class in lab-k8s 'batch'",
        ),
        (
            """
            kubernetes:
              clusters:
                - name: lab-k8s
                  queues:
                    cohort: lab
                    teams: [{team: vision, quota: {}}, {team: vision, quota: {}}]
            """,
            "kubernetes.clusters[0].queues.teams[1]",
            "queue team in lab-k8s 'vision'",
        ),
    ],
    ids=[
        "pool",
        "partition",
        "qos",
        "user",
        "storage",
        "mount",
        "namespace",
        "priority-class",
        "queue-team",
    ],
)
def test_unique_names_refuses_a_repeated_name_of_each_kind(
    fragment: str, path: str, text: str
) -> None:
    finding = only(run(checks.unique_names, fragment), path, text)
    assert finding.message.endswith("is declared more than once")


def test_unique_names_a_repeated_team_is_reported_once_not_again_as_namespace() -> None:
    found = run(
        checks.unique_names,
        """
        identity:
          teams: [{name: vision, gid: 20001}, {name: vision, gid: 20002}]
        """,
    )
    assert [f.message for f in found] == ["team 'vision' is declared more than once"]


def test_unique_names_a_repeated_gpu_model_is_refused() -> None:
    found = run(
        checks.unique_names,
        """
        gpu_models:
          - {name: mi300x, memory_gb: 192}
          - {name: mi300x, memory_gb: 192}
        """,
    )
    assert [(f.path, f.message) for f in found] == [
        ("gpu_models[1]", "GPU model 'mi300x' is declared more than once")
    ]


def test_gpu_models_resolve_warns_when_a_builtin_model_is_replaced() -> None:
    found = run(checks.gpu_models_resolve, "gpu_models: [{name: l4-24gb, memory_gb: 24}]")
    assert [(f.path, f.level) for f in found] == [("gpu_models[0]", "warning")]


def test_unique_names_same_priority_class_in_two_clusters_is_fine() -> None:
    found = run(
        checks.unique_names,
        """
        kubernetes:
          clusters:
            - {name: one, priority_classes: [{name: batch, value: 1}]}
            - {name: two, priority_classes: [{name: batch, value: 1}]}
        """,
    )
    assert found == []


# --- unique_ids --------------------------------------------------------------------------


def test_unique_ids_passes_distinct_ids_even_when_a_uid_equals_a_gid() -> None:
    found = run(
        checks.unique_ids,
        """
        identity:
          users: [{name: alice, uid: 20001}]
          teams: [{name: vision, gid: 20001}]
        """,
    )
    assert found == []


def test_unique_ids_refuses_a_shared_uid() -> None:
    found = run(
        checks.unique_ids,
        """
        identity:
          users: [{name: alice, uid: 10001}, {name: bob, uid: 10001}]
        """,
    )
    only(found, "identity.users[1].uid", "uid 10001 is already used by another user")


def test_unique_ids_refuses_a_shared_gid() -> None:
    found = run(
        checks.unique_ids,
        """
        identity:
          teams: [{name: vision, gid: 20001}, {name: nlp, gid: 20001}]
        """,
    )
    only(found, "identity.teams[1].gid", "gid 20001 is already used by another team")


# --- names_not_reserved ------------------------------------------------------------------


def test_names_not_reserved_passes_ordinary_names() -> None:
    assert run(checks.names_not_reserved) == []


@pytest.mark.parametrize(
    ("fragment", "path", "text"),
    [
        (
            "identity: {teams: [{name: all, gid: 20001}]}",
            "identity.teams[0].name",
            "team name 'all' is reserved: as a Slurm account, Slurm reads AllowAccounts=all as ALL",
        ),
        (
            "identity: {teams: [{name: sudo, gid: 20001}]}",
            "identity.teams[0].name",
            "as a Unix group, it is a Debian system group",
        ),
        (
            "identity: {teams: [{name: docker, gid: 20001}]}",
            "identity.teams[0].name",
            "members are root in effect",
        ),
        (
            "identity: {teams: [{name: shadow, gid: 20001}]}",
            "identity.teams[0].name",
            "Debian system group",
        ),
        (
            "identity: {teams: [{name: lab, gid: 20001}]}",
            "identity.teams[0].name",
            "the estate's account above every team",
        ),
        (
            "identity: {users: [{name: nobody, uid: 10001}]}",
            "identity.users[0].name",
            "user name 'nobody' is reserved: it is a Debian system user",
        ),
        (
            "identity: {users: [{name: munge, uid: 10001}]}",
            "identity.users[0].name",
            "the user munged runs as",
        ),
        (
            "identity: {teams: [{name: vision, gid: 20001, namespace: kueue-system}]}",
            "identity.teams[0].namespace",
            "team namespace 'kueue-system' is reserved: it is the namespace estategen installs",
        ),
        (
            "identity: {teams: [{name: vision, gid: 20001, namespace: volcano-system}]}",
            "identity.teams[0].namespace",
            "team namespace 'volcano-system' is reserved: it is the namespace estategen installs",
        ),
        (
            "identity: {teams: [{name: vision, gid: 20001, namespace: mpi-operator}]}",
            "identity.teams[0].namespace",
            "team namespace 'mpi-operator' is reserved: it is the namespace the MPI Operator",
        ),
        (
            "identity: {teams: [{name: vision, gid: 20001, namespace: mount-s3}]}",
            "identity.teams[0].namespace",
            "team namespace 'mount-s3' is reserved: it is where Mountpoint for Amazon S3",
        ),
        (
            "identity: {teams: [{name: default, gid: 20001}]}",
            "identity.teams[0].namespace",
            "team namespace 'default' is reserved: it is a namespace Kubernetes creates",
        ),
        (
            "identity: {teams: [{name: vision, gid: 20001, namespace: kube-flow}]}",
            "identity.teams[0].namespace",
            "Kubernetes reserves namespaces starting with 'kube-'",
        ),
        (
            "slurm: {partitions: [{name: default, pools: [a100]}]}",
            "slurm.partitions[0].name",
            "Slurm reads PartitionName=DEFAULT (any case) as defaults for every partition",
        ),
        (
            "node_pools: [{name: all-disabled, scheduler: kubernetes, hosts: n1}]",
            "node_pools[0].name",
            "it names the mig-parted configuration that turns MIG off",
        ),
        (
            "observability: {labels: {instance: same}}",
            "observability.labels.instance",
            "label 'instance' is reserved: Prometheus sets it on every target",
        ),
        (
            "observability: {labels: {job: gpu}}",
            "observability.labels.job",
            "label 'job' is reserved: Prometheus sets it on every target",
        ),
        (
            "observability: {labels: {namespace: lab}}",
            "observability.labels.namespace",
            "the Prometheus Operator sets it on every target a ServiceMonitor finds",
        ),
        (
            "observability: {labels: {modelName: h100}}",
            "observability.labels.modelName",
            "dcgm-exporter puts it on every GPU series",
        ),
        (
            'node_pools: [{name: a100, scheduler: slurm, hosts: ["n1", "all"]}]',
            "node_pools[0].hosts",
            "Slurm node name 'all' is reserved: NodeName=ALL is reserved",
        ),
    ],
)
def test_names_not_reserved_refuses_a_name_that_means_something_downstream(
    fragment: str, path: str, text: str
) -> None:
    only(run(checks.names_not_reserved, fragment), path, text)


def test_label_names_prometheus_reserves_are_refused_by_the_schema() -> None:
    document = load.parse_blueprint(
        blueprint("observability: {labels: {__name__: up}}").encode(), "bp.yaml"
    )
    _, problems = schema.normalise(document.data)
    assert [p.path for p in problems] == ["observability.labels.__name__"]


def test_names_not_reserved_reports_each_meaning_of_one_name() -> None:
    found = run(checks.names_not_reserved, "identity: {teams: [{name: root, gid: 20001}]}")
    assert [f.message.split(": ", 1)[1] for f in found] == [
        "as a Unix group, it is a Debian system group (base-passwd); choose another name",
        "as a Slurm account, it is Slurm's own root account, above every account (sacctmgr); "
        "choose another name",
    ]


_TEAM = "identity: {{teams: [{{name: {name}, gid: 20001, namespace: ns}}]}}"
_ACCOUNTING = (
    "slurm: {{accounting: {{host: lab-dbd, database: {{host: db, user: {name}, "
    "password: {{secret: db}}}}}}}}"
)


@pytest.mark.parametrize("account", ["root", "mysql", "debian-sys-maint"])
def test_slurmdbd_does_not_log_in_as_an_administrator_of_mariadb(account: str) -> None:
    found = only(
        run(checks.names_not_reserved, _ACCOUNTING.format(name=account)),
        "slurm.accounting.database.user",
        f"accounting database user {account!r} is reserved: as a MariaDB account, ",
    )
    assert "would set its password" in found.message
    assert run(checks.names_not_reserved, _ACCOUNTING.format(name="slurm")) == []


@pytest.mark.parametrize(
    ("table", "pattern", "fragment"),
    [
        (reserved.SYSTEM_USERS, schema.USER, "identity: {{users: [{{name: {name}, uid: 10001}}]}}"),
        (reserved.SYSTEM_GROUPS, schema.NAME, _TEAM),
        (reserved.SLURM_ACCOUNTS, schema.NAME, _TEAM),
        (
            reserved.KUBERNETES_NAMESPACES,
            schema.DNS_LABEL,
            "identity: {{teams: [{{name: t, gid: 20001, namespace: {name}}}]}}",
        ),
        (
            reserved.SLURM_PARTITIONS,
            schema.NAME,
            "slurm: {{partitions: [{{name: {name}, pools: [a100]}}]}}",
        ),
        (
            reserved.PROMETHEUS_LABELS,
            schema.PROM_LABEL,
            "observability: {{labels: {{{name}: x}}}}",
        ),
        (
            reserved.POOL_NAMES,
            schema.NAME,
            "node_pools: [{{name: {name}, scheduler: kubernetes, hosts: n1}}]",
        ),
        (reserved.MARIADB_ACCOUNTS, schema.USER, _ACCOUNTING),
    ],
)
def test_names_not_reserved_refuses_every_name_of_each_table_the_schema_lets_through(
    table: Mapping[str, str], pattern: str, fragment: str
) -> None:
    names = [name for name in table if re.fullmatch(pattern, name)]
    assert names
    for name in names:
        found = run(checks.names_not_reserved, fragment.format(name=name))
        assert any(f"{name!r} is reserved: " in f.message for f in found), (name, found)


# --- team_members_known ------------------------------------------------------------------


def test_team_members_known_passes_declared_users() -> None:
    assert run(checks.team_members_known) == []


def test_team_members_known_refuses_an_undeclared_member_and_lists_users() -> None:
    found = run(
        checks.team_members_known,
        """
        identity:
          teams: [{name: vision, gid: 20001, members: [alice, carol]}]
        """,
    )
    only(
        found,
        "identity.teams[0].members[1]",
        "'carol' is not a user in identity.users; known: alice, bob",
    )


# --- directory_complete ------------------------------------------------------------------


def test_directory_complete_passes_local_directory_and_full_ldap() -> None:
    assert run(checks.directory_complete) == []
    found = run(
        checks.directory_complete,
        """
        identity:
          directory:
            type: ldap
            uri: ldaps://ldap.example.org
            base_dn: dc=example,dc=org
            bind_dn: cn=reader,dc=example,dc=org
            bind_password: {secret: ldap_reader}
        """,
    )
    assert found == []


def test_directory_complete_ldap_without_base_dn_is_refused() -> None:
    found = run(
        checks.directory_complete,
        """
        identity:
          directory: {type: ldap, uri: "ldaps://ldap.example.org"}
        """,
    )
    only(found, "identity.directory", "an ldap directory needs `base_dn`")


def test_directory_complete_freeipa_needs_uri_and_base_dn() -> None:
    found = run(checks.directory_complete, "identity: {directory: {type: freeipa}}")
    assert [f.message for f in found] == [
        "a freeipa directory needs `uri`",
        "a freeipa directory needs `base_dn`",
    ]


def test_directory_complete_bind_dn_without_password_is_refused() -> None:
    found = run(
        checks.directory_complete,
        """
        identity:
          directory:
            type: ldap
            uri: ldaps://ldap.example.org
            base_dn: dc=example,dc=org
            bind_dn: cn=reader,dc=example,dc=org
        """,
    )
    only(found, "identity.directory.bind_dn", "bind_dn needs bind_password")


# --- hosts_within_bounds -----------------------------------------------------------------


def test_hosts_within_bounds_passes_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks.names, "MAX_ESTATE_HOSTS", 4)
    assert run(checks.hosts_within_bounds) == []


def test_hosts_within_bounds_refuses_one_host_over_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks.names, "MAX_ESTATE_HOSTS", 3)
    found = run(checks.hosts_within_bounds)
    only(found, "node_pools", "4 hosts, above the estate limit of 3")


# --- host_in_one_pool --------------------------------------------------------------------


def test_host_in_one_pool_passes_disjoint_pools_and_controller_on_slurm_host() -> None:
    found = run(checks.host_in_one_pool, "slurm: {controllers: [lab-gpu-01]}")
    assert found == []


def test_host_in_one_pool_refuses_overlap_of_two_slurm_pools_once_per_pair() -> None:
    found = run(
        checks.host_in_one_pool,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: "n[1-4]"}
          - {name: b, scheduler: slurm, hosts: "n[2-5]"}
        """,
    )
    finding = only(found, "node_pools[1].hosts", "host n2 is already in pool 'a'")
    assert "(both" not in finding.message
    assert finding.message.endswith("a host belongs to exactly one pool")


def test_host_in_one_pool_names_both_schedulers_when_overlap_crosses_them() -> None:
    found = run(
        checks.host_in_one_pool,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: "n[1-2]"}
          - {name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n2}
        """,
    )
    only(found, "node_pools[1].hosts", "pool 'a' (both slurm and kubernetes)")


def test_host_in_one_pool_reports_each_earlier_pool_a_pool_overlaps() -> None:
    found = run(
        checks.host_in_one_pool,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: n1}
          - {name: b, scheduler: slurm, hosts: n2}
          - {name: c, scheduler: slurm, hosts: "n[1-2]"}
        """,
    )
    assert [f.message.split(";")[0] for f in found] == [
        "host n1 is already in pool 'a'",
        "host n2 is already in pool 'b'",
    ]


def test_host_in_one_pool_refuses_a_host_listed_twice_in_one_pool_once() -> None:
    found = run(
        checks.host_in_one_pool,
        """
        node_pools:
          - {name: a, scheduler: slurm, hosts: [n1, n1, n1, n2, n2]}
        """,
    )
    only(found, "node_pools[0].hosts", "host n1 is listed 3 times")


def test_host_in_one_pool_refuses_a_controller_on_a_kubernetes_node() -> None:
    found = run(checks.host_in_one_pool, "slurm: {controllers: [lab-ctl, lab-k8s-02]}")
    only(found, "slurm.controllers[1]", "lab-k8s-02 is a Kubernetes node in pool 'l4-serve'")


# --- pool_fields_for_provider ------------------------------------------------------------

MANAGED_POOL = """
    node_pools:
      - name: cloud
        scheduler: kubernetes
        cluster: lab-k8s
        provider: gke
        instance_type: a3-highgpu-8g
        nodes: {min: 1, max: 4}
"""


def test_pool_fields_for_provider_passes_onprem_and_complete_managed_pools() -> None:
    assert run(checks.pool_fields_for_provider) == []
    assert run(checks.pool_fields_for_provider, MANAGED_POOL) == []


def test_pool_fields_for_provider_slurm_cloud_pool_needs_names_shape_and_cloud() -> None:
    """A Slurm pool with a provider is State=CLOUD nodes, no longer refused outright."""
    found = run(
        checks.pool_fields_for_provider,
        MANAGED_POOL.replace("scheduler: kubernetes", "scheduler: slurm"),
    )
    assert [(f.path, f.message) for f in found] == [
        (
            "node_pools[0]",
            "a Slurm gke pool names its nodes with `hosts` (slurm.conf defines them "
            "State=CLOUD; slurmctld creates an instance of that name when it needs one)",
        ),
        ("node_pools[0]", "a Slurm gke pool needs `cpu`"),
        ("node_pools[0]", "a Slurm gke pool needs `memory_gb`"),
        ("node_pools[0]", "a Slurm gke pool needs `cloud`"),
    ]


def test_pool_fields_for_provider_managed_pool_needs_instance_type_and_nodes() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - {name: cloud, scheduler: kubernetes, cluster: lab-k8s, provider: eks}
        """,
    )
    assert [(f.path, f.message) for f in found] == [
        ("node_pools[0]", "an eks pool needs `instance_type`"),
        ("node_pools[0]", "an eks pool needs `nodes`"),
    ]


def test_pool_fields_for_provider_managed_pool_with_hosts_is_refused() -> None:
    found = run(checks.pool_fields_for_provider, MANAGED_POOL + "        hosts: n[1-2]\n")
    only(found, "node_pools[0].hosts", "a gke pool gets its nodes from the provider")


def test_pool_fields_for_provider_nodes_min_above_max_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider,
        MANAGED_POOL.replace("{min: 1, max: 4}", "{min: 5, max: 2}"),
    )
    only(found, "node_pools[0].nodes", "min 5 is above max 2")


def test_pool_fields_for_provider_onprem_pool_needs_hosts() -> None:
    found = run(
        checks.pool_fields_for_provider,
        "node_pools: [{name: k, scheduler: kubernetes, cluster: lab-k8s}]",
    )
    only(found, "node_pools[0]", "an on-prem pool needs `hosts`")


def test_pool_fields_for_provider_onprem_pool_refuses_managed_keys() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - name: k
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: n[1-2]
            instance_type: g6.xlarge
            nodes: {max: 2}
        """,
    )
    assert where(found) == [
        ("node_pools[0].instance_type", "error"),
        ("node_pools[0].nodes", "error"),
    ]
    assert all("is for managed pools" in f.message for f in found)


def test_pool_fields_for_provider_slurm_pool_needs_cpu_and_memory() -> None:
    found = run(
        checks.pool_fields_for_provider,
        "node_pools: [{name: a, scheduler: slurm, hosts: n1}]",
    )
    assert [f.message for f in found] == [
        "a Slurm pool needs `cpu` for its NodeName line",
        "a Slurm pool needs `memory_gb` for its NodeName line",
    ]


# --- pool_cluster_resolves ---------------------------------------------------------------


def test_pool_cluster_resolves_passes_the_base() -> None:
    assert run(checks.pool_cluster_resolves) == []


def test_pool_cluster_resolves_slurm_pool_with_an_unknown_cluster_is_refused() -> None:
    """A Slurm pool with `cluster` is hosted there: the cluster must exist."""
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: a100, scheduler: slurm, cluster: elsewhere, nodes: {max: 1}}
          - {name: l4, scheduler: kubernetes, cluster: lab-k8s, hosts: m1}
        """,
    )
    only(found, "node_pools[0].cluster", "'elsewhere' is not in kubernetes.clusters")


def test_pool_cluster_resolves_slurm_pool_with_labels_and_taints_is_refused() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n1
            labels: {tier: train}
            taints: [{key: gpu, effect: NoSchedule}]
          - {name: l4, scheduler: kubernetes, cluster: lab-k8s, hosts: m1}
        """,
    )
    assert where(found) == [("node_pools[0].labels", "error"), ("node_pools[0].taints", "error")]
    assert "use `features` for Slurm pools" in found[0].message


def test_pool_cluster_resolves_kubernetes_pool_needs_cluster() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: l4, scheduler: kubernetes, hosts: m1}
          - {name: l4b, scheduler: kubernetes, cluster: lab-k8s, hosts: m2}
        """,
    )
    only(found, "node_pools[0]", "a Kubernetes pool needs `cluster`; known: lab-k8s")


def test_pool_cluster_resolves_unknown_cluster_is_refused() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: l4, scheduler: kubernetes, cluster: prod, hosts: m1}
          - {name: l4b, scheduler: kubernetes, cluster: lab-k8s, hosts: m2}
        """,
    )
    only(found, "node_pools[0].cluster", "'prod' is not in kubernetes.clusters; known: lab-k8s")


def test_pool_cluster_resolves_managed_pool_provider_must_match_cluster() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: p, scheduler: kubernetes, cluster: c, provider: eks, nodes: {max: 2}}
        kubernetes:
          clusters: [{name: c, provider: gke, region: us-central1}]
        """,
    )
    only(found, "node_pools[0].provider", "pool is eks but cluster 'c' is gke")


def test_pool_cluster_resolves_warns_about_a_cluster_without_pools() -> None:
    found = run(
        checks.pool_cluster_resolves,
        "kubernetes: {clusters: [{name: lab-k8s}, {name: idle}]}",
    )
    only(found, "kubernetes.clusters[1]", "cluster 'idle' has no node pools", level="warning")


def test_pool_cluster_resolves_cloud_cluster_needs_region() -> None:
    found = run(
        checks.pool_cluster_resolves,
        """
        node_pools:
          - {name: p, scheduler: kubernetes, cluster: c, provider: aks, nodes: {max: 2}}
        kubernetes:
          clusters: [{name: c, provider: aks}]
        """,
    )
    only(found, "kubernetes.clusters[0]", "an aks cluster needs `region`")


# --- gpu_models_resolve ------------------------------------------------------------------


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


# --- gpu_models_offered_by_cloud ---------------------------------------------------------


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


# --- instance_type_carries_gpus ----------------------------------------------------------

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


# --- mig_layout_fits ---------------------------------------------------------------------


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


# --- sharing_fits_scheduler --------------------------------------------------------------


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
    [("slurm", "{shard: 4}"), ("kubernetes", "{time_slicing: 4}")],
)
def test_sharing_fits_scheduler_passes_each_schedulers_own_mode(
    scheduler: str, sharing: str
) -> None:
    assert run(checks.sharing_fits_scheduler, sharing_pool(scheduler, sharing)) == []


@pytest.mark.parametrize("mode", ["time_slicing", "mps"])
def test_sharing_device_plugin_mode_on_a_slurm_pool_is_refused(mode: str) -> None:
    found = run(checks.sharing_fits_scheduler, sharing_pool("slurm", f"{{{mode}: 4}}"))
    only(found, f"node_pools[0].gpus.sharing.{mode}", "Slurm pools share GPUs with `shard`")


def test_sharing_shard_on_a_kubernetes_pool_is_refused() -> None:
    found = run(checks.sharing_fits_scheduler, sharing_pool("kubernetes", "{shard: 4}"))
    only(found, "node_pools[0].gpus.sharing.shard", "shard is Slurm GRES sharing")


def test_sharing_time_slicing_and_mps_together_are_refused() -> None:
    found = run(
        checks.sharing_fits_scheduler, sharing_pool("kubernetes", "{time_slicing: 4, mps: 4}")
    )
    only(found, "node_pools[0].gpus.sharing", "choose one of time_slicing and mps")


# --- mig_strategy_matches_pools ----------------------------------------------------------


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


# --- slurm_section_present ---------------------------------------------------------------


def test_slurm_section_present_passes_with_controllers_or_without_slurm_pools() -> None:
    assert run(checks.slurm_section_present) == []
    found = run(
        checks.slurm_section_present,
        """
        node_pools: [{name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n1}]
        slurm: ~
        """,
    )
    assert found == []


def test_slurm_pools_without_a_slurm_section_point_at_node_pools() -> None:
    found = run(checks.slurm_section_present, "slurm: ~")
    only(found, "node_pools", "Slurm pools need slurm.controllers")


def test_slurm_section_without_controllers_points_at_slurm() -> None:
    found = run(checks.slurm_section_present, "slurm: {controllers: ~}")
    only(found, "slurm", "Slurm pools need slurm.controllers")


# --- partitions_resolve ------------------------------------------------------------------


def test_partitions_resolve_passes_the_base_and_no_partitions_at_all() -> None:
    assert run(checks.partitions_resolve) == []
    assert run(checks.partitions_resolve, "slurm: {partitions: ~}") == []


def test_partition_naming_an_unknown_pool_is_refused_with_slurm_pools_listed() -> None:
    found = run(
        checks.partitions_resolve,
        "slurm: {partitions: [{name: gpu, pools: [a100, h100]}]}",
    )
    only(found, "slurm.partitions[0].pools[1]", "'h100' is not a node pool; known: a100")


def test_partition_drawing_on_a_kubernetes_pool_is_refused() -> None:
    found = run(
        checks.partitions_resolve,
        "slurm: {partitions: [{name: gpu, pools: [a100, l4-serve]}]}",
    )
    only(found, "slurm.partitions[0].pools[1]", "pool 'l4-serve' is scheduled by Kubernetes")


def test_partition_naming_an_unknown_team_is_refused() -> None:
    found = run(
        checks.partitions_resolve,
        "slurm: {partitions: [{name: gpu, pools: [a100], teams: [vision, robotics]}]}",
    )
    only(found, "slurm.partitions[0].teams[1]", "'robotics' is not a team; known: nlp, vision")


def test_partition_naming_an_unknown_qos_is_refused() -> None:
    found = run(
        checks.partitions_resolve,
        "slurm: {partitions: [{name: gpu, pools: [a100], qos: high}]}",
    )
    finding = only(found, "slurm.partitions[0].qos", "'high' is not a QoS")
    assert "known" not in finding.message


def test_partitions_only_one_may_be_default() -> None:
    found = run(
        checks.partitions_resolve,
        """
        slurm:
          partitions:
            - {name: gpu, pools: [a100], default: true}
            - {name: debug, pools: [a100]}
            - {name: long, pools: [a100], default: true}
            - {name: big, pools: [a100], default: true}
        """,
    )
    assert where(found) == [
        ("slurm.partitions[2].default", "error"),
        ("slurm.partitions[3].default", "error"),
    ]
    assert all("partition 'gpu' is already the default" in f.message for f in found)


def test_a_slurm_pool_in_no_partition_is_stranded_capacity() -> None:
    found = run(
        checks.capacity_warnings,
        """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: n1}
          - {name: cpu, scheduler: slurm, hosts: c1}
        """,
    )
    stranded = [f for f in found if f.rule == "check/stranded-capacity"]
    only(stranded, "node_pools[1]", "no partition draws on pool cpu", level="warning")


# --- qos_resolves ------------------------------------------------------------------------

ACCOUNTED_QOS = """
    slurm:
      accounting:
        host: lab-ctl
        database: {host: db.lab, password: {secret: slurmdb}}
      scheduling: {preemption: {type: qos, mode: requeue}}
      qos:
        - {name: high, priority: 100, preempt: [low]}
        - {name: low}
"""


def test_qos_resolves_passes_accounted_qos_with_qos_preemption() -> None:
    assert run(checks.qos_resolves, ACCOUNTED_QOS) == []


def test_qos_preempting_an_unknown_qos_is_refused() -> None:
    found = run(checks.qos_resolves, ACCOUNTED_QOS.replace("[low]", "[low, scavenger]"))
    only(found, "slurm.qos[0].preempt[1]", "'scavenger' is not a QoS; known: high, low")


def test_qos_preempting_itself_is_refused() -> None:
    found = run(checks.qos_resolves, ACCOUNTED_QOS.replace("[low]", "[high]"))
    only(found, "slurm.qos[0].preempt[0]", "a QoS cannot preempt itself")


def test_qos_preemption_without_preemption_type_qos_is_a_warning() -> None:
    fragment = ACCOUNTED_QOS.replace("type: qos", "type: partition_prio")
    found = run(checks.qos_resolves, fragment)
    only(found, "slurm.qos[0].preempt", "preemption.type: qos", level="warning")


def test_qos_without_accounting_is_refused() -> None:
    found = run(checks.qos_resolves, "slurm: {qos: [{name: high}]}")
    only(found, "slurm.qos", "QoS live in slurmdbd: set slurm.accounting")


def test_partition_qos_without_accounting_is_refused() -> None:
    found = run(checks.qos_resolves, "slurm: {partitions: [{name: g, pools: [a100], qos: high}]}")
    only(found, "slurm.qos", "QoS live in slurmdbd")


QOS_WITHOUT_PREEMPT = """
    slurm:
      accounting:
        host: lab-ctl
        database: {host: db.lab, password: {secret: slurmdb}}
      scheduling: {preemption: {type: qos, mode: requeue}}
      qos:
        - {name: high, priority: 100}
        - {name: low}
      partitions:
        - {name: gpu, pools: [a100], max_time: "1-00:00:00", priority_tier: 10}
        - {name: scavenge, pools: [a100], max_time: "1-00:00:00", priority_tier: 1}
"""


def test_qos_preemption_where_no_qos_preempts_another_is_a_warning() -> None:
    found = run(checks.qos_resolves, QOS_WITHOUT_PREEMPT)
    finding = only(
        found,
        "slurm.scheduling.preemption.type",
        "no QoS lists another, so no job is ever preempted",
        level="warning",
    )
    assert "priority_tier preempts only with type: partition_prio" in finding.message


def test_qos_preemption_with_no_qos_at_all_is_a_warning() -> None:
    found = run(checks.qos_resolves, "slurm: {scheduling: {preemption: {type: qos}}}")
    only(found, "slurm.scheduling.preemption.type", "no job is ever preempted", level="warning")


def test_partition_priority_preemption_needs_no_qos_preempt_list() -> None:
    fragment = QOS_WITHOUT_PREEMPT.replace("type: qos", "type: partition_prio")
    assert run(checks.qos_resolves, fragment) == []


def test_a_qos_preempt_mode_without_qos_preemption_is_refused() -> None:
    fragment = ACCOUNTED_QOS.replace("type: qos", "type: partition_prio").replace(
        "{name: low}", "{name: low, preempt_mode: cancel}"
    )
    found = [f for f in run(checks.qos_resolves, fragment) if f.level == "error"]
    only(found, "slurm.qos[1].preempt_mode", "only with PreemptType=preempt/qos")


def test_a_qos_preempt_mode_with_qos_preemption_passes() -> None:
    fragment = ACCOUNTED_QOS.replace("{name: low}", "{name: low, preempt_mode: cancel}")
    assert run(checks.qos_resolves, fragment) == []


PARTITION_PREEMPT_MODE = (
    ACCOUNTED_QOS
    + """
      partitions:
        - {name: scavenge, pools: [a100], qos: low, preempt_mode: MODE}
"""
)


def test_a_partition_preempt_mode_slurm_would_ignore_is_refused() -> None:
    fragment = PARTITION_PREEMPT_MODE.replace("MODE", "cancel")
    found = run(checks.partition_preempt_mode_applies, fragment)
    finding = only(
        found,
        "slurm.partitions[0].preempt_mode",
        "preempted in mode 'requeue', never 'cancel'",
    )
    assert "slurm.qos[].preempt_mode" in finding.message


def test_a_partition_preempt_mode_that_says_the_mode_that_applies_passes() -> None:
    fragment = PARTITION_PREEMPT_MODE.replace("MODE", "requeue")
    assert run(checks.partition_preempt_mode_applies, fragment) == []


def test_a_partition_preempt_mode_applies_with_partition_priority_preemption() -> None:
    fragment = PARTITION_PREEMPT_MODE.replace("MODE", "cancel").replace(
        "type: qos", "type: partition_prio"
    )
    assert run(checks.partition_preempt_mode_applies, fragment) == []


def test_a_partition_preempt_mode_without_preemption_is_refused() -> None:
    fragment = PARTITION_PREEMPT_MODE.replace("MODE", "requeue").replace(
        "{type: qos, mode: requeue}", "{type: none}"
    )
    found = run(checks.partition_preempt_mode_applies, fragment)
    only(found, "slurm.partitions[0].preempt_mode", "preempted in mode 'off'")


# --- controllers_share_state -------------------------------------------------------------

TWO_CONTROLLERS = "slurm: {controllers: [lab-ctl-1, lab-ctl-2]}"


def test_one_controller_keeps_its_state_locally() -> None:
    assert run(checks.controllers_share_state) == []


def test_two_controllers_with_a_local_state_save_location_is_a_warning() -> None:
    found = run(checks.controllers_share_state, TWO_CONTROLLERS)
    finding = only(found, "slurm.controllers", "must be shared storage", level="warning")
    assert model.STATE_SAVE_LOCATION in finding.message


def test_two_controllers_with_the_state_on_storage_mounted_everywhere_pass() -> None:
    fragment = TWO_CONTROLLERS + (
        '\nstorage: [{name: state, type: nfs, source: "nas:/state", mount: /var/spool/slurmctld}]'
    )
    assert run(checks.controllers_share_state, fragment) == []


def test_state_storage_mounted_on_pools_without_the_controllers_does_not_count() -> None:
    fragment = TWO_CONTROLLERS + (
        '\nstorage: [{name: state, type: nfs, source: "nas:/state", '
        "mount: /var/spool/slurmctld, pools: [a100]}]"
    )
    only(
        run(checks.controllers_share_state, fragment),
        "slurm.controllers",
        "shared storage",
        "warning",
    )


def test_rendered_state_save_location_is_the_one_the_check_names() -> None:
    from estategen.renderers.slurm import slurm_files

    conf = slurm_files(estate(TWO_CONTROLLERS))["slurm/slurm.conf"].content.decode()
    assert f"StateSaveLocation={model.STATE_SAVE_LOCATION}\n" in conf


# --- slurm_times_valid -------------------------------------------------------------------


def partition_times(max_time: str, default_time: str | None = None) -> str:
    default = f', default_time: "{default_time}"' if default_time else ""
    return f'slurm: {{partitions: [{{name: gpu, pools: [a100], max_time: "{max_time}"{default}}}]}}'


@pytest.mark.parametrize(
    ("max_time", "default_time"),
    [
        ("1:00:00", "60"),
        ("UNLIMITED", "INFINITE"),
    ],
)
def test_slurm_times_valid_passes_valid_times_with_default_within_max(
    max_time: str, default_time: str | None
) -> None:
    assert run(checks.slurm_times_valid, partition_times(max_time, default_time)) == []


def test_slurm_times_partition_max_time_longer_than_slurm_reads_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("24856-0"))
    only(
        found,
        "slurm.partitions[0].max_time",
        "'24856-0' is not a valid Slurm time: it is longer than the longest time Slurm reads, "
        "24855-03:13:00",
    )


def test_slurm_times_qos_max_time_longer_than_slurm_reads_is_refused() -> None:
    found = run(checks.slurm_times_valid, 'slurm: {qos: [{name: q, max_time: "35791394"}]}')
    only(found, "slurm.qos[0].max_time", "longer than the longest time Slurm reads")


@pytest.mark.parametrize("half_life", ["UNLIMITED", "INFINITE", "0", "0:0"])
def test_a_fairshare_half_life_slurmctld_misreads_or_refuses_is_refused(half_life: str) -> None:
    found = run(
        checks.slurm_times_valid, f'slurm: {{scheduling: {{fairshare_half_life: "{half_life}"}}}}'
    )
    only(found, "slurm.scheduling.fairshare_half_life", "not a half-life slurmctld accepts")


def test_a_zero_fairshare_half_life_with_a_usage_reset_period_passes() -> None:
    blueprint = (
        'slurm: {scheduling: {fairshare_half_life: "0"}, '
        "options: {PriorityUsageResetPeriod: MONTHLY}}"
    )
    assert run(checks.slurm_times_valid, blueprint) == []


def test_slurm_times_default_time_above_max_time_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("1:00:00", "90"))
    only(found, "slurm.partitions[0].default_time", "default_time 90 is above max_time 1:00:00")


def test_slurm_times_unlimited_default_under_a_finite_max_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("1-0", "UNLIMITED"))
    only(found, "slurm.partitions[0].default_time", "default_time UNLIMITED is above max_time")


def test_slurm_times_invalid_default_is_reported_once_not_compared() -> None:
    found = run(checks.slurm_times_valid, partition_times("2:00:00", "25000-0"))
    only(found, "slurm.partitions[0].default_time", "is not a valid Slurm time")


# --- slurm_minutes -----------------------------------------------------------------------


# What slurmctld 22.05 shows (scontrol show partition) for each MaxTime; tests/
# test_slurm_engine.py holds the same table against the running daemon.
@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("0", 0),
        ("45", 45),
        ("00090", 90),
        ("90:00", 90),
        ("30:01", 31),
        ("0:600", 10),
        ("30:00:00", 1800),
        ("2:75:00", 195),
        ("0:0:99", 2),
        ("2-0", 2880),
        ("1-25", 2940),
        ("1-0:30", 1470),
        ("1-23:59:59", 1440 + 23 * 60 + 60),
        ("7-0:00:99", 7 * 1440 + 2),
        ("24855-3:13:00", 35_791_393),
        ("35791393", 35_791_393),
    ],
)
def test_slurm_minutes_reads_every_slurm_conf_format_as_slurm_does(
    text: str, minutes: int | None
) -> None:
    assert slurm_minutes(text) == minutes


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("UNLIMITED", "UNLIMITED"),
        ("0", "00:00:00"),
        ("90", "01:30:00"),
        ("7-0:00:99", "7-00:02:00"),
        ("1-25", "2-01:00:00"),
    ],
)
def test_slurm_time_is_written_as_scontrol_prints_it(text: str, shown: str) -> None:
    assert slurm_time(text) == shown


@pytest.mark.parametrize("text", ["24856-0", "35791394", "596524:0:0", "0:2147483581"])
def test_slurm_minutes_refuses_times_longer_than_slurm_reads(text: str) -> None:
    with pytest.raises(ValueError, match="longer than the longest time Slurm reads"):
        slurm_minutes(text)


# --- slurm_options_not_owned -------------------------------------------------------------


def test_slurm_options_not_owned_passes_free_options() -> None:
    found = run(
        checks.slurm_options_not_owned,
        "slurm: {options: {MaxJobCount: 50000, SlurmctldTimeout: 120}}",
    )
    assert found == []


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("SlurmctldHost", "other", "SlurmctldHost is rendered by estategen from the blueprint"),
        ("SelectType", "select/linear", "SelectType is rendered by estategen from the blueprint"),
        ("Include", "/etc/x.conf", "Include is reserved"),
        ("AuthInfo", "socket=/x", "AuthInfo is reserved: it decides whom the daemons trust"),
        ("NodeSet", "gpus", "NodeSet opens a record, not a parameter"),
    ],
)
def test_slurm_options_owned_key_is_refused(key: str, value: str, why: str) -> None:
    found = run(checks.slurm_options_not_owned, f"slurm: {{options: {{{key}: {value}}}}}")
    only(found, f"slurm.options.{key}", why)


def test_slurm_options_owned_key_is_matched_case_insensitively() -> None:
    found = run(checks.slurm_options_not_owned, "slurm: {options: {SLURMCTLDHOST: other}}")
    only(found, "slurm.options.SLURMCTLDHOST", "SlurmctldHost is rendered by estategen")


# --- slurm_options_not_removed -----------------------------------------------------------


def test_slurm_options_refuse_a_key_the_target_release_removed() -> None:
    found = run(checks.slurm_options_not_removed, "slurm: {options: {CacheGroups: 0}}")
    only(found, "slurm.options.CacheGroups", "Slurm 21.08 removed CacheGroups")


def test_slurm_options_keep_a_key_the_target_release_still_reads() -> None:
    """SchedulerAuth is refused from 24.05 on."""
    fragment = "slurm: {options: {SchedulerAuth: x}}"
    assert run(checks.slurm_options_not_removed, 'versions: {slurm: "23.11"}\n' + fragment) == []
    found = run(checks.slurm_options_not_removed, fragment)  # BASE targets 22.05
    assert found == []
    found = run(
        checks.slurm_options_not_removed,
        'versions: {slurm: "24.11"}\n'
        "slurm: {packages: {source: debian-13}, options: {SchedulerAuth: x}}",
    )
    only(found, "slurm.options.SchedulerAuth", "Slurm 24.05 removed SchedulerAuth")


# --- topology_version_gates --------------------------------------------------------------


def topology(network_a: str, network_b: str = "{}", slurm: str = "23.11") -> str:
    return f"""
        versions: {{slurm: "{slurm}"}}
        node_pools:
          - {{name: a, scheduler: slurm, hosts: "a[1-4]", network: {network_a}}}
          - {{name: b, scheduler: slurm, hosts: "b[1-4]", network: {network_b}}}
    """


@pytest.mark.parametrize(
    "fragment",
    [
        topology('{block: "nvl[1-2]"}', '{block: "nvl[3-4]"}'),
        topology('{switch: "leaf[1-2]"}', '{switch: "leaf3"}', slurm="22.05"),
    ],
    ids=["blocks-on-23.11", "switches-on-22.05"],
)
def test_topology_version_gates_passes_one_plugin_on_a_capable_slurm(fragment: str) -> None:
    assert run(checks.topology_version_gates, fragment) == []


def test_topology_blocks_before_slurm_23_11_are_refused() -> None:
    found = run(checks.topology_version_gates, topology('{block: "nvl[1-2]"}', slurm="23.02"))
    only(
        found, "node_pools[0].network.block", "needs Slurm 23.11 or newer; versions.slurm is 23.02"
    )


def test_topology_switch_and_block_in_one_pool_are_refused() -> None:
    found = run(checks.topology_version_gates, topology('{switch: leaf1, block: "nvl[1-2]"}'))
    only(found, "node_pools[0].network", "choose switch (topology/tree) or block")


def test_topology_pools_mixing_switch_and_block_are_refused() -> None:
    found = run(checks.topology_version_gates, topology("{switch: leaf1}", "{block: nvl1}"))
    only(found, "node_pools", "Slurm runs one topology plugin per cluster")


def test_topology_blocks_on_a_kubernetes_pool_are_refused() -> None:
    found = run(
        checks.topology_version_gates,
        """
        node_pools:
          - {name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n1, network: {block: nvl1}}
        """,
    )
    only(found, "node_pools[0].network.block", "NVLink blocks are a Slurm topology")


# --- switches_cover_hosts ----------------------------------------------------------------


def test_switches_cover_hosts_passes_one_switch_per_host() -> None:
    assert run(checks.switches_cover_hosts, topology('{switch: "leaf[1-4]"}')) == []


def test_switches_cover_hosts_more_switches_than_hosts_are_refused() -> None:
    found = run(checks.switches_cover_hosts, topology('{switch: "leaf[1-5]"}'))
    only(found, "node_pools[0].network.switch", "5 switches for 4 hosts; each needs at least")


def test_switches_cover_hosts_more_blocks_than_hosts_are_refused() -> None:
    found = run(checks.switches_cover_hosts, topology("{}", '{block: "nvl[1-6]"}'))
    only(found, "node_pools[1].network.block", "6 blocks for 4 hosts; each needs at least")


# --- queues_resolve ----------------------------------------------------------------------


def queues(*teams: str, pools: str = "") -> str:
    listed = "\n".join(f"                  - {team}" for team in teams)
    return (
        pools
        + """
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                cohort: lab
                teams:
"""
        + listed
        + "\n"
    )


MIG_K8S_POOL = """
        node_pools:
          - name: mig
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: n[1-2]
            gpus: {model: a100-sxm-80gb, count: 4, mig: [3g.40gb, 3g.40gb]}
"""


def test_queues_resolve_passes_the_base_and_mig_quota_keys() -> None:
    assert run(checks.queues_resolve) == []
    fragment = queues("{team: vision, quota: {a100-sxm-80gb/3g.40gb: 4}}", pools=MIG_K8S_POOL)
    assert run(checks.queues_resolve, fragment) == []


def test_queue_for_an_unknown_team_is_refused() -> None:
    found = run(checks.queues_resolve, queues("{team: robotics, quota: {l4-24gb: 1}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].team",
        "'robotics' is not a team; known: nlp, vision",
    )


def test_queue_quota_for_a_gpu_no_cluster_pool_has_is_refused() -> None:
    # the base has a100s, but in a Slurm pool: they are not capacity of the Kubernetes cluster
    found = run(checks.queues_resolve, queues("{team: vision, quota: {a100-sxm-80gb: 1}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].quota.a100-sxm-80gb",
        "no pool in cluster 'lab-k8s' provides 'a100-sxm-80gb'; known: l4-24gb",
    )


# --- quotas_within_capacity --------------------------------------------------------------


def test_quotas_within_capacity_passes_quotas_adding_up_to_capacity() -> None:
    assert run(checks.quotas_within_capacity) == []


def test_quota_above_cluster_capacity_is_refused() -> None:
    found = run(checks.quotas_within_capacity, queues("{team: vision, quota: {l4-24gb: 5}}"))
    only(
        found,
        "kubernetes.clusters[0].queues.teams[0].quota.l4-24gb",
        "quota 5 is above the 4 l4-24gb in cluster 'lab-k8s'",
    )


def test_quotas_adding_up_above_capacity_are_refused_at_the_queues() -> None:
    fragment = queues("{team: vision, quota: {l4-24gb: 3}}", "{team: nlp, quota: {l4-24gb: 3}}")
    found = run(checks.quotas_within_capacity, fragment)
    only(
        found,
        "kubernetes.clusters[0].queues",
        "nominal quotas for l4-24gb add up to 6, above the 4 in cluster 'lab-k8s'",
    )


def test_mig_gpus_back_profile_quotas_not_the_whole_gpu_model() -> None:
    profile = queues("{team: vision, quota: {a100-sxm-80gb/3g.40gb: 4}}", pools=MIG_K8S_POOL)
    assert run(checks.queues_resolve, profile) == []
    whole = queues("{team: vision, quota: {a100-sxm-80gb: 1}}", pools=MIG_K8S_POOL)
    only(
        run(checks.queues_resolve, whole),
        "kubernetes.clusters[0].queues.teams[0].quota.a100-sxm-80gb",
        "no pool in cluster 'lab-k8s' provides 'a100-sxm-80gb'",
    )


def test_quotas_count_a_managed_pool_at_its_maximum_nodes() -> None:
    pools = """
        node_pools:
          - name: cloud
            scheduler: kubernetes
            cluster: lab-k8s
            provider: gke
            nodes: {min: 0, max: 3}
            gpus: {model: l4-24gb, count: 2}
    """
    fits = queues("{team: vision, quota: {l4-24gb: 6}}", pools=pools)
    assert run(checks.quotas_within_capacity, fits) == []
    over = queues("{team: vision, quota: {l4-24gb: 7}}", pools=pools)
    found = run(checks.quotas_within_capacity, over)
    only(found, "kubernetes.clusters[0].queues.teams[0].quota.l4-24gb", "above the 6 l4-24gb")


def test_quotas_count_mig_instances_per_profile_in_the_layout() -> None:
    # 2 hosts x 4 GPUs x 2 instances of 3g.40gb = 16
    key = "a100-sxm-80gb/3g.40gb"
    fits = queues(f"{{team: vision, quota: {{{key}: 16}}}}", pools=MIG_K8S_POOL)
    assert run(checks.quotas_within_capacity, fits) == []
    over = queues(f"{{team: vision, quota: {{{key}: 17}}}}", pools=MIG_K8S_POOL)
    only(
        run(checks.quotas_within_capacity, over),
        f"kubernetes.clusters[0].queues.teams[0].quota.{key}",
        f"quota 17 is above the 16 {key}",
    )


# --- storage_pools_resolve ---------------------------------------------------------------


def storage(entry: str) -> str:
    return f"storage: [{entry}]"


def test_storage_pools_resolve_passes_known_pools_and_a_lustre_nid() -> None:
    found = run(
        checks.storage_pools_resolve,
        """
        storage:
          - {name: home, type: nfs, source: "nas:/home", mount: /home, pools: [a100]}
          - name: scratch
            type: lustre
            source: "10.0.0.1@o2ib:/scratch"
            mount: /scratch
            kubernetes: {storage_class: scratch}
        """,
    )
    assert found == []


def test_storage_naming_an_unknown_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage('{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [h100]}'),
    )
    only(found, "storage[0].pools[0]", "'h100' is not a node pool; known: a100, l4-serve")


def test_storage_naming_a_managed_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        MANAGED_POOL
        + "    "
        + storage('{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [cloud]}'),
    )
    only(found, "storage[0].pools[0]", "pool 'cloud' is a managed gke pool")
    assert "list on-prem pools" in found[0].message


def test_storage_class_without_a_kubernetes_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [a100], '
            "kubernetes: {storage_class: home}}"
        ),
    )
    only(
        found,
        "storage[0].kubernetes.storage_class",
        "needs an on-prem Kubernetes pool that mounts it",
        "error",
    )


def test_storage_class_mounted_on_no_pool_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, pools: [], '
            "kubernetes: {storage_class: home}}"
        ),
    )
    only(
        found,
        "storage[0].kubernetes.storage_class",
        "needs an on-prem Kubernetes pool that mounts it",
        "error",
    )


def test_lustre_source_without_an_mgs_nid_is_refused() -> None:
    found = run(
        checks.storage_pools_resolve,
        storage('{name: scratch, type: lustre, source: "mds01:/scratch", mount: /scratch}'),
    )
    only(found, "storage[0].source", "a Lustre source names the MGS NID")


# --- pipeline ----------------------------------------------------------------------------


def validate(text: str) -> pipeline.Validated:
    return pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))


def test_pipeline_schema_error_carries_file_line_and_column() -> None:
    text = BASE.replace("{name: alice, uid: 10001}", "{name: alice, uid: 10}")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    line = line_of(text, "uid: 10}")
    column = text.splitlines()[line - 1].index("uid") + 1
    assert (finding.file, finding.line, finding.column) == ("bp.yaml", line, column)
    assert finding.path == "identity.users[0].uid"
    assert "below the minimum of 1000" in finding.message


def test_pipeline_check_error_is_placed_at_the_key_it_names() -> None:
    text = BASE.replace("model: a100-sxm-80gb", "model: a200")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert finding.path == "node_pools[0].gpus.model"
    line = line_of(text, "model: a200")
    column = text.splitlines()[line - 1].index("model") + 1
    assert (finding.file, finding.line, finding.column) == ("bp.yaml", line, column)


def test_pipeline_reports_every_finding_of_every_check_sorted_by_line() -> None:
    text = BASE.replace("members: [bob]", "members: [carol]").replace(
        'max_time: "1-00:00:00"', 'max_time: "99999-0"'
    )
    text += "    - name: idle\n"  # a cluster without pools: a warning rides along
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    findings = caught.value.findings
    assert [(f.path, f.level) for f in findings] == [
        ("identity.teams[1].members[0]", "error"),
        ("slurm.partitions[0].max_time", "error"),
        ("kubernetes.clusters[1]", "warning"),
    ]
    assert [f.line for f in findings] == [
        line_of(text, "carol"),
        line_of(text, '"99999-0"'),
        line_of(text, "- name: idle"),
    ]
    assert str(caught.value) == "2 error(s)"


def test_pipeline_schema_errors_stop_before_the_checks() -> None:
    text = BASE.replace("uid: 10002", "uid: 10001").replace("count: 2}", "count: 99}")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    assert [f.path for f in caught.value.findings] == ["node_pools[1].gpus.count"]


def test_pipeline_warnings_do_not_fail_the_run_and_are_placed() -> None:
    text = BASE + "    - name: idle\n"
    result = validate(text)
    [warning] = result.findings
    assert (warning.level, warning.path) == ("warning", "kubernetes.clusters[1]")
    assert warning.line == line_of(text, "- name: idle")
    assert warning.format().startswith(f"bp.yaml:{warning.line}:")
    assert "warning: cluster 'idle' has no node pools" in warning.format()


def test_pipeline_counts_hosts_before_expanding_them() -> None:
    text = BASE.replace("lab-gpu-[01-02]", "m[1-50001]").replace("lab-k8s-[01-02]", "n[1-50000]")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert finding.path == "node_pools"
    assert "100001 hosts, above the estate limit of 100000" in finding.message


def test_pipeline_refuses_one_hostlist_above_the_expansion_limit_as_a_finding() -> None:
    # under the estate limit, but above what the model expands per expression
    text = BASE.replace("hosts: lab-k8s-[01-02]", "hosts: n[1-70000]")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert (finding.path, finding.line) == ("node_pools[1].hosts", line_of(text, "n[1-70000]"))
    assert "expands to 70000 names" in finding.message


def test_slurm_minutes_refuses_limits_beyond_what_slurm_stores() -> None:
    with pytest.raises(ValueError, match="longer than the longest time Slurm reads"):
        slurm_minutes("999999999999-0")


# --- slurm_exporter_port_free -------------------------------------------------------------


def test_slurm_exporter_port_free_passes_the_default_ports() -> None:
    assert run(checks.slurm_exporter_port_free) == []


@pytest.mark.parametrize(
    ("fragment", "holder"),
    [
        ("observability: {slurm_exporter: {port: 9100}}", "by the node exporter"),
        ("observability: {slurm_exporter: {port: 6817}}", "by slurmctld"),
        (
            "observability: {slurm_exporter: {port: 6819}}\n"
            "slurm: {accounting: {host: lab-ctl,"
            " database: {host: localhost, password: {secret: db}}}}",
            "by slurmdbd",
        ),
    ],
)
def test_slurm_exporter_port_free_refuses_a_port_taken_on_the_controller(
    fragment: str, holder: str
) -> None:
    found = run(checks.slurm_exporter_port_free, fragment)
    only(found, "observability.slurm_exporter.port", holder)


def test_slurm_exporter_port_free_ignores_slurmdbd_on_another_host() -> None:
    fragment = (
        "observability: {slurm_exporter: {port: 6819}}\n"
        "slurm: {accounting: {host: lab-db, database: {host: localhost, password: {secret: db}}}}"
    )
    assert run(checks.slurm_exporter_port_free, fragment) == []


# --- reservations_valid, mpi_ports_valid, rest_api_valid --------------------------------------

# The checks compare reservations with a fixed "now", so these findings never age.
FIXED_NOW = datetime(2028, 1, 10, 12, 0)


@pytest.fixture
def fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks.slurm, "now", lambda: FIXED_NOW)


def reservation(**fields: str) -> str:
    """A slurm.reservations fragment: one valid reservation, with ``fields`` replaced."""
    values = {
        "name": "maint",
        "start": '"2028-02-01T08:00"',
        "duration": '"8:00:00"',
        "pools": "[a100]",
        "flags": "[maint]",
        "teams": "[nlp]",
        **fields,
    }
    body = ", ".join(f"{k}: {v}" for k, v in values.items() if v != "~")
    return f"slurm: {{reservations: [{{{body}}}]}}"


@pytest.mark.usefixtures("fixed_now")
def test_reservations_valid_passes_a_future_maintenance_window() -> None:
    assert run(checks.reservations_valid, reservation()) == []
    assert run(checks.reservations_valid, reservation(pools="~", partition="gpu")) == []
    assert (
        run(checks.reservations_valid, reservation(pools="~", hosts="lab-gpu-01", users="[alice]"))
        == []
    )


@pytest.mark.usefixtures("fixed_now")
@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        (
            {"pools": "~", "hosts": '"lab-gpu-[02-03]"'},
            "slurm.reservations[0].hosts",
            "1 host(s) in no Slurm pool: 'lab-gpu-03'",
        ),
        (
            {"pools": "[l4-serve]"},
            "slurm.reservations[0].pools[0]",
            "scheduled by Kubernetes",
        ),
        ({"pools": "[h100]"}, "slurm.reservations[0].pools[0]", "'h100' is not a node pool"),
        ({"pools": "~"}, "slurm.reservations[0]", "set pools, partition or hosts"),
        ({"partition": "cpu"}, "slurm.reservations[0].partition", "'cpu' is not a partition"),
        ({"teams": "[]"}, "slurm.reservations[0]", "set teams (Slurm accounts) or users"),
        ({"teams": "[ops]"}, "slurm.reservations[0].teams[0]", "'ops' is not a team"),
        ({"users": "[carol]"}, "slurm.reservations[0].users[0]", "'carol' is not a user"),
        ({"duration": "~"}, "slurm.reservations[0]", "set duration"),
        ({"end": '"2028-02-01T09:00"'}, "slurm.reservations[0].end", "not both"),
        (
            {"duration": "~", "end": '"2028-02-01T07:00"'},
            "slurm.reservations[0].end",
            "is not after start",
        ),
        ({"duration": '"999999999"'}, "slurm.reservations[0].duration", "not a valid Slurm time"),
        ({"duration": '"0"'}, "slurm.reservations[0].duration", "duration '0' is no time at all"),
        ({"duration": '"0:00:00"'}, "slurm.reservations[0].duration", "at least a minute"),
        ({"flags": "[daily, weekly]"}, "slurm.reservations[0].flags", "one recurrence at most"),
        (
            {"start": '"2028-01-09T08:00"'},
            "slurm.reservations[0].start",
            "ended at 2028-01-09T16:00:00, in the past",
        ),
    ],
)
def test_reservations_valid_refuses(fields: dict[str, str], path: str, text: str) -> None:
    only(run(checks.reservations_valid, reservation(**fields)), path, text)


@pytest.mark.usefixtures("fixed_now")
def test_a_reservation_over_hosts_outside_its_partition_is_an_error() -> None:
    fragment = """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]"}
          - {name: cpu, scheduler: slurm, hosts: "lab-cpu-[01-04]"}
        slurm:
          partitions: [{name: gpu, pools: [a100]}, {name: cpu, pools: [cpu]}]
          reservations:
            - {name: m, start: "2028-02-01T08:00", duration: "1:00:00", partition: gpu,
               hosts: "lab-gpu-02,lab-cpu-[03-04]", teams: [nlp]}
        """
    only(
        run(checks.reservations_valid, fragment),
        "slurm.reservations[0].hosts",
        "2 host(s) outside partition 'gpu': 'lab-cpu-[03-04]'",
    )


@pytest.mark.usefixtures("fixed_now")
def test_a_reservation_that_started_or_recurs_from_the_past_is_a_warning() -> None:
    running = reservation(start='"2028-01-10T08:00"')
    only(
        run(checks.reservations_valid, running),
        "slurm.reservations[0].start",
        "10 minutes",
        "warning",
    )
    weekly = reservation(start='"2027-01-04T08:00"', flags="[maint, weekly]")
    only(run(checks.reservations_valid, weekly), "slurm.reservations[0].start", "past", "warning")


def test_the_past_is_judged_against_now_not_a_fixed_date(monkeypatch: pytest.MonkeyPatch) -> None:
    fragment = reservation(start='"2028-02-01T08:00"')
    monkeypatch.setattr(checks.slurm, "now", lambda: datetime(2028, 1, 1))
    assert run(checks.reservations_valid, fragment) == []
    monkeypatch.setattr(checks.slurm, "now", lambda: datetime(2028, 3, 1))
    only(run(checks.reservations_valid, fragment), "slurm.reservations[0].start", "in the past")


@pytest.mark.usefixtures("fixed_now")
def test_overlapping_reservations_need_maint_or_overlap() -> None:
    fragment = """
        slurm:
          reservations:
            - {name: a, start: "2028-02-01T08:00", duration: "4:00:00", pools: [a100], teams: [nlp]}
            - {name: b, start: "2028-02-01T10:00", duration: "4:00:00", hosts: lab-gpu-02,
               teams: [vision]}
            - {name: c, start: "2028-02-01T12:00", duration: "1:00:00", hosts: lab-gpu-01,
               teams: [vision]}
            - {name: d, start: "2028-02-01T09:00", duration: "1:00:00", hosts: lab-gpu-01,
               teams: [vision], flags: [overlap]}
        """
    only(
        run(checks.reservations_valid, fragment),
        "slurm.reservations[1]",
        "holds 'lab-gpu-02' while reservation 'a' does",
    )


@pytest.mark.usefixtures("fixed_now")
def test_a_hostlist_naming_every_host_of_a_pool_meets_a_reservation_of_the_pool() -> None:
    fragment = """
        slurm:
          reservations:
            - {name: a, start: "2028-02-01T08:00", duration: "4:00:00", partition: gpu,
               teams: [nlp]}
            - {name: b, start: "2028-02-01T09:00", duration: "1:00:00",
               hosts: "lab-gpu-[01-02]", teams: [vision]}
            - {name: c, start: "2028-02-01T09:30", duration: "1:00:00", pools: [a100],
               teams: [vision]}
        """
    found = run(checks.reservations_valid, fragment)
    assert [(f.path, f.message.split(";")[0]) for f in found] == [
        ("slurm.reservations[1]", "holds 'lab-gpu-[01-02]' while reservation 'a' does"),
        (
            "slurm.reservations[2]",
            "holds 'lab-gpu-[01-02]' while reservation 'a' does (and 1 more reservation(s))",
        ),
    ]


@pytest.mark.usefixtures("fixed_now")
def test_the_reservation_listed_later_is_the_one_refused_whenever_it_starts() -> None:
    """scontrol creates them in blueprint order: the second created is the one refused."""
    fragment = """
        slurm:
          reservations:
            - {name: late, start: "2028-02-01T10:00", duration: "1:00:00", hosts: lab-gpu-01,
               teams: [nlp]}
            - {name: early, start: "2028-02-01T08:00", duration: "4:00:00",
               hosts: "lab-gpu-[01-02]", teams: [vision]}
            - {name: after, start: "2028-02-01T12:00", duration: "1:00:00", hosts: lab-gpu-02,
               teams: [vision]}
        """
    only(
        run(checks.reservations_valid, fragment),
        "slurm.reservations[1]",
        "holds 'lab-gpu-01' while reservation 'late' does;",
    )


@pytest.mark.usefixtures("fixed_now")
def test_reservations_over_different_hosts_of_one_pool_at_one_time_are_fine() -> None:
    fragment = """
        slurm:
          reservations:
            - {name: a, start: "2028-02-01T08:00", duration: "UNLIMITED", hosts: lab-gpu-01,
               teams: [nlp]}
            - {name: b, start: "2029-02-01T08:00", duration: "1:00:00", hosts: lab-gpu-02,
               teams: [vision]}
        """
    assert run(checks.reservations_valid, fragment) == []
    unlimited = fragment.replace("hosts: lab-gpu-02", "pools: [a100]")
    only(
        run(checks.reservations_valid, unlimited),
        "slurm.reservations[1]",
        "holds 'lab-gpu-01' while reservation 'a' does",
    )


@pytest.mark.usefixtures("fixed_now")
def test_a_pool_outside_the_reservations_partition_is_named_by_its_hosts() -> None:
    fragment = """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]"}
          - {name: cpu, scheduler: slurm, hosts: "lab-cpu-[01-04]"}
        slurm:
          partitions: [{name: gpu, pools: [a100]}, {name: cpu, pools: [cpu]}]
          reservations:
            - {name: m, start: "2028-02-01T08:00", duration: "1:00:00", partition: gpu,
               pools: [a100, cpu], teams: [nlp]}
        """
    only(
        run(checks.reservations_valid, fragment),
        "slurm.reservations[0].pools",
        "4 host(s) outside partition 'gpu': 'lab-cpu-[01-04]'",
    )


def test_the_hosts_reservations_name_one_by_one_are_bounded_before_expansion() -> None:
    """Each reservation keeps its own copy of the names its hosts expand to: 300 naming a
    65,536-host pool host by host would be 20 million names."""
    held = '{start: "2028-02-01T08:00", duration: "1:00:00", hosts: "lab-gpu-[00001-50000]"}'
    fragment = f"slurm: {{reservations: [{held}, {held}, {held}]}}".replace(
        "{start", "{name: r, start"
    )
    document = load.parse_blueprint(blueprint(fragment).encode(), "bp.yaml")
    with pytest.raises(BlueprintInvalid) as raised:
        pipeline.validate_document(document)
    assert [(f.path, f.message) for f in raised.value.findings] == [
        (
            "slurm.reservations",
            "their hosts name 150000 hosts in all, above the limit of 100000; hold a whole "
            "pool or partition with pools or partition",
        )
    ]


@pytest.mark.usefixtures("fixed_now")
def test_reservation_names_are_unique() -> None:
    fragment = """
        slurm:
          reservations:
            - {name: a, start: "2028-02-01T08:00", duration: "1:00:00", pools: [a100],
               teams: [nlp], flags: [maint]}
            - {name: a, start: "2028-03-01T08:00", duration: "1:00:00", pools: [a100],
               teams: [nlp], flags: [maint]}
        """
    only(run(checks.reservations_valid, fragment), "slurm.reservations[1].name", "listed twice")


def test_mpi_ports_valid() -> None:
    assert run(checks.mpi_ports_valid, "slurm: {mpi: {default: pmix}}") == []
    assert run(checks.mpi_ports_valid, 'slurm: {mpi: {default: pmi2, ports: "12000-12999"}}') == []
    only(
        run(checks.mpi_ports_valid, 'slurm: {mpi: {ports: "13000-12000"}}'),
        "slurm.mpi.ports",
        "not a range of unprivileged ports",
    )
    only(
        run(checks.mpi_ports_valid, 'slurm: {mpi: {ports: "6000-7000"}}'),
        "slurm.mpi.ports",
        "includes the slurmctld or slurmd port",
    )


REST = "slurm: {rest_api: {host: lab-ctl, jwt_key: {secret: slurm_jwt}%s}}"


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        ("munge", "it is the user munged runs as"),
        ("mysql", "it is the user MariaDB runs as"),
        ("prometheus", "it is the user node exporter runs as"),
        ("nobody", "it is a Debian system user"),
        ("daemon", "it is a Debian system user"),
        ("bin", "it is a Debian system user"),
        ("www-data", "it is a Debian system user"),
        ("sshd", "it is a Debian system user (systemd and base packages)"),
    ],
)
def test_slurmrestd_does_not_run_as_a_system_account(user: str, reason: str) -> None:
    found = only(
        run(checks.rest_api_valid, REST % f", user: {user}"), "slurm.rest_api.user", reason
    )
    assert found.message.startswith(f"slurmrestd must not run as {user!r}: ")


def test_every_system_user_the_schema_lets_through_is_refused_for_slurmrestd() -> None:
    names = [n for n in reserved.SYSTEM_USERS if re.fullmatch(schema.USER, n)]
    assert {"root", "slurm", "munge", "nobody"} <= set(names)
    for name in names:
        found = run(checks.rest_api_valid, REST % f", user: {name}")
        assert [f.path for f in found] == ["slurm.rest_api.user"], name


def test_rest_api_valid() -> None:
    assert run(checks.rest_api_valid, REST % "") == []
    only(run(checks.rest_api_valid, REST % ", user: slurm"), "slurm.rest_api.user", "SlurmUser")
    only(run(checks.rest_api_valid, REST % ", user: root"), "slurm.rest_api.user", "root")
    only(run(checks.rest_api_valid, REST % ", user: alice"), "slurm.rest_api.user", "a person")
    only(run(checks.rest_api_valid, REST % ", port: 6817"), "slurm.rest_api.port", "slurmctld's")
    no_slurm = (
        "node_pools: [{name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: n1}]\n"
    )
    only(run(checks.rest_api_valid, no_slurm + REST % ""), "slurm.rest_api", "no Slurm pools")


# --- elastic cloud nodes ------------------------------------------------------------------

CLOUD_POOL = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: burst
        scheduler: slurm
        provider: gke
        instance_type: a3-highgpu-8g
        hosts: burst-[01-04]
        nodes: {min: 1, max: 4}
        cpu: {sockets: 2, cores_per_socket: 52}
        memory_gb: 1872
        gpus: {model: h100-sxm-80gb, count: 8}
        cloud: {image: projects/aurora-hpc/global/images/slurm-v3, zone: us-central1-a,
                project: aurora-hpc}
"""
EKS_CLOUD_POOL = (
    CLOUD_POOL.replace("provider: gke", "provider: eks")
    .replace("a3-highgpu-8g", "p5.48xlarge")
    .replace(
        """image: projects/aurora-hpc/global/images/slurm-v3, zone: us-central1-a,
                project: aurora-hpc""",
        "image: ami-0123456789abcdef0, region: us-east-1",
    )
)


def joined(*fragments: str) -> str:
    """Fragments written at different indents, as one fragment."""
    return "\n".join(textwrap.dedent(f) for f in fragments)


@pytest.mark.parametrize("pools", [CLOUD_POOL, EKS_CLOUD_POOL], ids=["gke", "eks"])
def test_a_complete_slurm_cloud_pool_passes(pools: str) -> None:
    for function in (
        checks.pool_fields_for_provider,
        checks.instance_type_carries_gpus,
        checks.gpu_models_offered_by_cloud,
        checks.host_in_one_pool,
    ):
        assert run(function, pools) == [], function.__name__


def test_a_slurm_cloud_pool_needs_its_providers_location() -> None:
    found = run(
        checks.pool_fields_for_provider,
        CLOUD_POOL.replace("zone: us-central1-a,", "region: us-central1,"),
    )
    assert [(f.path, f.message) for f in found] == [
        ("node_pools[1].cloud", "a Slurm gke pool needs `zone`"),
        (
            "node_pools[1].cloud.region",
            "`region` is for provider eks; a gke pool sets zone and project",
        ),
    ]


def test_a_slurm_cloud_pool_image_is_the_providers() -> None:
    found = run(
        checks.pool_fields_for_provider,
        EKS_CLOUD_POOL.replace("ami-0123456789abcdef0", "projects/aurora-hpc/global/images/x"),
    )
    only(found, "node_pools[1].cloud.image", "is not an eks image; give an AMI id")


def test_a_slurm_cloud_pool_creates_at_most_its_named_nodes() -> None:
    found = run(checks.pool_fields_for_provider, CLOUD_POOL.replace("max: 4", "max: 8"))
    only(found, "node_pools[1].nodes.max", "max 8, but `hosts` names 4 nodes")


def test_a_slurm_aks_pool_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider, CLOUD_POOL.replace("provider: gke", "provider: aks")
    )
    only(found, "node_pools[1].provider", "Slurm cloud pools are created on gke")


def test_cloud_on_an_onprem_or_kubernetes_pool_is_refused() -> None:
    found = run(
        checks.pool_fields_for_provider,
        """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n[1-2]
            cpu: {sockets: 1, cores_per_socket: 2}
            memory_gb: 4
            cloud: {image: ami-0123456789abcdef0, region: us-east-1}
        """,
    )
    only(found, "node_pools[0].cloud", "set provider, or remove `cloud`")


def test_a_slurm_cloud_instance_type_must_carry_the_gpus() -> None:
    found = run(
        checks.instance_type_carries_gpus, CLOUD_POOL.replace("a3-highgpu-8g", "a3-highgpu-4g")
    )
    only(found, "node_pools[1].gpus.count", "a3-highgpu-4g has 4 h100-sxm-80gb GPUs")


def test_a_cloud_host_is_counted_on_the_slurm_side_once() -> None:
    """The hybrid boundary: a cloud node name may not also be a Kubernetes host."""
    found = run(
        checks.host_in_one_pool,
        CLOUD_POOL
        + """
      - {name: k8s, scheduler: kubernetes, cluster: lab-k8s, hosts: burst-04}
""",
    )
    only(
        found,
        "node_pools[2].hosts",
        "host burst-04 is already in pool 'burst' (both slurm and kubernetes)",
    )


def test_cloud_options_are_refused_only_with_cloud_nodes() -> None:
    options = "slurm: {options: {TreeWidth: 16}}"
    assert run(checks.cloud_options_not_owned, options) == []
    found = run(checks.cloud_options_not_owned, joined(CLOUD_POOL, options))
    only(
        found,
        "slurm.options.TreeWidth",
        "TreeWidth is rendered by estategen for the estate's cloud nodes",
    )


def test_power_saving_without_cloud_nodes_is_refused() -> None:
    saving = "slurm: {power_saving: {suspend_time: 300}}"
    assert run(checks.power_saving_has_cloud_nodes, joined(CLOUD_POOL, saving)) == []
    found = run(checks.power_saving_has_cloud_nodes, saving)
    only(found, "slurm.power_saving", "no Slurm pool has a provider")


# --- cloud nodes the site's own programs start -------------------------------------------

SITE_CLOUD_POOL = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: spot
        scheduler: slurm
        state: cloud
        hosts: spot-[1-4]
        cpu: {sockets: 1, cores_per_socket: 36}
        memory_gb: 192
"""
SITE_PROGRAMS = """
    slurm:
      power_saving:
        resume_program: /opt/site/slurm/resume
        suspend_program: /opt/site/slurm/suspend
        exclude_nodes: ["spot-[1-1]"]
"""


def test_a_site_cloud_pool_with_the_sites_programs_passes() -> None:
    for function in (
        checks.site_cloud_pools,
        checks.power_saving_has_cloud_nodes,
        checks.pool_fields_for_provider,
    ):
        assert run(function, joined(SITE_CLOUD_POOL, SITE_PROGRAMS)) == [], function.__name__


def test_power_saving_with_only_a_site_cloud_pool_is_not_refused() -> None:
    saving = "slurm: {power_saving: {suspend_time: 300}}"
    assert run(checks.power_saving_has_cloud_nodes, joined(SITE_CLOUD_POOL, saving)) == []


def test_state_cloud_on_a_provider_pool_is_refused() -> None:
    pools = CLOUD_POOL.replace("provider: gke", "provider: gke\n        state: cloud")
    only(run(checks.site_cloud_pools, pools), "node_pools[1].state", "State=CLOUD already")


def test_state_cloud_on_a_kubernetes_pool_is_refused() -> None:
    fragment = """
    node_pools:
      - name: a100
        scheduler: slurm
        hosts: lab-gpu-[01-02]
        cpu: {sockets: 2, cores_per_socket: 32}
        memory_gb: 512
        gpus: {model: a100-sxm-80gb, count: 4}
      - name: l4-serve
        scheduler: kubernetes
        cluster: lab-k8s
        state: cloud
        hosts: lab-k8s-[01-02]
        gpus: {model: l4-24gb, count: 2}
    """
    only(run(checks.site_cloud_pools, fragment), "node_pools[1].state", "Kubernetes pools")


def test_the_sites_programs_beside_a_provider_pool_are_refused() -> None:
    saving = "slurm: {power_saving: {resume_program: /opt/site/slurm/resume}}"
    found = run(checks.site_cloud_pools, joined(CLOUD_POOL, saving))
    only(found, "slurm.power_saving.resume_program", "estategen's own ResumeProgram")


def test_a_site_program_inside_the_state_folder_is_refused() -> None:
    saving = "slurm: {power_saving: {suspend_program: /var/spool/slurmctld/suspend}}"
    found = run(checks.site_cloud_pools, joined(SITE_CLOUD_POOL, saving))
    only(found, "slurm.power_saving.suspend_program", "slurm.paths.state_save_location")


def test_excluded_nodes_outside_the_cloud_pools_are_refused() -> None:
    saving = 'slurm: {power_saving: {exclude_nodes: ["spot-[1-2]", "lab-gpu-01"]}}'
    found = run(checks.site_cloud_pools, joined(SITE_CLOUD_POOL, saving))
    only(
        found, "slurm.power_saving.exclude_nodes[1]", "'lab-gpu-01' is not a node of a Slurm cloud"
    )


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


# --- node health checks -------------------------------------------------------------------

HEALTH = "slurm: {health_check: {interval: 60}}"


def test_health_checks_default_to_what_the_pool_declares() -> None:
    from estategen.facts import health_checks

    lab = estate(HEALTH + "\nstorage: [{name: home, type: nfs, source: 'nas:/home', mount: /home}]")
    assert health_checks(lab, lab.pools_by_name["a100"]) == ("gpus", "mounts", "memory")
    assert run(checks.health_checks_have_facts, HEALTH) == []


def test_a_health_check_without_its_fact_is_refused() -> None:
    found = run(
        checks.health_checks_have_facts,
        joined(
            HEALTH,
            """
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: n[1-2]
            cpu: {sockets: 1, cores_per_socket: 2}
            memory_gb: 4
            gpus: {model: a100-sxm-80gb, count: 4}
            health_check: {checks: [gpus, mig, mounts]}
        storage: []
        """,
        ),
    )
    assert [(f.path, f.message) for f in found] == [
        (
            "node_pools[0].health_check.checks[1]",
            "check 'mig' verifies a MIG layout (`gpus.mig`), which pool 'a100' does not declare",
        ),
        (
            "node_pools[0].health_check.checks[2]",
            "check 'mounts' verifies file systems mounted on it (`storage[]`), which pool 'a100' "
            "does not declare",
        ),
    ]


def test_a_pool_health_check_needs_slurm_health_check() -> None:
    found = run(
        checks.health_checks_have_facts,
        """
        node_pools:
          - {name: a100, scheduler: slurm, hosts: n1, memory_gb: 4,
             health_check: {checks: [memory]}}
        """,
    )
    only(found, "node_pools[0].health_check", "set slurm.health_check")


def test_a_kubernetes_pool_health_check_is_refused() -> None:
    found = run(
        checks.health_checks_have_facts,
        joined(
            HEALTH,
            """
        node_pools:
          - {name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n1,
             health_check: {checks: [gpus]}}
        """,
        ),
    )
    only(found, "node_pools[0].health_check", "health checks are run by slurmd")


@pytest.mark.parametrize(
    ("states", "text"),
    [
        ("[any, idle]", "`any` already runs the check in every state; remove idle"),
        ("[cycle]", "`cycle` spreads the runs over the interval and names no state"),
        ("[idle, idle]", "a node state is listed twice"),
    ],
)
def test_health_check_node_states_that_say_nothing_are_refused(states: str, text: str) -> None:
    found = run(
        checks.health_check_node_state_valid,
        f"slurm: {{health_check: {{node_state: {states}}}}}",
    )
    only(found, "slurm.health_check.node_state", text)


def test_health_check_node_states_that_combine_pass() -> None:
    for states in ("[any]", "[any, cycle]", "[idle, mixed, cycle]"):
        found = run(
            checks.health_check_node_state_valid,
            f"slurm: {{health_check: {{node_state: {states}}}}}",
        )
        assert found == [], states


# --- AKS: aks_cluster_settings, aks_pools_buildable -------------------------------------------

AKS = """
node_pools:
  - name: {name}
    scheduler: kubernetes
    cluster: az
    provider: aks
    instance_type: Standard_ND96isr_H100_v5
    nodes: {{min: 0, max: 4}}
    gpus: {{model: h100-sxm-80gb, count: 8{mig}}}
    labels: {labels}
kubernetes:
  clusters:
    - name: az
      provider: aks
      region: {region}
{resource_group}
"""


def aks(
    name: str = "h100",
    mig: str = "",
    labels: str = "{}",
    region: str = "westeurope",
    resource_group: str = "      resource_group: rg-gpu",
) -> str:
    return AKS.format(
        name=name, mig=mig, labels=labels, region=region, resource_group=resource_group
    )


def test_aks_cluster_with_azure_region_and_resource_group_passes() -> None:
    assert run(checks.aks_cluster_settings, aks()) == []
    assert run(checks.aks_pools_buildable, aks()) == []


def test_aks_cluster_needs_its_resource_group() -> None:
    found = run(checks.aks_cluster_settings, aks(resource_group=""))
    only(found, "kubernetes.clusters[0]", "an aks cluster needs `resource_group`")


def test_resource_group_is_refused_on_other_providers() -> None:
    fragment = aks().replace("provider: aks", "provider: eks").replace("westeurope", "eu-west-1")
    found = run(checks.aks_cluster_settings, fragment)
    only(found, "kubernetes.clusters[0].resource_group", "this cluster is eks: remove it")


@pytest.mark.parametrize(
    ("provider", "region", "text"),
    [
        ("aks", "west-europe", "'west-europe' is not an Azure region"),
        ("eks", "westeurope", "'westeurope' is not a eks region; it names regions like eu-west-1"),
        ("gke", "europewest4", "is not a gke region; it names regions like us-central1"),
    ],
)
def test_a_clusters_region_takes_its_clouds_form(provider: str, region: str, text: str) -> None:
    fragment = aks(region=region, resource_group="") if provider != "aks" else aks(region=region)
    fragment = fragment.replace("provider: aks", f"provider: {provider}")
    found = run(checks.aks_cluster_settings, fragment)
    only(found, "kubernetes.clusters[0].region", text)


def test_the_azure_region_form_passes_the_schema() -> None:
    _, problems = schema.normalise(_parse(blueprint(aks(region="eastus2"))).data)
    assert problems == []


def test_aks_pool_name_is_an_agent_pool_name() -> None:
    found = run(checks.aks_pools_buildable, aks(name="h100-burst"))
    only(found, "node_pools[0].name", "'h100-burst' cannot name an AKS agent pool")
    assert run(checks.aks_pools_buildable, aks(name="gpupool12345")) == []
    found = run(checks.aks_pools_buildable, aks(name="gpupool123456"))
    only(found, "node_pools[0].name", "at most 12")


def test_aks_pool_labels_kubelet_or_aks_would_refuse() -> None:
    labels = "{kubernetes.azure.com/mode: user, node-role.kubernetes.io/gpu: '', team: ml}"
    found = run(checks.aks_pools_buildable, aks(labels=labels))
    finding = only(found, "node_pools[0].labels", "AKS nodes cannot carry")
    assert "kubernetes.azure.com/mode, node-role.kubernetes.io/gpu" in finding.message
    assert "team" not in finding.message.split(":")[0]


@pytest.mark.parametrize(
    "layout",
    [
        "[1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]",
        "[2g.20gb, 2g.20gb, 2g.20gb]",
        "[3g.40gb, 3g.40gb]",
        "[4g.40gb]",
        "[7g.80gb]",
    ],
)
def test_aks_builds_uniform_mig_layouts_that_fill_the_gpu(layout: str) -> None:
    assert run(checks.aks_pools_buildable, aks(mig=f", mig: {layout}")) == []


@pytest.mark.parametrize(
    "layout",
    [
        "[3g.40gb]",  # one of two that fit
        "[3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]",  # mixed sizes
        "[1g.20gb, 1g.20gb, 1g.20gb, 1g.20gb]",  # no MIGng profile yields 1g.20gb
    ],
)
def test_aks_refuses_mig_layouts_it_cannot_build(layout: str) -> None:
    found = run(checks.aks_pools_buildable, aks(mig=f", mig: {layout}"))
    finding = only(found, "node_pools[0].gpus.mig", "AKS partitions every GPU of a pool")
    assert "7 x 1g.10gb (MIG1g), 3 x 2g.20gb (MIG2g), 2 x 3g.40gb (MIG3g)" in finding.message


def test_aks_findings_carry_the_blueprint_line() -> None:
    text = blueprint(aks(name="h100-burst"))
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))
    (finding,) = [f for f in caught.value.findings if f.path == "node_pools[0].name"]
    assert finding.line == line_of(text, "name: h100-burst")


# --- eks_autoscaler_tags_fit --------------------------------------------------------------

EKS_GROWING = """
node_pools:
  - name: l40s
    scheduler: kubernetes
    cluster: aws
    provider: eks
    instance_type: g6e.12xlarge
    nodes: {{min: {low}, max: 4}}
    gpus: {{model: l40s-48gb, count: 4}}
    labels: {{{key}: x}}
kubernetes:
  clusters: [{{name: aws, provider: eks, region: eu-west-1}}]
"""
LONG_KEY = "example.com/" + "k" * 63  # 121 characters as a tag key


def test_eks_growing_group_with_short_label_keys_passes() -> None:
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key="tier")) == []


def test_eks_label_key_too_long_for_the_autoscalers_tag_is_refused() -> None:
    key = "research-gpu-team.example.com/" + "k" * 63  # 139 characters as a tag key
    found = run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key=key))
    finding = only(found, "node_pools[0].labels", "too long for the Cluster Autoscaler")
    assert f"{key!r}" in finding.message and "of at most 128 in the key" in finding.message
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=0, key=LONG_KEY)) == []


def test_a_fixed_size_group_needs_no_autoscaler_tags() -> None:
    key = "research-gpu-team.example.com/" + "k" * 63  # 139 characters as a tag key
    assert run(checks.eks_autoscaler_tags_fit, EKS_GROWING.format(low=4, key=key)) == []


# --- queue_engine_keys ---------------------------------------------------------------------

VOLCANO = """
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                engine: volcano
                teams:
                  - {team: vision, quota: {l4-24gb: 2}}
                  - {team: nlp, quota: {l4-24gb: 2}}
"""


def test_queue_engine_keys_pass_kueue_with_a_cohort_and_volcano_without() -> None:
    assert run(checks.queue_engine_keys) == []
    assert run(checks.queue_engine_keys, VOLCANO) == []


def test_kueue_without_a_cohort_is_refused() -> None:
    fragment = VOLCANO.replace("engine: volcano", "engine: kueue")
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues",
        "'cohort' is required with engine kueue",
    )


def test_volcano_refuses_a_cohort_it_would_ignore() -> None:
    fragment = VOLCANO.replace("engine: volcano", "engine: volcano\n                cohort: lab")
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues.cohort",
        "Volcano has no cohorts",
    )


def test_volcano_refuses_a_weight_above_its_queue_crd_bound() -> None:
    """Queue.spec.weight has maximum 65535 (scheduling.volcano.sh_queues.yaml at v1.15.1)."""
    fragment = (
        VOLCANO
        + """
        identity:
          teams:
            - {name: vision, gid: 20001, members: [alice], fairshare: 65536}
            - {name: nlp, gid: 20002, members: [bob], fairshare: 65535}
    """
    )
    only(
        run(checks.queue_engine_keys, fragment),
        "identity.teams[0].fairshare",
        "at most 65535",
    )
    kueue = fragment.replace("engine: volcano", "engine: kueue\n                cohort: lab")
    assert run(checks.queue_engine_keys, kueue) == []


def test_volcano_refuses_a_team_named_like_its_own_default_queue() -> None:
    fragment = """
        identity:
          teams:
            - {name: default, gid: 20001, members: [alice], namespace: team-default}
            - {name: nlp, gid: 20002, members: [bob]}
        kubernetes:
          clusters:
            - name: lab-k8s
              queues:
                engine: volcano
                teams: [{team: default, quota: {l4-24gb: 2}}]
    """
    only(
        run(checks.queue_engine_keys, fragment),
        "kubernetes.clusters[0].queues.teams[0].team",
        "Volcano creates its own queue 'default'",
    )


@pytest.mark.parametrize("engine", ["kueue", "volcano"])
def test_quota_checks_hold_for_either_engine(engine: str) -> None:
    """Capacity and team resolution do not depend on which engine runs the queues."""
    head = queues("{team: robotics, quota: {l4-24gb: 5}}", "{team: nlp, quota: {l4-24gb: 3}}")
    if engine == "volcano":
        head = head.replace("cohort: lab", "engine: volcano")
    assert where(run(checks.queues_resolve, head)) == [
        ("kubernetes.clusters[0].queues.teams[0].team", "error")
    ]
    assert where(run(checks.quotas_within_capacity, head)) == [
        ("kubernetes.clusters[0].queues.teams[0].quota.l4-24gb", "error"),
        ("kubernetes.clusters[0].queues", "error"),
    ]


# --- frameworks_resolve --------------------------------------------------------------------


def frameworks(names: str) -> str:
    return queues(
        "{team: vision, quota: {l4-24gb: 2}}", "{team: nlp, quota: {l4-24gb: 2}}"
    ).replace("              queues:", f"              frameworks: {names}\n              queues:")


def test_frameworks_resolve_passes_the_default_and_every_framework() -> None:
    assert estate().kubernetes_clusters[0].frameworks == ("job",)
    assert (
        run(checks.frameworks_resolve, frameworks("[job, jobset, trainjob, mpijob, rayjob]")) == []
    )


def test_a_framework_listed_twice_is_refused() -> None:
    only(
        run(checks.frameworks_resolve, frameworks("[job, jobset, job]")),
        "kubernetes.clusters[0].frameworks[2]",
        "'job' is listed twice",
    )


def test_trainjob_without_jobset_is_refused() -> None:
    only(
        run(checks.frameworks_resolve, frameworks("[job, trainjob]")),
        "kubernetes.clusters[0].frameworks[1]",
        "trainjob needs jobset",
    )


def test_an_unknown_framework_is_a_schema_error() -> None:
    document = _parse(blueprint(frameworks("[job, pytorchjob]")))
    _, problems = schema.normalise(document.data)
    assert [p.path for p in problems] == ["kubernetes.clusters[0].frameworks[1]"]


# --- rule ids, suppression and "did you mean" -------------------------------------------------

# BASE with a Slurm pool in no partition: a warning
NO_PARTITION = BASE.replace(
    "  - name: l4-serve\n",
    "  - name: cpu\n    scheduler: slurm\n    hosts: cpu-01\n"
    "    cpu: {sockets: 1, cores_per_socket: 8}\n    memory_gb: 64\n  - name: l4-serve\n",
)


def validated(text: str, suppress: tuple[str, ...] = ()) -> pipeline.Validated:
    return pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"), suppress)


def test_every_finding_of_a_check_carries_the_checks_rule_id() -> None:
    (warning,) = validated(NO_PARTITION).findings
    assert warning.rule == "check/stranded-capacity"
    assert warning.level == "warning"


def test_a_suppressed_warning_is_listed_apart_and_does_not_count() -> None:
    result = validated(NO_PARTITION + "suppress: [check/stranded-capacity]\n")
    assert [f.path for f in result.findings] == []
    (silenced,) = result.suppressed
    assert (silenced.path, silenced.rule) == ("node_pools[1]", "check/stranded-capacity")


def test_suppress_on_the_command_line_adds_to_the_blueprints_list() -> None:
    result = validated(NO_PARTITION, ("check/stranded-capacity",))
    assert result.findings == [] and len(result.suppressed) == 1


def test_an_error_is_never_suppressed() -> None:
    text = BASE.replace("hosts: lab-k8s-[01-02]", "hosts: lab-gpu-01")
    with pytest.raises(BlueprintInvalid) as caught:
        validated(text + "suppress: [check/host-in-one-pool]\n")
    assert "check/host-in-one-pool" in {f.rule for f in caught.value.findings}


def test_suppressed_rules_exist_refuses_a_rule_no_check_raises_and_suggests_one() -> None:
    only(
        run(checks.suppressed_rules_exist, "suppress: [check/partition-resolve]"),
        "suppress[0]",
        "no check has the rule id 'check/partition-resolve'; did you mean "
        "'check/partitions-resolve'?",
    )
    assert run(checks.suppressed_rules_exist, "suppress: [check/stranded-capacity]") == []


def test_an_unknown_rule_on_the_command_line_is_a_usage_error() -> None:
    document = load.parse_blueprint(BASE.encode(), "bp.yaml")
    with pytest.raises(UsageError, match="did you mean 'check/unique-ids'"):
        pipeline.validate_document(document, ["check/unique-id"])


@pytest.mark.parametrize(
    ("fragment", "path", "suggestion"),
    [
        (
            "slurm: {partitions: [{name: gpu, pools: [a10]}]}",
            "slurm.partitions[0].pools[0]",
            "did you mean 'a100'?",
        ),
        (
            "node_pools: [{name: a100, scheduler: slurm, hosts: n1, "
            "gpus: {model: a100-sxm-80g, count: 1}}]",
            "node_pools[0].gpus.model",
            "did you mean 'a100-sxm-80gb'?",
        ),
        (
            "node_pools: [{name: a100, scheduler: slurm, hosts: n1, "
            "gpus: {model: a100-sxm-80gb, count: 1, mig: [3g.30gb]}}]",
            "node_pools[0].gpus.mig[0]",
            "did you mean '3g.40gb'?",
        ),
    ],
)
def test_a_mistyped_name_of_a_closed_set_gets_a_suggestion(
    fragment: str, path: str, suggestion: str
) -> None:
    found = [f for f in checks.run_checks(estate(fragment)) if f.path == path]
    assert found and suggestion in found[0].message, found


def test_a_mistyped_allowed_value_gets_a_suggestion() -> None:
    document = _parse(blueprint("node_pools: [{name: a100, scheduler: slurmm, hosts: n1}]"))
    _, problems = schema.normalise(document.data)
    (problem,) = problems
    assert problem.rule == "schema/allowed"
    assert problem.message.endswith("choose one of: slurm, kubernetes; did you mean 'slurm'?")


# --- storage_types_and_drivers: file system types, CSI drivers per provider -------------------

CLOUD_CLUSTERS = """
    kubernetes:
      clusters:
        - {name: lab-k8s}
        - {name: eks, provider: eks, region: us-east-1}
        - {name: gke, provider: gke, region: us-central1, project: lab-gpu-prod}
        - {name: aks, provider: aks, region: westeurope, resource_group: lab-rg}
"""
S3 = (
    "s3: {region: us-east-1, access_key_id: {secret: s3_key_id}, "
    "secret_access_key: {secret: s3_secret_key}}"
)
FSX_SOURCE = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"


def storage_on_clusters(*entries: str) -> str:
    return CLOUD_CLUSTERS + "    storage:\n" + "".join(f"      - {e}\n" for e in entries)


def test_each_new_type_with_its_own_source_passes() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: projects, type: beegfs, source: "beegfs://mgmtd01:8008", mount: /projects, '
            "beegfs: {conn_auth: {secret: beegfs_auth}}, pools: [l4-serve], "
            "kubernetes: {storage_class: projects}}",
            "{name: archive, type: gpfs, source: gpfs0, mount: /gpfs/archive, pools: [l4-serve], "
            "kubernetes: {storage_class: archive}}",
            '{name: fast, type: weka, source: "weka01,weka02/default", mount: /weka, '
            "options: [net=udp], pools: [l4-serve], kubernetes: {storage_class: fast}}",
            '{name: datasets, type: s3, source: "s3://lab-datasets/train", mount: /datasets, '
            f"options: [allow-delete], {S3}, "
            "kubernetes: {storage_class: datasets, clusters: [eks]}}",
            f'{{name: fsx, type: lustre, source: "{FSX_SOURCE}", mount: /fsx, pools: [], '
            "kubernetes: {storage_class: fsx, clusters: [eks]}}",
            '{name: lustre, type: lustre, source: "10.90.1.4@tcp:/scratch", mount: /lustre, '
            "pools: [], kubernetes: {storage_class: lustre, clusters: [gke], "
            "instance: lab-gpu-prod/us-central1-a/scratch}}",
            '{name: home, type: nfs, source: "nas:/home", mount: /home, '
            "kubernetes: {storage_class: home, clusters: [eks, gke, aks]}}",
        ),
    )
    assert found == []


@pytest.mark.parametrize(
    ("kind", "source", "expected"),
    [
        ("nfs", "gpfs0", "an NFS export like"),
        ("beegfs", "nas:/projects", "the BeeGFS management host"),
        ("gpfs", "s3://lab-archive", "the GPFS (IBM Storage Scale) device name"),
        ("weka", "weka01", "WEKA backend host(s) and file system"),
        ("s3", "nas:/datasets", "an S3 bucket and optional prefix"),
    ],
)
def test_a_source_in_another_types_form_is_refused_with_the_types_own_form(
    kind: str, source: str, expected: str
) -> None:
    extra = {"s3": f", {S3}", "beegfs": ", beegfs: {conn_auth: {secret: beegfs_auth}}"}
    found = run(
        checks.storage_types_and_drivers,
        storage(f'{{name: fs, type: {kind}, source: "{source}", mount: /fs{extra.get(kind, "")}}}'),
    )
    finding = only(found, "storage[0].source", f"is not a {kind} source: expected {expected}")
    assert source in finding.message


def test_type_settings_belong_to_their_type() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage('{name: home, type: nfs, source: "nas:/home", mount: /home, ' + S3 + "}"),
    )
    only(found, "storage[0].s3", "'s3' settings are for type s3, not nfs")
    found = run(
        checks.storage_types_and_drivers,
        storage('{name: p, type: beegfs, source: "beegfs://mgmtd01", mount: /p}'),
    )
    only(found, "storage[0].beegfs", "needs beegfs: {conn_auth: {secret: NAME}}")


def test_gpfs_and_beegfs_options_are_refused_as_they_would_do_nothing() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage("{name: a, type: gpfs, source: gpfs0, mount: /a, options: [noatime]}"),
    )
    only(found, "storage[0].options", "(mmchfs -o), not by the client")


def test_s3_options_estategen_sets_are_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage(
            '{name: d, type: s3, source: "s3://lab-data", mount: /d, '
            f"options: [allow-delete, region=eu-west-1], {S3}}}"
        ),
    )
    only(found, "storage[0].options[1]", "estategen sets Mountpoint's region")


def test_an_unknown_cluster_is_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: home, type: nfs, source: "nas:/home", mount: /home, '
            "kubernetes: {storage_class: home, clusters: [azure]}}"
        ),
    )
    only(found, "storage[0].kubernetes.clusters[0]", "'azure' is not a Kubernetes cluster")


@pytest.mark.parametrize(
    ("entry", "cluster", "reason"),
    [
        (
            '{name: p, type: beegfs, source: "beegfs://m", mount: /p, pools: [], '
            "beegfs: {conn_auth: {secret: a}}, kubernetes: {storage_class: p, clusters: [eks]}}",
            "eks",
            "needs the vendor's client on every node",
        ),
        (
            "{name: p, type: gpfs, source: gpfs0, mount: /p, pools: [], "
            "kubernetes: {storage_class: p, clusters: [gke]}}",
            "gke",
            "needs the vendor's client on every node",
        ),
        (
            '{name: p, type: weka, source: "w1/fs", mount: /p, pools: [], '
            "kubernetes: {storage_class: p, clusters: [aks]}}",
            "aks",
            "needs the vendor's client on every node",
        ),
        (
            f'{{name: p, type: s3, source: "s3://lab-data", mount: /p, pools: [], {S3}, '
            "kubernetes: {storage_class: p, clusters: [gke]}}",
            "gke",
            "rendered for eks and on-prem clusters",
        ),
        (
            '{name: p, type: lustre, source: "10.0.0.1@tcp:/fs", mount: /p, pools: [], '
            "kubernetes: {storage_class: p, clusters: [aks]}}",
            "aks",
            "not for aks",
        ),
    ],
)
def test_a_type_no_driver_serves_on_a_provider_is_refused(
    entry: str, cluster: str, reason: str
) -> None:
    found = run(checks.storage_types_and_drivers, storage_on_clusters(entry))
    finding = only(
        found, "storage[0].kubernetes.clusters[0]", f"cluster {cluster!r} ({cluster}) cannot"
    )
    assert reason in finding.message


def test_lustre_on_eks_must_be_an_fsx_file_system() -> None:
    """R6.6: the FSx driver's volume handle and attributes come from an FSx source."""
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, pools: [], '
            "kubernetes: {storage_class: s, clusters: [eks]}}"
        ),
    )
    only(found, "storage[0].source", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/")


def test_lustre_on_gke_needs_the_instance_and_its_mount_point() -> None:
    """R6.8: the volume handle is PROJECT/LOCATION/INSTANCE; the mount point IP@tcp:/FS."""
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, pools: [], '
            "kubernetes: {storage_class: s, clusters: [gke]}}"
        ),
    )
    assert where(found) == [("storage[0].source", "error"), ("storage[0].kubernetes", "error")]
    assert "'10.90.1.4@tcp:/scratch'" in found[0].message
    assert "set kubernetes.instance to 'PROJECT/ZONE/NAME'" in found[1].message


def test_an_instance_without_gke_lustre_is_refused() -> None:
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            '{name: s, type: lustre, source: "10.0.0.1@o2ib:/scratch", mount: /s, '
            "pools: [l4-serve], kubernetes: {storage_class: s, instance: p-12345/us-east1-b/x}}"
        ),
    )
    only(found, "storage[0].kubernetes.instance", "for a lustre file system offered in a gke")


def test_s3_in_kubernetes_needs_kubernetes_1_30() -> None:
    """R6.13: Mountpoint for S3's CSI driver v2.7.0 supports Kubernetes v1.30+."""
    entry = (
        f'{{name: d, type: s3, source: "s3://lab-data", mount: /d, pools: [], {S3}, '
        "kubernetes: {storage_class: d, clusters: [eks]}}"
    )
    assert run(checks.storage_types_and_drivers, storage_on_clusters(entry)) == []
    found = run(
        checks.storage_types_and_drivers,
        '    versions: {kubernetes: "1.29"}\n' + storage_on_clusters(entry),
    )
    only(found, "storage[0].kubernetes.clusters[0]", "needs Kubernetes 1.30 or later")


def test_one_cluster_holds_one_set_of_s3_credentials() -> None:
    """R6.12: the driver reads one Secret, so every bucket on a cluster shares its key."""
    other = S3.replace("s3_key_id", "other_key_id")
    found = run(
        checks.storage_types_and_drivers,
        storage_on_clusters(
            f'{{name: a, type: s3, source: "s3://lab-a", mount: /a, pools: [], {S3}, '
            "kubernetes: {storage_class: a, clusters: [eks]}}",
            f'{{name: b, type: s3, source: "s3://lab-b", mount: /b, pools: [], {other}, '
            "kubernetes: {storage_class: b, clusters: [eks]}}",
        ),
    )
    only(found, "storage[1].s3", "already reaches S3 storage 'a' with other credentials")


def test_one_beegfs_file_system_per_pool() -> None:
    beegfs = '{{name: {0}, type: beegfs, source: "beegfs://{0}", mount: /{0}, ' + (
        "beegfs: {{conn_auth: {{secret: a}}}}}}"
    )
    found = run(
        checks.storage_types_and_drivers, storage(beegfs.format("p1") + ", " + beegfs.format("p2"))
    )
    assert where(found) == [("node_pools[0]", "error"), ("node_pools[1]", "error")]
    assert "mounts 2 BeeGFS file systems (p1, p2)" in found[0].message


# --- hosted_slurm_pools, hosted_options_not_owned -----------------------------------------

HOSTED = """
        versions: {slurm: "25.11"}
        node_pools:
          - name: a100
            scheduler: slurm
            hosts: lab-gpu-[01-02]
            cpu: {sockets: 2, cores_per_socket: 32}
            memory_gb: 512
            gpus: {model: a100-sxm-80gb, count: 4}
          - name: l4-serve
            scheduler: kubernetes
            cluster: lab-k8s
            hosts: lab-k8s-[01-02]
            gpus: {model: l4-24gb, count: 2}
          - name: l4-slurm
            scheduler: slurm
            cluster: lab-k8s
            nodes: {max: 1}
            cpu: {sockets: 1, cores_per_socket: 8}
            memory_gb: 64
            gpus: {model: l4-24gb, count: 2}
        slurm:
          auth_key: {secret: slurm_key}
          rest_api: {host: lab-ctl, jwt_key: {secret: slurm_jwt}}
"""


def test_hosted_slurm_pools_pass_a_complete_hosted_pool() -> None:
    assert run(checks.hosted_slurm_pools, HOSTED) == []
    assert run(checks.hosted_options_not_owned, HOSTED) == []


def test_a_slurm_release_slinky_publishes_no_image_for_is_refused() -> None:
    only(
        run(checks.hosted_slurm_pools, HOSTED.replace('slurm: "25.11"', 'slurm: "24.05"')),
        "versions.slurm",
        "need one of 25.11, 26.05",
    )


def test_a_hosted_pool_needs_the_auth_key_and_its_pods_count() -> None:
    fragment = HOSTED.replace("          auth_key: {secret: slurm_key}\n", "").replace(
        "            nodes: {max: 1}\n", ""
    )
    found = run(checks.hosted_slurm_pools, fragment)
    assert where(found) == [("slurm", "error"), ("node_pools[2]", "error")], found


def test_hosted_pools_take_gpus_the_cluster_has() -> None:
    only(
        run(checks.hosted_slurm_pools, HOSTED.replace("nodes: {max: 1}", "nodes: {max: 3}")),
        "node_pools[2]",
        "take 6 l4-24gb GPUs of cluster 'lab-k8s', whose Kubernetes pools offer 4",
    )


def test_the_auth_key_without_hosted_pools_is_refused() -> None:
    only(
        run(checks.hosted_slurm_pools, "slurm: {auth_key: {secret: k}}"),
        "slurm.auth_key",
        "remove slurm.auth_key",
    )


def test_options_rendered_for_hosted_pools_are_refused() -> None:
    fragment = HOSTED.replace(
        "          auth_key:", "          options: {MaxNodeCount: 10}\n          auth_key:"
    )
    only(run(checks.hosted_options_not_owned, fragment), "slurm.options.MaxNodeCount", "hosted")
    assert run(checks.hosted_options_not_owned, "slurm: {options: {MaxNodeCount: 10}}") == []


# --- a site's own Slurm settings ---------------------------------------------------------


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


def test_slurmctld_port_range_moves_the_mpi_and_rest_api_checks() -> None:
    moved = "slurm: {ports: {slurmctld: 7001-7002, slurmd: 7003}, mpi: {ports: 7000-7010}}"
    only(run(checks.mpi_ports_valid, moved), "slurm.mpi.ports", "(7001-7002, 7003)")
    assert (
        run(checks.mpi_ports_valid, "slurm: {ports: {slurmd: 7003}, mpi: {ports: 6818-6900}}") == []
    )
    rest = (
        "slurm: {ports: {slurmd: 7003}, "
        "rest_api: {host: lab-ctl, port: 7003, jwt_key: {secret: k}}}"
    )
    only(run(checks.rest_api_valid, rest), "slurm.rest_api.port", "slurmd's")


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
def test_shards_without_cons_tres_are_an_error(kind: str) -> None:
    fragment = (
        "node_pools: [{name: a100, scheduler: slurm, hosts: 'lab-gpu-[01-02]', "
        "cpu: {sockets: 2, cores_per_socket: 32}, memory_gb: 512, "
        "gpus: {model: a100-sxm-80gb, count: 4, sharing: {shard: 2}}}]\n"
        f"slurm: {{select: {{type: {kind}, parameters: []}}}}"
    )
    found = [f for f in run(checks.slurm_site_settings_valid, fragment) if f.level == "error"]
    found = [f for f in found if f.path != "slurm.select.parameters"]
    only(found, "node_pools[0].gpus.sharing.shard", "Use of shared gres requires")


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


# --- priority/basic, scheduler, process tracking and job completion ------------------------


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


# --- slurm_package_source ------------------------------------------------------------------

SITE_REPOSITORY = (
    "deb [signed-by=/etc/apt/keyrings/slurm.asc] https://repo.example.org/slurm bookworm main"
)


def packages(source: str, slurm: str | None = None, **keys: object) -> str:
    """A fragment naming the package source, versions.slurm (None: left to the source), and
    keys of slurm.packages."""
    given = "".join(f", {key}: {json.dumps(value)}" for key, value in keys.items())
    version = f'"{slurm}"' if slurm else "~"
    return f"versions: {{slurm: {version}}}\nslurm: {{packages: {{source: {source}{given}}}}}\n"


@pytest.mark.parametrize(("source", "release"), [("debian-12", "22.05"), ("debian-13", "24.11")])
def test_versions_slurm_defaults_to_the_release_debian_ships(source: str, release: str) -> None:
    assert estate(packages(source)).versions.slurm.text == release
    assert run(checks.slurm_package_source, packages(source)) == []


def test_the_default_source_is_debian_12_and_its_22_05() -> None:
    assert estate("versions: {slurm: ~}").slurm.packages.source == "debian-12"
    assert estate("versions: {slurm: ~}").versions.slurm.text == "22.05"


@pytest.mark.parametrize(
    ("source", "slurm", "fixes"),
    [
        (
            "debian-12",
            "23.11",
            [
                "set versions.slurm to '22.05'",
                "source site with an apt_repository that carries Slurm 23.11",
            ],
        ),
        (
            "debian-12",
            "24.11",
            ["set versions.slurm to '22.05'", "use source debian-13 (Slurm 24.11)"],
        ),
        (
            "debian-13",
            "22.05",
            ["set versions.slurm to '24.11'", "use source debian-12 (Slurm 22.05)"],
        ),
    ],
)
def test_a_release_the_debian_source_does_not_install_is_refused_with_the_fixes(
    source: str, slurm: str, fixes: list[str]
) -> None:
    found = run(checks.slurm_package_source, packages(source, slurm))
    finding = only(found, "versions.slurm", f"source {source} installs Slurm")
    for fix in fixes:
        assert fix in finding.message, finding.message


def test_a_site_repository_installs_the_release_versions_slurm_names() -> None:
    fragment = packages("site", "25.11", apt_repository=SITE_REPOSITORY)
    assert run(checks.slurm_package_source, fragment) == []


def test_a_site_source_needs_its_repository_line() -> None:
    found = run(checks.slurm_package_source, packages("site", "23.11"))
    only(found, "slurm.packages.source", "give apt_repository")


def test_a_site_source_needs_versions_slurm() -> None:
    found = run(checks.slurm_package_source, packages("site", apt_repository=SITE_REPOSITORY))
    only(found, "slurm.packages.source", "set versions.slurm")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("apt_repository", SITE_REPOSITORY),
        ("apt_key_url", "https://repo.example.org/slurm/key.asc"),
        ("nvml", True),
        ("jwt", False),
    ],
)
def test_repository_keys_with_a_debian_source_are_refused(key: str, value: object) -> None:
    found = run(checks.slurm_package_source, packages("debian-13", **{key: value}))
    only(found, f"slurm.packages.{key}", "set source site, or remove")


def test_a_signing_key_needs_a_source_line_that_names_where_it_is_saved() -> None:
    fragment = packages(
        "site",
        "23.11",
        apt_repository="deb https://repo.example.org/slurm bookworm main",
        apt_key_url="https://repo.example.org/slurm/key.asc",
    )
    found = run(checks.slurm_package_source, fragment)
    only(found, "slurm.packages.apt_repository", "signed-by=/etc/apt/keyrings/slurm.asc")


def test_no_release_is_checked_without_slurm_pools() -> None:
    fragment = """
        versions: {slurm: "25.11"}
        node_pools:
          - {name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: "lab-k8s-[01-02]"}
    """
    assert run(checks.slurm_package_source, fragment) == []


# --- slurm_build_has_plugins ---------------------------------------------------------------

MIG_POOL = """\
node_pools:
  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]",
     gpus: {model: a100-sxm-80gb, count: 4, mig: ["3g.40gb", "3g.40gb"]}}
"""
NVML_POOL = """\
node_pools:
  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]",
     gpus: {model: a100-sxm-80gb, count: 4, autodetect: nvml}}
"""
REST_API = "slurm: {rest_api: {host: lab-ctl, jwt_key: {secret: slurm_jwt}}}\n"


def test_a_mig_pool_on_debian_packages_is_refused_at_its_mig_key() -> None:
    found = run(checks.slurm_build_has_plugins, MIG_POOL)
    finding = only(found, "node_pools[0].gpus.mig", "without Slurm's gpu_nvml plugin")
    assert "Debian's slurm-wlm 22.05" in finding.message
    assert "source site" in finding.message and "nvml: true" in finding.message


def test_gpus_autodetect_nvml_on_debian_packages_is_refused() -> None:
    found = run(checks.slurm_build_has_plugins, NVML_POOL + packages("debian-13"))
    finding = only(found, "node_pools[0].gpus.autodetect", "AutoDetect=nvml")
    assert "remove gpus.autodetect" in finding.message


@pytest.mark.parametrize("pool", [MIG_POOL, NVML_POOL], ids=["mig", "autodetect"])
def test_a_site_build_with_nvml_runs_nvml_pools(pool: str) -> None:
    site = packages("site", "23.11", apt_repository=SITE_REPOSITORY, nvml=True)
    assert run(checks.slurm_build_has_plugins, pool + site) == []
    without = packages("site", "23.11", apt_repository=SITE_REPOSITORY)
    assert len(run(checks.slurm_build_has_plugins, pool + without)) == 1


def test_a_hosted_pool_finds_gpus_in_slinkys_image_not_in_the_packages() -> None:
    fragment = """
        node_pools:
          - {name: a100, scheduler: slurm, cluster: lab-k8s, nodes: {max: 2},
             gpus: {model: a100-sxm-80gb, count: 4, autodetect: nvml}}
    """
    assert run(checks.slurm_build_has_plugins, fragment) == []


def test_the_rest_api_on_debian_12_packages_is_refused_with_the_sources_that_have_jwt() -> None:
    found = run(checks.slurm_build_has_plugins, REST_API)
    finding = only(found, "slurm.rest_api", "needs Slurm's auth_jwt.so")
    assert "source debian-13 (slurm-wlm-jwt-plugin, Slurm 24.11)" in finding.message
    assert "jwt: true" in finding.message


@pytest.mark.parametrize(
    "source",
    [packages("debian-13"), packages("site", "23.11", apt_repository=SITE_REPOSITORY, jwt=True)],
    ids=["debian-13", "site-with-jwt"],
)
def test_the_rest_api_runs_on_a_build_with_auth_jwt(source: str) -> None:
    merged = _merge(_parse(source).data, _parse(REST_API).data)
    fragment = yaml.dump(merged, Dumper=_DUMPER, sort_keys=False)
    assert run(checks.slurm_build_has_plugins, fragment) == []


# --- storage_without_storage_class ---------------------------------------------------------


def storage_on(pools: str, kubernetes: str = "") -> str:
    return f"""
        storage:
          - {{name: data, type: nfs, source: "nfs01:/export/data", mount: /data,
             pools: {pools}{kubernetes}}}
    """


def test_storage_on_a_kubernetes_pool_without_a_storage_class_is_a_warning() -> None:
    found = run(checks.storage_without_storage_class, storage_on("[a100, l4-serve]"))
    finding = only(found, "storage[0]", "pods cannot use it", level="warning")
    assert "Kubernetes pool l4-serve" in finding.message
    assert "add kubernetes: {storage_class: data}" in finding.message


@pytest.mark.parametrize(
    "fragment",
    [
        storage_on("[a100, l4-serve]", ", kubernetes: {storage_class: data}"),
        storage_on("[a100]"),
        "",  # BASE: home on every pool, for the people on the hosts
    ],
    ids=["with-storage-class", "slurm-pools-only", "no-pools-listed"],
)
def test_storage_pods_can_claim_or_that_no_kubernetes_pool_lists_passes(fragment: str) -> None:
    assert run(checks.storage_without_storage_class, fragment) == []
