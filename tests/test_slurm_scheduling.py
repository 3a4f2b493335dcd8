"""The blueprint's scheduling policies, obeyed by the installed Slurm daemons with real jobs.

Settings slurmctld merely accepts are proven elsewhere; here jobs run on this machine as the
one node of a small estate, and each test asserts an order or a refusal only the rendered
setting produces: QoS preemption requeues (or, in mode cancel, ends) a running scavenger job
for a high job, a QoS's max_gpus_per_user holds a user's second GPU job while another QoS
runs it, a partition's max_time refuses a longer job, the backfill scheduler starts a short
job before a blocked larger one while a job too long to fit before that job's reserved start
waits, and with equal usage the team with more fair-share shares starts first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from mariadb import have_mariadb
from slurmlab import (
    GPU_LAB_HOSTS,
    Dbd,
    SlurmLab,
    gpu_lab_blueprint,
    have_slurm,
    machine_cpus,
    parse_records,
    render_blueprint,
)
from slurmlab import GPU_NODE as NODE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

RUNNING = {"RUNNING"}
TEAMS = ("ops", "climate", "biology")


def blueprint(slurm: str, climate: int = 30, biology: int = 70) -> str:
    """One GPU pool on this machine (all its CPUs, 2 GB, 2 GPUs), three teams (climate's and
    biology's fair-share shares as given), and ``slurm`` (the scheduling, QoS and partition
    keys under test, YAML indented by 2)."""
    return gpu_lab_blueprint(
        "schedlab",
        teams=[
            "{name: ops, gid: 20002, members: [bob], fairshare: 70}",
            f"{{name: climate, gid: 20003, members: [alice], fairshare: {climate}}}",
            f"{{name: biology, gid: 20004, members: [bob], fairshare: {biology}}}",
        ],
        slurm=slurm,
    )


# Accounting, QoS preemption and limits: the policies of the blueprint's `high` and
# `scavenger` QoS (DESIGN.md), the scavenger QoS preemptable by high; the backfill scheduler
# (the default) looking at the queue every second instead of every 30, and usage counted into
# fair share every minute instead of every 5. MODE is the preemption
# mode, requeue unless a test asks for another. A partition's preempt_mode would not change it:
# slurm.conf(5) obeys a partition's PreemptMode only with PreemptType=preempt/partition_prio.
POLICIES = """\
  scheduler_parameters: [bf_interval=1]
  options: {PriorityCalcPeriod: 1}
  scheduling:
    priority_weights: {fairshare: 10000, qos: 1000}
    preemption: {type: qos, mode: MODE}
  qos:
    - {name: normal}
    - {name: high, priority: 100, max_gpus_per_user: 1, preempt: [scavenger]}
    - {name: scavenger, usage_factor: 0}
  partitions:
    - {name: open, pools: [gpu], default: true, max_time: "1:00:00", teams: [ops, climate, biology]}
    - {name: scavenger, pools: [gpu], qos: scavenger}
