"""Kubernetes that works when applied: what the pinned upstream components do with the objects
and steps estategen writes, beyond what their schemas accept.

Each test cites the upstream source (file and line or function at the pinned tag) whose
behaviour it holds the output to.
"""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kubernetes_objects import kueue_violations

from estategen import load
from estategen.errors import BlueprintInvalid, Finding
from estategen.kubernetes import cluster_objects
from estategen.kubernetes.objects import FIELD_MANAGER
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.plan.compare import plan
from estategen.plan.kubernetes import take_out
from estategen.plan.steps import Plan
from estategen.render import render
from estategen.write import with_manifest, write_tree

PAIRS = Path(__file__).parent / "plan_pairs"

Obj = dict[str, Any]


def estate_of(name: str, text: str | None = None) -> Estate:
    source = (PAIRS / name).read_bytes() if text is None else text.encode()
    return validate_document(load.parse_blueprint(source, name)).estate


def planned(before: str, after: str, tmp: Path) -> Plan:
    earlier = estate_of(before)
    target = tmp / earlier.name
    write_tree(with_manifest(render(earlier), (PAIRS / before).read_bytes(), earlier.name), target)
    later = estate_of(after)
    return plan(later, render(later), target)


def kueue_objects(estate: Estate, cluster: str) -> list[Obj]:
    (found,) = [c for c in estate.kubernetes_clusters if c.name == cluster]
    objs: list[Obj] = cluster_objects(estate, found).files["kueue.yaml"]
    return objs


def applied(command: str) -> tuple[list[str], Obj]:
    """(kubectl's arguments, the object it applies) of ``printf '%s\\n' JSON | kubectl ...``."""
    feed, _, kubectl = command.partition(" | ")
    printf = shlex.split(feed)
    assert printf[:2] == ["printf", "%s\\n"], command
    return shlex.split(kubectl), json.loads(printf[2])


# --- a ResourceFlavor Kueue will not update is replaced in steps a cluster completes ----------


def test_a_replaced_flavor_is_taken_out_of_every_cluster_queue_before_the_replacement(
    tmp_path: Path,
) -> None:
    """Kueue v0.19.2 pkg/controller/core/resourceflavor_controller.go:106-114 (Reconcile): a
    ResourceFlavor being deleted keeps its kueue.x-k8s.io/resource-in-use finalizer while
    ``r.cache.ClusterQueuesUsingFlavor`` is not empty, so ``pulumi up --target-replace``
    waits for ever unless every ClusterQueue has stopped listing it first. The vendored
    ClusterQueue CRD (tests/upstream/kueue-v0.19.2) makes ``spec.resourceGroups`` an atomic
    list: only a server-side apply of the whole list, by the field manager that owns it,
    changes it without taking it over (a patch would, and the put-back apply would conflict).
    The put-back is ``pulumi up --refresh``: the ClusterQueues' inputs did not change."""
    result = planned("k8s-switched.yaml", "k8s-switched-taints.yaml", tmp_path)
    steps = {s.id: s for s in result.steps()}
    ids = [s.id for s in result.steps()]
    assert ids.index("kueue-take-out") < ids.index("pulumi-replace") < ids.index("pulumi-up")
    assert steps["pulumi-up"].commands == (
        "(cd pulumi/serving && pulumi up --stack pairs --refresh)",
    )

    old = {
        o["metadata"]["name"]: o
        for o in kueue_objects(estate_of("k8s-switched.yaml"), "serving")
        if o["kind"] == "ClusterQueue"
    }
    take_outs = steps["kueue-take-out"].commands
    assert take_outs[0] == "# kubectl on cluster serving:"
    seen = {}
    for command in take_outs[1:]:
        arguments, queue = applied(command)
        assert arguments == [
            "kubectl",
            "apply",
            "--server-side",
            f"--field-manager={FIELD_MANAGER}",
            "--force-conflicts",
            "-f",
            "-",
        ]
        name = queue["metadata"]["name"]
        # the queue as the estate applied it, but for the flavour, and valid for Kueue's CRD
        flavors = [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]
        assert "l40s-48gb" not in flavors
        assert {k: v for k, v in queue.items() if k != "spec"} == {
            k: v for k, v in old[name].items() if k != "spec"
        }
        assert kueue_violations(queue, old[name]) == []
        seen[name] = queue
    assert set(seen) == set(old)


