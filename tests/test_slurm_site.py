"""A site's own Slurm settings: a blueprint fragment in, a slurm.conf fact out.

Real clusters run their own daemon paths, ports, RealMemory, select and task plugins,
accounting TRES and partition limits. Each key here replaces one of estategen's choices; an
estate that sets none renders as before (tests/golden). The last test starts a real
slurmctld and slurmd on a blueprint using every override at once and reads the values back
from `scontrol show config|partition|node`.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from estategen.errors import BlueprintInvalid, Finding
from estategen.load import parse_blueprint
from estategen.pipeline import Validated, validate_document
from estategen.plan.keys import model_changes
from estategen.render import render
from estategen.renderers.estate_json import estate_data
from estategen.slurm_keys import REFUSED_IN_OPTIONS, ChangePolicy, change_for

from mariadb import have_mariadb
from slurmlab import (
    Dbd,
    SlurmLab,
    fake_nvidia_driver,
    free_port,
    have_slurm,
    installed_slurm_at_least,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    machine_cpus,
    machine_shape,
    render_blueprint,
    set_keys,
)

BASE = """\
estate: t
versions: {slurm: "23.11"}
identity:
  users: [{name: alice, uid: 10001}]
  teams: [{name: vision, gid: 20001, members: [alice]}, {name: nlp, gid: 20002, members: []}]
node_pools:
  - name: h100
    scheduler: slurm
    hosts: gpu-[01-02]
    cpu: {sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    gpus: {model: h100-sxm-80gb, count: 8}
    features: [ib]
slurm:
  controllers: [ctl-01]
  packages:
    source: site
    apt_repository: "deb https://slurm.example.org/debian bookworm main"
    nvml: true
    jwt: true
  accounting:
    host: dbd
    database: {host: db, password: {secret: db_pw}}
  qos: [{name: normal}, {name: high}]
  partitions: [{name: gpu, pools: [h100], default: true}]
"""


def _merge(base: object, patch: object) -> object:
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return patch
    merged = dict(base)
    for key, value in patch.items():
        merged[key] = _merge(merged[key], value) if key in merged else value
    return merged


def blueprint(fragment: str = "") -> str:
    """BASE with the fragment merged in (mappings key by key, lists whole)."""
    data = _merge(yaml.safe_load(BASE), yaml.safe_load(textwrap.dedent(fragment)) or {})
    return yaml.safe_dump(data, sort_keys=False)


def validated(fragment: str = "") -> Validated:
    return validate_document(parse_blueprint(blueprint(fragment).encode(), "t.yaml"))


def errors(fragment: str) -> list[Finding]:
    try:
        findings = validated(fragment).findings
    except BlueprintInvalid as invalid:
        findings = invalid.findings
    return [f for f in findings if f.level == "error"]


def files(fragment: str = "") -> dict[str, str]:
    return {p: f.content.decode() for p, f in render(validated(fragment).estate).items()}


def params(fragment: str = "") -> dict[str, str]:
    """slurm.conf's parameter lines (not nodes or partitions) as key -> value."""
    out = {}
    for line in files(fragment)["slurm/slurm.conf"].splitlines():
        if line and not line.startswith(("#", "NodeName=", "PartitionName=")):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def record(fragment: str, kind: str) -> dict[str, str]:
    """The first NodeName or PartitionName line, as key -> value."""
    conf = files(fragment)["slurm/slurm.conf"]
    line = next(line for line in conf.splitlines() if line.startswith(f"{kind}="))
    return dict(field.split("=", 1) for field in line.split())


# --- estategen's choices stay the defaults -------------------------------------------------


def test_without_site_keys_slurm_conf_keeps_estategens_choices() -> None:
    conf = params()
    assert conf["StateSaveLocation"] == "/var/spool/slurmctld"
    assert conf["SlurmdSpoolDir"] == "/var/spool/slurmd"
    assert (conf["SlurmctldPort"], conf["SlurmdPort"]) == ("6817", "6818")
    assert "SlurmdUser" not in conf
    assert conf["ReturnToService"] == "2"
    assert (conf["SelectType"], conf["SelectTypeParameters"]) == (
        "select/cons_tres",
        "CR_Core_Memory",
    )
    assert conf["TaskPlugin"] == "task/cgroup,task/affinity"
    assert conf["JobAcctGatherType"] == "jobacct_gather/cgroup"
    assert conf["PrologFlags"] == "Contain"
    assert conf["AccountingStorageEnforce"] == "associations,limits,qos,safe"
    assert conf["AccountingStorageTRES"] == "gres/gpu,gres/gpu:h100-sxm-80gb"
    assert conf["SchedulerParameters"].startswith("bf_continue,bf_interval=30,")
    node = record("", "NodeName")
    assert node["RealMemory"] == str(2048 * 1024 - int(2048 * 1024 * 0.05))
    assert node["Feature"] == "ib,h100-sxm-80gb"
    assert node["Gres"] == "gpu:h100-sxm-80gb:8"


# --- daemon paths, ports and users ---------------------------------------------------------


def test_daemon_paths_move_in_slurm_conf_and_in_the_roles_folders() -> None:
    fragment = """
    slurm:
      paths:
        state_save_location: /srv/slurm/state
        slurmd_spool_dir: /srv/slurm/spool
        slurmctld_pid_file: /run/slurm/slurmctld.pid
        slurmd_pid_file: /run/slurmd.pid
        slurmctld_log_file: /srv/slurm/log/slurmctld.log
        slurmd_log_file: /var/log/slurmd.log
    """
    conf = params(fragment)
    assert conf["StateSaveLocation"] == "/srv/slurm/state"
    assert conf["SlurmdSpoolDir"] == "/srv/slurm/spool"
    assert conf["SlurmctldPidFile"] == "/run/slurm/slurmctld.pid"
    assert conf["SlurmctldLogFile"] == "/srv/slurm/log/slurmctld.log"
    assert conf["SlurmdLogFile"] == "/var/log/slurmd.log"
    variables = yaml.safe_load(files(fragment)["ansible/group_vars/all/estate.yml"])
    # /run and /var/log stay the system's: the roles create only the daemons' own folders
    assert variables["slurm_controller_folders"] == [
        "/srv/slurm/state",
        "/srv/slurm/log",
        "/run/slurm",
    ]
    assert variables["slurm_compute_folders"] == ["/srv/slurm/spool"]


def test_the_roles_create_exactly_the_folders_their_variables_name() -> None:
    roles = Path(__file__).parent.parent / "playbooks" / "roles"
    controller = (roles / "slurm_controller" / "tasks" / "main.yml").read_text()
    compute = (roles / "slurm_compute" / "tasks" / "main.yml").read_text()
    assert 'loop: "{{ slurm_controller_folders }}"' in controller
    assert 'loop: "{{ slurm_compute_folders }}"' in compute
    assert 'owner: "{{ slurm_slurmd_user }}"' in compute
    for tasks in (controller, compute):
        assert "/var/spool/slurm" not in tasks and "/var/log/slurm" not in tasks


def test_default_folders_are_debians() -> None:
    variables = yaml.safe_load(files()["ansible/group_vars/all/estate.yml"])
    assert variables["slurm_controller_folders"] == ["/var/spool/slurmctld", "/var/log/slurm"]
    assert variables["slurm_compute_folders"] == ["/var/spool/slurmd", "/var/log/slurm"]
    assert variables["slurm_slurmd_user"] == "root"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("/var/log", "is a system folder"),
        ("/srv/../etc/slurm", "absolute path like /var/spool/slurmctld"),
        ("relative/state", "absolute path like /var/spool/slurmctld"),
        ("/srv/state/", "absolute path like /var/spool/slurmctld"),
    ],
)
def test_a_daemon_path_must_be_a_plain_folder_below_the_system_ones(value: str, text: str) -> None:
    (found,) = errors(f"slurm: {{paths: {{state_save_location: '{value}'}}}}")
    assert found.path == "slurm.paths.state_save_location"
    assert text in found.message


