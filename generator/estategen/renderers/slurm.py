"""The batch side: slurm.conf, gres.conf, cgroup.conf, topology.conf, slurmdbd.conf, sacct.cfg.

Written the way an HPC admin would on a good day: one NodeName line per pool with hostlist
ranges, partitions with defaults derived from the pool shapes, and the accounting files that
make AllowAccounts and QoS mean something. Output follows ``versions.slurm``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from estategen import __version__, hostlist
from estategen.declarations import PARTITION_PARAMETERS, QOS_PARAMETERS, QosParameter, Time
from estategen.facts import (
    JWT_KEY_PATH,
    gpu_autodetect,
    gpu_gres,
    gpu_memory_mib_range,
    gres_type,
    health_checks,
    mig_gres_type,
    mig_instances,
    pool_mounts,
    reservation_hosts,
    reservation_name,
    reservation_prefix,
    slurmctld_port_text,
    slurmd_port,
    topology_plugin,
)
from estategen.kubernetes_facts import (
    HOSTED_AUTODETECT,
    autodetected_hosted_pools,
    hosted_node_names,
)
from estategen.model import (
    Estate,
    NodePool,
    Partition,
    Reservation,
    Version,
    slurm_minutes,
    slurm_time,
    spread,
)
from estategen.output import Files, renderer, templates, text
from estategen.slurm_facts import (
    MEMORY_RESERVE_FRACTION,
    MEMORY_RESERVE_MAX_FRACTION,
    MEMORY_RESERVE_MIN_MIB,
    SLURM_USER,
    accounting_tres,
    cpus_per_gpu,
    def_mem_per_cpu,
    gpu_billing_weight,
    gpu_device_files,
    memory_per_gpu,
    mps_shares,
    node_lines,
    parent_account,
    pool_real_memory,
    renders_power_saving,
    shards,
    site_memory_default,
    slurm_hostlist,
)
from estategen.slurm_names import qos_key

# Backfill looks this far ahead at most (minutes): 30 days.
BACKFILL_WINDOW_MAX = 43_200


@dataclass(frozen=True, slots=True)
class PartitionLine:
    name: str
    fields: list[tuple[str, str]]


def _nodesets(estate: Estate) -> list[tuple[str, str]]:
    """The NodeSet lines partitions name (partition `nodeset`): each gathers the hosts of its
    partition's pools."""
    out = []
    for part in estate.slurm.partitions:
        if part.overrides.nodeset:
            pools = [estate.pools_by_name[name] for name in part.pools]
            hosts = [host for pool in pools for host in pool.hosts]
            out.append((part.overrides.nodeset, slurm_hostlist(hosts)))
    return out


