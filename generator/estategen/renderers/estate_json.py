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
    return {"estate.json": json_file({"schema": "estategen/estate-v1", **data})}
