"""Nearest tokens in the input matrix, and the similarity of two words or tokens.

Queries are tokens, ids, words (pieces pooled), raw vectors, or expressions of positive and negative terms (gensim's
`most_similar(positive, negative)` semantics). Metrics: cosine, dot product, euclidean distance. Scores can be taken
in an anisotropy-adjusted space (centred, optionally all-but-the-top), shown beside the raw ones.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import METRICS, Metric
from ..core.results import Result, table, visible
from ..core.tokens import check_text
from ..embeddings.static import Pool, StaticVector, token_vector, vector
from .index import Adjustment, Space, TokenFilter, VectorIndex, open_index

_BATCH = 256  # queries per matrix product: (256, rows) float32 scores at a time


@dataclass(frozen=True)
class Expression:
    """`positive` terms added and `negative` terms subtracted (unit vectors, averaged), as gensim's most_similar."""

    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()

    def __post_init__(self) -> None:  # one term given as a str is that term, never its letters
        for name in ("positive", "negative"):
            terms = getattr(self, name)
            if isinstance(terms, (str, int)) and not isinstance(terms, bool):
                terms = (terms,)
            if not isinstance(terms, (tuple, list)) or not all(_is_term(t) for t in terms):
                raise InputError(
                    f"Expression {name} terms must be words, tokens or token ids, got {terms!r}.",
                    "Example: Expression(positive=('king', 'woman'), negative=('man',)).",
                )
            object.__setattr__(self, name, tuple(terms))

    def __str__(self) -> str:
        return " ".join([*(f"+{t}" for t in self.positive), *(f"-{t}" for t in self.negative)])


Query = str | int | np.ndarray | Expression


def _is_term(term: object) -> bool:
    return isinstance(term, (str, int, np.integer)) and not isinstance(term, bool)


def parse_queries(
    queries: Sequence[str], positive: Sequence[str] = (), negative: Sequence[str] = (), *, ids: bool = False
) -> list[str | int | Expression]:
    """The queries of `bertlens neighbors` (and the web API's neighbours request) as `neighbors_many` takes them.

    Either `queries` (one result each; token ids when `ids`) or `positive`/`negative` terms (one Expression), not both.
    """
    if positive or negative:
        if queries:
            raise InputError(
                "Give either queries or positive/negative terms, not both.",
                "Ask for the terms' expression and the queries separately.",
            )
        if ids:
            raise InputError(
                "id (--id) applies to queries, not to positive/negative terms.",
                "Give the terms as tokens or words, without id.",
            )
        return [Expression(tuple(positive), tuple(negative))]
    if not queries:
        raise InputError("No query given.", "Give a token, word or token id (e.g. dog), or positive/negative terms.")
    if not ids:
        return list(queries)
    try:
        return [int(q) for q in queries]
    except ValueError:
        raise InputError(
            f"id (--id) expects integers, got {' '.join(queries)}.", "Give token ids such as 3899, or drop id."
        ) from None


@dataclass(slots=True)
class Neighbor:
    rank: int
    id: int
    token: str
    score: float  # in the metric (and space) asked for; for euclidean, the distance (smaller is nearer)
    raw_score: float | None  # the same in the unadjusted space, when scores were adjusted


