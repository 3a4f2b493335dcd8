"""Recording and alerting rules, judged by Prometheus' own promtool.

`promtool check config` and `promtool check rules` accept every example's output; `promtool
test rules` feeds synthetic series to the rendered rules: each alert fires on the failure it
names, after the blueprint's threshold, and stays silent on healthy series; the recording
rules give GPUs of both schedulers the same pool, scheduler and estate labels.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import load
from estategen.errors import BlueprintInvalid
from estategen.model import Estate
from estategen.pipeline import validate_document
from estategen.prometheus_rules import observability_rules
from estategen.render import render
from estategen.schema.patterns import PROM_MAX_DAYS

from conftest import BLUEPRINTS

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian: prometheus) missing")
PROMETHEUS = "observability/prometheus"

# lab.yaml with accounting and every alert threshold away from its default, so each key is
# seen to reach the rules: the tests below are written in these numbers
THRESHOLDS = """\
  alerts:
    exporter_down_for: 3m
    gpu_thermal_throttling_percent: 20
    gpu_thermal_throttling_for: 4m
    slurm_node_down_for: 10m
    slurm_node_drained_for: 2h
    slurm_controller_unreachable_for: 6m
    slurmdbd_unreachable_for: 7m
    kueue_pending_for: 20m
    stranded_quota_used_percent: 40
    stranded_quota_for: 30m
