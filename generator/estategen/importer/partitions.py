"""slurm.conf's PartitionName lines as the blueprint's ``slurm.partitions``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estategen.importer.converters import Unsayable, _partition_name
from estategen.importer.outcomes import _Run
from estategen.importer.tables import _ALSO, _BASIC_IGNORES, PARTITION_KEYS
from estategen.slurm_names import qos_key
from estategen.slurmconf import ConfRecord, Setting


@dataclass(frozen=True, slots=True)
class _Site:
    """What the site's global parameters decide for its partitions."""

    accounting: bool  # slurmdbd: QoS and accounts exist
    basic: bool  # priority/basic: no PriorityJobFactor
    memory_default: bool  # a global DefMemPerCPU or DefMemPerNode
    release: str  # the Slurm release the blueprint targets (versions.slurm)


def _qos_list(names: set[str]) -> list[dict[str, str]]:
    """The QoS the partitions name, each once: slurmdbd knows ``rocsLong`` and ``rocslong``
    as one QoS (:func:`estategen.slurm_names.qos_key`); the first spelling in sorted order
    names it."""
    by_key: dict[str, str] = {}
    for name in sorted(names):
        by_key.setdefault(qos_key(name), name)
    return [{"name": name} for name in by_key.values()]


def _partition(
    record: ConfRecord,
    hosts: list[str],
    pool_of: Mapping[str, str],
    teams: set[str],
    qos: set[str],
    run: _Run,
    site: _Site,
) -> dict[str, Any] | None:
    head = Setting("PartitionName", record.name, record.where)
    try:
        name = _partition_name(record.name)
    except Unsayable as why:
        run.refused(head, f"slurm.partitions[].name: {why}")
        return None
    if not hosts:
        run.refused(head, "a partition without nodes is not a blueprint partition")
        return None
    part: dict[str, Any] = {
        "name": name,
        "pools": list(dict.fromkeys(pool_of[h] for h in hosts)),
    }
    run.mapped(head, f"slurm.partitions[{name}]")
    run.source(f"slurm.partitions[{name}]", head)
    where = f"PartitionName={record.name}"
    for setting in record.settings:
        row = PARTITION_KEYS.get(setting.name)
        if setting.name == "nodes":
            run.mapped(setting, f"slurm.partitions[{name}].pools")
        elif row is not None:
            try:
                value = row.convert(setting.value)
                also = _ALSO.get(setting.name)
                extra = also.convert(setting.value) if also else None
            except Unsayable as why:
                run.refused(setting, f"{row.path}: {why}", where)
                continue
            if row.path in ("qos", "allow_qos", "deny_accounts") and value and not site.accounting:
                run.refused(
                    setting,
                    "QoS and accounts live in slurmdbd, and this site has no accounting",
                    where,
                )
                continue
            if site.basic and row.path == "priority_job_factor":
                run.refused(setting, f"slurm.partitions[].priority_job_factor: {_BASIC_IGNORES}")
                continue
            if value == "unlimited" and site.memory_default:
                # unlimited writes no line, so slurm.conf's own default would apply instead
                run.refused(
                    setting,
                    "slurm.partitions[].def_mem_per_node: unlimited beside slurm.conf's own "
                    "DefMemPerCPU or DefMemPerNode is not a blueprint key",
                    where,
                )
                continue
            if value is None:
                part.pop(row.path, None)
            else:
                part[row.path] = value
            if also is not None and site.basic:
                run.reviews.append(
                    f"slurm.partitions[{name}]: {setting.key}={setting.value} sets PriorityTier "
                    "and PriorityJobFactor; priority/basic ignores the job factor, so import "
                    "kept the tier"
                )
            elif also is not None:
                part[also.path] = extra
            if row.path == "qos":
                qos.add(value)
            elif row.path == "allow_qos" and value:
                qos.update(value)
            elif row.path in ("teams", "deny_accounts") and value:
                teams.update(value)
                for team in value:
                    run.source(f"identity.teams[{team}]", setting)
            run.mapped(setting, f"slurm.partitions[{name}].{row.path}")
            run.source(f"slurm.partitions[{name}].{row.path}", setting)
        else:
            run.refused(setting, "not a blueprint key", where)
    node_default = record.get("DefMemPerNode")
    others = [k for k in ("def_mem_per_cpu", "def_mem_per_gpu") if k in part]
    if "def_mem_per_node" in part and others and node_default is not None:
        # slurm.conf(5): DefMemPerCPU, DefMemPerGPU and DefMemPerNode are mutually exclusive
        del part["def_mem_per_node"]
        run.unmap(node_default, f"slurm.partitions[{name}].def_mem_per_node")
        run.refused(
            node_default,
            f"slurm.partitions[].def_mem_per_node: not with {' or '.join(others)}",
            where,
        )
    return part


def _slurm_partition_defaults(
    part: dict[str, Any], site: _Site, gpu_pools: set[str], run: _Run
) -> None:
    """Where a partition sets no default memory (and slurm.conf none for all), no billing
    weights, or no CPUs per GPU, Slurm gives a job its nodes' whole memory, bills its CPUs
    and gives a GPU job the CPUs it asks for: import writes those defaults, which estategen
    would otherwise replace with its own."""
    kept = []
    if "def_cpu_per_gpu" not in part and gpu_pools & set(part["pools"]):
        part["def_cpu_per_gpu"] = "none"
        kept.append("def_cpu_per_gpu: none (a GPU job gets the CPUs it asks for)")
    memory_keys = ("def_mem_per_cpu", "def_mem_per_gpu", "def_mem_per_node")
    if not site.memory_default and not any(k in part for k in memory_keys):
        part["def_mem_per_node"] = "unlimited"
        kept.append("def_mem_per_node: unlimited (a job gets its nodes' whole memory)")
    if "billing_weights" not in part:
        part["billing_weights"] = {}
        kept.append("billing_weights: {} (a job is billed its CPUs)")
    if kept:
        run.reviews.append(
            f"slurm.partitions[{part['name']}]: slurm.conf leaves these to Slurm's defaults, "
            f"which import wrote so that the render keeps them: {'; '.join(kept)}"
        )
