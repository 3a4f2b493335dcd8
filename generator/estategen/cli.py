"""The ``estategen`` command: a thin shell over the pipeline that catches one error root.

Heavy modules are imported inside the commands so that ``estategen --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from estategen import __version__
from estategen.errors import BlueprintInvalid, EstategenError, Finding, UsageError, findings_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="estategen",
        description="Validate an estate blueprint and render Slurm, Ansible and Pulumi output.",
    )
    parser.add_argument("--version", action="version", version=f"estategen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check a blueprint and print every finding")
    validate.add_argument("blueprint", metavar="FILE")
    validate.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        default="text",
        help="sarif: SARIF 2.1.0 for code scanning (findings inline on the blueprint)",
    )

    render = commands.add_parser("render", help="validate, then write the output atomically")
    render.add_argument("blueprint", metavar="FILE")
    render.add_argument(
        "-o", "--output", metavar="DIR", help="output folder (default: build/<estate>)"
    )
    render.add_argument(
        "--check",
        action="store_true",
        help="write nothing; print a diff of what would change and exit 1 on drift",
    )

    report = commands.add_parser(
        "report", help="capacity and ownership report (Markdown, or Markdown and HTML with -o)"
    )
    report.add_argument("blueprint", metavar="FILE")
    report.add_argument(
        "-o", "--output", metavar="DIR", help="write report.md and report.html into DIR"
    )

    plan = commands.add_parser(
        "plan", help="what a render would change in DIR and what each change needs"
    )
    plan.add_argument("blueprint", metavar="FILE")
    plan.add_argument(
        "-o", "--output", metavar="DIR", help="rendered output to compare (default: build/<estate>)"
    )
    plan.add_argument("--format", choices=["text", "json"], default="text")

    commands.add_parser("schema", help="print the blueprint's JSON Schema (draft 2020-12)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "validate":
            return _validate(args.blueprint, args.format)
        if args.command == "render":
            return _render(args.blueprint, args.output, args.check)
        if args.command == "report":
            return _report(args.blueprint, args.output)
        if args.command == "plan":
            return _plan(args.blueprint, args.output, args.format)
        return _schema()
    except BlueprintInvalid as err:
        _print_findings(err.findings, sys.stderr)
        return err.exit_code
    except EstategenError as err:
        print(f"estategen: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # the last line of defence against tracebacks
        print(
            f"estategen: internal error ({type(err).__name__}: {err}). This is a bug in "
            "estategen, not in your blueprint; please report it with the blueprint attached",
            file=sys.stderr,
        )
        return 3


def _print_findings(findings: Sequence[Finding], stream: object) -> None:
    for finding in findings:
        print(finding.format(), file=stream)  # type: ignore[call-overload]
    errors = sum(f.level == "error" for f in findings)
    warnings = len(findings) - errors
    if findings:
        print(f"{errors} error(s), {warnings} warning(s)", file=stream)  # type: ignore[call-overload]


def _print_json_report(valid: bool, findings: Sequence[Finding]) -> None:
    report = {"valid": valid, "findings": json.loads(findings_json(findings))}
    print(json.dumps(report, indent=2, sort_keys=True))


def _validate(path: str, output_format: str) -> int:
    from estategen.pipeline import validate_file

    if output_format == "sarif":
        from estategen.sarif import validate_sarif

        log, valid = validate_sarif(path)
        print(json.dumps(log, indent=2, sort_keys=True))
        return 0 if valid else 1

    try:
        result = validate_file(path)
    except BlueprintInvalid as err:
        if output_format == "json":
            _print_json_report(valid=False, findings=err.findings)
        else:
            _print_findings(err.findings, sys.stdout)
        return 1
    estate = result.estate
    if output_format == "json":
        _print_json_report(valid=True, findings=result.findings)
        return 0
    _print_findings(result.findings, sys.stdout)
    hosts = sum(len(p.hosts) for p in estate.node_pools)
    gpus = sum(p.gpu_count for p in estate.node_pools)
    print(
        f"{path}: valid estate {estate.name!r}: {len(estate.node_pools)} pools, "
        f"{hosts} hosts, {gpus} GPUs"
    )
    return 0


def _render(path: str, output: str | None, check: bool) -> int:
    from estategen.pipeline import validate_file
    from estategen.render import render
    from estategen.write import compare_tree, with_manifest, write_tree

    result = validate_file(path)
    _print_findings(result.findings, sys.stderr)
    estate = result.estate
    files = with_manifest(render(estate), result.document.raw, estate.name)
    target = Path(output) if output else Path("build") / estate.name
    if check:
        drift = compare_tree(files, target)
        if drift.clean:
            print(f"{target}: up to date ({len(files)} files)")
            return 0
        sys.stdout.write(drift.diff)
        print(f"{target}: {len(drift.changed)} file(s) would change", file=sys.stderr)
        return 1
    if write_tree(files, target):
        print(f"{target}: wrote {len(files)} files")
    else:
        print(f"{target}: up to date ({len(files)} files), nothing written")
    return 0


def _report(path: str, output: str | None) -> int:
    from estategen.pipeline import validate_file
    from estategen.report import report_files

    result = validate_file(path)
    _print_findings(result.findings, sys.stderr)
    files = report_files(result.estate)
    if output is None:
        sys.stdout.write(files["report.md"])
        return 0
    target = Path(output)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target}: exists and is not a folder")
    target.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        # a fresh name (O_EXCL): a planted `.report.md.tmp` link cannot redirect the write
        fd, staged = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=target)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(content)
        os.chmod(staged, 0o644)
        os.replace(staged, target / name)
    print(f"{target}: wrote {', '.join(files)}")
    return 0


def _plan(path: str, output: str | None, output_format: str) -> int:
    """Exit 0 without changes, 1 with changes (a CI gate), 2 when there is nothing to plan."""
    from estategen.pipeline import validate_file
    from estategen.plan import plan, text
    from estategen.render import render

    try:
        result = validate_file(path)
    except BlueprintInvalid as err:
        _print_findings(err.findings, sys.stderr)
        print(f"estategen: {path}: invalid blueprint; nothing to plan", file=sys.stderr)
        return 2
    _print_findings(result.findings, sys.stderr)
    estate = result.estate
    target = Path(output) if output else Path("build") / estate.name
    changes = plan(estate, render(estate), target)
    if output_format == "json":
        print(json.dumps(changes.to_json(), indent=2, sort_keys=True))
    else:
        sys.stdout.write(text(changes))
    return 1 if changes.changed else 0


def _schema() -> int:
    from estategen.schema import json_schema

    print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0
