"""Hostile blueprints: every string that reaches an output, and every malformed file.

An estate's configuration is root on thousands of machines. Each case below is either refused
with a finding at the key that carries it, or rendered safely: the output has the same shape
as the untouched blueprint's (no extra slurm.conf line or key, YAML and JSON still parse, no
new Jinja markers in what Ansible templates) and the value arrives intact where it belongs.
The table says which, per key and payload.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen import cli
from estategen.errors import BlueprintInvalid
from estategen.load import parse_blueprint
from estategen.output import Files
from estategen.pipeline import validate_document
from estategen.render import render

from conftest import BLUEPRINTS, run_cli

# Payloads start with a valid character so they test what follows, not just the first check.
PAYLOADS = {
    "newline": "x\nInclude /etc/shadow",
    "trailing-newline": "x\n",
    "carriage-return": "x\rPartitionName=evil",
    "equals": "x=y",
    "space": "x y",
    "hash": "x#y",
    "comma": "x,y",
    "single-quote": "x'y",
    "double-quote": 'x"y',
    "jinja-expression": "x{{ 7 * 7 }}",
    "jinja-statement": "x{% if true %}y{% endif %}",
    "parent-path": "../x",
    "absolute-path": "/etc/passwd",
}
FREE_TEXT_SAFE = set(PAYLOADS) - {"newline", "trailing-newline", "carriage-return"}


@dataclass(frozen=True)
class Site:
    """A key whose value reaches an output file; ``accepts`` names the payloads it takes."""

    name: str
    path: tuple[str | int, ...]
    template: str = "{}"  # how a payload becomes the value (e.g. a DN attribute)
    accepts: frozenset[str] = frozenset()
    as_key: bool = False  # the payload is a mapping key at ``path``, not a value
    lands: str = ""  # the output file the accepted value must reach intact
    fragment: str = ""  # for Slurm files: the text it must arrive as
    reshapes: tuple[str, ...] = ()  # Slurm files an accepted value may add lines to

    def value(self, payload: str) -> str:
        return self.template.format(payload)


SITES = [
    Site("estate", ("estate",)),
    Site(
        "description",
        ("description",),
        accepts=frozenset(FREE_TEXT_SAFE),
        lands="estate.json",
    ),
    Site("cluster-name", ("slurm", "cluster_name")),
    Site("pool-name", ("node_pools", 2, "name")),
    Site(
        "pool-hosts",
        ("node_pools", 2, "hosts"),
        accepts=frozenset({"comma"}),  # a hostlist of two names, x and y
        lands="slurm/slurm.conf",
        fragment="NodeName=x,y ",
    ),
    Site("pool-feature", ("node_pools", 0, "features", 0)),
    Site(
        "pool-switch",
        ("node_pools", 2, "network", "switch"),
        accepts=frozenset({"comma"}),  # two switches, x and y
        lands="slurm/topology.conf",
        fragment="SwitchName=y Nodes=",
        reshapes=("slurm/topology.conf", "ansible/files/slurm/topology.conf"),
    ),
    Site("pool-gpu-model", ("node_pools", 0, "gpus", "model")),
    Site("custom-gpu-model", ("gpu_models", 0, "name")),
    Site("pool-instance-type", ("node_pools", 4, "instance_type")),
    Site("label-key", ("node_pools", 3, "labels"), as_key=True),
    Site("label-value", ("node_pools", 3, "labels", "tier")),
    Site("taint-key", ("node_pools", 3, "taints", 0, "key")),
    Site("taint-value", ("node_pools", 3, "taints", 0, "value")),
    Site("user-name", ("identity", "users", 0, "name")),
    Site("team-name", ("identity", "teams", 0, "name")),
    Site("team-namespace", ("identity", "teams", 1, "namespace")),
    Site("directory-uri", ("identity", "directory", "uri"), template="ldaps://{}"),
    Site(
        "directory-base-dn",
        ("identity", "directory", "base_dn"),
        template="dc={},dc=org",
        accepts=frozenset({"space"}),
        lands="ansible/group_vars/all/estate.yml",
    ),
    Site(
        "directory-bind-dn",
        ("identity", "directory", "bind_dn"),
        template="cn={},dc=example,dc=org",
        accepts=frozenset({"space"}),  # "cn=x y" is a DN; sssd reads the value to the line end
        lands="ansible/group_vars/all/estate.yml",
    ),
    Site("secret-name", ("identity", "directory", "bind_password", "secret")),
    Site("controller", ("slurm", "controllers", 0)),
    Site("accounting-host", ("slurm", "accounting", "host")),
    Site("database-host", ("slurm", "accounting", "database", "host")),
    Site("database-name", ("slurm", "accounting", "database", "name")),
    Site("database-user", ("slurm", "accounting", "database", "user")),
    Site("half-life", ("slurm", "scheduling", "fairshare_half_life")),
    Site("qos-name", ("slurm", "qos", 1, "name")),
    Site("partition-name", ("slurm", "partitions", 0, "name")),
    Site("partition-max-time", ("slurm", "partitions", 0, "max_time")),
    Site("partition-team", ("slurm", "partitions", 0, "teams", 0)),
    Site("slurm-option-key", ("slurm", "options"), as_key=True),
    Site(
        "slurm-option-value",
        ("slurm", "options", "SlurmctldTimeout"),
        # one word of [A-Za-z0-9_.,:/=+@%-]: odd for this key, harmless to the file
        accepts=frozenset({"equals", "comma", "parent-path", "absolute-path"}),
        lands="slurm/slurm.conf",
        fragment="\nSlurmctldTimeout={}\n",
    ),
    Site("k8s-cluster-name", ("kubernetes", "clusters", 0, "name")),
    Site("k8s-region", ("kubernetes", "clusters", 1, "region")),
    Site("gcp-project", ("kubernetes", "clusters", 1, "project")),
    Site("priority-class-name", ("kubernetes", "clusters", 0, "priority_classes", 0, "name")),
    Site("queue-cohort", ("kubernetes", "clusters", 0, "queues", "cohort")),
    Site("quota-key", ("kubernetes", "clusters", 0, "queues", "teams", 0, "quota"), as_key=True),
    Site(
        "priority-class-description",
        ("kubernetes", "clusters", 0, "priority_classes", 0, "description"),
        accepts=frozenset(FREE_TEXT_SAFE),
        lands="kubernetes/serving/tenancy.yaml",
    ),
    Site("storage-name", ("storage", 0, "name")),
    Site(
        "storage-source",
        ("storage", 0, "source"),
        template="nfs01:/export/{}",
        accepts=frozenset({"parent-path", "absolute-path"}),  # a path on the NFS server
        lands="ansible/group_vars/all/estate.yml",
    ),
    Site("storage-mount", ("storage", 0, "mount"), template="/srv/{}"),
    Site(
        "storage-option",
        ("storage", 0, "options"),
        template="{}",
        accepts=frozenset({"equals"}),  # "x=y" is an option with a value
        lands="ansible/group_vars/all/estate.yml",
    ),
    Site("storage-class", ("storage", 1, "kubernetes", "storage_class")),
    Site("observability-label-key", ("observability", "labels"), as_key=True),
    Site("observability-label-value", ("observability", "labels", "site")),
]

CASES = [(site, payload) for site in SITES for payload in PAYLOADS]


@cache
def campus() -> dict[str, Any]:
    return parse_blueprint((BLUEPRINTS / "campus.yaml").read_bytes(), "campus.yaml").data


@cache
def campus_files() -> Files:
    return render(validate_document(parse_blueprint(blueprint_bytes(campus()), "c")).estate)


def blueprint_bytes(data: dict[str, Any]) -> bytes:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True).encode()


def inject(site: Site, payload: str) -> dict[str, Any]:
    data = copy.deepcopy(campus())
    if site.name == "custom-gpu-model":  # declared, and used so that it would reach outputs
        data["gpu_models"] = [{"name": "placeholder", "memory_gb": 48}]
        data["node_pools"][2]["gpus"] = {"model": site.value(payload), "count": 1}
    *parents, last = site.path
    holder: Any = data
    for part in parents:
        holder = holder[part]
    value = site.value(payload)
    if site.as_key:
        holder[last][value] = 1 if site.name == "quota-key" else "v"
    elif site.name == "storage-option":
        holder[last] = [value]
    else:
        holder[last] = value
    return data


def key_path(parts: tuple[str | int, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def slurm_shape(content: bytes) -> list[str]:
    """The keys of each line of a Slurm file: what an injection would change."""
    shape = []
    for line in content.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        shape.append(" ".join(word.split("=", 1)[0] for word in line.split()))
    return shape


def jinja_markers(content: bytes) -> int:
    return len(re.findall(rb"\{\{|\{%|\{#", content))


@pytest.mark.parametrize(
    ("site", "payload"), CASES, ids=[f"{site.name}-{payload}" for site, payload in CASES]
)
def test_injection_is_refused_or_rendered_safely(site: Site, payload: str) -> None:
    raw = blueprint_bytes(inject(site, PAYLOADS[payload]))
    try:
        validated = validate_document(parse_blueprint(raw, "bp.yaml"))
    except BlueprintInvalid as refused:
        assert payload not in site.accepts, f"{site.name} should accept {payload}: {refused}"
        errors = [f for f in refused.findings if f.level == "error"]
        where = key_path(site.path)
        # at the key that carries it (or inside it), with a position in the file
        assert any(f.path.startswith(where) and f.line > 0 for f in errors), [
            f.format() for f in errors
        ]
        for finding in errors:
            assert "\n" not in finding.format(), "a message must stay on one line"
        return
    assert payload in site.accepts, f"{site.name} must refuse {payload!r}"
    files = render(validated.estate)
    value = site.value(PAYLOADS[payload])
    baseline = campus_files()
    for path, output in files.items():
        assert ".." not in path.split("/")
        if path.startswith(("slurm/", "ansible/files/slurm/")) and path not in site.reshapes:
            assert slurm_shape(output.content) == slurm_shape(baseline[path].content), path
        if path.endswith((".yml", ".yaml")):
            list(yaml.load_all(output.content, Loader=yaml.CSafeLoader))
        if path.endswith(".json"):
            json.loads(output.content)
        if path.startswith("ansible/") and path in baseline:
            # Ansible templates every variable it reads: no value may bring Jinja with it
            assert jinja_markers(output.content) == jinja_markers(baseline[path].content), path
    landed = files[site.lands].content.decode()
    if site.lands.endswith(".json"):
        assert value in _strings(json.loads(landed))
    elif site.lands.endswith((".yml", ".yaml")):
        documents = list(yaml.load_all(landed, Loader=yaml.CSafeLoader))
        assert value in _strings(documents)
    else:
        assert site.fragment.format(value) in landed


def _strings(data: object) -> set[str]:
    """Every string in a parsed document, and the pieces of comma-joined ones."""
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            found |= {str(key)} | _strings(value)
    elif isinstance(data, list):
        for item in data:
            found |= _strings(item)
    elif isinstance(data, str):
        found |= {data, *data.split(",")}
    return found


def test_jinja_in_free_text_comes_out_literally() -> None:
    """Template syntax in a description is data: never evaluated, never in Ansible's vars."""
    data = copy.deepcopy(campus())
    data["description"] = "{{ 7 * 7 }} {% raw %}x{% endraw %} {# c #}"
    files = render(validate_document(parse_blueprint(blueprint_bytes(data), "bp.yaml")).estate)
    estate = json.loads(files["estate.json"].content)
    assert estate["description"] == data["description"]
    for path, output in files.items():
        if path != "estate.json":
            assert b"{{ 7 * 7 }}" not in output.content, path


