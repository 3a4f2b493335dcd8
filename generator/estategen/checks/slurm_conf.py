"""The Slurm that is installed and what slurm.conf may say: the package source and release,
the plugins in its build, times, slurm.options, and the network topology.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from estategen.checks.core import check
from estategen.errors import Finding, issue
from estategen.facts import NVIDIA_AUTODETECT_RELEASE, SLURM_APT_KEYRING, autodetects_nvml
from estategen.model import DEBIAN_SLURM_BUILDS, Estate, SlurmPackages, slurm_build, slurm_minutes
from estategen.schema.patterns import SLURM_VERSIONS
from estategen.slurm_facts import renders_power_saving
from estategen.slurm_keys import (
    RECORD_KEYS,
    REFUSED_IN_OPTIONS,
    Owner,
    documented_key,
    documented_releases,
    password_refusal,
    slurm_key,
)
from estategen.slurm_removed import ever_removed, removed_key, removed_plugin

# --- where the Slurm packages come from (slurm.packages) -------------------------------------


def _build_named(packages: SlurmPackages) -> str:
    """The Slurm a package source installs, as a finding names it."""
    build = slurm_build(packages)
    if build.release is None:
        return "the site's Slurm (slurm.packages.source site)"
    return f"Debian's slurm-wlm {build.release} (slurm.packages.source {packages.source})"


@check
def slurm_package_source(estate: Estate) -> Iterator[Finding]:
    """The package source installs the Slurm release the configuration is written for
    (versions.slurm), and a repository and what its build supports are said of a site source
    only: Debian's builds are known."""
    packages = estate.slurm.packages
    build = slurm_build(packages)
    if build.release is not None:
        given = (
            ("apt_repository", packages.apt_repository),
            ("apt_key_url", packages.apt_key_url),
            ("nvml", packages.nvml),
            ("jwt", packages.jwt),
        )
        for key, value in given:
            if value is not None:
                yield issue(
                    f"slurm.packages.{key}",
                    f"source {packages.source} installs Debian's own slurm-wlm {build.release}, "
                    f"whose build is known; {key} describes a site's repository: set source "
                    f"site, or remove {key}",
                )
    elif packages.apt_repository is None:
        yield issue(
            "slurm.packages.source",
            "source site installs Slurm from the site's repository: give apt_repository, its "
            "apt source line like 'deb [signed-by=/etc/apt/keyrings/slurm.asc] "
            "https://repo.example.org/slurm bookworm main'",
        )
    if (
        packages.apt_key_url
        and packages.apt_repository
        and f"signed-by={SLURM_APT_KEYRING}" not in packages.apt_repository
    ):
        yield issue(
            "slurm.packages.apt_repository",
            f"apt_key_url is saved as {SLURM_APT_KEYRING}, and apt trusts a key there only "
            f"for a source line that names it: write 'deb [signed-by={SLURM_APT_KEYRING}] ...'",
        )
    if not estate.slurm_pools:
        return  # no Slurm host installs the packages
    version = estate.versions.slurm
    if build.release is None:
        if not estate.versions.slurm_declared:
            yield issue(
                "slurm.packages.source",
                "source site installs the Slurm release its repository carries, which the "
                f"blueprint names: set versions.slurm (one of {', '.join(SLURM_VERSIONS)})",
            )
    elif version.text != build.release:
        others = [
            f"source {source} (Slurm {other.release})"
            for source, other in DEBIAN_SLURM_BUILDS.items()
            if other.release == version.text
        ]
        yield issue(
            "versions.slurm",
            f"slurm.packages.source {packages.source} installs Slurm {build.release}, not "
            f"{version.text}: set versions.slurm to {build.release!r}, "
            + "".join(f"use {other}, " for other in others)
            + f"or use source site with an apt_repository that carries Slurm {version.text}",
        )


@check
def slurm_build_has_plugins(estate: Estate) -> Iterator[Finding]:
    """What the rendered files load is in the Slurm the package source installs: gpu_nvml for
    gres.conf AutoDetect=nvml, auth_jwt.so for AuthAltTypes=auth/jwt. A hosted pool's slurmd
    runs in Slinky's image, not from these packages."""
    if not estate.slurm_pools:
        return
    packages = estate.slurm.packages
    build = slurm_build(packages)
    fix = "source site with the apt_repository of a Slurm built with"
    if not build.nvml:
        for pool in estate.slurm_pools:
            if pool.hosted or pool.gpus is None or not autodetects_nvml(pool):
                continue
            if pool.gpus.mig:
                key, what, other = "mig", "MIG instances", "give the pool whole GPUs"
                seen = "the pool's MIG devices"
            else:
                key, what = "autodetect", "the GPUs (gpus.autodetect nvml)"
                other = "remove gpus.autodetect (gres.conf then lists /dev/nvidia*)"
                seen = "the pool's GPUs"
            yield issue(
                f"{pool.path}.gpus.{key}",
                f"gres.conf finds {what} with NVML (AutoDetect=nvml), and "
                f"{_build_named(packages)} is built without Slurm's gpu_nvml plugin: slurmd "
                f"would not see {seen}. Use slurm.packages {fix} NVML (nvml: true), or {other}",
            )
    if estate.slurm.rest_api is not None and not build.jwt:
        debian = "".join(
            f"source {source} ({other.jwt_package or 'slurm-wlm'}, Slurm {other.release}), "
            for source, other in DEBIAN_SLURM_BUILDS.items()
            if other.jwt
        )
        yield issue(
            "slurm.rest_api",
            "the REST API sets AuthAltTypes=auth/jwt, which needs Slurm's auth_jwt.so, and "
            f'{_build_named(packages)} has none: every Slurm daemon would exit with "cannot '
            f'find auth plugin for auth/jwt". Use slurm.packages {debian}or {fix} libjwt '
            "(jwt: true), or remove slurm.rest_api",
        )


