"""Semantic checks over the model: each a small function yielding findings.

Checks see only the frozen model. They never stop at the first problem: the pipeline runs all
of them and fails on any error-level finding.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TypeVar

from estategen import hostlist
from estategen.capacity import WARNING_KINDS, warnings_of
from estategen.catalog import (
    MIG_COMPUTE_SLICES,
    MIG_MEMORY_SLICES,
    CloudOffer,
    builtin_models,
)
from estategen.errors import Finding, did_you_mean, issue, quote
from estategen.facts import (
    AKS_POOL_NAME,
    RESERVATION_PERIODS,
    SLURM_APT_KEYRING,
    HeldNodes,
    aks_gpu_instance_profile,
    aks_mig_profiles,
    autodetects_nvml,
    gres_type,
    host_pools,
    hosted_backing_pools,
    hosted_gpu_backing,
    hosted_gpus,
    hosted_node_names,
    kubelet_may_set,
    partition_pools,
    pool_mounts,
    quota_capacity,
    reservation_end,
    reservation_nodes,
    reservation_start,
    shared_nodes,
    slurmctld_port_text,
    slurmctld_ports,
    slurmd_port,
    storage_classes,
)
from estategen.kubernetes import autoscaler, slinky
from estategen.kubernetes import storage as k8s_storage
from estategen.kubernetes.objects import ClusterView
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.model import (
    DAEMON_FOLDERS,
    DEBIAN_SLURM_BUILDS,
    Estate,
    NodePool,
    Reservation,
    SlurmPackages,
    Storage,
    Team,
    shares_state_and_spool,
    slurm_build,
    slurm_minutes,
)
from estategen.prometheus_rules import slurm_exporter_host
from estategen.record import replace
from estategen.reserved import (
    MARIADB_ACCOUNTS,
    POOL_NAMES,
    PROMETHEUS_LABELS,
    SLURM_ACCOUNTS,
    SLURM_NODES,
    SLURM_PARTITIONS,
    SYSTEM_GROUPS,
    SYSTEM_USERS,
    namespace_reason,
)
from estategen.schema import PROGRAM_TREES, SLURM_VERSIONS, STORAGE_SOURCES
from estategen.slurm_facts import (
    SLURM_USER,
    accounting_tres,
    def_mem_per_cpu,
    parent_account,
    renders_power_saving,
    required_tres,
)
from estategen.slurm_keys import (
    MULTIFACTOR_OPTIONS,
    RECORD_KEYS,
    REFUSED_IN_OPTIONS,
    Owner,
    password_refusal,
    slurm_key,
)
from estategen.slurm_removed import removed_key
from estategen.suppression import refusal

Check = Callable[[Estate], Iterable[Finding]]
CHECKS: list[Check] = []
_DIGITS = re.compile(r"([0-9]+)")

# slurm.conf keys estategen renders only for cloud nodes: refused in `slurm.options` when the
# estate has them
CLOUD_SLURM_OPTIONS = frozenset({"PrivateData", "SlurmctldParameters", "TreeWidth"})
# rendered for Slurm pools hosted in Kubernetes, passed through otherwise
HOSTED_SLURM_OPTIONS = frozenset({"MaxNodeCount", "SlurmctldParameters"})

T = TypeVar("T")


def check(function: Check) -> Check:
    """Register a check; the registry order is the order findings are produced in."""
    CHECKS.append(function)
    return function


def rule_id(function: Check) -> str:
    """A check's rule id: ``check/`` and its name in kebab case (``check/host-in-one-pool``)."""
    return "check/" + function.__name__.replace("_", "-")


def run_checks(estate: Estate) -> list[Finding]:
    """Every check's findings, each carrying its check's rule id unless it names its own."""
    return [
        finding if finding.rule else replace(finding, rule=rule_id(function))
        for function in CHECKS
        for finding in function(estate)
    ]


def _duplicates(items: Iterable[T], key: Callable[[T], object]) -> Iterator[tuple[T, object]]:
    seen: set[object] = set()
    for item in items:
        value = key(item)
        if value in seen:
            yield item, value
        seen.add(value)


@check
def unique_names(estate: Estate) -> Iterator[Finding]:
    """Names identify things in slurm.conf, DNS, file names and groups: one each per kind."""
    kinds: list[tuple[str, list[tuple[str, str]]]] = [
        ("node pool", [(p.path, p.name) for p in estate.node_pools]),
        ("partition", [(p.path, p.name) for p in estate.slurm.partitions]),
        ("QoS", [(q.path, q.name) for q in estate.slurm.qos]),
        ("team", [(t.path, t.name) for t in estate.identity.teams]),
        ("user", [(u.path, u.name) for u in estate.identity.users]),
        ("Kubernetes cluster", [(c.path, c.name) for c in estate.kubernetes_clusters]),
        ("storage", [(s.path, s.name) for s in estate.storage]),
        ("mount point", [(s.path + ".mount", s.mount) for s in estate.storage]),
        (
            "team namespace",
            [(t.path, t.namespace) for t in _first_of_each_name(estate.identity.teams)],
        ),
        ("GPU model", list(estate.declared_gpu_models)),
    ]
    for cluster in estate.kubernetes_clusters:
        kinds.append(
            (
                f"priority class in {cluster.name}",
                [(c.path, c.name) for c in cluster.priority_classes],
            )
        )
        if cluster.queues:
            kinds.append(
                (f"queue team in {cluster.name}", [(t.path, t.team) for t in cluster.queues.teams])
            )
    for kind, entries in kinds:
        for (path, _), name in _duplicates(entries, key=lambda e: e[1]):
            yield issue(path, f"{kind} {name!r} is declared more than once")


def _first_of_each_name(teams: Iterable[Team]) -> list[Team]:
    """Teams with a repeated name are reported once, as names, not again as namespaces."""
    seen: set[str] = set()
    out = []
    for team in teams:
        if team.name not in seen:
            seen.add(team.name)
            out.append(team)
    return out


@check
def unique_ids(estate: Estate) -> Iterator[Finding]:
    """A uid or gid names one identity on every host of both schedulers."""
    for user, uid in _duplicates(estate.identity.users, key=lambda u: u.uid):
        yield issue(f"{user.path}.uid", f"uid {uid} is already used by another user")
    for team, gid in _duplicates(estate.identity.teams, key=lambda t: t.gid):
        yield issue(f"{team.path}.gid", f"gid {gid} is already used by another team")


@check
def team_members_known(estate: Estate) -> Iterator[Finding]:
    users = {u.name for u in estate.identity.users}
    for team in estate.identity.teams:
        for i, member in enumerate(team.members):
            if member not in users:
                yield issue(
                    f"{team.path}.members[{i}]",
                    f"{member!r} is not a user in identity.users{_choices(users, member)}",
                )


@check
def names_not_reserved(estate: Estate) -> Iterator[Finding]:
    """A name that already means something where it is rendered would change that meaning."""
    for user in estate.identity.users:
        if user.name in SYSTEM_USERS:
            yield _reserved(f"{user.path}.name", "user name", user.name, SYSTEM_USERS[user.name])
    estate_account = parent_account(estate)
    for team in estate.identity.teams:
        where = f"{team.path}.name"
        if team.name in SYSTEM_GROUPS:
            yield _reserved(
                where, "team name", team.name, f"as a Unix group, {SYSTEM_GROUPS[team.name]}"
            )
        if team.name in SLURM_ACCOUNTS:
            yield _reserved(
                where, "team name", team.name, f"as a Slurm account, {SLURM_ACCOUNTS[team.name]}"
            )
        if team.name == estate_account:
            yield _reserved(
                where,
                "team name",
                team.name,
                "as a Slurm account, the estate's account above every team",
            )
        reason = namespace_reason(team.namespace)
        if reason:
            yield _reserved(f"{team.path}.namespace", "team namespace", team.namespace, reason)
    for partition in estate.slurm.partitions:
        if partition.name in SLURM_PARTITIONS:
            yield _reserved(
                f"{partition.path}.name",
                "partition name",
                partition.name,
                SLURM_PARTITIONS[partition.name],
            )
    for pool in estate.node_pools:
        if pool.name in POOL_NAMES:
            yield _reserved(f"{pool.path}.name", "node pool name", pool.name, POOL_NAMES[pool.name])
    for label in estate.observability.labels:
        if label in PROMETHEUS_LABELS:
            yield _reserved(
                f"observability.labels.{label}", "label", label, PROMETHEUS_LABELS[label]
            )
    for pool in estate.slurm_pools:
        for host in sorted(SLURM_NODES.keys() & set(pool.hosts)):
            yield _reserved(f"{pool.path}.hosts", "Slurm node name", host, SLURM_NODES[host])
    accounting = estate.slurm.accounting
    if accounting and accounting.database.user in MARIADB_ACCOUNTS:
        account = accounting.database.user
        yield _reserved(
            "slurm.accounting.database.user",
            "accounting database user",
            account,
            f"as a MariaDB account, {MARIADB_ACCOUNTS[account]}; the slurmdbd role would set its "
            "password and leave it only the accounting database's privileges",
        )


def _reserved(path: str, what: str, name: str, reason: str) -> Finding:
    return issue(path, f"{what} {name!r} is reserved: {reason}; choose another name")


@check
def directory_complete(estate: Estate) -> Iterator[Finding]:
    directory = estate.identity.directory
    if directory.type in ("ldap", "freeipa"):
        for key in ("uri", "base_dn"):
            if getattr(directory, key) is None:
                yield issue(
                    "identity.directory",
                    f"{_article(directory.type)} {directory.type} directory needs `{key}`",
                )
    if directory.bind_dn and not directory.bind_password:
        yield issue("identity.directory.bind_dn", "bind_dn needs bind_password: {secret: NAME}")


def host_budget(total: int, reserved: int = 0) -> list[Finding]:
    """The estate's host limit, for hosts counted in the model or in hostlists not expanded:
    ``total`` in its pools, ``reserved`` in its reservations' ``hosts`` (each reservation holds
    its own copy of the names; one over a whole pool or partition names it instead)."""
    found = []
    if total > MAX_ESTATE_HOSTS:
        found.append(
            issue(
                "node_pools",
                f"{total} hosts, above the estate limit of {MAX_ESTATE_HOSTS}",
                rule=rule_id(hosts_within_bounds),
            )
        )
    if reserved > MAX_ESTATE_HOSTS:
        found.append(
            issue(
                "slurm.reservations",
                f"their hosts name {reserved} hosts in all, above the limit of "
                f"{MAX_ESTATE_HOSTS}; hold a whole pool or partition with pools or partition",
                rule=rule_id(hosts_within_bounds),
            )
        )
    return found


@check
def hosts_within_bounds(estate: Estate) -> Iterator[Finding]:
    yield from host_budget(
        sum(len(p.hosts) for p in estate.node_pools),
        sum(len(r.hosts) for r in estate.slurm.reservations),
    )


@check
def host_in_one_pool(estate: Estate) -> Iterator[Finding]:
    """Every node belongs to exactly one pool and so to exactly one scheduler."""
    owner: dict[str, NodePool] = {}
    for pool in estate.node_pools:
        reported: set[str] = set()
        for host in pool.hosts:
            first = owner.setdefault(host, pool)
            if first is pool or first.name in reported:
                continue
            reported.add(first.name)
            across = (
                f" (both {first.scheduler} and {pool.scheduler})"
                if first.scheduler != pool.scheduler
                else ""
            )
            yield issue(
                f"{pool.path}.hosts",
                f"host {host} is already in pool {first.name!r}{across}; "
                "a host belongs to exactly one pool",
            )
        for host, times in Counter(pool.hosts).items():
            if times > 1:
                yield issue(f"{pool.path}.hosts", f"host {host} is listed {times} times")
                break
    for i, controller in enumerate(estate.slurm.controllers):
        node_pool = owner.get(controller)
        if node_pool and node_pool.scheduler == "kubernetes":
            yield issue(
                f"slurm.controllers[{i}]",
                f"{controller} is a Kubernetes node in pool {node_pool.name!r}; "
                "Slurm controllers stay on the Slurm side",
            )


@check
def pool_fields_for_provider(estate: Estate) -> Iterator[Finding]:
    """Managed pools are shaped by the cloud; on-prem pools by their hosts."""
    for pool in estate.node_pools:
        if pool.cloud is not None and not pool.elastic:
            yield issue(
                f"{pool.path}.cloud",
                "`cloud` says where slurmctld creates a Slurm cloud pool's instances "
                "(a Slurm pool with provider gke or eks); "
                + (
                    "Kubernetes node pools get theirs from the cluster's provider"
                    if pool.scheduler == "kubernetes"
                    else "set provider, or remove `cloud`"
                ),
            )
        if pool.elastic:
            yield from _elastic_pool_fields(pool)
            continue
        if pool.hosted:
            continue  # checked by hosted_slurm_pools
        if pool.managed:
            for key in ("instance_type", "nodes"):
                if (
                    getattr(pool, "instance_type" if key == "instance_type" else "nodes_max")
                    is None
                ):
                    yield issue(
                        pool.path, f"{_article(pool.provider)} {pool.provider} pool needs `{key}`"
                    )
            if pool.host_expressions:
                yield issue(
                    f"{pool.path}.hosts",
                    f"{_article(pool.provider)} {pool.provider} pool gets its nodes from the "
                    "provider; remove `hosts`",
                )
            if (
                pool.nodes_min is not None
                and pool.nodes_max is not None
                and pool.nodes_min > pool.nodes_max
            ):
                yield issue(
                    f"{pool.path}.nodes",
                    f"min {pool.nodes_min} is above max {pool.nodes_max}",
                )
            yield from _cloud_pool_shape(estate, pool)
        else:
            if not pool.host_expressions:
                yield issue(pool.path, "an on-prem pool needs `hosts`")
            for key, value in (("instance_type", pool.instance_type), ("nodes", pool.nodes_max)):
                if value is not None:
                    yield issue(
                        f"{pool.path}.{key}",
                        f"`{key}` is for managed pools (provider gke, eks or aks); "
                        "on-prem pools list `hosts`",
                    )
            if pool.scheduler == "slurm":
                for key, missing in (
                    ("cpu", pool.cpu is None),
                    ("memory_gb", pool.memory_gb is None),
                ):
                    if missing:
                        yield issue(pool.path, f"a Slurm pool needs `{key}` for its NodeName line")


# --- elastic cloud nodes ---
ELASTIC_PROVIDERS = ("gke", "eks")
# which `cloud` keys each provider needs and which it refuses
_CLOUD_KEYS = {
    "gke": (("zone", "project"), ("region",)),
    "eks": (("region",), ("zone", "project")),
}


