"""One table of slurm.conf keys (estategen.slurm_keys): the template, the check and the plan
agree with it, and its change policies are at least what slurm.conf(5) notes."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from estategen.checks import CLOUD_SLURM_OPTIONS, HOSTED_SLURM_OPTIONS, OPTIONS_WITHOUT_POWER_SAVING
from estategen.errors import BlueprintInvalid, Finding
from estategen.load import parse_blueprint
from estategen.pipeline import Validated, validate_document
from estategen.plan.compare import plan
from estategen.render import render
from estategen.slurm_keys import (
    RECORD_KEYS,
    REFUSED_IN_OPTIONS,
    RENDERED_KEYS,
    SLURM_KEYS,
    ChangePolicy,
    Owner,
    change_for,
    slurm_key,
)
from estategen.write import with_manifest, write_tree

from conftest import BLUEPRINTS

# Every optional slurm.conf line on: GPUs (GresTypes), accounting (AccountingStorageHost, Port,
# Enforce and TRES), a switch (TopologyPlugin), all six priority weights and TRES weights,
# preemption, the user slurmd runs as (SlurmdUser), a job completion log (JobCompLoc).
EVERYTHING = """\
estate: t
versions: {slurm: "23.11"}
identity:
  users: [{name: alice, uid: 10001}]
  teams: [{name: vision, gid: 20001, members: [alice], fairshare: 30}]
slurm:
  controllers: [ctl-01]
  packages:
    source: site
    apt_repository: "deb https://slurm.example.org/debian bookworm main"
    nvml: true
    jwt: true
  accounting:
    host: dbd
    database: {host: db, password: {secret: db_pw}}
  scheduling:
    priority_weights: {age: 1, assoc: 2, fairshare: 3, job_size: 4, partition: 5, qos: 6}
    priority_weight_tres: {CPU: 1000, GRES/gpu: 3000}
    preemption: {type: qos, mode: requeue}
  qos: [{name: normal}, {name: high, preempt: [normal]}]
  partitions: [{name: gpu, pools: [h100]}]
  mpi: {default: pmix, ports: "12000-12999"}
  rest_api: {host: ctl-01, jwt_key: {secret: slurm_jwt}}
  health_check: {interval: 120, node_state: [idle, mixed]}
  slurmd_user: root
  job_completion: {type: filetxt}
