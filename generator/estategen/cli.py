"""The ``estategen`` command: a thin shell over the pipeline that catches one error root.

Modules are imported inside the commands that use them, so that ``estategen --help`` and
``estategen schema`` start about as fast as a bare interpreter.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from estategen import __version__

if TYPE_CHECKING:
    from estategen.errors import Finding
    from estategen.pipeline import Validated


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="estategen",
        description="Validate an estate blueprint and render Slurm, Ansible and Pulumi output.",
    )
    parser.add_argument("--version", action="version", version=f"estategen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # what every command that validates a blueprint takes
    findings = argparse.ArgumentParser(add_help=False)
    findings.add_argument(
        "--suppress",
        action="append",
        default=[],
        metavar="RULE",
        help="silence a check's warnings and notes for this run (its rule id, as shown in "
        "brackets; repeatable); the blueprint's `suppress:` lists the standing ones",
    )
    gate = argparse.ArgumentParser(add_help=False)
    gate.add_argument(
        "--fail-on",
        choices=["error", "warning", "info"],
        default="error",
        help="exit 1 (and write nothing) on a finding at or above this level (default: error)",
    )

    validate = commands.add_parser(
        "validate", parents=[findings, gate], help="check a blueprint and print every finding"
    )
    validate.add_argument("blueprint", metavar="FILE")
    validate.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        default="text",
        help="sarif: SARIF 2.1.0 for code scanning (findings inline on the blueprint)",
    )

    render = commands.add_parser(
        "render", parents=[findings, gate], help="validate, then write the output atomically"
    )
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
        "report",
        parents=[findings],
        help="capacity and ownership report (Markdown, or Markdown and HTML with -o)",
    )
    report.add_argument("blueprint", metavar="FILE")
    report.add_argument(
        "-o", "--output", metavar="DIR", help="write report.md and report.html into DIR"
    )

    plan = commands.add_parser(
        "plan",
        parents=[findings],
        help="what a render would change in DIR and what each change needs",
    )
    plan.add_argument("blueprint", metavar="FILE")
    plan.add_argument(
        "-o", "--output", metavar="DIR", help="rendered output to compare (default: build/<estate>)"
    )
    plan.add_argument("--format", choices=["text", "json"], default="text")
    plan.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="DISRUPTION",
        help="exit 4 when a planned change needs this disruption, to hold it for review: "
        "drain (nodes drained: Slurm, a MIG layout, a Kubernetes pool), restart (a Slurm "
        "daemon), replace (a Kubernetes object or managed pool replaced); repeatable or "
        "comma-separated",
    )

    schema = commands.add_parser(
        "schema", help="print the blueprint's JSON Schema (draft 2020-12), or its reference"
    )
    schema.add_argument(
        "--format",
        choices=["json", "markdown"],
        default="json",
        help="markdown: the reference of every key and what a change to it needs",
    )

    adopt = commands.add_parser(
        "import", help="write a blueprint from a site's slurm.conf (gres.conf, topology.conf)"
    )
    adopt.add_argument("slurm_conf", metavar="SLURM_CONF")
    adopt.add_argument("--gres", metavar="FILE", help="the site's gres.conf")
    adopt.add_argument("--topology", metavar="FILE", help="the site's topology.conf")
    adopt.add_argument("--sacct", metavar="FILE", help="`sacctmgr dump` output: accounts")
    adopt.add_argument("--slurm-version", metavar="X.Y", help="versions.slurm to write")
    adopt.add_argument(
        "--site-root",
        metavar="DIR",
        help="the site's / (an absolute Include is read from under it)",
    )
    adopt.add_argument("-o", "--output", metavar="FILE", required=True, help="blueprint to write")
    return parser


# 128 + SIGPIPE (13), as a shell reports a process that wrote to a closed pipe
SIGPIPE_EXIT = 141


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if argv is None:  # the console script, not a caller inside a longer process
        # A command is one short pass: imports, the YAML nodes, the model and the rendered
        # files hold few reference cycles, yet the cycle collector's passes walked the live
        # objects again and again (benchmarks/README.md has the figures). Garbage is freed by
        # reference counting as usual.
        import gc

        gc.disable()
    try:
        code = _command(args)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        # the reader of the output left (`estategen import ... | head`): stop quietly, with
        # the status a shell gives a command killed by SIGPIPE
        code = SIGPIPE_EXIT
    except Exception as err:
        code = _failed(err)
    if argv is None:
        _end_process(code)
    return code


def _end_process(code: int) -> NoReturn:
    """Leave the console script once its output is out, without the interpreter's teardown.

    Every file a command writes is closed (and synced) before it returns, and the standard
    streams are flushed here; what is left is the model, the YAML nodes and the rendered
    bytes, which teardown would free object by object only for the kernel to reclaim the
    memory at once. mypy leaves the same way.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 120  # what Python exits with when flushing at shutdown fails
    os._exit(code)