def _partition_line(estate: Estate, part: Partition) -> PartitionLine:
    pools = [estate.pools_by_name[name] for name in part.pools]
    hosts = [host for pool in pools for host in pool.hosts]
    # hosted pools' nodes register dynamically: the partition names their NodeSet
    members = [slurm_hostlist(hosts)] if hosts else []
    if part.overrides.nodeset:
        members = [part.overrides.nodeset]  # the NodeSet line gathers the hosts (nodesets())
    members += [p.name for p in pools if p.hosted]
    fields: list[tuple[str, str]] = [("Nodes", ",".join(members))]
    fields.append(("Default", "YES" if part.default else "NO"))
    fields.append(("MaxTime", slurm_time(part.max_time)))
    if part.default_time:
        fields.append(("DefaultTime", slurm_time(part.default_time)))
    site = part.overrides
    fields.append(("State", (site.state or "up").upper()))
    if part.teams:
        fields.append(("AllowAccounts", ",".join(part.teams)))
    if site.deny_accounts:
        fields.append(("DenyAccounts", ",".join(site.deny_accounts)))
    if site.allow_groups:
        fields.append(("AllowGroups", ",".join(site.allow_groups)))
    if site.allow_qos:
        fields.append(("AllowQos", ",".join(site.allow_qos)))
    if part.qos:
        fields.append(("QOS", part.qos))
    fields.append(("PriorityTier", str(part.priority_tier)))
    for parameter in PARTITION_PARAMETERS:
        value = getattr(site if parameter.site_override else part, parameter.key)
        if value is not None:
            fields.append((parameter.slurm, parameter.slurm_text(value)))
    gpu_pools = [p for p in pools if p.gpus and p.cpu and p.memory_gb]
    # Every job gets memory by default, not the whole node: a job without GPUs by its CPUs,
    # a GPU job by its GPUs (slurmctld applies DefMemPerGPU when a job asks for GPUs, and
    # DefMemPerCPU otherwise). A site's values replace them; only select/cons_tres knows
    # per-GPU defaults.
    # A site's DefMemPerNode replaces both (slurm.conf(5): DefMemPerCPU, DefMemPerGPU and
    # DefMemPerNode are mutually exclusive).
    default_memory = def_mem_per_cpu(estate, part)
    if default_memory is not None:
        fields.append(("DefMemPerCPU", str(default_memory)))
    # unlimited is Slurm's default and writes no line: slurmctld 22.05 shows a written
    # DefMemPerNode=UNLIMITED as DefMemPerCPU=9223372036854775807 (tests/realworld)
    if isinstance(site.def_mem_per_node, int):
        fields.append(("DefMemPerNode", str(site.def_mem_per_node)))
    if gpu_pools and estate.slurm.site.select_type == "cons_tres":
        if site.def_cpu_per_gpu != "none":
            per_gpu = site.def_cpu_per_gpu or min(cpus_per_gpu(p) for p in gpu_pools)
            fields.append(("DefCpuPerGPU", str(per_gpu)))
        # a global memory default of slurm.options stands unless the partition has its own
        if site.def_mem_per_node is None and (
            site.def_mem_per_gpu is not None or not site_memory_default(estate)
        ):
            mem_per_gpu = site.def_mem_per_gpu or min(memory_per_gpu(p) for p in gpu_pools)
            fields.append(("DefMemPerGPU", str(mem_per_gpu)))
    weights = (
        [f"{k}={v}" for k, v in site.billing_weights]
        if site.billing_weights is not None
        else _billing_weights(estate, gpu_pools)
    )
    if weights:
        fields.append(("TRESBillingWeights", ",".join(weights)))
    if part.hidden:
        fields.append(("Hidden", "YES"))
    return PartitionLine(part.name, fields)


def _billing_weights(estate: Estate, gpu_pools: list[NodePool]) -> list[str]:
    """CPU and memory, and with accounting each GPU type: without slurmdbd slurmctld has no
    GRES TRES and refuses weights for them."""
    billing = ["CPU=1.0", "Mem=0.25G"]
    if estate.slurm.accounting is None:
        return billing
    models = {
        gres_type(p, kind): kind.model
        for p in gpu_pools
        if p.gpus and not p.gpus.mig
        for kind in p.gpus.types
    }
    # untyped GRES bill gres/gpu itself (checks keep them apart from typed ones)
    for kind in sorted(models, key=lambda k: (k is not None, k or "")):
        tres = f"GRES/gpu:{kind}" if kind else "GRES/gpu"
        billing.append(f"{tres}={gpu_billing_weight(estate, models[kind])}")
    for pool in gpu_pools:
        assert pool.gpus is not None
        for profile in sorted(set(pool.gpus.mig)):
            model = estate.gpu_models[pool.gpus.model]
            share = model.mig[profile].compute / 7 if profile in model.mig else 1
            weight = gpu_billing_weight(estate, pool.gpus.model) * share
            billing.append(f"GRES/gpu:{mig_gres_type(pool, profile)}={weight:.2f}")
    return list(dict.fromkeys(billing))


def _gres_types(estate: Estate) -> list[str]:
    kinds = []
    if any(p.gpus for p in estate.slurm_pools):
        kinds.append("gpu")
    if any(shards(p) for p in estate.slurm_pools):
        kinds.append("shard")
    if any(mps_shares(p) for p in estate.slurm_pools):
        kinds.append("mps")
    return kinds


