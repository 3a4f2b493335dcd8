"""The loader: positions for every key and item, and one clear refusal per hostile input."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from estategen import limits, load, pipeline
from estategen.errors import BlueprintInvalid, Finding
from estategen.load import MAX_DEPTH, parse_blueprint
from estategen.schema.validation import normalise

ROOT = Path(__file__).resolve().parent.parent


def refused(raw: bytes) -> Finding:
    with pytest.raises(BlueprintInvalid) as caught:
        parse_blueprint(raw, "bp.yaml")
    (finding,) = caught.value.findings
    return finding


def refusal(raw: bytes) -> str:
    """The refusal's line, without its rule id (test_each_refusal_names_its_rule checks it)."""
    return replace(refused(raw), rule="").format()


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        (b"estate: a\nestate: b\n", "load/duplicate-key"),
        (b"estate: [a\n", "load/yaml-syntax"),
        (b"\xff\xfe", "load/encoding"),
        (b"estate: a\x00\n", "load/encoding"),
        (b"", "load/empty"),
        (b"- a\n", "load/top-level"),
        (b"estate: !!python/object:os.system a\n", "load/tag"),
        (b"a: &x {b: 1}\nc: {<<: *x}\n", "load/alias"),
        (b"? [a]\n: b\n", "load/key-type"),
        (b"estate: !!int x\n", "load/value"),
        ("estate: x # a\u2028b: 1\n".encode(), "load/line-break"),
        (b"x: &a {y: *a}\n", "load/alias"),
    ],
)
def test_each_refusal_names_its_rule(raw: bytes, rule: str) -> None:
    assert refused(raw).rule == rule


def test_positions_are_recorded_for_keys_and_list_items() -> None:
    doc = parse_blueprint(b"estate: x\nnode_pools:\n  - name: a\n    hosts: n1\n", "bp.yaml")
    assert doc.positions["estate"] == (1, 1)
    assert doc.positions["node_pools[0]"] == (3, 5)
    assert doc.positions["node_pools[0].hosts"] == (4, 5)


def test_times_stay_strings_and_only_true_false_are_booleans() -> None:
    doc = parse_blueprint(b"a: 8:00:00\nb: NO\nc: yes\nd: true\ne: 2024-01-01\n", "bp.yaml")
    assert doc.data == {"a": "8:00:00", "b": "NO", "c": "yes", "d": True, "e": "2024-01-01"}


def test_a_byte_order_mark_is_accepted() -> None:
    assert parse_blueprint(b"\xef\xbb\xbfestate: x\n", "bp.yaml").data == {"estate": "x"}


def test_duplicate_keys_are_refused_at_the_second_one() -> None:
    assert refusal(b"estate: a\nestate: b\n") == (
        "bp.yaml:2:1: estate: duplicate key 'estate' (first written at line 1); "
        "each key may appear once"
    )


def test_non_string_keys_are_refused() -> None:
    assert "key '1' is not a string" in refusal(b"1: x\n")


@pytest.mark.parametrize(
    "raw",
    [b"!!python/object/apply:os.system ['true']\n", b"a: !!python/name:os.system\n", b"a: !x 1\n"],
)
def test_tags_that_construct_objects_are_refused(raw: bytes) -> None:
    assert "is not allowed" in refusal(raw)


def test_alias_bombs_are_bounded() -> None:
    lines = [b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        refs = b", ".join([b"*a%d" % (level - 1)] * 10)
        lines.append(b"a%d: &a%d [%s]" % (level, level, refs))
    assert "expands to more than" in refusal(b"\n".join(lines) + b"\n")


def test_nesting_is_bounded() -> None:
    deep = b"a: " + b"[" * 20_000 + b"]" * 20_000 + b"\n"
    assert f"nested deeper than the limit of {MAX_DEPTH}" in refusal(deep)


def test_non_utf8_is_refused_with_its_position() -> None:
    assert refusal(b"estate: x\ndescription: caf\xe9\n").startswith("bp.yaml:2:17: not valid UTF-8")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "the blueprint is empty"),
        (b"- a\n", "must be a mapping"),
        (b"a: 1\n---\nb: 2\n", "several YAML documents"),
        (b"a: [\n", "YAML syntax"),
        (b"a: {s: leaf-[01-04]}\n", "quote values holding brackets"),
        (b"a: 1\x00\n", "NUL character"),
        (b"<<: {a: 1}\n", "merge keys"),
    ],
)
def test_malformed_documents_get_one_clear_message(raw: bytes, message: str) -> None:
    assert message in refusal(raw)


# --- size limits: refused before the work they bound -------------------------------------


def test_more_values_than_the_limit_are_refused_before_any_node_graph_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(self: object) -> None:
        raise AssertionError("the composer ran on an oversized blueprint")

    monkeypatch.setattr(load._Loader, "get_single_node", never)
    raw = b"estate: x\nx: [" + b"0," * limits.MAX_VALUES + b"0]\n"
    # the mapping, `estate`, `x`, `x:` and the list come first: the item over the limit is the
    # list's (MAX_VALUES - 4)th, at column 5 + 2 * (MAX_VALUES - 5)
    assert refusal(raw) == (
        f"bp.yaml:2:{2 * limits.MAX_VALUES - 5}: holds more than {limits.MAX_VALUES} "
        f"values (keys, values and list items); a blueprint is limited to {limits.MAX_VALUES}"
    )


def test_a_blueprint_just_under_the_value_limit_loads() -> None:
    count = limits.MAX_VALUES - 5  # the mapping, `estate`, `x`, `x:` and the list
    doc = parse_blueprint(b"estate: x\nx: [" + b"0," * (count - 1) + b"0]\n", "bp.yaml")
    assert len(doc.data["x"]) == count


