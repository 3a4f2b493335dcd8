"""The blueprint reference is generated from the schema, and every key says what a change to
it needs on a running estate (the schema is the one declaration of a key)."""

from __future__ import annotations

from pathlib import Path

import yaml

from estategen import declarations, reference
from estategen.schema.json_schema import json_schema, key_documentation
from estategen.schema.patterns import CHANGE_KEYWORD, CHANGE_POLICIES

from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "generator" / "estategen" / "data" / "schema-docs.yaml"
REFERENCE = ROOT / "docs" / "blueprint-reference.md"


def test_every_documented_key_names_what_a_change_to_it_needs() -> None:
    docs = key_documentation()
    missing = sorted(key for key, doc in docs.items() if not doc.get("change"))
    assert missing == [], "keys without `change:` (data/schema-docs.yaml or declarations)"
    unknown = {c for doc in docs.values() for c in doc["change"]} - set(CHANGE_POLICIES)
    assert unknown == set()


def test_no_key_is_both_declared_and_documented_in_the_docs_file() -> None:
    """A declared key's documentation comes from its declaration alone."""
    documented = set(yaml.safe_load(DOCS.read_text()))
    assert documented & set(declarations.documentation()) == set()


def test_every_change_policy_is_one_some_key_has() -> None:
    used = {c for _, node in reference.rows(json_schema()) for c in node[CHANGE_KEYWORD]}
    assert used == set(CHANGE_POLICIES)


def test_every_key_of_the_schema_is_in_the_reference() -> None:
    """Every key of the schema is documented (tests/test_schema_parity.py), so every key has
    a row: the number of rows is the number of documented keys."""
    docs = key_documentation()
    assert sorted(path for path, _ in reference.rows(json_schema())) == sorted(docs)


def test_the_committed_reference_is_what_the_schema_generates() -> None:
    generated = run_cli("schema", "--format", "markdown").stdout
    assert generated == reference.markdown()
    assert REFERENCE.read_text() == generated, (
        "docs/blueprint-reference.md is stale: estategen schema --format markdown > "
        "docs/blueprint-reference.md"
    )
