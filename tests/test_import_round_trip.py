"""`estategen import` reads estategen's own render back: the blueprint it builds from a render's
slurm.conf and gres.conf renders those files again, line for line.

Only the pools' names differ (import names a pool from its hosts: the files do not carry the
blueprint's name), and they appear in the files only in the ``# pool NAME`` comments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from estategen import load
from estategen.importer.site import import_site
from estategen.pipeline import validate_document
from estategen.renderers.slurm import gres_conf, slurm_conf, topology_conf

from conftest import BLUEPRINTS

POOL_COMMENT = re.compile(r"^# pool \S+$", re.MULTILINE)


def rendered(blueprint: str, path: str = "b.yaml") -> tuple[str, str, str]:
    """slurm.conf and gres.conf a blueprint renders, and the Slurm release it targets."""
    estate = validate_document(load.parse_blueprint(blueprint.encode(), path)).estate
    return slurm_conf(estate), gres_conf(estate), estate.versions.slurm.text


def without_pool_names(text: str) -> str:
    return POOL_COMMENT.sub("# pool", text)


def round_trip(tmp_path: Path, blueprint: str) -> tuple[tuple[str, str], tuple[str, str]]:
    slurm, gres, release = rendered(blueprint)
    (tmp_path / "slurm.conf").write_text(slurm)
    (tmp_path / "gres.conf").write_text(gres)
    imported = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version=release)
    assert imported.faithful, imported.text
    again_slurm, again_gres, _ = rendered(imported.text, "imported.yaml")
    before = (without_pool_names(slurm), without_pool_names(gres))
    after = (without_pool_names(again_slurm), without_pool_names(again_gres))
    return before, after


def test_the_lab_blueprints_render_imports_to_a_blueprint_that_renders_it_again(
    tmp_path: Path,
) -> None:
    """lab.yaml: a GPU pool whose gres.conf line sets AutoDetect=off on its own NodeName line
    (gres.conf(5): it then applies to those nodes only), a CPU pool, QoS and partitions."""
    before, after = round_trip(tmp_path, (BLUEPRINTS / "lab.yaml").read_text())
    assert after == before


def test_a_pools_shards_come_back_from_its_gres(tmp_path: Path) -> None:
    """gpus.sharing.shard renders the node's Gres count (GPUs x shards) and a gres.conf
    shard line that spreads it over the GPUs; import reads the shards a GPU back."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    for pool in blueprint["node_pools"]:
        if "gpus" in pool and pool["scheduler"] == "slurm":
            pool["gpus"]["sharing"] = {"shard": 8}
    before, after = round_trip(tmp_path, yaml.safe_dump(blueprint, sort_keys=False))
    assert re.search(r"^NodeName=.* Gres=gpu:\S*,shard:32 ", before[0], re.MULTILINE)
    assert re.search(r"^NodeName=\S+ Name=shard Count=32$", before[1], re.MULTILINE)
    assert after == before


