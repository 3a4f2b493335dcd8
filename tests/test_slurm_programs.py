"""The rendered health-check and power-saving programs, run as they are with fake commands.

Each program sets its own PATH, searching /usr/local/bin before /usr/bin; the tests run it in
a private mount namespace with a folder of fakes (nvidia-smi, scontrol, gcloud, aws) bound
over /usr/local/bin. The fakes record their arguments, so each test reads what the program
did: which reason it drained a node with, which CLI call created or deleted instances. The
real daemons run these programs in tests/test_slurm_health.py and tests/test_slurm_elastic.py.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from checks.base import CLOUD_POOL, SITE_CLOUD_POOL, estate, joined

from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.renderers.slurm import health_check_program, power_programs, slurm_conf

needs_namespaces = pytest.mark.skipif(
    not shutil.which("unshare")
    or subprocess.run(["id", "-u"], capture_output=True).stdout != b"0\n",
    reason="needs unshare and root for a private mount namespace",
)

HEALTH = "slurm: {health_check: {interval: 60, node_state: [idle, mixed, cycle]}}"
MIG_POOL = """
node_pools:
  - name: a100
    scheduler: slurm
    hosts: lab-gpu-[01-02]
    cpu: {sockets: 1, cores_per_socket: 2}
    memory_gb: 2
    gpus: {model: a100-sxm-80gb, count: 2, mig: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}
storage: [{name: scratch, type: nfs, source: "nas:/scratch", mount: /estategen-test-scratch}]
"""


def run_program(
    program: str, tmp_path: Path, fakes: dict[str, str], *args: str, conf: str = ""
) -> tuple[int, list[str]]:
    """Run ``program`` with the fakes on its PATH; (exit status, the commands they logged).

    ``conf`` is the slurm.conf the real scontrol reads (for `show hostnames`); /var/log/slurm,
    where the power programs log, is a folder of the test's.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    log.write_text("")
    for name, body in fakes.items():
        fake = bin_dir / name
        fake.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n{body}\n')
        fake.chmod(0o755)
    script = tmp_path / "program.sh"
    script.write_text(program)
    script.chmod(0o755)
    logs = tmp_path / "log"
    logs.mkdir(exist_ok=True)
    (tmp_path / "slurm.conf").write_text(conf)
    setup = (
        f'mount --bind "{bin_dir}" /usr/local/bin && mount --bind "{logs}" /var/log/slurm '
        '&& exec "$@"'
    )
    result = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            setup,
            "sh",
            str(script),
            *args,
        ],
        capture_output=True,
        text=True,
        env={"SLURMD_NODENAME": "lab-gpu-01", "SLURM_CONF": str(tmp_path / "slurm.conf")},
        timeout=30,
    )
    return result.returncode, log.read_text().splitlines()


def nvidia_smi(memory: list[int], devices: str = "") -> str:
    """A fake nvidia-smi: memory.total per GPU for --query-gpu, the listing for -L."""
    listing = textwrap.dedent(devices).strip().replace("\n", "\\n")
    return (
        'case "$1" in -L) printf "' + listing + '\\n" ;; '
        "*) printf '" + "".join(f"{m}\\n" for m in memory) + "' ;; esac"
    )


A100_MIG = """
    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0)
      MIG 3g.40gb     Device  0: (UUID: MIG-0)
      MIG 2g.20gb     Device  1: (UUID: MIG-1)
      MIG 1g.10gb     Device  2: (UUID: MIG-2)
      MIG 1g.10gb     Device  3: (UUID: MIG-3)
    GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1)
      MIG 3g.40gb     Device  0: (UUID: MIG-4)
      MIG 2g.20gb     Device  1: (UUID: MIG-5)
      MIG 1g.10gb     Device  2: (UUID: MIG-6)
      MIG 1g.10gb     Device  3: (UUID: MIG-7)
"""


def mig_program(checks: str = "[gpus, mig, memory]", memory_gb: int = 2) -> str:
    pool = MIG_POOL.replace(
        "memory_gb: 2", f"memory_gb: {memory_gb}\n    health_check: {{checks: {checks}}}"
    )
    lab = estate(joined(HEALTH, pool))
    return health_check_program(lab, lab.pools_by_name["a100"])


def drained(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("scontrol update")]


def test_slurm_conf_carries_the_health_check_settings() -> None:
    conf = slurm_conf(estate(HEALTH))
    assert "HealthCheckProgram=/etc/slurm/healthcheck.sh\n" in conf
    assert "HealthCheckInterval=60\n" in conf
    assert "HealthCheckNodeState=IDLE,MIXED,CYCLE\n" in conf
    assert "HealthCheck" not in slurm_conf(estate())


