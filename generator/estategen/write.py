"""The one writer: stage the whole output beside the target, then swap it in atomically.

The target folder is always either the previous complete output or the new one. Files a user
added to an earlier output (anything MANIFEST.json does not list) are carried over, never
deleted; a folder that is not estategen output is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from estategen import __version__
from estategen.errors import UsageError
from estategen.output import MANIFEST, Files, OutputFile, json_file
from estategen.readback import OutputFolder, OutputRefused, ReadBack

if TYPE_CHECKING:
    import ctypes


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


@dataclass(slots=True)
class _Tree:
    """What a folder holds, found without following links (paths relative to the folder)."""

    files: set[str] = field(default_factory=set)  # regular files
    links: set[str] = field(default_factory=set)
    # regular files with more than one name: possibly a file outside the folder, so treated
    # as a symbolic link is, carried over as a link and never read
    hard_links: set[str] = field(default_factory=set)
    fifos: set[str] = field(default_factory=set)
    empty_folders: set[str] = field(default_factory=set)
    others: dict[str, str] = field(default_factory=dict)  # sockets, devices: path -> kind

    @property
    def entries(self) -> set[str]:
        return self.files | self.links | self.hard_links | self.fifos | set(self.others)


def _scan(root: Path) -> _Tree:
    """Walk ``root`` with scandir, never into a linked folder; skips in-folder staging."""
    tree = _Tree()
    stack = [""]
    while stack:
        folder = stack.pop()
        with os.scandir(root / folder if folder else root) as entries:
            children = list(entries)
        if folder and not children:
            tree.empty_folders.add(folder)
        for entry in children:
            if (
                not folder
                and _INNER_STAGE.fullmatch(entry.name)
                and entry.is_dir(follow_symlinks=False)
            ):
                continue
            path = f"{folder}/{entry.name}" if folder else entry.name
            # folders, files and links by the type the folder listing gives (no stat call
            # per entry where the file system reports it)
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
            elif entry.is_file(follow_symlinks=False):
                if entry.stat(follow_symlinks=False).st_nlink > 1:
                    tree.hard_links.add(path)
                else:
                    tree.files.add(path)
            elif entry.is_symlink():
                tree.links.add(path)
            elif stat.S_ISFIFO(mode := entry.stat(follow_symlinks=False).st_mode):
                tree.fifos.add(path)
            else:
                tree.others[path] = "a socket" if stat.S_ISSOCK(mode) else "a device"
    return tree


# what to do with a folder estategen did not write, in every refusal of one
_NOT_OURS = "choose a new or empty folder with -o, or move those files away"


@dataclass(slots=True)
class _Previous:
    """An existing target: what estategen wrote there and what a user added."""

    owned: set[str] = field(default_factory=set)
    user: _Tree = field(default_factory=_Tree)
    manifest: bytes | None = None
    # what MANIFEST.json lists: path -> {"sha256": ..., "mode": ...}
    listed: dict[str, dict[str, str]] = field(default_factory=dict)


def _check_target(target: Path) -> _Previous:
    """What an existing target holds; refuses foreign folders and what cannot be carried over."""
    if not os.path.lexists(target):
        return _Previous()
    refuse_other_kind(target, folder=True)
    try:
        scanned = _scan(target)
    except OSError as err:
        raise UsageError(f"{target}: cannot read the output folder: {_reason(err)}") from None
    existing = scanned.entries
    if not existing and not scanned.empty_folders:
        return _Previous()
    try:
        with OutputFolder(target) as folder:
            manifest = folder.manifest()
            raw = folder.read(MANIFEST) if manifest else None
    except OutputRefused as err:  # a MANIFEST.json estategen did not write
        raise UsageError(f"{err}: {_NOT_OURS}") from None
    listed = set(manifest.files) | {MANIFEST} if manifest else _interrupted(target)
    if listed is None:
        raise UsageError(
            f"{target}: not estategen output: it holds files estategen did not write and no "
            f"{MANIFEST}; {_NOT_OURS}"
        )
    user = _Tree(
        scanned.files - listed,
        scanned.links - listed,
        scanned.hard_links - listed,
        scanned.fifos - listed,
        scanned.empty_folders,
        {p: kind for p, kind in scanned.others.items() if p not in listed},
    )
    if user.others:
        path, kind = sorted(user.others.items())[0]
        raise UsageError(
            f"{target / path}: {kind}, which a render cannot carry over to the new output; "
            "move it away first"
        )
    return _Previous(
        listed & existing, user, raw.content if raw else None, manifest.files if manifest else {}
    )


def refuse_other_kind(target: Path, folder: bool) -> None:
    """Refuse an existing ``target`` that is not what estategen writes there: a folder for
    render's output, a regular file for a single file (import's blueprint, report's pages).
    A symbolic link, a device, a FIFO or a socket is never replaced, nor written through."""
    mode = os.lstat(target).st_mode
    if not (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
        what = "folder" if folder else "file"
        raise UsageError(f"{target}: exists and is not a {what}; choose another output {what}")


def make_folder(folder: Path) -> None:
    """Make ``folder`` and its missing parents with mode 0755 whatever the umask, as render
    makes its own (a command that writes single files, such as ``report -o``)."""
    if os.path.lexists(folder) and not folder.is_dir():
        raise UsageError(f"{folder}: exists and is not a folder")
    try:
        _make_folders(folder, set())
    except OSError as err:
        raise UsageError(f"{folder}: cannot create the folder: {_reason(err)}") from None


def write_file(target: Path, content: bytes, inputs: Iterable[str | Path] = ()) -> None:
    """Write one file (mode 0644) atomically: a fresh name beside ``target`` (O_EXCL: a planted
    link cannot redirect it), synced, then renamed over it; on any failure the temporary
    file is removed and ``target`` is as it was.

    Refused, before anything is written: an existing ``target`` that is not a regular file
    (:func:`refuse_other_kind`, render's rule for its folder) or that is one of ``inputs``
    (the files the content was made from, compared by device and inode, links and hard
    links resolved).
    """
    if os.path.lexists(target):
        refuse_other_kind(target, folder=False)
        _refuse_input(target, inputs)
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"{target}: folder {str(folder)!r} does not exist")
    try:
        fd, staged = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise UsageError(f"{target}: cannot write: {_reason(err)}; nothing was written") from None
    try:
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(staged, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise UsageError(f"{target}: cannot write: {_reason(err)}; it is unchanged") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise
    with contextlib.suppress(OSError):  # the rename is done; a folder that cannot sync keeps it
        _fsync_dir(folder)


def _refuse_input(target: Path, inputs: Iterable[str | Path]) -> None:
    """Refuse ``target`` when it is one of ``inputs`` (the same device and inode)."""
    written = os.stat(target)
    for path in inputs:
        try:
            read = os.stat(path)
        except OSError:
            continue  # gone since it was read: not the target
        if (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino):
            raise UsageError(
                f"{target}: is {path}, which this command reads; choose another output file"
            )


def check_output_folder(target: Path) -> None:
    """Refuse ``target`` as render refuses it: not a folder, not estategen's (files and no
    MANIFEST.json, or a MANIFEST.json estategen did not write), or holding what a render
    cannot carry over. The one answer ``render``, ``render --check`` and ``plan`` give about
    a folder; each message names the folder by its absolute path, as render's always did.
    """
    _check_target(target.absolute())


def _interrupted(target: Path) -> set[str] | None:
    """Paths of a render into a mount point that was killed while it swapped entries in.

    That render removed MANIFEST.json first and kept the old and the new one in its staging
    folder: every path either lists is estategen's. None when there is no such render.
    """
    listed: set[str] = set()
    found = False
    for stage in _abandoned_inner_stages(target):
        with OutputFolder(stage) as folder:
            for name in (_PREVIOUS, _NEXT):
                manifest = folder.manifest(name)
                if manifest is not None:
                    listed |= set(manifest.files)
                    found = found or name == _NEXT
    return listed | {MANIFEST} if found else None


def _clashes(files: Files, user: _Tree) -> list[str]:
    """User paths where the new output puts a file or a folder (or a file under a user file)."""
    folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}

    def ancestors(path: str) -> set[str]:
        parts = path.split("/")
        return {"/".join(parts[:i]) for i in range(1, len(parts))}

    out = [p for p in user.entries if p in files or p in folders or ancestors(p) & set(files)]
    out += [p for p in user.empty_folders if p in files or ancestors(p) & set(files)]
    return sorted(out)


# Stack settings files, pulumi/<project>/Pulumi.<stack>.yaml, which earlier versions rendered.
STACK_SETTINGS = re.compile(r"pulumi/[^/]+/Pulumi\.[^/]+\.yaml")


def _handed_over(target: Path, previous: _Previous, dropped: set[str]) -> set[str]:
    """Files estategen wrote before and no longer renders that now belong to Pulumi and the user.

    A stack settings file edited since it was rendered (Pulumi writes `encryptionsalt` or
    `secretsprovider` there, users add keys) is carried over like a user's file, never deleted.
    Compared with the manifest the target check read; read through :class:`OutputFolder`: a
    link or a FIFO there is not handed over, never read.
    """
    candidates = sorted(path for path in dropped if STACK_SETTINGS.fullmatch(path))
    if not candidates or not previous.listed:
        return set()
    kept = set()
    with OutputFolder(target) as folder:
        for path in candidates:
            try:
                read = folder.read(path)
            except OutputRefused:
                continue
            if read is None:
                continue
            digest = hashlib.sha256(read.content).hexdigest()
            if digest != previous.listed.get(path, {}).get("sha256"):
                kept.add(path)
    return kept


def write_tree(files: Files, target: Path) -> bool:
    """Write ``files`` (MANIFEST.json included) as the complete content of ``target``.

    False when ``target`` already holds exactly these files (bytes and modes) and nothing else
    estategen wrote: then nothing is written, as a render changes nothing there.
    """
    target = target.absolute()
    # the same refusals whether or not anything changed (a foreign folder, a socket)
    previous = _check_target(target)
    previous.user.files |= _handed_over(target, previous, previous.owned - set(files))
    clashes = _clashes(files, previous.user)
    if clashes:
        raise UsageError(
            f"{target}: {', '.join(clashes)} not written by estategen but would now be "
            "rendered; move them away first"
        )
    if (
        MANIFEST in files
        and previous.manifest == files[MANIFEST].content
        and _unchanged(files, target)
    ):
        _remove_abandoned_stages(target)
        return False
    if target.is_dir() and _is_mount_point(target):
        _write_in_place(files, target, previous)
    else:
        try:
            _write_beside(files, target, previous)
        except _Busy:  # a mount point the checks above did not recognise
            _write_in_place(files, target, previous)
    _remove_abandoned_stages(target)
    return True


def _unchanged(files: Files, target: Path) -> bool:
    """Whether ``target`` holds ``files`` byte for byte, with their modes, and no other file
    its MANIFEST.json lists (so nothing stale to delete); stops at the first difference.

    The same reads as ``render --check`` (through :class:`OutputFolder`, never following a
    link); anything it refuses to read is left to the writer, which replaces or refuses it.
    """
    if not target.is_dir() or target.is_symlink():
        return False
    try:
        with OutputFolder(target) as folder:
            # the manifest lists every file with its digest and mode: equal bytes mean the
            # same set of files, so none to delete and none missing from the listing
            for path in (MANIFEST, *(p for p in files if p != MANIFEST)):
                read = folder.read(path)
                output = files[path]
                if read is None or read.content != output.content or read.mode != output.mode:
                    return False
    except (OutputRefused, OSError):
        return False
    return True


class _Busy(Exception):
    """The target cannot be renamed: it is a mount point."""


def _write_beside(files: Files, target: Path, previous: _Previous) -> None:
    """Stage the output beside ``target`` and exchange the two folders in one rename."""
    try:
        _make_folders(target.parent, set())
        stage = Path(tempfile.mkdtemp(prefix=_stage_prefix(target, os.getpid()), dir=target.parent))
    except OSError as err:
        raise UsageError(f"{target}: cannot create the output folder: {_reason(err)}") from None
    try:
        _stage(stage, files, target, previous)
        os.chmod(stage, 0o755)
        try:
            _swap(stage, target)
        except OSError as err:
            if err.errno == errno.EBUSY:
                raise _Busy from None
            raise UsageError(f"{target}: cannot swap in the new output: {_reason(err)}") from None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _stage(stage: Path, files: Files, target: Path, previous: _Previous) -> None:
    """Write the new output and carry over the user's files, links, FIFOs and empty folders."""
    try:
        stage.mkdir(exist_ok=True)
        folders: set[Path] = {stage}
        for path, output in files.items():
            _write_file(stage / path, output, folders)
        _carry_over(previous.user, target, stage, folders)
        _flush(stage, files)
    except OSError as err:
        # a full disk, a quota, a read-only file system: the earlier output is untouched
        raise UsageError(
            f"{target}: cannot write the output: {_reason(err)}; the folder is unchanged"
        ) from None


