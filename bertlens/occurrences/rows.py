"""The rows of a batch of texts: every word occurrence with its offsets and its vectors at chosen layers.

`occurrence_rows` is pure (nothing written): the local engine runs it in this process (`local_batches`), the Ray
engine in its actors, and search runs it on an example sentence, so an example's vector is made as the index's are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ..contextual.states import RunOptions
from ..contextual.word_states import word_states
from ..core.model import Model
from ..core.options import WordPool
from .store import OccurrenceRows, TextRows


def local_batches(
    model: Model, batches: Iterable[TextRows], layers: tuple[int, ...], pool: WordPool, run: RunOptions
) -> Iterator[tuple[TextRows, OccurrenceRows]]:
    """Each batch of texts with its occurrence rows, computed in this process (one batch in memory at a time)."""
    for texts in batches:
        yield texts, occurrence_rows(model, texts, layers, pool, run)


def occurrence_rows(
    model: Model, texts: TextRows, layers: tuple[int, ...], pool: WordPool, run: RunOptions
) -> OccurrenceRows:
    """The word occurrences of a batch of texts with their vectors at the absolute `layers` (pure: nothing written)."""
    ids: list[int] = []
    positions: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    words: list[str] = []
    parts: list[np.ndarray] = []  # per text (layers, words, D)
    chosen = list(layers)
    pooled = word_states(model, texts.text, layers=chosen, pool=pool, options=run)  # the whole batch: less padding
    for text_id, found in zip(texts.text_id, pooled, strict=True):
        parts.append(found.vectors)  # (layers, words, D), pooled inside the model's batches
        for position, (start, end) in enumerate(zip(found.starts, found.ends, strict=True)):
            ids.append(int(text_id))
            positions.append(position)
            starts.append(start)
            ends.append(end)
            words.append(found.text[start:end])
    dims = model.config.hidden_size * (2 if pool == "first+last" else 1)
    stacked = np.concatenate(parts, axis=1) if parts else np.zeros((len(chosen), 0, dims), dtype=np.float32)
    return OccurrenceRows(
        text_id=np.asarray(ids, dtype=np.int64),  # (n,)
        position=np.asarray(positions, dtype=np.int32),
        start=np.asarray(starts, dtype=np.int32),
        end=np.asarray(ends, dtype=np.int32),
        word=words,
        vectors={layer: stacked[i] for i, layer in enumerate(chosen)},  # layer -> (n, D)
    )
