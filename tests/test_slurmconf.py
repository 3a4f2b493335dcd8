"""slurm.conf(5), gres.conf(5) and topology.conf(5) as estategen reads a site's files.

Each test writes a small configuration and states what the parser makes of it, or which
file, line and column its error names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estategen import slurmconf
from estategen.slurmconf import (
    GRES_RECORDS,
    MAX_INCLUDE_DEPTH,
    TOPOLOGY_RECORDS,
    ConfSyntaxError,
    Where,
)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def parse(tmp_path: Path, text: str) -> slurmconf.ConfFile:
    return slurmconf.parse_file(write(tmp_path, "slurm.conf", text))


def error(tmp_path: Path, text: str) -> ConfSyntaxError:
    with pytest.raises(ConfSyntaxError) as caught:
        slurmconf.nodes(parse(tmp_path, text))
    return caught.value


def test_every_setting_keeps_its_file_line_and_column(tmp_path: Path) -> None:
    conf = parse(tmp_path, "ClusterName=alpha\n\n  SlurmctldPort=6817 SlurmdPort=6818\n")
    where = {s.key: s.where for s in conf.parameters}
    path = str(tmp_path / "slurm.conf")
    assert where == {
        "ClusterName": Where(path, 1, 1),
        "SlurmctldPort": Where(path, 3, 3),
        "SlurmdPort": Where(path, 3, 22),
    }


def test_keys_are_found_in_any_case(tmp_path: Path) -> None:
    conf = parse(tmp_path, "clustername=alpha\nnodename=n1 cpus=4\npartitionNAME=p Nodes=n1\n")
    assert conf.parameter("ClusterName") is not None
    assert [r.kind for r in conf.records] == ["NodeName", "PartitionName"]
    assert conf.records[0].get("CPUs") is not None


def test_comments_end_a_line_unless_escaped(tmp_path: Path) -> None:
    conf = parse(tmp_path, "# whole line\nClusterName=alpha # trailing\nFeature=a\\#b\n")
    assert [(s.key, s.value) for s in conf.parameters] == [
        ("ClusterName", "alpha"),
        ("Feature", "a#b"),
    ]


def test_a_backslash_continues_the_line_and_each_part_keeps_its_line(tmp_path: Path) -> None:
    conf = parse(tmp_path, "NodeName=n1 \\\n  CPUs=8 \\\n  RealMemory=1000\n")
    record = conf.records[0]
    assert [(s.key, s.where.line) for s in record.settings] == [("CPUs", 2), ("RealMemory", 3)]


def test_quoted_values_hold_spaces_and_lose_their_quotes(tmp_path: Path) -> None:
    conf = parse(tmp_path, 'PartitionName=p Nodes=n1 Reason="under repair # not a comment"\n')
    reason = conf.records[0].get("Reason")
    assert reason is not None and reason.value == "under repair # not a comment"


def test_an_unclosed_quote_names_where_it_opened(tmp_path: Path) -> None:
    err = error(tmp_path, 'ClusterName=alpha\nMailProg="/bin/mail\n')
    assert (err.where.line, err.where.column) == (2, 10)
    assert "not closed" in str(err)


def test_a_word_without_equals_is_an_error_at_its_column(tmp_path: Path) -> None:
    err = error(tmp_path, "NodeName=n1 CPUs\n")
    assert (err.where.line, err.where.column) == (1, 13)
    assert str(err).startswith(f"{tmp_path / 'slurm.conf'}:1:13: expected Key=Value")


def test_a_record_key_must_open_its_line(tmp_path: Path) -> None:
    err = error(tmp_path, "CPUs=4 NodeName=n1\n")
    assert (err.where.line, err.where.column) == (1, 8)


def test_include_is_relative_to_the_including_file(tmp_path: Path) -> None:
    write(tmp_path, "parts/nodes.conf", "Include more/gpu.conf\nNodeName=n1 CPUs=4\n")
    write(tmp_path, "parts/more/gpu.conf", "NodeName=g1 CPUs=8\n")
    conf = parse(tmp_path, "ClusterName=alpha\ninclude parts/nodes.conf\n")
    assert [r.name for r in conf.records] == ["g1", "n1"]
    assert conf.records[0].where.file == str(tmp_path / "parts/more/gpu.conf")
    assert len(conf.files) == 3


def test_include_takes_globs(tmp_path: Path) -> None:
    write(tmp_path, "conf.d/b.conf", "NodeName=b1\n")
    write(tmp_path, "conf.d/a.conf", "NodeName=a1\n")
    conf = parse(tmp_path, "Include conf.d/*.conf\n")
    assert [r.name for r in conf.records] == ["a1", "b1"]


def test_an_include_cycle_is_refused_where_it_closes(tmp_path: Path) -> None:
    write(tmp_path, "a.conf", "Include slurm.conf\n")
    err = error(tmp_path, "Include a.conf\n")
    assert err.where.file == str(tmp_path / "a.conf")
    assert (err.where.line, err.where.column) == (1, 9)
    assert "cycle" in str(err)


def test_includes_nest_only_so_deep(tmp_path: Path) -> None:
    for depth in range(MAX_INCLUDE_DEPTH + 1):
        write(tmp_path, f"{depth}.conf", f"Include {depth + 1}.conf\n")
    err = error(tmp_path, "Include 0.conf\n")
    assert "deeper" in str(err)


def test_a_missing_include_names_the_include_line(tmp_path: Path) -> None:
    err = error(tmp_path, "ClusterName=a\nInclude nowhere.conf\n")
    assert (err.where.line, err.where.column) == (2, 9)
    assert "cannot read" in str(err)


def test_node_defaults_apply_to_the_lines_after_them(tmp_path: Path) -> None:
    nodes = slurmconf.nodes(
        parse(
            tmp_path,
            "NodeName=DEFAULT CPUs=4 RealMemory=1000\n"
            "NodeName=a[1-2]\n"
            "NodeName=DEFAULT RealMemory=2000\n"
            "NodeName=b1 CPUs=8\n",
        )
    )
    shape = {host: {s.key: s.value for s in record.settings} for host, record in nodes.items()}
    assert shape == {
        "a1": {"CPUs": "4", "RealMemory": "1000"},
        "a2": {"CPUs": "4", "RealMemory": "1000"},
        "b1": {"RealMemory": "2000", "CPUs": "8"},
    }


def test_partition_defaults_apply_to_the_partitions_after_them(tmp_path: Path) -> None:
    conf = parse(
        tmp_path,
        "NodeName=n1\nPartitionName=DEFAULT MaxTime=60\n"
        "PartitionName=a Nodes=n1\nPartitionName=b Nodes=n1 MaxTime=30\n",
    )
    parts = slurmconf.with_defaults(conf.records, "PartitionName")
    assert [(p.name, p.get("MaxTime").value) for p in parts] == [("a", "60"), ("b", "30")]  # type: ignore[union-attr]


def test_several_nodename_lines_and_hostlists_name_each_host_once(tmp_path: Path) -> None:
    nodes = slurmconf.nodes(parse(tmp_path, "NodeName=n[01-03],gpu1 CPUs=4\nNodeName=n04\n"))
    assert list(nodes) == ["n01", "n02", "n03", "gpu1", "n04"]


def test_a_host_on_two_nodename_lines_is_refused(tmp_path: Path) -> None:
    err = error(tmp_path, "NodeName=n[1-3]\nNodeName=n2\n")
    assert err.where.line == 2
    assert "slurm.conf:1:1" in str(err)


def test_a_bad_hostlist_names_its_place(tmp_path: Path) -> None:
    err = error(tmp_path, "ClusterName=a\nNodeName=n[5-1]\n")
    assert (err.where.line, err.where.column) == (2, 1)
    assert "hostlist" in str(err)


def test_gres_lines_are_records_with_their_node_scope(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "gres.conf",
        "AutoDetect=nvml\nNodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
        "Name=gpu File=/dev/nvidia0 Count=1\n",
    )
    conf = slurmconf.parse_file(path, GRES_RECORDS)
    assert [[(s.key, s.value) for s in r.settings] for r in conf.records] == [
        [("AutoDetect", "nvml")],
        [("NodeName", "g[1-2]"), ("Name", "gpu"), ("Type", "a100"), ("File", "/dev/nvidia[0-3]")],
        [("Name", "gpu"), ("File", "/dev/nvidia0"), ("Count", "1")],
    ]


def test_topology_switches_are_records(tmp_path: Path) -> None:
    path = write(
        tmp_path, "topology.conf", "SwitchName=s0 Nodes=n[1-4]\nSwitchName=top Switches=s[0-1]\n"
    )
    conf = slurmconf.parse_file(path, TOPOLOGY_RECORDS)
    assert [(r.name, r.settings[0].key) for r in conf.records] == [
        ("s0", "Nodes"),
        ("top", "Switches"),
    ]


def test_an_unreadable_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(ConfSyntaxError, match="cannot read"):
        slurmconf.parse_file(tmp_path / "absent.conf")
    (tmp_path / "latin1.conf").write_bytes(b"ClusterName=a\nFeature=caf\xe9\n")
    with pytest.raises(ConfSyntaxError, match=r"latin1.conf:2:1: not UTF-8"):
        slurmconf.parse_file(tmp_path / "latin1.conf")
