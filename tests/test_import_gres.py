"""What `estategen import` keeps of a site's GPU GRES beyond one type of whole GPUs at
/dev/nvidia0..N-1: the device files gres.conf names, MPS and shard GRES, and nodes with GPUs
of two types. Each setting has one outcome, and `mapped` only where the render gives slurmctld and
slurmd the site's value (gres.conf(5): File, Type, Cores; slurm.conf(5): Gres)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load
from estategen.importer.outcomes import Imported, Outcome
from estategen.importer.site import import_site
from estategen.pipeline import validate_document
from estategen.renderers.slurm import gres_conf, slurm_conf

BASE = "ClusterName=lab\nSlurmctldHost=ctl\nSelectType=select/cons_tres\n"


def imported(tmp_path: Path, slurm: str, gres: str) -> Imported:
    (tmp_path / "slurm.conf").write_text(BASE + slurm)
    (tmp_path / "gres.conf").write_text(gres)
    return import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf")


def pools(result: Imported) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in yaml.safe_load(result.text)["node_pools"]}


def outcome(result: Imported, file: str, line: int, key: str) -> Outcome:
    """The one outcome of the setting ``key`` on ``line`` of ``file`` (an item of a Gres=
    list is its own setting: the first whose value starts with ``key`` after the '=')."""
    found = [
        o
        for o in result.outcomes
        if Path(o.where.file).name == file
        and o.where.line == line
        and (o.key == key or f"{o.key}={o.value}".startswith(key))
    ]
    assert len(found) == 1, found
    return found[0]


def one_outcome_each(result: Imported) -> None:
    counts = Counter((o.where, o.key, o.value) for o in result.outcomes)
    assert [k for k, n in counts.items() if n > 1] == []


def rendered_gres(result: Imported) -> list[str]:
    estate = validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate
    return [line for line in gres_conf(estate).splitlines() if "Name=gpu" in line]


def rendered_nodes(result: Imported) -> list[str]:
    estate = validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate
    return [line for line in slurm_conf(estate).splitlines() if line.startswith("NodeName=")]


# --- device files ---------------------------------------------------------------------------


def test_a_nodes_own_device_files_are_kept_and_rendered(tmp_path: Path) -> None:
    """n2 holds its one GPU at minor 1: the render's gres.conf names /dev/nvidia1, not
    /dev/nvidia0, so slurmd gives jobs that GPU's device (gres.conf(5) File)."""
    result = imported(
        tmp_path,
        "NodeName=n[1-2] CPUs=8 Gres=gpu:a100:1\nPartitionName=p Nodes=n[1-2]\n",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
        "NodeName=n2 Name=gpu Type=a100 File=/dev/nvidia1\n",
    )
    by_hosts = {p["hosts"]: p["gpus"] for p in pools(result).values()}
    assert "files" not in by_hosts["n1"]
    assert by_hosts["n2"]["files"] == ["/dev/nvidia1"]
    assert outcome(result, "gres.conf", 2, "File").kind == "mapped"
    assert outcome(result, "gres.conf", 2, "File").target == "node_pools[].gpus.files"
    assert "NodeName=n2 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia1" in rendered_gres(
        result
    )
    one_outcome_each(result)
    assert result.faithful


def test_device_file_ranges_and_lists_are_read_file_by_file(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:v100:4\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia[1-2],/dev/nvidia4\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia7\n",
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["files"] == ["/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia4", "/dev/nvidia7"]
    assert (
        "NodeName=n1 AutoDetect=off Name=gpu Type=v100 "
        "File=/dev/nvidia1,/dev/nvidia2,/dev/nvidia4,/dev/nvidia7"
    ) in rendered_gres(result)
    one_outcome_each(result)


def test_one_line_per_gpu_with_the_default_files_keeps_no_files_and_refuses_cores(
    tmp_path: Path,
) -> None:
    """The common per-GPU form: each line one File and its Cores. The files are the render's
    own; Cores (GPU-to-CPU affinity) is not a blueprint key, so it is refused, not mapped."""
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:v100:2\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia0 Cores=0-3\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia1 Cores=4-7\n",
    )
    (pool,) = pools(result).values()
    assert "files" not in pool["gpus"]
    for line in (1, 2):
        assert outcome(result, "gres.conf", line, "File").kind == "mapped"
        cores = outcome(result, "gres.conf", line, "Cores")
        assert cores.kind == "refused" and "Cores=" in cores.target
    one_outcome_each(result)
    assert not result.faithful


