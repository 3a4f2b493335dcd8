"""Every string the YAML writers write reads back as the same string to every reader it meets.

Ansible reads our YAML as YAML 1.1 (PyYAML); Kubernetes reads it with go-yaml (kubectl through
sigs.k8s.io/yaml, kustomize through kyaml), which takes `08`, `1e3`, `0o17`, `0X1F` and `y` for
numbers and booleans; YAML 1.2's core schema reads `08`, `1e3` and `.5` as numbers too. A label
`rack: 08` written plain becomes `rack: 8` after `kubectl kustomize`. Each string is read back
by PyYAML, by a YAML 1.2 core-schema reader written here from the specification, and in batches
by kubectl kustomize itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from estategen import yamltext
from estategen.load import parse_blueprint
from estategen.pipeline import validate_document
from estategen.render import render

from conftest import BLUEPRINTS

# --- a YAML 1.2 reader: PyYAML's composer for the structure, the core schema for plain scalars

# YAML 1.2.2, 10.3.2 "Tag Resolution" of the core schema: a plain scalar matching one of these
# is not a string (the empty plain scalar is null as well).
CORE_SCHEMA = [
    ("null", r"null|Null|NULL|~"),
    ("bool", r"true|True|TRUE|false|False|FALSE"),
    ("int", r"[-+]?[0-9]+"),
    ("int", r"0o[0-7]+"),
    ("int", r"0x[0-9a-fA-F]+"),
    ("float", r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"),
    ("float", r"[-+]?\.(inf|Inf|INF)"),
    ("float", r"\.(nan|NaN|NAN)"),
]
_CORE = [(tag, re.compile(pattern)) for tag, pattern in CORE_SCHEMA]


class NotAString(tuple[str, str]):
    """A plain scalar the core schema resolves to another type: (tag, text)."""


def _core_tag(text: str) -> str | None:
    if text == "":
        return "null"
    return next((tag for tag, pattern in _CORE if pattern.fullmatch(text)), None)


def _construct_12(node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return {_construct_12(key): _construct_12(value) for key, value in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_construct_12(item) for item in node.value]
    assert isinstance(node, yaml.ScalarNode)
    if node.style is None:  # plain: the schema decides
        tag = _core_tag(node.value)
        if tag is not None:
            return NotAString((tag, node.value))
    return node.value


def read_yaml_12(text: str) -> Any:
    """``text`` as a YAML 1.2 core-schema reader reads it, strings only: a plain scalar the
    schema gives another type comes back as a :class:`NotAString`."""
    return _construct_12(yaml.compose(text, Loader=yaml.SafeLoader))


def test_the_core_schema_reader_reads_what_the_specification_says() -> None:
    doc = "a: 08\nb: '08'\nc: 1e3\nd: .inf\ne: y\nf: 0o17\ng: ~\nh: \"1e3\"\ni: 0X1F\n"
    assert read_yaml_12(doc) == {
        "a": ("int", "08"),
        "b": "08",
        "c": ("float", "1e3"),
        "d": ("float", ".inf"),
        "e": "y",  # a string in YAML 1.2
        "f": ("int", "0o17"),
        "g": ("null", "~"),
        "h": "1e3",
        "i": "0X1F",  # the core schema's hexadecimal is 0x only (go-yaml's is not)
    }


# --- strings from the grammars' edges -------------------------------------------------------

EDGES = [
    *("08", "09", "0089", "007", "0", "-0", "+1", "1_000", "0_8", "-_1", "1__0", "1_"),
    *("1e3", "1E3", "1e+3", "1e-3", "1.5e3", "1.5E+3", "-1.5e-3", ".5e3", "1.", "0.", "1.2.3"),
    *("0o17", "0O17", "0x1F", "0X1F", "0b1", "0B1", "-0x1f", "+0b10", "0x_1F", "0o", "0x", "0b"),
    *(".5", "+.5", "-.5", ".", "+", "-", "e3", "1e", "._5", ".5_0"),
    *("1:20", "190:20:30", "-1:20", "1:2:3.5", "12:60"),
    *("y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "OFF"),
    *("true", "True", "TRUE", "false", "False", "FALSE", "tRUE", "yEs", "o", "nO"),
    *("~", "null", "Null", "NULL", "nULL", "", " "),
    *(".inf", ".Inf", ".INF", "-.inf", "+.INF", ".nan", ".NaN", ".NAN", "inf", "nan", "+inf"),
    *("=", "<<", "<", "-<<", "!", "&a", "*a", "%", "@", "`"),
    *("2024-01-01", "2024-1-2", "2024-1-2T3:4:5Z", "2001-12-14 21:59:43.10", "2024-01-01T00:00"),
    *("2001-12-14t21:59:43.10-05:00", "2024-1-2 3:4:5", "20240101", "2024-01"),
    *("10.0.0.1", "1.31", "v1.31", "a100", "lab-k8s", "inference", "nfs01:/export", "x: y"),
]
# pieces the grammars are made of, in any order
PIECES = st.sampled_from(
    [
        *"0123456789_.+-eExXoObB:TZ",
        *("inf", "nan", "0x", "0o", "0b", "e+", "e-", "1_0", "2024-", " "),
    ]
)
GRAMMAR = st.lists(PIECES, min_size=1, max_size=8).map("".join)
# what Go's ParseInt(s, 0, 64), the core schema's numbers and go-yaml's timestamps accept
FORMS = st.one_of(
    st.from_regex(r"[-+]?0[xXoObB][0-9a-fA-F_]{1,6}", fullmatch=True),
    st.from_regex(r"[-+]?[0-9_]{0,4}\.?[0-9_]{0,4}([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(
        r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{0,3})?"
        r"(Z|[-+][0-9]{1,2}:[0-9]{2})?)?",
        fullmatch=True,
    ),
    st.from_regex(r"[yYnNoOtTfF][a-zA-Z]{0,4}", fullmatch=True),
)
STRINGS = st.sampled_from(EDGES) | GRAMMAR | FORMS | st.text(max_size=12)


def _written(data: Any) -> dict[str, str]:
    """``data`` through each writer: block (Ansible variables), manifest, and PyYAML's
    emitter, which both block writers hand a document they do not write (a float in it
    here)."""
    fallback = {"ratio": 0.5, **data}
    return {
        "block": yamltext.block(data),
        "manifest": yamltext.manifest(data),
        "pyyaml-block": yamltext.block(fallback),
        "pyyaml-manifest": yamltext.manifest(fallback),
    }


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(STRINGS)
@example("08")
@example("1e3")
@example("y")
@example("0X1F")
@example("+.5")
@example("2024-1-2T3:4:5Z")
def test_every_string_reads_back_as_itself_in_yaml_1_1_and_1_2(text: str) -> None:
    data = {"value": text, "list": [text, {text: text}]}
    for writer, written in _written(data).items():
        for reader, read in (("YAML 1.1", yaml.safe_load), ("YAML 1.2", read_yaml_12)):
            back = read(written)
            back.pop("ratio", None)
            assert back == data, (writer, reader, written)


# --- kubectl kustomize, go-yaml's reading ---------------------------------------------------


def _kustomize(folder: Path) -> str:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian kubernetes-client) is missing: run scripts/test.sh"
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    return built.stdout


def _overflows(text: str) -> bool:
    """A number beyond float64 (1E400): go-yaml fails to parse it and keeps the string, which
    kustomize then writes back plain, where YAML 1.2 (our reader of its output) would read a
    float. Our writer quotes it; kustomize's own output is not ours to judge."""
    try:
        return float(text.replace("_", "")) in (float("inf"), float("-inf"))
    except ValueError:
        return False