def _elastic_pool_fields(pool: NodePool) -> Iterator[Finding]:
    """A Slurm pool with a provider is State=CLOUD nodes: slurm.conf names them (`hosts`) and
    shapes them (`cpu`, `memory_gb`); slurmctld's ResumeProgram creates each as an instance of
    `instance_type` from the pinned `cloud.image`, and SuspendProgram deletes it."""
    if pool.provider not in ELASTIC_PROVIDERS:
        yield issue(
            f"{pool.path}.provider",
            f"Slurm cloud pools are created on gke (GCE instances) or eks (EC2 instances); "
            f"estategen does not create {pool.provider} instances for Slurm",
        )
        return
    if not pool.host_expressions:
        yield issue(
            pool.path,
            f"a Slurm {pool.provider} pool names its nodes with `hosts` (slurm.conf defines "
            "them State=CLOUD; slurmctld creates an instance of that name when it needs one)",
        )
    for key, missing in (
        ("instance_type", pool.instance_type is None),
        ("cpu", pool.cpu is None),
        ("memory_gb", pool.memory_gb is None),
        ("cloud", pool.cloud is None),
    ):
        if missing:
            yield issue(pool.path, f"a Slurm {pool.provider} pool needs `{key}`")
    if pool.cloud is not None:
        needed, refused = _CLOUD_KEYS[pool.provider]
        for key in needed:
            if getattr(pool.cloud, key) is None:
                yield issue(f"{pool.path}.cloud", f"a Slurm {pool.provider} pool needs `{key}`")
        for key in refused:
            if getattr(pool.cloud, key) is not None:
                yield issue(
                    f"{pool.path}.cloud.{key}",
                    f"`{key}` is for provider {'eks' if pool.provider == 'gke' else 'gke'}; "
                    f"a {pool.provider} pool sets {' and '.join(needed)}",
                )
        image_kind = "ami-" if pool.provider == "eks" else "projects/"
        if not pool.cloud.image.startswith(image_kind):
            yield issue(
                f"{pool.path}.cloud.image",
                f"{pool.cloud.image!r} is not {_article(pool.provider)} {pool.provider} image; "
                + (
                    "give an AMI id like 'ami-0123456789abcdef0'"
                    if pool.provider == "eks"
                    else "give 'projects/PROJECT/global/images/NAME'"
                ),
            )
    if pool.nodes_max is not None and pool.host_expressions and pool.nodes_max != len(pool.hosts):
        yield issue(
            f"{pool.path}.nodes.max",
            f"max {pool.nodes_max}, but `hosts` names {len(pool.hosts)} nodes: slurmctld creates "
            f"at most the nodes slurm.conf names; set max to {len(pool.hosts)} or change `hosts`",
        )
    if (
        pool.nodes_min is not None
        and pool.nodes_max is not None
        and pool.nodes_min > pool.nodes_max
    ):
        yield issue(f"{pool.path}.nodes", f"min {pool.nodes_min} is above max {pool.nodes_max}")


@check
def cloud_options_not_owned(estate: Estate) -> Iterator[Finding]:
    if not any(p.elastic for p in estate.node_pools):
        return
    owned = {k.lower(): k for k in CLOUD_SLURM_OPTIONS}
    for key in estate.slurm.options:
        if key.lower() in owned:
            yield issue(
                f"slurm.options.{key}",
                f"{owned[key.lower()]} is rendered by estategen for the estate's cloud nodes "
                "(cloud_reg_addrs, PrivateData=cloud, TreeWidth); it cannot be passed through",
            )


@check
def power_saving_has_cloud_nodes(estate: Estate) -> Iterator[Finding]:
    """slurm.power_saving times apply to cloud nodes only: without one they would do nothing."""
    if estate.slurm.power_saving.declared and not any(p.cloud_nodes for p in estate.node_pools):
        yield issue(
            "slurm.power_saving",
            "power saving creates and deletes cloud nodes, and no Slurm pool has a provider "
            "(gke or eks) or `state: cloud`; remove slurm.power_saving or add a Slurm cloud pool",
        )


# --- cloud nodes the site's own programs create ---
_SITE_PROGRAMS = ("resume_program", "suspend_program", "resume_fail_program")


@check
def site_cloud_pools(estate: Estate) -> Iterator[Finding]:
    """`state: cloud` makes a Slurm pool's nodes State=CLOUD, started by the site's programs
    (slurm.power_saving); a pool with a provider is State=CLOUD already, started by
    estategen's programs, and slurm.conf has one ResumeProgram."""
    for pool in estate.node_pools:
        if not pool.site_cloud:
            continue
        if pool.scheduler != "slurm" or pool.hosted:
            yield issue(
                f"{pool.path}.state",
                "`state: cloud` makes a Slurm pool's slurm.conf nodes State=CLOUD; "
                + (
                    "Kubernetes pools scale with their cluster's provider"
                    if pool.scheduler != "slurm"
                    else "a hosted pool's slurmd pods register dynamically"
                ),
            )
        elif pool.elastic:
            yield issue(
                f"{pool.path}.state",
                f"a Slurm {pool.provider} pool's nodes are State=CLOUD already, created by "
                "estategen's power programs; remove `state`",
            )
    saving = estate.slurm.power_saving
    elastic = next((p for p in estate.slurm_pools if p.elastic), None)
    if elastic is not None:
        for key in _SITE_PROGRAMS:
            if getattr(saving, key) is not None:
                yield issue(
                    f"slurm.power_saving.{key}",
                    f"pool {elastic.name!r} has a provider, whose instances estategen's own "
                    "ResumeProgram and SuspendProgram create and delete, and slurm.conf has "
                    "one of each; the site's programs serve pools with `state: cloud` only",
                )
    paths = estate.slurm.site.paths
    daemon_folders = {
        "state_save_location": paths.state_save_location,
        "slurmd_spool_dir": paths.slurmd_spool_dir,
    }
    for key in _SITE_PROGRAMS:
        program = getattr(saving, key)
        for folder_key, folder in daemon_folders.items():
            if program is not None and (program + "/").startswith(folder + "/"):
                yield issue(
                    f"slurm.power_saving.{key}",
                    f"{program} lies inside slurm.paths.{folder_key} ({folder}), which the "
                    "daemon fills and owns; slurmctld runs only a program others cannot write",
                )
    cloud_hosts = {h for p in estate.slurm_pools if p.cloud_nodes for h in p.hosts}
    for index, expression in enumerate(saving.exclude_nodes):
        strays = [h for h in hostlist.expand(expression) if h not in cloud_hosts]
        if strays:
            yield issue(
                f"slurm.power_saving.exclude_nodes[{index}]",
                f"{strays[0]!r} is not a node of a Slurm cloud pool (provider gke or eks, or "
                "`state: cloud`); only cloud nodes are suspended",
            )


@check
def pool_cluster_resolves(estate: Estate) -> Iterator[Finding]:
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.node_pools:
        if pool.scheduler == "slurm":
            if pool.cluster and pool.cluster not in clusters:
                # a Slurm pool with `cluster` runs its slurmd as pods there
                yield issue(
                    f"{pool.path}.cluster",
                    f"{pool.cluster!r} is not in kubernetes.clusters{_choices(clusters)}",
                )
            for key, present in (("labels", pool.labels), ("taints", pool.taints)):
                if present:
                    yield issue(
                        f"{pool.path}.{key}",
                        f"`{key}` apply to Kubernetes nodes; use `features` for Slurm pools",
                    )
            continue
        if not pool.cluster:
            yield issue(pool.path, f"a Kubernetes pool needs `cluster`{_choices(clusters)}")
        elif pool.cluster not in clusters:
            yield issue(
                f"{pool.path}.cluster",
                f"{pool.cluster!r} is not in kubernetes.clusters{_choices(clusters, pool.cluster)}",
            )
        elif clusters[pool.cluster].provider != pool.provider and pool.managed:
            yield issue(
                f"{pool.path}.provider",
                f"pool is {pool.provider} but cluster {pool.cluster!r} is "
                f"{clusters[pool.cluster].provider}",
            )
    used = {p.cluster for p in estate.kubernetes_pools} | {p.cluster for p in estate.hosted_pools()}
    for cluster in estate.kubernetes_clusters:
        if cluster.name not in used:
            yield issue(
                cluster.path, f"cluster {cluster.name!r} has no node pools", level="warning"
            )
        if cluster.provider != "on-prem" and not cluster.region:
            yield issue(
                cluster.path,
                f"{_article(cluster.provider)} {cluster.provider} cluster needs `region`",
            )
        if cluster.provider == "gke" and cluster.device_plugin_install == "gpu-operator":
            yield issue(
                f"{cluster.path}.device_plugin.install",
                "GKE installs the NVIDIA driver and device plugin on its GPU nodes and "
                "partitions and shares GPUs itself; leave device_plugin.install at "
                "device-plugin on a gke cluster",
            )


@check
def node_labels_kubelet_may_set(estate: Estate) -> Iterator[Finding]:
    """kubelet registers on-prem nodes with the pool's labels; NodeRestriction refuses some."""
    for pool in estate.kubernetes_pools:
        refused = [key for key in pool.labels if not kubelet_may_set(key)]
        if refused and not pool.managed:
            yield issue(
                f"{pool.path}.labels",
                f"kubelet may not set {', '.join(refused)} on its own node (the kubernetes.io "
                "and k8s.io namespaces are reserved, except node.kubernetes.io/ and "
                "kubelet.kubernetes.io/); use a label of your own domain, such as example.com/role",
            )


@check
def gpu_models_resolve(estate: Estate) -> Iterator[Finding]:
    for path, name in estate.declared_gpu_models:
        if name in builtin_models():
            yield issue(
                path,
                f"{name!r} replaces the built-in catalog entry of that name",
                level="warning",
            )
    for pool in estate.node_pools:
        if pool.gpus and pool.gpus.model not in estate.gpu_models:
            yield issue(
                f"{pool.path}.gpus.model",
                f"unknown GPU model {pool.gpus.model!r}; add it under gpu_models or choose "
                f"one of: {', '.join(sorted(estate.gpu_models))}"
                f"{did_you_mean(pool.gpus.model, estate.gpu_models)}",
            )


@check
def gpu_models_offered_by_cloud(estate: Estate) -> Iterator[Finding]:
    for pool in estate.node_pools:
        if not (pool.managed and pool.gpus and pool.gpus.model in estate.gpu_models):
            continue
        model = estate.gpu_models[pool.gpus.model]
        if pool.provider not in model.clouds:
            offered = sorted(
                m.name for m in estate.gpu_models.values() if pool.provider in m.clouds
            )
            yield issue(
                f"{pool.path}.gpus.model",
                f"{model.name} is not offered on {pool.provider}; "
                f"{pool.provider} offers: {', '.join(offered) or 'none in the catalog'}",
            )


@check
def instance_type_carries_gpus(estate: Estate) -> Iterator[Finding]:
    """A managed GPU pool's instance type must be one the catalog lists for its GPU model, with
    exactly ``gpus.count`` GPUs: quotas and device-plugin replicas are counted from the
    blueprint, so a wrong count would promise capacity the cloud never delivers."""
    for pool in estate.node_pools:
        gpus, instance = pool.gpus, pool.instance_type
        if not pool.managed:
            continue  # on-prem pools have no instance type; aks Slurm pools are refused
        if not (gpus and instance and gpus.model in estate.gpu_models):
            continue
        offer = estate.gpu_models[gpus.model].clouds.get(pool.provider)
        if offer is None:
            continue  # gpu_models_offered_by_cloud names the models this provider offers
        carried = offer.shapes.get(instance)
        if carried is None:
            yield issue(f"{pool.path}.instance_type", _unknown_shape(estate, pool, offer))
        elif carried != gpus.count:
            same_count = [name for name, count in _by_size(offer) if count == gpus.count]
            other = f", or {_article(offer.noun)} {offer.noun} with {gpus.count}: "
            yield issue(
                f"{pool.path}.gpus.count",
                f"{instance} has {carried} {gpus.model} GPU{'s' if carried > 1 else ''}; "
                f"set gpus.count to {carried}{other + ', '.join(same_count) if same_count else ''}",
            )


