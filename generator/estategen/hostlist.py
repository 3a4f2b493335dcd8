"""Slurm-style hostlist expressions: expand ``gpu-[01-04],login1`` and compress names back.

Expansion is bounded: the size of an expression is computed arithmetically
before any list is built, so a typo such as ``n[0-99999999]`` fails at once
instead of exhausting memory.  Every name an expression can produce is
checked to be a lowercase short host name before anything is expanded.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

__all__ = ["MAX_EXPANSION", "HostlistError", "compress", "count", "expand", "split_items"]

MAX_EXPANSION: int = 65_536  # names one expression may expand to

_MAX_DIGITS = 9  # keeps every range below 10**9 names and int() parsing trivial
_MAX_NAME_LENGTH = 63  # DNS label limit
_HOSTNAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_NUMBER = re.compile(r"[0-9]+")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_ALLOWED_CHARS = _NAME_CHARS | frozenset("[],")
_ADDRESS_CHARS = frozenset(".:")  # network addresses (NodeAddr) only
_CHAR_NAMES = {" ": "space", "\t": "tab", "\n": "newline", "\r": "carriage return"}
_SHOWN_CHARS = 60


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded; str(err) is a one-line user-facing message."""


@dataclass(frozen=True, slots=True)
class _Range:
    """Numbers lo..hi inclusive, zero-padded to width as spelled by lo in the expression."""

    lo: int
    hi: int
    width: int

    @property
    def size(self) -> int:
        """Names this range contributes, known without iterating."""
        return self.hi - self.lo + 1

    @property
    def max_length(self) -> int:
        """Longest rendered number, so name length can be checked before expanding."""
        return max(self.width, len(str(self.hi)))

    def render(self) -> Iterator[str]:
        """Yield the numbers as they appear in host names."""
        for number in range(self.lo, self.hi + 1):
            yield str(number).zfill(self.width)


# One item is a sequence of literal text and bracket groups (tuples of ranges).
_Part: TypeAlias = str | tuple[_Range, ...]
_Item: TypeAlias = tuple[_Part, ...]


def _show(text: str) -> str:
    """Quote user text on one line (repr escapes newlines) and keep messages short."""
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return repr(text)


def _char_hint(char: str) -> str:
    """Suggest the usual fix for a refused character, so the message says what to do."""
    if char.isspace():
        return " (separate names with ',' and no spaces)"
    if char.isupper():
        return " (host names are lowercase)"
    if char == ".":
        return " (use short host names, not domain names)"
    return ""


def _check_characters(expression: str, addresses: bool = False) -> None:
    """Refuse characters no host name (or, with ``addresses``, no network address: IPv4,
    IPv6 or DNS name) may contain, before any structural parsing."""
    allowed = _ALLOWED_CHARS | _ADDRESS_CHARS if addresses else _ALLOWED_CHARS
    for position, char in enumerate(expression, start=1):
        if char not in allowed:
            shown = _CHAR_NAMES.get(char, repr(char))
            raise HostlistError(
                f"character {shown} at position {position} is not allowed "
                f"in hostlist {_show(expression)}{_char_hint(char)}"
            )


def split_items(expression: str) -> list[str]:
    """Split on top-level commas; commas inside brackets belong to the bracket."""
    shown = _show(expression)
    items: list[str] = []
    start = 0
    open_at = -1
    for position, char in enumerate(expression):
        if char == "[":
            if open_at >= 0:
                raise HostlistError(f"nested '[' at position {position + 1} in hostlist {shown}")
            open_at = position
        elif char == "]":
            if open_at < 0:
                raise HostlistError(
                    f"']' at position {position + 1} has no matching '[' in hostlist {shown}"
                )
            open_at = -1
        elif char == "," and open_at < 0:
            items.append(expression[start:position])
            start = position + 1
    if open_at >= 0:
        raise HostlistError(f"'[' at position {open_at + 1} is never closed in hostlist {shown}")
    items.append(expression[start:])
    for item in items:
        if not item:
            raise HostlistError(f"empty item in hostlist {shown} (stray ',')")
    return items


def _parse_number(text: str, element: str, item: str) -> int:
    """Parse one bound, refusing non-digits and sizes that would make ranges absurd."""
    if not _NUMBER.fullmatch(text):
        raise HostlistError(
            f"{_show(element)} in {_show(item)} is not a number or 'lo-hi' range of digits"
        )
    if len(text) > _MAX_DIGITS:
        raise HostlistError(
            f"number {_show(text)} in {_show(item)} is too large (more than {_MAX_DIGITS} digits)"
        )
    return int(text)


