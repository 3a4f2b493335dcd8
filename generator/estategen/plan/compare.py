""":func:`plan`: a render compared with the output in its folder, file by file.

Which files the render changes comes from MANIFEST.json's digests; what changed from the
models (:mod:`~estategen.plan.keys`, :mod:`~estategen.plan.kubernetes`,
:mod:`~estategen.plan.observability`); a file no model decides is explained by its path
(:mod:`~estategen.plan.files`). The folder's own bytes only show hand edits since the last
render.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from estategen.estatediff import recorded
from estategen.model import Estate
from estategen.output import MANIFEST, Files
from estategen.plan.files import ansible_for, explain
from estategen.plan.folder import previous_output, recorded_model
from estategen.plan.keys import model_changes
from estategen.plan.kubernetes import kubernetes_changes
from estategen.plan.observability import observability_changes
from estategen.plan.steps import Action, Change, FileChange, Plan


def plan(estate: Estate, files: Files, target: Path) -> Plan:
    """Compare a render (``files``, without MANIFEST.json) with the output in ``target``.

    What changed is read from the models (the estate.json the last render recorded, and the
    new one, and what each builds); which files the render changes from MANIFEST.json's
    digests; the folder's own bytes only show hand edits since the last render.
    """
    new = {p: f for p, f in files.items() if p != MANIFEST}
    old_files, entries = previous_output(target, {p: f.content for p, f in new.items()})
    result = Plan(str(target), estate.name, initial=not entries)
    projects = {
        _project(p): "added" if p not in entries else "removed"
        for p in set(new) ^ set(entries)
        if p.startswith("pulumi/") and p.endswith("/cluster.json")
    }
    changed: list[tuple[str, str, bool, bool]] = []  # (path, status, edited, rendered)
    for path in sorted(set(new) | set(entries)):
        old = old_files.get(path)
        entry = entries.get(path, {})
        digest = None if old is None else hashlib.sha256(old).hexdigest()
        edited = path in entries and (digest is None or entry.get("sha256") != digest)
        rendered = path in new and entry.get("sha256") == (
            digest  # the folder holds what this render writes: one digest for both
            if new[path].content == old
            else hashlib.sha256(new[path].content).hexdigest()
        )
        if path not in new:
            status = "removed"
        elif path not in entries:
            status = "added"
        elif not rendered or edited:
            status = "modified"
        elif entry.get("mode") != f"{new[path].mode:04o}":
            status = "mode"
        else:
            continue
        changed.append((path, status, edited, rendered))
    model: list[Change] | str = []
    derived: dict[str, list[Change]] | str = {}  # the clusters' objects, from both models
    same = True  # the models are equal: a file that changes is rendered differently
    if entries:
        before = recorded(old_files.get("estate.json") if "estate.json" in entries else None)
        after = recorded(new["estate.json"].content) if "estate.json" in new else "no estate.json"
        if isinstance(before, str) or isinstance(after, str):
            model = before if isinstance(before, str) else str(after)
        else:
            earlier = recorded_model(before, target)
            model = model_changes(before, after, estate)
            same = before == after
            derived = _derived(
                earlier,
                estate,
                {
                    path
                    for path, _, edited, rendered in changed
                    if _project(path) not in projects
                    and not (rendered and edited)
                    and _DERIVED.fullmatch(path)
                },
            )
    by_file: dict[str, list[Change]] = {}
    for change in model if isinstance(model, list) else []:
        by_file.setdefault(change.file, []).append(change)
    for path, status, edited, rendered in changed:
        if result.initial:
            changes: tuple[Change, ...] = (_first(path),)
        elif _project(path) in projects:
            changes = (_project_file(path, projects[_project(path)]),)
        elif rendered and edited:
            changes = (_edited(path),)
        elif _DERIVED.fullmatch(path):
            found = derived.pop(path, []) if isinstance(derived, dict) else []
            changes = tuple(found) or (
                tuple(explain(path, status))
                if path.startswith("observability/")
                else (_derived_carried(path, derived, model, same),)
            )
        elif _MODELLED.fullmatch(path):
            changes = tuple(by_file.pop(path, ())) or (_carried(path, model, same),)
        else:
            changes = tuple(explain(path, status))
        result.files.append(FileChange(path, status, edited, changes))
    leftover = [c for changes in by_file.values() for c in changes]
    if leftover:
        # changes of keys whose own file did not change: estate.json records them
        for i, f in enumerate(result.files):
            if f.path == "estate.json":
                result.files[i] = FileChange(f.path, f.status, f.edited, (*f.changes, *leftover))
                break
        else:
            result.files.append(FileChange("estate.json", "modified", False, tuple(leftover)))
    return result


def _derived(earlier: Estate, estate: Estate, paths: set[str]) -> dict[str, list[Change]] | str:
    """What both models build for the derived files the render changes (``paths``), by file;
    or why the earlier model builds nothing. Only the clusters and the monitoring side those
    files belong to are built."""
    if not paths:
        return {}
    # pulumi/<cluster>/cluster.json and kubernetes/<cluster>/... (renderers.kubernetes)
    clusters = {p.split("/")[1] for p in paths if not p.startswith("observability/")}
    try:
        out = kubernetes_changes(earlier, estate, clusters) if clusters else {}
        if any(p.startswith("observability/") for p in paths):
            out.update(observability_changes(earlier, estate))
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as err:
        # typed, yet not a model a render produced (estate.json edited by hand)
        return f"estate.json records a model nothing can be built from ({err!r})"
    return out


# files whose changes are read from the model, never from their text
_MODELLED = re.compile(
    r"slurm/(slurm\.conf|gres\.conf|topology\.conf|cgroup\.conf|slurmdbd\.conf|sacct\.cfg"
    r"|qos\.sacctmgr|reservations\.scontrol)|ansible/(group_vars/.+|vars/.+|inventory\.yml)"
)


# files whose changes are derived from what both models build (a cluster's objects, Helm values
# and Pulumi data; the scrape jobs, rules, targets and dashboard), never from their text
_DERIVED = re.compile(
    r"pulumi/[^/]+/cluster\.json|kubernetes/[^/]+/(helm/[^/]+\.values\.yaml"
    r"|(?!kustomization\.)[^/]+\.yaml)|observability/prometheus/(scrape-configs|prometheus)\.yml"
    r"|observability/prometheus/(rules|targets)/[^/]+|observability/grafana/dashboards/[^/]+\.json"
)


def _derived_carried(
    path: str, derived: dict[str, list[Change]] | str, model: list[Change] | str, same: bool
) -> Change:
    """A cluster's file the render changes whose objects, as both models build them, are the
    same: what the earlier render wrote is not in any model."""
    up = Action("pulumi-up", _project(path))
    reason = derived if isinstance(derived, str) else model if isinstance(model, str) else ""
    if reason:
        return _carried(path, reason, same)
    if same:
        return Change(
            path,
            "rendered-differently",
            path,
            "the blueprint did not change, the render did (another estategen release): review "
            "the diff; pulumi up applies it",
            actions=(up, Action("review", path)),
        )
    return Change(path, "kubernetes-manifest", path, "manifest layout only", actions=(up,))


def _edited(path: str) -> Change:
    return Change(
        path,
        "edited-by-hand",
        path,
        "edited since it was rendered (MANIFEST.json has another digest), and the blueprint "
        "does not change it: rendering puts estategen's version back; carry the edit into the "
        "blueprint or keep it out of the render",
        actions=(Action("review", path),),
    )


def _carried(path: str, model: list[Change] | str, same: bool) -> Change:
    """A modelled file the render changes without a change of its own to list."""
    if isinstance(model, str):
        return Change(
            path,
            "cannot-compare",
            path,
            f"cannot compare models ({model}): re-render and review everything",
            actions=(Action("review", path),),
        )
    if same:
        return Change(
            path,
            "rendered-differently",
            path,
            "the blueprint did not change, the render did (another estategen release): review "
            "the diff; the roles that install it deliver it",
            actions=(*ansible_for(path), Action("review", path)),
        )
    return Change(
        path,
        "carries-changes",
        path,
        "carries blueprint changes this plan lists under their own files; no step of its own",
    )


def _project(path: str) -> str:
    """The Pulumi project (cluster) a path belongs to, or ''."""
    parts = path.split("/")
    if parts[0] == "pulumi" and len(parts) == 3:
        return parts[1]
    return parts[1] if parts[0] == "kubernetes" and len(parts) >= 3 else ""


def _project_file(path: str, status: str) -> Change:
    if path.endswith("/cluster.json"):
        return Change(
            path,
            f"kubernetes-cluster-{status}",
            _project(path),
            "a new Pulumi project: create its stack and apply it"
            if status == "added"
            else "the cluster left the blueprint: destroy its stack from the current output "
            "before rendering, or its resources stay unmanaged",
            actions=(
                Action("pulumi-new" if status == "added" else "pulumi-destroy", _project(path)),
            ),
        )
    if status == "added":
        return Change(
            path,
            "kubernetes-cluster-added",
            _project(path),
            "part of a new Pulumi project",
            actions=(Action("pulumi-new", _project(path)),),
        )
    return Change(
        path,
        "kubernetes-cluster-removed",
        _project(path),
        "part of a Pulumi project the blueprint dropped",
        actions=(Action("pulumi-destroy", _project(path)),),
    )


def _first(path: str) -> Change:
    """A file of a folder with no earlier output: everything is deployed for the first time."""
    if path.startswith("ansible/"):
        action = Action("ansible-build", "all:")
    elif _project(path):
        action = Action("pulumi-new", _project(path))
    elif path.startswith("slurm/sacct") or path.startswith("slurm/qos"):
        action = Action("sacctmgr-load")
    else:
        action = Action(
            "review", "first deployment: see docs/outputs/slurm.md (Accounting, in this order)"
        )
    return Change(
        path, "new-output", path, "no earlier output to compare with: new", actions=(action,)
    )
