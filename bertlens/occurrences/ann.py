"""The index's search structures: a scalar index on the word, an ANN index per layer with exact re-ranking.

- `key` (the casefolded word) gets a BTREE scalar index: a same-word search reads only that word's rows (a BITMAP
  index suits columns of a few thousand values at most; a corpus has far more distinct words, see
  docs/benchmarks.md).
- Each vector column gets an IVF-PQ index (cosine) once the table holds `ANN_MIN_ROWS` occurrences: below that an
  exact scan is as fast. The parameters are the ones measured in bench/search.py for recall@10 >= 0.95 against
  exact search: about sqrt(rows) partitions, D/8 sub-vectors, `NPROBES` partitions probed, and the
  `REFINE_FACTOR` x k best candidates re-ranked by their exact cosine (read from the stored vectors).

What was built is written to `bertlens-search.json` in the index folder (atomically), with the occurrences table's
version, so a search knows which settings hold; rows added later are searched exactly beside the ANN index until
`build_search_indexes` runs again (the builder calls it after every build and add).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ..core.outputs import replace_text
from ..core.progress import bar
from .store import OccurrenceIndex, layer_column

SETTINGS = "bertlens-search.json"
ANN_MIN_ROWS = 50_000  # below this, an exact scan answers an any-word search as fast (bench/search.py)
NPROBES = 32
REFINE_FACTOR = 10


@dataclass(frozen=True)
class AnnSettings:
    """An ANN index on one vector column and how a search uses it."""

    column: str
    kind: str  # "IVF_PQ"
    partitions: int
    sub_vectors: int
    nprobes: int
    refine_factor: int


def ann_parameters(rows: int, dims: int) -> tuple[int, int]:
    """(partitions, sub-vectors) for a table of `rows` vectors of `dims` numbers."""
    partitions = max(8, min(4096, round(math.sqrt(rows))))
    sub_vectors = next(m for m in (dims // 8, dims // 4, dims // 2, dims) if m >= 1 and dims % m == 0)
    return partitions, sub_vectors


def build_search_indexes(index: OccurrenceIndex, *, progress: bool = False, min_rows: int = ANN_MIN_ROWS) -> None:
    """Build (or rebuild) the scalar index on `key` and, from `min_rows` rows on, an ANN index per vector column."""
    from lancedb.index import BTree, IvfPq

    table = index.occurrences
    rows = table.count_rows()
    columns = (
        [layer_column(layer) for layer in index.layers] if rows >= max(min_rows, 256) else []
    )  # PQ trains on 256 rows at least
    settings: dict[str, Any] = {}
    with bar(1 + len(columns), desc="search indexes", unit="index", show=progress) as steps:
        if rows:
            table.create_index("key", config=BTree(), replace=True)
        steps.update(1)
        for column in columns:
            partitions, sub_vectors = ann_parameters(rows, index.dims)
            config = IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=sub_vectors)
            table.create_index(column, config=config, replace=True)
            settings[column] = AnnSettings(column, "IVF_PQ", partitions, sub_vectors, NPROBES, REFINE_FACTOR).__dict__
            steps.update(1)
    replace_text(
        index.path / SETTINGS, json.dumps({"version": int(table.version), "rows": rows, "ann": settings}, indent=1)
    )


def ann_settings(index: OccurrenceIndex, column: str) -> AnnSettings | None:
    """The ANN index on `column` and its search settings, or None: search it exactly."""
    try:
        data = json.loads((index.path / SETTINGS).read_text(encoding="utf-8"))
        found = data["ann"].get(column)
        return None if found is None else AnnSettings(**found)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
