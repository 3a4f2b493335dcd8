"""What a suppression (the blueprint's ``suppress:``, ``--suppress``) may name.

Only a warning or a note is ever silenced, so a rule id is accepted only when some check
raises it and that check can raise something other than an error. Which levels a check raises
is read from its own code, where each finding is made: every ``issue(...)`` or ``Finding(...)``
in the check and in the functions of its package (:mod:`estategen.checks`) it uses, with the
level given there (error when none is). A level that is not written as a literal counts as one
that may be a warning: a suppression is refused only where the code shows errors alone.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from estategen.errors import did_you_mean

# rule id -> the check that raises it; None for a rule raised as a warning by a check of many
# (the capacity warnings): checks.RULES
Rules = Mapping[str, Callable[..., Any] | None]

# rule-id families every finding of which is an error: the blueprint could not be read, or
# does not fit the schema
_ERROR_FAMILIES = ("load/", "schema/")
# where a finding's level is given: the keyword, or this position among the arguments
_LEVEL_ARGUMENT = {"issue": 2, "Finding": 5}


def refusal(rule: str, rules: Rules) -> str:
    """Why ``rule`` cannot be suppressed, or "" when it can: the one answer for both ``--suppress``
    (a usage error) and the blueprint's ``suppress:`` (an error finding at the entry). ``rules``
    is every rule id the checks raise (checks.RULES)."""
    if rule.startswith(_ERROR_FAMILIES):
        return (
            f"{rule!r} reports a blueprint that cannot be read or does not fit the schema: "
            "errors cannot be suppressed; fix what it reports instead"
        )
    if rule not in rules:
        return f"no check has the rule id {rule!r}{did_you_mean(rule, rules)}"
    if errors_only(rule, rules):
        return (
            f"{rule!r} raises errors only, and errors cannot be suppressed; fix what it "
            "reports instead"
        )
    return ""


def errors_only(rule: str, rules: Rules) -> bool:
    """Whether every finding of the check ``rule`` names is an error (False for a rule no
    check has, and for the capacity warnings)."""
    function = rules.get(rule)
    if function is None:
        return False
    return levels(function) == {"error"}


@cache
def levels(function: Callable[..., Any]) -> frozenset[str]:
    """The levels of the findings ``function`` makes, itself or through the functions it names
    of its own module or of the modules beside it in its package (a check of
    :mod:`estategen.checks.names` and a helper of :mod:`estategen.checks.core`)."""
    found: set[str] = set()
    seen = {function}
    pending = [function]
    while pending:
        current = pending.pop()
        tree = ast.parse(textwrap.dedent(inspect.getsource(current)))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in _LEVEL_ARGUMENT
            ):
                found.add(_level(node, _LEVEL_ARGUMENT[node.func.id]))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                # a name means what it means where it is written
                helper = current.__globals__.get(node.id)
                if inspect.isfunction(helper) and _beside(helper, function) and helper not in seen:
                    seen.add(helper)
                    pending.append(helper)
    return frozenset(found)


def _beside(helper: Callable[..., Any], function: Callable[..., Any]) -> bool:
    """Whether ``helper`` is of ``function``'s module, or of another module of its package."""
    package = function.__module__.rpartition(".")[0]
    return helper.__module__ == function.__module__ or bool(
        package and helper.__module__.startswith(package + ".")
    )


def _level(call: ast.Call, position: int) -> str:
    """The level a call gives its finding: a literal, error by default, and "warning" for
    one computed at run time (it may be)."""
    given = next((k.value for k in call.keywords if k.arg == "level"), None)
    if given is None and len(call.args) > position:
        given = call.args[position]
    if given is None:
        return "error"
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        return given.value
    return "warning"
