"""Slurm: QoS, partitions, accounting, scheduling, reservations, health checks, power saving,
the site's overrides and packages, and Slurm's time grammar."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from estategen.model.values import SecretRef


@dataclass(frozen=True, slots=True)
class Qos:
    """A QoS; priority, max_time, preempt_mode and usage_factor are the keys of
    declarations.QOS_PARAMETERS (in estate.json's order)."""

    path: str
    name: str
    priority: int
    max_gpus_per_user: int | None
    max_time: str | None
    preempt: tuple[str, ...]
    preempt_mode: str | None
    usage_factor: float


@dataclass(frozen=True, slots=True)
class PartitionOverrides:
    """Partition settings a site sets itself; None keeps what estategen derives."""

    state: str | None = None
    allow_qos: tuple[str, ...] = ()
    allow_groups: tuple[str, ...] = ()
    deny_accounts: tuple[str, ...] = ()
    # the site overrides of declarations.PARTITION_PARAMETERS, by their keys
    priority_job_factor: int | None = None
    oversubscribe: str | None = None
    exclusive_user: bool | None = None
    grace_time: int | None = None
    min_nodes: int | None = None
    max_nodes: int | None = None
    max_cpus_per_node: int | None = None
    max_mem_per_cpu: int | None = None
    max_mem_per_node: int | None = None
    def_mem_per_cpu: int | None = None
    def_mem_per_node: int | str | None = None  # MiB or "unlimited"; None: not written
    def_cpu_per_gpu: int | str | None = None  # CPUs, or "none": no DefCpuPerGPU
    def_mem_per_gpu: int | None = None
    # TRESBillingWeights, in blueprint order; None: estategen's, empty: none written
    billing_weights: tuple[tuple[str, str], ...] | None = None
    nodeset: str | None = None  # a NodeSet of the partition's nodes, named in its Nodes=


@dataclass(frozen=True, slots=True)
class Partition:
    path: str
    name: str
    pools: tuple[str, ...]
    default: bool
    max_time: str
    default_time: str | None
    teams: tuple[str, ...]
    qos: str | None
    priority_tier: int
    preempt_mode: str | None  # a partition key of declarations.PARTITION_PARAMETERS
    hidden: bool
    # the site's own settings; None (or empty) keeps what estategen renders
    overrides: PartitionOverrides = field(default_factory=lambda: PartitionOverrides())


@dataclass(frozen=True, slots=True)
class Database:
    host: str
    port: int
    name: str
    user: str
    password: SecretRef


# AccountingStorageEnforce where the blueprint sets none
ACCOUNTING_ENFORCE: tuple[str, ...] = ("associations", "limits", "qos", "safe")


@dataclass(frozen=True, slots=True)
class Accounting:
    host: str
    port: int
    database: Database
    # the site's AccountingStorageTRES (None: estategen's) and AccountingStorageEnforce
    tres: tuple[str, ...] | None = None
    enforce: tuple[str, ...] = ACCOUNTING_ENFORCE


@dataclass(frozen=True, slots=True)
class Preemption:
    type: str
    mode: str


@dataclass(frozen=True, slots=True)
class Scheduling:
    priority_weights: Mapping[str, int]
    fairshare_half_life: str | None  # None with priority/basic, which has no half-life
    preemption: Preemption
    # the site's PriorityWeightTRES, in blueprint order
    priority_weight_tres: tuple[tuple[str, int], ...] = ()
    # the site's PriorityType, multifactor or basic
    priority_type: str = "multifactor"
    # whether the blueprint gave fairshare_half_life (basic refuses it; checks read this)
    half_life_declared: bool = False


# --- reservations, MPI and the REST API ---
@dataclass(frozen=True, slots=True)
class Reservation:
    """A Slurm reservation: held in slurmctld's state, created with scontrol, not slurm.conf."""

    path: str
    name: str
    start: str  # local date and time, YYYY-MM-DDTHH:MM:SS as scontrol shows it
    duration: str | None
    end: str | None
    pools: tuple[str, ...]
    partition: str | None
    hosts: tuple[str, ...]
    flags: tuple[str, ...]
    teams: tuple[str, ...]
    users: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Mpi:
    default: str
    ports: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class RestApi:
    host: str
    port: int
    user: str
    jwt_key: SecretRef


# --- node health checks ---
@dataclass(frozen=True, slots=True)
class HealthCheck:
    interval: int
    node_state: tuple[str, ...]


# --- elastic cloud nodes ---
# slurm.power_saving defaults (seconds), also the schema's: a cloud node idle 10 minutes is
# deleted; a created one has 10 minutes to boot and register.
POWER_SAVING_DEFAULTS = {"suspend_time": 600, "resume_timeout": 600, "suspend_timeout": 120}


@dataclass(frozen=True, slots=True)
class PowerSaving:
    declared: bool
    suspend_time: int
    resume_timeout: int
    suspend_timeout: int
    # the site's programs for `state: cloud` pools (None: not written), and the
    # nodes never suspended, as the blueprint writes them (hostlist expressions)
    resume_program: str | None = None
    suspend_program: str | None = None
    resume_fail_program: str | None = None
    exclude_nodes: tuple[str, ...] = ()


# what a blueprint without slurm.power_saving gets
NO_POWER_SAVING = PowerSaving(
    False,
    suspend_time=POWER_SAVING_DEFAULTS["suspend_time"],
    resume_timeout=POWER_SAVING_DEFAULTS["resume_timeout"],
    suspend_timeout=POWER_SAVING_DEFAULTS["suspend_timeout"],
)


# --- site overrides of what estategen renders ---
# Ports Slurm's daemons listen on by default (slurm.conf SlurmctldPort and SlurmdPort);
# a site's slurm.ports may set others: read them through facts.slurmctld_ports and
# facts.slurmd_port.
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
# slurm.paths defaults, also the schema's: Debian's slurm-wlm paths.
SLURM_PATH_DEFAULTS = {
    "state_save_location": "/var/spool/slurmctld",
    "slurmd_spool_dir": "/var/spool/slurmd",
    "slurmctld_pid_file": "/run/slurmctld.pid",
    "slurmd_pid_file": "/run/slurmd.pid",
    "slurmctld_log_file": "/var/log/slurm/slurmctld.log",
    "slurmd_log_file": "/var/log/slurm/slurmd.log",
}


# The daemons' folders (slurm.conf StateSaveLocation and SlurmdSpoolDir), which Slurm opens
# with or without a trailing '/'.
DAEMON_FOLDERS = ("state_save_location", "slurmd_spool_dir")


def shares_state_and_spool(paths: Mapping[str, str]) -> bool:
    """StateSaveLocation is SlurmdSpoolDir, as single-node sites run: slurmctld's files
    (job_state, node_state, hash.N/job.N, ...) and slurmd's (cred_state, jobNNNNN, ...) never
    share a name, and slurm.conf(5) asks only that SlurmUser can write the state folder and that
    the spool is 0755 and writable by root: one folder owned by SlurmUser, mode 0755, serves
    both while slurmd runs as root."""
    return paths["state_save_location"] == paths["slurmd_spool_dir"]


@dataclass(frozen=True, slots=True)
class SlurmPaths:
    """Where slurmctld and slurmd keep state, spool, pid and log files (slurm.paths)."""

    state_save_location: str = SLURM_PATH_DEFAULTS["state_save_location"]
    slurmd_spool_dir: str = SLURM_PATH_DEFAULTS["slurmd_spool_dir"]
    slurmctld_pid_file: str = SLURM_PATH_DEFAULTS["slurmctld_pid_file"]
    slurmd_pid_file: str = SLURM_PATH_DEFAULTS["slurmd_pid_file"]
    slurmctld_log_file: str = SLURM_PATH_DEFAULTS["slurmctld_log_file"]
    slurmd_log_file: str = SLURM_PATH_DEFAULTS["slurmd_log_file"]


@dataclass(frozen=True, slots=True)
class SlurmSite:
    """Daemon and plugin settings a site may set instead of estategen's."""

    paths: SlurmPaths = SlurmPaths()
    # None: the ports facts.py names (facts.slurmctld_ports and facts.slurmd_port read these)
    slurmctld_ports: tuple[int, int] | None = None  # low and high port
    slurmd_port: int | None = None
    slurmd_user: str | None = None  # None: not written (slurmd runs as root)
    return_to_service: int = 2
    select_type: str = "cons_tres"
    select_parameters: tuple[str, ...] = ("CR_Core_Memory",)
    task_plugins: tuple[str, ...] = ("cgroup", "affinity")
    job_acct_gather: str = "cgroup"
    prolog_flags: tuple[str, ...] = ("Contain",)
    scheduler_parameters: tuple[str, ...] | None = None  # None: estategen's backfill tuning
    scheduler: str = "backfill"  # SchedulerType sched/...
    enforce_part_limits: str = "all"
    proctrack: str = "cgroup"  # ProctrackType proctrack/...
    job_completion: str = "none"  # JobCompType jobcomp/...
    # JobCompLoc with filetxt: the blueprint's, else jobcomp.log beside slurmctld's log
    job_completion_location: str | None = None


# --- where the Slurm packages come from (slurm.packages) ---
@dataclass(frozen=True, slots=True)
class SlurmBuild:
    """What a package source installs: its Slurm release (None: the release the site's
    repository carries, which versions.slurm names) and the plugins it is built with."""

    release: str | None
    nvml: bool  # gpu_nvml: gres.conf AutoDetect=nvml (MIG instances, gpus.autodetect nvml)
    jwt: bool  # auth_jwt.so: AuthAltTypes=auth/jwt (slurm.rest_api)
    jwt_package: str | None = None  # the package that carries auth_jwt.so, where it is its own


# Debian's own slurm-wlm, built without NVML: bookworm's 22.05 has slurmrestd's
# rest_auth_jwt.so but no auth_jwt.so; trixie's 24.11 ships it in slurm-wlm-jwt-plugin.
DEBIAN_SLURM_BUILDS = {
    "debian-12": SlurmBuild("22.05", nvml=False, jwt=False),
    "debian-13": SlurmBuild("24.11", nvml=False, jwt=True, jwt_package="slurm-wlm-jwt-plugin"),
}
SLURM_PACKAGE_SOURCES = (*DEBIAN_SLURM_BUILDS, "site")
# the Molecule image and the real-daemon tests run Debian 12's packages
DEFAULT_SLURM_SOURCE = "debian-12"


@dataclass(frozen=True, slots=True)
class SlurmPackages:
    """Where the Slurm packages come from (slurm.packages)."""

    source: str = DEFAULT_SLURM_SOURCE
    apt_repository: str | None = None  # an apt source line (source site)
    apt_key_url: str | None = None  # its signing key
    # what a site build supports, as the blueprint says it (None: not said)
    nvml: bool | None = None
    jwt: bool | None = None


def slurm_build(packages: SlurmPackages) -> SlurmBuild:
    """The Slurm release a package source installs and the plugins its build has: Debian's
    builds are known; a site's is what the blueprint says of it."""
    debian = DEBIAN_SLURM_BUILDS.get(packages.source)
    if debian is not None:
        return debian
    return SlurmBuild(None, nvml=bool(packages.nvml), jwt=bool(packages.jwt))


@dataclass(frozen=True, slots=True)
class Slurm:
    declared: bool
    cluster_name: str
    controllers: tuple[str, ...]
    accounting: Accounting | None
    scheduling: Scheduling
    qos: tuple[Qos, ...]
    partitions: tuple[Partition, ...]
    reservations: tuple[Reservation, ...]
    mpi: Mpi
    rest_api: RestApi | None
    options: Mapping[str, str]
    health_check: HealthCheck | None = None
    power_saving: PowerSaving = NO_POWER_SAVING
    # Slurm hosted in Kubernetes: the auth/slurm key, by reference
    auth_key: SecretRef | None = None
    site: SlurmSite = SlurmSite()
    # the address the site gives each controller named here (SlurmctldHost=N(A))
    controller_addresses: Mapping[str, str] = field(default_factory=dict)
    packages: SlurmPackages = SlurmPackages()


# slurm.conf StateSaveLocation: where slurmctld keeps its state. A backup controller takes over
# from that state, so with two controllers it must be storage both of them mount.
STATE_SAVE_LOCATION = "/var/spool/slurmctld"

# Slurm reads a time into a signed 32-bit count of seconds and rounds it up to minutes by adding
# 59 first (time_str2mins); anything longer wraps negative and slurmctld refuses it. The longest
# time is the whole minutes below that, so its normalised form is read back unchanged.
SLURM_TIME_MAX_MINUTES = (2**31 - 1 - 59) // 60
UNLIMITED_TIMES = ("UNLIMITED", "INFINITE")


def slurm_seconds(text: str) -> int | None:
    """Seconds a Slurm time string denotes, read as Slurm reads it; ``None`` for UNLIMITED.

    Formats as in slurm.conf(5): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S. Like Slurm, no field has
    an upper bound of its own (``2:75:00`` is 3:15:00, ``1-25`` is 2-01:00:00). Raises
    ValueError for a time longer than Slurm can hold, which slurmctld refuses.
    """
    if text in UNLIMITED_TIMES:
        return None
    days = 0
    clock = text
    if "-" in text:
        day_text, clock = text.split("-", 1)
        days = int(day_text)
        hours, minutes, seconds = [*(int(x) for x in clock.split(":")), 0, 0][:3]
    else:
        parts = [int(x) for x in clock.split(":")]
        if len(parts) == 3:
            hours, minutes, seconds = parts
        else:
            hours, (minutes, seconds) = 0, [*parts, 0][:2]
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if -(-total // 60) > SLURM_TIME_MAX_MINUTES:
        raise ValueError(
            "it is longer than the longest time Slurm reads, "
            f"{slurm_time_shown(SLURM_TIME_MAX_MINUTES)}"
        )
    return total


def slurm_minutes(text: str) -> int | None:
    """Minutes a Slurm time string denotes, seconds rounded up; ``None`` for UNLIMITED."""
    seconds = slurm_seconds(text)
    return None if seconds is None else -(-seconds // 60)


def slurm_time_shown(minutes: int | None) -> str:
    """A time as slurmctld prints it (scontrol show partition): [D-]HH:MM:SS or UNLIMITED."""
    if minutes is None:
        return "UNLIMITED"
    days, rest = divmod(minutes, 1440)
    clock = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


def slurm_time(text: str) -> str:
    """A blueprint time normalised the way slurmctld normalises it: ``7-0:00:99`` is
    ``7-00:02:00``. Rendered files carry this form, so what a file says is what Slurm shows."""
    return slurm_time_shown(slurm_minutes(text))
