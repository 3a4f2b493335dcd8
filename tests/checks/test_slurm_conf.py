"""Specification of the Slurm packages and release, times, slurm.options and topology
(estategen.checks.slurm_conf): a blueprint fragment in, a finding (or none) out.

Each fragment is merged into BASE (tests/checks/base.py) and ONE check runs on the estate.
"""

from __future__ import annotations

import json

import pytest
import yaml

from estategen import checks
from estategen.model import slurm_minutes, slurm_time

from .base import DUMPER, estate, merge, only, parse, run

# --- slurm_times_valid ---------------------------------------------------------------------------


def partition_times(max_time: str, default_time: str | None = None) -> str:
    default = f', default_time: "{default_time}"' if default_time else ""
    return f'slurm: {{partitions: [{{name: gpu, pools: [a100], max_time: "{max_time}"{default}}}]}}'


@pytest.mark.parametrize(
    ("max_time", "default_time"),
    [
        ("1:00:00", "60"),
        ("UNLIMITED", "INFINITE"),
    ],
)
def test_slurm_times_valid_passes_valid_times_with_default_within_max(
    max_time: str, default_time: str | None
) -> None:
    assert run(checks.slurm_times_valid, partition_times(max_time, default_time)) == []


def test_slurm_times_partition_max_time_longer_than_slurm_reads_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("24856-0"))
    only(
        found,
        "slurm.partitions[0].max_time",
        "'24856-0' is not a valid Slurm time: it is longer than the longest time Slurm reads, "
        "24855-03:13:00",
    )


def test_slurm_times_qos_max_time_longer_than_slurm_reads_is_refused() -> None:
    found = run(checks.slurm_times_valid, 'slurm: {qos: [{name: q, max_time: "35791394"}]}')
    only(found, "slurm.qos[0].max_time", "longer than the longest time Slurm reads")


@pytest.mark.parametrize("half_life", ["UNLIMITED", "INFINITE", "0", "0:0"])
def test_a_fairshare_half_life_slurmctld_misreads_or_refuses_is_refused(half_life: str) -> None:
    found = run(
        checks.slurm_times_valid, f'slurm: {{scheduling: {{fairshare_half_life: "{half_life}"}}}}'
    )
    only(found, "slurm.scheduling.fairshare_half_life", "not a half-life slurmctld accepts")


def test_a_zero_fairshare_half_life_with_a_usage_reset_period_passes() -> None:
    blueprint = (
        'slurm: {scheduling: {fairshare_half_life: "0"}, '
        "options: {PriorityUsageResetPeriod: MONTHLY}}"
    )
    assert run(checks.slurm_times_valid, blueprint) == []


def test_slurm_times_default_time_above_max_time_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("1:00:00", "90"))
    only(found, "slurm.partitions[0].default_time", "default_time 90 is above max_time 1:00:00")


def test_slurm_times_unlimited_default_under_a_finite_max_is_refused() -> None:
    found = run(checks.slurm_times_valid, partition_times("1-0", "UNLIMITED"))
    only(found, "slurm.partitions[0].default_time", "default_time UNLIMITED is above max_time")


def test_slurm_times_invalid_default_is_reported_once_not_compared() -> None:
    found = run(checks.slurm_times_valid, partition_times("2:00:00", "25000-0"))
    only(found, "slurm.partitions[0].default_time", "is not a valid Slurm time")


# --- slurm_minutes -------------------------------------------------------------------------------


# What slurmctld 22.05 shows (scontrol show partition) for each MaxTime; tests/
# test_slurm_engine.py holds the same table against the running daemon.
@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("0", 0),
        ("45", 45),
        ("00090", 90),
        ("90:00", 90),
        ("30:01", 31),
        ("0:600", 10),
        ("30:00:00", 1800),
        ("2:75:00", 195),
        ("0:0:99", 2),
        ("2-0", 2880),
        ("1-25", 2940),
        ("1-0:30", 1470),
        ("1-23:59:59", 1440 + 23 * 60 + 60),
        ("7-0:00:99", 7 * 1440 + 2),
        ("24855-3:13:00", 35_791_393),
        ("35791393", 35_791_393),
    ],
)
def test_slurm_minutes_reads_every_slurm_conf_format_as_slurm_does(
    text: str, minutes: int | None
) -> None:
    assert slurm_minutes(text) == minutes


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("UNLIMITED", "UNLIMITED"),
        ("0", "00:00:00"),
        ("90", "01:30:00"),
        ("7-0:00:99", "7-00:02:00"),
        ("1-25", "2-01:00:00"),
    ],
)
def test_slurm_time_is_written_as_scontrol_prints_it(text: str, shown: str) -> None:
    assert slurm_time(text) == shown


