"""Read a blueprint into plain Python data, remembering where every key and item was written.

PyYAML's C composer builds the node graph (fast, carries marks); we convert nodes ourselves so
that duplicate keys, non-string keys, object-constructing tags, alias bombs and runaway nesting
are refused with one clear message each instead of surfacing as tracebacks.
"""

from __future__ import annotations

import gc
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from estategen.errors import BlueprintInvalid, Finding, Position, UsageError, key_path, quote
from estategen.limits import MAX_LIST_ITEMS, MAX_VALUES
from estategen.linebreaks import find_hidden_break

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_NODES = MAX_VALUES
MAX_DEPTH = 64

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_INT = "tag:yaml.org,2002:int"
_SCALAR = yaml.ScalarNode
_PLAIN_SCALAR_TAGS = {
    _STR,
    _INT,
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2-flavoured implicit types.

    No timestamps, no sexagesimal numbers (``8:00:00`` stays a Slurm time string) and only
    ``true``/``false`` are booleans (``NO`` stays a string).
    """


_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|0o[0-7_]+)$"),
    list("-+0123456789"),
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)

_CParser: Any = getattr(yaml, "cyaml", None) and getattr(yaml.cyaml, "CParser", None)


if _CParser is not None:

    class _Loader(_CParser, yaml.constructor.SafeConstructor, _Resolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            _Resolver.__init__(self)

else:  # pragma: no cover - libyaml is present wherever PyYAML ships wheels

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        yaml.composer.Composer,
        yaml.constructor.SafeConstructor,
        _Resolver,
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            _Resolver.__init__(self)


@dataclass(frozen=True, slots=True)
class Document:
    """A loaded blueprint: its data, where each key path was written, and its source."""

    data: dict[str, Any]
    positions: dict[str, Position]
    file: str
    raw: bytes


def read_blueprint(path: str | Path) -> Document:
    """Read and parse a blueprint file; unreadable files are usage errors (exit 2).

    Regular files, pipes (``<(...)``, ``/dev/stdin``) and character devices are read, never
    more than the size limit plus one byte: ``/dev/zero`` or ``<(yes)`` is refused as too
    large, not read until memory runs out. Folders, sockets and block devices are refused.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a blueprint file") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UsageError(f"{path}: is a directory, not a blueprint file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
            raise UsageError(f"{path}: not a file or a pipe; a blueprint is a text file")
        raw = read_at_most(fd, MAX_FILE_BYTES)
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise UsageError(
            f"{path}: more than {MAX_FILE_BYTES} bytes, above the blueprint size limit of "
            f"{MAX_FILE_BYTES} bytes"
        )
    return parse_blueprint(raw, str(path))


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes from ``fd``: one byte more than the limit tells it is exceeded.

    Bounded whatever the descriptor is: a regular file whose size changes, a pipe, a device.
    """
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def parse_blueprint(raw: bytes, file: str) -> Document:
    """Parse blueprint bytes; every problem becomes a :class:`BlueprintInvalid`.

    The cycle collector is paused meanwhile: the YAML nodes and the document built from them
    hold no reference cycles, yet each of their hundreds of thousands of allocations counts
    towards a collection that walks them all again; what is garbage is freed by reference
    counting as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_blueprint(raw, file)
    finally:
        if enabled:
            gc.enable()


def libyaml_too_deep(problem: str) -> bool:
    """The libyaml of PyYAML 6.0.4's wheels stops at a nesting bound of its own, reading ahead
    of what the composer (or an event count) has reached: the same refusal as ours."""
    return "maximum nesting depth" in problem


def _parse_blueprint(raw: bytes, file: str) -> Document:

    def fail(rule: str, message: str, line: int = 1, column: int = 1) -> BlueprintInvalid:
        return BlueprintInvalid([Finding(file, line, column, "", message, rule=f"load/{rule}")])

    if len(raw) > MAX_FILE_BYTES:
        raise fail(
            "file-size", f"blueprint is {len(raw)} bytes, above the limit of {MAX_FILE_BYTES} bytes"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise fail(
            "encoding",
            f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start}); "
            "save the blueprint as UTF-8",
            line,
            column,
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise fail("encoding", "contains a NUL character; a blueprint is a text file", line)
    hidden = find_hidden_break(text)
    if hidden is not None:
        raise fail(
            "line-break",
            f"contains {hidden.name}: a line break to YAML or to other readers that editors "
            "and code review do not show (text after it in a comment would become keys); a "
            "blueprint may not hold it anywhere, comments included: delete it, or write it as "
            "an escape inside double quotes",
            hidden.line,
            hidden.column,
        )
    if _visible_characters(text) > MAX_NODES:
        _count_values(text, file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or str(err)
        if err.context and "expected a single document" in err.context:
            problem = "holds several YAML documents; a blueprint is one document"
        if "expected ',' or" in problem:
            problem += " (inside {...} or [...], quote values holding brackets or commas, "
            problem += "such as hostlists)"
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        if libyaml_too_deep(problem):
            message = f"nested deeper than the limit of {MAX_DEPTH} levels"
            raise fail("nesting", message, line, column) from None
        if mark and _char_at(text, mark.line, mark.column) == "\t":
            problem += " (a tab; YAML indents with spaces only)"
        raise fail("yaml-syntax", f"YAML syntax: {problem}", line, column) from None
    except yaml.YAMLError as err:
        raise fail("yaml-syntax", f"YAML syntax: {err}") from None
    except RecursionError:
        raise fail("nesting", f"nested deeper than the limit of {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    if node is None:
        raise fail("empty", "the blueprint is empty; it needs at least `estate: NAME`")
    if node.tag not in (_MAP, _SEQ, *_PLAIN_SCALAR_TAGS):
        raise fail(
            "tag", _tag_message(node.tag), node.start_mark.line + 1, node.start_mark.column + 1
        )
    if not isinstance(node, yaml.MappingNode):
        raise fail(
            "top-level",
            "the top level must be a mapping of keys (estate:, node_pools:, ...), "
            f"not a {_kind(node)}",
            node.start_mark.line + 1,
            node.start_mark.column + 1,
        )
    # Only aliases can make the expanded document larger than the node tree. Without any
    # (no '*' in the text), the builder counts the tree as it goes and the alias analysis
    # runs only when that count, or an error, calls for the exact message below.
    aliased = "*" in text
    if aliased:
        _check_expanded_size(node, file, text)
    builder = _Builder(file, loader)
    try:
        data = builder.build(node, "", 0)
    except BlueprintInvalid:
        if not aliased:
            _check_expanded_size(node, file, aliased=False)
        raise
    if not aliased and builder.nodes > MAX_NODES:
        _check_expanded_size(node, file, aliased=False)
    assert isinstance(data, dict)
    return Document(data=data, positions=builder.positions, file=file, raw=raw)


_CYCLE = 2**62

# A YAML node needs a character of its own, except an empty key or value, which shares the
# ':', '-' or '?' that makes it (`[a: , b: ]`, one node per character, is as dense as libyaml
# accepts; 3 nodes per 2 characters bounds it), and aliases add no node (they reuse their
# anchor's). A text of at most MAX_NODES characters other than blanks and line breaks thus
# composes into at most 1.5 * MAX_NODES nodes before the builder refuses what lies beyond
# MAX_NODES: within the time and memory budget.
# Only longer texts are counted, event by event, before anything is composed.
_TOO_MANY_VALUES = (
    f"holds more than {MAX_NODES} values (keys, values and list items); "
    f"a blueprint is limited to {MAX_NODES}"
)
_VALUE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)


def _visible_characters(text: str) -> int:
    return len(text) - text.count(" ") - text.count("\n") - text.count("\t") - text.count("\r")


def _count_values(text: str, file: str) -> None:
    """Refuse a text holding more than MAX_NODES values before any node graph is built.

    Parser events cost no memory once read, so this runs in bounded memory and stops at the
    first value over the limit. YAML errors are left to the composer, which reports them.
    """
    loader = _Loader(text)
    values = 0
    try:
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            if isinstance(event, _VALUE_EVENTS):
                values += 1
                if values > MAX_NODES:
                    mark = event.start_mark
                    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
                    raise BlueprintInvalid(
                        [
                            Finding(
                                file,
                                line,
                                column,
                                "",
                                _TOO_MANY_VALUES,
                                rule="load/size",
                            )
                        ]
                    )
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def _check_expanded_size(
    node: yaml.MappingNode, file: str, text: str = "", aliased: bool = True
) -> None:
    """Refuse a document that expands beyond MAX_NODES values, or holds itself, via aliases.

    Without aliases (``aliased`` false) the document holds that many values as written; with
    them, ``text`` is the document, read again to point at the alias that closes a cycle.
    """
    sizes: dict[int, int] = {}
    size = _expanded_size(node, sizes)
    if size == _CYCLE:
        raise BlueprintInvalid([_recursive_alias(text, file)])
    if size <= MAX_NODES:
        return
    where, key_node = _largest_key(node, sizes)
    mark = key_node.start_mark if key_node else None
    raise BlueprintInvalid(
        [
            Finding(
                file,
                mark.line + 1 if mark else 1,
                mark.column + 1 if mark else 1,
                key_path(where),
                f"expands to more than {MAX_NODES} values through aliases; "
                f"a blueprint is limited to {MAX_NODES} values (an alias bomb?)"
                if aliased
                else _TOO_MANY_VALUES,
                rule="load/alias" if aliased else "load/size",
            )
        ]
    )


_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)


def _recursive_alias(text: str, file: str) -> Finding:
    """The finding for the first alias that stands inside the node its anchor names: the
    place where a document that holds itself closes the loop.

    Every cycle has one: an alias can only name an anchor already met, and a node whose
    anchor was closed before the alias holds only nodes met before it, so a loop must go
    back through an anchor still open. Parser events are read again (the composed graph has
    lost where each alias was written), the key path kept as the builder formats it.
    """
    loader = _Loader(text)
    # anchor -> the open collection it names (None once that collection ends, or after the
    # anchor is given to a scalar: an alias names the latest node given that anchor)
    anchors: dict[str, object | None] = {}
    # one frame per open collection: [path, anchor, is a mapping, items met, last key]
    frames: list[list[Any]] = []
    try:
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                frame = frames.pop()
                if frame[1] is not None and anchors.get(frame[1]) is frame:
                    anchors[frame[1]] = None
                continue
            if not isinstance(event, _NODE_EVENTS):
                continue
            path = ""
            if frames:
                parent = frames[-1]
                met = parent[3]
                parent[3] += 1
                if not parent[2]:
                    path = f"{parent[0]}[{met}]"
                elif met % 2 == 0:  # a key: its path is the mapping's
                    path = parent[0]
                    parent[4] = event.value if isinstance(event, yaml.ScalarEvent) else "?"
                else:
                    path = f"{parent[0]}.{parent[4]}" if parent[0] else str(parent[4])
            if isinstance(event, yaml.AliasEvent):
                if anchors.get(event.anchor or "") is not None:
                    mark = event.start_mark
                    return Finding(
                        file,
                        mark.line + 1 if mark else 1,
                        mark.column + 1 if mark else 1,
                        path,
                        f"alias *{event.anchor} stands inside the value its anchor "
                        f"&{event.anchor} names, which then contains itself through an alias "
                        "without end; a blueprint cannot hold cycles: write the value out",
                        rule="load/alias",
                    )
                continue
            anchor = event.anchor
            if isinstance(event, yaml.ScalarEvent):
                if anchor is not None:
                    anchors[anchor] = None
                continue
            frame = [path, anchor, isinstance(event, yaml.MappingStartEvent), 0, ""]
            frames.append(frame)
            if anchor is not None:
                anchors[anchor] = frame
    finally:
        loader.dispose()
    # pragma: no cover - unreachable by the argument above; still a finding, not a traceback
    return Finding(file, 1, 1, "", "contains itself through an alias", rule="load/alias")


def _largest_key(
    root: yaml.MappingNode, sizes: dict[int, int]
) -> tuple[tuple[str, ...], yaml.Node | None]:
    """The deepest key (path and key node) whose value alone expands beyond the limit.

    Only mapping keys are followed: an alias's own node carries the anchor's position, so the
    key that holds the oversized value is the place in the file worth pointing at.
    """
    path: tuple[str, ...] = ()
    key_node: yaml.Node | None = None
    node: yaml.Node = root
    while isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and sizes.get(id(value), 0) > MAX_NODES:
                path, key_node, node = (*path, str(key.value)), key, value
                break
        else:
            break
    return path, key_node


def _expanded_size(root: yaml.Node, sizes: dict[int, int] | None = None) -> int:
    """Values the document holds once aliases are expanded, without expanding them.

    Aliases make the node graph a DAG (or, for recursive anchors, a cyclic graph); sizes are
    memoised per node (in ``sizes``, by node id) so this costs one visit per distinct node.
    """
    if sizes is None:
        sizes = {}
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if children_done:
            in_progress.discard(key)
            sizes[key] = min(_CYCLE, 1 + sum(sizes[id(child)] for child in children))
            continue
        if key in in_progress:
            sizes.update(dict.fromkeys(in_progress, _CYCLE))  # the chain that loops
            return _CYCLE
        in_progress.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in in_progress:
                sizes.update(dict.fromkeys(in_progress, _CYCLE))  # the chain that loops
                return _CYCLE
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _char_at(text: str, line: int, column: int) -> str:
    """The character at a 0-based line and column of ``text`` ('' when out of range)."""
    lines = text.split("\n")
    return lines[line][column : column + 1] if line < len(lines) else ""


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "list"
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "scalar value"


class _Builder:
    """Turns composed nodes into dicts, lists and scalars, recording positions.

    Key paths travel as the formatted strings the positions are stored under
    (``node_pools[0].hosts``), so each key costs one concatenation, not a re-format.
    """

    def __init__(self, file: str, loader: Any) -> None:
        self.file = file
        self.loader = loader
        self.positions: dict[str, Position] = {}
        self.visited = 0
        self.nodes = 0  # keys, values and items: the expanded size of an alias-free tree
        self.scalars: dict[str, Any] = {
            tag: constructor
            for tag, constructor in loader.yaml_constructors.items()
            if tag in _PLAIN_SCALAR_TAGS
        }

    def fail(self, rule: str, node: yaml.Node, path: str, message: str) -> BlueprintInvalid:
        mark = node.start_mark
        return BlueprintInvalid(
            [Finding(self.file, mark.line + 1, mark.column + 1, path, message, rule=f"load/{rule}")]
        )

    def build(self, node: yaml.Node, path: str, depth: int) -> Any:
        self.visited += 1
        self.nodes += 1
        if self.visited > MAX_NODES:
            raise self.fail(
                "size",
                node,
                path,
                f"expands to more than {MAX_NODES} values (aliases that multiply?); "
                "a blueprint is limited to that many",
            )
        if depth > MAX_DEPTH:
            raise self.fail(
                "nesting", node, path, f"nested deeper than the limit of {MAX_DEPTH} levels"
            )
        tag = node.tag
        if type(node) is yaml.ScalarNode:
            if tag == _STR:
                return node.value
            constructor = self.scalars.get(tag)
            if constructor is None:
                raise self.fail("tag", node, path, _tag_message(tag))
            try:
                return constructor(self.loader, node)
            except (yaml.YAMLError, ValueError, OverflowError) as err:
                raise self.fail(
                    "value", node, path, f"cannot read value {_short(node.value)}: {err}"
                ) from None
            except LookupError:  # `!!bool maybe`, `!!int ""`: PyYAML indexes without checking
                shown = tag.replace("tag:yaml.org,2002:", "!!")
                raise self.fail(
                    "value", node, path, f"cannot read value {node.value!r} as {shown}"
                ) from None
        if isinstance(node, yaml.MappingNode):
            if tag != _MAP:
                raise self.fail("tag", node, path, _tag_message(tag))
            return self.build_mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            if tag != _SEQ:
                raise self.fail("tag", node, path, _tag_message(tag))
            limit = MAX_LIST_ITEMS.get(path)
            if limit and len(node.value) > limit[0]:
                raise self.fail(
                    "size",
                    node,
                    path,
                    f"{len(node.value)} {limit[1]}, above the limit of {limit[0]}",
                )
            items = []
            positions = self.positions
            room = MAX_NODES if depth < MAX_DEPTH else 0  # build()'s limits for a child
            for index, item in enumerate(node.value):
                child = f"{path}[{index}]"
                if child not in positions:
                    mark = item.start_mark
                    positions[child] = (mark.line + 1, mark.column + 1)
                # a plain string, as build() would return it (inline: most values are)
                if type(item) is _SCALAR and item.tag == _STR and self.visited < room:
                    self.visited += 1
                    self.nodes += 1
                    items.append(item.value)
                else:
                    items.append(self.build(item, child, depth + 1))
            return items
        raise self.fail("tag", node, path, _tag_message(tag))  # pragma: no cover - no other nodes

    def build_mapping(self, node: yaml.MappingNode, path: str, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        positions = self.positions
        room = MAX_NODES if depth < MAX_DEPTH else 0  # build()'s limits for a child
        for key_node, value_node in node.value:
            self.nodes += 1
            if key_node.tag == "tag:yaml.org,2002:merge" or key_node.value == "<<":
                raise self.fail(
                    "alias", key_node, path, "merge keys (<<) are not supported; write keys out"
                )
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR:
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else _kind(key_node)
                raise self.fail(
                    "key-type",
                    key_node,
                    path,
                    f"key {quote(shown)} is not a string; quote it if it is meant as a name",
                )
            key = key_node.value
            where = f"{path}.{key}" if path else key
            if key in result:
                first = positions.get(where, (0, 0))
                raise self.fail(
                    "duplicate-key",
                    key_node,
                    where,
                    f"duplicate key {quote(key)} (first written at line {first[0]}); "
                    "each key may appear once",
                )
            mark = key_node.start_mark
            positions[where] = (mark.line + 1, mark.column + 1)
            # a plain string, as build() would return it (inline: most values are)
            if type(value_node) is _SCALAR and value_node.tag == _STR and self.visited < room:
                self.visited += 1
                self.nodes += 1
                result[key] = value_node.value
            else:
                result[key] = self.build(value_node, where, depth + 1)
        return result


def _short(value: str) -> str:
    """A value as a message shows it: quoted, and cut when it is absurdly long."""
    return repr(value) if len(value) <= 80 else f"{value[:60]!r}... ({len(value)} characters)"


def _tag_message(tag: str) -> str:
    tag = tag.replace("tag:yaml.org,2002:", "!!")
    return (
        f"YAML tag {tag!r} is not allowed; a blueprint holds only plain mappings, lists, "
        "strings, numbers and booleans"
    )