def test_the_controller_alert_points_at_the_blueprints_log_file() -> None:
    from estategen.prometheus_rules import observability_rules

    estate = validated("slurm: {paths: {slurmctld_log_file: /srv/log/ctld.log}}").estate
    text = yaml.safe_dump(observability_rules(estate))
    assert "/srv/log/ctld.log" in text
    assert "/var/log/slurm/slurmctld.log" not in text


def test_ports_and_slurmd_user_are_the_blueprints() -> None:
    conf = params("slurm: {ports: {slurmctld: '7001-7004', slurmd: 7010}, slurmd_user: slurm}")
    assert (conf["SlurmctldPort"], conf["SlurmdPort"]) == ("7001-7004", "7010")
    assert conf["SlurmdUser"] == "slurm"
    assert params("slurm: {ports: {slurmctld: 7001}}")["SlurmctldPort"] == "7001"


@pytest.mark.parametrize("value", ["'7004-7001'", "'7000-7100'", "0", "'6817-'", "70000"])
def test_a_slurmctld_port_range_slurmctld_would_refuse_is_an_error(value: str) -> None:
    (found,) = errors(f"slurm: {{ports: {{slurmctld: {value}}}}}")
    assert found.path == "slurm.ports.slurmctld"
    assert "6817-6820" in found.message


def test_the_report_warns_of_an_exporter_on_the_blueprints_slurmd_port() -> None:
    from estategen.capacity import _observability

    moved = validated("slurm: {ports: {slurmd: 9100}}").estate
    (warning,) = list(_observability(moved))
    assert "node exporter and slurmd both listen on port 9100" in warning.message
    assert list(_observability(validated().estate)) == []


# --- nodes: RealMemory, features, GRES type names ------------------------------------------


