"""``validate --format sarif``: findings as SARIF 2.1.0, so code hosts annotate the blueprint.

GitHub code scanning (and other SARIF readers) show each result inline at its file, line and
column. A result's ``ruleId`` says which kind of problem it is, so a team can filter or triage
by kind: ``load/<kind>`` for what the YAML reader refuses, ``schema/<rule>`` for the shape
(``schema/required``, ``schema/unknown-key``, ``schema/regex``, ...), and ``check/<name>`` for
the semantic check that produced it (``check/host_in_one_pool``, ...).

The findings themselves come from the one validation path (:mod:`estategen.pipeline`); this
module only attributes each to its kind by re-running the stage that produced it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from estategen import __version__
from estategen.errors import Finding, clip_path, key_path, place

SCHEMA_URI = "https://json-schema.org/schemas/sarif-schema-2.1.0.json"
FALLBACK_RULE = "finding"

# What each schema rule means, for the rule's short description.
_SCHEMA_RULES = {
    "required": "a required key is missing",
    "unknown-key": "a key the blueprint does not know",
    "type": "a value of the wrong type",
    "allowed": "a value outside the allowed choices",
    "regex": "a value that does not match its pattern",
    "min": "a number below its minimum",
    "max": "a number above its maximum",
    "minlength": "a list with too few items",
    "maxlength": "a list with too many items",
    "empty": "an empty value where one is needed",
    "nullable": "a key without a value",
    "secret": "a plaintext value where a secret reference belongs",
    "hostlists": "a hostlist expression that is malformed or too large",
    "finite": "a number that is not finite",
    "slurm_option_value": "a slurm.conf passthrough value that is not one safe word",
}

# Load findings are recognised by their message (the reader refuses before any structure).
_LOAD_KINDS = [
    ("file-size", re.compile(r"bytes, above the limit")),
    ("encoding", re.compile(r"UTF-8|NUL character|encoding", re.I)),
    ("yaml-syntax", re.compile(r"^YAML syntax")),
    ("nesting", re.compile(r"nested deeper")),
    ("empty", re.compile(r"blueprint is empty")),
    ("duplicate-key", re.compile(r"duplicate key", re.I)),
    ("alias", re.compile(r"alias|anchor|merge keys", re.I)),
    ("size", re.compile(r"^holds more than [0-9]+ values|^[0-9]+ [a-z ]+, above the limit of")),
    ("tag", re.compile(r"tag", re.I)),
    ("top-level", re.compile(r"top level must be")),
    ("key-type", re.compile(r"key", re.I)),
]


def attribute(findings: Sequence[Finding], data: Any, file: str, positions: Any) -> list[str]:
    """The rule id of each finding, in order; ``finding`` where no stage claims it.

    ``data`` is the loaded document, or None when the reader refused the file.
    """
    if data is None:
        return [_load_rule(f) for f in findings]
    claimed = {**_schema_rules(data), **_check_rules(data, file, positions)}
    return [claimed.get((f.path, f.message), FALLBACK_RULE) for f in findings]


def _load_rule(finding: Finding) -> str:
    for kind, pattern in _LOAD_KINDS:
        if pattern.search(finding.message):
            return f"load/{kind}"
    return "load/other"


def _schema_rules(data: Any) -> dict[tuple[str, str], str]:
    """(path, message) -> schema/<rule>, from cerberus' own errors for this document."""
    from cerberus import errors as cerberus_errors

    from estategen import schema

    validator = schema._validator()
    if validator.validate(dict(data)):
        return {}
    out = {}
    for error in schema._leaves(validator._errors):
        message = schema._message(error)
        if error.code == cerberus_errors.UNKNOWN_FIELD.code:
            rule = "unknown-key"
        elif error.code == cerberus_errors.CUSTOM.code:
            rule = _custom_rule(error)
        elif message.startswith("must be a secret reference"):
            rule = "secret"
        else:
            rule = str(error.rule)
        out[(key_path(error.document_path), message)] = f"schema/{rule}"
    return out


