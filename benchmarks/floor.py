"""The floor a whole `estategen` process is measured against (benchmarks/processes.py).

    floor.py print BLUEPRINT FILE            load the blueprint, print FILE's bytes
    floor.py write BLUEPRINT REFERENCE DIR   load, write REFERENCE's files into DIR
    floor.py compare BLUEPRINT REFERENCE DIR load, read the files REFERENCE has from DIR
    floor.py compare-print BLUEPRINT REFERENCE DIR FILE   compare, then print FILE

Loading is libyaml's CSafeLoader; nothing is validated or rendered. `write` reads the bytes
from REFERENCE (a render of the same blueprint) first: estategen holds them in memory. `compare`
reads what a comparison has to read and leaves out the comparison itself (a memcmp).
"""

from __future__ import annotations

import os
import sys

import yaml


def files(folder: str) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, name), folder) for name in names]
    return sorted(out)


def main() -> None:
    mode, blueprint, *rest = sys.argv[1:]
    with open(blueprint, "rb") as stream:
        yaml.load(stream.read(), Loader=yaml.CSafeLoader)
    if mode == "print":
        with open(rest[0], "rb") as stream:
            sys.stdout.buffer.write(stream.read())
    elif mode == "write":
        reference, target = rest
        for path in files(reference):
            with open(os.path.join(reference, path), "rb") as stream:
                data = stream.read()
            os.makedirs(os.path.dirname(os.path.join(target, path)), exist_ok=True)
            with open(os.path.join(target, path), "wb") as stream:
                stream.write(data)
    elif mode in ("compare", "compare-print"):
        reference, target = rest[:2]
        for path in files(reference):
            with open(os.path.join(target, path), "rb") as stream:
                stream.read()
        if mode == "compare-print":
            with open(rest[2], "rb") as stream:
                sys.stdout.buffer.write(stream.read())
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
