"""`estategen report`: the estate's capacity and ownership, and each warning it gives.

Every warning is shown on a valid blueprint (validation passes; the report still points out
what is probably not intended), next to the same blueprint without the problem.
"""

from __future__ import annotations

import copy
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load
from estategen.capacity import WARNING_KINDS, CapacityWarning
from estategen.errors import BlueprintInvalid
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.report.facts import build
from estategen.report.pages import html, markdown, report_files

from conftest import BLUEPRINTS, run_cli

# A small hybrid estate with no warnings: the control for every warning test.
CLEAN: dict[str, Any] = {
    "estate": "clean",
    "identity": {
        "users": [{"name": "alice", "uid": 10001}, {"name": "bob", "uid": 10002}],
        "teams": [
            {"name": "vision", "gid": 20001, "members": ["alice"], "fairshare": 3},
            {"name": "nlp", "gid": 20002, "members": ["bob"], "fairshare": 1},
        ],
    },
    "node_pools": [
        {
            "name": "a100",
            "scheduler": "slurm",
            "hosts": "gpu-[01-02]",
            "cpu": {"sockets": 2, "cores_per_socket": 32},
            "memory_gb": 512,
            "gpus": {"model": "a100-sxm-80gb", "count": 4},
        },
        {
            "name": "l4",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-[01-02]",
            "gpus": {"model": "l4-24gb", "count": 2},
        },
    ],
    "slurm": {
        "controllers": ["ctl"],
        "accounting": {"host": "dbd", "database": {"host": "db", "password": {"secret": "s"}}},
        "qos": [{"name": "normal"}, {"name": "high", "priority": 10, "max_gpus_per_user": 4}],
        "partitions": [{"name": "gpu", "pools": ["a100"], "default": True}],
    },
    "kubernetes": {
        "clusters": [
            {
                "name": "k8s",
                "prometheus_operator": True,
                "queues": {
                    "cohort": "k8s",
                    "teams": [
                        {"team": "vision", "quota": {"l4-24gb": 2}, "borrowing_limit": 2},
                        {"team": "nlp", "quota": {"l4-24gb": 2}},
                    ],
                },
            }
        ]
    },
    "storage": [{"name": "home", "type": "nfs", "source": "nfs:/home", "mount": "/home"}],
    "observability": {"labels": {"site": "test"}},
}


def estate(doc: dict[str, Any]) -> Estate:
    """The model of a blueprint document; it must be valid, warnings or not."""
    text = yaml.safe_dump(doc, sort_keys=False)
    return validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate


def variant(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(CLEAN)
    for dotted, value in changes.items():
        node: Any = doc
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return doc


def warnings(doc: dict[str, Any]) -> list[CapacityWarning]:
    return list(build(estate(doc)).warnings)


def kinds(doc: dict[str, Any]) -> list[str]:
    return [w.kind for w in warnings(doc)]


def test_the_control_estate_has_no_warnings() -> None:
    assert warnings(CLEAN) == []


# --- stranded capacity --------------------------------------------------------------------------


def test_slurm_pool_in_no_partition_is_stranded() -> None:
    doc = variant()
    doc["node_pools"].append({**doc["node_pools"][0], "name": "spare", "hosts": "spare-[01-03]"})
    (warning,) = warnings(doc)
    assert warning.kind == "stranded-capacity" and warning.pools == ("spare",)
    assert "12 GPUs on 3 nodes" in warning.message


def test_kubernetes_pool_no_queue_has_quota_for_is_stranded() -> None:
    doc = variant()
    doc["node_pools"].append(
        {
            "name": "l40s",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-l40s-01",
            "gpus": {"model": "l40s-48gb", "count": 4},
        }
    )
    (warning,) = warnings(doc)
    assert warning.kind == "stranded-capacity" and warning.pools == ("l40s",)
    assert "no queue in cluster k8s has quota for l40s-48gb" in warning.message


def test_capacity_outside_every_nominal_quota_is_stranded() -> None:
    doc = variant(kubernetes__clusters__0__queues__teams__1__quota={"l4-24gb": 1})
    (warning,) = warnings(doc)
    assert warning.kind == "stranded-capacity"
    assert warning.message.startswith("1 of the 4 l4-24gb in cluster k8s are in no team's")


# --- oversubscribed cohorts ----------------------------------------------------------------------


def test_whole_gpu_quotas_above_the_unpartitioned_gpus_are_refused_by_validation() -> None:
    """Validation counts quotas as Kueue's flavours do: MIG GPUs back only MODEL/PROFILE keys.

    So the oversubscription the report would have to warn about cannot pass validation.
    """
    doc = variant()
    doc["node_pools"].append(
        {
            "name": "a100-mig",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-mig-01",
            "gpus": {"model": "a100-sxm-80gb", "count": 2, "mig": ["3g.40gb", "3g.40gb"]},
        }
    )
    doc["node_pools"].append(
        {
            "name": "a100-k8s",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-a100-01",
            "gpus": {"model": "a100-sxm-80gb", "count": 2},
        }
    )
    cluster = doc["kubernetes"]["clusters"][0]
    cluster["device_plugin"] = {"mig_strategy": "mixed"}
    cluster["queues"]["teams"][0]["quota"] = {"l4-24gb": 2, "a100-sxm-80gb": 2}
    cluster["queues"]["teams"][1]["quota"] = {"l4-24gb": 2, "a100-sxm-80gb": 2}
    with pytest.raises(BlueprintInvalid) as caught:
        warnings(doc)
    assert any(
        "nominal quotas for a100-sxm-80gb add up to 4, above the 2" in f.message
        for f in caught.value.findings
    )


def test_a_whole_gpu_quota_only_mig_pools_could_back_is_refused_by_validation() -> None:
    doc = variant()
    doc["node_pools"][1] = {
        "name": "mig",
        "scheduler": "kubernetes",
        "cluster": "k8s",
        "hosts": "k8s-[01-02]",
        "gpus": {"model": "a100-sxm-80gb", "count": 1, "mig": ["3g.40gb", "3g.40gb"]},
    }
    cluster = doc["kubernetes"]["clusters"][0]
    cluster["device_plugin"] = {"mig_strategy": "mixed"}
    cluster["queues"]["teams"][0]["quota"] = {"a100-sxm-80gb/3g.40gb": 4}
    cluster["queues"]["teams"][1]["quota"] = {"a100-sxm-80gb": 1}
    with pytest.raises(BlueprintInvalid) as caught:
        warnings(doc)
    assert any(
        "no pool in cluster 'k8s' provides 'a100-sxm-80gb'" in f.message
        for f in caught.value.findings
    )


# --- team access ---------------------------------------------------------------------------------


def test_team_with_a_queue_but_no_partition_is_one_sided() -> None:
    doc = variant(slurm__partitions__0__teams=["vision"])
    (warning,) = warnings(doc)
    assert warning.kind == "one-sided-team" and warning.teams == ("nlp",)
    assert "GPU access on Kubernetes only" in warning.message


def test_team_with_a_partition_but_no_queue_is_one_sided() -> None:
    doc = variant()
    doc["kubernetes"]["clusters"][0]["queues"]["teams"][1]["team"] = "vision-b"
    doc["identity"]["teams"].append({"name": "vision-b", "gid": 20003})
    found = warnings(doc)
    assert [(w.kind, w.teams) for w in found] == [("one-sided-team", ("nlp",))]
    assert "GPU access on Slurm only" in found[0].message


def test_team_without_any_access() -> None:
    doc = variant(slurm__partitions__0__teams=["vision"])
    doc["kubernetes"]["clusters"][0]["queues"]["teams"].pop()
    doc["kubernetes"]["clusters"][0]["queues"]["teams"][0]["quota"] = {"l4-24gb": 4}
    assert [(w.kind, w.teams) for w in warnings(doc)] == [("team-without-access", ("nlp",))]


def test_a_cluster_without_queues_gives_every_team_access() -> None:
    doc = variant()
    doc["kubernetes"]["clusters"][0]["queues"]["teams"].pop()
    doc["kubernetes"]["clusters"][0]["queues"]["teams"][0]["quota"] = {"l4-24gb": 4}
    assert kinds(doc) == ["one-sided-team"]  # nlp has no queue in a cluster with queues
    del doc["kubernetes"]["clusters"][0]["queues"]
    assert kinds(doc) == []


def test_a_team_sees_its_partitions_and_pools_in_blueprint_order() -> None:
    doc = variant()
    doc["node_pools"].insert(0, {**doc["node_pools"][0], "name": "h100", "hosts": "h100-[01-02]"})
    doc["slurm"]["partitions"] = [
        {"name": "nlp-only", "pools": ["a100"], "teams": ["nlp"]},
        {"name": "all", "pools": ["a100", "h100"], "default": True},
        {"name": "vision-only", "pools": ["h100"], "teams": ["vision"]},
        {"name": "both", "pools": ["a100"], "teams": ["vision", "nlp"]},
    ]
    report = build(estate(doc))
    teams = {t.name: t for t in report.teams}
    assert teams["vision"].partitions == ("all", "vision-only", "both")
    assert teams["nlp"].partitions == ("nlp-only", "all", "both")
    assert teams["vision"].pools == ("h100", "a100", "l4")
    assert report.links["team:nlp"] == (
        "partition:all",
        "partition:both",
        "partition:nlp-only",
        "pool:a100",
        "pool:h100",
        "pool:l4",
        "queue:k8s/nlp",
    )
    pools = {p.pool.name: p for p in report.pools}
    assert pools["a100"].partitions == ("nlp-only", "all", "both")
    assert pools["l4"].queues == ("k8s/vision", "k8s/nlp")


# --- observability -------------------------------------------------------------------------------


def test_exporter_on_slurmds_port_cannot_start() -> None:
    doc = variant(observability={"labels": {"site": "test"}, "node_exporter": {"port": 6818}})
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-observability" and warning.pools == ("a100",)
    assert "node exporter and slurmd both listen on port 6818" in warning.message


def test_node_and_dcgm_exporter_on_one_port_cannot_both_start() -> None:
    doc = variant(observability={"node_exporter": {"port": 9400}})
    assert kinds(doc) == ["pool-without-observability", "pool-without-observability"]
    assert [w.pools for w in warnings(doc)] == [("a100",), ("l4",)]


def test_annotation_scraped_gpus_lose_the_estate_labels() -> None:
    doc = variant(kubernetes__clusters__0__prometheus_operator=False)
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-observability" and warning.pools == ("l4",)
    assert "without the estate labels (site=test)" in warning.message
    doc["observability"]["labels"] = {}
    assert warnings(doc) == []  # no labels to lose


# --- storage -------------------------------------------------------------------------------------


def test_slurm_pool_without_any_shared_file_system() -> None:
    doc = variant(storage=[])
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-storage" and warning.pools == ("a100",)


def test_a_blueprint_without_storage_is_warned_once_for_all_its_slurm_pools() -> None:
    """An estate with no storage at all (an imported site's: slurm.conf names no file
    system) gets one warning naming every pool, at node_pools, not one per pool."""
    doc = variant(storage=[])
    second = {**doc["node_pools"][0], "name": "a100-b", "hosts": "gpu-[03-04]"}
    doc["node_pools"].insert(1, second)
    doc["slurm"]["partitions"][0]["pools"] = ["a100", "a100-b"]
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-storage" and warning.pools == ("a100", "a100-b")
    assert warning.path == "node_pools"
    assert "any of the 2 Slurm pools" in warning.message


def test_storage_class_offered_through_the_clusters_csi_driver_reaches_every_pool() -> None:
    """A class listed for a cluster none of whose pools mounts the file system is
    served by its CSI driver on every node, so no pool lacks it."""
    doc = variant()
    doc["storage"].append(
        {
            "name": "scratch",
            "type": "nfs",
            "source": "nfs:/scratch",
            "mount": "/scratch",
            "pools": [],
            "kubernetes": {"storage_class": "scratch", "clusters": ["k8s"]},
        }
    )
    assert warnings(doc) == []
    doc["storage"][-1]["pools"] = ["l4"]
    doc["node_pools"].append(
        {
            "name": "l4-b",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-b-01",
            "gpus": {"model": "l4-24gb", "count": 2},
        }
    )
    doc["kubernetes"]["clusters"][0]["queues"]["teams"][1]["quota"] = {"l4-24gb": 4}
    (warning,) = warnings(doc)  # once a pool mounts it, the volumes keep to the mounting pools
    assert warning.kind == "pool-without-storage" and warning.pools == ("l4-b",)


def test_storage_class_not_mounted_on_a_pool_of_its_cluster() -> None:
    doc = variant()
    doc["storage"].append(
        {
            "name": "scratch",
            "type": "nfs",
            "source": "nfs:/scratch",
            "mount": "/scratch",
            "pools": ["l4"],
            "kubernetes": {"storage_class": "scratch"},
        }
    )
    assert warnings(doc) == []
    doc["node_pools"].append(
        {
            "name": "l4-b",
            "scheduler": "kubernetes",
            "cluster": "k8s",
            "hosts": "k8s-b-01",
            "gpus": {"model": "l4-24gb", "count": 2},
        }
    )
    doc["kubernetes"]["clusters"][0]["queues"]["teams"][1]["quota"] = {"l4-24gb": 4}
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-storage" and warning.pools == ("l4-b",)
    assert "offers storage class scratch, but /scratch is not mounted on pool l4-b" in (
        warning.message
    )


def test_partition_over_pools_with_different_file_systems() -> None:
    doc = variant()
    doc["node_pools"].append({**doc["node_pools"][0], "name": "a100-b", "hosts": "gpu-b-01"})
    doc["slurm"]["partitions"][0]["pools"] = ["a100", "a100-b"]
    doc["storage"].append(
        {"name": "scratch", "type": "nfs", "source": "n:/s", "mount": "/scratch", "pools": ["a100"]}
    )
    (warning,) = warnings(doc)
    assert warning.kind == "pool-without-storage" and warning.pools == ("a100-b",)
    assert "partition gpu spans pools with different file systems" in warning.message


def test_every_warning_kind_is_explained() -> None:
    assert set(WARNING_KINDS) == {
        "stranded-capacity",
        "oversubscribed-cohort",
        "one-sided-team",
        "team-without-access",
        "pool-without-observability",
        "pool-without-storage",
    }


# --- content --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def campus() -> Estate:
    return validate_document(load.read_blueprint(BLUEPRINTS / "campus.yaml")).estate


def test_campus_warns_only_about_its_annotation_scraped_gke_pool(campus: Estate) -> None:
    assert [(w.kind, w.pools) for w in build(campus).warnings] == [
        ("pool-without-observability", ("gke-h100",))
    ]


def test_teams_are_listed_side_by_side_with_ids_account_and_namespace(campus: Estate) -> None:
    md = markdown(build(campus))
    row = next(line for line in md.splitlines() if line.startswith("| nlp |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:5] == ["nlp", "20002", "bob (10002)", "nlp", "40 (40%)"]
    assert cells[7] == "nlp-prod"
    assert "serving: 32 l40s-48gb" in cells[8] and "burst: 64 h100-sxm-80gb" in cells[8]


def test_pools_show_mig_slices_and_shared_replicas_as_such(campus: Estate) -> None:
    pools = {p.pool.name: p for p in build(campus).pools}
    assert pools["a100-mig"].slots.endswith("256 MIG instances")
    assert pools["l40s-serve"].slots == "256 time-sliced replicas"
    assert pools["h100"].partitions == ("h100", "scavenger")
    assert pools["l40s-serve"].queues == ("serving/vision", "serving/nlp")


def test_report_is_deterministic(campus: Estate) -> None:
    assert report_files(campus) == report_files(campus)


class _Shapes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.pools: list[str] = []
        self.external: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "rect" and "pool" in (values.get("class") or "").split():
            self.pools.append(values.get("data-pool") or "")
        for key in ("src", "href"):
            if values.get(key):
                self.external.append(f"{tag} {key}={values[key]}")
        self.scripts += tag == "script"


def test_html_has_one_pool_shape_per_pool_and_no_external_assets(campus: Estate) -> None:
    page = html(build(campus))
    shapes = _Shapes()
    shapes.feed(page)
    assert shapes.pools == [p.name for p in campus.node_pools if p.scheduler == "slurm"] + [
        p.name for p in campus.node_pools if p.scheduler == "kubernetes"
    ]
    assert shapes.external == []
    assert "url(" not in page and "@import" not in page
    assert shapes.scripts == 1


def test_user_text_is_escaped_in_html_and_markdown() -> None:
    doc = variant(description="<script>alert(1)</script> | **bold** [x](http://e)")
    report = build(estate(doc))
    page = html(report)
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = markdown(report)
    assert "\\<script\\>alert(1)\\</script\\> \\| \\*\\*bold\\*\\* \\[x\\](http://e)" in md


def test_emphasis_and_strikethrough_markers_in_user_text_stay_literal_in_markdown() -> None:
    report = build(estate(variant(description="_x_ __y__ ~~z~~ snake_case_name")))
    md = markdown(report)
    assert "**Description:** \\_x\\_ \\_\\_y\\_\\_ \\~\\~z\\~\\~ snake\\_case\\_name" in md


# --- in a real browser ---------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless browser check needs Debian's chromium at /usr/bin/chromium "
    "(apt-get install chromium)",
)


def load_in_chromium(page: Path, profile: Path) -> tuple[str, list[str]]:
    """(DOM after scripts ran, console messages) of a page opened in headless Chromium."""
    result = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


@needs_chromium
def test_console_check_sees_script_errors(tmp_path: Path) -> None:
    """The control for the test below: a failing script is reported."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    _, console = load_in_chromium(page, tmp_path / "profile")
    assert any("notDefined is not defined" in line for line in console)


@needs_chromium
def test_campus_report_loads_in_chromium_with_one_shape_per_pool(
    campus: Estate, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    page.write_text(html(build(campus)), encoding="utf-8")
    dom, console = load_in_chromium(page, tmp_path / "profile")
    assert console == []
    shapes = _Shapes()
    shapes.feed(dom)
    assert sorted(shapes.pools) == sorted(p.name for p in campus.node_pools)
    # the page's script ran to its end and counted the same shapes
    assert f'data-ready="{len(campus.node_pools)}"' in dom


# --- the command ----------------------------------------------------------------------------------


def test_cli_prints_markdown_or_writes_both_files(tmp_path: Path) -> None:
    result = run_cli("report", BLUEPRINTS / "lab.yaml")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Estate lab: capacity and ownership")
    written = run_cli("report", BLUEPRINTS / "campus.yaml", "-o", tmp_path / "r")
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.html", "report.md"]
    assert re.search(
        r'<rect class="pool[^"]*" data-pool="h100"', (tmp_path / "r/report.html").read_text()
    )


def test_cli_report_of_an_invalid_blueprint_exits_one(tmp_path: Path) -> None:
    blueprint = tmp_path / "bad.yaml"
    blueprint.write_text("estate: x\n")
    result = run_cli("report", blueprint)
    assert result.returncode == 1
    assert "node_pools: is required" in result.stderr


def test_fairshare_under_priority_basic_is_reported_as_unused() -> None:
    teams = {t.name: t for t in build(estate(CLEAN)).teams}
    assert teams["vision"].fairshare == "3 (75%)"
    assert teams["vision"].fairshare_share == 0.75
    doc = variant()
    doc["slurm"]["scheduling"] = {"priority_type": "basic"}
    doc["slurm"]["qos"] = [{"name": "normal"}]  # a QoS priority would be refused with basic
    teams = {t.name: t for t in build(estate(doc)).teams}
    assert teams["vision"].fairshare.startswith("3, not used (priority/basic")
    assert teams["vision"].fairshare_share is None
