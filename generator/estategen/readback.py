"""Reading an output folder back: everything in it is input, bounded and checked like a blueprint.

``render --check``, ``plan`` and ``render`` (for MANIFEST.json and the files a user added) read
what an earlier render left in DIR. A committed output folder comes from a pull request as much
as the blueprint does, so every read here:

- resolves each path one component at a time under DIR with ``O_NOFOLLOW``: a symbolic link
  anywhere on the way, or a path that MANIFEST.json names outside DIR, is refused, never
  followed;
- opens only regular files (``O_NONBLOCK``, so a FIFO cannot hang it; ``fstat``-checked);
- reads at most :data:`MAX_FILE_BYTES` per file and :data:`MAX_TOTAL_BYTES` per command;
- parses JSON and YAML within the blueprint's nesting and alias-expansion limits, and counts
  hostlist names before expanding them.

What estategen did not write is refused with :class:`OutputRefused` (exit 2, one line).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from estategen import hostlist
from estategen.errors import UsageError
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.load import (
    MAX_DEPTH,
    MAX_NODES,
    _expanded_size,
    libyaml_too_deep,
    read_at_most,
)
from estategen.load import MAX_FILE_BYTES as BLUEPRINT_BYTES
from estategen.output import MANIFEST, SAFE_PATH

# One file read back: the blueprint's own size limit (estategen's largest output file for the
# 100,000-GPU benchmark estate is 0.6 MiB).
MAX_FILE_BYTES = BLUEPRINT_BYTES
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # all files one command reads back from DIR
MAX_PATH_CHARS = 1024  # a path MANIFEST.json lists; components stay within NAME_MAX (255)
MAX_NAMES = 4 * MAX_ESTATE_HOSTS  # hostlist names one file read back expands to (hosts x lines)
MAX_LINES = 100_000  # lines of a Slurm or Ansible file that plan parses line by line
MAX_YAML_VALUES = 250_000  # YAML values of one file read back, before alias expansion

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MODE = re.compile(r"0[0-7]{3}")


class OutputRefused(UsageError):
    """The output folder holds something estategen did not write and will not read."""


def safe_path(path: str) -> bool:
    """Whether ``path`` is one estategen could have written: relative, plain, short."""
    return (
        len(path) <= MAX_PATH_CHARS
        and SAFE_PATH.fullmatch(path) is not None
        and all(part != ".." and len(part) <= 255 for part in path.split("/"))
    )


@dataclass(frozen=True, slots=True)
class ReadBack:
    """A regular file read from the output folder: its bytes and permission bits."""

    content: bytes
    mode: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """MANIFEST.json as read back: path -> {"sha256": ..., "mode": ...}, every path checked."""

    files: dict[str, dict[str, str]]


_LINK = "a symbolic link; estategen never follows links in an output folder"
# a file estategen writes has one name; another may be anywhere on the file system
_HARD_LINK = (
    "a hard link (one file with {names} names, the others maybe outside the folder); "
    "estategen never writes one and never reads through one"
)
_FOLDERS_KEPT = 64  # folder descriptors an OutputFolder keeps open
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class OutputFolder:
    """An output folder opened for reading; paths resolve under it and never through a link.

    DIR itself is the user's choice on the command line and is opened as named.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.total = 0
        # folders under DIR opened so far (relative path -> descriptor): the files of one
        # folder are read one after the other, each through the same descriptors
        self._folders: dict[str, int] = {}
        try:
            self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except NotADirectoryError:
            raise UsageError(f"{root}: exists and is not a folder") from None
        except OSError as err:
            raise UsageError(f"{root}: cannot open: {err.strerror or err}") from None

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._close_folders()
        os.close(self.fd)

    def _close_folders(self) -> None:
        for fd in self._folders.values():
            os.close(fd)
        self._folders.clear()

    def refuse(self, path: str, why: str) -> OutputRefused:
        return OutputRefused(f"{self.root / path}: {why}")

    def open_file(self, path: str) -> int | None:
        """A read-only descriptor of the regular file at ``path``; None when it is absent."""
        if not safe_path(path):
            raise self.refuse(path, "not a path estategen writes; refusing to read it")
        return self.open_any(path)

    def open_any(self, path: str) -> int | None:
        """:meth:`open_file` for any name found in the folder (a user's file), not only ours."""
        opened = self._open(path)
        return None if opened is None else opened[0]

    def _open(self, path: str) -> tuple[int, os.stat_result] | None:
        """A descriptor of the regular file at ``path`` and its ``fstat``; None when absent."""
        *folders, name = path.split("/")
        parent = self._folder(folders)
        if parent is None:
            return None
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            raise self.refuse(path, _LINK)
        if not stat.S_ISREG(info.st_mode):
            raise self.refuse(path, f"{_kind(info.st_mode)}, not a file estategen wrote")
        if info.st_nlink > 1:
            raise self.refuse(path, _HARD_LINK.format(names=info.st_nlink))
        try:
            fd = os.open(name, _OPEN_FILE, dir_fd=parent)
        except OSError as err:
            raise self._not_followed(path, parent, name, err) from None
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or opened.st_ino != info.st_ino:
            os.close(fd)
            raise self.refuse(path, "changed while estategen read it")
        return fd, opened

    def _folder(self, folders: list[str]) -> int | None:
        """A descriptor of the folder ``folders`` under DIR, each component opened without
        following a link (kept open for the next file there); None when one is absent."""
        if not folders:
            return self.fd
        if len(self._folders) > _FOLDERS_KEPT:
            self._close_folders()  # a listing of very many folders: at most this many open
        parent, start = self.fd, 0
        for end in range(len(folders), 0, -1):  # the deepest one open already
            known = self._folders.get("/".join(folders[:end]))
            if known is not None:
                parent, start = known, end
                break
        for index in range(start, len(folders)):
            folder = folders[index]
            try:
                child = os.open(folder, _OPEN_DIR, dir_fd=parent)
            except FileNotFoundError:
                return None
            except (NotADirectoryError, OSError) as err:
                raise self._not_followed(
                    "/".join(folders[: index + 1]), parent, folder, err
                ) from None
            self._folders["/".join(folders[: index + 1])] = child
            parent = child
        return parent

    def _not_followed(self, path: str, parent: int, name: str, err: OSError) -> OutputRefused:
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            return self.refuse(path, f"cannot read: {err.strerror or err}")
        if stat.S_ISLNK(mode):
            return self.refuse(path, _LINK)
        if not stat.S_ISDIR(mode):
            return self.refuse(path, f"{_kind(mode)} where estategen wrote a folder")
        return self.refuse(path, f"cannot read: {err.strerror or err}")

    def read(self, path: str) -> ReadBack | None:
        """The regular file at ``path``, read with a bound; None when it is absent."""
        if not safe_path(path):
            raise self.refuse(path, "not a path estategen writes; refusing to read it")
        opened = self._open(path)
        if opened is None:
            return None
        fd, info = opened
        try:
            mode = info.st_mode & 0o7777
            content = b""
            if info.st_size <= MAX_FILE_BYTES:
                # one read for a file that is as long as fstat said (asking one byte more
                # tells a file that grew since)
                content = os.read(fd, info.st_size + 1)
            if len(content) != info.st_size:
                content += read_at_most(fd, MAX_FILE_BYTES - len(content))
        except OSError as err:
            raise self.refuse(path, f"cannot read: {err.strerror or err}") from None
        finally:
            os.close(fd)
        if len(content) > MAX_FILE_BYTES:
            raise self.refuse(
                path,
                f"larger than {MAX_FILE_BYTES} bytes, the limit for a file read back from an "
                "output folder; estategen never writes one that large",
            )
        self.total += len(content)
        if self.total > MAX_TOTAL_BYTES:
            raise self.refuse(
                path,
                f"the files read back from the output folder exceed {MAX_TOTAL_BYTES} bytes "
                "together; estategen never writes that much",
            )
        return ReadBack(content, mode)

    def manifest(self, name: str = MANIFEST) -> Manifest | None:
        """MANIFEST.json (or a copy of one), checked entry by entry; None when there is none."""
        read = self.read(name)
        if read is None:
            return None
        data = load_json(read.content, self.root / name)
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            raise self.refuse(name, "has no `files` mapping; not written by estategen")
        for path, entry in files.items():
            if not safe_path(path) or path == MANIFEST:
                raise self.refuse(
                    name,
                    f"lists {_show(path)}, not a path estategen writes (relative, letters, "
                    f"digits, `._-`, at most {MAX_PATH_CHARS} characters); refusing to read it",
                )
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("sha256"), str)
                and _SHA256.fullmatch(entry["sha256"])
                and isinstance(entry.get("mode"), str)
                and _MODE.fullmatch(entry["mode"])
            ):
                raise self.refuse(
                    name,
                    f"entry {_show(path)} is not {{sha256: 64 hex digits, mode: 0NNN}}; "
                    "not written by estategen",
                )
        return Manifest({path: dict(entry) for path, entry in files.items()})


