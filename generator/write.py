"""The one writer: stage the whole output beside the target, then swap it in atomically.

The target folder is always either the previous complete output or the new one. Files a user
added to an earlier output (anything MANIFEST.json does not list) are carried over, never
deleted; a folder that is not estategen output is refused.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import difflib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from estategen import __version__
from estategen.errors import UsageError
from estategen.render import Files, OutputFile, json_file

MANIFEST = "MANIFEST.json"


def manifest(files: Mapping[str, OutputFile], blueprint: bytes, estate: str) -> OutputFile:
    """MANIFEST.json: what wrote the folder, from which blueprint, and every file's digest."""
    return json_file(
        {
            "estategen": __version__,
            "estate": estate,
            "blueprint_sha256": hashlib.sha256(blueprint).hexdigest(),
            "files": {
                path: {"sha256": hashlib.sha256(f.content).hexdigest(), "mode": f"{f.mode:04o}"}
                for path, f in sorted(files.items())
            },
        }
    )


def with_manifest(files: Files, blueprint: bytes, estate: str) -> Files:
    return {**files, MANIFEST: manifest(files, blueprint, estate)}


def _previous_manifest(target: Path) -> set[str] | None:
    """Paths the earlier output lists, or None when the folder is not estategen output."""
    try:
        data = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
        return {str(p) for p in data["files"]} | {MANIFEST}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _existing_files(target: Path) -> set[str]:
    return {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file() or p.is_symlink()}


def _check_target(target: Path) -> tuple[set[str], set[str]]:
    """(files estategen wrote before, user files) in an existing target; refuses foreign folders."""
    if not target.exists():
        return set(), set()
    if not target.is_dir() or target.is_symlink():
        raise UsageError(f"{target}: exists and is not a folder; choose another output folder")
    existing = _existing_files(target)
    if not existing and not any(target.iterdir()):
        return set(), set()
    owned = _previous_manifest(target)
    if owned is None:
        raise UsageError(
            f"{target}: not empty and not earlier estategen output (no readable {MANIFEST}); "
            "refusing to replace it. Choose a new or empty folder with -o."
        )
    return owned & existing, existing - owned


# Stack settings files, pulumi/<project>/Pulumi.<stack>.yaml, which earlier versions rendered.
STACK_SETTINGS = re.compile(r"pulumi/[^/]+/Pulumi\.[^/]+\.yaml")


def _handed_over(target: Path, dropped: set[str]) -> set[str]:
    """Files estategen wrote before and no longer renders that now belong to Pulumi and the user.

    A stack settings file edited since it was rendered (Pulumi writes `encryptionsalt` or
    `secretsprovider` there, users add keys) is carried over like a user's file, never deleted.
    """
    try:
        entries = json.loads((target / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    kept = set()
    for path in sorted(dropped):
        source = target / path
        if not STACK_SETTINGS.fullmatch(path) or source.is_symlink():
            continue
        try:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
        except OSError:
            continue
        if digest != (entries.get(path) or {}).get("sha256"):
            kept.add(path)
    return kept


def write_tree(files: Files, target: Path) -> None:
    """Write ``files`` (MANIFEST.json included) as the complete content of ``target``."""
    target = target.absolute()
    owned, user_files = _check_target(target)
    user_files |= _handed_over(target, owned - set(files))
    clashes = sorted(user_files & set(files))
    if clashes:
        raise UsageError(
            f"{target}: {', '.join(clashes)} not written by estategen but would now be "
            "rendered; move them away first"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=_stage_prefix(target, os.getpid()), dir=target.parent))
    except OSError as err:
        raise UsageError(f"{target}: cannot create the output folder: {_reason(err)}") from None
    try:
        try:
            folders: set[Path] = {stage}
            for path, output in files.items():
                _write_file(stage / path, output, folders)
            for path in sorted(user_files):
                destination = stage / path
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target / path, destination, follow_symlinks=False)
            os.chmod(stage, 0o755)
            _flush(stage, files)
        except OSError as err:
            # a full disk, a quota, a read-only file system: the earlier output is untouched
            raise UsageError(
                f"{target}: cannot write the output: {_reason(err)}; the folder is unchanged"
            ) from None
        try:
            _swap(stage, target)
        except OSError as err:
            raise UsageError(f"{target}: cannot swap in the new output: {_reason(err)}") from None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    _remove_abandoned_stages(target)


def _stage_prefix(target: Path, pid: int) -> str:
    return f".{target.name}.estategen-{pid}-"