def _custom_rule(error: Any) -> str:
    """The name of the `check_with` rule that wrote a custom error.

    Cerberus records the schema path of the mapping (or of the `valuesrules`) the value sits
    in, not of the rule: look the rule up under the value's key there.
    """
    from estategen import schema

    node = schema._rule_at(tuple(error.schema_path))
    key = error.document_path[-1] if error.document_path else None
    for candidate in (node.get(key) if isinstance(node, dict) else None, node):
        if isinstance(candidate, dict) and isinstance(candidate.get("check_with"), str):
            return str(candidate["check_with"])
    return "custom"


def _check_rules(data: Any, file: str, positions: Any) -> dict[tuple[str, str], str]:
    """(path, message) -> check/<name>, by running each semantic check on its own."""
    from estategen import schema
    from estategen.checks import CHECKS, host_budget
    from estategen.model import build
    from estategen.pipeline import hosts_before_expansion

    normalised, problems = schema.normalise(data)
    if problems:
        return {}
    budget = host_budget(
        hosts_before_expansion(normalised)
    )  # refused before the model expands any hostlist
    if budget:
        return {(f.path, f.message): "check/hosts_within_bounds" for f in budget}
    estate = build(normalised)
    out: dict[tuple[str, str], str] = {}
    for check in CHECKS:
        for finding in place(check(estate), file, positions):
            out.setdefault((finding.path, finding.message), f"check/{check.__name__}")
    return out


def _rule_description(rule: str) -> str:
    kind, _, name = rule.partition("/")
    if kind == "schema":
        return _SCHEMA_RULES.get(name, f"the blueprint's shape ({name})")
    if kind == "check":
        from estategen.checks import CHECKS

        check = next((c for c in CHECKS if c.__name__ == name), None)
        doc = (check.__doc__ or "").strip().split("\n")[0] if check else ""
        return doc or f"semantic check {name.replace('_', ' ')}"
    if kind == "load":
        return f"the YAML reader refuses the file ({name.replace('-', ' ')})"
    return "a problem estategen found"


def artifact_uri(file: str) -> str:
    """A path relative to the working folder (as code hosts want), else a file: URI."""
    path = Path(file)
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_uri()


def sarif(findings: Sequence[Finding], rules: Sequence[str]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of estategen: its rules and one result per finding."""
    rule_ids = sorted(set(rules))
    index = {rule: i for i, rule in enumerate(rule_ids)}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "estategen",
                        "version": __version__,
                        "rules": [
                            {
                                "id": rule,
                                "name": _camel(rule),
                                "shortDescription": {"text": _rule_description(rule)},
                                "defaultConfiguration": {"level": "error"},
                            }
                            for rule in rule_ids
                        ],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [
                    _result(f, rule, index[rule]) for f, rule in zip(findings, rules, strict=True)
                ],
            }
        ],
    }


def _camel(rule: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[/_-]", rule))


def _result(finding: Finding, rule: str, rule_index: int) -> dict[str, Any]:
    path = clip_path(finding.path)
    text = f"{path}: {finding.message}" if path else finding.message
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(finding.file)},
            "region": {"startLine": max(finding.line, 1), "startColumn": max(finding.column, 1)},
        }
    }
    if finding.path:
        location["logicalLocations"] = [{"fullyQualifiedName": path, "kind": "member"}]
    return {
        "ruleId": rule,
        "ruleIndex": rule_index,
        "level": finding.level,
        "message": {"text": text},
        "locations": [location],
    }


def validate_sarif(path: str) -> tuple[dict[str, Any], bool]:
    """Validate a blueprint file; (SARIF log, valid). Usage errors propagate."""
    from estategen import load
    from estategen.errors import BlueprintInvalid
    from estategen.pipeline import validate_document

    try:
        document = load.read_blueprint(path)
    except BlueprintInvalid as err:
        return sarif(err.findings, attribute(err.findings, None, "", {})), False
    try:
        findings: Iterable[Finding] = validate_document(document).findings
        valid = True
    except BlueprintInvalid as err:
        findings, valid = err.findings, False
    found = list(findings)
    rules = attribute(found, document.data, document.file, document.positions)
    return sarif(found, rules), valid