def _config_map_labels(texts: list[str], folder: Path) -> dict[str, Any]:
    """``texts`` as the labels of a ConfigMap written by the manifest writer, after kubectl
    kustomize, which writes back what go-yaml read: a number where it read one, in Go's
    spelling (08 as 8, 0X1F as 31) and plain. Its output is read by the YAML 1.2 reader above
    (the labels as text; a plain number comes back as NotAString)."""
    labels = {f"k{i}": text for i, text in enumerate(texts)}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    config_map["metadata"]["labels"] = labels  # type: ignore[index]
    (folder / "cm.yaml").write_text(yamltext.manifest(config_map))
    (folder / "kustomization.yaml").write_text("resources:\n- cm.yaml\n")
    built: dict[str, Any] = read_yaml_12(_kustomize(folder))
    return built["metadata"].get("labels", {})


def test_kustomize_keeps_every_edge_string_a_string(tmp_path: Path) -> None:
    texts = [text for text in EDGES if text.strip()]
    labels = _config_map_labels(texts, tmp_path)
    changed = {text: labels[f"k{i}"] for i, text in enumerate(texts) if labels[f"k{i}"] != text}
    assert not changed


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(GRAMMAR | FORMS, min_size=1, max_size=40))
def test_kustomize_keeps_generated_strings_strings(texts: list[str], tmp_path: Path) -> None:
    # one kubectl run per batch of strings; surrounding blanks are trimmed by neither reader,
    # but keep the batch to one-line strings kustomize does not reflow
    texts = [text for text in texts if text.strip() == text and text and not _overflows(text)]
    if not texts:
        return
    labels = _config_map_labels(texts, tmp_path)
    assert [labels[f"k{i}"] for i in range(len(texts))] == texts


def test_a_blueprints_labels_stay_strings_through_kubectl_kustomize(tmp_path: Path) -> None:
    text = (BLUEPRINTS / "lab.yaml").read_text()
    labels = '    labels: {tier: inference, rack: "08", zone: "1e3", flag: "y"}'
    text = text.replace("    labels: {tier: inference}", labels)
    assert labels in text
    estate = validate_document(parse_blueprint(text.encode(), "lab.yaml")).estate
    for path, output in render(estate).items():
        if path.startswith("kubernetes/lab-k8s/"):
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(output.content)
    # nodes.yaml is in no kustomization the render writes; one listing it reads it as kubectl
    folder = tmp_path / "kubernetes" / "lab-k8s"
    (folder / "kustomization.yaml").write_text("resources: [nodes.yaml]\n")
    nodes = [obj for obj in yaml.safe_load_all(_kustomize(folder)) if obj and obj["kind"] == "Node"]
    assert nodes
    for node in nodes:
        node_labels = node["metadata"]["labels"]
        assert (node_labels["rack"], node_labels["zone"], node_labels["flag"]) == ("08", "1e3", "y")


@pytest.mark.parametrize("text", ["08", "1e3", "y", "0o17", "0X1F", "+.5", "2024-1-2T3:4:5Z"])
def test_the_strings_other_readers_take_for_numbers_are_single_quoted(text: str) -> None:
    assert yamltext.manifest({"k": text}) == f"k: '{text}'\n"
    assert yamltext.block({text: [text]}) == f"'{text}':\n  - '{text}'\n"
