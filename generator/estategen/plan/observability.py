"""What changes for Prometheus and Grafana (:func:`observability_changes`): the scrape
jobs, rules, file_sd targets and dashboard each model builds, compared item by item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from estategen.model import Estate
from estategen.plan.steps import Action, Change
from estategen.plan.values import differing, plain, short


def observability_changes(old: Estate, new: Estate) -> dict[str, list[Change]]:
    """What changes for Prometheus and Grafana, by the file that carries it: the scrape jobs,
    rules, file_sd targets and dashboard each model builds (the functions
    :mod:`estategen.renderers.observability` and :mod:`estategen.renderers.grafana` render),
    compared item by item."""
    from estategen.prometheus_rules import DCGM_JOB, NODE_JOB, SLURM_JOB, observability_rules
    from estategen.renderers import grafana, observability

    base = observability.PROMETHEUS
    reload = (Action("prometheus-reload"),)
    out: dict[str, list[Change]] = {}
    jobs = (
        _by_name(observability.scrape_configs(old), "job_name"),
        _by_name(observability.scrape_configs(new), "job_name"),
    )
    for file in ("scrape-configs.yml", "prometheus.yml"):
        out[f"{base}/{file}"] = _items_changed(
            f"{base}/{file}",
            "prometheus-config",
            "scrape job",
            *jobs,
            "the scrape jobs change: Prometheus needs a reload",
            reload,
        )
    rules_a, rules_b = (_rules(observability_rules(side)) for side in (old, new))
    out[f"{base}/{observability.RULES_FILE}"] = _items_changed(
        f"{base}/{observability.RULES_FILE}",
        "prometheus-config",
        "rule",
        rules_a,
        rules_b,
        "the estate's recording or alerting rules change: Prometheus needs a reload",
        reload,
    )
    for job, targets in (
        (NODE_JOB, observability.node_exporter_targets),
        (DCGM_JOB, observability.dcgm_exporter_targets),
        (SLURM_JOB, observability.slurm_exporter_targets),
    ):
        path = f"{base}/targets/{job}.json"
        a, b = _targets(targets(old)), _targets(targets(new))
        if a != b:
            gone, come = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            part_a, part_b = (gone, come) if gone or come else differing(a, b)
            out[path] = [
                Change(
                    path,
                    "prometheus-targets",
                    f"{job} targets",
                    "Prometheus re-reads file_sd target files when they change: copy them to "
                    "the Prometheus server, no reload needed",
                    short(part_a) if part_a else "",
                    short(part_b) if part_b else "",
                    (Action("review", "copy observability/prometheus/targets/ to Prometheus"),),
                )
            ]
    if grafana.dashboard_uid(old) == grafana.dashboard_uid(new):
        path = f"{grafana.GRAFANA}/dashboards/{grafana.dashboard_uid(new)}.json"
        panels_a, panels_b = (
            _by_name(plain(grafana.build_dashboard(side)).get("panels", []), "title")
            for side in (old, new)
        )
        out[path] = _items_changed(
            path,
            "grafana-dashboard",
            "panel",
            panels_a,
            panels_b,
            "Grafana re-reads provisioned dashboards when their files change: copy them to the "
            "Grafana server, no restart needed",
            (Action("review", "copy observability/grafana/dashboards/ to Grafana"),),
        )
    return out


def _targets(groups: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """file_sd groups as each target address with its labels (read once per group: the 100k
    estate's 12,500 node targets share 250 sets)."""
    out: dict[str, Any] = {}
    for group in groups:
        targets = group.get("targets") or []
        if targets:
            labels = plain(group.get("labels") or {})
            for target in targets:
                out[target] = labels
    return out


def _rules(groups: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Rules by what they record or alert on; one recorded several times (by its labels) is
    told apart by its order in its group."""
    out: dict[str, Any] = {}
    last: dict[str, int] = {}  # the last n of each name: the ones below it are taken
    for group in groups:
        for rule in group.get("rules") or []:
            name = str(rule.get("alert") or rule.get("record"))
            n = last.get(name, 1)
            key = name if n == 1 else f"{name} ({n})"
            while key in out:
                n += 1
                key = f"{name} ({n})"
            last[name] = n
            out[key] = plain(rule)
    return out


def _by_name(items: Iterable[Mapping[str, Any]], *keys: str) -> dict[str, Any]:
    """Items by the first of ``keys`` each carries, as plain data."""
    return {
        str(next((item[k] for k in keys if k in item), i)): plain(item)
        for i, item in enumerate(items)
    }


def _items_changed(
    path: str,
    kind: str,
    noun: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    meaning: str,
    actions: tuple[Action, ...],
) -> list[Change]:
    """One change per item added, removed or changed."""
    changes = []
    for name in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        part_a, part_b = differing(a, b)
        changes.append(
            Change(
                path,
                kind,
                f"{noun} {name}",
                meaning,
                "" if a is None else short(part_a),
                "" if b is None else short(part_b),
                actions,
            )
        )
    return changes
