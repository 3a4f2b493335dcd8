"""``estate.json``: the validated estate with every default filled in.

Pipelines and reviewers diff this file to see what a blueprint change means after defaults
and hostlists are resolved.
"""

from __future__ import annotations

from estategen.model import Estate
from estategen.render import Files, json_file, renderer, to_data


@renderer
def estate_json(estate: Estate) -> Files:
    data = to_data(estate)
    data["gpu_models"] = {
        name: model
        for name, model in data["gpu_models"].items()
        if any(p.gpus and p.gpus.model == name for p in estate.node_pools)
    }
    for pool in data["node_pools"]:
        pool.pop("hosts")
        # issue 14 parts 4 and 5: shown where the blueprint uses them
        for key in ("health_checks", "cloud"):
            if pool[key] is None:
                pool.pop(key)
    if data["slurm"]["health_check"] is None:
        data["slurm"].pop("health_check")
    if not any(p.elastic for p in estate.node_pools):
        data["slurm"].pop("power_saving")
    else:
        data["slurm"]["power_saving"].pop("declared")
    return {"estate.json": json_file({"schema": "estategen/estate-v1", **data})}