def _command(args: argparse.Namespace) -> int:
    if args.command == "validate":
        return _validate(args.blueprint, args.format, args.suppress, args.fail_on)
    if args.command == "render":
        return _render(args.blueprint, args.output, args.check, args.suppress, args.fail_on)
    if args.command == "report":
        return _report(args.blueprint, args.output, args.suppress)
    if args.command == "plan":
        return _plan(args.blueprint, args.output, args.format, args.suppress, args.fail_on)
    if args.command == "import":
        return _import(args)
    return _schema(args.format)


def _failed(err: Exception) -> int:
    """The exit code of a command that raised ``err``, its message printed to stderr."""
    from estategen.errors import BlueprintInvalid, EstategenError, text_report

    if isinstance(err, BlueprintInvalid):
        sys.stderr.write(text_report(err.findings, err.source, err.suppressed))
        return err.exit_code
    if isinstance(err, EstategenError):
        print(f"estategen: {err}", file=sys.stderr)
        return err.exit_code
    # the last line of defence against tracebacks
    print(
        f"estategen: internal error ({type(err).__name__}: {err}). This is a bug in "
        "estategen, not in your blueprint; please report it with the blueprint attached",
        file=sys.stderr,
    )
    return 3


def _print_json_report(
    valid: bool, findings: Sequence[Finding], suppressed: Sequence[Finding] = ()
) -> None:
    import json

    from estategen.errors import findings_json

    report = {
        "valid": valid,
        "findings": json.loads(findings_json(findings)),
        "suppressed": json.loads(findings_json(suppressed)),
    }
    print(json.dumps(report, indent=2, sort_keys=True))


def _validated(path: str, suppress: Sequence[str], fail_on: str = "error") -> Validated:
    """The validated blueprint, its findings printed to stderr; a finding at or above
    ``fail_on`` stops the command as an error does."""
    from estategen.errors import FindingsGate, fails, text_report
    from estategen.pipeline import validate_file

    result = validate_file(path, suppress)
    sys.stderr.write(text_report(result.findings, result.document.raw, result.suppressed))
    if fails(result.findings, fail_on):
        raise FindingsGate(fail_on)
    return result


def _validate(path: str, output_format: str, suppress: Sequence[str], fail_on: str) -> int:
    from estategen.errors import BlueprintInvalid, fails, text_report
    from estategen.pipeline import validate_file

    if output_format == "sarif":
        import json

        from estategen.sarif import validate_sarif

        log, found = validate_sarif(path, suppress)
        print(json.dumps(log, indent=2, sort_keys=True))
        return 1 if fails(found, fail_on) else 0

    try:
        result = validate_file(path, suppress)
    except BlueprintInvalid as err:
        if output_format == "json":
            _print_json_report(False, err.findings, err.suppressed)
        else:
            sys.stdout.write(text_report(err.findings, err.source, err.suppressed))
        return 1
    estate = result.estate
    gated = fails(result.findings, fail_on)
    if output_format == "json":
        _print_json_report(not gated, result.findings, result.suppressed)
        return 1 if gated else 0
    sys.stdout.write(text_report(result.findings, result.document.raw, result.suppressed))
    if gated:
        print(f"{path}: findings at or above {fail_on} level (--fail-on {fail_on})")
        return 1
    hosts = sum(len(p.hosts) for p in estate.node_pools)
    # a hosted Slurm pool's GPUs are those of Kubernetes pools its pods run on: count once
    gpus = sum(p.gpu_count for p in estate.node_pools if not p.hosted)
    print(
        f"{path}: valid estate {estate.name!r}: {len(estate.node_pools)} pools, "
        f"{hosts} hosts, {gpus} GPUs"
    )
    return 0


