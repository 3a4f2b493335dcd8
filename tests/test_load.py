"""The loader: positions for every key and item, and one clear refusal per hostile input."""

from __future__ import annotations

import pytest

from estategen.errors import BlueprintInvalid
from estategen.load import MAX_DEPTH, parse_blueprint


def refusal(raw: bytes) -> str:
    with pytest.raises(BlueprintInvalid) as caught:
        parse_blueprint(raw, "bp.yaml")
    (finding,) = caught.value.findings
    return finding.format()


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
