"""Slurm's own names (a ClusterName, a QoS) where another output needs them in another form.

The blueprint keeps a partition's, a QoS's and the cluster's name as Slurm takes them
(:data:`estategen.schema.patterns.SLURM_PARTITION`, ``SLURM_QOS``, ``CLUSTER_NAME``); the
forms other outputs need are derived here, once, so that no two outputs derive them apart.
"""

from __future__ import annotations

import re


def kubernetes_name(name: str) -> str:
    """A Slurm name (a ClusterName like ``hpc.example`` or ``aurora_2``) as a Kubernetes
    object's name, a DNS-1123 label: lower case, each run of characters other than letters,
    digits and '-' as one '-', at most 63 characters, a letter or digit at each end
    (``hpc.example`` is hpc-example). A name with no letter or digit derives to ''."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return label[:63].rstrip("-")


def qos_key(name: str) -> str:
    """A QoS name as slurmdbd knows it: sacctmgr adds a QoS under its name in lower case
    (``slurm_addto_char_list`` in src/common/slurm_protocol_defs.c) and slurmctld finds a QoS
    by name in any case (``assoc_mgr_fill_in_qos`` in src/common/assoc_mgr.c), so ``rocsLong``
    and ``rocslong`` are one QoS."""
    return name.lower()
