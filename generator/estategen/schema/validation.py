"""Validating a blueprint against :data:`~estategen.schema.rules.BLUEPRINT`: the compiled
acceptor a valid document takes, cerberus for everything else, and the findings' messages.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Hashable, Mapping
from functools import cache
from typing import Any, ClassVar

from estategen.errors import Finding, did_you_mean, issue, key_path, quote
from estategen.schema.patterns import PATTERN_HINTS, compiled
from estategen.schema.rules import BLUEPRINT
from estategen.schema.values import (
    VALUE_CHECKS,
    addresses_problem,
    billing_weight_problem,
    count_or_none_problem,
    daemon_path_problem,
    finite_problem,
    hostlists_problem,
    local_datetime_problem,
    memory_or_unlimited_problem,
    mount_point_problem,
    port_or_range_problem,
    slurm_option_value_problem,
)


class _NoTree:
    """An error tree that keeps nothing."""

    def add(self, error: object) -> None:
        """Drop the error; ``Validator._errors`` holds it already."""


_NO_TREE = _NoTree()


@cache
def _validator() -> Any:
    """The cerberus validator, built on first use: valid blueprints never import cerberus."""
    import cerberus
    from cerberus import errors as cerberus_errors

    class _Validator(cerberus.Validator):  # type: ignore[misc]
        """Cerberus with strict numbers (a boolean is not an integer) and our value checks."""

        types_mapping: ClassVar[dict[str, Any]] = {
            **cerberus.Validator.types_mapping,
            "integer": cerberus.TypeDefinition("integer", (int,), (bool,)),
            "number": cerberus.TypeDefinition("number", (int, float), (bool,)),
        }

        def _validate_regex(self, pattern: str, field: Hashable, value: object) -> None:
            """{'type': 'string'}"""
            # cerberus anchors with '$', which also matches before a trailing newline: "gpu\n"
            # would pass as a name and inject a line into slurm.conf. The whole value must match.
            if isinstance(value, str) and not compiled(pattern).fullmatch(value):
                self._error(field, cerberus_errors.REGEX_MISMATCH)

        def _check_with_hostlists(self, field: Hashable, value: object) -> None:
            problem = hostlists_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_addresses(self, field: Hashable, value: object) -> None:
            problem = addresses_problem(value)
            if problem:
                self._error(field, problem)

        # Cerberus re-sorts a validator's whole error list each time a child validator hands
        # up its errors, and files every error in a tree keyed by schema rule whose per-rule
        # list it also re-sorts on each addition: N list items breaking one rule cost O(N^2)
        # comparisons (5,000 users with a bad uid took minutes). Errors are kept in the order
        # they are found (findings are sorted by position anyway), and the schema tree, which
        # nothing reads (cerberus consults only the document tree), is not kept.
        schema_error_tree = property(
            lambda self: _NO_TREE, lambda self, value: None, doc="never kept (see above)"
        )

        def _error(self, *args: Any) -> None:
            if len(args) != 1:
                super()._error(*args)
                return
            self._errors.extend(args[0])
            for error in args[0]:
                self.document_error_tree.add(error)
                self.error_handler.emit(error)

        def _check_with_finite(self, field: Hashable, value: object) -> None:
            problem = finite_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_mount_point(self, field: Hashable, value: object) -> None:
            problem = mount_point_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_local_datetime(self, field: Hashable, value: object) -> None:
            problem = local_datetime_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_daemon_path(self, field: Hashable, value: object) -> None:
            problem = daemon_path_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_count_or_none(self, field: Hashable, value: object) -> None:
            problem = count_or_none_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_memory_or_unlimited(self, field: Hashable, value: object) -> None:
            problem = memory_or_unlimited_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_billing_weight(self, field: Hashable, value: object) -> None:
            problem = billing_weight_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_port_or_range(self, field: Hashable, value: object) -> None:
            problem = port_or_range_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_slurm_option_value(self, field: Hashable, value: object) -> None:
            problem = slurm_option_value_problem(value)
            if problem:
                self._error(field, problem)

    return _Validator(BLUEPRINT)


def normalise(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
    """Validate the document's shape and fill static defaults.

    Returns the normalised document and the findings (no positions yet). A valid document
    takes the compiled path (:func:`_accept`); cerberus decides everything else and writes
    every message.
    """
    accepted = _accept(document)
    if accepted is not None:
        return accepted, []
    return cerberus_normalise(document)


def cerberus_normalise(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
    """:func:`normalise` by cerberus alone: the reference the compiled path must agree with."""
    validator = _validator()
    if validator.validate(dict(document)):
        return validator.document, []
    findings: list[Finding] = []
    for error in _leaves(validator._errors):
        path = key_path(error.document_path)
        refusal = _password_refusal(tuple(error.document_path))
        if refusal is not None:  # one finding, which never quotes the password
            if not any(f.path == path for f in findings):
                findings.append(issue(path, refusal, rule="schema/secret"))
            continue
        findings.append(issue(path, _message(error), rule=f"schema/{_rule_id(error)}"))
    return {}, findings


def _password_refusal(document_path: tuple[Any, ...]) -> str | None:
    """For a `slurm.options` key that holds a password, whatever its value: the check's
    message (checks.slurm_options_not_owned gives it for a well-formed value), not one that
    quotes the value."""
    if len(document_path) != 3 or document_path[:2] != ("slurm", "options"):
        return None
    from estategen.slurm_keys import password_refusal

    return password_refusal(str(document_path[2]))


def _rule_id(error: Any) -> str:
    """Which rule of the shape an error breaks: cerberus' rule, or for a custom check the
    `check_with` name, for unknown keys ``unknown-key`` and for plaintext secrets ``secret``."""
    from cerberus import errors as cerberus_errors

    if error.code == cerberus_errors.UNKNOWN_FIELD.code:
        return "unknown-key"
    if error.code == cerberus_errors.CUSTOM.code:
        # Cerberus records the schema path of the mapping (or of the `valuesrules`) the value
        # sits in, not of the rule: look the rule up under the value's key there.
        node = _rule_at(tuple(error.schema_path))
        key = error.document_path[-1] if error.document_path else None
        for candidate in (node.get(key) if isinstance(node, dict) else None, node):
            if isinstance(candidate, dict) and isinstance(candidate.get("check_with"), str):
                return str(candidate["check_with"])
        return "custom"
    rules = error.schema_path and _rule_at(error.schema_path[:-1])
    if error.rule == "type" and isinstance(rules, dict) and rules.get("meta", {}).get("secret"):
        return "secret"
    return str(error.rule)


# The compiled acceptor ---------------------------------------------------------------------
#
# Cerberus builds a child validator per mapping and walks every rule through its dispatch
# machinery: more time than all the rest of a command together (benchmarks/README.md). The
# acceptor below is compiled once from the same BLUEPRINT rules into closures. It only ever
# says "valid, and here is the document cerberus would have normalised" or "not sure": any
# problem, any null, any type it does not expect, defers to cerberus, which then reports.
# So it may be stricter than cerberus (costing time) but never more lenient (tests hold the
# two equal on generated and mutated documents).


class _Defer(Exception):
    """The acceptor is not certain the value is valid; cerberus decides."""


class _Unsupported(Exception):
    """A rule the acceptor does not know: the acceptor is off and cerberus does everything."""


_Check = Any  # Callable[[object], object]: returns the normalised value or raises _Defer
_KNOWN_RULES = frozenset(
    {
        "type",
        "regex",
        "allowed",
        "min",
        "max",
        "minlength",
        "maxlength",
        "required",
        "default",
        "schema",
        "keysrules",
        "valuesrules",
        "check_with",
        "meta",
    }
)
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "dict": (dict,),
    "list": (list,),
}


def _compile(rule: Mapping[str, Any]) -> _Check:
    unknown = set(rule) - _KNOWN_RULES
    if unknown:
        raise _Unsupported(sorted(unknown))
    kinds = rule.get("type")
    if kinds is None:
        raise _Unsupported("untyped rule")
    allowed_types = tuple(
        t for k in (kinds if isinstance(kinds, list) else [kinds]) for t in _EXACT_TYPES[k]
    )
    tests: list[Any] = []
    if "regex" in rule:
        # compiled when a value first needs it: most blueprints fill few of the keys with
        # a pattern, and compiling them all was a third of building this checker
        tests.append(_matches(rule["regex"]))
    if "allowed" in rule:
        allowed = frozenset(rule["allowed"])
        tests.append(lambda v: type(v) is str and v in allowed)
    if "min" in rule:
        low = rule["min"]
        tests.append(lambda v: type(v) in (int, float) and not v < low)
    if "max" in rule:
        high = rule["max"]
        tests.append(lambda v: type(v) in (int, float) and not v > high)
    if "minlength" in rule:
        shortest = rule["minlength"]
        tests.append(lambda v: not len(v) < shortest)
    if "maxlength" in rule:
        longest = rule["maxlength"]
        tests.append(lambda v: not len(v) > longest)
    if "check_with" in rule:
        value_check = VALUE_CHECKS.get(rule["check_with"])
        if value_check is None:
            raise _Unsupported(rule["check_with"])
        tests.append(lambda v: value_check(v) is None)
    inner: _Check | None = None
    if "schema" in rule:
        if kinds == "dict":
            inner = _compile_fields(rule["schema"])
        elif kinds == "list":
            inner = _compile_items(_compile(rule["schema"]))
        else:
            raise _Unsupported("schema on a non-container")
    if "keysrules" in rule or "valuesrules" in rule:
        if kinds != "dict" or inner is not None or not {"keysrules", "valuesrules"} <= set(rule):
            raise _Unsupported("keysrules/valuesrules")
        inner = _compile_free_mapping(_compile(rule["keysrules"]), _compile(rule["valuesrules"]))
    if len(tests) == 1 and inner is None:
        (single,) = tests

        def check_one(value: object) -> object:
            if type(value) not in allowed_types or not single(value):
                raise _Defer
            return value

        return check_one

    def check(value: object) -> object:
        if type(value) not in allowed_types:
            raise _Defer
        for test in tests:
            if not test(value):
                raise _Defer
        return value if inner is None else inner(value)

    return check


def _matches(source: str) -> Callable[[object], bool]:
    """Whether a value is not a string or matches ``source`` whole (compiled on first use)."""
    pattern: re.Pattern[str] | None = None

    def test(value: object) -> bool:
        nonlocal pattern
        if type(value) is not str:
            return True
        if pattern is None:
            pattern = compiled(source)
        return pattern.fullmatch(value) is not None

    return test


def _compile_fields(fields: Mapping[str, Any]) -> _Check:
    """A mapping with a fixed set of keys: unknown keys defer, defaults fill in schema order."""
    checks = {name: _compile(sub) for name, sub in fields.items()}
    required = [name for name, sub in fields.items() if sub.get("required")]
    # (name, default, whether it is a container each use must copy)
    defaults = [
        (name, sub["default"], isinstance(sub["default"], dict | list))
        for name, sub in fields.items()
        if "default" in sub
    ]

    def check(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            field_check = checks.get(key)
            if field_check is None:
                raise _Defer
            out[key] = field_check(item)
        for key, default, container in defaults:
            if key not in out:
                out[key] = checks[key](copy.deepcopy(default) if container else default)
        for key in required:
            if key not in out:
                raise _Defer
        return out

    return check


def _compile_items(item_check: _Check) -> _Check:
    return lambda value: [item_check(item) for item in value]


def _compile_free_mapping(key_check: _Check, value_check: _Check) -> _Check:
    def check(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            key_check(key)
            out[key] = value_check(item)
        return out

    return check


@cache
def _acceptor() -> _Check | None:
    try:
        return _compile({"type": "dict", "schema": BLUEPRINT})
    except _Unsupported:
        return None


def _accept(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The normalised document when it is certainly valid; None to let cerberus decide."""
    acceptor = _acceptor()
    if acceptor is None:
        return None
    try:
        result: dict[str, Any] = acceptor(document if type(document) is dict else dict(document))
    except _Defer:
        return None
    return result