def test_each_slurm_pool_gets_its_health_check_program_when_enabled() -> None:
    from estategen.render import render

    files = render(estate(HEALTH))
    assert files["slurm/healthcheck/a100.sh"].mode == 0o755
    assert files["ansible/files/slurm/healthcheck/a100.sh"] == files["slurm/healthcheck/a100.sh"]
    assert not any("healthcheck" in path for path in render(estate()))


@needs_namespaces
def test_a_healthy_node_is_left_alone(tmp_path: Path) -> None:
    status, calls = run_program(
        mig_program(), tmp_path, {"nvidia-smi": nvidia_smi([81920, 81920], A100_MIG)}
    )
    assert (status, drained(calls)) == (0, [])


@needs_namespaces
@pytest.mark.parametrize(
    ("memory", "devices", "reason"),
    [
        ([81920], A100_MIG, "healthcheck gpus: 1 of 2 a100-sxm-80gb GPUs found"),
        ([40960, 40960], A100_MIG, "healthcheck gpus: a GPU with 40960 MiB is not a a100-sxm-80gb"),
        (
            [81920, 81920],
            A100_MIG.replace("MIG 2g.20gb     Device  1: (UUID: MIG-5)", ""),
            "healthcheck mig: 1 of 2 MIG 2g.20gb instances",
        ),
    ],
    ids=["a GPU missing", "another model", "a MIG instance missing"],
)
def test_a_failed_check_drains_the_node_naming_the_check(
    memory: list[int], devices: str, reason: str, tmp_path: Path
) -> None:
    status, calls = run_program(
        mig_program(), tmp_path, {"nvidia-smi": nvidia_smi(memory, devices), "scontrol": ""}
    )
    assert status == 1
    assert drained(calls) == [f"scontrol update NodeName=lab-gpu-01 State=DRAIN Reason={reason}"]


@needs_namespaces
def test_a_file_system_not_mounted_drains_the_node(tmp_path: Path) -> None:
    status, calls = run_program(mig_program("[mounts]"), tmp_path, {"scontrol": ""})
    assert (status, drained(calls)) == (
        1,
        [
            "scontrol update NodeName=lab-gpu-01 State=DRAIN Reason=healthcheck mounts: "
            "/estategen-test-scratch (scratch) is not mounted"
        ],
    )


@needs_namespaces
def test_less_memory_than_real_memory_drains_the_node(tmp_path: Path) -> None:
    # 4 TB: RealMemory=3984589 MiB, far above any test machine
    status, calls = run_program(mig_program("[memory]", 4096), tmp_path, {"scontrol": ""})
    assert status == 1
    assert "Reason=healthcheck memory:" in drained(calls)[0]
    assert drained(calls)[0].endswith("MiB, below RealMemory=3984589")
    status, calls = run_program(mig_program("[memory]", 2), tmp_path, {"scontrol": ""})
    assert (status, drained(calls)) == (0, [])


# --- elastic cloud nodes --------------------------------------------------------------------


def cloud_estate(pools: str) -> Estate:
    return estate(joined(pools, "slurm: {partitions: [{name: burst, pools: [burst]}]}"))


def test_cloud_nodes_are_state_cloud_with_the_power_saving_settings() -> None:
    conf = slurm_conf(cloud_estate(CLOUD_POOL))
    assert " State=CLOUD\n" in conf.split("# pool burst\n")[1]
    assert " State=UNKNOWN\n" in conf.split("# pool a100\n")[1].split("# pool")[0]
    for line in (
        "ResumeProgram=/etc/slurm/power/resume.sh",
        "SuspendProgram=/etc/slurm/power/suspend.sh",
        "ResumeFailProgram=/etc/slurm/power/suspend.sh",
        "SuspendTime=600",
        "ResumeTimeout=600",
        "SuspendTimeout=120",
        # the pool's minimum kept up, then the on-prem pool a100, which is never suspended
        "SuspendExcNodes=burst-[01-04]:1,lab-gpu-[01-02]",
        "SlurmctldParameters=cloud_reg_addrs,idle_on_node_suspend",
        "TreeWidth=65533",
        "PrivateData=cloud",
    ):
        assert f"\n{line}\n" in conf, line
    assert "ResumeProgram" not in slurm_conf(estate())


