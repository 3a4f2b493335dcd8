"""The CLI contract: exit codes, output formats, and no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import BLUEPRINTS, run_cli


def test_validate_valid_blueprint_exits_zero_with_a_summary(lab: Path) -> None:
    result = run_cli("validate", lab)
    assert result.returncode == 0
    assert "valid estate 'lab'" in result.stdout


def test_validate_json_of_a_valid_blueprint(lab: Path) -> None:
    result = run_cli("validate", lab, "--format", "json")
    report = json.loads(result.stdout)
    assert report["valid"] is True
    assert [f["rule"] for f in report["findings"]] == [
        "check/pool-without-storage",
        "check/pool-without-observability",
    ]


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


def test_schema_prints_the_schema_the_validator_is_built_from() -> None:
    """`estategen schema` prints the shipped data/schema.json without importing the
    validator; it must be what estategen.schema builds now (regenerate it with
    `python -m estategen.schema` after changing the schema or its docs)."""
    from estategen.schema.json_schema import SHIPPED_SCHEMA, json_schema_text

    generated = json_schema_text()
    assert SHIPPED_SCHEMA.read_text(encoding="utf-8") == generated, (
        "data/schema.json is stale: run `python -m estategen.schema`"
    )
    assert run_cli("schema").stdout == generated


def test_schema_rejects_an_unknown_key() -> None:
    schema = json.loads(run_cli("schema").stdout)
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors({"estate": "x", "node_pools": [], "colour": 1}))
    assert any("colour" in e.message for e in errors)


@pytest.mark.parametrize("command", [["--help"], ["schema"]])
def test_help_and_schema_do_not_import_heavy_modules(command: list[str]) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from estategen import cli\n"
        f"try:\n    cli.main({command!r})\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('cerberus', 'jinja2', 'yaml', 'ansible', 'pulumi', "
        "'kubernetes_validate', 'grafana_foundation_sdk', 'estategen.model', "
        "'estategen.schema', 'estategen.errors') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "HEAVY="


# --- findings: rule ids, the line they point at, --fail-on and suppression --------------------

SPARE_POOL = (
    "  - name: spare\n    scheduler: slurm\n    hosts: spare-01\n"
    "    cpu: {sockets: 1, cores_per_socket: 8}\n    memory_gb: 64\n"
)
LAB_KNOWN = "check/pool-without-storage, check/pool-without-observability"
STRANDED = "check/stranded-capacity"


def with_a_warning(tmp_path: Path, suppress: str = "") -> Path:
    """lab.yaml (its own two warnings suppressed) with a Slurm pool in no partition: one
    warning, check/stranded-capacity; ``suppress`` adds rule ids to the blueprint's list."""
    text = (BLUEPRINTS / "lab.yaml").read_text()
    path = tmp_path / ("suppressing.yaml" if suppress else "warned.yaml")
    rules = ", ".join(r for r in (LAB_KNOWN, suppress) if r)
    spare = text.replace("  - name: l4-serve\n", SPARE_POOL + "  - name: l4-serve\n")
    path.write_text(spare + f"suppress: [{rules}]\n")
    return path


def test_a_finding_shows_its_rule_the_blueprint_line_and_a_caret_under_the_column(
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text("estate: x\nnode_pools:\n  - name: a\n    scheduler: slurmm\n")
    lines = run_cli("validate", blueprint).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "scheduler: 'slurmm'" in line)
    assert lines[at].endswith("did you mean 'slurm'? [schema/allowed]")
    assert lines[at + 1] == "     4 |     scheduler: slurmm"
    assert lines[at + 2] == "       |     ^"
    assert lines[at + 2].index("^") == lines[at + 1].index("scheduler")


