"""`estategen import` of hostile site files: a slurm.conf (with what it includes), gres.conf,
topology.conf or sacctmgr dump that is wrong, huge or not a configuration file at all, and an
output path that is not a place for a blueprint.

Each case runs the real CLI under a 1 GiB address-space cap: it ends in the site's file and
line (or the output's path) with exit 1 (a site file import cannot read) or 2 (an output it
will not write), within seconds of CPU, never with a traceback, and quotes nothing of a line
it cannot read.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from capped import MEMORY_CAP, SECONDS, TIMEOUT

from estategen import hostlist
from estategen.limits import MAX_ESTATE_HOSTS
from estategen.slurmconf import MAX_INCLUDES, MAX_PARAMETERS, MAX_READ_BYTES

SITE = "ClusterName=lab\nSlurmctldHost=ctl\nNodeName=n[1-2] CPUs=4\nPartitionName=p Nodes=n[1-2]\n"


@dataclass(frozen=True)
class Imported:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float  # user and system time of the CLI process

    @property
    def last(self) -> str:
        """The line an error ends with."""
        return (self.stderr.strip().splitlines() or [""])[-1]


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_import(*args: str | Path, stdin: int | None = subprocess.DEVNULL) -> Imported:
    """``estategen import ARGS`` capped at 1 GiB of address space, killed after 30 s, with
    the CPU time it took (getrusage of this process's children, before and after)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, "-m", "estategen", "import", *map(str, args)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT,
        preexec_fn=_cap_memory,
        stdin=stdin,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Imported(result.returncode, result.stdout, result.stderr, cpu)


def assert_error(run: Imported, code: int, message: str) -> None:
    """Exit ``code`` with one ``estategen:`` line holding ``message``, and nothing else."""
    assert run.returncode == code, (run.returncode, run.stderr[-2000:])
    assert run.stderr.count("\n") == 1, run.stderr[-2000:]
    assert run.last.startswith("estategen: ") and message in run.last, run.last
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert run.cpu_seconds < SECONDS, run.cpu_seconds


def site(folder: Path, text: str = SITE, name: str = "slurm.conf") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- what import writes ---------------------------------------------------------------------


@pytest.mark.parametrize("which", ["slurm.conf", "included", "gres", "topology", "sacct"])
def test_the_output_is_never_a_file_the_import_reads(tmp_path: Path, which: str) -> None:
    slurm_conf = site(tmp_path, SITE + "Include nodes.conf\n")
    inputs = {
        "slurm.conf": slurm_conf,
        "included": site(tmp_path, "MinJobAge=600\n", "nodes.conf"),
        "gres": site(tmp_path, "AutoDetect=off\n", "gres.conf"),
        "topology": site(tmp_path, "SwitchName=s1 Nodes=n[1-2]\n", "topology.conf"),
        "sacct": site(tmp_path, "Cluster - 'lab'\nAccount - 'physics'\n", "sacct.cfg"),
    }
    before = {path: path.read_text() for path in inputs.values()}
    run = run_import(
        slurm_conf,
        "--gres",
        inputs["gres"],
        "--topology",
        inputs["topology"],
        "--sacct",
        inputs["sacct"],
        "-o",
        inputs[which],
    )
    assert_error(run, 2, f"{inputs[which]}: is {inputs[which]}, which this command reads")
    assert {path: path.read_text() for path in inputs.values()} == before


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_link_to_slurm_conf_is_not_an_output(tmp_path: Path, link: str) -> None:
    slurm_conf = site(tmp_path)
    out = tmp_path / "site.yaml"
    if link == "symbolic":
        out.symlink_to(slurm_conf)
        message = f"{out}: exists and is not a file; choose another output file"
    else:
        os.link(slurm_conf, out)
        message = f"{out}: is {slurm_conf}, which this command reads"
    assert_error(run_import(slurm_conf, "-o", out), 2, message)
    assert slurm_conf.read_text() == SITE


def test_an_output_that_is_not_a_regular_file_is_not_replaced(tmp_path: Path) -> None:
    """A FIFO, and as root a device (what `-o /dev/null` names), stay as they are."""
    slurm_conf = site(tmp_path)
    outputs = [tmp_path / "fifo"]
    os.mkfifo(outputs[0])
    if os.geteuid() == 0:
        outputs.append(tmp_path / "null")
        os.mknod(outputs[1], 0o666 | 0o020000, os.makedev(1, 3))  # a character device
    for out in outputs:
        kind = os.lstat(out).st_mode
        run = run_import(slurm_conf, "-o", out)
        assert_error(run, 2, f"{out}: exists and is not a file; choose another output file")
        assert os.lstat(out).st_mode == kind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["slurm.conf", *(p.name for p in outputs)]
    )


