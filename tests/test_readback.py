"""JSON read back from an output folder: the shape limits, whichever way the values are
counted (a level at a time, or value by value for the message of what is beyond them)."""

from __future__ import annotations

import pytest

from estategen.load import MAX_DEPTH, MAX_NODES
from estategen.readback import OutputRefused, _check_json_shape


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def test_shape_passes_at_the_limits_and_refuses_beyond() -> None:
    _check_json_shape(nested(MAX_DEPTH), "x")
    _check_json_shape({"a": [nested(MAX_DEPTH - 2)], "b": list(range(1000))}, "x")
    with pytest.raises(OutputRefused, match="nested deeper"):
        _check_json_shape(nested(MAX_DEPTH + 1), "x")
    with pytest.raises(OutputRefused, match="nested deeper"):
        _check_json_shape({"a": 1, "b": [nested(MAX_DEPTH)]}, "x")
    _check_json_shape(list(range(MAX_NODES - 1)), "x")  # with the list itself, the limit
    with pytest.raises(OutputRefused, match="more than"):
        _check_json_shape(list(range(MAX_NODES)), "x")
    with pytest.raises(OutputRefused, match="more than"):
        _check_json_shape({"a": [list(range(MAX_NODES // 2))] * 3}, "x")
