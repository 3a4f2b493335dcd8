"""The CRD validation helper (tests/crd.py) itself: it refuses what Kueue 0.19.2's API
server refuses, rule by rule, with the rule's own message, and refuses to guess at rules it
cannot evaluate."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from crd import UPSTREAM, Crd, UnsupportedRule, crd_files, crd_set

KUEUE = UPSTREAM / "kueue-v0.19.2"
API = "kueue.x-k8s.io/v1beta2"


def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": "x"}, "spec": spec}


def queue(**spec: Any) -> dict[str, Any]:
    group = {
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [{"name": "l40s", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
    }
    return obj("ClusterQueue", {"cohortName": "c", "resourceGroups": [group], **spec})


TOPOLOGY_FLAVOR = obj(
    "ResourceFlavor",
    {
        "nodeLabels": {"gpu": "l40s"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "topologyName": "switches",
    },
)
LEVELS = [{"nodeLabel": "switch"}, {"nodeLabel": "kubernetes.io/hostname"}]


def changed(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in spec.items():
        if value is None:
            del out["spec"][key]
        else:
            out["spec"][key] = value
    return out


def two_resources() -> dict[str, Any]:
    q = queue()
    q["spec"]["resourceGroups"][0]["coveredResources"].append("cpu")
    return q


def borrowing_without_cohort() -> dict[str, Any]:
    q = queue()
    del q["spec"]["cohortName"]
    q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 1
    return q


def cohort_with_short_flavor() -> dict[str, Any]:
    group = {"coveredResources": ["a", "b"], "flavors": [{"name": "f", "resources": []}]}
    return obj("Cohort", {"resourceGroups": [group]})


# (case, object, previous version or None for a create, the rule's message)
REFUSED: list[tuple[str, dict[str, Any], dict[str, Any] | None, str]] = [
    (
        "borrowing-without-cohort",
        borrowing_without_cohort(),
        None,
        "borrowingLimit must be nil when cohort is empty",
    ),
    (
        "fungibility-preference",
        queue(flavorFungibility={"preference": "BorrowingOverPreemption"}),
        None,
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
    ),
    (
        "preemption-never-reclaim",
        queue(
            preemption={
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            }
        ),
        None,
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    (
        "queue-flavor-resources",
        two_resources(),
        None,
        "flavors must have the same number of resources as the coveredResources",
    ),
    (
        "cohort-flavor-resources",
        cohort_with_short_flavor(),
        None,
        "flavors must have the same number of resources as the coveredResources",
    ),
    (
        "localqueue-cluster-queue",
        obj("LocalQueue", {"clusterQueue": "b"}),
        obj("LocalQueue", {"clusterQueue": "a"}),
        "field is immutable",
    ),
    (
        "topology-without-node-labels",
        changed(TOPOLOGY_FLAVOR, nodeLabels={}),
        None,
        "at least one nodeLabel is required when topology is set",
    ),
    (
        "node-labels-immutable",
        changed(TOPOLOGY_FLAVOR, nodeLabels={"gpu": "l4"}),
        TOPOLOGY_FLAVOR,
        "nodeLabels are immutable when topologyName is set",
    ),
    (
        "tolerations-immutable",
        changed(TOPOLOGY_FLAVOR, tolerations=None),
        TOPOLOGY_FLAVOR,
        "tolerations are immutable when topologyName is set",
    ),
    (
        "topology-name-immutable",
        changed(TOPOLOGY_FLAVOR, topologyName=None),
        TOPOLOGY_FLAVOR,
        "topologyName is immutable when topologyName is set",
    ),
    (
        "node-taint-effect",
        obj("ResourceFlavor", {"nodeTaints": [{"key": "k", "effect": "Sometimes"}]}),
        None,
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
    (
        "toleration-without-key",
        obj("ResourceFlavor", {"tolerations": [{"operator": "Equal", "value": "v"}]}),
        None,
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
    ),
    (
        "toleration-seconds",
        obj(
            "ResourceFlavor",
            {"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]},
        ),
        None,
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    (
        "toleration-operator",
        obj("ResourceFlavor", {"tolerations": [{"key": "k", "operator": "In"}]}),
        None,
        "supported toleration values: 'Equal'(default), 'Exists'",
    ),
    (
        "toleration-exists-value",
        obj("ResourceFlavor", {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
        None,
        "a value must be empty when 'operator' is 'Exists'",
    ),
    (
        "toleration-effect",
        obj("ResourceFlavor", {"tolerations": [{"key": "k", "effect": "Always"}]}),
        None,
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
    (
        "topology-levels-immutable",
        obj("Topology", {"levels": LEVELS[1:]}),
        obj("Topology", {"levels": LEVELS}),
        "field is immutable",
    ),
    (
        "topology-levels-unique",
        obj("Topology", {"levels": [LEVELS[0], *LEVELS]}),
        None,
        "must be unique",
    ),
    (
        "topology-hostname-lowest",
        obj("Topology", {"levels": LEVELS[::-1]}),
        None,
        "the kubernetes.io/hostname label can only be used at the lowest level of topology",
    ),
]


@pytest.mark.parametrize(("case", "bad", "old", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_object_breaking_a_rule_is_refused_with_its_message(
    case: str, bad: dict[str, Any], old: dict[str, Any] | None, message: str
) -> None:
    violations = crd_set(KUEUE).validate(bad, old)
    assert message in [v.message for v in violations], violations


def rule_messages() -> set[tuple[str, str]]:
    """(kind, message) of every CEL rule in the release's CRDs."""
    found: set[tuple[str, str]] = set()

    def walk(kind: str, schema: Any) -> None:
        if isinstance(schema, dict):
            for entry in schema.get("x-kubernetes-validations", []):
                found.add((kind, entry["message"]))
            for value in schema.values():
                walk(kind, value)
        elif isinstance(schema, list):
            for value in schema:
                walk(kind, value)

    for path in crd_files(KUEUE):
        crd = yaml.safe_load(path.read_text())
        walk(crd["spec"]["names"]["kind"], crd["spec"]["versions"])
    return found