def test_exact_real_memory_replaces_the_reserve_and_the_defaults_follow() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    fragment = yaml.safe_dump({"node_pools": [{**pool, "real_memory_mib": 2_000_000}]})
    assert record(fragment, "NodeName")["RealMemory"] == "2000000"
    part = record(fragment, "PartitionName")
    assert part["DefMemPerCPU"] == str(2_000_000 // 224)
    assert part["DefMemPerGPU"] == str(2_000_000 // 8)


def test_without_the_gpu_feature_nodes_carry_only_their_own_features() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"]["feature"] = False
    assert record(yaml.safe_dump({"node_pools": [pool]}), "NodeName")["Feature"] == "ib"
    pool["features"] = []
    assert "Feature" not in record(yaml.safe_dump({"node_pools": [pool]}), "NodeName")


def test_a_site_gres_type_names_the_gpus_everywhere_slurm_counts_them() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"]["gres_type"] = "GH100_sxm"
    fragment = yaml.safe_dump({"node_pools": [pool]})
    out = files(fragment)
    node = record(fragment, "NodeName")
    assert node["Gres"] == "gpu:GH100_sxm:8"
    assert node["Feature"] == "ib,h100-sxm-80gb"
    assert "Name=gpu Type=GH100_sxm File=/dev/nvidia[0-7]" in out["slurm/gres.conf"]
    assert params(fragment)["AccountingStorageTRES"] == "gres/gpu,gres/gpu:GH100_sxm"
    assert "GRES/gpu:GH100_sxm=20" in record(fragment, "PartitionName")["TRESBillingWeights"]


def test_untyped_gpus_are_counted_as_gres_gpu_alone() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"]["typed"] = False
    fragment = yaml.safe_dump({"node_pools": [pool]})
    assert errors(fragment) == []
    node = record(fragment, "NodeName")
    assert node["Gres"] == "gpu:8"
    assert node["Feature"] == "ib,h100-sxm-80gb"
    gres = files(fragment)["slurm/gres.conf"]
    assert "NodeName=gpu-[01-02] AutoDetect=off Name=gpu File=/dev/nvidia[0-7]" in gres
    assert "Type=" not in gres
    assert params(fragment)["AccountingStorageTRES"] == "gres/gpu"
    weights = record(fragment, "PartitionName")["TRESBillingWeights"]
    assert weights == "CPU=1.0,Mem=0.25G,GRES/gpu=20"


@pytest.mark.parametrize(
    ("gpus", "path"),
    [
        ({"gres_type": "GH100"}, "node_pools[0].gpus.gres_type"),
        ({"model": "a100-sxm-80gb", "mig": ["1g.10gb"]}, "node_pools[0].gpus.mig"),
    ],
)
def test_untyped_gpus_name_no_type(gpus: dict[str, object], path: str) -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"].update(gpus, typed=False)
    (found,) = errors(yaml.safe_dump({"node_pools": [pool]}))
    assert found.path == path
    assert "without a type" in found.message


def test_untyped_and_typed_gpus_share_no_billed_partition() -> None:
    base = yaml.safe_load(BASE)["node_pools"][0]
    untyped = {**base, "name": "old", "hosts": "old-[01-02]"}
    untyped["gpus"] = {**base["gpus"], "typed": False}
    fragment = yaml.safe_dump(
        {
            "node_pools": [base, untyped],
            "slurm": {"partitions": [{"name": "gpu", "pools": ["h100", "old"]}]},
        }
    )
    (found,) = errors(fragment)
    assert found.path == "slurm.partitions[0].pools"
    assert "typed GPU pools (h100)" in found.message
    apart = yaml.safe_dump(
        {
            "node_pools": [base, untyped],
            "slurm": {
                "partitions": [{"name": "gpu", "pools": ["h100"]}, {"name": "o", "pools": ["old"]}]
            },
        }
    )
    assert errors(apart) == []


def test_nvml_autodetect_lets_slurmd_find_the_gpus() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"]["autodetect"] = "nvml"
    gres = files(yaml.safe_dump({"node_pools": [pool]}))["slurm/gres.conf"]
    lines = [line for line in gres.splitlines() if line.startswith("NodeName=")]
    assert lines == [
        "NodeName=gpu-[01-02] AutoDetect=nvml",
        "NodeName=gpu-[01-02] Name=gpu Type=h100-sxm-80gb Count=8",
    ]


def test_mig_pools_cannot_turn_nvml_off() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"].update(mig=["3g.40gb", "3g.40gb"], autodetect="off")
    (found,) = errors(yaml.safe_dump({"node_pools": [pool]}))
    assert found.path == "node_pools[0].gpus.autodetect"
    assert "found by NVML only" in found.message


def nvidia_pool(**gpus: object) -> dict[str, object]:
    """BASE's pool with gpus.autodetect nvidia and a GRES type the driver's name holds."""
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"].update(autodetect="nvidia", gres_type="h100", **gpus)
    return pool


def test_nvidia_autodetect_gives_the_pool_its_own_line_and_no_device_files() -> None:
    """gres.conf(5) of 24.11: AutoDetect=nvidia finds the GPUs and their device files from
    the driver with no library; the pool's own AutoDetect line, then its counts, no File."""
    fragment = {"versions": {"slurm": "24.11"}, "node_pools": [nvidia_pool()]}
    gres = files(yaml.safe_dump(fragment))["slurm/gres.conf"]
    lines = [line for line in gres.splitlines() if line.startswith("NodeName=")]
    assert lines == [
        "NodeName=gpu-[01-02] AutoDetect=nvidia",
        "NodeName=gpu-[01-02] Name=gpu Type=h100 Count=8",
    ]
    # no global line: that one is for hosted pools' nodes no line can name
    assert "\nAutoDetect=" not in gres


@pytest.mark.parametrize("release", ["22.05", "23.11", "24.05"])
def test_nvidia_autodetect_before_slurm_24_11_is_an_error(release: str) -> None:
    """Slurm 24.11 added the gpu/nvidia plugin (gres.conf(5) AutoDetect); 24.05's gres.c
    logs "unknown autodetect flag" for nvidia and finds nothing."""
    fragment = {"versions": {"slurm": release}, "node_pools": [nvidia_pool()]}
    (found,) = errors(yaml.safe_dump(fragment))
    assert found.path == "node_pools[0].gpus.autodetect"
    assert "Slurm 24.11" in found.message and f"slurmd {release}" in found.message


@pytest.mark.parametrize("release", ["24.11", "25.11"])
def test_nvidia_autodetect_from_slurm_24_11_on_is_valid(release: str) -> None:
    fragment = {"versions": {"slurm": release}, "node_pools": [nvidia_pool()]}
    assert errors(yaml.safe_dump(fragment)) == []


def test_nvidia_autodetect_cannot_find_mig_instances() -> None:
    """gres.conf(5) of 24.11: nvidia "doesn't detect MIGs"; gpu_nvidia.c counts one GPU per
    /proc/driver/nvidia/gpus entry."""
    pool = nvidia_pool(mig=["3g.40gb", "3g.40gb"])
    del pool["gpus"]["gres_type"]  # type: ignore[attr-defined]
    fragment = {"versions": {"slurm": "24.11"}, "node_pools": [pool]}
    (found,) = errors(yaml.safe_dump(fragment))
    assert found.path == "node_pools[0].gpus.autodetect"
    assert "never MIG instances" in found.message and "nvml" in found.message


def test_nvidia_autodetect_with_a_catalog_type_warns_that_slurmd_drops_the_gpus() -> None:
    """gres_gpu.c _normalize_sys_gres_types keeps a detected GPU's configured Type only where
    it is part of the driver's model name (nvidia_h100_80gb_hbm3): h100-sxm-80gb is not."""
    pool = nvidia_pool()
    del pool["gpus"]["gres_type"]  # type: ignore[attr-defined]
    found = validated(
        yaml.safe_dump({"versions": {"slurm": "24.11"}, "node_pools": [pool]})
    ).findings
    (warning,) = [f for f in found if f.path == "node_pools[0].gpus"]
    assert warning.level == "warning" and "'h100-sxm-80gb'" in warning.message


@pytest.mark.slow
@pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare")
@pytest.mark.parametrize("gres_type", ["h100", None], ids=["part-of-the-name", "catalog-name"])
def test_a_real_slurmd_with_autodetect_nvidia_registers_the_gpus_of_the_driver(
    tmp_path_factory: pytest.TempPathFactory, gres_type: str | None
) -> None:
    """A pool with gpus.autodetect nvidia on Debian 13's slurm-wlm 24.11 (no NVML): slurmd
    reads the GPUs from a faked NVIDIA driver (/proc/driver/nvidia/gpus and /dev/nvidia*,
    what src/plugins/gpu/nvidia/gpu_nvidia.c reads), registers the two gres.conf counts with
    no File, the node goes idle (not drained for too few GPUs), and a job gets them.

    With the catalog name as the Type (h100-sxm-80gb, not part of the driver's
    nvidia_h100_80gb_hbm3), slurmd keeps none of the GPUs it found and slurmctld drains the
    node (state INVAL), as validate's warning says (gres_gpu.c _normalize_sys_gres_types).

    AutoDetect=nvidia came with 24.11: run it with scripts/slurm-release.sh 24.11."""
    if not installed_slurm_at_least("24.11"):
        pytest.skip("AutoDetect=nvidia needs Slurm 24.11: scripts/slurm-release.sh 24.11")
    tmp_path = tmp_path_factory.mktemp("nvidia")  # short: slurmstepd's sockets live there
    node = "gpu-01"
    typed = f", gres_type: {gres_type}" if gres_type else ""
    source = f"""\
estate: detect
versions: {{slurm: "{installed_slurm_version()}"}}
node_pools:
  - name: gpu
    scheduler: slurm
    hosts: {node}
    cpu: {machine_cpu()}
    memory_gb: 2
    gpus: {{model: h100-sxm-80gb, count: 2, autodetect: nvidia{typed}}}
slurm:
  packages: {{source: {installed_slurm_source()}}}
  controllers: [ctl-01]
  partitions: [{{name: gpu, pools: [gpu], default: true}}]
"""
    out = render_blueprint(tmp_path, source, "detect")
    gres = (out / "slurm" / "gres.conf").read_text()
    assert f"NodeName={node} AutoDetect=nvidia" in gres.splitlines() and "File=" not in gres
    kind = gres_type or "h100-sxm-80gb"
    with SlurmLab.running(out, tmp_path / "run", [node, "ctl-01"], controller="ctl-01") as lab:
        (lab.work / "spool" / node).mkdir(exist_ok=True)
        driver = fake_nvidia_driver(tmp_path / "driver", 2, f"0-{machine_cpus() - 1}")
        slurmd = shlex.join(["/usr/sbin/slurmd", "-D", "-f", str(lab.etc / "slurm.conf")])
        lab.start(f"slurmd-{node}", node, "sh", "-c", f"{driver} && exec {slurmd}")
        if gres_type is None:
            reason = "gres/gpu count reported lower than configured (0 < 2)"
            lab.wait_for(
                lambda: reason in lab.run("scontrol", "show", "node", node), "the node refused"
            )
            assert "DRAIN" in lab.run("scontrol", "show", "node", node)
            return
        lab.wait_idle(node)
        shown = lab.run("scontrol", "show", "node", node)
        assert f"Gres=gpu:{kind}:2" in shown, shown
        log = (lab.work / "log" / f"slurmd-{node}.log").read_text()
        assert "file-less GPU" not in log and "unknown autodetect" not in log, log
        job = ("srun", "-p", "gpu", "-w", node, f"--gres=gpu:{kind}:2", "-t", "1")
        assert lab.run(*job, "sh", "-c", "echo $CUDA_VISIBLE_DEVICES").strip() == "0,1"


@pytest.mark.parametrize("value", ["a:b", "a,b", "a=b", "_lead"])
def test_a_gres_type_slurm_cannot_parse_is_an_error(value: str) -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["gpus"]["gres_type"] = value
    (found,) = errors(yaml.safe_dump({"node_pools": [pool]}))
    assert found.path == "node_pools[0].gpus.gres_type"
    assert "GV100GL" in found.message


def test_node_weight_may_exceed_65533() -> None:
    pool = yaml.safe_load(BASE)["node_pools"][0]
    pool["weight"] = 100_000
    assert record(yaml.safe_dump({"node_pools": [pool]}), "NodeName")["Weight"] == "100000"


# --- plugins, scheduling and accounting ----------------------------------------------------


def test_plugins_and_scheduling_are_the_blueprints() -> None:
    conf = params(
        """
        slurm:
          return_to_service: 1
          select: {type: cons_tres, parameters: [CR_Core_Memory, CR_ONE_TASK_PER_CORE]}
          task_plugins: [affinity]
          job_acct_gather: linux
          prolog_flags: [Alloc, Contain]
          scheduler_parameters: [bf_continue, bf_window=4320]
        """
    )
    assert conf["ReturnToService"] == "1"
    assert conf["SelectTypeParameters"] == "CR_Core_Memory,CR_ONE_TASK_PER_CORE"
    assert conf["TaskPlugin"] == "task/affinity"
    assert conf["JobAcctGatherType"] == "jobacct_gather/linux"
    assert conf["PrologFlags"] == "Alloc,Contain"
    assert conf["SchedulerParameters"] == "bf_continue,bf_window=4320"


def test_tres_priority_weights_are_written_in_blueprint_order() -> None:
    conf = params(
        "slurm: {scheduling: {priority_weight_tres: {Mem: 2000, CPU: 1000, GRES/gpu: 3}}}"
    )
    assert conf["PriorityWeightTRES"] == "Mem=2000,CPU=1000,GRES/gpu=3"
    assert "PriorityWeightTRES" not in params()


def test_tres_priority_weights_need_tracked_tres() -> None:
    (found,) = errors("slurm: {scheduling: {priority_weight_tres: {license/x: 3}}}")
    assert found.path == "slurm.scheduling.priority_weight_tres.license/x"
    assert "add it to slurm.accounting.tres" in found.message


def test_priority_basic_writes_no_multifactor_settings() -> None:
    conf = params("slurm: {scheduling: {priority_type: basic}}")
    assert conf["PriorityType"] == "priority/basic"
    assert not [key for key in conf if key.startswith("PriorityDecay") or "Weight" in key]
    default = params()
    assert default["PriorityType"] == "priority/multifactor"
    assert default["PriorityDecayHalfLife"] == "7-00:00:00"


def test_builtin_scheduler_leaves_out_the_backfill_tuning() -> None:
    conf = params("slurm: {scheduler: builtin}")
    assert conf["SchedulerType"] == "sched/builtin"
    assert "SchedulerParameters" not in conf
    assert params()["SchedulerType"] == "sched/backfill"
    kept = params("slurm: {scheduler: builtin, scheduler_parameters: [max_rpc_cnt=9]}")
    assert kept["SchedulerParameters"] == "max_rpc_cnt=9"


@pytest.mark.parametrize(("value", "line"), [("all", "ALL"), ("any", "ANY"), ("none", "NO")])
def test_partition_limits_are_enforced_as_the_blueprint_says(value: str, line: str) -> None:
    assert params(f"slurm: {{enforce_part_limits: {value}}}")["EnforcePartLimits"] == line
    assert params()["EnforcePartLimits"] == "ALL"


def test_process_tracking_is_the_blueprints() -> None:
    conf = params("slurm: {proctrack: linuxproc, task_plugins: [affinity]}")
    assert conf["ProctrackType"] == "proctrack/linuxproc"
    assert params()["ProctrackType"] == "proctrack/cgroup"


def test_a_completion_log_lies_beside_slurmctlds_log() -> None:
    conf = params("slurm: {job_completion: {type: filetxt}}")
    assert conf["JobCompType"] == "jobcomp/filetxt"
    assert conf["JobCompLoc"] == "/var/log/slurm/jobcomp.log"
    moved = """
    slurm:
      paths: {slurmctld_log_file: /srv/log/ctld.log}
      job_completion: {type: filetxt, location: /srv/log/jobs.txt}
    """
    assert params(moved)["JobCompLoc"] == "/srv/log/jobs.txt"
    assert params()["JobCompType"] == "jobcomp/none"
    assert "JobCompLoc" not in params()


def test_no_prolog_flags_writes_no_prolog_flags_line() -> None:
    assert "PrologFlags" not in params("slurm: {prolog_flags: []}")


def test_no_scheduler_parameters_leaves_slurms_defaults() -> None:
    assert "SchedulerParameters" not in params("slurm: {scheduler_parameters: []}")
    assert params()["SchedulerParameters"].startswith("bf_continue,")


def test_cons_res_without_gpus_writes_no_per_gpu_defaults() -> None:
    cpu = """
    versions: {slurm: "23.02"}  # the last release with select/cons_res
    node_pools:
      - {name: cpu, scheduler: slurm, hosts: 'c-[1-2]', cpu: {sockets: 1, cores_per_socket: 8},
         memory_gb: 64}
    slurm:
      partitions: [{name: cpu, pools: [cpu]}]
      accounting: {tres: [license/matlab]}
      select: {type: cons_res, parameters: [CR_Core]}
    """
    assert params(cpu)["SelectType"] == "select/cons_res"
    assert params(cpu)["AccountingStorageTRES"] == "license/matlab"
    assert "DefCpuPerGPU" not in record(cpu, "PartitionName")


def test_linear_without_parameters_writes_none() -> None:
    cpu = """
    node_pools:
      - {name: cpu, scheduler: slurm, hosts: 'c-[1-2]', cpu: {sockets: 1, cores_per_socket: 8},
         memory_gb: 64}
    slurm:
      partitions: [{name: cpu, pools: [cpu]}]
      accounting: {tres: [license/matlab]}
      select: {type: linear}
    """
    assert errors(cpu) == []
    conf = params(cpu)
    assert conf["SelectType"] == "select/linear"
    assert "SelectTypeParameters" not in conf


def test_accounting_enforce_and_tres_are_the_blueprints() -> None:
    conf = params(
        """
        slurm:
          accounting:
            enforce: [associations, limits]
            tres: [gres/gpu, "gres/gpu:h100-sxm-80gb", ic/ofed]
        """
    )
    assert conf["AccountingStorageEnforce"] == "associations,limits"
    assert conf["AccountingStorageTRES"] == "gres/gpu,gres/gpu:h100-sxm-80gb,ic/ofed"
    assert "AccountingStorageEnforce" not in params("slurm: {accounting: {enforce: []}}")


@pytest.mark.parametrize(
    ("fragment", "path", "text"),
    [
        ("slurm: {select: {type: best}}", "slurm.select.type", "cons_tres"),
        ("slurm: {select: {parameters: [CR_Cores]}}", "slurm.select.parameters[0]", "CR_Core"),
        ("slurm: {task_plugins: [cpuset]}", "slurm.task_plugins[0]", "affinity"),
        ("slurm: {job_acct_gather: cgroups}", "slurm.job_acct_gather", "linux"),
        ("slurm: {prolog_flags: [contain]}", "slurm.prolog_flags[0]", "Contain"),
        ("slurm: {return_to_service: 3}", "slurm.return_to_service", "2"),
        ("slurm: {scheduler: fifo}", "slurm.scheduler", "builtin"),
        ("slurm: {proctrack: cray_aries}", "slurm.proctrack", "linuxproc"),
        ("slurm: {enforce_part_limits: some}", "slurm.enforce_part_limits", "none"),
        ("slurm: {job_completion: {type: mysql}}", "slurm.job_completion.type", "filetxt"),
        (
            "slurm: {scheduling: {priority_type: fair}}",
            "slurm.scheduling.priority_type",
            "multifactor",
        ),
        ("slurm: {scheduler_parameters: ['bf window']}", "slurm.scheduler_parameters[0]", "bf_"),
        ("slurm: {accounting: {enforce: [safe, all]}}", "slurm.accounting.enforce[1]", "limits"),
        ("slurm: {accounting: {tres: [gpu]}}", "slurm.accounting.tres[0]", "gres/gpu"),
    ],
)
def test_a_value_slurm_does_not_know_names_the_valid_ones(
    fragment: str, path: str, text: str
) -> None:
    (found,) = errors(fragment)
    assert found.path == path
    assert text in found.message


# --- partitions ----------------------------------------------------------------------------


def test_partition_settings_are_the_blueprints() -> None:
    part = record(
        """
        slurm:
          partitions:
            - name: gpu
              pools: [h100]
              state: drain
              oversubscribe: "force:4"
              exclusive_user: true
              priority_job_factor: 10
              allow_qos: [normal]
              allow_groups: [vision]
              deny_accounts: [nlp]
              grace_time: 120
              max_nodes: 2
              max_cpus_per_node: 64
              max_mem_per_node: 900000
              def_mem_per_cpu: 4000
              def_cpu_per_gpu: 8
              def_mem_per_gpu: 64000
        """,
        "PartitionName",
    )
    assert part["State"] == "DRAIN"
    assert part["OverSubscribe"] == "FORCE:4"
    assert part["ExclusiveUser"] == "YES"
    assert part["PriorityJobFactor"] == "10"
    assert (part["AllowQos"], part["AllowGroups"], part["DenyAccounts"]) == (
        "normal",
        "vision",
        "nlp",
    )
    assert (part["GraceTime"], part["MaxNodes"], part["MaxCPUsPerNode"]) == ("120", "2", "64")
    assert part["MaxMemPerNode"] == "900000"
    assert (part["DefMemPerCPU"], part["DefCpuPerGPU"], part["DefMemPerGPU"]) == (
        "4000",
        "8",
        "64000",
    )


@pytest.mark.parametrize(("value", "line"), [("true", "YES"), ("false", "NO"), (None, None)])
def test_exclusive_user_is_written_only_when_the_blueprint_says(
    value: str | None, line: str | None
) -> None:
    setting = f"\n          exclusive_user: {value}" if value else ""
    fragment = f"""
    slurm:
      partitions:
        - name: gpu
          pools: [h100]{setting}
    """
    assert record(fragment, "PartitionName").get("ExclusiveUser") == line


def test_no_billing_weights_writes_none() -> None:
    fragment = "slurm: {partitions: [{name: gpu, pools: [h100], billing_weights: {}}]}"
    assert "TRESBillingWeights" not in record(fragment, "PartitionName")
    assert record("", "PartitionName")["TRESBillingWeights"].startswith("CPU=1.0,Mem=0.25G")


@pytest.mark.parametrize(("value", "line"), [("unlimited", None), ("64000", "64000")])
def test_default_memory_per_node_replaces_the_per_cpu_and_per_gpu_defaults(
    value: str, line: str | None
) -> None:
    """unlimited is Slurm's default, and writes no line: slurmctld 22.05 shows a written
    DefMemPerNode=UNLIMITED as DefMemPerCPU=9223372036854775807."""
    fragment = f"slurm: {{partitions: [{{name: gpu, pools: [h100], def_mem_per_node: {value}}}]}}"
    part = record(fragment, "PartitionName")
    assert part.get("DefMemPerNode") == line
    assert "DefMemPerCPU" not in part and "DefMemPerGPU" not in part
    assert part["DefCpuPerGPU"] == "28"


def test_no_cpus_per_gpu_writes_no_default() -> None:
    fragment = "slurm: {partitions: [{name: gpu, pools: [h100], def_cpu_per_gpu: none}]}"
    part = record(fragment, "PartitionName")
    assert "DefCpuPerGPU" not in part
    assert part["DefMemPerGPU"] == record("", "PartitionName")["DefMemPerGPU"]
    # 23.02, the last release with select/cons_res
    cons_res = (
        'versions: {slurm: "23.02"}\n'
        "slurm: {select: {type: cons_res}, partitions: [{name: gpu, pools: [h100], "
    )
    assert errors(cons_res + "def_cpu_per_gpu: none}]}") == []


@pytest.mark.parametrize("value", ["0", "all", "'8'", "-1"])
def test_cpus_per_gpu_is_a_count_or_none(value: str) -> None:
    fragment = f"slurm: {{partitions: [{{name: gpu, pools: [h100], def_cpu_per_gpu: {value}}}]}}"
    (found,) = errors(fragment)
    assert found.path == "slurm.partitions[0].def_cpu_per_gpu"
    assert "or none" in found.message


@pytest.mark.parametrize("value", ["0", "lots", "'64000'", "67108865"])
def test_default_memory_per_node_is_mib_or_unlimited(value: str) -> None:
    fragment = f"slurm: {{partitions: [{{name: gpu, pools: [h100], def_mem_per_node: {value}}}]}}"
    (found,) = errors(fragment)
    assert found.path == "slurm.partitions[0].def_mem_per_node"


def test_default_memory_per_node_goes_alone() -> None:
    fragment = """
    slurm:
      partitions:
        - {name: gpu, pools: [h100], def_mem_per_node: 900, def_mem_per_cpu: 10,
           max_mem_per_node: 800}
    """
    assert sorted(f.message.split(" (")[0] for f in errors(fragment)) == [
        "def_mem_per_node",
        "give def_mem_per_node or def_mem_per_cpu, not both",
    ]


def test_unlimited_memory_per_node_needs_no_global_default() -> None:
    fragment = """
    slurm:
      options: {DefMemPerCPU: 100}
      partitions: [{name: gpu, pools: [h100], def_mem_per_node: unlimited}]
    """
    (found,) = errors(fragment)
    assert found.path == "slurm.partitions[0].def_mem_per_node"
    assert "slurm.options sets DefMemPerCPU" in found.message


def test_partition_billing_weights_replace_estategens() -> None:
    fragment = """
    slurm:
      partitions:
        - name: gpu
          pools: [h100]
          billing_weights: {CPU: 1.0, Mem: 0.5G, "GRES/gpu:h100-sxm-80gb": 8, Node: 2}
    """
    weights = record(fragment, "PartitionName")["TRESBillingWeights"]
    assert weights == "CPU=1.0,Mem=0.5G,GRES/gpu:h100-sxm-80gb=8,Node=2"


@pytest.mark.parametrize(
    ("weights", "path", "text"),
    [
        ("{Mem: 0.25Q}", "slurm.partitions[0].billing_weights.Mem", "like '0.25G'"),
        ("{Mem: .nan}", "slurm.partitions[0].billing_weights.Mem", "finite"),
        ("{Disk: 1}", "slurm.partitions[0].billing_weights", "'GRES/gpu:a100'"),
        ("{'GRES/gpu:l4': 1}", "slurm.partitions[0].billing_weights.GRES/gpu:l4", "not among"),
    ],
)
def test_billing_weights_slurmctld_would_refuse_are_errors(
    weights: str, path: str, text: str
) -> None:
    (found,) = errors(
        f"slurm: {{partitions: [{{name: gpu, pools: [h100], billing_weights: {weights}}}]}}"
    )
    assert found.path.startswith(path)
    assert text in found.message


@pytest.mark.parametrize("value", ["sometimes", "yes:0", "exclusive:2", "FORCE"])
def test_an_oversubscribe_slurm_does_not_know_is_an_error(value: str) -> None:
    (found,) = errors(
        f"slurm: {{partitions: [{{name: gpu, pools: [h100], oversubscribe: '{value}'}}]}}"
    )
    assert found.path == "slurm.partitions[0].oversubscribe"
    assert "'force:N'" in found.message


# --- slurm.options and plan ----------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "StateSaveLocation",
        "SlurmdSpoolDir",
        "SlurmdPidFile",
        "SlurmctldLogFile",
        "SlurmctldPort",
        "SlurmdUser",
        "ReturnToService",
        "SelectTypeParameters",
        "TaskPlugin",
        "JobAcctGatherType",
        "PrologFlags",
        "SchedulerParameters",
        "PriorityWeightTRES",
        "AccountingStorageTRES",
        "AccountingStorageEnforce",
        "PriorityType",
        "SchedulerType",
        "EnforcePartLimits",
        "ProctrackType",
        "JobCompType",
        "JobCompLoc",
    ],
)
def test_slurm_options_refuses_a_key_the_blueprint_now_says(key: str) -> None:
    assert key in REFUSED_IN_OPTIONS
    (found,) = errors(f"slurm: {{options: {{{key}: x}}}}")
    assert found.path == f"slurm.options.{key}"


