"""The registry of the checks: the base estate passes every check, the lab example validates with
the warnings its report shows, and every public check function is registered and specified in
the file of its domain (tests/checks/test_<module>.py).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

from estategen import checks, pipeline

from .base import ROOT, estate

# --- the base and the registry -------------------------------------------------------------------


def test_base_estate_passes_every_check() -> None:
    assert checks.run_checks(estate()) == []


def test_lab_blueprint_validates_with_the_warnings_its_report_shows() -> None:
    """The smallest example keeps two things a real site would fix, so that both validate and
    report show them: no shared file system, and GPU metrics without the estate labels."""
    findings = pipeline.validate_file(ROOT / "blueprints" / "lab.yaml").findings
    assert [(f.path, f.rule) for f in findings] == [
        ("node_pools[0]", "check/pool-without-storage"),
        ("node_pools[1]", "check/pool-without-observability"),
    ]


def test_every_public_check_function_is_registered_and_specified_in_its_domains_file() -> None:
    modules = [
        importlib.import_module(f"{checks.__name__}.{info.name}")
        for info in pkgutil.iter_modules(checks.__path__)
        if info.name != "core"  # the registry and the helpers the domains share
    ]
    assert sorted(m.__name__ for m in modules) == sorted(m.__name__ for m in checks.DOMAINS)
    helpers = {"host_budget", "now"}
    public = {
        name
        for module in modules
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if function.__module__ == module.__name__
        and not name.startswith("_")
        and name not in helpers
    }
    registered = [function.__name__ for function in checks.CHECKS]
    assert len(registered) == len(set(registered)), "a check is registered twice"
    assert set(registered) == public, "a public function in estategen.checks lacks @check"
    for function in checks.CHECKS:
        domain = function.__module__.rpartition(".")[2]
        specification = (Path(__file__).parent / f"test_{domain}.py").read_text()
        assert f"checks.{function.__name__}" in specification, (
            f"{function.__name__} has no tests in tests/checks/test_{domain}.py"
        )