@dataclass(frozen=True, repr=False)
class Neighbors(Result):
    """The k rows of the input matrix nearest to one query."""

    model: str
    query: str
    kind: str  # token, id, word, vector, or expression
    pieces: tuple[str, ...]  # the query's pieces (for an expression, every term's)
    ids: tuple[int, ...]  # their ids, all excluded from the results
    metric: str
    k: int
    filters: TokenFilter
    adjustment: str  # "none", or how the space was adjusted
    baseline: float  # mean cosine of random pairs of allowed rows in the space used: how high "high" is
    neighbors: tuple[Neighbor, ...]

    def __repr__(self) -> str:
        top = ", ".join(f"{n.token} {n.score:.3f}" for n in self.neighbors[:5])
        return f"Neighbors({self.query!r}: {top}{', …' if len(self.neighbors) > 5 else ''})"

    def to_table(self) -> str:
        adjusted = self.adjustment != "none"
        head = ["rank", "id", "token", f"{self.metric} (adjusted)" if adjusted else self.metric]
        rows = [(n.rank, n.id, visible(n.token), n.score, *([n.raw_score] if adjusted else [])) for n in self.neighbors]
        pieces = " ".join(self.pieces)
        lines = [
            f"{self.query!r} ({self.kind}; pieces: {pieces or '-'}), nearest {self.k} by {self.metric}:",
            table(head + (["raw"] if adjusted else []), rows),
        ]
        if len(self.neighbors) < self.k:
            lines.append(f"Only {len(self.neighbors)} rows are left after the filters and the query's own pieces.")
        if adjusted:
            lines.append(f"Adjusted space: {self.adjustment}; raw scores beside.")
        if self.metric == "cosine":
            lines.append(f"Baseline: random pairs of these tokens have mean cosine {self.baseline:.3f} in this space.")
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class NeighborsBatch(Result):
    """Neighbours of many queries, in query order."""

    results: tuple[Neighbors, ...]

    def __repr__(self) -> str:
        return f"NeighborsBatch({len(self.results)} queries)"

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> Neighbors:
        return self.results[i]

    def to_table(self) -> str:
        return "\n\n".join(r.to_table() for r in self.results)


@dataclass(frozen=True, repr=False)
class PairSimilarity(Result):
    """How similar two words or tokens are, with the pieces used for each."""

    model: str
    a: str
    b: str
    pieces_a: tuple[str, ...]
    pieces_b: tuple[str, ...]
    ids_a: tuple[int, ...]
    ids_b: tuple[int, ...]
    metric: str
    adjustment: str
    score: float
    raw_score: float | None  # unadjusted, when adjusted
    baseline: float  # mean cosine of random token pairs in the same space

    def __repr__(self) -> str:
        return f"PairSimilarity({self.a!r}, {self.b!r}: {self.metric} {self.score:.4f})"

    def to_table(self) -> str:
        rows = [(self.a, " ".join(self.pieces_a)), (self.b, " ".join(self.pieces_b))]
        lines = [table(["term", "pieces"], rows), f"{self.metric}: {self.score:.4f}"]
        if self.raw_score is not None:
            lines[-1] += f" ({self.adjustment}); raw: {self.raw_score:.4f}"
        if self.metric == "cosine":
            lines.append(f"Baseline: random token pairs have mean cosine {self.baseline:.3f} in this space.")
        return "\n".join(lines)


@dataclass
class _Resolved:
    """A query as a raw-space vector, with what it was made of."""

    label: str
    kind: str
    vector: np.ndarray  # (E,) float32
    pieces: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()
    parts: list[tuple[float, np.ndarray]] = field(default_factory=list)  # (weight, raw vector) for expressions
    token: int | None = None  # the row, when the query names one token (a token or id query): see `_token_id`


def _resolve(model: Model, query: Query, pool: Pool, dims: int) -> _Resolved:
    if isinstance(query, Expression):
        if not query.positive and not query.negative:
            raise InputError("The expression has no terms.", "Give at least one positive or negative term.")
        parts, pieces, ids = [], [], []
        for weight, terms in ((1.0, query.positive), (-1.0, query.negative)):
            for term in terms:
                found = term_vector(model, term, pool)
                parts.append((weight, found.vector))
                pieces += found.pieces
                ids += found.ids
        return _Resolved(str(query), "expression", parts[0][1], tuple(pieces), tuple(ids), parts)
    if isinstance(query, np.ndarray):
        if query.ndim != 1 or query.shape[0] != dims:
            raise InputError(
                f"The query vector has shape {query.shape}, but rows of this matrix have {dims} values.",
                f"Pass a 1-D vector of length {dims}.",
            )
        if not np.all(np.isfinite(query)):
            raise InputError("The query vector holds NaN or infinite values.", "Pass finite numbers.")
        return _Resolved(f"vector[{dims}]", "vector", query.astype(np.float32))
    token_id = _token_id(model, query)
    if token_id is not None:  # one row: no pooling, no StaticVector (fast for large batches)
        kind = "id" if isinstance(query, (int, np.integer)) else "token"
        row = model.embedding_weights.word_embeddings[token_id]
        piece = model.vocabulary.id_to_token(token_id) or f"[row_{token_id}]"
        return _Resolved(str(query), kind, row, (piece,), (token_id,), token=token_id)
    found = term_vector(model, query, pool)
    return _Resolved(found.query, found.kind, found.vector, found.pieces, found.ids)


