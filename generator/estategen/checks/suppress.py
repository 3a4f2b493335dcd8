"""The blueprint's ``suppress``: each entry names a rule some check raises as a warning."""

from __future__ import annotations

from collections.abc import Iterator

from estategen.checks.core import RULES, check
from estategen.errors import Finding, issue
from estategen.model import Estate
from estategen.suppression import refusal


@check
def suppressed_rules_exist(estate: Estate) -> Iterator[Finding]:
    """A suppression names a rule some check raises as a warning: a mistyped one would silence
    nothing, and an error is never silenced (:func:`estategen.suppression.refusal`)."""
    for i, rule in enumerate(estate.suppress):
        if refused := refusal(rule, RULES):
            yield issue(f"suppress[{i}]", refused)
