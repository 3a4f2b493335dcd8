"""Properties over generated blueprints: any valid estate renders, deterministically, with every
host in exactly one place; any damaged blueprint is refused cleanly and quickly.

Also the equivalences the fast paths rest on: the compiled schema acceptor never accepts what
cerberus refuses and normalises exactly like it; the block YAML writer and the JSON writer
produce exactly what PyYAML and the json module do.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estategen import cli, hostlist, yamltext
from estategen.catalog import builtin_models
from estategen.errors import BlueprintInvalid
from estategen.load import parse_blueprint
from estategen.output import Files, dumps
from estategen.pipeline import validate_document
from estategen.render import render
from estategen.schema import validation
from estategen.yamltext import _block, _dump

from conftest import BLUEPRINTS


def examples(count: int) -> settings:
    """Bounded runs (the suite has a time budget), no deadline (CI machines vary), and no
    example database written into the repository."""
    return settings(
        max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )


MODELS = builtin_models()
GKE_MODELS = sorted(m for m, spec in MODELS.items() if "gke" in spec.clouds)
EKS_MODELS = sorted(m for m, spec in MODELS.items() if "eks" in spec.clouds)
MIG_MODELS = sorted(m for m, spec in MODELS.items() if spec.mig)


# Generated estates -----------------------------------------------------------------------


@st.composite
def mig_layout(draw: st.DrawFn, model: str) -> list[str]:
    """One profile repeated as often as the model allows, or a mix that fits one GPU."""
    profiles = MODELS[model].mig
    name = draw(st.sampled_from(sorted(profiles)))
    spec = profiles[name]
    most = min(spec.max, 7 // spec.compute, 8 // spec.memory)
    return [name] * draw(st.integers(1, most))


@st.composite
def host_expressions(draw: st.DrawFn, prefix: str) -> tuple[list[str], int]:
    """Hostlists with padded and unpadded ranges and single names, all under ``prefix``."""
    width = draw(st.sampled_from([0, 2, 3]))
    low = draw(st.integers(0, 120))
    size = draw(st.integers(1, 24))
    high = low + size - 1
    if width and len(str(high)) > width:
        width = len(str(high))
    expressions = [
        f"{prefix}a[{low:0{width}d}-{high:0{width}d}]" if size > 1 else f"{prefix}a{low}"
    ]
    extra = draw(st.integers(0, 2))
    expressions += [f"{prefix}b{i}" for i in range(extra)]
    return expressions, size + extra


@st.composite
def estates(draw: st.DrawFn) -> dict[str, Any]:
    """A valid blueprint: checks pass (warnings allowed), every key family exercised."""
    users = [{"name": f"u{i}", "uid": 10_000 + i} for i in range(draw(st.integers(0, 4)))]
    teams = []
    for j in range(draw(st.integers(0, 3))):
        members = (
            draw(st.lists(st.sampled_from([u["name"] for u in users]), unique=True))
            if users
            else []
        )
        team: dict[str, Any] = {"name": f"team{j}", "gid": 20_000 + j, "members": members}
        if draw(st.booleans()):
            team["fairshare"] = draw(st.integers(1, 100))
        if draw(st.booleans()):
            team["namespace"] = f"ns-team{j}"
        teams.append(team)
    team_names = [t["name"] for t in teams]

    clusters = []
    for k in range(draw(st.integers(0, 2))):
        provider = draw(st.sampled_from(["on-prem", "gke", "eks"]))
        cluster: dict[str, Any] = {"name": f"c{k}", "device_plugin": {"mig_strategy": "mixed"}}
        if provider != "on-prem":
            cluster["provider"] = provider
            cluster["region"] = "us-central1" if provider == "gke" else "us-east-1"
            cluster["device_plugin"] = {"mig_strategy": "none"}
        if draw(st.booleans()):
            cluster["priority_classes"] = [{"name": "high", "value": 1000}]
        clusters.append(cluster)

    topology = draw(st.sampled_from(["none", "switch", "block"]))
    pools: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 5))):
        choices = ["slurm"] + [c["name"] for c in clusters]
        where = draw(st.sampled_from(choices))
        pool: dict[str, Any] = {"name": f"pool{i}"}
        cluster = next((c for c in clusters if c["name"] == where), None)
        provider = cluster.get("provider", "on-prem") if cluster else "on-prem"
        pool["scheduler"] = "slurm" if cluster is None else "kubernetes"
        if cluster:
            pool["cluster"] = where
        if provider != "on-prem":
            model = draw(st.sampled_from(GKE_MODELS if provider == "gke" else EKS_MODELS))
            pool["provider"] = provider
            shapes = MODELS[model].clouds[provider].shapes
            pool["instance_type"] = draw(st.sampled_from(sorted(shapes)))
            pool["nodes"] = {"min": 0, "max": draw(st.integers(1, 16))}
            pool["gpus"] = {"model": model, "count": shapes[pool["instance_type"]]}
            pools.append(pool)
            continue
        expressions, count = draw(host_expressions(f"h{i}"))
        pool["hosts"] = expressions[0] if len(expressions) == 1 else expressions
        pool["cpu"] = {
            "sockets": draw(st.integers(1, 4)),
            "cores_per_socket": draw(st.integers(1, 64)),
            "threads_per_core": draw(st.integers(1, 2)),
        }
        pool["memory_gb"] = draw(st.integers(1, 4096))
        if draw(st.booleans()):
            model = draw(st.sampled_from(sorted(MODELS)))
            gpus: dict[str, Any] = {"model": model, "count": draw(st.integers(1, 8))}
            if model in MIG_MODELS and draw(st.booleans()):
                gpus["mig"] = draw(mig_layout(model))
            if cluster is None and "mig" not in gpus and draw(st.booleans()):
                gpus["sharing"] = {"shard": draw(st.integers(1, 16))}
            elif cluster is not None and draw(st.booleans()):
                mode = (
                    "time_slicing"
                    if "mig" in gpus
                    else draw(st.sampled_from(["time_slicing", "mps"]))
                )
                gpus["sharing"] = {mode: draw(st.integers(2, 8))}
            pool["gpus"] = gpus
        if cluster is None:
            pool["features"] = draw(st.lists(st.sampled_from(["ib", "nvme", "x86"]), unique=True))
            if topology != "none" and draw(st.booleans()):
                groups = draw(st.integers(1, min(count, 3)))
                pool["network"] = {topology: f"{topology[:2]}{i}-[1-{groups}]"}
            if draw(st.booleans()):
                pool["weight"] = draw(st.integers(1, 1000))
        else:
            pool["labels"] = {"tier": draw(st.sampled_from(["serve", "train"]))}
            if draw(st.booleans()):
                pool["taints"] = [{"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"}]
        pools.append(pool)

    blueprint: dict[str, Any] = {
        "estate": draw(st.sampled_from(["lab", "aurora", "e-1"])),
        "versions": {
            "slurm": draw(
                st.sampled_from(
                    ["23.11", "24.05", "24.11"]
                    if topology == "block"
                    else ["22.05", "23.11", "25.05"]
                )
            ),
            "kubernetes": draw(st.sampled_from(["1.29", "1.31", "1.34"])),
        },
        "identity": {"users": users, "teams": teams},
        "node_pools": pools,
    }
    if draw(st.booleans()):
        # free text holds no control characters: not C0, DEL, nor C1 (NEL U+0085 breaks lines)
        printable = st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_categories=("Cc",))
        blueprint["description"] = draw(st.text(printable, max_size=40))

    slurm_pools = [p["name"] for p in pools if p["scheduler"] == "slurm"]
    if slurm_pools:
        slurm: dict[str, Any] = {"controllers": ["ctl-1", "ctl-2"][: draw(st.integers(1, 2))]}
        # a site repository of whichever release was drawn, built with NVML and libjwt
        slurm["packages"] = {
            "source": "site",
            "apt_repository": "deb https://slurm.example.org/debian bookworm main",
            "nvml": True,
            "jwt": True,
        }
        accounting = draw(st.booleans())
        if accounting:
            slurm["accounting"] = {
                "host": "dbd",
                "database": {"host": "db", "password": {"secret": "db_pw"}},
            }
            slurm["qos"] = [
                {"name": "normal"},
                {"name": "high", "priority": 10, "preempt": ["low"]},
                {"name": "low", "usage_factor": 0.5},
            ]
            slurm["scheduling"] = {"preemption": {"type": "qos", "mode": "requeue"}}
        partitions = []
        for n in range(draw(st.integers(1, 3))):
            members = draw(
                st.lists(st.sampled_from(slurm_pools), min_size=1, max_size=3, unique=True)
            )
            partition: dict[str, Any] = {"name": f"part{n}", "pools": members}
            partition["max_time"] = draw(
                st.sampled_from(["UNLIMITED", "1-00:00:00", "8:00:00", "90"])
            )
            if n == 0 and draw(st.booleans()):
                partition["default"] = True
            if team_names:
                partition["teams"] = draw(st.lists(st.sampled_from(team_names), unique=True))
            if accounting and draw(st.booleans()):
                partition["qos"] = "low"
            partitions.append(partition)
        slurm["partitions"] = partitions
        if draw(st.booleans()):
            slurm["options"] = {"MaxJobCount": 10_000}
        blueprint["slurm"] = slurm

    for cluster in clusters:
        capacity: Counter[str] = Counter()
        for pool in pools:
            if pool.get("cluster") == cluster["name"] and "gpus" in pool:
                nodes = (
                    pool["nodes"]["max"]
                    if "nodes" in pool
                    else hostlist.count(
                        ",".join(
                            [pool["hosts"]] if isinstance(pool["hosts"], str) else pool["hosts"]
                        )
                    )
                )
                gpus = nodes * pool["gpus"]["count"]
                # MIG GPUs back per-profile quotas (one instance per listed profile), not
                # the whole-GPU model
                for profile in pool["gpus"].get("mig", []):
                    capacity[f"{pool['gpus']['model']}/{profile}"] += gpus
                if not pool["gpus"].get("mig"):
                    capacity[pool["gpus"]["model"]] += gpus
        if capacity and team_names and draw(st.booleans()):
            model = draw(st.sampled_from(sorted(capacity)))
            queue_teams = draw(st.lists(st.sampled_from(team_names), min_size=1, unique=True))
            share = capacity[model] // len(queue_teams)
            cluster["queues"] = {
                "cohort": f"co-{cluster['name']}",
                "teams": [
                    {"team": t, "quota": {model: draw(st.integers(0, share))}, "borrowing_limit": 4}
                    for t in queue_teams
                ],
            }
    if clusters:
        blueprint["kubernetes"] = {"clusters": clusters}
    if draw(st.booleans()):
        blueprint["storage"] = [
            {"name": "home", "type": "nfs", "source": "nfs:/home", "mount": "/home"}
        ]
    if draw(st.booleans()):
        blueprint["observability"] = {"labels": {"site": "a"}, "node_exporter": {"port": 9101}}
    return blueprint


def to_bytes(blueprint: dict[str, Any]) -> bytes:
    return yaml.dump(
        blueprint, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True
    ).encode()


def render_blueprint(blueprint: dict[str, Any]) -> tuple[Any, Files]:
    validated = validate_document(parse_blueprint(to_bytes(blueprint), "bp.yaml"))
    assert not [f for f in validated.findings if f.level == "error"]
    return validated.estate, render(validated.estate)


def ansible_hosts(pattern: str) -> list[str]:
    """Expand an Ansible inventory pattern (``gpu-[01:32]``) through the hostlist syntax."""
    return hostlist.expand(pattern.replace(":", "-"))


@examples(60)
@given(estates())
def test_a_valid_estate_renders_the_same_bytes_every_time(blueprint: dict[str, Any]) -> None:
    _, first = render_blueprint(blueprint)
    _, second = render_blueprint(copy.deepcopy(blueprint))
    assert first == second


@examples(60)
@given(estates())
def test_every_host_lands_exactly_once_on_each_side(blueprint: dict[str, Any]) -> None:
    estate, files = render_blueprint(blueprint)
    slurm_hosts = [h for p in estate.node_pools if p.scheduler == "slurm" for h in p.hosts]
    k8s_hosts = [
        h
        for p in estate.node_pools
        if p.scheduler == "kubernetes" and not p.managed
        for h in p.hosts
    ]
    assert not set(slurm_hosts) & set(k8s_hosts)

    in_slurm_conf: Counter[str] = Counter()
    if "slurm/slurm.conf" in files:
        for line in files["slurm/slurm.conf"].content.decode().splitlines():
            if line.startswith("NodeName="):
                in_slurm_conf.update(hostlist.expand(line.split()[0].split("=", 1)[1]))
    assert in_slurm_conf == Counter(slurm_hosts)

    in_manifests: Counter[str] = Counter()
    for path, output in files.items():
        if path.startswith("kubernetes/") and path.endswith("/nodes.yaml"):
            for node in yaml.safe_load_all(output.content):
                in_manifests[node["metadata"]["name"]] += 1
    assert in_manifests == Counter(k8s_hosts)

    in_inventory: Counter[str] = Counter()
    if slurm_hosts or k8s_hosts:
        inventory = yaml.safe_load(files["ansible/inventory.yml"].content)
        for group, members in inventory["all"]["children"].items():
            if group.startswith("pool_"):
                for pattern in members["hosts"]:
                    in_inventory.update(ansible_hosts(pattern))
    assert in_inventory == Counter(slurm_hosts + k8s_hosts)
    assert set(in_inventory.values()) <= {1}


@examples(2)
@given(st.lists(estates(), min_size=6, max_size=6))
def test_output_does_not_depend_on_the_hash_seed(blueprints: list[dict[str, Any]]) -> None:
    """Sets and dicts iterate by hash; nothing they order may reach an output file."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        paths = []
        for index, blueprint in enumerate(blueprints):
            paths.append(folder / f"bp{index}.yaml")
            paths[-1].write_bytes(to_bytes(blueprint))
        digests = [_digests_under_seed(seed, paths) for seed in ("0", "4242")]
    assert digests[0] == digests[1]