"""


@pytest.fixture(scope="module")
def policies(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SlurmLab]:
    """The POLICIES lab, preempting in the mode a test names by indirect parametrization
    (requeue if none): pytest stops one mode's lab before it starts another's."""
    if not have_mariadb():
        pytest.skip("needs mariadb-server")
    mode = getattr(request, "param", "requeue")
    work = tmp_path_factory.mktemp(f"schedlab-{mode}")
    # jobs are submitted as root, which no blueprint may name: the admin grants it the
    # teams' accounts, before slurmctld starts so all count in its first fair-share pass
    with SlurmLab.running(
        render_blueprint(work, blueprint(POLICIES.replace("MODE", mode)), "schedlab"),
        work / "run",
        GPU_LAB_HOSTS,
        controller="lab-ctl",
        nodes=[NODE],
        gpu_files=2,
        dbd=Dbd("lab-dbd", root_accounts=TEAMS),
    ) as cluster:
        yield cluster


def submit(lab: SlurmLab, *options: str, seconds: int = 300) -> str:
    """sbatch a job sleeping ``seconds`` with ``options``; its id."""
    out = lab.run(
        "sbatch",
        "--parsable",
        "-o",
        "/dev/null",
        f"--chdir={lab.work}",
        *options,
        "--wrap",
        f"sleep {seconds}",
    )
    return out.strip().split(";")[0]


def job(lab: SlurmLab, job_id: str) -> dict[str, str]:
    (record,) = parse_records(lab.run("scontrol", "-o", "show", "job", job_id))
    return record


def wait_job(
    lab: SlurmLab, job_id: str, what: str, condition: Callable[[dict[str, str]], bool]
) -> dict[str, str]:
    lab.wait_for(lambda: condition(job(lab, job_id)), f"job {job_id} {what}", timeout=40)
    return job(lab, job_id)


def cancel_all(lab: SlurmLab) -> None:
    """Cancel every job and wait until the node is idle, so each test starts on an empty node."""
    lab.run("scancel", "--user=root")
    lab.wait_for(lambda: not lab.run("squeue", "-h", "-o", "%i").strip(), "an empty queue")
    lab.wait_idle(NODE)


@pytest.fixture
def empty(policies: SlurmLab) -> Iterator[SlurmLab]:
    yield policies
    cancel_all(policies)


def test_a_high_job_requeues_a_running_scavenger_job_on_a_full_node(empty: SlurmLab) -> None:
    """PreemptType=preempt/qos, PreemptMode=REQUEUE and high's Preempt=scavenger: the
    scavenger job holding every CPU goes back to the queue, restarted once, and the high job
    runs. Without the preemption keys the high job would wait for Resources."""
    scavenger, high = preempt(empty, "scavenger")
    requeued = job(empty, scavenger)
    assert requeued["JobState"] in ("PENDING", "REQUEUED"), requeued
    assert requeued["Restarts"] == "1", requeued
    assert high["QOS"] == "high"


def preempt(lab: SlurmLab, partition: str) -> tuple[str, dict[str, str]]:
    """Fill the node with a scavenger-QoS job in ``partition``, then submit a high job; the
    scavenger job's id, and the high job once it runs."""
    every_cpu = str(machine_cpus())
    scavenger = submit(lab, "-A", "ops", "-p", partition, "--qos=scavenger", "-n", every_cpu)
    wait_job(lab, scavenger, "running", lambda j: j["JobState"] in RUNNING)
    high = submit(lab, "-A", "ops", "-p", "open", "--qos=high", "-n", "1", "-t", "5")
    running = wait_job(lab, high, "running", lambda j: j["JobState"] in RUNNING)
    accounted = lab.run("sacct", "-n", "-X", "-P", "-D", "-j", scavenger, "-o", "state")
    assert "PREEMPTED" in accounted.split(), accounted
    return scavenger, running


def test_max_gpus_per_user_holds_the_second_gpu_job_of_the_qos(empty: SlurmLab) -> None:
    """high's max_gpus_per_user: 1 (MaxTRESPerUser=gres/gpu=1): a second one-GPU job in high
    waits with reason QOSMaxGRESPerUser while the node still has a GPU, which a job in
    normal then takes."""
    gpu_job = ("-A", "ops", "--gres=gpu:1", "-n", "1", "--mem=256M", "-t", "5")
    first = submit(empty, *gpu_job, "--qos=high")
    wait_job(empty, first, "running", lambda j: j["JobState"] in RUNNING)
    second = submit(empty, *gpu_job, "--qos=high")
    held = wait_job(
        empty,
        second,
        "held or running",
        lambda j: j["Reason"] != "None" or j["JobState"] in RUNNING,
    )
    assert (held["JobState"], held["Reason"]) == ("PENDING", "QOSMaxGRESPerUser"), held
    other = submit(empty, *gpu_job, "--qos=normal")
    wait_job(empty, other, "running", lambda j: j["JobState"] in RUNNING)
    assert job(empty, second)["JobState"] == "PENDING"