@pytest.mark.parametrize("files", [False, True])
def test_a_pools_second_gpu_type_comes_back_with_its_device_files(
    tmp_path: Path, files: bool
) -> None:
    """gpus.other_types renders a Gres of two types and a gres.conf line a type; import
    reads both types (and each type's own device files) back."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    (pool,) = [p for p in blueprint["node_pools"] if "gpus" in p and p["scheduler"] == "slurm"]
    count = pool["gpus"]["count"]
    pool["gpus"]["other_types"] = [{"model": "l40s-48gb", "count": 2}]
    if files:
        pool["gpus"]["files"] = [f"/dev/nvidia{n + 2}" for n in range(count)]
        pool["gpus"]["other_types"][0]["files"] = ["/dev/nvidia0", "/dev/nvidia1"]
    before, after = round_trip(tmp_path, yaml.safe_dump(blueprint, sort_keys=False))
    assert re.search(r"^NodeName=.* Gres=gpu:\S+:\d+,gpu:l40s-48gb:2 ", before[0], re.MULTILINE)
    assert len(re.findall(r"^NodeName=\S+ AutoDetect=off Name=gpu ", before[1], re.MULTILINE)) == 2
    assert after == before


@pytest.mark.parametrize("autodetect", ["off", "nvml"])
def test_a_pools_autodetect_comes_back_from_its_own_gres_line(
    tmp_path: Path, autodetect: str
) -> None:
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    for pool in blueprint["node_pools"]:
        if "gpus" in pool and pool["scheduler"] == "slurm":
            pool["gpus"]["autodetect"] = autodetect
    if autodetect == "nvml":  # a build with the NVML plugin: the site's own repository
        blueprint["versions"]["slurm"] = "24.11"
        blueprint["slurm"]["packages"] = {
            "source": "site",
            "apt_repository": "deb https://repo.example.org/slurm trixie main",
            "nvml": True,
        }
    text = yaml.safe_dump(blueprint, sort_keys=False)
    slurm, gres, release = rendered(text)
    # off on the pool's gpu line, nvml on a line of its own before it
    assert re.search(rf"^NodeName=\S+ AutoDetect={autodetect}\b", gres, re.MULTILINE)
    (tmp_path / "slurm.conf").write_text(slurm)
    (tmp_path / "gres.conf").write_text(gres)
    imported = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version=release)
    (outcome,) = [o for o in imported.outcomes if o.key == "AutoDetect"]
    pools = yaml.safe_load(imported.text)["node_pools"]
    if autodetect == "off":
        assert outcome.kind == "mapped"
        assert [p["gpus"].get("autodetect") for p in pools if "gpus" in p] == ["off"]
    else:
        # read as the pool's gpus.autodetect, which validate then refuses: slurm.conf does not
        # say the site's Slurm has NVML, and import's package source (Debian 13's) has not
        assert outcome.kind == "refused"
        assert outcome.target.startswith("node_pools[0].gpus.autodetect: ")
        assert "gpu_nvml plugin" in outcome.target


def test_nodes_of_one_pool_with_different_autodetect_lines_are_refused_there(
    tmp_path: Path,
) -> None:
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=lab\nSlurmctldHost=ctl\nSelectType=select/cons_tres\nGresTypes=gpu\n"
        "NodeName=g[1-2] CPUs=8 RealMemory=8000 Gres=gpu:a100:1\nPartitionName=p Nodes=g[1-2]\n"
    )
    (tmp_path / "gres.conf").write_text(
        "NodeName=g1 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia0\n"
        "NodeName=g2 Name=gpu Type=a100 File=/dev/nvidia0\n"
    )
    imported = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf")
    (pool,) = yaml.safe_load(imported.text)["node_pools"]
    assert "autodetect" not in pool["gpus"]
    (outcome,) = [o for o in imported.outcomes if o.key == "AutoDetect"]
    assert outcome.kind == "refused" and "one value per pool" in outcome.target


MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def mig_lab() -> dict[str, object]:
    """lab.yaml with its A100 pool split into MIG instances, on a Slurm built with NVML."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    for pool in blueprint["node_pools"]:
        if pool["scheduler"] == "slurm" and "gpus" in pool:
            pool["gpus"]["mig"] = MIG_LAYOUT
    blueprint["versions"]["slurm"] = "24.11"
    blueprint["slurm"]["packages"] = {
        "source": "site",
        "apt_repository": "deb https://repo.example.org/slurm trixie main",
        "nvml": True,
    }
    return blueprint