def _parse_bracket(content: str, item: str) -> tuple[_Range, ...]:
    """Parse the inside of one bracket: comma-separated numbers and lo-hi ranges."""
    if not content:
        raise HostlistError(f"empty brackets '[]' in {_show(item)}")
    ranges: list[_Range] = []
    for element in content.split(","):
        if not element:
            bracket = _show(f"[{content}]")
            raise HostlistError(f"empty element in brackets {bracket} of {_show(item)}")
        lo_text, dash, hi_text = element.partition("-")
        if not dash:
            number = _parse_number(element, element, item)
            ranges.append(_Range(number, number, len(element)))
            continue
        if not lo_text or not hi_text or "-" in hi_text:
            raise HostlistError(
                f"malformed range {_show(element)} in {_show(item)} (expected 'lo-hi')"
            )
        lo = _parse_number(lo_text, element, item)
        hi = _parse_number(hi_text, element, item)
        if lo > hi:
            raise HostlistError(
                f"range {_show(element)} in {_show(item)} runs backwards ({lo} > {hi})"
            )
        ranges.append(_Range(lo, hi, len(lo_text)))
    return tuple(ranges)


def _parse_item(item: str) -> _Item:
    """Parse one top-level item and prove every name it yields is a valid host name."""
    parts: list[_Part] = []
    for index, piece in enumerate(re.split(r"\[([^\]]*)\]", item)):
        if index % 2:
            parts.append(_parse_bracket(piece, item))
        elif piece:
            parts.append(piece)
    first, last = parts[0], parts[-1]
    for end, part, test in (("start", first, str.startswith), ("end", last, str.endswith)):
        if isinstance(part, str) and test(part, "-"):
            raise HostlistError(
                f"names from {_show(item)} would {end} with '-', which a host name cannot"
            )
    longest = sum(
        len(part) if isinstance(part, str) else max(r.max_length for r in part) for part in parts
    )
    if longest > _MAX_NAME_LENGTH:
        raise HostlistError(
            f"names from {_show(item)} would be up to {longest} characters long, "
            f"above the {_MAX_NAME_LENGTH} allowed in a host name"
        )
    return tuple(parts)


@lru_cache(maxsize=4096)
def _parse(expression: str, addresses: bool = False) -> tuple[_Item, ...]:
    """Validate the whole expression up front so errors never depend on expansion.

    Parsed once per process: validation counts a pool's expression, the model expands it,
    plan counts the NodeName= lines of two slurm.conf copies.
    """
    if not expression.strip():
        raise HostlistError("hostlist expression is empty")
    _check_characters(expression, addresses)
    return tuple([_parse_item(item) for item in split_items(expression)])


def _item_count(item: _Item) -> int:
    """Size of one item's cartesian product, by arithmetic only."""
    return math.prod(sum(r.size for r in part) for part in item if not isinstance(part, str))


def count(expression: str, addresses: bool = False) -> int:
    """Return how many names the expression denotes, without expanding it."""
    return sum(_item_count(item) for item in _parse(expression, addresses))


def expand(expression: str, limit: int = MAX_EXPANSION, addresses: bool = False) -> list[str]:
    """Return all names in order of appearance, refusing expressions larger than limit.
    With ``addresses``, names may hold '.' and ':' (slurm.conf's NodeAddr: IPv4 like
    ``10.1.0.[1-4]``, IPv6, or DNS names).

    Duplicates are kept, so len(expand(x)) == count(x).
    """
    items = _parse(expression, addresses)
    total = sum(_item_count(item) for item in items)
    if total > limit:
        raise HostlistError(
            f"hostlist {_show(expression)} expands to {total} names, "
            f"above the limit of {limit} (check the bracket ranges)"
        )
    names: list[str] = []
    for item in items:
        pools = [
            [part] if isinstance(part, str) else [n for r in part for n in r.render()]
            for part in item
        ]
        names.extend("".join(combination) for combination in itertools.product(*pools))
    return names


