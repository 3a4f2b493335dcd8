"""``estate.json``: the validated estate with every default filled in.

Pipelines and reviewers diff this file to see what a blueprint change means after defaults
and hostlists are resolved, and ``estategen plan`` compares the one in an output folder with
a fresh render key by key (:mod:`estategen.estatediff`): it records the whole model a plan
needs, each pool's hosts as one hostlist.
"""

from __future__ import annotations

from typing import Any

from estategen import hostlist
from estategen.model import Estate
from estategen.output import Files, json_file, renderer, to_data

# estate-v2: pools keep their hosts (one hostlist), so a plan can diff models.
SCHEMA = "estategen/estate-v2"


def estate_data(estate: Estate) -> dict[str, Any]:
    """What estate.json records of an estate (without its ``schema`` field)."""
    data: dict[str, Any] = to_data(estate)
    # whether versions.slurm was written or follows slurm.packages: for the checks, not a value
    data["versions"].pop("slurm_declared")
    data["gpu_models"] = {
        name: model
        for name, model in data["gpu_models"].items()
        if any(p.gpus and name in (k.model for k in p.gpus.types) for p in estate.node_pools)
    }
    for team in data["identity"]["teams"]:
        # a team's own Pod Security level: shown where the blueprint sets one
        if team["pod_security"] is None:
            team.pop("pod_security")
    for pool, model in zip(data["node_pools"], estate.node_pools, strict=True):
        pool["hosts"] = hostlist.compress(list(model.hosts)) if model.hosts else ""
        # health checks, cloud settings and max pods: shown where the blueprint uses them
        for key in ("health_checks", "cloud", "max_pods"):
            if pool[key] is None:
                pool.pop(key)
    for cluster in data["kubernetes_clusters"]:
        # the GitOps engine: shown where the blueprint names one
        if cluster["gitops"] is None:
            cluster.pop("gitops")
    if data["slurm"]["health_check"] is None:
        data["slurm"].pop("health_check")
    if not any(p.cloud_nodes for p in estate.node_pools):
        data["slurm"].pop("power_saving")
    else:
        data["slurm"]["power_saving"].pop("declared")
    return data


@renderer
def estate_json(estate: Estate) -> Files:
    return {"estate.json": json_file({"schema": SCHEMA, **estate_data(estate)})}
