"""`estategen plan`: every kind of change is explained with the operational steps it needs.

Each ``tests/plan_pairs/<name>.yaml`` is the "after" blueprint of one kind of change; its
header names the "before" blueprint (rendered into a folder first) and the plan it must give:

    # change: what changed, in words
    # before: base.yaml
    # kinds: the change kinds the plan reports (all of them, exactly)
    # steps: the steps it asks for, in runbook order (exactly)
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import hostlist, load
from estategen.pipeline import validate_document
from estategen.plan.compare import plan
from estategen.plan.files import explain
from estategen.plan.keys import model_changes
from estategen.plan.steps import Action, merge_steps
from estategen.plan.text import text
from estategen.readback import OutputRefused
from estategen.render import render
from estategen.renderers.estate_json import estate_data
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
                assert change.meaning, (after.name, change)
                # a file that carries changes the plan lists under other files (topology.conf
                # when hosts join a switch) has no step of its own
                assert change.actions or change.kind == "carries-changes", (after.name, change)
        carried = any(c.kind == "carries-changes" for f in result.files for c in f.changes)
        assert not carried or result.actions, after.name


def test_an_s3_driver_asks_for_its_secret_config_before_pulumi_up(
    rendered: dict[str, Path],
) -> None:
    """R6.12: the Mountpoint driver's Secret is made from stack secret config, which must be
    set first; the driver reads it only at start."""
    estate = estate_of(PAIRS / "storage-s3-class-added.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    (releases,) = [
        c
        for f in result.files
        for c in f.changes
        if (c.kind, c.subject) == ("kubernetes-components", "releases")
    ]
    assert "pulumi config set --secret s3_key_id, pulumi config set --secret s3_secret_key" in (
        releases.meaning
    )
    assert "reads its Secret only at start" in releases.meaning


def test_partition_max_time_needs_only_scontrol_reconfigure(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "partition-max-time.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    change = next(c for f in result.files for c in f.changes if c.kind.startswith("slurm-part"))
    assert change.file == "slurm/slurm.conf"
    assert change.subject == "partition gpu: max_time"
    assert (change.before, change.after) == ("max_time=2-00:00:00", "max_time=3-00:00:00")
    assert {a.id for a in change.actions} == {"ansible-playbook", "scontrol-reconfigure"}


def test_new_nodes_restart_slurmctld_and_build_the_new_hosts(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "nodes-added.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    added = next(c for f in result.files for c in f.changes if c.kind == "slurm-nodes-added")
    assert added.subject == "NodeName gpu-[05-06]"
    steps = {s.id: s for s in result.steps()}
    assert steps["ansible-build"].commands == (
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --limit gpu-05,gpu-06)",
    )
    assert "restart-slurmctld" in steps
    assert "name=slurmd state=restarted" in steps["restart-slurmd"].commands[0]


def test_a_new_pool_is_built_by_its_group_alone(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "pool-added.yaml")
    steps = {s.id: s for s in plan(estate, render(estate), rendered["base.yaml"]).steps()}
    # slurm_compute and gpu_nodes gained the group too; their other hosts are not rebuilt
    assert steps["ansible-build"].commands == (
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --limit pool_cpu)",
    )


def test_restarting_slurmctld_and_every_slurmd_replaces_scontrol_reconfigure() -> None:
    steps = merge_steps(
        [
            Action("restart-slurmctld"),
            Action("restart-slurmd", "*"),
            Action("scontrol-reconfigure"),
        ],
        "e",
    )
    assert [s.id for s in steps] == ["restart-slurmctld", "restart-slurmd"]
    partial = merge_steps(
        [
            Action("restart-slurmctld"),
            Action("restart-slurmd", "gpu-01"),
            Action("scontrol-reconfigure"),
        ],
        "e",
    )
    assert "scontrol-reconfigure" in [s.id for s in partial]


def test_switches_added_and_changed_read_as_blueprint_values(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "pool-added.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    (added,) = [c for f in result.files for c in f.changes if c.kind == "slurm-topology"]
    assert (added.subject, added.before, added.after) == ("pool cpu switches", "", '["cpu-leaf"]')
    assert '      + ["cpu-leaf"]\n' in text(result)
    estate = estate_of(PAIRS / "topology-switch.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    (changed,) = [c for f in result.files for c in f.changes if c.kind == "slurm-topology"]
    assert changed.subject == "node_pools[h100].network.switch"
    assert (changed.before, changed.after) == (
        '["leaf-01", "leaf-02"]',
        '["leaf-01", "leaf-02", "leaf-03", "leaf-04"]',
    )
    assert not re.search(r" -  ->|->  -|\(none\)", text(result))


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


def test_a_new_qos_is_granted_to_the_estate_account_and_on_23_11_its_teams(
    rendered: dict[str, Path],
) -> None:
    """Slurm 23.11 to 25.05 (the pair's 23.11) pass a change of the estate's account to the
    team accounts but not on to their users: the plan grants the teams too, as
    qos.sacctmgr does."""
    estate = estate_of(PAIRS / "qos-added.yaml")
    steps = {s.id: s for s in plan(estate, render(estate), rendered["base.yaml"]).steps()}
    grants = [c for c in steps["sacctmgr-qos"].commands if " account " in c]
    assert grants == [
        f"sacctmgr -i modify account where {match}=pairs cluster=pairs "
        "set QOS=normal,high,scavenger DefaultQOS=normal"
        for match in ("name", "parent")
    ]


def test_a_gpu_pool_joining_a_cluster_is_no_mig_strategy_change(
    rendered: dict[str, Path],
) -> None:
    """The device plugin's ConfigMap gains the pool's config; the cluster's strategy stays."""
    text = (
        (PAIRS / "base.yaml")
        .read_text()
        .replace(
            "slurm:\n  controllers:",
            "  - name: l4\n    scheduler: kubernetes\n    cluster: serving\n"
            "    hosts: k8s-l4-[01-02]\n    gpus: {model: l4-24gb, count: 2}\n"
            "slurm:\n  controllers:",
            1,
        )
    )
    estate = validate_document(load.parse_blueprint(text.encode(), "pool.yaml")).estate
    result = plan(estate, render(estate), rendered["base.yaml"])
    configs = [
        c
        for f in result.files
        for c in f.changes
        if c.subject.startswith("Helm release nvidia-device-plugin: config ")
    ]
    assert [(c.subject, c.kind) for c in configs] == [
        ("Helm release nvidia-device-plugin: config l4", "gpu-sharing")
    ]
    assert "kubernetes-cluster-settings" not in result.kinds


def test_kueue_quota_is_applied_live_by_pulumi_up(rendered: dict[str, Path]) -> None:
    estate = estate_of(PAIRS / "kueue-quota.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    changes = {c.subject: c for f in result.files for c in f.changes if c.kind == "kueue-quota"}
    # the team's ClusterQueue, and the ResourceQuota that follows what it may admit
    assert set(changes) == {"ClusterQueue vision", "ResourceQuota vision/gpu"}
    queue = changes["ClusterQueue vision"]
    assert queue.file == "kubernetes/serving/kueue.yaml"
    assert "live" in queue.meaning
    assert queue.before and queue.after and queue.before != queue.after
    assert [s.commands for s in result.steps() if s.id == "pulumi-up"] == [
        ("(cd pulumi/serving && pulumi up --stack pairs)",)
    ]


def test_an_alert_threshold_names_its_rule_and_reloads_prometheus(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    source = (
        (PAIRS / "base.yaml")
        .read_text()
        .replace(
            "  labels: {site: pairs}",
            "  labels: {site: pairs}\n  alerts: {gpu_thermal_throttling_percent: 25}",
        )
    )
    after = tmp_path / "alerts.yaml"
    after.write_text(source)
    estate = estate_of(after)
    result = plan(estate, render(estate), rendered["base.yaml"])
    rules = [c for f in result.files for c in f.changes if c.kind == "prometheus-config"]
    assert rules and all(c.file.endswith("estategen.rules.yml") for c in rules)
    assert all(c.subject.startswith("rule ") and "25" in c.after for c in rules)
    assert all(c.actions == (Action("prometheus-reload"),) for c in rules)
    # no scrape job changed: the scrape configuration is not in the plan
    assert not [f for f in result.files if f.path.endswith("scrape-configs.yml")]


def test_new_hosts_are_new_file_sd_targets_without_a_reload(
    rendered: dict[str, Path],
) -> None:
    estate = estate_of(PAIRS / "nodes-added.yaml")
    result = plan(estate, render(estate), rendered["base.yaml"])
    targets = {
        c.subject: c for f in result.files for c in f.changes if c.kind == "prometheus-targets"
    }
    node = targets["node-exporter targets"]
    assert (node.before, node.after) == ("", '["gpu-05:9100", "gpu-06:9100"]')
    assert "prometheus-reload" not in {a.id for c in targets.values() for a in c.actions}


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
    (mode,) = explain("slurm/slurmdbd.conf", "mode")
    assert mode.kind == "file-mode"
    (other,) = explain("somewhere/else.txt", "modified")
    assert other.kind == "other" and other.actions == (Action("review", "somewhere/else.txt"),)
    (scrape,) = explain("observability/prometheus/scrape-configs.yml", "modified")
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
    assert "slurm-partition-changed: partition gpu: max_time" in changed.stdout
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


# --- plan --fail-on: holding a disruptive change for review --------------------------------------

# a pair of each kind of disruption, with the gates its plan fires: a MIG layout drains the pool
# (in Slurm, the daemons restart for the new GRES too; in Kubernetes the MIG manager drains
# each node), MaxJobCount needs a slurmctld restart, a Kueue flavor losing its topology is
# replaced, a partition's MaxTime disrupts nothing
GATED = {
    "mig-layout-slurm": ["drain", "restart"],
    "mig-layout-kubernetes": ["drain"],
    "max-job-count": ["restart"],
    "k8s-unswitched": ["replace"],
    "partition-max-time": [],
}


@pytest.mark.parametrize("after", sorted(GATED))
def test_fail_on_holds_a_change_that_needs_the_named_disruption(
    after: str, rendered: dict[str, Path]
) -> None:
    blueprint = PAIRS / f"{after}.yaml"
    before = rendered[header(blueprint)["before"]]
    held = run_cli(
        "plan", blueprint, "-o", before, "--format", "json", "--fail-on", "drain,restart",
        "--fail-on", "replace",
    )  # fmt: skip
    data = json.loads(held.stdout)
    assert data["fail_on"] == ["drain", "restart", "replace"]
    assert data["failed_on"] == GATED[after]
    assert sorted(data["disruptions"]) == sorted(GATED[after])
    assert held.returncode == (4 if GATED[after] else 1)
    for gate in GATED[after]:
        assert f"held for review (--fail-on {gate})" in held.stderr
    others = [g for g in ("drain", "restart", "replace") if g not in GATED[after]]
    passed = run_cli("plan", blueprint, "-o", before, "--fail-on", ",".join(others))
    assert passed.returncode == 1  # changes, none of the held kind
    assert "held for review" not in passed.stderr


def test_each_disruption_is_read_from_the_plans_own_steps() -> None:
    from estategen.plan.steps import DISRUPTIONS, STEPS, Change, disruptions

    for by_step, _ in DISRUPTIONS.values():
        assert by_step <= set(STEPS)
    drain = Change(
        "slurm/slurm.conf", "slurm-nodes-removed", "n", "m", actions=(Action("drain-nodes", "n1"),)
    )
    assert disruptions(drain) == {"drain"}
    reconfigure = Change(
        "slurm/slurm.conf", "slurm-reconfigure", "n", "m", actions=(Action("scontrol-reconfigure"),)
    )
    assert disruptions(reconfigure) == set()


def test_fail_on_an_unknown_disruption_is_a_usage_error(rendered: dict[str, Path]) -> None:
    result = run_cli(
        "plan", PAIRS / "no-change.yaml", "-o", rendered["base.yaml"], "--fail-on", "restarts"
    )
    assert result.returncode == 2
    assert (
        "--fail-on restarts: not a disruption plan gates on (one of drain, restart, replace); "
        "did you mean 'restart'?" in result.stderr
    )


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


# --- every `--tags ROLE` step changes something the role reads ---------------------------------

ROLES = ROOT / "playbooks" / "roles"
# a variable the roles read, with the attributes they read of it: pool_gpu.mig, estate_storage
ROLE_VARIABLE = re.compile(r"\b((?:pool|estate|slurm)_[a-z0-9_]+)((?:\.[a-z_][a-z0-9_]*)*)")
# a rendered Slurm file a role copies: "{{ slurmdbd_files_dir }}/sacct.cfg", files_dir ~ '/x'
ROLE_FILE = re.compile(r"files_dir\s*(?:\}\}|~\s*')/([a-z_]+\.(?:conf|cfg|sacctmgr|scontrol))")


def role_dependencies(role: str) -> list[str]:
    """The roles ``role`` runs first (meta dependencies, recursively): they run under its tag."""
    meta = yaml.safe_load((ROLES / role / "meta" / "main.yml").read_text()) or {}
    found = []
    for entry in meta.get("dependencies") or []:
        name = entry["role"] if isinstance(entry, dict) else entry
        found += [name, *role_dependencies(name)]
    return found


def site_roles(files: dict[str, bytes]) -> list[str]:
    """The roles site.yml runs by name, each under its own tag."""
    plays = yaml.safe_load(files.get("ansible/site.yml", b"[]")) or []
    return sorted({entry["role"] for play in plays for entry in play.get("roles", [])})


def role_reads(role: str, files: dict[str, bytes]) -> tuple[set[str], set[str]]:
    """(variables with attributes, Slurm file names) the role's own sources, and those of the
    roles it depends on, read.

    Read from the role's tasks, templates, defaults and handlers and from the `when:` site.yml
    puts on it, not from estategen.plan's tables: this is the independent account plan is held to.
    """
    sources = [
        path.read_text()
        for dependency in (role, *role_dependencies(role))
        for path in sorted((ROLES / dependency).rglob("*"))
        if path.is_file() and path.parent.name in ("tasks", "templates", "defaults", "handlers")
    ]
    for play in yaml.safe_load(files.get("ansible/site.yml", b"[]")) or []:
        for entry in play.get("roles", []):
            if entry.get("role") == role and "when" in entry:
                sources.append(str(entry["when"]))
    text = "\n".join(sources)
    variables = {name + attrs for name, attrs in ROLE_VARIABLE.findall(text)}
    names = set(ROLE_FILE.findall(text))
    if "slurm_config_files" in variables:
        estate_vars = yaml.safe_load(files.get("ansible/group_vars/all/estate.yml", b"{}"))
        names |= set((estate_vars or {}).get("slurm_config_files") or [])
    return variables, names


def leaf_changes(prefix: str, old: object, new: object) -> set[str]:
    """Dotted paths whose values differ: pool_gpu.time_slicing, estate_labels."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {
            path
            for key in set(old) | set(new)
            for path in leaf_changes(
                f"{prefix}.{key}" if prefix else key, old.get(key), new.get(key)
            )
        }
    return set() if old == new else {prefix}


def host_vars(files: dict[str, bytes], limit: str) -> dict[str, dict[str, Any]]:
    """Each host's own variables in inventory.yml (a Kubernetes node's switch label), for the
    hosts of the pool ``limit`` names, or of every group."""
    inventory = yaml.safe_load(files.get("ansible/inventory.yml", b"")) or {}
    groups = inventory.get("all", {}).get("children") or {}
    out: dict[str, dict[str, Any]] = {}
    for name in [limit] if limit.startswith("pool_") else list(groups):
        for pattern, variables in ((groups.get(name) or {}).get("hosts") or {}).items():
            for host in hostlist.expand(pattern.replace(":", "-")):
                out[host] = variables or {}
    return out


def changed_inputs(old: dict[str, bytes], new: dict[str, bytes], limit: str) -> set[str]:
    """Variables (dotted), Slurm file names and role files that differ, for hosts of ``limit``."""
    var_files = ["ansible/group_vars/all/estate.yml", "ansible/vars/identity.yml"]
    if limit.startswith("pool_"):
        var_files.append(f"ansible/group_vars/{limit}.yml")
    else:
        var_files += sorted(
            p for p in set(old) | set(new) if re.fullmatch(r"ansible/group_vars/pool_\w+\.yml", p)
        )
    changed: set[str] = set()
    for path in var_files:
        before = yaml.safe_load(old.get(path, b"")) or {}
        after = yaml.safe_load(new.get(path, b"")) or {}
        changed |= leaf_changes("", before, after)
    old_hosts, new_hosts = host_vars(old, limit), host_vars(new, limit)
    for host in set(old_hosts) | set(new_hosts):
        changed |= leaf_changes("", old_hosts.get(host, {}), new_hosts.get(host, {}))
    for path in set(old) | set(new):
        if old.get(path) != new.get(path):
            if path.startswith("ansible/files/slurm/"):
                changed.add(path.rsplit("/", 1)[1])
            elif path.startswith("ansible/roles/"):
                changed.add(path)
    return changed


def reads_a_change(role: str, changed: set[str], files: dict[str, bytes]) -> bool:
    variables, names = role_reads(role, files)
    if any(path.startswith(f"ansible/roles/{role}/") for path in changed):
        return True
    if names & changed:
        return True
    return any(
        c == v or c.startswith(v + ".") or v.startswith(c + ".") for v in variables for c in changed
    )


def rendered_bytes(path: Path) -> dict[str, bytes]:
    return {name: output.content for name, output in render(estate_of(path)).items()}


@pytest.mark.parametrize("after", AFTERS, ids=lambda p: p.stem)
def test_every_tagged_ansible_step_runs_a_role_whose_inputs_changed(
    after: Path, rendered: dict[str, Path]
) -> None:
    before = PAIRS / header(after)["before"]
    old, new = rendered_bytes(before), rendered_bytes(after)
    estate = estate_of(after)
    steps = plan(estate, render(estate), rendered[header(after)["before"]]).steps()
    for step in (s for s in steps if s.id == "ansible-playbook"):
        for command in step.commands:
            words = command.rstrip(")").split()
            if "--tags" not in words:
                continue
            limit = words[words.index("--limit") + 1] if "--limit" in words else "all"
            changed = changed_inputs(old, new, limit)
            for role in words[words.index("--tags") + 1].split(","):
                assert reads_a_change(role, changed, new) or reads_a_change(role, changed, old), (
                    f"{command}: role {role} reads none of what changed: {sorted(changed)}"
                )


def test_role_reads_names_what_a_role_really_reads() -> None:
    files = rendered_bytes(PAIRS / "base.yaml")
    variables, _ = role_reads("nvidia_gpu", files)
    assert {"pool_gpu.mig", "pool_gpu.fabric", "pool_name"} <= variables
    assert not any(v.startswith("pool_gpu.time_slicing") for v in variables)
    assert role_reads("slurmdbd", files)[1] >= {"slurm.conf", "slurmdbd.conf", "sacct.cfg"}
    assert "gres.conf" in role_reads("slurm_compute", files)[1]
    assert "pool_gpu" in role_reads("dcgm_exporter", files)[0]  # site.yml's when


def test_every_role_the_plan_names_is_a_role_site_yml_runs() -> None:
    from estategen.plan.models import ROLES

    files = rendered_bytes(PAIRS / "rest-api-added.yaml")
    named = {role for roles in ROLES.values() for role in roles}
    assert named <= set(site_roles(files))


def model_of(path: Path) -> dict[str, Any]:
    return estate_data(estate_of(path))


def model_steps(
    old: dict[str, Any], new: dict[str, Any], after: Path
) -> list[tuple[str, set[Action]]]:
    return [(c.kind, set(c.actions)) for c in model_changes(old, new, estate_of(after))]


def test_gpu_sharing_alone_runs_no_role_and_a_new_gpu_runs_the_driver_role() -> None:
    base = model_of(PAIRS / "base.yaml")
    sharing = model_of(PAIRS / "k8s-sharing.yaml")
    # time-slicing reaches the machines through the device plugin's ConfigMap, not a role
    assert model_steps(base, sharing, PAIRS / "k8s-sharing.yaml") == []
    without = copy.deepcopy(base)
    l40s = next(p for p in without["node_pools"] if p["name"] == "l40s")
    l40s["gpus"] = None
    gained = {Action("ansible-playbook", "pool_l40s:nvidia_gpu")}
    assert ("gpu-config", gained) in model_steps(without, base, PAIRS / "base.yaml")
    assert not any(k == "mig-layout" for k, _ in model_steps(without, base, PAIRS / "base.yaml"))
    h100 = next(p for p in without["node_pools"] if p["name"] == "h100")
    h100["gpus"] = None
    slurm = [a for k, a in model_steps(without, base, PAIRS / "base.yaml") if "pool_h100" in str(a)]
    assert any(
        {
            Action("ansible-playbook", "pool_h100:nvidia_gpu"),
            Action("ansible-playbook", "pool_h100:dcgm_exporter"),
        }
        <= actions
        for actions in slurm
    )


def test_a_role_run_on_every_host_is_not_repeated_for_one_pool() -> None:
    (step,) = merge_steps(
        [
            Action("ansible-playbook", "all:storage_client"),
            Action("ansible-playbook", "pool_h100:storage_client"),
            Action("ansible-playbook", "pool_l40s:nvidia_gpu"),
        ],
        "e",
    )
    assert step.commands == (
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --tags storage_client)",
        "(cd ansible && ansible-playbook -i inventory.yml site.yml --limit pool_l40s "
        "--tags nvidia_gpu)",
    )


def test_a_reservation_dropped_from_the_blueprint_is_deleted_by_the_role(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    before = PAIRS / "reservation-added.yaml"
    estate = estate_of(before)
    target = tmp_path / "pairs"
    write_tree(with_manifest(render(estate), before.read_bytes(), estate.name), target)
    after = estate_of(PAIRS / "base.yaml")
    result = plan(after, render(after), target)
    (change,) = [
        c for f in result.files for c in f.changes if f.path == "slurm/reservations.scontrol"
    ]
    assert (change.kind, change.subject) == ("slurm-reservation-removed", "pairs.maint")
    assert "scontrol delete reservation" in change.meaning
    assert [s.commands for s in result.steps() if s.id == "ansible-playbook"] == [
        ("(cd ansible && ansible-playbook -i inventory.yml site.yml --tags slurm_controller)",)
    ]


def test_a_changed_reservation_flag_is_recreated_not_updated() -> None:
    before = model_of(PAIRS / "reservation-added.yaml")
    after = copy.deepcopy(before)
    after["slurm"]["reservations"][0]["flags"] = ["maint", "weekly"]
    (change,) = model_changes(before, after, estate_of(PAIRS / "reservation-added.yaml"))
    assert change.kind == "slurm-reservation-changed"
    assert (change.before, change.after) == (
        'flags=["maint", "ignore_jobs", "weekly"]',
        'flags=["maint", "weekly"]',
    )
    assert "deletes and creates it again" in change.meaning


# --- plan compares models, not texts ----------------------------------------------------------


def policies_of(before: Path, after: Path) -> set[str]:
    """The change policies a pair exercises: of every changed key, of every key of a named
    item that comes or goes, and the structural ones of the keys above them."""
    from estategen.estatediff import _keys, _split, diff, policies

    found: set[str] = set()
    for delta in diff(model_of(before), model_of(after)):
        value = delta.after if delta.added else delta.before
        if delta.path[-1].startswith("[") and isinstance(value, dict):
            keys = [d.key for d in diff({}, value, delta.path)]
        else:
            keys = [delta.key]
        for key in keys:
            found |= set(policies(key))
            parts = _split(key)
            for end in range(1, len(parts) + 1):
                found |= set(_keys().get("".join(parts[:end]).lstrip("."), ()))
    return found


def test_every_change_policy_has_a_pair() -> None:
    from estategen.schema.patterns import CHANGE_POLICIES

    covered: dict[str, list[str]] = {}
    for after in AFTERS:
        for policy in policies_of(PAIRS / header(after)["before"], after):
            covered.setdefault(policy, []).append(after.stem)
    assert set(CHANGE_POLICIES) - set(covered) == set()


# every rendered file but the recorded model and the manifest: none may decide a step
RENDERED_TEXT = ("slurm/", "ansible/", "kubernetes/", "pulumi/", "observability/")


def junk_copy(source: Path, target: Path) -> None:
    """The output in ``source`` with every rendered file (slurm/, ansible/, kubernetes/,
    pulumi/, observability/) replaced by junk, and estate.json and MANIFEST.json as the render
    wrote them."""
    shutil.copytree(source, target)
    for path in sorted(target.rglob("*")):
        relative = path.relative_to(target).as_posix()
        if path.is_file() and relative.startswith(RENDERED_TEXT):
            if relative.endswith(".json"):
                # JSON the folder's reader accepts, that says nothing estategen wrote
                path.write_bytes(b'{"node_pools": [{"name": "junk"}], "releases": []}\n')
            else:
                path.write_bytes(b"# nothing estategen wrote\nNodeName=junk Gres=gpu:9g.1gb\n")


def decided(result: Any) -> list[tuple[str, str, str, str, str, tuple[Action, ...]]]:
    return sorted(
        (f.path, c.kind, c.subject, c.before, c.after, tuple(sorted(c.actions)))
        for f in result.files
        for c in f.changes
        if c.kind != "edited-by-hand"
    )


@pytest.mark.parametrize("after", AFTERS, ids=lambda p: p.stem)
def test_plan_never_reads_rendered_text_to_decide(
    after: Path, rendered: dict[str, Path], tmp_path: Path
) -> None:
    """Every slurm/, ansible/, kubernetes/, pulumi/ and observability/ file of the earlier
    output is junk: the plan decides the same changes and steps (from estate.json and
    MANIFEST.json: the Kubernetes objects, Helm values and Pulumi data are built from both
    models), and flags the junk as edited by hand."""
    estate = estate_of(after)
    clean = plan(estate, render(estate), rendered[header(after)["before"]])
    junk = tmp_path / "pairs"
    junk_copy(rendered[header(after)["before"]], junk)
    result = plan(estate, render(estate), junk)
    assert decided(result) == decided(clean)
    edits = {c.file for f in result.files for c in f.changes if c.kind == "edited-by-hand"}
    assert all(path.startswith(RENDERED_TEXT) for path in edits)
    earlier = [f for f in result.files if f.status != "added"]
    assert all(f.edited for f in earlier if f.path.startswith(RENDERED_TEXT))
    decisive = [c for f in result.files for c in f.changes if c.kind != "edited-by-hand"]
    steps = merge_steps([a for c in decisive for a in c.actions], estate.name)
    assert steps == clean.steps()


@pytest.mark.parametrize("after", ["nodes-added", "kueue-quota", "gke-nodes-max"])
def test_plan_works_from_estate_json_and_the_manifest_alone(
    after: str, rendered: dict[str, Path], tmp_path: Path
) -> None:
    estate = estate_of(PAIRS / f"{after}.yaml")
    before = rendered[header(PAIRS / f"{after}.yaml")["before"]]
    clean = plan(estate, render(estate), before)
    assert {c.kind for f in clean.files for c in f.changes} - {"review", "edited-by-hand"}
    bare = tmp_path / "pairs"
    shutil.copytree(before, bare)
    for path in sorted(bare.rglob("*"), reverse=True):
        if path.is_file() and path.relative_to(bare).as_posix().startswith(RENDERED_TEXT):
            path.unlink()
    assert decided(plan(estate, render(estate), bare)) == decided(clean)


@pytest.mark.parametrize(
    "estate_json",
    [None, b'{"schema": "estategen/estate-v1", "name": "pairs"}\n'],
    ids=["missing", "estate-v1"],
)
def test_an_older_output_cannot_be_compared_by_model_and_says_so(
    estate_json: bytes | None, rendered: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "pairs"
    shutil.copytree(rendered["base.yaml"], target)
    manifest = json.loads((target / "MANIFEST.json").read_text())
    if estate_json is None:
        (target / "estate.json").unlink()
        del manifest["files"]["estate.json"]
    else:
        (target / "estate.json").write_bytes(estate_json)
        digest = hashlib.sha256(estate_json).hexdigest()
        manifest["files"]["estate.json"]["sha256"] = digest
    (target / "MANIFEST.json").write_text(json.dumps(manifest))
    estate = estate_of(PAIRS / "partition-max-time.yaml")
    result = plan(estate, render(estate), target)
    (conf,) = [f for f in result.files if f.path == "slurm/slurm.conf"]
    (change,) = conf.changes
    assert change.kind == "cannot-compare"
    assert "cannot compare models" in change.meaning and "review everything" in change.meaning
    assert run_cli("plan", PAIRS / "partition-max-time.yaml", "-o", target).returncode == 1


def test_a_recorded_model_edited_into_another_shape_cannot_be_compared_and_says_so(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    """The earlier model is rebuilt from estate.json: a record no render wrote (a pool's cpu
    edited into a word) is refused with the key and what is wrong, not guessed at."""
    target = tmp_path / "pairs"
    shutil.copytree(rendered["base.yaml"], target)
    data = json.loads((target / "estate.json").read_text())
    index = next(i for i, p in enumerate(data["node_pools"]) if p.get("cpu"))
    data["node_pools"][index]["cpu"] = "many"
    (target / "estate.json").write_text(json.dumps(data))
    estate = estate_of(PAIRS / "kueue-quota.yaml")
    with pytest.raises(OutputRefused) as refused:
        plan(estate, render(estate), target)
    assert str(refused.value).startswith(f"{target}/estate.json: cannot compare models: ")
    assert f"node_pools[{index}].cpu: 'many' is none of a Cpu or null" in str(refused.value)
    result = run_cli("plan", PAIRS / "kueue-quota.yaml", "-o", target)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_tenancy_changes_read_as_tenancy_and_apply_live(rendered: dict[str, Path]) -> None:
    """A lower Pod Security level changes the team namespaces' labels, a new framework the job
    kinds teams may run: both are tenancy changes pulumi up applies live, not a change of the
    NVIDIA components (the plan's fallback for a ClusterRole)."""
    text = (
        (PAIRS / "base.yaml")
        .read_text()
        .replace(
            "    - name: serving\n",
            "    - name: serving\n      tenancy: {pod_security: baseline}\n"
            "      frameworks: [job, jobset]\n",
            1,
        )
    )
    estate = validate_document(load.parse_blueprint(text.encode(), "tenancy.yaml")).estate
    result = plan(estate, render(estate), rendered["base.yaml"])
    kinds = {c.subject: c.kind for f in result.files for c in f.changes}
    assert kinds["Namespace vision"] == "kubernetes-tenancy"
    assert kinds["ClusterRole estategen-team-jobs"] == "kubernetes-tenancy"


def _planned_from(before: str, after: str, target: Path):  # type: ignore[no-untyped-def]
    """The plan of blueprint text ``after`` over a folder ``before`` was rendered into."""
    old = validate_document(load.parse_blueprint(before.encode(), "before.yaml")).estate
    write_tree(with_manifest(render(old), before.encode(), old.name), target)
    new = validate_document(load.parse_blueprint(after.encode(), "after.yaml")).estate
    return plan(new, render(new), target)


# lab.yaml has no slurm.accounting: a team's key reaches the identity plan on its own
LAB = (BLUEPRINTS / "lab.yaml").read_text()
LAB_NLP = "    - {name: nlp, gid: 20002, members: [bob], fairshare: 50}\n"


def test_a_teams_pod_security_level_is_a_change_of_its_namespaces_and_nothing_else(
    tmp_path: Path,
) -> None:
    """identity.teams[].pod_security changes the team's namespace on each cluster (its
    ``pod-security.kubernetes.io/enforce`` and ``warn`` labels), a tenancy change pulumi up
    applies live, as tenancy.pod_security is: no Ansible run of the team's Unix identity, and
    no other team's namespace."""
    baseline = LAB.replace(LAB_NLP, LAB_NLP.replace("50}", "50, pod_security: baseline}"))
    result = _planned_from(LAB, baseline, tmp_path / "lab")
    changes = [c for f in result.files for c in f.changes]
    assert sorted(c.kind for c in changes) == ["kubernetes-tenancy", "review"], text(result)
    (namespace,) = [c for c in changes if c.kind == "kubernetes-tenancy"]
    assert (namespace.file, namespace.subject) == (
        "kubernetes/lab-k8s/namespaces.yaml",
        "Namespace nlp",
    )
    assert "loosens from restricted to baseline" in namespace.meaning
    assert "running pods stay" in namespace.meaning
    assert '"pod-security.kubernetes.io/enforce": "baseline"' in namespace.after
    assert [s.id for s in result.steps()] == ["pulumi-up", "review"]


def test_a_stricter_team_level_says_how_to_list_the_running_pods_it_would_refuse(
    tmp_path: Path,
) -> None:
    """kubernetes.io "Enforce Pod Security Standards with Namespace Labels" (kubernetes/website,
    content/en/docs/tasks/configure-pod-container/enforce-standards-namespace-labels.md): a
    changed ``enforce`` label leaves running pods alone and warns of those the new level
    refuses; ``kubectl label --dry-run=server`` shows them without the change."""
    privileged = LAB.replace(LAB_NLP, LAB_NLP.replace("50}", "50, pod_security: privileged}"))
    result = _planned_from(privileged, LAB, tmp_path / "lab")
    (namespace,) = [c for f in result.files for c in f.changes if c.kind == "kubernetes-tenancy"]
    assert "tightens from privileged to restricted" in namespace.meaning
    assert (
        "kubectl label --dry-run=server --overwrite ns nlp "
        "pod-security.kubernetes.io/enforce=restricted"
    ) in namespace.meaning
