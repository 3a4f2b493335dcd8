"""Validate custom resources as a Kubernetes API server would: a CRD's structural schema
(closed, so a misspelt field fails) plus its CEL rules (``x-kubernetes-validations``).

The API server defaults an object from its schema, checks it structurally, then evaluates
every CEL rule at every node where a value is present. A rule that reads ``oldSelf`` is a
transition rule: it runs only on an update, and only where the old object has a value at the
same place (or always, with ``optionalOldSelf``, which this helper refuses). Rules are
evaluated with ``cel-python``; a rule calling a function outside the CEL core this helper
knows it evaluates like Kubernetes raises :class:`UnsupportedRule` when the CRD is loaded,
so no rule passes by not being understood.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml
from celpy.evaluation import CELEvalError

# Upstream files the tests read, vendored unchanged: one folder per repository and tag, each with
# its LICENSE and a SOURCE.md naming where every file comes from (tests/test_upstream.py).
UPSTREAM = Path(__file__).resolve().parent / "upstream"

# Functions and macros whose cel-python behaviour matches Kubernetes CEL for the values a
# structural schema admits (strings, integers, booleans, lists, maps).
KNOWN_FUNCTIONS = frozenset(
    {"has", "all", "exists", "exists_one", "filter", "map", "size", "contains", "startsWith",
     "endsWith", "matches", "string", "int"}
)  # fmt: skip


class UnsupportedRule(Exception):
    """A CEL rule this helper cannot evaluate faithfully."""


@dataclass(frozen=True)
class Violation:
    """One reason the API server would refuse the object: where, and its message."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    rule: str
    message: str | None
    message_expression: str | None
    transition: bool
    program: celpy.Runner
    message_program: celpy.Runner | None


_ENV = celpy.Environment()
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def _compile(expression: str) -> celpy.Runner:
    called = set(_CALL.findall(_STRING.sub("''", expression)))
    unknown = called - KNOWN_FUNCTIONS
    if unknown:
        raise UnsupportedRule(f"{expression!r} calls {sorted(unknown)}: not evaluated here")
    return _ENV.program(_ENV.compile(expression))


def compile_rule(entry: dict[str, Any]) -> Rule:
    """A compiled rule; refuses what the API server would evaluate differently from us."""
    if entry.get("optionalOldSelf"):
        raise UnsupportedRule(f"{entry['rule']!r}: optionalOldSelf needs CEL optional types")
    return _compiled(entry["rule"], entry.get("message"), entry.get("messageExpression"))


@cache
def _compiled(expression: str, message: str | None, message_expression: str | None) -> Rule:
    return Rule(
        rule=expression,
        message=message,
        message_expression=message_expression,
        transition=re.search(r"\boldSelf\b", _STRING.sub("''", expression)) is not None,
        program=_compile(expression),
        message_program=_compile(message_expression) if message_expression else None,
    )


def _closed(schema: Any) -> Any:
    """The schema with every object that lists its properties closed to any others."""
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def _compile_all(schema: dict[str, Any]) -> None:
    """Compile every rule of the schema once, so an unsupported one fails at load time."""
    for entry in schema.get("x-kubernetes-validations", []):
        compile_rule(entry)
    for child in _children(schema):
        _compile_all(child)


def _children(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (schema.get("properties") or {}).values()
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield schema[key]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []):
            if sub.get("x-kubernetes-validations"):
                raise UnsupportedRule(f"CEL rules under {key} are not walked")
            yield sub


@dataclass(frozen=True)
class Crd:
    """One CustomResourceDefinition: its group, kind and each served version's schema."""

    group: str
    kind: str
    schemas: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, path: Path) -> Crd:
        crd = read_yaml(path)
        schemas = {
            v["name"]: v["schema"]["openAPIV3Schema"]
            for v in crd["spec"]["versions"]
            if v["served"]
        }
        for schema in schemas.values():
            _compile_all(schema)
        return cls(crd["spec"]["group"], crd["spec"]["names"]["kind"], schemas)

    def schema(self, version: str) -> dict[str, Any]:
        if version not in self.schemas:
            raise AssertionError(f"{self.kind} does not serve {version}: {sorted(self.schemas)}")
        return self.schemas[version]

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None = None, closed: bool = True
    ) -> list[Violation]:
        """What the API server would refuse: on create, or on update from ``old``."""
        group, version = obj["apiVersion"].split("/")
        assert (group, obj["kind"]) == (self.group, self.kind), (group, obj["kind"])
        schema = self.schema(version)
        new_value = defaulted(schema, obj)
        structural = _closed(schema) if closed else schema
        found = [
            Violation(".".join(str(p) for p in error.absolute_path) or "<root>", error.message)
            for error in jsonschema.Draft7Validator(structural).iter_errors(new_value)
        ]
        old_value = defaulted(schema, old) if old is not None else _ABSENT
        return found + list(_evaluate(schema, new_value, old_value, ""))