def test_a_job_longer_than_the_partition_max_time_is_refused(empty: SlurmLab) -> None:
    """open's max_time 1:00:00 with EnforcePartLimits=ALL: sbatch asking for more is
    refused at submission; the same request in scavenger, whose time is unlimited, runs."""
    out = empty.run(
        "sbatch", "-A", "ops", "-p", "open", "-t", "1:00:01", "--wrap", "true", check=False
    )
    assert "Requested time limit is invalid (missing or exceeds some limit)" in out, out
    assert not empty.run("squeue", "-h", "-o", "%i").strip()
    longer = submit(empty, "-A", "ops", "-p", "scavenger", "--qos=scavenger", "-t", "1:00:01")
    wait_job(empty, longer, "running", lambda j: j["JobState"] in RUNNING)


def test_backfill_starts_a_short_job_before_a_blocked_larger_one(empty: SlurmLab) -> None:
    """SchedulerType=sched/backfill: with one CPU busy for 10 minutes, a job needing every
    CPU waits with a reserved start time; a later 2-minute job ends before that start and
    runs at once, a later 20-minute one would delay it and waits. sched/builtin starts
    jobs strictly in priority order, so there the 2-minute job waits too."""
    busy = submit(empty, "-A", "ops", "-n", "1", "-t", "10")
    wait_job(empty, busy, "running", lambda j: j["JobState"] in RUNNING)
    large = submit(empty, "-A", "ops", "-n", str(machine_cpus()), "-t", "10")
    short = submit(empty, "-A", "ops", "-n", "1", "-t", "2")
    long = submit(empty, "-A", "ops", "-n", "1", "-t", "20")
    started = wait_job(
        empty, short, "running or planned", lambda j: j["JobState"] in RUNNING or not waiting(j)
    )
    assert started["JobState"] == "RUNNING", started
    # backfill has planned the waiting jobs: the large one from the busy job's end, the long
    # one after it
    blocked = wait_job(empty, large, "planned", lambda j: not waiting(j))
    planned = wait_job(empty, long, "planned", lambda j: not waiting(j))
    assert blocked["JobState"] == "PENDING", blocked
    assert planned["JobState"] == "PENDING", planned
    assert blocked["StartTime"] >= job(empty, busy)["EndTime"], (blocked, job(empty, busy))
    assert planned["StartTime"] >= blocked["StartTime"], (planned, blocked)
    assert started["EndTime"] <= blocked["StartTime"], (started, blocked)


def waiting(record: dict[str, str]) -> bool:
    """Whether the scheduler has given a pending job no expected start time yet."""
    return record["JobState"] == "PENDING" and record["StartTime"] in ("Unknown", "None")


def test_with_equal_usage_the_team_with_more_shares_starts_first(empty: SlurmLab) -> None:
    """Fair share (PriorityWeightFairshare; biology's fairshare 70 and climate's 30 in
    sacct.cfg, teams no other test uses): each team runs a one-CPU job on the full node for
    the same time; once slurmctld has counted that usage, biology's waiting job outranks
    climate's, submitted earlier, and takes the first free CPU. With equal shares the Fair
    Tree breaks the tie for climate (measured on 22.05), so this fails without the shares."""
    more, fewer = "biology", "climate"
    busy, queued = busy_and_waiting(empty, (fewer, more))
    usage = root_usage(empty)
    assert usage[more][1] > usage[fewer][1], usage  # sshare's FairShare factor
    order = priorities(empty)
    assert order[queued[more]] > order[queued[fewer]], (order, usage)
    empty.run("scancel", busy[fewer])
    wait_job(empty, queued[more], "running", lambda j: j["JobState"] in RUNNING)
    assert job(empty, queued[fewer])["JobState"] == "PENDING"


