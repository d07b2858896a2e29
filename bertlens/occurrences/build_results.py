"""What `index_corpus` answers: `IndexResult`, the folder it wrote, its texts and rows, layers and precision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.results import Result, table


@dataclass(frozen=True, repr=False)
class IndexResult(Result):
    """What `index_corpus` wrote: the folder, its texts and rows (word occurrences), layers and precision.

    >>> built = index_corpus(load_model(), "sample", "sample-index", max_texts=300)  # doctest: +SKIP
    >>> built.layers  # doctest: +SKIP
    (6,)
    """

    out: str
    texts: int  # texts in the index
    rows: int  # occurrences in the index
    layers: tuple[int, ...]
    dims: int
    dtype: str
    pool: str = "mean"
    added_texts: int = 0  # texts written by this run
    added_rows: int = 0  # occurrences written by this run
    skipped: tuple[str, ...] = ()  # corpus files already in the index by path or by content (an add), left alone
    resumed_after: int = 0  # texts already in the index when this run started
    repaired: int = 0  # occurrences of an interrupted write removed before continuing

    def __repr__(self) -> str:
        return f"IndexResult({self.rows} occurrences of {self.texts} texts at {self.out})"

    def to_table(self) -> str:
        rows: list[tuple[str, Any]] = [
            (f.replace("_", " "), getattr(self, f))
            for f in ("out", "texts", "rows", "layers", "dims", "dtype", "pool", "added_texts", "added_rows")
        ]
        if self.resumed_after or self.repaired:
            rows += [("resumed after", self.resumed_after), ("repaired", self.repaired)]
        if self.skipped:
            rows.append(("skipped (already indexed)", ", ".join(self.skipped)))
        return table(["", "value"], rows)
