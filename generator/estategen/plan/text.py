"""``estategen plan``'s text, its default ``--format`` (``--format json`` is built on
:meth:`~estategen.plan.steps.Plan.to_json`)."""

from __future__ import annotations

from estategen.plan.steps import Plan


def text(result: Plan) -> str:
    """The plan for people: per file, each change and what it means; then the steps."""
    if not result.changed:
        return f"{result.target}: no changes; nothing to do\n"
    changes = sum(len(f.changes) for f in result.files)
    lines = [
        f"Plan for {result.target} (estate {result.estate}): {changes} change(s) in "
        f"{len(result.files)} file(s)",
        "",
    ]
    for f in result.files:
        note = (
            " (edited since it was rendered: MANIFEST.json has another digest)" if f.edited else ""
        )
        lines.append(f"{_STATUS[f.status]} {f.path}{note}")
        for change in f.changes:
            lines.append(f"    {change.kind}: {change.subject}")
            if change.before and change.after:
                lines.append(f"      {change.before}  ->  {change.after}")
            elif change.after:
                lines.append(f"      + {change.after}")
            elif change.before:
                lines.append(f"      - {change.before}")
            lines.append(f"      {change.meaning}")
        lines.append("")
    lines.append("Steps, in order:")
    for number, step in enumerate(result.steps(), 1):
        lines.append(f"  {number}. {step.title}")
        lines.extend(f"       {command}" for command in step.commands)
    return "\n".join(lines) + "\n"


_STATUS = {"added": "+", "removed": "-", "modified": "~", "mode": "~"}