def _leaves(errors: Any) -> list[Any]:
    out = []
    for error in errors:
        if error.is_group_error and error.child_errors:
            out.extend(_leaves(error.child_errors))
        else:
            out.append(error)
    return out


def _message(error: Any) -> str:
    from cerberus import errors as cerberus_errors

    rule = error.rule
    rules = error.schema_path and _rule_at(error.schema_path[:-1])
    meta = rules.get("meta", {}) if isinstance(rules, dict) else {}
    value = error.value
    if error.code == cerberus_errors.UNKNOWN_FIELD.code:
        return _unknown_key(error.document_path)
    if error.code == cerberus_errors.CUSTOM.code:
        return str(error.info[0])
    if rule == "required":
        return "is required"
    if rule == "type":
        if meta.get("secret"):
            return (
                "must be a secret reference like {secret: NAME}; "
                "plaintext secrets are never accepted"
            )
        wanted = error.constraint if isinstance(error.constraint, list) else [error.constraint]
        return f"must be {' or '.join(_TYPE_WORDS[w] for w in wanted)}, not {_describe(value)}"
    if rule == "nullable":
        return "has no value; give one or remove the key"
    if rule == "allowed":
        choices = [str(a) for a in error.constraint]
        hint = did_you_mean(str(value), choices)
        return f"{_shown(value)} is not allowed; choose one of: {', '.join(choices)}{hint}"
    if rule == "regex":
        hint = PATTERN_HINTS.get(error.constraint, f"value matching {error.constraint}")
        return f"{_shown(value)} is not a valid {hint}"
    if rule == "min":
        return f"{_shown(value)} is below the minimum of {error.constraint}"
    if rule == "max":
        return f"{_shown(value)} is above the maximum of {error.constraint}"
    if rule == "minlength":
        return f"needs at least {error.constraint} item(s)"
    if rule == "maxlength":
        return f"has {len(value)} items; at most {error.constraint} allowed"
    if rule == "empty":
        return "must not be empty"
    return f"invalid value {value!r} ({rule})"


