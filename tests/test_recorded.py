"""The model an earlier render recorded in estate.json is the model that rendered it.

``estategen plan`` builds each cluster's Kubernetes objects, Helm values and Pulumi data from
the earlier model rather than reading what the earlier render wrote: that holds only if
:func:`estategen.recorded.estate_from_data` gives back an estate that renders exactly the same
files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estategen import load
from estategen.pipeline import validate_document
from estategen.recorded import NotRecorded, estate_from_data
from estategen.render import render

from conftest import BLUEPRINTS

PAIRS = Path(__file__).parent / "plan_pairs"
SOURCES = sorted(BLUEPRINTS.glob("*.yaml")) + sorted(PAIRS.glob("*.yaml"))


def recorded_model(path: Path) -> dict:  # type: ignore[type-arg]
    estate = validate_document(load.read_blueprint(path)).estate
    assert estate is not None, path
    data = json.loads(render(estate)["estate.json"].content)
    return {k: v for k, v in data.items() if k != "schema"}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_recorded_model_renders_every_file_it_was_rendered_from(source: Path) -> None:
    estate = validate_document(load.read_blueprint(source)).estate
    assert estate is not None
    again = estate_from_data(recorded_model(source))
    first = {path: f.content for path, f in render(estate).items()}
    second = {path: f.content for path, f in render(again).items()}
    assert sorted(first) == sorted(second)
    assert [p for p in first if first[p] != second[p]] == []


def test_enough_blueprints_with_clusters_are_checked() -> None:
    with_clusters = [s for s in SOURCES if recorded_model(s)["kubernetes_clusters"]]
    assert len(with_clusters) >= 10


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.pop("kubernetes_clusters"),
        lambda d: d["node_pools"][0].update(cpu="many"),
        lambda d: d.update(versions=[]),
    ],
    ids=["missing-key", "wrong-type", "not-an-object"],
)
def test_a_record_edited_by_hand_is_refused_not_guessed(edit) -> None:  # type: ignore[no-untyped-def]
    data = recorded_model(PAIRS / "base.yaml")
    edit(data)
    with pytest.raises(NotRecorded, match=r"estate\.json does not record a model"):
        estate_from_data(data)
