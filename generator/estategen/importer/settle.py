"""Validate and render the blueprint built: refuse the site settings behind a value validate
refuses, and compare the keys estategen renders with the site's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from estategen import slurmconf
from estategen.importer.blueprint import _blueprint_text
from estategen.importer.outcomes import _Run
from estategen.importer.tables import _DERIVED, PARAMETERS
from estategen.slurm_keys import REFUSED_IN_OPTIONS
from estategen.slurmconf import ConfFile

# Each pass of _settle refuses the settings behind one finding; a site has a handful.
MAX_SETTLE_PASSES = 200
_PATH_PART = re.compile(r"([^.\[\]]+)|\[([0-9]+)\]")
# mapping keys that say nothing when empty: the last value taken out takes the key with it
_EMPTY_IS_UNSET = {"sharing"}
# list keys whose items the sources name by their name, not their index
_NAMED_LISTS = {("node_pools",), ("slurm", "partitions"), ("slurm", "qos"), ("identity", "teams")}


def _settle(doc: dict[str, Any], run: _Run) -> tuple[str, ...]:
    """Validate the blueprint built; while validate refuses a value that site settings gave
    (run.sources), take the value out and refuse those settings with the finding, so that
    the blueprint written validates. What validate still refuses (a value import gave, not
    the site) is returned as ``key.path: message`` lines."""
    from estategen import load
    from estategen.errors import BlueprintInvalid
    from estategen.pipeline import validate_document

    for _ in range(MAX_SETTLE_PASSES):
        text = _blueprint_text(doc, _Run())
        try:
            validate_document(load.parse_blueprint(text.encode(), "<imported>"))
        except BlueprintInvalid as invalid:
            errors = [f for f in invalid.findings if f.level == "error"]
            if not any(_refuse_at(doc, finding.path, finding.message, run) for finding in errors):
                return tuple(f"{f.path}: {f.message}" for f in errors)
            continue
        return ()
    return ("the blueprint: more than {MAX_SETTLE_PASSES} values refused; validate it",)


def _refuse_at(doc: dict[str, Any], path: str, message: str, run: _Run) -> bool:
    """Take out the value at ``path`` (or the nearest key above it) that site settings gave,
    and refuse them with ``message``; False when no site setting gave it."""
    parts: list[str | int] = [
        name if name else int(index) for name, index in _PATH_PART.findall(path)
    ]
    for length in range(len(parts), 0, -1):
        named = _named_path(doc, parts[:length])
        settings = run.sources.pop(named or "", None) if named else None
        if not settings:
            continue
        _remove(doc, parts[:length])
        for setting in settings:
            run.withdraw(setting)
            run.refused(setting, f"{path}: {message}")
        return True
    return False


def _named_path(doc: Mapping[str, Any], parts: list[str | int]) -> str | None:
    """``parts`` as run.sources names them: node_pools[2] as node_pools[NAME]."""
    out = ""
    node: Any = doc
    keys: list[str] = []
    for part in parts:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
            node = node[part]
            name = node.get("name") if isinstance(node, dict) else None
            out += f"[{name}]" if tuple(keys) in _NAMED_LISTS and name else f"[{part}]"
            keys = []
            continue
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
        keys.append(part)
        out += f".{part}" if out else part
    return out


def _remove(doc: dict[str, Any], parts: list[str | int]) -> None:
    """Delete the value at ``parts``; a team taken out leaves the partitions that name it."""
    parent: Any = doc
    for part in parts[:-1]:
        parent = parent[part]
    last = parts[-1]
    removed = parent[last]
    del parent[last]
    if not parent and len(parts) > 1 and parts[-2] in _EMPTY_IS_UNSET:
        _remove(doc, parts[:-1])
    if parts[:2] == ["identity", "teams"] and len(parts) == 3 and isinstance(removed, dict):
        for part in doc.get("slurm", {}).get("partitions", []):
            for key in ("teams", "deny_accounts"):
                if removed["name"] in part.get(key, []):
                    part[key].remove(removed["name"])
                    if not part[key]:
                        del part[key]
        if not doc["identity"]["teams"]:
            del doc["identity"]


def _compare_rendered(conf: ConfFile, doc: dict[str, Any], run: _Run) -> None:
    """Keys estategen renders (or derives) that the table does not map: the site's value
    counts as mapped when the render writes the same, and is refused otherwise."""
    rendered = _render_slurm_conf(doc)
    ours = {s.name: s.value for s in rendered.parameters}
    owned = {k.lower() for k in REFUSED_IN_OPTIONS} | {k.lower() for k in _DERIVED}
    for setting in conf.parameters:
        if setting.name in PARAMETERS or setting.name not in owned:
            continue
        value = ours.get(setting.name)
        if value is not None and value.lower() == setting.value.lower():
            run.mapped(setting, "the same value estategen renders")
        elif value is None:
            run.refused(
                setting,
                "estategen writes this key only for features this blueprint does not use "
                "(or never), and slurm.options may not set it",
            )
        else:
            run.refused(setting, f"estategen renders {setting.key}={value}")


def _render_slurm_conf(doc: dict[str, Any]) -> ConfFile:
    """The parameters of the slurm.conf the blueprint renders (its record lines, one per pool
    and partition and as long as their hosts, are left out: only parameters are compared)."""
    from estategen import load
    from estategen.pipeline import validate_document
    from estategen.renderers.slurm import slurm_conf

    text = _blueprint_text(doc, _Run())
    validated = validate_document(load.parse_blueprint(text.encode(), "<imported>"))
    records = tuple(f"{kind}=" for kind in slurmconf.SLURM_RECORDS)
    rendered = slurm_conf(validated.estate).split("\n")
    parameters = "\n".join(line for line in rendered if not line.startswith(records))
    return slurmconf.parse_text(parameters, "<rendered>")