_ABSENT = object()


def defaulted(schema: dict[str, Any], value: Any) -> Any:
    """The value with the schema's defaults filled in, as the API server stores it."""
    value = copy.deepcopy(value)
    _default(schema, value)
    return value


def _default(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                _default(extra, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)


def _evaluate(schema: dict[str, Any], value: Any, old: Any, path: str) -> Iterator[Violation]:
    for entry in schema.get("x-kubernetes-validations", []):
        rule = compile_rule(entry)
        if rule.transition and old is _ABSENT:
            continue
        if rule.transition and schema.get("x-kubernetes-list-type") in ("set", "map"):
            if rule.rule.strip() != "self == oldSelf":
                raise UnsupportedRule(f"{rule.rule!r}: unordered list equality is not evaluated")
            # Kubernetes compares a set or map list without regard to order ("Equality on
            # arrays with x-kubernetes-list-type of 'set' or 'map' ignores element order",
            # kubernetes.io "Extend the Kubernetes API with CustomResourceDefinitions", CEL)
            if not _same_unordered(value, old):
                yield Violation(path or "<root>", rule.message or f"failed rule: {rule.rule}")
            continue
        activation = {"self": celpy.json_to_cel(value)}
        if rule.transition:
            activation["oldSelf"] = celpy.json_to_cel(old)
        try:
            result = rule.program.evaluate(activation)
        except CELEvalError as err:
            if str(err.args[0]).startswith("undeclared reference"):
                raise UnsupportedRule(f"{rule.rule!r}: {str(err.args[0])[:80]}") from err
            yield Violation(path or "<root>", f"{rule.rule}: evaluation error: {err.args[0]}")
            continue
        if result is not True and result != celpy.celtypes.BoolType(True):
            yield Violation(path or "<root>", _message(rule, activation))
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name in value:
                was = old.get(name, _ABSENT) if isinstance(old, dict) else _ABSENT
                yield from _evaluate(sub, value[name], was, f"{path}.{name}".lstrip("."))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                was = old.get(name, _ABSENT) if isinstance(old, dict) else _ABSENT
                yield from _evaluate(extra, value[name], was, f"{path}.{name}".lstrip("."))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        keys = schema.get("x-kubernetes-list-map-keys")
        for index, item in enumerate(value):
            was = _ABSENT  # only map lists correlate items with the old list
            if keys and isinstance(old, list):
                same = [o for o in old if all(o.get(k) == item.get(k) for k in keys)]
                was = same[0] if same else _ABSENT
            yield from _evaluate(schema["items"], item, was, f"{path}[{index}]")


def _same_unordered(value: Any, old: Any) -> bool:
    """Two lists equal as multisets of their items (each item compared as JSON)."""
    if not isinstance(value, list) or not isinstance(old, list):
        return bool(value == old)

    def canonical(items: list[Any]) -> list[str]:
        return sorted(json.dumps(item, sort_keys=True) for item in items)

    return canonical(value) == canonical(old)


def _message(rule: Rule, activation: dict[str, Any]) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.evaluate(activation)
            if isinstance(text, str) and text.strip():
                return str(text)
        except CELEvalError:
            pass  # the API server falls back to message, as here
    return rule.message or f"failed rule: {rule.rule}"


@dataclass(frozen=True)
class CrdSet:
    """The CRDs of one upstream release, found by group and kind."""

    folder: Path
    crds: tuple[Crd, ...]

    def find(self, api_version: str, kind: str) -> Crd:
        group = api_version.split("/")[0]
        for crd in self.crds:
            if (crd.group, crd.kind) == (group, kind):
                return crd
        raise AssertionError(f"no CRD for {kind} ({group}) in {self.folder}")

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None = None, closed: bool = True
    ) -> list[Violation]:
        return self.find(obj["apiVersion"], obj["kind"]).validate(obj, old, closed)


@cache
def read_yaml(path: Path) -> Any:
    """A vendored YAML file, read once with libyaml's safe loader (a full CRD runs to megabytes;
    the pure-Python reader takes seconds for one). Callers must not change what it returns."""
    return yaml.load(path.read_text(), Loader=yaml.CSafeLoader)


def crd_files(folder: Path) -> list[Path]:
    """The CustomResourceDefinitions among ``folder``'s ``*.yaml`` (a chart's values may sit
    beside them); none is an error, so a missing folder fails the test that reads it."""
    found = [
        p
        for p in sorted(folder.glob("*.yaml"))
        if read_yaml(p).get("kind") == "CustomResourceDefinition"
    ]
    if not found:
        raise FileNotFoundError(f"no CRDs in {folder}")
    return found


@cache
def crd_set(folder: Path) -> CrdSet:
    """Every CRD in ``folder``, loaded and its rules compiled."""
    return CrdSet(folder, tuple(Crd.load(p) for p in crd_files(folder)))
