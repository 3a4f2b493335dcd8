"""What rendering a blueprint would change in an output folder, and what each change means.

:func:`plan` compares models, not texts: the render records the validated model
(``estate.json``); the plan loads the one in the folder, diffs it key by key against the new
one (:mod:`estategen.estatediff`) and derives the steps from each key's change policy (the
schema's ``x-estategen-change``) and the derived facts (which hosts, groups, daemons and
files): ``scontrol reconfigure``, a slurmctld restart, draining nodes, ``sacctmgr``,
``ansible-playbook --tags``. A ``slurm.options`` key follows :mod:`estategen.slurm_keys`.

What the derived facts are on the Kubernetes and monitoring side is built from both models
with the renderers' own functions (:mod:`estategen.recorded` gives back the earlier model as an
:class:`Estate`): each cluster's objects, Helm values and Pulumi project data, compared object
by object (``pulumi up``, a Kueue object replaced, a MIG layout, a new project); the scrape
jobs, rules, targets and dashboard item by item (a Prometheus reload, copies).

No rendered file is ever read to decide a step: MANIFEST.json's digests say which files the
render changes, the folder's bytes only show hand edits since the last render, and a file the
models do not decide (a role, the Pulumi program, a kustomization) is explained by its path.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from estategen import hostlist
from estategen.estatediff import Delta, diff, named, own_policies, recorded
from estategen.facts import POOL_LABEL, kubelet_taint, pool_group, topology_plugin
from estategen.kubernetes.objects import FIELD_MANAGER, Obj
from estategen.model import Estate, KubernetesCluster, Taint
from estategen.output import MANIFEST, Files
from estategen.readback import OutputFolder, OutputRefused, check_content
from estategen.record import Record, field
from estategen.recorded import NotRecorded, estate_from_data
from estategen.renderers.pulumi import project_name
from estategen.slurm_keys import ChangePolicy, change_for, slurm_key
from estategen.write import check_output_folder

UNSET = "(unset)"  # an attribute a line does not carry, in before/after


class Action(Record, order=True):
    """One operational step with its target: hosts, an Ansible limit:tag, a cluster, a line."""

    id: str
    target: str = ""


class Step(Record):
    """Actions of one kind merged over every change, in the order they should run."""

    id: str
    order: int
    title: str
    commands: tuple[str, ...]


class Change(Record):
    file: str
    kind: str
    subject: str
    meaning: str
    before: str = ""
    after: str = ""
    actions: tuple[Action, ...] = ()


class FileChange(Record):
    path: str
    status: str  # added, removed, modified, mode
    edited: bool  # the folder's copy differs from what MANIFEST.json recorded
    changes: tuple[Change, ...]


class Plan(Record, frozen=False):
    target: str
    estate: str
    initial: bool = False  # the folder held no earlier estategen output
    files: list[FileChange] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.files)

    @property
    def kinds(self) -> set[str]:
        return {c.kind for f in self.files for c in f.changes}

    @property
    def actions(self) -> set[Action]:
        return {a for f in self.files for c in f.changes for a in c.actions}

    def steps(self) -> list[Step]:
        return merge_steps(self.actions, self.estate)

    def disruptions(self) -> dict[str, list[Change]]:
        """The changes that bring each kind of disruption (:data:`DISRUPTIONS`), by kind;
        a kind no change brings is left out."""
        out: dict[str, list[Change]] = {}
        for f in self.files:
            for c in f.changes:
                for name in disruptions(c):
                    out.setdefault(name, []).append(c)
        return {name: out[name] for name in DISRUPTIONS if name in out}

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "estate": self.estate,
            "changed": self.changed,
            "initial": self.initial,
            "files": [
                {
                    "path": f.path,
                    "status": f.status,
                    "edited_since_render": f.edited,
                    "changes": [
                        {
                            "kind": c.kind,
                            "subject": c.subject,
                            "before": c.before,
                            "after": c.after,
                            "meaning": c.meaning,
                            "actions": sorted({a.id for a in c.actions}),
                        }
                        for c in f.changes
                    ],
                }
                for f in self.files
            ],
            "steps": [
                {"id": s.id, "order": s.order, "title": s.title, "commands": list(s.commands)}
                for s in self.steps()
            ],
            "disruptions": {
                name: [{"file": c.file, "kind": c.kind, "subject": c.subject} for c in changes]
                for name, changes in self.disruptions().items()
            },
        }


# --- steps ------------------------------------------------------------------------------------

# id -> (order, title); the order is the runbook order of a combined change
STEPS: dict[str, tuple[int, str]] = {
    "pulumi-destroy": (5, "remove Kubernetes projects the blueprint dropped, before rendering"),
    "drain-nodes": (10, "drain nodes and wait for their jobs to end"),
    "ansible-build": (20, "build new hosts with the whole playbook"),
    "ansible-playbook": (25, "install the changed configuration with Ansible"),
    "restart-slurmdbd": (30, "restart slurmdbd"),
    "sacctmgr-load": (35, "load accounts, users and Fairshare into slurmdbd"),
    "sacctmgr-qos": (40, "apply the QoS changes (sacctmgr load does not carry QoS)"),
    "restart-slurmctld": (50, "restart slurmctld"),
    "restart-slurmd": (55, "restart slurmd"),
    "scontrol-reconfigure": (60, "make slurmctld and slurmd re-read their configuration"),
    "sacctmgr-delete": (65, "delete what the blueprint dropped from slurmdbd"),
    "resume-nodes": (70, "return drained nodes to service"),
    # kubelet applies --register-with-taints and --node-labels only when it creates its Node
    "taint-nodes": (72, "set the pools' changed taints on their running nodes"),
    "label-nodes": (73, "set the changed node labels on the running nodes"),
    "pulumi-new": (75, "create the stacks of new Kubernetes clusters"),
    # Kueue deletes a ResourceFlavor only once no ClusterQueue lists it
    "kueue-take-out": (76, "take the Kueue flavors to replace out of the ClusterQueues"),
    "drain-kubernetes-pool": (77, "drain the nodes of the managed pools pulumi up replaces"),
    "pulumi-replace": (78, "replace Kubernetes objects the API server will not update in place"),
    "pulumi-up": (80, "apply the Kubernetes changes"),
    "prometheus-reload": (85, "reload Prometheus"),
    "review": (95, "review only: no operational effect"),
}


# What a pipeline can hold a change for (`plan --fail-on`): each kind of disruption, with the
# steps that bring it and the change kinds that bring it without such a step of their own (a
# MIG layout in Kubernetes: the MIG manager drains each node itself; hosts leaving a Kubernetes
# pool: the plan asks for a kubectl drain to review; a replacement, whichever steps carry it).
DISRUPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "drain": (
        frozenset({"drain-nodes", "drain-kubernetes-pool"}),
        frozenset({"mig-layout", "kubernetes-hosts-removed"}),
    ),
    "restart": (
        frozenset({"restart-slurmctld", "restart-slurmd", "restart-slurmdbd"}),
        frozenset(),
    ),
    "replace": (frozenset(), frozenset({"kubernetes-replace"})),
}


def disruptions(change: Change) -> set[str]:
    """The kinds of disruption (:data:`DISRUPTIONS`) ``change`` brings, by its steps and kind."""
    steps = {a.id for a in change.actions}
    return {
        name
        for name, (by_step, by_kind) in DISRUPTIONS.items()
        if steps & by_step or change.kind in by_kind
    }


def merge_steps(actions: Iterable[Action], estate: str) -> list[Step]:
    """Merge actions by id into ordered steps with concrete commands."""
    grouped: dict[str, set[str]] = {}
    for action in actions:
        grouped.setdefault(action.id, set()).add(action.target)
    # the ClusterQueues a flavor was taken out of get it back from pulumi up, which sees that
    # only once it reads them again: their inputs did not change
    refresh = {t.partition("\t")[0] for t in grouped.get("kueue-take-out", ())}
    if "restart-slurmctld" in grouped and "*" in grouped.get("restart-slurmd", set()):
        # slurmctld and every slurmd read their configuration when they start: the restarts
        # already do what scontrol reconfigure would
        grouped.pop("scontrol-reconfigure", None)
    out = []
    for action_id, targets in grouped.items():
        order, title = STEPS[action_id]
        commands = _commands(action_id, targets, estate, refresh)
        out.append(Step(action_id, order, title, tuple(commands)))
    return sorted(out, key=lambda s: s.order)


def _hosts(targets: Iterable[str]) -> str:
    """One Slurm hostlist of host names or hostlist expressions."""
    names = {name for t in targets if t for name in hostlist.expand(t, limit=10**6)}
    return hostlist.compress(sorted(names))


def _commands(
    action_id: str, targets: set[str], estate: str, refresh: Collection[str] = ()
) -> list[str]:
    if action_id == "drain-nodes":
        return [
            f'scontrol update NodeName={_hosts(targets)} State=DRAIN Reason="estategen plan"',
            "# wait until squeue -w <those nodes> shows no running jobs",
        ]
    if action_id == "resume-nodes":
        return [f"scontrol update NodeName={_hosts(targets)} State=RESUME"]
    if action_id == "restart-slurmd":
        if "*" in targets:
            return [_restart("slurm_compute", "slurmd")]
        return [f"pdsh -w {_hosts(targets)} systemctl restart slurmd"]
    if action_id == "restart-slurmctld":
        return [_restart("slurm_controller", "slurmctld")]
    if action_id == "restart-slurmdbd":
        return [_restart("slurmdbd", "slurmdbd")]
    if action_id == "scontrol-reconfigure":
        return ["scontrol reconfigure"]
    if action_id == "sacctmgr-load":
        return ["sacctmgr -i load file=/etc/slurm/sacct.cfg"]
    if action_id in ("sacctmgr-qos", "sacctmgr-delete"):
        return [f"sacctmgr -i {line}" for line in sorted(targets, key=_qos_line_order)]
    if action_id == "ansible-build":
        command = "(cd ansible && ansible-playbook -i inventory.yml site.yml"
        limits = sorted(t.partition(":")[0] for t in targets)
        if "all" not in limits:
            command += f" --limit {','.join(limits)}"
        return [command + ")"]
    if action_id == "ansible-playbook":
        by_limit: dict[str, set[str]] = {}
        for target in targets:
            limit, _, tag = target.partition(":")
            by_limit.setdefault(limit, set()).add(tag)
        everywhere = by_limit.get("all", set())
        commands = []
        for limit, tags in sorted(by_limit.items()):
            if limit != "all":
                # what the run on every host does is not repeated for some of them
                if "" in everywhere:
                    continue
                if "" not in tags:
                    tags = tags - everywhere
                    if not tags:
                        continue
            command = "(cd ansible && ansible-playbook -i inventory.yml site.yml"
            if limit != "all":
                command += f" --limit {limit}"
            named = sorted(t for t in tags if t)
            if named and "" not in tags:
                command += f" --tags {','.join(named)}"
            commands.append(command + ")")
        return commands
    if action_id == "pulumi-up":
        return [
            f"(cd pulumi/{c} && pulumi up --stack {estate}{' --refresh' * (c in refresh)})"
            for c in sorted(targets)
        ]
    if action_id == "kueue-take-out":
        return _take_out_commands(targets)
    if action_id == "drain-kubernetes-pool":
        return [
            command
            for c, _, pool in sorted(t.partition(" ") for t in targets)
            for command in (
                f"# kubectl on cluster {c}: cordon, then evict the pods of pool {pool}",
                f"kubectl cordon -l {POOL_LABEL}={pool}",
                f"kubectl drain -l {POOL_LABEL}={pool} --ignore-daemonsets --delete-emptydir-data",
            )
        ]
    if action_id in ("taint-nodes", "label-nodes"):
        return _node_commands(action_id.partition("-")[0], targets)
    if action_id == "pulumi-replace":
        return [
            f"(cd pulumi/{c} && pulumi up --stack {estate} --target-replace '{urn}')"
            for c, _, urn in sorted(t.partition(" ") for t in targets)
        ]
    if action_id == "pulumi-new":
        return [
            f"(cd pulumi/{c} && pulumi stack init {estate} && pulumi up --stack {estate})"
            for c in sorted(targets)
        ]
    if action_id == "pulumi-destroy":
        return [
            f"(cd <current output>/pulumi/{c} && pulumi destroy --stack {estate})"
            for c in sorted(targets)
        ]
    if action_id == "prometheus-reload":
        return [
            "copy observability/prometheus/ to the Prometheus server, then: "
            "systemctl reload prometheus"
        ]
    return [f"review {t}" for t in sorted(targets)]


def _take_out_commands(targets: Iterable[str]) -> list[str]:
    """One server-side apply per ClusterQueue, from targets "cluster<TAB>ClusterQueue JSON"."""
    commands: list[str] = []
    for cluster, _, queue in sorted(t.partition("\t") for t in targets):
        comment = f"# kubectl on cluster {cluster}:"
        if comment not in commands:
            commands.append(comment)
        commands.append(
            f"printf '%s\\n' {shlex.quote(queue)} | kubectl apply --server-side "
            f"--field-manager={FIELD_MANAGER} --force-conflicts -f -"
        )
    return commands


def take_out(queue: Mapping[str, Any], flavors: Collection[str]) -> Obj | None:
    """A ClusterQueue as applied, without ``flavors``; None when it lists none of them.

    resourceGroups is an atomic list and a group needs one flavor at least (the pinned
    ClusterQueue CRD): the whole list is applied again, a group left with no flavor dropped.
    """
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    if not any(f.get("name") in flavors for g in groups for f in g.get("flavors") or []):
        return None
    kept = []
    for group in groups:
        left = [f for f in group.get("flavors") or [] if f.get("name") not in flavors]
        if left:
            kept.append({**group, "flavors": left})
    out = _plain(queue)
    out["spec"]["resourceGroups"] = kept
    return dict(out)


def _node_commands(verb: str, targets: Iterable[str]) -> list[str]:
    """``kubectl taint`` or ``kubectl label`` per cluster and set of nodes, from targets
    "cluster<TAB>nodes<TAB>argument" (nodes: ``-l estategen.io/pool=NAME`` or node names)."""
    by_nodes: dict[tuple[str, str], set[str]] = {}
    for target in targets:
        cluster, nodes, argument = target.split("\t")
        by_nodes.setdefault((cluster, nodes), set()).add(argument)
    commands: list[str] = []
    for cluster, nodes in sorted(by_nodes):
        comment = f"# kubectl on cluster {cluster}:"
        if comment not in commands:
            commands.append(comment)
        # what is set before what is removed; one command, so a node never has neither
        arguments = sorted(by_nodes[cluster, nodes], key=lambda a: (a.endswith("-"), a))
        commands.append(f"kubectl {verb} nodes {nodes} {' '.join(arguments)} --overwrite")
    return commands


def _pool_nodes(pool: str) -> str:
    return f"-l {POOL_LABEL}={pool}"


def taint_actions(
    cluster: str, pool: str, was: Iterable[Taint], now: Iterable[Taint]
) -> list[Action]:
    """``kubectl taint`` arguments that turn a pool's running nodes' taints from ``was`` into
    ``now``: each new or changed taint set (``--overwrite`` replaces the value of a key and
    effect the node has), each key and effect no longer tainted removed (``key:Effect-``)."""
    before, after = list(was), list(now)
    kept = {(t.key, t.effect) for t in after}
    arguments = [kubelet_taint(t) for t in after if t not in before] + [
        f"{t.key}:{t.effect}-" for t in before if (t.key, t.effect) not in kept
    ]
    return [Action("taint-nodes", f"{cluster}\t{_pool_nodes(pool)}\t{a}") for a in arguments]


def _taints(pool: Mapping[str, Any]) -> list[Taint]:
    return [Taint(**t) for t in pool.get("taints") or []]


def _restart(group: str, service: str) -> str:
    return (
        f"(cd ansible && ansible {group} -i inventory.yml -b -m ansible.builtin.systemd_service "
        f"-a 'name={service} state=restarted')"
    )


def _qos_line_order(line: str) -> tuple[int, str]:
    """`add` before `modify` before `delete`, so a new QoS exists before it is set or granted."""
    return ({"add": 0, "modify": 1, "delete": 2}.get(line.split(" ", 1)[0], 3), line)


# --- reading the folder -----------------------------------------------------------------------


def previous_output(
    target: Path, rendered: Mapping[str, bytes]
) -> tuple[dict[str, bytes], dict[str, dict[str, str]]]:
    """(files, manifest entries) of earlier estategen output; empty for a new folder.

    Read through :class:`OutputFolder`: bounded, regular files only, never through a link or
    outside the folder, and refused (exit 2) beyond the limits a blueprint obeys. A file whose
    bytes are what this render writes (``rendered``) is within them already: only the others
    have their structure checked (checking all 435 files of the 100k estate took 0.3 s).
    """
    if not os.path.lexists(target):
        return {}, {}
    check_output_folder(target)  # the folders render refuses, with render's words
    with OutputFolder(target) as folder:
        manifest = folder.manifest()
        if manifest is None:
            # an empty folder, or a render into a mount point killed while it swapped its
            # entries in (render finishes it): nothing estategen wrote to compare with
            return {}, {}
        files = {}
        for path in manifest.files:
            read = folder.read(path)
            if read is not None:
                if read.content != rendered.get(path):
                    check_content(path, read.content, target / path)
                files[path] = read.content
    return files, manifest.files


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
            earlier = _earlier(before, target)
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


def _earlier(before: Mapping[str, Any], target: Path) -> Estate:
    """The model the folder's estate.json records, every key and type checked: one that holds
    what no render wrote (a hand edit) cannot be compared, and is refused (exit 2) with the
    key and what is wrong with it."""
    try:
        return estate_from_data(before)
    except NotRecorded as err:
        raise OutputRefused(
            f"{target / 'estate.json'}: cannot compare models: {err}; restore the file the last "
            "render wrote, or render again"
        ) from None


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
            actions=(*_ansible_for(path), Action("review", path)),
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


# --- explaining changes ------------------------------------------------------------------------


def explain(path: str, status: str) -> list[Change]:
    """The change of one file that no model decides (the render's own files: roles, the
    Pulumi program, the Prometheus and Grafana files, the programs Ansible installs); every
    changed file yields at least one. Its text is never read."""
    if status == "mode":
        return [
            Change(
                path,
                "file-mode",
                path,
                "file mode changes; the role installs it",
                actions=_ansible_for(path),
            )
        ]
    for pattern, explainer in _EXPLAINERS:
        match = re.fullmatch(pattern, path)
        if match:
            return explainer(path, status, *match.groups())
    return [
        Change(
            path,
            "other",
            path,
            f"{status}; no rule explains this file, review the diff",
            actions=(Action("review", path),),
        )
    ]


# --- the model: what changed in the blueprint and what each change needs --------------------
#
# Every change of the estate is found by comparing the model the last render recorded
# (estate.json) with the new one, key by key (:mod:`estategen.estatediff`). Each changed key's
# change policy comes from the schema; the hosts, groups, daemons and objects it concerns come
# from the model (a pool's hosts and group, the Slurm files a key reaches). The rendered
# Slurm and Ansible files are never read to decide a step.

# a policy -> the step it needs on the Slurm side (the Kubernetes and Prometheus side is
# explained per object of kubernetes/<cluster>/ and observability/)
_SLURM_KINDS = {
    "restart-slurm-daemons": "slurm-restart-all",
    "restart-slurmctld": "slurm-restart-slurmctld",
    "restart-slurmdbd": "slurmdbd-config",
    "scontrol-reconfigure": "slurm-reconfigure",
}
# the file a section of slurm.* is rendered into
_SLURM_FILES = {
    "slurm.accounting.port": "slurm/slurmdbd.conf",
    "slurm.accounting.database": "slurm/slurmdbd.conf",
    "slurm.reservations": "slurm/reservations.scontrol",
    "slurm.qos": "slurm/qos.sacctmgr",
}
# keys of slurm.* with their own kind (what they are about, said once)
_SLURM_SECTIONS = {
    "slurm.accounting": "slurm-accounting-config",
    "slurm.health_check": "slurm-health-check",
    "slurm.power_saving": "slurm-power-saving",
    "slurm.mpi": "slurm-mpi",
    "slurm.rest_api": "slurm-rest-api",
}
# roles that apply a blueprint key with the `ansible-playbook` policy, by its section (the
# longest prefix wins); tests/test_plan.py holds each tagged step against the roles' sources
_ROLES: dict[str, tuple[str, ...]] = {
    "identity": ("common",),
    "storage": ("storage_client",),
    "observability.labels": ("node_exporter",),
    "observability.node_exporter": ("node_exporter",),
    "observability.dcgm_exporter": ("dcgm_exporter",),
    "observability.slurm_exporter": ("slurm_exporter",),
    "slurm.reservations": ("slurm_controller",),
    "slurm.rest_api": ("slurmrestd", "slurm_controller"),
    "slurm.paths.state_save_location": ("slurm_controller",),
    "slurm.paths.slurmctld_pid_file": ("slurm_controller",),
    "slurm.paths.slurmctld_log_file": ("slurm_controller",),
    "slurm.paths": ("slurm_compute",),
    "slurm.slurmd_user": ("slurm_compute",),
    "slurm.mpi.default": ("slurm_compute",),
    "versions.slurm": ("slurmdbd", "slurm_controller", "slurm_compute"),
    "slurm.packages": ("slurmdbd", "slurm_controller", "slurm_compute"),
    "node_pools[].health_check": ("slurm_compute",),
    "node_pools[].cloud": ("slurm_compute",),
    "node_pools[].taints": ("k8s_gpu_node",),
    "node_pools[].labels": ("k8s_gpu_node",),
    "node_pools[].network": ("k8s_gpu_node",),
    "node_pools[].cluster": ("k8s_gpu_node",),
    "node_pools[].gpus": ("nvidia_gpu",),
}
_MEANINGS = {
    "identity": "users, groups and the directory client change on every host with the "
    "common role; running jobs and pods keep their credentials",
    "storage": "mounts change with the storage_client role; a file system in use cannot be "
    "unmounted, so drain its users first when one goes away",
    "observability": "the exporters restart with the new port or labels; Prometheus needs "
    "the new targets (observability/prometheus/)",
    "slurm-upgrade": "the Slurm roles install the new release and check it before laying "
    "down its files; upgrade in Slurm's order (slurmdbd, then slurmctld, then slurmd) and at "
    "most two releases at a time, with StateSaveLocation and the database backed up first",
    "gpu-config": "the GPU stack of the pool's hosts changes with the nvidia_gpu role",
    "kubernetes-node-labels": "kubelet registers new hosts with the new labels and taints "
    "(role k8s_gpu_node), but applies --node-labels and --register-with-taints only when it "
    "creates its Node: the running nodes get them from the kubectl label and kubectl taint "
    "steps, before the Kueue flavours (whose tolerations follow the taints) change",
    "slurm-accounting-config": "Slurm's accounting settings: slurmdbd.conf and slurm.conf "
    "change, and the daemons that read them restart",
    "slurm-health-check": "takes effect with scontrol reconfigure: slurmd runs the health "
    "check with it from then on; nodes an earlier check drained stay drained until resumed",
    "slurm-power-saving": "takes effect with scontrol reconfigure: slurmctld creates and "
    "deletes cloud nodes with it from then on; instances already running keep running",
    "slurm-mpi": "the compute role installs the PMIx library when the default is pmix; "
    "MpiDefault takes effect with scontrol reconfigure",
    "slurm-rest-api": "slurmrestd's host, port, user or JWT key change with the slurmrestd "
    "and slurm_controller roles; a new JWT key needs every Slurm daemon restarted",
    "slurm-restart-all": "needs slurmctld and every slurmd restarted",
    "slurm-restart-slurmctld": "needs a slurmctld restart",
    "slurm-reconfigure": "takes effect with scontrol reconfigure; running jobs are not affected",
    "slurmdbd-config": "slurmdbd reads its configuration when it starts: restart it (jobs keep "
    "running; slurmctld queues accounting records meanwhile)",
    "slurm-node-hardware": "slurm.conf(5): changing a node's processors, memory or GRES needs "
    "slurmctld and the nodes' slurmd restarted; nodes whose hardware does not match are "
    "drained by slurmctld",
    "slurm-node-scheduling": "features and weights take effect with scontrol reconfigure",
    "slurm-topology": "slurmctld rebuilds the network topology on scontrol reconfigure; "
    "running jobs keep their placement",
    "slurm-topology-plugin": "TopologyPlugin turns on, off or from tree to block: slurmctld "
    "loads the plugin only when it starts; running jobs keep their placement",
    "review": "changes no running daemon: review the plan",
}


def _by_prefix(table: Mapping[str, Any], key: str, default: Any) -> Any:
    """The entry of ``table`` for the longest prefix of blueprint ``key``."""
    for name in sorted(table, key=len, reverse=True):
        if key == name or key.startswith((name + ".", name + "[")):
            return table[name]
    return default


def _show(value: Any) -> str:
    if value is None:
        return UNSET
    if isinstance(value, str):
        return value
    return _short(value)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if value is not None else ""
    return text if len(text) <= 200 else text[:199] + "…"


def _pool_hosts(pool: Mapping[str, Any] | None) -> list[str]:
    hosts = (pool or {}).get("hosts") or ""
    return hostlist.expand(hosts, limit=10**6) if hosts else []


def _elastic(pool: Mapping[str, Any]) -> bool:
    """State=CLOUD nodes: a provider's (estategen's power programs) or the site's own."""
    return pool.get("scheduler") == "slurm" and (
        pool.get("provider") != "on-prem" or bool(pool.get("site_cloud"))
    )