@pytest.mark.parametrize(
    ("fragment", "key", "policy"),
    [
        ("slurm: {return_to_service: 0}", "ReturnToService", ChangePolicy.RECONFIGURE),
        (
            "slurm: {scheduling: {priority_weight_tres: {CPU: 5}}}",
            "PriorityWeightTRES",
            ChangePolicy.RECONFIGURE,
        ),
        (
            "slurm: {scheduler_parameters: [bf_continue]}",
            "SchedulerParameters",
            ChangePolicy.RECONFIGURE,
        ),
        (
            "slurm: {select: {parameters: [CR_CPU]}}",
            "SelectTypeParameters",
            ChangePolicy.RESTART_SLURMCTLD,
        ),
        (
            "slurm: {accounting: {enforce: [associations]}}",
            "AccountingStorageEnforce",
            ChangePolicy.RESTART_SLURMCTLD,
        ),
        (
            "slurm: {paths: {state_save_location: /srv/state}}",
            "StateSaveLocation",
            ChangePolicy.RESTART_SLURMCTLD,
        ),
        (
            "slurm: {paths: {slurmd_spool_dir: /srv/spool}}",
            "SlurmdSpoolDir",
            ChangePolicy.RESTART_ALL,
        ),
        (
            "slurm: {paths: {slurmd_pid_file: /run/slurm/d.pid}}",
            "SlurmdPidFile",
            ChangePolicy.RESTART_ALL,
        ),
        ("slurm: {ports: {slurmd: 7000}}", "SlurmdPort", ChangePolicy.RESTART_ALL),
        ("slurm: {slurmd_user: slurm}", "SlurmdUser", ChangePolicy.RESTART_ALL),
        ("slurm: {task_plugins: [affinity]}", "TaskPlugin", ChangePolicy.RESTART_ALL),
        ("slurm: {job_acct_gather: linux}", "JobAcctGatherType", ChangePolicy.RESTART_ALL),
        (
            "slurm: {scheduling: {priority_type: basic}}",
            "PriorityType",
            ChangePolicy.RESTART_SLURMCTLD,
        ),
        ("slurm: {scheduler: builtin}", "SchedulerType", ChangePolicy.RESTART_SLURMCTLD),
        ("slurm: {enforce_part_limits: any}", "EnforcePartLimits", ChangePolicy.RECONFIGURE),
        (
            "slurm: {proctrack: pgid, task_plugins: [affinity]}",
            "ProctrackType",
            ChangePolicy.RESTART_ALL,
        ),
        (
            "slurm: {job_completion: {type: filetxt}}",
            "JobCompType",
            ChangePolicy.RESTART_SLURMCTLD,
        ),
    ],
)
def test_plan_restarts_what_slurm_conf5_says_a_changed_key_needs(
    fragment: str, key: str, policy: ChangePolicy
) -> None:
    """The blueprint key's change policy (the schema's, which plan follows) restarts what
    slurm_keys says the slurm.conf key it renders needs."""
    assert change_for(key) is policy
    assert params().get(key) != params(fragment).get(key)
    estate = validated(fragment).estate
    changes = model_changes(estate_data(validated().estate), estate_data(estate), estate)
    assert changes
    restarts = {a.id for c in changes for a in c.actions} & {"restart-slurmctld", "restart-slurmd"}
    assert (
        restarts
        == {
            ChangePolicy.RECONFIGURE: set(),
            ChangePolicy.RESTART_SLURMCTLD: {"restart-slurmctld"},
            ChangePolicy.RESTART_ALL: {"restart-slurmctld", "restart-slurmd"},
        }[policy]
    )


