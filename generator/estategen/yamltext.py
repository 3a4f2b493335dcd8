"""Block YAML for the files estategen writes, without PyYAML's pure-Python emitter.

PyYAML's emitter spent most of a large estate's render time on group_vars and manifests; this
writes the same bytes PyYAML would (block style, two-space indent, list items indented under
their key) for the shapes our outputs take, and hands anything unusual back to PyYAML. Both
quote a string that YAML 1.2 or go-yaml (Kubernetes) would read as a number or a boolean where
PyYAML's YAML 1.1 would not (``08``, ``1e3``, ``y``): see :func:`_reads_as_string`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml


class IndentedDumper(yaml.SafeDumper):
    """Indent list items under their key, as yamllint (and ansible-lint) expect."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class ManifestDumper(IndentedDumper):
    """Keys in the order written; multi-line strings (embedded config files) as ``|`` blocks."""


def _quoted_where_read_otherwise(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """A string in single quotes when a reader other than PyYAML's would read it plain as a
    number or a boolean (``08``, ``1e3``, ``y``: see :func:`_reads_as_string`); PyYAML
    quotes those its own resolver reads so, and chooses the style of the others."""
    style = None if _reads_as_string(value) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _literal(dumper: ManifestDumper, value: str) -> yaml.Node:
    if "\n" not in value:
        return _quoted_where_read_otherwise(dumper, value)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


IndentedDumper.add_representer(str, _quoted_where_read_otherwise)
ManifestDumper.add_representer(str, _literal)


class _LibyamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter, quoting the strings other readers would read as numbers too."""


_LibyamlDumper.add_representer(str, _quoted_where_read_otherwise)


def prometheus_block(data: Any) -> str:
    """The Prometheus files: keys in the order written, lists not indented under their key,
    as libyaml's emitter writes them."""
    return yaml.dump(
        data, Dumper=_LibyamlDumper, sort_keys=False, default_flow_style=False, width=1000
    )


def _dump(data: Any, manifest: bool = False) -> str:
    return yaml.dump(
        data,
        Dumper=ManifestDumper if manifest else IndentedDumper,
        default_flow_style=False,
        sort_keys=not manifest,
        width=1000,
    )


class _Unusual(Exception):
    """Data the block writer does not reproduce exactly; PyYAML writes the whole document."""


# PyYAML's implicit resolvers (the dumpers'), by a plain scalar's first
# character, as Resolver.resolve looks them up: a string needs quotes when one matches
_IMPLICIT: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    first: tuple(resolvers)
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
assert None not in _IMPLICIT, "wildcard resolvers would need _reads_as_string to consult them"


# Readers of what we write other than PyYAML's YAML 1.1 resolver read more plain scalars as
# numbers and booleans: YAML 1.2's core schema (spec 1.2.2, 10.3.2: 08, 1e3, 0o17, +.5) and
# go-yaml, which Kubernetes reads YAML with (v2 in kubectl through sigs.k8s.io/yaml, v3 in
# kustomize: y and n are booleans; integers are whatever Go's strconv.ParseInt(s, 0, 64)
# takes once underscores are removed: 0X1F, 0B1, 0o17, -0x1f; decimals and exponents match
# its yamlStyleFloat). kubectl kustomize turns a label `rack: 08` into `rack: 8`. A string any
# of them reads as something else is quoted. Each of these starts with one of these:
_OTHER_READERS_FIRST = frozenset("0123456789+-.~<nNyYtTfFoO")
# YAML 1.2 core's null, bool and special floats; go-yaml v2's resolve table (a superset)
_WORDS = frozenset(
    {
        *("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"),
        *("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"),
        *("~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", "<<"),
        *(".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"),
    }
)
# YAML 1.2 core's ints and floats and go-yaml's, signs allowed where either reader allows
# them or more (matched with underscores removed, as go-yaml removes them); and go-yaml's
# timestamps, which kustomize rewrites (2024-1-2T3:4:5Z becomes 2024-01-02T03:04:05Z)
_NOT_STRINGS = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+"
    r"|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:Z|[-+][0-9]{1,2}:[0-9]{2})?)?"
)


def _reads_as_string(text: str) -> bool:
    """Whether ``text`` written plain reads back as a string: to PyYAML (no implicit type
    of its resolver matches), to YAML 1.2's core schema and to go-yaml."""
    if any(regexp.match(text) for _, regexp in _IMPLICIT.get(text[:1], ())):
        return False
    if text[:1] in _OTHER_READERS_FIRST:
        return text not in _WORDS and not _NOT_STRINGS.fullmatch(text.replace("_", ""))
    return True