def test_device_files_that_do_not_count_the_gpus_are_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100:4\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
    )
    (pool,) = pools(result).values()
    assert "files" not in pool["gpus"]
    found = outcome(result, "gres.conf", 1, "File")
    assert found.kind == "refused" and "2 device files for its 4 GPUs" in found.target
    one_outcome_each(result)


def test_nodes_of_one_line_with_other_device_files_become_pools_per_file_set(
    tmp_path: Path,
) -> None:
    result = imported(
        tmp_path,
        "NodeName=n[1-4] CPUs=8 Gres=gpu:a100:2\nPartitionName=p Nodes=n[1-4]\n",
        "NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-1]\n"
        "NodeName=n[3-4] Name=gpu Type=a100 File=/dev/nvidia[2-3]\n",
    )
    files = {p["hosts"]: p["gpus"].get("files") for p in pools(result).values()}
    assert files == {"n[1-2]": None, "n[3-4]": ["/dev/nvidia2", "/dev/nvidia3"]}
    assert result.faithful


# --- MPS ------------------------------------------------------------------------------------


MPS_NODE = "GresTypes=gpu,mps\nNodeName=n1 CPUs=8 Gres=gpu:a100:4,{mps}\nPartitionName=p Nodes=n1\n"
MPS_GPUS = "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"


def rendered_mps(result: Imported) -> list[str]:
    estate = validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate
    return [line for line in gres_conf(estate).splitlines() if "Name=mps" in line]


def test_mps_gres_becomes_shares_a_gpu_and_renders_the_sites_count(tmp_path: Path) -> None:
    """The common site form (SchedMD/slurm slurm-22-05-8-1 doc/html/gres.shtml "MPS
    Management", gres.conf Example 1): Gres=gpu:4,mps:400 and one gres.conf line
    Name=mps Count=400, which slurmd spreads over the four GPUs: 100 shares each, which
    gpus.sharing.mps holds. The render gives slurmctld and slurmd the same counts."""
    result = imported(
        tmp_path, MPS_NODE.format(mps="mps:400"), MPS_GPUS + "NodeName=n1 Name=mps Count=400\n"
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"mps": 100}
    assert outcome(result, "slurm.conf", 5, "Gres=mps").kind == "mapped"
    for key in ("NodeName", "Name", "Count"):
        assert outcome(result, "gres.conf", 2, key).kind == "mapped"
    assert outcome(result, "slurm.conf", 4, "GresTypes").kind == "mapped"
    assert "Gres=gpu:a100:4,mps:400" in rendered_nodes(result)[0].split()
    assert rendered_mps(result) == ["NodeName=n1 Name=mps Count=400 File=/dev/nvidia[0-3]"]
    one_outcome_each(result)
    assert result.faithful


def test_mps_lines_per_gpu_file_with_one_count_become_shares_a_gpu(tmp_path: Path) -> None:
    gres = MPS_GPUS + "".join(
        f"NodeName=n1 Name=mps Count=50 File=/dev/nvidia{n}\n" for n in range(4)
    )
    result = imported(tmp_path, MPS_NODE.format(mps="mps:200"), gres)
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"mps": 50}
    assert all(outcome(result, "gres.conf", n, "File").kind == "mapped" for n in range(2, 6))
    assert result.faithful


def test_mps_counts_that_differ_per_gpu_are_refused_at_their_lines(tmp_path: Path) -> None:
    """gres.shtml's Example 2 gives each GPU its own count (1300 down to 1000): the blueprint
    holds one count a GPU, so the lines are refused with the reason, the Gres count kept."""
    gres = MPS_GPUS + "".join(
        f"NodeName=n1 Name=mps Count={count} File=/dev/nvidia{n}\n"
        for n, count in enumerate((1300, 1200, 1100, 1000))
    )
    result = imported(tmp_path, MPS_NODE.format(mps="mps:4600"), gres)
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"mps": 1150}
    count = outcome(result, "gres.conf", 2, "Count")
    assert count.kind == "refused" and "one count on every GPU" in count.target
    one_outcome_each(result)
    assert not result.faithful


