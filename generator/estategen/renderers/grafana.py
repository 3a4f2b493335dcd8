"""A Grafana dashboard of the estate's GPUs, written as Grafana's JSON model from the model.

One row for the estate (GPUs installed and busy, alerts firing), then a row per scheduler
with a panel per pool (GPUs busy, idle and installed, MIG or time-sliced units, utilisation),
per-team usage against quota (Kueue) or fairshare (Slurm), and the scheduler's queue. Every
query reads series the estate's recording rules record or its exporters export, with the
same names on both schedulers (:mod:`estategen.prometheus_rules`). Provisioning files let
Grafana load it from disk.

The panels are the plain data grafana-foundation-sdk's builders make of the same panels
(defaults, grid placement and all): tests/grafana_sdk.py rebuilds the dashboard's panels with
the SDK and tests/test_grafana.py requires the two to be equal and the result to decode as the
SDK's Dashboard model. The data is written without the SDK for the time its import and
builders cost each render (``python benchmarks/grafana_dashboard.py``).
"""

from __future__ import annotations

from typing import Any

from estategen import facts
from estategen import prometheus_rules as rules
from estategen.model import Estate, NodePool
from estategen.output import Files, json_file, renderer, text
from estategen.renderers.observability import has_node_exporter_targets

GRAFANA = "observability/grafana"
DASHBOARDS_DIR = "/var/lib/grafana/dashboards/estategen"
DATASOURCE = "${datasource}"
SCHEDULERS = (("slurm", "Slurm"), ("kubernetes", "Kubernetes"))
WIDTH = 8  # three panels across Grafana's 24 columns
HEIGHT = 8
COLUMNS = 24  # Grafana's grid
# the schema version grafana-foundation-sdk 11.6 writes
SCHEMA_VERSION = 41

Panel = dict[str, Any]


def dashboard_uid(estate: Estate) -> str:
    return f"estategen-{estate.name}"


def _datasource() -> dict[str, str]:
    return {"type": "prometheus", "uid": DATASOURCE}


def _query(expr: str, legend: str) -> dict[str, Any]:
    """A Prometheus query (the SDK's prometheus.Dataquery with expr, legend and datasource)."""
    return {"datasource": _datasource(), "expr": expr, "legendFormat": legend, "refId": ""}


def _panel(kind: str, title: str, description: str, defaults: dict[str, Any], height: int) -> Panel:
    """A panel as the SDK's panel builders make it: placed later by :class:`_Grid`."""
    return {
        "datasource": _datasource(),
        "description": description,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "gridPos": {"h": height, "w": WIDTH, "x": 0, "y": 0},
        "repeatDirection": "h",
        "targets": [],
        "title": title,
        "transparent": False,
        "type": kind,
    }


def _timeseries(title: str, description: str, unit: str, *targets: dict[str, Any]) -> Panel:
    panel = _panel(
        "timeseries",
        title,
        description,
        {"custom": {"fillOpacity": 10, "lineWidth": 1}, "min": 0, "unit": unit},
        HEIGHT,
    )
    panel["targets"].extend(targets)
    return panel


def _stat(title: str, description: str, expr: str, unit: str = "none") -> Panel:
    panel = _panel("stat", title, description, {"unit": unit}, 4)
    panel["targets"].append(_query(expr, ""))
    return panel


class _Grid:
    """The dashboard's panels, placed as the SDK's Dashboard builder places them: left to
    right, a new line once the 24 columns are full, each row on the line below everything
    above it."""

    def __init__(self) -> None:
        self.panels: list[Panel] = []
        self.x = 0
        self.y = 0
        self.tallest = 0  # of the panels on the current line

    def row(self, title: str) -> None:
        y = self.y + self.tallest
        self.panels.append(
            {
                "collapsed": False,
                "gridPos": {"h": 1, "w": COLUMNS, "x": 0, "y": y},
                "id": 0,
                "panels": [],
                "title": title,
                "type": "row",
            }
        )
        self.x, self.y, self.tallest = 0, y + 1, 0

    def panel(self, panel: Panel) -> None:
        place = panel["gridPos"]
        place["x"], place["y"] = self.x, self.y
        self.panels.append(panel)
        self.x += place["w"]
        self.tallest = max(self.tallest, place["h"])
        if self.x >= COLUMNS:
            self.x, self.y, self.tallest = 0, self.y + self.tallest, 0


