"""How context moves a word: its vectors in several sentences compared layer by layer.

At the input matrix a word has one row whatever the sentence (similarity 1 by construction); at the embedding
layer's output its vectors differ only through position (and segment) rows; above it, through attention to the
context. The per-layer mean cosine between sentences shows where context takes over.

A cosine alone says little: every layer of BERT is anisotropic (any two vectors score well above 0), more so in some
layers than others. So each layer also gets the anisotropy baseline of Ethayarajh (2019), taken from the sentences
given: the mean cosine between *unrelated words*, i.e. every pair of occurrences of two different words (neither the
word followed, compared case-insensitively, and each with a letter or digit, so punctuation does not count) from two
different sentences, their pieces pooled as the word's are. It is exact over all such pairs (no sampling), so the same
input always gives the same baseline; it is NaN (None in JSON) when the sentences hold no such pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import WORD_POOLS, WordPool, check_choice
from ..core.results import Result, table
from ..core.tokens import word_key
from ..embeddings.static import word_vector
from .pooling import occurrences_in_every, pool_pieces, pool_words, pooling_notes, word_runs
from .states import RunOptions, TokenStates, hidden_states


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
    baseline: float  # mean cosine of unrelated words' vectors at this layer (NaN when there are none)
    matrix: np.ndarray  # (occurrences, occurrences) cosines


@dataclass(frozen=True, repr=False)
class ContextComparison(Result):
    """One word's vectors across sentences, compared at the input matrix and at every layer.

    >>> bread = compare_contexts(load_model(), "bread", ["I like eating bread", "The banana bread was horrible"])
    >>> bread.layers[0].mean_cosine  # the same row of the input matrix in both sentences
    1.0
    """

    model: str
    word: str
    sentences: tuple[str, ...]
    pool: str
    occurrences: tuple[Occurrence, ...]
    layers: tuple[LayerSimilarity, ...]  # the input matrix first, then layers 0..L
    unrelated_pairs: int  # the pairs of unrelated words behind each layer's baseline
    pooling_notes: tuple[str, ...]  # how the word got its vector when it is not one token

    def __repr__(self) -> str:
        means = ", ".join(f"{s.layer}: {s.mean_cosine:.3f}" for s in self.layers)
        return f"ContextComparison({self.word!r} x {len(self.occurrences)}: {means})"

    def to_table(self) -> str:
        places = table(
            ["#", "sentence", "chars", "pieces"],
            [(i, o.sentence, f"{o.start}:{o.end}", " ".join(o.pieces)) for i, o in enumerate(self.occurrences)],
        )
        rows = [
            (s.layer, s.mean_cosine, s.min_cosine, s.baseline if np.isfinite(s.baseline) else None) for s in self.layers
        ]
        if self.unrelated_pairs:
            reference = (
                f"unrelated words: the mean cosine of {self.unrelated_pairs} pairs of different words from different "
                "sentences at the same layer (the anisotropy baseline); a cosine means something only above it."
            )
        else:
            reference = (
                "unrelated words: no baseline (the sentences hold no two different words in different sentences); "
                "give longer sentences to see how high any two vectors of a layer score."
            )
        return "\n".join(
            [
                f"{self.word!r} in {len(self.sentences)} sentences ({len(self.occurrences)} occurrences), pieces "
                f"pooled by {self.pool}:",
                places,
                *self.pooling_notes,
                "",
                table(["layer", "mean cosine", "min cosine", "unrelated words"], rows),
                "The input matrix row is the same in every sentence (1 by construction); layer 0, the embedding "
                "output, differs only by position and segment rows; from layer 1 on, the context moves the vector.",
                reference,
            ]
        )


def _cosines(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosines of vectors (n, D) in float64: (n, n)."""
    wide = vectors.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    unit = wide / np.where(norms == 0, 1, norms)
    cosines: np.ndarray = unit @ unit.T
    return cosines


