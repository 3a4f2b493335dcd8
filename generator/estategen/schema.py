"""The shape of a blueprint: one cerberus schema, its defaults, and readable errors.

The same schema is exported as JSON Schema (``estategen schema``) so editors check what we
check. Static defaults live here and nowhere else; defaults derived from other keys (a team's
namespace, the Slurm cluster name) are filled by the model, which says so where it does.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Hashable, Iterator, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from estategen import hostlist
from estategen.catalog import SHAPE_KEYS
from estategen.declarations import PARTITION_LIMITS
from estategen.declarations import documentation as declared_documentation
from estategen.errors import Finding, did_you_mean, issue, key_path, quote
from estategen.model import (
    DEFAULT_SLURM_SOURCE,
    POWER_SAVING_DEFAULTS,
    SLURM_PACKAGE_SOURCES,
    SLURM_PATH_DEFAULTS,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    STATE_SAVE_LOCATION,
)

NAME = r"[a-z][a-z0-9-]{0,39}"
HOSTNAME = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
FQDN = rf"{HOSTNAME}(\.{HOSTNAME})*"
USER = r"[a-z_][a-z0-9_-]{0,31}"
DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
LABEL_KEY = rf"({DNS_LABEL}(\.{DNS_LABEL})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?"
LABEL_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
MIG_PROFILE = r"[1-7]g\.[0-9]{1,3}gb"
QUOTA_KEY = rf"{NAME}(/{MIG_PROFILE})?"
# slurm.conf(5) times; like Slurm, a field may have any number of digits (``0:90``, ``2:75:00``).
SLURM_TIME = r"(UNLIMITED|INFINITE|([0-9]{1,12}-)?[0-9]{1,12}(:[0-9]{1,12}){0,2})"
SLURM_OPTION_KEY = r"[A-Z][A-Za-z0-9]{1,63}"
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
# A TRES as AccountingStorageTRES names it: cpu, mem, gres/gpu, gres/gpu:a100, license/x...
TRES = (
    r"(billing|cpu|energy|mem|node|pages|vmem|fs/disk|fs/lustre|ic/ofed"
    r"|(gres|license|bb)/[A-Za-z0-9_.-]{1,63}(:[A-Za-z0-9_.-]{1,63})?)"
)
# One SchedulerParameters option: a word, or word=value.
SCHEDULER_PARAMETER = r"[a-z][a-z0-9_]{0,63}(=[A-Za-z0-9_.:-]{1,64})?"
# A partition's OverSubscribe, as slurm.conf(5) spells it in lower case.
OVERSUBSCRIBE = r"(no|exclusive|(yes|force)(:[1-9][0-9]{0,3})?)"
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
KUBERNETES_VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
PROVIDERS = ("on-prem", "gke", "eks", "aks")
# queue engines and training frameworks a Kubernetes cluster may run
QUEUE_ENGINES = ("kueue", "volcano")
FRAMEWORKS = ("job", "jobset", "trainjob", "mpijob", "rayjob")
DEFAULT_FRAMEWORKS = ("job",)

# What a pattern means, for error messages and JSON Schema descriptions.
_PATTERN_HINTS = {
    NAME: "name: lowercase letter first, then lowercase letters, digits or '-', at most 40",
    HOSTNAME: "host name: lowercase letters, digits and '-', at most 63",
    FQDN: "host name (lowercase letters, digits, '-' and '.')",
    USER: "user name: lowercase letter or '_' first, then [a-z0-9_-], at most 32",
    DNS_LABEL: "DNS label: lowercase letters, digits and '-', at most 63",
    LABEL_KEY: "Kubernetes label key like 'tier' or 'example.com/tier'",
    LABEL_VALUE: "Kubernetes label value: letters, digits, '-', '_', '.', at most 63",
    QUOTA_KEY: "GPU model name, or model/MIG profile like 'a100-sxm-80gb/3g.40gb'",
    MIG_PROFILE: "MIG profile like '3g.40gb'",
    SLURM_TIME: "Slurm time: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED or INFINITE",
    SLURM_OPTION_KEY: "slurm.conf parameter name like 'MaxJobCount'",
    CHECK_RULE: "check's rule id like 'check/pool-without-storage'",
    SLURM_OPTION_VALUE: "slurm.conf value: one word of [A-Za-z0-9_.,:/=+@%-], no spaces",
    LOCAL_DATETIME: "local date and time like '2027-01-10T08:00' or '2027-01-10T08:00:00'",
    PORT_RANGE: "port range like '12000-12999'",
    DAEMON_PATH: "absolute path like /var/spool/slurmctld (no '.', '..', '//' or trailing '/')",
    GRES_TYPE: "GRES type name like 'a100', 'GV100GL' or 'rtx_3090' (letters, digits, '_.-')",
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
}


def _s(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "regex": pattern, **extra}


def _name(**extra: Any) -> dict[str, Any]:
    return _s(NAME, **extra)


def _int(low: int | None = None, high: int | None = None, **extra: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "integer", **extra}
    if low is not None:
        rule["min"] = low
    if high is not None:
        rule["max"] = high
    return rule


def _list(item: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "list", "schema": item, **extra}


def _dict(fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "dict", "schema": fields, **extra}


def _secret(**extra: Any) -> dict[str, Any]:
    return _dict(
        {"secret": _s(r"[a-z][a-z0-9_]{0,62}", required=True)},
        meta={"secret": True, "description": "a secret reference {secret: NAME}"},
        **extra,
    )


_HOSTS = {"type": ["string", "list"], "check_with": "hostlists"}
_SHARING = _dict(
    {
        "time_slicing": _int(2, 64, meta={"description": "replicas per GPU (Kubernetes)"}),
        "mps": _int(2, 48, meta={"description": "MPS clients per GPU (Kubernetes)"}),
        "shard": _int(1, 1024, meta={"description": "Slurm shards per GPU"}),
    }
)
_GPUS = _dict(
    {
        "model": _name(required=True),
        "count": _int(1, 16, required=True),
        "mig": _list(_s(MIG_PROFILE), maxlength=7),
        "sharing": _SHARING,
        # a site's own GRES type name, and whether nodes get the model as a feature
        "gres_type": _s(GRES_TYPE),
        # false: the GRES names no type (Gres=gpu:N), as on sites that count GPUs only
        "typed": {"type": "boolean", "default": True},
        "feature": {"type": "boolean"},  # unset: true on Slurm pools
        "autodetect": {"type": "string", "allowed": ["off", "nvml"]},
    }
)
_TAINT = _dict(
    {
        "key": _s(LABEL_KEY, required=True),
        "value": _s(LABEL_VALUE, default=""),
        "effect": {
            "type": "string",
            "allowed": ["NoSchedule", "PreferNoSchedule", "NoExecute"],
            "required": True,
        },
    }
)
# --- node health checks ---
HEALTH_CHECKS = ("gpus", "mig", "mounts", "memory")
# slurm.conf(5) HealthCheckNodeState values of Slurm 22.05 and later
HEALTH_CHECK_NODE_STATES = ("any", "idle", "alloc", "mixed", "cycle")
_POOL_HEALTH_CHECK = _dict(
    {
        "checks": _list(
            {"type": "string", "allowed": list(HEALTH_CHECKS)}, required=True, maxlength=4
        )
    }
)
_SLURM_HEALTH_CHECK = _dict(
    {
        "interval": _int(5, 86_400, default=300),
        "node_state": _list(
            {"type": "string", "allowed": list(HEALTH_CHECK_NODE_STATES)},
            default=["any"],
            minlength=1,
            maxlength=5,
        ),
    }
)
# --- elastic cloud nodes ---
_POOL_CLOUD = _dict(
    {
        "image": _s(CLOUD_IMAGE, required=True),
        "zone": _s(GCE_ZONE),
        "project": _s(GCE_PROJECT),
        "region": _s(REGION),
        "subnet": _s(CLOUD_SUBNET),
    }
)
_SLURM_POWER_SAVING = _dict(
    {
        **{
            key: _int(low, high, default=POWER_SAVING_DEFAULTS[key])
            for key, (low, high) in (
                ("suspend_time", (10, 2_592_000)),
                ("resume_timeout", (30, 65_533)),
                ("suspend_timeout", (10, 65_533)),
            )
        },
        # the site's own programs for pools with state: cloud
        **{
            key: _s(DAEMON_PATH, check_with="daemon_path")
            for key in ("resume_program", "suspend_program", "resume_fail_program")
        },
        "exclude_nodes": _list(
            {"type": "string", "check_with": "hostlists"}, minlength=1, maxlength=64
        ),
    }
)
_NODE_POOL = _dict(
    {
        "name": _name(required=True),
        "scheduler": {"type": "string", "allowed": ["slurm", "kubernetes"], "required": True},
        "cluster": _name(),
        "provider": {"type": "string", "allowed": list(PROVIDERS), "default": "on-prem"},
        "hosts": _HOSTS,
        "instance_type": _s(INSTANCE_TYPE),
        "nodes": _dict({"min": _int(0, 10_000, default=0), "max": _int(1, 10_000, required=True)}),
        "cpu": _dict(
            {
                "sockets": _int(1, 16, required=True),
                "cores_per_socket": _int(1, 512, required=True),
                "threads_per_core": _int(1, 8, default=1),
                # the site's CPUs=, the cores when each core (not thread) is a Slurm CPU
                "cpus": _int(1, 65_536),
            }
        ),
        "memory_gb": _int(1, 65_536),
        "real_memory_mib": _int(1, 67_108_864),
        "gpus": _GPUS,
        "network": _dict(
            {
                "switch": {"type": "string", "check_with": "hostlists"},
                "block": {"type": "string", "check_with": "hostlists"},
            }
        ),
        "features": _list(_s(FEATURE), default=[]),
        "labels": {
            "type": "dict",
            "keysrules": _s(LABEL_KEY),
            "valuesrules": _s(LABEL_VALUE),
            "default": {},
        },
        "taints": _list(_TAINT, default=[]),
        "weight": _int(1, 4_294_967_293),
        "health_check": _POOL_HEALTH_CHECK,
        "cloud": _POOL_CLOUD,
        # State=CLOUD nodes the site's own programs create (slurm.power_saving)
        "state": {"type": "string", "allowed": ["cloud"]},
        # the site's NodeAddr, one address per host in the order `hosts` names them
        "addresses": {"type": ["string", "list"], "check_with": "addresses"},
    }
)
_QOS = _dict(
    {
        "name": _name(required=True),
        "priority": _int(0, 1_000_000, default=0),
        "max_gpus_per_user": _int(0, 1_000_000),
        "max_time": _s(SLURM_TIME),
        "preempt": _list(_name(), default=[]),
        "preempt_mode": {"type": "string", "allowed": ["cancel", "requeue"]},
        "usage_factor": {
            "type": "number",
            "min": 0,
            "max": 1000,
            "check_with": "finite",
            "default": 1,
        },
    }
)
# slurm.conf(5) partition State values
PARTITION_STATES = ("up", "down", "drain", "inactive")
_PARTITION = _dict(
    {
        "name": _name(required=True),
        "pools": _list(_name(), required=True, minlength=1),
        "default": {"type": "boolean", "default": False},
        "max_time": _s(SLURM_TIME, default="UNLIMITED"),
        "default_time": _s(SLURM_TIME),
        "teams": _list(_name(), default=[]),
        "qos": _name(),
        "priority_tier": _int(0, 65_533, default=1),
        "preempt_mode": {"type": "string", "allowed": ["off", "cancel", "requeue", "suspend"]},
        "hidden": {"type": "boolean", "default": False},
        # --- site overrides ---
        "state": {"type": "string", "allowed": list(PARTITION_STATES)},
        "oversubscribe": _s(OVERSUBSCRIBE),
        "exclusive_user": {"type": "boolean"},
        "priority_job_factor": _int(0, 65_533),
        "allow_qos": _list(_name(), minlength=1),
        "allow_groups": _list(_s(GROUP), minlength=1),
        "deny_accounts": _list(_name(), minlength=1),
        **{limit.key: _int(limit.low, limit.high) for limit in PARTITION_LIMITS},
        "def_mem_per_cpu": _int(1, 67_108_864),
        # MiB, or unlimited: a job gets its nodes' whole memory (Slurm's default)
        "def_mem_per_node": {"type": ["integer", "string"], "check_with": "memory_or_unlimited"},
        # CPUs, or none: no DefCpuPerGPU (Slurm's default)
        "def_cpu_per_gpu": {"type": ["integer", "string"], "check_with": "count_or_none"},
        "def_mem_per_gpu": _int(1, 67_108_864),
        "nodeset": _s(NODESET),
        "billing_weights": {
            "type": "dict",
            "keysrules": _s(BILLING_TRES),
            "valuesrules": {"type": ["number", "string"], "check_with": "billing_weight"},
            # empty: no TRESBillingWeights (Slurm bills a job its CPUs)
        },
    }
)
# --- reservations, MPI and the REST API ---
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
_RESERVATION = _dict(
    {
        "name": _name(required=True),
        "start": _s(LOCAL_DATETIME, required=True, check_with="local_datetime"),
        "duration": _s(SLURM_TIME),
        "end": _s(LOCAL_DATETIME, check_with="local_datetime"),
        "pools": _list(_name(), minlength=1),
        "partition": _name(),
        "hosts": _HOSTS,
        "flags": _list({"type": "string", "allowed": list(RESERVATION_FLAGS)}, default=[]),
        "teams": _list(_name(), default=[]),
        "users": _list(_s(USER), default=[]),
    }
)
_MPI = _dict(
    {
        "default": {"type": "string", "allowed": list(MPI_TYPES), "default": "none"},
        "ports": _s(PORT_RANGE),
    },
    default={},
)
_REST_API = _dict(
    {
        "host": _s(HOSTNAME, required=True),
        "port": _int(1, 65_535, default=6820),
        "user": _s(USER, default="slurmrestd"),
        "jwt_key": _secret(required=True),
    }
)
# --- site overrides of what estategen renders ---
SELECT_TYPES = ("cons_tres", "cons_res", "linear")
# SelectTypeParameters, as slurm.conf(5) spells them; what each select plugin accepts is
# checked in checks.py. One resource (CR_CPU ... CR_Memory) and any of the modifiers.
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
_SLURM_PATHS = _dict(
    {
        key: _s(DAEMON_PATH, default=value, check_with="daemon_path")
        for key, value in SLURM_PATH_DEFAULTS.items()
    },
    default={},
)
_SLURM_PORTS = _dict(
    {
        "slurmctld": {
            "type": ["integer", "string"],
            "check_with": "port_or_range",
            "default": SLURMCTLD_PORT,
        },
        "slurmd": _int(1, 65_535, default=SLURMD_PORT),
    },
    default={},
)
_SLURM_SELECT = _dict(
    {
        "type": {"type": "string", "allowed": list(SELECT_TYPES), "default": "cons_tres"},
        # no static default: [CR_Core_Memory], or none with linear (the model fills it)
        "parameters": _list(
            {"type": "string", "allowed": [*SELECT_RESOURCES, *SELECT_MODIFIERS]},
            maxlength=8,
        ),
    },
    default={},
)
_SLURM_PACKAGES = _dict(
    {
        "source": {
            "type": "string",
            "allowed": list(SLURM_PACKAGE_SOURCES),
            "default": DEFAULT_SLURM_SOURCE,
        },
        # source site: the repository and what its build supports (checks.slurm_package_source
        # refuses them with Debian's packages, whose builds are known)
        "apt_repository": _s(APT_SOURCE),
        "apt_key_url": _s(HTTPS_URL),
        "nvml": {"type": "boolean"},
        "jwt": {"type": "boolean"},
    },
    default={},
)
_SLURM = _dict(
    {
        "cluster_name": _name(),
        "packages": _SLURM_PACKAGES,
        "controllers": _list(_s(HOSTNAME), minlength=1, maxlength=4),
        # SlurmctldHost=NAME(ADDRESS), for controllers whose name does not resolve
        "controller_addresses": {
            "type": "dict",
            "keysrules": _s(HOSTNAME),
            "valuesrules": {"type": "string", "check_with": "addresses"},
            "default": {},
        },
        "accounting": _dict(
            {
                "host": _s(HOSTNAME, required=True),
                "port": _int(1, 65_535, default=6819),
                "database": _dict(
                    {
                        "host": _s(FQDN, required=True),
                        "port": _int(1, 65_535, default=3306),
                        "name": _s(r"[a-z_][a-z0-9_]{0,63}", default="slurm_acct_db"),
                        "user": _s(USER, default="slurm"),
                        "password": _secret(required=True),
                    },
                    required=True,
                ),
                # AccountingStorageTRES and AccountingStorageEnforce of the site
                "tres": _list(_s(TRES), minlength=1, maxlength=64),
                "enforce": _list(
                    {"type": "string", "allowed": list(ACCOUNTING_ENFORCE)},
                    default=["associations", "limits", "qos", "safe"],
                    maxlength=7,
                ),
            }
        ),
        "scheduling": _dict(
            {
                "priority_weights": _dict(
                    {
                        k: _int(0, 4_294_967_295, default=0)
                        for k in ("fairshare", "age", "qos", "job_size", "partition", "assoc")
                    },
                    default={},
                ),
                # the site's PriorityWeightTRES, TRES to weight
                "priority_weight_tres": {
                    "type": "dict",
                    "keysrules": _s(BILLING_TRES),
                    "valuesrules": _int(-2_147_483_648, 4_294_967_295),
                    "minlength": 1,
                },
                # the site's PriorityType; basic orders jobs by submission and takes no
                # weights, half-life or TRES weights (checks.priority_basic_keys)
                "priority_type": {
                    "type": "string",
                    "allowed": list(PRIORITY_TYPES),
                    "default": "multifactor",
                },
                # no static default: 7-0 with multifactor, none with basic (the model fills it)
                "fairshare_half_life": _s(SLURM_TIME),
                "preemption": _dict(
                    {
                        "type": {
                            "type": "string",
                            "allowed": ["none", "qos", "partition_prio"],
                            "default": "none",
                        },
                        "mode": {
                            "type": "string",
                            "allowed": ["off", "cancel", "requeue", "suspend"],
                            "default": "off",
                        },
                    },
                    default={},
                ),
            },
            default={},
        ),
        "qos": _list(_QOS, default=[]),
        "partitions": _list(_PARTITION, default=[]),
        "reservations": _list(_RESERVATION, default=[]),
        "mpi": _MPI,
        "rest_api": _REST_API,
        # Slurm hosted in Kubernetes: the auth/slurm key (slurm.key) slurmctld and
        # the Slinky slurmd pods share; needed when a Slurm pool names a `cluster`
        "auth_key": _secret(),
        "options": {
            "type": "dict",
            "keysrules": _s(SLURM_OPTION_KEY),
            "valuesrules": {"type": ["string", "integer"], "check_with": "slurm_option_value"},
            "default": {},
        },
        "health_check": _SLURM_HEALTH_CHECK,
        "power_saving": _SLURM_POWER_SAVING,
        # --- site overrides ---
        "paths": _SLURM_PATHS,
        "ports": _SLURM_PORTS,
        "slurmd_user": _s(USER),
        "return_to_service": _int(0, 2, default=2),
        "select": _SLURM_SELECT,
        "task_plugins": _list(
            {"type": "string", "allowed": list(TASK_PLUGINS)},
            default=["cgroup", "affinity"],
            minlength=1,
            maxlength=3,
        ),
        "job_acct_gather": {
            "type": "string",
            "allowed": list(JOB_ACCT_GATHER_TYPES),
            "default": "cgroup",
        },
        "prolog_flags": _list(
            {"type": "string", "allowed": list(PROLOG_FLAGS)}, default=["Contain"], maxlength=6
        ),
        # an empty list: no SchedulerParameters line, Slurm's own defaults
        "scheduler_parameters": _list(_s(SCHEDULER_PARAMETER), maxlength=64),
        "scheduler": {"type": "string", "allowed": list(SCHEDULER_TYPES), "default": "backfill"},
        "enforce_part_limits": {
            "type": "string",
            "allowed": list(ENFORCE_PART_LIMITS),
            "default": "all",
        },
        "proctrack": {"type": "string", "allowed": list(PROCTRACK_TYPES), "default": "cgroup"},
        "job_completion": _dict(
            {
                "type": {"type": "string", "allowed": list(JOB_COMP_TYPES), "default": "none"},
                # no static default: jobcomp.log beside slurmctld's log, with filetxt
                "location": _s(DAEMON_PATH, check_with="daemon_path"),
            },
            default={},
        ),
    }
)
_QUEUE_TEAM = _dict(
    {
        "team": _name(required=True),
        "quota": {
            "type": "dict",
            "keysrules": _s(QUOTA_KEY),
            "valuesrules": _int(0, 1_000_000),
            "required": True,
        },
        "borrowing_limit": _int(0, 1_000_000),
        "lending_limit": _int(0, 1_000_000),
    }
)
_K8S_CLUSTER = _dict(
    {
        "name": _name(required=True),
        "provider": {"type": "string", "allowed": list(PROVIDERS), "default": "on-prem"},
        "region": _s(REGION),
        "project": _s(r"[a-z][a-z0-9-]{4,28}[a-z0-9]"),
        # --- AKS: the resource group that holds the AKS cluster ---
        "resource_group": _s(RESOURCE_GROUP),
        "device_plugin": _dict(
            {
                "install": {
                    "type": "string",
                    "allowed": ["device-plugin", "gpu-operator"],
                    "default": "device-plugin",
                },
                "mig_strategy": {
                    "type": "string",
                    "allowed": ["none", "single", "mixed"],
                    "default": "none",
                },
            },
            default={},
        ),
        "queues": _dict(
            {
                # --- queue engine: Kueue or Volcano from the same teams ---
                "engine": {"type": "string", "allowed": list(QUEUE_ENGINES), "default": "kueue"},
                # required with Kueue, refused with Volcano (checks.queue_engine_keys)
                "cohort": _name(),
                # Kueue's waitForPodsReady.timeout; refused with Volcano (checks.queue_engine_keys)
                "pods_ready_timeout": _s(KUEUE_DURATION),
                "teams": _list(_QUEUE_TEAM, required=True, minlength=1),
            }
        ),
        # --- training frameworks: queued kinds and their operators ---
        "frameworks": _list(
            {"type": "string", "allowed": list(FRAMEWORKS)}, default=list(DEFAULT_FRAMEWORKS)
        ),
        "priority_classes": _list(
            _dict(
                {
                    "name": _name(required=True),
                    "value": _int(-1_000_000_000, 1_000_000_000, required=True),
                    "description": _s(FREE_TEXT),
                }
            ),
            default=[],
        ),
        "prometheus_operator": {"type": "boolean", "default": False},
    }
)
# instance type -> GPUs of the model it carries, as the cloud sells it
_SHAPES = {
    "type": "dict",
    "keysrules": _s(INSTANCE_TYPE),
    "valuesrules": _int(1, 16),
    "required": True,
}
_GPU_MODEL = _dict(
    {
        "name": _name(required=True),
        "vendor": {"type": "string", "allowed": ["nvidia"], "default": "nvidia"},
        "memory_gb": _int(1, 4096, required=True),
        "fabric": {"type": "string", "allowed": ["none", "nvlink", "nvswitch"], "default": "none"},
        "mig": {
            "type": "dict",
            "keysrules": _s(MIG_PROFILE),
            "valuesrules": _dict(
                {
                    "compute": _int(1, 7, required=True),
                    "memory": _int(1, 8, required=True),
                    "max": _int(1, 7, required=True),
                }
            ),
            "default": {},
        },
        "clouds": _dict(
            {
                provider: _dict(
                    {"accelerator": _s(INSTANCE_TYPE, required=True), key: _SHAPES}
                    if provider == "gke"
                    else {key: _SHAPES}
                )
                for provider, key in SHAPE_KEYS.items()
            },
            default={},
        ),
    }
)

BLUEPRINT: dict[str, Any] = {
    "estate": _name(required=True, meta={"description": "the estate's name"}),
    "suppress": _list(_s(CHECK_RULE), default=[]),
    "description": _s(FREE_TEXT, default=""),
    "versions": _dict(
        {
            # no static default: the release slurm.packages.source installs (the model fills it)
            "slurm": {"type": "string", "allowed": list(SLURM_VERSIONS)},
            "kubernetes": {
                "type": "string",
                "allowed": list(KUBERNETES_VERSIONS),
                "default": "1.31",
            },
        },
        default={},
    ),
    "gpu_models": _list(_GPU_MODEL, default=[]),
    "identity": _dict(
        {
            "directory": _dict(
                {
                    "type": {
                        "type": "string",
                        "allowed": ["local", "ldap", "freeipa"],
                        "default": "local",
                    },
                    "uri": _s(LDAP_URI),
                    "base_dn": _s(DN),
                    "bind_dn": _s(DN),
                    "bind_password": _secret(),
                },
                default={},
            ),
            "users": _list(
                _dict(
                    {
                        "name": _s(USER, required=True),
                        "uid": _int(1000, 2_147_483_646, required=True),
                    }
                ),
                default=[],
            ),
            "teams": _list(
                _dict(
                    {
                        "name": _name(required=True),
                        "gid": _int(1000, 2_147_483_646, required=True),
                        "members": _list(_s(USER), default=[]),
                        "fairshare": _int(1, 1_000_000, default=1),
                        "namespace": _s(DNS_LABEL),
                    }
                ),
                default=[],
            ),
        },
        default={},
    ),
    "node_pools": _list(_NODE_POOL, required=True, minlength=1),
    "slurm": _SLURM,
    "kubernetes": _dict({"clusters": _list(_K8S_CLUSTER, default=[])}, default={}),
    "storage": _list(
        _dict(
            {
                "name": _name(required=True),
                "type": {"type": "string", "allowed": list(STORAGE_TYPES), "required": True},
                "source": _s(STORAGE_SOURCE, required=True),
                "mount": _s(MOUNT, required=True, check_with="mount_point"),
                "options": _list(_s(r"[a-z0-9_][a-z0-9_-]*(=[A-Za-z0-9_.:/-]+)?"), default=[]),
                "pools": _list(_name()),
                "kubernetes": _dict(
                    {
                        "storage_class": _s(DNS_LABEL, required=True),
                        "clusters": _list(_name()),
                        "instance": _s(GKE_LUSTRE_INSTANCE),
                    }
                ),
                "s3": _dict(
                    {
                        "region": _s(REGION, required=True),
                        "access_key_id": _secret(required=True),
                        "secret_access_key": _secret(required=True),
                    }
                ),
                "beegfs": _dict({"conn_auth": _secret(required=True)}),
            }
        ),
        default=[],
    ),
    "observability": _dict(
        {
            "dcgm_exporter": _dict({"port": _int(1024, 65_535, default=9400)}, default={}),
            "node_exporter": _dict({"port": _int(1024, 65_535, default=9100)}, default={}),
            "slurm_exporter": _dict({"port": _int(1024, 65_535, default=9341)}, default={}),
            "labels": {
                "type": "dict",
                "keysrules": _s(PROM_LABEL),
                "valuesrules": _s(PROM_VALUE),
                "default": {},
            },
            "alerts": _dict(
                {
                    "exporter_down_for": _s(PROM_DURATION, default="5m"),
                    "gpu_thermal_throttling_percent": _int(1, 100, default=10),
                    "gpu_thermal_throttling_for": _s(PROM_DURATION, default="10m"),
                    "slurm_node_down_for": _s(PROM_DURATION, default="15m"),
                    "slurm_node_drained_for": _s(PROM_DURATION, default="1d"),
                    "slurm_controller_unreachable_for": _s(PROM_DURATION, default="5m"),
                    "slurmdbd_unreachable_for": _s(PROM_DURATION, default="10m"),
                    "kueue_pending_for": _s(PROM_DURATION, default="30m"),
                    "stranded_quota_used_percent": _int(1, 100, default=50),
                    "stranded_quota_for": _s(PROM_DURATION, default="2h"),
                },
                default={},
            ),
        },
        default={},
    ),
}


def _hostlists_problem(value: object) -> str | None:
    """Why a hostlist value (an expression or a list of them) is refused, or None."""
    expressions = value if isinstance(value, list) else [value]
    for expression in expressions:
        if not isinstance(expression, str):
            return f"hostlist entries must be strings, not {expression!r}"
        try:
            names = hostlist.count(expression)
        except hostlist.HostlistError as err:
            return str(err)
        if names > hostlist.MAX_EXPANSION:
            # the model expands each expression with this limit; refuse it here, with a
            # position, instead of failing there
            return (
                f"hostlist {expression!r} expands to {names} names, above the limit of "
                f"{hostlist.MAX_EXPANSION} for one expression (check the bracket ranges)"
            )
    return None


def _addresses_problem(value: object) -> str | None:
    """Why a pool's `addresses` (an expression or a list of them, of IPv4, IPv6 or DNS
    names, like 10.1.0.[1-4]) is refused, or None; how many it names is checks.py's."""
    expressions = value if isinstance(value, list) else [value]
    for expression in expressions:
        if not isinstance(expression, str):
            return f"address entries must be strings, not {expression!r}"
        try:
            hostlist.count(expression, addresses=True)
        except hostlist.HostlistError as err:
            return str(err).replace("hostlist", "address list")
    return None


