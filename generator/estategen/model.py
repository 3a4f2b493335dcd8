"""The one frozen, typed model of an estate, built from a normalised blueprint document.

No raw dicts travel past this module. Derived defaults are filled here: a team's namespace
defaults to its name's DNS form and the Slurm cluster name to the estate's name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any

from estategen import hostlist
from estategen.catalog import GpuModel, builtin_models, model_from_data
from estategen.declarations import NODE_POOL_PARAMETERS, PARTITION_PARAMETERS, QOS_PARAMETERS
from estategen.slurm_names import kubernetes_name


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    text: str

    @classmethod
    def parse(cls, text: str) -> Version:
        major, minor = text.split(".")
        return cls(int(major), int(minor), text)

    def at_least(self, text: str) -> bool:
        other = Version.parse(text)
        return (self.major, self.minor) >= (other.major, other.minor)


@dataclass(frozen=True, slots=True)
class Versions:
    slurm: Version
    kubernetes: Version
    # False: versions.slurm is the release slurm.packages.source installs, filled here
    slurm_declared: bool = True


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A secret by name; resolved at deploy time (Ansible Vault, Pulumi config), never here."""

    name: str


@dataclass(frozen=True, slots=True)
class Cpu:
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int | None = None  # the site's slurm.conf CPUs= (the cores); None: every thread

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def threads(self) -> int:
        return self.cores * self.threads_per_core

    @property
    def slurm_cpus(self) -> int:
        """The CPUs Slurm schedules on a node: every thread, or each core with `cpus`."""
        return self.cpus or self.threads


@dataclass(frozen=True, slots=True)
class Sharing:
    time_slicing: int | None
    mps: int | None
    shard: int | None


@dataclass(frozen=True, slots=True)
class GpuType:
    """The GPUs of one model on a node: its count, GRES type and device files."""

    model: str
    count: int
    gres_type: str | None = None  # the site's GRES type name; None: the model name
    files: tuple[str, ...] = ()  # gres.conf File=; (): the numbering after the types before


@dataclass(frozen=True, slots=True)
class Gpus:
    model: str
    count: int
    mig: tuple[str, ...]
    sharing: Sharing
    # the site's GRES type name (None: the model name); the model as a node feature
    gres_type: str | None = None
    feature: bool | None = None  # None: the model is a node feature (Slurm pools)
    autodetect: str | None = None  # gres.conf AutoDetect; None: nvml for MIG, off otherwise
    typed: bool = True  # False: Gres=gpu:N, without a type
    files: tuple[str, ...] = ()  # gres.conf File= of the GPUs; (): /dev/nvidia0..count-1
    # the node's GPUs of other models, after these (gpus.other_types; Slurm pools only)
    other_types: tuple[GpuType, ...] = ()

    @property
    def types(self) -> tuple[GpuType, ...]:
        """Every GPU type of a node, the first (model, count) first."""
        return (GpuType(self.model, self.count, self.gres_type, self.files), *self.other_types)

    @property
    def per_node(self) -> int:
        """Physical GPUs of a node, of every type."""
        return self.count + sum(kind.count for kind in self.other_types)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


# --- elastic cloud nodes ---
@dataclass(frozen=True, slots=True)
class CloudNodes:
    """Where a Slurm cloud pool's instances are created, and the pinned image they boot."""

    image: str
    zone: str | None
    project: str | None
    region: str | None
    subnet: str | None


