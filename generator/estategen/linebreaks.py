"""Characters that some reader takes for a line break, though editors and code review show none.

YAML reads U+0085, U+2028, U+2029 and a carriage return without a line feed as line breaks;
Python's ``str.splitlines`` also breaks at a vertical tab, a form feed and the C0 separators
U+001C..U+001E; slurmctld breaks at a line feed only. A file holding one of them reads
differently to each: text that a review sees inside a comment becomes a key to YAML, and a
slurm.conf line a person reads as one becomes two to a line splitter. Blueprints and the
Slurm files ``estategen import`` reads refuse them (a CRLF line ending is an ordinary one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Each refused character with the name a finding gives it (its Unicode name; the C0 and C1
# controls have none in Python's unicodedata, so their aliases from the Unicode standard).
HIDDEN_BREAKS: dict[str, str] = {
    "\x0b": "U+000B LINE TABULATION (vertical tab)",
    "\x0c": "U+000C FORM FEED",
    "\r": "U+000D CARRIAGE RETURN without a line feed after it",
    "\x1c": "U+001C FILE SEPARATOR",
    "\x1d": "U+001D GROUP SEPARATOR",
    "\x1e": "U+001E RECORD SEPARATOR",
    "\x1f": "U+001F UNIT SEPARATOR",
    "\x85": "U+0085 NEXT LINE",
    "\u2028": "U+2028 LINE SEPARATOR",
    "\u2029": "U+2029 PARAGRAPH SEPARATOR",
}
_HIDDEN = re.compile("[\x0b\x0c\x1c-\x1f\x85\u2028\u2029]|\r(?!\n)")
# Whole-text membership tests find none of them in microseconds (the regular expression
# takes milliseconds on the 100k estate's blueprint): it only locates one that is there.
_ASCII = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
_WIDE = ("\x85", "\u2028", "\u2029")


@dataclass(frozen=True, slots=True)
class HiddenBreak:
    """Where the first such character stands (1-based line and column, lines counted at line
    feeds as editors count them) and its name."""

    line: int
    column: int
    name: str


def find_hidden_break(text: str) -> HiddenBreak | None:
    """The first character of :data:`HIDDEN_BREAKS` in ``text``, or None."""
    if (
        not any(char in text for char in _ASCII)
        and (text.isascii() or not any(char in text for char in _WIDE))
        and ("\r" not in text or text.count("\r") == text.count("\r\n"))
    ):
        return None
    match = _HIDDEN.search(text)
    if match is None:  # pragma: no cover - the tests above found one
        return None
    start = match.start()
    line_start = text.rfind("\n", 0, start) + 1
    return HiddenBreak(
        text.count("\n", 0, start) + 1, start - line_start + 1, HIDDEN_BREAKS[match[0]]
    )
