"""How context moves a word: its vectors in several sentences compared layer by layer.

At the input matrix a word has one row whatever the sentence (similarity 1 by construction); at the embedding
layer's output its vectors differ only through position (and segment) rows; above it, through attention to the
context. The per-layer mean cosine between sentences shows where context takes over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import WORD_POOLS, WordPool, check_choice
from ..core.results import Result, table
from ..embeddings.static import word_vector
from .pooling import occurrences_in_every, pool_pieces
from .states import RunOptions, hidden_states


@dataclass(frozen=True)
class Occurrence:
    sentence: int
    start: int  # character offsets of the word in its sentence
    end: int
    pieces: tuple[str, ...]
    token_indices: tuple[int, ...]


@dataclass(frozen=True)
class LayerSimilarity:
    layer: str  # "input matrix", or "0" (embedding output) .. "L"
    mean_cosine: float  # mean over all pairs of occurrences
    min_cosine: float
    matrix: np.ndarray  # (occurrences, occurrences) cosines


@dataclass(frozen=True, repr=False)
class ContextComparison(Result):
    """One word's vectors across sentences, compared at the input matrix and at every layer."""

    model: str
    word: str
    sentences: tuple[str, ...]
    pool: str
    occurrences: tuple[Occurrence, ...]
    layers: tuple[LayerSimilarity, ...]  # the input matrix first, then layers 0..L

    def __repr__(self) -> str:
        means = ", ".join(f"{s.layer}: {s.mean_cosine:.3f}" for s in self.layers)
        return f"ContextComparison({self.word!r} x {len(self.occurrences)}: {means})"

    def to_table(self) -> str:
        places = table(
            ["#", "sentence", "chars", "pieces"],
            [(i, o.sentence, f"{o.start}:{o.end}", " ".join(o.pieces)) for i, o in enumerate(self.occurrences)],
        )
        rows = [(s.layer, s.mean_cosine, s.min_cosine) for s in self.layers]
        return "\n".join(
            [
                f"{self.word!r} in {len(self.sentences)} sentences ({len(self.occurrences)} occurrences), pieces "
                f"pooled by {self.pool}:",
                places,
                "",
                table(["layer", "mean cosine", "min cosine"], rows),
                "The input matrix row is the same in every sentence (1 by construction); layer 0, the embedding "
                "output, differs only by position and segment rows; from layer 1 on, the context moves the vector.",
            ]
        )


def _cosines(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosines of vectors (n, D) in float64: (n, n)."""
    wide = vectors.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    unit = wide / np.where(norms == 0, 1, norms)
    return unit @ unit.T


def compare_contexts(
    model: Model,
    word: str,
    sentences: Sequence[str],
    *,
    pool: WordPool = "mean",
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> ContextComparison:
    """`word` in each of `sentences` (every occurrence): per-layer cosine similarity of its vectors."""
    if not isinstance(word, str) or not word.strip():
        raise InputError("The word is empty.", "Give the word to follow, e.g. bread.")
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise InputError(
            f"sentences must be a list of sentences, got {type(sentences).__name__}.",
            "Example: ['I like bread', 'Banana bread is good'].",
        )
    if len(sentences) < 2:
        raise InputError("Give at least two sentences to compare.", "Example: 'I like bread' 'Banana bread is good'")
    check_choice(pool, WORD_POOLS, "pooling")
    word_vector(model, word)  # raises a clear InputError for a word with no pieces
    states = hidden_states(model, list(sentences), options=options)
    found: list[Occurrence] = []
    vectors: list[np.ndarray] = []  # each (layers + 1, D)
    for s, (result, runs) in enumerate(zip(states.results, occurrences_in_every(states.results, word), strict=True)):
        for run in runs:
            indices = [t.index for t in run]
            found.append(Occurrence(s, run[0].start, run[-1].end, tuple(t.piece for t in run), tuple(indices)))
            vectors.append(np.stack([pool_pieces(layer[indices], pool) for layer in result.states]))
    stacked = np.stack(vectors)  # (occurrences, layers + 1, D)
    n = len(found)
    pairs = ~np.eye(n, dtype=bool)
    layers = [LayerSimilarity("input matrix", 1.0, 1.0, np.ones((n, n)))]
    for layer in range(stacked.shape[1]):
        matrix = _cosines(stacked[:, layer])
        layers.append(LayerSimilarity(str(layer), float(matrix[pairs].mean()), float(matrix[pairs].min()), matrix))
    return ContextComparison(
        model=model.source.description,
        word=word,
        sentences=tuple(sentences),
        pool=pool,
        occurrences=tuple(found),
        layers=tuple(layers),
    )