def test_from_slurm_23_11_cloud_nodes_register_from_their_address_without_a_parameter() -> None:
    """RELEASE_NOTES 23.11: cloud_reg_addrs became the behaviour, and a 24.11 slurmctld logs
    "The SlurmctldParameters option "cloud_reg_addrs" is defunct" where slurm.conf names it."""
    pools = joined(CLOUD_POOL, 'versions: {slurm: "24.11"}')
    conf = slurm_conf(estate(joined(pools, "slurm: {partitions: [{name: burst, pools: [burst]}]}")))
    assert "\nSlurmctldParameters=idle_on_node_suspend\n" in conf
    # only the comment over the parameters still names it
    assert all(line.startswith("#") for line in conf.splitlines() if "cloud_reg_addrs" in line)


def site_cloud_estate(saving: str = "") -> Estate:
    """SITE_CLOUD_POOL's estate with a partition over the cloud pool, and the
    slurm.power_saving keys ``saving`` adds to SITE_PROGRAMS' (none without it)."""
    power = f"power_saving: {{{saving}}}, " if saving else ""
    return estate(
        joined(SITE_CLOUD_POOL, f"slurm: {{{power}partitions: [{{name: spot, pools: [spot]}}]}}")
    )


PROGRAMS = (
    "resume_program: /opt/site/slurm/resume, suspend_program: /opt/site/slurm/suspend, "
    'exclude_nodes: ["spot-[1-1]"]'
)


def test_a_state_cloud_pool_is_state_cloud_with_the_sites_programs() -> None:
    """slurm.conf(5) ResumeProgram, SuspendProgram, SuspendExcNodes: the site's programs and
    exclusions as the blueprint writes them; estategen renders no programs of its own."""
    lab = site_cloud_estate(PROGRAMS + ", resume_timeout: 1600")
    conf = slurm_conf(lab)
    assert " State=CLOUD\n" in conf.split("# pool spot\n")[1]
    for line in (
        "ResumeProgram=/opt/site/slurm/resume",
        "SuspendProgram=/opt/site/slurm/suspend",
        "SuspendTime=600",
        "ResumeTimeout=1600",
        "SuspendTimeout=120",
        # the on-prem pool a100, never suspended, then the site's exclusions
        "SuspendExcNodes=lab-gpu-[01-02],spot-[1-1]",
    ):
        assert f"\n{line}\n" in conf, line
    # no ResumeFailProgram unless the site names one; addressing and TreeWidth stay the site's
    for key in ("ResumeFailProgram", "SlurmctldParameters", "TreeWidth", "PrivateData"):
        assert f"\n{key}=" not in conf, key
    assert power_programs(lab) == {}


def test_a_state_cloud_pool_without_programs_renders_only_the_times() -> None:
    conf = slurm_conf(site_cloud_estate())
    assert "\nSuspendTime=600\nResumeTimeout=600\nSuspendTimeout=120\n" in conf
    assert "Program=" not in conf
    # slurmctld would suspend the idle on-prem nodes of pool a100 too: they are excluded
    assert "\nSuspendExcNodes=lab-gpu-[01-02]\n" in conf


def test_the_report_shows_a_state_cloud_pool_as_cloud_nodes() -> None:
    from estategen.report.facts import build
    from estategen.report.pages import markdown

    rows = markdown(build(site_cloud_estate(PROGRAMS))).splitlines()
    assert "4 cloud nodes" in next(line for line in rows if line.startswith("| spot | slurm"))


def test_the_controller_role_checks_the_sites_programs() -> None:
    from estategen.renderers.ansible import _all_vars

    lab = site_cloud_estate(PROGRAMS + ", resume_fail_program: /opt/site/slurm/fail")
    assert _all_vars(lab, [])["slurm_site_power_programs"] == [
        "/opt/site/slurm/resume",
        "/opt/site/slurm/suspend",
        "/opt/site/slurm/fail",
    ]
    assert _all_vars(cloud_estate(CLOUD_POOL), [])["slurm_site_power_programs"] == []


def test_a_cloud_pool_is_valid_end_to_end() -> None:
    from estategen import load

    text = (
        "estate: lab\n"
        + textwrap.dedent(CLOUD_POOL)
        + (
            "slurm:\n  controllers: [lab-ctl]\n"
            "  partitions: [{name: burst, pools: [a100, burst]}]\n"
        )
    )
    document = load.parse_blueprint(text.encode(), "bp.yaml")
    # no errors; neither pool mounts a shared file system (cloud nodes cannot), as warned
    findings = validate_document(document).findings
    assert {f.rule for f in findings} == {"check/pool-without-storage"}


