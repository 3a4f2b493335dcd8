"""The README is a front page whose commands are the ones CI runs, and every link in the
documentation leads somewhere: MkDocs builds docs/ in strict mode, and the README and the
benchmarks page (outside docs/) are checked here the same way."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# Markdown links and images whose target is a path in the repository (not a URL or an anchor).
LINK = re.compile(r"!?\[[^\]]*\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _indented_commands(section: str) -> list[str]:
    """The README's code lines (indented four spaces) under one `## ` heading."""
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start : end if end != -1 else None]
    return [line[4:] for line in body.splitlines() if line.startswith("    ") and line.strip()]


def _linked_pages() -> list[Path]:
    return [README, ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"


@pytest.mark.parametrize("page", _linked_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    broken = []
    for target, _anchor in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        resolved = (page.parent / target).resolve()
        if not resolved.exists() or ROOT not in resolved.parents:
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_the_readme_render_command_installs_into_a_virtual_environment() -> None:
    """Debian's python3 is externally managed (PEP 668): `pip install .` into it is refused,
    so the documented command installs through scripts/install.sh into .venv/ and runs the
    estategen found there."""
    (render,) = [line for line in _indented_commands("Two commands") if "render" in line]
    steps = [shlex.split(step) for step in render.split("&&")]
    assert steps[0] == ["scripts/install.sh"]
    assert steps[1][:3] == [".venv/bin/estategen", "render", "blueprints/lab.yaml"]
    assert not any("pip" in word for step in steps for word in step)
    assert (ROOT / "blueprints" / "lab.yaml").is_file()
    assert (ROOT / "scripts" / "install.sh").stat().st_mode & 0o111


def test_ci_runs_the_readme_test_command() -> None:
    (test_command,) = [line for line in _indented_commands("Two commands") if "render" not in line]
    assert test_command == "scripts/test.sh"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [line for line in ci if line and not line.startswith(("#", "set ", "cd "))] == [
        test_command
    ]


def test_the_documentation_builds_in_strict_mode(tmp_path: Path) -> None:
    """A broken link, a missing anchor or a page missing from the navigation is a warning,
    and strict mode makes every warning fail the build."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "outputs" / "slurm" / "index.html").is_file()