@dataclass(frozen=True)
class NodePool:
    path: str
    name: str
    scheduler: str
    cluster: str | None
    provider: str
    hosts: tuple[str, ...]
    host_expressions: tuple[str, ...]
    instance_type: str | None
    nodes_min: int | None
    nodes_max: int | None
    cpu: Cpu | None
    memory_gb: int | None
    gpus: Gpus | None
    switches: tuple[str, ...]
    blocks: tuple[str, ...]
    features: tuple[str, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    weight: int | None
    # the health checks the blueprint chose; None = every check the pool supports
    health_checks: tuple[str, ...] | None = None
    # elastic cloud nodes: where the instances are created and the image they boot
    cloud: CloudNodes | None = None
    # the site's exact RealMemory (MiB); None keeps estategen's reserve
    real_memory_mib: int | None = None
    # `state: cloud`: State=CLOUD nodes the site's own programs create
    site_cloud: bool = False
    # the site's NodeAddr of each host (in `hosts` order); empty: nodes reached by name
    addresses: tuple[str, ...] = ()
    # the site's Weight of each host (in `hosts` order), instead of one weight; empty: one
    host_weights: tuple[int, ...] = ()
    # a Kubernetes pool's most pods per node; None: the provider's (or kubelet's) default
    max_pods: int | None = None

    @property
    def managed(self) -> bool:
        """Nodes come from a cloud provider's autoscaler rather than a host list."""
        return self.provider != "on-prem"

    @property
    def hosted(self) -> bool:
        """A Slurm pool whose slurmd run as pods of a Kubernetes cluster (Slinky's NodeSet)."""
        return self.scheduler == "slurm" and self.cluster is not None

    @property
    def elastic(self) -> bool:
        """A Slurm pool of cloud nodes: named by `hosts`, created and deleted by slurmctld's
        power saving (State=CLOUD)."""
        return self.managed and self.scheduler == "slurm"

    @property
    def cloud_nodes(self) -> bool:
        """A Slurm pool of State=CLOUD nodes: created by estategen's power programs (elastic)
        or by the site's own (`state: cloud`, slurm.power_saving's programs)."""
        return self.elastic or self.site_cloud

    @cached_property
    def node_count(self) -> int:
        """Nodes that back the pool's capacity; an autoscaled pool counts at its maximum
        (asked thousands of times per command, by checks, the report and the renderers)."""
        if self.elastic:
            return len(self.hosts)
        if self.hosted:
            return self.nodes_max or 0
        return (self.nodes_max or 0) if self.managed else len(self.hosts)

    @cached_property
    def gpu_count(self) -> int:
        """Physical GPUs in the pool."""
        return self.node_count * self.gpus.per_node if self.gpus else 0

    @cached_property
    def compressed_hosts(self) -> str:
        """The pool's hosts as one hostlist (named in a finding of each reservation over it)."""
        return hostlist.compress(self.hosts)


@dataclass(frozen=True, slots=True)
class User:
    path: str
    name: str
    uid: int


@dataclass(frozen=True, slots=True)
class Team:
    path: str
    name: str
    gid: int
    members: tuple[str, ...]
    fairshare: int
    namespace: str
    # the team's name where Kubernetes needs a DNS label: its queues, labels and the
    # namespace's default (slurm_names.kubernetes_name: chem_lab is chem-lab)
    kubernetes_name: str
    # --- per-team Pod Security level ---
    # the level the team's namespaces enforce on every cluster, instead of the cluster's
    # tenancy.pod_security (None: the cluster's); KubernetesCluster.team_pod_security
    pod_security: str | None = None


@dataclass(frozen=True, slots=True)
class Directory:
    type: str
    uri: str | None
    base_dn: str | None
    bind_dn: str | None
    bind_password: SecretRef | None


@dataclass(frozen=True, slots=True)
class Identity:
    directory: Directory
    users: tuple[User, ...]
    teams: tuple[Team, ...]


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


@dataclass(frozen=True, slots=True)
class QueueTeam:
    path: str
    team: str
    quota: Mapping[str, int]
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True, slots=True)
class Queues:
    # the group the teams share idle GPUs in: Kueue's cohort; with Volcano, whose proportion
    # plugin divides the whole cluster among its queues, the cluster itself
    cohort: str
    teams: tuple[QueueTeam, ...]
    # --- queue engine: Kueue or Volcano ---
    path: str = ""
    engine: str = "kueue"
    cohort_declared: bool = True
    # how long Kueue waits for an admitted workload's pods to all be ready (None: estategen's
    # default, kubernetes.kueue.PODS_READY_TIMEOUT)
    pods_ready_timeout: str | None = None

    @property
    def volcano(self) -> bool:
        return self.engine == "volcano"


@dataclass(frozen=True, slots=True)
class PriorityClass:
    path: str
    name: str
    value: int
    description: str


@dataclass(frozen=True, slots=True)
class GitOps:
    """The engine that syncs a cluster's folder from Git, and where it finds the folder."""

    path: str
    engine: str  # flux | argocd
    repository: str
    branch: str
    # the render output's folder in the repository (kubernetes/<cluster>/ lies below it)
    folder: str
    # Flux: the Secret in flux-system with the repository's credentials (GitRepository
    # spec.secretRef); Argo CD finds its repository credentials by URL instead
    secret: str | None = None


