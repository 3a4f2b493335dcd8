"""The blueprint text ``estategen import`` writes: the review notes, the document, and the
settings it does not keep as the site wrote them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from estategen.importer.outcomes import Imported, _Run

_SLURM_ORDER = (
    "cluster_name",
    "controllers",
    "controller_addresses",
    "paths",
    "ports",
    "slurmd_user",
    "return_to_service",
    "select",
    "task_plugins",
    "job_acct_gather",
    "prolog_flags",
    "scheduler_parameters",
    "scheduler",
    "enforce_part_limits",
    "proctrack",
    "job_completion",
    "accounting",
    "scheduling",
    "mpi",
    "power_saving",
    "qos",
    "partitions",
    "options",
)


def _ordered_slurm(slurm: Mapping[str, Any]) -> dict[str, Any]:
    ordered = {key: slurm[key] for key in _SLURM_ORDER if key in slurm}
    return {**ordered, **slurm}


def _blueprint_text(doc: Mapping[str, Any], run: _Run, findings: tuple[str, ...] = ()) -> str:
    from estategen.yamltext import manifest

    out = [
        "# Written by `estategen import`. Review the notes below, then validate and render.",
    ]
    if run.reviews:
        out.append("#")
        out.append("# Review:")
        out += [f"#   - {note}" for note in run.reviews]
    out.append("")
    out.append(manifest(dict(doc)).rstrip("\n"))
    if run.comments:
        out.append("")
        out.append(
            "# Settings the blueprint does not keep as the site wrote them "
            "(file:line: key=value  # why):"
        )
        out += [f"#   {_one_line(c)}" for c in run.comments]
    if findings:
        out.append("")
        out.append("# What validate still refuses here, for you to decide (key.path: message):")
        out += [f"#   {_one_line(f)}" for f in findings]
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def write(imported: Imported, output: Path) -> None:
    """Write the blueprint atomically, as :func:`estategen.write.write_file` writes one file:
    never over a file import read (slurm.conf, an Include, --gres, --topology, --sacct), a
    link, a device or a FIFO; a failed write leaves no temporary file and ``output`` as it
    was."""
    from estategen.write import write_file

    write_file(output, imported.text.encode("utf-8"), imported.inputs)
