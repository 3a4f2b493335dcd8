"""The corpus of invalid blueprints, each validated as ``estategen validate`` validates it.

Every ``tests/fixtures/invalid/*.yaml`` is a small blueprint with exactly one problem. Its first
line says what estategen must report for it::

    # expect: <key.path> @ <line> : <substring of the message>

(the key path is empty for whole-document problems: ``# expect:  @ 3 : duplicate key``).
Each fixture goes through ``validate_file``, the one call ``estategen validate FILE`` makes,
in this process: it must be refused (``BlueprintInvalid``, which the command turns into exit 1;
any other error fails the test), and both what the command prints in text and what it prints
with ``--format json`` must hold an error with that key path, on that line, whose message
contains that substring.

That the command itself exits 0, 1, 2 and 3 with the right output on stdout and stderr is
tested once, through real processes, at the end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from estategen.errors import BlueprintInvalid, fails, findings_json, text_report
from estategen.pipeline import validate_file

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "invalid"
FIXTURES = sorted(CORPUS.glob("*.yaml"))
BLUEPRINTS = sorted((ROOT / "blueprints").glob("*.yaml"))

HEADER = re.compile(rb"# expect: (?P<path>.*?) @ (?P<line>[0-9]+) : (?P<message>.+)")
# "FILE:LINE:COL: key.path: message"; a whole-document finding has no key path
FINDING = re.compile(r"(?P<line>[0-9]+):(?P<column>[0-9]+): (?P<rest>.*)")
KEY_PATH = re.compile(r"[A-Za-z0-9_./\[\]-]+: ")
SUMMARY = re.compile(r"^[1-9][0-9]* error\(s\), [0-9]+ warning\(s\)$", re.M)


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


def refused(fixture: Path) -> BlueprintInvalid:
    """The refusal ``estategen validate FIXTURE`` prints: the command passes its argument to
    ``validate_file`` as a string, and ``BlueprintInvalid`` is the one error it exits 1 on."""
    with pytest.raises(BlueprintInvalid) as refusal:
        validate_file(str(fixture))
    return refusal.value


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


def json_has(findings: list[dict[str, object]], want: Expected, fixture: Path) -> bool:
    return any(
        f["level"] == "error"
        and f["path"] == want.path
        and f["line"] == want.line
        and want.message in str(f["message"])
        and f["file"] == str(fixture)
        for f in findings
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_invalid_blueprint_is_refused_with_its_finding(fixture: Path) -> None:
    want = expected(fixture)
    refusal = refused(fixture)
    # `validate --format json` prints these as its report's "findings"
    findings = json.loads(findings_json(refusal.findings))
    assert json_has(findings, want, fixture), (
        f"expected {want}; got:\n{json.dumps(findings, indent=2)}"
    )
    # `validate` prints this report on stdout
    text = text_report(refusal.findings, refusal.source, refusal.suppressed)
    assert text_has(text_findings(text, fixture), want), f"expected {want}; got:\n{text}"
    assert SUMMARY.search(text), text


def test_corpus_is_large_enough() -> None:
    assert len(FIXTURES) >= 40


def test_corpus_names_are_descriptive() -> None:
    for fixture in FIXTURES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", fixture.stem), fixture.name


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=[b.stem for b in BLUEPRINTS])
def test_example_blueprint_is_valid(blueprint: Path) -> None:
    # validate_file raises on every error-level finding; the gate checks the same once more
    result = validate_file(str(blueprint))
    assert not fails(result.findings, "error"), result.findings


def test_there_are_example_blueprints() -> None:
    assert {"lab", "campus"} <= {b.stem for b in BLUEPRINTS}


# --- the command itself: exit code, stdout and stderr, once per exit code ---------------------

INVALID = CORPUS / "schema-unknown-key-did-you-mean.yaml"
MISSING = CORPUS / "no-such-blueprint.yaml"
# the command with validate_file broken as a bug would break it: the last line of defence
BROKEN = (
    "import sys\n"
    "from estategen import cli, pipeline\n"
    "def broken(*args, **kwargs):\n"
    "    raise RuntimeError('a bug')\n"
    "pipeline.validate_file = broken\n"
    "sys.argv = ['estategen', *sys.argv[1:]]\n"
    "cli.main()\n"
)


def run(*args: str | Path, broken: bool = False) -> subprocess.CompletedProcess[str]:
    entry = ["-c", BROKEN] if broken else ["-m", "estategen"]
    command = [sys.executable, *entry, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_command_exits_0_on_a_valid_blueprint_with_its_summary() -> None:
    lab = ROOT / "blueprints" / "lab.yaml"
    result = run("validate", lab)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1].startswith(f"{lab}: valid estate 'lab': ")


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_the_command_exits_1_on_an_invalid_blueprint_with_its_finding_on_stdout(
    output_format: str,
) -> None:
    want = expected(INVALID)
    result = run("validate", INVALID, "--format", output_format)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == ""
    if output_format == "json":
        report = json.loads(result.stdout)
        assert report["valid"] is False
        assert json_has(report["findings"], want, INVALID), result.stdout
    else:
        assert text_has(text_findings(result.stdout, INVALID), want), result.stdout
        assert SUMMARY.search(result.stdout), result.stdout


def test_the_command_exits_2_on_an_unreadable_file_with_one_line_on_stderr() -> None:
    result = run("validate", MISSING)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr == f"estategen: {MISSING}: no such file\n"


def test_the_command_exits_3_on_its_own_bug_with_one_line_and_no_traceback() -> None:
    result = run("validate", INVALID, broken=True)
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("estategen: internal error (RuntimeError: a bug). This is a bug in ")
