"""Nearest tokens in the input matrix, and the similarity of two words or tokens.

Queries are tokens, ids, words (pieces pooled), raw vectors, or expressions of positive and negative terms (gensim's
`most_similar(positive, negative)` semantics). Metrics: cosine, dot product, euclidean distance. Scores can be taken
in an anisotropy-adjusted space (centred, optionally all-but-the-top), shown beside the raw ones.

Token queries in the raw space are answered from the index's precomputed neighbour table when it can answer them
exactly (`answered_from_table` says when); every other query scans the matrix (`kernel`). Queries and their parsing
live in `query` (`Expression`, `Query` and `parse_queries` are importable from here too), the result types in
`neighbor_results` (importable from here too).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import METRICS, Metric
from ..embeddings.static import Pool
from ..embeddings.token_classes import TokenFilter
from .index import VectorIndex
from .kernel import exact_scores, exact_top, scan_scores
from .neighbor_results import Neighbor, Neighbors, NeighborsBatch, PairSimilarity
from .query import (
    Expression,
    Query,
    check_adjustment,
    check_k,
    given_index,
    parse_queries,
    query_vectors,
    resolve_query,
    term_vector,
    token_row,
)
from .space import Adjustment, Space

__all__ = [
    "Expression",
    "Metric",
    "Neighbor",
    "Neighbors",
    "NeighborsBatch",
    "PairSimilarity",
    "Query",
    "answered_from_table",
    "neighbors",
    "neighbors_many",
    "parse_queries",
    "similarity",
]

_BATCH = 256  # queries per matrix product: (256, rows) float32 scores at a time


def _check(k: int, metric: str, filters: TokenFilter = TokenFilter()) -> None:  # noqa: B008 - frozen
    check_k(k)
    if metric not in METRICS:
        raise InputError(f"Unknown metric {metric!r}.", f"Choose one of: {', '.join(METRICS)}.")
    if not isinstance(filters, TokenFilter):
        raise InputError(f"filters must be a TokenFilter, got {filters!r}.", "Example: TokenFilter.words_only().")


def _check_request(queries: Sequence[Query], k: int, metric: str, filters: TokenFilter) -> None:
    _check(k, metric, filters)
    if isinstance(queries, (str, np.ndarray, Expression)) or not isinstance(queries, Sequence):
        raise InputError(
            f"queries must be a list of queries, got {type(queries).__name__}.",
            "Pass e.g. ['dog', 'cat'] (or use neighbors).",
        )
    if len(queries) == 0:
        raise InputError("No queries were given.", "Give at least one token, word, id or vector.")


def _table_lookups(
    index: VectorIndex,
    tokens: Sequence[int | None],
    allowed: np.ndarray,
    k: int,
    metric: str,
    filters: TokenFilter,
    adjustment: Adjustment,
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Each query's answer from the precomputed neighbour table: (ids, scores) best first, or None where it must scan.

    `tokens` holds the row each query names (a token or id query), None for any other query. The table answers a
    token query by cosine in the raw space, with no special or unused rows allowed (the table was built without
    them), for k within its width, unless the query's filter leaves fewer than k of its table row (scan instead).
    """
    table = index.table
    usable = metric == "cosine" and not adjustment.active and not filters.special and not filters.unused
    if table is None or k > table.width or not usable:
        return [None] * len(tokens)
    found: list[tuple[np.ndarray, np.ndarray] | None] = []
    for token in tokens:
        if token is None:
            found.append(None)
            continue
        row_ids, row_scores = table.ids[token], table.scores[token]
        keep = allowed[row_ids] & np.isfinite(row_scores)
        if keep.sum() < k and np.isfinite(row_scores).all():  # the stricter filter left too few: scan instead
            found.append(None)
        else:
            found.append((row_ids[keep][:k], row_scores[keep][:k]))
    return found


def answered_from_table(
    model: Model,
    index: VectorIndex,
    queries: Sequence[Query],
    k: int,
    *,
    metric: Metric,
    filters: TokenFilter,
    adjustment: Adjustment,
) -> bool:
    """True exactly when `neighbors_many(model, queries, k, ..., index=index)` answers every query from `index`'s
    precomputed neighbour table (lookups, ~0.1 ms), False when it scans the matrix for any of them.

    `queries` as `neighbors_many` takes them (e.g. from `parse_queries`). Arguments `neighbors_many` refuses give
    False (it answers nothing; call it to get the error). Costs no scan: one pass over the rows' filter classes.
    """
    try:
        _check_request(queries, k, metric, filters)
        index = given_index(model, index, None)
        check_adjustment(adjustment, index.dims)
        tokens = [token_row(model, q) for q in queries]
        if any(token is None for token in tokens):
            return False
        lookups = _table_lookups(index, tokens, index.allowed(filters), k, metric, filters, adjustment)
    except InputError:
        return False
    return all(found is not None for found in lookups)


