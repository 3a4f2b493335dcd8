"""Facts derived from the model, computed once per run: memoised by the identity of their
arguments (issue 17).

A cluster's flavours and quota capacity are asked for by the checks, the report's warnings
and several renderers; ``estategen plan`` renders the new model, then builds a changed
cluster's objects and Pulumi data from both models to compare them: the new model's are what
the render built a moment before. Inside :func:`run` (every command runs in one), a function
decorated with :func:`by_identity` computes its result once per argument objects; outside one
it computes every time, as it always did. Nothing outlives the run: no cache across runs, and
a model rebuilt (another object) is another key.

A memoised result is shared by its callers, who must treat it as read-only (the renderers
write it out; plan copies what it compares).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# one store per open run: (function, id of each argument) -> (the arguments, the result); the
# arguments are held so that no id is reused by another object while the run lasts
_RUNS: list[dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]]] = []


@contextmanager
def run() -> Iterator[None]:
    """Memoise the decorated functions until the block ends."""
    _RUNS.append({})
    try:
        yield
    finally:
        _RUNS.pop()


def by_identity(function: F) -> F:
    """``function`` memoised by the identity of its positional arguments within a :func:`run`."""

    @functools.wraps(function)
    def memoised(*args: Any) -> Any:
        if not _RUNS:
            return function(*args)
        store = _RUNS[-1]
        key = (function, *map(id, args))
        known = store.get(key)
        if known is not None:
            return known[1]
        result = function(*args)
        store[key] = (args, result)
        return result

    return memoised  # type: ignore[return-value]
