"""The pipeline that runs the checks: BASE (tests/checks/base.py) with a change in, validated
whole; each finding is placed at its line, all are sorted by line, and the schema's errors stop
the run before the checks.
"""

from __future__ import annotations

import pytest

from estategen import load, pipeline
from estategen.errors import BlueprintInvalid

from .base import BASE, line_of

# --- pipeline ------------------------------------------------------------------------------------


def validate(text: str) -> pipeline.Validated:
    return pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"))


def test_pipeline_schema_error_carries_file_line_and_column() -> None:
    text = BASE.replace("{name: alice, uid: 10001}", "{name: alice, uid: 10}")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    line = line_of(text, "uid: 10}")
    column = text.splitlines()[line - 1].index("uid") + 1
    assert (finding.file, finding.line, finding.column) == ("bp.yaml", line, column)
    assert finding.path == "identity.users[0].uid"
    assert "below the minimum of 1000" in finding.message


def test_pipeline_check_error_is_placed_at_the_key_it_names() -> None:
    text = BASE.replace("model: a100-sxm-80gb", "model: a200")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert finding.path == "node_pools[0].gpus.model"
    line = line_of(text, "model: a200")
    column = text.splitlines()[line - 1].index("model") + 1
    assert (finding.file, finding.line, finding.column) == ("bp.yaml", line, column)


def test_pipeline_reports_every_finding_of_every_check_sorted_by_line() -> None:
    text = BASE.replace("members: [bob]", "members: [carol]").replace(
        'max_time: "1-00:00:00"', 'max_time: "99999-0"'
    )
    text += "    - name: idle\n"  # a cluster without pools: a warning rides along
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    findings = caught.value.findings
    assert [(f.path, f.level) for f in findings] == [
        ("identity.teams[1].members[0]", "error"),
        ("slurm.partitions[0].max_time", "error"),
        ("kubernetes.clusters[1]", "warning"),
    ]
    assert [f.line for f in findings] == [
        line_of(text, "carol"),
        line_of(text, '"99999-0"'),
        line_of(text, "- name: idle"),
    ]
    assert str(caught.value) == "2 error(s)"


def test_pipeline_schema_errors_stop_before_the_checks() -> None:
    text = BASE.replace("uid: 10002", "uid: 10001").replace("count: 2}", "count: 99}")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    assert [f.path for f in caught.value.findings] == ["node_pools[1].gpus.count"]


def test_pipeline_warnings_do_not_fail_the_run_and_are_placed() -> None:
    text = BASE + "    - name: idle\n"
    result = validate(text)
    [warning] = result.findings
    assert (warning.level, warning.path) == ("warning", "kubernetes.clusters[1]")
    assert warning.line == line_of(text, "- name: idle")
    assert warning.format().startswith(f"bp.yaml:{warning.line}:")
    assert "warning: cluster 'idle' has no node pools" in warning.format()


def test_pipeline_counts_hosts_before_expanding_them() -> None:
    text = BASE.replace("lab-gpu-[01-02]", "m[1-50001]").replace("lab-k8s-[01-02]", "n[1-50000]")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert finding.path == "node_pools"
    assert "100001 hosts, above the estate limit of 100000" in finding.message


def test_pipeline_refuses_one_hostlist_above_the_expansion_limit_as_a_finding() -> None:
    # under the estate limit, but above what the model expands per expression
    text = BASE.replace("hosts: lab-k8s-[01-02]", "hosts: n[1-70000]")
    with pytest.raises(BlueprintInvalid) as caught:
        validate(text)
    [finding] = caught.value.findings
    assert (finding.path, finding.line) == ("node_pools[1].hosts", line_of(text, "n[1-70000]"))
    assert "expands to 70000 names" in finding.message
