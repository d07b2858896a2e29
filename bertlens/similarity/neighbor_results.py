"""The results of neighbour and similarity queries: `Neighbor` (one row found), `Neighbors` (one query's k nearest
rows), `NeighborsBatch` (many queries, in order) and `PairSimilarity` (two words or tokens), with their tables.

`nearest` computes them, and they stay importable from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..core import notebook
from ..core.results import DataFrame, Result, captured_tables, data_frame, table, visible
from ..embeddings.token_classes import TokenFilter

__all__ = ["Neighbor", "Neighbors", "NeighborsBatch", "PairSimilarity"]


@dataclass(slots=True)
class Neighbor:
    """One neighbour: its rank, id, token and score (and the raw score when the space was adjusted).

    >>> first = neighbors(load_model(), "dog", 1).neighbors[0]
    >>> first.rank, first.id, first.token
    (1, 6077, 'dogs')
    """

    rank: int
    id: int
    token: str
    score: float  # in the metric (and space) asked for; for euclidean, the distance (smaller is nearer)
    raw_score: float | None  # the same in the unadjusted space, when scores were adjusted


@dataclass(frozen=True, repr=False)
class Neighbors(Result):
    """The k rows of the input matrix nearest to one query.

    >>> result = neighbors(load_model(), "dog", 5)
    >>> len(result.neighbors), round(result.baseline, 3)  # the baseline: mean cosine of random token pairs
    (5, 0.014)
    """

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
    notes: tuple[str, ...] = ()  # e.g. a word that is not a token: its vector pooled from its pieces

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
            *(f"note: {note}" for note in self.notes),
            table(head + (["raw"] if adjusted else []), rows),
        ]
        if len(self.neighbors) < self.k:
            lines.append(f"Only {len(self.neighbors)} rows are left after the filters and the query's own pieces.")
        if adjusted:
            lines.append(f"Adjusted space: {self.adjustment}; raw scores beside.")
        if self.metric == "cosine":
            lines.append(f"Baseline: random pairs of these tokens have mean cosine {self.baseline:.3f} in this space.")
        return "\n".join(lines)

    def _repr_html_(self) -> str:  # in a notebook: the table with a bar per score
        return notebook.neighbors_html(self)


@dataclass(frozen=True, repr=False)
class NeighborsBatch(Result):
    """Neighbours of many queries, in query order.

    >>> batch = neighbors_many(load_model(), ["dog", "cat"], 3)
    >>> batch[1].query, batch.to_pandas().shape  # one row per neighbour, labelled by its query  # doctest: +SKIP
    ('cat', (6, 5))
    """

    results: tuple[Neighbors, ...]

    def __repr__(self) -> str:
        return f"NeighborsBatch({len(self.results)} queries)"

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> Neighbors:
        return self.results[i]

    def __iter__(self) -> Iterator[Neighbors]:
        return iter(self.results)

    def to_table(self) -> str:
        return "\n\n".join(r.to_table() for r in self.results)

    def to_pandas(self) -> DataFrame:
        """Every query's neighbours in one DataFrame, a `query` column first saying whose neighbour each row is."""
        found = [(r.query, captured_tables(r)[0]) for r in self.results]  # every query: the same metric and space
        headers = found[0][1][0] if found else ("rank", "id", "token", "cosine")
        return data_frame(["query", *headers], [(query, *row) for query, (_, rows) in found for row in rows])

    def _repr_html_(self) -> str:
        return notebook.batch_html("NeighborsBatch", self.results)


@dataclass(frozen=True, repr=False)
class PairSimilarity(Result):
    """How similar two words or tokens are, with the pieces used for each.

    >>> pair = similarity(load_model(), "bread", "loaf")
    >>> pair.pieces_a, pair.pieces_b
    (('bread',), ('loaf',))
    """

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
    notes: tuple[str, ...] = ()  # e.g. a word that is not a token: its vector pooled from its pieces

    def __repr__(self) -> str:
        return f"PairSimilarity({self.a!r}, {self.b!r}: {self.metric} {self.score:.4f})"

    def to_table(self) -> str:
        rows = [(self.a, " ".join(self.pieces_a)), (self.b, " ".join(self.pieces_b))]
        lines = [table(["term", "pieces"], rows), f"{self.metric}: {self.score:.4f}"]
        if self.raw_score is not None:
            lines[-1] += f" ({self.adjustment}); raw: {self.raw_score:.4f}"
        if self.metric == "cosine":
            lines.append(f"Baseline: random token pairs have mean cosine {self.baseline:.3f} in this space.")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)
