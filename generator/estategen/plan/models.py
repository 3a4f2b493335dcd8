"""The two models a plan compares, and how a changed key is told.

Every change of the estate is found by comparing the model the last render recorded
(estate.json) with the new one, key by key (:mod:`estategen.estatediff`). Each changed key's
change policy comes from the schema; the hosts, groups, daemons and objects it concerns come
from the model (a pool's hosts and group, the Slurm files a key reaches). The rendered Slurm
and Ansible files are never read to decide a step.

This module holds what the key changes of :mod:`~estategen.plan.keys` and
:mod:`~estategen.plan.pools` share: both models (:class:`Models`), the roles that apply a
section and what each kind of change means, the Slurm steps of a key's change policies, and
a change of one key as a :class:`~estategen.plan.steps.Change`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from estategen import hostlist
from estategen.estatediff import Delta, named
from estategen.facts import topology_plugin
from estategen.model import Estate
from estategen.plan.files import ansible_for
from estategen.plan.steps import Action, Change
from estategen.plan.values import shown

# roles that apply a blueprint key with the `ansible-playbook` policy, by its section (the
# longest prefix wins); tests/test_plan.py holds each tagged step against the roles' sources
ROLES: dict[str, tuple[str, ...]] = {
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
    "node_pools[].max_pods": ("k8s_gpu_node",),
    "node_pools[].gpus": ("nvidia_gpu",),
}
MEANINGS = {
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
    "kubelet-max-pods": "kubelet restarts with the new --max-pods (role k8s_gpu_node) and "
    "admits pods up to it from then on; pods already running stay, even above a lower limit, "
    "until they end or are evicted",
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


def by_prefix(table: Mapping[str, Any], key: str, default: Any) -> Any:
    """The entry of ``table`` for the longest prefix of blueprint ``key``."""
    for name in sorted(table, key=len, reverse=True):
        if key == name or key.startswith((name + ".", name + "[")):
            return table[name]
    return default


def pool_hosts(pool: Mapping[str, Any] | None) -> list[str]:
    hosts = (pool or {}).get("hosts") or ""
    return hostlist.expand(hosts, limit=10**6) if hosts else []


def elastic(pool: Mapping[str, Any]) -> bool:
    """State=CLOUD nodes: a provider's (estategen's power programs) or the site's own."""
    return pool.get("scheduler") == "slurm" and (
        pool.get("provider") != "on-prem" or bool(pool.get("site_cloud"))
    )


def managed(pool: Mapping[str, Any]) -> bool:
    return pool.get("provider") != "on-prem"


@dataclass(slots=True)
class Models:
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
        return ansible_for(path) if self.slurm else ()


def policy_actions(models: Models, policies: Iterable[str], file: str) -> list[Action]:
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


def key_name(delta: Delta) -> str:
    """The changed key as the blueprint names it, items by name: slurm.qos[high].priority."""
    return named(delta.path)


def delta_change(
    file: str, kind: str, delta: Delta, actions: Iterable[Action], meaning: str = ""
) -> Change:
    return Change(
        file,
        kind,
        key_name(delta),
        meaning or MEANINGS.get(kind, MEANINGS["review"]),
        shown(delta.before),
        shown(delta.after),
        tuple(actions) or (Action("review", delta.key),),
    )


def review_change(delta: Delta) -> Change:
    return delta_change(
        "estate.json",
        "review",
        delta,
        (Action("review", key_name(delta)),),
        f"{delta.key} renames or retargets many outputs at once: read the whole plan before "
        "applying",
    )