# What PyYAML writes for each one-line string seen (plain, or quoted for the others); its
# style choice does not depend on where the string stands once it is on one line, is not
# empty and is a short key. Held for this process only, and bounded.
_STRINGS: dict[str, str] = {}
_KEYS: dict[str, str] = {}
_MEMO_LIMIT = 100_000
# Far below width=1000 (where PyYAML would fold a line at a space) with a 100-character key
# and the indentation of our documents, and above the longest PromQL expression we write.
_LONGEST_SCALAR = 500
_LINE_BREAKS = frozenset("\n\r\x85\u2028\u2029")
_ONE_LINE = re.compile(r"[ -~]*")  # printable ASCII: nothing PyYAML would escape
# a letter, then letters, digits and "_.-/": no indicator, blank or colon, so _plain_allowed
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
# what PyYAML's emitter (analyze_scalar) takes for an indicator in block context
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")


def _plain_allowed(text: str) -> bool:
    """Whether PyYAML may write one-line printable ASCII ``text`` plain in block context
    (before asking the resolver whether it would read back as a string)."""
    if not text or text[0] == " " or text[-1] == " " or text.startswith(("---", "...")):
        return False
    first = text[0]
    if first in _FIRST_INDICATORS:
        return False
    if first in "?:-" and (len(text) == 1 or text[1] == " "):
        return False
    return not (": " in text or text.endswith(":") or " #" in text)


def _string(text: str) -> str:
    """A one-line string as PyYAML writes it: plain when it may be and reads back as a
    string, else in single quotes; escapes (double quotes) are PyYAML's to write."""
    if len(text) > _LONGEST_SCALAR:
        raise _Unusual
    if _WORD.fullmatch(text) and text[0] not in _IMPLICIT:
        written = text  # a name or a path: plain, and no implicit type starts with its letter
    elif _ONE_LINE.fullmatch(text):
        if _plain_allowed(text) and _reads_as_string(text):
            written = text
        else:
            written = "'" + text.replace("'", "''") + "'"
    else:
        line = _dump([text])
        if not line.startswith("- ") or line.count("\n") != 1:
            raise _Unusual
        written = line[2:-1]
    # a multi-line string is a | block in a manifest: only one-line strings are remembered
    if len(_STRINGS) < _MEMO_LIMIT and "\n" not in text:
        _STRINGS[text] = written
    return written


def _scalar(value: object) -> str:
    kind = type(value)
    if kind is str:
        text: str = value  # type: ignore[assignment]
        written = _STRINGS.get(text)
        return _string(text) if written is None else written
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    raise _Unusual  # floats and others: rare, and PyYAML's spelling is subtle


def _key(key: object) -> str:
    """A mapping key followed by ``:``; keys PyYAML writes as ``? key`` are _Unusual."""
    if type(key) is not str or not key or len(key) > 100 or _LINE_BREAKS & set(key):
        raise _Unusual
    written = _scalar(key) + ":"
    if len(_KEYS) < _MEMO_LIMIT:
        _KEYS[key] = written
    return written


def block(data: Any) -> str:
    """``yaml.dump`` of Ansible variables: sorted keys, as yamllint and ansible-lint expect."""
    return _block(data, manifest=False)


def manifest(data: Any) -> str:
    """A Kubernetes object or Helm values: keys in the order written (``apiVersion``, ``kind``,
    ``metadata`` first, as people read manifests) and embedded files as ``|`` blocks."""
    return _block(data, manifest=True)


def _block(data: Any, manifest: bool) -> str:
    try:
        out: list[str] = []
        containers: list[int] = [id(data)]
        _write(data, out, containers, {}, manifest)
        if len(set(containers)) != len(containers):
            # an object written twice: PyYAML writes it once with an anchor (&id001), then
            # aliases (*id001)
            anchors = _anchors(data, manifest)
            if id(data) in anchors:
                raise _Unusual  # the document holds itself
            out = []
            _write(data, out, [], anchors, manifest)
        return "".join(out)
    except (_Unusual, TypeError):  # TypeError: keys that do not sort
        return _dump(data, manifest)


def _write(
    data: Any, out: list[str], containers: list[int], anchors: Anchors, manifest: bool
) -> None:
    if type(data) is dict and data:
        _write_mapping(data, "", "", out.append, containers, anchors, manifest)
    elif type(data) is list and data:
        _write_sequence(data, "", "", out.append, containers, anchors, manifest)
    else:
        raise _Unusual


# id of each object written more than once -> "&idNNN" until it is written, "*idNNN" after
Anchors = dict[int, str]