def _pool_panel(estate: Estate, pool: NodePool) -> Panel:
    selector = f'{{estate="{estate.name}", pool="{pool.name}"}}'
    units_per_gpu = facts.mig_instances_per_gpu(pool) * facts.replicas(pool)
    assert pool.gpus is not None
    shape = (
        f", autoscaled to {pool.nodes_max} nodes; its nodes run no node exporter, so only "
        "what it installs is shown"
        if pool.managed
        else f", {len(pool.hosts)} hosts"
    )
    panel = _timeseries(
        f"{pool.name}: GPUs busy and idle",
        f"Pool {pool.name} ({' + '.join(f'{k.count} {k.model}' for k in pool.gpus.types)} "
        f"per node{shape}): GPUs "
        "with any utilisation (busy) and without (idle), against what the blueprint "
        "installs.",
        "none",
        _query(f"{rules.POOL_BUSY}{selector}", "busy"),
        _query(f"{rules.POOL_IDLE}{selector}", "idle"),
        _query(f"{rules.POOL_GPUS}{selector}", "installed"),
    )
    if units_per_gpu > 1:
        kind = "MIG instances" if facts.mig_instances_per_gpu(pool) > 1 else "time-sliced GPUs"
        panel["targets"].append(_query(f"{rules.POOL_UNITS}{selector}", kind))
    return panel


def _utilisation_panel(estate: Estate, scheduler: str, pools: list[NodePool]) -> Panel:
    names = "|".join(pool.name for pool in pools)
    return _timeseries(
        "GPU utilisation per pool",
        "Average GPU utilisation of each pool's GPUs that report it (DCGM exporter).",
        "percentunit",
        _query(
            f'{rules.POOL_UTILISATION}{{estate="{estate.name}", scheduler="{scheduler}", '
            f'pool=~"{names}"}}',
            "{{pool}}",
        ),
    )


def _team_panel(estate: Estate, scheduler: str) -> Panel:
    selector = f'{{estate="{estate.name}", scheduler="{scheduler}"}}'
    if scheduler == "slurm":
        return _timeseries(
            "Teams: GPUs in use and fairshare",
            "GPUs each team's Slurm account runs on, and its normalised fairshare shares "
            "against its normalised usage (Slurm exporter).",
            "none",
            _query(f"{rules.TEAM_GPUS_IN_USE}{selector}", "{{team}} GPUs"),
            _query(f"{rules.TEAM_FAIRSHARE_SHARES}{selector}", "{{team}} shares"),
            _query(f"{rules.TEAM_FAIRSHARE_USAGE}{selector}", "{{team}} usage"),
        )
    return _timeseries(
        "Teams: GPUs in use against quota",
        "GPU units each team's ClusterQueue has admitted, against its nominal quota (Kueue).",
        "none",
        _query(f"{rules.TEAM_GPUS_IN_USE}{selector}", "{{team}} in use"),
        _query(f"{rules.TEAM_GPU_QUOTA}{selector}", "{{team}} quota"),
    )


def _queue_panel(estate: Estate, scheduler: str) -> Panel:
    if scheduler == "slurm":
        # a partition's '.' matched literally: \\. in a PromQL string is the regex's \.
        partitions = "|".join(p.name.replace(".", "\\\\.") for p in estate.slurm.partitions)
        return _timeseries(
            "Pending jobs and unavailable nodes",
            "Jobs pending per partition, and nodes down or drained (Slurm exporter).",
            "none",
            _query(
                f'slurm_partition_jobs_pending{{job="{rules.SLURM_JOB}", '
                f'partition=~"{partitions}"}}',
                "{{partition}} pending",
            ),
            _query(
                f'count by (status) (slurm_node_status{{job="{rules.SLURM_JOB}", '
                'status=~"(down|drain|fail).*|.*[*]"})',
                "nodes {{status}}",
            ),
        )
    return _timeseries(
        "Pending workloads",
        "Workloads waiting in each team's ClusterQueue (Kueue).",
        "none",
        _query(
            "sum by (cluster_queue) (kueue_pending_workloads"
            f'{{cluster_queue=~"{"|".join(rules.queued_teams(estate))}"}})',
            "{{cluster_queue}}",
        ),
    )


def _alert_names(estate: Estate) -> list[str]:
    return [
        rule["alert"]
        for group in rules.observability_rules(estate)
        for rule in group["rules"]
        if "alert" in rule
    ]


