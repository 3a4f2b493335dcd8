"""The blueprint's cerberus rules, section by section, up to :data:`BLUEPRINT`.

Static defaults live here and nowhere else (or in a key's declaration,
:mod:`estategen.declarations`); defaults derived from other keys (a team's
namespace, the Slurm cluster name) are filled by the model, which says so where it does.
"""

from __future__ import annotations

from typing import Any

from estategen.catalog import SHAPE_KEYS
from estategen.declarations import (
    NODE_POOL_PARAMETERS,
    PARTITION_PARAMETERS,
    QOS_PARAMETERS,
    Factor,
    OneOf,
    QosParameter,
    Time,
    Value,
    WholeNumber,
    YesNo,
)
from estategen.model import (
    DEFAULT_SLURM_SOURCE,
    POWER_SAVING_DEFAULTS,
    SLURM_PACKAGE_SOURCES,
    SLURM_PATH_DEFAULTS,
    SLURMCTLD_PORT,
    SLURMD_PORT,
)
from estategen.schema.patterns import (
    ACCOUNTING_ENFORCE,
    APT_SOURCE,
    BILLING_TRES,
    CHECK_RULE,
    CLOUD_IMAGE,
    CLOUD_SUBNET,
    CLUSTER_NAME,
    DAEMON_PATH,
    DEFAULT_FRAMEWORKS,
    DEVICE_FILE,
    DN,
    DNS_LABEL,
    ENFORCE_PART_LIMITS,
    FEATURE,
    FQDN,
    FRAMEWORKS,
    FREE_TEXT,
    GCE_PROJECT,
    GCE_ZONE,
    GIT_BRANCH,
    GIT_URL,
    GITOPS_ENGINES,
    GKE_LUSTRE_INSTANCE,
    GRES_TYPE,
    GROUP,
    GROUP_TEMPLATE,
    HEALTH_CHECK_NODE_STATES,
    HEALTH_CHECKS,
    HOSTNAME,
    HTTPS_URL,
    INSTANCE_TYPE,
    JOB_ACCT_GATHER_TYPES,
    JOB_COMP_TYPES,
    KUBERNETES_VERSIONS,
    KUEUE_DURATION,
    LABEL_KEY,
    LABEL_VALUE,
    LDAP_URI,
    LOCAL_DATETIME,
    MAX_PODS_CEILING,
    MIG_PROFILE,
    MOUNT,
    MPI_TYPES,
    MPS_SHARES_MAX,
    NAME,
    NODESET,
    PARTITION_STATES,
    PORT_RANGE,
    PRIORITY_TYPES,
    PROCTRACK_TYPES,
    PROLOG_FLAGS,
    PROM_DURATION,
    PROM_LABEL,
    PROM_VALUE,
    PROVIDERS,
    QUEUE_ENGINES,
    QUOTA_KEY,
    REGION,
    REPO_PATH,
    RESERVATION_FLAGS,
    RESOURCE_GROUP,
    SCHEDULER_PARAMETER,
    SCHEDULER_TYPES,
    SELECT_MODIFIERS,
    SELECT_RESOURCES,
    SELECT_TYPES,
    SHARDS_MAX,
    SLURM_OPTION_KEY,
    SLURM_PARTITION,
    SLURM_QOS,
    SLURM_TIME,
    SLURM_VERSIONS,
    STORAGE_SOURCE,
    STORAGE_TYPES,
    TASK_PLUGINS,
    TEAM,
    TEAM_DIRECTORY,
    TRES,
    USER,
)


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


def _declared(value: Value) -> dict[str, Any]:
    """The rule of a key :mod:`estategen.declarations` declares, by the kind of its value."""
    if isinstance(value, WholeNumber):
        return _int(value.low, value.high)
    if isinstance(value, YesNo):
        return {"type": "boolean"}
    if isinstance(value, OneOf):
        return {"type": "string", "allowed": list(value.words)}
    if isinstance(value, Time):
        return _s(SLURM_TIME)
    if isinstance(value, Factor):
        return {"type": "number", "min": value.low, "max": value.high, "check_with": "finite"}
    return _s(value.pattern)


