"""Values as a change shows them, before and after: a key's value (:func:`_show`), JSON cut
short (:func:`_short`), JSON data as a file carries it (:func:`_plain`) and the parts of two
values that differ (:func:`_differing`).
"""

from __future__ import annotations

import json
from typing import Any

UNSET = "(unset)"  # an attribute a line does not carry, in before/after


def _show(value: Any) -> str:
    if value is None:
        return UNSET
    if isinstance(value, str):
        return value
    return _short(value)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if value is not None else ""
    return text if len(text) <= 200 else text[:199] + "…"


def _plain(value: Any) -> Any:
    """JSON data as a file carries it (tuples as lists): ``json.loads(json.dumps(value))``,
    built directly where that is a copy (dicts with string keys, lists, tuples, JSON's own
    scalars); anything else takes the round trip, with its conversions and errors."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _plain(item) for key, item in value.items()}
    return json.loads(json.dumps(value))


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _differing(a: Any, b: Any) -> tuple[Any, Any]:
    """The parts of two values that differ, descending through mappings."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if len(keys) == 1:
            return _differing(a.get(keys[0]), b.get(keys[0]))
        return {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        indices = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(indices) == 1:
            return _differing(a[indices[0]], b[indices[0]])
    return a, b