def _by_size(offer: CloudOffer) -> list[tuple[str, int]]:
    """Shapes by GPU count, then by name with numbers in numeric order (g6.2xlarge first)."""

    def natural(name: str) -> list[tuple[int, str]]:
        return [(int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(name)]

    return sorted(offer.shapes.items(), key=lambda item: (item[1], natural(item[0])))


def _unknown_shape(estate: Estate, pool: NodePool, offer: CloudOffer) -> str:
    """Why an instance type is refused: what it carries instead, a close name, the valid ones."""
    model = pool.gpus.model if pool.gpus else ""
    instance = pool.instance_type or ""
    carriers = sorted(
        m.name
        for m in estate.gpu_models.values()
        if pool.provider in m.clouds and instance in m.clouds[pool.provider].shapes
    )
    import difflib  # only for an instance type the catalog does not know

    close = difflib.get_close_matches(instance, list(offer.shapes), n=1, cutoff=0.6)
    if carriers:
        reason = f"{instance} carries {', '.join(carriers)}, not {model}."
    else:
        reason = f"{instance} is not a {pool.provider} {offer.noun} that carries {model}"
        reason += f"; did you mean {close[0]}?" if close else "."
    valid = ", ".join(f"{name} ({count})" for name, count in _by_size(offer))
    return f"{reason} {offer.noun[:1].upper()}{offer.noun[1:]}s with {model}, by GPU count: {valid}"


@check
def mig_layout_fits(estate: Estate) -> Iterator[Finding]:
    """A MIG layout must exist for the model and fit one GPU's compute and memory slices."""
    for pool in estate.node_pools:
        if not pool.gpus or not pool.gpus.mig or pool.gpus.model not in estate.gpu_models:
            continue
        model = estate.gpu_models[pool.gpus.model]
        path = f"{pool.path}.gpus.mig"
        if not model.mig:
            yield issue(path, f"{model.name} does not support MIG")
            continue
        unknown = [(i, p) for i, p in enumerate(pool.gpus.mig) if p not in model.mig]
        for index, profile in unknown:
            yield issue(
                f"{path}[{index}]",
                f"{profile!r} is not a MIG profile of {model.name}; "
                f"choose from: {', '.join(model.mig)}{did_you_mean(profile, model.mig)}",
            )
        if unknown:
            continue
        for profile, times in Counter(pool.gpus.mig).items():
            if times > model.mig[profile].max:
                yield issue(
                    path,
                    f"{times} x {profile} on one GPU; {model.name} holds at most "
                    f"{model.mig[profile].max}",
                )
        compute = sum(model.mig[p].compute for p in pool.gpus.mig)
        memory = sum(model.mig[p].memory for p in pool.gpus.mig)
        if compute > MIG_COMPUTE_SLICES:
            yield issue(
                path, f"layout uses {compute} compute slices; a GPU has {MIG_COMPUTE_SLICES}"
            )
        if memory > MIG_MEMORY_SLICES:
            yield issue(path, f"layout uses {memory} memory slices; a GPU has {MIG_MEMORY_SLICES}")


@check
def sharing_fits_scheduler(estate: Estate) -> Iterator[Finding]:
    """time_slicing and MPS are device-plugin features; shards are Slurm GRES."""
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.node_pools:
        if not pool.gpus:
            continue
        sharing = pool.gpus.sharing
        path = f"{pool.path}.gpus.sharing"
        if pool.scheduler == "slurm":
            for key in ("time_slicing", "mps"):
                if getattr(sharing, key) is not None:
                    yield issue(
                        f"{path}.{key}",
                        f"{key} is a Kubernetes device-plugin mode; Slurm pools share GPUs "
                        "with `shard`",
                    )
        else:
            if sharing.shard is not None:
                yield issue(
                    f"{path}.shard",
                    "shard is Slurm GRES sharing; Kubernetes pools use time_slicing or mps",
                )
            if sharing.time_slicing is not None and sharing.mps is not None:
                yield issue(path, "choose one of time_slicing and mps")
            if sharing.mps is not None and pool.gpus.mig:
                yield issue(
                    f"{path}.mps",
                    "MIG devices cannot be shared with MPS; use time_slicing on a MIG pool",
                )
            cluster = clusters.get(pool.cluster or "")
            if (
                sharing.mps is not None
                and cluster is not None
                and cluster.device_plugin_install == "gpu-operator"
                and cluster.mig_strategy == "mixed"
            ):
                # the operator sets MIG_STRATEGY from mig.strategy on every node's plugin, and
                # the environment overrides the pool's config file
                yield issue(
                    f"{path}.mps",
                    f"the GPU Operator runs the device plugin of cluster {cluster.name!r} with "
                    "MIG_STRATEGY=mixed on every node, and the plugin refuses MPS under the "
                    "mixed strategy (it exits on this pool's nodes); set the cluster's "
                    "device_plugin.mig_strategy to single or none, install: device-plugin "
                    "(which gives each pool its own strategy), or share with time_slicing",
                )


def _cloud_pool_shape(estate: Estate, pool: NodePool) -> Iterator[Finding]:
    """What the cloud can build: GKE splits every GPU of a pool into one MIG size."""
    gpus = pool.gpus
    if not gpus or gpus.model not in estate.gpu_models:
        return
    model = estate.gpu_models[gpus.model]
    if pool.provider == "gke" and gpus.mig and all(p in model.mig for p in gpus.mig):
        profile = gpus.mig[0]
        fits = model.mig[profile].max
        if set(gpus.mig) != {profile} or len(gpus.mig) != fits:
            yield issue(
                f"{pool.path}.gpus.mig",
                "GKE partitions every GPU into as many instances of one size as fit "
                f"(gpu_partition_size); for {profile} on {model.name} that is {fits} x {profile}",
            )


@check
def mig_strategy_matches_pools(estate: Estate) -> Iterator[Finding]:
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.kubernetes_pools:
        if not (pool.gpus and pool.gpus.mig and pool.cluster in clusters):
            continue
        cluster = clusters[pool.cluster or ""]
        if cluster.mig_strategy == "none":
            yield issue(
                f"{pool.path}.gpus.mig",
                f"cluster {cluster.name!r} has device_plugin.mig_strategy none; "
                "set single or mixed to expose MIG devices",
            )
        elif cluster.mig_strategy == "single" and len(set(pool.gpus.mig)) > 1:
            yield issue(
                f"{pool.path}.gpus.mig",
                "mig_strategy single needs one profile on every GPU; use mixed for this layout",
            )


@check
def slurm_section_present(estate: Estate) -> Iterator[Finding]:
    if estate.slurm_pools and not estate.slurm.controllers:
        yield issue(
            "slurm" if estate.slurm.declared else "node_pools",
            "Slurm pools need slurm.controllers (the slurmctld hosts)",
        )


@check
def partitions_resolve(estate: Estate) -> Iterator[Finding]:
    pools = estate.pools_by_name
    teams = estate.teams_by_name
    qos = {q.name for q in estate.slurm.qos}
    for part in estate.slurm.partitions:
        for i, name in enumerate(part.pools):
            if name not in pools:
                yield issue(
                    f"{part.path}.pools[{i}]",
                    f"{name!r} is not a node pool"
                    f"{_choices((p.name for p in estate.slurm_pools), name)}",
                )
            elif pools[name].scheduler != "slurm":
                yield issue(
                    f"{part.path}.pools[{i}]",
                    f"pool {name!r} is scheduled by Kubernetes; partitions draw on Slurm pools",
                )
        for i, name in enumerate(part.teams):
            if name not in teams:
                yield issue(
                    f"{part.path}.teams[{i}]", f"{name!r} is not a team{_choices(teams, name)}"
                )
        if part.qos and part.qos not in qos:
            yield issue(f"{part.path}.qos", f"{part.qos!r} is not a QoS{_choices(qos, part.qos)}")
    defaults = [p for p in estate.slurm.partitions if p.default]
    for extra in defaults[1:]:
        yield issue(
            f"{extra.path}.default",
            f"partition {defaults[0].name!r} is already the default; only one may be",
        )


@check
def qos_resolves(estate: Estate) -> Iterator[Finding]:
    names = {q.name for q in estate.slurm.qos}
    for qos in estate.slurm.qos:
        for i, other in enumerate(qos.preempt):
            if other not in names:
                yield issue(
                    f"{qos.path}.preempt[{i}]", f"{other!r} is not a QoS{_choices(names, other)}"
                )
            elif other == qos.name:
                yield issue(f"{qos.path}.preempt[{i}]", "a QoS cannot preempt itself")
        if qos.preempt and estate.slurm.scheduling.preemption.type != "qos":
            yield issue(
                f"{qos.path}.preempt",
                "QoS preemption needs slurm.scheduling.preemption.type: qos",
                level="warning",
            )
        if qos.preempt_mode and estate.slurm.scheduling.preemption.type != "qos":
            yield issue(
                f"{qos.path}.preempt_mode",
                "Slurm reads a QoS's PreemptMode only with PreemptType=preempt/qos: set "
                "slurm.scheduling.preemption.type: qos, or remove it",
            )
    uses_qos = estate.slurm.qos or any(p.qos for p in estate.slurm.partitions)
    if uses_qos and estate.slurm.accounting is None:
        yield issue("slurm.qos", "QoS live in slurmdbd: set slurm.accounting to use them")
    if (
        estate.slurm_pools
        and estate.slurm.scheduling.preemption.type == "qos"
        and not any(q.preempt for q in estate.slurm.qos)
    ):
        tiers = {p.priority_tier for p in estate.slurm.partitions}
        yield issue(
            "slurm.scheduling.preemption.type",
            "preemption type qos preempts only jobs whose QoS another QoS lists in `preempt`; "
            "no QoS lists another, so no job is ever preempted"
            + (
                " (partition priority_tier preempts only with type: partition_prio)"
                if len(tiers) > 1
                else ""
            ),
            level="warning",
        )


@check
def partition_preempt_mode_applies(estate: Estate) -> Iterator[Finding]:
    """slurm.conf(5): a partition's PreemptMode is read only with
    PreemptType=preempt/partition_prio. Under another type it is accepted only where it says
    what Slurm does anyway (the cluster-wide mode); a different mode would never apply."""
    preemption = estate.slurm.scheduling.preemption
    if preemption.type == "partition_prio":
        return
    applies = "off" if preemption.type == "none" else preemption.mode
    for part in estate.slurm.partitions:
        if part.preempt_mode is None or part.preempt_mode == applies:
            continue
        fix = (
            "set preempt_mode on the QoS its jobs run under (slurm.qos[].preempt_mode)"
            if preemption.type == "qos"
            else "set slurm.scheduling.preemption"
        )
        yield issue(
            f"{part.path}.preempt_mode",
            f"Slurm ignores a partition's PreemptMode with preemption.type {preemption.type}: "
            f"its jobs are preempted in mode {applies!r}, never {part.preempt_mode!r}; {fix}, "
            "or use preemption.type: partition_prio",
        )


@check
def controllers_share_state(estate: Estate) -> Iterator[Finding]:
    """A backup slurmctld takes over from the state the primary saved: it must see that state."""
    controllers = estate.slurm.controllers
    if len(controllers) < 2 or not estate.slurm_pools:
        return
    state = estate.slurm.site.paths.state_save_location
    for storage in estate.storage:
        # the folders above it are system folders, which the schema refuses as mount points
        if storage.mount != state:
            continue
        hosts = {h for p in estate.node_pools if storage.mounted_on(p.name) for h in p.hosts}
        if storage.pools is None or hosts.issuperset(controllers):
            return
    yield issue(
        "slurm.controllers",
        f"{len(controllers)} controllers, but StateSaveLocation={state} is local "
        "disk: a backup controller takes over from the state the primary saved there, so it "
        "must be shared storage. Mount it on every controller (a storage entry with mount "
        f"{state} and no pools), or list one controller",
        level="warning",
    )


# --- reservations, MPI and the REST API ---


def now() -> datetime:
    """The local time reservations are compared with; tests replace it with a fixed one.

    Only findings depend on it, never rendered bytes: the same blueprint renders the same
    reservations.scontrol whenever it is rendered.
    """
    return datetime.now()


@check
def reservations_valid(estate: Estate) -> Iterator[Finding]:
    """Each reservation names existing nodes, people and a time Slurm can still hold."""
    seen: set[str] = set()
    for res in estate.slurm.reservations:
        if res.name in seen:
            yield issue(f"{res.path}.name", f"reservation {res.name!r} is listed twice")
        seen.add(res.name)
        yield from _reservation_nodes(estate, res)
        yield from _reservation_people(estate, res)
        yield from _reservation_time(res)
    yield from _reservations_overlap(estate)


def _reservation_nodes(estate: Estate, res: Reservation) -> Iterator[Finding]:
    if not (res.pools or res.partition or res.hosts):
        yield issue(res.path, "a reservation needs its nodes: set pools, partition or hosts")
        return
    if res.pools and res.hosts:
        yield issue(f"{res.path}.hosts", "set pools or hosts, not both")
    for i, name in enumerate(res.pools):
        pool = estate.pools_by_name.get(name)
        if pool is None:
            yield issue(
                f"{res.path}.pools[{i}]",
                f"{name!r} is not a node pool"
                f"{_choices((p.name for p in estate.slurm_pools), name)}",
            )
        elif pool.scheduler != "slurm":
            yield issue(
                f"{res.path}.pools[{i}]",
                f"pool {name!r} is scheduled by Kubernetes; reservations hold Slurm nodes",
            )
    slurm_hosts = _slurm_hosts(estate)
    outside = [h for h in res.hosts if h not in slurm_hosts]
    if outside:
        yield issue(
            f"{res.path}.hosts",
            f"{len(outside)} host(s) in no Slurm pool: {quote(hostlist.compress(outside))}",
        )
    if res.partition:
        names = {p.name for p in estate.slurm.partitions}
        if res.partition not in names:
            yield issue(
                f"{res.path}.partition",
                f"{res.partition!r} is not a partition{_choices(names, res.partition)}",
            )
            return
        # compared pool by pool: a pool's hosts are listed only when it is outside
        allowed = set(partition_pools(estate, res.partition))
        held = reservation_nodes(estate, res)
        owners = host_pools(estate)
        slurm_pools = {p.name for p in estate.slurm_pools}
        pools = sorted(n for n in held.pools - allowed if n in slurm_pools)
        hosts = [h for h in held.hosts if owners.pool.get(h, "") in slurm_pools - allowed]
        if pools or hosts:
            key = "hosts" if res.hosts else "pools"
            count = sum(owners.size[n] for n in pools) + len(hosts)
            yield issue(
                f"{res.path}.{key}",
                f"{count} host(s) outside partition {res.partition!r}: "
                f"{quote(_held_hostlist(estate, pools, hosts))}; a reservation's nodes must be "
                "in its partition (the partition's jobs could never use the others)",
            )


def _slurm_hosts(estate: Estate) -> frozenset[str]:
    return frozenset(h for p in estate.slurm_pools for h in p.hosts)


def _pool_hostlist(pool: NodePool) -> str:
    return hostlist.compress(pool.hosts)


def _held_hostlist(estate: Estate, pools: Iterable[str], hosts: Iterable[str]) -> str:
    """One hostlist of whole pools and single hosts; a pool's hosts are compressed once."""
    parts = [_pool_hostlist(estate.pools_by_name[name]) for name in pools]
    hosts = list(hosts)
    if hosts:
        parts.append(hostlist.compress(hosts))
    return ",".join(parts)


def _reservation_people(estate: Estate, res: Reservation) -> Iterator[Finding]:
    if not (res.teams or res.users):
        yield issue(
            res.path,
            "a reservation needs who may use it: set teams (Slurm accounts) or users "
            "(slurmctld refuses a reservation without either)",
        )
    teams = estate.teams_by_name
    for i, name in enumerate(res.teams):
        if name not in teams:
            yield issue(f"{res.path}.teams[{i}]", f"{name!r} is not a team{_choices(teams, name)}")
    users = {u.name for u in estate.identity.users}
    for i, name in enumerate(res.users):
        if name not in users:
            yield issue(f"{res.path}.users[{i}]", f"{name!r} is not a user{_choices(users, name)}")


def _reservation_time(res: Reservation) -> Iterator[Finding]:
    if res.duration is None and res.end is None:
        yield issue(res.path, "set duration (a Slurm time) or end (a date and time)")
        return
    if res.duration is not None and res.end is not None:
        yield issue(f"{res.path}.end", "set duration or end, not both")
        return
    try:
        end = reservation_end(res)
    except ValueError as err:
        yield issue(f"{res.path}.duration", f"{res.duration!r} is not a valid Slurm time: {err}")
        return
    start = reservation_start(res)
    if end is not None and end <= start and res.end is None:
        yield issue(
            f"{res.path}.duration",
            f"duration {res.duration!r} is no time at all: a reservation lasts at least a "
            "minute; give a Slurm time such as '30' (minutes), '4:00:00' or '2-00:00:00', or "
            "UNLIMITED",
        )
        return
    if end is not None and end <= start:
        yield issue(f"{res.path}.end", f"end {res.end} is not after start {res.start}")
        return
    periods = [f for f in res.flags if f in RESERVATION_PERIODS]
    if len(periods) > 1:
        yield issue(f"{res.path}.flags", f"one recurrence at most, not {', '.join(periods)}")
    moment = now()
    if start >= moment:
        return
    if not periods and end is not None and end <= moment:
        yield issue(
            f"{res.path}.start",
            f"reservation {res.name!r} ended at {end.isoformat()}, in the past; remove it or "
            "move it (the Ansible task deletes reservations the blueprint drops)",
        )
    else:
        yield issue(
            f"{res.path}.start",
            f"starts in the past ({res.start}); slurmctld refuses to create a reservation that "
            "started more than 10 minutes ago, so only one that already exists is kept",
            level="warning",
        )


def _reservations_overlap(estate: Estate) -> Iterator[Finding]:
    """slurmctld refuses a reservation over nodes another one holds at the same time, unless
    one of them is `maint` or `overlap`; the later one in the blueprint (created second) is
    the one refused.

    Swept in order of start: each reservation looks up, by the pools it holds whole and the
    hosts it holds one by one (:class:`HeldNodes`), which of those still running hold them.
    No pool's hosts are listed, and no two reservations apart in time are compared.
    """
    spans: list[tuple[datetime, int, datetime | None]] = []
    reservations = estate.slurm.reservations
    for index, res in enumerate(reservations):
        flags = set(res.flags)
        if flags & {"maint", "overlap"} or flags & set(RESERVATION_PERIODS):
            continue
        try:
            end = reservation_end(res)
        except ValueError:
            continue
        if end is None or reservation_start(res) < end:  # no time at all: a finding of its own
            spans.append((reservation_start(res), index, end))
    spans.sort(key=lambda span: (span[0], span[1]))
    # the reservations running at the sweep's time, by what they hold
    whole: defaultdict[str, set[int]] = defaultdict(set)  # pool -> holding it whole
    partly: defaultdict[str, set[int]] = defaultdict(set)  # pool -> holding some of its hosts
    by_host: defaultdict[str, set[int]] = defaultdict(set)  # host -> holding it alone
    ending: list[tuple[datetime, int]] = []
    # for the later of each pair in the blueprint: the earlier ones it meets
    refused: defaultdict[int, set[int]] = defaultdict(set)
    for start, index, end in spans:
        while ending and ending[0][0] <= start:
            _, gone = heapq.heappop(ending)
            _hold(reservation_nodes(estate, reservations[gone]), gone, whole, partly, by_host, -1)
        held = reservation_nodes(estate, reservations[index])
        met: set[int] = set()
        for pool in held.pools:
            met |= whole[pool] | partly[pool]
        for pool in held.host_pools:
            met |= whole[pool]
        for host in held.hosts:
            met |= by_host[host]
        for meeting in met:
            if reservations[meeting].name != reservations[index].name:
                refused[max(index, meeting)].add(min(index, meeting))
        _hold(held, index, whole, partly, by_host, +1)
        if end is not None:
            heapq.heappush(ending, (end, index))
    for index in sorted(refused):
        res = reservations[index]
        other = reservations[min(refused[index])]
        pools, hosts = shared_nodes(
            estate, reservation_nodes(estate, res), reservation_nodes(estate, other)
        )
        more = len(refused[index]) - 1
        yield issue(
            res.path,
            f"holds {quote(_held_hostlist(estate, pools, hosts))} while reservation "
            f"{other.name!r} does{f' (and {more} more reservation(s))' if more else ''}; "
            "slurmctld refuses the second unless one has flag maint or overlap",
        )


def _hold(
    held: HeldNodes,
    index: int,
    whole: defaultdict[str, set[int]],
    partly: defaultdict[str, set[int]],
    by_host: defaultdict[str, set[int]],
    step: int,
) -> None:
    """Enter (step +1) or remove (-1) a reservation in the sweep's lookup tables."""
    for table, keys in ((whole, held.pools), (partly, held.host_pools), (by_host, held.hosts)):
        for key in keys:
            if step > 0:
                table[key].add(index)
            else:
                table[key].discard(index)


@check
def mpi_ports_valid(estate: Estate) -> Iterator[Finding]:
    ports = estate.slurm.mpi.ports
    if ports is None:
        return
    low, high = ports
    if not 1024 <= low < high <= 65_535:
        yield issue(
            "slurm.mpi.ports",
            f"{low}-{high} is not a range of unprivileged ports: 1024 <= first < last <= 65535",
        )
    elif any(low <= port <= high for port in _slurm_daemon_ports(estate)):
        yield issue(
            "slurm.mpi.ports",
            f"{low}-{high} includes the slurmctld or slurmd port "
            f"({slurmctld_port_text(estate)}, {slurmd_port(estate)})",
        )


@check
def rest_api_valid(estate: Estate) -> Iterator[Finding]:
    rest = estate.slurm.rest_api
    if rest is None:
        return
    if not estate.slurm_pools:
        yield issue("slurm.rest_api", "slurmrestd needs Slurm: the estate has no Slurm pools")
    if rest.user in ("root", SLURM_USER):
        yield issue(
            "slurm.rest_api.user",
            f"slurmrestd must not run as {rest.user!r} (root or SlurmUser): anyone reaching it "
            "could act as that user; choose an unprivileged user such as 'slurmrestd'",
        )
    elif rest.user in SYSTEM_USERS:
        yield issue(
            "slurm.rest_api.user",
            f"slurmrestd must not run as {rest.user!r}: {SYSTEM_USERS[rest.user]}; the "
            "slurmrestd role would take that account over (its group, shell and home) and "
            "slurmrestd would act with its rights; choose a user of its own such as 'slurmrestd'",
        )
    if rest.user in {u.name for u in estate.identity.users}:
        yield issue(
            "slurm.rest_api.user",
            f"{rest.user!r} is a person of identity.users; slurmrestd runs as a service user",
        )
    taken = {port: "slurmctld" for port in _slurmctld_port_list(estate)}
    taken[slurmd_port(estate)] = "slurmd"
    accounting = estate.slurm.accounting
    if accounting and accounting.host == rest.host:
        taken[accounting.port] = "slurmdbd"
    if rest.port in taken:
        yield issue(
            "slurm.rest_api.port",
            f"port {rest.port} is {taken[rest.port]}'s; slurmrestd's default is 6820",
        )


# --- where the Slurm packages come from (slurm.packages) -------------------------------------


def _build_named(packages: SlurmPackages) -> str:
    """The Slurm a package source installs, as a finding names it."""
    build = slurm_build(packages)
    if build.release is None:
        return "the site's Slurm (slurm.packages.source site)"
    return f"Debian's slurm-wlm {build.release} (slurm.packages.source {packages.source})"


@check
def slurm_package_source(estate: Estate) -> Iterator[Finding]:
    """The package source installs the Slurm release the configuration is written for
    (versions.slurm), and a repository and what its build supports are said of a site source
    only: Debian's builds are known."""
    packages = estate.slurm.packages
    build = slurm_build(packages)
    if build.release is not None:
        given = (
            ("apt_repository", packages.apt_repository),
            ("apt_key_url", packages.apt_key_url),
            ("nvml", packages.nvml),
            ("jwt", packages.jwt),
        )
        for key, value in given:
            if value is not None:
                yield issue(
                    f"slurm.packages.{key}",
                    f"source {packages.source} installs Debian's own slurm-wlm {build.release}, "
                    f"whose build is known; {key} describes a site's repository: set source "
                    f"site, or remove {key}",
                )
    elif packages.apt_repository is None:
        yield issue(
            "slurm.packages.source",
            "source site installs Slurm from the site's repository: give apt_repository, its "
            "apt source line like 'deb [signed-by=/etc/apt/keyrings/slurm.asc] "
            "https://repo.example.org/slurm bookworm main'",
        )
    if (
        packages.apt_key_url
        and packages.apt_repository
        and f"signed-by={SLURM_APT_KEYRING}" not in packages.apt_repository
    ):
        yield issue(
            "slurm.packages.apt_repository",
            f"apt_key_url is saved as {SLURM_APT_KEYRING}, and apt trusts a key there only "
            f"for a source line that names it: write 'deb [signed-by={SLURM_APT_KEYRING}] ...'",
        )
    if not estate.slurm_pools:
        return  # no Slurm host installs the packages
    version = estate.versions.slurm
    if build.release is None:
        if not estate.versions.slurm_declared:
            yield issue(
                "slurm.packages.source",
                "source site installs the Slurm release its repository carries, which the "
                f"blueprint names: set versions.slurm (one of {', '.join(SLURM_VERSIONS)})",
            )
    elif version.text != build.release:
        others = [
            f"source {source} (Slurm {other.release})"
            for source, other in DEBIAN_SLURM_BUILDS.items()
            if other.release == version.text
        ]
        yield issue(
            "versions.slurm",
            f"slurm.packages.source {packages.source} installs Slurm {build.release}, not "
            f"{version.text}: set versions.slurm to {build.release!r}, "
            + "".join(f"use {other}, " for other in others)
            + f"or use source site with an apt_repository that carries Slurm {version.text}",
        )


@check
def slurm_build_has_plugins(estate: Estate) -> Iterator[Finding]:
    """What the rendered files load is in the Slurm the package source installs: gpu_nvml for
    gres.conf AutoDetect=nvml, auth_jwt.so for AuthAltTypes=auth/jwt. A hosted pool's slurmd
    runs in Slinky's image, not from these packages."""
    if not estate.slurm_pools:
        return
    packages = estate.slurm.packages
    build = slurm_build(packages)
    fix = "source site with the apt_repository of a Slurm built with"
    if not build.nvml:
        for pool in estate.slurm_pools:
            if pool.hosted or pool.gpus is None or not autodetects_nvml(pool):
                continue
            if pool.gpus.mig:
                key, what, other = "mig", "MIG instances", "give the pool whole GPUs"
                seen = "the pool's MIG devices"
            else:
                key, what = "autodetect", "the GPUs (gpus.autodetect nvml)"
                other = "remove gpus.autodetect (gres.conf then lists /dev/nvidia*)"
                seen = "the pool's GPUs"
            yield issue(
                f"{pool.path}.gpus.{key}",
                f"gres.conf finds {what} with NVML (AutoDetect=nvml), and "
                f"{_build_named(packages)} is built without Slurm's gpu_nvml plugin: slurmd "
                f"would not see {seen}. Use slurm.packages {fix} NVML (nvml: true), or {other}",
            )
    if estate.slurm.rest_api is not None and not build.jwt:
        debian = "".join(
            f"source {source} ({other.jwt_package or 'slurm-wlm'}, Slurm {other.release}), "
            for source, other in DEBIAN_SLURM_BUILDS.items()
            if other.jwt
        )
        yield issue(
            "slurm.rest_api",
            "the REST API sets AuthAltTypes=auth/jwt, which needs Slurm's auth_jwt.so, and "
            f'{_build_named(packages)} has none: every Slurm daemon would exit with "cannot '
            f'find auth plugin for auth/jwt". Use slurm.packages {debian}or {fix} libjwt '
            "(jwt: true), or remove slurm.rest_api",
        )


@check
def slurm_times_valid(estate: Estate) -> Iterator[Finding]:
    half_life = estate.slurm.scheduling.fairshare_half_life
    times = [("slurm.scheduling.fairshare_half_life", half_life)] if half_life else []
    times += [(f"{q.path}.max_time", q.max_time) for q in estate.slurm.qos if q.max_time]
    for part in estate.slurm.partitions:
        times.append((f"{part.path}.max_time", part.max_time))
        if part.default_time:
            times.append((f"{part.path}.default_time", part.default_time))
    for path, text in times:
        try:
            slurm_minutes(text)
        except ValueError as err:
            yield issue(path, f"{text!r} is not a valid Slurm time: {err}")
    yield from _half_life_usable(estate)
    for part in estate.slurm.partitions:
        try:
            limit, default = slurm_minutes(part.max_time), slurm_minutes(part.default_time or "0")
        except ValueError:
            continue
        if part.default_time and limit is not None and (default is None or default > limit):
            yield issue(
                f"{part.path}.default_time",
                f"default_time {part.default_time} is above max_time {part.max_time}",
            )


def _half_life_usable(estate: Estate) -> Iterator[Finding]:
    """slurmctld reads PriorityDecayHalfLife=UNLIMITED as about 136 years, and refuses 0
    unless PriorityUsageResetPeriod resets usage instead."""
    text = estate.slurm.scheduling.fairshare_half_life
    if text is None:
        return  # priority/basic: no half-life
    try:
        minutes = slurm_minutes(text)
    except ValueError:
        return  # reported as not a valid time
    resets = any(k.lower() == "priorityusageresetperiod" for k in estate.slurm.options)
    if minutes is None or (minutes == 0 and not resets):
        yield issue(
            "slurm.scheduling.fairshare_half_life",
            f"{text!r} is not a half-life slurmctld accepts: it misreads UNLIMITED, and "
            "refuses 0 unless slurm.options sets PriorityUsageResetPeriod; give a time "
            "such as 7-0",
        )


# Keys estategen renders only with power saving (a Slurm pool with cloud nodes), which
# slurm.options may set without it: ResumeTimeout also bounds `scontrol reboot` with
# RebootProgram (slurm.conf(5): "Nodes which reboot after this time frame will be marked DOWN")
OPTIONS_WITHOUT_POWER_SAVING = frozenset({"ResumeTimeout"})


@check
def slurm_options_not_owned(estate: Estate) -> Iterator[Finding]:
    """`slurm.options` may not set a key estategen renders, one that decides whom the daemons
    trust, or one that opens a node or partition record (estategen.slurm_keys); nor a password,
    which slurm.conf, readable by every user, cannot hold."""
    refused = {name.lower(): name for name in REFUSED_IN_OPTIONS}
    for key in estate.slurm.options:
        refusal = password_refusal(key)
        if refusal is not None:
            yield issue(f"slurm.options.{key}", refusal)
            continue
        name = refused.get(key.lower())
        if name in OPTIONS_WITHOUT_POWER_SAVING and not renders_power_saving(estate):
            value = estate.slurm.options[key]
            if not re.fullmatch(r"[0-9]{1,5}", value) or not 1 <= int(value) <= 65_533:
                yield issue(
                    f"slurm.options.{key}",
                    f"{value!r} is not a {name} slurmctld takes: give whole seconds, 1 to 65533",
                )
            continue
        if name is None:
            continue
        entry = slurm_key(name)
        if name in RECORD_KEYS:
            why = (
                f"{name} opens a record, not a parameter; estategen writes nodes and partitions "
                "from node_pools and slurm.partitions, and slurm.options holds parameters only"
            )
        elif entry is not None and entry.owner is Owner.RENDERED:
            why = (
                f"{name} is rendered by estategen from the blueprint; "
                "set it through the blueprint keys, not slurm.options"
            )
        else:
            why = (
                f"{name} is reserved: it decides whom the daemons trust or what the keys "
                "estategen renders mean, so slurm.options may not set it"
            )
        yield issue(f"slurm.options.{key}", why)


@check
def slurm_options_not_removed(estate: Estate) -> Iterator[Finding]:
    """`slurm.options` may not set a key Slurm removed by the release the blueprint targets:
    that slurmctld refuses the file (an unknown key, or fatal: ... removed)."""
    release = estate.versions.slurm.text
    for key in estate.slurm.options:
        removed = removed_key(key, release)
        if removed is None:
            continue
        instead = f"; use {removed.successor}" if removed.successor else "; delete it"
        yield issue(
            f"slurm.options.{key}",
            f"Slurm {removed.release} removed {removed.name}, and slurmctld {release} "
            f"(versions.slurm) refuses a slurm.conf that sets it{instead}",
        )


@check
def topology_version_gates(estate: Estate) -> Iterator[Finding]:
    """topology/block arrived in Slurm 23.11."""
    version = estate.versions.slurm
    for pool in estate.slurm_pools:
        if pool.blocks and not version.at_least("23.11"):
            yield issue(
                f"{pool.path}.network.block",
                f"NVLink blocks render topology/block, which needs Slurm 23.11 or newer; "
                f"versions.slurm is {version.text}",
            )
        if pool.switches and pool.blocks:
            yield issue(
                f"{pool.path}.network",
                "choose switch (topology/tree) or block (topology/block), not both",
            )
    kinds = {
        ("tree" if p.switches else "block") for p in estate.slurm_pools if p.switches or p.blocks
    }
    if len(kinds) > 1:
        yield issue(
            "node_pools",
            "pools mix switch and block topology; Slurm runs one topology plugin per cluster",
        )
    for pool in estate.kubernetes_pools:
        if pool.blocks:
            yield issue(f"{pool.path}.network.block", "NVLink blocks are a Slurm topology")


@check
def switches_cover_hosts(estate: Estate) -> Iterator[Finding]:
    """Nodes are spread evenly over the switches (or blocks) a pool lists."""
    for pool in estate.node_pools:
        for key, plural, names in (
            ("switch", "switches", pool.switches),
            ("block", "blocks", pool.blocks),
        ):
            if names and len(names) > len(pool.hosts):
                yield issue(
                    f"{pool.path}.network.{key}",
                    f"{len(names)} {plural} for {len(pool.hosts)} hosts; "
                    "each needs at least one host",
                )


@check
def queues_resolve(estate: Estate) -> Iterator[Finding]:
    teams = estate.teams_by_name
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        models = quota_capacity(estate, cluster.name)
        for queue in cluster.queues.teams:
            if queue.team not in teams:
                yield issue(
                    f"{queue.path}.team",
                    f"{queue.team!r} is not a team{_choices(teams, queue.team)}",
                )
            for key in queue.quota:
                if key not in models:
                    yield issue(
                        f"{queue.path}.quota.{key}",
                        f"no pool in cluster {cluster.name!r} provides {key!r}"
                        f"{_choices(models, key)}",
                    )


@check
def quotas_within_capacity(estate: Estate) -> Iterator[Finding]:
    """Nominal quotas of a cohort may not promise more GPUs than the cluster has."""
    for cluster in estate.kubernetes_clusters:
        if not cluster.queues:
            continue
        capacity = quota_capacity(estate, cluster.name)
        promised: dict[str, int] = defaultdict(int)
        askers: Counter[str] = Counter()
        for queue in cluster.queues.teams:
            for key, amount in queue.quota.items():
                promised[key] += amount
                askers[key] += 1
                if key in capacity and amount > capacity[key]:
                    yield issue(
                        f"{queue.path}.quota.{key}",
                        f"quota {amount} is above the {capacity[key]} {key} in cluster "
                        f"{cluster.name!r}",
                    )
        for key, amount in sorted(promised.items()):
            # one team's quota alone is reported above; the sum matters when teams share
            if key in capacity and amount > capacity[key] and askers[key] > 1:
                yield issue(
                    f"{cluster.path}.queues",
                    f"nominal quotas for {key} add up to {amount}, above the "
                    f"{capacity[key]} in cluster {cluster.name!r}",
                )


@check
def storage_pools_resolve(estate: Estate) -> Iterator[Finding]:
    pools = estate.pools_by_name
    for storage in estate.storage:
        for i, name in enumerate(storage.pools or ()):
            if name not in pools:
                yield issue(
                    f"{storage.path}.pools[{i}]",
                    f"{name!r} is not a node pool{_choices(pools, name)}",
                )
            elif pools[name].managed:
                yield issue(
                    f"{storage.path}.pools[{i}]",
                    f"pool {name!r} is a managed {pools[name].provider} pool: estategen mounts "
                    "file systems with Ansible on the hosts it builds, and the cloud's nodes are "
                    "not among them; list on-prem pools"
                    + _choices(n for n, p in pools.items() if not p.managed),
                )
        if (
            storage.storage_class
            and not storage.class_clusters
            and not any(
                pools[n].scheduler == "kubernetes" and not pools[n].managed
                for n in (pools if storage.pools is None else storage.pools)
                if n in pools
            )
        ):
            yield issue(
                f"{storage.path}.kubernetes.storage_class",
                "a storage class exposes the file system the hosts mount, so it needs an "
                "on-prem Kubernetes pool that mounts it (managed gke/eks nodes mount nothing), "
                "or the clusters whose CSI driver reaches it in kubernetes.clusters"
                + _choices(
                    n for n, p in pools.items() if p.scheduler == "kubernetes" and not p.managed
                ),
            )
        if storage.type == "lustre" and "@" not in storage.source:
            yield issue(
                f"{storage.path}.source",
                f"{storage.source!r}: a Lustre source names the MGS NID, like "
                "'10.0.0.1@o2ib:/scratch'",
            )


@check
def storage_without_storage_class(estate: Estate) -> Iterator[Finding]:
    """A file system listed on a Kubernetes pool is mounted on its hosts only: pods reach a
    file system through a storage class (storage[].kubernetes), and without one nothing in
    the cluster offers it."""
    pools = estate.pools_by_name
    for storage in estate.storage:
        if storage.storage_class is not None:
            continue
        named = [
            name
            for name in storage.pools or ()
            if name in pools and pools[name].scheduler == "kubernetes" and not pools[name].managed
        ]
        if named:
            yield issue(
                storage.path,
                f"{storage.name} is listed on Kubernetes pool{'s' if len(named) > 1 else ''} "
                f"{', '.join(named)}, whose hosts mount it at {storage.mount}, but pods cannot "
                f"use it: add kubernetes: {{storage_class: {storage.name}}} so pods claim it "
                "through a storage class, or list Slurm pools only",
                level="warning",
            )


# --- file system types and the CSI drivers that offer them ----------------------------------------

# FSx for Lustre's mount source (aws fsx describe-file-systems: DNSName, MountName)
_FSX_SOURCE = re.compile(
    r"fs-[0-9a-f]{8,17}\.fsx\.[a-z]{2}(-[a-z]+)+-[0-9]\.amazonaws\.com@tcp:/[a-z0-9]{1,8}"
)
# a Managed Lustre instance's mountPoint, IP_ADDRESS@tcp:/FILESYSTEM
_GKE_LUSTRE_SOURCE = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}@tcp:/[A-Za-z][A-Za-z0-9]{0,7}")
# Mountpoint options estategen sets itself, from source and s3.region
_S3_OWNED_OPTIONS = ("region", "prefix", "foreground", "bucket")


