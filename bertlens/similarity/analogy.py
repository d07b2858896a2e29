"""Analogies `a : b :: c : ?` in the input matrix, by 3CosAdd or 3CosMul, with the three inputs' pieces excluded.

Both objectives work on unit-length vectors. 3CosAdd ranks candidates x by cos(x, b - a + c) (gensim's
`most_similar(positive=[b, c], negative=[a])`). 3CosMul (Levy and Goldberg, 2014; gensim's `most_similar_cosmul`)
maps every cosine to [0, 1] as (cos + 1) / 2 and ranks by cos'(x, b) · cos'(x, c) / (cos'(x, a) + ε).

One batched core, `solve_analogies`, answers every question: `analogy()` asks it one, the analogy benchmarks in
`bertlens.similarity.evaluate` ask it thousands at a time.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import ANALOGY_METHODS, AnalogyMethod
from ..core.results import Result, table, visible
from ..embeddings.token_classes import TokenFilter
from .index import VectorIndex
from .query import check_k, given_index, term_vector

METHOD_LABELS = {"3cosadd": "3CosAdd", "3cosmul": "3CosMul"}
EPSILON = 0.001  # 3CosMul's guard against dividing by ~0, as Levy and Goldberg chose (gensim uses 1e-6)
CHUNK = 256  # questions per block at most: two (256, candidates) float32 score arrays at a time
TERMS_AT_ONCE = 768  # distinct terms whose cosines with every candidate are kept at once, at most
FLOATS_AT_ONCE = 1 << 23  # 32 MiB of float32: a large vocabulary gets smaller blocks, so memory stays bounded


@dataclass(frozen=True)
class AnalogyAnswer:
    rank: int
    id: int
    token: str
    score: float  # 3CosAdd: a cosine in [-1, 1]; 3CosMul: the ratio, larger is better


@dataclass(frozen=True, repr=False)
class AnalogyResult(Result):
    """The best answers to `a : b :: c : ?`, with the pieces each term was made of (all excluded from the answers).

    >>> result = analogy(load_model(), "man", "king", "woman", k=1, method="3cosmul")
    >>> result.answers[0].token
    'queen'
    """

    model: str
    a: str
    b: str
    c: str
    pieces_a: tuple[str, ...]
    pieces_b: tuple[str, ...]
    pieces_c: tuple[str, ...]
    ids_a: tuple[int, ...]
    ids_b: tuple[int, ...]
    ids_c: tuple[int, ...]
    method: str  # "3cosadd" or "3cosmul"
    k: int
    filters: TokenFilter  # which rows could be answers
    candidates: int  # how many rows the filters let through
    answers: tuple[AnalogyAnswer, ...]

    @property
    def best(self) -> AnalogyAnswer | None:
        return self.answers[0] if self.answers else None

    def __repr__(self) -> str:
        top = ", ".join(f"{x.token} {x.score:.3f}" for x in self.answers[:3])
        more = ", …" if len(self.answers) > 3 else ""
        return f"AnalogyResult({self.a!r} : {self.b!r} :: {self.c!r} : ? -> {top}{more})"

    def to_table(self) -> str:
        terms = [
            (role, visible(query), " ".join(visible(p) for p in pieces), " ".join(map(str, ids)))
            for role, query, pieces, ids in (
                ("a", self.a, self.pieces_a, self.ids_a),
                ("b", self.b, self.pieces_b, self.ids_b),
                ("c", self.c, self.pieces_c, self.ids_c),
            )
        ]
        answers = [(x.rank, x.id, visible(x.token), x.score) for x in self.answers]
        label = METHOD_LABELS.get(self.method, self.method)
        return "\n".join(
            [
                f"{self.a} : {self.b} :: {self.c} : ?   ({label}; answers among {self.candidates} rows: "
                f"{describe_filters(self.filters)}; the pieces of a, b, c excluded)",
                table(["term", "query", "pieces", "ids"], terms),
                "",
                table(["rank", "id", "token", label], answers) if answers else "No candidate rows are left.",
                *([f"Only {len(answers)} answers exist (k = {self.k})."] if 0 < len(answers) < self.k else []),
            ]
        )


def describe_filters(filters: TokenFilter) -> str:
    """Which token classes `filters` keeps, in words."""
    if filters == TokenFilter.words_only():
        return "whole words only"
    kept = [f.name for f in dataclasses.fields(filters) if getattr(filters, f.name)]
    return "whole words" + "".join(f", {name}" for name in kept)


def check_method(method: str) -> None:
    if method not in ANALOGY_METHODS:
        raise InputError(f"Unknown analogy method {method!r}.", f"Choose one of: {', '.join(ANALOGY_METHODS)}.")


def unit_vector(v: np.ndarray) -> np.ndarray:
    """(E,) float32 at unit length (computed in float64); a zero vector stays zero."""
    v64 = v.astype(np.float64)
    norm = float(np.linalg.norm(v64))
    return (v64 / norm if norm > 0 else v64).astype(np.float32)


def solve_analogies(
    unit: np.ndarray,
    candidates: np.ndarray,
    terms: np.ndarray,
    questions: np.ndarray,
    exclude: np.ndarray | None = None,
    *,
    k: int = 1,
    method: AnalogyMethod = "3cosadd",
    epsilon: float = EPSILON,
    chunk: int | None = None,
    terms_at_once: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k best answers to many analogies at once.

    unit: (rows, E) the matrix's rows at unit length. candidates: (C,) ids that may be answers. terms: (T, E) the
    unit vectors of the questions' terms. questions: (Q, 3) rows of `terms` for a, b, c. exclude: (Q, X) ids never
    returned for each question (-1 pads), normally the pieces of its a, b and c.

    Returns ids (Q, min(k, rows)) int64 and scores (Q, min(k, rows)) float32, best first, equal scores by lower id;
    -1 and -inf fill the places of a question that has fewer candidates left. `chunk` (questions per block) and
    `terms_at_once` (distinct terms whose cosines are held at once) bound the memory used, about
    (2 · chunk + terms_at_once) · C float32; by default they fit the number of candidates. They do not change the
    answers.
    """
    check_method(method)
    check_k(k)
    candidates = np.unique(np.asarray(candidates, dtype=np.int64))  # sorted, so lower position = lower id
    questions = np.asarray(questions, dtype=np.int64).reshape(-1, 3)  # (Q, 3)
    n_questions = len(questions)
    width = min(k, len(unit))  # a k beyond the matrix's rows cannot be filled: no wider than the rows
    ids_out = np.full((n_questions, width), -1, dtype=np.int64)
    scores_out = np.full((n_questions, width), -np.inf, dtype=np.float32)
    take = min(k, len(candidates))
    if n_questions == 0 or take == 0:
        return ids_out, scores_out
    matrix = np.ascontiguousarray(unit[candidates], dtype=np.float32)  # (C, E)
    terms = np.ascontiguousarray(terms, dtype=np.float32)  # (T, E)
    position = np.full(unit.shape[0], -1, dtype=np.int64)  # id -> candidate position, -1 if not a candidate
    position[candidates] = np.arange(len(candidates))
    norms = _sum_norms(terms, questions) if method == "3cosadd" else None  # (Q,)
    chunk = max(1, chunk or min(CHUNK, FLOATS_AT_ONCE // len(candidates)))
    terms_at_once = terms_at_once or max(3 * chunk, min(TERMS_AT_ONCE, 3 * FLOATS_AT_ONCE // len(candidates)))
    width = min(chunk, n_questions)
    buffer = np.empty((width, len(candidates)), dtype=np.float32)  # (chunk, C) scores, reused block to block
    spare = np.empty_like(buffer)
    local = np.zeros(len(terms), dtype=np.int64)  # row of `terms` -> row of `sims`
    for first, last in _spans(questions, chunk, terms_at_once):
        used = np.unique(questions[first:last])  # (u,) terms of these questions
        local[used] = np.arange(len(used))
        sims = terms[used] @ matrix.T  # (u, E) @ (E, C) -> (u, C): each term's cosine with every candidate
        if method == "3cosmul":
            sims += 1
            sims /= 2  # cosines mapped to [0, 1]
        for start in range(first, last, chunk):
            stop = min(start + chunk, last)
            a, b, c = local[questions[start:stop]].T  # (n,) rows of `sims` each
            scores, other = buffer[: stop - start], spare[: stop - start]  # (n, C) each
            _score(scores, other, sims, (a, b, c), method, epsilon)
            if exclude is not None:
                _exclude(scores, position, np.asarray(exclude[start:stop], dtype=np.int64))
            top = _top(scores, take)  # (n, take) candidate positions, best first
            values = np.take_along_axis(scores, top, axis=1)  # (n, take)
            if norms is not None:
                values /= norms[start:stop, None]
            ids = candidates[top]
            ids[~np.isfinite(values)] = -1
            ids_out[start:stop, :take] = ids
            scores_out[start:stop, :take] = values
    return ids_out, scores_out


def _sum_norms(terms: np.ndarray, questions: np.ndarray) -> np.ndarray:
    """(Q,) float32 |b - a + c| of each question (1 where it is 0): 3CosAdd's cos(x, b - a + c) is
    (x·b - x·a + x·c) / |b - a + c| for a unit x."""
    t64 = terms.astype(np.float64)
    norms = np.linalg.norm(t64[questions[:, 1]] - t64[questions[:, 0]] + t64[questions[:, 2]], axis=1)  # (Q,)
    found: np.ndarray = np.where(norms > 0, norms, 1.0).astype(np.float32)
    return found


def _score(
    scores: np.ndarray,
    other: np.ndarray,
    sims: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    method: AnalogyMethod,
    epsilon: float,
) -> None:
    """A block of questions scored against every candidate, into `scores` (n, C) in place; `other` (n, C) is room for
    one term's cosines. `rows` are the rows of `sims` (u, C) for each question's a, b and c, (n,) each."""
    a, b, c = rows
    if method == "3cosadd":  # x·b - x·a + x·c; the division by |b - a + c| keeps a row's order: done last
        np.take(sims, b, axis=0, out=scores, mode="clip")  # mode="clip": `out` is filled unbuffered
        scores -= np.take(sims, a, axis=0, out=other, mode="clip")
        scores += np.take(sims, c, axis=0, out=other, mode="clip")
    else:  # cos'(x, b) · cos'(x, c) / (cos'(x, a) + ε)
        np.take(sims, b, axis=0, out=scores, mode="clip")
        scores *= np.take(sims, c, axis=0, out=other, mode="clip")
        np.take(sims, a, axis=0, out=other, mode="clip")
        other += np.float32(epsilon)
        scores /= other


def _spans(questions: np.ndarray, chunk: int, budget: int) -> Iterator[tuple[int, int]]:
    """Runs of consecutive questions, whole chunks each, that use at most `budget` distinct terms (or one chunk).

    Benchmarks list their questions by category, so a run's terms are few and each term's cosines with every
    candidate are computed once per run rather than once per chunk.
    """
    first = 0
    while first < len(questions):
        seen: set[int] = set()
        last = first
        while last < len(questions):
            more = seen.union(questions[last : last + chunk].ravel().tolist())
            if len(more) > budget and last > first:
                break
            seen, last = more, min(last + chunk, len(questions))
        yield first, last
        first = last


def _exclude(scores: np.ndarray, position: np.ndarray, excluded: np.ndarray) -> None:
    """Set to -inf, in place, each question's excluded ids that are candidates. excluded: (n, X), -1 pads."""
    valid = (excluded >= 0) & (excluded < len(position))
    where = np.where(valid, position[np.where(valid, excluded, 0)], -1)  # (n, X) candidate positions or -1
    rows, cols = np.nonzero(where >= 0)
    scores[rows, where[rows, cols]] = -np.inf


def _top(scores: np.ndarray, take: int) -> np.ndarray:
    """(n, take) positions of each row's largest scores, best first; equal scores by lower position, even at the cut."""
    if take == 1:
        best: np.ndarray = scores.argmax(axis=1)[:, None]  # argmax keeps the first (lowest) position among equals
        return best
    scores[np.isnan(scores)] = -np.inf  # a NaN row (from NaN weights) must not break the count below
    width = scores.shape[1]
    kth = np.partition(scores, width - take, axis=1)[:, width - take, None]  # (n, 1) each row's take-th largest
    above = scores > kth  # (n, C): all of these are kept
    tied = scores == kth  # (n, C): the lowest positions among these fill the places left
    left = take - above.sum(axis=1, keepdims=True)  # (n, 1)
    keep = above | (tied & (np.cumsum(tied, axis=1) <= left))  # exactly `take` per row
    top = np.nonzero(keep)[1].reshape(len(scores), take)  # (n, take) ascending positions
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def analogy(
    model: Model,
    a: str | int,
    b: str | int,
    c: str | int,
    *,
    k: int = 10,
    method: AnalogyMethod = "3cosadd",
    filters: TokenFilter = TokenFilter.words_only(),  # noqa: B008 - frozen dataclass, never mutated
    cache_dir: str | os.PathLike[str] | None = None,
    index: VectorIndex | None = None,
) -> AnalogyResult:
    """`a : b :: c : ?` — the k best rows by 3CosAdd or 3CosMul; every piece of a, b and c is excluded.

    Each term is a token (its exact vocabulary string, or an id) or a word (tokenized alone, its pieces' rows
    mean-pooled). Answers come from the rows `filters` allows (whole-word tokens by default).

    >>> [answer.token for answer in analogy(load_model(), "man", "king", "woman", k=3).answers]
    ['queen', 'kings', 'monarch']
    """
    check_k(k)
    check_method(method)
    if not isinstance(filters, TokenFilter):
        raise InputError(f"filters must be a TokenFilter, got {filters!r}.", "Example: TokenFilter.words_only().")
    found = [term_vector(model, term) for term in (a, b, c)]
    index = given_index(model, index, cache_dir)
    candidates = np.flatnonzero(index.allowed(filters))
    terms = np.stack([unit_vector(t.vector) for t in found])  # (3, E)
    exclude = np.asarray([[i for t in found for i in t.ids]], dtype=np.int64)  # (1, X)
    ids, scores = solve_analogies(
        index.raw.unit, candidates, terms, np.array([[0, 1, 2]]), exclude, k=k, method=method
    )  # (1, k) each
    answers = tuple(
        AnalogyAnswer(rank=rank, id=int(i), token=index.tokens[i] or f"[row_{i}]", score=float(s))
        for rank, (i, s) in enumerate(zip(ids[0], scores[0], strict=True), 1)
        if i >= 0
    )
    fa, fb, fc = found
    return AnalogyResult(
        model=model.source.description,
        a=fa.query,
        b=fb.query,
        c=fc.query,
        pieces_a=fa.pieces,
        pieces_b=fb.pieces,
        pieces_c=fc.pieces,
        ids_a=fa.ids,
        ids_b=fb.ids,
        ids_c=fc.ids,
        method=method,
        k=k,
        filters=filters,
        candidates=len(candidates),
        answers=answers,
    )
