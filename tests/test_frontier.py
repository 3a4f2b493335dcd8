"""The frontier estate, ``blueprints/frontier.yaml``: every seed system in one blueprint.

One example uses all of them, rendered, valid against the upstream CRDs with their CEL rules,
built by kubectl, applied by the Pulumi program and planned. These tests hold the example to
that: the first fails when a seed system the schema offers is missing from
it, the others check each cluster's every object, whatever the blueprint grows into. kubectl
builds each cluster in the semantic suite (tests/test_kubernetes_semantics.py), which runs over
these clusters too.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from test_pulumi import run_project
from test_slurm_rest_api import HAS_AUTH_JWT, PLUGIN_DIRS

from estategen import load, pipeline
from estategen.model import Estate
from estategen.output import Files
from estategen.plan.compare import plan
from estategen.plan.kubernetes import explains
from estategen.plan.text import text as plan_text
from estategen.render import render
from estategen.schema.patterns import FRAMEWORKS, PROVIDERS, QUEUE_ENGINES
from estategen.schema.rules import BLUEPRINT
from estategen.write import with_manifest, write_tree

from conftest import BLUEPRINTS
from crd import UPSTREAM, crd_set
from mariadb import have_mariadb
from slurmlab import Dbd, SlurmLab, have_slurm, parse_records, set_keys

Obj = dict[str, Any]
FRONTIER = BLUEPRINTS / "frontier.yaml"

# API group -> the upstream release whose CRDs the API server would validate it with; each is
# the release estategen pins for that component (tests of each component check the pin).
CRD_RELEASES = {
    "kueue.x-k8s.io": "kueue-v0.19.2",
    "scheduling.volcano.sh": "volcano-v1.15.1",
    "batch.volcano.sh": "volcano-v1.15.1",
    "jobset.x-k8s.io": "jobset-v0.12.0",
    "trainer.kubeflow.org": "trainer-v2.3.0",
    "slinky.slurm.net": "slurm-operator-v1.2.1",
    "argoproj.io": "argo-workflows-1.0.18",
    "nvidia.com": "gpu-operator-v26.7.0",
}
# Groups whose CRDs tests/upstream does not hold: their objects are checked for shape by
# their own tests (tests/test_observability.py for the Prometheus Operator's objects).
UNPINNED_GROUPS = {"monitoring.coreos.com"}
JWT_KEYS = ["AuthAltTypes", "AuthAltParameters"]
HAS_AUTH_SLURM = any((d / "auth_slurm.so").exists() for d in PLUGIN_DIRS)


@cache
def frontier() -> tuple[Estate, Files]:
    text = FRONTIER.read_text()
    estate = pipeline.validate_document(load.parse_blueprint(text.encode(), str(FRONTIER))).estate
    return estate, render(estate)


def cluster_objects(cluster: str, *, examples: bool = False) -> list[Obj]:
    """The objects ``kubectl apply -k`` applies (or, with ``examples``, the example jobs)."""
    _, files = frontier()
    base = f"kubernetes/{cluster}"
    if examples:
        names = sorted(p for p in files if p.startswith(f"{base}/examples/"))
    else:
        kustomization = yaml.safe_load(files[f"{base}/kustomization.yaml"].content)
        names = [f"{base}/{name}" for name in kustomization["resources"]]
    return [obj for name in names for obj in yaml.safe_load_all(files[name].content) if obj]


def clusters() -> list[str]:
    estate, _ = frontier()
    return [c.name for c in estate.kubernetes_clusters]


def group_of(obj: Obj) -> str:
    api_version: str = obj["apiVersion"]
    return api_version.split("/")[0] if "/" in api_version else ""


def is_core(obj: Obj) -> bool:
    """An object of an API the Kubernetes release itself serves (no CRD needed)."""
    return group_of(obj) not in CRD_RELEASES and group_of(obj) not in UNPINNED_GROUPS


# --- the example uses every seed system ------------------------------------------------------


def test_frontier_uses_every_seed_system_the_schema_offers() -> None:
    estate, _ = frontier()
    k8s = estate.kubernetes_clusters
    assert {c.queues.engine for c in k8s if c.queues} == set(QUEUE_ENGINES)
    assert {c.provider for c in k8s} == set(PROVIDERS)
    assert {f for c in k8s for f in c.frameworks} == set(FRAMEWORKS)
    assert {c.device_plugin_install for c in k8s} == {"device-plugin", "gpu-operator"}
    storage_types = BLUEPRINT["storage"]["schema"]["schema"]["type"]["allowed"]
    assert {s.type for s in estate.storage} == set(storage_types)
    assert any(s.storage_class for s in estate.storage)
    pools = estate.node_pools
    # Slurm on-prem and elastic in a cloud; Kubernetes on-prem and managed on every provider
    assert {(p.scheduler, p.provider) for p in pools} >= {
        ("slurm", "on-prem"),
        ("slurm", "gke"),
        *(("kubernetes", provider) for provider in PROVIDERS),
    }
    assert any(p.provider == "eks" and p.nodes_min == 0 for p in pools), "an EKS pool grows"
    assert estate.hosted_pools(), "a Slurm pool hosted in Kubernetes (Slinky)"
    assert any(
        {estate.pools_by_name[n].hosted for n in part.pools} == {True, False}
        for part in estate.slurm.partitions
    ), "a partition mixing on-prem and hosted Slurm pools"
    gpus = [p.gpus for p in pools if p.gpus]
    assert any(g.mig for g in gpus) and any(g.sharing.time_slicing for g in gpus)
    slurm = estate.slurm
    assert slurm.accounting and slurm.reservations and slurm.rest_api and slurm.health_check
    assert slurm.mpi.default == "pmix" and slurm.power_saving.declared
    assert any(p.overrides.nodeset for p in slurm.partitions), "a partition names a NodeSet"
    assert all(c.prometheus_operator for c in k8s)


# --- every object is what the API server accepts ---------------------------------------------


@pytest.mark.parametrize("cluster", clusters())
def test_every_object_is_valid_for_kubernetes_or_against_its_pinned_crds_with_cel(
    cluster: str,
) -> None:
    estate, _ = frontier()
    version = estate.versions.kubernetes.text
    objects = cluster_objects(cluster) + cluster_objects(cluster, examples=True)
    checked: Counter[str] = Counter()
    for obj in objects:
        name = f"{obj['kind']} {obj['metadata']['name']}"
        group = group_of(obj)
        if group in CRD_RELEASES:
            crds = crd_set(UPSTREAM / CRD_RELEASES[group])
            assert crds.validate(obj) == [], (name, crds.validate(obj))
            assert crds.validate(obj, obj) == [], name  # as an update of itself
            checked["crd"] += 1
        elif group in UNPINNED_GROUPS:
            checked["unpinned"] += 1
        else:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{name}: {err.message}")
            checked["core"] += 1
    assert checked["core"] and checked["crd"], checked


# --- the Pulumi program applies every object ------------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The frontier as if no GitOps engine synced its clusters: the program then applies every
    object and release (where an engine syncs one, it makes only cloud resources,
    tests/test_pulumi.py)."""
    text = re.sub(r"^ +gitops: \{[^}]*\}\n", "", FRONTIER.read_text(), flags=re.MULTILINE)
    assert "gitops" not in text
    estate = pipeline.validate_document(load.parse_blueprint(text.encode(), str(FRONTIER))).estate
    target = tmp_path_factory.mktemp("frontier") / estate.name
    write_tree(with_manifest(render(estate), text.encode(), estate.name), target)
    return target


