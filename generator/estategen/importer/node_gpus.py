"""A NodeName line's GPUs as node pools carry them: its GPU types and counts, or its MIG
instances as one GPU model's layout."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from estategen.importer.converters import Unsayable, _name
from estategen.importer.gres import SHARED_NAMES
from estategen.importer.outcomes import _Run
from estategen.schema.patterns import GRES_TYPE
from estategen.slurmconf import Setting

# Placeholder memory of GPU models the catalog does not know, by GRES Type; a review note
# says it was guessed. It sets the model's billing weight only: pools keep the site's Weight.
_GPU_MEMORY_GUESS = {
    "k80": 12,
    "p100": 16,
    "t4": 16,
    "v100": 32,
    "a10": 24,
    "a40": 48,
    "a100": 80,
    "h100": 80,
    "h200": 141,
    "l4": 24,
    "l40": 48,
    "l40s": 48,
    "rtx-3090": 24,
    "rtx-2080ti": 11,
}
_GPU_MEMORY_DEFAULT = 16


def gres_item(gres: Setting | None, name: str) -> Setting | None:
    """The first item of GRES ``name`` in a Gres= list (``shard:32`` of
    ``gpu:a100:4,shard:32``), as a setting of its own; None when there is none."""
    for item in gres.value.split(",") if gres is not None else ():
        if item.split(":")[0].lower() == name:
            assert gres is not None
            return Setting(gres.key, item, gres.where)
    return None


def node_gpu_types(
    gres: Setting,
    gres_type: str | None,
    models: dict[str, dict[str, Any]],
    note_mapped: Callable[[Setting | None, str], None],
    note_refused: Callable[[Setting, str], None],
    run: _Run,
) -> tuple[tuple[tuple[str, str | None, int], ...], bool]:
    """The node's GPU types, each (model, the site's GRES type when it is not the model's
    name, count), in the order of its Gres (gpu:p100:2,gpu:v100:2 is two), and whether the
    GRES has a type. An untyped GRES (gpu:N, no Type in gres.conf) keeps no type: its model
    is a placeholder named gpu, and it is the node's only GPU GRES."""
    types: list[tuple[str, str | None, int]] = []
    kinds: list[str] = []
    typed = True
    for item in filter(None, gres.value.split(",")):
        parts = item.split(":")
        part = Setting(gres.key, item, gres.where)
        if parts[0].lower() in SHARED_NAMES:
            continue  # the MPS shares or shards of the GPUs, settled once the GPUs are known
        if parts[0].lower() != "gpu":
            note_refused(part, "only gpu GRES are imported")
            continue
        if len(parts) > 3:
            note_refused(part, "a GRES is gpu:N or gpu:TYPE:N")
            continue
        if types and (len(parts) != 3 or not typed):
            note_refused(
                part,
                "an untyped GPU GRES beside another: several GPU types on one node are "
                f"each typed (gpu:TYPE:N), and import keeps {kinds[0]}",
            )
            continue
        kind = parts[1] if len(parts) == 3 else gres_type or "gpu"
        if len(parts) == 3 and MIG_PROFILE.fullmatch(kind):
            # (a Gres= of MIG instances alone is read by mig_gres)
            note_refused(
                part,
                "MIG instances beside whole GPUs on one node: a MIG pool's GPUs are all of "
                "one model and partitioned alike (gpus.mig)",
            )
            continue
        try:
            count = int(parts[-1].split("(")[0])
        except ValueError:
            note_refused(part, "GRES count is not a number")
            continue
        if not 1 <= count <= 16:
            note_refused(part, "a pool has 1 to 16 GPUs a node")
            continue
        if not re.fullmatch(GRES_TYPE, kind):
            note_refused(part, f"GPU type {kind!r} is not a GRES type name ({GRES_TYPE})")
            continue
        try:
            model = _name(kind)
        except Unsayable as why:
            note_refused(part, f"GPU type: {why}")
            continue
        if kind.lower() in (k.lower() for k in kinds) or model in (t[0] for t in types):
            note_refused(part, f"GPU type {kind} twice in one Gres: give its GPUs in one count")
            continue
        if not types:
            typed = len(parts) == 3 or gres_type is not None
        if model not in models and not _catalog_has(model):
            guess = _GPU_MEMORY_GUESS.get(model, _GPU_MEMORY_DEFAULT)
            models[model] = {"name": model, "memory_gb": guess}
            run.reviews.append(
                f"gpu_models.{model}.memory_gb: {guess} is a guess from the GRES type name; "
                "set the model's memory (it sets its billing weight)"
            )
        types.append((model, kind if kind != model and typed else None, count))
        kinds.append(kind)
        note_mapped(part, "node_pools[].gpus")
    return tuple(types), typed