def build_dashboard(estate: Estate) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model."""
    selector = f'{{estate="{estate.name}"}}'
    alerts = f'ALERTS{{alertstate="firing", alertname=~"{"|".join(_alert_names(estate))}"}}'
    grid = _Grid()
    grid.row(f"Estate {estate.name}")
    grid.panel(
        _stat(
            "GPUs installed",
            "Physical GPUs the blueprint declares (an autoscaled pool at nodes.max).",
            f"sum({rules.POOL_GPUS}{selector})",
        )
    )
    grid.panel(
        _stat(
            "GPUs busy",
            "GPUs with any utilisation, both schedulers.",
            f"sum({rules.POOL_BUSY}{selector})",
        )
    )
    grid.panel(
        _stat(
            "Alerts firing",
            "The estate's alerts firing now (observability/prometheus/rules/).",
            f"count({alerts}) or vector(0)",
        )
    )
    for scheduler, title in SCHEDULERS:
        pools = [p for p in estate.node_pools if p.scheduler == scheduler and p.gpus]
        if not pools:
            continue
        grid.row(f"{title}: a panel per pool")
        for pool in pools:
            grid.panel(_pool_panel(estate, pool))
        grid.panel(_utilisation_panel(estate, scheduler, pools))
        if scheduler == "slurm" or rules.queued_teams(estate):
            grid.panel(_team_panel(estate, scheduler))
            grid.panel(_queue_panel(estate, scheduler))
    grid.row("Alerts")
    grid.panel(
        _timeseries(
            "Alerts firing by name",
            "Which of the estate's alerts fire, over time.",
            "none",
            _query(f"count by (alertname) ({alerts})", "{{alertname}}"),
        )
    )
    return {
        "annotations": {},
        "description": f"GPUs of estate {estate.name} on both schedulers, rendered by estategen",
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,  # DashboardCursorSync.CROSSHAIR
        "panels": grid.panels,
        "refresh": "1m",
        "schemaVersion": SCHEMA_VERSION,
        "tags": ["estategen", "gpu", estate.name],
        "templating": {
            "list": [
                {
                    "allowCustomValue": True,
                    "auto": False,
                    "auto_count": 30,
                    "auto_min": "10s",
                    "includeAll": False,
                    "label": "Prometheus",
                    "multi": False,
                    "name": "datasource",
                    "query": "prometheus",
                    "skipUrlSync": False,
                    "type": "datasource",
                }
            ]
        },
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "browser",
        "title": f"GPU estate {estate.name}",
        "uid": dashboard_uid(estate),
    }


_PROVIDER = """\
# Grafana dashboard provisioning for estate {estate}, rendered by estategen. Copy this file to
# /etc/grafana/provisioning/dashboards/ and the dashboards/ folder beside it to {path}/;
# Grafana loads the dashboard at start and re-reads the folder when it changes. The
# dashboard asks for a Prometheus data source (variable "datasource").
apiVersion: 1
providers:
  - name: estategen-{estate}
    folder: GPU estates
    type: file
    disableDeletion: true
    allowUiUpdates: false
    options:
      path: {path}
"""


@renderer
def grafana_files(estate: Estate) -> Files:
    # beside the Prometheus configuration whose rules its panels read
    if not (any(pool.gpus for pool in estate.node_pools) and has_node_exporter_targets(estate)):
        return {}
    return {
        f"{GRAFANA}/dashboards/{dashboard_uid(estate)}.json": json_file(build_dashboard(estate)),
        f"{GRAFANA}/provisioning/dashboards/estategen.yml": text(
            _PROVIDER.format(estate=estate.name, path=DASHBOARDS_DIR)
        ),
    }


def layout_svg(dashboard: dict[str, Any]) -> str:
    """A picture of the dashboard's layout (rows and panels where Grafana places them), for
    docs/observability.md: the panels' grid positions drawn to scale, each with its title and
    series."""
    from xml.sax.saxutils import escape

    column, unit, margin = 40, 28, 10
    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard["panels"])
    width, height = 24 * column + 2 * margin, bottom * unit + 2 * margin + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="#111217"/>',
        f'<text x="{margin}" y="{margin + 18}" fill="#e0e0e0" font-size="18">'
        f"{escape(dashboard['title'])}</text>",
    ]
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        x, y = margin + grid["x"] * column, margin + 30 + grid["y"] * unit
        w, h = grid["w"] * column - 6, grid["h"] * unit - 6
        title = escape(panel["title"])
        if panel["type"] == "row":
            out.append(
                f'<text x="{x}" y="{y + 18}" fill="#6e9fff" font-size="15" '
                f'font-weight="bold">{title}</text>'
            )
            continue
        out.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4" fill="#181b1f" '
            'stroke="#2c3235"/>'
        )
        out.append(f'<text x="{x + 8}" y="{y + 18}" fill="#e0e0e0" font-size="13">{title}</text>')
        # each series by its legend, or its query where it has none
        legends = [t.get("legendFormat") or t["expr"] for t in panel.get("targets", [])]
        fits = w // 6 - len(panel["type"]) - 4
        for i, legend in enumerate(legends[: max(1, (h - 30) // 16)]):
            shown = legend if len(legend) <= fits else legend[: fits - 1] + "…"
            out.append(
                f'<text x="{x + 8}" y="{y + 38 + 16 * i}" fill="#8e9297" font-size="11">'
                f"{escape(panel['type'])}: {escape(shown)}</text>"
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"
