"""A reader for a site's Slurm configuration: slurm.conf(5), gres.conf(5) and topology.conf(5).

The syntax follows the manual pages and Slurm's own parser (src/common/parse_config.c):
one or more ``Key=Value`` pairs per line (spaces may stand around ``=``), keys in any case,
``#`` starts a comment (``\\#`` is a literal ``#``), a line ending in ``\\`` continues on
the next, a value may be double-quoted to hold spaces, and ``Include FILE`` reads another
file (relative names from the including file's folder; globs allowed). Lines that start with
NodeName, PartitionName, NodeSet, DownNodes, FrontendName, SwitchName or BlockName open a
record; ``NodeName=DEFAULT`` and ``PartitionName=DEFAULT`` set the defaults of the records
that follow them.

Every setting keeps the file, line and column it came from. A malformed file raises
:class:`ConfSyntaxError` naming that place; nothing here raises anything else for bad input.

What one import reads is bounded (:class:`Budget`): only regular files are opened (a FIFO,
``/dev/stdin`` or a device is refused, never waited on), a file reached by several Include
lines is read once, and the bytes, Include lines followed, parameters and host names of all
files together stop at the bounds below, which keep an import under 10 s and 1 GiB.
"""

from __future__ import annotations

import errno
import glob
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from estategen import hostlist
from estategen.errors import EstategenError, clip
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.linebreaks import find_hidden_break
from estategen.load import read_at_most
from estategen.readback import MAX_NAMES
from estategen.readback import _kind as file_kind

MAX_INCLUDE_DEPTH = 8  # Slurm itself stops at 64; a site's chain is two or three deep
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_LINES = 200_000
# Bytes of all files one import reads, a file counted once for each Include that reaches it.
# Parsing keeps every character's place, and a node line costs more again: 512 KiB (a
# NodeName line with NodeAddr for each of 11,000 hosts, or many times a large site's files
# written with hostlist ranges) keeps an import within the bounds above (benchmarks/README.md
# has the figures). It bounds the lines and Key=Value pairs too: at most 131,072 pairs ("a=b"
# and a separator) fit.
MAX_READ_BYTES = 512 * 1024
# Files opened by Include lines in one import, each Include of a file counted: a site has a
# handful (a glob over conf.d/ perhaps dozens); a diamond of Includes that reaches one file
# millions of times stops here, after milliseconds.
MAX_INCLUDES = 1_000
# Parameters outside records: slurm.conf(5) knows about 350 keys, and each one passed through
# becomes a slurm.options key that the blueprint's render writes and reads again.
MAX_PARAMETERS = 1_000

# Keys that open a record in slurm.conf rather than set a parameter (slurm.conf(5)).
SLURM_RECORDS = ("NodeName", "PartitionName", "NodeSet", "DownNodes", "FrontendName")
TOPOLOGY_RECORDS = ("SwitchName", "BlockName")
# gres.conf(5) has no record keys: each line is one GRES (NodeName on it only scopes it).
LINE_RECORD = "*line*"
GRES_RECORDS = (LINE_RECORD,)