def _carry_over(user: _Tree, target: Path, stage: Path, folders: set[Path]) -> None:
    """Copy what a user added, never following a link and never reading a FIFO or a file with
    more than one name; each folder with the mode it had (``folders``: those made already)."""

    def parent(path: str) -> Path:
        destination = stage / path
        _make_folders(destination.parent, folders, stage, target)
        return destination

    if user.files:
        with OutputFolder(target) as folder:
            for path in sorted(user.files):
                _copy_file(folder, path, parent)
    for path in sorted(user.links):
        os.symlink(os.readlink(target / path), parent(path))
    for path in sorted(user.hard_links):
        os.link(target / path, parent(path), follow_symlinks=False)
    for path in sorted(user.fifos):
        mode = os.stat(target / path, follow_symlinks=False).st_mode & 0o7777
        os.mkfifo(parent(path), mode)
        os.chmod(stage / path, mode)  # mkfifo's mode is masked by the umask
    for path in sorted(user.empty_folders):
        _make_folders(stage / path, folders, stage, target)


def _copy_file(folder: OutputFolder, path: str, destination: Callable[[str], Path]) -> None:
    """Copy a user's regular file out of ``folder`` with its mode and times, to where
    ``destination`` (which makes its folder) says."""
    fd = folder.open_any(path)
    if fd is None:
        return  # removed since the scan
    with os.fdopen(fd, "rb") as source:
        info = os.fstat(source.fileno())
        copied = destination(path)
        with open(copied, "xb") as copy:
            shutil.copyfileobj(source, copy, 1024 * 1024)
    os.chmod(copied, info.st_mode & 0o7777)
    os.utime(copied, ns=(info.st_atime_ns, info.st_mtime_ns))