def _local_datetime_problem(value: object) -> str | None:
    """Why a date and time the pattern lets through is no date (``2027-02-30T08:00``), or None."""
    try:
        datetime.fromisoformat(str(value))
    except ValueError as err:
        return f"{quote(str(value))} is not a date and time: {err}"
    return None


def _finite_problem(value: object) -> str | None:
    # NaN passes min and max (every comparison with it is false)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a number; give a finite value"
    return None


def _slurm_option_value_problem(value: object) -> str | None:
    text = str(value)
    if not _compiled(SLURM_OPTION_VALUE).fullmatch(text):
        return f"{text!r} is not a valid {_PATTERN_HINTS[SLURM_OPTION_VALUE]}"
    return None


# Mounting a file system over one of these would hide the operating system of every host.
# Mount points that would hide the system's own files: these folders themselves...
SYSTEM_DIRECTORIES = frozenset({"/", "/tmp", "/var"})
# ...and these with everything under them (programs, libraries and kernel modules,
# configuration such as /etc/slurm, /etc/munge and /etc/ssh, daemons' state, spools and logs
# such as /var/lib/mysql and /var/spool/slurmd)...
SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/cache",
    "/var/lib",
    "/var/lock",
    "/var/log",
    "/var/run",
    "/var/spool",
)


