"""The Grafana dashboard: Grafana's JSON model, a row per scheduler and a panel per pool, and
queries that read only what the estate's rules record and its exporters export.

Schema: the dashboard is decoded with grafana-foundation-sdk's own Dashboard model (the Go,
Python and TypeScript SDKs and the JSON Schema of Grafana's dashboard are generated from one
schema) and encoded again; a key the model does not know would be lost on the way, a value of
the wrong shape would fail to decode.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_slurm_exporter import COLLECTOR_METRICS, enabled_collectors

from estategen import load
from estategen.model import Estate
from estategen.output import Files
from estategen.pipeline import validate_document
from estategen.prometheus_rules import observability_rules
from estategen.render import render
from estategen.renderers.grafana import DASHBOARDS_DIR

from conftest import BLUEPRINTS, ROOT

GRAFANA = "observability/grafana"
# Kueue v0.19 (pkg/metrics/metrics.go): the metrics the rules and dashboard read
KUEUE_METRICS = {
    "kueue_pending_workloads",
    "kueue_admitted_workloads_total",
    "kueue_cluster_queue_resource_usage",
    "kueue_cluster_queue_nominal_quota",
}
# series Prometheus itself writes: `up` per target, `ALERTS` for the rules' alerts
PROMETHEUS_SERIES = {"up", "ALERTS"}
PROMQL_FUNCTIONS = {
    "sum", "avg", "count", "max", "min", "rate", "increase", "label_replace", "vector",
    "min_over_time", "max_over_time",
}  # fmt: skip
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
PROMQL_KEYWORDS |= {"and", "or", "unless"}


def rendered(path: Path) -> tuple[Estate, Files]:
    estate = validate_document(load.read_blueprint(path)).estate
    return estate, render(estate)


def dashboard_of(estate: Estate, files: Files) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        files[f"{GRAFANA}/dashboards/estategen-{estate.name}.json"].content
    )
    return data


@pytest.fixture(scope="module", params=sorted(BLUEPRINTS.glob("*.yaml")), ids=lambda p: p.stem)
def example(request: pytest.FixtureRequest) -> tuple[Estate, dict[str, Any]]:
    estate, files = rendered(request.param)
    return estate, dashboard_of(estate, files)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (every identifier that is not a function,
    a keyword, a label name or a duration)."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range selectors
    # label lists of by/without/on/ignoring/group_left/group_right
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1 ()", expr)
    expr = re.sub(r"\{[^}]*\}", "{}", expr)  # matchers
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word = match.group()
        rest = expr[match.end() :].lstrip()
        if word in PROMQL_KEYWORDS:
            continue
        if rest.startswith("(") or re.match(r"(by|without)\b", rest):
            assert word in PROMQL_FUNCTIONS, f"unknown PromQL function {word} in {expr}"
            continue
        if re.fullmatch(r"[0-9.e]+", word):
            continue
        names.add(word)
    return names


def produced(estate: Estate) -> set[str]:
    """What the estate's rules record and its exporters (and Prometheus) produce."""
    recorded = {
        r["record"] for g in observability_rules(estate) for r in g["rules"] if "record" in r
    }
    counters = (ROOT / "playbooks/roles/dcgm_exporter/files/counters.csv").read_text()
    dcgm = {line.split(",")[0] for line in counters.splitlines() if line and line[0] != "#"}
    slurm = set().union(*(COLLECTOR_METRICS[c] for c in enabled_collectors()))
    node = {"estategen_node_info"}  # the node exporter's textfile (role node_exporter)
    return recorded | dcgm | slurm | node | KUEUE_METRICS | PROMETHEUS_SERIES