@pytest.mark.parametrize(
    ("mps", "reason"),
    [
        ("mps:401", "is not one count on each GPU"),
        ("mps:4", "gpus.sharing.mps holds 2 to"),
        ("mps:a100:400", "an MPS GRES is mps:N"),
    ],
)
def test_mps_gres_the_blueprint_cannot_hold_is_refused_with_the_gpus_kept(
    tmp_path: Path, mps: str, reason: str
) -> None:
    result = imported(
        tmp_path, MPS_NODE.format(mps=mps), MPS_GPUS + "NodeName=n1 Name=mps Count=400\n"
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["count"] == 4 and "sharing" not in pool["gpus"]
    found = outcome(result, "slurm.conf", 5, "Gres=mps")
    assert found.kind == "refused" and reason in found.target, found
    line = outcome(result, "gres.conf", 2, "Count")
    assert line.kind == "refused" and "mps GRES in slurm.conf is not imported" in line.target
    assert outcome(result, "slurm.conf", 5, "Gres=gpu").kind == "mapped"
    one_outcome_each(result)
    assert not result.faithful


def test_an_mps_line_for_a_node_whose_gres_has_no_mps_is_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100:4\nPartitionName=p Nodes=n1\n",
        MPS_GPUS + "NodeName=n1 Name=mps Count=400\n",
    )
    (pool,) = pools(result).values()
    assert "sharing" not in pool["gpus"]
    found = outcome(result, "gres.conf", 2, "Count")
    assert found.kind == "refused" and "gives it no mps" in found.target
    one_outcome_each(result)


# --- shards ---------------------------------------------------------------------------------


SHARD_NODE = (
    "GresTypes=gpu,shard\nNodeName=n1 CPUs=8 Gres=gpu:a100:4,{shard}\nPartitionName=p Nodes=n1\n"
)


def rendered_shards(result: Imported) -> list[str]:
    estate = validate_document(load.parse_blueprint(result.text.encode(), "i.yaml")).estate
    return [line for line in gres_conf(estate).splitlines() if "Name=shard" in line]


def test_shard_gres_becomes_shards_a_gpu_and_renders_the_sites_count(tmp_path: Path) -> None:
    """gres.shtml "Sharding": Gres=gpu:4,shard:32 and one gres.conf line Name=shard
    Count=32, which slurmd spreads over the four GPUs as it spreads MPS: 8 shards each,
    which gpus.sharing.shard holds. The render gives slurmctld and slurmd the same counts."""
    result = imported(
        tmp_path,
        SHARD_NODE.format(shard="shard:32"),
        MPS_GPUS + "NodeName=n1 Name=shard Count=32\n",
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"shard": 8}
    assert outcome(result, "slurm.conf", 5, "Gres=shard").kind == "mapped"
    for key in ("NodeName", "Name", "Count"):
        found = outcome(result, "gres.conf", 2, key)
        assert (found.kind, found.target) == ("mapped", "node_pools[].gpus.sharing.shard")
    assert outcome(result, "slurm.conf", 4, "GresTypes").kind == "mapped"
    assert "Gres=gpu:a100:4,shard:32" in rendered_nodes(result)[0].split()
    assert rendered_shards(result) == ["NodeName=n1 Name=shard Count=32"]
    one_outcome_each(result)
    assert result.faithful


def test_shard_lines_per_gpu_file_with_one_count_become_shards_a_gpu(tmp_path: Path) -> None:
    """gres.conf(5) File: "The exception to this is MPS/Sharding": one line per GPU's device
    file, Count its shards. Eight on each of four GPUs is the render's one Count=32 line."""
    gres = MPS_GPUS + "".join(
        f"NodeName=n1 Name=shard Count=8 File=/dev/nvidia{n}\n" for n in range(4)
    )
    result = imported(tmp_path, SHARD_NODE.format(shard="shard:32"), gres)
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"shard": 8}
    assert all(outcome(result, "gres.conf", n, "File").kind == "mapped" for n in range(2, 6))
    assert rendered_shards(result) == ["NodeName=n1 Name=shard Count=32"]
    one_outcome_each(result)
    assert result.faithful