def _backfill_window(estate: Estate) -> int:
    limits = [slurm_minutes(p.max_time) for p in estate.slurm.partitions]
    finite = [m for m in limits if m is not None]
    longest = max(finite, default=1440)
    if any(m is None for m in limits):
        longest = max(longest, 10_080)
    return min(BACKFILL_WINDOW_MAX, max(1440, longest))


def _scheduler_parameters(estate: Estate) -> str:
    if estate.slurm.site.scheduler_parameters is not None:
        return ",".join(estate.slurm.site.scheduler_parameters)
    if estate.slurm.site.scheduler != "backfill":
        return ""  # estategen's tuning is the backfill scheduler's: Slurm's own defaults
    window = _backfill_window(estate)
    resolution = 60 if window <= 1440 else 300 if window <= 10_080 else 600
    return ",".join(
        [
            "bf_continue",
            "bf_interval=30",
            "bf_max_job_test=1000",
            "bf_max_job_user=50",
            f"bf_resolution={resolution}",
            f"bf_window={window}",
            "default_queue_depth=1000",
            "max_rpc_cnt=150",
        ]
    )


_PREEMPT_TYPES = {
    "none": "preempt/none",
    "qos": "preempt/qos",
    "partition_prio": "preempt/partition_prio",
}
_PRIORITY_WEIGHTS = {
    "age": "PriorityWeightAge",
    "assoc": "PriorityWeightAssoc",
    "fairshare": "PriorityWeightFairshare",
    "job_size": "PriorityWeightJobSize",
    "partition": "PriorityWeightPartition",
    "qos": "PriorityWeightQOS",
}


def _preempt_mode(estate: Estate) -> str:
    preemption = estate.slurm.scheduling.preemption
    if preemption.type == "none":
        return "OFF"
    mode = preemption.mode.upper()
    return "SUSPEND,GANG" if mode == "SUSPEND" else mode


def _topology_kind(estate: Estate) -> str | None:
    return topology_plugin((p.blocks, p.switches) for p in estate.slurm_pools)


def topology_conf(estate: Estate) -> str | None:
    kind = _topology_kind(estate)
    if kind is None:
        return None
    members: dict[str, list[str]] = {}
    for pool in estate.slurm_pools:
        if pool.hosted:
            continue
        names = pool.blocks if kind == "block" else pool.switches
        if not names:
            names = (f"{pool.name}-{'block' if kind == 'block' else 'leaf'}",)
        for group, hosts in spread(pool.hosts, names):
            members.setdefault(group, []).extend(hosts)
    groups = [(name, slurm_hostlist(hosts)) for name, hosts in sorted(members.items())]
    context: dict[str, Any] = {
        "kind": kind,
        "groups": groups,
        "spine": f"{estate.slurm.cluster_name}-spine",
        "leaves": slurm_hostlist(members) if _all_hostnames(members) else ",".join(sorted(members)),
        "block_size": min(len(h) for h in members.values()),
        "block_sizes": estate.versions.slurm.at_least("24.05"),
    }
    return _render("topology.conf.j2", estate, **context)


def _all_hostnames(names: Iterable[str]) -> bool:
    try:
        hostlist.compress(names)
    except hostlist.HostlistError:
        return False
    return True


def _render(template: str, estate: Estate, **context: Any) -> str:
    return (
        templates()
        .get_template(f"slurm/{template}")
        .render(
            estate=estate,
            version=__version__,
            slurm_version=estate.versions.slurm.text,
            slurm_time=slurm_time,
            **context,
        )
    )