# Folders of programs, configuration and the kernel: the system trees but the runtime, state,
# spool and log folders, where daemon files do belong. No file of slurm.paths lies there.
PROGRAM_TREES = tuple(t for t in SYSTEM_TREES if t != "/run" and not t.startswith("/var/"))


# ...except Slurm's StateSaveLocation (Debian's default, which slurm.conf keeps): a backup
# slurmctld takes over from the state the primary saved there, so that folder is where shared
# storage belongs on the controllers (slurm.conf(5), StateSaveLocation).
SHARED_STATE_MOUNTS = frozenset({STATE_SAVE_LOCATION})


def system_tree(mount: str) -> str | None:
    """The system folder ``mount`` is, or lies under; None when it is neither."""
    if mount in SHARED_STATE_MOUNTS:
        return None
    if mount in SYSTEM_DIRECTORIES:
        return mount
    return next(
        (tree for tree in SYSTEM_TREES if mount == tree or mount.startswith(tree + "/")), None
    )


def _daemon_path_problem(value: object) -> str | None:
    """A daemon's folder or file may not be a system folder the roles would take over."""
    if not isinstance(value, str) or not _compiled(DAEMON_PATH).fullmatch(value):
        return None  # the pattern reports it
    if value in SYSTEM_DIRECTORIES or value in SYSTEM_TREES:
        return (
            f"{quote(value)} is a system folder; a daemon's folder or file must lie below one, "
            "like /var/spool/slurmctld or /var/log/slurm/slurmctld.log"
        )
    return None


