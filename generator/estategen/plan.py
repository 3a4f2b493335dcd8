"""What rendering a blueprint would change in an output folder, and what each change means.

:func:`plan` compares the files a render would write (in memory) with the estategen output
already in a folder (the files its MANIFEST.json lists). Each changed file is parsed for what
it is - slurm.conf nodes, partitions and parameters; gres.conf; topology.conf; sacct.cfg and
qos.sacctmgr; Ansible variables and inventory; each Pulumi project's cluster.json - and every
change is explained as the operational steps it needs: ``scontrol reconfigure``, a slurmctld
restart, draining nodes, ``sacctmgr``, ``ansible-playbook --tags``, ``pulumi up``.

The rules follow slurm.conf(5): what a changed parameter needs is read from the table in
:mod:`estategen.slurm_keys`; node definition changes restart slurmctld and the slurmd daemons;
everything else takes ``scontrol reconfigure``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from estategen import hostlist
from estategen.errors import UsageError
from estategen.facts import pool_group
from estategen.kubernetes.nvidia import DEFAULT_CONFIG
from estategen.model import Estate
from estategen.readback import OutputFolder, check_content
from estategen.render import MANIFEST, Files
from estategen.renderers.pulumi import project_name
from estategen.slurm_keys import ChangePolicy, change_for, slurm_key

# issue 14 parts 4 and 5: parameters scontrol reconfigure applies, explained by what they do
HEALTH_CHECK_PARAMETERS = frozenset(
    {"HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState"}
)
POWER_SAVING_PARAMETERS = frozenset(
    {
        "ResumeProgram",
        "SuspendProgram",
        "ResumeFailProgram",
        "SuspendTime",
        "ResumeTimeout",
        "SuspendTimeout",
        "SuspendExcNodes",
        "TreeWidth",
        "PrivateData",
    }
)
NODE_HARDWARE = frozenset(
    {"Sockets", "CoresPerSocket", "ThreadsPerCore", "CPUs", "RealMemory", "Gres"}
)
UNSET = "(unset)"  # an attribute a line does not carry, in before/after
_MIG_TYPE = re.compile(r"gpu:[1-7]g\.[0-9]+gb")


@dataclass(frozen=True, order=True)
class Action:
    """One operational step with its target: hosts, an Ansible limit:tag, a cluster, a line."""

    id: str
    target: str = ""


@dataclass(frozen=True)
class Step:
    """Actions of one kind merged over every change, in the order they should run."""

    id: str
    order: int
    title: str
    commands: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    file: str
    kind: str
    subject: str
    meaning: str
    before: str = ""
    after: str = ""
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added, removed, modified, mode
    edited: bool  # the folder's copy differs from what MANIFEST.json recorded
    changes: tuple[Change, ...]


@dataclass
class Plan:
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
    "pulumi-new": (75, "create the stacks of new Kubernetes clusters"),
    "pulumi-replace": (78, "replace Kubernetes objects the API server will not update in place"),
    "pulumi-up": (80, "apply the Kubernetes changes"),
    "prometheus-reload": (85, "reload Prometheus"),
    "review": (95, "review only: no operational effect"),
}


def merge_steps(actions: Iterable[Action], estate: str) -> list[Step]:
    """Merge actions by id into ordered steps with concrete commands."""
    grouped: dict[str, set[str]] = {}
    for action in actions:
        grouped.setdefault(action.id, set()).add(action.target)
    if "restart-slurmctld" in grouped and "*" in grouped.get("restart-slurmd", set()):
        # slurmctld and every slurmd read their configuration when they start: the restarts
        # already do what scontrol reconfigure would
        grouped.pop("scontrol-reconfigure", None)
    out = []
    for action_id, targets in grouped.items():
        order, title = STEPS[action_id]
        out.append(Step(action_id, order, title, tuple(_commands(action_id, targets, estate))))
    return sorted(out, key=lambda s: s.order)


def _hosts(targets: Iterable[str]) -> str:
    """One Slurm hostlist of host names or hostlist expressions."""
    names = {name for t in targets if t for name in hostlist.expand(t, limit=10**6)}
    return hostlist.compress(sorted(names))


def _commands(action_id: str, targets: set[str], estate: str) -> list[str]:
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
        return [f"(cd pulumi/{c} && pulumi up --stack {estate})" for c in sorted(targets)]
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


def _restart(group: str, service: str) -> str:
    return (
        f"(cd ansible && ansible {group} -i inventory.yml -b -m ansible.builtin.systemd_service "
        f"-a 'name={service} state=restarted')"
    )


def _qos_line_order(line: str) -> tuple[int, str]:
    """`add` before `modify` before `delete`, so a new QoS exists before it is set or granted."""
    return ({"add": 0, "modify": 1, "delete": 2}.get(line.split(" ", 1)[0], 3), line)


# --- reading the folder -----------------------------------------------------------------------


def previous_output(target: Path) -> tuple[dict[str, bytes], dict[str, dict[str, str]]]:
    """(files, manifest entries) of earlier estategen output; empty for a new folder.

    Read through :class:`OutputFolder`: bounded, regular files only, never through a link or
    outside the folder, and refused (exit 2) beyond the limits a blueprint obeys.
    """
    if not target.exists():
        return {}, {}
    if not target.is_dir():
        raise UsageError(f"{target}: exists and is not a folder")
    with OutputFolder(target) as folder:
        manifest = folder.manifest()
        if manifest is None:
            if any(target.iterdir()):
                raise UsageError(
                    f"{target}: not estategen output (no {MANIFEST}); nothing to compare with"
                )
            return {}, {}
        files = {}
        for path in manifest.files:
            read = folder.read(path)
            if read is not None:
                check_content(path, read.content, target / path)
                files[path] = read.content
    return files, manifest.files


def plan(estate: Estate, files: Files, target: Path) -> Plan:
    """Compare a render (``files``, without MANIFEST.json) with the output in ``target``."""
    old_files, entries = previous_output(target)
    result = Plan(str(target), estate.name, initial=not entries)
    new = {p: f for p, f in files.items() if p != MANIFEST}
    projects = {
        _project(p): "added" if p not in entries else "removed"
        for p in set(new) ^ set(entries)
        if p.startswith("pulumi/") and p.endswith("/cluster.json")
    }
    for path in sorted(set(new) | set(entries)):
        old = old_files.get(path)
        entry = entries.get(path, {})
        edited = old is not None and entry.get("sha256") != hashlib.sha256(old).hexdigest()
        if path not in new:
            status = "removed"
        elif path not in entries or old is None:
            status = "added"
        elif old != new[path].content:
            status = "modified"
        elif entry.get("mode") != f"{new[path].mode:04o}":
            status = "mode"
        else:
            continue
        after = new[path].content if path in new else None
        if result.initial:
            changes: tuple[Change, ...] = (_first(path),)
        elif _project(path) in projects and not path.endswith("/cluster.json"):
            changes = (_project_file(path, projects[_project(path)]),)
        else:
            changes = tuple(explain(estate, path, status, old, after))
        result.files.append(FileChange(path, status, edited, changes))
    return result


def _project(path: str) -> str:
    """The Pulumi project (cluster) a path belongs to, or ''."""
    parts = path.split("/")
    if parts[0] == "pulumi" and len(parts) == 3:
        return parts[1]
    return parts[1] if parts[0] == "kubernetes" and len(parts) >= 3 else ""


def _project_file(path: str, status: str) -> Change:
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
        action = Action("review", "first deployment: see README (Accounting, in this order)")
    return Change(
        path, "new-output", path, "no earlier output to compare with: new", actions=(action,)
    )


# --- explaining changes ------------------------------------------------------------------------


def explain(
    estate: Estate, path: str, status: str, old: bytes | None, new: bytes | None
) -> list[Change]:
    """The changes in one file; every changed file yields at least one."""
    import yaml

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
    before = (old or b"").decode("utf-8", "replace")
    after = (new or b"").decode("utf-8", "replace")
    for pattern, explainer in _EXPLAINERS:
        match = re.fullmatch(pattern, path)
        if match:
            try:
                changes = explainer(estate, path, status, before, after, *match.groups())
            except (*_UNREADABLE, yaml.YAMLError) as err:
                # a copy edited by hand into something we cannot read: still a change, to
                # review by its diff
                return [
                    Change(
                        path,
                        "other",
                        path,
                        f"could not read this file as estategen writes it ({err}); review the diff",
                        actions=(Action("review", path),),
                    )
                ]
            if changes:
                return changes
            if _comments_only(before, after):
                return [
                    Change(
                        path,
                        "comments-only",
                        path,
                        "only comments differ; no daemon needs to act",
                        actions=(Action("review", path),),
                    )
                ]
            break
    return [
        Change(
            path,
            "other",
            path,
            f"{status}; no rule explains this file, review the diff",
            actions=(Action("review", path),),
        )
    ]


# what parsing a file edited by hand may raise (hostlist errors are ValueErrors)
_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, IndexError)


def _comments_only(before: str, after: str) -> bool:
    def strip(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]

    return strip(before) == strip(after)


def _pairs(line: str) -> dict[str, str]:
    out = {}
    for token in line.split():
        key, _, value = token.partition("=")
        out[key] = value
    return out


@dataclass
class SlurmConf:
    params: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> attributes
    pools: dict[str, list[str]] = field(default_factory=dict)  # pool comment -> hosts
    partitions: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_slurm_conf(text: str) -> SlurmConf:
    conf = SlurmConf()
    pool = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# pool "):
            pool = line[len("# pool ") :]
            continue
        if not line or line.startswith("#"):
            continue
        pairs = _pairs(line)
        if line.startswith("NodeName="):
            attrs = {k: v for k, v in pairs.items() if k not in ("NodeName", "State")}
            hosts = hostlist.expand(pairs["NodeName"], limit=10**6)
            for host in hosts:
                conf.nodes[host] = attrs
            conf.pools.setdefault(pool or pairs["NodeName"], []).extend(hosts)
        elif line.startswith("PartitionName="):
            conf.partitions[pairs.pop("PartitionName")] = pairs
        else:
            key, _, value = line.partition("=")
            conf.params[key] = f"{conf.params[key]},{value}" if key in conf.params else value
    return conf


def _slurm_conf(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    old, new = parse_slurm_conf(before), parse_slurm_conf(after)
    changes: list[Change] = []
    deliver = _ansible_for(path)
    for key in sorted(set(old.params) | set(new.params)):
        was, now = old.params.get(key, ""), new.params.get(key, "")
        if was == now:
            continue
        policy, entry = change_for(key), slurm_key(key)
        source = "slurm.conf(5)" if entry is None else entry.source
        if key == "ClusterName" and was:
            changes.append(
                Change(
                    path,
                    "slurm-cluster-renamed",
                    key,
                    "slurmctld refuses to start when ClusterName differs from the one in its "
                    "StateSaveLocation, and slurmdbd records a new cluster: this is a new cluster, "
                    "not an update (running and queued jobs are lost)",
                    was,
                    now,
                    (
                        *deliver,
                        Action("restart-slurmctld"),
                        Action("restart-slurmd", "*"),
                        Action("sacctmgr-load"),
                    ),
                )
            )
        elif policy is ChangePolicy.RESTART_ALL:
            changes.append(
                Change(
                    path,
                    "slurm-restart-all",
                    key,
                    f"changing {key} needs slurmctld and every slurmd restarted ({source})",
                    was,
                    now,
                    (*deliver, Action("restart-slurmctld"), Action("restart-slurmd", "*")),
                )
            )
        elif policy is ChangePolicy.RESTART_SLURMCTLD:
            changes.append(
                Change(
                    path,
                    "slurm-restart-slurmctld",
                    key,
                    f"changing {key} needs a slurmctld restart ({source})",
                    was,
                    now,
                    (*deliver, Action("restart-slurmctld")),
                )
            )
        elif key in HEALTH_CHECK_PARAMETERS:
            changes.append(
                Change(
                    path,
                    "slurm-health-check",
                    key,
                    f"{key} takes effect with scontrol reconfigure: slurmd runs the health "
                    "check with it from then on; nodes an earlier check drained stay drained "
                    "until resumed",
                    was,
                    now,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        elif key in POWER_SAVING_PARAMETERS:
            changes.append(
                Change(
                    path,
                    "slurm-power-saving",
                    key,
                    f"{key} takes effect with scontrol reconfigure: slurmctld creates and "
                    "deletes cloud nodes with it from then on; instances already running keep "
                    "running",
                    was,
                    now,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        else:
            changes.append(
                Change(
                    path,
                    "slurm-reconfigure",
                    key,
                    f"{key} takes effect with scontrol reconfigure; running jobs are not affected",
                    was,
                    now,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
    changes += _node_changes(estate, path, old, new, deliver)
    for name in sorted(set(old.partitions) | set(new.partitions), key=_partition_order(new, old)):
        was_p, now_p = old.partitions.get(name), new.partitions.get(name)
        if was_p == now_p:
            continue
        if was_p is None:
            changes.append(
                Change(
                    path,
                    "slurm-partition-added",
                    f"PartitionName={name}",
                    "a new partition appears with scontrol reconfigure",
                    "",
                    _attrs(now_p or {}),
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        elif now_p is None:
            changes.append(
                Change(
                    path,
                    "slurm-partition-removed",
                    f"PartitionName={name}",
                    "slurm.conf(5): jobs in a deleted partition are cancelled at reconfigure; "
                    f"drain it first (scontrol update PartitionName={name} State=DRAIN) and let "
                    "its jobs finish",
                    _attrs(was_p),
                    "",
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        else:
            keys = sorted(k for k in set(was_p) | set(now_p) if was_p.get(k) != now_p.get(k))
            changes.append(
                Change(
                    path,
                    "slurm-partition-changed",
                    f"PartitionName={name} {', '.join(keys)}",
                    "partition settings take effect with scontrol reconfigure; running jobs keep "
                    "the limits they started with",
                    _attrs({k: was_p.get(k, UNSET) for k in keys}),
                    _attrs({k: now_p.get(k, UNSET) for k in keys}),
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
    return changes


def _partition_order(*confs: SlurmConf) -> Callable[[str], tuple[int, str]]:
    names = [n for conf in confs for n in conf.partitions]
    return lambda name: (names.index(name), name)


def _attrs(values: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def _node_changes(
    estate: Estate, path: str, old: SlurmConf, new: SlurmConf, deliver: tuple[Action, ...]
) -> list[Change]:
    changes = []
    added = [h for h in new.nodes if h not in old.nodes]
    removed = [h for h in old.nodes if h not in new.nodes]
    cloud = {h for p in estate.node_pools if p.cloud_nodes for h in p.hosts}
    added_cloud = [h for h in added if h in cloud]
    added = [h for h in added if h not in cloud]
    if added_cloud:
        # issue 14 part 5: nothing to build; slurmctld creates them when jobs need them
        changes.append(
            Change(
                path,
                "slurm-cloud-nodes-added",
                f"NodeName {_hosts(added_cloud)}",
                "State=CLOUD nodes: slurm.conf(5) adding nodes needs slurmctld and every slurmd "
                "restarted; they start powered down and slurmctld creates their instances "
                "(ResumeProgram) when a job needs them, from the pool's image",
                "",
                f"{len(added_cloud)} cloud node(s)",
                (*deliver, Action("restart-slurmctld"), Action("restart-slurmd", "*")),
            )
        )
    if added:
        pools = sorted({pool for pool, hosts in new.pools.items() if set(hosts) & set(added)})
        groups = {pool_group(p.name): p.hosts for p in estate.node_pools if not p.managed}
        changes.append(
            Change(
                path,
                "slurm-nodes-added",
                f"NodeName {_hosts(added)}",
                "slurm.conf(5): adding nodes needs slurmctld and every slurmd restarted (all "
                "slurmd must know every node); build the new hosts first, their slurmd starts "
                "with the playbook",
                "",
                f"{len(added)} node(s) in pool(s) {', '.join(pools)}",
                (
                    *deliver,
                    *build_limits(added, groups),
                    Action("restart-slurmctld"),
                    Action("restart-slurmd", "*"),
                ),
            )
        )
    if removed:
        changes.append(
            Change(
                path,
                "slurm-nodes-removed",
                f"NodeName {_hosts(removed)}",
                "drain the nodes and wait for their jobs before applying: removing nodes needs "
                "slurmctld and every slurmd restarted, and jobs still on them are lost",
                f"{len(removed)} node(s)",
                "",
                (
                    Action("drain-nodes", _hosts(removed)),
                    *deliver,
                    Action("restart-slurmctld"),
                    Action("restart-slurmd", "*"),
                ),
            )
        )
    diffs: dict[tuple[tuple[str, str, str], ...], list[str]] = {}
    for host, attrs in new.nodes.items():
        if host in old.nodes and old.nodes[host] != attrs:
            was = old.nodes[host]
            key = tuple(
                (k, was.get(k, UNSET), attrs.get(k, UNSET))
                for k in sorted(set(was) | set(attrs))
                if was.get(k) != attrs.get(k)
            )
            diffs.setdefault(key, []).append(host)
    for diff, hosts in diffs.items():
        keys = [k for k, _, _ in diff]
        subject = f"NodeName={_hosts(hosts)} {', '.join(keys)}"
        before = " ".join(f"{k}={a}" for k, a, _ in diff)
        after = " ".join(f"{k}={b}" for k, _, b in diff)
        if any(_MIG_TYPE.search(f"{a} {b}") for k, a, b in diff if k == "Gres"):
            changes.append(_mig_change(estate, path, subject, before, after, hosts, deliver))
        elif NODE_HARDWARE.intersection(keys):
            changes.append(
                Change(
                    path,
                    "slurm-node-hardware",
                    subject,
                    "slurm.conf(5): changing a node's processors, memory or GRES needs slurmctld "
                    "and the nodes' slurmd restarted; nodes whose hardware does not match are "
                    "drained by slurmctld",
                    before,
                    after,
                    (
                        *deliver,
                        Action("restart-slurmctld"),
                        *(Action("restart-slurmd", h) for h in hosts),
                    ),
                )
            )
        else:
            changes.append(
                Change(
                    path,
                    "slurm-node-scheduling",
                    subject,
                    "features and weights take effect with scontrol reconfigure",
                    before,
                    after,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
    return changes


def _mig_change(
    estate: Estate,
    path: str,
    subject: str,
    before: str,
    after: str,
    hosts: list[str],
    deliver: tuple[Action, ...],
) -> Change:
    pools = {p.name for p in estate.slurm_pools if set(p.hosts) & set(hosts)}
    return Change(
        path,
        "mig-layout",
        subject,
        "a new MIG layout destroys the GPU instances jobs run in: drain the pool's nodes, "
        "wait for their jobs, repartition (role nvidia_gpu), restart slurmctld and their "
        "slurmd for the new GRES, then resume them",
        before,
        after,
        (
            Action("drain-nodes", _hosts(hosts)),
            *deliver,
            *(Action("ansible-playbook", f"{pool_group(p)}:nvidia_gpu") for p in sorted(pools)),
            Action("restart-slurmctld"),
            *(Action("restart-slurmd", h) for h in hosts),
            Action("resume-nodes", _hosts(hosts)),
        ),
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


def _gres_conf(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    def parse(text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("NodeName="):
                name, _, rest = line.partition(" ")
                for host in hostlist.expand(name[len("NodeName=") :], limit=10**6):
                    out.setdefault(host, []).append(rest)
        return out

    old, new = parse(before), parse(after)
    changed = [h for h in set(old) | set(new) if old.get(h) != new.get(h)]
    both = sorted(h for h in changed if h in old and h in new)
    changes = []
    if both:
        text = " ".join(old[both[0]]) + " " + " ".join(new[both[0]])
        subject = f"NodeName={_hosts(both)}"
        if _MIG_TYPE.search(text.replace("Type=", "gpu:")):
            changes.append(
                _mig_change(
                    estate,
                    path,
                    subject,
                    "; ".join(old[both[0]]),
                    "; ".join(new[both[0]]),
                    both,
                    _ansible_for(path),
                )
            )
        else:
            changes.append(
                Change(
                    path,
                    "slurm-gres",
                    subject,
                    "slurmd reads gres.conf when it starts: restart the nodes' slurmd (and "
                    "slurmctld, which checks their GRES)",
                    "; ".join(old[both[0]]),
                    "; ".join(new[both[0]]),
                    (
                        *_ansible_for(path),
                        Action("restart-slurmctld"),
                        *(Action("restart-slurmd", h) for h in both),
                    ),
                )
            )
    only = sorted(h for h in changed if h not in both)
    if only:
        changes.append(
            Change(
                path,
                "slurm-gres",
                f"NodeName={_hosts(only)}",
                "GRES lines of nodes that join or leave; their slurmd restarts with the node "
                "change",
                actions=_ansible_for(path),
            )
        )
    return changes


def _topology_conf(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    def parse(text: str) -> dict[str, str]:
        out = {}
        for line in text.splitlines():
            if line.startswith(("SwitchName=", "BlockName=", "BlockSizes=")):
                head, _, rest = line.partition(" ")
                out[head] = rest
        return out

    old, new = parse(before), parse(after)
    changes = []
    for name in sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)):
        was = f"{name} {old[name]}".strip() if name in old else ""
        now = f"{name} {new[name]}".strip() if name in new else ""
        what = "added" if not was else "removed" if not now else "changed"
        changes.append(
            Change(
                path,
                "slurm-topology",
                f"{name} {what}",
                "slurmctld rebuilds the network topology on scontrol reconfigure; running jobs "
                "keep their placement",
                was,
                now,
                (*_ansible_for(path), Action("scontrol-reconfigure")),
            )
        )
    return changes


def _cgroup_conf(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    if _comments_only(before, after):
        return []
    return [
        Change(
            path,
            "slurm-cgroup",
            path,
            "slurmd reads cgroup.conf when it starts: restart slurmd on every node",
            actions=(*_ansible_for(path), Action("restart-slurmd", "*")),
        )
    ]


def _slurmdbd_conf(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    if _comments_only(before, after):
        return []
    return [
        Change(
            path,
            "slurmdbd-config",
            path,
            "slurmdbd reads its configuration when it starts: restart it (jobs keep running; "
            "slurmctld queues accounting records meanwhile)",
            actions=(*_ansible_for(path), Action("restart-slurmdbd")),
        )
    ]


def parse_sacct_cfg(text: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """(kind, name, parent) -> attributes, from a `sacctmgr load` file."""
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    parent = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, _, rest = line.partition(":")
        kind, _, name = head.partition(" - ")
        name = name.strip().strip("'")
        if kind == "Parent":
            parent = name
            continue
        attrs = dict(part.split("=", 1) for part in rest.split(":") if "=" in part)
        out[(kind, name, parent)] = {k: v.strip("'") for k, v in attrs.items()}
    return out


def _sacct_cfg(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    old, new = parse_sacct_cfg(before), parse_sacct_cfg(after)
    changes = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0] != "Account", k)):
        kind, name, parent = key
        if old.get(key) == new.get(key):
            continue
        subject = f"{kind} {name}" + (f" under {parent}" if parent else "")
        if key not in new:
            line = (
                f"delete user name={name} account={parent}"
                if kind == "User"
                else f"delete account name={name}"
                if kind == "Account"
                else f"delete cluster {name}"
            )
            changes.append(
                Change(
                    path,
                    "slurm-accounts-removed",
                    subject,
                    "sacctmgr load adds and updates but never deletes: remove it explicitly "
                    "(after its jobs end; slurmdbd refuses to delete associations with running "
                    "jobs)",
                    _attrs(old[key]),
                    "",
                    (Action("sacctmgr-delete", line),),
                )
            )
        else:
            was = old.get(key, {})
            changes.append(
                Change(
                    path,
                    "slurm-accounts",
                    subject,
                    "accounts, users and Fairshare change in slurmdbd with sacctmgr load; "
                    "slurmctld picks them up at once",
                    _attrs(was),
                    _attrs(new[key]),
                    (*_ansible_for(path), Action("sacctmgr-load")),
                )
            )
    return changes


def parse_qos(text: str) -> dict[str, str]:
    """QoS name (or `account` for the grant line) -> its sacctmgr line."""
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("add qos "):
            out[f"add:{line.split()[2]}"] = line
        elif line.startswith("modify qos where name="):
            out[f"modify:{line.split()[3].split('=', 1)[1]}"] = line
        elif line.startswith("modify account "):
            out["grant"] = line
    return out


def _qos_sacctmgr(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    old, new = parse_qos(before), parse_qos(after)
    changes = []
    names = sorted({k.split(":", 1)[1] for k in set(old) | set(new) if ":" in k})
    for name in names:
        was = old.get(f"modify:{name}") or old.get(f"add:{name}")
        now = new.get(f"modify:{name}") or new.get(f"add:{name}")
        if was == now:
            continue
        if now is None:
            changes.append(
                Change(
                    path,
                    "slurm-qos-removed",
                    f"QoS {name}",
                    "sacctmgr never deletes a QoS on its own: delete it once no partition, "
                    "account or job uses it",
                    was or "",
                    "",
                    (Action("sacctmgr-delete", f"delete qos name={name}"),),
                )
            )
            continue
        lines = [
            new[k] for k in (f"add:{name}", f"modify:{name}") if k in new and new[k] != old.get(k)
        ]
        changes.append(
            Change(
                path,
                "slurm-qos",
                f"QoS {name}",
                "QoS live in slurmdbd and change at once with sacctmgr; running jobs keep the "
                "QoS limits they started with",
                was or "",
                now,
                (*_ansible_for(path), *(Action("sacctmgr-qos", ln) for ln in lines)),
            )
        )
    if old.get("grant") != new.get("grant") and "grant" in new:
        changes.append(
            Change(
                path,
                "slurm-qos",
                "QoS granted to the estate's accounts",
                "which QoS the accounts may use changes at once with sacctmgr",
                old.get("grant", ""),
                new["grant"],
                (*_ansible_for(path), Action("sacctmgr-qos", new["grant"])),
            )
        )
    return changes


# --- reservations (issue 14 part 1) ---


def parse_reservations(text: str) -> dict[str, dict[str, str]]:
    """reservations.scontrol: each ``create reservation`` line's Key=value pairs, by name."""
    out = {}
    for line in text.splitlines():
        if line.startswith("create reservation "):
            pairs = _pairs(line[len("create reservation ") :])
            out[pairs.pop("ReservationName")] = pairs
    return out


