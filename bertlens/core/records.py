"""Sequences of small frozen records (tokens, words) kept as columns and built when read.

A corpus-sized call returns tens of thousands of tokens or words. As objects, each one is tracked by Python's garbage
collector, and every full collection walks them all, with everything torch and transformers keep alive: over 1,000
sentences that added 0.15-0.2 s to whichever call a collection landed in (docs/benchmarks.md). `Records` keeps the
values in a few lists per text instead (the collector tracks each list, never the ints and strings in it) and makes a
record each time one is read, which reference counting frees as soon as it is dropped. It reads like the tuple it
replaces: indexing, slicing (a tuple), iteration, `len`, `in`, equality and hash with a tuple of the same records, and
`to_dict()` turns it into a list.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Records(Sequence[T], Generic[T]):
    """A tuple-like, read-only sequence whose items `record(i)` builds on each read."""

    def __init__(self, length: int) -> None:
        self._length = length

    def record(self, index: int) -> T:  # pragma: no cover - every subclass overrides it
        """Item `index` (0 <= index < len), made anew."""
        raise NotImplementedError

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(map(self.record, range(*index.indices(self._length))))
        position = operator.index(index)  # ints and numpy integers; anything else raises TypeError, as a tuple does
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError(f"index {index} is out of range for {self._length} {type(self).__name__.lower()}")
        return self.record(position)

    def __iter__(self) -> Iterator[T]:
        return map(self.record, range(self._length))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Records, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Any) -> tuple[T, ...]:
        if isinstance(other, (Records, tuple)):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: Any) -> tuple[T, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))
