"""Specification of Slurm's partitions, QoS, controllers, reservations, MPI ports and REST API
(estategen.checks.slurm): a blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from estategen import checks, load, model, pipeline, reserved
from estategen.errors import BlueprintInvalid
from estategen.schema.patterns import USER

from .base import blueprint, estate, only, run, where

# --- slurm_section_present -----------------------------------------------------------------------


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


# --- partitions_resolve --------------------------------------------------------------------------


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


# --- qos_resolves --------------------------------------------------------------------------------


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


# --- preemption_has_a_mode -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["qos", "partition_prio"])
def test_preemption_without_a_mode_is_refused(kind: str) -> None:
    """slurm.conf(5) of 22.05, PreemptMode OFF: "only compatible with PreemptType=preempt/none
    at a global level"; slurmctld 22.05 stops at start ("PreemptType and PreemptMode values
    incompatible")."""
    fragment = ACCOUNTED_QOS.replace("{type: qos, mode: requeue}", f"{{type: {kind}}}")
    found = run(checks.preemption_has_a_mode, fragment)
    only(found, "slurm.scheduling.preemption.type", "PreemptType and PreemptMode")


@pytest.mark.parametrize(
    "preemption", ["{type: qos, mode: requeue}", "{type: partition_prio, mode: suspend}", "{}"]
)
def test_preemption_with_a_mode_or_none_at_all_passes(preemption: str) -> None:
    fragment = ACCOUNTED_QOS.replace("{type: qos, mode: requeue}", preemption)
    assert run(checks.preemption_has_a_mode, fragment) == []


# --- controllers_share_state ---------------------------------------------------------------------


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


# --- reservations_valid, mpi_ports_valid, rest_api_valid -----------------------------------------


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
    names = [n for n in reserved.SYSTEM_USERS if re.fullmatch(USER, n)]
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