def unrelated_cosine(vectors: np.ndarray, sentence: np.ndarray, word: np.ndarray) -> tuple[np.ndarray, int]:
    """The mean cosine over pairs of vectors (n, L, D) from different sentences and of different words, per layer.

    `sentence` and `word` (n,) label each vector; returns ((L,) float64, the number of pairs), NaN with no pair.
    Exact over every pair, in blocks of rows so memory stays small however many words there are.
    """
    n, layers = vectors.shape[0], vectors.shape[1]
    if n < 2:
        return np.full(layers, np.nan), 0
    unit = vectors.astype(np.float64)
    norms = np.linalg.norm(unit, axis=-1, keepdims=True)
    unit = (unit / np.where(norms == 0, 1, norms)).transpose(1, 0, 2)  # (L, n, D)
    total, count = np.zeros(layers), 0
    block = max(1, 4_000_000 // (layers * n))
    for start in range(0, n, block):
        rows = slice(start, start + block)
        keep = (sentence[rows, None] != sentence[None, :]) & (word[rows, None] != word[None, :])  # (b, n)
        count += int(keep.sum())
        total += ((unit[:, rows] @ unit.transpose(0, 2, 1)) * keep).sum(axis=(1, 2))  # (L,)
    if count == 0:
        return np.full(layers, np.nan), 0
    return total / count, count // 2  # every pair was counted from both ends


def compare_contexts(
    model: Model,
    word: str,
    sentences: Sequence[str],
    *,
    pool: WordPool = "mean",
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> ContextComparison:
    """`word` in each of `sentences` (every occurrence): per-layer cosine similarity of its vectors.

    >>> bread = compare_contexts(load_model(), "bread", ["I like eating bread", "The banana bread was horrible"])
    >>> [layer.layer for layer in bread.layers][:3]  # the input matrix's row, then layers 0 (embedding output) .. 6
    ['input matrix', '0', '1']
    """
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
    baseline, unrelated = _baseline(model, states.results, word, pool)  # (layers + 2,): the input matrix first
    n = len(found)
    pairs = ~np.eye(n, dtype=bool)
    layers = [LayerSimilarity("input matrix", 1.0, 1.0, float(baseline[0]), np.ones((n, n)))]
    for layer in range(stacked.shape[1]):
        matrix = _cosines(stacked[:, layer])
        mean, least = float(matrix[pairs].mean()), float(matrix[pairs].min())
        layers.append(LayerSimilarity(str(layer), mean, least, float(baseline[layer + 1]), matrix))
    return ContextComparison(
        model=model.source.description,
        word=word,
        sentences=tuple(sentences),
        pool=pool,
        occurrences=tuple(found),
        layers=tuple(layers),
        unrelated_pairs=unrelated,
        pooling_notes=pooling_notes([(word, o.pieces) for o in found], pool),
    )


def _baseline(model: Model, results: Sequence[TokenStates], word: str, pool: WordPool) -> tuple[np.ndarray, int]:
    """The unrelated words' mean cosine at the input matrix and at every layer: ((layers + 2,), pairs)."""
    wanted = word_key(word)
    matrix = model.embedding_weights.word_embeddings
    rows: list[np.ndarray] = []  # per sentence: (words, E) pooled input-matrix rows
    states: list[np.ndarray] = []  # per sentence: (words, layers + 1, D)
    sentence: list[int] = []
    keys: list[str] = []
    for s, result in enumerate(results):
        runs = []
        for run in word_runs(result.tokens):
            key = word_key(result.text[run[0].start : run[-1].end])
            if key != wanted and any(c.isalnum() for c in key):
                runs.append([t.index for t in run])
                sentence.append(s)
                keys.append(key)
        if runs:
            ids = np.array([t.id for t in result.tokens], dtype=np.int64)
            rows.append(pool_words(np.asarray(matrix[ids], dtype=np.float32), runs, pool))
            states.append(pool_words(result.states, runs, pool).transpose(1, 0, 2))
    layers = results[0].states.shape[0] + 1
    if not rows:
        return np.full(layers, np.nan), 0
    codes = np.unique(np.array(keys), return_inverse=True)[1]
    labels = np.array(sentence)
    at_input, unrelated = unrelated_cosine(np.concatenate(rows)[:, None], labels, codes)
    at_layers, _ = unrelated_cosine(np.concatenate(states), labels, codes)
    return np.concatenate([at_input, at_layers]), unrelated