def slurm_conf(estate: Estate) -> str:
    slurm = estate.slurm
    weights = slurm.scheduling.priority_weights
    return _render(
        "slurm.conf.j2",
        estate,
        slurm=slurm,
        slurm_user=SLURM_USER,
        site=slurm.site,
        slurmctld_port=slurmctld_port_text(estate),
        slurmd_port=slurmd_port(estate),
        task_plugin=",".join(f"task/{p}" for p in slurm.site.task_plugins),
        gres_types=",".join(_gres_types(estate)),
        scheduler_parameters=_scheduler_parameters(estate),
        priority_weights=[(_PRIORITY_WEIGHTS[k], v) for k, v in sorted(weights.items()) if v],
        preempt_type=_PREEMPT_TYPES[slurm.scheduling.preemption.type],
        preempt_mode=_preempt_mode(estate),
        accounting_tres=",".join(accounting_tres(estate)),
        # Without accounting: accounting_storage/none up to 23.02; 23.11 removed that plugin,
        # and slurm.conf(5) 23.11 and 24.11 list only accounting_storage/slurmdbd: "When this
        # is not set it indicates that account records are not maintained"
        accounting_storage_none=not estate.versions.slurm.at_least("23.11"),
        topology=_topology_kind(estate),
        mpi_default=slurm.mpi.default,
        mpi_params=mpi_params(estate),
        auth_alt=auth_alt(estate),
        nodes=[line for p in estate.slurm_pools if not p.hosted for line in node_lines(estate, p)],
        hosted=hosted_conf(estate),
        nodesets=_nodesets(estate),
        partitions=[_partition_line(estate, p) for p in slurm.partitions],
        options=sorted(slurm.options.items()),
        reserve_percent=int(MEMORY_RESERVE_FRACTION * 100),
        reserve_min=MEMORY_RESERVE_MIN_MIB,
        reserve_max_percent=int(MEMORY_RESERVE_MAX_FRACTION * 100),
        health_check=estate.slurm.health_check,
        health_check_program=HEALTH_CHECK_PROGRAM,
        power_saving=_power_saving(estate),
    )


def gres_conf(estate: Estate) -> str:
    """gres.conf, one file every slurmd of the estate reads (configless).

    A pool's device files are listed under its nodes' names. A hosted pool's slurmd pods use
    the host network and register under their Kubernetes node's name
    (kubernetes_facts.hosted_node_names), which gres.conf can list only for nodes known in
    advance; the nodes of a provider's pool (GKE, EKS, AKS) are named when created. For those,
    slurmd finds the GPUs itself: one ``AutoDetect=nvidia`` line without NodeName, and
    ``AutoDetect=off`` for every node named here, which keeps each on-prem node as it was.
    Upstream, at the
    releases the hosted pods run (SchedMD/slurm slurm-25-11-7-1 and slurm-26-05-3-1):

    - a ``NodeName`` line applies only where its hostlist holds the node's name
      (src/interfaces/gres.c ``_parse_gres_config_node``, an exact ``hostlist_find``: no
      pattern can stand for a provider's names), a ``Name`` line without NodeName on every
      node, appended to the node's own lines with nothing to override it
      (``gres_g_node_config_load``). A global ``Name=gpu File=...`` line would reach the CPU
      nodes, where slurmd stops on a missing device file (``_my_stat``), and the NVML nodes,
      where records with and without File are fatal (``_foreach_gres_conf``);
    - an AutoDetect line without NodeName applies to every node, and a node-specific one
      (``off`` included) overrides it (doc/man/man5/gres.conf.5, AutoDetect;
      ``_handle_global_autodetect`` ignores the global value where a node's own line set
      one);
    - ``nvidia`` (since 24.11) reads /proc/driver/nvidia/gpus with no library
      (src/plugins/gpu/nvidia/gpu_nvidia.c), and src/plugins/gpu/Makefile.am builds it
      always; NVML only where Slurm was built with it, and Slinky's images
      (SlinkyProject/containers schedmd/slurm/25.11/ubuntu24.04/Dockerfile, commit 05efda08)
      build Slurm's own debian/ packaging, whose Build-Depends carry no NVML. slurm-operator
      v1.2.1 docs/installation.md ("With GPUs") sets the same ``AutoDetect=nvidia``;
    - a dynamic node (``slurmd -Z``) loads gres.conf in its slurmd (src/slurmd/slurmd/slurmd.c
      calls gres_g_node_config_load), so slurmctld's refusal of AutoDetect for the nodes it
      loads itself (State=CLOUD) does not reach it; the named CLOUD nodes carry ``off``;
    - a detected GPU keeps only a configured Type that is part of its driver's model name
      (src/plugins/gres/gpu/gres_gpu.c ``_normalize_sys_gres_types``, ``_match_gres``), so
      checks.hosted warns where the pool's Type is a catalog name.

    A provider's nodes without GPUs find none (gpu_nvidia.c logs that it found no driver) and
    register what ``--conf`` says.

    An on-prem pool whose GPUs slurmd finds (MIG, gpus.autodetect nvml or nvidia) gets its
    own ``NodeName=... AutoDetect=`` line before its counts, as every named node sets its
    own AutoDetect: the global line reaches only the nodes no line names.
    """
    autodetect = autodetected_hosted_pools(estate)
    lines = []
    for pool in estate.slurm_pools:
        # a hosted pool's slurmd pods take every GPU of their node, so its device files; they
        # register by the names of the Kubernetes nodes they run on, when those are known
        names = hosted_node_names(estate, pool) if pool.hosted else pool.hosts
        if not names or not (pool.gpus or autodetect):
            continue
        hosts = slurm_hostlist(names)
        if not pool.gpus:
            lines.append(
                {
                    "pool": pool.name,
                    "hosts": hosts,
                    "gpus": [],
                    "shards": 0,
                    "mps": 0,
                    "mps_files": None,
                }
            )
            continue
        lines.append(
            {
                "pool": pool.name,
                "hosts": hosts,
                "mig": bool(pool.gpus.mig),
                "detect": gpu_autodetect(pool),
                "gpus": gpu_gres(pool),
                # one a type (whole GPUs): gres.conf names them where no AutoDetect finds them
                "files": gpu_device_files(pool),
                "shards": shards(pool),
                "mps": mps_shares(pool),
                # the mps line names the gpu lines' files (slurmd drops an mps File no gpu
                # line names, src/plugins/gres/common/gres_c_s.c); an AutoDetect plugin
                # (nvml, nvidia) finds them itself
                "mps_files": None if gpu_autodetect(pool) else ",".join(gpu_device_files(pool)),
            }
        )
    return _render(
        "gres.conf.j2",
        estate,
        pools=lines,
        autodetect=HOSTED_AUTODETECT if autodetect else None,
        autodetected=[p.name for p in autodetect],
    )