@dataclass(frozen=True, slots=True)
class KubernetesCluster:
    path: str
    name: str
    provider: str
    region: str | None
    project: str | None
    resource_group: str | None
    device_plugin_install: str
    mig_strategy: str
    queues: Queues | None
    priority_classes: tuple[PriorityClass, ...]
    prometheus_operator: bool
    # --- training frameworks: job, jobset, trainjob, mpijob, rayjob, workflow (Argo) ---
    frameworks: tuple[str, ...] = ("job",)
    # --- tenancy: the Pod Security Standards level every team namespace enforces ---
    pod_security: str = "restricted"
    # the group a team's users have in the API server's eyes, {team} for the team's name
    group: str = "{team}"
    # pods in a team namespace must run as a team member in the team's group (an admission
    # policy), as a batch job does on the Slurm side
    unix_identity: bool = False
    # --- GitOps: Flux or Argo CD objects that sync the folder, releases first ---
    gitops: GitOps | None = None

    def team_pod_security(self, team: Team) -> str:
        """The Pod Security Standards level a team's namespace enforces on this cluster: the
        team's own (``identity.teams[].pod_security``), looser or stricter, else the
        cluster's."""
        return team.pod_security or self.pod_security

    def team_group(self, team: str) -> str:
        """The group the cluster's authenticator gives a team's users (the Unix group of the
        team on the Slurm side, ``team``, as ``tenancy.group`` spells it)."""
        return self.group.replace("{team}", team)


@dataclass(frozen=True, slots=True)
class Storage:
    path: str
    name: str
    type: str
    source: str
    mount: str
    options: tuple[str, ...]
    pools: tuple[str, ...] | None
    storage_class: str | None
    # --- file system types and the CSI drivers that offer them ---
    # clusters that offer the class through their CSI driver, beyond those whose on-prem
    # pools mount the file system
    class_clusters: tuple[str, ...] = ()
    # a GKE Managed Lustre instance as PROJECT/ZONE/NAME (its CSI driver's volume handle)
    instance: str | None = None
    # each team's directory under the mount, {team} for its name: its volume reaches only that
    team_directory: str | None = None
    # s3: the bucket's region and the credentials, as secret references
    region: str | None = None
    access_key_id: SecretRef | None = None
    secret_access_key: SecretRef | None = None
    # beegfs: the shared secret of BeeGFS connection authentication (connAuthFile)
    conn_auth: SecretRef | None = None

    @property
    def bucket_and_prefix(self) -> tuple[str, str]:
        """``s3://bucket/a/b`` as ``("bucket", "a/b/")``; the prefix is empty or ends in '/'."""
        bucket, _, prefix = self.source.removeprefix("s3://").partition("/")
        prefix = prefix.strip("/")
        return bucket, f"{prefix}/" if prefix else ""

    def mounted_on(self, pool: str) -> bool:
        """A file system without `pools` is mounted on every pool; otherwise on those listed."""
        return self.pools is None or pool in self.pools


@dataclass(frozen=True, slots=True)
class AlertThresholds:
    """When the estate's alerts fire (``observability.alerts``): durations as Prometheus writes
    them (``15m``, ``1d``), shares in percent."""

    exporter_down_for: str
    gpu_thermal_throttling_percent: int
    gpu_thermal_throttling_for: str
    slurm_node_down_for: str
    slurm_node_drained_for: str
    slurm_controller_unreachable_for: str
    slurmdbd_unreachable_for: str
    kueue_pending_for: str
    stranded_quota_used_percent: int
    stranded_quota_for: str


@dataclass(frozen=True, slots=True)
class Observability:
    dcgm_exporter_port: int
    node_exporter_port: int
    slurm_exporter_port: int
    labels: Mapping[str, str]
    alerts: AlertThresholds


@dataclass(frozen=True, slots=True)
class HostPools:
    """Which pool each host belongs to (the first, for a host listed twice), and how many
    distinct hosts each pool has."""

    pool: Mapping[str, str]
    size: Mapping[str, int]