_STAGE = re.compile(r"\.(?P<name>.+)\.estategen-(?P<pid>[0-9]+)-[^/]+(\.old)?")


def _remove_abandoned_stages(target: Path) -> None:
    """Staging folders of renders that were killed before they could clean up.

    Each carries its writer's pid; one whose process is gone is removed. A live process
    (another render of the same folder, or an unrelated process that reuses the pid) keeps it.
    """
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return
    for sibling in siblings:
        match = _STAGE.fullmatch(sibling.name)
        if not match or match["name"] != target.name or not sibling.is_dir():
            continue
        try:
            os.kill(int(match["pid"]), 0)
        except ProcessLookupError:
            shutil.rmtree(sibling, ignore_errors=True)
        except (OSError, OverflowError):
            continue  # alive under another user, or not a pid at all


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _write_file(path: Path, output: OutputFile, folders: set[Path]) -> None:
    folder = path.parent
    if folder not in folders:
        folder.mkdir(parents=True, exist_ok=True)
        folders.add(folder)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, output.mode)
    try:
        os.fchmod(fd, output.mode)
        view = memoryview(output.content)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _flush(stage: Path, files: Files) -> None:
    """Make the staged tree durable before it is swapped in.

    One syncfs(2) of the stage's file system is much cheaper than an fsync per file (a large
    estate writes hundreds) and also covers the folders; where it is missing, fsync each.
    """
    if _syncfs(stage):
        return
    for path in files:
        fd = os.open(stage / path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for folder in sorted({(stage / p).parent for p in files}, reverse=True):
        _fsync_dir(folder)


def _syncfs(path: Path) -> bool:
    libc = _libc()
    syncfs = getattr(libc, "syncfs", None) if libc else None
    if syncfs is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(syncfs(fd)) == 0
    finally:
        os.close(fd)


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name, use_errno=True) if name else None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _swap(stage: Path, target: Path) -> None:
    """Put ``stage`` at ``target``; the old tree ends up at ``stage`` and is removed after."""
    if not target.exists():
        os.rename(stage, target)
        _fsync_dir(target.parent)
        return
    if _exchange(stage, target):
        _fsync_dir(target.parent)
        shutil.rmtree(stage, ignore_errors=True)
        return
    # No renameat2 (not Linux): two renames, with a short moment where target is absent.
    old = stage.with_name(stage.name + ".old")
    os.rename(target, old)
    os.rename(stage, target)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths with renameat2(RENAME_EXCHANGE) where the OS has it."""
    libc = _libc()
    renameat2 = getattr(libc, "renameat2", None) if libc else None
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result != 0:
        errno = ctypes.get_errno()
        if errno in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: file system cannot exchange
            return False
        raise OSError(errno, os.strerror(errno), str(b))
    return True


@dataclass(frozen=True)
class Drift:
    """What --check found: a unified diff of changed files and the paths added or removed."""

    diff: str
    changed: list[str]

    @property
    def clean(self) -> bool:
        return not self.changed


def compare_tree(files: Files, target: Path) -> Drift:
    """Compare what would be written with what is in ``target``; writes nothing."""
    owned = _previous_manifest(target) if target.is_dir() else None
    existing = (owned or set()) & (_existing_files(target) if target.is_dir() else set())
    chunks: list[str] = []
    changed: list[str] = []
    for path in sorted(set(files) | existing):
        new = files[path].content if path in files else b""
        old_path = target / path
        old = old_path.read_bytes() if path in existing else b""
        mode_differs = (
            path in files
            and path in existing
            and (old_path.stat().st_mode & 0o7777) != files[path].mode
        )
        if old == new and not mode_differs and (path in files) == (path in existing):
            continue
        changed.append(path)
        if mode_differs and old == new:
            chunks.append(
                f"mode {path}: {old_path.stat().st_mode & 0o7777:04o} -> {files[path].mode:04o}\n"
            )
            continue
        chunks.extend(_diff(path, old, new, path in existing, path in files))
    return Drift("".join(chunks), changed)


def _diff(path: str, old: bytes, new: bytes, had: bool, has: bool) -> list[str]:
    try:
        old_lines = old.decode("utf-8").splitlines(keepends=True)
        new_lines = new.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return [f"Binary files a/{path} and b/{path} differ\n"]
    lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile=f"a/{path}" if had else "/dev/null",
            tofile=f"b/{path}" if has else "/dev/null",
        )
    )
    return [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    ]