def _managed(pool: Mapping[str, Any]) -> bool:
    return pool.get("provider") != "on-prem"


class _Models(Record, frozen=False):
    """The two models compared (as estate.json records them), with the new estate."""

    old: Mapping[str, Any]
    new: Mapping[str, Any]
    estate: Estate

    def pools(self, side: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
        return {p["name"]: p for p in side.get("node_pools") or []}

    def pool(self, name: str) -> Mapping[str, Any]:
        return self.pools(self.new).get(name) or self.pools(self.old).get(name) or {}

    @property
    def accounting(self) -> bool:
        return bool((self.new.get("slurm") or {}).get("accounting"))

    @property
    def slurm(self) -> bool:
        return any(p.get("scheduler") == "slurm" for p in self.new.get("node_pools") or [])

    def topology(self, side: Mapping[str, Any]) -> str | None:
        """The TopologyPlugin a recorded model renders, as renderers.slurm chooses it."""
        return topology_plugin(
            (p.get("blocks") or (), p.get("switches") or ())
            for p in side.get("node_pools") or []
            if p.get("scheduler") == "slurm"
        )

    def deliver(self, path: str) -> tuple[Action, ...]:
        return _ansible_for(path) if self.slurm else ()


def model_changes(old: Mapping[str, Any], new: Mapping[str, Any], estate: Estate) -> list[Change]:
    """What changed between two recorded models (``new`` is ``estate``'s), each change with
    the steps it needs."""
    models = _Models(old, new, estate)
    changes: list[Change] = []
    grouped: dict[tuple[str, str], list[Delta]] = {}
    for delta in diff(old, new):
        key = delta.key
        if key.startswith(("node_pools[]", "slurm.partitions[]", "slurm.reservations[]")):
            grouped.setdefault((key.split("[]")[0], delta.item()), []).append(delta)
        elif key.startswith("slurm.qos[]"):
            grouped.setdefault(("slurm.qos", ""), []).append(delta)
        else:
            changes += _key_change(models, delta)
    for (section, name), deltas in grouped.items():
        if section == "node_pools":
            changes += _pool_changes(models, name, deltas)
        elif section == "slurm.partitions":
            changes += _partition_changes(models, name, deltas)
        elif section == "slurm.reservations":
            changes += _reservation_changes(models, name, deltas)
        else:
            changes += _qos_changes(models, deltas)
    return changes


def _policy_actions(models: _Models, policies: Iterable[str], file: str) -> list[Action]:
    """The Slurm-side steps of the daemon policies of a key rendered into ``file``."""
    actions: list[Action] = []
    for policy in policies:
        if policy == "restart-slurm-daemons":
            actions += [Action("restart-slurmctld"), Action("restart-slurmd", "*")]
        elif policy == "restart-slurmctld":
            actions.append(Action("restart-slurmctld"))
        elif policy == "restart-slurmdbd":
            actions.append(Action("restart-slurmdbd"))
        elif policy == "scontrol-reconfigure":
            actions.append(Action("scontrol-reconfigure"))
    if actions and file:
        actions = [*models.deliver(file), *actions]
    return actions


def _key_change(models: _Models, delta: Delta) -> list[Change]:
    """A change of one key outside the lists planned item by item."""
    key, policies = delta.key, delta.policies
    if key.startswith("gpu_models"):
        return _definition_change(models, delta)
    if key.startswith(("identity.teams[]", "identity.users[]", "identity.directory")):
        return _identity_changes(models, delta)
    if key == "slurm.cluster_name":
        return [_cluster_renamed(models, delta)]
    if key.startswith("slurm.options"):
        return [_option_change(models, delta)]
    if key.startswith("storage"):
        return [_storage_change(models, delta)]
    if key == "versions.slurm" or key.startswith("slurm.packages"):
        # another release, or the same from another source: the Slurm roles reinstall it
        if delta.path[-1] in ("major", "minor") or not models.slurm:
            return []
        return [_roles_change(models, delta, "slurm-upgrade", "all")]
    if key.startswith("observability"):
        if "ansible-playbook" not in policies and not key.startswith("observability.labels"):
            return []
        return [_roles_change(models, delta, "observability", "all")]
    if key.startswith("slurm."):
        return _slurm_change(models, delta)
    if "review" in own_policies(key):
        return [_review(delta)]
    return []


def _subject(delta: Delta) -> str:
    """The changed key as the blueprint names it, items by name: slurm.qos[high].priority."""
    return named(delta.path)


def _change(
    file: str, kind: str, delta: Delta, actions: Iterable[Action], meaning: str = ""
) -> Change:
    return Change(
        file,
        kind,
        _subject(delta),
        meaning or _MEANINGS.get(kind, _MEANINGS["review"]),
        _show(delta.before),
        _show(delta.after),
        tuple(actions) or (Action("review", delta.key),),
    )


def _review(delta: Delta) -> Change:
    return _change(
        "estate.json",
        "review",
        delta,
        (Action("review", _subject(delta)),),
        f"{delta.key} renames or retargets many outputs at once: read the whole plan before "
        "applying",
    )


def _roles_change(models: _Models, delta: Delta, kind: str, limit: str) -> Change:
    roles = _by_prefix(_ROLES, delta.key, ())
    return _change(
        "ansible/group_vars/all/estate.yml",
        kind,
        delta,
        (Action("ansible-playbook", f"{limit}:{role}") for role in roles),
    )


def _slurm_change(models: _Models, delta: Delta) -> list[Change]:
    key, policies = delta.key, delta.policies
    file = _by_prefix(_SLURM_FILES, key, "slurm/slurm.conf")
    kind = _by_prefix(
        _SLURM_SECTIONS, key, next((_SLURM_KINDS[p] for p in policies if p in _SLURM_KINDS), "")
    )
    actions = _policy_actions(models, policies, "slurm/slurm.conf")
    if "restart-slurmdbd" in policies:
        actions += [*models.deliver("slurm/slurmdbd.conf"), Action("restart-slurmdbd")]
    if key == "slurm.rest_api.jwt_key" and models.accounting:
        # slurmdbd reads the JWT key too (AuthAltTypes in slurmdbd.conf)
        actions += [*models.deliver("slurm/slurmdbd.conf"), Action("restart-slurmdbd")]
    if "ansible-playbook" in policies:
        actions += [
            Action("ansible-playbook", f"all:{role}") for role in _by_prefix(_ROLES, key, ())
        ]
    if "ansible-build" in policies:
        actions += _new_hosts(delta)
    if not kind:
        return [_review(delta)] if "review" in own_policies(key) else []
    return [_change(file, kind, delta, actions)]


def _new_hosts(delta: Delta) -> list[Action]:
    """Builds of hosts a key names that it did not name before (controllers, slurmdbd)."""

    def names(value: Any) -> set[str]:
        if isinstance(value, str):
            return {value}
        if isinstance(value, list):
            return {v for v in value if isinstance(v, str)}
        return set()

    return [
        Action("ansible-build", f"{h}:") for h in sorted(names(delta.after) - names(delta.before))
    ]


def _option_change(models: _Models, delta: Delta) -> Change:
    """A slurm.options key: what it needs is slurm_keys' table, as slurm.conf(5) says."""
    name = delta.path[-1]
    policy, entry = change_for(name), slurm_key(name)
    source = "slurm.conf(5)" if entry is None else entry.source
    deliver = models.deliver("slurm/slurm.conf")
    if policy is ChangePolicy.RESTART_ALL:
        kind, meaning = "slurm-restart-all", "needs slurmctld and every slurmd restarted"
        actions: tuple[Action, ...] = (
            *deliver,
            Action("restart-slurmctld"),
            Action("restart-slurmd", "*"),
        )
    elif policy is ChangePolicy.RESTART_SLURMCTLD:
        kind, meaning = "slurm-restart-slurmctld", "needs a slurmctld restart"
        actions = (*deliver, Action("restart-slurmctld"))
    else:
        kind, meaning = "slurm-reconfigure", "takes effect with scontrol reconfigure"
        actions = (*deliver, Action("scontrol-reconfigure"))
    return _change("slurm/slurm.conf", kind, delta, actions, f"{name} {meaning} ({source})")


def _cluster_renamed(models: _Models, delta: Delta) -> Change:
    parent = models.new.get("name", "")
    grant = slurm_renderer_grant(models.new)
    return _change(
        "slurm/slurm.conf",
        "slurm-cluster-renamed",
        delta,
        (
            *models.deliver("slurm/slurm.conf"),
            Action("restart-slurmctld"),
            Action("restart-slurmd", "*"),
            *(
                (
                    Action("sacctmgr-load"),
                    *(Action("sacctmgr-qos", line) for line in grant),
                    Action("sacctmgr-delete", f"delete cluster {delta.before}"),
                )
                if models.accounting
                else ()
            ),
        ),
        "slurmctld refuses to start when ClusterName differs from the one in its "
        "StateSaveLocation, and slurmdbd records a new cluster: this is a new cluster, not an "
        f"update (running and queued jobs are lost); the accounts under {parent} are loaded "
        "for it and the old cluster's deleted",
    )


def slurm_renderer_grant(model: Mapping[str, Any]) -> tuple[str, ...]:
    """The QoS grant of a recorded model, as the renderer writes it (qos_lines)."""
    from estategen.model import Version
    from estategen.renderers.slurm import qos_grant

    slurm = model.get("slurm") or {}
    names = [q["name"] for q in slurm.get("qos") or []]
    if not names:
        return ()
    estate = model.get("name", "")
    parent = estate if estate != "root" else f"{estate}-estate"
    version = Version.parse(model["versions"]["slurm"]["text"])
    teams = bool((model.get("identity") or {}).get("teams"))
    return qos_grant(parent, str(slurm.get("cluster_name")), names, version, teams=teams)


def _identity_changes(models: _Models, delta: Delta) -> list[Change]:
    changes = [
        _change(
            "ansible/vars/identity.yml",
            "identity",
            delta,
            (Action("ansible-playbook", "all:common"),),
        )
    ]
    if not models.accounting or not delta.key.startswith("identity.teams[]"):
        return changes
    load = (*models.deliver("slurm/sacct.cfg"), Action("sacctmgr-load"))
    field = delta.path[-1]
    team = delta.item()
    if delta.removed and field.startswith("["):
        changes.append(
            _change(
                "slurm/sacct.cfg",
                "slurm-accounts-removed",
                delta,
                (Action("sacctmgr-delete", f"delete account name={team}"),),
                _ACCOUNTS_REMOVED,
            )
        )
    elif field == "members":
        gone = sorted(set(delta.before or []) - set(delta.after or []))
        if gone:
            changes.append(
                _change(
                    "slurm/sacct.cfg",
                    "slurm-accounts-removed",
                    delta,
                    (
                        Action("sacctmgr-delete", f"delete user name={user} account={team}")
                        for user in gone
                    ),
                    _ACCOUNTS_REMOVED,
                )
            )
        if set(delta.after or []) - set(delta.before or []):
            changes.append(_change("slurm/sacct.cfg", "slurm-accounts", delta, load, _ACCOUNTS))
    elif field in ("fairshare",) or field.startswith("["):
        changes.append(_change("slurm/sacct.cfg", "slurm-accounts", delta, load, _ACCOUNTS))
    if field not in ("gid", "members") and not field.startswith("["):
        # a team's Fairshare or namespace: nothing on the hosts reads it
        changes.pop(0)
    return changes


_ACCOUNTS = (
    "accounts, users and Fairshare change in slurmdbd with sacctmgr load; slurmctld picks "
    "them up at once"
)
_ACCOUNTS_REMOVED = (
    "sacctmgr load adds and updates but never deletes: remove it explicitly (after its jobs "
    "end; slurmdbd refuses to delete associations with running jobs)"
)


def _storage_change(models: _Models, delta: Delta) -> Change:
    """A file system's client side: the storage_client role on the pools that mount it."""
    if "ansible-playbook" not in delta.policies and not delta.path[-1].startswith("["):
        return _change("estate.json", "storage", delta, (), "only the Kubernetes side changes")
    name = delta.item()
    pools = set()
    for side in (models.old, models.new):
        for fs in side.get("storage") or []:
            if fs.get("name") == name:
                pools |= set(fs.get("pools") or [])
    limits = sorted(pool_group(p) for p in pools) or ["all"]
    return _change(
        "ansible/group_vars/all/estate.yml",
        "storage",
        delta,
        (Action("ansible-playbook", f"{limit}:storage_client") for limit in limits),
    )


def _definition_change(models: _Models, delta: Delta) -> list[Change]:
    """A GPU model's definition is a change of each pool that uses it, by what the field
    reaches: the fabric the GPU stack (role nvidia_gpu), the MIG profiles the GRES of MIG
    pools (a restart), memory the billing and node weights (scontrol reconfigure); where
    clouds sell it only the managed pools (their cluster's objects say so)."""
    name = delta.path[1]
    field = delta.path[2] if len(delta.path) > 2 else ""
    changes = []
    for pool in models.pools(models.new).values():
        gpus = pool.get("gpus") or {}
        if gpus.get("model") != name or _managed(pool):
            continue
        group = pool_group(pool["name"])
        slurm = pool.get("scheduler") == "slurm"
        if field == "fabric":
            kind, actions = "gpu-config", [Action("ansible-playbook", f"{group}:nvidia_gpu")]
        elif field == "mig" and slurm and gpus.get("mig"):
            kind = "slurm-node-hardware"
            actions = [
                *models.deliver("slurm/gres.conf"),
                Action("restart-slurmctld"),
                *(Action("restart-slurmd", h) for h in _pool_hosts(pool)),
                Action("scontrol-reconfigure"),
            ]
        elif field in ("memory_gb", "name", "vendor") and slurm:
            kind = "slurm-node-scheduling"
            actions = [*models.deliver("slurm/slurm.conf"), Action("scontrol-reconfigure")]
        else:
            continue
        changes.append(
            _change(
                f"ansible/group_vars/{group}.yml" if kind == "gpu-config" else "slurm/slurm.conf",
                kind,
                delta,
                actions,
                f"GPU model {name} is pool {pool['name']}'s: " + _MEANINGS.get(kind, ""),
            )
        )
    return changes


def _partition_changes(models: _Models, name: str, deltas: list[Delta]) -> list[Change]:
    actions = (*models.deliver("slurm/slurm.conf"), Action("scontrol-reconfigure"))
    (first,) = deltas[:1]
    if first.path[-1].startswith("[") and (first.added or first.removed):
        return [
            Change(
                "slurm/slurm.conf",
                "slurm-partition-added" if first.added else "slurm-partition-removed",
                f"partition {name}",
                "a new partition appears with scontrol reconfigure"
                if first.added
                else "slurm.conf(5): jobs in a deleted partition are cancelled at reconfigure; "
                f"drain it first (scontrol update PartitionName={name} State=DRAIN) and let "
                "its jobs finish",
                "" if first.added else _attrs(first.before),
                _attrs(first.after) if first.added else "",
                actions,
            )
        ]
    keys = [d.key.rsplit(".", 1)[-1] for d in deltas]
    policies = {p for d in deltas for p in d.policies}
    return [
        Change(
            "slurm/slurm.conf",
            "slurm-partition-changed",
            f"partition {name}: {', '.join(keys)}",
            "partition settings take effect with scontrol reconfigure; running jobs keep the "
            "limits they started with",
            " ".join(f"{k}={_show(d.before)}" for k, d in zip(keys, deltas, strict=True)),
            " ".join(f"{k}={_show(d.after)}" for k, d in zip(keys, deltas, strict=True)),
            tuple(_policy_actions(models, policies, "slurm/slurm.conf")) or actions,
        )
    ]


def _attrs(value: Any) -> str:
    """A named item's settings, without its name and empty ones."""
    if not isinstance(value, Mapping):
        return _show(value)
    flat = {**value, **(value.get("overrides") or {})}
    return " ".join(
        f"{k}={_show(v)}"
        for k, v in flat.items()
        if k not in ("name", "overrides") and v not in (None, [], {}, "")
    )


def _reservation_changes(models: _Models, name: str, deltas: list[Delta]) -> list[Change]:
    """Reservations live in slurmctld's state: the slurm_controller role's task creates,
    updates and deletes them with scontrol; nothing restarts."""
    apply = models.deliver("slurm/reservations.scontrol")
    (first,) = deltas[:1]
    file = "slurm/reservations.scontrol"
    subject = f"{models.new.get('name', '')}.{name}"
    item = first.path[-1].startswith("[")
    if item and first.added:
        meaning = (
            "the role creates it (scontrol create reservation); jobs of its teams and users "
            f"run in it with --reservation={subject}"
        )
        if "maint" in (first.after or {}).get("flags", []):
            meaning += "; other jobs do not start on its nodes while it lasts"
        return [
            Change(
                file, "slurm-reservation-added", subject, meaning, "", _attrs(first.after), apply
            )
        ]
    if item and first.removed:
        return [
            Change(
                file,
                "slurm-reservation-removed",
                subject,
                "the role deletes it (scontrol delete reservation): its nodes return to every "
                "job; jobs submitted with --reservation to it can no longer start",
                _attrs(first.before),
                "",
                apply,
            )
        ]
    keys = [d.key.rsplit(".", 1)[-1] for d in deltas]
    recreate = sorted({"flags", "partition"} & set(keys))
    return [
        Change(
            file,
            "slurm-reservation-changed",
            f"{subject} {', '.join(keys)}",
            "the role deletes and creates it again (scontrol cannot change "
            f"{', '.join(recreate)} in place)"
            if recreate
            else "the role updates it in place (scontrol update reservation)",
            " ".join(f"{k}={_show(d.before)}" for k, d in zip(keys, deltas, strict=True)),
            " ".join(f"{k}={_show(d.after)}" for k, d in zip(keys, deltas, strict=True)),
            apply,
        )
    ]


def _qos_changes(models: _Models, deltas: list[Delta]) -> list[Change]:
    """QoS live in slurmdbd: the changed lines of qos.sacctmgr run with sacctmgr."""
    from estategen.renderers.slurm import qos_lines

    adds, modifies, grant = qos_lines(models.estate)
    deliver = models.deliver("slurm/qos.sacctmgr")
    changes = []
    names_changed = False
    for name in dict.fromkeys(d.item() for d in deltas):
        mine = [d for d in deltas if d.item() == name]
        first = mine[0]
        file = "slurm/qos.sacctmgr"
        if first.removed and len(first.path) == 3:
            names_changed = True
            changes.append(
                Change(
                    file,
                    "slurm-qos-removed",
                    f"QoS {name}",
                    "sacctmgr never deletes a QoS on its own: delete it once no partition, "
                    "account or job uses it",
                    _attrs(first.before),
                    "",
                    (Action("sacctmgr-delete", f"delete qos name={name}"),),
                )
            )
            continue
        lines = [modifies[name]] if name in modifies else []
        if first.added and len(first.path) == 3:
            names_changed = True
            lines.insert(0, adds[name])
        changes.append(
            Change(
                file,
                "slurm-qos",
                f"QoS {name}",
                "QoS live in slurmdbd and change at once with sacctmgr; running jobs keep the "
                "QoS limits they started with",
                "" if first.added else " ".join(f"{_subject(d)}={_show(d.before)}" for d in mine),
                " ".join(f"{_subject(d)}={_show(d.after)}" for d in mine)
                if not first.added
                else _attrs(first.after),
                (*deliver, *(Action("sacctmgr-qos", line) for line in lines)),
            )
        )
    if names_changed and grant:
        changes.append(
            Change(
                "slurm/qos.sacctmgr",
                "slurm-qos",
                "QoS granted to the estate's accounts",
                "which QoS the accounts may use changes at once with sacctmgr",
                "; ".join(slurm_renderer_grant(models.old)),
                "; ".join(grant),
                (*deliver, *(Action("sacctmgr-qos", line) for line in grant)),
            )
        )
    return changes


def _pool_changes(models: _Models, name: str, deltas: list[Delta]) -> list[Change]:
    pool = models.pool(name)
    group = pool_group(name)
    first = deltas[0]
    slurm = pool.get("scheduler") == "slurm"
    if len(first.path) == 2 and (first.added or first.removed):
        return _pool_added_or_removed(models, pool, first.added)
    changes: list[Change] = []
    deliver = models.deliver("slurm/slurm.conf")
    was = models.pools(models.old).get(name) or {}
    now = models.pools(models.new).get(name) or {}
    for delta in deltas:
        key, policies = delta.key, set(delta.policies)
        field = key.removeprefix("node_pools[].")
        if delta.path[2] == "host_expressions":
            continue  # the hosts they expand to are compared
        if was.get("scheduler") != now.get("scheduler") or field in ("scheduler", "cluster"):
            if field in ("scheduler", "cluster"):
                hosts = _pool_hosts(was)
                changes.append(
                    _change(
                        "ansible/inventory.yml",
                        "pool-moved",
                        delta,
                        (
                            *((Action("drain-nodes", _hosts(hosts)),) if hosts and slurm else ()),
                            Action("ansible-build", f"{group}:"),
                            *(
                                (Action("restart-slurmctld"), Action("restart-slurmd", "*"))
                                if was.get("scheduler") == "slurm" or slurm
                                else ()
                            ),
                        ),
                        "the pool moves to another scheduler or cluster: drain it, rebuild its "
                        "hosts with the whole playbook",
                    )
                )
            continue
        if field == "gpus.mig" and not (delta.before or delta.after):
            continue  # a pool gaining or losing GPUs without MIG
        if field == "hosts":
            changes += _hosts_changed(models, pool, delta)
        elif field == "gpus.mig" or (field == "gpus" and _mig(delta)):
            changes.append(_mig_layout(models, pool, delta))
        elif not slurm:
            roles = _by_prefix(_ROLES, key, ())
            if "ansible-playbook" in policies or field.startswith(("network", "labels")):
                kind = "kubernetes-node-labels"
            elif field in ("gpus", "gpus.model") and not _managed(pool):
                kind = "gpu-config"
            else:
                continue  # the cluster's objects say what it means (kubernetes/<cluster>/)
            if _managed(pool) or not roles:
                continue
            # kubelet registers new hosts with the new taints; the running nodes need them set
            taints = (
                taint_actions(str(now.get("cluster")), name, _taints(was), _taints(now))
                if field.startswith("taints")
                else []
            )
            changes.append(
                _change(
                    # a host's own labels (its switch) are host variables in the inventory
                    "ansible/inventory.yml"
                    if field.startswith("network")
                    else f"ansible/group_vars/{group}.yml",
                    kind,
                    delta,
                    (*(Action("ansible-playbook", f"{group}:{role}") for role in roles), *taints),
                )
            )
        elif field.startswith("network"):
            # the declared policy is for the change that turns TopologyPlugin on, off or
            # from tree to block; within one plugin, topology.conf is reread on reconfigure
            plugin = models.topology(models.new)
            same_plugin = plugin is not None and plugin == models.topology(models.old)
            changes.append(
                _change(
                    "slurm/topology.conf",
                    "slurm-topology" if same_plugin else "slurm-topology-plugin",
                    delta,
                    (*models.deliver("slurm/topology.conf"), Action("scontrol-reconfigure"))
                    if same_plugin
                    else _policy_actions(models, policies, "slurm/topology.conf"),
                )
            )
        elif "restart-slurm-daemons" in policies or "drain-and-rebuild" in policies:
            # a node's own hardware restarts its slurmd; what every slurmd reads (GresTypes
            # for shards, the GRES type) restarts them all, as the policy says; scontrol
            # reconfigure makes the other daemons read the nodes' new definition
            hosts = _pool_hosts(now) if field.startswith(_NODE_HARDWARE) else ["*"]
            gpu = field in ("gpus", "gpus.model")
            changes.append(
                _change(
                    "slurm/slurm.conf",
                    "slurm-node-hardware",
                    delta,
                    (
                        *deliver,
                        *models.deliver("slurm/gres.conf"),
                        *(
                            (Action("ansible-playbook", f"{group}:nvidia_gpu"),)
                            + (
                                (Action("ansible-playbook", f"{group}:dcgm_exporter"),)
                                if not delta.before or not delta.after
                                else ()
                            )
                            if gpu
                            else ()
                        ),
                        Action("restart-slurmctld"),
                        *(Action("restart-slurmd", h) for h in hosts),
                        Action("scontrol-reconfigure"),
                    ),
                )
            )
        elif "scontrol-reconfigure" in policies:
            changes.append(
                _change(
                    "slurm/slurm.conf",
                    "slurm-node-scheduling",
                    delta,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        elif "ansible-playbook" in policies:
            kind = "slurm-health-check-program" if field.startswith("health") else "cloud-image"
            changes.append(
                _change(
                    f"ansible/group_vars/{group}.yml",
                    kind,
                    delta,
                    (
                        Action("ansible-playbook", f"{group}:{role}")
                        for role in _by_prefix(_ROLES, key, ())
                    ),
                    f"the pool's {field} changes on its nodes with the slurm_compute role",
                )
            )
    return changes


# fields of a pool that are each node's own hardware
_NODE_HARDWARE = ("cpu", "memory_gb", "real_memory_mib", "gpus.count", "gpus.model")


def _mig(delta: Delta) -> bool:
    return any(
        ((v or {}).get("mig") if isinstance(v, dict) else None) for v in (delta.before, delta.after)
    )


def build_limits(added: Iterable[str], groups: Mapping[str, Iterable[str]]) -> tuple[Action, ...]:
    """Builds of exactly the added hosts: by a group's name where all its hosts are new (a new
    pool), otherwise host by host; ``ansible-playbook --limit`` takes both."""
    new = set(added)
    covered: set[str] = set()
    limits: list[str] = []
    for name, hosts in sorted(groups.items()):
        members = set(hosts)
        if members and members <= new and not members & covered:
            limits.append(name)
            covered |= members
    limits += sorted(new - covered)
    return tuple(Action("ansible-build", f"{limit}:") for limit in limits)


def _mig_layout(models: _Models, pool: Mapping[str, Any], delta: Delta) -> Change:
    group = pool_group(pool["name"])
    hosts = _pool_hosts(pool)
    if pool.get("scheduler") != "slurm":
        return _change(
            f"ansible/group_vars/{group}.yml",
            "mig-layout",
            delta,
            (Action("ansible-playbook", f"{group}:nvidia_gpu"),),
            "the MIG layout the nvidia_gpu role lays down for the MIG manager; the cluster's "
            "MIG manager repartitions the nodes (see kubernetes/)",
        )
    return _change(
        "slurm/gres.conf",
        "mig-layout",
        delta,
        (
            Action("drain-nodes", _hosts(hosts)),
            *models.deliver("slurm/slurm.conf"),
            *models.deliver("slurm/gres.conf"),
            Action("ansible-playbook", f"{group}:nvidia_gpu"),
            Action("restart-slurmctld"),
            *(Action("restart-slurmd", h) for h in hosts),
            Action("scontrol-reconfigure"),
            Action("resume-nodes", _hosts(hosts)),
        ),
        "a new MIG layout destroys the GPU instances jobs run in: drain the pool's nodes, "
        "wait for their jobs, repartition (role nvidia_gpu), restart slurmctld and their "
        "slurmd for the new GRES, then resume them",
    )


def _hosts_changed(models: _Models, pool: Mapping[str, Any], delta: Delta) -> list[Change]:
    group = pool_group(pool["name"])
    before = set(hostlist.expand(delta.before, limit=10**6)) if delta.before else set()
    after = hostlist.expand(delta.after, limit=10**6) if delta.after else []
    added = [h for h in after if h not in before]
    removed = sorted(before - set(after))
    changes = []
    restart = (Action("restart-slurmctld"), Action("restart-slurmd", "*"))
    slurm = pool.get("scheduler") == "slurm"
    deliver = models.deliver("slurm/slurm.conf")
    if added:
        if _elastic(pool):
            changes.append(_cloud_nodes(models, added))
        else:
            changes.append(
                Change(
                    "slurm/slurm.conf" if slurm else "ansible/inventory.yml",
                    "slurm-nodes-added" if slurm else "kubernetes-hosts-added",
                    f"NodeName {_hosts(added)}" if slurm else f"{group} {_hosts(added)}",
                    "slurm.conf(5): adding nodes needs slurmctld and every slurmd restarted (all "
                    "slurmd must know every node); build the new hosts first, their slurmd "
                    "starts with the playbook"
                    if slurm
                    else "build the new hosts (kubelet, GPU stack); they join the cluster and "
                    "get the pool's labels",
                    "",
                    f"{len(added)} node(s) in pool {pool['name']}",
                    (
                        *(deliver if slurm else ()),
                        *build_limits(added, {group: set(after)}),
                        *(restart if slurm else ()),
                    ),
                )
            )
    if removed:
        changes.append(
            Change(
                "slurm/slurm.conf" if slurm else "ansible/inventory.yml",
                "slurm-nodes-removed" if slurm else "kubernetes-hosts-removed",
                f"NodeName {_hosts(removed)}" if slurm else f"{group} {_hosts(removed)}",
                "drain the nodes and wait for their jobs before applying: removing nodes needs "
                "slurmctld and every slurmd restarted, and jobs still on them are lost"
                if slurm
                else "the hosts leave the pool; Ansible stops managing them (it does not undo "
                "what it installed); drain them in Kubernetes first",
                f"{len(removed)} node(s)",
                "",
                (Action("drain-nodes", _hosts(removed)), *deliver, *restart)
                if slurm and not _elastic(pool)
                else (*deliver, *restart)
                if slurm
                else (Action("review", f"kubectl drain {_hosts(removed)}"),),
            )
        )
    return changes


def _cloud_nodes(models: _Models, added: list[str]) -> Change:
    # elastic cloud nodes: nothing to build; slurmctld creates them when jobs need them
    return Change(
        "slurm/slurm.conf",
        "slurm-cloud-nodes-added",
        f"NodeName {_hosts(added)}",
        "State=CLOUD nodes: slurm.conf(5) adding nodes needs slurmctld and every slurmd "
        "restarted; they start powered down and slurmctld creates their instances "
        "(ResumeProgram) when a job needs them, from the pool's image",
        "",
        f"{len(added)} cloud node(s)",
        (
            *models.deliver("slurm/slurm.conf"),
            Action("restart-slurmctld"),
            Action("restart-slurmd", "*"),
        ),
    )


def _pool_added_or_removed(models: _Models, pool: Mapping[str, Any], added: bool) -> list[Change]:
    name = pool["name"]
    group = pool_group(name)
    hosts = _pool_hosts(pool)
    slurm = pool.get("scheduler") == "slurm"
    # topology.conf places every Slurm node once it exists (a pool without switches gets a
    # leaf of its own)
    topology = slurm and any(
        p.get("switches") or p.get("blocks")
        for side in (models.old, models.new)
        for p in side.get("node_pools") or []
        if p.get("scheduler") == "slurm"
    )
    where = pool.get("switches") or pool.get("blocks") or [f"{name}-leaf"]
    restart = (
        *models.deliver("slurm/slurm.conf"),
        Action("restart-slurmctld"),
        Action("restart-slurmd", "*"),
    )
    changes = []
    if added and _elastic(pool):
        changes += [
            _cloud_nodes(models, hosts),
            Change(
                f"ansible/group_vars/{group}.yml",
                "cloud-image-added",
                group,
                "a Slurm cloud pool: build the image its instances boot on a VM added to "
                f"{group} from a second inventory (ansible-playbook -i inventory.yml -i "
                f"image.yml site.yml --limit {group}), then pin that image in the pool's "
                "cloud.image",
                actions=(Action("review", f"build the image of {group}"),),
            ),
        ]
    elif added and not _managed(pool):
        changes.append(
            Change(
                "ansible/inventory.yml",
                "pool-added",
                f"pool {name}",
                "a new pool: build its hosts with the whole playbook"
                + (
                    "; slurm.conf(5): new nodes need slurmctld and every slurmd restarted"
                    if slurm
                    else ""
                ),
                "",
                f"{len(hosts)} host(s) in {group}",
                (Action("ansible-build", f"{group}:"), *(restart if slurm else ())),
            )
        )
    elif not added and slurm:
        changes.append(
            Change(
                "slurm/slurm.conf",
                "pool-removed",
                f"pool {name}",
                "drain the pool's nodes and wait for their jobs before applying: removing nodes "
                "needs slurmctld and every slurmd restarted, and jobs still on them are lost; "
                "Ansible no longer manages its hosts",
                f"{len(hosts)} host(s)",
                "",
                (
                    *(
                        (Action("drain-nodes", _hosts(hosts)),)
                        if hosts and not _elastic(pool)
                        else ()
                    ),
                    *restart,
                ),
            )
        )
    elif not added and not _managed(pool):
        changes.append(
            Change(
                "ansible/inventory.yml",
                "pool-removed",
                f"pool {name}",
                "the pool's hosts leave the estate; Ansible no longer manages them (drain them "
                "in Kubernetes first)",
                f"{len(hosts)} host(s)",
                "",
                (
                    Action("review", f"kubectl drain {_hosts(hosts)}")
                    if hosts
                    else Action("review", group),
                ),
            )
        )
    if topology:
        changes.append(
            Change(
                "slurm/topology.conf",
                "slurm-topology",
                f"pool {name} switches",
                _MEANINGS["slurm-topology"],
                "" if added else _short(where),
                _short(where) if added else "",
                (*models.deliver("slurm/topology.conf"), Action("scontrol-reconfigure")),
            )
        )
    return changes


# Ansible roles that install each rendered file
_FILE_ROLES = {
    "slurm.conf": ("slurm_controller", "slurm_compute", "slurmdbd"),
    "gres.conf": ("slurm_controller", "slurm_compute"),
    "topology.conf": ("slurm_controller", "slurm_compute"),
    "cgroup.conf": ("slurm_controller", "slurm_compute"),
    "slurmdbd.conf": ("slurmdbd",),
    "sacct.cfg": ("slurmdbd",),
    "qos.sacctmgr": ("slurmdbd", "slurm_controller"),
    "reservations.scontrol": ("slurm_controller",),
}


def _ansible_for(path: str) -> tuple[Action, ...]:
    """Installing a rendered Slurm file: the Ansible roles that copy it."""
    program = re.search(r"(?:^|/)(healthcheck|power)/([^/]+)\.sh$", path)
    if program and program[1] == "healthcheck":
        # a pool's health-check program goes to that pool's nodes
        return (Action("ansible-playbook", f"{pool_group(program[2])}:slurm_compute"),)
    if program:
        # elastic cloud nodes: the power programs run on the controllers
        return (Action("ansible-playbook", "all:slurm_controller"),)
    name = path.rsplit("/", 1)[-1]
    return tuple(Action("ansible-playbook", f"all:{role}") for role in _FILE_ROLES.get(name, ()))


def _ansible_copy(path: str, status: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "ansible-files",
            f"copy of slurm/{name}",
            "the copy of the Slurm file the Ansible roles install; its changes are explained "
            f"under slurm/{name}",
            actions=_ansible_for(name),
        )
    ]


def _ansible_other(path: str, status: str, *_: str) -> list[Change]:
    match = re.match(r"ansible/roles/([^/]+)/", path)
    role = match.group(1) if match else ""
    return [
        Change(
            path,
            "ansible-roles",
            role or path,
            f"role {role} changed: run it everywhere it applies"
            if role
            else "the playbook itself changed: run it",
            actions=(Action("ansible-playbook", f"all:{role}"),),
        )
    ]


def _cluster_data_changes(
    path: str, cluster: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[Change]:
    """The Pulumi project's data (:func:`estategen.renderers.pulumi.cluster_data` of each
    model): its releases and managed node pools (the objects it applies are the manifests,
    explained per object)."""
    up = Action("pulumi-up", cluster)
    changes = []
    was = {p["name"]: p for p in old.get("node_pools") or []}
    now = {p["name"]: p for p in new.get("node_pools") or []}
    for name in sorted(set(was) | set(now)):
        if was.get(name) != now.get(name):
            changes.append(_pool_change(path, cluster, name, was.get(name), now.get(name)))
    for key in sorted(set(old) | set(new)):
        if key == "node_pools" or old.get(key) == new.get(key):
            continue
        meaning = (
            "pinned charts change: the Helm releases upgrade with pulumi up"
            + _release_secrets_note(old.get(key), new.get(key))
            if key == "releases"
            else _AUTOSCALER_MEANING
            if key == "autoscaler"
            else "operators applied from their pinned manifest change: pulumi up applies the "
            "new one (kubectl apply --server-side -f its URL without Pulumi)"
            if key == "upstream_manifests"
            else "cluster settings change with pulumi up"
        )
        kind = (
            "kubernetes-components"
            if key in ("releases", "upstream_manifests")
            else "kubernetes-cluster-settings"
        )
        changes.append(
            Change(path, kind, key, meaning, _short(old.get(key)), _short(new.get(key)), (up,))
        )
    return changes


def _pods_ready_meaning(
    old: Estate, earlier: KubernetesCluster, new: Estate, cluster: KubernetesCluster
) -> str:
    """What a changed pods-ready timeout does once Kueue's manager reads it; "" when it is the
    same."""
    from estategen.kubernetes import kueue
    from estategen.kubernetes.objects import ClusterView

    was = kueue.pods_ready_timeout(ClusterView.of(old, earlier))
    now = kueue.pods_ready_timeout(ClusterView.of(new, cluster))
    if was == now:
        return ""
    return (
        f"; Kueue's manager restarts (the chart rolls it on a new configuration) and gives an "
        f"admitted workload {now} (was {was}) to have all its pods ready: one that misses it "
        "gives its quota back and is requeued, backing off from 60 s to an hour; admission is "
        "never blocked meanwhile, so the other teams' workloads keep being admitted"
    )


def kubernetes_changes(
    old: Estate, new: Estate, clusters: Collection[str] | None = None
) -> dict[str, list[Change]]:
    """What changes on each cluster both models have (of ``clusters``, or all), by the file
    that carries it: the objects of kubernetes/<cluster>/
    (:func:`estategen.kubernetes.cluster_objects`), the Helm values of its releases and the
    Pulumi project's data (:func:`cluster_data`), built from each model by the renderers' own
    functions and compared object by object."""
    from estategen.kubernetes import cluster_objects
    from estategen.renderers.kubernetes import manifest_folder, values_file
    from estategen.renderers.pulumi import cluster_data

    out: dict[str, list[Change]] = {}
    was = {c.name: c for c in old.kubernetes_clusters}
    for cluster in new.kubernetes_clusters:
        earlier = was.get(cluster.name)
        if clusters is not None and cluster.name not in clusters:
            continue
        if earlier is None:
            continue  # a new project: pulumi-new
        name = cluster.name
        base = manifest_folder(cluster)
        path = f"pulumi/{name}/cluster.json"
        out[path] = _cluster_data_changes(
            path, name, _plain(cluster_data(old, earlier)), _plain(cluster_data(new, cluster))
        )
        built, before = cluster_objects(new, cluster), cluster_objects(old, earlier)
        mig = earlier.mig_strategy != cluster.mig_strategy
        for file in [*before.files, *(f for f in built.files if f not in before.files)]:
            path = f"{base}/{file}"
            out[path] = _object_changes(
                new, path, name, before.files.get(file, []), built.files.get(file, []), mig
            )
        values: dict[str, Any] = {values_file(r): r.values for r in before.releases}
        for release in built.releases:
            values.setdefault(values_file(release), None)
        now = {values_file(r): r.values for r in built.releases}
        for file in values:
            a, b = _plain(values[file]), _plain(now.get(file))
            if a == b:
                continue
            path = f"{base}/{file}"
            out[path] = [
                Change(
                    path,
                    "kubernetes-components",
                    f"Helm release {file.removeprefix('helm/').removesuffix('.values.yaml')}",
                    "the release's values change: it upgrades with pulumi up (or helm upgrade)"
                    + (_pods_ready_meaning(old, earlier, new, cluster) if "kueue" in file else ""),
                    _short(_differing(a, b)[0]) if a is not None else "",
                    _short(_differing(a, b)[1]) if b is not None else "",
                    (Action("pulumi-up", name),),
                )
            ]
    return out


def observability_changes(old: Estate, new: Estate) -> dict[str, list[Change]]:
    """What changes for Prometheus and Grafana, by the file that carries it: the scrape jobs,
    rules, file_sd targets and dashboard each model builds (the functions
    :mod:`estategen.renderers.observability` and :mod:`estategen.renderers.grafana` render),
    compared item by item."""
    from estategen.prometheus_rules import DCGM_JOB, NODE_JOB, SLURM_JOB, observability_rules
    from estategen.renderers import grafana, observability

    base = observability.PROMETHEUS
    reload = (Action("prometheus-reload"),)
    out: dict[str, list[Change]] = {}
    jobs = (
        _by_name(observability.scrape_configs(old), "job_name"),
        _by_name(observability.scrape_configs(new), "job_name"),
    )
    for file in ("scrape-configs.yml", "prometheus.yml"):
        out[f"{base}/{file}"] = _items_changed(
            f"{base}/{file}",
            "prometheus-config",
            "scrape job",
            *jobs,
            "the scrape jobs change: Prometheus needs a reload",
            reload,
        )
    rules_a, rules_b = (_rules(observability_rules(side)) for side in (old, new))
    out[f"{base}/{observability.RULES_FILE}"] = _items_changed(
        f"{base}/{observability.RULES_FILE}",
        "prometheus-config",
        "rule",
        rules_a,
        rules_b,
        "the estate's recording or alerting rules change: Prometheus needs a reload",
        reload,
    )
    for job, targets in (
        (NODE_JOB, observability.node_exporter_targets),
        (DCGM_JOB, observability.dcgm_exporter_targets),
        (SLURM_JOB, observability.slurm_exporter_targets),
    ):
        path = f"{base}/targets/{job}.json"
        a, b = _targets(targets(old)), _targets(targets(new))
        if a != b:
            gone, come = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            part_a, part_b = (gone, come) if gone or come else _differing(a, b)
            out[path] = [
                Change(
                    path,
                    "prometheus-targets",
                    f"{job} targets",
                    "Prometheus re-reads file_sd target files when they change: copy them to "
                    "the Prometheus server, no reload needed",
                    _short(part_a) if part_a else "",
                    _short(part_b) if part_b else "",
                    (Action("review", "copy observability/prometheus/targets/ to Prometheus"),),
                )
            ]
    if grafana.dashboard_uid(old) == grafana.dashboard_uid(new):
        path = f"{grafana.GRAFANA}/dashboards/{grafana.dashboard_uid(new)}.json"
        panels_a, panels_b = (
            _by_name(_plain(grafana.build_dashboard(side)).get("panels", []), "title")
            for side in (old, new)
        )
        out[path] = _items_changed(
            path,
            "grafana-dashboard",
            "panel",
            panels_a,
            panels_b,
            "Grafana re-reads provisioned dashboards when their files change: copy them to the "
            "Grafana server, no restart needed",
            (Action("review", "copy observability/grafana/dashboards/ to Grafana"),),
        )
    return out


def _targets(groups: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """file_sd groups as each target address with its labels (read once per group: the 100k
    estate's 12,500 node targets share 250 sets)."""
    out: dict[str, Any] = {}
    for group in groups:
        targets = group.get("targets") or []
        if targets:
            labels = _plain(group.get("labels") or {})
            for target in targets:
                out[target] = labels
    return out


def _rules(groups: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Rules by what they record or alert on; one recorded several times (by its labels) is
    told apart by its order in its group."""
    out: dict[str, Any] = {}
    last: dict[str, int] = {}  # the last n of each name: the ones below it are taken
    for group in groups:
        for rule in group.get("rules") or []:
            name = str(rule.get("alert") or rule.get("record"))
            n = last.get(name, 1)
            key = name if n == 1 else f"{name} ({n})"
            while key in out:
                n += 1
                key = f"{name} ({n})"
            last[name] = n
            out[key] = _plain(rule)
    return out


def _by_name(items: Iterable[Mapping[str, Any]], *keys: str) -> dict[str, Any]:
    """Items by the first of ``keys`` each carries, as plain data."""
    return {
        str(next((item[k] for k in keys if k in item), i)): _plain(item)
        for i, item in enumerate(items)
    }


def _items_changed(
    path: str,
    kind: str,
    noun: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    meaning: str,
    actions: tuple[Action, ...],
) -> list[Change]:
    """One change per item added, removed or changed."""
    changes = []
    for name in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        part_a, part_b = _differing(a, b)
        changes.append(
            Change(
                path,
                kind,
                f"{noun} {name}",
                meaning,
                "" if a is None else _short(part_a),
                "" if b is None else _short(part_b),
                actions,
            )
        )
    return changes


def _plain(value: Any) -> Any:
    """JSON data as a file carries it (tuples as lists): ``json.loads(json.dumps(value))``,
    built directly where that is a copy (dicts with string keys, lists, tuples, JSON's own
    scalars); anything else takes the round trip, with its conversions and errors."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _plain(item) for key, item in value.items()}
    return json.loads(json.dumps(value))


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _release_secrets_note(old: Any, new: Any) -> str:
    """Secrets a chart reads (Mountpoint for S3's credentials, for one) come from the stack's
    secret config, which the user sets before pulumi up; the driver reads them only at start."""

    def names(releases: Any) -> set[str]:
        return {
            name
            for release in releases or []
            for secret in release.get("secrets", [])
            for name in secret["config"].values()
        }

    needed = sorted(names(new) - names(old))
    if not needed:
        return ""
    return (
        "; first set the secret config the charts' Secrets are made from ("
        + ", ".join(f"pulumi config set --secret {name}" for name in needed)
        + "); a CSI driver reads its Secret only at start, so a changed one needs its pods "
        "restarted"
    )


# What a managed pool is called on each cloud, and what a change of an EKS group also changes
# (the tags its Cluster Autoscaler reads); which of a pool's arguments replace it is
# kubernetes.cloud.POOL_FIELDS.
_POOL_NAMES = {"gke": "GKE node pool", "eks": "EKS node group", "aks": "AKS agent pool"}
_EKS_TAGS = "; the tags the Cluster Autoscaler reads follow the group's labels, taints and devices"


def _pool_change(
    path: str, cluster: str, name: str, was: Mapping[str, Any] | None, now: Mapping[str, Any] | None
) -> Change:
    """A managed pool of the Pulumi project changed: replaced or deleted (its nodes are
    drained first, as pulumi up deletes it) or updated in place, by the arguments that changed
    (:func:`estategen.kubernetes.cloud.pool_change`)."""
    from estategen.kubernetes.cloud import pool_change

    before, after = _differing(was, now)
    provider = str((now or was or {}).get("provider"))
    what = f"the {_POOL_NAMES.get(provider, 'cloud node pool')}"
    up = Action("pulumi-up", cluster)
    drain = Action("drain-kubernetes-pool", f"{cluster} {name}")
    if was is None:
        return Change(
            path,
            "kubernetes-pool",
            f"pool {name}",
            f"{what} is created with pulumi up",
            _short(before),
            _short(after),
            (up,),
        )
    if now is None:
        return Change(
            path,
            "kubernetes-pool",
            f"pool {name}",
            f"{what} is deleted with pulumi up, with its nodes and the pods on them: drain "
            f"them first (by their {POOL_LABEL} label) so the pods move while they can",
            _short(before),
            _short(after),
            (drain, up),
        )
    change = pool_change(provider, was.get("args") or {}, now.get("args") or {})
    if change.replace:
        return Change(
            path,
            "kubernetes-replace",
            f"pool {name}",
            f"{what} cannot change {', '.join(change.replace)} in place: pulumi up deletes it "
            "and creates it again under the same name, so its nodes and the pods on them go; "
            f"drain them first (by their {POOL_LABEL} label) so the pods move before it goes",
            _short(before),
            _short(after),
            (drain, up),
        )
    fields = [*change.recreate_nodes, *change.update] or ["the Cluster Autoscaler's tags"]
    meaning = f"{what} changes {', '.join(fields)} in place with pulumi up"
    if change.recreate_nodes:
        recreating = list(change.recreate_nodes)
        named = ("it" if len(fields) == 1 else "them") if fields == recreating else None
        meaning += (
            f", but {provider.upper()} applies {named or ', '.join(recreating)} by recreating "
            "every node (surge upgrade, a few nodes at a time: their pods are evicted and "
            f"rescheduled); drain the pool by its {POOL_LABEL} label first to move them at "
            "your pace"
        )
    return Change(
        path,
        "kubernetes-pool",
        f"pool {name}",
        meaning + (_EKS_TAGS if provider == "eks" else ""),
        _short(before),
        _short(after),
        (up,),
    )


_AUTOSCALER_MEANING = (
    "an EKS node group may now grow, or no longer: pulumi up installs (or removes) the Cluster "
    "Autoscaler with its IAM role and Pod Identity association"
)


def _differing(a: Any, b: Any) -> tuple[Any, Any]:
    """The parts of two values that differ, descending through mappings."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if len(keys) == 1:
            return _differing(a.get(keys[0]), b.get(keys[0]))
        return {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        indices = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(indices) == 1:
            return _differing(a[indices[0]], b[indices[0]])
    return a, b


# object kind -> (change kind, what applying it means); ConfigMaps are told apart by name
_OBJECT_CHANGES: dict[str, tuple[str, str]] = {
    "Namespace": ("kubernetes-tenancy", "namespaces update live"),
    "ResourceQuota": (
        "kueue-quota",
        "a namespace's GPU ResourceQuota follows what its queue can admit; it updates live",
    ),
    "PriorityClass": (
        "kubernetes-priority-classes",
        "PriorityClass values are immutable: a changed one is replaced; running pods keep "
        "their priority",
    ),
    "WorkloadPriorityClass": (
        "kubernetes-priority-classes",
        "Kueue workload priorities update live; admitted workloads keep theirs",
    ),
    "Node": (
        "kubernetes-node-labels",
        "the kubectl label step sets the changed labels on the running nodes (kubelet, which "
        "registered them, owns them: a server-side apply that changes one conflicts, and one "
        "that drops one leaves it); pods already running stay",
    ),
    "ClusterQueue": (
        "kueue-quota",
        "Kueue quotas and borrowing are applied live: ClusterQueues update in place, "
        "admitted workloads keep running, new admissions follow the new numbers",
    ),
    "LocalQueue": ("kueue-quota", "a team's LocalQueue changes live"),
    "ResourceFlavor": (
        "kueue-flavors",
        "Kueue flavours follow the pools' GPUs, taints and switches; they update live",
    ),
    "Topology": ("kueue-flavors", "the switch topology Kueue places workloads by"),
    "StorageClass": (
        "kubernetes-storage",
        "storage classes change; existing volumes keep theirs (a changed class is replaced)",
    ),
    "PersistentVolume": (
        "kubernetes-storage",
        "team volumes over the shared file systems; a volume's source (server, bucket, file "
        "system, host path) is immutable, so a changed one is replaced, which waits until no "
        "pod uses its claim",
    ),
    "PersistentVolumeClaim": ("kubernetes-storage", "team claims on the shared file systems"),
    # --- Volcano ---
    "Queue": (
        "volcano-quota",
        "Volcano queues update live: weight, deserved, capability and guarantee apply to the "
        "next scheduling cycle; running pods stay, and what a queue holds above its new "
        "deserved may be reclaimed",
    ),
    # --- Slurm hosted in Kubernetes (Slinky) ---
    "NodeSet": (
        "slurm-hosted",
        "the slurm-operator applies the hosted pool's NodeSet: fewer replicas drain Slurm "
        "nodes and delete each pod once its node is drained, more add nodes to the pool's "
        "partitions, and a changed pod spec rolls the pods (updateStrategy RollingUpdate)",
    ),
    "Controller": (
        "slurm-hosted",
        "the NodeSets' link to the estate's slurmctld (host, port, keys) changes: every hosted "
        "slurmd pod restarts and registers again",
    ),
    "RestApi": (
        "slurm-hosted",
        "the operator's own slurmrestd rolls; the operator waits for it to act on Slurm again",
    ),
    "Accounting": (
        "slurm-hosted",
        "the operator's record of the estate's slurmdbd changes; no slurmd pod restarts",
    ),
    "Service": ("observability", "the DCGM exporter's Service changes"),
    "ServiceMonitor": ("observability", "the DCGM exporter's scrape configuration changes"),
    "PrometheusRule": (
        "observability",
        "the estate's recording and alerting rules change; the Prometheus operator reloads them",
    ),
}
_COMPONENTS = (
    "kubernetes-components",
    "the NVIDIA components change: DaemonSets roll node by node",
)
# The pinned Kueue (0.19.2) freezes a ResourceFlavor's nodeLabels, tolerations and topologyName
# once topologyName is set, a Topology's levels and a LocalQueue's clusterQueue (CEL rules of
# its CRDs); the Pulumi program names each object's resource so.
_KUEUE_FROZEN = {
    "ResourceFlavor": ("nodeLabels", "tolerations", "topologyName"),
    "Topology": ("levels",),
    "LocalQueue": ("clusterQueue",),
}


def _refused_fields(
    kind: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None
) -> list[str]:
    """The fields of an object Kueue refuses to change in place that change from ``a`` to
    ``b`` (a ResourceFlavor's only once it names a topology); none for a new or dropped one."""
    frozen = _KUEUE_FROZEN.get(kind, ())
    if a is None or b is None or not frozen:
        return []
    spec_a, spec_b = a.get("spec") or {}, b.get("spec") or {}
    if kind == "ResourceFlavor" and "topologyName" not in spec_a:
        return []
    return [f for f in frozen if spec_a.get(f) != spec_b.get(f)]


def _object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
    return str(obj.get("kind")), name


def _objects(objs: Iterable[Obj]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Objects by kind and name, as plain data (what the manifest says of each)."""
    return {_object_key(o): o for o in _plain(list(objs))}


def _without_checksum(obj: Mapping[str, Any]) -> Any:
    """A DaemonSet without its config checksum, which changes with the ConfigMap it reads."""
    copy = _plain(obj)
    template = copy.get("spec", {}).get("template", {}).get("metadata", {})
    template.get("annotations", {}).pop("estategen.io/config-checksum", None)
    return copy


def _object_change(
    kind: str, name: str, a: Any, b: Any, mig_strategy_changed: bool
) -> tuple[str, str]:
    if kind == "ConfigMap":
        if name.endswith("/nvidia-mig-parted-config"):
            return (
                "mig-layout",
                "the MIG manager repartitions the pool's nodes: it pauses the GPU pods on each "
                "node (a drain) before changing the layout",
            )
        if name.endswith("/nvidia-device-plugin-configs"):
            if a and b and mig_strategy_changed:
                return (
                    "kubernetes-cluster-settings",
                    "the MIG strategy changes the resource names pods request: the device "
                    "plugin restarts and pods requesting the old names stay pending",
                )
            return (
                "gpu-sharing",
                "the device plugin's config for the pool changes: its pods roll and advertise "
                "the new devices; running pods keep theirs",
            )
        if "dcgm" in name:
            return ("observability", "the DCGM exporter's counters change; exporter pods roll")
    if kind == "DaemonSet" and "dcgm" in name:
        return ("observability", "the DCGM exporter DaemonSet changes; exporter pods roll")
    return _OBJECT_CHANGES.get(kind, _COMPONENTS)


def explains(kind: str) -> bool:
    """Whether a change to an object of ``kind`` has its own explanation, rather than the
    generic one of an installed component."""
    return kind in _OBJECT_CHANGES


def _object_changes(
    estate: Estate,
    path: str,
    cluster: str,
    before: list[Obj],
    after: list[Obj],
    mig_strategy_changed: bool,
) -> list[Change]:
    """Per object of a manifest (the objects each model builds): what changing, adding or
    removing it means."""
    up = Action("pulumi-up", cluster)
    old, new = _objects(before), _objects(after)
    labelling = node_label_actions(cluster, old, new)
    replaced = {
        name
        for (kind, name), a in old.items()
        if kind == "ResourceFlavor" and _refused_fields(kind, a, new.get((kind, name)))
    }
    # each ClusterQueue listing one of them, once without all of them (a queue applied once
    # per flavor would put the other back)
    taken_out: dict[str, list[Action]] = {}
    for (kind, _), queue in old.items():
        without = take_out(queue, replaced) if kind == "ClusterQueue" else None
        if without is not None:
            text = json.dumps(without, sort_keys=True, separators=(",", ":"))
            action = Action("kueue-take-out", f"{cluster}\t{text}")
            for group in (queue.get("spec") or {}).get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    taken_out.setdefault(flavor.get("name"), []).append(action)
    changes: list[Change] = []
    nodes: dict[str, list[str]] = {"added": [], "removed": []}
    for key in [*old, *(k for k in new if k not in old)]:
        a, b = old.get(key), new.get(key)
        kind, subject = key
        if a is not None and b is not None:
            if a == b or (kind == "DaemonSet" and _without_checksum(a) == _without_checksum(b)):
                continue
        elif kind == "Node":
            nodes["added" if a is None else "removed"].append(subject)
            continue
        change_kind, meaning = _object_change(kind, subject, a, b, mig_strategy_changed)
        frozen = _KUEUE_FROZEN.get(kind, ())
        spec_a, spec_b = (a or {}).get("spec") or {}, (b or {}).get("spec") or {}
        refused = _refused_fields(kind, a, b)
        if refused:
            assert b is not None
            fields = ", ".join(refused)
            urn = _kueue_urn(estate, cluster, kind, b)
            flavor = kind == "ResourceFlavor"
            changes.append(
                Change(
                    path,
                    "kubernetes-replace",
                    f"{kind} {subject}",
                    f"Kueue refuses to change {fields} of a {kind} in place"
                    + (" once it names a topology" if flavor else "")
                    + ", so it is deleted and created again"
                    + (
                        "; Kueue finishes that delete only when no ClusterQueue lists the "
                        "flavor (finalizer kueue.x-k8s.io/resource-in-use): take it out of "
                        "the ClusterQueues first (the kueue-take-out step: a server-side apply "
                        f"of each as field manager {FIELD_MANAGER}, which owns them); pulumi "
                        "up --refresh puts it back after the replacement; admission on it "
                        "stops meanwhile"
                        if flavor
                        else ""
                    ),
                    _short({f: spec_a.get(f) for f in frozen}),
                    _short({f: spec_b.get(f) for f in frozen}),
                    (
                        *taken_out.get(subject, ()),
                        Action("pulumi-replace", f"{cluster} {urn}"),
                        up,
                    ),
                )
            )
            continue
        before_part, after_part = _differing(a, b)
        changes.append(
            Change(
                path,
                change_kind,
                f"{kind} {subject}",
                meaning,
                "" if a is None else _short(before_part),
                "" if b is None else _short(after_part),
                (*labelling.get(subject, ()), up) if kind == "Node" else (up,),
            )
        )
    for way, hosts in nodes.items():
        if hosts:
            changes.append(
                Change(
                    path,
                    "kubernetes-nodes",
                    f"{len(hosts)} node(s) {way}",
                    "node label patches follow the host list; new hosts must join the cluster "
                    "first (build them with Ansible)",
                    "" if way == "added" else _short(hosts),
                    _short(hosts) if way == "added" else "",
                    (up,),
                )
            )
    return changes


def node_label_actions(
    cluster: str,
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, list[Action]]:
    """``kubectl label`` arguments for each running node whose labels change, by node name:
    ``key=value`` for each new or changed label, ``key-`` for each dropped one. Nodes of a pool
    that change alike are named by the pool's label when they are the whole pool, else by name.
    A node that is new has no step: kubelet registers it with its labels."""
    changed: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    members: dict[str, int] = {}
    for (kind, name), obj in after.items():
        if kind != "Node":
            continue
        now = (obj.get("metadata") or {}).get("labels") or {}
        pool = str(now.get(POOL_LABEL))
        members[pool] = members.get(pool, 0) + 1
        earlier = before.get((kind, name))
        if earlier is None:
            continue
        was = (earlier.get("metadata") or {}).get("labels") or {}
        arguments = tuple(
            [f"{k}={v}" for k, v in sorted(now.items()) if was.get(k) != v]
            + [f"{k}-" for k in sorted(was) if k not in now]
        )
        if arguments:
            changed.setdefault((pool, arguments), []).append(name)
    out: dict[str, list[Action]] = {}
    for (pool, arguments), names in changed.items():
        nodes = _pool_nodes(pool) if len(names) == members[pool] else " ".join(sorted(names))
        actions = [Action("label-nodes", f"{cluster}\t{nodes}\t{a}") for a in arguments]
        out.update(dict.fromkeys(names, actions))
    return out


def _kueue_urn(estate: Estate, cluster: str, kind: str, obj: Mapping[str, Any]) -> str:
    from estategen.kubernetes.objects import object_key

    project = next(
        (project_name(estate, c) for c in estate.kubernetes_clusters if c.name == cluster), ""
    )
    api = obj.get("apiVersion")
    return f"urn:pulumi:{estate.name}::{project}::kubernetes:{api}:{kind}::{object_key(dict(obj))}"


def _examples(path: str, status: str, cluster: str, team: str) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-examples",
            f"{cluster} examples for {team}",
            "example jobs showing the team's queue change; nothing applies them (the "
            "kustomization does not list examples/), so nothing changes on the cluster",
            actions=(Action("review", path),),
        )
    ]


def _kubernetes_other(path: str, status: str, cluster: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-manifest",
            f"{cluster}/{name}",
            "the kustomization or its notes change; nothing changes on the cluster by itself",
            actions=(Action("review", path),),
        )
    ]


def _pulumi_program(path: str, status: str, cluster: str, name: str) -> list[Change]:
    if name == "requirements.txt":
        meaning = (
            "the program's Python dependencies change: recreate the project's "
            "virtualenv (pulumi install) before pulumi up"
        )
        kind = "pulumi-dependencies"
    else:
        meaning = "the Pulumi program or its stack configuration changes: preview and apply"
        kind = "pulumi-program"
    return [
        Change(path, kind, f"{cluster}/{name}", meaning, actions=(Action("pulumi-up", cluster),))
    ]


def _stack_settings(path: str, status: str, cluster: str, stack: str) -> list[Change]:
    if status != "removed":
        return _pulumi_program(path, status, cluster, f"Pulumi.{stack}.yaml")
    return [
        Change(
            path,
            "pulumi-stack-settings",
            f"{cluster}/Pulumi.{stack}.yaml",
            "estategen no longer writes stack settings: the config moved to Pulumi.yaml's "
            "project config. A copy edited since it was rendered (Pulumi's encryptionsalt, your "
            "keys) is kept as yours, an untouched one is removed; keys kept there override "
            "Pulumi.yaml",
            actions=(Action("review", path),),
        )
    ]


def _prometheus(path: str, status: str, name: str) -> list[Change]:
    if name.startswith("targets/"):
        return [
            Change(
                path,
                "prometheus-targets",
                name,
                "Prometheus re-reads file_sd target files when they change: copy them to the "
                "Prometheus server, no reload needed",
                actions=(Action("review", "copy observability/prometheus/targets/ to Prometheus"),),
            )
        ]
    return [
        Change(
            path,
            "prometheus-config",
            name,
            "the scrape jobs or the estate's rules change: Prometheus needs a reload",
            actions=(Action("prometheus-reload"),),
        )
    ]


def _grafana(path: str, status: str, name: str) -> list[Change]:
    return [
        Change(
            path,
            "grafana-dashboard",
            name,
            "Grafana re-reads provisioned dashboards when their files change: copy them to "
            "the Grafana server, no restart needed",
            actions=(Action("review", "copy observability/grafana/dashboards/ to Grafana"),),
        )
    ]


def _estate_json(path: str, status: str, *_: str) -> list[Change]:
    return [
        Change(
            path,
            "review",
            "estate.json",
            "the resolved blueprint, for review and pipelines; nothing reads it at run time",
            actions=(Action("review", path),),
        )
    ]


Explainer = Callable[..., list[Change]]
# --- node health checks and cloud nodes ---


def _health_check_program(path: str, status: str, pool: str) -> list[Change]:
    if status == "removed":
        meaning = (
            f"pool {pool} no longer has a health check (or no longer exists); the program "
            "stays on its nodes until removed, and slurmd stops running it once slurm.conf "
            "drops HealthCheckProgram"
        )
    else:
        meaning = (
            f"the health-check program of pool {pool}: Ansible installs it on the pool's "
            "nodes as /etc/slurm/healthcheck.sh and slurmd runs the new one at its next check, "
            "without a restart; a node it drains keeps running its jobs"
        )
    return [
        Change(
            path,
            "slurm-health-check-program",
            f"pool {pool}",
            meaning,
            actions=_ansible_for(path) if status != "removed" else (),
        )
    ]


def _power_program(path: str, status: str, program: str) -> list[Change]:
    return [
        Change(
            path,
            "slurm-power-program",
            f"{program}.sh",
            f"the {'Resume' if program == 'resume' else 'Suspend'}Program of the cloud nodes: "
            "Ansible installs it on the controllers under /etc/slurm/power, and slurmctld runs "
            "the new one the next time it creates or deletes instances, without a restart",
            actions=_ansible_for(path) if status != "removed" else (),
        )
    ]


_EXPLAINERS: list[tuple[str, Explainer]] = [
    (r"slurm/healthcheck/([a-z0-9-]+)\.sh", _health_check_program),
    (r"slurm/power/(resume|suspend)\.sh", _power_program),
    (r"ansible/files/slurm/(.+)", _ansible_copy),
    (r"ansible/.+", _ansible_other),
    (r"kubernetes/([^/]+)/examples/([^/]+)\.yaml", _examples),
    (r"kubernetes/([^/]+)/(.+)", _kubernetes_other),
    (r"pulumi/([^/]+)/Pulumi\.([^/]+)\.yaml", _stack_settings),
    (r"pulumi/([^/]+)/([^/]+)", _pulumi_program),
    (r"observability/prometheus/(.+)", _prometheus),
    (r"observability/grafana/(.+)", _grafana),
    (r"estate\.json", _estate_json),
]


# --- text -------------------------------------------------------------------------------------


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
