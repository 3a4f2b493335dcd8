"""Specification of Slurm-style hostlist expansion and compression."""

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estategen.hostlist import MAX_EXPANSION, HostlistError, compress, count, expand

HOSTNAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


# --- expand -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("login1", ["login1"]),
        ("gpu-[001-003]", ["gpu-001", "gpu-002", "gpu-003"]),
        ("n[8-12]", ["n8", "n9", "n10", "n11", "n12"]),
        ("n[08-12]", ["n08", "n09", "n10", "n11", "n12"]),
        ("n[007]", ["n007"]),
        ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
        ("[1-2]x", ["1x", "2x"]),
    ],
)
def test_expand_keeps_zero_padding_of_lo(expression: str, names: list[str]) -> None:
    assert expand(expression) == names


def test_several_brackets_form_cartesian_product_leftmost_slowest() -> None:
    assert expand("r[1-2]n[01-03]") == ["r1n01", "r1n02", "r1n03", "r2n01", "r2n02", "r2n03"]


def test_commas_inside_brackets_belong_to_the_bracket() -> None:
    assert expand("gpu-[01-02,07],login1") == ["gpu-01", "gpu-02", "gpu-07", "login1"]


def test_names_keep_order_of_appearance() -> None:
    assert expand("b1,a[3,1]") == ["b1", "a3", "a1"]


def test_every_expanded_name_is_a_valid_hostname() -> None:
    assert all(HOSTNAME.fullmatch(name) for name in expand("r[1-3]-n[001-100],login"))


# --- count and the expansion limit ------------------------------------------


@pytest.mark.parametrize("expression", ["a", "n[1-10]", "r[1-2]n[01-03],login", "n[1-3,5,7-9]"])
def test_count_equals_length_of_expansion(expression: str) -> None:
    assert count(expression) == len(expand(expression))


def test_count_of_huge_expression_is_instant() -> None:
    started = time.monotonic()
    assert count("n[000000-999999]m[000000-999999]") == 10**12
    assert time.monotonic() - started < 1


def test_expand_refuses_huge_expression_naming_count_and_limit() -> None:
    expected = rf"expands to 1000000000000 names, above the limit of {MAX_EXPANSION}"
    with pytest.raises(HostlistError, match=expected):
        expand("n[000000-999999]m[000000-999999]")


def test_expand_refuses_one_over_a_custom_limit() -> None:
    assert len(expand("n[1-10]", limit=10)) == 10
    with pytest.raises(HostlistError, match="expands to 10 names, above the limit of 9"):
        expand("n[1-10]", limit=9)


# --- syntax errors ------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("a,,b", "empty item in hostlist 'a,,b'"),
        ("a,", "empty item"),
        ("n[1-3", "never closed"),
        ("n1-3]", "no matching '\\['"),
        ("n[[1-3]]", "nested '\\['"),
        ("n[1-2]]", "no matching '\\['"),
        ("n[]", "empty brackets"),
        ("n[1,,2]", "empty element"),
        ("n[a-c]", "'a-c' in 'n\\[a-c\\]' is not a number"),
        ("n[1-c]", "'1-c' .* is not a number"),
        ("n[3-1]", "range '3-1' .* runs backwards"),
        ("n[1-2-3]", "malformed range '1-2-3'"),
        ("n[-3]", "malformed range '-3'"),
        ("n[0-1234567890]", "'1234567890' .* too large"),
        ("-n[1-2]", "start with '-'"),
        ("n[1-2]-", "end with '-'"),
        ("a" * 62 + "[1-10]", "up to 64 characters"),
    ],
)
def test_syntax_errors_are_refused_with_a_clear_message(expression: str, message: str) -> None:
    with pytest.raises(HostlistError, match=message):
        count(expression)


def test_count_and_expand_refuse_the_same_syntax_errors() -> None:
    with pytest.raises(HostlistError, match="runs backwards"):
        expand("n[3-1]")


def test_hostlist_error_is_a_value_error() -> None:
    assert issubclass(HostlistError, ValueError)


# --- invalid characters -------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "character"),
    [
        ("gpu 1", "space"),
        ("gpu1\n", "newline"),
        ("gpu\t1", "tab"),
        ("Gpu1", "'G'"),
        ("gpu1.example.com", "'.'"),
        ("a=b", "'='"),
        ("a#1", "'#'"),
        ('a"b', "'\"'"),
        ("a'b", '"\'"'),
        ("a_b", "'_'"),
        ("n[1 -2]", "space"),
    ],
)
def test_invalid_characters_are_named_in_one_line(expression: str, character: str) -> None:
    with pytest.raises(HostlistError) as caught:
        expand(expression)
    message = str(caught.value)
    assert f"character {character}" in message
    assert "not allowed" in message
    assert "\n" not in message


