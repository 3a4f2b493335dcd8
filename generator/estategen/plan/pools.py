"""What a changed node pool needs: hosts added or removed, a new MIG layout, cloud nodes,
a pool added or removed, its hardware, scheduling, topology, labels and taints (the
``kubectl taint`` steps of a Kubernetes pool's running nodes, :func:`taint_actions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from estategen import hostlist
from estategen.estatediff import Delta
from estategen.facts import pool_group
from estategen.kubernetes_facts import kubelet_taint
from estategen.model import Taint
from estategen.plan.models import (
    MEANINGS,
    ROLES,
    Models,
    by_prefix,
    delta_change,
    elastic,
    managed,
    policy_actions,
    pool_hosts,
)
from estategen.plan.steps import Action, Change, one_hostlist, pool_nodes
from estategen.plan.values import short


def pool_changes(models: Models, name: str, deltas: list[Delta]) -> list[Change]:
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
                hosts = pool_hosts(was)
                changes.append(
                    delta_change(
                        "ansible/inventory.yml",
                        "pool-moved",
                        delta,
                        (
                            *(
                                (Action("drain-nodes", one_hostlist(hosts)),)
                                if hosts and slurm
                                else ()
                            ),
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
            roles = by_prefix(ROLES, key, ())
            if field == "max_pods":
                # on-prem nodes' kubelet; a managed pool's change is its Pulumi data's
                kind = "kubelet-max-pods"
            elif "ansible-playbook" in policies or field.startswith(("network", "labels")):
                kind = "kubernetes-node-labels"
            elif field in ("gpus", "gpus.model") and not managed(pool):
                kind = "gpu-config"
            else:
                continue  # the cluster's objects say what it means (kubernetes/<cluster>/)
            if managed(pool) or not roles:
                continue
            # kubelet registers new hosts with the new taints; the running nodes need them set
            taints = (
                taint_actions(str(now.get("cluster")), name, _taints(was), _taints(now))
                if field.startswith("taints")
                else []
            )
            changes.append(
                delta_change(
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
                delta_change(
                    "slurm/topology.conf",
                    "slurm-topology" if same_plugin else "slurm-topology-plugin",
                    delta,
                    (*models.deliver("slurm/topology.conf"), Action("scontrol-reconfigure"))
                    if same_plugin
                    else policy_actions(models, policies, "slurm/topology.conf"),
                )
            )
        elif "restart-slurm-daemons" in policies or "drain-and-rebuild" in policies:
            # a node's own hardware restarts its slurmd; what every slurmd reads (GresTypes
            # for shards, the GRES type) restarts them all, as the policy says; scontrol
            # reconfigure makes the other daemons read the nodes' new definition
            hosts = pool_hosts(now) if field.startswith(_NODE_HARDWARE) else ["*"]
            gpu = field in ("gpus", "gpus.model")
            changes.append(
                delta_change(
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
                delta_change(
                    "slurm/slurm.conf",
                    "slurm-node-scheduling",
                    delta,
                    (*deliver, Action("scontrol-reconfigure")),
                )
            )
        elif "ansible-playbook" in policies:
            kind = "slurm-health-check-program" if field.startswith("health") else "cloud-image"
            changes.append(
                delta_change(
                    f"ansible/group_vars/{group}.yml",
                    kind,
                    delta,
                    (
                        Action("ansible-playbook", f"{group}:{role}")
                        for role in by_prefix(ROLES, key, ())
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


def _mig_layout(models: Models, pool: Mapping[str, Any], delta: Delta) -> Change:
    group = pool_group(pool["name"])
    hosts = pool_hosts(pool)
    if pool.get("scheduler") != "slurm":
        return delta_change(
            f"ansible/group_vars/{group}.yml",
            "mig-layout",
            delta,
            (Action("ansible-playbook", f"{group}:nvidia_gpu"),),
            "the MIG layout the nvidia_gpu role lays down for the MIG manager; the cluster's "
            "MIG manager repartitions the nodes (see kubernetes/)",
        )
    return delta_change(
        "slurm/gres.conf",
        "mig-layout",
        delta,
        (
            Action("drain-nodes", one_hostlist(hosts)),
            *models.deliver("slurm/slurm.conf"),
            *models.deliver("slurm/gres.conf"),
            Action("ansible-playbook", f"{group}:nvidia_gpu"),
            Action("restart-slurmctld"),
            *(Action("restart-slurmd", h) for h in hosts),
            Action("scontrol-reconfigure"),
            Action("resume-nodes", one_hostlist(hosts)),
        ),
        "a new MIG layout destroys the GPU instances jobs run in: drain the pool's nodes, "
        "wait for their jobs, repartition (role nvidia_gpu), restart slurmctld and their "
        "slurmd for the new GRES, then resume them",
    )


def _hosts_changed(models: Models, pool: Mapping[str, Any], delta: Delta) -> list[Change]:
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
        if elastic(pool):
            changes.append(_cloud_nodes(models, added))
        else:
            changes.append(
                Change(
                    "slurm/slurm.conf" if slurm else "ansible/inventory.yml",
                    "slurm-nodes-added" if slurm else "kubernetes-hosts-added",
                    f"NodeName {one_hostlist(added)}"
                    if slurm
                    else f"{group} {one_hostlist(added)}",
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
                f"NodeName {one_hostlist(removed)}"
                if slurm
                else f"{group} {one_hostlist(removed)}",
                "drain the nodes and wait for their jobs before applying: removing nodes needs "
                "slurmctld and every slurmd restarted, and jobs still on them are lost"
                if slurm
                else "the hosts leave the pool; Ansible stops managing them (it does not undo "
                "what it installed); drain them in Kubernetes first",
                f"{len(removed)} node(s)",
                "",
                (Action("drain-nodes", one_hostlist(removed)), *deliver, *restart)
                if slurm and not elastic(pool)
                else (*deliver, *restart)
                if slurm
                else (Action("review", f"kubectl drain {one_hostlist(removed)}"),),
            )
        )
    return changes


def _cloud_nodes(models: Models, added: list[str]) -> Change:
    # elastic cloud nodes: nothing to build; slurmctld creates them when jobs need them
    return Change(
        "slurm/slurm.conf",
        "slurm-cloud-nodes-added",
        f"NodeName {one_hostlist(added)}",
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


def _pool_added_or_removed(models: Models, pool: Mapping[str, Any], added: bool) -> list[Change]:
    name = pool["name"]
    group = pool_group(name)
    hosts = pool_hosts(pool)
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
    if added and elastic(pool):
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
    elif added and not managed(pool):
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
                        (Action("drain-nodes", one_hostlist(hosts)),)
                        if hosts and not elastic(pool)
                        else ()
                    ),
                    *restart,
                ),
            )
        )
    elif not added and not managed(pool):
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
                    Action("review", f"kubectl drain {one_hostlist(hosts)}")
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
                MEANINGS["slurm-topology"],
                "" if added else short(where),
                short(where) if added else "",
                (*models.deliver("slurm/topology.conf"), Action("scontrol-reconfigure")),
            )
        )
    return changes


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
    return [Action("taint-nodes", f"{cluster}\t{pool_nodes(pool)}\t{a}") for a in arguments]


def _taints(pool: Mapping[str, Any]) -> list[Taint]:
    return [Taint(**t) for t in pool.get("taints") or []]