def test_shard_counts_that_differ_per_gpu_are_refused_at_their_lines(tmp_path: Path) -> None:
    gres = MPS_GPUS + "".join(
        f"NodeName=n1 Name=shard Count={count} File=/dev/nvidia{n}\n"
        for n, count in enumerate((2, 2, 6, 6))
    )
    result = imported(tmp_path, SHARD_NODE.format(shard="shard:16"), gres)
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"shard": 4}
    count = outcome(result, "gres.conf", 2, "Count")
    assert count.kind == "refused" and "2, 6 shards where the Gres gives each 4" in count.target
    one_outcome_each(result)
    assert not result.faithful


@pytest.mark.parametrize(
    ("shard", "reason"),
    [
        ("shard:30", "shard:30 over 4 GPUs is not one count on each GPU"),
        ("shard:a100:32", "a shard GRES is shard:N"),
        ("shard:8192", "2048 shards a GPU; gpus.sharing.shard holds 1 to 1024"),
    ],
)
def test_shard_gres_the_blueprint_cannot_hold_is_refused_with_the_gpus_kept(
    tmp_path: Path, shard: str, reason: str
) -> None:
    result = imported(
        tmp_path, SHARD_NODE.format(shard=shard), MPS_GPUS + "NodeName=n1 Name=shard Count=32\n"
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["count"] == 4 and "sharing" not in pool["gpus"]
    found = outcome(result, "slurm.conf", 5, "Gres=shard")
    assert found.kind == "refused" and reason in found.target, found
    line = outcome(result, "gres.conf", 2, "Count")
    assert line.kind == "refused" and "shard GRES in slurm.conf is not imported" in line.target
    assert outcome(result, "slurm.conf", 5, "Gres=gpu").kind == "mapped"
    one_outcome_each(result)
    assert not result.faithful


def test_shards_on_a_node_whose_gpu_gres_is_not_imported_are_refused(tmp_path: Path) -> None:
    """Shards share a node's GPUs: with the node's gpu GRES refused (17 GPUs, more than a
    pool holds) the shards have no GPUs to share in the blueprint."""
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100:17,shard:34\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=shard Count=34\n",
    )
    (pool,) = pools(result).values()
    assert "gpus" not in pool
    found = outcome(result, "slurm.conf", 4, "Gres=shard")
    assert found.kind == "refused" and "gpu GRES is not imported" in found.target, found
    line = outcome(result, "gres.conf", 1, "Count")
    assert line.kind == "refused" and "shard GRES in slurm.conf is not imported" in line.target
    one_outcome_each(result)


def test_shards_and_mps_on_one_node_are_both_refused_with_the_gpus_kept(
    tmp_path: Path,
) -> None:
    """slurmctld ties one shared GRES to a node's GPUs, and the blueprint refuses shard with
    mps (checks.gpus.sharing_fits_scheduler): import keeps neither, at the site's lines."""
    result = imported(
        tmp_path,
        "GresTypes=gpu,shard,mps\nNodeName=n1 CPUs=8 Gres=gpu:a100:4,shard:32,mps:400\n"
        "PartitionName=p Nodes=n1\n",
        MPS_GPUS + "NodeName=n1 Name=shard Count=32\nNodeName=n1 Name=mps Count=400\n",
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["count"] == 4 and "sharing" not in pool["gpus"]
    for item in ("Gres=shard", "Gres=mps"):
        found = outcome(result, "slurm.conf", 5, item)
        assert found.kind == "refused" and "shard and mps on one node" in found.target, found
    for line, name in ((2, "shard"), (3, "mps")):
        found = outcome(result, "gres.conf", line, "Count")
        assert found.kind == "refused" and f"{name} GRES in slurm.conf is not imported" in (
            found.target
        )
    assert outcome(result, "slurm.conf", 5, "Gres=gpu").kind == "mapped"
    one_outcome_each(result)
    assert not result.faithful


def test_shards_validate_refuses_are_refused_at_the_gres_item_and_lines_only(
    tmp_path: Path,
) -> None:
    """Shards need select/cons_tres (checks.slurm_site): on a cons_res site validate refuses
    gpus.sharing.shard, and import refuses the settings that gave it, the Gres item and
    the gres.conf shard line, with that reason; the GPUs and their Gres item stay mapped,
    and no empty sharing is left in the pool."""
    (tmp_path / "slurm.conf").write_text(
        BASE.replace("cons_tres", "cons_res")
        + SHARD_NODE.format(shard="shard:32")
        + "SelectTypeParameters=CR_Core\n"
    )
    (tmp_path / "gres.conf").write_text(MPS_GPUS + "NodeName=n1 Name=shard Count=32\n")
    result = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf")
    (pool,) = pools(result).values()
    assert pool["gpus"]["count"] == 4 and "sharing" not in pool["gpus"]
    assert outcome(result, "slurm.conf", 5, "Gres=gpu").kind == "mapped"
    for found in (
        outcome(result, "slurm.conf", 5, "Gres=shard"),
        *(outcome(result, "gres.conf", 2, key) for key in ("NodeName", "Name", "Count")),
    ):
        assert found.kind == "refused" and "shards need select type cons_tres" in found.target
    one_outcome_each(result)


def test_a_shard_line_for_a_node_whose_gres_has_no_shard_is_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100:4\nPartitionName=p Nodes=n1\n",
        MPS_GPUS + "NodeName=n1 Name=shard Count=32\n",
    )
    (pool,) = pools(result).values()
    assert "sharing" not in pool["gpus"]
    found = outcome(result, "gres.conf", 2, "Count")
    assert found.kind == "refused" and "gives it no shard" in found.target
    one_outcome_each(result)


