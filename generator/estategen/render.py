"""Renderers: pure functions from the model to files, collected in one registry.

A renderer reads only the model: no clock, hostname, environment or network. Every renderer's
files are merged into one mapping of relative paths; the writer does all I/O.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import re
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import orjson

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
    """``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)``, written by orjson.

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
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    for candidate in _DIGIT_POINT.finditer(written):
        start = candidate.start()
        while start and written[start - 1] in _NUMBER_BYTES:
            start -= 1
        if start == 0 or written[start - 1 : start] in (b" ", b"\n", b"["):  # not in a string
            return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return written.decode()


_ORJSON = (
    orjson.OPT_INDENT_2
    | orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# where a float may be written (1.5, 1e16): a digit before a point or an exponent; most are
# inside strings ("10.0.0.1"), and a string such as "x 1.5" only sends the document the
# standard library's way
_DIGIT_POINT = re.compile(rb"[0-9][.eE]")
_NUMBER_BYTES = frozenset(b"0123456789-")


class CompiledLoader(jinja2.PackageLoader):
    """The package's templates, each from the Python that Jinja compiled it to when the
    package holds it for exactly this template text, Jinja version and environment settings
    (module ``estategen.templates_compiled.t_<digest of those>``); otherwise compiled here.

    Compiling the templates took 40 ms of every render. ``python -m estategen.render``
    writes the modules, and tests/test_render_cli.py fails when one is missing or is not what
    Jinja writes now. A stale module is never used: its name no longer matches.
    """

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        source, filename, _ = self.get_source(environment, name)
        module = compiled_module(environment, name, source)
        spec = importlib.util.find_spec(module)
        if spec is None or not isinstance(spec.loader, importlib.abc.InspectLoader):
            return super().load(environment, name, globals)
        code = spec.loader.get_code(module)  # the byte-compiled file when there is one
        if code is None:
            return super().load(environment, name, globals)
        namespace: dict[str, Any] = {"environment": environment, "__file__": filename}
        exec(code, namespace)  # what Template.from_code does with freshly compiled code
        return environment.template_class.from_module_dict(environment, namespace, globals or {})


COMPILED_PACKAGE = "estategen.templates_compiled"


def compiled_module(environment: jinja2.Environment, name: str, source: str) -> str:
    """The module that holds ``name`` compiled from ``source`` for ``environment``."""
    autoescape = environment.autoescape
    settings = (
        jinja2.__version__,
        environment.block_start_string,
        environment.block_end_string,
        environment.variable_start_string,
        environment.variable_end_string,
        environment.comment_start_string,
        environment.comment_end_string,
        environment.line_statement_prefix,
        environment.line_comment_prefix,
        environment.trim_blocks,
        environment.lstrip_blocks,
        environment.newline_sequence,
        environment.keep_trailing_newline,
        sorted(environment.extensions),
        environment.optimized,
        environment.is_async,
        environment.finalize is None,
        autoescape(name) if callable(autoescape) else autoescape,
        name,
        source,
    )
    digest = hashlib.sha256(repr(settings).encode("utf-8")).hexdigest()[:32]
    return f"{COMPILED_PACKAGE}.t_{digest}"


def compiled_source(environment: jinja2.Environment, name: str) -> tuple[str, str]:
    """(module name, Python source) of template ``name`` compiled for ``environment``."""
    assert environment.loader is not None
    source, filename, _ = environment.loader.get_source(environment, name)
    python = environment.compile(source, name, filename, raw=True)
    return compiled_module(environment, name, source), python


@cache
def templates() -> jinja2.Environment:
    """The one Jinja environment: strict, whitespace-tidy, templates from the package."""
    environment = jinja2.Environment(
        loader=CompiledLoader("estategen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    environment.globals["state_save_location"] = STATE_SAVE_LOCATION
    return environment


def compiled_templates() -> dict[str, str]:
    """Every module estategen.templates_compiled holds: module name -> Python source."""
    from estategen.report import _environment

    modules = {}
    uses = ((templates(), ("slurm/", "ansible/")), (_environment(), ("report/",)))
    for environment, folders in uses:
        for name in environment.list_templates():
            if name.startswith(folders):
                module, python = compiled_source(environment, name)
                modules[module] = python
    return modules


def write_compiled_templates() -> None:
    """Write estategen.templates_compiled afresh (``python -m estategen.render``)."""
    folder = Path(__file__).parent / "templates_compiled"
    for old in folder.glob("t_*.py"):
        old.unlink()
    header = "# Written by `python -m estategen.render` from estategen/templates; do not edit.\n"
    for module, python in sorted(compiled_templates().items()):
        (folder / f"{module.rsplit('.', 1)[1]}.py").write_text(header + python, encoding="utf-8")


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


if __name__ == "__main__":
    write_compiled_templates()
