"""Entry points of the pre-commit hooks (``.pre-commit-hooks.yaml``).

pre-commit passes every staged blueprint at once; ``estategen validate`` and ``render --check``
take one. This runs the command once per file and fails when any run fails, so a commit that
breaks a blueprint or leaves its rendered output stale is stopped.

    python -m estategen.precommit validate FILE...
    python -m estategen.precommit render-check [--output-root DIR] FILE...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from estategen import cli


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m estategen.precommit")
    parser.add_argument("hook", choices=["validate", "render-check"])
    parser.add_argument(
        "--output-root",
        metavar="DIR",
        help="render-check: compare with DIR/<file name without .yaml> instead of build/<estate>",
    )
    parser.add_argument("files", nargs="*", metavar="FILE")
    args = parser.parse_intermixed_args(argv)
    worst = 0
    for path in args.files:
        if args.hook == "validate":
            code = cli.main(["validate", path])
        else:
            command = ["render", path, "--check"]
            if args.output_root:
                stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
                command += ["-o", f"{args.output_root.rstrip('/')}/{stem}"]
            code = cli.main(command)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main())