def _port_or_range_problem(value: object) -> str | None:
    """SlurmctldPort: one port, or a range 'LOW-HIGH' of at most 64 ports."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return f"{value!r} is not a port; give a port like 6817 or a range like '6817-6820'"
    text = str(value)
    match = re.fullmatch(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", text)
    if not match:
        return f"{text!r} is not a port; give a port like 6817 or a range like '6817-6820'"
    low = int(match[1])
    high = int(match[2] or low)
    if not 1 <= low <= high <= 65_535 or high - low >= 64:
        return (
            f"{text!r} is no port range slurmctld takes: give ports 1-65535, low first, "
            "at most 64 of them (like '6817-6820')"
        )
    return None


def _count_or_none_problem(value: object) -> str | None:
    """DefCpuPerGPU: CPUs (1 to 4294967294) or none."""
    if value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4_294_967_294:
        return None
    return f"{value!r} is not a CPU count; give 1 to 4294967294, or none"


def _memory_or_unlimited_problem(value: object) -> str | None:
    """DefMemPerNode: MiB (1 to 64 TiB) or unlimited."""
    if value == "unlimited":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 67_108_864:
        return None
    return f"{value!r} is not a memory size; give MiB from 1 to 67108864, or unlimited"


def _billing_weight_problem(value: object) -> str | None:
    """A TRESBillingWeights weight: a finite number, or a number with a K-P unit."""
    if isinstance(value, bool):
        return f"{value!r} is not a {_PATTERN_HINTS[BILLING_WEIGHT]}"
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, str) and _compiled(BILLING_WEIGHT).fullmatch(value):
        return None
    return f"{value!r} is not a {_PATTERN_HINTS[BILLING_WEIGHT]}"


def _mount_point_problem(value: object) -> str | None:
    """One spelling per mount point, never over the system's own folders.

    MOUNT lets `/x/../etc` and `/scratch/` through: the first mounts over /etc on every host,
    the second slips past the duplicate mount point check.
    """
    if not isinstance(value, str) or not _compiled(MOUNT).fullmatch(value):
        return None  # the pattern reports it
    if value != "/" and any(part in ("", ".", "..") for part in value.split("/")[1:]):
        return (
            f"mount point {value!r} must be a plain absolute path "
            "(no '.', '..', '//' or trailing '/')"
        )
    tree = system_tree(value)
    if tree == value:
        return (
            f"mounting over {value} would hide the system's own files on every host; "
            "choose another mount point"
        )
    if tree:
        return (
            f"mounting over {quote(value)} would hide the system's own files under {tree} "
            "on every host; choose another mount point"
        )
    return None


_VALUE_CHECKS = {
    "mount_point": _mount_point_problem,
    "hostlists": _hostlists_problem,
    "addresses": _addresses_problem,
    "finite": _finite_problem,
    "slurm_option_value": _slurm_option_value_problem,
    "local_datetime": _local_datetime_problem,
    "daemon_path": _daemon_path_problem,
    "port_or_range": _port_or_range_problem,
    "billing_weight": _billing_weight_problem,
    "memory_or_unlimited": _memory_or_unlimited_problem,
    "count_or_none": _count_or_none_problem,
}


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class _NoTree:
    """An error tree that keeps nothing."""

    def add(self, error: object) -> None:
        """Drop the error; ``Validator._errors`` holds it already."""


_NO_TREE = _NoTree()


@cache
def _validator() -> Any:
    """The cerberus validator, built on first use: valid blueprints never import cerberus."""
    import cerberus
    from cerberus import errors as cerberus_errors

    class _Validator(cerberus.Validator):  # type: ignore[misc]
        """Cerberus with strict numbers (a boolean is not an integer) and our value checks."""

        types_mapping: ClassVar[dict[str, Any]] = {
            **cerberus.Validator.types_mapping,
            "integer": cerberus.TypeDefinition("integer", (int,), (bool,)),
            "number": cerberus.TypeDefinition("number", (int, float), (bool,)),
        }

        def _validate_regex(self, pattern: str, field: Hashable, value: object) -> None:
            """{'type': 'string'}"""
            # cerberus anchors with '$', which also matches before a trailing newline: "gpu\n"
            # would pass as a name and inject a line into slurm.conf. The whole value must match.
            if isinstance(value, str) and not _compiled(pattern).fullmatch(value):
                self._error(field, cerberus_errors.REGEX_MISMATCH)

        def _check_with_hostlists(self, field: Hashable, value: object) -> None:
            problem = _hostlists_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_addresses(self, field: Hashable, value: object) -> None:
            problem = _addresses_problem(value)
            if problem:
                self._error(field, problem)

        # Cerberus re-sorts a validator's whole error list each time a child validator hands
        # up its errors, and files every error in a tree keyed by schema rule whose per-rule
        # list it also re-sorts on each addition: N list items breaking one rule cost O(N^2)
        # comparisons (5,000 users with a bad uid took minutes). Errors are kept in the order
        # they are found (findings are sorted by position anyway), and the schema tree, which
        # nothing reads (cerberus consults only the document tree), is not kept.
        schema_error_tree = property(
            lambda self: _NO_TREE, lambda self, value: None, doc="never kept (see above)"
        )

        def _error(self, *args: Any) -> None:
            if len(args) != 1:
                super()._error(*args)
                return
            self._errors.extend(args[0])
            for error in args[0]:
                self.document_error_tree.add(error)
                self.error_handler.emit(error)

        def _check_with_finite(self, field: Hashable, value: object) -> None:
            problem = _finite_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_mount_point(self, field: Hashable, value: object) -> None:
            problem = _mount_point_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_local_datetime(self, field: Hashable, value: object) -> None:
            problem = _local_datetime_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_daemon_path(self, field: Hashable, value: object) -> None:
            problem = _daemon_path_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_count_or_none(self, field: Hashable, value: object) -> None:
            problem = _count_or_none_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_memory_or_unlimited(self, field: Hashable, value: object) -> None:
            problem = _memory_or_unlimited_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_billing_weight(self, field: Hashable, value: object) -> None:
            problem = _billing_weight_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_port_or_range(self, field: Hashable, value: object) -> None:
            problem = _port_or_range_problem(value)
            if problem:
                self._error(field, problem)

        def _check_with_slurm_option_value(self, field: Hashable, value: object) -> None:
            problem = _slurm_option_value_problem(value)
            if problem:
                self._error(field, problem)

    return _Validator(BLUEPRINT)


def normalise(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
    """Validate the document's shape and fill static defaults.

    Returns the normalised document and the findings (no positions yet). A valid document
    takes the compiled path (:func:`_accept`); cerberus decides everything else and writes
    every message.
    """
    accepted = _accept(document)
    if accepted is not None:
        return accepted, []
    return cerberus_normalise(document)


def cerberus_normalise(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[Finding]]:
    """:func:`normalise` by cerberus alone: the reference the compiled path must agree with."""
    validator = _validator()
    if validator.validate(dict(document)):
        return validator.document, []
    findings: list[Finding] = []
    for error in _leaves(validator._errors):
        path = key_path(error.document_path)
        refusal = _password_refusal(tuple(error.document_path))
        if refusal is not None:  # one finding, which never quotes the password
            if not any(f.path == path for f in findings):
                findings.append(issue(path, refusal, rule="schema/secret"))
            continue
        findings.append(issue(path, _message(error), rule=f"schema/{_rule_id(error)}"))
    return {}, findings


def _password_refusal(document_path: tuple[Any, ...]) -> str | None:
    """For a `slurm.options` key that holds a password, whatever its value: the check's
    message (checks.slurm_options_not_owned gives it for a well-formed value), not one that
    quotes the value."""
    if len(document_path) != 3 or document_path[:2] != ("slurm", "options"):
        return None
    from estategen.slurm_keys import password_refusal

    return password_refusal(str(document_path[2]))


def _rule_id(error: Any) -> str:
    """Which rule of the shape an error breaks: cerberus' rule, or for a custom check the
    `check_with` name, for unknown keys ``unknown-key`` and for plaintext secrets ``secret``."""
    from cerberus import errors as cerberus_errors

    if error.code == cerberus_errors.UNKNOWN_FIELD.code:
        return "unknown-key"
    if error.code == cerberus_errors.CUSTOM.code:
        # Cerberus records the schema path of the mapping (or of the `valuesrules`) the value
        # sits in, not of the rule: look the rule up under the value's key there.
        node = _rule_at(tuple(error.schema_path))
        key = error.document_path[-1] if error.document_path else None
        for candidate in (node.get(key) if isinstance(node, dict) else None, node):
            if isinstance(candidate, dict) and isinstance(candidate.get("check_with"), str):
                return str(candidate["check_with"])
        return "custom"
    rules = error.schema_path and _rule_at(error.schema_path[:-1])
    if error.rule == "type" and isinstance(rules, dict) and rules.get("meta", {}).get("secret"):
        return "secret"
    return str(error.rule)


# The compiled acceptor ---------------------------------------------------------------------
#
# Cerberus builds a child validator per mapping and walks every rule through its dispatch
# machinery: about 0.5 s for the 100,000-GPU estate, more than everything else together. The
# acceptor below is compiled once from the same BLUEPRINT rules into closures. It only ever
# says "valid, and here is the document cerberus would have normalised" or "not sure": any
# problem, any null, any type it does not expect, defers to cerberus, which then reports.
# So it may be stricter than cerberus (costing time) but never more lenient (tests hold the
# two equal on generated and mutated documents).


class _Defer(Exception):
    """The acceptor is not certain the value is valid; cerberus decides."""


class _Unsupported(Exception):
    """A rule the acceptor does not know: the acceptor is off and cerberus does everything."""


_Check = Any  # Callable[[object], object]: returns the normalised value or raises _Defer
_KNOWN_RULES = frozenset(
    {
        "type",
        "regex",
        "allowed",
        "min",
        "max",
        "minlength",
        "maxlength",
        "required",
        "default",
        "schema",
        "keysrules",
        "valuesrules",
        "check_with",
        "meta",
    }
)
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "dict": (dict,),
    "list": (list,),
}


def _compile(rule: Mapping[str, Any]) -> _Check:
    unknown = set(rule) - _KNOWN_RULES
    if unknown:
        raise _Unsupported(sorted(unknown))
    kinds = rule.get("type")
    if kinds is None:
        raise _Unsupported("untyped rule")
    allowed_types = tuple(
        t for k in (kinds if isinstance(kinds, list) else [kinds]) for t in _EXACT_TYPES[k]
    )
    tests: list[Any] = []
    if "regex" in rule:
        # compiled when a value first needs it: most blueprints fill few of the keys with
        # a pattern, and compiling them all was a third of building this checker
        tests.append(_matches(rule["regex"]))
    if "allowed" in rule:
        allowed = frozenset(rule["allowed"])
        tests.append(lambda v: type(v) is str and v in allowed)
    if "min" in rule:
        low = rule["min"]
        tests.append(lambda v: type(v) in (int, float) and not v < low)
    if "max" in rule:
        high = rule["max"]
        tests.append(lambda v: type(v) in (int, float) and not v > high)
    if "minlength" in rule:
        shortest = rule["minlength"]
        tests.append(lambda v: not len(v) < shortest)
    if "maxlength" in rule:
        longest = rule["maxlength"]
        tests.append(lambda v: not len(v) > longest)
    if "check_with" in rule:
        value_check = _VALUE_CHECKS.get(rule["check_with"])
        if value_check is None:
            raise _Unsupported(rule["check_with"])
        tests.append(lambda v: value_check(v) is None)
    inner: _Check | None = None
    if "schema" in rule:
        if kinds == "dict":
            inner = _compile_fields(rule["schema"])
        elif kinds == "list":
            inner = _compile_items(_compile(rule["schema"]))
        else:
            raise _Unsupported("schema on a non-container")
    if "keysrules" in rule or "valuesrules" in rule:
        if kinds != "dict" or inner is not None or not {"keysrules", "valuesrules"} <= set(rule):
            raise _Unsupported("keysrules/valuesrules")
        inner = _compile_free_mapping(_compile(rule["keysrules"]), _compile(rule["valuesrules"]))
    if len(tests) == 1 and inner is None:
        (single,) = tests

        def check_one(value: object) -> object:
            if type(value) not in allowed_types or not single(value):
                raise _Defer
            return value

        return check_one

    def check(value: object) -> object:
        if type(value) not in allowed_types:
            raise _Defer
        for test in tests:
            if not test(value):
                raise _Defer
        return value if inner is None else inner(value)

    return check


def _matches(source: str) -> Callable[[object], bool]:
    """Whether a value is not a string or matches ``source`` whole (compiled on first use)."""
    pattern: re.Pattern[str] | None = None

    def test(value: object) -> bool:
        nonlocal pattern
        if type(value) is not str:
            return True
        if pattern is None:
            pattern = _compiled(source)
        return pattern.fullmatch(value) is not None

    return test


def _compile_fields(fields: Mapping[str, Any]) -> _Check:
    """A mapping with a fixed set of keys: unknown keys defer, defaults fill in schema order."""
    checks = {name: _compile(sub) for name, sub in fields.items()}
    required = [name for name, sub in fields.items() if sub.get("required")]
    # (name, default, whether it is a container each use must copy)
    defaults = [
        (name, sub["default"], isinstance(sub["default"], dict | list))
        for name, sub in fields.items()
        if "default" in sub
    ]

    def check(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            field_check = checks.get(key)
            if field_check is None:
                raise _Defer
            out[key] = field_check(item)
        for key, default, container in defaults:
            if key not in out:
                out[key] = checks[key](copy.deepcopy(default) if container else default)
        for key in required:
            if key not in out:
                raise _Defer
        return out

    return check


def _compile_items(item_check: _Check) -> _Check:
    return lambda value: [item_check(item) for item in value]


def _compile_free_mapping(key_check: _Check, value_check: _Check) -> _Check:
    def check(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            key_check(key)
            out[key] = value_check(item)
        return out

    return check


@cache
def _acceptor() -> _Check | None:
    try:
        return _compile({"type": "dict", "schema": BLUEPRINT})
    except _Unsupported:
        return None


def _accept(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The normalised document when it is certainly valid; None to let cerberus decide."""
    acceptor = _acceptor()
    if acceptor is None:
        return None
    try:
        result: dict[str, Any] = acceptor(document if type(document) is dict else dict(document))
    except _Defer:
        return None
    return result


