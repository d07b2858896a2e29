"""The comparisons a server computed last (`DiffCache`): `POST /api/diff` keeps each `SpaceDiff` under what was asked
(`DiffKey`), so that the same question asked again, or a click on one of its tokens (`POST /api/diff/token`), reads it
instead of comparing the two models again. Bounded (`ServerLimits.kept_diffs`): the least recently used goes first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spaces.diff_results import SpaceDiff


@dataclass(frozen=True)
class DiffKey:
    """What one comparison was asked: the served models' names and `diff`'s arguments (the layers' arguments only
    where the layers are compared, so that a comparison without them is one entry whatever they say)."""

    model_a: str
    model_b: str
    k: int
    top: int
    corpus: str | None
    contextual: bool
    layer: int | None
    layer_b: int | None
    occurrences: int | None

    @classmethod
    def of(
        cls,
        model_a: str,
        model_b: str,
        *,
        k: int,
        top: int,
        corpus: str | None,
        contextual: bool,
        layer: int | None,
        layer_b: int | None,
        occurrences: int,
    ) -> DiffKey:
        if not contextual:
            return cls(model_a, model_b, k, top, corpus, False, None, None, None)
        return cls(model_a, model_b, k, top, corpus, True, layer, layer_b, occurrences)


class DiffCache:
    """The last `size` comparisons, most recently used last; safe to share between the server's worker threads."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.entries: OrderedDict[DiffKey, SpaceDiff] = OrderedDict()
        self.computed = 0  # comparisons put here since the server started (each one computed once)
        self.lock = threading.Lock()

    def __len__(self) -> int:
        with self.lock:
            return len(self.entries)

    def get(self, key: DiffKey) -> SpaceDiff | None:
        """The comparison asked as `key`, or None; a hit becomes the most recently used."""
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key: DiffKey, diff: SpaceDiff) -> None:
        """Keep `diff` (the least recently used one goes when more than `size` are kept)."""
        with self.lock:
            self.entries[key] = diff
            self.entries.move_to_end(key)
            self.computed += 1
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)

    def latest(self, model_a: str, model_b: str, k: int) -> SpaceDiff | None:
        """The most recently used comparison of these two models with this k (a token's neighbourhoods and overlap
        depend on nothing else), or None."""
        with self.lock:
            found = [key for key in self.entries if (key.model_a, key.model_b, key.k) == (model_a, model_b, k)]
            if not found:
                return None
            self.entries.move_to_end(found[-1])
            return self.entries[found[-1]]