"""


def lab_text() -> str:
    return (
        (BLUEPRINTS / "lab.yaml")
        .read_text()
        .replace(
            "  controllers: [lab-ctl]\n",
            "  controllers: [lab-ctl]\n  accounting:\n    host: lab-db\n"
            "    database: {host: localhost, password: {secret: db}}\n",
        )
        .replace("  labels: {site: lab}\n", "  labels: {site: lab}\n" + THRESHOLDS)
    )


def estate_of(text: str) -> Estate:
    return validate_document(load.parse_blueprint(text.encode(), "bp.yaml")).estate


def write(files: dict[str, Any], root: Path) -> Path:
    for path, output in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(output.content)
    return root / PROMETHEUS


def promtool(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL
    return subprocess.run(
        [PROMTOOL, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Estate, Path]:
    estate = estate_of(lab_text())
    return estate, write(render(estate), tmp_path_factory.mktemp("lab"))


def rule(estate: Estate, name: str) -> dict[str, Any]:
    (found,) = [
        r for g in observability_rules(estate) for r in g["rules"] if r.get("alert") == name
    ]
    return found


_RUNS = itertools.count()


def unit_test(root: Path, tests: list[dict[str, Any]]) -> None:
    """Run `promtool test rules` on the rendered rule file; fail with its report."""
    spec = {
        "rule_files": ["rules/estategen.rules.yml"],
        "evaluation_interval": "1m",
        "tests": tests,
    }
    path = root / f"unit-tests-{next(_RUNS)}.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = promtool("test", "rules", path.name, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def alert_test(
    series: dict[str, str], at: str, alertname: str, fired: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "alert_rule_test": [{"eval_time": at, "alertname": alertname, "exp_alerts": fired}],
    }


def fired(estate: Estate, name: str, labels: dict[str, str], summary: str) -> list[dict[str, Any]]:
    found = rule(estate, name)
    return [
        {
            "exp_labels": {**labels, "severity": found["labels"]["severity"]},
            "exp_annotations": {"summary": summary, "runbook": found["annotations"]["runbook"]},
        }
    ]


# --- every example ---------------------------------------------------------------------------


@pytest.mark.parametrize("blueprint", sorted(BLUEPRINTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_promtool_accepts_config_and_rules_of_every_example(
    blueprint: Path, tmp_path: Path
) -> None:
    estate = validate_document(load.read_blueprint(blueprint)).estate
    root = write(render(estate), tmp_path)
    config = promtool("check", "config", "prometheus.yml", cwd=root)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "SUCCESS: 1 rule files found" in config.stdout
    rules = promtool("check", "rules", "rules/estategen.rules.yml", cwd=root)
    assert rules.returncode == 0, rules.stdout + rules.stderr


def test_promtool_accepts_the_lab_with_every_threshold_set(lab: tuple[Estate, Path]) -> None:
    _, root = lab
    result = promtool("check", "config", "prometheus.yml", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


# --- one vocabulary --------------------------------------------------------------------------

NODE_INFO = 'estategen_node_info{{job="node-exporter", instance="{host}:9100", estate="lab", pool="{pool}", scheduler="{scheduler}", site="lab"}}'  # noqa: E501
DCGM = '{field}{{job="dcgm-exporter", instance="{host}:9400", gpu="{gpu}", site="lab"}}'


def test_gpus_of_both_schedulers_get_pool_and_scheduler(lab: tuple[Estate, Path]) -> None:
    """A Slurm host (file_sd) and a Kubernetes node (ServiceMonitor) land in one vocabulary."""
    _, root = lab
    series = {
        NODE_INFO.format(host="lab-gpu-01", pool="a100", scheduler="slurm"): "1x5",
        NODE_INFO.format(host="lab-k8s-01", pool="l4-serve", scheduler="kubernetes"): "1x5",
        DCGM.format(field="DCGM_FI_DEV_GPU_UTIL", host="lab-gpu-01", gpu="0"): "100x5",
        DCGM.format(field="DCGM_FI_DEV_GPU_UTIL", host="lab-gpu-01", gpu="1"): "0x5",
        DCGM.format(field="DCGM_FI_DEV_GPU_UTIL", host="lab-k8s-01", gpu="0"): "50x5",
    }
    slurm = {"estate": "lab", "scheduler": "slurm", "pool": "a100", "site": "lab"}
    k8s = {"estate": "lab", "scheduler": "kubernetes", "pool": "l4-serve", "site": "lab"}
    unit_test(
        root,
        [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": [
                    {
                        "expr": "pool:gpu_utilisation:avg",
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": f"pool:gpu_utilisation:avg{_labels(slurm)}", "value": 0.5},
                            {"labels": f"pool:gpu_utilisation:avg{_labels(k8s)}", "value": 0.5},
                        ],
                    },
                    {
                        "expr": "pool:gpus_busy:count",
                        "eval_time": "2m",
                        "exp_samples": [
                            {"labels": f"pool:gpus_busy:count{_labels(slurm)}", "value": 1},
                            {"labels": f"pool:gpus_busy:count{_labels(k8s)}", "value": 1},
                        ],
                    },
                    {
                        "expr": 'estategen:pool_gpus:installed{pool="a100"}',
                        "eval_time": "2m",
                        "exp_samples": [
                            {
                                "labels": "estategen:pool_gpus:installed"
                                '{estate="lab", scheduler="slurm", pool="a100"}',
                                "value": 8,  # lab-gpu-[01-02], 4 GPUs each
                            }
                        ],
                    },
                ],
            }
        ],
    )


def _labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def test_slurm_and_kueue_teams_share_one_team_vocabulary(lab: tuple[Estate, Path]) -> None:
    _, root = lab
    series = {
        'slurm_account_gpus_running{job="slurm-exporter", account="nlp", site="lab"}': "3x5",
        'slurm_account_gpus_running{job="slurm-exporter", account="other", site="lab"}': "9x5",
        'kueue_cluster_queue_resource_usage{cluster_queue="nlp", cohort="lab",'
        ' flavor="l4-24gb", resource="nvidia.com/gpu"}': "2x5",
        'kueue_cluster_queue_resource_usage{cluster_queue="nlp", cohort="lab",'
        ' flavor="l4-24gb", resource="cpu"}': "64x5",
    }
    unit_test(
        root,
        [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": [
                    {
                        "expr": "team:gpus_in_use:count",
                        "eval_time": "2m",
                        "exp_samples": [
                            {
                                "labels": 'team:gpus_in_use:count{estate="lab", '
                                'scheduler="slurm", team="nlp", site="lab"}',
                                "value": 3,
                            },
                            {
                                "labels": 'team:gpus_in_use:count{estate="lab", '
                                'scheduler="kubernetes", team="nlp"}',
                                "value": 2,
                            },
                        ],
                    }
                ],
            }
        ],
    )


# --- alerts: fire on the failure, after the threshold; silent when healthy -------------------

XID = 'DCGM_FI_DEV_XID_ERRORS{job="dcgm-exporter", instance="lab-gpu-01:9400", gpu="0"}'
GPU0 = {"job": "dcgm-exporter", "instance": "lab-gpu-01:9400", "gpu": "0"}


def test_exporter_down_fires_after_its_threshold(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    down = {'up{job="node-exporter", instance="lab-gpu-01:9100"}': "0x10"}
    labels = {"alertname": "EstateExporterDown", "job": "node-exporter"}
    labels["instance"] = "lab-gpu-01:9100"
    expected = fired(
        estate, "EstateExporterDown", labels, "node-exporter on lab-gpu-01:9100 is down"
    )
    unit_test(
        root,
        [
            alert_test(down, "2m", "EstateExporterDown", []),  # exporter_down_for: 3m
            alert_test(down, "4m", "EstateExporterDown", expected),
            alert_test(
                {'up{job="dcgm-exporter", instance="x:9400"}': "1x10"},
                "9m",
                "EstateExporterDown",
                [],
            ),
        ],
    )


def test_xid_79_is_a_gpu_that_fell_off_the_bus(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "GPU 0 on lab-gpu-01:9400 fell off the bus (XID 79)"
    expected = fired(estate, "GpuFellOffTheBus", {"alertname": "GpuFellOffTheBus", **GPU0}, summary)
    unit_test(
        root,
        [
            alert_test({XID: "0 79 79"}, "1m", "GpuFellOffTheBus", expected),
            alert_test({XID: "0 79 79"}, "1m", "GpuXidError", []),
            alert_test({XID: "0 0 0"}, "2m", "GpuFellOffTheBus", []),
        ],
    )


def test_other_xids_are_xid_errors(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "GPU 0 on lab-gpu-01:9400 reported XID 13"
    expected = fired(estate, "GpuXidError", {"alertname": "GpuXidError", **GPU0}, summary)
    unit_test(
        root,
        [
            alert_test({XID: "0 13 13"}, "1m", "GpuXidError", expected),
            alert_test({XID: "0 13 13"}, "1m", "GpuFellOffTheBus", []),
            alert_test({XID: "0 0 0"}, "2m", "GpuXidError", []),
        ],
    )


def test_double_bit_ecc(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    dbe = 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{job="dcgm-exporter", instance="lab-gpu-01:9400", gpu="0"}'
    summary = "GPU 0 on lab-gpu-01:9400 had a double-bit ECC error"
    expected = fired(
        estate, "GpuDoubleBitEccError", {"alertname": "GpuDoubleBitEccError", **GPU0}, summary
    )
    unit_test(
        root,
        [
            alert_test({dbe: "0 0 0 1 1 1"}, "4m", "GpuDoubleBitEccError", expected),
            alert_test({dbe: "2x10"}, "8m", "GpuDoubleBitEccError", []),  # old errors only
        ],
    )


def test_thermal_throttling_above_the_share_for_the_duration(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    violation = (
        'DCGM_FI_DEV_THERMAL_VIOLATION{job="dcgm-exporter", instance="lab-gpu-01:9400", gpu="0"}'
    )
    # microseconds throttled: 18 s per minute is 30 %, 6 s per minute is 10 % (threshold 20 %)
    hot, warm = {violation: "0+18000000x30"}, {violation: "0+6000000x30"}
    summary = "GPU 0 on lab-gpu-01:9400 is thermally throttled 30% of the time"
    expected = fired(
        estate, "GpuThermalThrottling", {"alertname": "GpuThermalThrottling", **GPU0}, summary
    )
    unit_test(
        root,
        [
            alert_test(hot, "3m", "GpuThermalThrottling", []),  # pending: for 4m
            alert_test(hot, "10m", "GpuThermalThrottling", expected),
            alert_test(warm, "20m", "GpuThermalThrottling", []),
        ],
    )


def test_a_host_with_fewer_gpus_than_its_pool_has(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    info = NODE_INFO.format(host="lab-gpu-01", pool="a100", scheduler="slurm")

    def gpus(n: int) -> dict[str, str]:
        memory = {
            DCGM.format(field="DCGM_FI_DEV_FB_USED", host="lab-gpu-01", gpu=g): "100x15"
            for g in range(n)
        }
        return {info: "1x15", **memory}

    labels = {"estate": "lab", "scheduler": "slurm", "pool": "a100", "host": "lab-gpu-01"}
    summary = "lab-gpu-01 reports 3 GPUs, fewer than pool a100 has per host"
    expected = fired(estate, "GpuMissing", {"alertname": "GpuMissing", **labels}, summary)
    unit_test(
        root,
        [
            alert_test(gpus(3), "10m", "GpuMissing", expected),
            alert_test(gpus(4), "10m", "GpuMissing", []),  # a100: 4 GPUs per host
        ],
    )


def slurm_node(status: str) -> dict[str, str]:
    series = f'slurm_node_status{{job="slurm-exporter", node="lab-gpu-01", partition="gpu", status="{status}"}}'  # noqa: E501
    return {series: "1x200"}


@pytest.mark.parametrize("status", ["down", "down*", "idle*", "fail"])
def test_slurm_node_down_or_not_responding(lab: tuple[Estate, Path], status: str) -> None:
    estate, root = lab
    summary = "Slurm node lab-gpu-01 is down or not responding"
    expected = fired(
        estate, "SlurmNodeDown", {"alertname": "SlurmNodeDown", "node": "lab-gpu-01"}, summary
    )
    unit_test(
        root,
        [
            alert_test(slurm_node(status), "9m", "SlurmNodeDown", []),  # slurm_node_down_for: 10m
            alert_test(slurm_node(status), "11m", "SlurmNodeDown", expected),
        ],
    )


@pytest.mark.parametrize("status", ["idle", "mixed", "allocated", "drained"])
def test_healthy_or_drained_nodes_are_not_down(lab: tuple[Estate, Path], status: str) -> None:
    _, root = lab
    unit_test(root, [alert_test(slurm_node(status), "60m", "SlurmNodeDown", [])])


def test_slurm_node_drained_too_long(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "Slurm node lab-gpu-01 has been drained too long"
    labels = {"alertname": "SlurmNodeDrainedTooLong", "node": "lab-gpu-01"}
    expected = fired(estate, "SlurmNodeDrainedTooLong", labels, summary)
    unit_test(
        root,
        [
            alert_test(slurm_node("drained"), "119m", "SlurmNodeDrainedTooLong", []),
            alert_test(slurm_node("drained"), "121m", "SlurmNodeDrainedTooLong", expected),
            alert_test(slurm_node("draining"), "121m", "SlurmNodeDrainedTooLong", expected),
            alert_test(slurm_node("mixed"), "180m", "SlurmNodeDrainedTooLong", []),
        ],
    )


SLURM_UP = 'up{job="slurm-exporter", instance="lab-ctl:9341"}'
THREADS = 'slurm_scheduler_threads{job="slurm-exporter", instance="lab-ctl:9341"}'


def test_slurmctld_unreachable_when_sdiag_answers_nothing(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "slurmctld does not answer the Slurm exporter on lab-ctl:9341"
    labels = {"alertname": "SlurmctldUnreachable", "job": "slurm-exporter"}
    labels["instance"] = "lab-ctl:9341"
    expected = fired(estate, "SlurmctldUnreachable", labels, summary)
    unit_test(
        root,
        [
            alert_test({SLURM_UP: "1x10"}, "5m", "SlurmctldUnreachable", []),  # for 6m
            alert_test({SLURM_UP: "1x10"}, "7m", "SlurmctldUnreachable", expected),
            alert_test({SLURM_UP: "1x10", THREADS: "1x10"}, "9m", "SlurmctldUnreachable", []),
        ],
    )


def test_slurmdbd_unreachable_when_the_dbd_queue_never_empties(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    queue = 'slurm_scheduler_dbd_queue_size{job="slurm-exporter", instance="lab-ctl:9341"}'
    summary = "slurmctld has not emptied its queue for slurmdbd in 7m"
    labels = {"alertname": "SlurmdbdUnreachable", "job": "slurm-exporter"}
    labels["instance"] = "lab-ctl:9341"
    expected = fired(estate, "SlurmdbdUnreachable", labels, summary)
    unit_test(
        root,
        [
            alert_test({queue: "5+5x20"}, "6m", "SlurmdbdUnreachable", []),
            alert_test({queue: "5+5x20"}, "8m", "SlurmdbdUnreachable", expected),
            alert_test({queue: "0 4 0 3 0 6 0 2 0 5 0 1 0"}, "12m", "SlurmdbdUnreachable", []),
        ],
    )


def test_slurmdbd_alert_only_with_accounting() -> None:
    estate = estate_of((BLUEPRINTS / "lab.yaml").read_text())
    alerts = {r.get("alert") for g in observability_rules(estate) for r in g["rules"]}
    assert "SlurmdbdUnreachable" not in alerts
    assert "SlurmctldUnreachable" in alerts


PENDING = 'kueue_pending_workloads{cluster_queue="nlp", status="active"}'
ADMITTED = 'kueue_admitted_workloads_total{cluster_queue="nlp"}'


def test_kueue_workloads_pending_too_long(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "ClusterQueue nlp has pending workloads and admitted none in 20m"
    labels = {"alertname": "KueueWorkloadsPendingTooLong", "cluster_queue": "nlp"}
    expected = fired(estate, "KueueWorkloadsPendingTooLong", labels, summary)
    stuck = {PENDING: "2x40", ADMITTED: "5x40"}
    moving = {PENDING: "2x40", ADMITTED: "5+1x40"}
    unit_test(
        root,
        [
            alert_test(stuck, "19m", "KueueWorkloadsPendingTooLong", []),  # kueue_pending_for
            alert_test(stuck, "21m", "KueueWorkloadsPendingTooLong", expected),
            alert_test(moving, "39m", "KueueWorkloadsPendingTooLong", []),
            alert_test({PENDING: "0x40"}, "39m", "KueueWorkloadsPendingTooLong", []),
        ],
    )


def quota(team: str, used: int | None, pending: int) -> dict[str, str]:
    resource = f'cluster_queue="{team}", cohort="lab", flavor="l4-24gb", resource="nvidia.com/gpu"'
    series = {
        f"kueue_cluster_queue_nominal_quota{{{resource}}}": "2x60",
        f'kueue_pending_workloads{{cluster_queue="{team}", status="active"}}': f"{pending}x60",
    }
    if used is not None:
        series[f"kueue_cluster_queue_resource_usage{{{resource}}}"] = f"{used}x60"
    return series


def test_idle_quota_while_the_cohort_queues_is_stranded(lab: tuple[Estate, Path]) -> None:
    estate, root = lab
    summary = "Team vision uses 0% of its GPU quota while others in cohort lab queue"
    labels = {"alertname": "TeamQuotaStranded", "cluster_queue": "vision", "cohort": "lab"}
    expected = fired(estate, "TeamQuotaStranded", labels, summary)
    stranded = {**quota("vision", 0, 0), **quota("nlp", 2, 3)}
    no_usage_series = {**quota("vision", None, 0), **quota("nlp", 2, 3)}
    unit_test(
        root,
        [
            alert_test(stranded, "29m", "TeamQuotaStranded", []),  # stranded_quota_for: 30m
            alert_test(stranded, "31m", "TeamQuotaStranded", expected),
            alert_test(no_usage_series, "31m", "TeamQuotaStranded", expected),
        ],
    )


def test_quota_in_use_or_nobody_queueing_is_not_stranded(lab: tuple[Estate, Path]) -> None:
    _, root = lab
    unit_test(
        root,
        [
            # vision uses 1 of 2 (50 %, above the 40 % threshold)
            alert_test(
                {**quota("vision", 1, 0), **quota("nlp", 2, 3)}, "50m", "TeamQuotaStranded", []
            ),
            # nobody queues
            alert_test(
                {**quota("vision", 0, 0), **quota("nlp", 2, 0)}, "50m", "TeamQuotaStranded", []
            ),
            # vision queues itself: its quota is not idle by choice
            alert_test(
                {**quota("vision", 0, 1), **quota("nlp", 2, 3)}, "50m", "TeamQuotaStranded", []
            ),
        ],
    )


def test_every_alert_the_lab_renders_is_exercised_here() -> None:
    """A new alert needs a firing and a silent test in this file."""
    estate = estate_of(lab_text())
    alerts = {r["alert"] for g in observability_rules(estate) for r in g["rules"] if "alert" in r}
    source = Path(__file__).read_text()
    assert {a for a in alerts if source.count(f'"{a}"') < 2} == set()


@pytest.mark.parametrize(
    ("key", "alert", "where", "value"),
    [
        ("exporter_down_for", "EstateExporterDown", "for", "3m"),
        ("gpu_thermal_throttling_percent", "GpuThermalThrottling", "expr", "> 0.2"),
        ("gpu_thermal_throttling_for", "GpuThermalThrottling", "for", "4m"),
        ("slurm_node_down_for", "SlurmNodeDown", "for", "10m"),
        ("slurm_node_drained_for", "SlurmNodeDrainedTooLong", "for", "2h"),
        ("slurm_controller_unreachable_for", "SlurmctldUnreachable", "for", "6m"),
        ("slurmdbd_unreachable_for", "SlurmdbdUnreachable", "for", "7m"),
        ("kueue_pending_for", "KueueWorkloadsPendingTooLong", "for", "20m"),
        ("kueue_pending_for", "KueueWorkloadsPendingTooLong", "expr", "[20m]"),
        ("stranded_quota_used_percent", "TeamQuotaStranded", "expr", "< 0.4 "),
        ("stranded_quota_for", "TeamQuotaStranded", "for", "30m"),
    ],
)
def test_each_threshold_reaches_its_alert(key: str, alert: str, where: str, value: str) -> None:
    """observability.alerts.KEY, set in lab_text(), is what the alert uses; the default differs."""
    estate = estate_of(lab_text())
    default = estate_of(lab_text().replace(f"    {key}: ", "    # "))
    assert value in rule(estate, alert)[where]
    assert value not in rule(default, alert)[where]


# --- the longest duration a threshold may be ---------------------------------------------

DURATIONS = [line.split(":")[0].strip() for line in THRESHOLDS.splitlines() if "_for:" in line]
LONGEST = f"{PROM_MAX_DAYS}d"  # 106751d: int64 nanoseconds hold 106751 days and some hours


def with_durations(value: str) -> str:
    text = lab_text()
    for key in DURATIONS:
        text = re.sub(rf"({key}: )\S+", rf"\g<1>{value}", text)
    return text


def test_the_longest_duration_validate_accepts_is_one_promtool_accepts(tmp_path: Path) -> None:
    assert len(DURATIONS) == 8
    estate = estate_of(with_durations(LONGEST))
    assert rule(estate, "KueueWorkloadsPendingTooLong")["for"] == LONGEST
    root = write(render(estate), tmp_path)
    result = promtool("check", "rules", "rules/estategen.rules.yml", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_day_longer_is_refused_at_its_key_as_promtool_would(tmp_path: Path) -> None:
    longer = f"{PROM_MAX_DAYS + 1}d"
    with pytest.raises(BlueprintInvalid) as refused:
        estate_of(with_durations(longer))
    assert sorted(f.path for f in refused.value.findings) == sorted(
        f"observability.alerts.{key}" for key in DURATIONS
    )
    assert all(f"at most {LONGEST}" in f.message for f in refused.value.findings)
    # rendered all the same (validation bypassed), Prometheus refuses every one of them
    estate = estate_of(with_durations(LONGEST))
    alerts = replace(estate.observability.alerts, **{key: longer for key in DURATIONS})
    estate = replace(estate, observability=replace(estate.observability, alerts=alerts))
    root = write(render(estate), tmp_path)
    result = promtool("check", "rules", "rules/estategen.rules.yml", cwd=root)
    assert result.returncode != 0 and "out of range" in result.stdout + result.stderr
