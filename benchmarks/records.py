"""Why estategen's records are not dataclasses (not a test): prints a Markdown table.

    python benchmarks/records.py [--repeat N]

Every record class of the estategen package (``estategen.record.Record``'s subclasses), declared
afresh with the same field names, defaults and flags, once as ``@dataclass`` and once as a
``Record``, each in a fresh process as a command's start-up does: CPU milliseconds (best of N)
of importing the module that builds them, of defining every class, and of making, comparing and
hashing 200 instances of each.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

DECLARE = {
    "dataclass": (
        "from dataclasses import dataclass, field\n",
        "@dataclass(frozen={frozen}, order={order})\nclass {name}:\n",
    ),
    "Record": (
        "from estategen.record import Record, field\n",
        "class {name}(Record, frozen={frozen}, order={order}):\n",
    ),
}

CHILD = """
import time
start = time.process_time()
{imports}
imported = time.process_time()
exec(compile({classes!r}, "classes", "exec"), space := {{}})
defined = time.process_time()
for kind, arity, frozen in space["KINDS"]:
    made = [kind(*range(arity)) for _ in range(200)]
    assert made[0] == made[1]
    if frozen:
        {{hash(m) for m in made}}
used = time.process_time()
print(imported - start, defined - imported, used - defined)
"""


def record_classes() -> list[tuple[str, list[tuple[str, bool]], bool, bool]]:
    """(name, [(field, has a default)], frozen, ordered) of every estategen record."""
    import importlib
    import pkgutil

    import estategen
    from estategen.record import Record, fields

    for module in pkgutil.walk_packages(estategen.__path__, "estategen."):
        if "templates_compiled" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return [
        (
            f"{kind.__module__.replace('.', '_')}_{kind.__name__}",
            [(f.name, f.has_default) for f in fields(kind)],
            kind.__hash__ is not None,
            "__lt__" in vars(kind),
        )
        for kind in Record.__subclasses__()
    ]


def source(way: str, classes: list[tuple[str, list[tuple[str, bool]], bool, bool]]) -> str:
    imports, header = DECLARE[way]
    lines = ["from __future__ import annotations", imports]
    for name, names, frozen, order in classes:
        lines.append(header.format(name=name, frozen=frozen, order=order))
        for field_name, defaulted in names:
            default = " = field(default=None)" if defaulted else ""
            lines.append(f"    {field_name}: object{default}")
        lines.append("    pass\n")
    kinds = ", ".join(f"({n}, {len(f)}, {frozen})" for n, f, frozen, _ in classes)
    lines.append(f"KINDS = [{kinds}]")
    return "\n".join(lines)


def measure(way: str, classes: list[tuple[str, list[tuple[str, bool]], bool, bool]]) -> list[float]:
    imports, _ = DECLARE[way]
    child = CHILD.format(imports=imports.strip(), classes=source(way, classes))
    out = subprocess.run([sys.executable, "-c", child], check=True, capture_output=True, text=True)
    return [float(x) * 1000 for x in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    classes = record_classes()
    print(f"{len(classes)} record classes, {sum(len(f) for _, f, _, _ in classes)} fields\n")
    print("| built as | import | define every class | 200 instances of each |")
    print("|---|---|---|---|")
    for way in DECLARE:
        runs = [measure(way, classes) for _ in range(args.repeat)]
        best = [min(run[i] for run in runs) for i in range(3)]
        print(f"| {way} | {best[0]:.1f} ms | {best[1]:.1f} ms | {best[2]:.1f} ms |")


if __name__ == "__main__":
    main()