def test_cluster_queues_are_applied_by_the_field_manager_the_take_out_uses(tmp_path: Path) -> None:
    """pulumi-kubernetes v4.32.0 (unchanged at HEAD 94977969d) provider/pkg/provider/
    provider.go:2883 fieldManagerName: in server-side apply mode the manager is the
    ``pulumi.com/patchFieldManager`` annotation, else a random ``pulumi-kubernetes-<id>`` kept
    in the stack's state, which no plan can name; provider/pkg/await/await.go:1031 patchForce:
    ``pulumi.com/patchForce`` forces the apply, so fields an older stack's random manager still
    holds move to this one instead of conflicting. The cluster README's kubectl apply uses the
    same manager."""
    estate = estate_of("k8s-switched.yaml")
    queues = [o for o in kueue_objects(estate, "serving") if o["kind"] == "ClusterQueue"]
    assert queues
    for queue in queues:
        assert queue["metadata"]["annotations"] == {
            "pulumi.com/patchFieldManager": FIELD_MANAGER,
            "pulumi.com/patchForce": "true",
        }
    readme = render(estate)["kubernetes/serving/README.md"].content.decode()
    assert f"kubectl apply --server-side --field-manager={FIELD_MANAGER} -k ." in readme
    assert "kubectl delete resourceflavor NAME" in readme


def test_a_group_left_without_flavours_is_dropped_and_each_queue_applied_once(
    tmp_path: Path,
) -> None:
    """The vendored ClusterQueue CRD: ``resourceGroups[].flavors`` has minItems 1, so a group
    whose only flavour is taken out goes as a whole; two flavours replaced at once leave one
    apply per queue without both (an apply per flavour would put the other back)."""
    (queue,) = [
        o
        for o in kueue_objects(estate_of("k8s-switched.yaml"), "serving")
        if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "vision"
    ]
    two = copy.deepcopy(queue)
    (group,) = two["spec"]["resourceGroups"]
    other = copy.deepcopy(group)
    other["flavors"][0]["name"] = "h100-80gb"
    two["spec"]["resourceGroups"].append(other)
    assert kueue_violations(two) == []

    one = take_out(two, {"l40s-48gb"})
    assert one is not None
    assert [f["name"] for g in one["spec"]["resourceGroups"] for f in g["flavors"]] == ["h100-80gb"]
    assert kueue_violations(one, two) == []
    both = take_out(two, {"l40s-48gb", "h100-80gb"})
    assert both is not None
    assert both["spec"]["resourceGroups"] == []
    assert kueue_violations(both, two) == []
    assert take_out(two, {"a100-80gb"}) is None
    # the queue given is not changed
    assert len(two["spec"]["resourceGroups"]) == 2


def test_a_flavor_update_kueue_accepts_needs_no_take_out(tmp_path: Path) -> None:
    """A flavour without a topology updates in place (the CRD's CEL rules freeze its fields
    only once topologyName is set): no ClusterQueue is touched by hand."""
    result = planned("base.yaml", "k8s-switched.yaml", tmp_path)
    ids = {s.id for s in result.steps()}
    assert "kueue-take-out" not in ids
    assert all("--refresh" not in c for s in result.steps() for c in s.commands)


# --- gang admission that does not stall the other teams -----------------------------------------

UPSTREAM = Path(__file__).parent / "upstream"


def chart_wait_for_pods_ready() -> Obj:
    """The chart's own waitForPodsReady example (commented out in charts/kueue/values.yaml)."""
    chart = yaml.safe_load((UPSTREAM / "kueue-v0.19.2/values.yaml").read_text())
    text = chart["managerConfig"]["controllerManagerConfigYaml"]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "#waitForPodsReady:")
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.lstrip().startswith("#  "):
            break
        block.append(line)
    example: Obj = yaml.safe_load("\n".join(line.replace("#", "", 1) for line in block))
    return dict(example["waitForPodsReady"])


def manager_configuration(estate: Estate, cluster: str) -> Obj:
    (found,) = [c for c in estate.kubernetes_clusters if c.name == cluster]
    (release,) = [r for r in cluster_objects(estate, found).releases if r.name == "kueue"]
    config: Obj = yaml.safe_load(release.values["managerConfig"]["controllerManagerConfigYaml"])
    return config


def with_queues(extra: str) -> Estate:
    text = (PAIRS / "base.yaml").read_text()
    assert "      queues:\n        cohort: serving\n" in text
    return estate_of(
        "base.yaml",
        text.replace(
            "      queues:\n        cohort: serving\n",
            f"      queues:\n        cohort: serving\n{extra}",
        ),
    )


