"""The rendered Slurm configuration, accepted and obeyed by the installed Slurm daemons.

A small estate whose one GPU node is this machine runs munged, MariaDB, slurmdbd, slurmctld
and slurmd; the campus estate runs slurmctld alone. Facts are read back with sinfo, scontrol,
sacctmgr and sshare, and jobs are run with srun.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from estategen.model import Estate, slurm_minutes, slurm_time
from estategen.pipeline import validate_file

from conftest import BLUEPRINTS, run_cli
from mariadb import have_mariadb
from slurmlab import (
    GPU_LAB_HOSTS,
    Dbd,
    SlurmLab,
    gpu_lab_blueprint,
    have_slurm,
    installed_slurm_at_least,
    installed_slurm_source,
    installed_slurm_version,
    machine_cpu,
    machine_cpus,
    parse_records,
    render_blueprint,
)
from slurmlab import GPU_NODE as NODE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]


# Two teams, a QoS with a GPU limit, and a partition for each team.
MINILAB = """\
  scheduling:
    priority_weights: {fairshare: 10000, qos: 1000}
  qos:
    - {name: normal}
    - {name: high, priority: 100, max_gpus_per_user: 1}
  partitions:
    - {name: open, pools: [gpu], default: true, max_time: "1:00:00", teams: [ops]}
    - {name: vision, pools: [gpu], max_time: "30:00", teams: [vision]}