def neighbors_many(
    model: Model,
    queries: Sequence[Query],
    k: int = 10,
    *,
    metric: Metric = "cosine",
    filters: TokenFilter = TokenFilter(),  # noqa: B008 - frozen dataclass, never mutated
    adjustment: Adjustment = Adjustment(),  # noqa: B008
    pool: Pool = "mean",
    index: VectorIndex | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> NeighborsBatch:
    """The k nearest allowed rows for every query; each query's own pieces are excluded (fewer if fewer are left).

    >>> batch = neighbors_many(load_model(), ["dog", "cat"], 2)
    >>> [result.neighbors[0].token for result in batch]
    ['dogs', 'cats']
    """
    _check_request(queries, k, metric, filters)
    index = given_index(model, index, cache_dir)
    check_adjustment(adjustment, index.dims)
    resolved = [resolve_query(model, q, pool, index.dims) for q in queries]
    space = index.space(adjustment)
    allowed = index.allowed(filters)
    squared = np.einsum("ij,ij->i", space.rows, space.rows) if metric == "euclidean" else None
    baseline = index.baseline(adjustment, filters)
    lookups = _table_lookups(index, [q.token for q in resolved], allowed, k, metric, filters, adjustment)
    results = {i: _neighbors(index, *found, None, "cosine") for i, found in enumerate(lookups) if found is not None}
    pending = [i for i in range(len(resolved)) if i not in results]
    for start in range(0, len(pending), _BATCH):
        chunk = [resolved[i] for i in pending[start : start + _BATCH]]
        vectors = query_vectors(chunk, space)  # (q, E)
        scores = scan_scores(space, vectors, metric, squared)  # (q, rows)
        top, exact = exact_top(space, vectors, scores, allowed, [q.ids for q in chunk], k, metric)
        raw = None
        if adjustment.active:
            raw = exact_scores(index.raw, query_vectors(chunk, index.raw), top, metric)
        for row, i in enumerate(pending[start : start + _BATCH]):
            results[i] = _neighbors(index, top[row], exact[row], None if raw is None else raw[row], metric)
    return NeighborsBatch(
        tuple(
            Neighbors(
                model=model.source.description,
                query=q.label,
                kind=q.kind,
                pieces=q.pieces,
                ids=q.ids,
                metric=metric,
                k=k,
                filters=filters,
                adjustment=adjustment.describe(),
                baseline=baseline,
                neighbors=results[i],
                notes=q.notes,
            )
            for i, q in enumerate(resolved)
        )
    )


def _neighbors(
    index: VectorIndex, ids: np.ndarray, exact: np.ndarray, raw: np.ndarray | None, metric: str
) -> tuple[Neighbor, ...]:
    """Neighbor records for one query's ids (k,) and exact scores (k,); -inf entries (none left) are dropped."""
    sign = -1.0 if metric == "euclidean" else 1.0  # report distances, not negated distances
    return tuple(
        Neighbor(
            rank=rank,
            id=int(i),
            token=index.tokens[i] or f"[row_{i}]",
            score=sign * float(exact[rank - 1]),
            raw_score=None if raw is None else sign * float(raw[rank - 1]),
        )
        for rank, i in enumerate(ids, 1)
        if np.isfinite(exact[rank - 1])
    )


def neighbors(
    model: Model,
    query: Query,
    k: int = 10,
    *,
    metric: Metric = "cosine",
    filters: TokenFilter = TokenFilter(),  # noqa: B008
    adjustment: Adjustment = Adjustment(),  # noqa: B008
    pool: Pool = "mean",
    index: VectorIndex | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Neighbors:
    """The k rows of the input matrix nearest to `query` (a token, id, word, vector, or Expression).

    >>> model = load_model()
    >>> [n.token for n in neighbors(model, "dog", 3).neighbors]
    ['dogs', 'canine', 'puppy']
    >>> neighbors(model, Expression(positive=("king", "woman"), negative=("man",)), 1).neighbors[0].token
    'queen'
    """
    batch = neighbors_many(
        model,
        [query],
        k,
        metric=metric,
        filters=filters,
        adjustment=adjustment,
        pool=pool,
        index=index,
        cache_dir=cache_dir,
    )
    return batch.results[0]


def similarity(
    model: Model,
    a: str | int,
    b: str | int,
    *,
    metric: Metric = "cosine",
    adjustment: Adjustment = Adjustment(),  # noqa: B008
    pool: Pool = "mean",
    index: VectorIndex | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> PairSimilarity:
    """Cosine (or dot, or euclidean distance) of two words or tokens, pooled from their pieces when needed.

    >>> model = load_model()
    >>> round(similarity(model, "dog", "cat").score, 3)
    0.424
    >>> adjusted = similarity(model, "dog", "cat", adjustment=Adjustment(center=True))
    """
    _check(1, metric)
    first, second = term_vector(model, a, pool), term_vector(model, b, pool)
    index = given_index(model, index, cache_dir)
    check_adjustment(adjustment, index.dims)

    def score(space: Space | None) -> float:
        va, vb = first.vector, second.vector
        if space is not None:
            va, vb = space.transform(va[None])[0], space.transform(vb[None])[0]
        va64, vb64 = va.astype(np.float64), vb.astype(np.float64)
        if metric == "cosine":
            denominator = np.linalg.norm(va64) * np.linalg.norm(vb64)
            return float(va64 @ vb64 / denominator) if denominator else 0.0
        if metric == "dot":
            return float(va64 @ vb64)
        return float(np.linalg.norm(va64 - vb64))

    adjusted = index.space(adjustment) if adjustment.active else None
    baseline = index.baseline(adjustment, TokenFilter())
    return PairSimilarity(
        model=model.source.description,
        a=first.query,
        b=second.query,
        pieces_a=first.pieces,
        pieces_b=second.pieces,
        ids_a=first.ids,
        ids_b=second.ids,
        metric=metric,
        adjustment=adjustment.describe(),
        score=score(adjusted),
        raw_score=score(None) if adjusted is not None else None,
        baseline=baseline,
        notes=first.notes + second.notes,
    )