def parse_json(content: bytes) -> Any:
    """JSON bytes as data. What the standard library refuses (bytes that are not UTF-8,
    NaN, nesting it cannot follow) raises ValueError or RecursionError, which callers
    handle."""
    return json.loads(content.decode("utf-8"))


def load_json(content: bytes, where: Path | str, *, strict: bool = True) -> Any:
    """JSON read back, within the blueprint's nesting limit.

    Not JSON at all is refused when ``strict``, and None otherwise (a hand edit that the
    caller shows as a diff).
    """
    try:
        data = parse_json(content)
    except RecursionError:
        raise _too_deep(where) from None
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        if not strict:
            return None
        raise OutputRefused(f"{where}: not the JSON estategen writes ({_show(err)})") from None
    _check_json_shape(data, where)
    return data


def _check_json_shape(data: Any, where: Path | str) -> None:
    """Refuse JSON nested deeper than the blueprint's limit or holding more values."""
    # counted a level at a time in C (list.extend); what is beyond a limit is walked again
    # value by value below, to refuse it with the message of the value reached first
    # (JSON parsers make exact dicts and lists: exact type() tests suffice)
    level, depth, values = [data], 0, 0
    while level and depth <= MAX_DEPTH and values <= MAX_NODES:
        values += len(level)
        below: list[Any] = []
        extend = below.extend
        for value in level:
            kind = type(value)
            if kind is dict:
                extend(value.values())
            elif kind is list:
                extend(value)
        level, depth = below, depth + 1
    if not level and values <= MAX_NODES:
        return
    values = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        values += 1
        if depth > MAX_DEPTH:
            raise _too_deep(where)
        if values > MAX_NODES:
            raise OutputRefused(
                f"{where}: more than {MAX_NODES} JSON values, the blueprint's limit; "
                "estategen never writes that many"
            )
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def check_yaml(text: str, where: Path | str) -> None:
    """Refuse YAML beyond :data:`MAX_YAML_VALUES` values, the blueprint's nesting depth, or its
    alias expansion limit. Events are counted before any node is built (at most 250,000 of
    them, about a second); nodes are built only when there are aliases to expand.

    Syntax errors pass: the caller reads the file as it reads a hand edit.
    """
    import yaml

    loader_class: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    steps = {
        yaml.ScalarEvent: (1, 0),
        yaml.AliasEvent: (1, 0),
        yaml.SequenceStartEvent: (1, 1),
        yaml.MappingStartEvent: (1, 1),
        yaml.SequenceEndEvent: (0, -1),
        yaml.MappingEndEvent: (0, -1),
    }
    loader = loader_class(text)
    depth, values = 0, 0
    try:
        while loader.check_event():
            value, deeper = steps.get(type(loader.get_event()), (0, 0))
            values += value
            depth += deeper
            if depth > MAX_DEPTH:
                raise _too_deep(where)
            if values > MAX_YAML_VALUES:
                raise OutputRefused(
                    f"{where}: more than {MAX_YAML_VALUES} YAML values, the limit for a file "
                    "read back from an output folder; estategen never writes that many"
                )
    except yaml.YAMLError as err:
        if libyaml_too_deep(str(err)):
            raise _too_deep(where) from None
        return
    finally:
        loader.dispose()
    if "*" not in text:
        return  # without aliases nothing expands beyond the values counted above
    loader = loader_class(text)
    size = 0
    try:
        # a manifest holds several documents; their expansions add up
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                size += _expanded_size(node)
                if size > MAX_NODES:
                    raise OutputRefused(
                        f"{where}: expands to more than {MAX_NODES} values through aliases "
                        "(an alias bomb?); estategen never writes that"
                    )
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def check_hostlists(text: str, where: Path | str, limit: int = MAX_NAMES) -> None:
    """Refuse Slurm files whose ``NodeName=`` hostlists expand beyond what a blueprint may hold.

    Each expression within the estate's host limit (one pool may hold them all), the file
    within ``limit``; counted without expanding. Expressions that do not parse pass: the
    caller reads the file as it reads a hand edit.
    """
    total = 0
    for match in re.finditer(r"(?m)^[ \t]*NodeName=(\S+)", text):
        try:
            names = hostlist.count(match[1])
        except ValueError:
            continue
        total += names
        if names > MAX_ESTATE_HOSTS or total > limit:
            line = text.count("\n", 0, match.start()) + 1
            raise OutputRefused(
                f"{where}:{line}: NodeName={_show(match[1])} makes {total} host names in this "
                f"file, above the limit of {MAX_ESTATE_HOSTS} for one expression and "
                f"{limit} for this file; estategen never writes that"
            )