# --- a target that is a mount point -----------------------------------------------------------
#
# A mount point (a container volume) cannot be renamed, so it cannot be swapped. The output is
# staged inside it instead, and its top-level entries are swapped one by one: MANIFEST.json is
# removed first and put in place last, so a folder without one is a render in progress (or one
# that was killed, which the next render finishes from the records in its staging folder).

_INNER_STAGE = re.compile(r"\.estategen-(?P<pid>[0-9]+)-[^/]+")
_PREVIOUS = "MANIFEST.previous"
_NEXT = "MANIFEST.next"


def _is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point, a bind mount of a folder on its own file system too."""
    if os.path.ismount(path):
        return True
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            points = {_unescape_mount(line.split(" ")[4]) for line in mounts if line.strip()}
    except OSError:
        return False
    return real in points


def _unescape_mount(field_text: str) -> str:
    """A mountinfo path: spaces, tabs, newlines and backslashes are written as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field_text)


def _write_in_place(files: Files, target: Path, previous: _Previous) -> None:
    """Replace the contents of ``target`` entry by entry, for a target that cannot be renamed."""
    try:
        lock = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        stage = Path(tempfile.mkdtemp(prefix=f".estategen-{os.getpid()}-", dir=target))
    except OSError as err:
        raise UsageError(f"{target}: cannot write the output: {_reason(err)}") from None
    keep = False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # renders into one mount point take turns
        staged = stage / "tree"
        _stage(staged, files, target, previous)
        try:
            if previous.manifest is not None:
                (stage / _PREVIOUS).write_bytes(previous.manifest)
            (stage / _NEXT).write_bytes(files[MANIFEST].content)
            _fsync_dir(stage)
        except OSError as err:
            raise UsageError(
                f"{target}: cannot write the output: {_reason(err)}; the folder is unchanged"
            ) from None
        try:
            _swap_entries(staged, target, stage.name)
        except OSError as err:
            keep = True  # its records let the next render finish the swap
            raise UsageError(
                f"{target}: swapping in the new output failed: {_reason(err)}; the folder has "
                f"no {MANIFEST} now: render again to finish"
            ) from None
    finally:
        if not keep:
            shutil.rmtree(stage, ignore_errors=True)
        os.close(lock)


