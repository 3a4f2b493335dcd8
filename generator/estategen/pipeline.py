"""load -> schema -> model -> checks: the one path from a blueprint file to a valid model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from estategen import hostlist, load
from estategen.checks.core import RULES, run_checks
from estategen.checks.names import host_budget
from estategen.errors import BlueprintInvalid, Finding, UsageError, place
from estategen.limits import MAX_FINDINGS
from estategen.model import Estate, build
from estategen.schema.validation import normalise
from estategen.suppression import refusal


@dataclass(frozen=True, slots=True)
class Validated:
    """A valid estate, the findings that did not stop it (warnings and notes), those silenced
    on purpose (the blueprint's ``suppress`` or ``--suppress``), and its source."""

    estate: Estate
    findings: list[Finding]
    document: load.Document
    suppressed: list[Finding] = field(default_factory=list)


def validate_file(path: str | Path, suppress: Iterable[str] = ()) -> Validated:
    """Validate a blueprint file; raises BlueprintInvalid with every finding on errors."""
    return validate_document(load.read_blueprint(path), suppress)


def validate_document(document: load.Document, suppress: Iterable[str] = ()) -> Validated:
    """The one validation path. ``suppress`` adds rule ids (``--suppress``) to the blueprint's
    own list; an error is never suppressed."""
    silenced = set(suppress)
    if silenced:
        for rule in sorted(silenced):
            refused = refusal(rule, RULES)
            if refused:
                raise UsageError(f"--suppress {rule}: {refused}")
    normalised, problems = normalise(document.data)
    if not problems:
        reservations = (normalised.get("slurm") or {}).get("reservations") or ()
        problems = host_budget(
            hosts_before_expansion(normalised["node_pools"]),
            hosts_before_expansion(reservations),
        )
    if problems:
        placed = place(problems, document.file, document.positions)
        raise BlueprintInvalid(_at_most(placed), document.raw)
    estate = build(normalised)
    silenced |= set(estate.suppress)
    found = place(run_checks(estate), document.file, document.positions)
    findings = [f for f in found if f.level == "error" or f.rule not in silenced]
    suppressed = [f for f in found if f.level != "error" and f.rule in silenced]
    findings = _at_most(findings)
    if any(f.level == "error" for f in findings):
        raise BlueprintInvalid(findings, document.raw, suppressed, estate.suppress)
    return Validated(estate, findings, document, suppressed)


def hosts_before_expansion(items: Iterable[Mapping[str, Any]]) -> int:
    """Hosts of the items (pools or reservations) of a normalised document, counted
    arithmetically before any hostlist is expanded."""
    total = 0
    for item in items:
        hosts = item.get("hosts") or []
        for expression in [hosts] if isinstance(hosts, str) else hosts:
            total += hostlist.count(expression)
    return total


def _at_most(findings: list[Finding]) -> list[Finding]:
    """The first MAX_FINDINGS findings and one that counts the rest.

    One mistake inside an anchor that is aliased many times is found once per copy; a report
    of a million lines helps nobody and costs minutes to print.
    """
    if len(findings) <= MAX_FINDINGS:
        return findings
    shown = findings[:MAX_FINDINGS]
    hidden = findings[MAX_FINDINGS:]
    errors = sum(f.level == "error" for f in hidden)
    last = shown[-1]
    summary = Finding(
        last.file,
        last.line,
        last.column,
        "",
        f"{len(hidden)} more findings ({errors} errors) not listed; at most {MAX_FINDINGS} are",
        "error" if errors else "warning",
        "estategen/more-findings",
    )
    return [*shown, summary]