# --- the real daemons ----------------------------------------------------------------------

NODE = "site-node-01"
CLOUD_NODES = "site-cloud-[1-2]"  # State=CLOUD, started by the site's own (test) programs
# what the lab must keep its own: slurmctld and slurmd run as root with the lab's munge socket
LAB_KEEPS = ("SlurmUser", "AuthInfo", "AccountingStoragePort", "AccountingStoragePass")


def two_free_ports() -> tuple[int, int]:
    """Two consecutive free ports, for a SlurmctldPort range."""
    for _ in range(50):
        low = free_port()
        if low < 65_535 and _port_free(low + 1):
            return low, low + 1
    raise AssertionError("no two consecutive free ports")


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def site_blueprint(run: Path, ctld: tuple[int, int], slurmd: int) -> str:
    shape = machine_shape()
    return textwrap.dedent(
        f"""\
        estate: sitelab
        versions: {{slurm: "{installed_slurm_version()}"}}
        identity:
          users: [{{name: alice, uid: 10001}}]
          teams:
            - {{name: vision, gid: 20001, members: [alice]}}
            - {{name: ops, gid: 20002, members: []}}
            - {{name: chem_lab, gid: 20003, members: [alice]}}
        node_pools:
          - name: gpu
            scheduler: slurm
            hosts: {NODE}
            cpu: {{sockets: {shape["sockets"]}, cores_per_socket: {shape["cores_per_socket"]},
                   threads_per_core: {shape["threads_per_core"]},
                   cpus: {shape["sockets"] * shape["cores_per_socket"]}}}
            memory_gb: 4
            real_memory_mib: 1000
            weight: 100000
            gpus: {{model: l4-24gb, count: 2, gres_type: L4_Lab, feature: false}}
            features: [site, "Rack:A1"]
          - name: burst
            scheduler: slurm
            state: cloud
            hosts: {CLOUD_NODES}
            addresses: "127.0.0.[51-52]"
            cpu: {{sockets: 1, cores_per_socket: 2}}
            memory_gb: 2
        slurm:
          packages: {{source: {installed_slurm_source()}}}
          cluster_name: site.lab
          controllers: [site-ctl]
          controller_addresses: {{site-ctl: 127.0.0.1}}
          power_saving:
            resume_program: {run}/power/resume
            suspend_program: {run}/power/suspend
            resume_timeout: 300
            exclude_nodes: ["{CLOUD_NODES.replace("[1-2]", "[1-1]")}"]
          accounting:
            host: site-dbd
            database: {{host: site-db, password: {{secret: slurmdbd_db}}}}
            tres: [gres/gpu, "gres/gpu:L4_Lab", ic/ofed]
            enforce: [associations, limits, qos]
          qos:
            - {{name: normal}}
            - {{name: high, priority: 10}}
            - {{name: part_eic}}
            - {{name: rocsLong}}
          scheduling:
            priority_weights: {{fairshare: 100}}
            priority_weight_tres: {{CPU: 100, "GRES/gpu": 1000}}
          paths:
            state_save_location: {run}/site-state
            slurmd_spool_dir: {run}/spool/{NODE}
            slurmctld_pid_file: {run}/run/ctld.pid
            slurmd_pid_file: {run}/run/slurmd.pid
            slurmctld_log_file: {run}/log/site-ctld.log
            slurmd_log_file: {run}/log/site-slurmd.log
          ports: {{slurmctld: "{ctld[0]}-{ctld[1]}", slurmd: {slurmd}}}
          slurmd_user: root
          return_to_service: 1
          select: {{type: cons_tres, parameters: [CR_CPU_Memory, CR_Pack_Nodes]}}
          task_plugins: [affinity]
          proctrack: linuxproc
          enforce_part_limits: any
          job_completion: {{type: filetxt, location: {run}/log/site-jobs.txt}}
          job_acct_gather: linux
          prolog_flags: [Alloc, Contain]
          scheduler_parameters: [bf_continue, bf_window=4320, bf_resolution=300]
          partitions:
            - name: open
              pools: [gpu]
              default: true
              oversubscribe: "force:2"
              priority_job_factor: 10
              allow_qos: [normal, high]
              allow_groups: [root]
              grace_time: 30
              max_nodes: 1
              max_cpus_per_node: 2
              max_mem_per_cpu: 500
              def_mem_per_cpu: 100
              def_cpu_per_gpu: 1
              def_mem_per_gpu: 200
              billing_weights: {{CPU: 1.0, Mem: 0.5G, "GRES/gpu:L4_Lab": 4}}
            - {{name: burst, pools: [burst], nodeset: burst_nodes, min_nodes: 2}}
            - {{name: gpu_priority, pools: [gpu], qos: part_eic, allow_qos: [rocsLong, normal]}}
            - {{name: chem, pools: [gpu], teams: [chem_lab]}}
            - name: closed
              pools: [gpu]
              state: down
              oversubscribe: exclusive
              exclusive_user: true
              deny_accounts: [vision]
              max_mem_per_node: 900
        """
    )