def check_inventory_hosts(data: Any, where: Path | str) -> None:
    """Refuse an Ansible inventory whose host patterns expand beyond :data:`MAX_NAMES`."""
    total = 0
    groups = data.get("all", {}).get("children") if isinstance(data, dict) else None
    if not isinstance(groups, dict):
        return
    for body in groups.values():
        hosts = body.get("hosts") if isinstance(body, dict) else None
        for pattern in hosts if isinstance(hosts, dict) else ():
            try:
                total += hostlist.count(re.sub(r"\[(\w+):(\w+)\]", r"[\1-\2]", str(pattern)))
            except ValueError:
                continue
            if total > MAX_NAMES:
                raise OutputRefused(
                    f"{where}: host patterns make more than {MAX_NAMES} host names; "
                    "estategen never writes that"
                )


def check_content(path: str, content: bytes, where: Path | str) -> None:
    """Refuse a file read back whose structure is beyond every limit a blueprint obeys."""
    if path.endswith(".json"):
        load_json(content, where, strict=False)
        return
    lines = content.count(b"\n")
    if path.startswith(("slurm/", "ansible/")) and lines > MAX_LINES:
        raise OutputRefused(
            f"{where}: {lines} lines, above the limit of {MAX_LINES} for a file plan reads "
            "line by line; estategen never writes that many"
        )
    text = content.decode("utf-8", "replace")
    if path.endswith((".yml", ".yaml")):
        check_yaml(text, where)
        if path == "ansible/inventory.yml":
            import yaml

            try:
                data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except yaml.YAMLError:
                return
            check_inventory_hosts(data, where)
    elif path.startswith(("slurm/", "ansible/files/slurm/")) and path.endswith(".conf"):
        # slurm.conf defines each host once; gres.conf repeats a pool's hosts per GRES line
        check_hostlists(
            text, where, MAX_ESTATE_HOSTS if path.endswith("/slurm.conf") else MAX_NAMES
        )


def _too_deep(where: Path | str) -> OutputRefused:
    return OutputRefused(f"{where}: nested deeper than the limit of {MAX_DEPTH} levels")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _show(value: object) -> str:
    text = str(value)
    return repr(text) if len(text) <= 60 else f"{text[:60]!r}... ({len(text)} characters)"