# --- two GPU types on one node --------------------------------------------------------------


TWO_TYPES = (
    "NodeName=n1 CPUs=8 Gres=gpu:p100:2,gpu:v100:2 Feature=p100,v100\nPartitionName=p Nodes=n1\n"
)


def test_a_node_of_two_gpu_types_keeps_both_with_their_counts(tmp_path: Path) -> None:
    """Gres=gpu:p100:2,gpu:v100:2 is one pool whose first type is p100 and whose other type
    is v100; the render writes the same Gres and one gres.conf line a type."""
    result = imported(
        tmp_path,
        TWO_TYPES,
        "NodeName=n1 Name=gpu Type=p100 File=/dev/nvidia[0-1]\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia[2-3]\n",
    )
    (pool,) = pools(result).values()
    assert pool["gpus"] == {
        "model": "p100",
        "count": 2,
        "other_types": [{"model": "v100", "count": 2}],
    }
    assert outcome(result, "slurm.conf", 4, "Gres=gpu:v100").kind == "mapped"
    for line in (1, 2):
        for key in ("NodeName", "Name", "Type", "File"):
            assert outcome(result, "gres.conf", line, key).kind == "mapped"
    assert rendered_nodes(result)[0].split()[5] == "Gres=gpu:p100:2,gpu:v100:2"
    one_outcome_each(result)
    assert result.faithful


def test_each_gpu_type_keeps_its_own_device_files(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        TWO_TYPES,
        "NodeName=n1 Name=gpu Type=p100 File=/dev/nvidia[2-3]\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia0,/dev/nvidia1\n",
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["files"] == ["/dev/nvidia2", "/dev/nvidia3"]
    assert pool["gpus"]["other_types"] == [
        {"model": "v100", "count": 2, "files": ["/dev/nvidia0", "/dev/nvidia1"]}
    ]
    assert outcome(result, "gres.conf", 2, "File").target == "node_pools[].gpus.files"
    one_outcome_each(result)


def test_a_gres_conf_line_of_a_type_the_node_does_not_have_is_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        TWO_TYPES,
        "NodeName=n1 Name=gpu Type=p100 File=/dev/nvidia[0-1]\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia[2-3]\n"
        "NodeName=n1 Name=gpu Type=t4 File=/dev/nvidia4\n",
    )
    for key in ("NodeName", "Name", "Type", "File"):
        found = outcome(result, "gres.conf", 3, key)
        assert found.kind == "refused" and "Type=t4 is not a GPU type" in found.target
    one_outcome_each(result)


def test_an_untyped_gpu_gres_beside_a_typed_one_is_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:p100:2,gpu:2\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=p100 File=/dev/nvidia[0-1]\n",
    )
    (pool,) = pools(result).values()
    assert "other_types" not in pool["gpus"]
    found = outcome(result, "slurm.conf", 4, "Gres=gpu:2")
    assert found.kind == "refused" and "untyped GPU GRES beside another" in found.target
    one_outcome_each(result)
    assert not result.faithful


