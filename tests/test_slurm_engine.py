"""The rendered Slurm configuration, accepted and obeyed by the installed Slurm daemons.

A small estate whose one GPU node is this machine runs munged, MariaDB, slurmdbd, slurmctld
and slurmd; the campus estate runs slurmctld alone. Facts are read back with sinfo, scontrol,
sacctmgr and sshare, and jobs are run with srun.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from collections.abc import Iterator

import pytest

from estategen.model import Estate
from estategen.pipeline import validate_file

from conftest import BLUEPRINTS, run_cli
from mariadb import MariaDB, have_mariadb
from slurmlab import SlurmLab, have_slurm, installed_slurm_version

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

NODE = "lab-node-01"


def machine_shape() -> dict[str, int]:
    """Sockets, cores and threads of this machine as slurmd sees them."""
    line = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    return {
        "sockets": int(fields["SocketsPerBoard"]) * int(fields.get("Boards", 1)),
        "cores_per_socket": int(fields["CoresPerSocket"]),
        "threads_per_core": int(fields["ThreadsPerCore"]),
    }


def small_blueprint() -> str:
    shape = machine_shape()
    return textwrap.dedent(
        f"""\
        estate: minilab
        versions: {{slurm: "{installed_slurm_version()}"}}
        identity:
          users:
            - {{name: root, uid: 1000}}
            - {{name: alice, uid: 10001}}
          teams:
            - {{name: vision, gid: 20001, members: [alice], fairshare: 30}}
            - {{name: ops, gid: 20002, members: [root], fairshare: 70}}
        node_pools:
          - name: gpu
            scheduler: slurm
            hosts: {NODE}
            cpu: {{sockets: {shape["sockets"]}, cores_per_socket: {shape["cores_per_socket"]},
                   threads_per_core: {shape["threads_per_core"]}}}
            memory_gb: 4
            gpus: {{model: l4-24gb, count: 2, sharing: {{shard: 2}}}}
            features: [test]
        slurm:
          controllers: [lab-ctl]
          accounting:
            host: lab-dbd
            database: {{host: lab-db, password: {{secret: slurmdbd_db}}}}
          scheduling:
            priority_weights: {{fairshare: 10000, qos: 1000}}
          qos:
            - {{name: normal}}
            - {{name: high, priority: 100, max_gpus_per_user: 1}}
          partitions:
            - {{name: open, pools: [gpu], default: true, max_time: "1:00:00", teams: [ops]}}
            - {{name: vision, pools: [gpu], max_time: "30:00", teams: [vision]}}
        """
    )


def start_accounting(cluster: SlurmLab, database: MariaDB, dbd_host: str) -> None:
    """MariaDB, slurmdbd, then `sacctmgr load` of the rendered sacct.cfg, as the role does."""
    database.start()
    database.create("slurm_acct_db", "slurm", "test-only-password")
    cluster.install_slurmdbd(database.port, "test-only-password")
    cluster.start_slurmdbd(dbd_host)
    cluster.run("sacctmgr", "-i", "load", f"file={cluster.etc / 'sacct.cfg'}")
    create_qos(cluster)


def qos_lines(cluster: SlurmLab, adding: bool) -> list[list[str]]:
    lines = (cluster.etc / "qos.sacctmgr").read_text().splitlines()
    commands = [line.split() for line in lines if line and not line.startswith("#")]
    return [c for c in commands if (c[:2] == ["add", "qos"]) == adding]


def create_qos(cluster: SlurmLab) -> None:
    """The `add qos` lines of qos.sacctmgr: partitions name QoS slurmctld must find."""
    for command in qos_lines(cluster, adding=True):
        out = cluster.run("sacctmgr", "-i", *command, check=False)
        assert "Adding QOS" in out or "Nothing new added" in out, out


def define_qos(cluster: SlurmLab) -> None:
    """The rest of qos.sacctmgr, once slurmctld has registered the GPU TRES it limits."""
    cluster.wait_for(
        lambda: (
            "gres|gpu" in cluster.run("sacctmgr", "-n", "-P", "show", "tres", "format=type,name")
        ),
        "GPU TRES registered by slurmctld",
    )
    for command in qos_lines(cluster, adding=False):
        assert "error" not in cluster.run("sacctmgr", "-i", *command).lower()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    work = tmp_path_factory.mktemp("minilab")
    blueprint = work / "minilab.yaml"
    blueprint.write_text(small_blueprint())
    result = run_cli("render", blueprint, "-o", work / "out")
    assert result.returncode == 0, result.stderr
    cluster = SlurmLab(work / "out", work / "run", [NODE, "lab-ctl", "lab-dbd", "lab-db"])
    database = MariaDB(work / "db")
    try:
        cluster.install_configs(gpu_files=2)
        cluster.start_munge()
        start_accounting(cluster, database, "lab-dbd")
        cluster.start_slurmctld("lab-ctl")
        cluster.start_slurmd(NODE)
        define_qos(cluster)
        cluster.wait_for(
            lambda: "idle" in cluster.run("sinfo", "-h", "-n", NODE, "-o", "%t"), "idle node"
        )
        yield cluster
    finally:
        cluster.stop()
        database.stop()


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


def parse_records(text: str) -> list[dict[str, str]]:
    """`scontrol -o show ...` output: one record per line of Key=Value pairs."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


def slurm_minutes_shown(text: str) -> str:
    """scontrol prints times as [D-]HH:MM:SS; normalise the blueprint's to compare."""
    from estategen.model import slurm_minutes

    minutes = slurm_minutes(text)
    if minutes is None:
        return "UNLIMITED"
    days, rest = divmod(minutes, 1440)
    clock = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


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
    cluster = SlurmLab(work / "out", work / "run", names)
    database = MariaDB(work / "db")
    try:
        cluster.install_configs()
        cluster.start_munge()
        start_accounting(cluster, database, accounting.host)
        cluster.start_slurmctld(estate.slurm.controllers[0])
        define_qos(cluster)
        yield cluster, estate
    finally:
        cluster.stop()
        database.stop()


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
        assert facts["MaxTime"] == slurm_minutes_shown(part.max_time)
        assert facts["AllowAccounts"] == (",".join(part.teams) if part.teams else "ALL")
        assert facts["QoS"] == (part.qos or "N/A")
        assert facts["PriorityTier"] == str(part.priority_tier)


def test_campus_nodes_match_their_pools(campus_ctld: tuple[SlurmLab, Estate]) -> None:
    from estategen.renderers.slurm import gpu_gres, real_memory_mib

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