def test_bad_character_is_reported_before_any_expansion() -> None:
    with pytest.raises(HostlistError, match="character 'X'"):
        expand("X[000000000-999999999][000000000-999999999]", limit=10**30)


# --- compress -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "compressed"),
    [
        (["gpu-001", "gpu-002", "gpu-003"], "gpu-[001-003]"),
        (["gpu-007", "gpu-001", "gpu-004", "gpu-003", "gpu-002"], "gpu-[001-004,007]"),
        (["gpu-007"], "gpu-007"),
        (["n1", "n2", "n01", "n02"], "n[1-2],n[01-02]"),
        (["n08", "n09", "n10", "n11"], "n[08-11]"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["gpu2", "cpu1", "gpu1"], "cpu1,gpu[1-2]"),
        (["login", "admin"], "admin,login"),
        (["login", "login1", "login2"], "login,login[1-2]"),
        (["n1", "n1", "n2"], "n[1-2]"),
        (["r1n1", "r1n2", "r2n1"], "r1n[1-2],r2n1"),
        (["n1-ib", "n2-ib", "n3"], "n3,n[1-2]-ib"),
        ([], ""),
    ],
)
def test_compress(names: list[str], compressed: str) -> None:
    assert compress(names) == compressed


@pytest.mark.parametrize(
    "expression", ["gpu-[001-128]", "n[08-12]", "gpu-[001-004,007]", "cpu1,gpu[1-2],login"]
)
def test_compress_of_expand_gives_back_canonical_expression(expression: str) -> None:
    assert compress(expand(expression)) == expression


def test_compress_refuses_names_that_could_not_be_expanded_back() -> None:
    with pytest.raises(HostlistError, match="'gpu\\[1\\]'"):
        compress(["gpu[1]"])


names_strategy = st.sets(
    st.builds(
        lambda prefix, number, pad, suffix: f"{prefix}{str(number).zfill(pad)}{suffix}",
        st.sampled_from(["gpu-", "cpu", "n", "r1n", "a1", ""]),
        st.integers(min_value=0, max_value=1200),
        st.integers(min_value=0, max_value=4),
        st.sampled_from(["", "-ib", "x"]),
    )
    | st.sampled_from(["login", "admin", "login-a"]),
    max_size=60,
)


@given(names_strategy)
def test_expand_of_compress_round_trips_any_set_of_names(names: set[str]) -> None:
    compressed = compress(names)
    assert (set(expand(compressed)) if compressed else set()) == names


@given(
    st.sampled_from(["gpu-", "cpu", "n", "r1n", "a1", ""]),
    st.integers(min_value=0, max_value=1200),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=0, max_value=4),
    st.sampled_from(["", "-ib", "x"]),
)
def test_a_range_in_order_compresses_as_the_same_names_in_any_order(
    prefix: str, lo: int, size: int, pad: int, suffix: str
) -> None:
    """Names that are one range in order are written out and compared instead of grouped
    (hostlist._one_range); reversed, they take the grouping: both give the same text."""
    names = [f"{prefix}{str(n).zfill(pad)}{suffix}" for n in range(lo, lo + size)]
    assert compress(names) == compress(list(reversed(names)))
    assert set(expand(compress(names))) == set(names)


def test_a_range_with_a_bad_end_name_is_refused() -> None:
    with pytest.raises(HostlistError, match="'gpu\\[2\\]'"):
        compress(["gpu1", "gpu[2]"])


@given(
    st.sampled_from(["gpu-", "n", "r1n", ""]),
    st.lists(
        st.tuples(st.integers(0, 300), st.integers(0, 20), st.integers(0, 4)),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(["", "-ib", "x"]),
)
def test_one_bracket_expands_as_each_number_padded_in_turn(
    prefix: str, spans: list[tuple[int, int, int]], suffix: str
) -> None:
    """prefix[lo-hi,...]suffix names each number in turn, zero-padded to the width its low
    end is spelt with."""
    inner = ",".join(
        f"{str(lo).zfill(pad)}-{str(lo + size).zfill(pad)}" if size else str(lo).zfill(pad)
        for lo, size, pad in spans
    )
    expression = f"{prefix}[{inner}]{suffix}"
    expected = [
        f"{prefix}{str(n).zfill(len(str(lo).zfill(pad)))}{suffix}"
        for lo, size, pad in spans
        for n in range(lo, lo + size + 1)
    ]
    assert expand(expression) == expected
