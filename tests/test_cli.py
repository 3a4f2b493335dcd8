"""The CLI contract: exit codes, output formats, and no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from conftest import BLUEPRINTS, run_cli


def test_validate_valid_blueprint_exits_zero_with_a_summary(lab: Path) -> None:
    result = run_cli("validate", lab)
    assert result.returncode == 0
    assert "valid estate 'lab'" in result.stdout


def test_validate_json_of_a_valid_blueprint(lab: Path) -> None:
    result = run_cli("validate", lab, "--format", "json")
    assert json.loads(result.stdout) == {"valid": True, "findings": []}


def test_validate_prints_file_line_column_and_key_path(tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text("estate: x\nnode_pools:\n  - name: a\n    scheduler: batch\n")
    result = run_cli("validate", blueprint)
    assert result.returncode == 1
    assert f"{blueprint}:4:5: node_pools[0].scheduler: 'batch' is not allowed" in result.stdout


def test_validate_reports_all_findings_sorted_by_line(tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(
        "estate: X\nnode_pools:\n  - name: a\n    scheduler: batch\n    hostz: n1\n"
    )
    lines = [
        line
        for line in run_cli("validate", blueprint).stdout.splitlines()
        if line.startswith(str(blueprint))
    ]
    assert [line.split(":")[1] for line in lines] == ["1", "4", "5"]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path / "nope.yaml")
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_directory_as_blueprint_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path)
    assert result.returncode == 2
    assert "is a directory" in result.stderr


def test_unknown_command_is_a_usage_error() -> None:
    assert run_cli("frobnicate").returncode == 2


def test_render_of_invalid_blueprint_exits_one_and_writes_nothing(tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text("estate: x\n")
    result = run_cli("render", blueprint, "-o", tmp_path / "out")
    assert result.returncode == 1
    assert "node_pools: is required" in result.stderr
    assert not (tmp_path / "out").exists()


def test_schema_is_json_schema_that_accepts_every_example() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in sorted(BLUEPRINTS.glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_schema_rejects_an_unknown_key() -> None:
    schema = json.loads(run_cli("schema").stdout)
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors({"estate": "x", "node_pools": [], "colour": 1}))
    assert any("colour" in e.message for e in errors)


def test_help_does_not_import_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from estategen import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('cerberus', 'jinja2', 'yaml', 'ansible', 'pulumi', "
        "'kubernetes_validate', 'grafana_foundation_sdk') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "HEAVY="
