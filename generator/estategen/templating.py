"""The Jinja environments' template loading, with Jinja's own bytecode cache.

Imported by the renderers and the report when they first render a template, so that
``estategen validate`` does not import Jinja.
"""

from __future__ import annotations

import os
from functools import cache

import jinja2

from estategen.model import STATE_SAVE_LOCATION


def bytecode_cache() -> jinja2.BytecodeCache | None:
    """Jinja's compiled templates, kept between runs in the user's cache folder
    (``$XDG_CACHE_HOME/estategen``, else ``~/.cache/estategen``), in a folder per Jinja
    release; none when that folder cannot be made or written (every run compiles then).

    Jinja reuses a compiled template while its name, file and text are the same: a change to
    an environment's settings (``trim_blocks``, ``autoescape``) needs the folder cleared.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "estategen", f"jinja-{jinja2.__version__}")
    if not os.path.isabs(folder):  # no home folder to expand ~ into
        return None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    return jinja2.FileSystemBytecodeCache(folder)


_MARKDOWN_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_~[]<>|&"})


def md(value: object) -> str:
    """Text safe in Markdown (and a table cell): markup characters escaped, never interpreted."""
    return str(value).translate(_MARKDOWN_SPECIAL)


@cache
def environment() -> jinja2.Environment:
    """The one Jinja environment, of the renderers and the report: strict, whitespace-tidy,
    templates from the package. HTML templates (``*.html.j2``, the report's page and its inline
    SVG) escape every value; no other output is HTML, so nothing else is escaped, and Markdown
    values go through the ``md`` filter."""
    templates = jinja2.Environment(
        loader=jinja2.PackageLoader("estategen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html.j2",), default_for_string=False, default=False
        ),
        bytecode_cache=bytecode_cache(),
    )
    templates.globals["state_save_location"] = STATE_SAVE_LOCATION
    templates.filters["md"] = md
    return templates
