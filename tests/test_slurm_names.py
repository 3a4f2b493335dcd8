"""Slurm's own names are kept as a site gives them: a partition, a QoS and the cluster named as
Slurm takes them go into every output as written, and only what would break an output is
refused, with the reason.

Slurm checks none of these names. slurmctld copies PartitionName as written and compares it
case by case (``_parse_partitionname`` in src/common/read_config.c, slurm-22-05-8-1 and
slurm-24-11-5-1); it lower-cases ClusterName ("Some databases are case sensitive", same file,
``_validate_and_set_defaults``), and slurm.conf(5) holds it to 40 characters. sacctmgr adds a
QoS under its name in lower case (``slurm_addto_char_list`` in
src/common/slurm_protocol_defs.c) and slurmctld finds a partition's QOS= in any case
(``assoc_mgr_fill_in_qos`` in src/common/assoc_mgr.c, where a missing one is
``fatal: Partition ... has an invalid qos``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from test_kubernetes_slinky import ESTATE as HOSTED
from test_kubernetes_slinky import SLINKY_CRDS, slinky_objects
from test_slurm_site import errors, files

from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.render import render
from estategen.slurm_names import kubernetes_name

from crd import crd_set

SITE_NAMES = """\
slurm:
  cluster_name: hpc.example
  qos: [{name: normal}, {name: part_eic}, {name: rocsLong, preempt: [part_eic]}]
  scheduling: {preemption: {type: qos, mode: requeue}}
  partitions:
    - {name: gpu_priority, pools: [h100], default: true, qos: part_eic}
    - {name: rocsLong, pools: [h100], allow_qos: [rocsLong, normal]}
    - {name: eic.test, pools: [h100]}