def _offering_clusters(estate: Estate, storage: Storage) -> list[str]:
    """Clusters that offer a storage class of this file system, in blueprint order."""
    return [
        c.name
        for c in estate.kubernetes_clusters
        if storage.storage_class and any(s is storage for s, _ in storage_classes(estate, c.name))
    ]


@check
def storage_types_and_drivers(estate: Estate) -> Iterator[Finding]:
    """Each type's source form and settings, and a CSI driver for each cluster offering it."""
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    credentials: dict[str, tuple[str, tuple[str, str]]] = {}
    for storage in estate.storage:
        pattern, form = STORAGE_SOURCES[storage.type]
        if not re.fullmatch(pattern, storage.source):
            yield issue(
                f"{storage.path}.source",
                f"{quote(storage.source)} is not a {storage.type} source: expected {form}",
            )
            continue
        for block, owner in (("s3", "s3"), ("beegfs", "beegfs")):
            present = storage.region is not None if block == "s3" else storage.conn_auth is not None
            if present and storage.type != owner:
                yield issue(
                    f"{storage.path}.{block}",
                    f"'{block}' settings are for type {owner}, not {storage.type}",
                )
            elif not present and storage.type == owner:
                yield issue(
                    f"{storage.path}.{block}",
                    "an s3 file system needs s3: {region, access_key_id: {secret: NAME}, "
                    "secret_access_key: {secret: NAME}}"
                    if owner == "s3"
                    else "a beegfs file system needs beegfs: {conn_auth: {secret: NAME}}, the "
                    "shared secret of BeeGFS connection authentication (connAuthFile)",
                )
        if storage.options and storage.type in ("gpfs", "beegfs"):
            yield issue(
                f"{storage.path}.options",
                f"{storage.type} mount options are set on the file system's own side "
                + (
                    "(mmchfs -o), not by the client"
                    if storage.type == "gpfs"
                    else "(beegfs-client.conf), not in a mount table"
                )
                + "; remove them",
            )
        for i, option in enumerate(storage.options):
            if storage.type == "s3" and option.partition("=")[0] in _S3_OWNED_OPTIONS:
                yield issue(
                    f"{storage.path}.options[{i}]",
                    f"{quote(option)}: estategen sets Mountpoint's {option.partition('=')[0]} "
                    "from source and s3.region",
                )
        for i, name in enumerate(storage.class_clusters):
            if name not in clusters:
                yield issue(
                    f"{storage.path}.kubernetes.clusters[{i}]",
                    f"{name!r} is not a Kubernetes cluster{_choices(clusters)}",
                )
        offering = _offering_clusters(estate, storage)
        gke_lustre = False
        for name in offering:
            cluster = clusters[name]
            where = (
                f"{storage.path}.kubernetes.clusters[{storage.class_clusters.index(name)}]"
                if name in storage.class_clusters
                else f"{storage.path}.kubernetes.storage_class"
            )
            driver = k8s_storage.access(storage, cluster.provider)
            if driver is None:
                yield issue(
                    where,
                    f"cluster {name!r} ({cluster.provider}) cannot offer {storage.type} "
                    f"storage: {k8s_storage.refusal(storage, cluster.provider)}",
                )
                continue
            mounting = [
                p
                for p in estate.pools_in_cluster(name)
                if not p.managed and storage.mounted_on(p.name)
            ]
            if driver == k8s_storage.HOST_MOUNT and not mounting:
                yield issue(
                    where,
                    f"cluster {name!r} reaches {storage.type} through its hosts' mount, and "
                    "none of its pools mounts it; add one of its pools to pools",
                )
            if driver == k8s_storage.FSX_DRIVER and not _FSX_SOURCE.fullmatch(storage.source):
                yield issue(
                    f"{storage.path}.source",
                    f"cluster {name!r} reaches Lustre through the FSx for Lustre CSI driver, "
                    "which mounts an FSx file system: the source must be its DNS name and "
                    "mount name like 'fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/"
                    "abcdefgh'",
                )
            if driver == k8s_storage.GKE_LUSTRE_DRIVER:
                gke_lustre = True
                if not _GKE_LUSTRE_SOURCE.fullmatch(storage.source):
                    yield issue(
                        f"{storage.path}.source",
                        f"cluster {name!r} reaches Lustre through GKE's Managed Lustre CSI "
                        "driver: the source must be the instance's mount point like "
                        "'10.90.1.4@tcp:/scratch'",
                    )
                if storage.instance is None:
                    yield issue(
                        f"{storage.path}.kubernetes",
                        f"cluster {name!r} reaches Lustre through GKE's Managed Lustre CSI "
                        "driver, whose volumes name the instance: set kubernetes.instance to "
                        "'PROJECT/ZONE/NAME'",
                    )
            if driver == k8s_storage.S3_DRIVER:
                minimum = ".".join(map(str, k8s_storage.S3_MIN_KUBERNETES))
                if not estate.versions.kubernetes.at_least(minimum):
                    yield issue(
                        where,
                        f"Mountpoint for Amazon S3's CSI driver {k8s_storage.S3_VERSION} needs "
                        f"Kubernetes {minimum} or later; versions.kubernetes is "
                        f"{estate.versions.kubernetes.text}",
                    )
                if not (storage.access_key_id and storage.secret_access_key):
                    continue  # no s3 block: a finding at storage[].s3 above
                pair = (storage.access_key_id.name, storage.secret_access_key.name)
                first = credentials.setdefault(name, (storage.name, pair))
                if first[1] != pair:
                    yield issue(
                        f"{storage.path}.s3",
                        f"cluster {name!r} already reaches S3 storage {first[0]!r} with other "
                        "credentials: Mountpoint's CSI driver holds one set per cluster; use "
                        "the same access_key_id and secret_access_key",
                    )
        if storage.instance is not None and not gke_lustre:
            yield issue(
                f"{storage.path}.kubernetes.instance",
                "kubernetes.instance names a GKE Managed Lustre instance; it is for a lustre "
                "file system offered in a gke cluster",
            )
    for pool in estate.node_pools:
        beegfs = [s.name for s in pool_mounts(estate, pool) if s.type == "beegfs"]
        if len(beegfs) > 1:
            yield issue(
                f"{pool.path}",
                f"pool {pool.name!r} mounts {len(beegfs)} BeeGFS file systems "
                f"({', '.join(beegfs)}); the storage_client role runs one BeeGFS client per "
                "host, so list one of them on this pool",
            )