def _leaves(errors: Any) -> list[Any]:
    out = []
    for error in errors:
        if error.is_group_error and error.child_errors:
            out.extend(_leaves(error.child_errors))
        else:
            out.append(error)
    return out


def _message(error: Any) -> str:
    from cerberus import errors as cerberus_errors

    rule = error.rule
    rules = error.schema_path and _rule_at(error.schema_path[:-1])
    meta = rules.get("meta", {}) if isinstance(rules, dict) else {}
    value = error.value
    if error.code == cerberus_errors.UNKNOWN_FIELD.code:
        return _unknown_key(error.document_path)
    if error.code == cerberus_errors.CUSTOM.code:
        return str(error.info[0])
    if rule == "required":
        return "is required"
    if rule == "type":
        if meta.get("secret"):
            return (
                "must be a secret reference like {secret: NAME}; "
                "plaintext secrets are never accepted"
            )
        wanted = error.constraint if isinstance(error.constraint, list) else [error.constraint]
        return f"must be {' or '.join(_TYPE_WORDS[w] for w in wanted)}, not {_describe(value)}"
    if rule == "nullable":
        return "has no value; give one or remove the key"
    if rule == "allowed":
        choices = [str(a) for a in error.constraint]
        hint = did_you_mean(str(value), choices)
        return f"{_shown(value)} is not allowed; choose one of: {', '.join(choices)}{hint}"
    if rule == "regex":
        hint = _PATTERN_HINTS.get(error.constraint, f"value matching {error.constraint}")
        return f"{_shown(value)} is not a valid {hint}"
    if rule == "min":
        return f"{_shown(value)} is below the minimum of {error.constraint}"
    if rule == "max":
        return f"{_shown(value)} is above the maximum of {error.constraint}"
    if rule == "minlength":
        return f"needs at least {error.constraint} item(s)"
    if rule == "maxlength":
        return f"has {len(value)} items; at most {error.constraint} allowed"
    if rule == "empty":
        return "must not be empty"
    return f"invalid value {value!r} ({rule})"


