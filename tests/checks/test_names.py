"""Specification of names, identities and hosts (estategen.checks.names): a blueprint fragment in,
a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from estategen import checks, load, reserved
from estategen.schema.patterns import DNS_LABEL, NAME, PROM_LABEL, USER
from estategen.schema.validation import normalise

from .base import CLOUD_POOL, blueprint, only, run

# --- unique_names --------------------------------------------------------------------------------


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


# --- unique_ids ----------------------------------------------------------------------------------


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


# --- names_not_reserved --------------------------------------------------------------------------


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
    _, problems = normalise(document.data)
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
        (reserved.SYSTEM_USERS, USER, "identity: {{users: [{{name: {name}, uid: 10001}}]}}"),
        (reserved.SYSTEM_GROUPS, NAME, _TEAM),
        (reserved.SLURM_ACCOUNTS, NAME, _TEAM),
        (
            reserved.KUBERNETES_NAMESPACES,
            DNS_LABEL,
            "identity: {{teams: [{{name: t, gid: 20001, namespace: {name}}}]}}",
        ),
        (
            reserved.SLURM_PARTITIONS,
            NAME,
            "slurm: {{partitions: [{{name: {name}, pools: [a100]}}]}}",
        ),
        (
            reserved.PROMETHEUS_LABELS,
            PROM_LABEL,
            "observability: {{labels: {{{name}: x}}}}",
        ),
        (
            reserved.POOL_NAMES,
            NAME,
            "node_pools: [{{name: {name}, scheduler: kubernetes, hosts: n1}}]",
        ),
        (reserved.MARIADB_ACCOUNTS, USER, _ACCOUNTING),
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


# --- team_members_known --------------------------------------------------------------------------


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


# --- directory_complete --------------------------------------------------------------------------


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


# --- hosts_within_bounds -------------------------------------------------------------------------


def test_hosts_within_bounds_passes_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks.names, "MAX_ESTATE_HOSTS", 4)
    assert run(checks.hosts_within_bounds) == []


def test_hosts_within_bounds_refuses_one_host_over_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks.names, "MAX_ESTATE_HOSTS", 3)
    found = run(checks.hosts_within_bounds)
    only(found, "node_pools", "4 hosts, above the estate limit of 3")


# --- host_in_one_pool ----------------------------------------------------------------------------


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
