"""Findings and the one error root the CLI catches.

Every problem a user can cause ends up as a :class:`Finding` with a key path and, when the
blueprint text is known, the file, line and column it points at. Each finding carries the id
of the rule that raised it, set where it is detected: ``load/<kind>`` by the YAML reader,
``schema/<rule>`` by the shape, ``check/<name>`` by a semantic check. Text, JSON and SARIF
output are formatters over the same findings.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal

from estategen.limits import MAX_QUOTED

Level = Literal["error", "warning", "info"]
# How much each level weighs, for --fail-on: a finding fails a run at or above the threshold.
LEVELS: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One problem in a blueprint. Sorting orders by file, line, column, then path."""

    file: str
    line: int
    column: int
    path: str
    message: str
    level: Level = "error"
    rule: str = ""

    def format(self) -> str:
        """One line, whatever the blueprint's keys hold: a key with a newline in it must not
        start a second finding line in the output tools and people read."""
        where = f"{_one_line(self.file)}:{self.line}:{self.column}"
        prefix = "" if self.level == "error" else f"{self.level}: "
        key = f"{_one_line(clip_path(self.path))}: " if self.path else ""
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{where}: {key}{prefix}{_one_line(self.message)}{rule}"

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "path": clip_path(self.path)}


def _one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters written as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def clip(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` as a message shows it: at most ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def quote(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` quoted as a message shows it: at most ``limit`` characters of it."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


_LONG_KEY = re.compile(rf"[^.\[\]]{{{MAX_QUOTED + 1},}}")


def clip_path(path: str) -> str:
    """A key path as findings show it: each key in it cut to MAX_QUOTED characters."""
    if len(path) <= MAX_QUOTED:
        return path
    return _LONG_KEY.sub(lambda long: clip(long.group()), path)


def issue(path: str, message: str, level: Level = "error", rule: str = "") -> Finding:
    """A finding not yet placed in a file; :func:`place` adds file, line and column. A check's
    findings without a rule get the check's own (``check/<name>``) when the check runs."""
    return Finding("", 0, 0, path, message, level, rule)


Position = tuple[int, int]


def place(
    findings: Iterable[Finding], file: str, positions: Mapping[str, Position]
) -> list[Finding]:
    """Attach the position of each finding's key path (or its nearest known ancestor)."""
    placed = []
    for finding in findings:
        line, column = locate(finding.path, positions)
        placed.append(replace(finding, file=file, line=line, column=column))
    return sorted(placed)


def locate(path: str, positions: Mapping[str, Position]) -> Position:
    """Position of ``path``, walking up to the closest ancestor the loader recorded."""
    while True:
        if path in positions:
            return positions[path]
        if not path:
            return (1, 1)
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""


_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # as the YAML reader counts lines
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")
_EXCERPT = 160  # characters of a long line shown around the column


def source_lines(source: bytes) -> list[str]:
    """The blueprint's lines, numbered as the YAML reader numbers them."""
    text = source.decode("utf-8-sig", errors="replace")
    if not any(other in text for other in _OTHER_BREAKS):
        return text.split("\n")  # the same lines, without a regular expression's walk
    return _LINE_BREAK.split(text)


def excerpt(lines: Sequence[str], line: int, column: int) -> list[str]:
    """The blueprint line a finding points at, and a caret under its column, as compilers
    show them. Characters a terminal would act on are shown as one character each (a tab as
    a space, others as '?'), so the caret stays under the column."""
    if not 1 <= line <= len(lines):
        return []
    text = "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in lines[line - 1])
    at = min(max(column, 1), len(text) + 1) - 1
    if len(text) > _EXCERPT:
        start = max(0, min(at - _EXCERPT // 2, len(text) - _EXCERPT))
        text, at = text[start : start + _EXCERPT], at - start
    gutter = f"{line:>6} | "
    return [f"{gutter}{text}".rstrip(), f"{' ' * (len(gutter) - 2)}| {' ' * at}^"]


def text_report(
    findings: Sequence[Finding], source: bytes | None, suppressed: Sequence[Finding] = ()
) -> str:
    """Findings as a person reads them: each with the line it points at and a caret under the
    column, then the counts and what was suppressed, by rule."""
    lines = source_lines(source) if source is not None and findings else []
    out: list[str] = []
    for finding in findings:
        out.append(finding.format())
        out.extend(excerpt(lines, finding.line, finding.column))
    counts = Counter(f.level for f in findings)
    silenced = Counter(f.rule for f in suppressed)
    for rule, times in sorted(silenced.items()):
        out.append(f"suppressed: {times} finding(s) of {rule}")
    if findings or suppressed:
        summary = f"{counts['error']} error(s), {counts['warning']} warning(s)"
        if counts["info"]:
            summary += f", {counts['info']} note(s)"
        if suppressed:
            summary += f", {len(suppressed)} suppressed"
        out.append(summary)
    return "".join(f"{line}\n" for line in out)


def fails(findings: Iterable[Finding], threshold: str) -> bool:
    """Whether a finding is at or above ``threshold`` (``--fail-on``)."""
    return any(LEVELS[f.level] >= LEVELS[threshold] for f in findings)


def did_you_mean(typed: str | None, names: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the name closest to ``typed``, or nothing."""
    if typed is None:
        return ""
    import difflib  # only for a name that is not known

    close = difflib.get_close_matches(typed, list(names), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def findings_json(findings: Iterable[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2, sort_keys=True) + "\n"


class EstategenError(Exception):
    """Root of every error a user can cause; the CLI catches this and nothing broader."""

    exit_code = 2


class UsageError(EstategenError):
    """Bad command line, unreadable file, or an output folder we must not touch."""

    exit_code = 2


class BlueprintInvalid(EstategenError):
    """The blueprint has at least one error-level finding; carries all of them."""

    exit_code = 1

    def __init__(
        self,
        findings: list[Finding],
        source: bytes | None = None,
        suppressed: Sequence[Finding] = (),
        in_source: Sequence[str] = (),
    ) -> None:
        super().__init__(f"{sum(f.level == 'error' for f in findings)} error(s)")
        self.findings = findings
        # the blueprint's bytes, when read, so output can show the lines findings point at
        self.source = source
        # warnings silenced by a rule id, reported as such beside the errors; ``in_source`` are
        # the rule ids the blueprint's own ``suppress:`` lists
        self.suppressed = list(suppressed)
        self.in_source = list(in_source)


class FindingsGate(EstategenError):
    """``--fail-on``: a finding at or above the chosen level stops the command."""

    exit_code = 1

    def __init__(self, level: str) -> None:
        super().__init__(f"findings at or above {level} level (--fail-on {level}); nothing written")


def key_path(parts: Iterable[str | int]) -> str:
    """Format ``("node_pools", 2, "gpus")`` as ``node_pools[2].gpus``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