# Whole files a user (or an attacker) might hand over -----------------------------------------

LAB = (BLUEPRINTS / "lab.yaml").read_bytes()


def _deep_block(levels: int) -> bytes:
    lines = [b"estate: lab", b"description:"]
    lines += [b"  " * (i + 1) + b"k%d:" % i for i in range(levels)]
    return b"\n".join(lines) + b" x\n"


def _many_hosts() -> bytes:
    pools = "".join(
        f"  - {{name: p{i}, scheduler: slurm, hosts: 'p{i}n[00001-60000]', "
        "cpu: {sockets: 1, cores_per_socket: 1}, memory_gb: 1}\n"
        for i in range(2)
    )
    return f"estate: big\nnode_pools:\n{pools}slurm: {{controllers: [c]}}\n".encode()


@dataclass(frozen=True)
class Hostile:
    name: str
    content: bytes
    exit_code: int
    message: str


HOSTILE_FILES = [
    Hostile(
        "python-object-tag",
        b"estate: !!python/object/apply:os.system ['touch /tmp/estategen-pwned']\n",
        1,
        "YAML tag '!!python/object/apply:os.system' is not allowed",
    ),
    Hostile(
        "python-name-tag",
        b"estate: lab\nx: !!python/name:os.system\n",
        1,
        "is not allowed",
    ),
    Hostile("local-tag", b"estate: !lab x\n", 1, "YAML tag '!lab' is not allowed"),
    Hostile("bool-tag-garbage", b"estate: lab\nx: !!bool maybe\n", 1, "cannot read value"),
    Hostile("int-tag-empty", b'estate: lab\nx: !!int ""\n', 1, "cannot read value"),
    Hostile("duplicate-key", LAB + b"estate: other\n", 1, "duplicate key 'estate'"),
    Hostile(
        "billion-laughs",
        b"l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + b"".join(
            b"l%d: &l%d [%s]\n" % (i, i, b", ".join([b"*l%d" % (i - 1)] * 9)) for i in range(1, 10)
        ),
        1,
        "a blueprint is limited to 250000 values (an alias bomb?)",
    ),
    Hostile("recursive-anchor", b"estate: &a [*a]\n", 1, "cannot hold cycles"),
    Hostile(
        "deep-flow-nesting",
        b"estate: lab\nx: " + b"[" * 20_000 + b"]" * 20_000 + b"\n",
        1,
        "nested deeper than the limit of 64 levels",
    ),
    Hostile(
        "deep-block-nesting", _deep_block(2_000), 1, "nested deeper than the limit of 64 levels"
    ),
    Hostile("non-utf8", LAB.replace(b"lab estate", b"lab \xe9state"), 1, "not valid UTF-8"),
    Hostile("utf16", LAB.decode().encode("utf-16"), 1, "not valid UTF-8"),
    Hostile("nul-byte", LAB + b"\x00", 1, "NUL character"),
    Hostile("bom-is-fine", b"\xef\xbb\xbf" + LAB, 0, "valid estate 'lab'"),
    Hostile("huge-int", LAB.replace(b"uid: 10001", b"uid: " + b"9" * 5000), 1, "uid"),
    Hostile("huge-float", LAB.replace(b"memory_gb: 512", b"memory_gb: 1.0e999"), 1, "memory_gb"),
    Hostile("negative-count", LAB.replace(b"count: 4", b"count: -4"), 1, "below the minimum"),
    Hostile("port-out-of-range", LAB + b"  node_exporter: {port: 99999}\n", 1, "port"),
    Hostile(
        "hostlist-typo",
        LAB.replace(b"lab-gpu-[01-02]", b"lab-gpu-[01-99999999]"),
        1,
        "above the limit of 65536",
    ),
    Hostile("estate-too-many-hosts", _many_hosts(), 1, "above the estate limit of 100000"),
    Hostile(
        "megabyte-value",
        LAB.replace(b"tier: inference", b"tier: " + b"a" * 1_000_000),
        1,
        "... (1000000 characters) is not a valid Kubernetes label value",
    ),
    Hostile("name-that-is-a-path", LAB.replace(b"estate: lab", b"estate: ../x"), 1, "name"),
    Hostile(
        "too-large",
        b"estate: lab\ndescription: x\n" + b"#" * (16 * 1024 * 1024),
        2,
        "above the blueprint size limit",
    ),
]


