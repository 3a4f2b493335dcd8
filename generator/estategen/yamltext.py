"""Block YAML for the files estategen writes, without PyYAML's pure-Python emitter.

PyYAML's emitter spent most of a large estate's render time on group_vars and manifests; this
writes the same bytes PyYAML would (block style, two-space indent, list items indented under
their key) for the shapes our outputs take, and hands anything unusual back to PyYAML.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class IndentedDumper(yaml.SafeDumper):
    """Indent list items under their key, as yamllint (and ansible-lint) expect."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class ManifestDumper(IndentedDumper):
    """Keys in the order written; multi-line strings (embedded config files) as ``|`` blocks."""


def _literal(dumper: ManifestDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


ManifestDumper.add_representer(str, _literal)


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


# Strings PyYAML writes plain (unquoted) in block context, when the YAML 1.1 resolver also
# reads them back as strings: no indicator first, no ": " or " #", ASCII, no spaces.
_PLAIN = re.compile(r"[A-Za-z0-9_/](?:[A-Za-z0-9_./=@+\[\],-]|:(?=.))*")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
# What PyYAML writes for each string seen (plain, or quoted for the rare others); its style
# choice does not depend on where the string stands once it is on one line, is not empty and
# is a short key.
_QUOTED: dict[str, str] = {}
_LONGEST_SCALAR = 200  # far below width=1000 and the 128-character simple key limit
_LINE_BREAKS = frozenset("\n\r\x85\u2028\u2029")


def _scalar(value: object) -> str:
    kind = type(value)
    if kind is str:
        text: str = value  # type: ignore[assignment]
        cached = _QUOTED.get(text)
        if cached is not None:
            return cached
        if (
            len(text) <= _LONGEST_SCALAR
            and _PLAIN.fullmatch(text)
            and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG  # type: ignore[no-untyped-call]
        ):
            if len(_QUOTED) < 10_000:
                _QUOTED[text] = text
            return text
        if len(text) > _LONGEST_SCALAR:
            raise _Unusual
        line = _dump([text])
        if not line.startswith("- ") or line.count("\n") != 1:
            raise _Unusual
        if len(_QUOTED) < 10_000:
            _QUOTED[text] = line[2:-1]
        return line[2:-1]
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    raise _Unusual  # floats and others: rare, and PyYAML's spelling is subtle


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
        seen: set[int] = {id(data)}
        if type(data) is dict and data:
            _write_mapping(data, "", out, seen, manifest)
        elif type(data) is list and data:
            _write_sequence(data, "", out, seen, manifest)
        else:
            raise _Unusual
        return "".join(out)
    except (_Unusual, TypeError):  # TypeError: keys that do not sort
        return _dump(data, manifest)


# what a literal block may hold: printable ASCII lines without trailing blanks
_LITERAL_LINE = re.compile(r"(?:[!-~][ -~]*[!-~]|[!-~])?")


def _literal_block(text: str, indent: str) -> str:
    """``|`` and the lines of a multi-line string, as PyYAML writes them; or _Unusual."""
    if not text.endswith("\n") or text.endswith("\n\n"):
        raise _Unusual  # PyYAML would write |- or |+
    lines = text[:-1].split("\n")
    if not all(_LITERAL_LINE.fullmatch(line) for line in lines) or not lines[0]:
        raise _Unusual
    inner = indent + "  "
    return " |\n" + "".join(f"{inner}{line}\n" if line else "\n" for line in lines)


def _write_value(value: Any, indent: str, out: list[str], seen: set[int], manifest: bool) -> None:
    """Write what follows a ``key:`` or ``-`` at ``indent``, starting on that line."""
    kind = type(value)
    if kind is dict or kind is list:
        if id(value) in seen:  # shared object: PyYAML writes an anchor and an alias
            raise _Unusual
        seen.add(id(value))
        if not value:
            out.append(" {}\n" if kind is dict else " []\n")
        elif kind is dict:
            out.append("\n")
            _write_mapping(value, indent + "  ", out, seen, manifest)
        else:
            out.append("\n")
            _write_sequence(value, indent + "  ", out, seen, manifest)
    elif manifest and kind is str and "\n" in value:
        out.append(_literal_block(value, indent))
    else:
        out.append(f" {_scalar(value)}\n")


def _write_mapping(
    mapping: dict[Any, Any], indent: str, out: list[str], seen: set[int], manifest: bool
) -> None:
    for key in mapping if manifest else sorted(mapping):
        if type(key) is not str or not key or len(key) > 100 or _LINE_BREAKS & set(key):
            raise _Unusual  # PyYAML writes these as "? key" complex keys
        out.append(f"{indent}{_scalar(key)}:")
        _write_value(mapping[key], indent, out, seen, manifest)


def _write_sequence(
    items: list[Any], indent: str, out: list[str], seen: set[int], manifest: bool
) -> None:
    for item in items:
        kind = type(item)
        if kind is dict and item:
            if id(item) in seen:
                raise _Unusual
            seen.add(id(item))
            # the first key shares the line of the dash: "- name: x"
            start = len(out)
            _write_mapping(item, indent + "  ", out, seen, manifest)
            out[start] = f"{indent}- {out[start][len(indent) + 2 :]}"
        elif kind is list and item:
            raise _Unusual  # "- - x": nested lists do not occur in our files
        else:
            out.append(f"{indent}-")
            _write_value(item, indent, out, seen, manifest)