"""


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def partition_lines(rendered: dict[str, str]) -> dict[str, dict[str, str]]:
    out = {}
    for line in lines(rendered["slurm/slurm.conf"]):
        if line.startswith("PartitionName="):
            fields = dict(field.split("=", 1) for field in line.split())
            out[fields["PartitionName"]] = fields
    return out


# --- a blueprint with a site's names renders them as written ---------------------------------


def test_partitions_and_qos_keep_case_underscores_and_dots_in_slurm_conf() -> None:
    parts = partition_lines(files(SITE_NAMES))
    assert list(parts) == ["gpu_priority", "rocsLong", "eic.test"]
    assert parts["gpu_priority"]["QOS"] == "part_eic"
    assert parts["gpu_priority"]["Default"] == "YES"
    assert parts["rocsLong"]["AllowQos"] == "rocsLong,normal"


def test_qos_sacctmgr_adds_and_grants_the_qos_by_the_names_given() -> None:
    qos = lines(files(SITE_NAMES)["slurm/qos.sacctmgr"])
    assert qos[:3] == ["add qos normal", "add qos part_eic", "add qos rocsLong"]
    assert any(
        line.startswith("modify qos where name=rocsLong set ") and " Preempt=part_eic " in line
        for line in qos
    )
    assert any(
        " cluster=hpc.example set QOS=normal,part_eic,rocsLong DefaultQOS=normal" in line
        for line in qos
    )


def test_a_dotted_cluster_name_is_the_cluster_of_slurm_conf_and_of_the_accounts() -> None:
    rendered = files(SITE_NAMES)
    assert "ClusterName=hpc.example" in lines(rendered["slurm/slurm.conf"])
    assert "Cluster - 'hpc.example':Fairshare=1" in lines(rendered["slurm/sacct.cfg"])


def test_two_partitions_may_differ_only_in_case_as_slurm_compares_them() -> None:
    fragment = """\
    slurm:
      partitions:
        - {name: gpu, pools: [h100], default: true}
        - {name: GPU, pools: [h100]}
    """
    assert list(partition_lines(files(fragment))) == ["gpu", "GPU"]


def test_a_reference_may_spell_a_qos_in_any_case_as_slurmctld_finds_it() -> None:
    fragment = """\
    slurm:
      qos: [{name: normal}, {name: rocsLong}]
      partitions: [{name: gpu, pools: [h100], default: true, qos: ROCSLONG}]
    """
    assert errors(fragment) == []
    assert partition_lines(files(fragment))["gpu"]["QOS"] == "ROCSLONG"


def test_the_dashboard_matches_a_dotted_partition_literally() -> None:
    rendered = files(SITE_NAMES)
    (dashboard,) = [p for p in rendered if re.fullmatch(r"observability/grafana/.*/[^/]+\.json", p)]
    panels = json.loads(rendered[dashboard])["panels"]
    exprs = [t["expr"] for p in panels for t in p.get("targets", ())]
    (pending,) = [e for e in exprs if e.startswith("slurm_partition_jobs_pending")]
    # in a PromQL string `\\.` is the regular expression's `\.`
    assert 'partition=~"gpu_priority|rocsLong|eic\\\\.test"' in pending


# --- what is refused, and why ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragment", "path", "reason"),
    [
        (
            "slurm: {partitions: [{name: 'gpu,a', pools: [h100]}]}",
            "slurm.partitions[0].name",
            "no ','",
        ),
        (
            "slurm: {partitions: [{name: '-gpu', pools: [h100]}]}",
            "slurm.partitions[0].name",
            "not '-' first",
        ),
        (
            "slurm: {qos: [{name: 'high prio'}]}",
            "slurm.qos[0].name",
            "spaces",
        ),
        ("slurm: {cluster_name: HPC.example}", "slurm.cluster_name", "lower-cases ClusterName"),
        ("slurm: {cluster_name: " + "c" * 41 + "}", "slurm.cluster_name", "at most 40"),
        (
            "slurm: {partitions: [{name: Default, pools: [h100]}]}",
            "slurm.partitions[0].name",
            "PartitionName=DEFAULT",
        ),
        ("slurm: {qos: [{name: normal}, {name: Where}]}", "slurm.qos[1].name", "keyword Where"),
        ("slurm: {qos: [{name: normal}, {name: ALL}]}", "slurm.qos[1].name", "AllowQos=all as ALL"),
    ],
)
def test_a_name_that_would_break_an_output_is_refused_with_the_reason(
    fragment: str, path: str, reason: str
) -> None:
    found = [f for f in errors(fragment) if f.path == path]
    assert found and reason in found[0].message, [f.format() for f in errors(fragment)]


def test_two_qos_that_differ_only_in_case_are_refused_as_one_qos() -> None:
    """slurmdbd would hold one QoS `rocslong`: the second `add qos` adds nothing."""
    fragment = "slurm: {qos: [{name: normal}, {name: rocsLong}, {name: rocslong}]}"
    (found,) = [f for f in errors(fragment) if f.path == "slurm.qos[2]"]
    assert "'rocslong' is QoS 'rocsLong'" in found.message
    assert "lower case" in found.message


# --- Kubernetes objects named after the cluster ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "derived"),
    [
        ("hpc.example", "hpc-example"),
        ("aurora_2", "aurora-2"),
        ("hpc.example-", "hpc-example"),
        ("a..b__c", "a-b-c"),
        ("x" * 40, "x" * 40),
    ],
)
def test_the_kubernetes_name_of_a_slurm_name_is_a_dns_label(name: str, derived: str) -> None:
    assert kubernetes_name(name) == derived
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", derived)


def test_slinky_objects_take_the_cluster_names_dns_form_and_keep_its_cluster_name() -> None:
    """The Controller's clusterName is the ClusterName slurmctld has; the objects' names are
    DNS labels (metadata.name), so `hpc.example` names them hpc-example, and the NodeSet's
    controllerRef names the Controller by that name (controllers CRD, nodesets CRD)."""
    source = HOSTED.replace("  controllers: [ctl-01]\n", "  cluster_name: hpc.example\n"
                            "  controllers: [ctl-01]\n")  # fmt: skip
    found = slinky_objects(source)
    controller = next(o for o in found if o["kind"] == "Controller")
    assert controller["metadata"]["name"] == "hpc-example"
    assert controller["spec"]["clusterName"] == "hpc.example"
    assert controller["spec"]["accountingRef"] == {"name": "hpc-example"}
    assert [o["metadata"]["name"] for o in found if o["kind"] == "Accounting"] == ["hpc-example"]
    nodeset = next(o for o in found if o["kind"] == "NodeSet")
    assert nodeset["spec"]["controllerRef"]["name"] == "hpc-example"
    crds = crd_set(SLINKY_CRDS)
    for obj in found:
        assert crds.validate(obj) == [], (obj["kind"], crds.validate(obj))


# --- a team keeps its Slurm account's name; Kubernetes takes its DNS form ----------------------

CAMPUS = Path(__file__).parent.parent / "blueprints" / "campus.yaml"


def campus_with_team(name: str) -> dict[str, str]:
    """campus, its team vision named ``name`` (a Slurm team with a Kueue queue in serving)."""
    text = CAMPUS.read_text().replace("vision", name)
    estate = validate_document(parse_blueprint(text.encode(), "campus.yaml")).estate
    return {p: f.content.decode() for p, f in render(estate).items()}


def test_a_team_with_an_underscore_is_the_slurm_account_and_unix_group_of_that_name() -> None:
    """A site's `sbatch -A chem_lab` names the account sacct.cfg adds and AllowAccounts
    admits; the common role creates the Unix group chem_lab (groupadd takes '_')."""
    rendered = campus_with_team("chem_lab")
    assert "Account - 'chem_lab':Description='team chem_lab'" in rendered["slurm/sacct.cfg"]
    assert "Parent - 'chem_lab'" in lines(rendered["slurm/sacct.cfg"])
    assert partition_lines(rendered)["h100"]["AllowAccounts"] == "chem_lab,nlp"
    identity = yaml.safe_load(rendered["ansible/vars/identity.yml"])
    assert {"name": "chem_lab", "gid": 20001} in identity["estate_teams"]


def test_a_teams_example_workflow_reaches_the_queue_of_its_dns_form() -> None:
    """Argo copies spec.podMetadata onto each step's pod, and Kueue admits it through the
    LocalQueue its label names: chem_lab's queue is chem-lab, and so are the names of its
    objects (metadata.name is a DNS subdomain, without '_')."""
    text = CAMPUS.read_text().replace("vision", "chem_lab")
    text = text.replace(
        "    - name: serving\n", "    - name: serving\n      frameworks: [job, workflow]\n"
    )
    estate = validate_document(parse_blueprint(text.encode(), "campus.yaml")).estate
    example = render(estate)["kubernetes/serving/examples/chem_lab.yaml"].content.decode()
    (workflow,) = [o for o in yaml.safe_load_all(example) if o["kind"] == "Workflow"]
    assert workflow["spec"]["podMetadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "chem-lab"}
    assert workflow["metadata"]["name"] == "chem-lab-workflow-example"
    tenancy = render(estate)["kubernetes/serving/tenancy.yaml"].content.decode()
    accounts = [o for o in yaml.safe_load_all(tenancy) if o["kind"] == "ServiceAccount"]
    assert {o["metadata"]["labels"]["estategen.io/team"] for o in accounts} >= {"chem-lab"}


def test_a_teams_kubernetes_objects_take_its_dns_form_and_its_group_its_name() -> None:
    """Namespaces, queues and label values are DNS names (Kueue's LocalQueue and ClusterQueue
    are metadata.name): chem_lab's are chem-lab; the RoleBinding's group is the Unix group."""
    rendered = campus_with_team("chem_lab")
    kueue = list(yaml.safe_load_all(rendered["kubernetes/serving/kueue.yaml"]))
    cluster_queue = next(
        o for o in kueue if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "chem-lab"
    )
    assert cluster_queue["metadata"]["labels"]["estategen.io/team"] == "chem-lab"
    local = next(
        o for o in kueue if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == "chem-lab"
    )
    assert (local["metadata"]["name"], local["metadata"]["namespace"]) == ("chem-lab", "chem-lab")
    namespaces = list(yaml.safe_load_all(rendered["kubernetes/serving/namespaces.yaml"]))
    assert "chem-lab" in [o["metadata"]["name"] for o in namespaces]
    tenancy = list(yaml.safe_load_all(rendered["kubernetes/serving/tenancy.yaml"]))
    bindings = [o for o in tenancy if o["kind"] == "RoleBinding"]
    assert {s["name"] for o in bindings if o["metadata"]["namespace"] == "chem-lab"
            for s in o["subjects"]} == {"chem_lab"}  # fmt: skip
    assert "chem_lab" not in rendered["kubernetes/serving/kueue.yaml"]


def test_the_teams_gpu_series_of_both_schedulers_carry_the_accounts_name() -> None:
    """Slurm's series carry the account chem_lab, Kueue's the ClusterQueue chem-lab: the
    recording rules give both the label team="chem_lab"."""
    rules = yaml.safe_load(
        campus_with_team("chem_lab")["observability/prometheus/rules/estategen.rules.yml"]
    )
    exprs = [
        r["expr"]
        for group in rules["groups"]
        for r in group["rules"]
        if r.get("labels", {}).get("scheduler") == "kubernetes" and "team" in r.get("record", "")
    ]
    assert exprs
    for expr in exprs:
        assert 'cluster_queue="chem-lab"' in expr
        assert '"team", "chem_lab", "", ""' in expr
        assert 'cluster_queue=~"climate|nlp"' in expr


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Chem_Lab", "team name like 'chem_lab'"),
        ("chem.lab", "team name like 'chem_lab'"),
        ("_chem", "team name like 'chem_lab'"),
        ("c" * 33, "at most 32 (groupadd's limit)"),
    ],
)
def test_a_team_name_an_output_cannot_carry_is_refused_with_the_reason(
    name: str, reason: str
) -> None:
    fragment = f"identity: {{teams: [{{name: '{name}', gid: 20001}}]}}"
    found = [f for f in errors(fragment) if f.path == "identity.teams[0].name"]
    assert found and reason in found[0].message, [f.format() for f in errors(fragment)]


def test_two_teams_of_one_kubernetes_name_are_refused() -> None:
    fragment = (
        "identity: {teams: [{name: chem_lab, gid: 20001, namespace: a},"
        " {name: chem-lab, gid: 20002, namespace: b}]}"
    )
    (found,) = [f for f in errors(fragment) if f.path == "identity.teams[1].name"]
    assert (
        "team 'chem-lab' and team 'chem_lab' have one Kubernetes name, 'chem-lab'" in found.message
    )