def _anchors(data: Any, manifest: bool) -> Anchors:
    """PyYAML's anchors: numbered in the order each object is met a second time, walking
    the document as it is written (an alias is not walked into)."""
    seen: set[int] = set()
    anchors: Anchors = {}

    def walk(node: Any) -> None:
        kind = type(node)
        if kind is not dict and kind is not list:
            return
        if id(node) in seen:
            if id(node) not in anchors:
                anchors[id(node)] = f"&id{len(anchors) + 1:03d}"
            return
        seen.add(id(node))
        if kind is list:
            items = node
        else:
            items = node.values() if manifest else [v for _, v in sorted(node.items())]
        for item in items:
            walk(item)

    walk(data)
    return anchors


def _anchor(value: Any, anchors: Anchors) -> str:
    """ "" for an object written once; its anchor ("&id001") the first time it is written,
    then its alias ("*id001")."""
    anchor = anchors.get(id(value))
    if anchor is None:
        return ""
    anchors[id(value)] = "*" + anchor[1:]
    return anchor


# what a literal block may hold: printable ASCII lines without trailing blanks (the first
# also without leading ones: PyYAML would add an indentation indicator)
_FIRST_LINE = re.compile(r"[!-~](?:[ -~]*[!-~])?")
_LITERAL_LINE = re.compile(r"(?:[ -~]*[!-~])?")


def _literal_block(text: str, indent: str) -> str:
    """``|`` and the lines of a multi-line string, as PyYAML writes them; or _Unusual."""
    if not text.endswith("\n") or text.endswith("\n\n"):
        raise _Unusual  # PyYAML would write |- or |+
    lines = text[:-1].split("\n")
    if not _FIRST_LINE.fullmatch(lines[0]) or not all(map(_LITERAL_LINE.fullmatch, lines)):
        raise _Unusual
    inner = indent + "  "
    return " |\n" + "".join(f"{inner}{line}\n" if line else "\n" for line in lines)


Append = Callable[[str], None]


def _write_mapping(
    mapping: dict[Any, Any],
    first: str,
    indent: str,
    append: Append,
    containers: list[int],
    anchors: Anchors,
    manifest: bool,
) -> None:
    """The keys of ``mapping`` at ``indent``; the first line starts with ``first`` instead
    (``- `` when the mapping is a list item: ``- name: x``)."""
    prefix = first
    inner = indent + "  "
    for key, value in mapping.items() if manifest else sorted(mapping.items()):
        written = _KEYS.get(key)
        if written is None:
            written = _key(key)
        kind = type(value)
        if kind is str:
            scalar = _STRINGS.get(value)
            if scalar is None:
                if manifest and "\n" in value:
                    append(f"{prefix}{written}{_literal_block(value, indent)}")
                    prefix = indent
                    continue
                scalar = _string(value)
            append(f"{prefix}{written} {scalar}\n")
        elif kind is dict or kind is list:
            containers.append(id(value))
            mark = _anchor(value, anchors) if anchors else ""
            if mark.startswith("*"):
                append(f"{prefix}{written} {mark}\n")
            elif not value:
                empty = "{}" if kind is dict else "[]"
                append(f"{prefix}{written}{' ' if mark else ''}{mark} {empty}\n")
            else:
                append(f"{prefix}{written}{' ' if mark else ''}{mark}\n")
                if kind is dict:
                    _write_mapping(value, inner, inner, append, containers, anchors, manifest)
                else:
                    _write_sequence(value, inner, inner, append, containers, anchors, manifest)
        else:
            append(f"{prefix}{written} {_scalar(value)}\n")
        prefix = indent


def _write_sequence(
    items: list[Any],
    first: str,
    indent: str,
    append: Append,
    containers: list[int],
    anchors: Anchors,
    manifest: bool,
) -> None:
    """The items of ``items`` at ``indent``, the first line starting with ``first``."""
    prefix = first
    inner = indent + "  "
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            containers.append(id(item))
            mark = _anchor(item, anchors) if anchors else ""
            if mark.startswith("*"):
                append(f"{prefix}- {mark}\n")
            elif not item:
                append(f"{prefix}- {mark}{' ' if mark else ''}{'{}' if kind is dict else '[]'}\n")
            elif mark:  # "- &id001", then the object on the lines below
                append(f"{prefix}- {mark}\n")
                if kind is dict:
                    _write_mapping(item, inner, inner, append, containers, anchors, manifest)
                else:
                    _write_sequence(item, inner, inner, append, containers, anchors, manifest)
            elif kind is dict:
                _write_mapping(item, prefix + "- ", inner, append, containers, anchors, manifest)
            else:  # "- - x": the inner list's first item shares the line
                _write_sequence(item, prefix + "- ", inner, append, containers, anchors, manifest)
        elif manifest and kind is str and "\n" in item:
            append(f"{prefix}-{_literal_block(item, indent)}")
        else:
            append(f"{prefix}- {_scalar(item)}\n")
        prefix = indent
