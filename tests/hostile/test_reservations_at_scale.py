"""Many reservations over a large pool: a small blueprint must not make validate compare every
host of every pair of reservations.

Each case runs the real CLI under a 1 GiB address-space cap and must finish within
:data:`capped.SECONDS`: valid, or with a finding at the reservation it is about.
"""

from __future__ import annotations

from pathlib import Path

from capped import SECONDS, run_capped

POOL = 65_536

HEAD = f"""\
estate: many
identity:
  users: [{{name: alice, uid: 10001}}]
  teams: [{{name: vision, gid: 20001, members: [alice]}}]
node_pools:
  - name: big
    scheduler: slurm
    hosts: n[00000-{POOL - 1:05d}]
    cpu: {{sockets: 1, cores_per_socket: 4, threads_per_core: 1}}
    memory_gb: 16
storage:
  - {{name: home, type: nfs, source: "nfs01:/export/home", mount: /home}}
slurm:
  controllers: [ctl]
  partitions:
    - {{name: all, pools: [big], default: true}}
  reservations:
"""


def blueprint(tmp_path: Path, reservations: list[str]) -> Path:
    path = tmp_path / "many.yaml"
    lines = [f"    - {{name: r{i:04d}, teams: [vision], {r}}}" for i, r in enumerate(reservations)]
    path.write_text(HEAD + "\n".join(lines) + "\n")
    return path


def test_300_one_hour_reservations_of_a_65536_host_pool_validate_quickly(tmp_path: Path) -> None:
    hours = [
        f"start: '2031-{1 + i // 24 // 28:02d}-{1 + i // 24 % 28:02d}T{i % 24:02d}:00', "
        "duration: '1:00:00', pools: [big]"
        for i in range(300)
    ]
    path = blueprint(tmp_path, hours)
    assert path.stat().st_size < 32_000
    run = run_capped("validate", path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "valid estate 'many'" in run.stdout
    assert run.seconds < SECONDS, run.seconds


def test_1000_reservations_of_one_pool_at_one_time_are_one_finding_each(tmp_path: Path) -> None:
    held = ["pools: [big]", "partition: all"]
    at_once = [
        f"start: '2031-01-01T00:00', duration: '1:00:00', {held[i % 2]}" for i in range(1000)
    ]
    run = run_capped("validate", blueprint(tmp_path, at_once), "--format", "json")
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stdout.count('"check/reservations-valid"') == 999
    assert run.stdout.count("while reservation 'r0000' does (and") == 998
    assert run.seconds < SECONDS, run.seconds


def test_1000_reservations_of_the_same_hosts_one_by_one_validate_quickly(tmp_path: Path) -> None:
    same = [
        "start: '2031-01-01T00:00', duration: '1:00:00', hosts: 'n[00000-00099]'"
        for _ in range(1000)
    ]
    run = run_capped("validate", blueprint(tmp_path, same), "--format", "json")
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stdout.count("holds 'n[00000-00099]' while reservation 'r0000' does") == 999
    assert run.seconds < SECONDS, run.seconds


def test_more_reservations_than_the_limit_are_refused_at_the_list(tmp_path: Path) -> None:
    many = ["start: '2031-01-01T00:00', duration: '1:00:00', pools: [big]"] * 1001
    run = run_capped("validate", blueprint(tmp_path, many))
    assert run.returncode == 1, run.stderr[-2000:]
    assert "slurm.reservations: 1001 reservations, above the limit of 1000" in run.stdout
    assert run.seconds < SECONDS, run.seconds


def test_reservations_naming_hosts_one_by_one_beyond_the_budget_are_refused(
    tmp_path: Path,
) -> None:
    by_name = [
        f"start: '2031-01-{1 + i:02d}T00:00', duration: '1:00:00', hosts: 'n[00000-{POOL - 1:05d}]'"
        for i in range(20)
    ]
    run = run_capped("validate", blueprint(tmp_path, by_name))
    assert run.returncode == 1, run.stderr[-2000:]
    assert "slurm.reservations: their hosts name 1310720 hosts in all" in run.stdout
    assert run.seconds < SECONDS, run.seconds
