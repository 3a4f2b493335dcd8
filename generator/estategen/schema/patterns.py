"""What a blueprint's values are held to: the regular expressions, the words each enumerated
key allows, what each pattern means in a message, and the change policies.

No rules here and nothing of the model (this module imports only ``re`` and the patterns of
declared keys, :mod:`estategen.declarations`): the checks, the renderers and the importer read
their patterns and words from it.
"""

from __future__ import annotations

import re
from functools import cache

from estategen.declarations import OVERSUBSCRIBE

NAME = r"[a-z][a-z0-9-]{0,39}"
HOSTNAME = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
FQDN = rf"{HOSTNAME}(\.{HOSTNAME})*"
USER = r"[a-z_][a-z0-9_-]{0,31}"
DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
# kubernetes.clusters[].tenancy.group: a team's group as the API server's authenticator names
# it, with {team} once where the team's name goes ('{team}', 'oidc:{team}', '{team}@example.org')
GROUP_TEMPLATE = r"[A-Za-z0-9_.:@/-]{0,100}\{team\}[A-Za-z0-9_.:@/-]{0,100}"
# storage[].kubernetes.team_directory: a relative path with {team} as one of its parts; no
# part starts with '.', so none is '.' or '..' and the path stays under the mount
_PATH_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}"
TEAM_DIRECTORY = rf"({_PATH_PART}/){{0,8}}\{{team\}}(/{_PATH_PART}){{0,8}}"
LABEL_KEY = rf"({DNS_LABEL}(\.{DNS_LABEL})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?"
LABEL_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
MIG_PROFILE = r"[1-7]g\.[0-9]{1,3}gb"
QUOTA_KEY = rf"{NAME}(/{MIG_PROFILE})?"
# slurm.conf(5) times; like Slurm, a field may have any number of digits (``0:90``, ``2:75:00``).
SLURM_TIME = r"(UNLIMITED|INFINITE|([0-9]{1,12}-)?[0-9]{1,12}(:[0-9]{1,12}){0,2})"
SLURM_OPTION_KEY = r"[A-Z][A-Za-z0-9]{1,63}"
# A partition's name as slurmctld keeps it, case by case (PartitionName=, copied as written by
# _parse_partitionname in src/common/read_config.c), and a QoS's name (sacctmgr stores it in
# lower case; slurmctld finds a QoS by name in any case). Slurm checks neither; estategen
# refuses what breaks its other outputs: ',' (sbatch -p, AllowQos, Preempt= and sacctmgr's
# QOS= read a list), '=', spaces, '#' and quotes (slurm.conf and sacctmgr lines), and '-'
# first (sacctmgr and scontrol would read the name as an option).
SLURM_PARTITION = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
SLURM_QOS = SLURM_PARTITION  # one rule, one hint
# slurm.conf's ClusterName: slurmctld lower-cases it (read_config.c, "Some databases are case
# sensitive") and slurm.conf(5) holds it to 40 characters (the accounting tables' names start
# with it); a letter or digit first, so that its Kubernetes name (facts.kubernetes_name) is one.
CLUSTER_NAME = r"[a-z0-9][a-z0-9_.-]{0,39}"
# A team's name, which is a Slurm account (sacct.cfg, AllowAccounts, sbatch -A) and a Unix
# group (the common role's ansible.builtin.group runs groupadd, which on Debian 12 takes at
# most 32 characters): lower case, as slurmdbd keeps an account (sacctmgr lower-cases the
# names it adds), '_' and '-' after a letter; Kubernetes objects take its DNS form
# (slurm_names.kubernetes_name: chem_lab is chem-lab).
TEAM = r"[a-z][a-z0-9_-]{0,31}"
# What applying a change to a key means on a running estate: each key's documentation names
# one or more of these (data/schema-docs.yaml `change:`), and the JSON Schema carries them as
# the annotation CHANGE_KEYWORD.
CHANGE_POLICIES = {
    "per-key": "a mapping or list: each key in it says what a change to it needs",
    "definition": "a definition other keys use: a change to it is a change to each key using it",
    "review": "renames or retargets many outputs at once: read the whole plan before applying",
    "validation": "changes only what validate reports",
    "report": "changes only the capacity report",
    "ansible-playbook": "applied by running the playbook on the hosts it concerns",
    "ansible-build": "new hosts are built by the playbook",
    "scontrol-reconfigure": "slurmctld and every slurmd reread their files on scontrol reconfigure",
    "restart-slurmctld": "slurmctld must restart",
    "restart-slurm-daemons": "slurmctld and every slurmd must restart",
    "restart-slurmdbd": "slurmdbd must restart",
    "drain-and-rebuild": "the pool's nodes are drained, reconfigured and resumed",
    "sacctmgr": "new sacctmgr lines are loaded into the accounting database",
    "pulumi-up": "applied live by pulumi up (or kubectl apply of the manifests)",
    "kubernetes-replace": "a Kubernetes object or a cloud node pool is replaced, not updated",
    "prometheus-reload": "Prometheus reloads its configuration and rules",
}
CHANGE_KEYWORD = "x-estategen-change"
# suppress[]: a semantic check's rule id, as findings carry it
CHECK_RULE = r"check/[a-z][a-z0-9-]{0,62}"
SLURM_OPTION_VALUE = r"[A-Za-z0-9_.,:/=+@%-]{1,256}"
# slurm.reservations[].start/end: an ISO 8601 local date and time, as slurmctld
# reads StartTime/EndTime, in the controller's time zone, without an offset.
LOCAL_DATETIME = (
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?"
)
PORT_RANGE = r"[0-9]{1,5}-[0-9]{1,5}"
# --- site overrides of what estategen renders ---
# An absolute path of a daemon's file or folder: no '.', '..', '//' or trailing '/'.
DAEMON_PATH = r"(/[A-Za-z0-9_][A-Za-z0-9._-]{0,62}){1,16}"
# A NodeSet's name as slurm.conf writes it (NodeSet=): a letter, then letters, digits, '_'
# and '-' (ParallelCluster names them like efa_nodes); no hostlist brackets or commas.
NODESET = r"[A-Za-z][A-Za-z0-9_-]{0,39}"
# A GRES type name as slurm.conf and gres.conf write it (Type=): no ':' ',' or '='.
GRES_TYPE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
# a device file gres.conf names (File=): one path under /dev, no range or list
DEVICE_FILE = r"/dev(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}){1,4}"
# A TRES as AccountingStorageTRES names it: cpu, mem, gres/gpu, gres/gpu:a100, license/x...
TRES = (
    r"(billing|cpu|energy|mem|node|pages|vmem|fs/disk|fs/lustre|ic/ofed"
    r"|(gres|license|bb)/[A-Za-z0-9_.-]{1,63}(:[A-Za-z0-9_.-]{1,63})?)"
)
# One SchedulerParameters option: a word, or word=value.
SCHEDULER_PARAMETER = r"[a-z][a-z0-9_]{0,63}(=[A-Za-z0-9_.:-]{1,64})?"
# A node feature as slurm.conf writes it (Feature=); sites use upper case and ':'.
FEATURE = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}"
# A TRES a partition's TRESBillingWeights names, as slurm.conf writes it.
BILLING_TRES = (
    r"(CPU|cpu|Mem|mem|Node|node|Energy|energy|VMem|vmem|Pages|pages|FS/Disk|fs/disk"
    r"|(GRES|gres|License|license|BB|bb)/[A-Za-z0-9_.-]{1,63}(:[A-Za-z0-9_.-]{1,63})?)"
)
# A billing weight: a number, with a unit suffix for memory and burst buffers (Mem=0.25G).
BILLING_WEIGHT = r"-?([0-9]{1,9}(\.[0-9]{0,6})?|\.[0-9]{1,6})[KMGTP]?"
# A Unix group name as AllowGroups names it.
GROUP = r"[a-z_][a-z0-9_.-]{0,31}"
# No control characters (C0, DEL, C1 with NEL U+0085) and no Unicode line or paragraph
# separators (U+2028, U+2029): each starts a new line somewhere downstream.
FREE_TEXT = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]{0,200}"
MOUNT = r"/([A-Za-z0-9._-]+/?)*"
NFS_OR_LUSTRE_SOURCE = r"[A-Za-z0-9][A-Za-z0-9._@:,-]*:/[A-Za-z0-9._/-]*"
# --- file system types: each type's own source form, checked per type by
# checks.storage_source_form; the schema accepts any of them ---
STORAGE_TYPES = ("nfs", "lustre", "beegfs", "gpfs", "weka", "s3")
STORAGE_HOST = r"[a-z0-9]([a-z0-9.-]{0,252}[a-z0-9])?"
# BeeGFS: the management service's host (sysMgmtdHost), optionally with its port
BEEGFS_SOURCE = rf"beegfs://{STORAGE_HOST}(:[0-9]{{1,5}})?/?"
# GPFS / IBM Storage Scale: the file system's device name (mmlsfs all -d), like 'gpfs0'
GPFS_SOURCE = r"[A-Za-z][A-Za-z0-9_]{0,31}"
# WEKA: a backend host (or several, comma-separated) and the file system name
WEKA_SOURCE = rf"{STORAGE_HOST}(,{STORAGE_HOST})*/[A-Za-z0-9_-]{{1,32}}"
# S3: a bucket (S3's naming rules: 3-63 of [a-z0-9.-], letter or digit at both ends) and an
# optional key prefix of plain path segments: no quotes, spaces or globs, as it reaches a
# systemd ExecStart line and the PV's mount options unquoted
S3_SOURCE = r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9_.=-]+)*/?"
STORAGE_SOURCE = (
    rf"({NFS_OR_LUSTRE_SOURCE}|{BEEGFS_SOURCE}|{GPFS_SOURCE}|{WEKA_SOURCE}|{S3_SOURCE})"
)
# each type's own source form, and what it must look like (checks.storage_types_and_drivers)
STORAGE_SOURCES = {
    "nfs": (NFS_OR_LUSTRE_SOURCE, "an NFS export like 'nfs01:/export/home'"),
    "lustre": (NFS_OR_LUSTRE_SOURCE, "a Lustre MGS NID and file system like '10.0.0.1@o2ib:/fs'"),
    "beegfs": (BEEGFS_SOURCE, "the BeeGFS management host (sysMgmtdHost) like 'beegfs://mgmtd01'"),
    "gpfs": (GPFS_SOURCE, "the GPFS (IBM Storage Scale) device name like 'gpfs0' (mmlsfs all -d)"),
    "weka": (WEKA_SOURCE, "WEKA backend host(s) and file system like 'weka01,weka02/default'"),
    "s3": (S3_SOURCE, "an S3 bucket and optional prefix like 's3://aurora-datasets/train'"),
}
# A Managed Lustre instance on GKE as its CSI driver's volume handle: PROJECT/ZONE/NAME
GKE_LUSTRE_INSTANCE = (
    r"[a-z][a-z0-9-]{4,28}[a-z0-9]/[a-z]+-[a-z]+[0-9]{1,2}-[a-z]/[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)
LDAP_URI = r"ldaps?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?"
DN = r"[A-Za-z]+=[A-Za-z0-9._ -]+(,[A-Za-z]+=[A-Za-z0-9._ -]+)*"
# GCP and AWS regions are dashed (us-central1, eu-west-1); Azure's are one word (westeurope,
# eastus2). Which form a cluster takes follows its provider (checks.cluster_region_form).
REGION = r"[a-z]{2,}[a-z0-9]*(-[a-z0-9]+){0,3}"
# An Azure resource group name: letters, digits, '_', '(', ')', '-', '.', not ending in '.'
RESOURCE_GROUP = r"[A-Za-z0-9_().-]{0,89}[A-Za-z0-9_()-]"
INSTANCE_TYPE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
PROM_LABEL = r"[a-zA-Z][a-zA-Z0-9_]{0,62}"
PROM_VALUE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}"
# a Prometheus duration in one unit, as rules write `for:` and range selectors. Prometheus
# holds a duration in int64 nanoseconds (model.ParseDuration refuses more: "duration out of
# range"), about 292 years: 106751d at most; no count of hours, minutes or seconds of six
# digits reaches it
PROM_MAX_DAYS = (2**63 - 1) // (86_400 * 10**9)
PROM_DURATION = (
    r"[1-9][0-9]{0,5}(s|m|h)"
    r"|([1-9][0-9]{0,4}|10[0-5][0-9]{3}|106[0-6][0-9]{2}|1067[0-4][0-9]|10675[01])d"
)
# a Go duration Kueue's Configuration reads (metav1.Duration): one unit, never zero (Kueue
# reads zero as its own 30m default)
KUEUE_DURATION = r"[1-9][0-9]{0,4}(s|m|h)"
# --- elastic cloud nodes ---
GCE_ZONE = r"[a-z]+-[a-z]+[0-9]{1,2}-[a-z]"
GCE_PROJECT = r"[a-z][a-z0-9-]{4,28}[a-z0-9]"
# a pinned image: a GCE image by name (never a family, which moves) or an EC2 AMI id
GCE_IMAGE = rf"projects/{GCE_PROJECT}/global/images/[a-z]([-a-z0-9]{{0,61}}[a-z0-9])?"
CLOUD_IMAGE = rf"({GCE_IMAGE}|ami-[0-9a-f]{{8,17}})"
CLOUD_SUBNET = r"([a-z]([-a-z0-9]{0,61}[a-z0-9])?|subnet-[0-9a-f]{8,17})"

