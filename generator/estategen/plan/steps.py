"""The plan's vocabulary and its steps: an :class:`Action` (one operational step with
its target), a :class:`Change` (one change of a file, with what it means and the actions it
needs), a :class:`FileChange` and the :class:`Plan`; :data:`STEPS` in runbook order, the kinds
of disruption a pipeline can hold a change for (:data:`DISRUPTIONS`), and
:func:`merge_steps`, which merges the actions of every change into ordered steps with
concrete commands.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from estategen import hostlist
from estategen.kubernetes.objects import FIELD_MANAGER
from estategen.kubernetes_facts import POOL_LABEL


@dataclass(frozen=True, slots=True, order=True)
class Action:
    """One operational step with its target: hosts, an Ansible limit:tag, a cluster, a line."""

    id: str
    target: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """Actions of one kind merged over every change, in the order they should run."""

    id: str
    order: int
    title: str
    commands: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Change:
    file: str
    kind: str
    subject: str
    meaning: str
    before: str = ""
    after: str = ""
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    status: str  # added, removed, modified, mode
    edited: bool  # the folder's copy differs from what MANIFEST.json recorded
    changes: tuple[Change, ...]


@dataclass(slots=True)
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
    # Pulumi deletes what its program stops making: a cluster a GitOps engine takes over
    "pulumi-hand-over": (
        79,
        "take the Kubernetes resources a GitOps engine takes over out of "
        "the Pulumi state, deleting nothing",
    ),
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


def one_hostlist(targets: Iterable[str]) -> str:
    """One Slurm hostlist of host names or hostlist expressions."""
    names = {name for t in targets if t for name in hostlist.expand(t, limit=10**6)}
    return hostlist.compress(sorted(names))


def _commands(
    action_id: str, targets: set[str], estate: str, refresh: Collection[str] = ()
) -> list[str]:
    if action_id == "drain-nodes":
        return [
            f'scontrol update NodeName={one_hostlist(targets)} State=DRAIN Reason="estategen plan"',
            "# wait until squeue -w <those nodes> shows no running jobs",
        ]
    if action_id == "resume-nodes":
        return [f"scontrol update NodeName={one_hostlist(targets)} State=RESUME"]
    if action_id == "restart-slurmd":
        if "*" in targets:
            return [_restart("slurm_compute", "slurmd")]
        return [f"pdsh -w {one_hostlist(targets)} systemctl restart slurmd"]
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
    if action_id == "pulumi-hand-over":
        return [
            command
            for c in sorted(targets)
            for command in (
                f"(cd pulumi/{c} && pulumi stack export --stack {estate} --file state.json)",
                f'jq \'.deployment.resources |= map(select(.type | startswith("kubernetes:") '
                f"| not))' pulumi/{c}/state.json > pulumi/{c}/handed-over.json",
                f"(cd pulumi/{c} && pulumi stack import --stack {estate} --file handed-over.json)",
            )
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


def pool_nodes(pool: str) -> str:
    return f"-l {POOL_LABEL}={pool}"


def _restart(group: str, service: str) -> str:
    return (
        f"(cd ansible && ansible {group} -i inventory.yml -b -m ansible.builtin.systemd_service "
        f"-a 'name={service} state=restarted')"
    )


def _qos_line_order(line: str) -> tuple[int, str]:
    """`add` before `modify` before `delete`, so a new QoS exists before it is set or granted."""
    return ({"add": 0, "modify": 1, "delete": 2}.get(line.split(" ", 1)[0], 3), line)
