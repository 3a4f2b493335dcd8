"""Records behave as ``@dataclass`` makes them: built, compared, hashed, ordered and printed.

:class:`estategen.record.Record` compiles only each class's ``__init__`` and writes the other
methods once. Every record reachable from the examples' estates, reports and renders is checked
against a twin that ``dataclasses.make_dataclass`` builds with the same fields and flags.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import estategen
from estategen.errors import Finding
from estategen.load import read_blueprint
from estategen.pipeline import validate_document
from estategen.record import FrozenRecordError, Record, as_dict, field, fields, replace
from estategen.render import render
from estategen.report.facts import build

from conftest import BLUEPRINTS


def every_record_class() -> list[type[Record]]:
    for module in pkgutil.walk_packages(estategen.__path__, "estategen."):
        if "templates_compiled" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return list(Record.__subclasses__())


def ordered(kind: type) -> bool:
    return "__lt__" in vars(kind)


def frozen(kind: type) -> bool:
    return kind.__hash__ is not None


@cache
def twin(kind: type[Record]) -> Any:
    """A dataclass with ``kind``'s fields, name and flags: what the record would be as one."""
    made = dataclasses.make_dataclass(
        kind.__name__,
        [(f.name, Any, dataclasses.field(compare=f.compare, repr=f.repr)) for f in fields(kind)],
        frozen=frozen(kind),
        order=ordered(kind),
    )
    made.__qualname__ = kind.__qualname__
    return made


def as_twin(value: Record) -> Any:
    return twin(type(value))(**as_dict(value))


def records(value: object) -> Iterator[Record]:
    """Every record reachable from ``value``, each once."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Record):
            yield item
            stack.extend(as_dict(item).values())
        elif isinstance(item, tuple | list | set | frozenset):
            stack.extend(item)
        elif hasattr(item, "values"):
            stack.extend(item.values())


def hash_or_error(value: object) -> object:
    try:
        return hash(value)
    except TypeError as err:
        return str(err)


def test_every_record_class_is_built_as_declared() -> None:
    classes = every_record_class()
    assert len(classes) >= 90
    for kind in classes:
        assert kind.__init__.__qualname__ == f"{kind.__qualname__}.__init__", kind
        names = [f.name for f in fields(kind)]
        assert names == [
            n
            for n in kind.__annotations__
            if not str(kind.__annotations__[n]).startswith("ClassVar")
        ], kind


@pytest.mark.parametrize("blueprint", sorted(BLUEPRINTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_records_compare_hash_order_and_print_as_dataclasses_do(blueprint: Path) -> None:
    result = validate_document(read_blueprint(blueprint))
    found = list(records((result.estate, build(result.estate), result.findings)))
    found += list(records(list(render(result.estate).values())))
    assert len({type(r) for r in found}) >= 25
    for value in found:
        reference = as_twin(value)
        assert repr(value) == repr(reference)
        assert hash_or_error(value) == hash_or_error(reference)
        copy = replace(value)
        assert copy == value
        assert not copy != value  # noqa: SIM202 (__ne__ follows __eq__)
        assert value != reference  # another class, as two dataclasses are
        for f in fields(value):
            if as_dict(value)[f.name] != "changed":
                changed = replace(value, **{f.name: "changed"})
                assert (changed == value) is (not f.compare)
        if frozen(type(value)):
            with pytest.raises(FrozenRecordError):
                value.name = "x"  # type: ignore[attr-defined]
            with pytest.raises(dataclasses.FrozenInstanceError):
                reference.name = "x"


def test_ordered_records_sort_as_their_dataclass_twins() -> None:
    findings = [
        Finding("b.yaml", 3, 1, "a", "m"),
        Finding("a.yaml", 9, 2, "b", "m", "warning"),
        Finding("a.yaml", 9, 1, "c", "m"),
        Finding("a.yaml", 9, 1, "b", "m"),
    ]
    assert [as_twin(f) for f in sorted(findings)] == sorted(as_twin(f) for f in findings)
    assert Finding("a", 1, 1, "p", "m") <= Finding("a", 1, 1, "p", "m")
    with pytest.raises(TypeError):
        _ = Finding("a", 1, 1, "p", "m") < ("a", 1, 1, "p", "m")  # type: ignore[operator]


class Tree(Record, frozen=False):
    name: str
    leaves: list[str] = field(default_factory=list)
    count: int = 0
    note: str = field(default="", compare=False, repr=False)


def test_defaults_factories_and_mutable_records() -> None:
    one, two = Tree("a"), Tree("a")
    assert one.leaves == [] and one.leaves is not two.leaves
    assert (one.count, one.note) == (0, "")
    assert one == two and hash_or_error(one) == "unhashable type: 'Tree'"
    one.count = 3
    one.note = "kept out of equality"
    assert one != two
    assert repr(one) == "Tree(name='a', leaves=[], count=3)"
    assert Tree("b", ["x"], 2, "n").note == "n"
    assert Tree(name="b", count=1).count == 1


def test_a_record_refuses_what_a_dataclass_refuses() -> None:
    with pytest.raises(ValueError, match="mutable default list"):

        class Shared(Record):
            names: list[str] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'b' follows default"):

        class Misordered(Record):
            a: int = 1
            b: int

    with pytest.raises(ValueError, match="not both"):
        field(default=1, default_factory=list)
    with pytest.raises(TypeError, match="has no field 'nope'"):
        replace(Finding("a", 1, 1, "p", "m"), nope=1)
    with pytest.raises(TypeError):
        Finding("a", 1)  # type: ignore[call-arg]
    with pytest.raises(FrozenRecordError):
        del Finding("a", 1, 1, "p", "m").path


def test_a_record_does_not_extend_another() -> None:
    with pytest.raises(TypeError, match="cannot extend another record"):

        class Wider(Finding):
            extra: int = 0
