"""A blueprint key's declared change policy (data/schema-docs.yaml ``change:``, the schema's
x-estategen-change) is at least what the slurm.conf keys it renders into need
(estategen.slurm_keys, from slurm.conf(5)).

Nothing maps blueprint keys to slurm.conf keys by hand: each documented key is set, one at a
time, to each of its documented examples in a few blueprints; where the result is valid, the
slurm.conf it renders is compared with the unchanged one, and every slurm.conf key that moved
says what it needs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import yaml
from test_slurm_keys import EVERYTHING, RANK

from estategen import hostlist
from estategen.errors import BlueprintInvalid
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.renderers.slurm import slurm_conf
from estategen.schema.json_schema import key_documentation
from estategen.schema.patterns import CHANGE_POLICIES
from estategen.slurm_keys import NODE_HARDWARE, ChangePolicy, change_for
from estategen.slurmconf import parse_text

from conftest import BLUEPRINTS

# The blueprint's names for the three slurm.conf policies.
DECLARED = {
    "scontrol-reconfigure": ChangePolicy.RECONFIGURE,
    "restart-slurmctld": ChangePolicy.RESTART_SLURMCTLD,
    "restart-slurm-daemons": ChangePolicy.RESTART_ALL,
}
# Keys that hand the question on: a mapping whose keys each say, or a definition whose users do.
DELEGATES = {"per-key", "definition"}
BASES = ("everything", "lab", "campus", "frontier")


def documentation() -> dict[str, Any]:
    return key_documentation()


def base(name: str) -> dict[str, Any]:
    text = EVERYTHING if name == "everything" else (BLUEPRINTS / f"{name}.yaml").read_text()
    document: dict[str, Any] = yaml.safe_load(text)
    return document


def rendered(document: Mapping[str, Any]) -> str | None:
    """slurm.conf of a blueprint, or None when it is invalid."""
    text = yaml.safe_dump(dict(document), sort_keys=False).encode()
    try:
        estate = validate_document(parse_blueprint(text, "t.yaml")).estate
    except BlueprintInvalid:
        return None
    return slurm_conf(estate)


def needs(before: str, after: str) -> dict[str, ChangePolicy]:
    """Each slurm.conf key or record that differs, with what the change needs.

    Parameters: estategen.slurm_keys. Nodes: slurm.conf(5) (22.05, NodeName): "Changes in node
    configuration (e.g. adding nodes, changing their processor count, etc.) require restarting
    both the slurmctld daemon and the slurmd daemons"; the hardware attributes are
    slurm_keys.NODE_HARDWARE, other node attributes (Features, Weight) and partitions take
    effect with scontrol reconfigure.
    """
    old, new = parse_text(before, "slurm.conf"), parse_text(after, "slurm.conf")
    moved: dict[str, ChangePolicy] = {}

    def parameters(conf: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for setting in conf.parameters:
            out.setdefault(setting.key, []).append(setting.value)
        return out

    was, now = parameters(old), parameters(new)
    for key in set(was) | set(now):
        if was.get(key) != now.get(key):
            moved[key] = change_for(key)

    def nodes(conf: Any) -> dict[str, dict[str, str]]:
        out = {}
        for record in conf.of_kind("NodeName"):
            attrs = {s.key: s.value for s in record.settings if s.key != "State"}
            for host in hostlist.expand(record.name, limit=10**6):
                out[host] = attrs
        return out

    old_nodes, new_nodes = nodes(old), nodes(new)
    if set(old_nodes) != set(new_nodes):
        moved["NodeName (nodes added or removed)"] = ChangePolicy.RESTART_ALL
    for host in set(old_nodes) & set(new_nodes):
        a, b = old_nodes[host], new_nodes[host]
        for attr in set(a) | set(b):
            if a.get(attr) != b.get(attr):
                hardware = attr in NODE_HARDWARE
                moved[f"NodeName {attr}"] = (
                    ChangePolicy.RESTART_ALL if hardware else ChangePolicy.RECONFIGURE
                )
    for kind in ("PartitionName", "NodeSet", "DownNodes"):
        if records(old, kind) != records(new, kind):
            moved[kind] = ChangePolicy.RECONFIGURE
    return moved


def records(conf: Any, kind: str) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(r.name, [(s.key, s.value) for s in r.settings]) for r in conf.of_kind(kind)]


def _steps(path: str) -> list[str]:
    return re.findall(r"\[\]|\*|[^.\[\]*]+", path)


def places(document: Any, path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """(mapping, key) for the first place ``path`` may be set in a document: its parent
    mappings are added where missing (the result may then be invalid, and is skipped), list
    items and free-key values must exist."""
    *steps, last = _steps(path)
    nodes = [document]
    for step in steps:
        if step == "[]":
            nodes = [item for n in nodes if isinstance(n, list) for item in n]
        elif step == "*":
            nodes = [v for n in nodes if isinstance(n, dict) for v in n.values()]
        else:
            nodes = [n.setdefault(step, {}) for n in nodes[:1] if isinstance(n, dict)]
    for node in nodes[:1]:
        if isinstance(node, dict) and last not in ("[]", "*"):
            yield node, last


def values(examples: list[Any]) -> list[Any]:
    """The documented examples, and a neighbour of each scalar one: an example is often the
    default, which changes nothing."""
    out = list(examples)
    for example in examples:
        if isinstance(example, bool):
            out.append(not example)
        elif isinstance(example, int):
            out.append(example + 1)
        elif isinstance(example, str):
            out.append(f"{example}2")
    return out


@cache
def observed() -> dict[str, dict[str, ChangePolicy]]:
    """Documented key path -> the slurm.conf keys some change of it moved, with their needs."""
    docs = documentation()
    found: dict[str, dict[str, ChangePolicy]] = {}
    for name in BASES:
        original = base(name)
        before = rendered(original)
        assert before is not None, name
        for path, doc in docs.items():
            if DELEGATES & set(doc["change"]):
                continue
            for example in values(doc["examples"]):
                document = copy.deepcopy(original)
                for mapping, key in places(document, path):
                    if mapping.get(key) == example:
                        continue
                    mapping[key] = copy.deepcopy(example)
                    after = rendered(document)
                    if after is not None:
                        found.setdefault(path, {}).update(needs(before, after))
    return {path: moved for path, moved in found.items() if moved}


def too_weak(docs: Mapping[str, Any], seen: Mapping[str, Mapping[str, ChangePolicy]]) -> list[str]:
    """Keys whose declared policy is weaker than a slurm.conf key they moved needs."""
    weak = []
    for path, moved in sorted(seen.items()):
        declared = [DECLARED[c] for c in docs[path]["change"] if c in DECLARED]
        have = max((RANK[p] for p in declared), default=-1)
        for what, policy in sorted(moved.items()):
            if RANK[policy] > have:
                weak.append(f"{path} {docs[path]['change']}: {what} needs {policy.value}")
    return weak


def test_every_blueprint_key_declares_at_least_what_its_slurm_conf_keys_need() -> None:
    assert too_weak(documentation(), observed()) == []


def test_the_comparison_reaches_keys_of_every_policy_and_fails_on_a_weakened_one() -> None:
    assert set(DECLARED) | DELEGATES <= set(CHANGE_POLICIES)
    seen = observed()
    # it moved keys of each of the three policies, through many blueprint keys
    policies = {policy for moved in seen.values() for policy in moved.values()}
    assert policies == set(RANK)
    assert len(seen) >= 70, sorted(seen)
    for path, what in [
        # the keys this comparison found declared too weak: a rename, the first NVLink block,
        # a new MIG layout and new hosts each restart more than they said
        ("slurm.cluster_name", "ClusterName"),
        ("node_pools[].network.block", "TopologyPlugin"),
        ("node_pools[].gpus.mig", "NodeName Gres"),
        ("slurm.slurmd_user", "SlurmdUser"),
        ("slurm.accounting.enforce", "AccountingStorageEnforce"),
        ("node_pools[].memory_gb", "NodeName RealMemory"),
        ("node_pools[].hosts", "NodeName (nodes added or removed)"),
        ("slurm.partitions[].max_time", "PartitionName"),
    ]:
        assert what in seen[path], (path, seen.get(path))
    # a key declared weaker than its slurm.conf key is caught, and so is one declaring nothing
    for path, weakened in [
        ("slurm.slurmd_user", ["scontrol-reconfigure", "ansible-playbook"]),
        ("node_pools[].memory_gb", ["restart-slurmctld"]),
        ("slurm.partitions[].max_time", ["ansible-playbook"]),
    ]:
        docs = documentation()
        docs[path] = {**docs[path], "change": weakened}
        assert [line for line in too_weak(docs, seen) if line.startswith(f"{path} ")], path
