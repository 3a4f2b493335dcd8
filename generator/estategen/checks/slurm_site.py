"""A site's own Slurm settings: ports, paths, plugins, priority, memory enforcement, and the
site keys of pools, partitions and accounting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

from estategen import hostlist
from estategen.checks.core import check, slurmctld_port_list
from estategen.errors import Finding, issue
from estategen.facts import gpu_autodetect, gres_type, slurmctld_port_text, slurmd_port
from estategen.model import DAEMON_FOLDERS, Estate, NodePool, shares_state_and_spool
from estategen.schema.values import PROGRAM_TREES
from estategen.slurm_facts import accounting_tres, def_mem_per_cpu, named_tres
from estategen.slurm_keys import MULTIFACTOR_OPTIONS
from estategen.slurm_names import qos_key


@check
def slurm_site_settings_valid(estate: Estate) -> Iterator[Finding]:
    """Site settings that slurmctld or slurmd refuse together, or that would break what the
    other outputs rely on."""
    site = estate.slurm.site
    if slurmd_port(estate) in slurmctld_port_list(estate):
        yield issue(
            "slurm.ports.slurmd",
            f"port {slurmd_port(estate)} is slurmctld's ({slurmctld_port_text(estate)}); "
            "slurmd needs a port of its own",
        )
    paths = site.paths
    seen: dict[str, str] = {}
    shared = shares_state_and_spool(asdict(paths))
    if shared and site.slurmd_user not in (None, "root"):
        yield issue(
            "slurm.paths.slurmd_spool_dir",
            f"{paths.slurmd_spool_dir} is also slurm.paths.state_save_location, which belongs "
            f"to SlurmUser slurm; slurmd runs as {site.slurmd_user} (slurm.slurmd_user) and "
            "could not write there: give slurmd a spool folder of its own",
        )
    for key, value in asdict(paths).items():
        if value in seen and not (shared and {key, seen[value]} == set(DAEMON_FOLDERS)):
            yield issue(
                f"slurm.paths.{key}",
                f"{value} is also slurm.paths.{seen[value]}; each daemon file or folder needs "
                "its own path",
            )
        seen.setdefault(value, key)
    for key, value in asdict(paths).items():
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
        for other, value in asdict(paths).items():
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
    from estategen.schema.patterns import SELECT_RESOURCES

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
        # MPS is shared GRES as shards are (gres.conf(5): gres/[mps|shard] need cons_tres)
        for pool in estate.slurm_pools:
            sharing = pool.gpus.sharing if pool.gpus else None
            kind = sharing and ("shard" if sharing.shard else "mps" if sharing.mps else None)
            if kind:
                yield issue(
                    f"{pool.path}.gpus.sharing.{kind}",
                    f"{'shards' if kind == 'shard' else 'MPS shares'} need select type "
                    f"cons_tres: slurmctld exits with select/{site.select_type} ('Use of "
                    "shared gres requires the use of select/cons_tres')",
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
        elif location in asdict(site.paths).values():
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


def _host_weights_valid(pool: NodePool) -> Iterator[Finding]:
    """host_weights gives each NodeName line of a pool's listed hosts its Weight: one weight
    per host, instead of weight."""
    path = f"{pool.path}.host_weights"
    if pool.scheduler != "slurm" or pool.hosted or pool.elastic:
        yield issue(
            path,
            "host_weights are the Weight of a Slurm pool's listed hosts; this pool's nodes are "
            "not listed in slurm.conf (give weight)",
        )
    elif pool.weight is not None:
        yield issue(path, "give weight (one for every host) or host_weights (host by host)")
    elif len(pool.host_weights) != len(pool.hosts):
        yield issue(
            path,
            f"{len(pool.host_weights)} weights for {len(pool.hosts)} hosts: give one weight "
            "per host, in the order `hosts` names them",
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
    for pool in estate.node_pools:
        if pool.host_weights:
            yield from _host_weights_valid(pool)
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
                ("gpus.files", pool.gpus.files or None),
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
        if pool.gpus and pool.gpus.files:
            yield from _device_files(pool)
        if pool.gpus and pool.gpus.mig and pool.gpus.autodetect == "off":
            yield issue(
                f"{pool.path}.gpus.autodetect",
                "MIG instances are found by NVML only (gres.conf AutoDetect=nvml); remove "
                "autodetect or set it to nvml",
            )
        if pool.gpus and pool.gpus.mig and pool.gpus.autodetect == "nvidia":
            # gres.conf(5) of 24.11, AutoDetect nvidia: "doesn't detect MIGs"; gpu_nvidia.c
            # registers one whole GPU per /proc/driver/nvidia/gpus entry
            yield issue(
                f"{pool.path}.gpus.autodetect",
                "AutoDetect=nvidia finds whole GPUs only (one per /proc/driver/nvidia/gpus "
                "entry), never MIG instances, which NVML finds (gres.conf AutoDetect=nvml); "
                "remove autodetect or set it to nvml",
            )
        if pool.gpus and gpu_autodetect(pool) == "nvidia" and pool.gpus.gres_type is None:
            kind = gres_type(pool)
            if kind is not None:
                # gres_gpu.c _normalize_sys_gres_types: a detected GPU keeps a configured
                # Type only where it is part of the driver's model name; a real slurmd 24.11
                # then registers none and slurmctld drains the node (tests/test_slurm_site.py)
                yield issue(
                    f"{pool.path}.gpus",
                    "slurmd finds the GPUs (gres.conf AutoDetect=nvidia), typed by the "
                    "driver's model name in lower case with '_' for spaces (NVIDIA H100 80GB "
                    "HBM3 is nvidia_h100_80gb_hbm3); it drops GPUs whose name does not contain "
                    f"the GRES Type {kind!r}, and slurmctld drains the node (gres/gpu count "
                    "reported lower than configured): set gpus.gres_type to a part of that "
                    "name (h100) or gpus.typed: false",
                    level="warning",
                )
        if pool.gpus and not pool.gpus.typed:
            for key, value in (("gres_type", pool.gpus.gres_type), ("mig", pool.gpus.mig)):
                if value:
                    yield issue(
                        f"{pool.path}.gpus.{key}",
                        f"typed false writes the GRES without a type, and {key} names one "
                        "(a MIG profile is the type of its instances): remove one of them",
                    )
        if not pool.gpus or pool.gpus.mig:
            continue
        for index, gpu_type in enumerate(pool.gpus.types):
            kind = gres_type(pool, gpu_type)
            if kind is None:
                continue
            first = types.setdefault(kind, (gpu_type.model, pool.path))
            if first[0] != gpu_type.model:
                where = "gpus" if index == 0 else f"gpus.other_types[{index - 1}]"
                yield issue(
                    f"{pool.path}.{where}.gres_type",
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
    qos_keys = {qos_key(q) for q in qos_names}
    teams = {t.name for t in estate.identity.teams}
    yield from _nodeset_problems(estate)
    tracked = {t.lower() for t in accounting_tres(estate)}  # once, not once per partition
    for part in estate.slurm.partitions:
        site = part.overrides
        for name in site.allow_qos:
            # slurmctld lower-cases AllowQos (read_config.c) and finds QoS in any case
            if qos_key(name) not in qos_keys:
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
    missing = [t for t in named_tres(estate) if t not in accounting.tres]
    if missing:
        yield issue(
            "slurm.accounting.tres",
            f"missing {', '.join(missing)}: the partitions' billing weights and the QoS GPU "
            "limits name them, and slurmctld refuses a TRES it does not track; add them",
        )


def _device_files(pool: NodePool) -> Iterator[Finding]:
    """gpus.files lists the device file of each GPU, which gres.conf names on the pool's
    ``File=`` line: as many as gpus.count, each once, and only where gres.conf lists files
    (not for GPUs slurmd finds: MIG pools and gpus.autodetect nvml or nvidia)."""
    assert pool.gpus is not None
    files = pool.gpus.files
    path = f"{pool.path}.gpus.files"
    if len(files) != pool.gpus.count:
        yield issue(
            path,
            f"{len(files)} device files for {pool.gpus.count} GPUs a node (gpus.count): "
            "list one file per GPU",
        )
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:
        yield issue(path, f"{', '.join(twice)} listed twice: each GPU has its own device file")
    detect = gpu_autodetect(pool)
    if detect == "nvml":
        yield issue(
            path,
            "NVML finds this pool's GPUs (MIG, or gpus.autodetect nvml) and gres.conf then "
            "lists no device files: remove files",
        )
    elif detect == "nvidia":
        yield issue(
            path,
            "slurmd finds this pool's GPUs and their device files from the NVIDIA driver "
            "(gpus.autodetect nvidia) and gres.conf then lists no device files: remove files",
        )
