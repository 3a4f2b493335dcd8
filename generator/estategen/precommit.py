"""Entry points of the pre-commit hooks (``.pre-commit-hooks.yaml``).

pre-commit passes every staged file the hook's ``files:`` pattern matches at once; ``estategen
validate`` and ``render --check`` take one blueprint. This runs the command once per blueprint
and fails when any run fails, so a commit that breaks a blueprint or leaves its rendered output
stale is stopped.

    python -m estategen.precommit validate FILE...
    python -m estategen.precommit render-check [--output-root DIR] [--blueprints DIR] FILE...

render-check takes rendered files as well as blueprints: a file under the output root (DIR, or
``build``) belongs to the output folder its first path part names, and that folder to the
blueprint that renders to it (in ``--blueprints``, default ``blueprints``): with
``--output-root`` the blueprint of that file name (``DIR/lab`` <- ``lab.yaml``), without it the
one whose estate has that name (``build/<estate>``, where ``estategen render`` writes). So an
edit to committed output is checked as an edit to its blueprint is.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from estategen import cli

DEFAULT_ROOT = "build"  # where `estategen render FILE` writes: build/<estate>
BLUEPRINT_SUFFIXES = (".yaml", ".yml")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m estategen.precommit")
    parser.add_argument("hook", choices=["validate", "render-check"])
    parser.add_argument(
        "--output-root",
        metavar="DIR",
        help="render-check: compare with DIR/<file name without .yaml> instead of build/<estate>",
    )
    parser.add_argument(
        "--blueprints",
        metavar="DIR",
        default="blueprints",
        help="render-check: where the blueprint of a changed rendered file is (default: "
        "blueprints)",
    )
    parser.add_argument("files", nargs="*", metavar="FILE")
    args = parser.parse_intermixed_args(argv)
    if args.hook == "validate":
        return max((cli.main(["validate", path]) for path in args.files), default=0)
    root = args.output_root.rstrip("/") if args.output_root else None
    blueprints, worst = _blueprints_to_check(args.files, root, Path(args.blueprints))
    for path in blueprints:
        command = ["render", path, "--check"]
        if root:
            command += ["-o", f"{root}/{_stem(path)}"]
        worst = max(worst, cli.main(command))
    return worst


def _blueprints_to_check(
    files: Sequence[str], root: str | None, folder: Path
) -> tuple[list[str], int]:
    """The blueprints whose output a commit of ``files`` may leave stale, in the order first
    named, and 1 when a changed rendered file is in an output folder no blueprint renders to."""
    out: list[str] = []
    code = 0
    owners: dict[str, str] | None = None  # output folder name -> blueprint, read once
    stale: set[str] = set()
    for path in files:
        under = _under(path, root or DEFAULT_ROOT)
        if under is None:  # a blueprint
            if path not in out:
                out.append(path)
            continue
        if len(under) < 2:
            continue  # a file beside the output folders, in none of them
        name = under[0]
        if owners is None:
            owners = _owners(folder, by_file_name=root is not None)
        owner = owners.get(name)
        if owner is not None:
            if owner not in out:
                out.append(owner)
            continue
        output = Path(root or DEFAULT_ROOT) / name
        if (output / "MANIFEST.json").is_file() and name not in stale:
            stale.add(name)
            code = 1
            what = f"{folder}/{name}.yaml" if root else f"a blueprint with estate: {name}"
            print(
                f"{output}: estategen output that no blueprint in {folder}/ renders to "
                f"(expected {what}); render it from its blueprint or remove it",
                file=sys.stderr,
            )
    return out, code


def _under(path: str, root: str) -> tuple[str, ...] | None:
    """The parts of ``path`` below ``root`` (the first names its output folder), or None for
    a path outside ``root``: a blueprint."""
    relative = os.path.relpath(os.path.normpath(path), os.path.normpath(root))
    parts = Path(relative).parts
    if not parts or parts[0] == ".." or relative == ".":
        return None
    return parts


def _owners(folder: Path, by_file_name: bool) -> dict[str, str]:
    """Each output folder name the blueprints in ``folder`` render to, with the blueprint:
    its file name under ``--output-root``, otherwise its estate (``build/<estate>``)."""
    from estategen import load
    from estategen.errors import EstategenError

    owners: dict[str, str] = {}
    paths = sorted(p for p in folder.glob("*") if p.suffix in BLUEPRINT_SUFFIXES and p.is_file())
    for path in paths:
        if by_file_name:
            owners.setdefault(_stem(str(path)), str(path))
            continue
        try:
            data = load.read_blueprint(path).data
        except EstategenError:
            continue  # its own run (validate) reports it
        estate = data.get("estate") if isinstance(data, dict) else None
        if isinstance(estate, str):
            owners.setdefault(estate, str(path))
    return owners


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


if __name__ == "__main__":
    sys.exit(main())
