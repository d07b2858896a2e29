"""Word-similarity benchmarks on the input matrix, with coverage reported and nothing dropped silently.

Word pairs: every word is tokenized alone (no special tokens, no padding), its pieces' rows pooled, and the cosine of
the two vectors is compared with the human score by Spearman's rank correlation (average ranks for ties) and
Pearson's. Given the same vectors, the figures equal gensim's `KeyedVectors.evaluate_word_pairs`.

Analogy benchmarks are evaluated in `analogy_evaluation`; its public names (`evaluate_analogies`,
`AnalogyEvaluation`, `AnalogyScore`) stay importable from here (imported `as` themselves: re-exported). The
benchmarks themselves (catalogue, files, parsers) are in `benchmarks`, the correlations in `statistics`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import POOLS, Pool, check_choice
from ..core.results import Result, table, visible
from ..embeddings.static import StaticVector, word_vector
from .analogy_evaluation import AnalogyEvaluation as AnalogyEvaluation
from .analogy_evaluation import AnalogyScore as AnalogyScore
from .analogy_evaluation import evaluate_analogies as evaluate_analogies
from .benchmarks import BenchmarkPair, locate_benchmark, parse_pairs, read_benchmark
from .statistics import coverage_warning, pearson, spearman


@dataclass(frozen=True)
class PairScore:
    line: int  # line of the benchmark file
    word1: str
    word2: str
    human: float
    model: float  # cosine of the two pooled vectors
    pieces1: tuple[str, ...]
    pieces2: tuple[str, ...]
    unknown: bool  # a piece of either word is the unknown token


@dataclass(frozen=True)
class SkippedPair:
    line: int
    word1: str
    word2: str
    reason: str


@dataclass(frozen=True, repr=False)
class PairEvaluation(Result):
    """How well the input matrix's cosines rank word pairs as people did.

    >>> result = evaluate_pairs(load_model(), "rg65")
    >>> result.pairs_used, result.pairs_multi_piece
    (65, 6)
    """

    model: str
    benchmark: str  # a name, or the path given
    pool: str  # how a word's pieces' rows were combined
    metric: str  # "cosine"
    spearman: float  # rank correlation, human vs model, over the pairs used
    pearson: float
    pairs_total: int
    pairs_used: int
    pairs_multi_piece: int  # used pairs where a word needed several pieces
    pairs_unknown: int  # used pairs where a piece is the unknown token
    skipped: tuple[SkippedPair, ...]  # pairs that could not be scored (a word with no pieces), never dropped silently
    pairs: tuple[PairScore, ...]  # every used pair, in file order

    def __repr__(self) -> str:
        return (
            f"PairEvaluation({self.benchmark}: spearman={self.spearman:.3f}, pearson={self.pearson:.3f}, "
            f"{self.pairs_used}/{self.pairs_total} pairs)"
        )

    def to_table(self) -> str:
        head = ["benchmark", "spearman", "pearson", "pairs", "used", "several pieces", "[UNK]", "skipped"]
        row = (
            self.benchmark,
            round(self.spearman, 4),
            round(self.pearson, 4),
            self.pairs_total,
            self.pairs_used,
            self.pairs_multi_piece,
            self.pairs_unknown,
            len(self.skipped),
        )
        how = (
            f"Each word's vector is the one given (e.g. distilled from contexts): {self.pairs_used} of "
            f"{self.pairs_total} pairs have both"
            if self.pool == "given vectors"
            else f"Each word tokenized alone, its pieces' rows {self.pool}-pooled"
        )
        lines = [
            table(head, [row]),
            f"{how}; {self.metric} against the human scores.",
            *coverage_warning(self.pairs_used, self.pairs_total),
        ]
        if self.skipped:
            lines += ["", "Skipped (not scored):"]
            lines.append(
                table(
                    ["line", "word1", "word2", "reason"],
                    [(s.line, visible(s.word1), visible(s.word2), s.reason) for s in self.skipped],
                )
            )
        return "\n".join(lines)


def _unit64(v: np.ndarray) -> np.ndarray:
    """(E,) float64 at unit length; a zero vector stays zero (its cosine with anything is then 0, as in gensim)."""
    v64 = v.astype(np.float64)
    norm = float(np.linalg.norm(v64))
    return v64 / norm if norm > 0 else v64


def _cosines(first: list[StaticVector], second: list[StaticVector]) -> np.ndarray:
    """(n,) float64 cosines of the pairs (first[i], second[i]): unit vectors dotted, as gensim's `similarity`.

    All rows go through one einsum, so (a, b) and (b, a) get the same value to the bit and tie in the ranking.
    """
    units: dict[int, np.ndarray] = {}

    def unit(v: StaticVector) -> np.ndarray:
        if id(v) not in units:
            units[id(v)] = _unit64(v.vector)
        return units[id(v)]

    left = np.stack([unit(v) for v in first])  # (n, E)
    right = np.stack([unit(v) for v in second])  # (n, E)
    dots: np.ndarray = np.einsum("ij,ij->i", left, right)
    return dots


def evaluate_pairs(
    model: Model,
    benchmark: str | os.PathLike[str],
    *,
    pool: Pool = "mean",
    cache_dir: str | os.PathLike[str] | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    vectors_from: str | None = None,
) -> PairEvaluation:
    """Spearman and Pearson correlation of the model's cosines with a word-similarity benchmark's human scores.

    `benchmark` is a name (see `list_benchmarks()`) or the path of a CSV `word1,word2,score`. Each word is tokenized
    alone and its pieces' rows pooled by `pool`. `cache_dir` is accepted for a signature like the other similarity
    functions; word pairs need no similarity index. With `vectors` (word -> vector, e.g. distilled from contexts),
    words are looked up there instead (exactly, then lower-cased); a pair with a word without one is skipped and
    listed with its words named, as "not seen in {vectors_from}" when `vectors_from` says where the vectors come
    from (e.g. "the corpus"), else as "no vector given".

    >>> result = evaluate_pairs(load_model(), "wordsim353")
    >>> round(result.spearman, 3), result.pairs_total
    (0.742, 353)
    """
    del cache_dir  # pair scores are computed from the pooled vectors directly
    check_choice(pool, POOLS, "pooling")
    if vectors is not None and not isinstance(vectors, Mapping):
        raise InputError(
            f"vectors must map words to vectors, got {type(vectors).__name__}.",
            "Pass a dict (result.as_mapping()).",
        )
    if vectors_from is not None and not isinstance(vectors_from, str):
        raise InputError(
            f"vectors_from must be a str, got {type(vectors_from).__name__}.", 'Example: vectors_from="the corpus".'
        )
    label, path = locate_benchmark(benchmark, "similarity")
    pairs = parse_pairs(read_benchmark(path, label), label)
    absent = "no vector given" if vectors_from is None else f"not seen in {vectors_from}"
    used, skipped = _scorable(model, pairs, pool, vectors, absent)
    cosines = _cosines([u[1] for u in used], [u[2] for u in used]) if used else np.zeros(0)  # (n,)
    scored = [
        PairScore(
            line=pair.line,
            word1=pair.word1,
            word2=pair.word2,
            human=pair.score,
            model=float(cosine),
            pieces1=first.pieces,
            pieces2=second.pieces,
            unknown=first.unknown or second.unknown,
        )
        for (pair, first, second), cosine in zip(used, cosines, strict=True)
    ]
    if len(scored) < 2:
        raise InputError(
            f"{label}: only {len(scored)} of {len(pairs)} pairs could be scored; a correlation needs at least 2.",
            "Skipped pairs have a word with no pieces (empty, or only whitespace or invisible characters)."
            if vectors is None
            else f"Skipped pairs have a word {absent}: give vectors for more of the benchmark's words.",
        )
    human = np.array([p.human for p in scored])  # (n,)
    return PairEvaluation(
        model=model.source.description,
        benchmark=label,
        pool=pool if vectors is None else "given vectors",
        metric="cosine",
        spearman=spearman(human, cosines),
        pearson=pearson(human, cosines),
        pairs_total=len(pairs),
        pairs_used=len(scored),
        pairs_multi_piece=sum(len(p.pieces1) > 1 or len(p.pieces2) > 1 for p in scored),
        pairs_unknown=sum(p.unknown for p in scored),
        skipped=tuple(skipped),
        pairs=tuple(scored),
    )


def _scorable(
    model: Model,
    pairs: Sequence[BenchmarkPair],
    pool: Pool,
    vectors: Mapping[str, np.ndarray] | None,
    absent: str,
) -> tuple[list[tuple[BenchmarkPair, StaticVector, StaticVector]], list[SkippedPair]]:
    """The pairs whose two words have a vector (each word looked up once), and the others with the reason."""
    found: dict[str, StaticVector | str] = {}  # word -> its vector, or why it has none

    def look(word: str) -> StaticVector | str:
        if word not in found:
            if vectors is not None:
                given = vectors.get(word, vectors.get(word.casefold()))
                found[word] = absent if given is None else _given(model, word, given)
                return found[word]
            try:
                found[word] = word_vector(model, word, pool, phrase=True)  # SemEval-17 has phrases
            except InputError as exc:
                found[word] = exc.message
        return found[word]

    used: list[tuple[BenchmarkPair, StaticVector, StaticVector]] = []
    skipped: list[SkippedPair] = []
    for pair in pairs:
        first, second = look(pair.word1), look(pair.word2)
        if isinstance(first, str) or isinstance(second, str):
            if vectors is not None:  # the words without a vector, named
                unseen = [w for w, r in ((pair.word1, first), (pair.word2, second)) if isinstance(r, str)]
                reason = f"{' and '.join(map(repr, unseen))}: {absent}"
            else:
                reason = "; ".join(r for r in (first, second) if isinstance(r, str))
            skipped.append(SkippedPair(pair.line, pair.word1, pair.word2, reason))
        else:
            used.append((pair, first, second))
    return used, skipped


def _given(model: Model, word: str, vector: np.ndarray) -> StaticVector:
    """A user-given word vector in the shape of a static one (no pieces: it was not read from the matrix)."""
    row = np.asarray(vector, dtype=np.float32)
    return StaticVector(model.source.description, word, "word", (), (), None, False, row, float(np.linalg.norm(row)))
