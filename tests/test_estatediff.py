"""Two estates compared key by key: what changed, named by its blueprint key, with the change
policy the schema declares for that key."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from estategen import load
from estategen.estatediff import Delta, _keys, blueprint_key, diff, policies, recorded
from estategen.pipeline import validate_document
from estategen.render import render
from estategen.renderers.estate_json import estate_data
from estategen.schema.json_schema import json_schema, key_nodes
from estategen.schema.patterns import CHANGE_KEYWORD, CHANGE_POLICIES

from conftest import BLUEPRINTS

PAIRS = Path(__file__).parent / "plan_pairs"


def data(path: Path) -> dict[str, Any]:
    return estate_data(validate_document(load.read_blueprint(path)).estate)


def schema_keys() -> dict[str, list[str]]:
    return {path: node.get(CHANGE_KEYWORD) or [] for path, node in key_nodes(json_schema())}


def leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaves(v, (*path, k))] or [path]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        key = "name" if all("name" in v for v in value) else "team"
        return [p for v in value for p in leaves(v, (*path, f"[{v.get(key)}]"))]
    return [path]


def test_lists_of_named_things_are_matched_by_name_not_position() -> None:
    before = data(PAIRS / "base.yaml")
    after = copy.deepcopy(before)
    after["slurm"]["partitions"].reverse()
    after["slurm"]["partitions"][0]["max_time"] = "1-00:00:00"
    (change,) = diff(before, after)
    assert change.path == ("slurm", "partitions", "[mig]", "max_time")
    assert change.key == "slurm.partitions[].max_time"
    assert change.item() == "mig"


def test_a_named_item_added_is_one_change_and_a_settings_block_is_its_keys() -> None:
    changes = list(diff(data(PAIRS / "base.yaml"), data(PAIRS / "cloud-pool-added.yaml")))
    pool = next(c for c in changes if c.path == ("node_pools", "[burst]"))
    assert pool.added and pool.after["hosts"] == "burst-[01-04]"
    assert {c.key for c in changes if c.path[:2] == ("slurm", "power_saving")} == {
        "slurm.power_saving.suspend_time",
        "slurm.power_saving.resume_timeout",
        "slurm.power_saving.suspend_timeout",
        "slurm.power_saving.exclude_nodes",
    }


@pytest.mark.parametrize("blueprint", ["campus.yaml", "lab.yaml"])
def test_every_recorded_key_names_a_blueprint_key_with_a_policy(blueprint: str) -> None:
    recorded_keys = {blueprint_key(path) for path in leaves(data(BLUEPRINTS / blueprint)) if path}
    known = schema_keys()
    assert "" not in recorded_keys
    assert recorded_keys <= set(known)
    for key in recorded_keys:
        assert set(policies(key)) <= set(CHANGE_POLICIES), key


def test_each_partition_key_the_schema_adds_is_planned_by_its_own_policy() -> None:
    """A key added to slurm.partitions[] with its `change:` needs no edit in the plan: the
    model's field (or its `overrides` field) maps back to it and carries its policy."""
    base = data(PAIRS / "base.yaml")
    partition = base["slurm"]["partitions"][0]
    fields = {**partition, **partition["overrides"]}
    partition_keys = {
        key.removeprefix("slurm.partitions[].")
        for key in schema_keys()
        if key.startswith("slurm.partitions[].") and not re.search(r"[.\[]", key[19:])
    }
    assert {"grace_time", "max_time", "max_nodes"} <= partition_keys
    for name in sorted(partition_keys):
        assert name in fields, name
        where = ("overrides", name) if name in partition["overrides"] else (name,)
        change = Delta(("slurm", "partitions", "[gpu]", *where), fields[name], "changed")
        assert change.key == f"slurm.partitions[].{name}"
        assert change.policies == tuple(schema_keys()[change.key])


def test_a_policy_of_a_per_key_mapping_comes_from_the_key_inside() -> None:
    assert policies("slurm.health_check.interval") == ("scontrol-reconfigure",)
    # a derived field under a secret reference is the reference's key
    assert blueprint_key(("slurm", "accounting", "database", "password", "name")) == (
        "slurm.accounting.database.password"
    )
    assert policies("slurm.accounting.database.password") == ("restart-slurmdbd",)
    # definitions: a change to a GPU model is a change to every pool using it
    assert blueprint_key(("gpu_models", "h100-sxm-80gb", "memory_gb")) == "gpu_models[].memory_gb"
    assert policies("gpu_models[].memory_gb") == ("definition",)


def test_estate_json_records_what_a_model_comparison_needs(tmp_path: Path) -> None:
    estate = validate_document(load.read_blueprint(PAIRS / "nodes-added.yaml")).estate
    content = render(estate)["estate.json"].content
    model = recorded(content)
    assert isinstance(model, dict)
    assert json.loads(content)["schema"] == "estategen/estate-v2"
    assert [p["hosts"] for p in model["node_pools"]] == [
        "gpu-[01-06]",
        "mig-[01-02]",
        "k8s-[01-04]",
    ]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "no estate.json"),
        (b'{"schema": "estategen/estate-v1"}', "written by an older estategen"),
        (b"{not json", "not JSON"),
        (b"[]", "not an object"),
    ],
)
def test_an_older_or_missing_estate_json_says_why_it_cannot_be_compared(
    content: bytes | None, why: str
) -> None:
    result = recorded(content)
    assert isinstance(result, str) and why in result


@pytest.mark.parametrize(
    ("path", "key"),
    [
        (("node_pools", "[burst]", "site_cloud"), "node_pools[].state"),
        (("slurm", "site", "job_completion"), "slurm.job_completion.type"),
        (("slurm", "site", "job_completion_location"), "slurm.job_completion.location"),
        (("slurm", "site", "select_type"), "slurm.select.type"),
    ],
)
def test_a_model_field_named_apart_from_its_key_is_planned_by_that_keys_policy(
    path: tuple[str, ...], key: str
) -> None:
    """Without its entry in MODEL_KEYS such a field falls back to the key above it (a
    review, or per-key), and plan would ask for no restart at all."""
    assert blueprint_key(path) == key
    assert set(policies(key)) - {"review"}


def test_plan_reads_the_policies_of_the_schema_it_ships() -> None:
    # _keys reads data/schema.json rather than building the schema: the same keys and policies
    assert _keys() == {path: tuple(policies) for path, policies in schema_keys().items()}