# --- AKS -------------------------------------------------------------------------------------


@check
def aks_cluster_settings(estate: Estate) -> Iterator[Finding]:
    """An AKS cluster is found by resource group and name; Azure names regions in one word."""
    for cluster in estate.kubernetes_clusters:
        if cluster.provider == "aks" and cluster.resource_group is None:
            yield issue(
                cluster.path,
                "an aks cluster needs `resource_group`: the Azure resource group that holds "
                f"the AKS cluster {cluster.name!r}",
            )
        if cluster.provider != "aks" and cluster.resource_group is not None:
            yield issue(
                f"{cluster.path}.resource_group",
                "`resource_group` is the Azure resource group of an aks cluster; "
                f"this cluster is {cluster.provider}: remove it",
            )
        region = cluster.region
        if region is None or cluster.provider == "on-prem":
            continue
        if cluster.provider == "aks" and "-" in region:
            yield issue(
                f"{cluster.path}.region",
                f"{region!r} is not an Azure region; Azure names regions in one word, "
                "like westeurope or eastus2",
            )
        elif cluster.provider != "aks" and "-" not in region:
            example = "us-central1" if cluster.provider == "gke" else "eu-west-1"
            yield issue(
                f"{cluster.path}.region",
                f"{region!r} is not a {cluster.provider} region; it names regions like {example}",
            )


