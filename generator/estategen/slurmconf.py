"""A reader for a site's Slurm configuration: slurm.conf(5), gres.conf(5) and topology.conf(5).

The syntax follows the manual pages and Slurm's own parser (src/common/parse_config.c):
one or more ``Key=Value`` pairs per line, keys in any case, ``#`` starts a comment (``\\#`` is
a literal ``#``), a line ending in ``\\`` continues on the next, a value may be double-quoted
to hold spaces, and ``Include FILE`` reads another file (relative names from the including
file's folder; globs allowed). Lines that start with NodeName, PartitionName, NodeSet,
DownNodes, FrontendName, SwitchName or BlockName open a record; ``NodeName=DEFAULT`` and
``PartitionName=DEFAULT`` set the defaults of the records that follow them.

Every setting keeps the file, line and column it came from. A malformed file raises
:class:`ConfSyntaxError` naming that place; nothing here raises anything else for bad input.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from estategen import hostlist
from estategen.errors import EstategenError, clip
from estategen.record import Record, field

MAX_INCLUDE_DEPTH = 8  # Slurm itself stops at 64; a site's chain is two or three deep
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_LINES = 200_000

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


class Where(Record, order=True):
    """A place in a configuration file (1-based line and column)."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Setting(Record):
    """One ``Key=Value`` as written; ``name`` is the key in lower case, for lookups."""

    key: str
    value: str
    where: Where

    @property
    def name(self) -> str:
        return self.key.lower()


class ConfRecord(Record):
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


class ConfFile(Record):
    """A parsed file: its parameters (outside records) and records, in file order, with
    everything its Include lines brought in, and the files read."""

    parameters: tuple[Setting, ...]
    records: tuple[ConfRecord, ...]
    files: tuple[str, ...]

    def parameter(self, key: str) -> Setting | None:
        wanted = key.lower()
        found = None
        for setting in self.parameters:
            if setting.name == wanted:
                found = setting
        return found

    def of_kind(self, kind: str) -> list[ConfRecord]:
        return [r for r in self.records if r.kind == kind]


# --- lines and tokens ----------------------------------------------------------------------


class _Line(Record, frozen=False):
    text: str
    where: Where
    # column of each character of ``text`` in its physical line (continuations change lines)
    places: list[Where] = field(default_factory=list)


def _logical_lines(text: str, file: str) -> Iterator[_Line]:
    """Comment-free logical lines: continuation lines joined, ``\\#`` kept as ``#``."""
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


def _tokens(line: _Line) -> list[tuple[str, Where]]:
    """Whitespace-separated words; double quotes group spaces and are removed."""
    out: list[tuple[str, Where]] = []
    word: list[str] = []
    start: Where | None = None
    quoted_at: Where | None = None
    for char, where in zip(line.text, line.places, strict=True):
        if char == '"':
            quoted_at = None if quoted_at else where
            start = start or where
            continue
        if char.isspace() and quoted_at is None:
            if start is not None:
                out.append(("".join(word), start))
            word, start = [], None
            continue
        if not char.isprintable():
            raise ConfSyntaxError(where, f"unprintable character {char!r}")
        word.append(char)
        start = start or where
    if quoted_at is not None:
        raise ConfSyntaxError(quoted_at, "a quote is not closed on this line")
    if start is not None:
        out.append(("".join(word), start))
    return out


def _pairs(words: list[tuple[str, Where]]) -> list[Setting]:
    settings = []
    for word, where in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ConfSyntaxError(where, f"expected Key=Value, found {clip(word)!r}")
        if not key.replace("_", "").isalnum():
            raise ConfSyntaxError(where, f"{clip(key)!r} is not a key name")
        settings.append(Setting(key, value, where))
    return settings


# --- files ---------------------------------------------------------------------------------


