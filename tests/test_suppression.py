"""What a suppression may name: a warning's rule, never a rule that raises errors only.

Which levels a check raises is read from its code (estategen.suppression.levels); these tests
hold that reading to what the checks really raise.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from estategen import checks, load
from estategen.checks import RULES
from estategen.errors import BlueprintInvalid, Finding, issue
from estategen.pipeline import validate_document
from estategen.suppression import errors_only, levels, refusal

from conftest import BLUEPRINTS

PAIRS = Path(__file__).parent / "plan_pairs"


def findings_of(path: Path) -> list[Finding]:
    """Every finding a blueprint gets, suppressed ones included."""
    try:
        result = validate_document(load.read_blueprint(path))
    except BlueprintInvalid as err:
        return [*err.findings, *err.suppressed]
    return [*result.findings, *result.suppressed]


def test_every_rule_a_blueprint_is_warned_under_can_be_suppressed() -> None:
    warned = {
        f.rule
        for path in [*sorted(BLUEPRINTS.glob("*.yaml")), *sorted(PAIRS.glob("*.yaml"))]
        for f in findings_of(path)
        if f.level != "error"
    }
    assert len(warned) >= 3  # the examples and pairs do raise warnings of several rules
    assert {rule: refusal(rule, RULES) for rule in warned} == dict.fromkeys(warned, "")


def test_the_levels_of_a_check_are_read_from_where_it_makes_each_finding() -> None:
    assert levels(checks.host_in_one_pool) == {"error"}
    # a warning raised in a helper the check calls counts for the check
    assert levels(checks.reservations_valid) == {"error", "warning"}
    assert errors_only("check/host-in-one-pool", RULES)
    assert not errors_only("check/reservations-valid", RULES)
    assert not errors_only("check/stranded-capacity", RULES)  # the report's warnings


def test_a_warning_made_in_another_module_of_the_checks_package_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check's helpers may live beside it in its package (estategen.checks.core's beside
    estategen.checks.names): each name is read where it is written, the helper's in its own
    module."""
    package = tmp_path / "probe_checks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shared.py").write_text(
        "from estategen.errors import issue\n"
        "def _warn(path):\n"
        "    return issue(path, 'made here', 'warning')\n"
        "def shared_finding(path):\n"
        "    return _warn(path)\n"
    )
    (package / "domain.py").write_text(
        "from estategen.errors import issue\n"
        "from probe_checks.shared import shared_finding\n"
        "def a_check(estate):\n"
        "    yield issue('a', 'an error')\n"
        "    yield shared_finding('b')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    domain = importlib.import_module("probe_checks.domain")
    assert levels(domain.a_check) == {"error", "warning"}


def defaults_to_error(_: object) -> Iterator[Finding]:
    yield issue("a", "no level given")


def positional_warning(_: object) -> Iterator[Finding]:
    yield issue("a", "a warning", "warning")


def computed_level(flag: object) -> Iterator[Finding]:
    yield issue("a", "either", level="warning" if flag else "error")


def constructed(_: object) -> Iterator[Finding]:
    yield Finding("", 0, 0, "a", "made whole", "info")


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (defaults_to_error, {"error"}),
        (positional_warning, {"warning"}),
        (computed_level, {"warning"}),  # not a literal: it may be a warning
        (constructed, {"info"}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_level_counts_as_written_and_one_computed_counts_as_a_possible_warning(
    function: object, expected: set[str]
) -> None:
    assert levels(function) == expected  # type: ignore[arg-type]


def test_refusals_name_the_rule_and_say_errors_cannot_be_suppressed() -> None:
    assert refusal("check/unique-names", RULES) == (
        "'check/unique-names' raises errors only, and errors cannot be suppressed; fix what "
        "it reports instead"
    )
    assert "errors cannot be suppressed" in refusal("schema/allowed", RULES)
    assert refusal("check/unique-name", RULES) == (
        "no check has the rule id 'check/unique-name'; did you mean 'check/unique-names'?"
    )
    assert refusal("check/pool-without-storage", RULES) == ""
