"""``validate --format sarif``: findings as SARIF 2.1.0, so code hosts annotate the blueprint.

GitHub code scanning (and other SARIF readers) show each result inline at its file, line and
column. A result's ``ruleId`` says which kind of problem it is, so a team can filter or triage
by kind: ``load/<kind>`` for what the YAML reader refuses, ``schema/<rule>`` for the shape
(``schema/required``, ``schema/unknown-key``, ``schema/regex``, ...), and ``check/<name>`` for
the semantic check that produced it (``check/host-in-one-pool``, ...).

The findings come from the one validation path (:mod:`estategen.pipeline`), each with the
rule id of the stage that raised it; this module only formats them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from estategen import __version__
from estategen.errors import Finding, clip_path

# the official schema's own id (OASIS SARIF TC, errata 01): tests/test_sarif.py validates
# against that file
SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
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
# SARIF's levels; a note is SARIF's name for an informational result
_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _rule_description(rule: str) -> str:
    kind, _, name = rule.partition("/")
    if kind == "schema":
        return _SCHEMA_RULES.get(name, f"the blueprint's shape ({name})")
    if kind == "check":
        from estategen.capacity import WARNING_KINDS
        from estategen.checks.core import CHECKS, rule_id

        if name in WARNING_KINDS:
            return WARNING_KINDS[name]

        check = next((c for c in CHECKS if rule_id(c) == rule), None)
        doc = (check.__doc__ or "").strip().split("\n")[0] if check else ""
        return doc or f"semantic check {name.replace('-', ' ')}"
    if kind == "load":
        return f"the YAML reader refuses the file ({name.replace('-', ' ')})"
    return "a problem estategen found"


def artifact_uri(file: str) -> str:
    """A path relative to the working folder (as code hosts want), else a file: URI; either
    percent-encoded, as a URI reference must be (a space, a colon in the first segment)."""
    path = Path(file)
    if not path.is_absolute():
        return quote(path.as_posix())
    try:
        return quote(path.relative_to(Path.cwd()).as_posix())
    except ValueError:
        return path.as_uri()


def sarif(
    findings: Sequence[Finding],
    suppressed: Sequence[Finding] = (),
    in_source: Iterable[str] = (),
) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of estategen: its rules and one result per finding.

    Suppressed findings are results with a suppression: ``inSource`` for a rule the
    blueprint's ``suppress:`` lists, ``external`` for one given with ``--suppress``.
    """
    everything = [*findings, *suppressed]
    rule_ids = sorted({f.rule or FALLBACK_RULE for f in everything})
    index = {rule: i for i, rule in enumerate(rule_ids)}
    listed = set(in_source)
    results = [_result(f, index) for f in findings]
    for finding in suppressed:
        kind = "inSource" if finding.rule in listed else "external"
        results.append({**_result(finding, index), "suppressions": [{"kind": kind}]})
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
                            }
                            for rule in rule_ids
                        ],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _camel(rule: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[/_-]", rule))


def _result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    rule = finding.rule or FALLBACK_RULE
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
        "ruleIndex": index[rule],
        "level": _SARIF_LEVELS[finding.level],
        "message": {"text": text},
        "locations": [location],
    }


def validate_sarif(path: str, suppress: Sequence[str] = ()) -> tuple[dict[str, Any], list[Finding]]:
    """Validate a blueprint file: the SARIF log and the findings not suppressed (an invalid
    blueprint has an error among them). Usage errors propagate."""
    from estategen import load
    from estategen.errors import BlueprintInvalid
    from estategen.pipeline import validate_document

    try:
        document = load.read_blueprint(path)
        result = validate_document(document, suppress)
    except BlueprintInvalid as err:
        return sarif(err.findings, err.suppressed, err.in_source), err.findings
    return (
        sarif(result.findings, result.suppressed, result.estate.suppress),
        result.findings,
    )
