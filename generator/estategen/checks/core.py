"""The checks' registry and what the domains share: the Check type, the CHECKS list the
``check`` decorator fills, rule ids, running every check, the rule registry (RULES), and the
helpers several domains word their findings with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from estategen.errors import Finding, did_you_mean
from estategen.facts import slurmctld_ports
from estategen.model import Estate

# a check: the estate in, its findings out
Check = Callable[[Estate], Iterable[Finding]]
# every check, in the order its findings are produced in (estategen.checks sorts it by domain)
CHECKS: list[Check] = []
# every check's rule id, for `suppress` and --suppress, with the check that raises it; the
# report's warnings are raised under their kinds' ids. estategen.checks fills it once every
# check is registered (a check reads it only when it runs).
RULES: dict[str, Check | None] = {}


def check(function: Check) -> Check:
    """Register a check; the registry's order is the order findings are produced in."""
    CHECKS.append(function)
    return function


def rule_id(function: Check) -> str:
    """A check's rule id: ``check/`` and its name in kebab case (``check/host-in-one-pool``)."""
    return "check/" + function.__name__.replace("_", "-")


def run_checks(estate: Estate) -> list[Finding]:
    """Every check's findings, each carrying its check's rule id unless it names its own."""
    return [
        finding if finding.rule else replace(finding, rule=rule_id(function))
        for function in CHECKS
        for finding in function(estate)
    ]


def article(word: str) -> str:
    """'an' before a vowel sound as these words are read out (an eks, an ldap, a gke)."""
    return "an" if word[:1] in "aeiol" else "a"


def choices(names: Iterable[str], typed: str | None = None) -> str:
    """The names a reference may take, led by the closest to what was ``typed``."""
    listed = sorted(names)
    if not listed:
        return ""
    shown = ", ".join(listed[:12]) + (", ..." if len(listed) > 12 else "")
    return f"; known: {shown}{did_you_mean(typed, listed)}"


def slurmctld_port_list(estate: Estate) -> list[int]:
    """Every port slurmctld listens on (SlurmctldPort may name a range)."""
    low, high = slurmctld_ports(estate)
    return list(range(low, high + 1))
