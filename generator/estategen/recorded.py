"""The model an earlier render recorded (``estate.json``), as an :class:`Estate` again.

``estategen plan`` compares models (issue 12). Where a step depends on what the model derives
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
from functools import cache
from types import MappingProxyType
from typing import Any

from estategen import hostlist
from estategen.model import Estate
from estategen.record import Record, fields

# fields estate.json leaves out that have no default in the model
_ABSENT = {"path": "", "declared": False}


class NotRecorded(ValueError):
    """estate.json does not hold what the model needs (a hand edit, another release)."""


def estate_from_data(data: Mapping[str, Any]) -> Estate:
    """The :class:`Estate` whose estate.json records ``data`` (without its ``schema``)."""
    data = dict(data)
    data["node_pools"] = [
        {**pool, "hosts": hostlist.expand(pool["hosts"], limit=10**6) if pool.get("hosts") else []}
        for pool in data.get("node_pools") or []
    ]
    try:
        built = _builder(Estate)(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise NotRecorded(
            f"estate.json does not record a model this estategen reads ({err})"
        ) from err
    assert isinstance(built, Estate)
    return built


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


Builder = Callable[[Any], Any]


@cache
def _builder(hint: Any) -> Builder:
    """The function that builds values of ``hint``: what to do for a type hint is decided once
    per hint, not once per value (the 100k estate records 47,000 of them)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [(_fitter(arg), arg) for arg in args if arg is not type(None)]

        def union(value: Any) -> Any:
            if value is None:
                return None
            for fits, arg in options:
                if fits(value):
                    return _builder(arg)(value)
            raise TypeError(f"{value!r} is none of {hint}")

        return union
    if isinstance(hint, type) and issubclass(hint, Record):
        return _record_builder(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:

            def items(value: Any) -> Any:
                if not isinstance(value, list):
                    raise TypeError(f"{value!r} is not a list")
                build = _builder(args[0])
                return tuple([build(v) for v in value])

            return items

        def fixed(value: Any) -> Any:
            if not isinstance(value, list):
                raise TypeError(f"{value!r} is not a list")
            return tuple(_builder(a)(v) for a, v in zip(args, value, strict=True))

        return fixed
    if origin is not None and issubclass(origin, Mapping):

        def mapping(value: Any) -> Any:
            if not isinstance(value, Mapping):
                raise TypeError(f"{value!r} is not an object")
            build = _builder(args[1])
            return MappingProxyType({k: build(v) for k, v in value.items()})

        return mapping
    if hint is float:

        def number(value: Any) -> Any:
            if isinstance(value, int | float):
                return value  # as recorded: a whole number stays one (UsageFactor=1)
            raise TypeError(f"{value!r} is not a float")

        return number
    if hint is not Any and isinstance(hint, type):

        def typed(value: Any) -> Any:
            if not isinstance(value, hint):
                raise TypeError(f"{value!r} is not a {hint.__name__}")
            return value

        return typed
    return _as_recorded


def _as_recorded(value: Any) -> Any:
    return value


def _record_builder(kind: type[Record]) -> Builder:
    # mypy takes Record.__hash__ for the class's own, and a class for unhashable
    hints = _hints(kind)  # type: ignore[arg-type]
    # (field, whether estate.json may leave it out): a field it leaves out without a default
    # takes its value from _ABSENT
    specs = [(f.name, f.has_default) for f in fields(kind)]
    builders: dict[str, Builder] = {}  # each field's, once a value first has it

    def build(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise TypeError(f"{kind.__name__} is not an object")
        kwargs = {}
        for name, defaulted in specs:
            if name in value:
                field_builder = builders.get(name)
                if field_builder is None:
                    field_builder = builders[name] = _builder(hints[name])
                kwargs[name] = field_builder(value[name])
            elif not defaulted:
                kwargs[name] = _ABSENT[name]
        return kind(**kwargs)

    return build


def _fitter(hint: Any) -> Callable[[Any], bool]:
    """Whether a value may be one of ``hint`` (an option of a union)."""
    origin = typing.get_origin(hint)
    if (isinstance(hint, type) and issubclass(hint, Record)) or (
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
