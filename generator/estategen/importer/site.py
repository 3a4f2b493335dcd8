"""``estategen import``: the site's files read, mapped and written as one blueprint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from estategen.importer.accounts import Dump, _sacct, _teams
from estategen.importer.blueprint import _blueprint_text, _ordered_slurm
from estategen.importer.converters import _estate_name
from estategen.importer.files import _DEFAULT_RELEASE, _site_files
from estategen.importer.outcomes import Imported, _Run
from estategen.importer.parameters import _parameters, _power_saving, _tracked_gpu_types
from estategen.importer.partitions import _qos_list, _Site
from estategen.importer.pools import _leaf_switches, _nodes_and_partitions
from estategen.importer.settle import _compare_rendered, _settle
from estategen.model import DEBIAN_SLURM_BUILDS, DEFAULT_SLURM_SOURCE


def import_site(
    slurm_conf: str | Path,
    gres: str | Path | None = None,
    topology: str | Path | None = None,
    sacct: str | Path | None = None,
    slurm_version: str | None = None,
    site_root: str | Path | None = None,
) -> Imported:
    """Read the site's files and build the blueprint text; raises ConfSyntaxError on files
    it cannot read, and BlueprintInvalid if the blueprint it built does not validate."""
    run = _Run()
    root = Path(site_root) if site_root is not None else None
    conf, gres_conf, topo = _site_files(slurm_conf, gres, topology, slurm_version, run, root)
    doc: dict[str, Any] = {}
    slurm: dict[str, Any] = {}
    _parameters(conf, slurm, slurm_version or _DEFAULT_RELEASE, run)
    doc["estate"] = _estate_name(slurm.get("cluster_name"))
    doc["description"] = f"imported from {Path(slurm_conf).name} by estategen import"
    if slurm_version:
        doc["versions"] = {"slurm": slurm_version}
        _package_source(slurm, slurm_version, run)
    leaves = _leaf_switches(topo, conf.parameter("TopologyPlugin"), run) if topo else {}
    models: dict[str, dict[str, Any]] = {}
    site = _Site(
        accounting="accounting" in slurm,
        basic=slurm.get("scheduling", {}).get("priority_type") == "basic",
        memory_default=any(conf.parameter(k) for k in ("DefMemPerCPU", "DefMemPerNode")),
        release=slurm_version or _DEFAULT_RELEASE,
    )
    pools, partitions, teams, qos = _nodes_and_partitions(
        conf, gres_conf, leaves, models, run, site
    )
    if models:
        doc["gpu_models"] = list(models.values())
    dump = _sacct(Path(sacct), run, site.accounting) if sacct else Dump({}, set())
    qos |= dump.qos
    team_list = _teams(teams, dump.shares, run)
    if team_list:
        doc["identity"] = {"teams": team_list}
    doc["node_pools"] = pools
    _power_saving(conf, slurm, pools, run)
    if qos:
        slurm["qos"] = _qos_list(qos)
    slurm["partitions"] = partitions
    _tracked_gpu_types(slurm, pools, run)
    _nvml_packages(slurm, pools, run)
    doc["slurm"] = _ordered_slurm(slurm)
    findings = _settle(doc, run)
    if not findings:
        _compare_rendered(conf, doc, run)
    return Imported(
        _blueprint_text(doc, run, findings),
        tuple(run.outcomes),
        tuple(run.reviews),
        tuple(dict.fromkeys(run.budget.read)),
        findings,
    )


def _package_source(slurm: dict[str, Any], release: str, run: _Run) -> None:
    """slurm.conf does not say where the site's Slurm comes from: for a release the default
    package source does not install, the Debian release that installs it, said in a review;
    a release no Debian installs is left to validate's finding (slurm.packages)."""
    if DEBIAN_SLURM_BUILDS[DEFAULT_SLURM_SOURCE].release == release:
        return
    source = next((s for s, b in DEBIAN_SLURM_BUILDS.items() if b.release == release), None)
    if source is None:
        return
    slurm["packages"] = {"source": source}
    run.reviews.append(
        f"slurm.packages: slurm.conf does not say where Slurm comes from; import chose "
        f"{source}, which installs Slurm {release}: name your site's repository (source: "
        "site) if the nodes install it from there"
    )


def _nvml_packages(slurm: dict[str, Any], pools: list[dict[str, Any]], run: _Run) -> None:
    """A site whose nodes offer MIG instances runs a Slurm built with NVML, which finds them
    (Debian's packages are not): the blueprint says so, and validate then asks only for the
    repository the nodes install that Slurm from, instead of import taking the MIG layouts
    out. (An AutoDetect=nvml without MIG is refused with Debian's packages instead: the pool
    keeps its GPUs through gres.conf's device files.)"""
    mig = [p["name"] for p in pools if p.get("gpus", {}).get("mig")]
    if not mig or slurm.get("packages", {}).get("nvml"):
        return
    slurm["packages"] = {"source": "site", "nvml": True}
    run.reviews.append(
        f"slurm.packages: pools {', '.join(mig)} offer MIG instances, which a Slurm built with "
        "NVML finds (Debian's packages are not): set slurm.packages.apt_repository to the "
        "repository the nodes install Slurm from"
    )