def _read(path: Path, where: Where | None) -> str:
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        if where is None:
            raise ConfSyntaxError(Where(str(path), 0, 0), f"cannot read: {reason}") from None
        raise ConfSyntaxError(where, f"cannot read included {str(path)!r}: {reason}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfSyntaxError(Where(str(path), 1), f"larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfSyntaxError(Where(str(path), line), "not UTF-8 text") from None


def read_text(path: Path) -> str:
    """A configuration file's text; unreadable or non-UTF-8 files are a ConfSyntaxError."""
    return _read(path, None)


def parse_file(path: str | Path, records: Iterable[str] = SLURM_RECORDS) -> ConfFile:
    """Parse ``path`` and everything it includes; ``records`` are the keys that open records
    in this kind of file (slurm.conf: :data:`SLURM_RECORDS`; gres.conf: none;
    topology.conf: :data:`TOPOLOGY_RECORDS`)."""
    kinds = {name.lower(): name for name in records}
    parameters: list[Setting] = []
    found: list[ConfRecord] = []
    files: list[str] = []
    _parse_into(Path(path), kinds, parameters, found, files, stack=(), where=None)
    return ConfFile(tuple(parameters), tuple(found), tuple(files))


def parse_text(text: str, file: str, records: Iterable[str] = SLURM_RECORDS) -> ConfFile:
    """Parse ``text`` as if read from ``file`` (Include names resolve from its folder)."""
    kinds = {name.lower(): name for name in records}
    parameters: list[Setting] = []
    found: list[ConfRecord] = []
    files = [file]
    _parse_lines(text, Path(file), kinds, parameters, found, files, stack=(Path(file),))
    return ConfFile(tuple(parameters), tuple(found), tuple(files))


def _parse_into(
    path: Path,
    kinds: Mapping[str, str],
    parameters: list[Setting],
    found: list[ConfRecord],
    files: list[str],
    stack: tuple[Path, ...],
    where: Where | None,
) -> None:
    resolved = path.resolve()
    if resolved in stack:
        assert where is not None
        chain = " -> ".join(str(p) for p in (*stack, resolved))
        raise ConfSyntaxError(where, f"Include cycle: {chain}")
    if len(stack) >= MAX_INCLUDE_DEPTH:
        assert where is not None
        raise ConfSyntaxError(where, f"Include nested deeper than {MAX_INCLUDE_DEPTH} files")
    text = _read(path, where)
    files.append(str(path))
    _parse_lines(text, path, kinds, parameters, found, files, (*stack, resolved))


def _parse_lines(
    text: str,
    path: Path,
    kinds: Mapping[str, str],
    parameters: list[Setting],
    found: list[ConfRecord],
    files: list[str],
    stack: tuple[Path, ...],
) -> None:
    for line in _logical_lines(text, str(path)):
        words = _tokens(line)
        first, first_at = words[0]
        if first.lower() == "include":
            if len(words) != 2:
                raise ConfSyntaxError(first_at, "Include takes exactly one file name")
            target, target_at = words[1]
            for included in _include_targets(path, target, target_at):
                _parse_into(included, kinds, parameters, found, files, stack, target_at)
            continue
        settings = _pairs(words)
        if LINE_RECORD in kinds:  # gres.conf: every line describes one GRES
            found.append(ConfRecord("Gres", "", tuple(settings), settings[0].where))
            continue
        kind = kinds.get(settings[0].name)
        if kind is None:
            for setting in settings:
                if setting.name in kinds:
                    raise ConfSyntaxError(
                        setting.where, f"{setting.key} must open its line (it starts a record)"
                    )
            parameters.extend(settings)
            continue
        head = settings[0]
        if not head.value:
            raise ConfSyntaxError(head.where, f"{kind} needs a value")
        found.append(ConfRecord(kind, head.value, tuple(settings[1:]), head.where))


def _include_targets(including: Path, target: str, where: Where) -> list[Path]:
    """Include names are relative to the including file's folder; a glob may match several."""
    if not target:
        raise ConfSyntaxError(where, "Include needs a file name")
    base = Path(target) if Path(target).is_absolute() else including.parent / target
    if glob.has_magic(str(base)):
        matches = sorted(Path(p) for p in glob.glob(str(base)))
        if not matches:
            raise ConfSyntaxError(where, f"Include {target!r} matches no file")
        return matches
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
        own = {s.name for s in record.settings}
        inherited = tuple(s for n, s in defaults.items() if n not in own)
        out.append(ConfRecord(kind, record.name, inherited + record.settings, record.where))
    return out


def expand_hosts(value: str, where: Where) -> list[str]:
    """A hostlist expression from a configuration file, as host names (refused with the
    place it came from when it is not one estategen can carry)."""
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError as err:
        raise ConfSyntaxError(where, f"hostlist {clip(value)!r}: {err}") from None


def nodes(conf: ConfFile) -> dict[str, ConfRecord]:
    """Every node by host name, with its NodeName=DEFAULT values folded in. One NodeName line
    may name many hosts; a host named on two lines is refused, as slurmctld refuses it."""
    out: dict[str, ConfRecord] = {}
    for record in with_defaults(conf.records, "NodeName"):
        for host in expand_hosts(record.name, record.where):
            if host in out:
                raise ConfSyntaxError(
                    record.where, f"node {host!r} is already defined at {out[host].where}"
                )
            out[host] = ConfRecord("NodeName", host, record.settings, record.where)
    return out
