"""What changed in the blueprint, key by key (:func:`model_changes`), and what each change
needs outside the node pools (:mod:`~estategen.plan.pools`): Slurm's settings, options,
partitions, reservations and QoS, the cluster's name, identity and the accounts sacctmgr
loads, storage, GPU models, the Slurm release and the exporters. A ``slurm.options`` key
follows :mod:`estategen.slurm_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estategen.estatediff import Delta, diff, own_policies
from estategen.facts import pool_group
from estategen.model import Estate
from estategen.plan.models import (
    MEANINGS,
    ROLES,
    Models,
    by_prefix,
    delta_change,
    key_name,
    managed,
    policy_actions,
    pool_hosts,
    review_change,
)
from estategen.plan.pools import pool_changes
from estategen.plan.steps import Action, Change
from estategen.plan.values import shown
from estategen.slurm_keys import ChangePolicy, change_for, slurm_key

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


def model_changes(old: Mapping[str, Any], new: Mapping[str, Any], estate: Estate) -> list[Change]:
    """What changed between two recorded models (``new`` is ``estate``'s), each change with
    the steps it needs."""
    models = Models(old, new, estate)
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
            changes += pool_changes(models, name, deltas)
        elif section == "slurm.partitions":
            changes += _partition_changes(models, name, deltas)
        elif section == "slurm.reservations":
            changes += _reservation_changes(models, name, deltas)
        else:
            changes += _qos_changes(models, deltas)
    return changes


def _key_change(models: Models, delta: Delta) -> list[Change]:
    """A change of one key outside the lists planned item by item."""
    key, policies = delta.key, delta.policies
    if key.startswith("gpu_models"):
        return _definition_change(models, delta)
    if key == "identity.teams[].pod_security":
        # only the team's namespaces change: explained per cluster, object by object
        # (estategen.plan.kubernetes), as tenancy.pod_security is
        return []
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
        return [review_change(delta)]
    return []


def _roles_change(models: Models, delta: Delta, kind: str, limit: str) -> Change:
    roles = by_prefix(ROLES, delta.key, ())
    return delta_change(
        "ansible/group_vars/all/estate.yml",
        kind,
        delta,
        (Action("ansible-playbook", f"{limit}:{role}") for role in roles),
    )


def _slurm_change(models: Models, delta: Delta) -> list[Change]:
    key, policies = delta.key, delta.policies
    file = by_prefix(_SLURM_FILES, key, "slurm/slurm.conf")
    kind = by_prefix(
        _SLURM_SECTIONS, key, next((_SLURM_KINDS[p] for p in policies if p in _SLURM_KINDS), "")
    )
    actions = policy_actions(models, policies, "slurm/slurm.conf")
    if "restart-slurmdbd" in policies:
        actions += [*models.deliver("slurm/slurmdbd.conf"), Action("restart-slurmdbd")]
    if key == "slurm.rest_api.jwt_key" and models.accounting:
        # slurmdbd reads the JWT key too (AuthAltTypes in slurmdbd.conf)
        actions += [*models.deliver("slurm/slurmdbd.conf"), Action("restart-slurmdbd")]
    if "ansible-playbook" in policies:
        actions += [Action("ansible-playbook", f"all:{role}") for role in by_prefix(ROLES, key, ())]
    if "ansible-build" in policies:
        actions += _new_hosts(delta)
    if not kind:
        return [review_change(delta)] if "review" in own_policies(key) else []
    return [delta_change(file, kind, delta, actions)]


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


def _option_change(models: Models, delta: Delta) -> Change:
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
    return delta_change("slurm/slurm.conf", kind, delta, actions, f"{name} {meaning} ({source})")


def _cluster_renamed(models: Models, delta: Delta) -> Change:
    parent = models.new.get("name", "")
    grant = slurm_renderer_grant(models.new)
    return delta_change(
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


def _identity_changes(models: Models, delta: Delta) -> list[Change]:
    changes = [
        delta_change(
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
            delta_change(
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
                delta_change(
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
            changes.append(
                delta_change("slurm/sacct.cfg", "slurm-accounts", delta, load, _ACCOUNTS)
            )
    elif field in ("fairshare",) or field.startswith("["):
        changes.append(delta_change("slurm/sacct.cfg", "slurm-accounts", delta, load, _ACCOUNTS))
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


def _storage_change(models: Models, delta: Delta) -> Change:
    """A file system's client side: the storage_client role on the pools that mount it."""
    if "ansible-playbook" not in delta.policies and not delta.path[-1].startswith("["):
        return delta_change("estate.json", "storage", delta, (), "only the Kubernetes side changes")
    name = delta.item()
    pools = set()
    for side in (models.old, models.new):
        for fs in side.get("storage") or []:
            if fs.get("name") == name:
                pools |= set(fs.get("pools") or [])
    limits = sorted(pool_group(p) for p in pools) or ["all"]
    return delta_change(
        "ansible/group_vars/all/estate.yml",
        "storage",
        delta,
        (Action("ansible-playbook", f"{limit}:storage_client") for limit in limits),
    )


def _definition_change(models: Models, delta: Delta) -> list[Change]:
    """A GPU model's definition is a change of each pool that uses it, by what the field
    reaches: the fabric the GPU stack (role nvidia_gpu), the MIG profiles the GRES of MIG
    pools (a restart), memory the billing and node weights (scontrol reconfigure); where
    clouds sell it only the managed pools (their cluster's objects say so)."""
    name = delta.path[1]
    field = delta.path[2] if len(delta.path) > 2 else ""
    changes = []
    for pool in models.pools(models.new).values():
        gpus = pool.get("gpus") or {}
        if gpus.get("model") != name or managed(pool):
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
                *(Action("restart-slurmd", h) for h in pool_hosts(pool)),
                Action("scontrol-reconfigure"),
            ]
        elif field in ("memory_gb", "name", "vendor") and slurm:
            kind = "slurm-node-scheduling"
            actions = [*models.deliver("slurm/slurm.conf"), Action("scontrol-reconfigure")]
        else:
            continue
        changes.append(
            delta_change(
                f"ansible/group_vars/{group}.yml" if kind == "gpu-config" else "slurm/slurm.conf",
                kind,
                delta,
                actions,
                f"GPU model {name} is pool {pool['name']}'s: " + MEANINGS.get(kind, ""),
            )
        )
    return changes