def test_mig_instances_beside_whole_gpus_are_refused_and_the_whole_gpus_kept(
    tmp_path: Path,
) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100_3g.20gb:2,gpu:v100:2\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=a100_3g.20gb Count=2\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia[0-1]\n",
    )
    (pool,) = pools(result).values()
    assert (pool["gpus"]["model"], pool["gpus"]["count"]) == ("v100", 2)
    assert "mig" not in pool["gpus"] and "other_types" not in pool["gpus"]
    found = outcome(result, "slurm.conf", 4, "Gres=gpu:a100_3g.20gb")
    assert found.kind == "refused" and "MIG instances beside whole GPUs" in found.target
    one_outcome_each(result)
    assert not result.faithful


def test_shards_on_a_node_of_two_gpu_types_are_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        TWO_TYPES.replace("gpu:v100:2", "gpu:v100:2,shard:8"),
        "NodeName=n1 Name=gpu Type=p100 File=/dev/nvidia[0-1]\n"
        "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia[2-3]\n"
        "NodeName=n1 Name=shard Count=8\n",
    )
    (pool,) = pools(result).values()
    assert "sharing" not in pool["gpus"]
    found = outcome(result, "slurm.conf", 4, "Gres=shard:8")
    assert found.kind == "refused" and "several GPU types" in found.target
    one_outcome_each(result)


def test_gpu_lines_of_nodes_whose_gres_is_not_imported_are_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
        "NodeName=zz Name=gpu Type=a100 File=/dev/nvidia0\n",
    )
    assert outcome(result, "gres.conf", 1, "File").kind == "refused"
    assert "names no node" in outcome(result, "gres.conf", 2, "File").target
    one_outcome_each(result)


# --- MIG instances named with their GPU ---------------------------------------------------


@pytest.mark.parametrize("prefix", ["a100", "nvidia_a100"])
def test_mig_types_with_the_gpus_name_keep_it_as_the_pools_gres_type(
    tmp_path: Path, prefix: str
) -> None:
    """Sites write MIG instances as NVML names them, after their GPU's name
    (gpu:nvidia_a100_3g.20gb, or its part gpu:a100_3g.20gb, which slurmd's AutoDetect=nvml
    matches: src/plugins/gres/gpu/gres_gpu.c ``_normalize_sys_gres_types``). The model is
    the one catalog model the name gives with these profiles, the prefix stays the pool's
    gres_type, and the render writes the same GRES and gres.conf types."""
    result = imported(
        tmp_path,
        f"NodeName=m1 CPUs=64 RealMemory=500000 Gres=gpu:{prefix}_3g.20gb:8,"
        f"gpu:{prefix}_1g.5gb:8\nPartitionName=p Nodes=m1\n",
        f"NodeName=m1 AutoDetect=nvml\nNodeName=m1 Name=gpu Type={prefix}_3g.20gb Count=8\n"
        f"NodeName=m1 Name=gpu Type={prefix}_1g.5gb Count=8\n",
    )
    data = yaml.safe_load(result.text)
    (pool,) = data["node_pools"]
    assert pool["gpus"]["model"] == "a100-sxm-40gb"
    assert pool["gpus"]["gres_type"] == prefix
    assert pool["gpus"]["mig"] == ["3g.20gb", "1g.5gb"]
    assert outcome(result, "slurm.conf", 4, "Gres").kind == "mapped"
    for line in (2, 3):
        assert outcome(result, "gres.conf", line, "Type").kind == "mapped"
    one_outcome_each(result)
    # the site's Slurm is built with NVML from its own repository: the one thing to fill in
    data["versions"] = {"slurm": "24.11"}
    data["slurm"]["packages"] = {
        "source": "site",
        "apt_repository": "deb https://repo.example.org/slurm trixie main",
        "nvml": True,
    }
    estate = validate_document(load.parse_blueprint(yaml.safe_dump(data).encode(), "i")).estate
    (node,) = [line for line in slurm_conf(estate).splitlines() if line.startswith("NodeName=")]
    (gres_items,) = [f[5:].split(",") for f in node.split() if f.startswith("Gres=")]
    assert sorted(gres_items) == [f"gpu:{prefix}_1g.5gb:8", f"gpu:{prefix}_3g.20gb:8"]
    gres = gres_conf(estate).splitlines()
    assert f"NodeName=m1 Name=gpu Type={prefix}_3g.20gb Count=8" in gres
    assert f"NodeName=m1 Name=gpu Type={prefix}_1g.5gb Count=8" in gres