def slurmdbd_conf(estate: Estate) -> str:
    return _render(
        "slurmdbd.conf.j2",
        estate,
        accounting=estate.slurm.accounting,
        slurm_user=SLURM_USER,
        auth_alt=auth_alt(estate),
    )


def sacct_cfg(estate: Estate) -> str:
    teams = estate.identity.teams
    default_account: dict[str, str] = {}
    for team in teams:
        for member in team.members:
            default_account.setdefault(member, team.name)
    return _render(
        "sacct.cfg.j2",
        estate,
        teams=teams,
        default_account=default_account,
        cluster=estate.slurm.cluster_name,
        parent=parent_account(estate),
    )


def qos_commands(estate: Estate) -> str:
    adds, modifies, grant = qos_lines(estate)
    return _render(
        "qos.sacctmgr.j2",
        estate,
        lines=[*adds.values(), *modifies.values()],
        grant=grant,
    )


def qos_lines(estate: Estate) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """The sacctmgr lines of qos.sacctmgr: ``add qos`` and ``modify qos`` by QoS name, and
    the lines that grant every QoS to the estate's accounts (``estategen plan`` runs the
    ones a change needs)."""
    qos = estate.slurm.qos
    names = [q.name for q in qos]
    gpu_tres = any(p.gpus for p in estate.slurm_pools)
    adds = {q.name: f"add qos {q.name}" for q in qos}
    modifies = {}
    for q in qos:
        settings = []
        for parameter in QOS_PARAMETERS:
            # the keys not declared keep their places: Preempt before PreemptMode,
            # MaxTRESPerUser before MaxWall
            if parameter.sacctmgr == "PreemptMode" and q.preempt:
                settings.append(f"Preempt={','.join(q.preempt)}")
            if parameter.sacctmgr == "MaxWall" and gpu_tres:
                limit = q.max_gpus_per_user if q.max_gpus_per_user is not None else -1
                settings.append(f"MaxTRESPerUser=gres/gpu={limit}")
            text = qos_text(parameter, getattr(q, parameter.key))
            settings.append(f"{parameter.sacctmgr}={text}")
        modifies[q.name] = f"modify qos where name={q.name} set {' '.join(settings)}"
    grant = qos_grant(
        parent_account(estate),
        estate.slurm.cluster_name,
        names,
        estate.versions.slurm,
        teams=bool(estate.identity.teams),
    )
    return adds, modifies, grant


