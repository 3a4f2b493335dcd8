"""Two estates compared key by key, each change named by its blueprint key and change policy.

``estate.json`` (written by every render, :mod:`estategen.renderers.estate_json`) records the
validated model. :func:`diff` compares two of them: mappings key by key, lists of named things
(pools, partitions, QoS, teams, users, clusters, file systems, reservations, queues) item by
item by their name, anything else as one value. Each :class:`Delta` carries its path in the
model and the blueprint key it comes from (:func:`blueprint_key`), whose change policies the
schema declares once (``x-estategen-change``, :data:`estategen.schema.patterns.CHANGE_POLICIES`):
:func:`policies` reads them from the JSON Schema. A key added to the schema with its policy is
planned without an edit here or in :mod:`estategen.plan`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

# what names an item of a list, in the order tried
ITEM_KEYS = ("name", "team")

# model field -> blueprint key where the model names a key otherwise (longest prefix wins; a
# model field under a renamed one follows it, so slurm.partitions[].overrides.grace_time is
# the blueprint's slurm.partitions[].grace_time)
MODEL_KEYS = {
    "kubernetes_clusters": "kubernetes.clusters",
    "kubernetes_clusters[].mig_strategy": "kubernetes.clusters[].device_plugin.mig_strategy",
    "kubernetes_clusters[].device_plugin_install": "kubernetes.clusters[].device_plugin.install",
    "node_pools[].switches": "node_pools[].network.switch",
    "node_pools[].blocks": "node_pools[].network.block",
    "node_pools[].host_expressions": "node_pools[].hosts",
    "node_pools[].nodes_min": "node_pools[].nodes.min",
    "node_pools[].nodes_max": "node_pools[].nodes.max",
    "node_pools[].health_checks": "node_pools[].health_check.checks",
    "node_pools[].site_cloud": "node_pools[].state",
    "slurm.partitions[].overrides": "slurm.partitions[]",
    "slurm.site": "slurm",
    "slurm.site.slurmctld_ports": "slurm.ports.slurmctld",
    "slurm.site.slurmd_port": "slurm.ports.slurmd",
    "slurm.site.select_type": "slurm.select.type",
    "slurm.site.select_parameters": "slurm.select.parameters",
    "slurm.site.job_completion": "slurm.job_completion.type",
    "slurm.site.job_completion_location": "slurm.job_completion.location",
    "observability.dcgm_exporter_port": "observability.dcgm_exporter.port",
    "observability.node_exporter_port": "observability.node_exporter.port",
    "observability.slurm_exporter_port": "observability.slurm_exporter.port",
    "storage[].storage_class": "storage[].kubernetes.storage_class",
    "storage[].class_clusters": "storage[].kubernetes.clusters",
    "storage[].instance": "storage[].kubernetes.instance",
    "storage[].region": "storage[].s3.region",
    "storage[].access_key_id": "storage[].s3.access_key_id",
    "storage[].secret_access_key": "storage[].s3.secret_access_key",
    "storage[].conn_auth": "storage[].beegfs.conn_auth",
    "name": "estate",
    "declared_gpu_models": "gpu_models",
}
# policies that say "look at the keys inside" rather than what a change needs
STRUCTURAL = frozenset({"per-key", "definition"})


@dataclass(frozen=True, slots=True)
class Delta:
    """One changed value: ``path`` in the model (a list item as ``[name]``), before and after
    (None where it did not exist)."""

    path: tuple[str, ...]
    before: Any
    after: Any

    @property
    def key(self) -> str:
        """The blueprint key of the change, e.g. ``slurm.partitions[].max_time``."""
        return blueprint_key(self.path)

    @property
    def policies(self) -> tuple[str, ...]:
        return policies(self.key)

    def item(self, depth: int = 0) -> str:
        """The name of the ``depth``-th list item on the path (``h100`` of ``node_pools[h100]``)."""
        names = [p[1:-1] for p in self.path if p.startswith("[")]
        return names[depth] if len(names) > depth else ""

    @property
    def added(self) -> bool:
        return self.before is None and self.after is not None

    @property
    def removed(self) -> bool:
        return self.after is None and self.before is not None


def diff(before: Any, after: Any, path: tuple[str, ...] = ()) -> Iterator[Delta]:
    """Every change from ``before`` to ``after``, leaves first where both are containers."""
    if before == after:
        return
    if (isinstance(before, Mapping) and isinstance(after, Mapping)) or (
        # a settings block that appears or goes (slurm.health_check, slurm.rest_api): each of
        # its keys says what it needs; a named item that appears or goes is one change
        (before is None or after is None)
        and not (path and path[-1].startswith("["))
        and isinstance(before if after is None else after, Mapping)
    ):
        before, after = before or {}, after or {}
        for key in [*before, *(k for k in after if k not in before)]:
            yield from diff(before.get(key), after.get(key), (*path, str(key)))
        return
    old, new = _named(before), _named(after)
    if old is not None and new is not None:
        for name in [*old, *(n for n in new if n not in old)]:
            yield from diff(old.get(name), new.get(name), (*path, f"[{name}]"))
        return
    yield Delta(path, before, after)


def _named(value: Any) -> dict[str, Any] | None:
    """A list of mappings that each carry the same name key, by that name; else None."""
    if not isinstance(value, list):
        return None
    if not value:
        return {}
    for key in ITEM_KEYS:
        if all(isinstance(v, Mapping) and isinstance(v.get(key), str) for v in value):
            names = {v[key]: v for v in value}
            if len(names) == len(value):
                return names
    return None


def model_key(path: tuple[str, ...]) -> str:
    """The model's key of a path: list items as ``[]``, gpu_models by name as ``[]``."""
    out = ""
    for i, part in enumerate(path):
        if part.startswith("[") or (i == 1 and path[0] == "gpu_models"):
            out += "[]"
        else:
            out += f".{part}" if out else part
    return out


