"""Slurm hosted in Kubernetes (Slinky): the hosted pools, and the slurm.conf keys estategen
renders for them.
"""

from __future__ import annotations

from collections.abc import Iterator

from estategen.checks.core import check
from estategen.errors import Finding, issue
from estategen.facts import gres_type
from estategen.kubernetes import slinky
from estategen.kubernetes_facts import (
    HOSTED_AUTODETECT,
    hosted_gpu_backing,
    hosted_gpus,
    hosted_node_names,
    hosted_unnamed_backing,
)
from estategen.model import Estate, NodePool

# rendered for Slurm pools hosted in Kubernetes, passed through otherwise
HOSTED_SLURM_OPTIONS = frozenset({"MaxNodeCount", "SlurmctldParameters"})


@check
def hosted_slurm_pools(estate: Estate) -> Iterator[Finding]:
    """A Slurm pool with `cluster` is a Slinky NodeSet of `nodes.max` slurmd pods joining the
    estate's slurmctld; it takes whole GPUs from the cluster's Kubernetes pools."""
    hosted = estate.hosted_pools()
    if not hosted:
        if estate.slurm.auth_key is not None:
            yield issue(
                "slurm.auth_key",
                "the auth/slurm key is for Slurm pools hosted in Kubernetes (a Slurm pool with "
                "`cluster`), and there are none: remove slurm.auth_key",
            )
        return
    version = estate.versions.slurm.text
    if version not in slinky.SLURM_RELEASES:
        yield issue(
            "versions.slurm",
            f"Slinky publishes no slurmd image for Slurm {version}; hosted Slurm pools "
            f"({', '.join(p.name for p in hosted)}) need one of "
            f"{', '.join(slinky.SLURM_RELEASES)}",
        )
    slurm = estate.slurm
    if slurm.auth_key is None:
        yield issue(
            "slurm",
            "hosted Slurm pools authenticate with auth/slurm: set slurm.auth_key "
            "{secret: NAME}, the slurm.key slurmctld and the slurmd pods share",
        )
    if slurm.rest_api is None:
        yield issue(
            "slurm",
            "hosted Slurm pools need slurm.rest_api: Slinky requires auth/jwt, and its pods "
            "sign with the same JWT key (slurm.rest_api.jwt_key) as the estate's slurmrestd",
        )
    clusters = {c.name for c in estate.kubernetes_clusters}
    for pool in hosted:
        for key, present in (
            ("hosts", bool(pool.host_expressions)),
            ("provider", pool.provider != "on-prem"),
            ("instance_type", pool.instance_type is not None),
            ("network", bool(pool.switches or pool.blocks)),
        ):
            if present:
                yield issue(
                    f"{pool.path}.{key}",
                    f"`{key}` does not apply to a hosted Slurm pool: its nodes are slurmd pods "
                    f"of cluster {pool.cluster!r}, as many as `nodes.max`",
                )
        if pool.nodes_max is None:
            yield issue(pool.path, "a hosted Slurm pool needs `nodes.max`: its slurmd pods")
        elif pool.nodes_min not in (None, 0, pool.nodes_max):
            yield issue(
                f"{pool.path}.nodes.min",
                "a NodeSet runs a fixed number of slurmd pods (`nodes.max`); leave out `min`",
            )
        for key, missing in (("cpu", pool.cpu is None), ("memory_gb", pool.memory_gb is None)):
            if missing:
                yield issue(pool.path, f"a hosted Slurm pool needs `{key}`: its pods request it")
        if pool.gpus and (pool.gpus.mig or pool.gpus.sharing.time_slicing or pool.gpus.sharing.mps):
            yield issue(
                f"{pool.path}.gpus",
                "a hosted Slurm pool's pods take whole GPUs; MIG, time-slicing and MPS are "
                "not supported there",
            )
    # the slurmd pods use the host network: a Slurm node takes its Kubernetes node's name
    hosts = {h: p for p in estate.slurm_pools for h in p.hosts}
    named: dict[str, NodePool] = {}
    for pool in hosted:
        for name in hosted_node_names(estate, pool):
            if name in hosts:
                yield issue(
                    pool.path,
                    f"the pool's slurmd pods use the host network and register by their "
                    f"Kubernetes node's name; {name} is also a host of Slurm pool "
                    f"{hosts[name].name!r}",
                )
                break
            if name in named:
                yield issue(
                    pool.path,
                    f"the slurmd pods of hosted pools {named[name].name!r} and {pool.name!r} "
                    f"may both run on {name} and register by its name: give them Kubernetes "
                    f"nodes of different GPU models or clusters",
                )
                break
            named[name] = pool
        unnamed = [p.name for p in hosted_unnamed_backing(estate, pool)]
        kind = gres_type(pool) if pool.gpus else None
        if pool.gpus and unnamed and kind is not None and pool.gpus.gres_type is None:
            # gres_gpu.c _normalize_sys_gres_types: a detected GPU keeps a configured Type
            # only where it is part of the driver's model name; no catalog name is
            yield issue(
                f"{pool.path}.gpus",
                f"the nodes of {', '.join(unnamed)} are named only once their provider "
                f"creates them, so slurmd finds their GPUs itself (gres.conf "
                f"AutoDetect={HOSTED_AUTODETECT}), typed by the driver's model name in lower "
                f"case with '_' for spaces (NVIDIA H100 80GB HBM3 is nvidia_h100_80gb_hbm3); "
                f"it drops GPUs whose name does not contain the GRES Type {kind!r}: set "
                f"gpus.gres_type to a part of that name (h100) or gpus.typed: false",
                level="warning",
            )
        if not pool.gpus or pool.cluster not in clusters:
            continue
        shapes = {
            p.gpus.count
            for p in estate.pools_in_cluster(pool.cluster)
            if p.gpus and p.gpus.model == pool.gpus.model
        }
        if shapes and shapes != {pool.gpus.count}:
            yield issue(
                f"{pool.path}.gpus.count",
                f"a slurmd pod takes every GPU of its node, so gres.conf can name their device "
                f"files: the {pool.gpus.model} nodes of cluster {pool.cluster!r} have "
                f"{', '.join(map(str, sorted(shapes)))}, not {pool.gpus.count}",
            )
    for cluster in sorted({p.cluster for p in hosted if p.cluster in clusters}):
        for model, taken in sorted(hosted_gpus(estate, cluster).items()):
            backing = hosted_gpu_backing(estate, cluster, model)
            if taken > backing:
                yield issue(
                    next(p.path for p in hosted if p.cluster == cluster and p.gpus),
                    f"hosted Slurm pools take {taken} {model} GPUs of cluster {cluster!r}, "
                    f"whose Kubernetes pools offer {backing} whole, unshared ones",
                )


@check
def hosted_options_not_owned(estate: Estate) -> Iterator[Finding]:
    if not estate.hosted_pools():
        return
    owned = {k.lower(): k for k in HOSTED_SLURM_OPTIONS}
    for key in estate.slurm.options:
        if key.lower() in owned:
            yield issue(
                f"slurm.options.{key}",
                f"{owned[key.lower()]} is rendered by estategen for the Slurm pools hosted in "
                "Kubernetes (enable_configless, room for their dynamic nodes); it cannot be "
                "passed through",
            )
