"""A tampered estate.json: the model plan compares with is input like the blueprint.

``estategen plan`` rebuilds the earlier model from the folder's estate.json. A record no render
wrote (a value of another type anywhere, a key the model lacks or a key it needs removed) is
"cannot compare": exit 2 with the key and what is wrong with it, never an internal error.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capped import SECONDS, run_capped
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estategen.errors import UsageError
from estategen.output import Files
from estategen.pipeline import validate_file
from estategen.plan.compare import plan
from estategen.render import render

from conftest import BLUEPRINTS

BLUEPRINT = BLUEPRINTS / "frontier.yaml"  # every kind of pool, cluster and storage


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("record") / "out"
    assert run_capped("render", BLUEPRINT, "-o", out).returncode == 0
    return out


def tampered(rendered: Path, tmp_path: Path, edit: Any) -> Path:
    out = tmp_path / "out"
    shutil.copytree(rendered, out)
    data = json.loads((out / "estate.json").read_text())
    edit(data)
    (out / "estate.json").write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(
    ("edit", "key", "wrong"),
    [
        (lambda d: d.update(declared_gpu_models=None), "declared_gpu_models", "None is not a list"),
        (
            lambda d: d["identity"]["teams"][0].update(members=5),
            "identity.teams[0].members",
            "5 is not a list",
        ),
        (
            lambda d: d["slurm"]["partitions"][0].update(pools=[None]),
            "slurm.partitions[0].pools[0]",
            "None is not a string",
        ),
        (lambda d: d["node_pools"][0].update(hosts="-x"), "node_pools[0].hosts", "'-'"),
        (
            lambda d: d["node_pools"][0].update(hosts="n[0-99999],m[0-99999]"),
            "node_pools[0].hosts",
            "more than the estate limit of 100000 hosts",
        ),
        (lambda d: d["slurm"].update(bogus=1), "slurm.bogus", "not a key estate.json records"),
        (lambda d: d["identity"].pop("teams"), "identity", "lacks the key 'teams'"),
        (lambda d: d["slurm"]["partitions"][0].update(max_time=True), "max_time", "True"),
    ],
    ids=["null-list", "number-list", "null-item", "hostlist", "hosts", "key", "lacks", "bool"],
)
def test_a_tampered_record_cannot_be_compared_at_its_key(
    rendered: Path, tmp_path: Path, edit: Any, key: str, wrong: str
) -> None:
    out = tampered(rendered, tmp_path, edit)
    run = run_capped("plan", BLUEPRINT, "-o", out)
    assert run.returncode == 2, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    last = run.stderr.splitlines()[-1]
    assert last.startswith(f"estategen: {out}/estate.json: cannot compare models: "), last
    assert f"{key}: " in last and wrong in last, last
    assert "internal error" not in run.stderr and run.seconds < SECONDS


# --- any type at any path ------------------------------------------------------------------

OTHER_VALUES: list[Any] = [None, 0, -1, 7.5, True, "", "-x", "n[1-", [], [None], {}, {"k": 1}]


def paths(data: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path to a value in the record (the record itself excluded)."""
    if at:
        yield at
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*at, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*at, index))


@pytest.fixture(scope="module")
def estate_and_files() -> tuple[Any, Files]:
    estate = validate_file(BLUEPRINT).estate
    return estate, render(estate)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_plan_against_a_record_mutated_anywhere_ends_in_0_1_or_2(
    rendered: Path, estate_and_files: tuple[Any, Files], data: st.DataObject
) -> None:
    original = json.loads((rendered / "estate.json").read_text())
    record = copy.deepcopy(original)
    where = data.draw(st.sampled_from(sorted(paths(record), key=repr)), label="path")
    parent = record
    for step in where[:-1]:
        parent = parent[step]
    how = data.draw(st.sampled_from(["replace", "remove", "add"]), label="how")
    if how == "replace":
        parent[where[-1]] = data.draw(st.sampled_from(OTHER_VALUES), label="value")
    elif how == "remove":
        del parent[where[-1]]
    elif isinstance(parent, dict):
        parent["unknown_key"] = data.draw(st.sampled_from(OTHER_VALUES), label="value")
    else:
        parent.append(data.draw(st.sampled_from(OTHER_VALUES), label="value"))
    target = rendered.parent / "fuzzed"
    if not target.exists():
        shutil.copytree(rendered, target)
    (target / "estate.json").write_text(json.dumps(record))
    estate, files = estate_and_files
    try:
        plan(estate, files, target)  # exit 0 or 1
    except UsageError as err:  # exit 2, one line
        assert "\n" not in str(err)