@pytest.mark.parametrize(
    ("shared", "kept"),
    [("mps:400", None), ("shard:16", {"shard": 2})],
)
def test_a_mig_nodes_shared_gres_leaves_its_mig_instances_kept(
    tmp_path: Path, shared: str, kept: dict[str, int] | None
) -> None:
    """A MIG node's Gres with mps or shard beside its instances is still MIG instances of
    one model. Shards come back a whole GPU, as the render counts them; MPS on MIG is refused
    at its item with the blueprint's reason, the instances kept."""
    result = imported(
        tmp_path,
        "NodeName=m1 CPUs=64 Features=a100-sxm-80gb "
        f"Gres=gpu:3g.40gb:8,gpu:1g.10gb:16,{shared}\nPartitionName=p Nodes=m1\n",
        f"NodeName=m1 AutoDetect=nvml\nNodeName=m1 Name={shared.split(':')[0]} "
        f"Count={shared.split(':')[1]}\n",
    )
    (pool,) = pools(result).values()
    assert (pool["gpus"]["count"], pool["gpus"]["mig"]) == (8, ["3g.40gb", "1g.10gb", "1g.10gb"])
    assert pool["gpus"].get("sharing") == kept
    found = outcome(result, "slurm.conf", 4, f"Gres={shared}")
    if kept:
        assert found.kind == "mapped"
    else:
        assert found.kind == "refused" and "MPS on MIG instances" in found.target
    one_outcome_each(result)


def test_shard_lines_with_files_on_a_mig_node_are_refused(tmp_path: Path) -> None:
    """MIG instances are found by NVML, and the render writes a MIG node's shard line
    without File: per-GPU-file shard lines are not what it writes, and are refused."""
    result = imported(
        tmp_path,
        "NodeName=m1 CPUs=64 Features=a100-sxm-80gb "
        "Gres=gpu:3g.40gb:2,gpu:1g.10gb:4,shard:4\nPartitionName=p Nodes=m1\n",
        "NodeName=m1 AutoDetect=nvml\n"
        + "".join(f"NodeName=m1 Name=shard Count=2 File=/dev/nvidia{n}\n" for n in range(2)),
    )
    (pool,) = pools(result).values()
    assert pool["gpus"]["sharing"] == {"shard": 2}
    found = outcome(result, "gres.conf", 2, "File")
    assert found.kind == "refused" and "the render writes no File on shard lines" in found.target
    one_outcome_each(result)
    assert not result.faithful


def test_mig_types_whose_name_gives_no_one_catalog_model_are_refused(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        "NodeName=m1 CPUs=64 Gres=gpu:l40s_3g.20gb:2\nPartitionName=p Nodes=m1\n",
        "NodeName=m1 AutoDetect=nvml\n",
    )
    assert "gpus" not in yaml.safe_load(result.text)["node_pools"][0]
    found = outcome(result, "slurm.conf", 4, "Gres")
    assert found.kind == "refused" and "MIG instances of no one GPU model" in found.target


def test_a_gpu_count_in_gres_conf_other_than_the_gres_is_refused(tmp_path: Path) -> None:
    """gres.conf Count=2 where slurm.conf says gpu:a100:4: the render writes one file per GPU
    of the Gres, so the site's Count is not what slurmd reads after the render."""
    result = imported(
        tmp_path,
        "NodeName=n1 CPUs=8 Gres=gpu:a100:4\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu Type=a100 Count=2\n",
    )
    found = outcome(result, "gres.conf", 1, "Count")
    assert found.kind == "refused" and "count 2 GPUs and its Gres 4" in found.target
    one_outcome_each(result)


def test_gpu_lines_for_a_node_slurm_conf_gives_no_gpus_say_slurmctld_schedules_none(
    tmp_path: Path,
) -> None:
    """src/common/gres.c of 22.05 (_node_config_validate): a count slurmd finds above the
    node's slurm.conf Gres is "excess" and ignored, so a gres.conf gpu line for a node whose
    Gres names no gpu gives it none; the reason says so, not that a GRES was not imported."""
    result = imported(
        tmp_path,
        "GresTypes=gpu\nNodeName=n1 CPUs=8\nPartitionName=p Nodes=n1\n",
        "NodeName=n1 Name=gpu File=/dev/nvidia0\n",
    )
    line = outcome(result, "gres.conf", 1, "File")
    assert line.kind == "refused"
    assert "gives it no gpu, so slurmctld schedules none" in line.target
