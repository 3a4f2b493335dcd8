"""Records: classes declared by their annotated fields, as ``@dataclass`` declares them.

``@dataclass`` compiled up to six methods afresh for each of its classes (``__init__``,
``__setattr__``, ``__delattr__``, ``__eq__``, ``__hash__``, ``__repr__``): for the 75 classes on
a render's path that was 35 ms of every command's start-up. A :class:`Record` compiles its
``__init__`` only; equality, hashing, ordering, ``repr`` and immutability are written once,
here. Type checkers read a record as a dataclass (``typing.dataclass_transform``), and
records compare, hash, order and print as the dataclass twin of each would
(tests/test_records.py); ``benchmarks/records.py`` times both ways of building them.

``class Version(Record)`` is frozen; ``class Tree(Record, frozen=False)`` is mutable and
unhashable; ``order=True`` adds ``<``, ``<=``, ``>``, ``>=`` over the compared fields. A record
does not extend another record (none needs to).
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform

R = TypeVar("R", bound="Record")


class FrozenRecordError(AttributeError):
    """A field of a frozen record was assigned or deleted."""


class _Missing:
    """No default (``None`` is a default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """One field of a record: its name, its default or the factory of its default, and
    whether it takes part in equality and ``repr``."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Callable[[], Any] | Any = MISSING,
        compare: bool = True,
        repr: bool = True,
    ) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING or self.default_factory is not MISSING


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    compare: bool = True,
    repr: bool = True,
) -> Any:
    """A field with a default, a default factory, or left out of equality or ``repr``."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("a field takes a default or a default_factory, not both")
    return Field(default, default_factory, compare, repr)


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
class Record:
    """The base of every record: subclasses are built from their annotations when defined."""

    __slots__ = ()
    __record_fields__: ClassVar[tuple[Field, ...]] = ()
    # the compared fields' values of a record, as a tuple
    __record_key__: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def __init_subclass__(cls, *, frozen: bool = True, order: bool = False) -> None:
        super().__init_subclass__()
        if cls.__record_fields__:
            raise TypeError(f"{cls.__name__}: a record cannot extend another record")
        # the class's own annotations (inspect.get_annotations would import inspect, 4 ms)
        own = cls.__dict__.get("__annotations__")  # noqa: RUF063
        if own is None:  # Python 3.14 evaluates annotations when first asked
            own = cls.__annotations__ if "__annotate__" in cls.__dict__ else {}
        fields = []
        for name, annotation in own.items():
            if isinstance(annotation, str) and annotation.startswith(
                ("ClassVar", "typing.ClassVar")
            ):
                continue
            value = cls.__dict__.get(name, MISSING)
            made = value if isinstance(value, Field) else Field(default=value)
            made.name = name
            if made.default is not MISSING and made.default.__class__.__hash__ is None:
                raise ValueError(
                    f"{cls.__name__}.{name}: mutable default {type(made.default).__name__} "
                    "is shared by every instance; use default_factory"
                )
            if made.default is not MISSING:
                setattr(cls, name, made.default)
            elif name in cls.__dict__:
                delattr(cls, name)  # a field() without a default
            fields.append(made)
        cls.__record_fields__ = tuple(fields)
        compared = [f.name for f in fields if f.compare]
        if len(compared) == 1:
            get = attrgetter(compared[0])
            cls.__record_key__ = lambda record: (get(record),)
        elif compared:
            cls.__record_key__ = attrgetter(*compared)
        else:
            cls.__record_key__ = lambda record: ()
        if "__init__" not in cls.__dict__:
            cls.__init__ = _init(cls)  # type: ignore[method-assign]
        if not frozen:
            cls.__setattr__ = object.__setattr__  # type: ignore[method-assign,assignment]
            cls.__delattr__ = object.__delattr__  # type: ignore[method-assign]
            cls.__hash__ = None  # type: ignore[method-assign,assignment]
        if order:
            for name, method in _ORDER.items():
                setattr(cls, name, method)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self.__class__.__record_key__
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.__class__.__record_key__(self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr
        )
        return f"{self.__class__.__qualname__}({shown})"


def _check_default_order(cls: type, fields: tuple[Field, ...]) -> None:
    """Refuse, as a dataclass does, a field without a default after one with a default."""
    seen_default = False
    for f in fields:
        if f.has_default:
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__name__}: non-default argument {f.name!r} follows default")


def _init(cls: type[Record]) -> Callable[..., None]:
    """The ``__init__`` of ``cls``, compiled once: it stores each argument, or its default,
    in the instance's ``__dict__``."""
    fields = cls.__record_fields__
    _check_default_order(cls, fields)
    namespace: dict[str, Any] = {"_r_MISSING": MISSING}
    parameters, lines = ["self"], ["_r_values = self.__dict__"]
    for index, f in enumerate(fields):
        if f.default_factory is not MISSING:
            namespace[f"_r_factory_{index}"] = f.default_factory
            parameters.append(f"{f.name}=_r_MISSING")
            made = f"_r_factory_{index}() if {f.name} is _r_MISSING else {f.name}"
            lines.append(f"_r_values[{f.name!r}] = {made}")
            continue
        if f.default is not MISSING:
            namespace[f"_r_default_{index}"] = f.default
            parameters.append(f"{f.name}=_r_default_{index}")
        else:
            parameters.append(f.name)
        lines.append(f"_r_values[{f.name!r}] = {f.name}")
    body = "\n    ".join(lines)
    exec(f"def __init__({', '.join(parameters)}) -> None:\n    {body}\n", namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _ordering(compare: Callable[[tuple[Any, ...], tuple[Any, ...]], bool]) -> Callable[..., Any]:
    def method(self: Record, other: object) -> Any:
        if other.__class__ is self.__class__:
            key = self.__class__.__record_key__
            return compare(key(self), key(other))
        return NotImplemented

    return method


_ORDER = {
    "__lt__": _ordering(operator.lt),
    "__le__": _ordering(operator.le),
    "__gt__": _ordering(operator.gt),
    "__ge__": _ordering(operator.ge),
}


def fields(record: Record | type[Record]) -> tuple[Field, ...]:
    """A record's fields, in declaration order."""
    return record.__record_fields__


def replace(record: R, /, **changes: Any) -> R:
    """A copy of ``record`` with ``changes``, built through its ``__init__``."""
    values = {f.name: getattr(record, f.name) for f in record.__record_fields__}
    unknown = changes.keys() - values.keys()
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(record)(**values)


def as_dict(record: Record) -> dict[str, Any]:
    """A record's fields and values (not recursive: a field holding a record keeps it)."""
    return {f.name: getattr(record, f.name) for f in record.__record_fields__}
