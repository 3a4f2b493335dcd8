"""The blueprint's rules as JSON Schema, with each key's documentation, for editors and
pipelines; the schema the package ships (``data/schema.json``) and the walk of its key paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from estategen.declarations import documentation as declared_documentation
from estategen.schema.patterns import CHANGE_KEYWORD, PATTERN_HINTS
from estategen.schema.rules import BLUEPRINT


def json_schema() -> dict[str, Any]:
    """The blueprint schema as JSON Schema draft 2020-12, for editors and pipelines."""
    root = _with_docs(_to_json({"type": "dict", "schema": BLUEPRINT}))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:estategen:blueprint:v1",
        "title": "estategen blueprint v1",
        **root,
    }


def json_schema_text() -> str:
    """What ``estategen schema`` prints: :func:`json_schema` as sorted, indented JSON.

    The package ships this text as ``data/schema.json`` so that the command prints it
    without importing the validator (``python -m estategen.schema`` writes it;
    tests/test_cli.py fails when the shipped file is not what this returns)."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


SHIPPED_SCHEMA = Path(__file__).parent.parent / "data" / "schema.json"


def _with_docs(root: dict[str, Any]) -> dict[str, Any]:
    """Merge data/schema-docs.yaml (description and examples per key path) into the schema.

    Editors show these on hover and completion; the format hint derived from a key's pattern
    stays, after the description.
    """
    docs = key_documentation()
    for path, node in key_nodes(root):
        doc = docs.get(path)
        if doc:
            hint = node.get("description", "")
            extra = (
                f" Format: {hint}."
                if hint and hint.lower() not in doc["description"].lower()
                else ""
            )
            node["description"] = doc["description"] + extra
            node["examples"] = doc["examples"]
            node[CHANGE_KEYWORD] = doc.get("change", [])
    return root


def key_documentation() -> dict[str, Any]:
    """Each key path's description, examples and change policies: data/schema-docs.yaml, and
    the keys :mod:`estategen.declarations` declares."""
    from importlib import resources

    import yaml

    docs: dict[str, Any] = yaml.safe_load(
        resources.files("estategen").joinpath("data/schema-docs.yaml").read_text("utf-8")
    )
    return docs | declared_documentation()


def key_nodes(root: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key path, JSON Schema node) of every blueprint key below ``root``, parents first:
    ``slurm.partitions[].max_time``, a list's items as ``[]``, a free mapping's values as
    ``.*``. The one walk of the schema's key paths (reference, plan, docs)."""

    def walk(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any]]:
        if path:
            yield path, node
        for name, sub in (node.get("properties") or {}).items():
            yield from walk(sub, f"{path}.{name}" if path else name)
        if isinstance(node.get("items"), Mapping):
            yield from walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), Mapping):
            yield from walk(node["additionalProperties"], f"{path}.*")

    yield from walk(root, "")


_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "dict": "object",
    "list": "array",
}


def _to_json(rule: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = rule.get("type")
    if isinstance(kind, list):
        out["type"] = [_JSON_TYPES[k] for k in kind]
    elif kind:
        out["type"] = _JSON_TYPES[kind]
    meta = rule.get("meta", {})
    if "description" in meta:
        out["description"] = meta["description"]
    if "regex" in rule:
        out["pattern"] = f"^(?:{rule['regex']})$"
        out.setdefault("description", PATTERN_HINTS.get(rule["regex"], ""))
        if not out["description"]:
            del out["description"]
    if "allowed" in rule:
        out["enum"] = list(rule["allowed"])
    if "min" in rule:
        out["minimum"] = rule["min"]
    if "max" in rule:
        out["maximum"] = rule["max"]
    if "minlength" in rule:
        out["minItems"] = rule["minlength"]
    if "maxlength" in rule:
        out["maxItems"] = rule["maxlength"]
    if "default" in rule:
        out["default"] = rule["default"]
    if rule.get("check_with") == "hostlists":
        out["description"] = "Slurm hostlist expression like 'gpu-[001-032]', or a list of them"
        out["type"] = ["string", "array"]
        out["items"] = {"type": "string"}
    if rule.get("check_with") == "addresses":
        out["description"] = "addresses like '10.1.0.[1-4]' (IPv4, IPv6 or DNS names), or a list"
        out["type"] = ["string", "array"]
        out["items"] = {"type": "string"}
    if kind == "dict" and "schema" in rule:
        fields = rule["schema"]
        out["properties"] = {name: _to_json(sub) for name, sub in fields.items()}
        required = sorted(name for name, sub in fields.items() if sub.get("required"))
        if required:
            out["required"] = required
        out["additionalProperties"] = False
    if kind == "dict" and "keysrules" in rule:
        out["propertyNames"] = _to_json(rule["keysrules"])
        out["additionalProperties"] = _to_json(rule["valuesrules"])
    if kind == "list" and "schema" in rule:
        out["items"] = _to_json(rule["schema"])
    return out
