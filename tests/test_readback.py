"""Reading JSON back from an output folder: orjson where it reads what the standard library
reads, the standard library elsewhere; the shape limits whichever way the values are counted."""

from __future__ import annotations

import json
import math

import pytest

from estategen.load import MAX_DEPTH, MAX_NODES
from estategen.readback import OutputRefused, _check_json_shape, load_json, loads

CASES = [
    b'{"a": [1, -0, 2.5, "x"], "b": null, "c": true}',
    b'{"a": 1, "a": 2}',  # the last wins
    b"[123456789012345678]",
    b"[12345678901234567890]",  # beyond 64 bits: an integer, not orjson's float
    b'["s000n[001-050]", 1234567890123456789012]',
    b"[1e400, -1e400]",  # orjson refuses; the standard library reads infinities
    b'["\\ud800"]',  # a lone surrogate
    "\ufeff{}".encode(),  # a byte-order mark
    '{"a": "é"}'.encode("utf-16"),
]


@pytest.mark.parametrize("content", CASES)
def test_loads_reads_what_the_standard_library_reads(content: bytes) -> None:
    assert repr(loads(content)) == repr(json.loads(content))


@pytest.mark.parametrize("content", CASES)
def test_load_json_reads_utf8_as_before(content: bytes) -> None:
    try:
        expected = json.loads(content.decode("utf-8"))
    except ValueError:
        assert load_json(content, "x", strict=False) is None
        return
    assert repr(load_json(content, "x")) == repr(expected)


def test_loads_keeps_integers_beyond_64_bits() -> None:
    value = loads(b"[98765432109876543210987]")[0]
    assert isinstance(value, int) and value == 98765432109876543210987
    assert math.isinf(loads(b"[1e400]")[0])


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def test_shape_passes_at_the_limits_and_refuses_beyond() -> None:
    _check_json_shape(nested(MAX_DEPTH), "x")
    with pytest.raises(OutputRefused, match="nested deeper"):
        _check_json_shape(nested(MAX_DEPTH + 1), "x")
    _check_json_shape(list(range(MAX_NODES - 1)), "x")  # with the list itself, the limit
    with pytest.raises(OutputRefused, match="more than"):
        _check_json_shape(list(range(MAX_NODES)), "x")
    with pytest.raises(OutputRefused, match="more than"):
        _check_json_shape({"a": [list(range(MAX_NODES // 2))] * 3}, "x")
