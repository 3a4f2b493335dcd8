"""GPUs: models the catalog knows and the cloud offers, instance types that carry them, MIG
layouts, and the sharing each scheduler supports.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from estategen.catalog import MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES, CloudOffer, builtin_models
from estategen.checks.core import article, check
from estategen.errors import Finding, did_you_mean, issue
from estategen.model import Estate, NodePool
from estategen.schema.patterns import MPS_CLIENTS_MAX

_DIGITS = re.compile(r"([0-9]+)")


@check
def gpu_models_resolve(estate: Estate) -> Iterator[Finding]:
    for path, name in estate.declared_gpu_models:
        if name in builtin_models():
            yield issue(
                path,
                f"{name!r} replaces the built-in catalog entry of that name",
                level="warning",
            )
    for pool in estate.node_pools:
        if pool.gpus and pool.gpus.model not in estate.gpu_models:
            yield issue(
                f"{pool.path}.gpus.model",
                f"unknown GPU model {pool.gpus.model!r}; add it under gpu_models or choose "
                f"one of: {', '.join(sorted(estate.gpu_models))}"
                f"{did_you_mean(pool.gpus.model, estate.gpu_models)}",
            )


@check
def gpu_types_on_one_node(estate: Estate) -> Iterator[Finding]:
    """A node with GPUs of several models (gpus.other_types) is written as slurm.conf and
    gres.conf write one: a typed gpu GRES and a gres.conf line of device files a type
    (gres.conf(5), "Type"). Only on-prem Slurm nodes are built that way: the device plugin
    advertises one nvidia.com/gpu resource a node and a cloud shape carries one model; MIG,
    sharing and AutoDetect are written for one model of GPU a node."""
    for pool in estate.node_pools:
        if not pool.gpus or not pool.gpus.other_types:
            continue
        gpus = pool.gpus
        path = f"{pool.path}.gpus.other_types"
        if pool.scheduler != "slurm" or pool.managed or pool.hosted:
            yield issue(
                path,
                "several GPU types on one node are on-prem Slurm nodes only (Gres=gpu:TYPE:N "
                "a type); a Kubernetes node advertises one nvidia.com/gpu resource and a cloud "
                "shape carries one model: make a pool per model",
            )
            continue
        alone = [
            key
            for key, value in (
                ("mig", gpus.mig),
                ("sharing", gpus.sharing.time_slicing or gpus.sharing.mps or gpus.sharing.shard),
                ("autodetect", gpus.autodetect not in (None, "off")),
                ("typed", not gpus.typed),
            )
            if value
        ]
        for key in alone:
            yield issue(
                f"{pool.path}.gpus.{key}",
                f"{key} is written for one GPU model a node, and this node has several "
                "(gpus.other_types): remove one of them",
            )
        seen = {gpus.model}
        for index, kind in enumerate(gpus.other_types):
            if kind.model not in estate.gpu_models:
                yield issue(
                    f"{path}[{index}].model",
                    f"unknown GPU model {kind.model!r}; add it under gpu_models or choose "
                    f"one of: {', '.join(sorted(estate.gpu_models))}"
                    f"{did_you_mean(kind.model, estate.gpu_models)}",
                )
            elif kind.model in seen:
                yield issue(
                    f"{path}[{index}].model",
                    f"{kind.model} is already a type of this node: give each model once, "
                    "with all its GPUs in count",
                )
            seen.add(kind.model)
        with_files = [bool(kind.files) for kind in gpus.types]
        if any(with_files) and not all(with_files):
            yield issue(
                path,
                "some GPU types list their device files and others do not: list the files "
                "of every type (gpus.files and each other_types[].files), or of none",
            )
        for index, kind in enumerate(gpus.other_types):
            if kind.files and len(kind.files) != kind.count:
                yield issue(
                    f"{path}[{index}].files",
                    f"{len(kind.files)} device files for {kind.count} GPUs of this type "
                    "(count): list one file per GPU",
                )
        # (twice in gpus.files alone is checks.slurm_site's finding)
        files = [file for kind in gpus.other_types for file in kind.files]
        twice = sorted({file for file in files if files.count(file) > 1 or file in gpus.files})
        if twice:
            yield issue(
                path,
                f"{', '.join(twice)} named by more than one GPU: each GPU has its own device file",
            )


@check
def gpu_models_offered_by_cloud(estate: Estate) -> Iterator[Finding]:
    for pool in estate.node_pools:
        if not (pool.managed and pool.gpus and pool.gpus.model in estate.gpu_models):
            continue
        model = estate.gpu_models[pool.gpus.model]
        if pool.provider not in model.clouds:
            offered = sorted(
                m.name for m in estate.gpu_models.values() if pool.provider in m.clouds
            )
            yield issue(
                f"{pool.path}.gpus.model",
                f"{model.name} is not offered on {pool.provider}; "
                f"{pool.provider} offers: {', '.join(offered) or 'none in the catalog'}",
            )


@check
def instance_type_carries_gpus(estate: Estate) -> Iterator[Finding]:
    """A managed GPU pool's instance type must be one the catalog lists for its GPU model, with
    exactly ``gpus.count`` GPUs: quotas and device-plugin replicas are counted from the
    blueprint, so a wrong count would promise capacity the cloud never delivers."""
    for pool in estate.node_pools:
        gpus, instance = pool.gpus, pool.instance_type
        if not pool.managed:
            continue  # on-prem pools have no instance type; aks Slurm pools are refused
        if not (gpus and instance and gpus.model in estate.gpu_models):
            continue
        offer = estate.gpu_models[gpus.model].clouds.get(pool.provider)
        if offer is None:
            continue  # gpu_models_offered_by_cloud names the models this provider offers
        carried = offer.shapes.get(instance)
        if carried is None:
            yield issue(f"{pool.path}.instance_type", _unknown_shape(estate, pool, offer))
        elif carried != gpus.count:
            same_count = [name for name, count in _by_size(offer) if count == gpus.count]
            other = f", or {article(offer.noun)} {offer.noun} with {gpus.count}: "
            yield issue(
                f"{pool.path}.gpus.count",
                f"{instance} has {carried} {gpus.model} GPU{'s' if carried > 1 else ''}; "
                f"set gpus.count to {carried}{other + ', '.join(same_count) if same_count else ''}",
            )


def _by_size(offer: CloudOffer) -> list[tuple[str, int]]:
    """Shapes by GPU count, then by name with numbers in numeric order (g6.2xlarge first)."""

    def natural(name: str) -> list[tuple[int, str]]:
        return [(int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(name)]

    return sorted(offer.shapes.items(), key=lambda item: (item[1], natural(item[0])))


def _unknown_shape(estate: Estate, pool: NodePool, offer: CloudOffer) -> str:
    """Why an instance type is refused: what it carries instead, a close name, the valid ones."""
    model = pool.gpus.model if pool.gpus else ""
    instance = pool.instance_type or ""
    carriers = sorted(
        m.name
        for m in estate.gpu_models.values()
        if pool.provider in m.clouds and instance in m.clouds[pool.provider].shapes
    )
    import difflib  # only for an instance type the catalog does not know

    close = difflib.get_close_matches(instance, list(offer.shapes), n=1, cutoff=0.6)
    if carriers:
        reason = f"{instance} carries {', '.join(carriers)}, not {model}."
    else:
        reason = f"{instance} is not a {pool.provider} {offer.noun} that carries {model}"
        reason += f"; did you mean {close[0]}?" if close else "."
    valid = ", ".join(f"{name} ({count})" for name, count in _by_size(offer))
    return f"{reason} {offer.noun[:1].upper()}{offer.noun[1:]}s with {model}, by GPU count: {valid}"


@check
def mig_layout_fits(estate: Estate) -> Iterator[Finding]:
    """A MIG layout must exist for the model and fit one GPU's compute and memory slices."""
    for pool in estate.node_pools:
        if not pool.gpus or not pool.gpus.mig or pool.gpus.model not in estate.gpu_models:
            continue
        model = estate.gpu_models[pool.gpus.model]
        path = f"{pool.path}.gpus.mig"
        if not model.mig:
            yield issue(path, f"{model.name} does not support MIG")
            continue
        unknown = [(i, p) for i, p in enumerate(pool.gpus.mig) if p not in model.mig]
        for index, profile in unknown:
            yield issue(
                f"{path}[{index}]",
                f"{profile!r} is not a MIG profile of {model.name}; "
                f"choose from: {', '.join(model.mig)}{did_you_mean(profile, model.mig)}",
            )
        if unknown:
            continue
        for profile, times in Counter(pool.gpus.mig).items():
            if times > model.mig[profile].max:
                yield issue(
                    path,
                    f"{times} x {profile} on one GPU; {model.name} holds at most "
                    f"{model.mig[profile].max}",
                )
        compute = sum(model.mig[p].compute for p in pool.gpus.mig)
        memory = sum(model.mig[p].memory for p in pool.gpus.mig)
        if compute > MIG_COMPUTE_SLICES:
            yield issue(
                path, f"layout uses {compute} compute slices; a GPU has {MIG_COMPUTE_SLICES}"
            )
        if memory > MIG_MEMORY_SLICES:
            yield issue(path, f"layout uses {memory} memory slices; a GPU has {MIG_MEMORY_SLICES}")