def qos_text(parameter: QosParameter, value: object) -> str:
    """A declared QoS key's value as the ``modify qos`` line writes it; a key the blueprint
    leaves out is the declaration's unset word."""
    if value is None:
        return parameter.unset
    if isinstance(parameter.value, Time):
        return slurm_time(str(value))
    return str(value)


def qos_grant(
    parent: str, cluster: str, names: Sequence[str], slurm: Version, teams: bool
) -> tuple[str, ...]:
    """The sacctmgr lines that grant the QoS ``names`` to the estate's accounts: to the
    ``parent`` account, whose teams and their users inherit them, and from Slurm 23.11 to
    25.05 to the teams too, if there are any (sacctmgr fails on a change that selects no
    account). slurmdbd of those releases sends a change of an account to its sub-accounts but
    not on to their users (Slurm 25.05.1 and 25.11 restore 23.02's recursion: "Fix issue
    where lower sub-associations were missed when updating limits"), so a running slurmctld
    refused a granted QoS to every user of a team ("Invalid qos specification") until it
    next read the associations; a change of the team accounts themselves reaches their
    users."""
    settings = f"set QOS={','.join(names)}"
    if any(qos_key(name) == "normal" for name in names):
        settings += " DefaultQOS=normal"
    lines = [f"modify account where name={parent} cluster={cluster} {settings}"]
    if teams and slurm.at_least("23.11") and not slurm.at_least("25.11"):
        lines.append(f"modify account where parent={parent} cluster={cluster} {settings}")
    return tuple(lines)


# --- reservations, MPI and the REST API ---


def reservation_fields(estate: Estate, reservation: Reservation) -> list[tuple[str, str]]:
    """The ``scontrol create reservation`` arguments of one blueprint reservation, in the
    order scontrol shows them."""
    fields = [
        ("ReservationName", reservation_name(estate, reservation)),
        ("StartTime", reservation.start),
    ]
    if reservation.end:
        fields.append(("EndTime", reservation.end))
    else:
        fields.append(("Duration", slurm_time(reservation.duration or "UNLIMITED")))
    fields.append(("Nodes", slurm_hostlist(reservation_hosts(estate, reservation))))
    if reservation.partition:
        fields.append(("PartitionName", reservation.partition))
    if reservation.flags:
        fields.append(("Flags", ",".join(f.upper() for f in reservation.flags)))
    if reservation.users:
        fields.append(("Users", ",".join(reservation.users)))
    if reservation.teams:
        fields.append(("Accounts", ",".join(reservation.teams)))
    return fields


def reservations_scontrol(estate: Estate) -> str:
    return _render(
        "reservations.scontrol.j2",
        estate,
        prefix=reservation_prefix(estate),
        reservations=[reservation_fields(estate, r) for r in estate.slurm.reservations],
    )


def mpi_params(estate: Estate) -> str | None:
    """MpiParams: the ports srun --resv-ports hands out to MPI libraries that need them."""
    ports = estate.slurm.mpi.ports
    return f"ports={ports[0]}-{ports[1]}" if ports else None


def auth_alt(estate: Estate) -> list[tuple[str, str]]:
    """slurm.conf keys for JWT, which slurmrestd needs for its token-authenticated clients."""
    if estate.slurm.rest_api is None:
        return []
    return [("AuthAltTypes", "auth/jwt"), ("AuthAltParameters", f"jwt_key={JWT_KEY_PATH}")]


