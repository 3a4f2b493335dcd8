#!/usr/bin/env python3
"""Record the slurm.conf keys a Slurm release documents, for estategen's key check.

Usage: scripts/slurm-conf-keys.py RELEASE [MANPAGE]
Reads slurm.conf(5) (default: the installed /usr/share/man/man5/slurm.conf.5.gz) and writes
its keys under RELEASE in generator/estategen/data/slurm-conf-keys.json: each name a ``.TP``
entry of the PARAMETERS section gives at the section's own level (values of a key are nested
in ``.RS``/``.RE`` and are not keys). tests/test_slurm_conf_keys.py compares the file with the
installed page.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "generator/estategen/data/slurm-conf-keys.json"
KEY = re.compile(r"\\fB([A-Za-z][A-Za-z0-9]*)\\fR")


def documented_keys(page: str) -> list[str]:
    """The keys of slurm.conf(5)'s PARAMETERS section, in the page's order."""
    keys: list[str] = []
    section, depth, after_tp = "", 0, False
    for line in page.splitlines():
        if line.startswith(".SH"):
            section, depth, after_tp = line, 0, False
        elif section != '.SH "PARAMETERS"':
            continue
        elif line.startswith(".RS"):
            depth, after_tp = depth + 1, False
        elif line.startswith(".RE"):
            depth, after_tp = max(0, depth - 1), False
        elif line.startswith(".TP"):
            after_tp = True
        else:
            match = KEY.fullmatch(line.strip())
            if after_tp and depth == 0 and match:
                keys.append(match.group(1))
            after_tp = False
    return keys


def read_page(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    release = argv[1]
    page = Path(argv[2] if len(argv) == 3 else "/usr/share/man/man5/slurm.conf.5.gz")
    recorded = json.loads(DATA.read_text()) if DATA.exists() else {}
    recorded[release] = sorted(set(documented_keys(read_page(page))), key=str.lower)
    DATA.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
    print(f"{DATA}: {len(recorded[release])} keys of Slurm {release}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