def test_a_mig_pools_render_imports_to_its_gpus_and_layout(tmp_path: Path) -> None:
    """estategen writes a MIG pool as one GRES per profile (Gres=gpu:1g.10gb:8,...) found by
    NVML; import reads the model from the node's features and the GPUs as the fewest the
    totals fit in one GPU's 7 compute and 8 memory slices, and says so; only the repository
    of the site's NVML-built Slurm is left to fill in, and then the render is the same."""
    blueprint = mig_lab()
    slurm, gres, release = rendered(yaml.safe_dump(blueprint, sort_keys=False))
    (tmp_path / "slurm.conf").write_text(slurm)
    (tmp_path / "gres.conf").write_text(gres)
    imported = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version=release)
    data = yaml.safe_load(imported.text)
    (pool,) = [p for p in data["node_pools"] if "gpus" in p]
    assert pool["gpus"]["model"] == "a100-sxm-80gb"
    assert pool["gpus"]["count"] == 4
    assert pool["gpus"]["mig"] == MIG_LAYOUT
    assert any("the fewest GPUs the MIG totals fit" in note for note in imported.reviews)
    assert data["slurm"]["packages"] == {"source": "site", "nvml": True}
    assert [f.split(":")[0] for f in imported.findings] == ["slurm.packages.source"]
    data["slurm"]["packages"] = blueprint["slurm"]["packages"]  # type: ignore[index]
    again_slurm, again_gres, _ = rendered(yaml.safe_dump(data, sort_keys=False))
    assert without_pool_names(again_slurm) == without_pool_names(slurm)
    assert without_pool_names(again_gres) == without_pool_names(gres)


def test_a_mig_pools_shards_come_back_as_shards_a_whole_gpu(tmp_path: Path) -> None:
    """On a MIG pool the render counts shards over the whole GPUs (Gres shard:GPUs x N) and
    writes a shard line without File, which slurmd spreads over the instances it finds;
    import reads the same count a GPU back."""
    blueprint = mig_lab()
    for pool in blueprint["node_pools"]:  # type: ignore[attr-defined]
        if pool["scheduler"] == "slurm" and "gpus" in pool:
            pool["gpus"]["sharing"] = {"shard": 2}
    slurm, gres, release = rendered(yaml.safe_dump(blueprint, sort_keys=False))
    assert re.search(r"^NodeName=\S+ Name=shard Count=8$", gres, re.MULTILINE)
    (tmp_path / "slurm.conf").write_text(slurm)
    (tmp_path / "gres.conf").write_text(gres)
    imported = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version=release)
    data = yaml.safe_load(imported.text)
    (pool,) = [p for p in data["node_pools"] if "gpus" in p]
    assert pool["gpus"]["sharing"] == {"shard": 2}
    data["slurm"]["packages"] = blueprint["slurm"]["packages"]  # type: ignore[index]
    again_slurm, again_gres, _ = rendered(yaml.safe_dump(data, sort_keys=False))
    assert without_pool_names(again_slurm) == without_pool_names(slurm)
    assert without_pool_names(again_gres) == without_pool_names(gres)


def test_mig_instances_no_feature_names_the_model_of_are_refused(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=lab\nSlurmctldHost=ctl\nSelectType=select/cons_tres\nGresTypes=gpu\n"
        "NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:1g.10gb:14\nPartitionName=p Nodes=g1\n"
    )
    imported = import_site(tmp_path / "slurm.conf")
    assert "gpus" not in yaml.safe_load(imported.text)["node_pools"][0]
    (outcome,) = [o for o in imported.outcomes if o.key == "Gres"]
    assert outcome.kind == "refused" and "MIG instances of no one GPU model" in outcome.target