@check
def sharing_fits_scheduler(estate: Estate) -> Iterator[Finding]:
    """time_slicing is a device-plugin feature, shards are Slurm GRES, and MPS is both: the
    device plugin's MPS replicas on Kubernetes, gres/mps on Slurm."""
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.node_pools:
        if not pool.gpus:
            continue
        sharing = pool.gpus.sharing
        path = f"{pool.path}.gpus.sharing"
        if sharing.mps is not None and pool.gpus.mig:
            # Kubernetes: the device plugin shares whole GPUs with MPS. Slurm: an MPS share is
            # a part of one GPU, and until 23.02.7 slurmd split a MIG instance's device files
            # into separate GPUs for shared GRES (src/plugins/gres/common/gres_c_s.c
            # _build_sharing_list, changed by commit 4438cab1d8)
            yield issue(
                f"{path}.mps",
                "MIG devices cannot be shared with MPS; use time_slicing on a MIG pool",
            )
        if pool.scheduler == "slurm":
            if sharing.time_slicing is not None:
                yield issue(
                    f"{path}.time_slicing",
                    "time_slicing is a Kubernetes device-plugin mode; Slurm pools share GPUs "
                    "with `shard` or `mps`",
                )
            if sharing.mps is not None and sharing.shard is not None:
                # slurmctld ties one shared GRES to a node's GPUs (gres_init_node_config keeps
                # the last it loads: src/common/gres.c at slurm-22-05-8-1, src/interfaces/
                # gres.c at slurm-24-11-0-1; NEWS of 22.05: shard is "for sharing gpus but not
                # with mps"). On a real 22.05 node with gpu:2,shard:4,mps:200 a
                # --gres=shard:2 job got no GPU and a --gres=mps:100 step got
                # CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=5000.
                yield issue(
                    path,
                    "choose one of shard and mps: slurmctld ties one shared GRES to a node's "
                    "GPUs, and with both it miscounts them (a shard job gets no GPU, an MPS "
                    "job a wrong percentage)",
                )
        else:
            if sharing.shard is not None:
                yield issue(
                    f"{path}.shard",
                    "shard is Slurm GRES sharing; Kubernetes pools use time_slicing or mps",
                )
            if sharing.time_slicing is not None and sharing.mps is not None:
                yield issue(path, "choose one of time_slicing and mps")
            if sharing.mps is not None and sharing.mps > MPS_CLIENTS_MAX:
                yield issue(
                    f"{path}.mps",
                    f"{sharing.mps} MPS replicas of a GPU on Kubernetes: each replica is one "
                    f"MPS client, and an MPS server serves at most {MPS_CLIENTS_MAX} clients a "
                    f"GPU; use 2 to {MPS_CLIENTS_MAX}",
                )
            cluster = clusters.get(pool.cluster or "")
            if (
                sharing.mps is not None
                and cluster is not None
                and cluster.device_plugin_install == "gpu-operator"
                and cluster.mig_strategy == "mixed"
            ):
                # the operator sets MIG_STRATEGY from mig.strategy on every node's plugin, and
                # the environment overrides the pool's config file
                yield issue(
                    f"{path}.mps",
                    f"the GPU Operator runs the device plugin of cluster {cluster.name!r} with "
                    "MIG_STRATEGY=mixed on every node, and the plugin refuses MPS under the "
                    "mixed strategy (it exits on this pool's nodes); set the cluster's "
                    "device_plugin.mig_strategy to single or none, install: device-plugin "
                    "(which gives each pool its own strategy), or share with time_slicing",
                )