class ConfSyntaxError(EstategenError):
    """A Slurm configuration file we cannot read: ``file:line:column: message``."""

    exit_code = 1

    def __init__(self, where: Where, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


@dataclass(frozen=True, slots=True, order=True)
class Where:
    """A place in a configuration file (1-based line and column)."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Setting:
    """One ``Key=Value`` as written; ``name`` is the key in lower case, for lookups."""

    key: str
    value: str
    where: Where

    @property
    def name(self) -> str:
        return self.key.lower()


@dataclass(frozen=True, slots=True)
class ConfRecord:
    """One record line: ``kind`` is the opening key as slurm.conf(5) spells it (NodeName),
    ``name`` its value, ``settings`` the other pairs on the line in their order."""

    kind: str
    name: str
    settings: tuple[Setting, ...]
    where: Where

    def get(self, key: str) -> Setting | None:
        wanted = key.lower()
        found = None
        for setting in self.settings:
            if setting.name == wanted:
                found = setting  # the last one wins, as in Slurm
        return found


@dataclass(frozen=True, slots=True)
class ConfFile:
    """A parsed file: its parameters (outside records) and records, in file order, with
    everything its Include lines brought in, and the files read."""

    parameters: tuple[Setting, ...]
    records: tuple[ConfRecord, ...]
    files: tuple[str, ...]
    # Include lines naming an absolute path this machine lacks, and the file of that name
    # beside the file given that was read instead (the site's files copied elsewhere)
    moved: tuple[tuple[Where, str, str], ...] = ()

    def parameter(self, key: str) -> Setting | None:
        wanted = key.lower()
        found = None
        for setting in self.parameters:
            if setting.name == wanted:
                found = setting
        return found

    def of_kind(self, kind: str) -> list[ConfRecord]:
        return [r for r in self.records if r.kind == kind]


@dataclass(slots=True)
class Budget:
    """What one import may still read, shared by all its files (slurm.conf with its Includes,
    gres.conf, topology.conf, the sacctmgr dump) and spent as they are read."""

    bytes: int = MAX_READ_BYTES
    includes: int = MAX_INCLUDES
    names: int = MAX_NAMES  # host names hostlists expand to, NodeName lines' included
    # a file's text by (device, inode): a file several Include lines reach is read once
    texts: dict[tuple[int, int], str] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)  # every file read, as named

    def spend_bytes(self, size: int, path: Path, where: Where | None) -> None:
        """Count ``size`` bytes of ``path`` (included at ``where``, or named by the user)."""
        self.bytes -= size
        if self.bytes < 0:
            what = f"including {str(path)!r} brings" if where else f"{size} bytes bring"
            raise ConfSyntaxError(
                where or Where(str(path), 0, 0),
                f"{what} the files import reads above {MAX_READ_BYTES} bytes in all (a file "
                "counted each time an Include reaches it)",
            )

    def spend_names(self, count: int, where: Where) -> None:
        self.names -= count
        if self.names < 0:
            raise ConfSyntaxError(
                where,
                f"hostlists name more than {MAX_NAMES} hosts in all (counted on every line "
                "that names them, before any is expanded)",
            )


# --- lines and tokens ----------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    text: str
    where: Where
    # column of each character of ``text`` in its physical line (continuations change lines)
    places: list[Where] = field(default_factory=list)


def refuse_hidden_breaks(text: str, file: str) -> None:
    """Refuse a file holding one of estategen.linebreaks' characters: a line splitter would
    read lines there that slurmctld (which breaks at line feeds only) does not, and a key after
    one would pass through as a setting slurmctld never reads. The message names the character
    and its place, never the line's text (it may hold a password)."""
    hidden = find_hidden_break(text)
    if hidden is not None:
        raise ConfSyntaxError(
            Where(file, hidden.line, hidden.column),
            f"{hidden.name}: a line break to some readers, not to slurmctld, which reads "
            "lines at line feeds only; delete it",
        )


def _logical_lines(text: str, file: str) -> Iterator[_Line]:
    """Comment-free logical lines: continuation lines joined, ``\\#`` kept as ``#``."""
    refuse_hidden_breaks(text, file)
    pending: _Line | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if number > MAX_LINES:
            raise ConfSyntaxError(Where(file, number), f"more than {MAX_LINES} lines")
        chars: list[str] = []
        places: list[Where] = []
        index = 0
        quoted = False
        while index < len(raw):
            char = raw[index]
            if char == "\\" and index + 1 < len(raw) and raw[index + 1] == "#":
                chars.append("#")
                places.append(Where(file, number, index + 1))
                index += 2
                continue
            if char == '"':
                quoted = not quoted
            if char == "#" and not quoted:
                break
            chars.append(char)
            places.append(Where(file, number, index + 1))
            index += 1
        body = "".join(chars).rstrip()
        places = places[: len(body)]
        continued = body.endswith("\\")
        if continued:
            body, places = body[:-1], places[:-1]
        if pending is None:
            pending = _Line(body, Where(file, number), places)
        else:
            pending.text += body
            pending.places += places
        if not continued:
            if pending.text.strip():
                yield pending
            pending = None
    if pending is not None and pending.text.strip():
        yield pending


def _tokens(line: _Line) -> list[tuple[str, Where, bool]]:
    """Whitespace-separated words; double quotes group spaces and are removed. Each word
    says whether it held a quote (``Key=""`` is an empty value, ``Key=`` is not)."""
    out: list[tuple[str, Where, bool]] = []
    word: list[str] = []
    start: Where | None = None
    quoted_at: Where | None = None
    had_quote = False
    for char, where in zip(line.text, line.places, strict=True):
        if char == '"':
            quoted_at = None if quoted_at else where
            start = start or where
            had_quote = True
            continue
        if char.isspace() and quoted_at is None:
            if start is not None:
                out.append(("".join(word), start, had_quote))
            word, start, had_quote = [], None, False
            continue
        if not char.isprintable():
            raise ConfSyntaxError(where, f"unprintable character {char!r}")
        word.append(char)
        start = start or where
    if quoted_at is not None:
        raise ConfSyntaxError(quoted_at, "a quote is not closed on this line")
    if start is not None:
        out.append(("".join(word), start, had_quote))
    return out


def _pairs(words: list[tuple[str, Where, bool]]) -> list[Setting]:
    """Key=Value pairs as slurmctld reads them (src/common/parse_config.c, whose pattern is
    ``KEY[[:space:]]*=[[:space:]]*VALUE``): spaces may stand on either side of ``=``, so
    ``Key = Value`` and ``Key= Value`` (as Puppet writes every line) are ``Key=Value``; after
    ``=`` and spaces, the next word is the value."""
    settings = []
    index = 0
    while index < len(words):
        word, where, quoted = words[index]
        key, sep, value = word.partition("=")
        if not sep and index + 1 < len(words) and words[index + 1][0].startswith("="):
            index += 1  # `Key =Value` or `Key = Value`
            value, quoted = words[index][0][1:], words[index][2]
            sep = "="
        if sep and not value and not quoted and index + 1 < len(words):
            index += 1  # `Key= Value`: the next word is the value
            value = words[index][0]
        # a line that is not Slurm's is described, never quoted: it may be anything (an
        # Include of /etc/shadow, of a file of secrets)
        if not sep:
            raise ConfSyntaxError(
                where, f"expected Key=Value (or Include FILE): the word here has no '=' {_ASK}"
            )
        if not _KEY.fullmatch(key):
            raise ConfSyntaxError(
                where,
                f"expected Key=Value with a key of ASCII letters and digits, as every Slurm "
                f"key is {_ASK}",
            )
        settings.append(Setting(key, value, where))
        index += 1
    return settings


# what an error about a line import cannot read says instead of quoting it
_ASK = "(is this file a Slurm configuration file?)"
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*")


# --- files ---------------------------------------------------------------------------------


# O_NONBLOCK: opening a FIFO returns at once (then refused) instead of waiting for a writer
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

Identity = tuple[int, int]  # a file's device and inode


def _read(path: Path, where: Where | None, budget: Budget) -> tuple[str, Identity]:
    """The text of the regular file at ``path`` (included at ``where``, or named by the user
    when None) and its identity, spending ``budget``. A file read before is not read again."""
    place = where or Where(str(path), 0, 0)

    def unreadable(why: str) -> ConfSyntaxError:
        if where is None:
            return ConfSyntaxError(place, f"cannot read: {why}")
        return ConfSyntaxError(where, f"cannot read included {str(path)!r}: {why}")

    try:
        fd = os.open(path, _OPEN)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        if err.errno == errno.ELOOP:
            reason += " (a symbolic link loop)"
        raise unreadable(reason) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise unreadable(f"{file_kind(info.st_mode)}, not a regular file; import reads files")
        identity = (info.st_dev, info.st_ino)
        budget.spend_bytes(info.st_size, path, where)
        known = budget.texts.get(identity)
        if known is not None:
            return known, identity
        # no more than the file's size as it was, or the budget, and one byte beyond
        data = read_at_most(fd, min(MAX_FILE_BYTES, info.st_size + max(budget.bytes, 0)))
    except OSError as err:
        raise unreadable(err.strerror or type(err).__name__) from None
    finally:
        os.close(fd)
    budget.read.append(str(path))
    budget.spend_bytes(len(data) - info.st_size, path, where)  # a file that grew meanwhile
    if len(data) > MAX_FILE_BYTES:
        raise ConfSyntaxError(Where(str(path), 1), f"larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfSyntaxError(Where(str(path), line), "not UTF-8 text") from None
    budget.texts[identity] = text
    return text, identity


def read_text(path: Path, budget: Budget | None = None) -> str:
    """A configuration file's text; unreadable or non-UTF-8 files are a ConfSyntaxError."""
    return _read(path, None, budget or Budget())[0]


def parse_file(
    path: str | Path,
    records: Iterable[str] = SLURM_RECORDS,
    budget: Budget | None = None,
    site_root: Path | None = None,
) -> ConfFile:
    """Parse ``path`` and everything it includes; ``records`` are the keys that open records
    in this kind of file (slurm.conf: :data:`SLURM_RECORDS`; gres.conf: none;
    topology.conf: :data:`TOPOLOGY_RECORDS`). ``budget``: what the files of one import may
    still spend (a fresh one when None). ``site_root``: the folder that stands for the
    site's ``/``, where an absolute Include is looked up first."""
    state = _Parse({name.lower(): name for name in records}, budget or Budget())
    state.beside = Path(path).parent
    state.site_root = site_root
    _parse_into(Path(path), state, stack=(), where=None)
    return state.conf()


def parse_text(text: str, file: str, records: Iterable[str] = SLURM_RECORDS) -> ConfFile:
    """Parse ``text`` as if read from ``file`` (Include names resolve from its folder).

    The text is estategen's own (a render's), bounded by what rendered it: only what it
    includes spends a budget."""
    state = _Parse({name.lower(): name for name in records}, Budget(), bounded=False)
    state.files.append(file)
    _parse_lines(text, Path(file), state, stack=())
    return state.conf()


@dataclass(slots=True)
class _Parse:
    """What parsing a file (and its Includes) fills in, and the budget it spends."""

    kinds: Mapping[str, str]
    budget: Budget
    bounded: bool = True  # at most MAX_PARAMETERS parameters
    parameters: list[Setting] = field(default_factory=list)
    found: list[ConfRecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    beside: Path | None = None  # the folder of the file given, for Includes of site paths
    site_root: Path | None = None  # the folder holding the site's files at their own paths
    moved: list[tuple[Where, str, str]] = field(default_factory=list)

    def conf(self) -> ConfFile:
        return ConfFile(
            tuple(self.parameters), tuple(self.found), tuple(self.files), tuple(self.moved)
        )

    def add_parameters(self, settings: list[Setting]) -> None:
        """A line's parameters; the line that goes beyond MAX_PARAMETERS is refused."""
        self.parameters.extend(settings)
        if self.bounded and len(self.parameters) > MAX_PARAMETERS:
            raise ConfSyntaxError(
                settings[0].where,
                f"more than {MAX_PARAMETERS} parameters outside record lines (NodeName, "
                "PartitionName, ...); slurm.conf(5) knows about 350",
            )


def _parse_into(
    path: Path, state: _Parse, stack: tuple[tuple[Identity, Path], ...], where: Where | None
) -> None:
    """Parse the file at ``path``, included at ``where`` by the files of ``stack``."""
    if where is not None:
        state.budget.includes -= 1
        if state.budget.includes < 0:
            raise ConfSyntaxError(
                where, f"more than {MAX_INCLUDES} files included (each Include of a file counts)"
            )
    text, identity = _read(path, where, state.budget)
    if any(identity == known for known, _ in stack):
        assert where is not None
        chain = " -> ".join(str(p) for p in (*(p for _, p in stack), path))
        raise ConfSyntaxError(where, f"Include cycle: {chain}")
    if len(stack) >= MAX_INCLUDE_DEPTH:
        assert where is not None
        raise ConfSyntaxError(where, f"Include nested deeper than {MAX_INCLUDE_DEPTH} files")
    state.files.append(str(path))
    _parse_lines(text, path, state, (*stack, (identity, path)))


def _parse_lines(
    text: str, path: Path, state: _Parse, stack: tuple[tuple[Identity, Path], ...]
) -> None:
    kinds = state.kinds
    for line in _logical_lines(text, str(path)):
        words = _tokens(line)
        first, first_at, _ = words[0]
        if first.lower() == "include":
            if len(words) != 2:
                raise ConfSyntaxError(first_at, "Include takes exactly one file name")
            target, target_at, _ = words[1]
            for included in _include_targets(path, target, target_at, state):
                _parse_into(included, state, stack, target_at)
            continue
        settings = _pairs(words)
        if LINE_RECORD in kinds:  # gres.conf: every line describes one GRES
            state.found.append(ConfRecord("Gres", "", tuple(settings), settings[0].where))
            continue
        kind = kinds.get(settings[0].name)
        if kind is None:
            for setting in settings:
                if setting.name in kinds:
                    raise ConfSyntaxError(
                        setting.where, f"{setting.key} must open its line (it starts a record)"
                    )
            state.add_parameters(settings)
            continue
        head = settings[0]
        if not head.value:
            raise ConfSyntaxError(head.where, f"{kind} needs a value")
        state.found.append(ConfRecord(kind, head.value, tuple(settings[1:]), head.where))


def _include_targets(including: Path, target: str, where: Where, state: _Parse) -> list[Path]:
    """Include names are relative to the including file's folder; a glob may match several.
    An absolute name (``Include /opt/slurm/etc/nodes.conf`` of files copied from the site) is
    looked up under the site root, if one is given (``ROOT/opt/slurm/etc/nodes.conf``);
    otherwise, or where the site root lacks it, one this machine lacks is the file of that
    name beside the file given, if there is one. Either substitution is recorded in
    ``state.moved``; with a site root, this machine's own file of that name is never read."""
    if not target:
        raise ConfSyntaxError(where, "Include needs a file name")
    base = Path(target) if Path(target).is_absolute() else including.parent / target
    if Path(target).is_absolute() and state.site_root is not None:
        under = state.site_root / Path(target).relative_to(Path(target).anchor)
        if glob.has_magic(target) or os.path.lexists(under):
            if not glob.has_magic(target):
                state.moved.append((where, target, str(under)))
            base = under
        elif state.beside is not None and os.path.lexists(state.beside / base.name):
            near = state.beside / base.name
            state.moved.append((where, target, str(near)))
            return [near]
        else:
            raise ConfSyntaxError(
                where,
                f"Include {target!r} is neither under the site root ({under}) nor beside the "
                f"file given ({state.beside / base.name if state.beside else base.name})",
            )
    elif base.is_absolute() and state.beside is not None and not glob.has_magic(target):
        near = state.beside / base.name
        if not os.path.lexists(base) and os.path.lexists(near):
            state.moved.append((where, target, str(near)))
            return [near]
    if glob.has_magic(str(base)):
        found = list(itertools.islice(glob.iglob(str(base)), MAX_INCLUDES + 1))
        if not found:
            raise ConfSyntaxError(where, f"Include {target!r} matches no file")
        if len(found) > MAX_INCLUDES:
            raise ConfSyntaxError(
                where, f"Include {target!r} matches more than {MAX_INCLUDES} files"
            )
        return sorted(Path(p) for p in found)
    return [base]


# --- records resolved ----------------------------------------------------------------------


def with_defaults(records: Iterable[ConfRecord], kind: str) -> list[ConfRecord]:
    """Records of ``kind`` with the ``DEFAULT`` lines before each folded into it; the
    DEFAULT records themselves are left out. A later DEFAULT line changes only the keys it
    names, as Slurm reads them."""
    defaults: dict[str, Setting] = {}
    out = []
    for record in records:
        if record.kind != kind:
            continue
        if record.name.upper() == "DEFAULT":
            for setting in record.settings:
                defaults[setting.name] = setting
            continue
        if not defaults:
            out.append(record)
            continue
        own = {s.name for s in record.settings}
        inherited = tuple(s for n, s in defaults.items() if n not in own)
        out.append(ConfRecord(kind, record.name, inherited + record.settings, record.where))
    return out


def count_hosts(value: str, where: Where) -> int:
    """How many host names a hostlist expression from a configuration file names, counted
    without expanding it (refused with its place when it is not one estategen can carry).
    A single name is counted without parsing (expanding it checks it)."""
    if "[" not in value and "," not in value:
        return 1
    try:
        return hostlist.count(value.lower())
    except hostlist.HostlistError as err:
        raise ConfSyntaxError(where, f"hostlist {clip(value)!r}: {err}") from None


def expand_hosts(value: str, where: Where, budget: Budget | None = None) -> list[str]:
    """A hostlist expression from a configuration file, as host names (refused with the
    place it came from when it is not one estategen can carry). hostlist counts an
    expression's names before it expands them (at most hostlist.MAX_EXPANSION); with
    ``budget``, they are then counted against it."""
    try:
        names = hostlist.expand(value.lower())
    except hostlist.HostlistError as err:
        raise ConfSyntaxError(where, f"hostlist {clip(value)!r}: {err}") from None
    if budget is not None:
        budget.spend_names(len(names), where)
    return names


def nodes(conf: ConfFile, budget: Budget | None = None) -> dict[str, ConfRecord]:
    """Every node by host name, with its NodeName=DEFAULT values folded in. One NodeName line
    may name many hosts; a host named on two lines is refused, as slurmctld refuses it.
    Host names are read in lower case (``NodeName=FyrHead`` is fyrhead), as every hostlist
    here is: a blueprint's host names are DNS names in lower case.

    Each line's hosts are counted before they are expanded: beyond the estate limit
    (:data:`~estategen.limits.MAX_ESTATE_HOSTS`) in all, the line that goes beyond is refused.
    """
    out: dict[str, ConfRecord] = {}
    for record in with_defaults(conf.records, "NodeName"):
        left = MAX_ESTATE_HOSTS - len(out)
        try:
            # expand counts first and refuses above the limit without expanding
            hosts = hostlist.expand(record.name.lower(), min(hostlist.MAX_EXPANSION, left))
        except hostlist.HostlistError as err:
            if left < hostlist.MAX_EXPANSION and count_hosts(record.name, record.where) > left:
                raise ConfSyntaxError(
                    record.where,
                    f"NodeName lines name more than {MAX_ESTATE_HOSTS} hosts, the estate limit",
                ) from None
            raise ConfSyntaxError(record.where, f"hostlist {clip(record.name)!r}: {err}") from None
        if budget is not None:
            budget.spend_names(len(hosts), record.where)
        for host in hosts:
            if host in out:
                raise ConfSyntaxError(
                    record.where, f"node {host!r} is already defined at {out[host].where}"
                )
            out[host] = ConfRecord("NodeName", host, record.settings, record.where)
    return out
