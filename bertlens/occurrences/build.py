"""`index_corpus`: every word occurrence of a corpus, with its vectors from chosen layers, into an occurrence index.

(First version by the lead: fresh builds only. Resume, adding files, progress, bounded-memory checks and the search
indexes are the builder's to finish.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from ..contextual.pooling import pool_words, word_runs
from ..contextual.states import RunOptions, check_layers, hidden_states
from ..core.corpus import corpus_path, iter_texts
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import WordPool
from ..core.outputs import output_path
from ..core.results import Result, table
from .store import OccurrenceIndex, OccurrenceRows, TextRows, VectorDtype, create_index


@dataclass(frozen=True)
class IndexOptions:
    """What an index stores."""

    layers: tuple[int, ...] = (-1,)  # each stored as its own vector column
    pool: WordPool = "mean"  # how a word's pieces pool
    dtype: VectorDtype = "float32"  # float16 halves the index
    batch_texts: int = 256  # texts per write: memory holds one batch's vectors


@dataclass(frozen=True, repr=False)
class IndexResult(Result):
    out: str
    texts: int
    rows: int
    layers: tuple[int, ...]
    dims: int
    dtype: str

    def __repr__(self) -> str:
        return f"IndexResult({self.rows} occurrences of {self.texts} texts at {self.out})"

    def to_table(self) -> str:
        return table(
            ["", "value"], [(f, getattr(self, f)) for f in ("out", "texts", "rows", "layers", "dims", "dtype")]
        )


def index_corpus(
    model: Model,
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    options: IndexOptions = IndexOptions(),
    run: RunOptions = RunOptions(),  # noqa: B008
) -> IndexResult:
    """Index every word occurrence of `corpus` (a file or folder, as `extract` reads) into the folder `out`."""
    layers = tuple(sorted({_absolute(model, layer) for layer in check_layers(model, options.layers)}))
    source, target = corpus_path(corpus), output_path(out, "index")
    total = sum(1 for _ in iter_texts(source))  # validates the whole corpus before anything is written
    if target.exists():
        raise InputError(f"{target} exists.", "Choose a new folder for the index.")
    index = create_index(
        target, model, layers=layers, pool=options.pool, dtype=options.dtype, extra={"corpus": str(source)}
    )
    texts = iter_texts(source)
    done = 0
    while done < total:
        batch = list(islice(texts, options.batch_texts))
        if not batch:
            break
        text_rows = TextRows(
            text_id=np.arange(done, done + len(batch), dtype=np.int64),
            file=[_relative(Path(t.file), source) for t in batch],
            line=np.asarray([t.line for t in batch], dtype=np.int32),
            text=[t.text for t in batch],
        )
        index.append(
            text_rows, occurrence_rows(model, text_rows, index, options.pool, run), next_text=done + len(batch)
        )
        done += len(batch)
    index.manifest["complete"] = True
    index.write_manifest()
    return IndexResult(str(target), index.text_count, index.rows, index.layers, index.dims, index.dtype)


def _absolute(model: Model, layer: int) -> int:
    return layer + model.config.num_hidden_layers + 1 if layer < 0 else layer


def _relative(file: Path, source: Path) -> str:
    return file.name if source.is_file() else str(file.relative_to(source))


def occurrence_rows(
    model: Model, texts: TextRows, index: OccurrenceIndex, pool: WordPool, run: RunOptions
) -> OccurrenceRows:
    """The word occurrences of a batch of texts with their vectors at the index's layers."""
    ids: list[int] = []
    positions: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    words: list[str] = []
    vectors: dict[int, list[np.ndarray]] = {layer: [] for layer in index.layers}
    for text_id, states in zip(texts.text_id, hidden_states(model, texts.text, options=run), strict=True):
        runs = word_runs(states.tokens)
        groups: Sequence[Sequence[int]] = [[t.index for t in r] for r in runs]
        for layer in index.layers:
            vectors[layer].append(pool_words(states.states[layer], groups, pool))  # (words, D)
        for position, r in enumerate(runs):
            ids.append(int(text_id))
            positions.append(position)
            starts.append(r[0].start)
            ends.append(r[-1].end)
            words.append(states.text[r[0].start : r[-1].end])
    stacked = {
        layer: np.concatenate(parts) if parts else np.zeros((0, index.dims), dtype=np.float32)
        for layer, parts in vectors.items()
    }  # layer -> (occurrences, D)
    return OccurrenceRows(
        text_id=np.asarray(ids, dtype=np.int64),
        position=np.asarray(positions, dtype=np.int32),
        start=np.asarray(starts, dtype=np.int32),
        end=np.asarray(ends, dtype=np.int32),
        word=words,
        vectors=stacked,
    )