_TYPE_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "dict": "a mapping",
    "list": "a list",
}


def _shown(value: object) -> str:
    """A value as a message quotes it; a hostile megabyte-long one is cut, with its length."""
    text = repr(value)
    if len(text) <= 100:
        return text
    if isinstance(value, str):
        size = f"{len(value)} characters"
    elif isinstance(value, int):
        size = f"{len(text)} digits"
    else:
        size = f"{len(text)} characters written out"
    return f"{text[:60]}... ({size})"


def _describe(value: object) -> str:
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float):
        return f"number {value!r} (quote it if it is a version or name)"
    if isinstance(value, int):
        return f"number {_shown(value)}"
    return f"string {_shown(value)}"


def _rule_at(schema_path: tuple[Any, ...]) -> Any:
    node: Any = BLUEPRINT
    for part in schema_path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return {}
    return node


def _fields_at(document_path: tuple[Any, ...]) -> dict[str, Any]:
    """The field schemas of the mapping at ``document_path``."""
    fields: dict[str, Any] = BLUEPRINT
    free_key = False  # the next part is a key of a keysrules/valuesrules mapping
    for part in document_path:
        if isinstance(part, int) or free_key:
            free_key = False
            continue
        rule = fields.get(part, {})
        while rule.get("type") == "list" and "schema" in rule:
            rule = rule["schema"]
        if rule.get("type") == "dict" and "schema" in rule:
            fields = rule["schema"]
        elif "valuesrules" in rule:
            fields = rule["valuesrules"].get("schema", {})
            free_key = True
        else:
            return {}
    return fields


