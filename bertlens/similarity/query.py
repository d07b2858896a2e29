"""What the neighbour search is asked: queries (tokens, ids, words, raw vectors, and expressions of positive and
negative terms, as gensim's `most_similar(positive, negative)`), parsed from the command line or a web request,
resolved into vectors of the raw space and moved into the scoring space, and the checks of the other arguments.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import NAME, InputError
from ..core.model import Model
from ..core.tokens import check_text
from ..embeddings.static import Pool, StaticVector, token_vector, vector
from .index import VectorIndex, open_index
from .space import Adjustment, Space


@dataclass(frozen=True)
class Expression:
    """`positive` terms added and `negative` terms subtracted (unit vectors, averaged), as gensim's most_similar.

    >>> neighbors(load_model(), Expression(positive=("king", "woman"), negative=("man",)), 3).neighbors[0].token
    'queen'
    """

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
                "{id} applies to queries, not to positive/negative terms.",
                "Give the terms as tokens or words, without id.",
                arguments={"id": NAME},
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
            f"{{id}} expects integers, got {' '.join(queries)}.",
            "Give token ids such as 3899, or drop {id}.",
            arguments={"id": NAME},
        ) from None


@dataclass
class ResolvedQuery:
    """A query as a raw-space vector, with what it was made of."""

    label: str
    kind: str
    vector: np.ndarray  # (E,) float32
    pieces: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()
    parts: list[tuple[float, np.ndarray]] = field(default_factory=list)  # (weight, raw vector) for expressions
    token: int | None = None  # the row, when the query names one token (a token or id query): see `token_row`
    notes: tuple[str, ...] = ()  # a word that is not a token is pooled from its pieces: said in every answer


def resolve_query(model: Model, query: Query, pool: Pool, dims: int) -> ResolvedQuery:
    """`query` as a raw-space vector with its pieces and ids (`InputError` for a query that names nothing)."""
    if isinstance(query, Expression):
        if not query.positive and not query.negative:
            raise InputError("The expression has no terms.", "Give at least one positive or negative term.")
        parts: list[tuple[float, np.ndarray]] = []
        pieces: list[str] = []
        ids: list[int] = []
        notes: list[str] = []
        for weight, terms in ((1.0, query.positive), (-1.0, query.negative)):
            for term in terms:
                found = term_vector(model, term, pool)
                parts.append((weight, found.vector))
                pieces += found.pieces
                ids += found.ids
                notes += found.notes
        return ResolvedQuery(
            str(query), "expression", parts[0][1], tuple(pieces), tuple(ids), parts, notes=tuple(notes)
        )
    if isinstance(query, np.ndarray):
        if query.ndim != 1 or query.shape[0] != dims:
            raise InputError(
                f"The query vector has shape {query.shape}, but rows of this matrix have {dims} values.",
                f"Pass a 1-D vector of length {dims}.",
            )
        if not np.all(np.isfinite(query)):
            raise InputError("The query vector holds NaN or infinite values.", "Pass finite numbers.")
        return ResolvedQuery(f"vector[{dims}]", "vector", query.astype(np.float32))
    token_id = token_row(model, query)
    if token_id is not None:  # one row: no pooling, no StaticVector (fast for large batches)
        kind = "id" if isinstance(query, (int, np.integer)) else "token"
        row = model.embedding_weights.word_embeddings[token_id]
        piece = model.vocabulary.id_to_token(token_id) or f"[row_{token_id}]"
        return ResolvedQuery(str(query), kind, row, (piece,), (token_id,), token=token_id)
    found = term_vector(model, query, pool)
    return ResolvedQuery(found.query, found.kind, found.vector, found.pieces, found.ids, notes=found.notes)


def token_row(model: Model, query: Query) -> int | None:
    """The row of a query that names one token (an in-range id, or an exact vocabulary string), else None."""
    if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
        return int(query) if 0 <= int(query) < model.matrix_rows else None
    return model.vocabulary.token_to_id(check_text(query, "query")) if isinstance(query, str) else None


def term_vector(model: Model, term: str | int, pool: Pool = "mean") -> StaticVector:
    """A query term: a token id, a token's exact string, or a word (its pieces' rows pooled)."""
    if isinstance(term, (int, np.integer)) and not isinstance(term, bool):
        return token_vector(model, int(term))
    return vector(model, check_text(term, "query"), pool)


def query_vectors(queries: Sequence[ResolvedQuery], space: Space) -> np.ndarray:
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
            f"{{remove_top}} is {adjustment.remove_top:,}, but the rows have {dims} dimensions: removing "
            f"more than half of them ({dims // 2}) leaves mostly noise.",
            f"Remove a few directions: Mu and Viswanath remove about dims / 100 (here {max(1, dims // 100)}).",
            arguments={"remove_top": NAME},
        )