@pytest.mark.parametrize("text", ["24856-0", "35791394", "596524:0:0", "0:2147483581"])
def test_slurm_minutes_refuses_times_longer_than_slurm_reads(text: str) -> None:
    with pytest.raises(ValueError, match="longer than the longest time Slurm reads"):
        slurm_minutes(text)


def test_slurm_minutes_refuses_limits_beyond_what_slurm_stores() -> None:
    with pytest.raises(ValueError, match="longer than the longest time Slurm reads"):
        slurm_minutes("999999999999-0")


# --- slurm_options_not_owned ---------------------------------------------------------------------


def test_slurm_options_not_owned_passes_free_options() -> None:
    found = run(
        checks.slurm_options_not_owned,
        "slurm: {options: {MaxJobCount: 50000, SlurmctldTimeout: 120}}",
    )
    assert found == []


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("SlurmctldHost", "other", "SlurmctldHost is rendered by estategen from the blueprint"),
        ("SelectType", "select/linear", "SelectType is rendered by estategen from the blueprint"),
        ("Include", "/etc/x.conf", "Include is reserved"),
        ("AuthInfo", "socket=/x", "AuthInfo is reserved: it decides whom the daemons trust"),
        ("NodeSet", "gpus", "NodeSet opens a record, not a parameter"),
    ],
)
def test_slurm_options_owned_key_is_refused(key: str, value: str, why: str) -> None:
    found = run(checks.slurm_options_not_owned, f"slurm: {{options: {{{key}: {value}}}}}")
    only(found, f"slurm.options.{key}", why)


def test_slurm_options_owned_key_is_matched_case_insensitively() -> None:
    found = run(checks.slurm_options_not_owned, "slurm: {options: {SLURMCTLDHOST: other}}")
    only(found, "slurm.options.SLURMCTLDHOST", "SlurmctldHost is rendered by estategen")


# --- slurm_options_not_removed -------------------------------------------------------------------


def test_slurm_options_refuse_a_key_the_target_release_removed() -> None:
    found = run(checks.slurm_options_not_removed, "slurm: {options: {CacheGroups: 0}}")
    only(found, "slurm.options.CacheGroups", "Slurm 21.08 removed CacheGroups")


def test_slurm_options_keep_a_key_the_target_release_still_reads() -> None:
    """SchedulerAuth is refused from 24.05 on."""
    fragment = "slurm: {options: {SchedulerAuth: x}}"
    assert run(checks.slurm_options_not_removed, 'versions: {slurm: "23.11"}\n' + fragment) == []
    found = run(checks.slurm_options_not_removed, fragment)  # BASE targets 22.05
    assert found == []
    found = run(
        checks.slurm_options_not_removed,
        'versions: {slurm: "24.11"}\n'
        "slurm: {packages: {source: debian-13}, options: {SchedulerAuth: x}}",
    )
    only(found, "slurm.options.SchedulerAuth", "Slurm 24.05 removed SchedulerAuth")


# --- slurm_options_documented --------------------------------------------------------------------


def test_an_option_no_slurm_conf_page_lists_is_refused() -> None:
    """slurmctld 22.05 and 24.11 stop at a key they do not know ("Parsing error at
    unrecognized key", tests/test_slurm_conf_keys.py shows it on the installed one)."""
    found = run(checks.slurm_options_documented, "slurm: {options: {TOKEN: abc}}")
    only(found, "slurm.options.TOKEN", "TOKEN is no slurm.conf key")
    assert found[0].level == "error"


def test_documented_options_pass_in_any_case_and_removed_ones_are_left_to_their_check() -> None:
    """SchedulerAuth is on no page since 21.08, yet read until 24.05 removed it."""
    fragment = (
        "slurm: {options: {TREEWIDTH: '16', LaunchType: launch/slurm, CacheGroups: 0, "
        "SchedulerAuth: x}}"
    )
    assert run(checks.slurm_options_documented, fragment) == []


