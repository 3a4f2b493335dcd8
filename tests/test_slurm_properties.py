"""Every valid Slurm blueprint renders a slurm.conf the installed slurmctld (22.05 or 24.11)
starts on and reads as the blueprint means it.

Blueprints are generated: pools of any shape (down to 1 GB of memory, CPU-only or with GPUs,
MIG, shards), leaf switches, partitions over mixed pools, times in every slurm.conf format,
with and without accounting (half each). Each example is rendered and slurmctld started on it (with
slurmdbd and MariaDB when the blueprint has accounting); `scontrol` must then show every node
with its memory and CPUs, and every partition with its nodes and its time limits as Slurm
normalises them. Expected times are computed here from the generated fields, not by the
parser under test.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_properties import MIG_MODELS, MODELS, examples, host_expressions, mig_layout, to_bytes

from estategen.load import parse_blueprint
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.render import render
from estategen.slurm_facts import real_memory_mib

from mariadb import MariaDB, have_mariadb
from slurmlab import (
    Dbd,
    SlurmLab,
    have_slurm,
    installed_slurm_source,
    installed_slurm_version,
    slurmdbd_database,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_slurm(), reason="needs slurm-wlm, munge and unshare"),
]

STARTS = 7  # slurmctld starts per case, with and without accounting: about 1 s each, 8 s with
DBD_HOST = "dbd"


@st.composite
def slurm_times(draw: st.DrawFn, finite: bool = False) -> tuple[str, int | None]:
    """A time in one of the slurm.conf(5) formats, fields free of any range (``2:75:00``),
    with the minutes Slurm reads from it (seconds rounded up), ``None`` for UNLIMITED."""
    kinds = ["M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S"]
    kind = draw(st.sampled_from(kinds if finite else [*kinds, "UNLIMITED", "INFINITE"]))
    if kind in ("UNLIMITED", "INFINITE"):
        return kind, None
    values = {
        "D": draw(st.integers(0, 400)),
        "H": draw(st.integers(0, 99)),
        "M": draw(st.integers(0, 200)),
        "S": draw(st.integers(0, 200)),
    }
    pad = draw(st.sampled_from([1, 2, 3]))
    text = re.sub("[DHMS]", lambda m: f"{values[m.group()]:0{pad}d}", kind)
    seconds = values["S"] if "S" in kind else 0
    minutes = values["M"] if "M" in kind else 0
    hours = values["H"] if "H" in kind else 0
    days = values["D"] if "D" in kind else 0
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return text, -(-total // 60)


def shown(minutes: int | None) -> str:
    """How scontrol prints a time limit: [D-]HH:MM:SS, or UNLIMITED."""
    if minutes is None:
        return "UNLIMITED"
    days, rest = divmod(minutes, 1440)
    clock = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


@st.composite
def slurm_estates(
    draw: st.DrawFn, accounting: bool
) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
    """A valid Slurm-only blueprint for the installed Slurm, and each partition's expected
    (MaxTime, DefaultTime) as scontrol shows them."""
    users = [{"name": f"u{i}", "uid": 10_000 + i} for i in range(draw(st.integers(0, 3)))]
    teams = [
        {"name": f"team{j}", "gid": 20_000 + j, "members": [u["name"] for u in users][:j]}
        for j in range(draw(st.integers(0, 2)))
    ]
    switches = draw(st.booleans())
    pools = []
    for i in range(draw(st.integers(1, 4))):
        expressions, count = draw(host_expressions(f"h{i}"))
        pool: dict[str, Any] = {
            "name": f"pool{i}",
            "scheduler": "slurm",
            "hosts": expressions[0] if len(expressions) == 1 else expressions,
            "cpu": {
                "sockets": draw(st.integers(1, 4)),
                "cores_per_socket": draw(st.integers(1, 64)),
                "threads_per_core": draw(st.integers(1, 2)),
            },
            "memory_gb": draw(st.sampled_from([1, 2, 3, 4]) | st.integers(1, 4096)),
        }
        if draw(st.booleans()):
            model = draw(st.sampled_from(sorted(MODELS)))
            gpus: dict[str, Any] = {"model": model, "count": draw(st.integers(1, 8))}
            if model in MIG_MODELS and draw(st.booleans()):
                gpus["mig"] = draw(mig_layout(model))
            elif draw(st.booleans()):
                gpus["sharing"] = {"shard": draw(st.integers(1, 16))}
            pool["gpus"] = gpus
        if switches and draw(st.booleans()):
            pool["network"] = {"switch": f"sw{i}-[1-{draw(st.integers(1, min(count, 3)))}]"}
        pool["features"] = draw(st.lists(st.sampled_from(["ib", "nvme"]), unique=True))
        pools.append(pool)

    half_life, decay_minutes = draw(slurm_times(finite=True))
    if decay_minutes == 0:
        half_life = "7-0"  # slurmctld refuses a half-life of 0 (estategen does too)
    slurm: dict[str, Any] = {
        "packages": {"source": installed_slurm_source()},
        "controllers": ["ctl-1", "ctl-2"][: draw(st.integers(1, 2))],
        "scheduling": {"fairshare_half_life": half_life},
    }
    if any("mig" in pool.get("gpus", {}) for pool in pools):
        # Debian builds Slurm without NVML, which MIG needs (on slurmd's side: slurmctld, the
        # one daemon started here, never calls it): a site repository of the same release
        slurm["packages"] = {
            "source": "site",
            "apt_repository": "deb https://slurm.example.org/debian bookworm main",
            "nvml": True,
        }
    if accounting:
        slurm["accounting"] = {
            "host": DBD_HOST,
            "database": {"host": "db", "password": {"secret": "db_pw"}},
        }
        wall, wall_minutes = draw(slurm_times())
        slurm["qos"] = [{"name": "normal"}, {"name": "low", "max_time": wall}]
    expected: dict[str, tuple[Any, Any]] = {}
    if accounting:
        # sacctmgr shows an unlimited MaxWall as an empty field
        expected["qos low"] = (shown(wall_minutes) if wall_minutes is not None else "", None)
    partitions = []
    names = [p["name"] for p in pools]
    for n in range(draw(st.integers(1, 3))):
        max_time, limit = draw(slurm_times())
        partition: dict[str, Any] = {
            "name": f"part{n}",
            "pools": draw(st.lists(st.sampled_from(names), min_size=1, unique=True)),
            "max_time": max_time,
            "default": n == 0,
        }
        default = None
        if draw(st.booleans()):
            text, default = draw(slurm_times(finite=True))
            if limit is not None and default is not None and default > limit:
                text, default = max_time, limit
            partition["default_time"] = text
        if teams and draw(st.booleans()):
            partition["teams"] = [teams[0]["name"]]
        if accounting and draw(st.booleans()):
            partition["qos"] = "low"
        partitions.append(partition)
        expected[partition["name"]] = (
            shown(limit),
            shown(default) if default is not None else None,
        )
    slurm["partitions"] = partitions
    blueprint = {
        "estate": "prop",
        "versions": {"slurm": installed_slurm_version()},
        "identity": {"users": users, "teams": teams},
        "node_pools": pools,
        "slurm": slurm,
    }
    return blueprint, expected


def records(text: str) -> dict[str, dict[str, str]]:
    """`scontrol -o show ...` output by name: one record per line of Key=Value pairs."""
    out = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields:
            out[next(iter(fields.values()))] = fields
    return out


@pytest.fixture(scope="module")
def database() -> Iterator[MariaDB | None]:
    """One MariaDB for every example; each example runs its own slurmdbd under its munge key."""
    if not have_mariadb():
        yield None
        return
    with tempfile.TemporaryDirectory() as folder, slurmdbd_database(Path(folder)) as shared:
        yield shared


CLUSTER_NUMBERS = itertools.count()


@settings(
    examples(STARTS),
    # each example starts daemons: report the first failing blueprint rather than shrink it
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
)
@given(data=st.data())
@pytest.mark.parametrize("uses_accounting", [False, True], ids=["no-accounting", "accounting"])
def test_slurmctld_starts_on_every_valid_blueprint_and_reads_it_as_meant(
    database: MariaDB | None, uses_accounting: bool, data: st.DataObject
) -> None:
    if uses_accounting and database is None:
        pytest.skip("needs mariadb-server")
    blueprint, expected_times = data.draw(slurm_estates(uses_accounting))
    # each example registers its own cluster with the shared database
    blueprint["slurm"]["cluster_name"] = f"prop{next(CLUSTER_NUMBERS)}"
    validated = validate_document(parse_blueprint(to_bytes(blueprint), "bp.yaml"))
    assert not [f for f in validated.findings if f.level == "error"]
    estate: Estate = validated.estate
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        for path, output in render(estate).items():
            if path.startswith("slurm/"):
                (work / "out" / path).parent.mkdir(parents=True, exist_ok=True)
                (work / "out" / path).write_bytes(output.content)
        hosts = [h for pool in estate.slurm_pools for h in pool.hosts]
        with SlurmLab.running(
            work / "out",
            work / "run",
            [*hosts, *estate.slurm.controllers, DBD_HOST, "db"],
            controller=estate.slurm.controllers[0],
            dbd=Dbd(DBD_HOST, database=database) if uses_accounting else None,
        ) as cluster:
            if uses_accounting:
                shown = cluster.run("sacctmgr", "-n", "-P", "show", "qos", "format=name,maxwall")
                walls = dict(line.split("|") for line in shown.splitlines())
                assert walls["low"] == expected_times.pop("qos low")[0]
            nodes = records(cluster.run("scontrol", "-o", "show", "node"))
            partitions = records(cluster.run("scontrol", "-o", "show", "partition"))

    assert set(nodes) == set(hosts)
    for pool in estate.slurm_pools:
        assert pool.cpu is not None and pool.memory_gb is not None
        for host in pool.hosts:
            assert nodes[host]["RealMemory"] == str(real_memory_mib(pool.memory_gb))
            assert int(nodes[host]["RealMemory"]) >= pool.memory_gb * 512
            assert nodes[host]["CPUTot"] == str(pool.cpu.threads)
    assert set(partitions) == {p.name for p in estate.slurm.partitions}
    for part in estate.slurm.partitions:
        facts = partitions[part.name]
        members = {h for name in part.pools for h in estate.pools_by_name[name].hosts}
        assert facts["TotalNodes"] == str(len(members))
        max_time, default_time = expected_times[part.name]
        assert facts["MaxTime"] == max_time
        assert facts["DefaultTime"] == (default_time or "NONE")
        assert "DefMemPerCPU" in facts, "a job without a memory option must not take a node"
