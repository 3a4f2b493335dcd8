"""`estategen plan`: every kind of change is explained with the operational steps it needs.

Each ``tests/plan_pairs/<name>.yaml`` is the "after" blueprint of one kind of change; its
header names the "before" blueprint (rendered into a folder first) and the plan it must give:

    # change: what changed, in words
    # before: base.yaml
    # kinds: the change kinds the plan reports (all of them, exactly)
    # steps: the steps it asks for, in runbook order (exactly)
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from estategen import load
from estategen.pipeline import validate_document
from estategen.plan import Action, explain, merge_steps, plan, text
from estategen.render import render
from estategen.write import with_manifest, write_tree

from conftest import BLUEPRINTS, run_cli

PAIRS = Path(__file__).parent / "plan_pairs"
AFTERS = sorted(p for p in PAIRS.glob("*.yaml") if re.match(r"#\s*change:", p.read_text()))
HEADER = re.compile(r"^# (change|before|kinds|steps):(.*)$", re.M)


def header(path: Path) -> dict[str, str]:
    return {key: value.strip() for key, value in HEADER.findall(path.read_text())}


def listed(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def estate_of(path: Path):  # type: ignore[no-untyped-def]
    return validate_document(load.read_blueprint(path)).estate


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every "before" blueprint rendered once, as `estategen render` writes it."""
    out = {}
    for before in sorted({header(p)["before"] for p in AFTERS}):
        path = PAIRS / before
        estate = estate_of(path)
        target = tmp_path_factory.mktemp("before") / estate.name
        write_tree(with_manifest(render(estate), path.read_bytes(), estate.name), target)
        out[before] = target
    return out


def test_every_pair_has_a_before_and_an_expected_plan() -> None:
    assert len(AFTERS) >= 30
    for path in AFTERS:
        assert set(header(path)) == {"change", "before", "kinds", "steps"}, path.name
        assert (PAIRS / header(path)["before"]).is_file(), path.name


@pytest.mark.parametrize("after", AFTERS, ids=lambda p: p.stem)
def test_pair_gives_exactly_the_expected_kinds_and_steps(
    after: Path, rendered: dict[str, Path]
) -> None:
    expected = header(after)
    estate = estate_of(after)
    result = plan(estate, render(estate), rendered[expected["before"]])
    assert sorted(result.kinds) == sorted(listed(expected["kinds"])), text(result)
    assert [s.id for s in result.steps()] == listed(expected["steps"]), text(result)
    assert result.changed == bool(listed(expected["kinds"]))


def test_every_change_has_a_meaning_and_an_action(rendered: dict[str, Path]) -> None:
    for after in AFTERS:
        estate = estate_of(after)
        result = plan(estate, render(estate), rendered[header(after)["before"]])
        for file in result.files:
            assert file.changes, file.path
            for change in file.changes:
                assert change.meaning and change.actions, (after.name, change)


