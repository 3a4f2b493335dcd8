"""Rule ids and suppression (estategen.checks.suppress): every finding carries its check's rule
id, a suppressed warning is listed apart and does not count, an error is never suppressed, and
a mistyped rule id or name gets a suggestion.
"""

from __future__ import annotations

import pytest

from estategen import checks, load, pipeline
from estategen.errors import BlueprintInvalid, UsageError
from estategen.schema.validation import normalise

from .base import BASE, blueprint, estate, only, parse, run

# --- rule ids, suppression and "did you mean" ----------------------------------------------------


# BASE with a Slurm pool in no partition: a warning
NO_PARTITION = BASE.replace(
    "  - name: l4-serve\n",
    "  - name: cpu\n    scheduler: slurm\n    hosts: cpu-01\n"
    "    cpu: {sockets: 1, cores_per_socket: 8}\n    memory_gb: 64\n  - name: l4-serve\n",
)


def validated(text: str, suppress: tuple[str, ...] = ()) -> pipeline.Validated:
    return pipeline.validate_document(load.parse_blueprint(text.encode(), "bp.yaml"), suppress)


def test_every_finding_of_a_check_carries_the_checks_rule_id() -> None:
    (warning,) = validated(NO_PARTITION).findings
    assert warning.rule == "check/stranded-capacity"
    assert warning.level == "warning"


def test_a_suppressed_warning_is_listed_apart_and_does_not_count() -> None:
    result = validated(NO_PARTITION + "suppress: [check/stranded-capacity]\n")
    assert [f.path for f in result.findings] == []
    (silenced,) = result.suppressed
    assert (silenced.path, silenced.rule) == ("node_pools[1]", "check/stranded-capacity")


def test_suppress_on_the_command_line_adds_to_the_blueprints_list() -> None:
    result = validated(NO_PARTITION, ("check/stranded-capacity",))
    assert result.findings == [] and len(result.suppressed) == 1


def test_an_error_is_never_suppressed() -> None:
    text = BASE.replace("hosts: lab-k8s-[01-02]", "hosts: lab-gpu-01")
    with pytest.raises(BlueprintInvalid) as caught:
        validated(text + "suppress: [check/host-in-one-pool]\n")
    assert "check/host-in-one-pool" in {f.rule for f in caught.value.findings}


def test_suppressed_rules_exist_refuses_a_rule_no_check_raises_and_suggests_one() -> None:
    only(
        run(checks.suppressed_rules_exist, "suppress: [check/partition-resolve]"),
        "suppress[0]",
        "no check has the rule id 'check/partition-resolve'; did you mean "
        "'check/partitions-resolve'?",
    )
    assert run(checks.suppressed_rules_exist, "suppress: [check/stranded-capacity]") == []


def test_an_unknown_rule_on_the_command_line_is_a_usage_error() -> None:
    document = load.parse_blueprint(BASE.encode(), "bp.yaml")
    with pytest.raises(UsageError, match="did you mean 'check/unique-ids'"):
        pipeline.validate_document(document, ["check/unique-id"])


@pytest.mark.parametrize(
    ("fragment", "path", "suggestion"),
    [
        (
            "slurm: {partitions: [{name: gpu, pools: [a10]}]}",
            "slurm.partitions[0].pools[0]",
            "did you mean 'a100'?",
        ),
        (
            "node_pools: [{name: a100, scheduler: slurm, hosts: n1, "
            "gpus: {model: a100-sxm-80g, count: 1}}]",
            "node_pools[0].gpus.model",
            "did you mean 'a100-sxm-80gb'?",
        ),
        (
            "node_pools: [{name: a100, scheduler: slurm, hosts: n1, "
            "gpus: {model: a100-sxm-80gb, count: 1, mig: [3g.30gb]}}]",
            "node_pools[0].gpus.mig[0]",
            "did you mean '3g.40gb'?",
        ),
    ],
)
def test_a_mistyped_name_of_a_closed_set_gets_a_suggestion(
    fragment: str, path: str, suggestion: str
) -> None:
    found = [f for f in checks.run_checks(estate(fragment)) if f.path == path]
    assert found and suggestion in found[0].message, found


def test_a_mistyped_allowed_value_gets_a_suggestion() -> None:
    document = parse(blueprint("node_pools: [{name: a100, scheduler: slurmm, hosts: n1}]"))
    _, problems = normalise(document.data)
    (problem,) = problems
    assert problem.rule == "schema/allowed"
    assert problem.message.endswith("choose one of: slurm, kubernetes; did you mean 'slurm'?")