@check
def slurm_times_valid(estate: Estate) -> Iterator[Finding]:
    half_life = estate.slurm.scheduling.fairshare_half_life
    times = [("slurm.scheduling.fairshare_half_life", half_life)] if half_life else []
    times += [(f"{q.path}.max_time", q.max_time) for q in estate.slurm.qos if q.max_time]
    for part in estate.slurm.partitions:
        times.append((f"{part.path}.max_time", part.max_time))
        if part.default_time:
            times.append((f"{part.path}.default_time", part.default_time))
    for path, text in times:
        try:
            slurm_minutes(text)
        except ValueError as err:
            yield issue(path, f"{text!r} is not a valid Slurm time: {err}")
    yield from _half_life_usable(estate)
    for part in estate.slurm.partitions:
        try:
            limit, default = slurm_minutes(part.max_time), slurm_minutes(part.default_time or "0")
        except ValueError:
            continue
        if part.default_time and limit is not None and (default is None or default > limit):
            yield issue(
                f"{part.path}.default_time",
                f"default_time {part.default_time} is above max_time {part.max_time}",
            )


def _half_life_usable(estate: Estate) -> Iterator[Finding]:
    """slurmctld reads PriorityDecayHalfLife=UNLIMITED as about 136 years, and refuses 0
    unless PriorityUsageResetPeriod resets usage instead."""
    text = estate.slurm.scheduling.fairshare_half_life
    if text is None:
        return  # priority/basic: no half-life
    try:
        minutes = slurm_minutes(text)
    except ValueError:
        return  # reported as not a valid time
    resets = any(k.lower() == "priorityusageresetperiod" for k in estate.slurm.options)
    if minutes is None or (minutes == 0 and not resets):
        yield issue(
            "slurm.scheduling.fairshare_half_life",
            f"{text!r} is not a half-life slurmctld accepts: it misreads UNLIMITED, and "
            "refuses 0 unless slurm.options sets PriorityUsageResetPeriod; give a time "
            "such as 7-0",
        )


# Keys estategen renders only with power saving (a Slurm pool with cloud nodes), which
# slurm.options may set without it: ResumeTimeout also bounds `scontrol reboot` with
# RebootProgram (slurm.conf(5): "Nodes which reboot after this time frame will be marked DOWN")
OPTIONS_WITHOUT_POWER_SAVING = frozenset({"ResumeTimeout"})


@check
def slurm_options_not_owned(estate: Estate) -> Iterator[Finding]:
    """`slurm.options` may not set a key estategen renders, one that decides whom the daemons
    trust, or one that opens a node or partition record (estategen.slurm_keys); nor a password,
    which slurm.conf, readable by every user, cannot hold."""
    refused = {name.lower(): name for name in REFUSED_IN_OPTIONS}
    for key in estate.slurm.options:
        refusal = password_refusal(key)
        if refusal is not None:
            yield issue(f"slurm.options.{key}", refusal)
            continue
        name = refused.get(key.lower())
        if name in OPTIONS_WITHOUT_POWER_SAVING and not renders_power_saving(estate):
            value = estate.slurm.options[key]
            if not re.fullmatch(r"[0-9]{1,5}", value) or not 1 <= int(value) <= 65_533:
                yield issue(
                    f"slurm.options.{key}",
                    f"{value!r} is not a {name} slurmctld takes: give whole seconds, 1 to 65533",
                )
            continue
        if name is None:
            continue
        entry = slurm_key(name)
        if name in RECORD_KEYS:
            why = (
                f"{name} opens a record, not a parameter; estategen writes nodes and partitions "
                "from node_pools and slurm.partitions, and slurm.options holds parameters only"
            )
        elif entry is not None and entry.owner is Owner.RENDERED:
            why = (
                f"{name} is rendered by estategen from the blueprint; "
                "set it through the blueprint keys, not slurm.options"
            )
        else:
            why = (
                f"{name} is reserved: it decides whom the daemons trust or what the keys "
                "estategen renders mean, so slurm.options may not set it"
            )
        yield issue(f"slurm.options.{key}", why)