def machine_cores() -> int:
    shape = machine_shape()
    return shape["sockets"] * shape["cores_per_socket"]


def records(text: str) -> dict[str, dict[str, str]]:
    """`scontrol -o show partition|node` output, by name."""
    out = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields:
            out[fields.get("PartitionName") or fields["NodeName"]] = fields
    return out


def show_config(lab: SlurmLab) -> dict[str, str]:
    lines = lab.run("scontrol", "show", "config").splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(" = ") for line in lines) if v}


@pytest.fixture(scope="module")
def site_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    if not have_slurm():
        pytest.skip("needs slurm-wlm, munge and unshare")
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    work = tmp_path_factory.mktemp("sitelab")
    ctld, slurmd = two_free_ports(), free_port()
    out = render_blueprint(work, site_blueprint(work / "run", ctld, slurmd), "sitelab")
    rendered = (out / "slurm" / "slurm.conf").read_text()

    def install(lab: SlurmLab) -> None:
        lab.ports.update(ctld=ctld[0], slurmd=slurmd)
        # paths of the lab's own names would hide whether the blueprint's reached the daemons
        (lab.work / "site-state").mkdir()
        # the site's power programs: slurmctld runs only an executable others cannot write
        (lab.work / "power").mkdir()
        for name in ("resume", "suspend"):
            program = lab.work / "power" / name
            program.write_text("#!/bin/sh\nexit 0\n")
            program.chmod(0o755)
        # the lab points daemon paths and ports at its own; the blueprint's are the lab's
        # folders and free ports, so put the rendered lines back and keep only what the lab
        # must own (the user daemons run as and the munge socket)
        ours = {
            k: v
            for k, _, v in (line.partition("=") for line in rendered.splitlines())
            if v and not k.startswith("#") and k not in (*LAB_KEEPS, "NodeName", "PartitionName")
        }
        conf = lab.etc / "slurm.conf"
        conf.write_text(set_keys(conf.read_text(), ours))

    with SlurmLab.running(
        out,
        work / "run",
        [NODE, "site-ctl", "site-dbd", "site-db"],
        controller="site-ctl",
        nodes=[NODE],
        gpu_files=2,
        dbd=Dbd("site-dbd", root_accounts=("chem_lab",)),
        configure=install,
    ) as lab:
        yield lab