def test_the_campus_render_imports_back_once_its_slurm_repository_is_named(
    tmp_path: Path,
) -> None:
    """campus.yaml: an H100 pool over four leaf switches (one node line, spread over them in
    order as model.spread places them), a MIG pool, CPU nodes of two host stems, QoS and
    accounting. Import cannot know the repository of the site's NVML-built Slurm; given it,
    slurm.conf, gres.conf and topology.conf render again line for line."""
    original = yaml.safe_load((BLUEPRINTS / "campus.yaml").read_text())
    estate = validate_document(
        load.parse_blueprint((BLUEPRINTS / "campus.yaml").read_bytes(), "campus.yaml")
    ).estate
    before = {
        "slurm.conf": slurm_conf(estate),
        "gres.conf": gres_conf(estate),
        "topology.conf": topology_conf(estate) or "",
    }
    for name, text in before.items():
        (tmp_path / name).write_text(text)
    imported = import_site(
        tmp_path / "slurm.conf",
        tmp_path / "gres.conf",
        tmp_path / "topology.conf",
        slurm_version=estate.versions.slurm.text,
    )
    data = yaml.safe_load(imported.text)
    (h100,) = [p for p in data["node_pools"] if p["hosts"] == "gpu-h100-[001-032]"]
    assert h100["network"] == {"switch": "leaf-[01-04]"}
    assert [f.split(":")[0] for f in imported.findings] == ["slurm.packages.source"]
    data["slurm"]["packages"] = original["slurm"]["packages"]
    again = validate_document(
        load.parse_blueprint(yaml.safe_dump(data, sort_keys=False).encode(), "imported.yaml")
    ).estate
    after = {
        "slurm.conf": slurm_conf(again),
        "gres.conf": gres_conf(again),
        "topology.conf": topology_conf(again) or "",
    }
    assert {k: without_pool_names(v) for k, v in after.items()} == {
        k: without_pool_names(v) for k, v in before.items()
    }


def test_nodes_under_switches_in_uneven_runs_stay_one_pool_per_switch(tmp_path: Path) -> None:
    """network.switch places a pool's hosts in near-equal runs (model.spread); three nodes
    on one leaf and one on the next are not that, so each leaf keeps a pool of its own."""
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=lab\nSlurmctldHost=ctl\nTopologyPlugin=topology/tree\n"
        "NodeName=n[1-4] CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n[1-4]\n"
    )
    (tmp_path / "topology.conf").write_text(
        "SwitchName=leaf-01 Nodes=n[1-3]\nSwitchName=leaf-02 Nodes=n4\n"
    )
    uneven = import_site(tmp_path / "slurm.conf", topology=tmp_path / "topology.conf")
    pools = yaml.safe_load(uneven.text)["node_pools"]
    assert [(p["hosts"], p["network"]["switch"]) for p in pools] == [
        ("n[1-3]", "leaf-01"),
        ("n4", "leaf-02"),
    ]
    (tmp_path / "topology.conf").write_text(
        "SwitchName=leaf-01 Nodes=n[1-2]\nSwitchName=leaf-02 Nodes=n[3-4]\n"
    )
    even = import_site(tmp_path / "slurm.conf", topology=tmp_path / "topology.conf")
    pools = yaml.safe_load(even.text)["node_pools"]
    assert [(p["hosts"], p["network"]["switch"]) for p in pools] == [("n[1-4]", "leaf-[01-02]")]


def test_a_pools_nvidia_autodetect_comes_back_on_slurm_24_11(tmp_path: Path) -> None:
    """gpus.autodetect nvidia (Slurm 24.11's gpu/nvidia plugin, in Debian 13's slurm-wlm: no
    NVML needed) renders the pool's own AutoDetect line, which import reads back into the
    pool; the render is the same again."""
    blueprint = yaml.safe_load((BLUEPRINTS / "lab.yaml").read_text())
    for pool in blueprint["node_pools"]:
        if "gpus" in pool and pool["scheduler"] == "slurm":
            pool["gpus"].update(autodetect="nvidia", gres_type="a100")
    blueprint["versions"]["slurm"] = "24.11"
    blueprint["slurm"]["packages"] = {"source": "debian-13"}
    before, after = round_trip(tmp_path, yaml.safe_dump(blueprint, sort_keys=False))
    assert re.search(r"^NodeName=\S+ AutoDetect=nvidia$", before[1], re.MULTILINE)
    assert after == before


