"""Values as a change shows them, before and after: a key's value (:func:`shown`), JSON cut
short (:func:`short`), JSON data as a file carries it (:func:`plain`) and the parts of two
values that differ (:func:`differing`).
"""

from __future__ import annotations

import json
from typing import Any

UNSET = "(unset)"  # an attribute a line does not carry, in before/after


def shown(value: Any) -> str:
    if value is None:
        return UNSET
    if isinstance(value, str):
        return value
    return short(value)


def short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if value is not None else ""
    return text if len(text) <= 200 else text[:199] + "…"


def plain(value: Any) -> Any:
    """JSON data as a file carries it (tuples as lists): ``json.loads(json.dumps(value))``,
    built directly where that is a copy (dicts with string keys, lists, tuples, JSON's own
    scalars); anything else takes the round trip, with its conversions and errors."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is list or kind is tuple:
        return [plain(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: plain(item) for key, item in value.items()}
    return json.loads(json.dumps(value))


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def differing(a: Any, b: Any) -> tuple[Any, Any]:
    """The parts of two values that differ, descending through mappings."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if len(keys) == 1:
            return differing(a.get(keys[0]), b.get(keys[0]))
        return {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        indices = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(indices) == 1:
            return differing(a[indices[0]], b[indices[0]])
    return a, b