def queries(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_the_dashboard_is_grafanas_dashboard_model(example: tuple[Estate, dict[str, Any]]) -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()  # panel options and queries decode by panel and query type
    _, dashboard = example
    decoded = Dashboard.from_json(dashboard)
    assert json.loads(JSONEncoder().encode(decoded)) == dashboard
    assert dashboard["schemaVersion"] >= 39


def test_every_query_reads_only_what_our_rules_and_exporters_produce(
    example: tuple[Estate, dict[str, Any]],
) -> None:
    estate, dashboard = example
    named = {name for expr in queries(dashboard) for name in metric_names(expr)}
    assert named, "no query"
    assert named - produced(estate) == set()


def test_the_rules_read_only_what_our_exporters_produce(
    example: tuple[Estate, dict[str, Any]],
) -> None:
    estate, _ = example
    expressions = [r["expr"] for g in observability_rules(estate) for r in g["rules"]]
    named = {name for expr in expressions for name in metric_names(expr)}
    assert named - produced(estate) == set()


def test_alert_panels_count_exactly_the_estates_alerts(
    example: tuple[Estate, dict[str, Any]],
) -> None:
    estate, dashboard = example
    alerts = {r["alert"] for g in observability_rules(estate) for r in g["rules"] if "alert" in r}
    selectors = [e for e in queries(dashboard) if "ALERTS{" in e]
    assert selectors
    for expr in selectors:
        (names,) = re.findall(r'alertname=~"([^"]+)"', expr)
        assert set(names.split("|")) == alerts


def test_a_row_per_scheduler_and_a_panel_per_gpu_pool() -> None:
    estate, files = rendered(BLUEPRINTS / "campus.yaml")
    dashboard = dashboard_of(estate, files)
    rows: dict[str, list[str]] = {}
    current = ""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            current = panel["title"]
            rows[current] = []
        else:
            rows[current].append(panel["title"])
    assert list(rows) == [
        "Estate campus",
        "Slurm: a panel per pool",
        "Kubernetes: a panel per pool",
        "Alerts",
    ]
    for scheduler, row in (
        ("slurm", "Slurm: a panel per pool"),
        ("kubernetes", "Kubernetes: a panel per pool"),
    ):
        pools = [p.name for p in estate.node_pools if p.scheduler == scheduler and p.gpus]
        assert [t.split(":")[0] for t in rows[row] if t.endswith("GPUs busy and idle")] == pools
    # campus' cpu pool has no GPUs and no panel
    assert not any(title.startswith("cpu:") for titles in rows.values() for title in titles)


def test_mig_and_time_sliced_pools_show_their_units() -> None:
    estate, files = rendered(BLUEPRINTS / "campus.yaml")
    panels = {p["title"]: p for p in dashboard_of(estate, files)["panels"]}
    legends = {
        name: [t["legendFormat"] for t in panels[f"{name}: GPUs busy and idle"]["targets"]]
        for name in ("h100", "a100-mig", "l40s-serve")
    }
    assert legends["h100"] == ["busy", "idle", "installed"]
    assert legends["a100-mig"][-1] == "MIG instances"
    assert legends["l40s-serve"][-1] == "time-sliced GPUs"


def test_an_estate_with_one_scheduler_has_one_scheduler_row() -> None:
    text = (BLUEPRINTS / "lab.yaml").read_text()
    estate = validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate
    only_slurm = validate_document(
        load.parse_blueprint(
            text.split("  - name: l4-serve")[0].encode()
            + text[text.index("slurm:\n") : text.index("kubernetes:\n")].encode()
            + b"observability:\n  labels: {site: lab}\n",
            "bp.yaml",
        )
    ).estate
    rows = [
        p["title"]
        for p in dashboard_of(only_slurm, render(only_slurm))["panels"]
        if p["type"] == "row"
    ]
    assert rows == ["Estate lab", "Slurm: a panel per pool", "Alerts"]
    assert estate.kubernetes_pools and not only_slurm.kubernetes_pools


def test_every_panel_reads_the_chosen_prometheus(example: tuple[Estate, dict[str, Any]]) -> None:
    _, dashboard = example
    (variable,) = dashboard["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == (
        "datasource",
        "datasource",
        "prometheus",
    )
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            for target in panel["targets"]:
                assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_provisioning_loads_the_dashboards_folder() -> None:
    _, files = rendered(BLUEPRINTS / "lab.yaml")
    provider = yaml.safe_load(files[f"{GRAFANA}/provisioning/dashboards/estategen.yml"].content)
    assert provider["apiVersion"] == 1
    (entry,) = provider["providers"]
    assert (entry["type"], entry["options"]["path"]) == ("file", DASHBOARDS_DIR)
    dashboards = [p for p in files if p.startswith(f"{GRAFANA}/dashboards/")]
    assert dashboards == [f"{GRAFANA}/dashboards/estategen-lab.json"]


def test_the_dashboard_is_deterministic() -> None:
    _, first = rendered(BLUEPRINTS / "campus.yaml")
    _, second = rendered(BLUEPRINTS / "campus.yaml")
    dashboard = f"{GRAFANA}/dashboards/estategen-campus.json"
    assert first[dashboard].content == second[dashboard].content


def test_the_readme_picture_is_the_campus_dashboard_as_rendered() -> None:
    """docs/dashboard-campus.svg is drawn from the dashboard: regenerate it when the layout
    changes (layout_svg(build_dashboard(campus)))."""
    from estategen.renderers.grafana import build_dashboard, layout_svg

    estate, _ = rendered(BLUEPRINTS / "campus.yaml")
    picture = (ROOT / "docs" / "dashboard-campus.svg").read_text()
    assert picture == layout_svg(build_dashboard(estate))
    assert "dashboard-campus.svg" in (ROOT / "docs" / "observability.md").read_text()


def test_the_dashboard_is_what_the_sdks_builders_make(
    example: tuple[Estate, dict[str, Any]],
) -> None:
    """The dashboard written as plain data is, value for value, what grafana-foundation-sdk's
    builders make of the same panels (tests/grafana_sdk.py): its settings, each panel's
    defaults and datasource, and the grid placement."""
    from grafana_sdk import sdk_dashboard

    estate, dashboard = example
    assert dashboard == sdk_dashboard(estate)


def test_the_large_estates_dashboard_is_what_the_sdks_builders_make(tmp_path: Path) -> None:
    """The benchmark estate's shape, scaled down: rows wrap past three panels per line, both
    schedulers, managed and on-premises pools."""
    from grafana_sdk import sdk_dashboard

    from estategen.renderers.grafana import build_dashboard

    sys.path.insert(0, str(BLUEPRINTS))  # large.py
    import large  # type: ignore[import-not-found]

    shapes = ({}, {"slurm_pools": 4, "partitions": 2}, {"slurm_pools": 1, "k8s_pools": 10})
    for shape in shapes:
        path = tmp_path / "large.yaml"
        path.write_text(large.blueprint(nodes_per_pool=2, teams=20, users_per_team=1, **shape))
        estate, _ = rendered(path)
        assert build_dashboard(estate) == sdk_dashboard(estate), shape


def test_rendering_does_not_import_the_sdk() -> None:
    """Rendering writes the dashboard's data itself: the SDK is the tests' reference only."""
    code = (
        "import sys; from estategen import pipeline, render\n"
        f"estate = pipeline.validate_file({str(BLUEPRINTS / 'campus.yaml')!r}).estate\n"
        "assert any('grafana' in p for p in render.render(estate))\n"
        "print('grafana_foundation_sdk' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
