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
    """Deterministic JSON text (sorted keys, two-space indent), as :func:`_json_bytes` writes it."""
    return _json_bytes(data).decode()


def _json_bytes(data: object) -> bytes:
    """Sorted keys, two-space indent, UTF-8, written by orjson in C (the standard library
    encodes ``indent`` in pure Python). What orjson refuses (non-string keys, integers beyond
    64 bits, other types) is the standard library's. A float is spelt as orjson spells it
    (``0.00001`` where the standard library writes ``1e-05``), the same on every run."""
    try:
        return orjson.dumps(data, option=_ORJSON)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")


_ORJSON = (
    orjson.OPT_INDENT_2
    | orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


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