@needs_namespaces
def test_resume_creates_only_the_requested_nodes_of_each_pool(tmp_path: Path) -> None:
    both = cloud_estate(
        CLOUD_POOL
        + """
      - name: aws
        scheduler: slurm
        provider: eks
        instance_type: p5.48xlarge
        hosts: aws-[1-2]
        cpu: {sockets: 2, cores_per_socket: 48}
        memory_gb: 2048
        gpus: {model: h100-sxm-80gb, count: 8}
        cloud: {image: ami-0123456789abcdef0, region: us-east-1, subnet: subnet-0123abcd}
"""
    )
    programs = power_programs(both)
    conf = slurm_conf(both)
    fakes = {"gcloud": "", "aws": "echo i-0abc"}
    status, calls = run_program(
        programs["slurm/power/resume.sh"], tmp_path, fakes, "burst-[02-03],aws-2", conf=conf
    )
    cli = [c for c in calls if c.startswith(("gcloud", "aws"))]
    assert status == 0
    assert cli[0] == (
        "gcloud compute instances create burst-02 burst-03 --project=aurora-hpc "
        "--zone=us-central1-a --machine-type=a3-highgpu-8g "
        "--image=projects/aurora-hpc/global/images/slurm-v3 --maintenance-policy=TERMINATE "
        "--labels=estategen-estate=lab,estategen-pool=burst --quiet"
    )
    assert cli[1].startswith(
        "aws ec2 run-instances --region us-east-1 --image-id ami-0123456789abcdef0 "
        "--instance-type p5.48xlarge --count 1 --subnet-id subnet-0123abcd "
        "--tag-specifications ResourceType=instance,Tags=[{Key=Name,Value=aws-2},"
    )
    assert len(cli) == 2

    status, calls = run_program(
        programs["slurm/power/suspend.sh"], tmp_path, fakes, "burst-01,aws-[1-2]", conf=conf
    )
    cli = [c for c in calls if c.startswith(("gcloud", "aws"))]
    assert status == 0
    assert cli[0] == (
        "gcloud compute instances delete burst-01 --project=aurora-hpc --zone=us-central1-a --quiet"
    )
    assert cli[1].startswith(
        "aws ec2 describe-instances --region us-east-1 --filters "
        "Name=tag:Name,Values=aws-1,aws-2 Name=tag:estategen-pool,Values=aws"
    )
    assert cli[2] == "aws ec2 terminate-instances --region us-east-1 --instance-ids i-0abc"


def test_the_report_shows_a_cloud_pool_as_cloud_nodes_without_ansible_metrics() -> None:
    from estategen.report.facts import build
    from estategen.report.pages import markdown

    lab = cloud_estate(CLOUD_POOL)
    rows = markdown(build(lab)).splitlines()
    row = next(line for line in rows if line.startswith("| burst | slurm"))
    assert "gke a3-highgpu-8g, 1-4 cloud nodes" in row
    assert row.endswith("| none |")


@pytest.mark.skipif(not shutil.which("ansible-inventory"), reason="needs ansible-inventory")
def test_the_image_build_vm_of_a_cloud_pool_gets_the_pools_compute_roles(tmp_path: Path) -> None:
    """Cloud nodes boot an image: a VM added to the pool's group from a second inventory gets
    the pool's variables, and with them slurm_compute (slurmd enabled, not started), the GPU
    roles and the pool's health check."""
    import json
    import os

    from estategen.render import render
    from estategen.write import with_manifest, write_tree

    lab = cloud_estate(CLOUD_POOL)
    out = tmp_path / "out"
    write_tree(with_manifest(render(lab), b"", lab.name), out)
    (out / "ansible" / "image.yml").write_text("pool_burst:\n  hosts:\n    image-vm:\n")
    result = subprocess.run(
        ["ansible-inventory", "-i", "inventory.yml", "-i", "image.yml", "--list"],
        cwd=out / "ansible",
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    host = listed["_meta"]["hostvars"]["image-vm"]
    assert (host["pool_name"], host["pool_cloud_image"]) == ("burst", True)

    def members(group: str) -> set[str]:
        node = listed.get(group, {})
        found = set(node.get("hosts", []))
        for child in node.get("children", []):
            found |= members(child)
        return found

    assert "image-vm" in members("slurm_compute") and "image-vm" in members("gpu_nodes")
    assert "burst-01" not in json.dumps(listed)  # the nodes themselves are no Ansible hosts