def _token_id(model: Model, query: Query) -> int | None:
    """The row of a query that names one token (an in-range id, or an exact vocabulary string), else None."""
    if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
        return int(query) if 0 <= int(query) < model.matrix_rows else None
    return model.vocabulary.token_to_id(check_text(query, "query")) if isinstance(query, str) else None


def term_vector(model: Model, term: str | int, pool: Pool = "mean") -> StaticVector:
    """A query term: a token id, a token's exact string, or a word (its pieces' rows pooled)."""
    if isinstance(term, (int, np.integer)) and not isinstance(term, bool):
        return token_vector(model, int(term))
    return vector(model, term, pool)


def _query_vectors(queries: list[_Resolved], space: Space) -> np.ndarray:
    """Each query moved into the scoring space, not normalised: (queries, E)."""
    out = []
    for q in queries:
        if q.parts:  # expression: mean of the terms' unit vectors, signed (gensim), then normalised
            units = [w * _normalise(space.transform(v[None])[0]) for w, v in q.parts]
            out.append(_normalise(np.mean(units, axis=0)))
        else:
            out.append(space.transform(q.vector[None])[0])
    return np.asarray(out, dtype=np.float32)


def _normalise(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype(np.float32)


def _scores(space: Space, queries: np.ndarray, metric: str, squared_norms: np.ndarray | None) -> np.ndarray:
    """(queries, rows) float32 scan scores, larger is nearer (euclidean: negative squared distance)."""
    if metric == "cosine":
        norms = np.linalg.norm(queries, axis=1, keepdims=True)
        return (queries / np.where(norms == 0, 1, norms)) @ space.unit.T  # (q, E) @ (E, rows)
    dots = queries @ space.rows.T
    if metric == "dot":
        return dots
    q_norms = np.einsum("ij,ij->i", queries, queries)[:, None]  # (q, 1)
    return -(squared_norms[None, :] - 2 * dots + q_norms)  # type: ignore[index]


def check_k(k: int) -> None:
    """k must be a positive whole number. A k beyond the rows left returns them all (the result keeps the k asked)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise InputError(f"k must be a positive whole number, got {k!r}.", "Example: k=10.")


def given_index(model: Model, index: VectorIndex | None, cache_dir: str | os.PathLike[str] | None) -> VectorIndex:
    """The index given (checked to be one), or the model's, opened."""
    if index is None:
        return open_index(model, cache_dir)
    if not isinstance(index, VectorIndex):
        raise InputError(f"index must be a VectorIndex, got {type(index).__name__}.", "Pass open_index(model) or None.")
    return index


def check_adjustment(adjustment: Adjustment, dims: int) -> None:
    """An Adjustment that leaves most of the space: removing more than half of the directions leaves noise."""
    if not isinstance(adjustment, Adjustment):
        raise InputError(
            f"adjustment must be an Adjustment, got {adjustment!r}.", "Example: Adjustment(center=True, remove_top=3)."
        )
    if adjustment.remove_top > dims // 2:
        raise InputError(
            f"remove_top (--remove-top) is {adjustment.remove_top:,}, but the rows have {dims} dimensions: removing "
            f"more than half of them ({dims // 2}) leaves mostly noise.",
            f"Remove a few directions: Mu and Viswanath remove about dims / 100 (here {max(1, dims // 100)}).",
        )


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
        tokens = [_token_id(model, q) for q in queries]
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
    """The k nearest allowed rows for every query; each query's own pieces are excluded (fewer if fewer are left)."""
    _check_request(queries, k, metric, filters)
    index = given_index(model, index, cache_dir)
    check_adjustment(adjustment, index.dims)
    resolved = [_resolve(model, q, pool, index.dims) for q in queries]
    space = index.space(adjustment)
    allowed = index.allowed(filters)
    squared = np.einsum("ij,ij->i", space.rows, space.rows) if metric == "euclidean" else None
    baseline = index.baseline(adjustment, filters)
    lookups = _table_lookups(index, [q.token for q in resolved], allowed, k, metric, filters, adjustment)
    results: list[tuple[Neighbor, ...] | None] = [
        None if found is None else _neighbors(index, *found, None, "cosine") for found in lookups
    ]
    pending = [i for i, found in enumerate(results) if found is None]
    for start in range(0, len(pending), _BATCH):
        chunk = [resolved[i] for i in pending[start : start + _BATCH]]
        vectors = _query_vectors(chunk, space)  # (q, E)
        scores = _scores(space, vectors, metric, squared)  # (q, rows)
        top, exact = exact_top(space, vectors, scores, allowed, [q.ids for q in chunk], k, metric)
        raw = None
        if adjustment.active:
            raw = _exact(index.raw, _query_vectors(chunk, index.raw), top, metric)
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
                neighbors=found,
            )
            for q, found in zip(resolved, results, strict=True)
        )
    )