@check
def aks_pools_buildable(estate: Estate) -> Iterator[Finding]:
    """What an AKS agent pool accepts: its name, its labels, and MIG as one instance profile."""
    for pool in estate.node_pools:
        if pool.provider != "aks" or pool.scheduler != "kubernetes":
            continue
        if not re.fullmatch(AKS_POOL_NAME, pool.name):
            yield issue(
                f"{pool.path}.name",
                f"{pool.name!r} cannot name an AKS agent pool: a lowercase letter, then "
                "lowercase letters and digits, at most 12 (no '-')",
            )
        refused = [key for key in pool.labels if not kubelet_may_set(key)]
        refused += [key for key in pool.labels if key.split("/")[0] == "kubernetes.azure.com"]
        if refused:
            yield issue(
                f"{pool.path}.labels",
                f"AKS nodes cannot carry {', '.join(sorted(set(refused)))}: kubelet may not set "
                "labels of the kubernetes.io and k8s.io namespaces and AKS reserves "
                "kubernetes.azure.com; use a label of your own domain, such as example.com/role",
            )
        gpus = pool.gpus
        if not (gpus and gpus.mig and gpus.model in estate.gpu_models):
            continue
        model = estate.gpu_models[gpus.model]
        if not all(p in model.mig for p in gpus.mig):
            continue  # mig_layout_fits names the profiles of the model
        if aks_gpu_instance_profile(estate, pool) is None:
            offered = ", ".join(
                f"{model.mig[p].max} x {p} ({aks})"
                for p, aks in aks_mig_profiles(estate, model.name).items()
            )
            yield issue(
                f"{pool.path}.gpus.mig",
                "AKS partitions every GPU of a pool into as many instances of one size as fit "
                f"(gpuInstanceProfile); for {model.name} that is one of: {offered}",
            )


# --- EKS Cluster Autoscaler -----------------------------------------------------------------

# An AWS tag key holds at most 128 characters, a value 256 (Auto Scaling CreateOrUpdateTags).
AWS_TAG_KEY_MAX = 128
AWS_TAG_VALUE_MAX = 256


@check
def eks_autoscaler_tags_fit(estate: Estate) -> Iterator[Finding]:
    """The autoscaler learns a growing group's labels and taints from Auto Scaling group tags
    named after them; a label or taint key too long for a tag key could not be tagged."""
    for cluster in estate.kubernetes_clusters:
        view = ClusterView.of(estate, cluster)
        for pool in autoscaler.scaled_pools(view):
            if pool.gpus and pool.gpus.model not in estate.gpu_models:
                continue  # an unknown model: gpu_models_resolve's finding
            tags = autoscaler.node_template_tags(view, pool)
            for key, value in tags.items():
                if len(key) <= AWS_TAG_KEY_MAX and len(value) <= AWS_TAG_VALUE_MAX:
                    continue
                field = "taints" if "/node-template/taint/" in key else "labels"
                name = key.split("/node-template/", 1)[1].split("/", 1)[1]
                yield issue(
                    f"{pool.path}.{field}",
                    f"{name!r} is too long for the Cluster Autoscaler's node-template tag "
                    f"({len(key)} characters of at most {AWS_TAG_KEY_MAX} in the key, "
                    f"{len(value)} of {AWS_TAG_VALUE_MAX} in the value), which lets this "
                    "node group grow from zero; use a shorter key",
                )


# --- queue engines and training frameworks --------------------------------------------------------

# Volcano's Queue CRD (v1.15.1, scheduling.volcano.sh_queues.yaml) bounds spec.weight
VOLCANO_MAX_WEIGHT = 65535
# queues Volcano creates itself (pkg/webhooks/admission/queues/validate/validate_queue.go)
VOLCANO_OWN_QUEUES = ("default", "root")


@check
def queue_engine_keys(estate: Estate) -> Iterator[Finding]:
    """Each engine takes the keys it gives an effect to: Kueue a cohort and a pods-ready
    timeout, Volcano neither."""
    teams = estate.teams_by_name
    for cluster in estate.kubernetes_clusters:
        queues = cluster.queues
        if queues is None:
            continue
        if not queues.volcano:
            if not queues.cohort_declared:
                yield issue(
                    queues.path,
                    "'cohort' is required with engine kueue: the teams' ClusterQueues borrow "
                    "idle quota within it",
                )
            continue
        if queues.cohort_declared:
            yield issue(
                f"{queues.path}.cohort",
                "Volcano has no cohorts: its proportion plugin divides the whole cluster among "
                "the queues by weight; remove 'cohort' (or use engine: kueue)",
            )
        if queues.pods_ready_timeout is not None:
            yield issue(
                f"{queues.path}.pods_ready_timeout",
                "the timeout is Kueue's (waitForPodsReady); Volcano's gang plugin holds a "
                "job's pods until all of them can be placed instead; remove "
                "'pods_ready_timeout' (or use engine: kueue)",
            )
        for entry in queues.teams:
            if entry.team in VOLCANO_OWN_QUEUES:
                yield issue(
                    f"{entry.path}.team",
                    f"Volcano creates its own queue {entry.team!r}; a team queue cannot take "
                    "that name",
                )
            team = teams.get(entry.team)
            if team is not None and team.fairshare > VOLCANO_MAX_WEIGHT:
                yield issue(
                    f"{team.path}.fairshare",
                    f"fairshare {team.fairshare} becomes the weight of the team's Volcano queue "
                    f"in cluster {cluster.name!r}, which is at most {VOLCANO_MAX_WEIGHT}",
                )


@check
def frameworks_resolve(estate: Estate) -> Iterator[Finding]:
    """A framework is listed once, and TrainJob comes with the JobSet it runs as."""
    for cluster in estate.kubernetes_clusters:
        seen: set[str] = set()
        for i, name in enumerate(cluster.frameworks):
            if name in seen:
                yield issue(f"{cluster.path}.frameworks[{i}]", f"{name!r} is listed twice")
            seen.add(name)
        if "trainjob" in seen and "jobset" not in seen:
            index = cluster.frameworks.index("trainjob")
            yield issue(
                f"{cluster.path}.frameworks[{index}]",
                "trainjob needs jobset: Kubeflow Trainer runs each TrainJob as a JobSet "
                "(its chart depends on JobSet 0.12.0); add jobset to frameworks",
            )


def _article(word: str) -> str:
    """'an' before a vowel sound as these words are read out (an eks, an ldap, a gke)."""
    return "an" if word[:1] in "aeiol" else "a"


def _choices(names: Iterable[str], typed: str | None = None) -> str:
    """The names a reference may take, led by the closest to what was ``typed``."""
    listed = sorted(names)
    if not listed:
        return ""
    shown = ", ".join(listed[:12]) + (", ..." if len(listed) > 12 else "")
    return f"; known: {shown}{did_you_mean(typed, listed)}"


@check
def slurm_exporter_port_free(estate: Estate) -> Iterator[Finding]:
    """The Slurm exporter runs on the primary controller beside slurmctld and the node exporter
    (and slurmdbd, slurmd or the DCGM exporter when they run there): a port one of them holds
    keeps it from starting."""
    host = slurm_exporter_host(estate)
    if host is None:
        return
    obs = estate.observability
    holders = [(obs.node_exporter_port, "the node exporter")]
    holders += [(port, "slurmctld") for port in _slurmctld_port_list(estate)]
    accounting = estate.slurm.accounting
    if accounting and accounting.host == host:
        holders.append((accounting.port, "slurmdbd"))
    for pool in estate.slurm_pools:
        if host in pool.hosts:
            holders.append((slurmd_port(estate), "slurmd"))
            if pool.gpus:
                holders.append((obs.dcgm_exporter_port, "the DCGM exporter"))
    for port, holder in holders:
        if obs.slurm_exporter_port == port:
            yield issue(
                "observability.slurm_exporter.port",
                f"port {port} is taken on {host} by {holder}; the Slurm exporter runs on the "
                "primary controller beside it: choose another port",
            )
            return


# --- node health checks ---
_HEALTH_FACTS = {
    "gpus": "`gpus`",
    "mig": "a MIG layout (`gpus.mig`)",
    "mounts": "file systems mounted on it (`storage[]`)",
    "memory": "`memory_gb`",
}


@check
def health_checks_have_facts(estate: Estate) -> Iterator[Finding]:
    """A pool's health check verifies what the blueprint says about it: a check without that
    fact would check nothing, and a check outside Slurm or without slurm.health_check never
    runs."""
    for pool in estate.node_pools:
        if pool.health_checks is None:
            continue
        path = f"{pool.path}.health_check"
        if pool.scheduler != "slurm":
            yield issue(
                path,
                "health checks are run by slurmd and drain Slurm nodes; a Kubernetes pool's "
                "node health belongs to its cluster (node-problem-detector, GPU operator)",
            )
            continue
        if estate.slurm.health_check is None:
            yield issue(
                path,
                "set slurm.health_check ({interval, node_state}) so that slurmd runs this "
                "pool's health check",
            )
        facts = {
            "gpus": pool.gpus is not None,
            "mig": bool(pool.gpus and pool.gpus.mig),
            "mounts": bool(pool_mounts(estate, pool)),
            "memory": pool.memory_gb is not None,
        }
        seen: set[str] = set()
        for i, name in enumerate(pool.health_checks):
            if name in seen:
                yield issue(f"{path}.checks[{i}]", f"check {name!r} is listed twice")
            seen.add(name)
            if not facts[name]:
                yield issue(
                    f"{path}.checks[{i}]",
                    f"check {name!r} verifies {_HEALTH_FACTS[name]}, which pool {pool.name!r} "
                    "does not declare",
                )


@check
def health_check_node_state_valid(estate: Estate) -> Iterator[Finding]:
    """HealthCheckNodeState: ANY already covers every state, and CYCLE only spreads the runs."""
    health = estate.slurm.health_check
    if health is None:
        return
    states = set(health.node_state)
    path = "slurm.health_check.node_state"
    if len(states) < len(health.node_state):
        yield issue(path, "a node state is listed twice")
    if "any" in states and states - {"any", "cycle"}:
        yield issue(
            path,
            f"`any` already runs the check in every state; remove "
            f"{', '.join(sorted(states - {'any', 'cycle'}))}",
        )
    if states == {"cycle"}:
        yield issue(
            path,
            "`cycle` spreads the runs over the interval and names no state; add `any`, or "
            "idle, alloc, mixed",
        )
    if not estate.slurm_pools:
        yield issue("slurm.health_check", "the estate has no Slurm pools to check")


# --- Slurm hosted in Kubernetes ---


@check
def hosted_slurm_pools(estate: Estate) -> Iterator[Finding]:
    """A Slurm pool with `cluster` is a Slinky NodeSet of `nodes.max` slurmd pods joining the
    estate's slurmctld; it takes whole GPUs from the cluster's Kubernetes pools."""
    hosted = estate.hosted_pools()
    if not hosted:
        if estate.slurm.auth_key is not None:
            yield issue(
                "slurm.auth_key",
                "the auth/slurm key is for Slurm pools hosted in Kubernetes (a Slurm pool with "
                "`cluster`), and there are none: remove slurm.auth_key",
            )
        return
    version = estate.versions.slurm.text
    if version not in slinky.SLURM_RELEASES:
        yield issue(
            "versions.slurm",
            f"Slinky publishes no slurmd image for Slurm {version}; hosted Slurm pools "
            f"({', '.join(p.name for p in hosted)}) need one of "
            f"{', '.join(slinky.SLURM_RELEASES)}",
        )
    slurm = estate.slurm
    if slurm.auth_key is None:
        yield issue(
            "slurm",
            "hosted Slurm pools authenticate with auth/slurm: set slurm.auth_key "
            "{secret: NAME}, the slurm.key slurmctld and the slurmd pods share",
        )
    if slurm.rest_api is None:
        yield issue(
            "slurm",
            "hosted Slurm pools need slurm.rest_api: Slinky requires auth/jwt, and its pods "
            "sign with the same JWT key (slurm.rest_api.jwt_key) as the estate's slurmrestd",
        )
    clusters = {c.name for c in estate.kubernetes_clusters}
    for pool in hosted:
        for key, present in (
            ("hosts", bool(pool.host_expressions)),
            ("provider", pool.provider != "on-prem"),
            ("instance_type", pool.instance_type is not None),
            ("network", bool(pool.switches or pool.blocks)),
        ):
            if present:
                yield issue(
                    f"{pool.path}.{key}",
                    f"`{key}` does not apply to a hosted Slurm pool: its nodes are slurmd pods "
                    f"of cluster {pool.cluster!r}, as many as `nodes.max`",
                )
        if pool.nodes_max is None:
            yield issue(pool.path, "a hosted Slurm pool needs `nodes.max`: its slurmd pods")
        elif pool.nodes_min not in (None, 0, pool.nodes_max):
            yield issue(
                f"{pool.path}.nodes.min",
                "a NodeSet runs a fixed number of slurmd pods (`nodes.max`); leave out `min`",
            )
        for key, missing in (("cpu", pool.cpu is None), ("memory_gb", pool.memory_gb is None)):
            if missing:
                yield issue(pool.path, f"a hosted Slurm pool needs `{key}`: its pods request it")
        if pool.gpus and (pool.gpus.mig or pool.gpus.sharing.time_slicing or pool.gpus.sharing.mps):
            yield issue(
                f"{pool.path}.gpus",
                "a hosted Slurm pool's pods take whole GPUs; MIG, time-slicing and MPS are "
                "not supported there",
            )
    # the slurmd pods use the host network: a Slurm node takes its Kubernetes node's name
    hosts = {h: p for p in estate.slurm_pools for h in p.hosts}
    named: dict[str, NodePool] = {}
    for pool in hosted:
        for name in hosted_node_names(estate, pool):
            if name in hosts:
                yield issue(
                    pool.path,
                    f"the pool's slurmd pods use the host network and register by their "
                    f"Kubernetes node's name; {name} is also a host of Slurm pool "
                    f"{hosts[name].name!r}",
                )
                break
            if name in named:
                yield issue(
                    pool.path,
                    f"the slurmd pods of hosted pools {named[name].name!r} and {pool.name!r} "
                    f"may both run on {name} and register by its name: give them Kubernetes "
                    f"nodes of different GPU models or clusters",
                )
                break
            named[name] = pool
        unnamed = [p.name for p in hosted_backing_pools(estate, pool) if not p.hosts]
        if pool.gpus and unnamed:
            yield issue(
                pool.path,
                f"the pool's slurmd pods register by their Kubernetes node's name (host "
                f"network), and the nodes of {', '.join(unnamed)} have no names before their "
                f"provider creates them: gres.conf names no GPUs for them",
                level="warning",
            )
        if not pool.gpus or pool.cluster not in clusters:
            continue
        shapes = {
            p.gpus.count
            for p in estate.pools_in_cluster(pool.cluster)
            if p.gpus and p.gpus.model == pool.gpus.model
        }
        if shapes and shapes != {pool.gpus.count}:
            yield issue(
                f"{pool.path}.gpus.count",
                f"a slurmd pod takes every GPU of its node, so gres.conf can name their device "
                f"files: the {pool.gpus.model} nodes of cluster {pool.cluster!r} have "
                f"{', '.join(map(str, sorted(shapes)))}, not {pool.gpus.count}",
            )
    for cluster in sorted({p.cluster for p in hosted if p.cluster in clusters}):
        for model, taken in sorted(hosted_gpus(estate, cluster).items()):
            backing = hosted_gpu_backing(estate, cluster, model)
            if taken > backing:
                yield issue(
                    next(p.path for p in hosted if p.cluster == cluster and p.gpus),
                    f"hosted Slurm pools take {taken} {model} GPUs of cluster {cluster!r}, "
                    f"whose Kubernetes pools offer {backing} whole, unshared ones",
                )


