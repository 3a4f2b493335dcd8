"""The tests stand alone: every upstream file they read is vendored under tests/upstream/, one
folder per repository and tag, each with the upstream LICENSE and a SOURCE.md naming the
repository, tag, commit, licence and the upstream path and SHA-256 of every file; and no test
builds a path that leaves the repository.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from crd import UPSTREAM

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "tests").rglob("*.py"))
FOLDERS = sorted(p for p in UPSTREAM.iterdir() if p.is_dir())

# SOURCE.md's header facts and its table rows: | `file` | `upstream/path` | `sha256` |
FACT = re.compile(r"^- (Repository|Tag|Commit|Licence): (\S+)", re.MULTILINE)
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| `([0-9a-f]{64})` \|$", re.MULTILINE)
# the licences vendored files may carry, by SPDX name: what their LICENSE file says
LICENCES = {
    "Apache-2.0": "Apache License",
    "MIT": "MIT License",
    # MIT without its attribution clause: the grant, and no "above copyright notice" condition
    "MIT-0": "Permission is hereby granted, free of charge",
}
# how a test names a vendored release, or a file in one: "kueue-v0.19.2/values.yaml", a
# release tagged by its date, "amazon-eks-ami-v20260724", or a chart tagged in a repository
# of many charts, "argo-workflows-1.0.18"
RELEASE = re.compile(r"[a-z0-9][a-z0-9-]*-(?:v\d+(?:\.\d+)+|v\d{8}|\d+\.\d+\.\d+)(?:/[\w.-]+)*")


def source_of(folder: Path) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """SOURCE.md's facts (Repository, Tag, ...) and its files: name -> (upstream path, sha256)."""
    text = (folder / "SOURCE.md").read_text()
    facts = dict(FACT.findall(text))
    files = {name: (path, digest) for name, path, digest in ROW.findall(text)}
    return facts, files


def test_the_vendored_releases_are_there() -> None:
    assert FOLDERS, f"no upstream releases under {UPSTREAM}"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_release_carries_its_licence_and_where_each_file_comes_from(folder: Path) -> None:
    facts, files = source_of(folder)
    assert facts.get("Licence") in LICENCES, facts
    assert LICENCES[facts["Licence"]] in (folder / "LICENSE").read_text()
    assert facts.keys() == {"Repository", "Tag", "Commit", "Licence"}, facts
    assert facts["Repository"].startswith("https://github.com/")
    # <component>-<tag>, or the tag itself where it names the component (a chart's tag)
    tag = facts["Tag"]
    assert folder.name == tag or folder.name.endswith(f"-{tag}"), (folder.name, tag)
    assert re.fullmatch(r"[0-9a-f]{40}", facts["Commit"]), facts["Commit"]
    assert files, f"{folder}/SOURCE.md lists no files"
    for name, (path, digest) in files.items():
        assert path.endswith(f"/{name}") or path == name, (name, path)
        content = (folder / name).read_bytes()
        assert hashlib.sha256(content).hexdigest() == digest, f"{folder.name}/{name} was edited"
    # a chart is kept as a folder, its files listed by their paths in it
    kept = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    kept -= {"LICENSE", "SOURCE.md"}
    assert kept == files.keys(), f"{folder.name}: not listed in SOURCE.md: {kept - files.keys()}"


def string_constants() -> Iterator[tuple[Path, int, str]]:
    for source in SOURCES:
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield source, node.lineno, node.value


def test_every_release_a_test_names_is_vendored_and_every_vendored_one_is_named() -> None:
    named = {
        (source.name, line, text)
        for source, line, text in string_constants()
        if RELEASE.fullmatch(text)
    }
    missing = [(s, line, text) for s, line, text in named if not (UPSTREAM / text).exists()]
    assert missing == [], f"named but not under {UPSTREAM}: {missing}"
    used = {text.split("/")[0] for _, _, text in named}
    assert {f.name for f in FOLDERS} <= used, {f.name for f in FOLDERS} - used


# --- no path leaves the repository ------------------------------------------------------------