def _render(
    path: str, output: str | None, check: bool, suppress: Sequence[str], fail_on: str
) -> int:
    from estategen.render import render
    from estategen.write import compare_tree, with_manifest, write_tree

    result = _validated(path, suppress, fail_on)
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


def _report(path: str, output: str | None, suppress: Sequence[str]) -> int:
    from estategen.report.pages import report_files
    from estategen.write import make_folder, write_file

    result = _validated(path, suppress)
    files = report_files(result.estate, frozenset(suppress))
    if output is None:
        sys.stdout.write(files["report.md"])
        return 0
    target = Path(output)
    make_folder(target)
    for name, content in files.items():
        write_file(target / name, content.encode("utf-8"), [path])
    print(f"{target}: wrote {', '.join(files)}")
    return 0


def _plan(
    path: str,
    output: str | None,
    output_format: str,
    suppress: Sequence[str],
    fail_on: Sequence[str] = (),
) -> int:
    """Exit 0 without changes, 1 with changes (a CI gate), 2 when there is nothing to plan,
    4 when a change needs a disruption ``fail_on`` names (it holds the change for review)."""
    import json

    from estategen.errors import BlueprintInvalid, UsageError, did_you_mean, text_report
    from estategen.plan.compare import plan
    from estategen.plan.steps import DISRUPTIONS
    from estategen.plan.text import text
    from estategen.render import render

    gates = [g.strip() for value in fail_on for g in value.split(",") if g.strip()]
    for gate in gates:
        if gate not in DISRUPTIONS:
            raise UsageError(
                f"--fail-on {gate}: not a disruption plan gates on (one of "
                f"{', '.join(DISRUPTIONS)}){did_you_mean(gate, DISRUPTIONS)}"
            )
    try:
        result = _validated(path, suppress)
    except BlueprintInvalid as err:
        sys.stderr.write(text_report(err.findings, err.source, err.suppressed))
        print(f"estategen: {path}: invalid blueprint; nothing to plan", file=sys.stderr)
        return 2
    estate = result.estate
    target = Path(output) if output else Path("build") / estate.name
    changes = plan(estate, render(estate), target)
    found = changes.disruptions()
    fired = [gate for gate in DISRUPTIONS if gate in gates and gate in found]
    if output_format == "json":
        report = changes.to_json()
        report["fail_on"] = [gate for gate in DISRUPTIONS if gate in gates]
        report["failed_on"] = fired
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        sys.stdout.write(text(changes))
    for gate in fired:
        subjects = [f"{c.file} ({c.subject})" for c in found[gate]]
        shown = ", ".join(subjects[:3]) + (
            f" and {len(subjects) - 3} more" if len(subjects) > 3 else ""
        )
        print(f"{target}: held for review (--fail-on {gate}): {shown}", file=sys.stderr)
    if fired:
        return 4
    return 1 if changes.changed else 0


def _import(args: argparse.Namespace) -> int:
    from estategen.errors import UsageError
    from estategen.importer.blueprint import write
    from estategen.importer.outcomes import summary, unfaithful
    from estategen.importer.site import import_site

    if args.site_root is not None and not Path(args.site_root).is_dir():
        raise UsageError(f"--site-root {args.site_root}: not a folder")
    imported = import_site(
        args.slurm_conf,
        args.gres,
        args.topology,
        args.sacct,
        args.slurm_version,
        site_root=args.site_root,
    )
    write(imported, Path(args.output))
    sys.stdout.write(summary(imported))
    if imported.faithful:
        print(f"{args.output}: wrote the blueprint")
        return 0
    print(f"{args.output}: wrote the blueprint, {unfaithful(imported)}")
    return IMPORT_UNFAITHFUL


# `estategen import` wrote the blueprint, and its render is not the site's (docs/commands.md)
IMPORT_UNFAITHFUL = 4


def _schema(output_format: str) -> int:
    if output_format == "markdown":
        from estategen.reference import markdown

        sys.stdout.write(markdown())
        return 0
    # the text schema.json_schema_text() returns, shipped with the package (a test keeps
    # the two equal): printing it needs neither the validator nor the model
    shipped = Path(__file__).parent / "data" / "schema.json"
    try:
        sys.stdout.write(shipped.read_text(encoding="utf-8"))
    except FileNotFoundError:
        from estategen.schema.json_schema import json_schema_text

        sys.stdout.write(json_schema_text())
    return 0