def test_pods_ready_waits_per_workload_without_blocking_admission() -> None:
    """Kueue v0.19.2 pkg/cache/scheduler/cache.go:250 podsReadyForAllAdmittedWorkloads walks
    every ClusterQueue of the cluster, and pkg/scheduler/scheduler.go:585 admits nothing while
    one of them holds a workload whose pods are not ready (cmd/kueue/main.go:716
    blockForPodsReady: only with blockAdmission true): one team's slow job, or a pool that
    scales from zero, would stall every team. apis/config/v1beta2/configuration_types.go
    304-329 and 402-440: ``timeout`` evicts a workload whose pods are not all ready in time
    and requeues it (timestamp Eviction, backoff from 60 s doubling to 3600 s, no count: it
    never gives up), so gang admission holds without blocking. Only fields of the chart's own
    example (charts/kueue/values.yaml) are set."""
    config = manager_configuration(estate_of("base.yaml"), "serving")
    ready = config["waitForPodsReady"]
    example = chart_wait_for_pods_ready()
    assert set(ready) <= set(example)
    assert set(ready["requeuingStrategy"]) <= set(example["requeuingStrategy"])
    assert ready["blockAdmission"] is False
    assert ready["timeout"] == "10m"
    assert ready["requeuingStrategy"] == {
        "timestamp": "Eviction",
        "backoffBaseSeconds": 60,
        "backoffMaxSeconds": 3600,
    }
    assert "backoffLimitCount" not in ready["requeuingStrategy"]


def test_the_pods_ready_timeout_is_the_cluster_queues_own() -> None:
    """configuration_types.go:308 ``Timeout metav1.Duration`` (required; defaults.go:104 reads
    zero as Kueue's 30m default): the blueprint's value, a Go duration of one unit."""
    estate = with_queues("        pods_ready_timeout: 25m\n")
    assert manager_configuration(estate, "serving")["waitForPodsReady"]["timeout"] == "25m"


def refusals(text: str) -> list[Finding]:
    with pytest.raises(BlueprintInvalid) as caught:
        validate_document(load.parse_blueprint(text.encode(), "base.yaml"))
    return [f for f in caught.value.findings if f.level == "error"]


def test_a_zero_or_unitless_pods_ready_timeout_is_refused() -> None:
    for value in ("0m", "10", "1h30m", "ten"):
        text = (
            (PAIRS / "base.yaml")
            .read_text()
            .replace(
                "      queues:\n        cohort: serving\n",
                f"      queues:\n        cohort: serving\n        pods_ready_timeout: {value!r}\n",
            )
        )
        errors = refusals(text)
        assert [f.path for f in errors] == ["kubernetes.clusters[0].queues.pods_ready_timeout"], (
            value
        )
        assert "duration like '90s', '10m' or '2h'" in errors[0].message


def test_volcano_queues_refuse_a_pods_ready_timeout() -> None:
    text = (
        (PAIRS / "base.yaml")
        .read_text()
        .replace(
            "      queues:\n        cohort: serving\n",
            "      queues:\n        engine: volcano\n        pods_ready_timeout: 10m\n",
        )
    )
    errors = refusals(text)
    assert [f.path for f in errors] == ["kubernetes.clusters[0].queues.pods_ready_timeout"]
    assert "Volcano" in errors[0].message


def test_the_plan_says_what_a_new_pods_ready_timeout_does(tmp_path: Path) -> None:
    """Kueue v0.19.2 charts/kueue/templates/manager/manager.yaml:38 rolls the manager on a new
    configuration (charts.kueue.x-k8s.io/config-checksum): the timeout applies once it
    restarts, to every admitted workload of the cluster."""
    earlier = estate_of("base.yaml")
    target = tmp_path / earlier.name
    write_tree(
        with_manifest(render(earlier), (PAIRS / "base.yaml").read_bytes(), earlier.name), target
    )
    later = with_queues("        pods_ready_timeout: 25m\n")
    result = plan(later, render(later), target)
    (release,) = [c for f in result.files for c in f.changes if c.subject == "Helm release kueue"]
    assert "gives an admitted workload 25m (was 10m) to have all its pods ready" in (
        release.meaning
    )
    assert "admission is never blocked" in release.meaning
    assert [s.id for s in result.steps() if s.id.startswith("pulumi")] == ["pulumi-up"]