def _runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Collapse sorted distinct numbers into inclusive (lo, hi) runs."""
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _absorb_unpadded(groups: dict[tuple[str, int, str], set[int]]) -> None:
    """Let padded 08-09 run on into unpadded 10-12, so "[08-12]" compresses back to one range."""
    for prefix, width, suffix in sorted(groups):
        if width == 0:
            continue
        unpadded = groups.get((prefix, 0, suffix))
        boundary = 10 ** (width - 1)
        if unpadded is None or boundary - 1 not in groups[(prefix, width, suffix)]:
            continue
        number = boundary
        while number in unpadded:
            unpadded.remove(number)
            groups[(prefix, width, suffix)].add(number)
            number += 1
        if not unpadded:
            del groups[(prefix, 0, suffix)]


def compress(names: Iterable[str]) -> str:
    """Return a deterministic Slurm ranged string that expands back to the same set of names.

    Names are grouped by (prefix, zero-pad width, suffix) around their last run of
    digits; width 0 means unpadded.  Raises HostlistError for names that are not
    valid host names, because the result could not be expanded back.
    """
    # Renderers compress the same pool's hosts for several files; the result is a pure
    # function of the names, so identical lists are compressed once.
    return _compress(names if isinstance(names, tuple) else tuple(names))


@lru_cache(maxsize=4096)
def _compress(names: tuple[str, ...]) -> str:
    run = _one_range(names)
    if run is not None:
        return run
    plain: list[str] = []
    groups: dict[tuple[str, int, str], set[int]] = {}
    for name in set(names):
        parts = _split(name)
        if parts is None:
            plain.append(name)
            continue
        key, number = parts
        group = groups.get(key)
        if group is None:
            groups[key] = {number}
        else:
            group.add(number)
    _absorb_unpadded(groups)

    entries: list[tuple[tuple[str, int, str], str]] = [((name, -1, ""), name) for name in plain]
    for key, numbers in groups.items():
        prefix, width, suffix = key
        spans = [
            str(lo).zfill(width) if lo == hi else f"{str(lo).zfill(width)}-{str(hi).zfill(width)}"
            for lo, hi in _runs(sorted(numbers))
        ]
        body = spans[0] if len(spans) == 1 and "-" not in spans[0] else f"[{','.join(spans)}]"
        entries.append((key, f"{prefix}{body}{suffix}"))
    return ",".join(text for _, text in sorted(entries))


def _one_range(names: tuple[str, ...]) -> str | None:
    """``prefix[lo-hi]suffix`` when ``names`` are exactly that range in order (a pool's
    hosts, a switch's), as the grouping below would write it; else None.

    Only the first and last names are split: the others are checked by writing the range
    out (in C, through ``%``) and comparing. This is most of what renders compress, and a
    third of the time the grouping took.
    """
    if len(names) < 2:
        return None
    first, last = _split(names[0]), _split(names[-1])
    if first is None or last is None:
        return None
    (prefix, width, suffix), lo = first
    (last_prefix, last_width, last_suffix), hi = last
    # n001 ... n250: the last is unpadded by the split's rule, and the grouping joins the
    # padded run and the unpadded one into n[001-250] (_absorb_unpadded)
    if (last_prefix, last_suffix) != (prefix, suffix) or last_width not in (width, 0):
        return None
    if hi - lo + 1 != len(names):
        return None
    pattern = f"{prefix}%0{width}d{suffix}" if width else f"{prefix}%d{suffix}"
    if names != tuple(map(pattern.__mod__, range(lo, hi + 1))):
        return None
    return f"{prefix}[{str(lo).zfill(width)}-{str(hi).zfill(width)}]{suffix}"


def _split(name: str) -> Split:
    """:func:`_split_name`, once per name in a process (the hosts of a pool are compressed
    for its node line, topology groups, partitions and estate.json)."""
    if name in _SPLIT:
        return _SPLIT[name]
    parts = _split_name(name)
    if len(_SPLIT) < _SPLIT_LIMIT:
        _SPLIT[name] = parts
    return parts


Split: TypeAlias = "tuple[tuple[str, int, str], int] | None"
_SPLIT: dict[str, Split] = {}  # name -> _split_name(name), for this process only
_SPLIT_LIMIT = 1 << 18


def _split_name(name: str) -> Split:
    """((prefix, width, suffix), number) around a name's last digits; None without digits."""
    if not _HOSTNAME.fullmatch(name):
        raise HostlistError(f"cannot compress {_show(name)}: not a lowercase short host name")
    # a host name is [a-z0-9-]: the suffix is what follows the last digit, the digits run
    # back from there (string methods: a regular expression per name was half of compress)
    body = name.rstrip(_LETTERS_AND_DASH)
    if not body:
        return None
    prefix = body.rstrip(_DIGITS)
    digits = body[len(prefix) :]
    width = len(digits) if len(digits) > 1 and digits.startswith("0") else 0
    return (prefix, width, name[len(body) :]), int(digits)


_LETTERS_AND_DASH = "abcdefghijklmnopqrstuvwxyz-"
_DIGITS = "0123456789"
