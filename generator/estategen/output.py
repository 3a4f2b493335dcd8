"""What a renderer gives the writer: output files, the registry renderers join, and the
helpers every renderer writes with (text, deterministic JSON, the Jinja environment).

Renderers import this module, never the orchestrator (:mod:`estategen.render`) that runs them.
A renderer reads only the model: no clock, hostname, environment or network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

from estategen.model import Estate

if TYPE_CHECKING:
    import jinja2


@dataclass(frozen=True, slots=True)
class OutputFile:
    content: bytes
    mode: int = 0o644


Files = dict[str, OutputFile]
Renderer = Callable[[Estate], Files]
RENDERERS: list[Renderer] = []

# the paths a renderer may produce: relative, each part starting with a letter, a digit or
# an underscore (so no hidden file and no '..')
SAFE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def renderer(function: Renderer) -> Renderer:
    """Register a renderer; each owns a distinct set of output paths."""
    RENDERERS.append(function)
    return function


# The file the writer adds to every output folder: what wrote it and every file's digest.
MANIFEST = "MANIFEST.json"


def text(content: str, mode: int = 0o644) -> OutputFile:
    return OutputFile(content.encode("utf-8"), mode)


def json_file(data: object, mode: int = 0o644) -> OutputFile:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    return OutputFile(_json_bytes(data) + b"\n", mode)


def dumps(data: object) -> str:
    """``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)``, written by orjson
    (:func:`_json_bytes`)."""
    return _json_bytes(data).decode()


def _json_bytes(data: object) -> bytes:
    """:func:`dumps` encoded as UTF-8, as orjson writes it (no round trip through str).

    With ``indent`` the standard library encodes in pure Python; orjson writes the same text
    in C for what our files hold (strings, integers, booleans, null, dicts with string keys,
    lists and tuples). Floats are spelt differently (``1e16``, not ``1e+16``): a document
    with a float, and anything orjson refuses (non-string keys, integers beyond 64 bits,
    other types), is the standard library's. Non-finite floats, which the schema refuses and
    JSON cannot hold, are written as ``null``.
    """
    try:
        written = orjson.dumps(data, option=_ORJSON)
    except (orjson.JSONEncodeError, TypeError):
        written = None
    if written is None or _holds_float(written):
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return written


def _holds_float(written: bytes) -> bool:
    """Whether orjson's text holds a float: a digit before a point or an exponent, in a
    number that stands where a value does (most such pairs are inside strings: "10.0.0.1").

    The pairs are found in one pass over a copy with every digit made 0 and every exponent
    mark a point (bytes.translate and bytes.find run in C; a regular expression stepping
    through the 0.8 MB of estate.json took longer than orjson wrote it, and a pass per pair
    three times one pass).
    """
    folded = written.translate(_NUMBER_MARKS)
    at = folded.find(b"0.")
    while at != -1:
        start = at
        while start and written[start - 1] in _NUMBER_BYTES:
            start -= 1
        if start == 0 or written[start - 1 : start] in (b" ", b"\n", b"["):  # not in a string
            return True
        at = folded.find(b"0.", at + 1)
    return False


_ORJSON = (
    orjson.OPT_INDENT_2
    | orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# where a float may be written (1.5, 1e16): a digit before a point or an exponent; most are
# inside strings ("10.0.0.1"), and a string such as "x 1.5" only sends the document the
# standard library's way
_NUMBER_MARKS = bytes.maketrans(b"123456789eE", b"000000000..")
_NUMBER_BYTES = frozenset(b"0123456789-")


def templates() -> jinja2.Environment:
    """The one Jinja environment (:func:`estategen.templating.environment`), imported when a
    renderer first needs it: validation does not import Jinja."""
    from estategen.templating import environment

    return environment()


_ATOMS = frozenset({str, int, float, bool, type(None)})


@cache
def _data_fields(kind: Any) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.name != "path")


def to_data(value: Any) -> Any:
    """Plain JSON-able data from model objects (records, mappings, tuples)."""
    kind: Any = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple:
        return [to_data(v) for v in value]
    if is_dataclass(value):
        return {name: to_data(getattr(value, name)) for name in _data_fields(kind)}
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    return value