def estategen(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of ``estategen ARGS`` run in this process: ``cli.main``
    is the command's whole path from its arguments to its exit code (the console script only
    adds the interpreter around it, whose exit codes tests/test_invalid_corpus.py checks)."""
    code = cli.main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", HOSTILE_FILES, ids=[h.name for h in HOSTILE_FILES])
def test_hostile_file_is_refused_without_writing_anything(
    case: Hostile,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blueprint = tmp_path / "blueprint.yaml"
    blueprint.write_bytes(case.content)
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = estategen(capsys, "render", blueprint, "-o", tmp_path / "out")
    output = stdout + stderr
    assert code == case.exit_code, output[-2000:]
    assert "internal error" not in output
    assert max(map(len, output.splitlines()), default=0) < 500, "messages cut long values"
    if case.exit_code:
        assert case.message in output, output[-2000:]
        assert sorted(os.listdir(tmp_path)) == ["blueprint.yaml"]
    else:
        assert sorted(os.listdir(tmp_path)) == ["blueprint.yaml", "out"]
        assert case.message in estategen(capsys, "validate", blueprint)[1]
    assert not Path("/tmp/estategen-pwned").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp, "is a directory"),
        (lambda tmp: tmp / "missing.yaml", "no such file"),
        (lambda tmp: tmp / "missing" / "deeper.yaml", "no such file"),
    ],
    ids=["directory", "missing-file", "missing-folder"],
)
def test_a_path_that_is_not_a_file_is_a_usage_error(
    make: Callable[[Path], Path], message: str, tmp_path: Path
) -> None:
    result = run_cli("render", make(tmp_path), "-o", tmp_path / "out")
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_default_output_folder_stays_under_build(tmp_path: Path) -> None:
    """With no -o the output goes to build/<estate>, and the estate name cannot climb out."""
    blueprint = tmp_path / "work" / "bp.yaml"
    blueprint.parent.mkdir()
    blueprint.write_bytes(LAB)
    result = run_cli("render", blueprint, cwd=blueprint.parent)
    assert result.returncode == 0, result.stderr
    written = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert all(p.startswith("work/build/lab/") or p == "work/bp.yaml" for p in written)


@pytest.mark.parametrize(
    ("mount", "message"),
    [
        ("/", "would hide the system's own files"),
        ("/etc", "would hide the system's own files"),
        ("/usr", "would hide the system's own files"),
        ("/srv/../etc", "must be a plain absolute path"),
        ("/home/", "must be a plain absolute path"),
        ("/./home", "must be a plain absolute path"),
    ],
)
def test_a_mount_point_cannot_hide_the_system_or_alias_another(mount: str, message: str) -> None:
    """Every host mounts what the blueprint says where it says: never over /, /etc or /usr,
    and `/home/` is not a second spelling of `/home` that the duplicate check would miss."""
    data = copy.deepcopy(campus())
    data["storage"][1]["mount"] = mount
    with pytest.raises(BlueprintInvalid) as refused:
        validate_document(parse_blueprint(blueprint_bytes(data), "bp.yaml"))
    (finding,) = refused.value.findings
    assert finding.path == "storage[1].mount"
    assert message in finding.message


def test_a_nested_mount_point_is_fine() -> None:
    data = copy.deepcopy(campus())
    data["storage"][1]["mount"] = "/srv/scratch.fast/v2"
    validate_document(parse_blueprint(blueprint_bytes(data), "bp.yaml"))
