"""Day 2 on a Kubernetes cluster: what the plan must do so a change reaches running nodes and
Kueue, in the order the API server and Kueue accept it.

The "before" and "after" blueprints are the plan pairs of ``tests/plan_pairs/``; each test
renders the before into a folder and plans the after against it, as ``estategen plan`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estategen import load
from estategen.model import Estate, Taint
from estategen.pipeline import validate_document
from estategen.plan.compare import plan
from estategen.plan.pools import taint_actions
from estategen.plan.steps import Plan, Step, merge_steps
from estategen.render import render
from estategen.write import with_manifest, write_tree

PAIRS = Path(__file__).parent / "plan_pairs"


def estate_of(name: str, text: str | None = None) -> Estate:
    source = (PAIRS / name).read_bytes() if text is None else text.encode()
    return validate_document(load.parse_blueprint(source, name)).estate


def planned(before: str, after: str | Estate, tmp: Path) -> Plan:
    earlier = estate_of(before)
    target = tmp / earlier.name
    write_tree(with_manifest(render(earlier), (PAIRS / before).read_bytes(), earlier.name), target)
    later = estate_of(after) if isinstance(after, str) else after
    return plan(later, render(later), target)


def steps(result: Plan) -> dict[str, Step]:
    return {s.id: s for s in result.steps()}


def order(result: Plan) -> list[str]:
    return [s.id for s in result.steps()]


def test_a_new_taint_is_set_on_the_running_nodes_before_kueue_tolerates_it(
    tmp_path: Path,
) -> None:
    """kubernetes v1.31 pkg/kubelet/kubelet_node_status.go, tryRegisterWithAPIServer: kubelet
    Creates its Node with ``--register-with-taints`` and ``--node-labels`` (initialNode); when
    the Node exists it only reconciles the default labels, the controller-managed-attach
    annotation and extended resources. A taint the Ansible role gives kubelet never reaches a
    running node, while the flavour's new toleration does reach Kueue: the nodes must be
    tainted by hand first (kubectl v0.31.0 pkg/cmd/taint/utils.go:130 reorganizeTaints: with
    --overwrite an existing key and effect takes the new value)."""
    result = planned("k8s-switched.yaml", "k8s-switched-taints.yaml", tmp_path)
    taint = steps(result)["taint-nodes"]
    assert taint.commands == (
        "# kubectl on cluster serving:",
        "kubectl taint nodes -l estategen.io/pool=l40s dedicated=inference:NoSchedule --overwrite",
    )
    ids = order(result)
    assert ids.index("taint-nodes") < ids.index("pulumi-replace") < ids.index("pulumi-up")


def test_a_changed_taint_removes_the_old_key_and_effect_in_the_same_command() -> None:
    """kubectl v0.31.0 pkg/cmd/taint/taint.go:243-258 refuses to add and remove one key and
    effect in the same command, and utils.go:145 deleteTaints fails on a taint the node lacks:
    a value change is an overwrite, a new key or effect an add plus the old one's removal."""
    old = [Taint("dedicated", "inference", "NoSchedule"), Taint("gpu", "", "NoExecute")]
    new = [Taint("dedicated", "training", "NoSchedule"), Taint("spot", "", "PreferNoSchedule")]
    (step,) = merge_steps(taint_actions("serving", "l40s", old, new), "pairs")
    assert step.commands == (
        "# kubectl on cluster serving:",
        "kubectl taint nodes -l estategen.io/pool=l40s dedicated=training:NoSchedule "
        "spot:PreferNoSchedule gpu:NoExecute- --overwrite",
    )
    assert merge_steps(taint_actions("serving", "l40s", old, old), "pairs") == []