def test_aliases_that_expand_beyond_the_value_limit_are_refused() -> None:
    anchor = b"[" + b"0," * 999 + b"0]"
    copies = limits.MAX_VALUES // 1000
    raw = b"estate: x\na: &a " + anchor + b"\nb: [" + b", ".join([b"*a"] * copies) + b"]\n"
    assert f"a blueprint is limited to {limits.MAX_VALUES} values" in refusal(raw)


@pytest.mark.parametrize(
    ("path", "limit", "what"),
    [
        ("node_pools", limits.MAX_POOLS, "node pools"),
        ("slurm.partitions", limits.MAX_PARTITIONS, "partitions"),
        ("identity.teams", limits.MAX_TEAMS, "teams"),
        ("identity.users", limits.MAX_USERS, "users"),
    ],
)
def test_lists_whose_items_each_become_output_are_bounded(path: str, limit: int, what: str) -> None:
    outer, _, inner = path.rpartition(".")
    items = b", ".join([b"*item"] * limit)
    listed = b"%s: [&item {name: a}, %s]" % (inner.encode(), items)
    raw = b"estate: x\n" + (b"%s:\n  %s\n" % (outer.encode(), listed) if outer else listed + b"\n")
    line, column = (3, 3 + len(inner) + 2) if outer else (2, len(inner) + 3)
    assert refusal(raw) == (
        f"bp.yaml:{line}:{column}: {path}: {limit + 1} {what}, above the limit of {limit}"
    )


def _users_with_a_bad_uid(count: int) -> bytes:
    users = b"".join(b"    - {name: u%05d, uid: 1}\n" % i for i in range(count))
    return b"estate: lab\nidentity:\n  users:\n" + users


def test_findings_beyond_the_limit_are_counted_in_one_closing_finding() -> None:
    count = limits.MAX_FINDINGS + 500
    document = parse_blueprint(_users_with_a_bad_uid(count), "bp.yaml")
    with pytest.raises(BlueprintInvalid) as caught:
        pipeline.validate_document(document)
    findings = caught.value.findings
    assert len(findings) == limits.MAX_FINDINGS + 1
    # `node_pools` is missing (at 1:1), then each user's uid in file order
    assert [f.path for f in findings[:3]] == [
        "node_pools",
        "identity.users[0].uid",
        "identity.users[1].uid",
    ]
    assert findings[-1].format() == (
        f"bp.yaml:{3 + limits.MAX_FINDINGS - 1}:22: 501 more findings (501 errors) not listed; "
        f"at most {limits.MAX_FINDINGS} are [estategen/more-findings]"
    )


def test_many_items_breaking_one_rule_cost_the_schema_no_quadratic_sorting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cerberus import errors as cerberus_errors

    compared = 0
    less_than = cerberus_errors.ValidationError.__lt__

    def counted(self: object, other: object) -> bool:
        nonlocal compared
        compared += 1
        return bool(less_than(self, other))

    monkeypatch.setattr(cerberus_errors.ValidationError, "__lt__", counted)
    count = 2_000
    document = parse_blueprint(_users_with_a_bad_uid(count), "bp.yaml")
    _, problems = normalise(document.data)
    assert sum(p.path.endswith(".uid") for p in problems) == count
    # re-sorting every error list on each addition took count**2 / 2 (2,000,000) comparisons
    assert compared < 20 * count


def test_the_100k_gpu_benchmark_estate_is_within_every_limit_with_headroom() -> None:
    sys.path.insert(0, str(ROOT / "blueprints"))
    try:
        import large
    finally:
        sys.path.remove(str(ROOT / "blueprints"))
    text = large.blueprint()
    events = yaml.parse(text, Loader=yaml.CSafeLoader)
    values = sum(isinstance(e, load._VALUE_EVENTS) for e in events)
    data = parse_blueprint(text.encode(), "large.yaml").data
    sizes = {
        "values": (values, limits.MAX_VALUES),
        "node pools": (len(data["node_pools"]), limits.MAX_POOLS),
        "partitions": (len(data["slurm"]["partitions"]), limits.MAX_PARTITIONS),
        "teams": (len(data["identity"]["teams"]), limits.MAX_TEAMS),
        "users": (len(data["identity"]["users"]), limits.MAX_USERS),
    }
    assert {what: size * 4 <= limit for what, (size, limit) in sizes.items()} == dict.fromkeys(
        sizes, True
    ), sizes
    pipeline.validate_document(parse_blueprint(text.encode(), "large.yaml"))


def test_a_hidden_line_break_is_refused_at_its_line_and_column_and_named() -> None:
    # after a CRLF line ending (an ordinary one), in a comment
    finding = refused("estate: x\r\nk: 1 # note\u2029y: 2\r\n".encode())
    assert (finding.line, finding.column, finding.rule) == (2, 12, "load/line-break")
    assert "U+2029 PARAGRAPH SEPARATOR" in finding.message


def test_crlf_line_endings_load_as_line_feeds_do() -> None:
    text = b"estate: x\nnode_pools:\n  - name: a\n    hosts: n1\n"
    lf = parse_blueprint(text, "bp.yaml")
    crlf = parse_blueprint(text.replace(b"\n", b"\r\n"), "bp.yaml")
    assert (crlf.data, crlf.positions) == (lf.data, lf.positions)


def test_an_alias_inside_its_own_anchor_is_refused_at_the_alias_without_expanding_it() -> None:
    finding = refused(b"estate: x\nteams:\n  - &t {name: a, also: [*t]}\n")
    assert (finding.line, finding.column, finding.path) == (3, 25, "teams[0].also[0]")
    assert "alias *t stands inside the value its anchor &t names" in finding.message