def _swap_entries(staged: Path, target: Path, stage_name: str) -> None:
    """Move each top-level entry of ``staged`` into ``target``; MANIFEST.json goes last."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(target / MANIFEST)
    _fsync_dir(target)
    new = set(os.listdir(staged))
    for name in sorted(new - {MANIFEST}):
        if os.path.lexists(target / name):
            if not _exchange(staged / name, target / name):
                trash = staged.with_name("old")
                trash.mkdir(exist_ok=True)
                os.rename(target / name, trash / name)
                os.rename(staged / name, target / name)
        else:
            os.rename(staged / name, target / name)
    for name in set(os.listdir(target)) - new:
        if name == stage_name or _INNER_STAGE.fullmatch(name):
            continue
        old = target / name
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
    _fsync_dir(target)
    os.rename(staged / MANIFEST, target / MANIFEST)
    _fsync_dir(target)


def _abandoned_inner_stages(target: Path) -> list[Path]:
    """Staging folders inside ``target`` of renders into a mount point that were killed."""
    try:
        names = os.listdir(target)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        match = _INNER_STAGE.fullmatch(name)
        if match is None or not stat.S_ISDIR(os.lstat(target / name).st_mode):
            continue  # a link named like a staging folder is not one
        if not _alive(int(match["pid"])):
            out.append(target / name)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # alive under another user, or not a pid at all: leave it
    return True


def _stage_prefix(target: Path, pid: int) -> str:
    return f".{target.name}.estategen-{pid}-"


_STAGE = re.compile(r"\.(?P<name>.+)\.estategen-(?P<pid>[0-9]+)-[^/]+(\.old)?")


def _remove_abandoned_stages(target: Path) -> None:
    """Staging folders of renders that were killed before they could clean up.

    Each carries its writer's pid; one whose process is gone is removed. A live process
    (another render of the same folder, or an unrelated process that reuses the pid) keeps it.
    """
    for inner in _abandoned_inner_stages(target):
        shutil.rmtree(inner, ignore_errors=True)
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return
    for sibling in siblings:
        match = _STAGE.fullmatch(sibling.name)
        if not match or match["name"] != target.name or not sibling.is_dir():
            continue
        if not _alive(int(match["pid"])):
            shutil.rmtree(sibling, ignore_errors=True)


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _write_file(path: Path, output: OutputFile, folders: set[Path]) -> None:
    if path.parent not in folders:
        _make_folders(path.parent, folders)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, output.mode)
    try:
        os.fchmod(fd, output.mode)
        view = memoryview(output.content)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _make_folders(
    folder: Path, known: set[Path], stage: Path | None = None, like: Path | None = None
) -> None:
    """Make ``folder`` and each missing folder above it with mode 0755, whatever the umask
    (a folder of ours writable by others would let them replace the programs in it); with
    ``like``, a folder of a user's is made with the mode its twin under ``like`` (the earlier
    output, ``stage``'s counterpart) has. ``known`` holds the folders made or found so far."""
    missing = []
    while folder not in known and not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    known.add(folder)
    for made in reversed(missing):
        mode = 0o755
        if like is not None and stage is not None:
            with contextlib.suppress(OSError, ValueError):
                twin = os.stat(like / made.relative_to(stage), follow_symlinks=False)
                if stat.S_ISDIR(twin.st_mode):
                    mode = twin.st_mode & 0o7777
        with contextlib.suppress(FileExistsError):
            os.mkdir(made, mode)
        os.chmod(made, mode)  # mkdir's mode is masked by the umask
        known.add(made)


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
    # imported here: `render --check` and a render that changes nothing never call libc
    import ctypes.util

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
        import ctypes

        code = ctypes.get_errno()
        if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # cannot exchange here
            return False
        raise OSError(code, os.strerror(code), str(b))
    return True