_TYPE_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "dict": "a mapping",
    "list": "a list",
}


def _shown(value: object) -> str:
    """A value as a message quotes it; a hostile megabyte-long one is cut, with its length."""
    text = repr(value)
    if len(text) <= 100:
        return text
    if isinstance(value, str):
        size = f"{len(value)} characters"
    elif isinstance(value, int):
        size = f"{len(text)} digits"
    else:
        size = f"{len(text)} characters written out"
    return f"{text[:60]}... ({size})"


def _describe(value: object) -> str:
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float):
        return f"number {value!r} (quote it if it is a version or name)"
    if isinstance(value, int):
        return f"number {_shown(value)}"
    return f"string {_shown(value)}"


def _rule_at(schema_path: tuple[Any, ...]) -> Any:
    node: Any = BLUEPRINT
    for part in schema_path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return {}
    return node


def _fields_at(document_path: tuple[Any, ...]) -> dict[str, Any]:
    """The field schemas of the mapping at ``document_path``."""
    fields: dict[str, Any] = BLUEPRINT
    free_key = False  # the next part is a key of a keysrules/valuesrules mapping
    for part in document_path:
        if isinstance(part, int) or free_key:
            free_key = False
            continue
        rule = fields.get(part, {})
        while rule.get("type") == "list" and "schema" in rule:
            rule = rule["schema"]
        if rule.get("type") == "dict" and "schema" in rule:
            fields = rule["schema"]
        elif "valuesrules" in rule:
            fields = rule["valuesrules"].get("schema", {})
            free_key = True
        else:
            return {}
    return fields


def _unknown_key(document_path: tuple[Any, ...]) -> str:
    key = document_path[-1]
    fields = _fields_at(document_path[:-1])
    valid = sorted(fields)
    hint = did_you_mean(str(key), valid) or "."
    listing = f" Valid keys here: {', '.join(valid)}." if valid else ""
    return f"unknown key {quote(str(key))}{hint}{listing}"