@check
def slurm_mps_daemon_started(estate: Estate) -> Iterator[Finding]:
    """Slurm schedules gres/mps and sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, but starts no MPS
    daemon: the site's Prolog does (doc/html/gres.shtml "MPS Management", etc/prolog.example,
    slurm-22-05-8-1 and slurm-24-11-0-1). Without one, the jobs share the GPU unfenced."""
    if any(key.lower() == "prolog" for key in estate.slurm.options):
        return
    for pool in estate.slurm_pools:
        if pool.gpus and pool.gpus.sharing.mps:
            yield issue(
                f"{pool.path}.gpus.sharing.mps",
                "Slurm starts no MPS daemon and slurm.options sets no Prolog: jobs asking "
                "--gres=mps get CUDA_MPS_ACTIVE_THREAD_PERCENTAGE but no MPS server, and "
                "share the GPU unfenced; set a Prolog (slurm.options) that starts "
                "nvidia-cuda-mps-control for the job's GPU and user, as Slurm's "
                "etc/prolog.example does",
                level="warning",
            )


@check
def mig_strategy_matches_pools(estate: Estate) -> Iterator[Finding]:
    clusters = {c.name: c for c in estate.kubernetes_clusters}
    for pool in estate.kubernetes_pools:
        if not (pool.gpus and pool.gpus.mig and pool.cluster in clusters):
            continue
        cluster = clusters[pool.cluster or ""]
        if cluster.mig_strategy == "none":
            yield issue(
                f"{pool.path}.gpus.mig",
                f"cluster {cluster.name!r} has device_plugin.mig_strategy none; "
                "set single or mixed to expose MIG devices",
            )
        elif cluster.mig_strategy == "single" and len(set(pool.gpus.mig)) > 1:
            yield issue(
                f"{pool.path}.gpus.mig",
                "mig_strategy single needs one profile on every GPU; use mixed for this layout",
            )
