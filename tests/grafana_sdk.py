"""The Grafana dashboard rebuilt with grafana-foundation-sdk's builders: the reference for the
plain data estategen.renderers.grafana writes (tests/test_grafana.py requires the two to be
equal; benchmarks/grafana_dashboard.py times both).

The builders replay what each panel shows (its title, description, unit and queries, read from
the plain dashboard) and make everything else themselves: the dashboard's settings, each
panel's defaults, datasource and grid place. So the queries are stated once, in the renderer,
where tests/test_grafana.py holds them to the recording rules; what equality proves is that
the plain data is the JSON the SDK would write for the same panels.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DashboardCursorSync, DataSourceRef

from estategen.model import Estate
from estategen.renderers.grafana import DATASOURCE, HEIGHT, WIDTH, dashboard_uid


def _source() -> DataSourceRef:
    return DataSourceRef(type_val="prometheus", uid=DATASOURCE)


def _query(target: dict[str, Any]) -> prometheus.Dataquery:
    return (
        prometheus.Dataquery()
        .expr(target["expr"])
        .legend_format(target["legendFormat"])
        .datasource(_source())
    )


def _panel(shown: dict[str, Any]) -> timeseries.Panel | stat.Panel:
    """A panel built as the renderer's calls would build it with the SDK."""
    unit = shown["fieldConfig"]["defaults"]["unit"]
    if shown["type"] == "stat":
        panel: timeseries.Panel | stat.Panel = stat.Panel().height(4)
    else:
        assert shown["type"] == "timeseries", shown["type"]
        panel = timeseries.Panel().min(0).line_width(1).fill_opacity(10).height(HEIGHT)
    panel = (
        panel.title(shown["title"])
        .description(shown["description"])
        .datasource(_source())
        .unit(unit)
        .span(WIDTH)
    )
    for target in shown["targets"]:
        panel = panel.with_target(_query(target))
    return panel


def sdk_dashboard(estate: Estate, plain: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dashboard as grafana-foundation-sdk builds it with the panels of ``plain`` (the
    renderer's dashboard of ``estate`` when not given)."""
    if plain is None:
        from estategen.renderers.grafana import build_dashboard

        plain = build_dashboard(estate)
    board = (
        dashboard.Dashboard(f"GPU estate {estate.name}")
        .uid(dashboard_uid(estate))
        .description(f"GPUs of estate {estate.name} on both schedulers, rendered by estategen")
        .tags(["estategen", "gpu", estate.name])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        )
    )
    for shown in plain["panels"]:
        if shown["type"] == "row":
            board = board.with_row(dashboard.Row(shown["title"]))
        else:
            board = board.with_panel(_panel(shown))
    data: dict[str, Any] = json.loads(JSONEncoder().encode(board.build()))
    return data
