"""Rendering: every registered renderer run on the model, their files merged into one mapping
of relative paths; the writer does all I/O.

Renderers are pure functions from the model to files (:mod:`estategen.output`); each owns a
distinct set of output paths.
"""

from __future__ import annotations

from estategen.errors import EstategenError
from estategen.model import Estate
from estategen.output import MANIFEST, RENDERERS, SAFE_PATH, Files


class RenderError(EstategenError):
    """A renderer produced something the writer must not write (a bug, reported clearly)."""

    exit_code = 3


def render(estate: Estate) -> Files:
    """Run every registered renderer and merge their files."""
    _load_renderers()
    files: Files = {}
    for function in RENDERERS:
        for path, output in function(estate).items():
            if not SAFE_PATH.fullmatch(path) or ".." in path.split("/"):
                raise RenderError(f"renderer {function.__name__} produced unsafe path {path!r}")
            if path in files or path == MANIFEST:
                raise RenderError(f"two renderers produce {path}")
            files[path] = output
    return dict(sorted(files.items()))


def _load_renderers() -> None:
    """Import the modules whose renderers register themselves."""
    from estategen import renderers  # noqa: F401
