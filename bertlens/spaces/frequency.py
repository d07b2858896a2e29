"""How often each token occurs in a corpus, and the frequency buckets `diff` (and a continued run's drift) summarise
rows by: orders of magnitude of the count."""

from __future__ import annotations

import os

import numpy as np

from ..core.corpus import iter_texts
from ..core.model import Model

BUCKETS: tuple[tuple[int, int | None, str], ...] = (
    (0, 0, "absent (0)"),
    (1, 9, "rare (1-9)"),
    (10, 99, "10-99"),
    (100, 999, "100-999"),
    (1000, None, "1000+"),
)  # (least, most or None, label): occurrences of the row's token in the corpus

BATCH = 512  # texts tokenized at once


def bucket_of(counts: np.ndarray) -> np.ndarray:
    """(n,) int: the index in BUCKETS of each count."""
    edges = np.asarray([least for least, _, _ in BUCKETS[1:]])
    index: np.ndarray = np.searchsorted(edges, counts, side="right")
    return index


def token_counts(model: Model, corpus: str | os.PathLike[str]) -> np.ndarray:
    """(rows,) int64: how many times each token of `model`'s vocabulary occurs in `corpus` (a file or folder, or a
    bundled corpus's name), tokenized by the model's tokenizer without special tokens."""
    counts = np.zeros(model.matrix_rows, dtype=np.int64)
    tokenizer = model.vocabulary.tokenizer
    batch: list[str] = []

    def add(texts: list[str]) -> None:
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64)  # (tokens,) of the batch
        counts[:] += np.bincount(ids[ids < len(counts)], minlength=len(counts))

    for text in iter_texts(corpus):
        batch.append(text.text)
        if len(batch) == BATCH:
            add(batch)
            batch = []
    if batch:
        add(batch)
    return counts