node_pools:
  - name: h100
    scheduler: slurm
    hosts: gpu-[01-04]
    network: {switch: "leaf-[1-2]"}
    cpu: {sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    gpus: {model: h100-sxm-80gb, count: 8}
"""
MAN_PAGE = Path("/usr/share/man/man5/slurm.conf.5.gz")
RANK = {ChangePolicy.RECONFIGURE: 0, ChangePolicy.RESTART_SLURMCTLD: 1, ChangePolicy.RESTART_ALL: 2}


def validated(text: str) -> Validated:
    return validate_document(parse_blueprint(text.encode(), "t.yaml"))


def errors(text: str) -> list[Finding]:
    """The error-level findings validating a blueprint gives."""
    try:
        findings = validated(text).findings
    except BlueprintInvalid as invalid:
        findings = invalid.findings
    return [f for f in findings if f.level == "error"]


def with_options(options: str) -> str:
    return EVERYTHING.replace("  controllers:", f"  options: {{{options}}}\n  controllers:")


def blueprints() -> dict[str, str]:
    texts = {p.stem: p.read_text() for p in sorted(BLUEPRINTS.glob("*.yaml"))}
    # cloud nodes and power saving, as the plan pair that adds a cloud pool writes them
    cloud = (
        (Path(__file__).parent / "plan_pairs" / "cloud-pool-added.yaml")
        .read_text()
        .replace(
            "    hosts: burst-[01-04]\n", "    hosts: burst-[01-04]\n    nodes: {min: 1, max: 4}\n"
        )
    )
    # Slurm pools hosted in Kubernetes: auth/slurm, NodeSet lines
    from test_kubernetes_slinky import ESTATE as hosted

    return {**texts, "everything": EVERYTHING, "cloud": cloud, "hosted": hosted}


def parameter_keys(text: str) -> list[str]:
    """The key left of `=` on each parameter line of a slurm.conf (not comments, nodes or
    partitions)."""
    keys = [line.split("=", 1)[0] for line in text.splitlines() if line and line[0] != "#"]
    return [key for key in keys if key not in ("NodeName", "PartitionName", "NodeSet")]


@pytest.fixture(scope="module")
def rendered_keys() -> dict[str, tuple[list[str], set[str]]]:
    """Per blueprint: the parameter keys of its slurm.conf, and its `slurm.options` keys."""
    out = {}
    for name, text in blueprints().items():
        result = validated(text)
        assert not [f for f in result.findings if f.level == "error"], name
        conf = render(result.estate)["slurm/slurm.conf"].content.decode()
        out[name] = (parameter_keys(conf), set(result.estate.slurm.options))
    return out


def test_every_key_the_template_writes_is_in_the_table_as_rendered(
    rendered_keys: dict[str, tuple[list[str], set[str]]],
) -> None:
    # cloud nodes need keys `slurm.options` may set otherwise (refused only with cloud nodes)
    # and so do Slurm pools hosted in Kubernetes, which also write the reserved AuthInfo
    allowed = RENDERED_KEYS | CLOUD_SLURM_OPTIONS | HOSTED_SLURM_OPTIONS | {"AuthInfo"}
    for name, (keys, options) in rendered_keys.items():
        written = [key for key in keys if key not in options]
        assert set(written) <= allowed, (name, sorted(set(written) - allowed))


def test_every_key_the_table_calls_rendered_is_written_by_some_blueprint(
    rendered_keys: dict[str, tuple[list[str], set[str]]],
) -> None:
    written = {
        key for keys, options in rendered_keys.values() for key in keys if key not in options
    }
    assert sorted(RENDERED_KEYS - written) == []


def test_options_keys_of_the_examples_are_passed_through_not_owned(
    rendered_keys: dict[str, tuple[list[str], set[str]]],
) -> None:
    options = {key for _, keys in rendered_keys.values() for key in keys}
    assert options, "the examples pass at least one slurm.options key through"
    assert not {key.lower() for key in options} & {key.lower() for key in REFUSED_IN_OPTIONS}


@pytest.mark.parametrize("key", sorted(REFUSED_IN_OPTIONS - OPTIONS_WITHOUT_POWER_SAVING))
def test_every_key_estategen_owns_is_refused_in_options(key: str) -> None:
    found = errors(with_options(f"{key}: x"))
    assert [f.path for f in found] == [f"slurm.options.{key}"], found
    owner = "rendered" if key in RENDERED_KEYS else "opens a record" if key in RECORD_KEYS else ""
    assert (owner or "reserved") in found[0].message


@pytest.mark.parametrize("value", ["x", "0", "65534", "1.5"])
def test_resume_timeout_in_options_without_cloud_nodes_is_whole_seconds(value: str) -> None:
    """ResumeTimeout, which bounds `scontrol reboot` too, may be an option without cloud
    nodes (estategen renders no power saving then), as whole seconds."""
    assert errors(with_options("ResumeTimeout: '900'")) == []
    (error,) = errors(with_options(f"ResumeTimeout: '{value}'"))
    assert error.path == "slurm.options.ResumeTimeout"
    assert "whole seconds" in error.message


def test_an_owned_key_is_refused_in_any_case() -> None:
    (error,) = errors(with_options("GRESTYPES: gpu"))
    assert error.path == "slurm.options.GRESTYPES"
    assert "GresTypes is rendered by estategen" in error.message


def test_keys_options_may_set_are_not_refused() -> None:
    free = [key.name for key in SLURM_KEYS if key.owner is Owner.OPTIONS]
    assert errors(with_options(", ".join(f"{key}: x" for key in free))) == []


def test_the_table_names_each_key_once_and_options_keys_never_reconfigure_alone() -> None:
    names = [key.name.lower() for key in SLURM_KEYS]
    assert len(names) == len(set(names))
    assert not set(names) & {key.lower() for key in RECORD_KEYS}
    # A pass-through key is listed only for a restart; one that takes scontrol reconfigure
    # needs no entry.
    assert all(
        key.change is not ChangePolicy.RECONFIGURE
        for key in SLURM_KEYS
        if key.owner is Owner.OPTIONS
    )


EXPECTED_KIND = {
    ChangePolicy.RECONFIGURE: "slurm-reconfigure",
    ChangePolicy.RESTART_SLURMCTLD: "slurm-restart-slurmctld",
    ChangePolicy.RESTART_ALL: "slurm-restart-all",
}


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The EVERYTHING blueprint rendered into a folder, as `estategen render` writes it."""
    estate = validated(EVERYTHING).estate
    target = tmp_path_factory.mktemp("before") / estate.name
    write_tree(with_manifest(render(estate), EVERYTHING.encode(), estate.name), target)
    return target


@pytest.mark.parametrize(
    "key", [k.name for k in SLURM_KEYS if k.owner is Owner.OPTIONS] + ["MAXJOBCOUNT", "MinJobAge"]
)
def test_plan_asks_for_what_the_table_says_when_an_option_is_added(key: str, before: Path) -> None:
    estate = validated(with_options(f"{key}: x")).estate
    result = plan(estate, render(estate), before)
    (change,) = [c for f in result.files if f.path == "slurm/slurm.conf" for c in f.changes]
    assert change.kind == EXPECTED_KIND[change_for(key)]
    expected = slurm_key(key)
    assert (expected.change if expected else ChangePolicy.RECONFIGURE) is change_for(key)
    assert change_for(key) is not ChangePolicy.RECONFIGURE or key == "MinJobAge"


def noted_restarts(page: str) -> dict[str, ChangePolicy]:
    """Each parameter slurm.conf(5) notes a restart for, and which: a note naming slurmd or all
    daemons means slurmctld and every slurmd, one naming only slurmctld a slurmctld restart."""
    entries = re.split(r"^\.TP\n\\fB([A-Za-z]+)\\fR\s*$", page, flags=re.M)
    noted: dict[str, ChangePolicy] = {}
    for name, body in zip(entries[1::2], entries[2::2], strict=True):
        if not name[0].isupper():  # an option of a parameter, not a parameter
            continue
        flat = " ".join(re.sub(r"\\f[BIRP]|\\(?=-)", "", body).split())
        for sentence in re.findall(r"[^.]*\brestart(?:ed)?\b[^.]*\.", flat):
            if not re.search(r"\b(?:required|must be)\b", sentence):
                continue
            slurmd = re.search(r"slurmd|All Slurm daemons", sentence)
            policy = ChangePolicy.RESTART_ALL if slurmd else ChangePolicy.RESTART_SLURMCTLD
            if RANK[policy] > RANK[noted.get(name, ChangePolicy.RECONFIGURE)]:
                noted[name] = policy
    return noted


@pytest.mark.skipif(not MAN_PAGE.exists(), reason="needs slurm-client's slurm.conf(5)")
def test_every_restart_slurm_conf_5_notes_is_in_the_table() -> None:
    with gzip.open(MAN_PAGE, "rt") as page:
        text = page.read()
    noted = noted_restarts(text)
    if "Changes to TCP listening settings will require a daemon restart" in " ".join(text.split()):
        # From 23.11, `scontrol reconfigure` restarts the daemons, and the page (24.11's, from
        # Debian 13) notes a restart for AuthType and SwitchType only, plus the listening ports
        assert {"AuthType", "SwitchType"} <= set(noted)  # the parser reads
    else:
        assert {"SelectType", "GresTypes", "CredType", "AuthType"} <= set(noted)  # likewise
    short = {
        name: (policy.value, change_for(name).value)
        for name, policy in noted.items()
        if RANK[change_for(name)] < RANK[policy]
    }
    assert short == {}, "key: (slurm.conf(5) notes, the table says)"
