"""The model's records compare, hash and print as ``@dataclass(frozen=True)`` makes them.

:class:`estategen.model.Record` writes ``__eq__``, ``__hash__`` and ``__repr__`` once for all
records instead of letting each dataclass compile its own; every record of the examples is
checked against a twin that ``@dataclass(frozen=True)`` builds with the same fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from estategen import model
from estategen.load import read_blueprint
from estategen.model import Record
from estategen.pipeline import validate_document

from conftest import BLUEPRINTS


@cache
def twin(kind: type) -> Any:
    """A frozen dataclass with ``kind``'s fields and name: what the record would be without
    :class:`Record`."""
    made = dataclasses.make_dataclass(
        kind.__name__,
        [
            (f.name, Any, dataclasses.field(compare=f.compare, repr=f.repr))
            for f in dataclasses.fields(kind)
        ],
        frozen=True,
    )
    made.__qualname__ = kind.__qualname__
    return made


def as_twin(record: Record) -> Any:
    values = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}  # type: ignore[arg-type]
    return twin(type(record))(**values)


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
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))  # type: ignore[arg-type]
        elif isinstance(item, tuple | list):
            stack.extend(item)
        elif hasattr(item, "values"):
            stack.extend(item.values())


def hash_or_error(value: object) -> object:
    try:
        return hash(value)
    except TypeError as err:
        return str(err)


def test_every_model_class_is_a_record_dataclass() -> None:
    classes = [
        v
        for v in vars(model).values()
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == model.__name__
    ]
    assert len(classes) >= 36
    for kind in classes:
        assert issubclass(kind, Record), kind
        assert kind.__dataclass_params__.frozen, kind  # type: ignore[attr-defined]


@pytest.mark.parametrize("blueprint", sorted(BLUEPRINTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_records_compare_hash_and_print_as_dataclasses_do(blueprint: Path) -> None:
    estate = validate_document(read_blueprint(blueprint)).estate
    found = list(records(estate))
    assert len({type(r) for r in found}) >= 20
    for record in found:
        reference = as_twin(record)
        assert repr(record) == repr(reference)
        assert hash_or_error(record) == hash_or_error(reference)
        copy = dataclasses.replace(record)  # type: ignore[type-var]
        assert copy == record
        assert not copy != record  # noqa: SIM202 (__ne__ follows __eq__)
        assert record != reference  # another class, as two dataclasses are
        for f in dataclasses.fields(record):  # type: ignore[arg-type]
            if f.init and getattr(record, f.name) != "changed":
                changed = dataclasses.replace(record, **{f.name: "changed"})  # type: ignore[type-var]
                assert (changed == record) is (not f.compare)
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.name = "x"  # type: ignore[attr-defined]