FAULTS = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pathlib import Path

    disk, slurm_conf, lab = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    def sh(*command):
        return subprocess.run(command, capture_output=True, text=True)
    def estategen(*args):
        run = sh(sys.executable, "-m", "estategen", *args)
        return {"code": run.returncode, "stderr": run.stderr, "left": sorted(os.listdir(disk))}
    mounted = sh("mount", "-t", "tmpfs", "-o", "size=1m", "estategen-test", str(disk))
    if mounted.returncode:
        print(json.dumps({"skip": mounted.stderr.strip()}))
        sys.exit(0)
    result = {}
    with open(disk / "filler", "wb", buffering=0) as filler:  # the disk full to the byte
        try:
            while True:
                filler.write(b"x" * 4096)
        except OSError:
            pass
    result["full"] = estategen("import", slurm_conf, "-o", str(disk / "site.yaml"))
    result["full report"] = estategen("report", lab, "-o", str(disk))
    os.unlink(disk / "filler")
    sh("mount", "-o", "remount,ro", str(disk))
    result["read-only"] = estategen("import", slurm_conf, "-o", str(disk / "site.yaml"))
    result["read-only report"] = estategen("report", lab, "-o", str(disk))
    print(json.dumps(result))
    """
)


def test_a_full_or_read_only_disk_is_an_error_that_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs root and unshare to mount a private, size-limited tmpfs")
    import json

    from conftest import BLUEPRINTS

    disk = tmp_path / "disk"
    disk.mkdir()
    slurm_conf = site(tmp_path, SITE + "".join(f"MinJobAge={n}\n" for n in range(300)))
    command = ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", FAULTS]
    command += [str(disk), str(slurm_conf), str(BLUEPRINTS / "lab.yaml")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if run.returncode and "unshare" in run.stderr:
        pytest.skip(f"cannot create a mount namespace: {run.stderr.strip()}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(f"cannot mount a tmpfs: {result['skip']}")
    expected = {
        "full": ("No space left on device", ["filler"]),
        "full report": ("No space left on device", ["filler"]),
        "read-only": ("Read-only file system", []),
        "read-only report": ("Read-only file system", []),
    }
    for case, (reason, left) in expected.items():
        found = result[case]
        assert found["code"] == 2, (case, found)
        assert reason in found["stderr"] and "internal error" not in found["stderr"], found
        assert found["left"] == left, (case, found)  # no .site.yaml.*.tmp, no .report.md.*.tmp


# --- what import reads ----------------------------------------------------------------------


def test_an_include_of_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    slurm_conf = site(tmp_path, SITE + "Include pipe\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, f"{slurm_conf}:5:9: cannot read included '{tmp_path / 'pipe'}': a named")
    assert "not a regular file" in run.last


def test_an_include_of_stdin_is_refused_while_stdin_stays_open(tmp_path: Path) -> None:
    slurm_conf = site(tmp_path, SITE + "Include /dev/stdin\n")
    reading, writing = os.pipe()  # a writer that never writes nor closes
    try:
        run = run_import(slurm_conf, "-o", tmp_path / "site.yaml", stdin=reading)
    finally:
        os.close(reading)
        os.close(writing)
    assert_error(run, 1, f"{slurm_conf}:5:9: cannot read included '/dev/stdin': a named pipe")


@pytest.mark.parametrize("where", ["include", "glob", "argument"])
def test_a_symlink_loop_is_the_line_that_reaches_it(tmp_path: Path, where: str) -> None:
    (tmp_path / "loop1.conf").symlink_to("loop2.conf")
    (tmp_path / "loop2.conf").symlink_to("loop1.conf")
    if where == "argument":
        run = run_import(tmp_path / "loop1.conf", "-o", tmp_path / "site.yaml")
        assert_error(run, 1, f"{tmp_path / 'loop1.conf'}:0:0: cannot read: Too many levels")
    else:
        target = "loop1.conf" if where == "include" else "loop*.conf"
        slurm_conf = site(tmp_path, SITE + f"Include {target}\n")
        run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
        assert_error(run, 1, f"{slurm_conf}:5:9: cannot read included")
    assert "(a symbolic link loop)" in run.last
    assert not (tmp_path / "site.yaml").exists()


def test_a_diamond_of_includes_stops_at_the_include_bound(tmp_path: Path) -> None:
    """Six files of 20 Includes of the next reach the last one 20**6 times: refused after
    MAX_INCLUDES, at the Include line that goes beyond."""
    for level in range(6):
        site(tmp_path, f"Include l{level + 1}.conf\n" * 20, f"l{level}.conf")
    site(tmp_path, "".join(f"NodeName=x{n}\n" for n in range(10)), "l6.conf")
    slurm_conf = site(tmp_path, SITE + "Include l0.conf\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, f"more than {MAX_INCLUDES} files included (each Include of a file")
    assert run.last.startswith(f"estategen: {tmp_path / 'l5.conf'}:")


def test_a_file_included_twice_is_read_once_and_listed_once(tmp_path: Path) -> None:
    from estategen.importer.site import import_site

    site(tmp_path, "MinJobAge=600\n", "common.conf")
    slurm_conf = site(tmp_path, SITE + "Include common.conf\nInclude ./common.conf\n")
    imported = import_site(slurm_conf)
    assert imported.inputs == (str(slurm_conf), str(tmp_path / "common.conf"))


def test_the_bytes_of_all_files_together_are_bounded(tmp_path: Path) -> None:
    """Two files of comments, each below the bound, together above it."""
    half = "#" * 99 + "\n"
    for name in ("a.conf", "b.conf"):
        site(tmp_path, half * (MAX_READ_BYTES // 2 // len(half) + 1), name)
    slurm_conf = site(tmp_path, SITE + "Include a.conf\nInclude b.conf\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(
        run,
        1,
        f"{slurm_conf}:6:9: including '{tmp_path / 'b.conf'}' brings the files import reads "
        f"above {MAX_READ_BYTES} bytes in all",
    )


# --- memory -----------------------------------------------------------------------------------


def test_parameters_are_bounded_at_the_line_that_goes_beyond(tmp_path: Path) -> None:
    """Each parameter passed through is a slurm.options key the blueprint renders and import
    reads back: 1,001 of them (slurm.conf(5) knows about 350) are refused."""
    keys = "".join(f"Key{n}=1\n" for n in range(MAX_PARAMETERS - 1))
    slurm_conf = site(tmp_path, "ClusterName=lab\nNodeName=n1\n" + keys + "MinJobAge=1\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    line = MAX_PARAMETERS + 2  # ClusterName is the first parameter, NodeName no parameter
    assert_error(run, 1, f"{slurm_conf}:{line}:1: more than {MAX_PARAMETERS} parameters outside")


def test_a_slurm_conf_of_16_mib_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    pairs = " ".join(f"K{n}=v" for n in range(8)) + "\n"
    slurm_conf = site(tmp_path, SITE + pairs * (16 * 1024 * 1024 // len(pairs)))
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, f"{slurm_conf}:0:0: ")
    assert f"bring the files import reads above {MAX_READ_BYTES} bytes" in run.last


def test_nodename_lines_are_counted_before_any_is_expanded(tmp_path: Path) -> None:
    """60 lines of 65,536 hosts each (2.6 KB): refused at the line that passes the estate
    limit, before that line is expanded."""
    lines = "".join(f"NodeName=h{n}x[00000-65535] CPUs=4\n" for n in range(60))
    slurm_conf = site(tmp_path, "ClusterName=lab\n" + lines + "PartitionName=p Nodes=ALL\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(
        run, 1, f"{slurm_conf}:3:1: NodeName lines name more than {MAX_ESTATE_HOSTS} hosts"
    )


def test_hosts_named_by_partitions_are_bounded_in_all(tmp_path: Path) -> None:
    """900 partitions of 65,536 hosts each would be 59 million names."""
    parts = "".join(f"PartitionName=p{n} Nodes=n[00001-65536]\n" for n in range(900))
    slurm_conf = site(tmp_path, "ClusterName=lab\nNodeName=n[00001-65536]\n" + parts)
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, "hostlists name more than")
    assert run.last.startswith(f"estategen: {slurm_conf}:")


def test_a_pool_of_more_hosts_than_one_expression_names_validates(tmp_path: Path) -> None:
    """100,000 identical nodes: one pool whose hosts are two expressions."""
    slurm_conf = site(
        tmp_path,
        "ClusterName=lab\nSlurmctldHost=ctl\nNodeName=h[000001-060000] CPUs=4\n"
        "NodeName=h[060001-100000] CPUs=4\nPartitionName=p Nodes=ALL\n",
    )
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert run.returncode == 0, run.stderr
    pools = yaml.safe_load((tmp_path / "site.yaml").read_text())["node_pools"]
    assert [p["hosts"] for p in pools] == [["h[000001-065536]", "h[065537-100000]"]]


def test_nodes_with_addresses_go_to_pools_one_addresses_expression_can_name(
    tmp_path: Path,
) -> None:
    slurm_conf = site(
        tmp_path,
        "ClusterName=lab\nSlurmctldHost=ctl\n"
        "NodeName=a[00000-65535] NodeAddr=10.0.[0-255].[0-255] CPUs=4\n"
        "NodeName=b[1-4] NodeAddr=10.1.0.[1-4] CPUs=4\nPartitionName=p Nodes=ALL\n",
    )
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert run.returncode == 0, run.stderr
    pools = yaml.safe_load((tmp_path / "site.yaml").read_text())["node_pools"]
    assert [p["hosts"] for p in pools] == ["a[00000-65535]", "b[1-4]"]
    assert hostlist.count(pools[0]["addresses"], addresses=True) == 65_536
    assert pools[1]["addresses"] == "10.1.0.[1-4]"


def test_the_costliest_input_within_the_bounds_imports_in_seconds(tmp_path: Path) -> None:
    """Just under MAX_READ_BYTES of NodeName lines with NodeAddr (the costliest line per byte
    measured): imported within 1 GiB, in a few seconds of CPU."""
    lines, size, n = [], 0, 0
    while True:
        line = f"NodeName=a{n}x[1-4] NodeAddr=10.{n // 250 % 250}.{n % 250}.[1-4]\n"
        if size + len(line) > MAX_READ_BYTES - 200:
            break
        lines.append(line)
        size += len(line)
        n += 1
    slurm_conf = site(tmp_path, "ClusterName=lab\nSlurmctldHost=ctl\n" + "".join(lines))
    started = time.monotonic()
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.cpu_seconds < SECONDS, run.cpu_seconds
    assert time.monotonic() - started < TIMEOUT


# --- a finding, not an internal error ----------------------------------------------------------


@pytest.mark.parametrize("nodes", ["cpu[01-08", "cpu[01-08]]"])
@pytest.mark.parametrize("record", ["PartitionName=p", "NodeSet=ns"])
def test_an_unbalanced_bracket_in_nodes_is_the_sites_line(
    tmp_path: Path, nodes: str, record: str
) -> None:
    line = f"{record} Nodes={nodes}\n"
    text = "ClusterName=lab\nNodeName=cpu[01-08]\n" + line
    if record.startswith("NodeSet"):
        text += "PartitionName=p Nodes=ns\n"
    slurm_conf = site(tmp_path, text)
    column = len(record) + 2
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, f"{slurm_conf}:3:{column}: Nodes: ")
    assert "in hostlist" in run.last


@pytest.mark.parametrize(
    "fairshare",
    [
        pytest.param("²", id="superscript-two"),
        pytest.param("9" * 5000, id="5000-digits"),
        "parent",
        "0",
    ],
)
def test_a_fairshare_the_blueprint_cannot_hold_is_refused_with_its_line(
    tmp_path: Path, fairshare: str
) -> None:
    sacct = site(tmp_path, f"Cluster - 'lab'\nAccount - 'physics':Fairshare={fairshare}\n", "a.cfg")
    run = run_import(site(tmp_path), "--sacct", sacct, "-o", tmp_path / "site.yaml")
    assert run.returncode == 4, run.stderr  # written; a setting is refused
    assert f"{sacct}:2:1: refused: Fairshare=" in run.stdout
    assert "identity.teams[].fairshare: " in run.stdout
    teams = yaml.safe_load((tmp_path / "site.yaml").read_text())["identity"]["teams"]
    assert teams == [{"name": "physics", "gid": 60000}]  # Slurm's default share of 1


def test_fairshare_is_bounded_as_the_schema_bounds_it() -> None:
    from estategen.importer.accounts import MAX_FAIRSHARE
    from estategen.schema.json_schema import json_schema

    teams = json_schema()["properties"]["identity"]["properties"]["teams"]
    fairshare = teams["items"]["properties"]["fairshare"]
    assert (fairshare["minimum"], fairshare["maximum"]) == (1, MAX_FAIRSHARE)


def test_numbers_are_ascii_digits(tmp_path: Path) -> None:
    """int() reads '١٢' as 12 and '1_2' as 12; a slurm.conf number is ASCII digits."""
    slurm_conf = site(tmp_path, SITE.replace("p Nodes", "p PriorityTier=١٢ GraceTime=1_2 Nodes"))
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert run.returncode == 4, run.stderr  # written; a setting is refused
    assert "refused: PriorityTier=١٢ -> priority_tier: '١٢' is not a whole number" in run.stdout
    assert "refused: GraceTime=1_2 -> grace_time: '1_2' is not a whole number" in run.stdout


# --- no content of a line import cannot read ---------------------------------------------------

SHADOW = "root:$6$saltsalt$SECRETHASHSECRETHASH:19000:0:99999:7:::\n"


def test_an_include_of_a_file_that_is_not_slurms_quotes_none_of_it(tmp_path: Path) -> None:
    shadow = site(tmp_path, SHADOW, "etc/shadow")
    slurm_conf = site(tmp_path, SITE + f"Include {shadow}\n")
    run = run_import(slurm_conf, "-o", tmp_path / "site.yaml")
    assert_error(run, 1, f"{shadow}:1:1: expected Key=Value (or Include FILE)")
    assert "is this file a Slurm configuration file?" in run.last
    for part in ("root:", "$6$", "SECRETHASH", "19000"):
        assert part not in run.stdout + run.stderr


def test_secrets_of_an_env_file_included_through_a_link_go_nowhere(tmp_path: Path) -> None:
    site(tmp_path, "DB_PASSWORD=hunter2\nAPI_TOKEN=abc123\n", "app/.env")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "site.conf").symlink_to(tmp_path / "app" / ".env")
    slurm_conf = site(tmp_path / "etc", SITE + "Include site.conf\n")
    out = tmp_path / "site.yaml"
    run = run_import(slurm_conf, "-o", out)
    assert_error(run, 1, f"{tmp_path / 'etc' / 'site.conf'}:1:1: expected Key=Value with a key")
    assert "hunter2" not in run.stdout + run.stderr and "DB_PASSWORD" not in run.stderr
    assert not out.exists()