def test_new_shares_in_the_blueprint_reorder_waiting_jobs_once_applied(
    empty: SlurmLab, tmp_path: Path
) -> None:
    """A changed identity.teams[].fairshare, applied as plan says and the slurmdbd role does
    (`sacctmgr -i load file=sacct.cfg` of the new render into the running slurmdbd), changes
    the order slurmctld gives waiting jobs without a restart: biology's job outranks
    climate's at 70 shares to 30, and climate's outranks biology's once the blueprint gives
    climate 70 and biology 30. Without the reload the order stays, so this fails if
    sacctmgr's load kept an existing account's shares."""
    _, queued = busy_and_waiting(empty, ("climate", "biology"))
    before = priorities(empty)
    assert before[queued["biology"]] > before[queued["climate"]], before

    source = tmp_path / "swapped.yaml"
    source.write_text(blueprint(POLICIES.replace("MODE", "requeue"), climate=70, biology=30))
    planned = run_cli("plan", source, "-o", empty.rendered)
    assert "identity.teams[climate].fairshare\n      30  ->  70" in planned.stdout, planned
    assert "Fairshare change in slurmdbd with sacctmgr load" in planned.stdout, planned
    swapped = render_blueprint(tmp_path, source.read_text(), "swapped")

    applied = empty.etc / "sacct.cfg"
    original = applied.read_text()
    try:
        applied.write_text((swapped / "slurm" / "sacct.cfg").read_text())
        loaded = empty.run("sacctmgr", "-i", "load", f"file={applied}")
        assert "Nothing new added" not in loaded, loaded

        def reordered() -> bool:
            after = priorities(empty)
            return after[queued["climate"]] > after[queued["biology"]]

        # slurmctld recomputes fair-share factors every PriorityCalcPeriod (1 minute here)
        empty.wait_for(reordered, "climate's waiting job to outrank biology's", timeout=150)
        shares = empty.run("sshare", "-n", "-P", "-A", "climate,biology", "-o", "account,rawshares")
        assert {tuple(line.split("|")) for line in shares.split()} >= {
            ("climate", "70"),
            ("biology", "30"),
        }, shares
    finally:
        applied.write_text(original)
        empty.run("sacctmgr", "-i", "load", f"file={applied}")


def busy_and_waiting(
    lab: SlurmLab, teams: tuple[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Each team in ``teams`` runs a one-CPU job on the full node and then queues another;
    returns both sets of job ids once slurmctld has counted every team's usage."""
    busy = {team: submit(lab, "-A", team, "-n", "1", "-t", "10") for team in teams}
    for job_id in busy.values():
        wait_job(lab, job_id, "running", lambda j: j["JobState"] in RUNNING)
    queued = {team: submit(lab, "-A", team, "-n", "1", "-t", "5") for team in teams}

    def counted() -> bool:
        usage = root_usage(lab)
        return all(usage[team][0] > 0 for team in teams)

    # slurmctld counts running jobs' usage once a minute (PriorityCalcPeriod=1)
    lab.wait_for(counted, "the teams' usage counted", timeout=90)
    return busy, queued


def priorities(lab: SlurmLab) -> dict[str, int]:
    """sprio's priority of each waiting job."""
    rows = (line.split() for line in lab.run("sprio", "-h", "-o", "%i %Y").splitlines())
    return {job_id: int(value) for job_id, value in rows}


def root_usage(lab: SlurmLab) -> dict[str, tuple[int, float]]:
    """sshare's raw usage and fair-share factor of root's association in each team."""
    rows = lab.run("sshare", "-n", "-P", "-a", "-o", "account,user,rawusage,fairshare")
    fields = [line.strip().split("|") for line in rows.splitlines()]
    return {f[0]: (int(f[2]), float(f[3])) for f in fields if f[1] == "root" and f[0] != "root"}


# last in the file: the lab that cancels starts after the one that requeues has stopped
@pytest.mark.parametrize("policies", ["cancel"], indirect=True)
def test_preemption_mode_cancel_ends_the_preempted_job(empty: SlurmLab) -> None:
    """PreemptMode=CANCEL: the high job ends the scavenger job it preempts instead of
    requeueing it; slurmctld records it as preempted, never restarted."""
    scavenger, _ = preempt(empty, "scavenger")
    ended = wait_job(empty, scavenger, "ended", lambda j: j["JobState"] not in RUNNING)
    assert (ended["JobState"], ended["Restarts"]) == ("PREEMPTED", "0"), ended