def blueprint_key(path: tuple[str, ...]) -> str:
    """The blueprint key a model path comes from: renamed model fields follow
    :data:`MODEL_KEYS`; a derived field (a resolved default, a parsed version) is its nearest
    blueprint key above it."""
    key = model_key(path)
    parts = _split(key)
    for end in range(len(parts), 0, -1):
        prefix = "".join(parts[:end]).lstrip(".")
        if prefix in MODEL_KEYS:
            key = MODEL_KEYS[prefix] + "".join(parts[end:])
            break
    known = _keys()
    parts = []
    for part in _split(key):
        # a key of a free mapping (slurm.options.MaxJobCount, labels.tier) is its `.*`
        above = "".join(parts).lstrip(".")
        if "".join([*parts, part]).lstrip(".") not in known and f"{above}.*" in known:
            part = ".*"
        parts.append(part)
    for end in range(len(parts), 0, -1):
        prefix = "".join(parts[:end]).lstrip(".")
        if prefix in known:
            return prefix
    return ""


def named(path: tuple[str, ...]) -> str:
    """The blueprint key of a path with its items and free keys named:
    ``slurm.partitions[gpu].max_time``, ``slurm.options.MaxJobCount``."""
    key = blueprint_key(path)
    names = [p[1:-1] for p in path if p.startswith("[")]
    if path and path[0] == "gpu_models" and len(path) > 1:
        names = [path[1]]
    out = ""
    for part in _split(key):
        if part == "[]":
            out += f"[{names.pop(0)}]" if names else "[]"
        elif part == ".*":
            out += f".{path[-1]}"
        else:
            out += part
    return out.lstrip(".")


def _split(key: str) -> list[str]:
    """``a.b[].c`` -> ``['a', '.b', '[]', '.c']``."""
    return re.findall(r"\[\]|\.?[^.\[]+", key)


def policies(key: str) -> tuple[str, ...]:
    """What a change of blueprint ``key`` needs: its own policies, or, where it has only the
    structural ones (``per-key``: its parts say; ``definition``: its users say), the nearest
    key above it with an operational one; ``review`` when none has."""
    annotated = _keys()
    parts = _split(key)
    for end in range(len(parts), 0, -1):
        own = annotated.get("".join(parts[:end]).lstrip("."), ())
        operational = tuple(p for p in own if p not in STRUCTURAL)
        if operational:
            return operational
        if "definition" in own:
            return ("definition",)
    return ("review",)


def own_policies(key: str) -> tuple[str, ...]:
    """The policies the schema declares on ``key`` itself (none for a named item)."""
    return _keys().get(key, ())


@cache
def _keys() -> dict[str, tuple[str, ...]]:
    """Every blueprint key of the JSON Schema with its change policies.

    Read from the schema the package ships (``data/schema.json``, kept equal to
    :func:`estategen.schema.json_schema.json_schema` by a test): building that one loads the
    key docs with PyYAML's pure-Python loader.
    """
    import json

    from estategen.schema.json_schema import SHIPPED_SCHEMA, key_nodes
    from estategen.schema.patterns import CHANGE_KEYWORD

    schema = json.loads(SHIPPED_SCHEMA.read_bytes())
    return {path: tuple(node.get(CHANGE_KEYWORD) or ()) for path, node in key_nodes(schema)}


# what estate.json of an earlier render must say for its model to be compared (estate-v1 left
# out each pool's hosts, so hosts added or removed could not be told)
COMPARABLE = "estategen/estate-v2"


def recorded(content: bytes | None) -> dict[str, Any] | str:
    """The model an earlier render recorded in estate.json, or why it cannot be compared."""
    from estategen.readback import parse_json

    if content is None:
        return "the folder has no estate.json"
    try:
        data = parse_json(content)
    except (ValueError, RecursionError) as err:
        return f"estate.json is not JSON ({err})"
    if not isinstance(data, dict):
        return "estate.json is not an object"
    if data.get("schema") != COMPARABLE:
        return (
            f"estate.json is {data.get('schema')!r}, not {COMPARABLE!r} (written by an older "
            "estategen)"
        )
    return {k: v for k, v in data.items() if k != "schema"}