def test_an_unlisted_option_for_a_release_after_the_recorded_ones_is_a_warning() -> None:
    found = run(
        checks.slurm_options_documented,
        'versions: {slurm: "25.11"}\n'
        "slurm: {packages: {source: site, apt_repository: 'deb https://r.example.org/s trixie "
        "main'}, options: {NewKnob: '1'}}",
    )
    only(found, "slurm.options.NewKnob", "Slurm 25.11 may have added it", level="warning")


# --- slurm_plugins_not_removed -------------------------------------------------------------------


def test_select_cons_res_is_refused_from_the_release_that_removed_it() -> None:
    """Slurm's NEWS, 23.11.0rc1: "Removed select/cons_res"; Debian 13's 24.11 ships only
    select_cons_tres.so and select_linear.so."""
    fragment = "slurm: {{packages: {{source: {source}}}, select: {{type: cons_res}}}}"
    assert run(checks.slurm_plugins_not_removed, fragment.format(source="debian-12")) == []
    found = run(
        checks.slurm_plugins_not_removed,
        'versions: {slurm: "24.11"}\n' + fragment.format(source="debian-13"),
    )
    only(found, "slurm.select.type", "Slurm 23.11 removed select/cons_res")
    assert "use cons_tres" in found[0].message


def test_select_cons_tres_and_linear_stay_on_every_release() -> None:
    for select in ("cons_tres", "linear"):
        fragment = (
            'versions: {slurm: "24.11"}\n'
            f"slurm: {{packages: {{source: debian-13}}, select: {{type: {select}}}}}"
        )
        assert run(checks.slurm_plugins_not_removed, fragment) == []


# --- gpu_autodetect_release ----------------------------------------------------------------------


def nvidia_pool(slurm: str) -> str:
    return f"""
        versions: {{slurm: "{slurm}"}}
        node_pools:
          - {{name: a, scheduler: slurm, hosts: "a[1-2]",
             gpus: {{model: h100-sxm-80gb, count: 8, gres_type: h100, autodetect: nvidia}}}}
    """


@pytest.mark.parametrize("slurm", ["24.11", "25.05", "26.05"])
def test_gpu_autodetect_release_passes_nvidia_from_slurm_24_11(slurm: str) -> None:
    assert run(checks.gpu_autodetect_release, nvidia_pool(slurm)) == []


def test_gpu_autodetect_nvidia_before_slurm_24_11_is_refused() -> None:
    """gres.conf(5) of slurm-24-11-5-1, AutoDetect nvidia: "Added in Slurm 24.11"."""
    found = run(checks.gpu_autodetect_release, nvidia_pool("24.05"))
    finding = only(found, "node_pools[0].gpus.autodetect", "came with Slurm 24.11")
    assert "slurmd 24.05 (versions.slurm)" in finding.message


# --- topology_version_gates ----------------------------------------------------------------------


def topology(network_a: str, network_b: str = "{}", slurm: str = "23.11") -> str:
    return f"""
        versions: {{slurm: "{slurm}"}}
        node_pools:
          - {{name: a, scheduler: slurm, hosts: "a[1-4]", network: {network_a}}}
          - {{name: b, scheduler: slurm, hosts: "b[1-4]", network: {network_b}}}
    """


@pytest.mark.parametrize(
    "fragment",
    [
        topology('{block: "nvl[1-2]"}', '{block: "nvl[3-4]"}'),
        topology('{switch: "leaf[1-2]"}', '{switch: "leaf3"}', slurm="22.05"),
    ],
    ids=["blocks-on-23.11", "switches-on-22.05"],
)
def test_topology_version_gates_passes_one_plugin_on_a_capable_slurm(fragment: str) -> None:
    assert run(checks.topology_version_gates, fragment) == []


def test_topology_blocks_before_slurm_23_11_are_refused() -> None:
    found = run(checks.topology_version_gates, topology('{block: "nvl[1-2]"}', slurm="23.02"))
    only(
        found, "node_pools[0].network.block", "needs Slurm 23.11 or newer; versions.slurm is 23.02"
    )


def test_topology_switch_and_block_in_one_pool_are_refused() -> None:
    found = run(checks.topology_version_gates, topology('{switch: leaf1, block: "nvl[1-2]"}'))
    only(found, "node_pools[0].network", "choose switch (topology/tree) or block")