def _unknown_key(document_path: tuple[Any, ...]) -> str:
    key = document_path[-1]
    fields = _fields_at(document_path[:-1])
    valid = sorted(fields)
    hint = did_you_mean(str(key), valid) or "."
    listing = f" Valid keys here: {', '.join(valid)}." if valid else ""
    return f"unknown key {quote(str(key))}{hint}{listing}"


def json_schema() -> dict[str, Any]:
    """The blueprint schema as JSON Schema draft 2020-12, for editors and pipelines."""
    root = _with_docs(_to_json({"type": "dict", "schema": BLUEPRINT}))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:estategen:blueprint:v1",
        "title": "estategen blueprint v1",
        **root,
    }


def json_schema_text() -> str:
    """What ``estategen schema`` prints: :func:`json_schema` as sorted, indented JSON.

    The package ships this text as ``data/schema.json`` so that the command prints it
    without importing the validator (``python -m estategen.schema`` writes it;
    tests/test_cli.py fails when the shipped file is not what this returns)."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


SHIPPED_SCHEMA = Path(__file__).parent / "data" / "schema.json"


def _with_docs(root: dict[str, Any]) -> dict[str, Any]:
    """Merge data/schema-docs.yaml (description and examples per key path) into the schema.

    Editors show these on hover and completion; the format hint derived from a key's pattern
    stays, after the description.
    """
    docs = key_documentation()
    for path, node in key_nodes(root):
        doc = docs.get(path)
        if doc:
            hint = node.get("description", "")
            extra = (
                f" Format: {hint}."
                if hint and hint.lower() not in doc["description"].lower()
                else ""
            )
            node["description"] = doc["description"] + extra
            node["examples"] = doc["examples"]
            node[CHANGE_KEYWORD] = doc.get("change", [])
    return root


def key_documentation() -> dict[str, Any]:
    """Each key path's description, examples and change policies: data/schema-docs.yaml, and
    the keys :mod:`estategen.declarations` declares."""
    from importlib import resources

    import yaml

    docs: dict[str, Any] = yaml.safe_load(
        resources.files("estategen").joinpath("data/schema-docs.yaml").read_text("utf-8")
    )
    declared = declared_documentation()
    assert not set(docs) & set(declared), "a key documented twice"
    return docs | declared


def key_nodes(root: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key path, JSON Schema node) of every blueprint key below ``root``, parents first:
    ``slurm.partitions[].max_time``, a list's items as ``[]``, a free mapping's values as
    ``.*``. The one walk of the schema's key paths (reference, plan, docs)."""

    def walk(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any]]:
        if path:
            yield path, node
        for name, sub in (node.get("properties") or {}).items():
            yield from walk(sub, f"{path}.{name}" if path else name)
        if isinstance(node.get("items"), Mapping):
            yield from walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), Mapping):
            yield from walk(node["additionalProperties"], f"{path}.*")

    yield from walk(root, "")