def test_the_frontier_render_imports_back_with_the_hosted_pools_autodetect_line(
    tmp_path: Path,
) -> None:
    """frontier.yaml renders a global AutoDetect=nvidia for its hosted pool's nodes, which
    no line can name, and every on-prem node sets its own AutoDetect (off, nvml). Import maps
    the global line to what estategen writes it for, says so in a review, and gives it to no
    on-prem pool: each keeps its own, and their gres.conf lines render again line for line.
    The hosted pool itself (a Kubernetes pool's slurmd pods) is not in slurm.conf's nodes."""
    original = yaml.safe_load((BLUEPRINTS / "frontier.yaml").read_text())
    estate = validate_document(
        load.parse_blueprint((BLUEPRINTS / "frontier.yaml").read_bytes(), "frontier.yaml")
    ).estate
    gres = gres_conf(estate)
    assert "AutoDetect=nvidia" in gres.splitlines()
    (tmp_path / "slurm.conf").write_text(slurm_conf(estate))
    (tmp_path / "gres.conf").write_text(gres)
    (tmp_path / "topology.conf").write_text(topology_conf(estate) or "")
    imported = import_site(
        tmp_path / "slurm.conf",
        tmp_path / "gres.conf",
        tmp_path / "topology.conf",
        slurm_version=estate.versions.slurm.text,
    )
    unfaithful = [o.format() for o in imported.outcomes if o.kind in ("refused", "changed")]
    assert unfaithful == []
    (line,) = [o for o in imported.outcomes if o.key == "AutoDetect" and o.value == "nvidia"]
    assert line.kind == "mapped" and "hosted Slurm pools" in line.target
    assert any("AutoDetect=nvidia is no pool's" in note for note in imported.reviews)
    data = yaml.safe_load(imported.text)
    detect = {p["hosts"]: p["gpus"].get("autodetect") for p in data["node_pools"] if "gpus" in p}
    assert detect == {
        "gpu-h200-[001-064]": "off",
        "gpu-a100-[01-16]": "nvml",
        "burst-l4-[001-032]": "off",
    }
    assert [f.split(":")[0] for f in imported.findings] == ["slurm.packages.source"]
    data["slurm"]["packages"] = original["slurm"]["packages"]
    again = validate_document(
        load.parse_blueprint(yaml.safe_dump(data, sort_keys=False).encode(), "imported.yaml")
    ).estate

    def gpu_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if "Name=gpu" in line]

    assert gpu_lines(gres_conf(again)) == gpu_lines(gres)


def test_a_global_nvidia_line_reaches_the_pools_without_their_own(tmp_path: Path) -> None:
    """gres.conf(5) AutoDetect: a line without NodeName applies to every node, and a node's
    own line overrides it. The pool whose nodes set off keeps off; the pool without a line of
    its own takes nvidia on 24.11, and on 22.05 the line is refused with validate's reason."""
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=lab\nSlurmctldHost=ctl\nSelectType=select/cons_tres\nGresTypes=gpu\n"
        "NodeName=a[1-2] CPUs=8 RealMemory=8000 Gres=gpu:h100:2\n"
        "NodeName=b[1-2] CPUs=16 RealMemory=8000 Gres=gpu:h100:4\n"
        "PartitionName=p Nodes=a[1-2],b[1-2]\n"
    )
    (tmp_path / "gres.conf").write_text(
        "AutoDetect=nvidia\n"
        "NodeName=a[1-2] AutoDetect=off Name=gpu Type=h100 File=/dev/nvidia[0-1]\n"
        "NodeName=b[1-2] Name=gpu Type=h100 Count=4\n"
    )
    on = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version="24.11")
    detect = {
        p["hosts"]: p["gpus"].get("autodetect") for p in yaml.safe_load(on.text)["node_pools"]
    }
    assert detect == {"a[1-2]": "off", "b[1-2]": "nvidia"}
    (line,) = [o for o in on.outcomes if o.key == "AutoDetect" and o.where.line == 1]
    assert line.kind == "mapped" and line.target == "node_pools[].gpus.autodetect"
    old = import_site(tmp_path / "slurm.conf", tmp_path / "gres.conf", slurm_version="22.05")
    detect = {
        p["hosts"]: p["gpus"].get("autodetect") for p in yaml.safe_load(old.text)["node_pools"]
    }
    assert detect == {"a[1-2]": "off", "b[1-2]": None}
    (line,) = [o for o in old.outcomes if o.key == "AutoDetect" and o.where.line == 1]
    assert line.kind == "refused" and "Slurm 24.11" in line.target
