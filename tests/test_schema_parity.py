"""The editor schema (`estategen schema`) agrees with `estategen validate` and documents every key.

Editors check blueprints with the JSON Schema while people type; validate is the judge. The
schema must never refuse what validate accepts, must refuse what validate refuses for its
shape (except the value checks JSON Schema cannot express), and must describe every key with
a description and a valid example.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from estategen import load
from estategen.errors import BlueprintInvalid
from estategen.pipeline import validate_document
from estategen.schema.json_schema import json_schema, key_documentation
from estategen.schema.validation import normalise

from conftest import BLUEPRINTS

CORPUS = Path(__file__).parent / "fixtures" / "invalid"
DOCS = Path(__file__).parent.parent / "generator" / "estategen" / "data" / "schema-docs.yaml"
CATALOG = DOCS.parent / "gpus.yaml"
# value checks (cerberus `check_with`, and the host budget) that JSON Schema cannot express
INEXPRESSIBLE = {
    "schema/hostlists",
    "schema/addresses",
    "schema/finite",
    "schema/slurm_option_value",
    "schema/local_datetime",
    "check/hosts-within-bounds",
    "schema/daemon_path",
    "schema/port_or_range",
    "schema/billing_weight",
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json_schema()


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def keys(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(schema path, subschema, is a named key) for every node under properties/items/values."""
    for name, sub in node.get("properties", {}).items():
        child = f"{path}.{name}" if path else name
        yield child, sub, True
        yield from keys(sub, child)
    if isinstance(node.get("items"), dict):
        yield f"{path}[]", node["items"], False
        yield from keys(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield f"{path}.*", node["additionalProperties"], False
        yield from keys(node["additionalProperties"], f"{path}.*")


def test_every_key_has_a_description_and_examples(schema: dict[str, Any]) -> None:
    missing = [
        path
        for path, sub, named in keys(schema)
        if named and not (sub.get("description") and sub.get("examples"))
    ]
    assert missing == []


def test_docs_name_only_keys_that_exist(schema: dict[str, Any]) -> None:
    documented = set(key_documentation())
    assert documented - {path for path, _, _ in keys(schema)} == set()


def test_every_example_is_valid_where_it_is_documented(schema: dict[str, Any]) -> None:
    for path, sub, _ in keys(schema):
        for example in sub.get("examples", []):
            errors = list(jsonschema.Draft202012Validator(sub).iter_errors(example))
            assert not errors, f"{path}: example {example!r}: {errors[0].message}"


def test_descriptions_keep_the_format_hint_of_patterns(schema: dict[str, Any]) -> None:
    name = schema["properties"]["node_pools"]["items"]["properties"]["name"]
    assert name["description"].startswith("The pool's name")
    assert "Format: name: lowercase letter first" in name["description"]


def test_schema_accepts_every_example_blueprint(
    validator: jsonschema.Draft202012Validator,
) -> None:
    for path in sorted(BLUEPRINTS.glob("*.yaml")):
        errors = list(validator.iter_errors(load.read_blueprint(path).data))
        assert not errors, f"{path.name}: {errors[0].message}"


def test_the_builtin_catalog_is_written_as_users_declare_gpu_models(
    validator: jsonschema.Draft202012Validator,
) -> None:
    """gpus.yaml and `gpu_models[]` share one shape, so the schema checks the catalog's data."""
    catalog = yaml.safe_load(CATALOG.read_text())
    document = {
        "estate": "catalog",
        "node_pools": [{"name": "p", "scheduler": "slurm", "hosts": "n1"}],
        "gpu_models": [{"name": name, **spec} for name, spec in catalog.items()],
    }
    _, problems = normalise(document)
    assert [(p.path, p.message) for p in problems] == []
    errors = list(validator.iter_errors(document))
    assert not errors, errors[0].message


def _findings(path: Path) -> tuple[load.Document, list[Any]]:
    document = load.read_blueprint(path)
    try:
        return document, validate_document(document).findings
    except BlueprintInvalid as err:
        return document, err.findings


def _key_path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@pytest.mark.parametrize("fixture", sorted(CORPUS.glob("schema-*.yaml")), ids=lambda p: p.stem)
def test_schema_refuses_what_validate_refuses_for_its_shape(
    fixture: Path, validator: jsonschema.Draft202012Validator
) -> None:
    document, findings = _findings(fixture)
    errors = list(validator.iter_errors(document.data))
    rules = {f.rule for f in findings}
    if rules <= INEXPRESSIBLE:
        pytest.skip(f"only {', '.join(sorted(rules))}: a value check JSON Schema cannot express")
    assert errors, f"{fixture.name}: the editor schema accepts what validate refuses"
    # and it points at the same key (or the mapping that holds it)
    places = {_key_path(e.absolute_path) for e in errors}
    for finding in findings:
        assert any(
            finding.path == place
            or finding.path.startswith((f"{place}.", f"{place}["))
            or place == ""
            for place in places
        ), (finding.path, places)


@pytest.mark.parametrize("fixture", sorted(CORPUS.glob("check-*.yaml")), ids=lambda p: p.stem)
def test_schema_never_refuses_a_well_shaped_blueprint(
    fixture: Path, validator: jsonschema.Draft202012Validator
) -> None:
    """Semantic problems are validate's: an editor must not flag a shape that is fine."""
    errors = list(validator.iter_errors(load.read_blueprint(fixture).data))
    assert not errors, f"{fixture.name}: {errors[0].message}"