@pytest.mark.parametrize("cluster", clusters())
def test_pulumi_program_registers_every_rendered_object_of_the_cluster(
    cluster: str, rendered: Path
) -> None:
    project = rendered / "pulumi" / cluster
    # the secret config a release's Secret is made from (pulumi config set --secret ...)
    data = json.loads((project / "cluster.json").read_text())
    names = [
        *(k for r in data["releases"] for s in r.get("secrets", []) for k in s["config"].values()),
        *(s["config"] for s in data.get("secrets", [])),  # the hosted Slurm pools' keys
    ]
    secrets = {f"{data['estate']}-{cluster}:{name}": "test-only-value" for name in names}
    result = run_project(project, secrets)
    # An operator installed from its upstream release manifest (the MPI Operator) is one
    # ConfigFile resource, as a Helm chart is one Release; a release's Secret is made from
    # the stack's secret config, never written in a manifest. Every other object is ours.
    release_secrets = {s["name"] for r in data["releases"] for s in r.get("secrets", [])}
    release_secrets |= {s["name"] for s in data.get("secrets", [])}
    registered = Counter(
        (r.kind, r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"])
        for r in result.kubernetes_objects()
        if r.kind != "ConfigFile"
        and not (r.kind == "Secret" and r.inputs["metadata"]["name"] in release_secrets)
    )
    expected = Counter(
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in cluster_objects(cluster)
    )
    assert registered == expected


# --- plan explains each kind of change ------------------------------------------------------


def test_every_kind_of_object_has_its_own_plan_explanation() -> None:
    """A kind the plan has no sentence for falls back to a generic "component" change; the
    frontier's custom resources and storage objects each have their own."""
    kinds = {
        obj["kind"]
        for cluster in clusters()
        for obj in cluster_objects(cluster)
        if not is_core(obj) or obj["kind"] in {"StorageClass", "PersistentVolume", "Node"}
    }
    unexplained = sorted(k for k in kinds if not explains(k))
    assert unexplained == []


def changed(old: str, new: str) -> Estate:
    text = FRONTIER.read_text()
    assert old in text, old
    document = load.parse_blueprint(text.replace(old, new).encode(), str(FRONTIER))
    return pipeline.validate_document(document).estate


@pytest.mark.parametrize(
    ("old", "new", "kinds"),
    [
        (
            "{team: foundation, quota: {h100-sxm-80gb/3g.40gb: 160}, borrowing_limit: 32}",
            "{team: foundation, quota: {h100-sxm-80gb/3g.40gb: 150}, borrowing_limit: 32}",
            {"volcano-quota"},
        ),
        (
            "    nodes: {min: 0, max: 4}\n    gpus: {model: h100-sxm-80gb, count: 8, mig: [3g.4",
            "    nodes: {min: 0, max: 6}\n    gpus: {model: h100-sxm-80gb, count: 8, mig: [3g.4",
            {"kubernetes-pool"},
        ),
        (
            "{team: science, quota: {l40s-48gb: 32}}",
            "{team: science, quota: {l40s-48gb: 24}}",
            {"kueue-quota"},
        ),
    ],
    ids=["volcano-queue", "aks-pool-max", "eks-kueue-quota"],
)
def test_plan_explains_frontier_changes(
    old: str, new: str, kinds: set[str], rendered: Path
) -> None:
    estate = changed(old, new)
    result = plan(estate, render(estate), rendered)
    assert kinds <= set(result.kinds), plan_text(result)
    for file in result.files:
        for change in file.changes:
            assert change.meaning and change.actions, change


# --- a real slurmctld runs the frontier's Slurm side -----------------------------------------


@pytest.fixture(scope="module")
def frontier_ctld(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    """slurmctld, slurmdbd and MariaDB on the rendered files, with what the roles install
    (the power programs under /etc/slurm/power). The JWT keys are taken out where this Slurm
    has no auth_jwt.so (Debian 12's 22.05; tests/test_slurm_rest_api.py shows the refusal)."""
    if not (have_slurm() and have_mariadb()):
        pytest.skip("needs slurm-wlm, munge, unshare and mariadb-server")
    estate, _ = frontier()
    accounting = estate.slurm.accounting
    assert accounting is not None
    work = tmp_path_factory.mktemp("frontier-ctld")
    out = work / "out"
    write_tree(with_manifest(frontier()[1], FRONTIER.read_bytes(), estate.name), out)
    hosts = [h for pool in estate.slurm_pools for h in pool.hosts]
    names = [*hosts, *estate.slurm.controllers, accounting.host, accounting.database.host]

    def install(cluster: SlurmLab) -> None:
        cluster.binds["/etc/slurm"] = cluster.etc
        shutil.copytree(out / "slurm" / "power", cluster.etc / "power")
        for name in ("slurm.conf", "slurmdbd.conf"):
            conf = cluster.etc / name
            text = conf.read_text()
            if not HAS_AUTH_JWT:
                text = set_keys(text, {}, drop=JWT_KEYS)
            if "AuthType=auth/slurm" in text and not HAS_AUTH_SLURM:
                # the hosted pools' auth/slurm came with Slurm 23.11: older daemons keep munge
                text = set_keys(text, {"AuthType": "auth/munge", "CredType": "cred/munge"})
            conf.write_text(text)

    with SlurmLab.running(
        out,
        work / "run",
        names,
        controller=estate.slurm.controllers[0],
        dbd=Dbd(accounting.host),
        configure=install,
    ) as cluster:
        yield cluster


@pytest.mark.slow
def test_slurmctld_shows_every_partition_and_node_of_the_frontier(
    frontier_ctld: SlurmLab,
) -> None:
    from estategen import hostlist

    estate, _ = frontier()
    partitions = {
        p["PartitionName"]: p
        for p in parse_records(frontier_ctld.run("scontrol", "-o", "show", "partition"))
    }
    assert set(partitions) == {p.name for p in estate.slurm.partitions}
    for part in estate.slurm.partitions:
        hosts = {h for name in part.pools for h in estate.pools_by_name[name].hosts}
        assert set(hostlist.expand(partitions[part.name]["Nodes"])) == hosts, part.name
        if part.overrides.nodeset:
            assert partitions[part.name]["NodeSets"] == part.overrides.nodeset
    nodes = {
        n["NodeName"]: n for n in parse_records(frontier_ctld.run("scontrol", "-o", "show", "node"))
    }
    assert set(nodes) == {h for p in estate.slurm_pools for h in p.hosts}
    for pool in estate.slurm_pools:
        for host in pool.hosts:
            state = nodes[host]["State"]
            # elastic nodes are powered down until a job needs them; the others are not up here
            assert ("CLOUD" in state or "POWER" in state) == (pool.cloud is not None), (host, state)