@pytest.mark.slow
def test_a_real_slurmctld_runs_every_site_setting(site_lab: SlurmLab) -> None:
    run = site_lab.work
    config = show_config(site_lab)
    expected_config = {
        "StateSaveLocation": f"{run}/site-state",
        "SlurmdSpoolDir": f"{run}/spool/{NODE}",
        "SlurmctldPidFile": f"{run}/run/ctld.pid",
        "SlurmdPidFile": f"{run}/run/slurmd.pid",
        "SlurmctldLogFile": f"{run}/log/site-ctld.log",
        "SlurmdLogFile": f"{run}/log/site-slurmd.log",
        "SlurmctldPort": f"{site_lab.ports['ctld']}-{site_lab.ports['ctld'] + 1}",
        "SlurmdPort": str(site_lab.ports["slurmd"]),
        "SlurmdUser": "root(0)",
        "ReturnToService": "1",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU_MEMORY,CR_PACK_NODES",
        "TaskPlugin": "task/affinity",
        "JobAcctGatherType": "jobacct_gather/linux",
        "PrologFlags": "Alloc,Contain",
        "SchedulerParameters": "bf_continue,bf_window=4320,bf_resolution=300",
        "AccountingStorageEnforce": "associations,limits,qos",
        "PriorityWeightTRES": "CPU=100,GRES/gpu=1000",
        "ProctrackType": "proctrack/linuxproc",
        "EnforcePartLimits": "ANY",
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": f"{run}/log/site-jobs.txt",
        # cloud nodes the site's programs start (state: cloud), and the controller's address
        "ResumeProgram": f"{run}/power/resume",
        "SuspendProgram": f"{run}/power/suspend",
        "ResumeTimeout": "300 sec",
        # the on-prem node is never suspended, and the cloud pool keeps its minimum up
        "SuspendExcNodes": f"{NODE},site-cloud-[1-1]",
        "SlurmctldHost[0]": "site-ctl(127.0.0.1)",
    }
    assert {k: config.get(k) for k in expected_config} == expected_config
    tres = config["AccountingStorageTRES"].split(",")
    assert {"gres/gpu", "gres/gpu:l4_lab", "ic/ofed"} <= {t.lower() for t in tres}

    node = records(site_lab.run("scontrol", "-o", "show", "node"))[NODE]
    assert node["RealMemory"] == "1000"
    assert node["Weight"] == "100000"
    assert node["AvailableFeatures"] == "site,Rack:A1"
    assert node["Gres"] == "gpu:L4_Lab:2"
    assert node["CPUTot"] == str(machine_cores())  # cpu.cpus: each core one CPU

    parts = records(site_lab.run("scontrol", "-o", "show", "partition"))
    open_part, closed = parts["open"], parts["closed"]
    assert parts["burst"]["NodeSets"] == "burst_nodes"
    assert parts["burst"]["Nodes"] == CLOUD_NODES
    assert parts["burst"]["MinNodes"] == "2"
    assert open_part["OverSubscribe"] == "FORCE:2"
    assert open_part["PriorityJobFactor"] == "10"
    assert open_part["AllowQos"] == "normal,high"
    assert open_part["AllowGroups"] == "root"
    assert open_part["GraceTime"] == "30"
    assert open_part["MaxNodes"] == "1"
    assert open_part["MaxCPUsPerNode"] == "2"
    assert open_part["MaxMemPerCPU"] == "500"
    assert open_part["DefMemPerCPU"] == "100"
    assert open_part["JobDefaults"] == "DefCpuPerGPU=1,DefMemPerGPU=200"
    assert open_part["TRESBillingWeights"] == "CPU=1.0,Mem=0.5G,GRES/gpu:L4_Lab=4"
    assert closed["State"] == "DOWN"
    assert closed["OverSubscribe"] == "EXCLUSIVE"
    assert (closed["ExclusiveUser"], open_part["ExclusiveUser"]) == ("YES", "NO")
    assert closed["DenyAccounts"] == "vision"
    assert closed["MaxMemPerNode"] == "900"


