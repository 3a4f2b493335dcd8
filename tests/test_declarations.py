"""A key declared in :mod:`estategen.declarations` needs nothing else: each declared partition
parameter is in the schema with its bounds or words, in the reference with its documentation,
on the PartitionName line of a blueprint that sets it, and ``estategen import`` reads that line
back as the key. These tests run over the declarations, so a new one is tested as it is
declared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load, reference
from estategen.declarations import (
    PARTITION_PARAMETERS,
    OneOf,
    PartitionParameter,
    WholeNumber,
    Word,
    YesNo,
)
from estategen.importer.site import import_site
from estategen.pipeline import validate_document
from estategen.renderers.slurm import slurm_conf
from estategen.schema.json_schema import json_schema, key_nodes
from estategen.schema.patterns import CHANGE_KEYWORD

from conftest import BLUEPRINTS

EXAMPLES = [
    pytest.param(parameter, example, id=f"{parameter.key}={example}")
    for parameter in PARTITION_PARAMETERS
    for example in parameter.examples
]
PARAMETERS = [pytest.param(parameter, id=parameter.key) for parameter in PARTITION_PARAMETERS]


def lab_setting(key: str, value: object) -> str:
    """lab.yaml with its partition setting ``key``, under preemption by partition priority
    (where Slurm reads a partition's PreemptMode)."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    blueprint["slurm"]["scheduling"] = {"preemption": {"type": "partition_prio"}}
    blueprint["slurm"]["partitions"][0][key] = value
    return yaml.safe_dump(blueprint, sort_keys=False)


def rendered(blueprint: str) -> tuple[str, str, str]:
    """The PartitionName line a blueprint renders, its slurm.conf, and the Slurm release it
    targets."""
    estate = validate_document(load.parse_blueprint(blueprint.encode(), "b.yaml")).estate
    conf = slurm_conf(estate)
    (line,) = re.findall(r"^PartitionName=.*$", conf, re.MULTILINE)
    return line, conf, estate.versions.slurm.text


def imported_partition(tmp_path: Path, conf: str, release: str) -> dict[str, Any]:
    """The one partition ``estategen import`` builds from a slurm.conf."""
    (tmp_path / "slurm.conf").write_text(conf)
    imported = import_site(tmp_path / "slurm.conf", slurm_version=release)
    (partition,) = yaml.safe_load(imported.text)["slurm"]["partitions"]
    return dict(partition)


@pytest.mark.parametrize("parameter", PARAMETERS)
def test_a_declared_partition_parameter_is_in_the_json_schema_with_its_bounds_and_words(
    parameter: PartitionParameter,
) -> None:
    node = dict(key_nodes(json_schema()))[parameter.path]
    assert node["description"].startswith(parameter.description)
    assert node["examples"] == list(parameter.examples)
    assert node[CHANGE_KEYWORD] == list(parameter.change)
    value = parameter.value
    if isinstance(value, WholeNumber):
        bounds = (node["minimum"], node["maximum"])
        assert (node["type"], bounds) == ("integer", (value.low, value.high))
    elif isinstance(value, YesNo):
        assert node["type"] == "boolean"
    elif isinstance(value, OneOf):
        assert (node["type"], node["enum"]) == ("string", list(value.words))
    else:
        assert isinstance(value, Word)
        assert (node["type"], node["pattern"]) == ("string", f"^(?:{value.pattern})$")


@pytest.mark.parametrize("parameter", PARAMETERS)
def test_a_declared_partition_parameter_has_its_row_in_the_blueprint_reference(
    parameter: PartitionParameter,
) -> None:
    (row,) = [line for line in reference.markdown().splitlines() if f"`{parameter.path}`" in line]
    assert parameter.description in row


@pytest.mark.parametrize(("parameter", "example"), EXAMPLES)
def test_a_declared_partition_parameter_set_in_the_blueprint_is_on_the_partition_line(
    parameter: PartitionParameter, example: object
) -> None:
    line, _, _ = rendered(lab_setting(parameter.key, example))
    assert f" {parameter.slurm}={parameter.slurm_text(example)} " in f" {line} "
    # and only where the blueprint sets it: Slurm's own default applies otherwise
    blank, _, _ = rendered((BLUEPRINTS / "lab.yaml").read_text())
    assert f" {parameter.slurm}=" not in blank


@pytest.mark.parametrize(("parameter", "example"), EXAMPLES)
def test_import_reads_a_declared_partition_parameter_back_as_the_blueprint_set_it(
    tmp_path: Path, parameter: PartitionParameter, example: object
) -> None:
    _, conf, release = rendered(lab_setting(parameter.key, example))
    assert imported_partition(tmp_path, conf, release)[parameter.key] == example


@pytest.mark.parametrize(
    ("parameter", "old_name"),
    [
        pytest.param(parameter, old, id=f"{old}={parameter.key}")
        for parameter in PARTITION_PARAMETERS
        for old in parameter.old_names
    ],
)
def test_import_reads_the_old_name_of_a_declared_partition_parameter_as_its_key(
    tmp_path: Path, parameter: PartitionParameter, old_name: str
) -> None:
    example = parameter.examples[0]
    _, conf, release = rendered(lab_setting(parameter.key, example))
    written = f" {parameter.slurm}={parameter.slurm_text(example)}"
    assert written in conf
    old = conf.replace(written, f" {old_name}={parameter.slurm_text(example)}")
    assert imported_partition(tmp_path, old, release)[parameter.key] == example