class Outside(Exception):
    """A path built from ``__file__`` climbed above the repository root."""


def _climb(parts: tuple[str, ...], steps: int) -> tuple[str, ...]:
    if steps > len(parts):
        raise Outside
    return parts[: len(parts) - steps]


def _join(parts: tuple[str, ...], text: str) -> tuple[str, ...]:
    for part in text.split("/"):
        if part == "..":
            parts = _climb(parts, 1)
        elif part not in ("", "."):
            parts = (*parts, part)
    return parts


def position(
    node: ast.AST, here: tuple[str, ...], names: dict[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    """Where below the repository root ``node`` points, as path parts, when it is a path built
    from ``__file__`` (``Path(__file__).resolve().parents[1] / "x"``, or a module-level name
    bound to one); None when it is not such a path. Raises Outside when it climbs above."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Call):
        func = node.func
        is_path = (isinstance(func, ast.Name) and func.id == "Path") or (
            isinstance(func, ast.Attribute) and func.attr == "Path"
        )
        if is_path and [ast.unparse(a) for a in node.args] == ["__file__"]:
            return here
        if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute"):
            return position(func.value, here, names)
        if isinstance(func, ast.Attribute) and func.attr == "joinpath":
            parts = position(func.value, here, names)
            for arg in node.args:
                if parts is None or not isinstance(arg, ast.Constant):
                    return None
                parts = _join(parts, str(arg.value))
            return parts
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        parts = position(node.value, here, names)
        return None if parts is None else _climb(parts, 1)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "parents"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        parts = position(node.value.value, here, names)
        return None if parts is None else _climb(parts, node.slice.value + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        parts = position(node.left, here, names)
        if parts is None or not isinstance(node.right, ast.Constant):
            return None
        return _join(parts, str(node.right.value))
    return None


def escapes(source: Path, root: Path) -> list[str]:
    """Each place in ``source`` (a file under ``root``) that builds a path above ``root``."""
    tree = ast.parse(source.read_text(), str(source))
    here = source.relative_to(root).parts
    names: dict[str, tuple[str, ...]] = {}
    found: dict[int, str] = {}  # by line, the outermost expression (ast.walk goes outside in)

    def where(node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        found.setdefault(line, f"{source.relative_to(root)}:{line}: {ast.unparse(node)}")

    for statement in tree.body:  # module-level names, in order: ROOT = Path(__file__)...
        target = value = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        if isinstance(target, ast.Name) and value is not None:
            try:
                parts = position(value, here, names)
            except Outside:
                where(value)
                continue
            if parts is not None:
                names[target.id] = parts
    for node in ast.walk(tree):
        try:
            position(node, here, names)
        except Outside:
            where(node)
    return [found[line] for line in sorted(found)]


def test_no_test_builds_a_path_outside_the_repository() -> None:
    found = [place for source in SOURCES for place in escapes(source, ROOT)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    ("code", "outside"),
    [
        ('Path(__file__).resolve().parents[2] / "sibling" / "data"', True),
        ("Path(__file__).parent.parent.parent", True),
        ('Path(__file__).parent / "../../sibling"', True),
        ('pathlib.Path(__file__).resolve().parent.joinpath("..", "..")', True),
        ('ROOT = Path(__file__).parent.parent\nX = ROOT / ".." / "sibling"', True),
        ('ROOT = Path(__file__).parent.parent\nX = ROOT.parent / "sibling"', True),
        ('Path(__file__).resolve().parents[1] / "tests" / "upstream"', False),
        ('Path(__file__).parent / "fixtures" / ".." / "upstream"', False),
        ('list_in_manifest(out, "../secret")', False),  # data, not a path from __file__
        ("self.folder.parent.parent", False),
    ],
)
def test_a_path_above_the_root_is_found_however_it_is_built(
    tmp_path: Path, code: str, outside: bool
) -> None:
    source = tmp_path / "tests" / "test_x.py"
    source.parent.mkdir()
    source.write_text(code + "\n")
    assert bool(escapes(source, tmp_path)) == outside
