"""The model an earlier render recorded (``estate.json``), as an :class:`Estate` again.

``estategen plan`` compares models (issue 12). Where a step depends on what the model derives
(the Kubernetes objects of a cluster, the Pulumi project's node pools and releases, the
Prometheus targets), the plan derives it from both models with the very functions the
renderers use, rather than parsing what an earlier render wrote. :func:`estate_from_data`
rebuilds the typed model from what :func:`estategen.renderers.estate_json.estate_data`
records: every dataclass field by its type hint; the fields estate.json leaves out (``path``,
settings blocks it shows only where they are used) take their defaults.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from estategen import hostlist
from estategen.model import Estate

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
        built = _build(Estate, data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise NotRecorded(
            f"estate.json does not record a model this estategen reads ({err})"
        ) from err
    assert isinstance(built, Estate)
    return built


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _build(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        for arg in args:
            if arg is type(None):
                continue
            if _fits(arg, value):
                return _build(arg, value)
        raise TypeError(f"{value!r} is none of {hint}")
    if is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, Mapping):
            raise TypeError(f"{hint.__name__} is not an object")
        hints = _hints(hint)
        kwargs = {}
        for f in fields(hint):
            if f.name in value:
                kwargs[f.name] = _build(hints[f.name], value[f.name])
            elif f.default is MISSING and f.default_factory is MISSING:
                kwargs[f.name] = _ABSENT[f.name]
        return hint(**kwargs)
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeError(f"{value!r} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v) for v in value)
        return tuple(_build(a, v) for a, v in zip(args, value, strict=True))
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"{value!r} is not an object")
        return MappingProxyType({k: _build(args[1], v) for k, v in value.items()})
    if hint is float and isinstance(value, int | float):
        return value  # as recorded: a whole number stays one (UsageFactor=1)
    if hint is not Any and isinstance(hint, type) and not isinstance(value, hint):
        raise TypeError(f"{value!r} is not a {hint.__name__}")
    return value


def _fits(hint: Any, value: Any) -> bool:
    origin = typing.get_origin(hint)
    if is_dataclass(hint) or (origin is not None and issubclass(origin, Mapping)):
        return isinstance(value, Mapping)
    if origin is tuple:
        return isinstance(value, list)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(hint, type) and isinstance(value, hint)
