"""A key declared in :mod:`estategen.declarations` needs nothing else: each declared key is in
the schema with its bounds or words, in the reference with its documentation; a partition
parameter is on the PartitionName line of a blueprint that sets it, and ``estategen import``
reads that line back as the key; a node pool parameter is on the pool's NodeName line as the
blueprint sets it, import reads it back as the key, and import refuses a site's value beyond
the key's bounds; a QoS parameter is on the QoS's ``modify qos`` line (its
default or unset word when left out), and ``estategen plan`` runs that line when it changes
(import reads no QoS settings: a sacctmgr dump writes none). These tests run over the
declarations, so a new one is tested as it is declared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load, reference
from estategen.declarations import (
    NODE_POOL_PARAMETERS,
    PARTITION_PARAMETERS,
    QOS_PARAMETERS,
    Factor,
    NodePoolParameter,
    OneOf,
    PartitionParameter,
    QosParameter,
    Time,
    WholeNumber,
    Word,
    YesNo,
)
from estategen.importer.site import import_site
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.plan.compare import plan
from estategen.render import render
from estategen.renderers.slurm import qos_lines, qos_text, slurm_conf
from estategen.schema.json_schema import json_schema, key_nodes
from estategen.schema.patterns import CHANGE_KEYWORD, SLURM_TIME
from estategen.write import with_manifest, write_tree

from conftest import BLUEPRINTS

EXAMPLES = [
    pytest.param(parameter, example, id=f"{parameter.key}={example}")
    for parameter in PARTITION_PARAMETERS
    for example in parameter.examples
]
AnyParameter = PartitionParameter | QosParameter | NodePoolParameter
EVERY: tuple[AnyParameter, ...] = (*PARTITION_PARAMETERS, *QOS_PARAMETERS, *NODE_POOL_PARAMETERS)
DECLARED = [pytest.param(parameter, id=parameter.path) for parameter in EVERY]
POOL_EXAMPLES = [
    pytest.param(parameter, example, id=f"{parameter.key}={example}")
    for parameter in NODE_POOL_PARAMETERS
    for example in parameter.examples
]
QOS_EXAMPLES = [
    pytest.param(parameter, example, id=f"{parameter.key}={example}")
    for parameter in QOS_PARAMETERS
    for example in parameter.examples
]
QOS_PARAMETER_IDS = [pytest.param(parameter, id=parameter.key) for parameter in QOS_PARAMETERS]


def lab_setting(key: str, value: object) -> str:
    """lab.yaml with its partition setting ``key``, under preemption by partition priority
    (where Slurm reads a partition's PreemptMode) in mode cancel (slurmctld refuses off)."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    blueprint["slurm"]["scheduling"] = {"preemption": {"type": "partition_prio", "mode": "cancel"}}
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


@pytest.mark.parametrize("parameter", DECLARED)
def test_a_declared_key_is_in_the_json_schema_with_its_bounds_words_and_default(
    parameter: AnyParameter,
) -> None:
    node = dict(key_nodes(json_schema()))[parameter.path]
    assert node["description"].startswith(parameter.description)
    assert node["examples"] == list(parameter.examples)
    assert node[CHANGE_KEYWORD] == list(parameter.change)
    default = parameter.default if isinstance(parameter, QosParameter) else None
    assert node.get("default") == default
    value = parameter.value
    if isinstance(value, WholeNumber):
        bounds = (node["minimum"], node["maximum"])
        assert (node["type"], bounds) == ("integer", (value.low, value.high))
    elif isinstance(value, Factor):
        bounds = (node["minimum"], node["maximum"])
        assert (node["type"], bounds) == ("number", (value.low, value.high))
    elif isinstance(value, YesNo):
        assert node["type"] == "boolean"
    elif isinstance(value, OneOf):
        assert (node["type"], node["enum"]) == ("string", list(value.words))
    elif isinstance(value, Time):
        assert (node["type"], node["pattern"]) == ("string", f"^(?:{SLURM_TIME})$")
    else:
        assert isinstance(value, Word)
        assert (node["type"], node["pattern"]) == ("string", f"^(?:{value.pattern})$")


@pytest.mark.parametrize("parameter", DECLARED)
def test_a_declared_key_has_its_row_in_the_blueprint_reference(
    parameter: AnyParameter,
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


def lab_pool_setting(key: str, value: object) -> str:
    """lab.yaml with its Slurm pool, a100, setting ``key``."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    pool = blueprint["node_pools"][0]
    assert (pool["name"], pool["scheduler"]) == ("a100", "slurm")
    pool[key] = value
    return yaml.safe_dump(blueprint, sort_keys=False)


def node_line(blueprint: str) -> tuple[str, str, str]:
    """The NodeName line of a blueprint's one Slurm pool, its slurm.conf, and the Slurm release
    it targets."""
    estate = validate_document(load.parse_blueprint(blueprint.encode(), "b.yaml")).estate
    conf = slurm_conf(estate)
    (line,) = re.findall(r"^NodeName=.*$", conf, re.MULTILINE)
    return line, conf, estate.versions.slurm.text


def imported_pool(tmp_path: Path, conf: str, release: str) -> tuple[dict[str, Any], str]:
    """The one node pool ``estategen import`` builds from a slurm.conf, and its report."""
    (tmp_path / "slurm.conf").write_text(conf)
    imported = import_site(tmp_path / "slurm.conf", slurm_version=release)
    (pool,) = yaml.safe_load(imported.text)["node_pools"]
    return dict(pool), imported.text


@pytest.mark.parametrize(("parameter", "example"), POOL_EXAMPLES)
def test_a_declared_pool_parameter_set_in_the_blueprint_is_on_the_pool_node_line(
    parameter: NodePoolParameter, example: object
) -> None:
    line, _, _ = node_line(lab_pool_setting(parameter.key, example))
    assert f" {parameter.slurm}={example} " in f" {line} "
    # left out, the line writes estategen's own value
    blank, _, _ = node_line((BLUEPRINTS / "lab.yaml").read_text())
    assert f" {parameter.slurm}=" in blank
    assert f" {parameter.slurm}={example} " not in f" {blank} "


@pytest.mark.parametrize(("parameter", "example"), POOL_EXAMPLES)
def test_import_reads_a_declared_pool_parameter_back_as_the_blueprint_set_it(
    tmp_path: Path, parameter: NodePoolParameter, example: object
) -> None:
    _, conf, release = node_line(lab_pool_setting(parameter.key, example))
    assert imported_pool(tmp_path, conf, release)[0][parameter.key] == example


@pytest.mark.parametrize("parameter", [pytest.param(p, id=p.key) for p in NODE_POOL_PARAMETERS])
def test_import_refuses_a_site_value_of_a_declared_pool_parameter_beyond_its_bounds(
    tmp_path: Path, parameter: NodePoolParameter
) -> None:
    """The pool keeps the nearest bound, and the report says the site's value was refused."""
    example = parameter.examples[0]
    line, conf, release = node_line(lab_pool_setting(parameter.key, example))
    beyond = parameter.value.high + 1
    site = conf.replace(
        line, line.replace(f" {parameter.slurm}={example} ", f" {parameter.slurm}={beyond} ")
    )
    assert f" {parameter.slurm}={beyond} " in site
    pool, report = imported_pool(tmp_path, site, release)
    assert pool[parameter.key] == parameter.value.high
    assert f"{parameter.slurm} out of range" in report


def campus_setting(key: str, value: object) -> Estate:
    """campus.yaml (preemption by QoS, where Slurm reads a QoS's PreemptMode) with its first
    QoS, normal, setting ``key``."""
    blueprint = yaml.safe_load((BLUEPRINTS / "campus.yaml").read_text())
    assert blueprint["slurm"]["scheduling"]["preemption"]["type"] == "qos"
    assert blueprint["slurm"]["qos"][0] == {"name": "normal"}
    blueprint["slurm"]["qos"][0][key] = value
    text = yaml.safe_dump(blueprint, sort_keys=False)
    return validate_document(load.parse_blueprint(text.encode(), "campus.yaml")).estate


def campus() -> Estate:
    return validate_document(load.read_blueprint(BLUEPRINTS / "campus.yaml")).estate


@pytest.mark.parametrize(("parameter", "example"), QOS_EXAMPLES)
def test_a_declared_qos_parameter_set_in_the_blueprint_is_on_the_qos_line(
    parameter: QosParameter, example: object
) -> None:
    _, modifies, _ = qos_lines(campus_setting(parameter.key, example))
    assert f" {parameter.sacctmgr}={qos_text(parameter, example)} " in f"{modifies['normal']} "


@pytest.mark.parametrize("parameter", QOS_PARAMETER_IDS)
def test_a_declared_qos_parameter_left_out_is_on_the_qos_line_as_its_default_or_unset_word(
    parameter: QosParameter,
) -> None:
    """The line tells sacctmgr every declared field, so a key taken out of the blueprint
    undoes the value an earlier render set."""
    _, modifies, _ = qos_lines(campus())
    left_out = parameter.unset if parameter.default is None else str(parameter.default)
    assert f" {parameter.sacctmgr}={left_out} " in f"{modifies['normal']} "


@pytest.mark.parametrize(("parameter", "example"), QOS_EXAMPLES)
def test_a_change_of_a_declared_qos_parameter_is_planned_as_its_sacctmgr_line(
    tmp_path: Path, parameter: QosParameter, example: object
) -> None:
    before = campus()
    path = BLUEPRINTS / "campus.yaml"
    write_tree(with_manifest(render(before), path.read_bytes(), before.name), tmp_path)
    after = campus_setting(parameter.key, example)
    steps = {s.id: s for s in plan(after, render(after), tmp_path).steps()}
    (command,) = steps["sacctmgr-qos"].commands
    assert command.startswith("sacctmgr -i modify qos where name=normal set ")
    assert f" {parameter.sacctmgr}={qos_text(parameter, example)} " in f"{command} "
