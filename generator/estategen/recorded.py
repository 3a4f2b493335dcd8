"""The model an earlier render recorded (``estate.json``), as an :class:`Estate` again.

``estategen plan`` compares models. Where a step depends on what the model derives
(the Kubernetes objects of a cluster, the Pulumi project's node pools and releases, the
Prometheus targets), the plan derives it from both models with the very functions the
renderers use, rather than parsing what an earlier render wrote. :func:`estate_from_data`
rebuilds the typed model from what :func:`estategen.renderers.estate_json.estate_data`
records: every record field by its type hint; the fields estate.json leaves out (``path``,
settings blocks it shows only where they are used) take their defaults.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from estategen import hostlist
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.model import Estate

# fields estate.json leaves out that have no default in the model
_ABSENT = {"path": "", "declared": False}


class NotRecorded(ValueError):
    """estate.json does not hold what the model needs (a hand edit, another release)."""


class _Wrong(Exception):
    """A value estate.json cannot hold, and where: ``steps`` from the top (``.identity``,
    ``.teams``, ``[0]``), gathered on the way out of the builders."""

    def __init__(self, message: str, steps: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.steps = steps

    def within(self, step: str) -> _Wrong:
        return _Wrong(self.message, (step, *self.steps))

    def where(self) -> str:
        return "".join(self.steps).lstrip(".") or "the record"


def estate_from_data(data: Mapping[str, Any]) -> Estate:
    """The :class:`Estate` whose estate.json records ``data`` (without its ``schema``).

    Every value is checked against the type the model gives its field, every key against the
    fields the model has, and the pools' hostlists are counted before they are expanded (a
    render records at most the estate's limit of hosts): a record edited by hand raises
    :class:`NotRecorded` naming the key and what is wrong with it.
    """
    try:
        data = dict(data)
        data["node_pools"] = _expanded_pools(data.get("node_pools"))
        built = _builder(Estate)(data)
    except _Wrong as err:
        raise NotRecorded(
            f"estate.json does not record a model this estategen reads: {err.where()}: "
            f"{err.message}"
        ) from None
    assert isinstance(built, Estate)
    return built


def _expanded_pools(pools: Any) -> list[Any]:
    """The recorded pools with each one's hosts expanded, after counting all of them."""
    if not isinstance(pools, list):
        raise _Wrong(f"{_shown(pools)} is not a list", (".node_pools",))
    total = 0
    for index, pool in enumerate(pools):
        hosts = pool.get("hosts") if isinstance(pool, dict) else None
        if hosts is None:
            continue
        step = (".node_pools", f"[{index}]", ".hosts")
        if not isinstance(hosts, str):
            raise _Wrong(f"{_shown(hosts)} is not a hostlist", step)
        try:
            total += hostlist.count(hosts) if hosts else 0
        except hostlist.HostlistError as err:
            raise _Wrong(str(err), step) from None
        if total > MAX_ESTATE_HOSTS:
            raise _Wrong(
                f"the pools hold more than the estate limit of {MAX_ESTATE_HOSTS} hosts", step
            )
    return [
        {**pool, "hosts": hostlist.expand(pool["hosts"], limit=MAX_ESTATE_HOSTS)}
        if isinstance(pool, dict) and pool.get("hosts")
        else {**pool, "hosts": []}
        if isinstance(pool, dict)
        else pool
        for pool in pools
    ]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


Builder = Callable[[Any], Any]


