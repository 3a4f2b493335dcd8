"""estategen.memo: once per run and per argument objects, never outside a run."""

from __future__ import annotations

from typing import Any

import pytest

from estategen import memo

calls: list[tuple[Any, ...]] = []


@memo.by_identity
def derived(a: object, b: object) -> list[object]:
    calls.append((a, b))
    return [a, b]


@pytest.fixture(autouse=True)
def fresh() -> None:
    calls.clear()


def test_within_a_run_each_argument_pair_is_computed_once() -> None:
    a, b = object(), object()
    with memo.run():
        first = derived(a, b)
        assert derived(a, b) is first
        assert derived(b, a) is not first  # other arguments, another result
    assert calls == [(a, b), (b, a)]


def test_equal_but_distinct_arguments_are_other_keys() -> None:
    with memo.run():
        derived([1], [2])
        derived([1], [2])
    assert len(calls) == 2


def test_outside_a_run_nothing_is_kept() -> None:
    a, b = object(), object()
    assert derived(a, b) is not derived(a, b)
    with memo.run():
        inside = derived(a, b)
    assert derived(a, b) is not inside
    with memo.run():  # a new run starts empty
        assert derived(a, b) is not inside
    assert len(calls) == 5


def test_a_failure_is_not_remembered() -> None:
    attempts: list[int] = []

    @memo.by_identity
    def failing(a: object) -> None:
        attempts.append(1)
        raise ValueError("no")

    key = object()
    with memo.run():
        for _ in range(2):
            with pytest.raises(ValueError):
                failing(key)
    assert len(attempts) == 2
