"""The Jinja environments' templates, loaded from the Python Jinja compiled them to.

Imported by the renderers and the report when they first render a template, so that
``estategen validate`` does not import Jinja. ``python -m estategen.templating`` writes
``estategen/templates_compiled/`` afresh.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
from collections.abc import MutableMapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from estategen.model import STATE_SAVE_LOCATION


class CompiledLoader(jinja2.PackageLoader):
    """The package's templates, each from the Python that Jinja compiled it to when the
    package holds it for exactly this template text, Jinja version and environment settings
    (module ``estategen.templates_compiled.t_<digest of those>``); otherwise compiled here.

    Compiling the templates took 40 ms of every render. ``python -m estategen.templating``
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
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:  # a copy of the package without templates_compiled
            spec = None
        if spec is None or not isinstance(spec.loader, importlib.abc.InspectLoader):
            return super().load(environment, name, globals)
        code = spec.loader.get_code(module)  # the byte-compiled file when there is one
        if code is None:
            return super().load(environment, name, globals)
        namespace: dict[str, Any] = {"environment": environment, "__file__": filename}
        exec(code, namespace)  # what Template.from_code does with freshly compiled code
        return environment.template_class.from_module_dict(environment, namespace, globals or {})


COMPILED_PACKAGE = "estategen.templates_compiled"
COMPILED_FOLDER = Path(__file__).parent / "templates_compiled"


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
def environment() -> jinja2.Environment:
    """The one Jinja environment of the renderers: strict, whitespace-tidy, templates from
    the package."""
    templates = jinja2.Environment(
        loader=CompiledLoader("estategen", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    templates.globals["state_save_location"] = STATE_SAVE_LOCATION
    return templates


def compiled_templates() -> dict[str, str]:
    """Every module estategen.templates_compiled holds: module name -> Python source."""
    from estategen.report import _environment

    modules = {}
    uses = ((environment(), ("slurm/", "ansible/")), (_environment(), ("report/",)))
    for templates, folders in uses:
        for name in templates.list_templates():
            if name.startswith(folders):
                module, python = compiled_source(templates, name)
                modules[module] = python
    return modules


HEADER = (
    f"# Written by `python -m estategen.templating` with Jinja {jinja2.__version__} from "
    "estategen/templates; do not edit.\n"
)


def write_compiled_templates() -> None:
    """Write estategen.templates_compiled afresh."""
    for old in COMPILED_FOLDER.glob("t_*.py"):
        old.unlink()
    for module, python in sorted(compiled_templates().items()):
        path = COMPILED_FOLDER / f"{module.rsplit('.', 1)[1]}.py"
        path.write_text(HEADER + python, encoding="utf-8")


if __name__ == "__main__":
    write_compiled_templates()
