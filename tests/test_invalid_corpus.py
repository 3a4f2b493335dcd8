"""The corpus of invalid blueprints, each run through the real CLI.

Every ``tests/fixtures/invalid/*.yaml`` is a small blueprint with exactly one problem. Its first
line says what estategen must report for it::

    # expect: <key.path> @ <line> : <substring of the message>

(the key path is empty for whole-document problems: ``# expect:  @ 3 : duplicate key``).
Each fixture is validated as a user would, ``python -m estategen validate FILE``, in text and
in JSON; it must exit 1 without a traceback and report an error with that key path, on that
line, whose message contains that substring.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "invalid"
FIXTURES = sorted(CORPUS.glob("*.yaml"))
BLUEPRINTS = sorted((ROOT / "blueprints").glob("*.yaml"))
FORMATS = ("text", "json")

HEADER = re.compile(rb"# expect: (?P<path>.*?) @ (?P<line>[0-9]+) : (?P<message>.+)")
# "FILE:LINE:COL: key.path: message"; a whole-document finding has no key path
FINDING = re.compile(r"(?P<line>[0-9]+):(?P<column>[0-9]+): (?P<rest>.*)")
KEY_PATH = re.compile(r"[A-Za-z0-9_./\[\]-]+: ")


@dataclass(frozen=True)
class Expected:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<document>'} @ {self.line} : {self.message}"


def expected(fixture: Path) -> Expected:
    first = fixture.read_bytes().split(b"\n", 1)[0]
    match = HEADER.fullmatch(first.rstrip(b"\r"))
    assert match, f"{fixture.name}: first line must be '# expect: <key.path> @ <line> : <text>'"
    return Expected(
        path=match["path"].decode(),
        line=int(match["line"]),
        message=match["message"].decode().strip(),
    )


def _validate(fixture: Path, output_format: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "estategen", "validate", str(fixture)]
    if output_format == "json":
        command += ["--format", "json"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)


_results: dict[tuple[Path, str], subprocess.CompletedProcess[str]] = {}


@pytest.fixture(scope="module", autouse=True)
def _run_selected_fixtures_in_parallel(request: pytest.FixtureRequest) -> None:
    """Start the subprocesses of every selected corpus test at once; the tests read results."""
    wanted = sorted(
        {
            (item.callspec.params["fixture"], item.callspec.params["output_format"])
            for item in request.session.items
            if item.module is sys.modules[__name__]
            and "fixture" in getattr(getattr(item, "callspec", None), "params", {})
        }
    )
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for key, result in zip(wanted, pool.map(lambda k: _validate(*k), wanted), strict=True):
            _results[key] = result


def validate(fixture: Path, output_format: str) -> subprocess.CompletedProcess[str]:
    key = (fixture, output_format)
    if key not in _results:
        _results[key] = _validate(fixture, output_format)
    return _results[key]


def text_findings(stdout: str, fixture: Path) -> list[tuple[int, str, str]]:
    """(line, key path, message) of each finding the text output prints for ``fixture``."""
    prefix = f"{fixture}:"
    findings = []
    for row in stdout.splitlines():
        if not row.startswith(prefix):
            continue
        match = FINDING.fullmatch(row[len(prefix) :])
        assert match, f"malformed finding line: {row!r}"
        rest = match["rest"]
        key = KEY_PATH.match(rest)
        # a message may itself contain ': ', so a key path is only taken as such at the start
        path, message = (rest[: key.end() - 2], rest[key.end() :]) if key else ("", rest)
        findings.append((int(match["line"]), path, message))
    return findings


def text_has(findings: list[tuple[int, str, str]], want: Expected) -> bool:
    for line, path, message in findings:
        if line != want.line:
            continue
        if want.path and path == want.path and want.message in message:
            return True
        if not want.path and not path and want.message in message:
            return True
    return False


@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_invalid_blueprint_is_refused_with_its_finding(fixture: Path, output_format: str) -> None:
    want = expected(fixture)
    result = validate(fixture, output_format)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    assert result.returncode == 1, output
    if output_format == "json":
        report = json.loads(result.stdout)
        assert report["valid"] is False
        findings = report["findings"]
        assert any(
            f["level"] == "error"
            and f["path"] == want.path
            and f["line"] == want.line
            and want.message in f["message"]
            and f["file"] == str(fixture)
            for f in findings
        ), f"expected {want}; got:\n{json.dumps(findings, indent=2)}"
    else:
        assert text_has(text_findings(result.stdout, fixture), want), (
            f"expected {want}; got:\n{result.stdout}"
        )
        assert re.search(r"^[1-9][0-9]* error\(s\), [0-9]+ warning\(s\)$", result.stdout, re.M)


def test_corpus_is_large_enough() -> None:
    assert len(FIXTURES) >= 40


def test_corpus_names_are_descriptive() -> None:
    for fixture in FIXTURES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", fixture.stem), fixture.name


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=[b.stem for b in BLUEPRINTS])
def test_example_blueprint_is_valid(blueprint: Path) -> None:
    result = _validate(blueprint, "text")
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid estate" in result.stdout


def test_there_are_example_blueprints() -> None:
    assert {"lab", "campus"} <= {b.stem for b in BLUEPRINTS}
