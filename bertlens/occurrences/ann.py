"""The index's search structures: a scalar index on the word, an ANN index per layer with exact re-ranking.

- `key` (the casefolded word) gets a BITMAP scalar index: a same-word search reads only that word's rows (faster
  than BTREE, above all in its slowest searches). `text_id` gets a BTREE in both tables: a search from an
  occurrence finds it, and every hit its text, without a scan.
- Each vector column gets an IVF-SQ index (cosine; vectors quantised to 8 bits per number) once the table holds
  `ANN_MIN_ROWS` occurrences: below that an exact scan is as fast. IVF-SQ beat IVF-PQ (faster to build, higher
  recall at the same speed) and IVF-HNSW-SQ (far slower to build on a few cores). The parameters are the ones
  bench/search.py finds for recall@10 >= 0.95 against exact search: about sqrt(rows)/2 partitions, `NPROBES`
  partitions probed, and the `REFINE_FACTOR` x k best candidates re-ranked by their exact cosine (read from the
  stored vectors). The figures: docs/benchmarks.md, "Occurrence index: search".

What was built is written to `bertlens-search.json` in the index folder (atomically), with the occurrences table's
version and the rows the ANN indexes were trained on, so a search knows which settings hold. An `--add` does not
retrain them while the table has grown by at most `RETRAIN_GROWTH` since: LanceDB's upkeep at the end of the add
(`integrity.clean`) adds the new rows to them (the scalar indexes, cheap, are rebuilt every time); past that, they
are trained anew.
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
NPROBES = 48
REFINE_FACTOR = 10
RETRAIN_GROWTH = 0.25  # an add keeps the ANN indexes until the table has grown by this much since their training


@dataclass(frozen=True)
class AnnSettings:
    """An ANN index on one vector column and how a search uses it."""

    column: str
    kind: str  # "IVF_SQ"
    partitions: int
    nprobes: int
    refine_factor: int


def ann_partitions(rows: int) -> int:
    """IVF partitions for a table of `rows` vectors: about sqrt(rows)/2 (each then holds ~2 sqrt(rows) vectors)."""
    return max(4, min(4096, round(math.sqrt(rows) / 2)))


def build_search_indexes(
    index: OccurrenceIndex, *, progress: bool = False, min_rows: int = ANN_MIN_ROWS, retrain: bool = True
) -> None:
    """Build (or rebuild) the scalar indexes and, from `min_rows` rows on, an ANN index per vector column.

    `retrain=False` (an add) keeps ANN indexes trained on at least 1 / (1 + `RETRAIN_GROWTH`) of today's rows.
    """
    from lancedb.index import Bitmap, BTree, IvfSq

    table = index.occurrences
    rows = table.count_rows()
    columns = (
        [layer_column(layer) for layer in index.layers] if rows >= max(min_rows, 256) else []
    )  # PQ trains on 256 rows at least
    previous = _read_settings(index)
    trained = int(previous.get("rows", 0))
    kept = {
        column: previous["ann"][column]
        for column in columns
        if not retrain and column in previous.get("ann", {}) and rows <= trained * (1 + RETRAIN_GROWTH)
    }
    settings: dict[str, Any] = dict(kept)
    with bar(1 + len(columns) - len(kept), desc="search indexes", unit="index", show=progress) as steps:
        if rows:
            table.create_index("key", config=Bitmap(), replace=True)
            table.create_index("text_id", config=BTree(), replace=True)  # an occurrence and its text, found at once
            index.texts.create_index("text_id", config=BTree(), replace=True)
        steps.update(1)
        for column in (c for c in columns if c not in kept):
            partitions = ann_partitions(rows)
            config = IvfSq(distance_type="cosine", num_partitions=partitions, sample_rate=64, max_iterations=20)
            table.create_index(column, config=config, replace=True)
            settings[column] = AnnSettings(column, "IVF_SQ", partitions, NPROBES, REFINE_FACTOR).__dict__
            steps.update(1)
    about = {"version": int(table.version), "rows": trained if kept else rows, "ann": settings}
    replace_text(index.path / SETTINGS, json.dumps(about, indent=1))


def _read_settings(index: OccurrenceIndex) -> dict[str, Any]:
    try:
        data = json.loads((index.path / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("ann"), dict) else {}


def ann_settings(index: OccurrenceIndex, column: str) -> AnnSettings | None:
    """The ANN index on `column` and its search settings, or None: search it exactly."""
    try:
        data = json.loads((index.path / SETTINGS).read_text(encoding="utf-8"))
        found = data["ann"].get(column)
        return None if found is None else AnnSettings(**found)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