def test_topology_pools_mixing_switch_and_block_are_refused() -> None:
    found = run(checks.topology_version_gates, topology("{switch: leaf1}", "{block: nvl1}"))
    only(found, "node_pools", "Slurm runs one topology plugin per cluster")


def test_topology_blocks_on_a_kubernetes_pool_are_refused() -> None:
    found = run(
        checks.topology_version_gates,
        """
        node_pools:
          - {name: k, scheduler: kubernetes, cluster: lab-k8s, hosts: n1, network: {block: nvl1}}
        """,
    )
    only(found, "node_pools[0].network.block", "NVLink blocks are a Slurm topology")


# --- switches_cover_hosts ------------------------------------------------------------------------


def test_switches_cover_hosts_passes_one_switch_per_host() -> None:
    assert run(checks.switches_cover_hosts, topology('{switch: "leaf[1-4]"}')) == []


def test_switches_cover_hosts_more_switches_than_hosts_are_refused() -> None:
    found = run(checks.switches_cover_hosts, topology('{switch: "leaf[1-5]"}'))
    only(found, "node_pools[0].network.switch", "5 switches for 4 hosts; each needs at least")


def test_switches_cover_hosts_more_blocks_than_hosts_are_refused() -> None:
    found = run(checks.switches_cover_hosts, topology("{}", '{block: "nvl[1-6]"}'))
    only(found, "node_pools[1].network.block", "6 blocks for 4 hosts; each needs at least")


# --- slurm_package_source ------------------------------------------------------------------------


SITE_REPOSITORY = (
    "deb [signed-by=/etc/apt/keyrings/slurm.asc] https://repo.example.org/slurm bookworm main"
)


def packages(source: str, slurm: str | None = None, **keys: object) -> str:
    """A fragment naming the package source, versions.slurm (None: left to the source), and
    keys of slurm.packages."""
    given = "".join(f", {key}: {json.dumps(value)}" for key, value in keys.items())
    version = f'"{slurm}"' if slurm else "~"
    return f"versions: {{slurm: {version}}}\nslurm: {{packages: {{source: {source}{given}}}}}\n"


@pytest.mark.parametrize(("source", "release"), [("debian-12", "22.05"), ("debian-13", "24.11")])
def test_versions_slurm_defaults_to_the_release_debian_ships(source: str, release: str) -> None:
    assert estate(packages(source)).versions.slurm.text == release
    assert run(checks.slurm_package_source, packages(source)) == []


def test_the_default_source_is_debian_12_and_its_22_05() -> None:
    assert estate("versions: {slurm: ~}").slurm.packages.source == "debian-12"
    assert estate("versions: {slurm: ~}").versions.slurm.text == "22.05"


@pytest.mark.parametrize(
    ("source", "slurm", "fixes"),
    [
        (
            "debian-12",
            "23.11",
            [
                "set versions.slurm to '22.05'",
                "source site with an apt_repository that carries Slurm 23.11",
            ],
        ),
        (
            "debian-12",
            "24.11",
            ["set versions.slurm to '22.05'", "use source debian-13 (Slurm 24.11)"],
        ),
        (
            "debian-13",
            "22.05",
            ["set versions.slurm to '24.11'", "use source debian-12 (Slurm 22.05)"],
        ),
    ],
)
def test_a_release_the_debian_source_does_not_install_is_refused_with_the_fixes(
    source: str, slurm: str, fixes: list[str]
) -> None:
    found = run(checks.slurm_package_source, packages(source, slurm))
    finding = only(found, "versions.slurm", f"source {source} installs Slurm")
    for fix in fixes:
        assert fix in finding.message, finding.message


def test_a_site_repository_installs_the_release_versions_slurm_names() -> None:
    fragment = packages("site", "25.11", apt_repository=SITE_REPOSITORY)
    assert run(checks.slurm_package_source, fragment) == []


def test_a_site_source_needs_its_repository_line() -> None:
    found = run(checks.slurm_package_source, packages("site", "23.11"))
    only(found, "slurm.packages.source", "give apt_repository")


def test_a_site_source_needs_versions_slurm() -> None:
    found = run(checks.slurm_package_source, packages("site", apt_repository=SITE_REPOSITORY))
    only(found, "slurm.packages.source", "set versions.slurm")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("apt_repository", SITE_REPOSITORY),
        ("apt_key_url", "https://repo.example.org/slurm/key.asc"),
        ("nvml", True),
        ("jwt", False),
    ],
)
def test_repository_keys_with_a_debian_source_are_refused(key: str, value: object) -> None:
    found = run(checks.slurm_package_source, packages("debian-13", **{key: value}))
    only(found, f"slurm.packages.{key}", "set source site, or remove")