@check
def hosted_options_not_owned(estate: Estate) -> Iterator[Finding]:
    if not estate.hosted_pools():
        return
    owned = {k.lower(): k for k in HOSTED_SLURM_OPTIONS}
    for key in estate.slurm.options:
        if key.lower() in owned:
            yield issue(
                f"slurm.options.{key}",
                f"{owned[key.lower()]} is rendered by estategen for the Slurm pools hosted in "
                "Kubernetes (enable_configless, room for their dynamic nodes); it cannot be "
                "passed through",
            )


@check
def suppressed_rules_exist(estate: Estate) -> Iterator[Finding]:
    """A suppression names a rule some check raises as a warning: a mistyped one would silence
    nothing, and an error is never silenced (:func:`estategen.suppression.refusal`)."""
    for i, rule in enumerate(estate.suppress):
        if refused := refusal(rule, RULES):
            yield issue(f"suppress[{i}]", refused)


# --- a site's own Slurm settings ---


def _slurmctld_port_list(estate: Estate) -> list[int]:
    low, high = slurmctld_ports(estate)
    return list(range(low, high + 1))


def _slurm_daemon_ports(estate: Estate) -> list[int]:
    return [*_slurmctld_port_list(estate), slurmd_port(estate)]


@check
def slurm_site_settings_valid(estate: Estate) -> Iterator[Finding]:
    """Site settings that slurmctld or slurmd refuse together, or that would break what the
    other outputs rely on."""
    site = estate.slurm.site
    if slurmd_port(estate) in _slurmctld_port_list(estate):
        yield issue(
            "slurm.ports.slurmd",
            f"port {slurmd_port(estate)} is slurmctld's ({slurmctld_port_text(estate)}); "
            "slurmd needs a port of its own",
        )
    paths = site.paths
    seen: dict[str, str] = {}
    shared = shares_state_and_spool(vars(paths))
    if shared and site.slurmd_user not in (None, "root"):
        yield issue(
            "slurm.paths.slurmd_spool_dir",
            f"{paths.slurmd_spool_dir} is also slurm.paths.state_save_location, which belongs "
            f"to SlurmUser slurm; slurmd runs as {site.slurmd_user} (slurm.slurmd_user) and "
            "could not write there: give slurmd a spool folder of its own",
        )
    for key, value in vars(paths).items():
        if value in seen and not (shared and {key, seen[value]} == set(DAEMON_FOLDERS)):
            yield issue(
                f"slurm.paths.{key}",
                f"{value} is also slurm.paths.{seen[value]}; each daemon file or folder needs "
                "its own path",
            )
        seen.setdefault(value, key)
    for key, value in vars(paths).items():
        tree = next((t for t in PROGRAM_TREES if value.startswith(t + "/")), None)
        if tree:
            yield issue(
                f"slurm.paths.{key}",
                f"{value} lies under {tree}, which holds programs and configuration, not "
                "daemon state or logs (the roles would make its folder the daemon's); "
                "choose a path under /var, /run, /srv or a site folder",
            )
    folders = {"state_save_location": paths.state_save_location}
    folders["slurmd_spool_dir"] = paths.slurmd_spool_dir
    for key, folder in folders.items():
        for other, value in vars(paths).items():
            # one daemon folder may hold the other: their files never share a name
            if other not in DAEMON_FOLDERS and value.startswith(folder + "/"):
                yield issue(
                    f"slurm.paths.{other}",
                    f"{value} lies inside slurm.paths.{key} ({folder}), which the daemon "
                    "fills and owns; choose a path outside it",
                )
    yield from _select_problems(estate)
    if "none" in site.task_plugins and len(site.task_plugins) > 1:
        yield issue(
            "slurm.task_plugins",
            "none means no task plugin and cannot go with "
            f"{', '.join(p for p in site.task_plugins if p != 'none')}; give [none] alone",
        )
    if "NoHold" in site.prolog_flags and "Alloc" not in site.prolog_flags:
        yield issue(
            "slurm.prolog_flags",
            "NoHold needs Alloc (slurm.conf(5), PrologFlags); add Alloc",
        )
    if "X11" in site.prolog_flags and "Contain" not in site.prolog_flags:
        yield issue(
            "slurm.prolog_flags",
            "X11 forwarding runs inside the job's extern step, which Contain creates; add Contain",
        )


def _select_problems(estate: Estate) -> Iterator[Finding]:
    from estategen.schema import SELECT_RESOURCES

    site = estate.slurm.site
    resources = [p for p in site.select_parameters if p in SELECT_RESOURCES]
    if len(resources) > 1:
        yield issue(
            "slurm.select.parameters",
            f"{' and '.join(resources)} both name the consumable resource; give one of "
            f"{', '.join(SELECT_RESOURCES)}",
        )
    if "CR_ONE_TASK_PER_CORE" in site.select_parameters and any(
        r.startswith("CR_CPU") for r in resources
    ):
        # slurmctld 22.05: "CR_ONE_TASK_PER_CORE is not compatible with CR_CPU*, please
        # change to use CR_CORE* instead", then "Bad SelectTypeParameter", and exits
        yield issue(
            "slurm.select.parameters",
            f"CR_ONE_TASK_PER_CORE does not go with {resources[0]}: slurmctld refuses it; use "
            "CR_Core or CR_Core_Memory, or drop CR_ONE_TASK_PER_CORE",
        )
    if site.select_type == "linear":
        allowed = {"CR_Memory", "CR_ONE_TASK_PER_CORE"}
        extra = [p for p in site.select_parameters if p not in allowed]
        if extra:
            yield issue(
                "slurm.select.parameters",
                f"select type linear takes only CR_Memory and CR_ONE_TASK_PER_CORE "
                f"(slurm.conf(5), SelectTypeParameters), not {', '.join(extra)}",
            )
    elif not resources:
        yield issue(
            "slurm.select.parameters",
            f"select type {site.select_type} needs a consumable resource: one of "
            f"{', '.join(r for r in SELECT_RESOURCES if r != 'CR_Memory')}",
        )
    if site.select_type != "cons_tres":
        # What the real slurmctld 22.05 and slurmd did (tests/test_slurm_site.py): with
        # shards it exits ("Use of shared gres requires the use of select/cons_tres"); with
        # select/linear it starts, but a step asking for a GPU fails ("Invalid generic
        # resource (gres) specification"); with select/cons_res `srun --gres=gpu:1` runs.
        for pool in estate.slurm_pools:
            if pool.gpus and pool.gpus.sharing.shard:
                yield issue(
                    f"{pool.path}.gpus.sharing.shard",
                    f"shards need select type cons_tres: slurmctld exits with select/"
                    f"{site.select_type} ('Use of shared gres requires the use of "
                    "select/cons_tres')",
                )
            elif pool.gpus and site.select_type == "linear":
                yield issue(
                    f"{pool.path}.gpus",
                    "select type linear gives jobs whole nodes but no GPUs: slurmd refuses a "
                    "step that asks for one ('Invalid generic resource (gres) "
                    "specification'); use cons_tres (or cons_res) for pools with GPUs",
                )
            elif pool.gpus:
                yield issue(
                    f"{pool.path}.gpus",
                    "with select type cons_res jobs get GPUs only with --gres=gpu:N: the "
                    "--gpus options and the partitions' per-GPU defaults (DefCpuPerGPU, "
                    "DefMemPerGPU, left out) need cons_tres",
                    level="warning",
                )
        for part in estate.slurm.partitions:
            for key in ("def_cpu_per_gpu", "def_mem_per_gpu"):
                if getattr(part.overrides, key) not in (None, "none"):
                    yield issue(
                        f"{part.path}.{key}",
                        f"per-GPU defaults need select type cons_tres, not {site.select_type}",
                    )


@check
def priority_basic_keys(estate: Estate) -> Iterator[Finding]:
    """priority/basic orders jobs by submission (slurm.conf(5), PriorityType): the settings
    of priority/multifactor would have no effect, so they are refused."""
    scheduling = estate.slurm.scheduling
    if scheduling.priority_type != "basic":
        return
    why = "priority type basic orders jobs first in, first out and ignores it"
    for key, value in scheduling.priority_weights.items():
        if value:
            yield issue(
                f"slurm.scheduling.priority_weights.{key}",
                f"a priority weight: {why}; remove it, or use priority type multifactor",
            )
    if scheduling.priority_weight_tres:
        yield issue(
            "slurm.scheduling.priority_weight_tres",
            f"PriorityWeightTRES: {why}; remove it, or use priority type multifactor",
        )
    if scheduling.half_life_declared:
        yield issue(
            "slurm.scheduling.fairshare_half_life",
            f"PriorityDecayHalfLife decays fair-share usage for multifactor: {why}; remove it",
        )
    for part in estate.slurm.partitions:
        if part.overrides.priority_job_factor is not None:
            yield issue(
                f"{part.path}.priority_job_factor",
                f"PriorityJobFactor is a multifactor factor: {why}; priority_tier orders the "
                "partitions",
            )
    for qos in estate.slurm.qos:
        if qos.priority:
            yield issue(
                f"{qos.path}.priority",
                f"a QoS priority weighs in multifactor's job priority: {why}",
            )
    for key in estate.slurm.options:
        if key.lower() in MULTIFACTOR_OPTIONS:
            yield issue(
                f"slurm.options.{key}",
                f"{key} is a setting of priority/multifactor: {why}",
            )
    # a team's fairshare also weighs its Kueue or Volcano queue
    queued = {
        entry.team for c in estate.kubernetes_clusters if c.queues for entry in c.queues.teams
    }
    for team in estate.identity.teams:
        if team.fairshare != 1 and team.name not in queued and estate.slurm_pools:
            yield issue(
                f"{team.path}.fairshare",
                f"fair share orders jobs under priority/multifactor only: {why} (sshare "
                "still shows the share); it weighs no Kubernetes queue of this team either",
                level="warning",
            )


@check
def slurm_plugins_fit(estate: Estate) -> Iterator[Finding]:
    """The scheduler, process tracking and job completion a site sets instead of
    estategen's, where they would break what the rest of slurm.conf or the roles rely on."""
    site = estate.slurm.site
    if site.scheduler != "backfill" and site.scheduler_parameters:
        backfill = [p for p in site.scheduler_parameters if p.startswith("bf_")]
        if backfill:
            yield issue(
                "slurm.scheduler_parameters",
                f"{', '.join(backfill)} tune the backfill scheduler, which scheduler "
                f"{site.scheduler} does not run; remove them, or use scheduler backfill",
            )
    if site.proctrack != "cgroup":
        if "cgroup" in site.task_plugins:
            yield issue(
                "slurm.proctrack",
                f"proctrack/{site.proctrack} tracks a step's processes by "
                f"{'parent process' if site.proctrack == 'linuxproc' else 'process group'}, "
                "and slurm.conf(5) warns it 'can fail to identify all processes': those "
                "escape the memory, core and device limits estategen's cgroup.conf sets "
                "through task plugin cgroup, and outlive the job; use proctrack cgroup, or "
                "task_plugins without cgroup",
            )
        if site.proctrack == "linuxproc" and "X11" in site.prolog_flags:
            yield issue(
                "slurm.prolog_flags",
                "X11 does not go with proctrack linuxproc: slurmctld refuses the combination "
                "(slurm.conf(5), PrologFlags X11); use proctrack cgroup or drop X11",
            )
    location = site.job_completion_location
    if site.job_completion == "none" and location is not None:
        yield issue(
            "slurm.job_completion.location",
            "a location without a completion log: set type filetxt, or remove it",
        )
    elif location is not None:
        folder = site.paths.slurmctld_log_file.rsplit("/", 1)[0]
        if location.rsplit("/", 1)[0] != folder:
            yield issue(
                "slurm.job_completion.location",
                f"{location} is outside the folder of slurmctld's log ({folder}), the one "
                "folder the controller role makes for SlurmUser to write in; put the file "
                "there",
            )
        elif location in vars(site.paths).values():
            yield issue(
                "slurm.job_completion.location",
                f"{location} is also a daemon path of slurm.paths; give the completion log a "
                "file of its own",
            )