def _declared_qos(parameter: QosParameter) -> dict[str, Any]:
    rule = _declared(parameter.value)
    if parameter.default is not None:
        rule["default"] = parameter.default
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
_POOL_PARAMETER = {p.key: p for p in NODE_POOL_PARAMETERS}
_SHARING = _dict(
    {
        "time_slicing": _int(2, 64, meta={"description": "replicas per GPU (Kubernetes)"}),
        # Kubernetes pools take at most MPS_CLIENTS_MAX (checks.gpus); Slurm counts shares
        "mps": _int(2, MPS_SHARES_MAX, meta={"description": "MPS shares per GPU"}),
        "shard": _int(1, SHARDS_MAX, meta={"description": "Slurm shards per GPU"}),
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
        "autodetect": {"type": "string", "allowed": ["off", "nvml", "nvidia"]},
        # the device files gres.conf lists for the GPUs (File=), when not /dev/nvidia0..N-1
        "files": _list(_s(DEVICE_FILE), minlength=1, maxlength=16),
        # the node's GPUs of other models, after these (Gres=gpu:p100:2,gpu:v100:2)
        "other_types": _list(
            _dict(
                {
                    "model": _name(required=True),
                    "count": _int(1, 16, required=True),
                    "gres_type": _s(GRES_TYPE),
                    "files": _list(_s(DEVICE_FILE), minlength=1, maxlength=16),
                }
            ),
            minlength=1,
            maxlength=7,
        ),
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
        **{p.key: _declared(p.value) for p in NODE_POOL_PARAMETERS},
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
        # a Kubernetes pool's most pods per node; each provider's own bounds are a check
        # (kubernetes_facts.MAX_PODS_BOUNDS), this is the widest of them
        "max_pods": _int(1, MAX_PODS_CEILING),
        # a Slurm pool's nodes' Weight one by one, in the order hosts names them
        "host_weights": _list(_declared(_POOL_PARAMETER["weight"].value), minlength=1),
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
        "name": _s(SLURM_QOS, required=True),
        **{p.key: _declared_qos(p) for p in QOS_PARAMETERS},
        # not declared: a TRES limit the line writes only where slurmctld tracks GPUs
        "max_gpus_per_user": _int(0, 1_000_000),
        # not declared: a list of other QoS, each of which must be one (checks)
        "preempt": _list(_s(SLURM_QOS), default=[]),
    }
)
_PARTITION = _dict(
    {
        "name": _s(SLURM_PARTITION, required=True),
        "pools": _list(_name(), required=True, minlength=1),
        "default": {"type": "boolean", "default": False},
        "max_time": _s(SLURM_TIME, default="UNLIMITED"),
        "default_time": _s(SLURM_TIME),
        "teams": _list(_s(TEAM), default=[]),
        "qos": _s(SLURM_QOS),
        "priority_tier": _int(0, 65_533, default=1),
        **{p.key: _declared(p.value) for p in PARTITION_PARAMETERS if not p.site_override},
        "hidden": {"type": "boolean", "default": False},
        # --- site overrides ---
        "state": {"type": "string", "allowed": list(PARTITION_STATES)},
        "allow_qos": _list(_s(SLURM_QOS), minlength=1),
        "allow_groups": _list(_s(GROUP), minlength=1),
        "deny_accounts": _list(_s(TEAM), minlength=1),
        **{p.key: _declared(p.value) for p in PARTITION_PARAMETERS if p.site_override},
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
_RESERVATION = _dict(
    {
        "name": _name(required=True),
        "start": _s(LOCAL_DATETIME, required=True, check_with="local_datetime"),
        "duration": _s(SLURM_TIME),
        "end": _s(LOCAL_DATETIME, check_with="local_datetime"),
        "pools": _list(_name(), minlength=1),
        "partition": _s(SLURM_PARTITION),
        "hosts": _HOSTS,
        "flags": _list({"type": "string", "allowed": list(RESERVATION_FLAGS)}, default=[]),
        "teams": _list(_s(TEAM), default=[]),
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
        "cluster_name": _s(CLUSTER_NAME),
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
        "team": _s(TEAM, required=True),
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
# the Pod Security Standards levels a cluster's team namespaces may enforce; privileged is
# refused: it lets a team's pod reach the node (host paths, host network), and so every other
# team
POD_SECURITY_LEVELS = ("restricted", "baseline")
# the levels one team's namespaces may enforce instead of their cluster's: privileged too, named
# for that team alone and warned about (check/team-pod-security-privileged)
TEAM_POD_SECURITY_LEVELS = (*POD_SECURITY_LEVELS, "privileged")
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
        # --- GitOps: the engine that syncs the cluster's folder, and the repository it reads ---
        "gitops": _dict(
            {
                "engine": {"type": "string", "allowed": list(GITOPS_ENGINES), "required": True},
                "repository": _s(GIT_URL, required=True),
                "branch": _s(GIT_BRANCH, default="main"),
                # the render output's folder in the repository; the model fills build/<estate>
                "path": _s(REPO_PATH),
                # Flux: the Secret in flux-system holding the repository's credentials
                "secret": _name(),
                # Flux: the folder of SOPS-encrypted Secrets, and the Secret with their key
                "sops": _dict(
                    {"path": _s(REPO_PATH, required=True), "secret": _name(required=True)}
                ),
            }
        ),
        # --- tenancy: what a team may do in its namespace ---
        "tenancy": _dict(
            {
                "pod_security": {
                    "type": "string",
                    "allowed": list(POD_SECURITY_LEVELS),
                    "default": "restricted",
                },
                "group": _s(GROUP_TEMPLATE, default="{team}"),
                "unix_identity": {"type": "boolean", "default": False},
            },
            default={},
        ),
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
                        "name": _s(TEAM, required=True),
                        "gid": _int(1000, 2_147_483_646, required=True),
                        "members": _list(_s(USER), default=[]),
                        "fairshare": _int(1, 1_000_000, default=1),
                        "namespace": _s(DNS_LABEL),
                        # --- per-team Pod Security level: the team's namespaces on every
                        # cluster, instead of the cluster's tenancy.pod_security ---
                        "pod_security": {
                            "type": "string",
                            "allowed": list(TEAM_POD_SECURITY_LEVELS),
                        },
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
                        "team_directory": _s(TEAM_DIRECTORY),
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