# a MIG instance's GRES type as estategen writes it (1g.10gb, 3g.40gb), or as NVML names it,
# after its GPU's name up to the first '-' (nvidia_a100_3g.20gb; sites write a100_3g.20gb)
MIG_PROFILE = re.compile(
    r"(?:(?P<prefix>[A-Za-z0-9][A-Za-z0-9_.]*)_)?(?P<profile>[1-7]g\.[0-9]+gb)"
)


def mig_profiles(value: str) -> tuple[dict[str, int], str | None] | None:
    """Profile -> count of a Gres= value whose every gpu item is gpu:TYPE:N with a MIG
    profile, its type the profile or one prefix and the profile, and that prefix; None for
    any other value. Items that share the GPUs (mps, shard) are settled apart."""
    out: dict[str, int] = {}
    prefixes = set()
    for item in filter(None, value.split(",")):
        parts = item.split(":")
        if parts[0].lower() in SHARED_NAMES:
            continue
        match = MIG_PROFILE.fullmatch(parts[1]) if len(parts) == 3 else None
        if match is None or parts[0].lower() != "gpu":
            return None
        if not parts[2].isdigit() or int(parts[2]) < 1:
            return None
        prefixes.add(match["prefix"])
        out[match["profile"]] = out.get(match["profile"], 0) + int(parts[2])
    if not out or len(prefixes) != 1:
        return None
    return out, prefixes.pop()


def mig_gres(
    gres: Setting,
    features: list[str],
    note_mapped: Callable[[Setting | None, str], None],
    note_refused: Callable[[Setting, str], None],
    run: _Run,
) -> tuple[str | None, int, tuple[str, ...], str | None]:
    """(model, GPUs a node, one GPU's MIG layout, the types' prefix) of a node whose GRES
    are MIG instances (gpu:3g.40gb:8,gpu:1g.10gb:16, or as NVML names them with their GPU's
    name, gpu:nvidia_a100_3g.20gb:2, which a pool's gpus.gres_type writes), as estategen
    writes a pool with ``gpus.mig``. The model is the catalog's model the node's features
    name (estategen writes it as one) that has every profile, else the one catalog model
    the prefix names (a100: a100-*, without nvidia_) with every profile; the GPUs are the
    fewest that the totals divide evenly into layouts one GPU holds (a GPU's slices:
    catalog.MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES), said in a review."""
    from estategen.catalog import MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES, builtin_models

    totals, prefix = mig_profiles(gres.value) or ({}, None)
    catalog = builtin_models()
    named = [f for f in features if f in catalog and set(totals) <= set(catalog[f].mig)]
    if not named and prefix is not None:
        stem = prefix.lower().removeprefix("nvidia_")
        named = [
            name
            for name, model in catalog.items()
            if name.startswith(f"{stem}-") and set(totals) <= set(model.mig)
        ]
    if len(named) != 1:
        note_refused(
            gres,
            "MIG instances of no one GPU model: neither the node's features nor the types' "
            "prefix name one catalog model with these MIG profiles (estategen writes the "
            "model as a feature of MIG nodes)",
        )
        return None, 0, (), None
    model = catalog[named[0]]
    for gpus in range(1, 17):
        if any(count % gpus for count in totals.values()):
            continue
        layout = {name: count // gpus for name, count in totals.items()}
        compute = sum(model.mig[name].compute * n for name, n in layout.items())
        memory = sum(model.mig[name].memory * n for name, n in layout.items())
        fits = all(n <= model.mig[name].max for name, n in layout.items())
        if fits and compute <= MIG_COMPUTE_SLICES and memory <= MIG_MEMORY_SLICES:
            order = sorted(layout, key=lambda name: (-model.mig[name].compute, name))
            note_mapped(gres, "node_pools[].gpus.mig")
            run.reviews.append(
                f"node_pools[].gpus: {gpus} {model.name} GPUs a node, each split as "
                f"{', '.join(f'{layout[n]}x {n}' for n in order)}: the fewest GPUs the MIG "
                "totals fit; set gpus.count and gpus.mig if the nodes have more"
            )
            return model.name, gpus, tuple(n for n in order for _ in range(layout[n])), prefix
    note_refused(gres, f"no count of {model.name} GPUs (1 to 16) holds these MIG totals evenly")
    return None, 0, (), None


def _catalog_has(model: str) -> bool:
    from estategen.catalog import builtin_models

    return model in builtin_models()