def _partition_changes(models: Models, name: str, deltas: list[Delta]) -> list[Change]:
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
            " ".join(f"{k}={shown(d.before)}" for k, d in zip(keys, deltas, strict=True)),
            " ".join(f"{k}={shown(d.after)}" for k, d in zip(keys, deltas, strict=True)),
            tuple(policy_actions(models, policies, "slurm/slurm.conf")) or actions,
        )
    ]


def _attrs(value: Any) -> str:
    """A named item's settings, without its name and empty ones."""
    if not isinstance(value, Mapping):
        return shown(value)
    flat = {**value, **(value.get("overrides") or {})}
    return " ".join(
        f"{k}={shown(v)}"
        for k, v in flat.items()
        if k not in ("name", "overrides") and v not in (None, [], {}, "")
    )


def _reservation_changes(models: Models, name: str, deltas: list[Delta]) -> list[Change]:
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
            " ".join(f"{k}={shown(d.before)}" for k, d in zip(keys, deltas, strict=True)),
            " ".join(f"{k}={shown(d.after)}" for k, d in zip(keys, deltas, strict=True)),
            apply,
        )
    ]


def _qos_changes(models: Models, deltas: list[Delta]) -> list[Change]:
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
                "" if first.added else " ".join(f"{key_name(d)}={shown(d.before)}" for d in mine),
                " ".join(f"{key_name(d)}={shown(d.after)}" for d in mine)
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