SLURM_VERSIONS = ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
# --- where the Slurm packages come from (slurm.packages) ---
# An apt source line (sources.list(5), one-line style) of a site's Slurm repository: `deb`,
# optional [key=value ...] options such as signed-by=, an http(s) URI, a suite, components.
_APT_OPTION = r"[a-z][a-z-]{0,31}=[A-Za-z0-9._/,:-]{1,200}"
APT_SOURCE = (
    rf"deb( \[{_APT_OPTION}( {_APT_OPTION}){{0,7}}\])? https?://[A-Za-z0-9._~:/%+@-]{{1,300}}"
    r" [A-Za-z0-9._/-]{1,64}( [A-Za-z0-9._-]{1,64}){0,8}"
)
HTTPS_URL = r"https://[A-Za-z0-9._~:/%+@-]{1,400}"
# --- the Git repository a GitOps engine syncs the rendered output from ---
# https or ssh (Flux's GitRepository reads no scp-like `git@host:path`): host, port, path
GIT_URL = r"(https|ssh)://([A-Za-z0-9._-]{1,64}@)?[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~-]{1,100}){1,16}/?"
# a branch as git-check-ref-format(1) allows it, minus what needs quoting: parts that do not
# start with '.', no '..', not ending in '.lock'
_REF_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}"
GIT_BRANCH = rf"(?!.*\.\.)(?!.*\.lock$){_REF_PART}(/{_REF_PART}){{0,8}}"
# a folder inside the repository, relative, no part starting with '.' ('.' alone is the root)
REPO_PATH = rf"\.|{_PATH_PART}(/{_PATH_PART}){{0,15}}"
KUBERNETES_VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
PROVIDERS = ("on-prem", "gke", "eks", "aks")
# queue engines and training frameworks a Kubernetes cluster may run
QUEUE_ENGINES = ("kueue", "volcano")
# the GitOps engines whose objects a cluster's folder carries (kubernetes.clusters[].gitops)
GITOPS_ENGINES = ("flux", "argocd")
FRAMEWORKS = ("job", "jobset", "trainjob", "mpijob", "rayjob", "workflow")
DEFAULT_FRAMEWORKS = ("job",)
# --- the words of health checks, partitions, reservations, MPI and site overrides ---
HEALTH_CHECKS = ("gpus", "mig", "mounts", "memory")
# slurm.conf(5) HealthCheckNodeState values of Slurm 22.05 and later
HEALTH_CHECK_NODE_STATES = ("any", "idle", "alloc", "mixed", "cycle")
# slurm.conf(5) partition State values
PARTITION_STATES = ("up", "down", "drain", "inactive")
# scontrol(1) reservation flags a blueprint may set; those that need a node count, Nodes=ALL
# or a relative start time (part_nodes, replace, time_float, ...) are left out.
RESERVATION_FLAGS = (
    "maint",
    "ignore_jobs",
    "overlap",
    "flex",
    "magnetic",
    "purge_comp",
    "static_alloc",
    "no_hold_jobs_after",
    "hourly",
    "daily",
    "weekday",
    "weekend",
    "weekly",
)
MPI_TYPES = ("none", "pmi2", "pmix")
# site overrides of what estategen renders
SELECT_TYPES = ("cons_tres", "cons_res", "linear")
# SelectTypeParameters, as slurm.conf(5) spells them; what each select plugin accepts is
# checked in checks.slurm_site. One resource (CR_CPU ... CR_Memory) and any of the modifiers.
SELECT_RESOURCES = (
    "CR_CPU",
    "CR_CPU_Memory",
    "CR_Core",
    "CR_Core_Memory",
    "CR_Socket",
    "CR_Socket_Memory",
    "CR_Memory",
)
SELECT_MODIFIERS = (
    "CR_ONE_TASK_PER_CORE",
    "CR_CORE_DEFAULT_DIST_BLOCK",
    "CR_LLN",
    "CR_Pack_Nodes",
)
TASK_PLUGINS = ("cgroup", "affinity", "none")
JOB_ACCT_GATHER_TYPES = ("cgroup", "linux", "none")
SCHEDULER_TYPES = ("backfill", "builtin")
PRIORITY_TYPES = ("multifactor", "basic")
ENFORCE_PART_LIMITS = ("all", "any", "none")
PROCTRACK_TYPES = ("cgroup", "linuxproc", "pgid")
JOB_COMP_TYPES = ("none", "filetxt")
PROLOG_FLAGS = ("Alloc", "Contain", "DeferBatch", "NoHold", "Serial", "X11")
ACCOUNTING_ENFORCE = ("associations", "limits", "nojobs", "nosteps", "qos", "safe", "wckeys")