_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "dict": "object",
    "list": "array",
}


def _to_json(rule: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = rule.get("type")
    if isinstance(kind, list):
        out["type"] = [_JSON_TYPES[k] for k in kind]
    elif kind:
        out["type"] = _JSON_TYPES[kind]
    meta = rule.get("meta", {})
    if "description" in meta:
        out["description"] = meta["description"]
    if "regex" in rule:
        out["pattern"] = f"^(?:{rule['regex']})$"
        out.setdefault("description", _PATTERN_HINTS.get(rule["regex"], ""))
        if not out["description"]:
            del out["description"]
    if "allowed" in rule:
        out["enum"] = list(rule["allowed"])
    if "min" in rule:
        out["minimum"] = rule["min"]
    if "max" in rule:
        out["maximum"] = rule["max"]
    if "minlength" in rule:
        out["minItems"] = rule["minlength"]
    if "maxlength" in rule:
        out["maxItems"] = rule["maxlength"]
    if "default" in rule:
        out["default"] = rule["default"]
    if rule.get("check_with") == "hostlists":
        out["description"] = "Slurm hostlist expression like 'gpu-[001-032]', or a list of them"
        out["type"] = ["string", "array"]
        out["items"] = {"type": "string"}
    if rule.get("check_with") == "addresses":
        out["description"] = "addresses like '10.1.0.[1-4]' (IPv4, IPv6 or DNS names), or a list"
        out["type"] = ["string", "array"]
        out["items"] = {"type": "string"}
    if kind == "dict" and "schema" in rule:
        fields = rule["schema"]
        out["properties"] = {name: _to_json(sub) for name, sub in fields.items()}
        required = sorted(name for name, sub in fields.items() if sub.get("required"))
        if required:
            out["required"] = required
        out["additionalProperties"] = False
    if kind == "dict" and "keysrules" in rule:
        out["propertyNames"] = _to_json(rule["keysrules"])
        out["additionalProperties"] = _to_json(rule["valuesrules"])
    if kind == "list" and "schema" in rule:
        out["items"] = _to_json(rule["schema"])
    return out


if __name__ == "__main__":
    SHIPPED_SCHEMA.write_text(json_schema_text(), encoding="utf-8")
    print(f"{SHIPPED_SCHEMA}: written")