def _exact(space: Space, vectors: np.ndarray, ids: np.ndarray, metric: str) -> np.ndarray:
    """Scores of rows `ids` (q, c) for query `vectors` (q, E), from the raw values in float64: larger is nearer."""
    rows = space.rows[ids].astype(np.float64)  # (q, c, E)
    query = vectors.astype(np.float64)[:, None, :]  # (q, 1, E)
    if metric == "euclidean":
        return -np.sqrt(((rows - query) ** 2).sum(axis=-1))
    dots = (rows * query).sum(axis=-1)
    if metric == "dot":
        return dots
    norms = np.linalg.norm(rows, axis=-1) * np.linalg.norm(query, axis=-1)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


_MARGIN = 16  # extra candidates re-scored exactly, so float32 rounding in the scan cannot change the top k


def exact_top(
    space: Space,
    vectors: np.ndarray,
    scores: np.ndarray,
    allowed: np.ndarray,
    exclude: Sequence[Sequence[int]],
    k: int,
    metric: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The k best allowed rows for each query: ids (queries, k) and exact scores (larger is nearer, -inf pads).

    `scores` (queries, rows) is a float32 scan, overwritten here. It picks k + 16 candidates, which are re-scored in
    float64 and ranked (ties by id), so results depend neither on the batch a query came in nor on BLAS rounding.
    """
    scores[:, ~allowed] = -np.inf
    for row, ids in enumerate(exclude):
        if ids:
            scores[row, list(ids)] = -np.inf
    columns = scores.shape[1]
    take = min(k + _MARGIN, columns)
    top = np.argpartition(scores, columns - take, axis=1)[:, -take:]  # (queries, take), unordered
    top.sort(axis=1)  # by id, so that equal scores come out in id order
    finite = np.isfinite(np.take_along_axis(scores, top, axis=1))
    exact = np.where(finite, _exact(space, vectors, top, metric), -np.inf)  # (queries, take)
    order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(exact, order, axis=1)


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
    """The k rows of the input matrix nearest to `query` (a token, id, word, vector, or Expression)."""
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
    """Cosine (or dot, or euclidean distance) of two words or tokens, pooled from their pieces when needed."""
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
    )