_DIGEST_SCRIPT = """
import hashlib, sys
from estategen.pipeline import validate_file
from estategen.render import render
for path in sys.argv[1:]:
    for name, output in render(validate_file(path).estate).items():
        print(path, name, oct(output.mode), hashlib.sha256(output.content).hexdigest())
"""


def _digests_under_seed(seed: str, paths: list[Path]) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT, *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout


# Damaged examples ------------------------------------------------------------------------

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml"))
ODD_VALUES = [
    None,
    True,
    0,
    -1,
    10**30,
    1.5,
    math.nan,
    "",
    "x" * 300,
    "gpu-[0-9999999]",
    [],
    {},
    [None],
    {"x": 1},
    "{{ lookup('pipe', 'id') }}",
]
VALIDATE_SECONDS = 5.0  # a damaged small blueprint is judged well within this


def paths_of(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += paths_of(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out += paths_of(value, (*prefix, index))
    return out


def names_in(data: Any) -> list[str]:
    """Every name-like string in a document: the pool of swapped references."""
    if isinstance(data, dict):
        return [n for v in data.values() for n in names_in(v)]
    if isinstance(data, list):
        return [n for v in data for n in names_in(v)]
    return [data] if isinstance(data, str) and re.fullmatch(r"[a-z][a-z0-9-]*", data) else []


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """An example blueprint with a few structural mutations, or with its bytes spliced."""
    example = draw(st.sampled_from(EXAMPLES))
    raw = example.read_bytes()
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            start = draw(st.integers(0, len(raw)))
            end = draw(st.integers(start, min(len(raw), start + 40)))
            raw = raw[:start] + draw(st.binary(max_size=12)) + raw[end:]
        return raw
    data = parse_blueprint(raw, "x").data
    names = names_in(data)
    for _ in range(draw(st.integers(1, 4))):
        paths = paths_of(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        holder: Any = data
        for part in path[:-1]:
            holder = holder[part]
        key = path[-1]
        action = draw(st.sampled_from(["drop", "retype", "swap", "duplicate"]))
        if action == "drop":
            del holder[key]
        elif action == "retype":
            holder[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif action == "swap" and names:
            holder[key] = draw(st.sampled_from(names))
        elif isinstance(holder, list):
            holder.append(copy.deepcopy(holder[key]))
    return to_bytes_lenient(data)


def to_bytes_lenient(data: Any) -> bytes:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False).encode()


def run_validate(path: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["validate", str(path)])
    return code, out.getvalue() + err.getvalue()


@examples(250)
@given(raw=damaged())
def test_a_damaged_blueprint_is_judged_cleanly_and_quickly(raw: bytes, tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_bytes(raw)
    started = time.perf_counter()
    code, output = run_validate(blueprint)
    assert time.perf_counter() - started < VALIDATE_SECONDS
    assert code in (0, 1), output
    assert "Traceback" not in output and "internal error" not in output
    if code == 1:
        assert re.search(r"^\S.*:[0-9]+:[0-9]+: ", output, re.M), output


# The fast paths are exact ----------------------------------------------------------------


def _ordered(value: Any) -> Any:
    """Structure with key order and types kept, NaN comparable: for exact equality."""
    if isinstance(value, dict):
        return ["dict", *[(k, _ordered(v)) for k, v in value.items()]]
    if isinstance(value, list):
        return ["list", *[_ordered(v) for v in value]]
    return (type(value).__name__, repr(value))


@examples(60)
@given(estates())
def test_a_valid_estate_takes_the_compiled_path_to_what_cerberus_returns(
    blueprint: dict[str, Any],
) -> None:
    data = parse_blueprint(to_bytes(blueprint), "bp.yaml").data
    accepted = validation._accept(data)
    reference, problems = validation.cerberus_normalise(copy.deepcopy(data))
    assert not problems
    assert accepted is not None, "a valid estate must not fall back to cerberus"
    assert _ordered(accepted) == _ordered(reference)


@examples(150)
@given(damaged())
def test_the_compiled_path_never_accepts_what_cerberus_refuses(raw: bytes) -> None:
    """It may hand a document to cerberus that cerberus accepts (a null that a default
    replaces), but what it accepts itself must be exactly cerberus's result."""
    try:
        data = parse_blueprint(raw, "bp.yaml").data
    except BlueprintInvalid:
        return
    accepted = validation._accept(data)
    reference, problems = validation.cerberus_normalise(copy.deepcopy(data))
    if accepted is not None:
        assert not problems, problems
        assert _ordered(accepted) == _ordered(reference)


TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12
) | st.sampled_from(
    [
        "",
        "null",
        "yes",
        "No",
        "on",
        "~",
        "123",
        "0x1f",
        "1.5",
        ".inf",
        "1:20",
        "2024-01-01",
        "a: b",
        "a:",
        "- x",
        "#c",
        "a #b",
        "[a]",
        "gpu-[01:02]",
        "=",
        "<<",
        "@x",
        "x\ny",
        "x\ny\n",
        "version: v1\nflags:\n  migStrategy: none\n",
        "  indented\nfirst line\n",
        "a\n  \nb\n",
        "a\n\n  b\n  c\n",
        "a\n\tb\n",
        "200001",
        "0.5",
        "1e3",
        "0o17",
        "2024-01-01T00:00:00Z",
        "TRUE",
        "off",
        "NULL",
        "1_000",
        "a\n\nb\n",
        "a \nb\n",
        "\u2028",
        "nfs01:/export",
        "'",
        '"',
        " a",
        "a ",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers() | TEXT
TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@examples(400)
@given(TREES)
def test_the_block_yaml_writer_matches_pyyaml(data: Any) -> None:
    # Ansible variables (sorted keys) and manifests (keys as written, files as | blocks)
    assert _block(data, manifest=False) == _dump(data)
    assert _block(data, manifest=True) == _dump(data, manifest=True)


def test_the_block_yaml_writer_writes_shared_objects_as_pyyaml_does() -> None:
    shared = ["a", "b"]
    empty: dict[str, Any] = {}
    for data in ({"x": shared, "y": shared}, [shared, [shared]], {"x": empty, "y": [empty]}):
        for manifest in (False, True):
            assert _block(data, manifest) == _dump(data, manifest)
            assert "&id001" in _block(data, manifest)
    # the device plugin's DaemonSet lists one NODE_NAME variable in three containers
    variable = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    containers = [{"name": name, "env": [variable]} for name in ("a", "b", "c")]
    written = _block({"spec": {"containers": containers}}, manifest=True)
    assert written == _dump({"spec": {"containers": containers}}, manifest=True)
    assert written.count("- &id001\n") == 1 and written.count("- *id001\n") == 2


def _containers(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [tree, *(c for value in tree.values() for c in _containers(value))]
    if isinstance(tree, list):
        return [tree, *(c for item in tree for c in _containers(item))]
    return []


@st.composite
def shared_trees(draw: st.DrawFn) -> Any:
    """Documents that hold some lists and dicts more than once, in any position."""
    pool = _containers(draw(TREES.filter(lambda tree: isinstance(tree, dict | list))))
    member = st.sampled_from(pool) | SCALARS
    return draw(
        st.lists(
            member | st.lists(member, max_size=3) | st.dictionaries(TEXT, member, max_size=3),
            min_size=1,
            max_size=5,
        )
        | st.dictionaries(TEXT, member | st.lists(member, max_size=3), min_size=1, max_size=5)
    )


# one-line printable ASCII, indicators and spaces anywhere, up to the writer's 500 characters
LINE = st.text(st.sampled_from(list(" -:#?'\"!&*|>%@`,[]{}.~=+/0123456789abeflnoprstuxyENT")))
LONG_LINE = st.builds(lambda word, n: (word + " ") * n + word, LINE, st.integers(0, 40)).filter(
    lambda text: len(text) <= 500
)


@examples(300)
@given(st.dictionaries(TEXT, st.lists(LINE | LONG_LINE, max_size=3) | LINE | LONG_LINE, max_size=4))
def test_the_block_yaml_writer_quotes_one_line_strings_as_pyyaml_does(data: Any) -> None:
    nested = {"a": {"b": [{"c": data}]}}
    assert _block(nested, manifest=False) == _dump(nested)
    assert _block(nested, manifest=True) == _dump(nested, manifest=True)


# names and paths, with the words PyYAML's implicit types start with (yamltext._WORD)
WORD = st.from_regex(r"[A-Za-z][A-Za-z0-9_./-]{0,12}", fullmatch=True) | st.sampled_from(
    ["y", "Yes", "n", "NO", "true", "False", "on", "Off", "null", "NULL", "o", "nan", "e5"]
)


@examples(300)
@given(st.dictionaries(WORD, st.lists(WORD, max_size=3) | WORD, max_size=4))
def test_the_block_yaml_writer_writes_names_plain_or_quoted_as_pyyaml_does(data: Any) -> None:
    assert _block(data, manifest=False) == _dump(data)
    assert _block(data, manifest=True) == _dump(data, manifest=True)


@examples(300)
@given(shared_trees())
def test_the_block_yaml_writer_matches_pyyaml_on_shared_objects(data: Any) -> None:
    assert _block(data, manifest=False) == _dump(data)
    assert _block(data, manifest=True) == _dump(data, manifest=True)


def test_the_block_yaml_writer_writes_embedded_files_quoted_numbers_and_nested_lists_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the manifests hold (a device plugin's config file with indented lines, a GID
    that reads back as a number, a command's argument lists) needs no PyYAML fallback."""
    data = {
        "data": {"default": "version: v1\nflags:\n  migStrategy: none\n\n  x: 1\n"},
        "annotations": {"estategen.io/gid": "200001", "on": "yes"},
        "args": [["sh", "-c"], [{"b": "0.5", "a": []}]],
        "empty": {},
    }
    manifest_text = yamltext._dump(data, manifest=True)
    variables = {key: value for key, value in data.items() if key != "data"}
    variables_text = yamltext._dump(variables)
    # the same text first quoted on one line in Ansible variables stays a block in a manifest
    assert '"version: v1\\n' in _block({"config": data["data"]["default"]}, manifest=False)

    def no_fallback(data: Any, manifest: bool = False) -> str:
        if isinstance(data, list) and len(data) == 1 and isinstance(data[0], str):
            return dump(data, manifest)  # how one unusual string is quoted
        raise AssertionError(f"fell back to PyYAML for {data!r}")

    dump = yamltext._dump

    monkeypatch.setattr(yamltext, "_dump", no_fallback)
    assert _block(data, manifest=True) == manifest_text
    assert "  default: |\n    version: v1\nflags:\n" not in manifest_text
    assert "  default: |\n    version: v1\n    flags:\n      migStrategy: none\n" in manifest_text
    assert "estategen.io/gid: '200001'" in manifest_text
    # Ansible variables (keys sorted); a multi-line string there is PyYAML's to quote
    assert _block(variables, manifest=False) == variables_text


@examples(200)
@given(
    st.recursive(
        SCALARS,
        lambda inner: (
            st.lists(inner, min_size=1, max_size=3).map(lambda items: [items])
            | st.lists(st.lists(inner, max_size=3), max_size=3)
            | st.dictionaries(TEXT, st.lists(inner, max_size=3), max_size=3)
        ),
        max_leaves=20,
    )
)
def test_the_block_yaml_writer_matches_pyyaml_on_nested_lists(data: Any) -> None:
    # "- - x": a list's first item on the line of the dash of the list that holds it
    assert _block(data, manifest=False) == _dump(data)
    assert _block(data, manifest=True) == _dump(data, manifest=True)


@examples(400)
@given(
    st.recursive(
        # finite: JSON has no NaN or Infinity (the standard library writes them anyway)
        SCALARS | st.floats(allow_nan=False, allow_infinity=False),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(TEXT, inner, max_size=4)
            | st.tuples(inner, inner)
        ),
        max_leaves=20,
    )
)
def test_the_json_writer_matches_the_json_module(data: Any) -> None:
    """The same text as the json module, but for how a float is spelt (orjson writes 0.00001
    where the json module writes 1e-05), which reads back to the same value."""
    written = dumps(data)
    expected = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    assert json.loads(written) == json.loads(expected)
    if not holds_float(data):
        assert written == expected


def holds_float(data: Any) -> bool:
    if isinstance(data, dict):
        return any(holds_float(v) for v in data.values())
    if isinstance(data, list | tuple):
        return any(holds_float(v) for v in data)
    return isinstance(data, float)


def test_the_json_writer_spells_floats_as_orjson_does_and_reads_them_back() -> None:
    data = {"x": [1e16, 1e-05, 0.5]}
    assert dumps(data) == '{\n  "x": [\n    1e+16,\n    0.00001,\n    0.5\n  ]\n}'
    assert json.loads(dumps(data)) == data


def test_the_json_writer_writes_what_orjson_cannot_as_the_json_module_does() -> None:
    cases = [
        {"text": "x 2.5", "address": "10.0.0.1", "big": 10**30},
        {1: "non-string key"},
        {"huge": 2**64},
        {"tuple": ("a", 1), "nested": {"b": [None, True]}},
    ]
    for data in cases:
        assert dumps(data) == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    # JSON cannot hold NaN: the files never do (the schema refuses non-finite numbers)
    assert dumps({"x": math.nan}) == '{\n  "x": null\n}'