@cache
def _builder(hint: Any) -> Builder:
    """The function that builds values of ``hint``: what to do for a type hint is decided once
    per hint, not once per value (the 100k estate records 47,000 of them). Each raises
    :class:`_Wrong` for a value that is not one."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [(_fitter(arg), arg) for arg in args if arg is not type(None)]

        def union(value: Any) -> Any:
            if value is None:
                return None
            for fits, arg in options:
                if fits(value):
                    return _builder(arg)(value)
            raise _Wrong(f"{_shown(value)} is none of {_named(hint)}")

        return union
    if isinstance(hint, type) and is_dataclass(hint):
        return _record_builder(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:

            def items(value: Any) -> Any:
                if not isinstance(value, list):
                    raise _Wrong(f"{_shown(value)} is not a list")
                build = _builder(args[0])
                built = []
                for index, item in enumerate(value):
                    try:
                        built.append(build(item))
                    except _Wrong as err:
                        raise err.within(f"[{index}]") from None
                return tuple(built)

            return items

        def fixed(value: Any) -> Any:
            if not isinstance(value, list) or len(value) != len(args):
                raise _Wrong(f"{_shown(value)} is not a list of {len(args)}")
            built = []
            for index, (arg, item) in enumerate(zip(args, value, strict=True)):
                try:
                    built.append(_builder(arg)(item))
                except _Wrong as err:
                    raise err.within(f"[{index}]") from None
            return tuple(built)

        return fixed
    if origin is not None and issubclass(origin, Mapping):

        def mapping(value: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Wrong(f"{_shown(value)} is not an object")
            build = _builder(args[1])
            built = {}
            for key, item in value.items():
                try:
                    built[key] = build(item)
                except _Wrong as err:
                    raise err.within(f".{key}") from None
            return MappingProxyType(built)

        return mapping
    if hint is float:

        def number(value: Any) -> Any:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return value  # as recorded: a whole number stays one (UsageFactor=1)
            raise _Wrong(f"{_shown(value)} is not a number")

        return number
    if hint is not Any and isinstance(hint, type):
        # JSON's true and false are not numbers here, though Python's bool is an int
        refused = bool if hint is not bool else type(None)

        def typed(value: Any) -> Any:
            if not isinstance(value, hint) or isinstance(value, refused):
                raise _Wrong(f"{_shown(value)} is not {_named(hint)}")
            return value

        return typed
    return _as_recorded


def _named(hint: Any) -> str:
    names = {str: "a string", int: "an integer", bool: "true or false", float: "a number"}
    if hint in names:
        return str(names[hint])
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    if options:
        return " or ".join(_named(a) for a in options) + (
            " or null" if type(None) in typing.get_args(hint) else ""
        )
    return f"a {getattr(hint, '__name__', hint)}"


def _as_recorded(value: Any) -> Any:
    return value


def _record_builder(kind: type[Any]) -> Builder:
    # mypy takes a class for unhashable
    hints = _hints(kind)  # type: ignore[arg-type]
    # (field, whether estate.json may leave it out): a field it leaves out without a default
    # takes its value from _ABSENT
    specs = [
        (f.name, f.default is not MISSING or f.default_factory is not MISSING) for f in fields(kind)
    ]
    known = frozenset(name for name, _ in specs)
    builders: dict[str, Builder] = {}  # each field's, once a value first has it

    def build(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Wrong(f"{_shown(value)} is not an object")
        if not known.issuperset(value):
            extra = sorted(str(k) for k in value if k not in known)[0]
            raise _Wrong("not a key estate.json records", (f".{extra}",))
        kwargs = {}
        for name, defaulted in specs:
            if name in value:
                field_builder = builders.get(name)
                if field_builder is None:
                    field_builder = builders[name] = _builder(hints[name])
                try:
                    kwargs[name] = field_builder(value[name])
                except _Wrong as err:
                    raise err.within(f".{name}") from None
            elif not defaulted:
                if name not in _ABSENT:
                    raise _Wrong(f"lacks the key {name!r}")
                kwargs[name] = _ABSENT[name]
        try:
            return kind(**kwargs)
        except (TypeError, ValueError) as err:
            raise _Wrong(str(err)) from None

    return build


def _fitter(hint: Any) -> Callable[[Any], bool]:
    """Whether a value may be one of ``hint`` (an option of a union)."""
    origin = typing.get_origin(hint)
    if (isinstance(hint, type) and is_dataclass(hint)) or (
        origin is not None and issubclass(origin, Mapping)
    ):
        return lambda value: isinstance(value, Mapping)
    if origin is tuple:
        return lambda value: isinstance(value, list)
    if hint is float:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: False
