"""Renderers: pure functions from the model to files, collected in one registry.

A renderer reads only the model: no clock, hostname, environment or network. Every renderer's
files are merged into one mapping of relative paths; the writer does all I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from typing import Any

import jinja2

from estategen.errors import EstategenError
from estategen.model import STATE_SAVE_LOCATION, Estate


@dataclass(frozen=True)
class OutputFile:
    content: bytes
    mode: int = 0o644


Files = dict[str, OutputFile]
Renderer = Callable[[Estate], Files]
RENDERERS: list[Renderer] = []

_SAFE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def renderer(function: Renderer) -> Renderer:
    """Register a renderer; each owns a distinct set of output paths."""
    RENDERERS.append(function)
    return function


class RenderError(EstategenError):
    """A renderer produced something the writer must not write (a bug, reported clearly)."""

    exit_code = 3


# The file the writer adds to every output folder: what wrote it and every file's digest.
MANIFEST = "MANIFEST.json"


def render(estate: Estate) -> Files:
    """Run every registered renderer and merge their files."""
    _load_renderers()
    files: Files = {}
    for function in RENDERERS:
        for path, output in function(estate).items():
            if not _SAFE_PATH.fullmatch(path) or ".." in path.split("/"):
                raise RenderError(f"renderer {function.__name__} produced unsafe path {path!r}")
            if path in files or path == MANIFEST:
                raise RenderError(f"two renderers produce {path}")
            files[path] = output
    return dict(sorted(files.items()))


def _load_renderers() -> None:
    """Import the modules whose renderers register themselves."""
    from estategen import renderers  # noqa: F401


def text(content: str, mode: int = 0o644) -> OutputFile:
    return OutputFile(content.encode("utf-8"), mode)


def json_file(data: object, mode: int = 0o644) -> OutputFile:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    return text(dumps(data) + "\n", mode)


def dumps(data: object) -> str:
    """``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)``, faster.

    With ``indent`` the standard library encodes in pure Python, one generator per level;
    this writes the same text from plain dicts, lists and scalars, and leaves anything else
    (other types, non-string keys) to the standard library.
    """
    out: list[str] = []
    try:
        _encode(data, "\n", out)
    except _Unusual:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return "".join(out)


class _Unusual(Exception):
    """A value :func:`dumps` leaves to the standard library."""


_encode_string = json.encoder.encode_basestring  # what ensure_ascii=False uses


def _encode(value: Any, newline: str, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(_encode_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        opening = "{" + inner
        for key in sorted(value):
            if type(key) is not str:
                raise _Unusual
            out.append(f"{opening}{_encode_string(key)}: ")
            _encode(value[key], inner, out)
            opening = "," + inner
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        opening = "[" + inner
        for item in value:
            out.append(opening)
            _encode(item, inner, out)
            opening = "," + inner
        out.append(newline + "]")
    else:
        raise _Unusual  # floats (NaN, Infinity spellings), subclasses, anything else


@cache
def templates() -> jinja2.Environment:
    """The one Jinja environment: strict, whitespace-tidy, templates from the package."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("estategen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    environment.globals["state_save_location"] = STATE_SAVE_LOCATION
    return environment


_ATOMS = frozenset({str, int, float, bool, type(None)})


@cache
def _data_fields(kind: Any) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.name != "path")


def to_data(value: Any) -> Any:
    """Plain JSON-able data from model objects (dataclasses, mappings, tuples)."""
    kind: Any = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple:
        return [to_data(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {name: to_data(getattr(value, name)) for name in _data_fields(kind)}
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    return value
