"""JSON read back from an output folder: the shape limits, whichever way the values are
counted (a level at a time, or value by value for the message of what is beyond them)."""

from __future__ import annotations

import pytest

from estategen.load import MAX_DEPTH, MAX_NODES
from estategen.readback import OutputRefused, _check_json_shape, parse_json


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


def test_json_read_back_keeps_integers_beyond_64_bits_exact() -> None:
    """orjson reads an integer beyond 64 bits as a float; such a text is the standard
    library's to read, so the two renders plan compares hold the same integer."""
    assert parse_json(b'{"mem": 123456789012345678901234567890, "n": [1, 2.5]}') == {
        "mem": 123456789012345678901234567890,
        "n": [1, 2.5],
    }
    assert type(parse_json(b"[18446744073709551616]")[0]) is int
    assert parse_json(b'{"a": "x"}') == {"a": "x"}