@pytest.mark.slow
def test_a_real_slurmctld_runs_a_sites_partition_qos_and_dotted_cluster_names(
    site_lab: SlurmLab,
) -> None:
    """cluster_name site.lab, partition gpu_priority with QoS part_eic, QoS rocsLong: slurmdbd
    makes the cluster's tables and slurmctld starts (no "invalid qos" or "CLUSTER NAME
    MISMATCH"), users name the partition as written, and slurmdbd keeps QoS names in lower case
    (sacctmgr's slurm_addto_char_list, src/common/slurm_protocol_defs.c) while slurmctld lower-
    cases AllowQos (_parse_partitionname, src/common/read_config.c; both at slurm-22-05-8-1 and
    slurm-24-11-5-1)."""
    assert show_config(site_lab)["ClusterName"] == "site.lab"
    assert "gpu_priority" in site_lab.run("sinfo", "-h", "-o", "%P").split()
    part = records(site_lab.run("scontrol", "-o", "show", "partition", "gpu_priority"))
    assert part["gpu_priority"]["QoS"] == "part_eic"
    assert part["gpu_priority"]["AllowQos"] == "rocslong,normal"
    qos = site_lab.run("sacctmgr", "-n", "-P", "show", "qos", "format=name").split()
    assert {"part_eic", "rocslong"} <= set(qos)
    clusters = site_lab.run("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster").split()
    assert "site.lab" in clusters
    job = site_lab.run("sbatch", "-p", "gpu_priority", "--hold", "--wrap", "true")
    assert job.startswith("Submitted batch job"), job
    site_lab.run("scancel", job.split()[-1])


@pytest.mark.slow
def test_a_real_slurmctld_takes_a_team_account_with_an_underscore(site_lab: SlurmLab) -> None:
    """Team chem_lab is the Slurm account chem_lab, as a site's users name it: sacctmgr load
    of the rendered sacct.cfg adds it, slurmctld reads AllowAccounts=chem_lab of partition
    chem, and `sbatch -A chem_lab` is accepted there with the job's account chem_lab, while
    a job under root's default account (root) is refused by the partition; `sbatch -A
    Chem_Lab` is the same account, which slurmctld reads in lower case (``validate_job_create_
    req`` in src/slurmctld/job_mgr.c, as ``_parse_partitionname`` in src/common/read_config.c
    does AllowAccounts; slurm-22-05-8-1 and slurm-24-11-5-1)."""
    accounts = site_lab.run("sacctmgr", "-n", "-P", "show", "account", "format=account").split()
    assert "chem_lab" in accounts
    part = records(site_lab.run("scontrol", "-o", "show", "partition", "chem"))
    assert part["chem"]["AllowAccounts"] == "chem_lab"
    job = site_lab.run("sbatch", "-A", "chem_lab", "-p", "chem", "--hold", "--wrap", "true")
    assert job.startswith("Submitted batch job"), job
    number = job.split()[-1]
    shown = dict(re.findall(r"(\w+)=(\S*)", site_lab.run("scontrol", "-o", "show", "job", number)))
    assert shown["Account"] == "chem_lab"
    site_lab.run("scancel", number)
    other = site_lab.run("sbatch", "-p", "chem", "--hold", "--wrap", "true", check=False)
    assert "Submitted batch job" not in other, other
    # slurmctld reads the account a job names in lower case, as slurmdbd keeps accounts
    upper = site_lab.run("sbatch", "-A", "Chem_Lab", "-p", "chem", "--hold", "--wrap", "true")
    number = upper.split()[-1]
    shown = dict(re.findall(r"(\w+)=(\S*)", site_lab.run("scontrol", "-o", "show", "job", number)))
    assert shown["Account"] == "chem_lab"
    site_lab.run("scancel", number)


def test_a_job_asking_fewer_nodes_than_min_nodes_is_refused_at_submission(
    site_lab: SlurmLab,
) -> None:
    """min_nodes: 2 on the burst partition (MinNodes=2): slurmctld refuses a one-node job there
    when it is submitted (EnforcePartLimits), and queues a two-node one."""
    one = site_lab.run("sbatch", "-p", "burst", "-N", "1", "--wrap", "true", check=False)
    assert "Submitted batch job" not in one, one
    assert "node count specification invalid" in one.lower(), one
    two = site_lab.run("sbatch", "-p", "burst", "-N", "2", "--hold", "--wrap", "true")
    job = two.split()[-1]
    assert two.startswith("Submitted batch job"), two
    site_lab.run("scancel", job)


OVER_MEMORY_KILL = """\
estate: omk
node_pools:
  - name: cpu
    scheduler: slurm
    hosts: omk-[01-02]
    cpu: {sockets: 1, cores_per_socket: 2}
    memory_gb: 2
slurm:
  controllers: [omk-ctl]
  task_plugins: [affinity]
  options: {JobAcctGatherParams: OverMemoryKill}
  partitions: [{name: all, pools: [cpu], default: true}]
"""


@pytest.mark.slow
@pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare")
@pytest.mark.parametrize(
    ("task_plugin", "starts"), [(None, True), ("task/cgroup,task/affinity", False)]
)
def test_slurmctld_refuses_over_memory_kill_with_task_cgroup(
    tmp_path: Path, task_plugin: str | None, starts: bool
) -> None:
    """check/memory-enforcement-single, on the real slurmctld: with estategen's cgroup.conf
    (ConstrainRAMSpace=yes) OverMemoryKill goes with task/affinity, and slurmctld exits when
    task/cgroup enforces memory too."""

    def install(lab: SlurmLab) -> None:
        conf = lab.etc / "slurm.conf"
        assert "JobAcctGatherParams=OverMemoryKill" in conf.read_text()
        if task_plugin:
            conf.write_text(set_keys(conf.read_text(), {"TaskPlugin": task_plugin}))

    starting = SlurmLab.running(
        render_blueprint(tmp_path, OVER_MEMORY_KILL, "omk"),
        tmp_path / "run",
        ["omk-01", "omk-02", "omk-ctl"],
        controller="omk-ctl",
        configure=install,
    )
    if starts:
        with starting:
            pass
    else:
        with pytest.raises(AssertionError, match="constrained by both TaskPlugin cgroup"), starting:
            pass