def test_a_caret_stays_under_its_column_past_a_tab_and_in_a_long_line(tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text("estate: x\ndescription: '" + "y" * 300 + "\t'\nnode_pools: 7\n")
    lines = run_cli("validate", blueprint).stdout.splitlines()
    carets = [i for i, line in enumerate(lines) if line.endswith("^")]
    assert carets
    for i in carets:
        assert len(lines[i - 1]) <= 200 and "\t" not in lines[i - 1]


def test_validate_prints_warnings_and_fail_on_warning_exits_one(tmp_path: Path) -> None:
    blueprint = with_a_warning(tmp_path)
    passed = run_cli("validate", blueprint)
    assert passed.returncode == 0
    assert "no partition draws on pool spare: its 1 nodes cannot run jobs" in passed.stdout
    assert f"[{STRANDED}]" in passed.stdout
    assert "0 error(s), 1 warning(s)" in passed.stdout
    gated = run_cli("validate", blueprint, "--fail-on", "warning")
    assert gated.returncode == 1
    assert "--fail-on warning" in gated.stdout
    as_json = run_cli("validate", blueprint, "--fail-on", "warning", "--format", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["valid"] is False


def test_render_with_fail_on_warning_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("render", with_a_warning(tmp_path), "-o", out, "--fail-on", "warning")
    assert result.returncode == 1
    assert "--fail-on warning" in result.stderr
    assert not out.exists()


def test_a_suppressed_rule_is_listed_as_suppressed_and_no_longer_gates(tmp_path: Path) -> None:
    for args, blueprint in [
        (["--suppress", STRANDED], with_a_warning(tmp_path)),
        ([], with_a_warning(tmp_path, STRANDED)),
    ]:
        result = run_cli("validate", blueprint, "--fail-on", "warning", *args)
        assert result.returncode == 0, result.stdout
        assert f"suppressed: 1 finding(s) of {STRANDED}" in result.stdout
        assert "no partition draws on pool spare" not in result.stdout
        as_json = json.loads(run_cli("validate", blueprint, "--format", "json", *args).stdout)
        assert as_json["findings"] == []
        assert STRANDED in [f["rule"] for f in as_json["suppressed"]]


def test_report_leaves_out_what_validate_suppresses(tmp_path: Path) -> None:
    shown = run_cli("report", with_a_warning(tmp_path)).stdout
    assert "no partition draws on pool spare" in shown
    hidden = run_cli("report", with_a_warning(tmp_path), "--suppress", STRANDED).stdout
    assert "no partition draws on pool spare" not in hidden


def test_suppressing_an_unknown_rule_is_a_usage_error_with_a_suggestion(tmp_path: Path) -> None:
    result = run_cli("validate", with_a_warning(tmp_path), "--suppress", "check/stranded-capacit")
    assert result.returncode == 2
    assert f"did you mean '{STRANDED}'?" in result.stderr


HOST_IN_ONE_POOL = "check/host-in-one-pool"  # raises errors only
NO_ERROR_SUPPRESSED = (
    f"'{HOST_IN_ONE_POOL}' raises errors only, and errors cannot be suppressed; fix what it "
    "reports instead"
)


def test_suppressing_an_error_level_rule_on_the_command_line_is_a_usage_error(
    tmp_path: Path,
) -> None:
    blueprint = with_a_warning(tmp_path)
    out = tmp_path / "out"
    for command in (
        ["validate"],
        ["validate", "--format", "json"],
        ["validate", "--format", "sarif"],
        ["render", "-o", str(out)],
        ["render", "-o", str(out), "--check"],
        ["plan", "-o", str(out)],
        ["report"],
    ):
        result = run_cli(command[0], blueprint, *command[1:], "--suppress", HOST_IN_ONE_POOL)
        assert result.returncode == 2, command
        assert result.stderr.splitlines()[-1] == (
            f"estategen: --suppress {HOST_IN_ONE_POOL}: {NO_ERROR_SUPPRESSED}"
        ), command
    assert not out.exists()


def test_a_blueprint_suppressing_an_error_level_rule_gets_an_error_at_that_entry(
    tmp_path: Path,
) -> None:
    blueprint = with_a_warning(tmp_path, HOST_IN_ONE_POOL)
    entry = blueprint.read_text().splitlines().index(f"suppress: [{LAB_KNOWN}, {HOST_IN_ONE_POOL}]")
    result = run_cli("validate", blueprint, "--format", "json")
    assert result.returncode == 1
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["level"] == "error"]
    assert finding["path"] == "suppress[2]"
    assert finding["line"] == entry + 1
    assert finding["message"] == NO_ERROR_SUPPRESSED
    assert finding["rule"] == "check/suppressed-rules-exist"
    assert run_cli("render", blueprint, "-o", tmp_path / "out").returncode == 1
    assert not (tmp_path / "out").exists()


def test_a_rule_that_also_warns_stays_suppressible_and_schema_rules_never_are(
    tmp_path: Path,
) -> None:
    # check/pool-cluster-resolves refuses a pool in no cluster and warns of a cluster
    # without pools: its warnings can be silenced
    blueprint = with_a_warning(tmp_path)
    text = blueprint.read_text()
    blueprint.write_text(text.replace("  clusters:\n", "  clusters:\n    - name: idle\n", 1))
    mixed = "check/pool-cluster-resolves"
    result = run_cli("validate", blueprint, "--fail-on", "warning", "--suppress", STRANDED)
    assert result.returncode == 1 and f"[{mixed}]" in result.stdout
    result = run_cli(
        "validate", blueprint, "--fail-on", "warning", "--suppress", STRANDED, "--suppress", mixed
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"suppressed: 1 finding(s) of {mixed}" in result.stdout
    for rule in ("schema/required", "load/duplicate-key"):
        refused = run_cli("validate", with_a_warning(tmp_path), "--suppress", rule)
        assert refused.returncode == 2
        assert "errors cannot be suppressed" in refused.stderr and rule in refused.stderr


def test_sarif_carries_the_rule_ids_json_carries_and_marks_suppressions(tmp_path: Path) -> None:
    blueprint = with_a_warning(tmp_path)
    as_json = json.loads(run_cli("validate", blueprint, "--format", "json").stdout)
    sarif = json.loads(run_cli("validate", blueprint, "--format", "sarif").stdout)
    active = [r for r in sarif["runs"][0]["results"] if "suppressions" not in r]
    assert [r["ruleId"] for r in active] == [f["rule"] for f in as_json["findings"]]
    assert [r["ruleId"] for r in active] == [STRANDED]
    for args, source, kind in [
        (["--suppress", STRANDED], blueprint, "external"),
        ([], with_a_warning(tmp_path, STRANDED), "inSource"),
    ]:
        log = json.loads(run_cli("validate", source, "--format", "sarif", *args).stdout)
        (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == STRANDED]
        assert result["suppressions"] == [{"kind": kind}]


@pytest.mark.parametrize(
    "args",
    [
        ["schema"],
        ["validate", str(BLUEPRINTS / "frontier.yaml"), "--format", "json"],
        ["import", str(Path(__file__).parent / "realworld/openhpc/slurm.conf"), "-o", "-"],
    ],
    ids=["schema", "validate", "import"],
)
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    args: list[str], tmp_path: Path
) -> None:
    """``estategen ... | head`` closes the pipe before the output is out: the command stops
    without a message and with the status a shell reports for SIGPIPE (141), not as an
    internal error."""
    args = [str(tmp_path / "imported.yaml") if a == "-" else a for a in args]
    process = subprocess.Popen(
        [sys.executable, "-m", "estategen", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert "internal error" not in stderr and "Traceback" not in stderr