# --- Slurm hosted in Kubernetes ---
# What Slinky's slurm-operator v1.2.1 needs of the slurmctld its slurmd pods join
# (docs/usage/hybrid.md; internal/builder/common/const.go): auth/slurm with client ids, JWT,
# and configless slurmd.
HOSTED_AUTH = (
    ("AuthType", "auth/slurm"),
    ("CredType", "cred/slurm"),
    ("AuthInfo", "use_client_ids"),
)
HOSTED_CTLD_PARAMETERS = ("enable_configless",)


def hosted_conf(estate: Estate) -> dict[str, Any] | None:
    """NodeSet lines for hosted pools and the node count slurmctld must make room for."""
    hosted = estate.hosted_pools()
    if not hosted:
        return None
    static = sum(len(p.hosts) for p in estate.slurm_pools if not p.hosted)
    return {
        "nodesets": [(p.name, p.name) for p in hosted],
        "max_node_count": static + sum(p.node_count for p in hosted),
        "auth": list(HOSTED_AUTH),
        "ctld_parameters": list(HOSTED_CTLD_PARAMETERS),
    }


# --- node health checks ---
# Where slurm.conf finds the health-check program: the same path on every node, where the
# slurm_compute role installs the program rendered for the node's pool.
HEALTH_CHECK_PROGRAM = "/etc/slurm/healthcheck.sh"


def health_check_path(pool: NodePool) -> str:
    """The rendered health-check program of a pool, under the output folder."""
    return f"slurm/healthcheck/{pool.name}.sh"


def health_check_program(estate: Estate, pool: NodePool) -> str:
    """A POSIX shell program that checks what the blueprint says about the pool's nodes and
    drains the node, with a reason naming the failed check, when one fails."""
    checks = health_checks(estate, pool)
    context: dict[str, Any] = {"pool": pool, "checks": checks}
    if pool.gpus:
        low, high = gpu_memory_mib_range(estate.gpu_models[pool.gpus.model].memory_gb)
        context.update(gpu_memory_low=low, gpu_memory_high=high, mig=mig_instances(pool))
        # a node of several types: (model, count, lowest and highest memory.total in MiB)
        context["gpu_types"] = [
            (kind.model, kind.count, *gpu_memory_mib_range(estate.gpu_models[kind.model].memory_gb))
            for kind in pool.gpus.types
        ]
    context["mounts"] = pool_mounts(estate, pool)
    context["real_memory"] = pool_real_memory(pool) if pool.memory_gb else 0
    return _render("healthcheck.sh.j2", estate, **context)


# --- elastic cloud nodes ---
# slurmctld runs these as SlurmUser on the controllers, with the hostlist of the nodes to
# create or delete; the slurm_controller role installs them (mode 0755: slurmctld refuses a
# program others may write).
POWER_DIR = "/etc/slurm/power"
RESUME_PROGRAM = f"{POWER_DIR}/resume.sh"
SUSPEND_PROGRAM = f"{POWER_DIR}/suspend.sh"
# slurm.conf(5) TreeWidth maximum: slurmd never forward messages through each other, since a
# cloud node's neighbours in the tree may not exist
CLOUD_TREE_WIDTH = 65533


def _on_prem_pools(estate: Estate) -> list[NodePool]:
    """The Slurm pools whose nodes are no cloud nodes, named by their hosts (not hosted in
    Kubernetes): power saving leaves them alone."""
    return [p for p in estate.slurm_pools if not p.cloud_nodes and not p.hosted and p.hosts]