def test_partition_max_time_needs_only_scontrol_reconfigure(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "partition-max-time.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    change = next(c for f in result.files for c in f.changes if c.kind.startswith("slurm-part"))
    assert change.file == "slurm/slurm.conf"
    assert change.subject == "PartitionName=gpu MaxTime"
    assert (change.before, change.after) == ("MaxTime=2-00:00:00", "MaxTime=3-00:00:00")
    assert {a.id for a in change.actions} == {"ansible-playbook", "scontrol-reconfigure"}


def test_new_nodes_restart_slurmctld_and_build_the_new_hosts(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "nodes-added.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    added = next(c for f in result.files for c in f.changes if c.kind == "slurm-nodes-added")
    assert added.subject == "NodeName gpu-[05-06]"
    steps = {s.id: s for s in result.steps()}
    assert steps["ansible-build"].commands == (
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --limit pool_h100)",
    )
    assert "restart-slurmctld" in steps
    assert "name=slurmd state=restarted" in steps["restart-slurmd"].commands[0]


def test_removed_nodes_are_drained_first(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "nodes-removed.yaml")
    steps = plan(estate, render(estate), rendered["base.yaml"]).steps()
    assert steps[0].id == "drain-nodes"
    assert steps[0].commands[0].startswith("scontrol update NodeName=gpu-04 State=DRAIN")


def test_mig_layout_drains_exactly_the_pools_nodes_and_resumes_them(
    rendered: dict[str, Path],
) -> None:
    estate = estate_of(PAIRS / "mig-layout-slurm.yaml")
    steps = {s.id: s for s in plan(estate, render(estate), rendered["base.yaml"]).steps()}
    assert steps["drain-nodes"].commands[0].startswith("scontrol update NodeName=mig-[01-02] ")
    assert steps["resume-nodes"].commands == ("scontrol update NodeName=mig-[01-02] State=RESUME",)
    assert (
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --limit pool_a100_mig "
        "--tags nvidia_gpu)" in steps["ansible-playbook"].commands
    )
    order = [s.id for s in steps.values()]
    assert (
        order.index("drain-nodes") < order.index("ansible-playbook") < order.index("resume-nodes")
    )


def test_qos_change_runs_the_changed_sacctmgr_line(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "qos-limit.yaml")
    steps = {s.id: s for s in plan(estate, render(estate), rendered["base.yaml"]).steps()}
    (command,) = steps["sacctmgr-qos"].commands
    assert command.startswith("sacctmgr -i modify qos where name=high set ")
    assert "MaxTRESPerUser=gres/gpu=32" in command


def test_removed_qos_is_deleted_explicitly(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "qos-removed.yaml")
    steps = {s.id: s for s in plan(estate, render(estate), rendered["base.yaml"]).steps()}
    assert steps["sacctmgr-delete"].commands == ("sacctmgr -i delete qos name=high",)


def test_kueue_quota_is_applied_live_by_pulumi_up(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "kueue-quota.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    (change,) = [c for f in result.files for c in f.changes if c.kind == "kueue-quota"]
    assert change.file == "pulumi/serving/cluster.json"
    assert change.subject == "queue vision"
    assert "live" in change.meaning
    assert [s.commands for s in result.steps() if s.id == "pulumi-up"] == [
        ("(cd pulumi/serving && pulumi up --stack pairs)",)
    ]


def test_removed_cluster_is_destroyed_before_anything_else(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "cluster-removed.yaml")
    steps = plan(estate, render(estate), rendered["with-burst.yaml"]).steps()
    assert steps[0].id == "pulumi-destroy"
    assert "pulumi destroy --stack pairs" in steps[0].commands[0]


def test_a_file_edited_after_rendering_is_flagged(tmp_path: Path) -> None:
    path = PAIRS / "base.yaml"
    estate = estate_of(path)
    target = tmp_path / "out"
    write_tree(with_manifest(render(estate), path.read_bytes(), estate.name), target)
    conf = target / "slurm" / "slurm.conf"
    conf.write_text(conf.read_text().replace("MaxTime=2-00:00:00", "MaxTime=4-00:00:00"))
    result = plan(estate, render(estate), target)
    (changed,) = result.files
    assert changed.path == "slurm/slurm.conf" and changed.edited
    assert "edited since it was rendered" in text(result)


def test_mode_change_and_unknown_files_are_still_reported() -> None:
    estate = estate_of(PAIRS / "base.yaml")
    (mode,) = explain(estate, "slurm/slurmdbd.conf", "mode", b"x", b"x")
    assert mode.kind == "file-mode"
    (other,) = explain(estate, "somewhere/else.txt", "modified", b"a\n", b"b\n")
    assert other.kind == "other" and other.actions == (Action("review", "somewhere/else.txt"),)
    (cgroup,) = explain(estate, "slurm/cgroup.conf", "modified", b"A=1\n", b"A=2\n")
    assert cgroup.kind == "slurm-cgroup" and Action("restart-slurmd", "*") in cgroup.actions
    (scrape,) = explain(
        estate, "observability/prometheus/scrape-configs.yml", "modified", b"a", b"b"
    )
    assert scrape.kind == "prometheus-config" and scrape.actions == (Action("prometheus-reload"),)


def test_restart_of_every_slurmd_absorbs_per_host_restarts() -> None:
    (step,) = merge_steps([Action("restart-slurmd", "*"), Action("restart-slurmd", "gpu-01")], "e")
    assert "slurm_compute" in step.commands[0]


def test_empty_folder_is_a_first_deployment(tmp_path: Path) -> None:
    estate = estate_of(PAIRS / "base.yaml")
    result = plan(estate, render(estate), tmp_path / "new")
    assert result.initial and result.changed
    assert result.kinds == {"new-output"}
    assert {s.id for s in result.steps()} >= {"ansible-build", "pulumi-new", "sacctmgr-load"}


# --- the command ------------------------------------------------------------------------------


def test_cli_exits_zero_without_changes_and_one_with_changes(rendered: dict[str, Path]) -> None:
    target = rendered["base.yaml"]
    same = run_cli("plan", PAIRS / "no-change.yaml", "-o", target)
    assert same.returncode == 0, same.stderr
    assert "no changes" in same.stdout
    changed = run_cli("plan", PAIRS / "partition-max-time.yaml", "-o", target)
    assert changed.returncode == 1, changed.stderr
    assert "slurm-partition-changed: PartitionName=gpu MaxTime" in changed.stdout
    assert "scontrol reconfigure" in changed.stdout


def test_cli_json_lists_files_changes_and_ordered_steps(rendered: dict[str, Path]) -> None:
    result = run_cli(
        "plan", PAIRS / "mig-layout-slurm.yaml", "-o", rendered["base.yaml"], "--format", "json"
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["changed"] is True and data["estate"] == "pairs"
    files = {f["path"]: f for f in data["files"]}
    kinds = {c["kind"] for c in files["slurm/gres.conf"]["changes"]}
    assert kinds == {"mig-layout"}
    orders = [s["order"] for s in data["steps"]]
    assert orders == sorted(orders)
    assert data["steps"][0]["id"] == "drain-nodes"


def test_cli_refuses_a_folder_that_is_not_estategen_output(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = run_cli("plan", PAIRS / "base.yaml", "-o", tmp_path)
    assert result.returncode == 2
    assert "not estategen output" in result.stderr


def test_cli_invalid_blueprint_cannot_be_planned(tmp_path: Path) -> None:
    blueprint = tmp_path / "bad.yaml"
    blueprint.write_text("estate: x\n")
    result = run_cli("plan", blueprint, "-o", tmp_path / "out")
    assert result.returncode == 2
    assert "node_pools: is required" in result.stderr


# --- GitOps: the pre-commit hooks and the CI example ---------------------------------------------

ROOT = Path(__file__).parent.parent


def test_pre_commit_hooks_run_the_commands_they_name(tmp_path: Path) -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"estategen-validate", "estategen-render-check"}
    assert all(re.search(hooks[h]["files"], "blueprints/lab.yaml") for h in hooks)
    validate = hooks["estategen-validate"]["entry"].split()
    bad = tmp_path / "blueprints" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("estate: x\n")
    good = BLUEPRINTS / "lab.yaml"
    assert (
        subprocess.run([sys.executable, *validate[1:], str(good)], capture_output=True).returncode
        == 0
    )
    assert (
        subprocess.run(
            [sys.executable, *validate[1:], str(good), str(bad)], capture_output=True
        ).returncode
        == 1
    )
    check = [sys.executable, *hooks["estategen-render-check"]["entry"].split()[1:]]
    stale = subprocess.run(
        [*check, "--output-root", str(tmp_path / "build"), str(good)], capture_output=True
    )
    assert stale.returncode == 1  # nothing rendered yet
    assert run_cli("render", good, "-o", tmp_path / "build" / "lab").returncode == 0
    fresh = subprocess.run(
        [*check, "--output-root", str(tmp_path / "build"), str(good)], capture_output=True
    )
    assert fresh.returncode == 0


def test_ci_example_uses_commands_the_cli_accepts() -> None:
    from estategen.cli import _parser

    workflow = yaml.safe_load((ROOT / "docs" / "github-actions.yml").read_text())
    lines = [
        line.strip()
        for step in workflow["jobs"]["estate"]["steps"]
        for line in step.get("run", "").splitlines()
        if line.strip().startswith("estategen ")
    ]
    commands = {shlex.split(line)[1] for line in lines}
    assert commands == {"validate", "render", "plan", "report"}
    for line in lines:
        words = shlex.split(line.split(">")[0].replace("$", ""))
        _parser().parse_args(words[1:])  # exits (fails the test) on an unknown option


def test_a_copy_edited_into_nonsense_is_still_reported() -> None:
    estate = estate_of(PAIRS / "base.yaml")
    (change,) = explain(estate, "pulumi/serving/cluster.json", "modified", b"{not json", b"{}")
    assert change.kind == "other" and "could not read" in change.meaning
    (change,) = explain(estate, "ansible/inventory.yml", "modified", b"all: [", b"all: {}")
    assert change.kind == "other"
