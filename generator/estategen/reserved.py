"""Names that already mean something where a blueprint's names end up: one table per namespace.

A team becomes a Unix group, a Slurm account and (by default) a Kubernetes namespace; a user a
Unix account on every host; a partition a ``PartitionName``; a pool a device-plugin and
mig-parted configuration name. Each table maps a reserved name to why it is reserved, and the
``reserved_names`` check refuses a blueprint name found in the table of its namespace.

Sources: slurm.conf(5) and sacctmgr(1) of Slurm 22.05-25.05; Debian 12's base-passwd
(``/usr/share/base-passwd/{passwd,group}.master``) and the packages our roles install
(``playbooks/roles``); MariaDB's account management documentation; the Kubernetes namespaces
documentation; the names ``stacks/`` gives its own objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

_SLURM_TEMPLATE = "Slurm reads {kind}={word} (any case) as defaults for every {what}, not a {what}"

# Slurm compares these keywords without regard to case; names are looked up lowercased.
SLURM_PARTITIONS: Mapping[str, str] = {
    "default": _SLURM_TEMPLATE.format(kind="PartitionName", word="DEFAULT", what="partition"),
}
SLURM_QOS: Mapping[str, str] = {
    "all": "Slurm reads AllowQos=all as ALL (any case): every QoS, no restriction",
    "set": "sacctmgr reads `add qos set` as its keyword Set, not as a QoS to add",
    "where": "sacctmgr reads `add qos where` as its keyword Where, not as a QoS to add",
}
SLURM_ACCOUNTS: Mapping[str, str] = {
    "all": "Slurm reads AllowAccounts=all as ALL (any case): every account, no restriction",
    "root": "it is Slurm's own root account, above every account (sacctmgr)",
}
SLURM_NODES: Mapping[str, str] = {
    "all": "NodeName=ALL is reserved in slurm.conf (slurmctld exits) and Nodes=ALL means "
    "every node",
    "default": _SLURM_TEMPLATE.format(kind="NodeName", word="DEFAULT", what="node"),
}

_BASE = "it is a Debian system {kind} (base-passwd)"
_SYSTEMD = "it is a Debian system {kind} (systemd and base packages)"


def _table(kind: str, groups: Mapping[str, Sequence[str]]) -> dict[str, str]:
    return {name: reason.format(kind=kind) for reason, names in groups.items() for name in names}


SYSTEM_USERS: Mapping[str, str] = _table(
    "user",
    {
        _BASE: [
            "root",
            "daemon",
            "bin",
            "sys",
            "sync",
            "games",
            "man",
            "lp",
            "mail",
            "news",
            "uucp",
            "proxy",
            "www-data",
            "backup",
            "list",
            "irc",
            "_apt",
            "nobody",
            "gnats",
        ],
        _SYSTEMD: [
            "systemd-network",
            "systemd-timesync",
            "systemd-resolve",
            "messagebus",
            "polkitd",
            "sshd",
            "_chrony",
            "tss",
            "uuidd",
        ],
        "it is the {kind} slurmctld, slurmd and slurmdbd run as (Debian's slurm-wlm)": ("slurm",),
        "it is the {kind} munged runs as (role munge)": ("munge",),
        "it is the {kind} MariaDB runs as (role slurmdbd, mariadb-server)": ("mysql",),
        "it is the {kind} node exporter runs as (role node_exporter, prometheus-node-exporter)": (
            "prometheus",
        ),
        "it is a {kind} of the NVIDIA driver packages (role nvidia_gpu)": ("nvidia-persistenced",),
        "it is the {kind} SSSD runs as (role common)": ("sssd",),
        "it is a {kind} of the NFS client packages (role storage_client)": ("statd", "_rpc"),
    },
)
SYSTEM_GROUPS: Mapping[str, str] = _table(
    "group",
    {
        _BASE: [
            "root",
            "daemon",
            "bin",
            "sys",
            "adm",
            "tty",
            "disk",
            "lp",
            "mail",
            "news",
            "uucp",
            "man",
            "proxy",
            "kmem",
            "dialout",
            "fax",
            "voice",
            "cdrom",
            "floppy",
            "tape",
            "sudo",
            "audio",
            "dip",
            "www-data",
            "backup",
            "operator",
            "list",
            "irc",
            "src",
            "shadow",
            "utmp",
            "video",
            "sasl",
            "plugdev",
            "staff",
            "games",
            "users",
            "nogroup",
        ],
        _SYSTEMD: [
            "systemd-journal",
            "systemd-network",
            "systemd-timesync",
            "systemd-resolve",
            "messagebus",
            "polkitd",
            "input",
            "kvm",
            "render",
            "sgx",
            "netdev",
            "crontab",
            "_ssh",
            "ssl-cert",
            "tss",
            "uuidd",
            "_chrony",
        ],
        "it is a {kind} whose members are root in effect (through the Docker or LXD socket)": (
            "docker",
            "lxd",
        ),
        "it is a {kind} that grants sudo on other distributions": ("wheel", "admin"),
        "it is the {kind} of Slurm's daemons (Debian's slurm-wlm)": ("slurm",),
        "it is the {kind} of munged and its key (role munge)": ("munge",),
        "it is the {kind} of MariaDB (role slurmdbd, mariadb-server)": ("mysql",),
        "it is the {kind} of the node exporter (role node_exporter)": ("prometheus",),
        "it is a {kind} of the NVIDIA driver packages (role nvidia_gpu)": ("nvidia-persistenced",),
        "it is the {kind} of SSSD (role common)": ("sssd",),
    },
)

# Accounts MariaDB keeps for itself (Debian 12's mariadb-server 10.11; debian-sys-maint is
# the maintenance account of Debian's older packages and of hosts upgraded from them).
MARIADB_ACCOUNTS: Mapping[str, str] = {
    "root": "it is MariaDB's administrator (root@localhost, by unix_socket)",
    "mysql": "it is MariaDB's second administrator (mysql@localhost, by unix_socket, from 10.4)",
    "debian-sys-maint": "it is the administrator Debian's maintenance scripts log in as "
    "(/etc/mysql/debian.cnf)",
    "mariadb.sys": "it owns MariaDB's mysql.user view (from 10.4.13)",
}

_KUBERNETES = "it is a namespace Kubernetes creates and uses itself"
KUBERNETES_NAMESPACES: Mapping[str, str] = {
    "default": _KUBERNETES,
    "kube-system": _KUBERNETES,
    "kube-public": _KUBERNETES,
    "kube-node-lease": _KUBERNETES,
    "nvidia-gpu": "it is estategen's namespace for the GPU operator, device plugin and DCGM"
    " exporter",
    "kueue-system": "it is the namespace estategen installs Kueue into",
    # --- queue engines and training operators ---
    "volcano-system": "it is the namespace estategen installs Volcano into",
    "jobset-system": "it is the namespace estategen installs JobSet into",
    "kubeflow-system": "it is the namespace estategen installs Kubeflow Trainer into",
    "kuberay-system": "it is the namespace estategen installs the KubeRay operator into",
    "mpi-operator": "it is the namespace the MPI Operator's manifest installs it into",
    # --- storage drivers ---
    "mount-s3": "it is where Mountpoint for Amazon S3's CSI driver runs its mount pods",
}
# Kubernetes reserves every namespace that starts with this for its system namespaces.
KUBERNETES_RESERVED_PREFIX = "kube-"

# The Kubernetes stack names configurations after pools next to these fixed ones.
POOL_NAMES: Mapping[str, str] = {
    "default": "it names the device plugin's configuration for pools without one of their own",
    "all-disabled": "it names the mig-parted configuration that turns MIG off",
}


def namespace_reason(namespace: str) -> str | None:
    """Why a team may not use this Kubernetes namespace, or None when it may."""
    if namespace in KUBERNETES_NAMESPACES:
        return KUBERNETES_NAMESPACES[namespace]
    if namespace.startswith(KUBERNETES_RESERVED_PREFIX):
        return f"Kubernetes reserves namespaces starting with {KUBERNETES_RESERVED_PREFIX!r}"
    return None


# Labels of the series our scrape targets produce that are not the blueprint's to set: a
# target label of the same name would replace them (Prometheus' own), be dropped in favour of
# the exporter's (`honor_labels: true` on the dcgm-exporter job), or push the exporter's own
# value aside as `exported_<name>`. Names starting with `__`, which Prometheus reserves, never
# get this far: the schema's pattern wants a letter first.
_PROMETHEUS = "Prometheus sets it on every target (the same value would collapse our targets)"
_SERVICE_MONITOR = "the Prometheus Operator sets it on every target a ServiceMonitor finds"
_DCGM = "dcgm-exporter puts it on every GPU series"
_RULES = "the estate's recording rules and node info series use it to name where a GPU is"
_SLURM_EXPORTER = "the Slurm exporter puts it on its series"
PROMETHEUS_LABELS: Mapping[str, str] = {
    "instance": _PROMETHEUS,
    "job": _PROMETHEUS,
    "endpoint": _SERVICE_MONITOR,
    "service": _SERVICE_MONITOR,
    "namespace": f"{_SERVICE_MONITOR}, and {_DCGM} (the pod's namespace)",
    "pod": f"{_SERVICE_MONITOR}, and {_DCGM} (the pod using the GPU)",
    "container": f"{_SERVICE_MONITOR}, and {_DCGM} (the container using the GPU)",
    "gpu": _DCGM,
    "UUID": _DCGM,
    "pci_bus_id": _DCGM,
    "device": _DCGM,
    "modelName": _DCGM,
    "Hostname": _DCGM,
    "GPU_I_PROFILE": _DCGM,
    "GPU_I_ID": _DCGM,
    "DCGM_FI_DRIVER_VERSION": _DCGM,
    "estate": _RULES,
    "scheduler": _RULES,
    "pool": _RULES,
    "team": _RULES,
    "host": _RULES,
    "node": _SLURM_EXPORTER,
    "partition": _SLURM_EXPORTER,
    "account": _SLURM_EXPORTER,
    "user": _SLURM_EXPORTER,
    "status": _SLURM_EXPORTER,
    "reason": _SLURM_EXPORTER,
}