def _power_saving(estate: Estate) -> dict[str, Any] | None:
    """The slurm.conf power-saving parameters cloud nodes need, or None without cloud pools.
    estategen's programs serve pools with a provider (`own`); pools with `state: cloud` are
    created by the site's programs (slurm.power_saving), whose nodes' addressing, TreeWidth
    and PrivateData stay the site's (slurm.options)."""
    if not renders_power_saving(estate):
        return None
    cloud = [p for p in estate.slurm_pools if p.cloud_nodes]
    saving = estate.slurm.power_saving
    own = any(p.elastic for p in cloud)
    # slurmctld suspends every idle node SuspendExcNodes leaves out, on-prem ones too (their
    # SuspendProgram ran within 75 s on a real slurmctld): every node of a pool that is not
    # cloud is listed. slurm.conf(5): lists with a count (the pools' minimum kept up) come
    # before the lists without one, or the count applies to those lists too
    kept = [f"{slurm_hostlist(p.hosts)}:{p.nodes_min}" for p in cloud if p.nodes_min]
    kept += [slurm_hostlist(p.hosts) for p in _on_prem_pools(estate)]
    kept += saving.exclude_nodes
    programs = (
        (RESUME_PROGRAM, SUSPEND_PROGRAM, SUSPEND_PROGRAM)
        if own
        else (saving.resume_program, saving.suspend_program, saving.resume_fail_program)
    )
    keys = ("ResumeProgram", "SuspendProgram", "ResumeFailProgram")
    return {
        "own": own,
        "programs": [(key, path) for key, path in zip(keys, programs, strict=True) if path],
        "suspend_time": saving.suspend_time,
        "resume_timeout": saving.resume_timeout,
        "suspend_timeout": saving.suspend_timeout,
        "exclude": ",".join(kept),
        "tree_width": CLOUD_TREE_WIDTH,
        # a cloud node's address is the one its slurmd registers from: cloud_reg_addrs up to
        # 23.02; 23.11 made that the behaviour and 24.11's slurmctld logs the option as
        # defunct ("please remove it from slurm.conf"; RELEASE_NOTES 23.11)
        "ctld_parameters": [
            *([] if estate.versions.slurm.at_least("23.11") else ["cloud_reg_addrs"]),
            "idle_on_node_suspend",
        ],
    }


def _cloud_pool(estate: Estate, pool: NodePool) -> dict[str, Any]:
    assert pool.cloud is not None
    return {
        "name": pool.name,
        "function": pool.name.replace("-", "_"),
        "provider": pool.provider,
        "hosts": slurm_hostlist(pool.hosts),
        "instance_type": pool.instance_type,
        "cloud": pool.cloud,
        "estate": estate.name,
    }


def power_programs(estate: Estate) -> dict[str, str]:
    """ResumeProgram and SuspendProgram: create or delete the named nodes' instances with the
    provider's CLI, one call per pool."""
    pools = [_cloud_pool(estate, p) for p in estate.slurm_pools if p.elastic]
    if not pools:
        return {}
    return {
        "slurm/power/resume.sh": _render("resume.sh.j2", estate, pools=pools),
        "slurm/power/suspend.sh": _render("suspend.sh.j2", estate, pools=pools),
    }


# The last estate rendered and its files: the Ansible renderer installs the same files, so
# one render computes them once. Keyed by identity (the model is frozen).
_last: tuple[Estate, Files] | None = None


@renderer
def slurm_files(estate: Estate) -> Files:
    global _last
    if _last is None or _last[0] is not estate:
        _last = (estate, _slurm_files(estate))
    return dict(_last[1])


def _slurm_files(estate: Estate) -> Files:
    if not estate.slurm_pools:
        return {}
    files = {
        "slurm/slurm.conf": text(slurm_conf(estate)),
        "slurm/gres.conf": text(gres_conf(estate)),
        "slurm/cgroup.conf": text(_render("cgroup.conf.j2", estate)),
    }
    topology = topology_conf(estate)
    if topology is not None:
        files["slurm/topology.conf"] = text(topology)
    if estate.slurm.health_check:
        for pool in estate.slurm_pools:
            files[health_check_path(pool)] = text(health_check_program(estate, pool), mode=0o755)
    for path, program in power_programs(estate).items():
        files[path] = text(program, mode=0o755)
    if estate.slurm.accounting:
        files["slurm/slurmdbd.conf"] = text(slurmdbd_conf(estate), mode=0o600)
        files["slurm/sacct.cfg"] = text(sacct_cfg(estate))
        if estate.slurm.qos:
            files["slurm/qos.sacctmgr"] = text(qos_commands(estate))
    if estate.slurm.reservations:
        files["slurm/reservations.scontrol"] = text(reservations_scontrol(estate))
    return files
