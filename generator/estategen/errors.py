"""Findings and the one error root the CLI catches.

Every problem a user can cause ends up as a :class:`Finding` with a key path and, when the
blueprint text is known, the file, line and column it points at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Literal

from estategen.limits import MAX_QUOTED

Level = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in a blueprint. Sorting orders by file, line, column, then path."""

    file: str
    line: int
    column: int
    path: str
    message: str
    level: Level = "error"

    def format(self) -> str:
        """One line, whatever the blueprint's keys hold: a key with a newline in it must not
        start a second finding line in the output tools and people read."""
        where = f"{_one_line(self.file)}:{self.line}:{self.column}"
        prefix = "" if self.level == "error" else "warning: "
        key = f"{_one_line(clip_path(self.path))}: " if self.path else ""
        return f"{where}: {key}{prefix}{_one_line(self.message)}"

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


def issue(path: str, message: str, level: Level = "error") -> Finding:
    """A finding not yet placed in a file; :func:`place` adds file, line and column."""
    return Finding(file="", line=0, column=0, path=path, message=message, level=level)


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

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(f"{sum(f.level == 'error' for f in findings)} error(s)")
        self.findings = findings


def key_path(parts: Iterable[str | int]) -> str:
    """Format ``("node_pools", 2, "gpus")`` as ``node_pools[2].gpus``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