@dataclass(frozen=True)
class Estate:
    name: str
    description: str
    versions: Versions
    gpu_models: Mapping[str, GpuModel]
    declared_gpu_models: tuple[tuple[str, str], ...]
    identity: Identity
    node_pools: tuple[NodePool, ...]
    slurm: Slurm
    kubernetes_clusters: tuple[KubernetesCluster, ...]
    storage: tuple[Storage, ...]
    observability: Observability
    # rule ids whose warnings and notes the estate's owners have silenced on purpose
    suppress: tuple[str, ...] = ()

    @cached_property
    def pools_by_name(self) -> Mapping[str, NodePool]:
        return MappingProxyType({p.name: p for p in self.node_pools})

    @cached_property
    def teams_by_name(self) -> Mapping[str, Team]:
        return MappingProxyType({t.name: t for t in self.identity.teams})

    @cached_property
    def slurm_hosts(self) -> frozenset[str]:
        """Every host of the Slurm pools (asked for each reservation)."""
        return frozenset(h for p in self.slurm_pools for h in p.hosts)

    @cached_property
    def host_pools(self) -> HostPools:
        """Which pool each host belongs to, and each pool's distinct hosts (asked for each
        reservation, by the checks and the renderers)."""
        pool: dict[str, str] = {}
        size: dict[str, int] = {}
        for node_pool in self.node_pools:
            distinct = set(node_pool.hosts)
            size[node_pool.name] = len(distinct)
            for host in distinct:
                pool.setdefault(host, node_pool.name)
        return HostPools(MappingProxyType(pool), MappingProxyType(size))

    @property
    def slurm_pools(self) -> tuple[NodePool, ...]:
        return tuple(p for p in self.node_pools if p.scheduler == "slurm")

    @property
    def kubernetes_pools(self) -> tuple[NodePool, ...]:
        return tuple(p for p in self.node_pools if p.scheduler == "kubernetes")

    def pools_in_cluster(self, cluster: str) -> Iterator[NodePool]:
        return (p for p in self.kubernetes_pools if p.cluster == cluster)

    def hosted_pools(self, cluster: str | None = None) -> tuple[NodePool, ...]:
        """Slurm pools whose slurmd run as pods (of one cluster, or of any)."""
        return tuple(
            p for p in self.slurm_pools if p.hosted and (cluster is None or p.cluster == cluster)
        )


def build(doc: Mapping[str, Any]) -> Estate:
    """Build the model from a document that passed :func:`estategen.schema.validation.normalise`."""
    identity = doc["identity"]
    directory = identity["directory"]
    slurm = doc.get("slurm") or {}
    observability = doc["observability"]
    versions = doc["versions"]
    slurm_model = _slurm(slurm, doc["estate"], declared="slurm" in doc)
    # derived default: the release the package source installs (a site's repository carries
    # the one versions.slurm names, so it has none: checks.slurm_package_source asks for it)
    slurm_version = str(
        versions.get("slurm")
        or slurm_build(slurm_model.packages).release
        or slurm_build(SlurmPackages()).release
    )
    gpu_models = dict(builtin_models())
    for spec in doc["gpu_models"]:
        gpu_models[spec["name"]] = model_from_data(spec["name"], spec, builtin=False)
    return Estate(
        suppress=tuple(doc["suppress"]),
        name=doc["estate"],
        description=doc["description"],
        versions=Versions(
            Version.parse(slurm_version),
            Version.parse(versions["kubernetes"]),
            slurm_declared="slurm" in versions,
        ),
        gpu_models=MappingProxyType(gpu_models),
        declared_gpu_models=tuple(
            (f"gpu_models[{i}]", spec["name"]) for i, spec in enumerate(doc["gpu_models"])
        ),
        identity=Identity(
            directory=Directory(
                type=directory["type"],
                uri=directory.get("uri"),
                base_dn=directory.get("base_dn"),
                bind_dn=directory.get("bind_dn"),
                bind_password=_secret(directory.get("bind_password")),
            ),
            users=tuple(
                User(f"identity.users[{i}]", u["name"], u["uid"])
                for i, u in enumerate(identity["users"])
            ),
            teams=tuple(
                Team(
                    path=f"identity.teams[{i}]",
                    name=t["name"],
                    gid=t["gid"],
                    members=tuple(t["members"]),
                    fairshare=t["fairshare"],
                    namespace=t.get("namespace") or kubernetes_name(t["name"]),
                    kubernetes_name=kubernetes_name(t["name"]),
                    pod_security=t.get("pod_security"),
                )
                for i, t in enumerate(identity["teams"])
            ),
        ),
        node_pools=tuple(_pool(i, p) for i, p in enumerate(doc["node_pools"])),
        slurm=slurm_model,
        kubernetes_clusters=tuple(
            _cluster(i, c, doc["estate"]) for i, c in enumerate(doc["kubernetes"]["clusters"])
        ),
        storage=tuple(
            Storage(
                path=f"storage[{i}]",
                name=s["name"],
                type=s["type"],
                source=s["source"],
                mount=s["mount"],
                options=tuple(s["options"]),
                pools=tuple(s["pools"]) if "pools" in s else None,
                storage_class=s.get("kubernetes", {}).get("storage_class"),
                class_clusters=tuple(s.get("kubernetes", {}).get("clusters", ())),
                instance=s.get("kubernetes", {}).get("instance"),
                team_directory=s.get("kubernetes", {}).get("team_directory"),
                region=s.get("s3", {}).get("region"),
                access_key_id=_secret(s.get("s3", {}).get("access_key_id")),
                secret_access_key=_secret(s.get("s3", {}).get("secret_access_key")),
                conn_auth=_secret(s.get("beegfs", {}).get("conn_auth")),
            )
            for i, s in enumerate(doc["storage"])
        ),
        observability=Observability(
            dcgm_exporter_port=observability["dcgm_exporter"]["port"],
            node_exporter_port=observability["node_exporter"]["port"],
            slurm_exporter_port=observability["slurm_exporter"]["port"],
            labels=_frozen(dict(sorted(observability["labels"].items()))),
            alerts=AlertThresholds(**observability["alerts"]),
        ),
    )