@dataclass(frozen=True, slots=True)
class Drift:
    """What --check found: a unified diff of changed files and the paths added or removed."""

    diff: str
    changed: list[str]

    @property
    def clean(self) -> bool:
        return not self.changed


def compare_tree(files: Files, target: Path) -> Drift:
    """Compare what would be written with what is in ``target``; writes nothing.

    Only the files MANIFEST.json lists are read, through :class:`OutputFolder`: a link, a FIFO
    or a path outside the folder is refused, never followed. A folder render would refuse is
    refused here too (:func:`check_output_folder`), rather than shown as all new.
    """
    check_output_folder(target)
    if not target.is_dir():
        return _compare(files, {}, target)
    with OutputFolder(target) as folder:
        manifest = folder.manifest()
        listed = set(manifest.files) | {MANIFEST} if manifest else set()
        old = {path: read for path in sorted(listed) if (read := folder.read(path)) is not None}
    return _compare(files, old, target)


def _compare(files: Files, old: Mapping[str, ReadBack], target: Path) -> Drift:
    chunks: list[str] = []
    changed: list[str] = []
    for path in sorted(set(files) | set(old)):
        new = files[path].content if path in files else b""
        before = old[path].content if path in old else b""
        mode_differs = path in files and path in old and old[path].mode != files[path].mode
        if before == new and not mode_differs and (path in files) == (path in old):
            continue
        changed.append(path)
        if mode_differs and before == new:
            chunks.append(f"mode {path}: {old[path].mode:04o} -> {files[path].mode:04o}\n")
            continue
        chunks.extend(_diff(path, before, new, path in old, path in files))
    return Drift("".join(chunks), changed)


MAX_DIFF_LINES = 200_000  # lines of one file's old and new content that --check diffs


def _diff(path: str, old: bytes, new: bytes, had: bool, has: bool) -> list[str]:
    old_count, new_count = old.count(b"\n"), new.count(b"\n")
    if old_count + new_count > MAX_DIFF_LINES:
        # difflib's time and memory grow with the lines; estategen never writes this many
        return [
            f"Files a/{path} and b/{path} differ ({old_count} and {new_count} lines, above "
            f"the {MAX_DIFF_LINES} lines --check shows as a diff)\n"
        ]
    try:
        old_lines = old.decode("utf-8").splitlines(keepends=True)
        new_lines = new.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return [f"Binary files a/{path} and b/{path} differ\n"]
    import difflib  # only when something changed

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