@check
def memory_enforcement_single(estate: Estate) -> Iterator[Finding]:
    """JobAcctGatherParams=OverMemoryKill next to task/cgroup: slurmctld exits.

    estategen's cgroup.conf constrains RAM (ConstrainRAMSpace=yes), so with task/cgroup the
    job's memory is already enforced by the kernel; read_slurm_conf() in
    src/slurmctld/read_config.c (22.05) then finds job_acct_oom_kill set as well and stops
    with "Jobs memory is being constrained by both TaskPlugin cgroup and JobAcctGather
    plugin" (seen on the real slurmctld, tests/test_slurm_site.py)."""
    options = estate.slurm.options
    key = next((k for k in options if k.lower() == "jobacctgatherparams"), None)
    if key is None or "cgroup" not in estate.slurm.site.task_plugins:
        return
    if any(item.strip().lower() == "overmemorykill" for item in str(options[key]).split(",")):
        yield issue(
            f"slurm.options.{key}",
            "OverMemoryKill with task plugin cgroup: slurmctld refuses two memory enforcement "
            "mechanisms and exits (estategen's cgroup.conf already constrains job memory); "
            "drop OverMemoryKill, or leave cgroup out of slurm.task_plugins",
        )


@check
def pool_site_settings_valid(estate: Estate) -> Iterator[Finding]:
    for host, address in estate.slurm.controller_addresses.items():
        path = f"slurm.controller_addresses.{host}"
        if host not in estate.slurm.controllers:
            yield issue(path, f"{host!r} is not in slurm.controllers")
        elif hostlist.count(address, addresses=True) != 1:
            yield issue(path, "give one address (SlurmctldHost=NAME(ADDRESS))")
    for pool in estate.node_pools:
        if not pool.addresses:
            continue
        path = f"{pool.path}.addresses"
        if pool.scheduler != "slurm" or pool.hosted or pool.elastic:
            yield issue(
                path,
                "addresses are slurm.conf's NodeAddr of a Slurm pool's listed hosts; "
                + (
                    "a cloud node's address is the one its slurmd registers from"
                    if pool.elastic
                    else "this pool's nodes are not listed in slurm.conf"
                ),
            )
        elif len(pool.addresses) != len(pool.hosts):
            yield issue(
                path,
                f"{len(pool.addresses)} addresses for {len(pool.hosts)} hosts: give one "
                "address per host, in the order `hosts` names them",
            )
    for pool in estate.slurm_pools:
        if pool.cpu and pool.cpu.cpus is not None and pool.cpu.cpus != pool.cpu.cores:
            yield issue(
                f"{pool.path}.cpu.cpus",
                f"give the cores ({pool.cpu.cores}: sockets x cores_per_socket), which makes "
                "each core a Slurm CPU, or leave cpus out for every thread "
                f"({pool.cpu.threads})",
            )
    for pool in estate.kubernetes_pools:
        slurm_only: list[tuple[str, object]] = [("real_memory_mib", pool.real_memory_mib)]
        if pool.cpu:
            slurm_only.append(("cpu.cpus", pool.cpu.cpus))
        if pool.gpus:
            slurm_only += [
                ("gpus.gres_type", pool.gpus.gres_type),
                ("gpus.feature", pool.gpus.feature),
                ("gpus.autodetect", pool.gpus.autodetect),
                ("gpus.typed", None if pool.gpus.typed else False),
            ]
        for key, value in slurm_only:
            if value is not None:
                yield issue(
                    f"{pool.path}.{key}",
                    f"{key} sets what slurm.conf or gres.conf says of a Slurm pool's nodes; "
                    "a Kubernetes pool has none: remove it",
                )
    types: dict[str, tuple[str, str]] = {}
    for pool in estate.slurm_pools:
        if pool.real_memory_mib is not None:
            if pool.memory_gb is None:
                yield issue(
                    f"{pool.path}.real_memory_mib",
                    "real_memory_mib refines memory_gb; give memory_gb too",
                )
            elif pool.real_memory_mib > pool.memory_gb * 1024:
                yield issue(
                    f"{pool.path}.real_memory_mib",
                    f"{pool.real_memory_mib} MiB is more than the node's memory_gb "
                    f"({pool.memory_gb * 1024} MiB); slurmd would register the node with "
                    "less and slurmctld would drain it",
                )
        if pool.gpus and pool.gpus.mig and pool.gpus.autodetect == "off":
            yield issue(
                f"{pool.path}.gpus.autodetect",
                "MIG instances are found by NVML only (gres.conf AutoDetect=nvml); remove "
                "autodetect or set it to nvml",
            )
        if pool.gpus and not pool.gpus.typed:
            for key, value in (("gres_type", pool.gpus.gres_type), ("mig", pool.gpus.mig)):
                if value:
                    yield issue(
                        f"{pool.path}.gpus.{key}",
                        f"typed false writes the GRES without a type, and {key} names one "
                        "(a MIG profile is the type of its instances): remove one of them",
                    )
        kind = gres_type(pool) if pool.gpus else None
        if pool.gpus and not pool.gpus.mig and kind is not None:
            first = types.setdefault(kind, (pool.gpus.model, pool.path))
            if first[0] != pool.gpus.model:
                yield issue(
                    f"{pool.path}.gpus.gres_type",
                    f"GRES type {kind!r} is {first[0]} in {first[1]}; one type names one GPU "
                    "model (billing weights and accounting count it per type)",
                )


def _untyped_gpus_apart(estate: Estate) -> Iterator[Finding]:
    """estategen's billing weights bill untyped GPU GRES as gres/gpu, which every GPU job
    counts, typed or not: in one partition untyped pools go with no typed ones, and with
    untyped pools of their own model only (one weight)."""
    if estate.slurm.accounting is None:
        return  # no GRES billing without accounting
    for part in estate.slurm.partitions:
        if part.overrides.billing_weights is not None:
            continue  # the site's own weights
        pools = [estate.pools_by_name.get(name) for name in part.pools]
        gpu_pools = [p for p in pools if p and p.gpus]
        untyped = {p.gpus.model for p in gpu_pools if p.gpus and not p.gpus.typed}
        typed = [p.name for p in gpu_pools if p.gpus and p.gpus.typed]
        if untyped and (typed or len(untyped) > 1):
            others = f"typed GPU pools ({', '.join(typed)})" if typed else "several GPU models"
            yield issue(
                f"{part.path}.pools",
                f"untyped GPU GRES next to {others}: estategen's billing weight for gres/gpu "
                "would bill every GPU of the partition, typed ones twice; give the pools GRES "
                "types, or the partition its billing_weights",
            )


def _nodeset_problems(estate: Estate) -> Iterator[Finding]:
    """A partition's `nodeset` is one more name in slurm.conf's Nodes= namespace: not a
    node's, not a hosted pool's NodeSet, not ALL, and one partition's only."""
    taken = {h: "the name of a node" for p in estate.slurm_pools for h in p.hosts}
    taken.update({p.name: "the NodeSet of hosted pool " + p.name for p in estate.hosted_pools()})
    for part in estate.slurm.partitions:
        name = part.overrides.nodeset
        if name is None:
            continue
        path = f"{part.path}.nodeset"
        if any(estate.pools_by_name[p].hosted for p in part.pools if p in estate.pools_by_name):
            yield issue(
                path,
                "a partition over a hosted pool names that pool's own NodeSet; a NodeSet of "
                "listed nodes cannot hold the pods that register dynamically",
            )
        elif name.lower() == "all":
            yield issue(path, "ALL in a partition's Nodes= means every node; choose another name")
        elif name in taken:
            yield issue(path, f"{name!r} is already {taken[name]}; choose another name")
        taken.setdefault(name, f"the NodeSet of partition {part.name}")


@check
def partition_site_settings_valid(estate: Estate) -> Iterator[Finding]:
    yield from _untyped_gpus_apart(estate)
    qos_names = {q.name for q in estate.slurm.qos}
    teams = {t.name for t in estate.identity.teams}
    yield from _nodeset_problems(estate)
    tracked = {t.lower() for t in accounting_tres(estate)}  # once, not once per partition
    for part in estate.slurm.partitions:
        site = part.overrides
        for name in site.allow_qos:
            if name not in qos_names:
                yield issue(
                    f"{part.path}.allow_qos",
                    f"unknown QoS {name!r}; slurm.qos has {', '.join(sorted(qos_names)) or 'none'}",
                )
        for name in site.deny_accounts:
            if name not in teams:
                yield issue(f"{part.path}.deny_accounts", f"unknown team {name!r}")
        if site.deny_accounts and part.teams:
            yield issue(
                f"{part.path}.deny_accounts",
                "give teams (AllowAccounts) or deny_accounts, not both: slurmctld uses "
                "AllowAccounts and ignores DenyAccounts",
            )
        if (site.allow_qos or site.deny_accounts) and estate.slurm.accounting is None:
            yield issue(
                f"{part.path}",
                "allow_qos and deny_accounts need slurm.accounting: slurmctld knows QoS and "
                "accounts from slurmdbd",
            )
        for key, _ in site.billing_weights or ():
            if "/" not in key or key.lower() == "fs/disk" or key.lower() in tracked:
                continue
            yield issue(
                f"{part.path}.billing_weights.{key}",
                f"slurmctld bills only TRES it tracks, and {key} is not among them: "
                + (
                    "add it to slurm.accounting.tres"
                    if estate.slurm.accounting
                    else "GRES, license and burst-buffer TRES need slurm.accounting"
                ),
            )
        default_memory = def_mem_per_cpu(estate, part)
        if site.max_mem_per_cpu is not None and (default_memory or 0) > site.max_mem_per_cpu:
            # the real slurmctld takes the pair, then a job with the default memory fails
            # ("CPU count per node can not be satisfied")
            yield issue(
                f"{part.path}.max_mem_per_cpu",
                f"the partition's DefMemPerCPU ({default_memory} MiB"
                + ("" if site.def_mem_per_cpu else ", from its pools' RealMemory per CPU")
                + f") is above max_mem_per_cpu ({site.max_mem_per_cpu} MiB): jobs asking "
                "for no memory would fail; set def_mem_per_cpu at most max_mem_per_cpu",
            )
        if site.min_nodes is not None:
            pools = {n: estate.pools_by_name[n] for n in part.pools if n in estate.pools_by_name}
            nodes = sum(pool.node_count for pool in pools.values())
            if site.max_nodes is not None and site.min_nodes > site.max_nodes:
                yield issue(
                    f"{part.path}.min_nodes",
                    f"min_nodes ({site.min_nodes}) is above max_nodes ({site.max_nodes}): "
                    "slurmctld would refuse every job of the partition",
                )
            elif site.min_nodes > nodes:
                yield issue(
                    f"{part.path}.min_nodes",
                    f"min_nodes ({site.min_nodes}) is above the {nodes} nodes of the "
                    "partition's pools: no job of the partition could ever start",
                )
        if site.max_mem_per_cpu is not None and site.max_mem_per_node is not None:
            yield issue(
                f"{part.path}.max_mem_per_node",
                "give max_mem_per_cpu or max_mem_per_node, not both (slurm.conf(5): they "
                "exclude each other)",
            )
        if site.def_mem_per_node is not None:
            others = [k for k in ("def_mem_per_cpu", "def_mem_per_gpu") if getattr(site, k)]
            if others:
                yield issue(
                    f"{part.path}.def_mem_per_node",
                    f"give def_mem_per_node or {' and '.join(others)}, not both (slurm.conf(5): "
                    "DefMemPerCPU, DefMemPerGPU and DefMemPerNode are mutually exclusive)",
                )
            globals_ = [k for k in estate.slurm.options if k.lower() in _GLOBAL_MEMORY_DEFAULTS]
            if site.def_mem_per_node == "unlimited" and globals_:
                yield issue(
                    f"{part.path}.def_mem_per_node",
                    f"unlimited leaves the partition to slurm.conf's own default, and "
                    f"slurm.options sets {globals_[0]}: remove one of them",
                )
            limit = site.max_mem_per_node
            if isinstance(site.def_mem_per_node, int) and limit and site.def_mem_per_node > limit:
                yield issue(
                    f"{part.path}.def_mem_per_node",
                    f"def_mem_per_node ({site.def_mem_per_node} MiB) is above "
                    f"max_mem_per_node ({limit} MiB): jobs asking for no memory would fail",
                )


# slurm.conf parameters that give every partition without its own a default memory
_GLOBAL_MEMORY_DEFAULTS = frozenset({"defmempercpu", "defmempernode"})


@check
def accounting_site_settings_valid(estate: Estate) -> Iterator[Finding]:
    tracked = {t.lower() for t in accounting_tres(estate)}
    for key, _ in estate.slurm.scheduling.priority_weight_tres:
        if "/" in key and key.lower() != "fs/disk" and key.lower() not in tracked:
            yield issue(
                f"slurm.scheduling.priority_weight_tres.{key}",
                f"PriorityWeightTRES applies only to TRES slurmdbd tracks, and {key} is not "
                "among them: "
                + (
                    "add it to slurm.accounting.tres"
                    if estate.slurm.accounting
                    else "GRES, license and burst-buffer TRES need slurm.accounting"
                ),
            )
    accounting = estate.slurm.accounting
    if accounting is None or accounting.tres is None:
        return
    missing = [t for t in required_tres(estate) if t not in accounting.tres]
    if missing:
        yield issue(
            "slurm.accounting.tres",
            f"missing {', '.join(missing)}: the partitions' billing weights and the QoS GPU "
            "limits name them, and slurmctld refuses a TRES it does not track; add them",
        )


# --- the capacity warnings: one findings type, validate shows what report shows ---


@check
def capacity_warnings(estate: Estate) -> Iterator[Finding]:
    """Valid but probably not intended: the capacity warnings (:mod:`estategen.capacity`, which
    the report shows too), each under its own rule id (check/stranded-capacity, ...)."""
    for warning in warnings_of(estate):
        yield issue(warning.path, warning.message, "warning", rule=f"check/{warning.kind}")


# every check's rule id, for `suppress` and --suppress (checks register at import, above), with
# the check that raises it; the report's warnings are raised under their kinds' ids
RULES: dict[str, Check | None] = {
    rule_id(function): function for function in CHECKS if function is not capacity_warnings
} | {f"check/{kind}": None for kind in WARNING_KINDS}
RULE_IDS = frozenset(RULES)