def _secret(value: Mapping[str, str] | None) -> SecretRef | None:
    return SecretRef(value["secret"]) if value else None


def _expand_all(
    expressions: Any, limit: int = hostlist.MAX_EXPANSION, addresses: bool = False
) -> tuple[str, ...]:
    if expressions is None:
        return ()
    if isinstance(expressions, str):
        expressions = [expressions]
    names: list[str] = []
    for expression in expressions:
        names.extend(hostlist.expand(expression, limit, addresses))
    return tuple(names)


def _pool(index: int, p: Mapping[str, Any]) -> NodePool:
    hosts = p.get("hosts")
    expressions = (hosts,) if isinstance(hosts, str) else tuple(hosts or ())
    gpus = p.get("gpus")
    cpu = p.get("cpu")
    nodes = p.get("nodes") or {}
    network = p.get("network") or {}
    return NodePool(
        path=f"node_pools[{index}]",
        name=p["name"],
        scheduler=p["scheduler"],
        cluster=p.get("cluster"),
        provider=p["provider"],
        hosts=_expand_all(expressions),
        host_expressions=expressions,
        instance_type=p.get("instance_type"),
        nodes_min=nodes.get("min"),
        nodes_max=nodes.get("max"),
        cpu=Cpu(cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"], cpu.get("cpus"))
        if cpu
        else None,
        memory_gb=p.get("memory_gb"),
        gpus=Gpus(
            model=gpus["model"],
            count=gpus["count"],
            mig=tuple(gpus.get("mig", ())),
            sharing=Sharing(
                time_slicing=gpus.get("sharing", {}).get("time_slicing"),
                mps=gpus.get("sharing", {}).get("mps"),
                shard=gpus.get("sharing", {}).get("shard"),
            ),
            gres_type=gpus.get("gres_type"),
            feature=gpus.get("feature"),
            autodetect=gpus.get("autodetect"),
            typed=gpus.get("typed", True),
            files=tuple(gpus.get("files", ())),
            other_types=tuple(
                GpuType(
                    model=kind["model"],
                    count=kind["count"],
                    gres_type=kind.get("gres_type"),
                    files=tuple(kind.get("files", ())),
                )
                for kind in gpus.get("other_types", ())
            ),
        )
        if gpus
        else None,
        switches=_expand_all(network.get("switch")),
        blocks=_expand_all(network.get("block")),
        features=tuple(p["features"]),
        labels=_frozen(dict(sorted(p["labels"].items()))),
        taints=tuple(Taint(t["key"], t["value"], t["effect"]) for t in p["taints"]),
        **{d.key: p.get(d.key) for d in NODE_POOL_PARAMETERS},
        host_weights=tuple(p.get("host_weights", ())),
        health_checks=tuple(p["health_check"]["checks"]) if "health_check" in p else None,
        cloud=_cloud(p.get("cloud")),
        site_cloud=p.get("state") == "cloud",
        addresses=_expand_all(p.get("addresses"), addresses=True),
        max_pods=p.get("max_pods"),
    )


def _cloud(c: Mapping[str, Any] | None) -> CloudNodes | None:
    if not c:
        return None
    return CloudNodes(
        image=c["image"],
        zone=c.get("zone"),
        project=c.get("project"),
        region=c.get("region"),
        subnet=c.get("subnet"),
    )


def _slurm(s: Mapping[str, Any], estate: str, declared: bool) -> Slurm:
    scheduling = s.get("scheduling") or {
        "priority_weights": {},
        "preemption": {"type": "none", "mode": "off"},
    }
    priority_type = scheduling.get("priority_type", "multifactor")
    half_life = scheduling.get("fairshare_half_life")
    accounting = s.get("accounting")
    return Slurm(
        declared=declared,
        cluster_name=s.get("cluster_name") or estate,
        controllers=tuple(s.get("controllers", ())),
        controller_addresses=_frozen(dict(s.get("controller_addresses", {}))),
        accounting=Accounting(
            host=accounting["host"],
            port=accounting["port"],
            database=Database(
                host=accounting["database"]["host"],
                port=accounting["database"]["port"],
                name=accounting["database"]["name"],
                user=accounting["database"]["user"],
                password=SecretRef(accounting["database"]["password"]["secret"]),
            ),
            tres=tuple(accounting["tres"]) if "tres" in accounting else None,
            enforce=tuple(dict.fromkeys(accounting.get("enforce", ACCOUNTING_ENFORCE))),
        )
        if accounting
        else None,
        scheduling=Scheduling(
            priority_weights=_frozen(dict(sorted(scheduling["priority_weights"].items()))),
            # derived default: a week with multifactor, none with basic
            fairshare_half_life=half_life
            if half_life is not None
            else "7-0"
            if priority_type == "multifactor"
            else None,
            preemption=Preemption(
                scheduling["preemption"]["type"], scheduling["preemption"]["mode"]
            ),
            priority_weight_tres=tuple(scheduling.get("priority_weight_tres", {}).items()),
            priority_type=priority_type,
            half_life_declared=half_life is not None,
        ),
        qos=tuple(
            Qos(
                path=f"slurm.qos[{i}]",
                name=q["name"],
                max_gpus_per_user=q.get("max_gpus_per_user"),
                preempt=tuple(q["preempt"]),
                **{d.key: q.get(d.key) for d in QOS_PARAMETERS},
            )
            for i, q in enumerate(s.get("qos", ()))
        ),
        partitions=tuple(
            Partition(
                path=f"slurm.partitions[{i}]",
                name=p["name"],
                pools=tuple(p["pools"]),
                default=p["default"],
                max_time=p["max_time"],
                default_time=p.get("default_time"),
                teams=tuple(p["teams"]),
                qos=p.get("qos"),
                priority_tier=p["priority_tier"],
                hidden=p["hidden"],
                **{d.key: p.get(d.key) for d in PARTITION_PARAMETERS if not d.site_override},
                overrides=_partition_overrides(p),
            )
            for i, p in enumerate(s.get("partitions", ()))
        ),
        reservations=tuple(_reservation(i, r) for i, r in enumerate(s.get("reservations", ()))),
        mpi=_mpi(s.get("mpi")),
        rest_api=_rest_api(s.get("rest_api")),
        options=_frozen({k: str(v) for k, v in sorted(s.get("options", {}).items())}),
        health_check=HealthCheck(
            s["health_check"]["interval"], tuple(s["health_check"]["node_state"])
        )
        if "health_check" in s
        else None,
        power_saving=_power_saving(s.get("power_saving")),
        auth_key=_secret(s.get("auth_key")),
        site=_slurm_site(s),
        packages=SlurmPackages(**s.get("packages", {})),
    )


def _power_saving(p: Mapping[str, Any] | None) -> PowerSaving:
    if p is None:
        return NO_POWER_SAVING
    return PowerSaving(
        True,
        suspend_time=p["suspend_time"],
        resume_timeout=p["resume_timeout"],
        suspend_timeout=p["suspend_timeout"],
        resume_program=p.get("resume_program"),
        suspend_program=p.get("suspend_program"),
        resume_fail_program=p.get("resume_fail_program"),
        exclude_nodes=tuple(p.get("exclude_nodes", ())),
    )


def _slurm_site(s: Mapping[str, Any]) -> SlurmSite:
    """The site's daemon and plugin settings; the schema's defaults are estategen's."""
    default = SlurmSite()
    ports = s.get("ports") or {}
    ctld = str(ports["slurmctld"]) if "slurmctld" in ports else None
    low, _, high = ctld.partition("-") if ctld else ("", "", "")
    select = s.get("select") or {}
    completion = s.get("job_completion") or {}
    paths = SlurmPaths(**{**SLURM_PATH_DEFAULTS, **(s.get("paths") or {})})
    return SlurmSite(
        paths=paths,
        slurmctld_ports=(int(low), int(high or low)) if ctld else None,
        slurmd_port=ports.get("slurmd"),
        slurmd_user=s.get("slurmd_user"),
        return_to_service=s.get("return_to_service", default.return_to_service),
        select_type=select.get("type", default.select_type),
        # derived default: estategen's CR_Core_Memory, or none for linear (whole nodes)
        select_parameters=tuple(dict.fromkeys(select["parameters"]))
        if "parameters" in select
        else ()
        if select.get("type") == "linear"
        else default.select_parameters,
        task_plugins=tuple(dict.fromkeys(s["task_plugins"]))
        if "task_plugins" in s
        else default.task_plugins,
        job_acct_gather=s.get("job_acct_gather", default.job_acct_gather),
        prolog_flags=tuple(dict.fromkeys(s["prolog_flags"]))
        if "prolog_flags" in s
        else default.prolog_flags,
        scheduler_parameters=tuple(s["scheduler_parameters"])
        if "scheduler_parameters" in s
        else None,
        scheduler=s.get("scheduler", default.scheduler),
        enforce_part_limits=s.get("enforce_part_limits", default.enforce_part_limits),
        proctrack=s.get("proctrack", default.proctrack),
        job_completion=completion.get("type", default.job_completion),
        job_completion_location=_job_completion_location(completion, paths),
    )


def _job_completion_location(completion: Mapping[str, Any], paths: SlurmPaths) -> str | None:
    """JobCompLoc: the blueprint's location, else jobcomp.log in the folder of slurmctld's log
    (which the controller role creates for SlurmUser). Without a completion log only a
    location the blueprint gives (checks refuse it)."""
    if completion.get("type", "none") == "none":
        return completion.get("location")
    folder = paths.slurmctld_log_file.rsplit("/", 1)[0]
    return str(completion.get("location") or f"{folder}/jobcomp.log")


def _partition_overrides(p: Mapping[str, Any]) -> PartitionOverrides:
    return PartitionOverrides(
        state=p.get("state"),
        allow_qos=tuple(p.get("allow_qos", ())),
        allow_groups=tuple(p.get("allow_groups", ())),
        deny_accounts=tuple(p.get("deny_accounts", ())),
        **{d.key: p.get(d.key) for d in PARTITION_PARAMETERS if d.site_override},
        def_mem_per_cpu=p.get("def_mem_per_cpu"),
        def_mem_per_node=p.get("def_mem_per_node"),
        def_cpu_per_gpu=p.get("def_cpu_per_gpu"),
        def_mem_per_gpu=p.get("def_mem_per_gpu"),
        billing_weights=tuple((k, str(v)) for k, v in p["billing_weights"].items())
        if "billing_weights" in p
        else None,
        nodeset=p.get("nodeset"),
    )


def _local_time(text: str | None) -> str | None:
    """A blueprint date and time as scontrol writes it: seconds always shown."""
    return datetime.fromisoformat(text).isoformat(timespec="seconds") if text else None


def _reservation(index: int, r: Mapping[str, Any]) -> Reservation:
    start = _local_time(r["start"])
    assert start is not None
    return Reservation(
        path=f"slurm.reservations[{index}]",
        name=r["name"],
        start=start,
        duration=r.get("duration"),
        end=_local_time(r.get("end")),
        pools=tuple(r.get("pools", ())),
        partition=r.get("partition"),
        hosts=_expand_all(r.get("hosts")),
        flags=tuple(dict.fromkeys(r["flags"])),
        teams=tuple(r["teams"]),
        users=tuple(r["users"]),
    )


def _mpi(m: Mapping[str, Any] | None) -> Mpi:
    if not m:
        return Mpi("none", None)
    ports = m.get("ports")
    low, _, high = ports.partition("-") if ports else ("", "", "")
    return Mpi(m["default"], (int(low), int(high)) if ports else None)


def _rest_api(r: Mapping[str, Any] | None) -> RestApi | None:
    if not r:
        return None
    return RestApi(r["host"], r["port"], r["user"], SecretRef(r["jwt_key"]["secret"]))


def _gitops(g: Mapping[str, Any] | None, estate: str, path: str) -> GitOps | None:
    if not g:
        return None
    return GitOps(
        path=f"{path}.gitops",
        engine=g["engine"],
        repository=g["repository"],
        branch=g["branch"],
        # where `estategen render` writes the output unless told otherwise
        folder=g.get("path") or f"build/{estate}",
        secret=g.get("secret"),
    )


def _cluster(index: int, c: Mapping[str, Any], estate: str) -> KubernetesCluster:
    queues = c.get("queues")
    path = f"kubernetes.clusters[{index}]"
    return KubernetesCluster(
        path=path,
        name=c["name"],
        provider=c["provider"],
        region=c.get("region"),
        project=c.get("project"),
        resource_group=c.get("resource_group"),
        device_plugin_install=c["device_plugin"]["install"],
        mig_strategy=c["device_plugin"]["mig_strategy"],
        queues=Queues(
            cohort=queues.get("cohort") or c["name"],
            path=f"{path}.queues",
            engine=queues["engine"],
            cohort_declared="cohort" in queues,
            pods_ready_timeout=queues.get("pods_ready_timeout"),
            teams=tuple(
                QueueTeam(
                    path=f"{path}.queues.teams[{i}]",
                    team=t["team"],
                    quota=_frozen(dict(sorted(t["quota"].items()))),
                    borrowing_limit=t.get("borrowing_limit"),
                    lending_limit=t.get("lending_limit"),
                )
                for i, t in enumerate(queues["teams"])
            ),
        )
        if queues
        else None,
        priority_classes=tuple(
            PriorityClass(
                f"{path}.priority_classes[{i}]", pc["name"], pc["value"], pc.get("description", "")
            )
            for i, pc in enumerate(c["priority_classes"])
        ),
        prometheus_operator=c["prometheus_operator"],
        frameworks=tuple(c["frameworks"]),
        pod_security=c["tenancy"]["pod_security"],
        group=c["tenancy"]["group"],
        unix_identity=c["tenancy"]["unix_identity"],
        gitops=_gitops(c.get("gitops"), estate, path),
    )


# slurm.conf StateSaveLocation: where slurmctld keeps its state. A backup controller takes over
# from that state, so with two controllers it must be storage both of them mount.
STATE_SAVE_LOCATION = "/var/spool/slurmctld"

# Slurm reads a time into a signed 32-bit count of seconds and rounds it up to minutes by adding
# 59 first (time_str2mins); anything longer wraps negative and slurmctld refuses it. The longest
# time is the whole minutes below that, so its normalised form is read back unchanged.
SLURM_TIME_MAX_MINUTES = (2**31 - 1 - 59) // 60
UNLIMITED_TIMES = ("UNLIMITED", "INFINITE")


def spread(hosts: Sequence[str], groups: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Hosts split into contiguous, near-equal runs, one per switch or block, in order.

    Both schedulers place a pool's nodes under its `network.switch` (or `block`) names this
    way, so Slurm's topology and Kubernetes' topology labels agree.
    """
    out = []
    base, extra = divmod(len(hosts), len(groups))
    start = 0
    for index, group in enumerate(groups):
        size = base + (1 if index < extra else 0)
        out.append((group, list(hosts[start : start + size])))
        start += size
    return out


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