"""


def small_blueprint() -> str:
    return gpu_lab_blueprint(
        "minilab",
        teams=[
            "{name: vision, gid: 20001, members: [alice], fairshare: 30}",
            "{name: ops, gid: 20002, members: [bob], fairshare: 70}",
        ],
        gpus="model: l4-24gb, count: 2, sharing: {shard: 2}",
        pool="    features: [test]\n",
        slurm=MINILAB,
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    work = tmp_path_factory.mktemp("minilab")
    # The tests submit jobs as root, a name no blueprint may give a user: the operator
    # grants root the ops account by hand, as a site's admin would.
    with SlurmLab.running(
        render_blueprint(work, small_blueprint(), "minilab"),
        work / "run",
        GPU_LAB_HOSTS,
        controller="lab-ctl",
        nodes=[NODE],
        gpu_files=2,
        dbd=Dbd("lab-dbd", root_accounts=("ops",)),
    ) as cluster:
        yield cluster


def test_sinfo_shows_partitions_with_their_node(lab: SlurmLab) -> None:
    rows = lab.run("sinfo", "-h", "-o", "%P %D %N").split("\n")
    assert sorted(r for r in rows if r) == [f"open* 1 {NODE}", f"vision 1 {NODE}"]


def test_node_has_the_blueprint_gres_features_and_memory(lab: SlurmLab) -> None:
    node = lab.run("scontrol", "show", "node", NODE)
    # slurmd reports each shard under the GPU type that carries it
    assert "Gres=gpu:l4-24gb:2,shard:l4-24gb:4" in node
    assert "AvailableFeatures=test,l4-24gb" in node
    assert "RealMemory=2048" in node
    assert "State=IDLE" in node


def test_partition_limits_follow_the_blueprint(lab: SlurmLab) -> None:
    part = lab.run("scontrol", "show", "partition", "vision")
    assert "AllowAccounts=vision" in part
    assert "MaxTime=00:30:00" in part
    assert "DefMemPerGPU=1024" in part
    assert "TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu:l4-24gb=6" in part


def test_srun_with_a_typed_gpu_runs(lab: SlurmLab) -> None:
    out = lab.run(
        "srun",
        "-A",
        "ops",
        "--gres=gpu:l4-24gb:1",
        "-t",
        "1",
        "sh",
        "-c",
        "echo ran-$SLURM_STEP_GPUS-$CUDA_VISIBLE_DEVICES",
    )
    assert out.strip() in ("ran-0-0", "ran-1-0"), out


def test_srun_with_a_shard_runs(lab: SlurmLab) -> None:
    out = lab.run("srun", "-A", "ops", "--gres=shard:1", "-t", "1", "sh", "-c", "echo shard-ok")
    assert out.strip() == "shard-ok"


def test_srun_above_the_node_gpu_count_is_refused(lab: SlurmLab) -> None:
    out = lab.run("srun", "-A", "ops", "--gres=gpu:l4-24gb:3", "-t", "1", "true", check=False)
    assert "Requested node configuration is not available" in out


def test_an_account_not_allowed_in_a_partition_is_refused(lab: SlurmLab) -> None:
    out = lab.run("srun", "-A", "ops", "-p", "vision", "-t", "1", "true", check=False)
    assert "Invalid account or account/partition combination" in out, out


def test_accounting_has_teams_with_their_shares(lab: SlurmLab) -> None:
    assoc = lab.run("sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,fairshare")
    rows = {tuple(line.split("|")) for line in assoc.splitlines()}
    assert ("vision", "", "30") in rows
    assert ("ops", "", "70") in rows
    assert ("vision", "alice", "1") in rows


def test_qos_limits_are_defined(lab: SlurmLab) -> None:
    qos = lab.run("sacctmgr", "-n", "-P", "show", "qos", "format=name,priority,maxtrespu")
    assert "high|100|gres/gpu=1" in qos.splitlines()


def test_sshare_shows_the_team_accounts(lab: SlurmLab) -> None:
    share = lab.run("sshare", "-n", "-P", "-a", "-o", "account,rawshares")
    assert "vision|30" in [line.strip() for line in share.splitlines()]


@pytest.fixture(scope="module")
def campus_ctld(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SlurmLab, Estate]]:
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    work = tmp_path_factory.mktemp("campus")
    result = run_cli("render", BLUEPRINTS / "campus.yaml", "-o", work / "out")
    assert result.returncode == 0, result.stderr
    estate = validate_file(BLUEPRINTS / "campus.yaml").estate
    hosts = [h for pool in estate.slurm_pools for h in pool.hosts]
    accounting = estate.slurm.accounting
    assert accounting is not None
    names = [*hosts, *estate.slurm.controllers, accounting.host, accounting.database.host]
    with SlurmLab.running(
        work / "out",
        work / "run",
        names,
        controller=estate.slurm.controllers[0],
        dbd=Dbd(accounting.host),
    ) as cluster:
        yield cluster, estate


def test_campus_partitions_match_the_blueprint(campus_ctld: tuple[SlurmLab, Estate]) -> None:
    from estategen import hostlist

    cluster, estate = campus_ctld
    shown = {
        p["PartitionName"]: p
        for p in parse_records(cluster.run("scontrol", "-o", "show", "partition"))
    }
    assert set(shown) == {p.name for p in estate.slurm.partitions}
    for part in estate.slurm.partitions:
        facts = shown[part.name]
        hosts = {h for name in part.pools for h in estate.pools_by_name[name].hosts}
        assert set(hostlist.expand(facts["Nodes"])) == hosts, part.name
        assert facts["TotalNodes"] == str(len(hosts))
        assert facts["Default"] == ("YES" if part.default else "NO")
        assert facts["MaxTime"] == slurm_time(part.max_time)
        assert facts["AllowAccounts"] == (",".join(part.teams) if part.teams else "ALL")
        assert facts["QoS"] == (part.qos or "N/A")
        assert facts["PriorityTier"] == str(part.priority_tier)


def test_campus_nodes_match_their_pools(campus_ctld: tuple[SlurmLab, Estate]) -> None:
    from estategen.facts import gpu_gres
    from estategen.slurm_facts import real_memory_mib

    cluster, estate = campus_ctld
    shown = {n["NodeName"]: n for n in parse_records(cluster.run("scontrol", "-o", "show", "node"))}
    expected_hosts = {h for p in estate.slurm_pools for h in p.hosts}
    assert set(shown) == expected_hosts
    for pool in estate.slurm_pools:
        gres = ",".join(f"gpu:{kind}:{count}" for kind, count in gpu_gres(pool)) or "(null)"
        for host in pool.hosts:
            facts = shown[host]
            assert facts["Sockets"] == str(pool.cpu.sockets)
            assert facts["CoresPerSocket"] == str(pool.cpu.cores_per_socket)
            assert facts["ThreadsPerCore"] == str(pool.cpu.threads_per_core)
            assert facts["CPUTot"] == str(pool.cpu.threads)
            assert facts["RealMemory"] == str(real_memory_mib(pool.memory_gb))
            assert facts["Gres"] == gres
            assert set(facts["AvailableFeatures"].split(",")) >= set(pool.features)


def test_campus_topology_has_every_leaf_switch(campus_ctld: tuple[SlurmLab, Estate]) -> None:
    cluster, estate = campus_ctld
    switches = {
        s["SwitchName"]: s for s in parse_records(cluster.run("scontrol", "-o", "show", "topology"))
    }
    leaves = {s for p in estate.slurm_pools for s in p.switches}
    assert leaves <= set(switches)
    assert switches["campus-spine"]["Level"] == "1"


def test_campus_accounting_has_teams_and_qos(campus_ctld: tuple[SlurmLab, Estate]) -> None:
    cluster, estate = campus_ctld
    assoc = cluster.run(
        "sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,fairshare,qos"
    )
    rows = [line.split("|") for line in assoc.splitlines()]
    for team in estate.identity.teams:
        (row,) = [r for r in rows if r[0] == team.name and r[1] == ""]
        assert row[2] == str(team.fairshare)
        assert set(row[3].split(",")) == {q.name for q in estate.slurm.qos}
    qos = {
        line.split("|")[0]: line.split("|")
        for line in cluster.run(
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "qos",
            "format=name,priority,preempt,usagefactor,maxtrespu",
        ).splitlines()
    }
    for q in estate.slurm.qos:
        _, priority, preempt, usage, max_tres = qos[q.name]
        assert int(priority) == q.priority
        assert set(filter(None, preempt.split(","))) == set(q.preempt)
        assert float(usage) == q.usage_factor
        expected = f"gres/gpu={q.max_gpus_per_user}" if q.max_gpus_per_user is not None else ""
        assert max_tres == expected


# --- no accounting, the smallest pools, a mixed partition, every time format -------------

CPU_NODE = "lab-cpu-01"

# MaxTime as written -> as slurmctld 22.05 and 24.11 show it (scontrol show partition), measured.
TIMES = [
    ("0", "00:00:00"),
    ("90", "01:30:00"),
    ("00090", "01:30:00"),
    ("0:90", "00:02:00"),
    ("0:600", "00:10:00"),
    ("2:75:00", "03:15:00"),
    ("25:00:00", "1-01:00:00"),
    ("0:0:99", "00:02:00"),
    ("1-25", "2-01:00:00"),
    ("1-0:30", "1-00:30:00"),
    ("1-1:1", "1-01:01:00"),
    ("1-0:0:30", "1-00:01:00"),
    ("7-0:00:99", "7-00:02:00"),
    ("35791393", "24855-03:13:00"),
    ("0:2147483580", "24855-03:13:00"),
    ("INFINITE", "UNLIMITED"),
    ("UNLIMITED", "UNLIMITED"),
]


def no_accounting_blueprint() -> str:
    """GPU and CPU pools of 2 and 1 GB, no slurm.accounting; this machine is the GPU node."""
    times = "".join(
        f'    - {{name: time-{i}, pools: [cpu], max_time: "{written}"}}\n'
        for i, (written, _) in enumerate(TIMES)
    )
    return (
        textwrap.dedent(
            f"""\
            estate: nodbd
            versions: {{slurm: "{installed_slurm_version()}"}}
            identity:
              users: [{{name: alice, uid: 10001}}]
              teams: [{{name: vision, gid: 20001, members: [alice]}}]
            node_pools:
              - name: gpu
                scheduler: slurm
                hosts: {NODE}
                cpu: {machine_cpu()}
                memory_gb: 2
                gpus: {{model: l4-24gb, count: 1}}
              - name: cpu
                scheduler: slurm
                hosts: {CPU_NODE}
                cpu: {{sockets: 1, cores_per_socket: 2}}
                memory_gb: 1
            slurm:
              packages: {{source: {installed_slurm_source()}}}
              controllers: [lab-ctl]
              scheduling: {{fairshare_half_life: "1-0:0:99"}}
              partitions:
                - {{name: mixed, pools: [gpu, cpu], default: true, max_time: "7-0:00:99",
                    default_time: "0:90"}}
            """
        )
        + times
    )


@pytest.fixture(scope="module")
def nodbd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    work = tmp_path_factory.mktemp("nodbd")
    with SlurmLab.running(
        render_blueprint(work, no_accounting_blueprint(), "nodbd"),
        work / "run",
        [NODE, CPU_NODE, "lab-ctl"],
        controller="lab-ctl",
        nodes=[NODE],
        gpu_files=1,
    ) as cluster:
        yield cluster


def rendered_partitions(cluster: SlurmLab) -> dict[str, dict[str, str]]:
    lines = (cluster.etc / "slurm.conf").read_text().splitlines()
    records = parse_records("\n".join(line for line in lines if line.startswith("Partition")))
    return {r["PartitionName"]: r for r in records}


def shown_partitions(cluster: SlurmLab) -> dict[str, dict[str, str]]:
    records = parse_records(cluster.run("scontrol", "-o", "show", "partition"))
    return {r["PartitionName"]: r for r in records}


def job_memory(cluster: SlurmLab, *options: str) -> tuple[str, str]:
    """(CPUs, memory) slurmctld allocated to a job run with ``options`` and no memory option."""
    out = cluster.run("srun", "-w", NODE, "-t", "1", *options, "sh", "-c", "echo $SLURM_JOB_ID")
    job = parse_records(cluster.run("scontrol", "-o", "show", "job", out.split()[0]))[0]
    # scontrol 22.05 shows one TRES field, the allocated TRES once there are; from 23.02 it
    # shows ReqTRES and AllocTRES (RELEASE_NOTES 23.02: "Requested TRES and allocated TRES
    # will now always be printed when showing jobs")
    allocated = job["AllocTRES"] if installed_slurm_at_least("23.02") else job["TRES"]
    tres = dict(item.split("=", 1) for item in allocated.split(","))
    return tres["cpu"], tres["mem"]


def test_without_accounting_slurmctld_runs_gpu_jobs(nodbd: SlurmLab) -> None:
    """No accounting is accounting_storage/none up to 23.02; 23.11 removed that plugin and
    slurm.conf(5) 23.11 says "When this is not set it indicates that account records are
    not maintained", so the line is left out and slurmctld shows the type unset."""
    config = nodbd.run("scontrol", "show", "config")
    shown = re.search(r"^AccountingStorageType\s+= (.*)$", config, re.M)
    assert shown, config
    if installed_slurm_at_least("23.11"):
        assert shown[1] == "(null)"
        assert "AccountingStorageType" not in (nodbd.etc / "slurm.conf").read_text()
    else:
        assert shown[1] == "accounting_storage/none"
    out = nodbd.run("srun", "-w", NODE, "--gres=gpu:l4-24gb:1", "-t", "1", "sh", "-c", "echo ok")
    assert out.strip() == "ok"