def test_every_rule_of_the_release_has_a_refused_case() -> None:
    covered = {(bad["kind"], message) for _, bad, _, message in REFUSED}
    assert rule_messages() == covered


def test_valid_objects_pass_on_create_and_on_an_unchanged_update() -> None:
    crds = crd_set(KUEUE)
    topology = obj("Topology", {"levels": LEVELS})
    for good in (queue(), TOPOLOGY_FLAVOR, topology, obj("LocalQueue", {"clusterQueue": "a"})):
        assert crds.validate(good) == []
        assert crds.validate(good, copy.deepcopy(good)) == []


def test_transition_rules_run_only_on_update() -> None:
    moved = changed(TOPOLOGY_FLAVOR, tolerations=None)
    assert crd_set(KUEUE).validate(moved) == []
    assert crd_set(KUEUE).validate(moved, TOPOLOGY_FLAVOR) != []


def test_tolerations_of_a_flavor_without_topology_may_change() -> None:
    plain = changed(TOPOLOGY_FLAVOR, topologyName=None)
    assert crd_set(KUEUE).validate(changed(plain, tolerations=None), plain) == []


def test_defaults_are_applied_before_rules_read_them() -> None:
    # reclaimWithinCohort defaults to Never: with borrowWithinCohort set, the rule refuses it
    q = queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}})
    messages = [v.message for v in crd_set(KUEUE).validate(q)]
    assert "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never" in messages


def test_closed_schema_refuses_an_unknown_field() -> None:
    q = queue()
    q["spec"]["cohort"] = q["spec"].pop("cohortName")
    assert crd_set(KUEUE).validate(q, closed=False) == []
    assert any("cohort" in v.message for v in crd_set(KUEUE).validate(q))


def write_crd(tmp_path: Path, validations: list[dict[str, Any]]) -> Path:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"items": {"type": "array"}},
                                    "x-kubernetes-validations": validations,
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "thing.yaml"
    path.write_text(yaml.safe_dump(crd))
    return path


@pytest.mark.parametrize(
    "validation",
    [
        {"rule": "has(self.items) || self.items.isSorted()"},  # short-circuited, still refused
        {"rule": "self.items == oldSelf.items", "optionalOldSelf": True},
        {"rule": "true", "messageExpression": "'x'.format([1])"},
    ],
    ids=["unknown-function", "optional-old-self", "unknown-in-message"],
)
def test_a_rule_the_helper_cannot_evaluate_fails_loudly(
    tmp_path: Path, validation: dict[str, Any]
) -> None:
    with pytest.raises(UnsupportedRule):
        Crd.load(write_crd(tmp_path, [validation]))


def test_message_expression_is_the_reported_message(tmp_path: Path) -> None:
    crd = Crd.load(
        write_crd(
            tmp_path,
            [
                {
                    "rule": "size(self.items) < 2",
                    "messageExpression": "'too many: ' + string(size(self.items))",
                }
            ],
        )
    )
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"items": [1, 2, 3]}}
    assert [(v.path, v.message) for v in crd.validate(thing, closed=False)] == [
        ("spec", "too many: 3")
    ]


def test_an_immutable_map_list_is_compared_without_regard_to_order(tmp_path: Path) -> None:
    """Kubernetes compares lists of x-kubernetes-list-type map or set without regard to order
    (kubernetes.io "Extend the Kubernetes API with CustomResourceDefinitions", CEL): an update
    that only reorders an immutable map list passes ``self == oldSelf``, one that changes an
    item fails it. Trainer's runtimePatches containers are such a list."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "items": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "name": {"type": "string"},
                                                    "value": {"type": "integer"},
                                                },
                                            },
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "x-kubernetes-validations": [
                                                {"rule": "self == oldSelf", "message": "frozen"}
                                            ],
                                        }
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "thing.yaml"
    path.write_text(yaml.safe_dump(crd))
    thing = Crd.load(path)

    def obj(*items: tuple[str, int]) -> dict[str, Any]:
        listed = [{"name": n, "value": v} for n, v in items]
        return {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"items": listed}}

    assert thing.validate(obj(("a", 1), ("b", 2)), obj(("b", 2), ("a", 1))) == []
    changed = thing.validate(obj(("a", 1), ("b", 3)), obj(("a", 1), ("b", 2)))
    assert [v.message for v in changed] == ["frozen"]
