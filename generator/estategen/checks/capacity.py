"""The capacity warnings: one findings type, validate shows what report shows."""

from __future__ import annotations

from collections.abc import Iterator

from estategen.capacity import warnings_of
from estategen.checks.core import check
from estategen.errors import Finding, issue
from estategen.model import Estate


@check
def capacity_warnings(estate: Estate) -> Iterator[Finding]:
    """Valid but probably not intended: the capacity warnings (:mod:`estategen.capacity`, which
    the report shows too), each under its own rule id (check/stranded-capacity, ...)."""
    for warning in warnings_of(estate):
        yield issue(warning.path, warning.message, "warning", rule=f"check/{warning.kind}")