def test_the_smallest_pools_offer_half_their_memory(nodbd: SlurmLab) -> None:
    nodes = {n["NodeName"]: n for n in parse_records(nodbd.run("scontrol", "-o", "show", "node"))}
    assert nodes[NODE]["RealMemory"] == "1024"
    assert nodes[CPU_NODE]["RealMemory"] == "512"
    # slurmd registered with that memory: the node is usable, not drained as too small
    assert nodes[NODE]["State"].split("+")[0] in ("IDLE", "MIXED", "ALLOCATED")


def test_a_mixed_partition_gives_cpu_jobs_memory_per_cpu_and_gpu_jobs_per_gpu(
    nodbd: SlurmLab,
) -> None:
    mixed = shown_partitions(nodbd)["mixed"]
    assert mixed["DefMemPerCPU"] == str(512 // 2)  # the CPU node: 512 MiB over 2 CPUs
    assert "DefMemPerNode" not in mixed
    gpu_defaults = dict(item.split("=") for item in mixed["JobDefaults"].split(","))
    threads = machine_cpus()
    assert gpu_defaults == {"DefCpuPerGPU": str(threads), "DefMemPerGPU": "1024"}
    assert job_memory(nodbd) == ("1", "256M")
    assert job_memory(nodbd, "-n", "2") == ("2", "512M")
    assert job_memory(nodbd, "--gres=gpu:1") == (str(threads), "1G")


def test_times_are_rendered_as_slurmctld_shows_them(nodbd: SlurmLab) -> None:
    rendered, shown = rendered_partitions(nodbd), shown_partitions(nodbd)
    for index, (written, expected) in enumerate(TIMES):
        name = f"time-{index}"
        assert (written, shown[name]["MaxTime"]) == (written, expected)
        assert rendered[name]["MaxTime"] == expected
    assert shown["mixed"]["MaxTime"] == rendered["mixed"]["MaxTime"] == "7-00:02:00"
    assert shown["mixed"]["DefaultTime"] == rendered["mixed"]["DefaultTime"] == "00:02:00"
    config = nodbd.run("scontrol", "show", "config")
    assert re.search(r"PriorityDecayHalfLife\s+= 1-00:02:00\n", config)
    assert "PriorityDecayHalfLife=1-00:02:00" in (nodbd.etc / "slurm.conf").read_text()


@pytest.mark.parametrize("refused", ["24856-0", "35791394", "0:2147483589"])
def test_times_estategen_refuses_are_times_slurmctld_refuses(refused: str, tmp_path: Path) -> None:
    """The other side of the table: past the longest time, slurmctld will not start."""
    with pytest.raises(ValueError):
        slurm_minutes(refused)
    out = render_blueprint(tmp_path, no_accounting_blueprint(), "nodbd")
    conf = out / "slurm" / "slurm.conf"
    conf.write_text(conf.read_text().replace("MaxTime=7-00:02:00", f"MaxTime={refused}"))
    starting = SlurmLab.running(
        out, tmp_path / "run", [NODE, CPU_NODE, "lab-ctl"], controller="lab-ctl"
    )
    with pytest.raises(AssertionError, match=f'Bad value "{refused}" for MaxTime'), starting:
        pass