# What a pattern means, for error messages and JSON Schema descriptions.
PATTERN_HINTS = {
    NAME: "name: lowercase letter first, then lowercase letters, digits or '-', at most 40",
    HOSTNAME: "host name: lowercase letters, digits and '-', at most 63",
    FQDN: "host name (lowercase letters, digits, '-' and '.')",
    USER: "user name: lowercase letter or '_' first, then [a-z0-9_-], at most 32",
    DNS_LABEL: "DNS label: lowercase letters, digits and '-', at most 63",
    TEAM_DIRECTORY: "path under the mount with '{team}' as one of its parts, like '{team}' or "
    "'groups/{team}': parts of letters, digits, '_', '.' and '-', none starting with '.'",
    GROUP_TEMPLATE: "group name with '{team}' once where the team's name goes, like "
    "'oidc:{team}' or '{team}@example.org': letters, digits, '_', '.', ':', '@', '/' and '-'",
    LABEL_KEY: "Kubernetes label key like 'tier' or 'example.com/tier'",
    LABEL_VALUE: "Kubernetes label value: letters, digits, '-', '_', '.', at most 63",
    QUOTA_KEY: "GPU model name, or model/MIG profile like 'a100-sxm-80gb/3g.40gb'",
    MIG_PROFILE: "MIG profile like '3g.40gb'",
    SLURM_TIME: "Slurm time: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED or INFINITE",
    SLURM_OPTION_KEY: "slurm.conf parameter name like 'MaxJobCount'",
    SLURM_PARTITION: "Slurm partition or QoS name like 'gpu_priority', 'rocsLong' or "
    "'part.eic': letters of either case, digits, '_', '.' and '-', not '-' first, at most 64 "
    "(no ',', '=', spaces or quotes: Slurm reads those as lists, keys or words)",
    CLUSTER_NAME: "Slurm cluster name like 'hpc.example' or 'aurora_2': lowercase letters, "
    "digits, '_', '.' and '-', a letter or digit first, at most 40 (slurmctld lower-cases "
    "ClusterName; slurm.conf(5) allows 40 characters)",
    TEAM: "team name like 'chem_lab' or 'vision' (a Slurm account and a Unix group): lowercase "
    "letter first, then lowercase letters, digits, '_' or '-', at most 32 (groupadd's limit)",
    CHECK_RULE: "check's rule id like 'check/pool-without-storage'",
    SLURM_OPTION_VALUE: "slurm.conf value: one word of [A-Za-z0-9_.,:/=+@%-], no spaces",
    LOCAL_DATETIME: "local date and time like '2027-01-10T08:00' or '2027-01-10T08:00:00'",
    PORT_RANGE: "port range like '12000-12999'",
    DAEMON_PATH: "absolute path like /var/spool/slurmctld (no '.', '..', '//' or trailing '/')",
    GRES_TYPE: "GRES type name like 'a100', 'GV100GL' or 'rtx_3090' (letters, digits, '_.-')",
    DEVICE_FILE: "device file like /dev/nvidia1: a path under /dev of parts of letters, digits, "
    "'_', '.' and '-' (no range: list each file)",
    NODESET: "NodeSet name like 'gpu_nodes' (a letter, then letters, digits, '_' or '-')",
    TRES: "TRES like 'cpu', 'mem', 'gres/gpu' or 'gres/gpu:a100'",
    SCHEDULER_PARAMETER: "SchedulerParameters option like 'bf_continue' or 'bf_window=4320'",
    OVERSUBSCRIBE: "'no', 'exclusive', 'yes', 'force', or 'yes:N' / 'force:N' (N jobs each)",
    FEATURE: "node feature like 'ib', 'nvme' or 'Rack:A1' (letters, digits, '_.:-')",
    BILLING_TRES: "TRES like 'CPU', 'Mem', 'GRES/gpu' or 'GRES/gpu:a100'",
    BILLING_WEIGHT: "billing weight: a number, for memory with a unit like '0.25G'",
    GROUP: "Unix group name: lowercase letter or '_' first, then [a-z0-9_.-], at most 32",
    FREE_TEXT: "one line of text without control characters or line breaks, at most 200 characters",
    MOUNT: "absolute path like /scratch",
    NFS_OR_LUSTRE_SOURCE: "source like 'server:/export' or '10.0.0.1@o2ib:/fs'",
    STORAGE_SOURCE: "source like 'server:/export' (nfs), '10.0.0.1@o2ib:/fs' (lustre), "
    "'beegfs://mgmtd-host' (beegfs), 'gpfs0' (gpfs), 'backend-host/fsname' (weka) or "
    "'s3://bucket/prefix' (s3)",
    GKE_LUSTRE_INSTANCE: "Managed Lustre instance as 'PROJECT/ZONE/NAME', like "
    "'aurora-hpc/us-central1-a/scratch'",
    LDAP_URI: "URI like ldaps://ldap.example.org",
    DN: "distinguished name like 'dc=example,dc=org'",
    REGION: "cloud region like 'us-central1', 'eu-west-1' or 'westeurope'",
    RESOURCE_GROUP: "Azure resource group name: letters, digits, '_', '(', ')', '-', '.', "
    "at most 90, not ending in '.'",
    INSTANCE_TYPE: "instance type like 'a3-highgpu-8g' or 'p5.48xlarge'",
    PROM_LABEL: "metric label name: letter first, then letters, digits or '_'",
    PROM_VALUE: "metric label value: letters, digits, '_', '.', '-'",
    PROM_DURATION: "duration like '90s', '15m', '2h' or '1d' (one unit; at most "
    f"{PROM_MAX_DAYS}d, the longest Prometheus holds)",
    KUEUE_DURATION: "duration like '90s', '10m' or '2h' (one unit, not zero)",
    GCE_ZONE: "GCE zone like 'us-central1-a'",
    GCE_PROJECT: "GCP project id like 'aurora-hpc'",
    CLOUD_IMAGE: (
        "pinned image: 'projects/PROJECT/global/images/NAME' (gke) or an AMI id like "
        "'ami-0123456789abcdef0' (eks)"
    ),
    CLOUD_SUBNET: "subnetwork name (gke) or subnet id like 'subnet-0123abcd' (eks)",
    APT_SOURCE: "apt source line like 'deb [signed-by=/etc/apt/keyrings/slurm.asc] "
    "https://repo.example.org/slurm bookworm main'",
    HTTPS_URL: "https URL like 'https://repo.example.org/slurm/key.asc'",
    GIT_URL: "https or ssh URL of a Git repository like "
    "'https://git.example.org/platform/estate.git' or 'ssh://git@git.example.org/platform/estate'",
    GIT_BRANCH: "branch name like 'main' or 'release/2026-12'",
    REPO_PATH: "folder in the repository like 'build/frontier', or '.' for its root",
}


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled once; values are matched whole against it (``fullmatch``)."""
    return re.compile(pattern)


# gpus.sharing.mps, the MPS shares one GPU is split into. On Kubernetes each share is one
# device-plugin replica, one MPS client, and an MPS server serves at most 48 clients a GPU
# (NVIDIA's MPS documentation, Volta and later), the bound the key had. Slurm counts shares,
# not clients (gres/mps, commonly 100 a GPU; gres.shtml "MPS Management" shows 1300).
MPS_CLIENTS_MAX = 48
MPS_SHARES_MAX = 10_000
# Slurm shards a GPU (gpus.sharing.shard)
SHARDS_MAX = 1024
# the most pods per node a pool's `max_pods` may name anywhere, so that a typo is refused;
# each provider's own bounds are kubernetes_facts.MAX_PODS_BOUNDS
MAX_PODS_CEILING = 1024