def _reservations_scontrol(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    """Reservations live in slurmctld's state: the slurm_controller role's task creates,
    updates and deletes them with scontrol; nothing restarts."""
    old, new = parse_reservations(before), parse_reservations(after)
    apply = _ansible_for(path)
    changes = []
    for name in sorted(set(old) | set(new)):
        was, now = old.get(name), new.get(name)
        if was == now:
            continue
        if was is None:
            meaning = (
                "the role creates it (scontrol create reservation); jobs of its teams and users "
                f"run in it with --reservation={name}"
            )
            if "MAINT" in (now or {}).get("Flags", "").split(","):
                meaning += "; other jobs do not start on its nodes while it lasts"
            changes.append(
                Change(path, "slurm-reservation-added", name, meaning, "", _attrs(now or {}), apply)
            )
        elif now is None:
            changes.append(
                Change(
                    path,
                    "slurm-reservation-removed",
                    name,
                    "the role deletes it (scontrol delete reservation): its nodes return to every "
                    "job; jobs submitted with --reservation to it can no longer start",
                    _attrs(was),
                    "",
                    apply,
                )
            )
        else:
            keys = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
            recreate = {"Flags", "PartitionName"} & set(keys)
            meaning = (
                "the role deletes and creates it again (scontrol cannot change "
                f"{', '.join(sorted(recreate))} in place)"
                if recreate
                else "the role updates it in place (scontrol update reservation)"
            )
            changes.append(
                Change(
                    path,
                    "slurm-reservation-changed",
                    f"{name} {', '.join(keys)}",
                    meaning,
                    _attrs({k: was.get(k, UNSET) for k in keys}),
                    _attrs({k: now.get(k, UNSET) for k in keys}),
                    apply,
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
        # issue 14 part 4: a pool's program goes to that pool's nodes
        return (Action("ansible-playbook", f"{pool_group(program[2])}:slurm_compute"),)
    if program:
        # issue 14 part 5: the power programs run on the controllers
        return (Action("ansible-playbook", "all:slurm_controller"),)
    name = path.rsplit("/", 1)[-1]
    return tuple(Action("ansible-playbook", f"all:{role}") for role in _FILE_ROLES.get(name, ()))


def _ansible_copy(
    estate: Estate, path: str, status: str, before: str, after: str, name: str
) -> list[Change]:
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


# estate.yml (or vars/<topic>.yml) variable -> (change kind, roles whose tasks, templates or
# defaults read it; none: nothing on the machines changes). tests/test_plan.py holds these
# against the roles' sources.
_ESTATE_VARS: dict[str, tuple[str, tuple[str, ...]]] = {
    "estate_name": (
        "ansible-vars",
        ("common", "node_exporter", "dcgm_exporter", "slurm_exporter", "slurm_controller"),
    ),
    "estate_users": ("identity", ("common",)),
    "estate_teams": ("identity", ("common",)),
    "estate_directory": ("identity", ("common",)),
    "estate_storage": ("storage", ("storage_client",)),
    "estate_labels": ("observability", ("node_exporter",)),
    "estate_node_exporter_port": ("observability", ("node_exporter",)),
    "estate_dcgm_exporter_port": ("observability", ("dcgm_exporter",)),
    "estate_slurm_exporter_port": ("observability", ("slurm_exporter",)),
    "estate_slurm_exporter_host": ("observability", ("slurm_exporter",)),
    "slurm_cluster_name": ("unread-variable", ()),
    "slurm_version": ("slurm-upgrade", ("slurmdbd", "slurm_controller", "slurm_compute")),
    "slurm_config_files": ("slurm-accounting-config", ("slurm_controller", "slurm_compute")),
    "slurm_accounting": ("slurm-accounting-config", ("slurm_controller",)),
    "slurm_accounting_port": ("slurm-accounting-config", ("slurmdbd",)),
    "slurm_database_host": ("slurm-accounting-config", ("slurmdbd",)),
    "slurm_database_name": ("slurm-accounting-config", ("slurmdbd",)),
    "slurm_database_user": ("slurm-accounting-config", ("slurmdbd",)),
    "slurm_database_password_secret": ("slurm-accounting-config", ("slurmdbd",)),
    "slurm_controller_folders": ("slurm-accounting-config", ("slurm_controller",)),
    "slurm_compute_folders": ("slurm-accounting-config", ("slurm_compute",)),
    "slurm_slurmd_user": ("slurm-accounting-config", ("slurm_compute",)),
    # issue 13: the site's power programs the controller role checks before slurmctld starts
    "slurm_site_power_programs": ("slurm-accounting-config", ("slurm_controller",)),
    "slurm_mpi_default": ("slurm-mpi", ("slurm_compute",)),
    # slurm_packages, a dependency of every Slurm role, checks for the JWT plugin
    "slurm_rest_api": (
        "slurm-rest-api",
        ("slurm_controller", "slurm_compute", "slurmdbd", "slurmrestd"),
    ),
}
# pool group variable -> (change kind, roles that read it), as for _ESTATE_VARS
_POOL_VARS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pool_name": (
        "ansible-vars",
        ("node_exporter", "nvidia_gpu", "k8s_gpu_node", "slurm_compute"),
    ),
    "pool_scheduler": ("ansible-vars", ("node_exporter", "nvidia_gpu", "dcgm_exporter")),
    "pool_kubernetes_cluster": ("kubernetes-node-labels", ("k8s_gpu_node",)),
    "pool_storage": ("storage", ("storage_client",)),
    "pool_node_labels": ("kubernetes-node-labels", ("k8s_gpu_node",)),
    "pool_node_host_labels": ("kubernetes-node-labels", ("k8s_gpu_node",)),
    "pool_node_taints": ("kubernetes-node-labels", ("k8s_gpu_node",)),
    "pool_cloud_image": ("ansible-vars", ("slurm_compute",)),
}
# pool_gpu fields the nvidia_gpu role reads (MIG has its own rule); the others (model, count,
# time_slicing, mps) reach the machines through slurm.conf, gres.conf or cluster.json
_GPU_ROLE_FIELDS = frozenset({"fabric"})
_KIND_MEANING = {
    "identity": "users, groups and the directory client change on every host with the "
    "common role; running jobs and pods keep their credentials",
    "storage": "mounts change with the storage_client role; a file system in use cannot be "
    "unmounted, so drain its users first when one goes away",
    "observability": "the exporters restart with the new port or labels; Prometheus needs "
    "the new targets (observability/prometheus/)",
    "slurm-accounting-config": "Slurm service settings the roles template; the roles restart "
    "the daemons whose files change",
    "slurm-upgrade": "the Slurm roles install the new release and check it before laying "
    "down its files; upgrade in Slurm's order (slurmdbd, then slurmctld, then slurmd) and at "
    "most two releases at a time, with StateSaveLocation and the database backed up first",
    "gpu-config": "the GPU stack of the pool's hosts changes with the nvidia_gpu role",
    "kubernetes-node-labels": "kubelet registers the pool's hosts with the new labels and "
    "taints (role k8s_gpu_node); Pulumi's NodePatch applies them to running nodes",
    "pool-added": "a new pool: build its hosts with the whole playbook",
    "unread-variable": "recorded in the Ansible variables for reference; no role reads it, so "
    "nothing changes on the machines (the files that carry it explain their own change)",
    "pool-removed": "the pool's hosts leave the estate; Ansible no longer manages them",
    "slurm-mpi": "the compute role installs the PMIx library when the default is pmix; "
    "MpiDefault itself changes in slurm.conf",
    "slurm-rest-api": "slurmrestd's host, port, user or JWT key change with the slurmrestd "
    "and slurm_controller roles, which restart the daemons whose settings change",
}


def _yaml(text: str) -> Any:
    """yaml.safe_load with libyaml's parser where PyYAML has it (the pure-Python one is ~20
    times slower on a large file read back)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if text else None


def _estate_vars(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    old, new = _yaml(before) or {}, _yaml(after) or {}
    changes = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        kind, roles = _ESTATE_VARS.get(key, ("ansible-vars", ("",)))
        meaning = _KIND_MEANING.get(kind, "a variable every role may read: run the playbook")
        changes.append(
            Change(
                path,
                kind,
                key,
                meaning,
                _short(old.get(key)),
                _short(new.get(key)),
                tuple(Action("ansible-playbook", f"all:{role}") for role in roles)
                or (Action("review", path),),
            )
        )
    return changes


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if value is not None else ""
    return text if len(text) <= 200 else text[:199] + "…"


def _pool_vars(
    estate: Estate, path: str, status: str, before: str, after: str, group: str
) -> list[Change]:
    old, new = _yaml(before) or {}, _yaml(after) or {}
    if status == "added" and new.get("pool_cloud_image"):
        # issue 14 part 5: a Slurm cloud pool has no hosts to build, only its image
        return [
            Change(
                path,
                "cloud-image-added",
                group,
                "a Slurm cloud pool: build the image its instances boot on a VM added to "
                f"{group} from a second inventory (ansible-playbook -i inventory.yml -i "
                f"image.yml site.yml --limit {group}), then pin that image in the pool's "
                "cloud.image",
                actions=(Action("review", f"build the image of {group}"),),
            )
        ]
    if status == "added":
        return [
            Change(
                path,
                "pool-added",
                group,
                _KIND_MEANING["pool-added"],
                actions=(Action("ansible-build", f"{group}:"),),
            )
        ]
    if status == "removed":
        return [
            Change(
                path,
                "pool-removed",
                group,
                _KIND_MEANING["pool-removed"],
                actions=(Action("review", path),),
            )
        ]
    changes = []
    pool_name = new.get("pool_name", "")
    pool = estate.pools_by_name.get(pool_name)
    for key in sorted(set(old) | set(new)):
        was, now = old.get(key), new.get(key)
        if was == now:
            continue
        if key == "pool_gpu" and ((was or {}).get("mig") or []) != ((now or {}).get("mig") or []):
            hosts = list(pool.hosts) if pool else []
            if pool and pool.scheduler == "slurm":
                changes.append(
                    Change(
                        path,
                        "mig-layout",
                        f"{group} MIG layout",
                        "the nvidia_gpu role repartitions the pool's GPUs, which destroys the GPU "
                        "instances jobs run in: drain the pool's nodes first",
                        _short((was or {}).get("mig")),
                        _short((now or {}).get("mig")),
                        (
                            Action("drain-nodes", _hosts(hosts)),
                            Action("ansible-playbook", f"{group}:nvidia_gpu"),
                            Action("resume-nodes", _hosts(hosts)),
                        ),
                    )
                )
            else:
                changes.append(
                    Change(
                        path,
                        "mig-layout",
                        f"{group} MIG layout",
                        "the MIG layout the nvidia_gpu role lays down for the MIG manager; the "
                        "cluster's MIG manager repartitions the nodes (see cluster.json)",
                        _short((was or {}).get("mig")),
                        _short((now or {}).get("mig")),
                        (Action("ansible-playbook", f"{group}:nvidia_gpu"),),
                    )
                )
            continue
        kind, roles = _POOL_VARS.get(key, ("ansible-vars", ("",)))
        if key == "pool_gpu":
            kind, roles = _gpu_vars(was, now, new.get("pool_scheduler"))
        if key == "pool_features":
            changes.append(
                Change(
                    path,
                    "review",
                    key,
                    "features are Slurm node features: see slurm.conf",
                    _short(was),
                    _short(now),
                    (Action("review", path),),
                )
            )
            continue
        changes.append(
            Change(
                path,
                kind,
                f"{group} {key}",
                _KIND_MEANING.get(kind, "a pool variable the roles read: run the playbook on it"),
                _short(was),
                _short(now),
                tuple(Action("ansible-playbook", f"{group}:{role}") for role in roles)
                or (Action("review", path),),
            )
        )
    return changes


def _gpu_vars(was: Any, now: Any, scheduler: Any) -> tuple[str, tuple[str, ...]]:
    """(kind, roles) of a pool_gpu change other than its MIG layout."""
    if not isinstance(was, dict) or not isinstance(now, dict):
        # the pool gains or loses GPUs: the driver stack, and the DCGM exporter that site.yml
        # runs on Slurm GPU pools (Kubernetes runs it as a DaemonSet)
        exporter = ("dcgm_exporter",) if scheduler == "slurm" else ()
        return "gpu-config", ("nvidia_gpu", *exporter)
    fields = {k for k in set(was) | set(now) if was.get(k) != now.get(k)}
    if fields & _GPU_ROLE_FIELDS:
        return "gpu-config", ("nvidia_gpu",)
    return "unread-variable", ()


def parse_inventory(text: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(group -> its own hosts, group -> its child groups) of an inventory.yml."""
    hosts: dict[str, set[str]] = {}
    children: dict[str, set[str]] = {}
    for name, body in ((_yaml(text) or {}).get("all", {}).get("children") or {}).items():
        hosts[name] = {
            host
            for pattern in (body or {}).get("hosts") or {}
            for host in hostlist.expand(re.sub(r"\[(\w+):(\w+)\]", r"[\1-\2]", pattern))
        }
        children[name] = set((body or {}).get("children") or {})
    return hosts, children


def _members(group: str, hosts: dict[str, set[str]], children: dict[str, set[str]]) -> set[str]:
    """Every host of a group, through its child groups."""
    out, todo, seen = set(), [group], set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            out |= hosts.get(name, set())
            todo.extend(children.get(name, ()))
    return out


def _inventory(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
    old_hosts, old_children = parse_inventory(before)
    new_hosts, new_children = parse_inventory(after)
    changes = []
    for name in sorted(set(old_hosts) | set(new_hosts)):
        old = old_hosts.get(name, set()) | old_children.get(name, set())
        new = new_hosts.get(name, set()) | new_children.get(name, set())
        added = sorted(new - old)
        removed = sorted(old - new)
        if not (added or removed):
            continue
        joining = _members(name, new_hosts, new_children) - _members(name, old_hosts, old_children)
        actions = (
            build_limits(joining, {g: h for g, h in new_hosts.items() if h})
            if joining
            else (Action("review", path),)
        )
        leaving = _members(name, old_hosts, old_children) - _members(name, new_hosts, new_children)
        changes.append(
            Change(
                path,
                "inventory",
                f"group {name}",
                "hosts join the group: the playbook builds them (and only them) for its roles"
                if joining
                else "hosts leave the group; Ansible stops managing that role on them (it does "
                "not undo what it installed)"
                if leaving
                # issue 14 part 5: a cloud pool's group, whose only host is its image's build VM
                else "groups without hosts join or leave (a cloud pool's image group); no host "
                "changes",
                _names(removed),
                _names(added),
                actions,
            )
        )
    return changes


def _names(names: list[str]) -> str:
    """Host names as one hostlist where they are host names; group names as they are."""
    try:
        return _short(hostlist.compress(names)).strip('"') if names else ""
    except hostlist.HostlistError:
        return _short(", ".join(names)).strip('"')


def _ansible_other(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
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


def _cluster_json(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str
) -> list[Change]:
    """The Pulumi project's data: its releases and managed node pools (the objects it applies
    are the manifests, explained per object)."""
    if status == "added":
        return [
            Change(
                path,
                "kubernetes-cluster-added",
                cluster,
                "a new Pulumi project: create its stack and apply it",
                actions=(Action("pulumi-new", cluster),),
            )
        ]
    if status == "removed":
        return [
            Change(
                path,
                "kubernetes-cluster-removed",
                cluster,
                "the cluster left the blueprint: destroy its stack from the current "
                "output before rendering, or its resources stay unmanaged",
                actions=(Action("pulumi-destroy", cluster),),
            )
        ]
    old, new = json.loads(before or "{}"), json.loads(after or "{}")
    up = Action("pulumi-up", cluster)
    changes = []
    was = {p["name"]: p for p in old.get("node_pools") or []}
    now = {p["name"]: p for p in new.get("node_pools") or []}
    for name in sorted(set(was) | set(now)):
        if was.get(name) != now.get(name):
            provider = str((now.get(name) or was.get(name) or {}).get("provider"))
            changes.append(
                Change(
                    path,
                    "kubernetes-pool",
                    f"pool {name}",
                    _POOL_MEANINGS.get(provider, _POOL_MEANINGS["gke"]),
                    _short(_differing(was.get(name), now.get(name))[0]),
                    _short(_differing(was.get(name), now.get(name))[1]),
                    (up,),
                )
            )
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


def _release_secrets_note(old: Any, new: Any) -> str:
    """Secrets a chart reads (issue 15: Mountpoint for S3's credentials) come from the stack's
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


# What a change of a managed pool's arguments does, per provider (issue 15 added aks and the
# EKS autoscaler's tags).
_POOL_MEANINGS = {
    "gke": "the cloud node pool changes with pulumi up (a new machine type or GPU count "
    "replaces its nodes; autoscaling bounds change in place)",
    "eks": "the EKS node group changes with pulumi up (a new instance type replaces its nodes; "
    "autoscaling bounds change in place, and the tags the Cluster Autoscaler reads follow "
    "the group's labels, taints and devices)",
    "aks": "the AKS agent pool changes with pulumi up (AKS fixes VM size, taints and GPU "
    "instance profile at creation, so a change of them replaces the pool and its nodes; "
    "autoscaling bounds and labels change in place)",
}
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
        "node labels are patched live (server-side apply); pods already running stay",
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
    # --- Volcano (issue 15) ---
    "Queue": (
        "volcano-quota",
        "Volcano queues update live: weight, deserved, capability and guarantee apply to the "
        "next scheduling cycle; running pods stay, and what a queue holds above its new "
        "deserved may be reclaimed",
    ),
    # --- Slurm hosted in Kubernetes, Slinky (issue 15) ---
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


def _object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
    return str(obj.get("kind")), name


def _objects(text: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return {_object_key(o): o for o in yaml.load_all(text or "", Loader=loader) if o}


def _without_checksum(obj: Mapping[str, Any]) -> Any:
    """A DaemonSet without its config checksum, which changes with the ConfigMap it reads."""
    copy = json.loads(json.dumps(obj))
    template = copy.get("spec", {}).get("template", {}).get("metadata", {})
    template.get("annotations", {}).pop("estategen.io/config-checksum", None)
    return copy


def _object_change(kind: str, name: str, a: Any, b: Any) -> tuple[str, str]:
    if kind == "ConfigMap":
        if name.endswith("/nvidia-mig-parted-config"):
            return (
                "mig-layout",
                "the MIG manager repartitions the pool's nodes: it pauses the GPU pods on each "
                "node (a drain) before changing the layout",
            )
        if name.endswith("/nvidia-device-plugin-configs"):
            if a and b and _cluster_mig_strategy(a) != _cluster_mig_strategy(b):
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


def _cluster_mig_strategy(configmap: Mapping[str, Any]) -> Any:
    """The cluster's MIG strategy, as the device plugin's default config carries it (a pool's
    config carries `none` without MIG, so pools coming and going do not change it)."""
    body = _yaml((configmap.get("data") or {}).get(DEFAULT_CONFIG, "")) or {}
    return (body.get("flags") or {}).get("migStrategy")


def _manifest(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, name: str
) -> list[Change]:
    """Per object of a manifest: what changing, adding or removing it means."""
    up = Action("pulumi-up", cluster)
    old, new = _objects(before), _objects(after)
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
        change_kind, meaning = _object_change(kind, subject, a, b)
        frozen = _KUEUE_FROZEN.get(kind, ())
        spec_a, spec_b = (a or {}).get("spec") or {}, (b or {}).get("spec") or {}
        if (
            a is not None
            and b is not None
            and frozen
            and (kind != "ResourceFlavor" or "topologyName" in spec_a)
            and any(spec_a.get(f) != spec_b.get(f) for f in frozen)
        ):
            fields = ", ".join(f for f in frozen if spec_a.get(f) != spec_b.get(f))
            urn = _kueue_urn(estate, cluster, kind, b)
            changes.append(
                Change(
                    path,
                    "kubernetes-replace",
                    f"{kind} {subject}",
                    f"Kueue refuses to change {fields} of a {kind} in place"
                    + (" once it names a topology" if kind == "ResourceFlavor" else "")
                    + ", so it is deleted and created again"
                    + (
                        "; Kueue finishes that delete only when no ClusterQueue lists the "
                        "flavor (finalizer kueue.x-k8s.io/resource-in-use): take it out of "
                        "the ClusterQueues first; admission on it stops meanwhile"
                        if kind == "ResourceFlavor"
                        else ""
                    ),
                    _short({f: spec_a.get(f) for f in frozen}),
                    _short({f: spec_b.get(f) for f in frozen}),
                    (Action("pulumi-replace", f"{cluster} {urn}"), up),
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
                (up,),
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
    if not changes:
        changes.append(
            Change(path, "kubernetes-manifest", name, "manifest layout only", actions=(up,))
        )
    return changes


def _kueue_urn(estate: Estate, cluster: str, kind: str, obj: Mapping[str, Any]) -> str:
    from estategen.kubernetes.objects import object_key

    project = next(
        (project_name(estate, c) for c in estate.kubernetes_clusters if c.name == cluster), ""
    )
    api = obj.get("apiVersion")
    return f"urn:pulumi:{estate.name}::{project}::kubernetes:{api}:{kind}::{object_key(dict(obj))}"


def _helm_values(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, name: str
) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-components",
            f"Helm release {name}",
            "the release's values change: it upgrades with pulumi up (or helm upgrade)",
            _short(_differing(_yaml(before), _yaml(after))[0]) if before else "",
            _short(_differing(_yaml(before), _yaml(after))[1]) if after else "",
            (Action("pulumi-up", cluster),),
        )
    ]


def _examples(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, team: str
) -> list[Change]:
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


def _kubernetes_other(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, name: str
) -> list[Change]:
    return [
        Change(
            path,
            "kubernetes-manifest",
            f"{cluster}/{name}",
            "the kustomization or its notes change; nothing changes on the cluster by itself",
            actions=(Action("review", path),),
        )
    ]


def _pulumi_program(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, name: str
) -> list[Change]:
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


def _stack_settings(
    estate: Estate, path: str, status: str, before: str, after: str, cluster: str, stack: str
) -> list[Change]:
    if status != "removed":
        return _pulumi_program(estate, path, status, before, after, cluster, f"Pulumi.{stack}.yaml")
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


def _prometheus(
    estate: Estate, path: str, status: str, before: str, after: str, name: str
) -> list[Change]:
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


def _grafana(
    estate: Estate, path: str, status: str, before: str, after: str, name: str
) -> list[Change]:
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


def _estate_json(
    estate: Estate, path: str, status: str, before: str, after: str, *_: str
) -> list[Change]:
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
# --- node health checks and cloud nodes (issue 14 parts 4 and 5) ---


def _health_check_program(
    estate: Estate, path: str, status: str, before: str, after: str, pool: str
) -> list[Change]:
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


def _power_program(
    estate: Estate, path: str, status: str, before: str, after: str, program: str
) -> list[Change]:
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
    (r"slurm/slurm\.conf", _slurm_conf),
    (r"slurm/healthcheck/([a-z0-9-]+)\.sh", _health_check_program),
    (r"slurm/power/(resume|suspend)\.sh", _power_program),
    (r"slurm/gres\.conf", _gres_conf),
    (r"slurm/topology\.conf", _topology_conf),
    (r"slurm/cgroup\.conf", _cgroup_conf),
    (r"slurm/slurmdbd\.conf", _slurmdbd_conf),
    (r"slurm/sacct\.cfg", _sacct_cfg),
    (r"slurm/qos\.sacctmgr", _qos_sacctmgr),
    (r"slurm/reservations\.scontrol", _reservations_scontrol),
    (r"ansible/files/slurm/(.+)", _ansible_copy),
    (r"ansible/group_vars/all/estate\.yml", _estate_vars),
    # lists that grow with the estate, loaded by the play whose role reads them
    (r"ansible/vars/[a-z0-9_]+\.yml", _estate_vars),
    (r"ansible/group_vars/(pool_[a-z0-9_]+)\.yml", _pool_vars),
    (r"ansible/inventory\.yml", _inventory),
    (r"ansible/.+", _ansible_other),
    (r"pulumi/([^/]+)/cluster\.json", _cluster_json),
    (r"kubernetes/([^/]+)/helm/([^/]+)\.values\.yaml", _helm_values),
    (r"kubernetes/([^/]+)/examples/([^/]+)\.yaml", _examples),
    (r"kubernetes/([^/]+)/((?!kustomization)[^/]+\.yaml)", _manifest),
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