def test_a_signing_key_needs_a_source_line_that_names_where_it_is_saved() -> None:
    fragment = packages(
        "site",
        "23.11",
        apt_repository="deb https://repo.example.org/slurm bookworm main",
        apt_key_url="https://repo.example.org/slurm/key.asc",
    )
    found = run(checks.slurm_package_source, fragment)
    only(found, "slurm.packages.apt_repository", "signed-by=/etc/apt/keyrings/slurm.asc")


def test_no_release_is_checked_without_slurm_pools() -> None:
    fragment = """
        versions: {slurm: "25.11"}
        node_pools:
          - {name: l4-serve, scheduler: kubernetes, cluster: lab-k8s, hosts: "lab-k8s-[01-02]"}
    """
    assert run(checks.slurm_package_source, fragment) == []


# --- slurm_build_has_plugins ---------------------------------------------------------------------


MIG_POOL = """\
node_pools:
  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]",
     gpus: {model: a100-sxm-80gb, count: 4, mig: ["3g.40gb", "3g.40gb"]}}
"""


NVML_POOL = """\
node_pools:
  - {name: a100, scheduler: slurm, hosts: "lab-gpu-[01-02]",
     gpus: {model: a100-sxm-80gb, count: 4, autodetect: nvml}}
"""


REST_API = "slurm: {rest_api: {host: lab-ctl, jwt_key: {secret: slurm_jwt}}}\n"


def test_a_mig_pool_on_debian_packages_is_refused_at_its_mig_key() -> None:
    found = run(checks.slurm_build_has_plugins, MIG_POOL)
    finding = only(found, "node_pools[0].gpus.mig", "without Slurm's gpu_nvml plugin")
    assert "Debian's slurm-wlm 22.05" in finding.message
    assert "source site" in finding.message and "nvml: true" in finding.message


def test_gpus_autodetect_nvml_on_debian_packages_is_refused() -> None:
    found = run(checks.slurm_build_has_plugins, NVML_POOL + packages("debian-13"))
    finding = only(found, "node_pools[0].gpus.autodetect", "AutoDetect=nvml")
    assert "remove gpus.autodetect" in finding.message


@pytest.mark.parametrize("pool", [MIG_POOL, NVML_POOL], ids=["mig", "autodetect"])
def test_a_site_build_with_nvml_runs_nvml_pools(pool: str) -> None:
    site = packages("site", "23.11", apt_repository=SITE_REPOSITORY, nvml=True)
    assert run(checks.slurm_build_has_plugins, pool + site) == []
    without = packages("site", "23.11", apt_repository=SITE_REPOSITORY)
    assert len(run(checks.slurm_build_has_plugins, pool + without)) == 1


def test_a_hosted_pool_finds_gpus_in_slinkys_image_not_in_the_packages() -> None:
    fragment = """
        node_pools:
          - {name: a100, scheduler: slurm, cluster: lab-k8s, nodes: {max: 2},
             gpus: {model: a100-sxm-80gb, count: 4, autodetect: nvml}}
    """
    assert run(checks.slurm_build_has_plugins, fragment) == []


def test_the_rest_api_on_debian_12_packages_is_refused_with_the_sources_that_have_jwt() -> None:
    found = run(checks.slurm_build_has_plugins, REST_API)
    finding = only(found, "slurm.rest_api", "needs Slurm's auth_jwt.so")
    assert "source debian-13 (slurm-wlm-jwt-plugin, Slurm 24.11)" in finding.message
    assert "jwt: true" in finding.message


@pytest.mark.parametrize(
    "source",
    [packages("debian-13"), packages("site", "23.11", apt_repository=SITE_REPOSITORY, jwt=True)],
    ids=["debian-13", "site-with-jwt"],
)
def test_the_rest_api_runs_on_a_build_with_auth_jwt(source: str) -> None:
    merged = merge(parse(source).data, parse(REST_API).data)
    fragment = yaml.dump(merged, Dumper=DUMPER, sort_keys=False)
    assert run(checks.slurm_build_has_plugins, fragment) == []