def test_a_changed_pool_label_is_set_with_kubectl_label_before_the_apply(tmp_path: Path) -> None:
    """kubelet Created the Node with the pool's labels (tryRegisterWithAPIServer, above), so
    its field manager owns them; a server-side apply that sets another value conflicts
    (kubernetes.io/docs/reference/using-api/server-side-apply "Conflicts": a field another
    manager set to a different value), and one that drops a label leaves kubelet's copy.
    kubectl v0.31.0 pkg/cmd/label/label.go:154 --overwrite, :351 merge patch: the label is
    changed as an update, after which the apply of the same value shares the field."""
    result = planned("base.yaml", "k8s-labels.yaml", tmp_path)
    label = steps(result)["label-nodes"]
    assert label.commands == (
        "# kubectl on cluster serving:",
        "kubectl label nodes -l estategen.io/pool=l40s tier=batch --overwrite",
    )
    # no apply: nodes.yaml, which records the labels, is not in the kustomization
    assert "pulumi-up" not in order(result)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            "base.yaml",
            "k8s-switched.yaml",
            (
                "kubectl label nodes k8s-01 k8s-02 estategen.io/switch=kleaf-01 --overwrite",
                "kubectl label nodes k8s-03 k8s-04 estategen.io/switch=kleaf-02 --overwrite",
            ),
        ),
        (
            "k8s-switched.yaml",
            "k8s-unswitched.yaml",
            ("kubectl label nodes -l estategen.io/pool=l40s estategen.io/switch- --overwrite",),
        ),
    ],
    ids=["switches-named-per-host", "dropped-label-removed"],
)
def test_host_labels_are_set_per_host_and_dropped_labels_removed(
    before: str, after: str, expected: tuple[str, ...], tmp_path: Path
) -> None:
    """A label only some nodes of a pool change (their switch) names those nodes; one the
    blueprint drops is removed (``key-``), which no server-side apply of ours can do while
    kubelet owns it."""
    commands = steps(planned(before, after, tmp_path))["label-nodes"].commands
    assert commands == ("# kubectl on cluster serving:", *expected)


def test_a_host_leaving_a_kubernetes_pool_keeps_its_node_until_deleted_by_hand(
    tmp_path: Path,
) -> None:
    """No kustomization lists a Node (a GitOps prune would delete the Node of the removed
    host while its pods still run): the plan asks to drain the host and delete its Node by
    hand, and nothing is applied for nodes.yaml."""
    result = planned("k8s-nodes-added.yaml", "base.yaml", tmp_path)
    (nodes,) = [f for f in result.files if f.path == "kubernetes/serving/nodes.yaml"]
    (change,) = nodes.changes
    assert "delete it by hand" in change.meaning
    assert [(a.id, a.target) for a in change.actions] == [("review", "kubectl delete node k8s-05")]


def test_a_removed_teams_namespace_is_kept_and_deleted_by_hand(tmp_path: Path) -> None:
    """The namespace carries the prune-disabled annotations (Flux kustomize-controller v1.9.4
    docs/spec/v1/kustomizations.md "Prune"; Argo CD v3.5.1 docs/user-guide/sync-options.md
    "No Prune Resources") and the Pulumi program retains it: taking the team out deletes
    neither it nor the workloads in it, so the plan says so and names the command."""
    base = (PAIRS / "base.yaml").read_text()
    team = "    - {name: nlp, gid: 20002, members: [bob], fairshare: 40}\n"
    with_ops = base.replace(team, team + "    - {name: ops, gid: 20003, fairshare: 10}\n")
    assert with_ops != base
    earlier = estate_of("base.yaml", with_ops)
    target = tmp_path / earlier.name
    write_tree(with_manifest(render(earlier), with_ops.encode(), earlier.name), target)
    later = estate_of("base.yaml")
    result = plan(later, render(later), target)
    (namespace,) = [c for f in result.files for c in f.changes if c.subject == "Namespace ops"]
    assert "is kept" in namespace.meaning and "deleted by hand" in namespace.meaning
    assert [(a.id, a.target) for a in namespace.actions] == [
        ("review", "kubectl delete namespace ops")
    ]