@check
def slurm_options_not_removed(estate: Estate) -> Iterator[Finding]:
    """`slurm.options` may not set a key Slurm removed by the release the blueprint targets:
    that slurmctld refuses the file (an unknown key, or fatal: ... removed)."""
    release = estate.versions.slurm.text
    for key in estate.slurm.options:
        removed = removed_key(key, release)
        if removed is None:
            continue
        instead = f"; use {removed.successor}" if removed.successor else "; delete it"
        yield issue(
            f"slurm.options.{key}",
            f"Slurm {removed.release} removed {removed.name}, and slurmctld {release} "
            f"(versions.slurm) refuses a slurm.conf that sets it{instead}",
        )


@check
def slurm_options_documented(estate: Estate) -> Iterator[Finding]:
    """A `slurm.options` key no recorded slurm.conf(5) documents: slurmctld stops at a key it
    does not know. An error up to the newest release recorded; after it, a warning, since a
    later release may have added the key."""
    release = estate.versions.slurm
    recorded = documented_releases()
    newest = recorded[-1]
    owned = {k.lower() for k in REFUSED_IN_OPTIONS}
    for key in estate.slurm.options:
        if documented_key(key) or ever_removed(key):
            continue  # a removed key is check/slurm-options-not-removed's
        if key.lower() in owned or password_refusal(key) is not None:
            continue  # check/slurm-options-not-owned refuses it, with its own reason
        later = release.at_least(newest) and release.text != newest
        yield issue(
            f"slurm.options.{key}",
            f"{key} is no slurm.conf key: slurm.conf(5) of {' and '.join(recorded)} does not "
            "list it, and slurmctld stops at a key it does not know ('Parsing error at "
            "unrecognized key'); check its spelling"
            + (f" (Slurm {release.text} may have added it)" if later else ""),
            level="warning" if later else "error",
        )


@check
def slurm_plugins_not_removed(estate: Estate) -> Iterator[Finding]:
    """A plugin Slurm removed by the release the blueprint targets: that slurmctld cannot
    load it and does not start (select/cons_res from 23.11)."""
    release = estate.versions.slurm.text
    gone = removed_plugin("SelectType", f"select/{estate.slurm.site.select_type}", release)
    if gone is not None:
        yield issue(
            "slurm.select.type",
            f"Slurm {gone.release} removed {gone.plugin}, and slurmctld {release} "
            f"(versions.slurm) cannot load it; use {gone.successor.removeprefix('select/')}, "
            "which reads the jobs' state and the same parameters",
        )


@check
def gpu_autodetect_release(estate: Estate) -> Iterator[Finding]:
    """gres.conf AutoDetect=nvidia needs Slurm's gpu/nvidia plugin, which came with 24.11
    (facts.NVIDIA_AUTODETECT_RELEASE): an older slurmd does not know the value and finds no
    GPUs, and the pool's gres.conf lines name no device files."""
    version = estate.versions.slurm
    if version.at_least(NVIDIA_AUTODETECT_RELEASE):
        return
    for pool in estate.slurm_pools:
        if pool.gpus is not None and pool.gpus.autodetect == "nvidia":
            yield issue(
                f"{pool.path}.gpus.autodetect",
                f"gres.conf AutoDetect=nvidia uses Slurm's gpu/nvidia plugin, which came with "
                f"Slurm {NVIDIA_AUTODETECT_RELEASE}; slurmd {version.text} (versions.slurm) "
                "logs 'unknown autodetect flag' and finds no GPUs, and gres.conf names no "
                f"device files for them. Set versions.slurm to {NVIDIA_AUTODETECT_RELEASE} or "
                "later, or use autodetect off (gres.conf lists /dev/nvidia*) or nvml",
            )


@check
def topology_version_gates(estate: Estate) -> Iterator[Finding]:
    """topology/block arrived in Slurm 23.11."""
    version = estate.versions.slurm
    for pool in estate.slurm_pools:
        if pool.blocks and not version.at_least("23.11"):
            yield issue(
                f"{pool.path}.network.block",
                f"NVLink blocks render topology/block, which needs Slurm 23.11 or newer; "
                f"versions.slurm is {version.text}",
            )
        if pool.switches and pool.blocks:
            yield issue(
                f"{pool.path}.network",
                "choose switch (topology/tree) or block (topology/block), not both",
            )
    kinds = {
        ("tree" if p.switches else "block") for p in estate.slurm_pools if p.switches or p.blocks
    }
    if len(kinds) > 1:
        yield issue(
            "node_pools",
            "pools mix switch and block topology; Slurm runs one topology plugin per cluster",
        )
    for pool in estate.kubernetes_pools:
        if pool.blocks:
            yield issue(f"{pool.path}.network.block", "NVLink blocks are a Slurm topology")


@check
def switches_cover_hosts(estate: Estate) -> Iterator[Finding]:
    """Nodes are spread evenly over the switches (or blocks) a pool lists."""
    for pool in estate.node_pools:
        for key, plural, names in (
            ("switch", "switches", pool.switches),
            ("block", "blocks", pool.blocks),
        ):
            if names and len(names) > len(pool.hosts):
                yield issue(
                    f"{pool.path}.network.{key}",
                    f"{len(names)} {plural} for {len(pool.hosts)} hosts; "
                    "each needs at least one host",
                )
