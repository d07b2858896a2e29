"""How alike the embedding layer's position rows are: the cosine of every pair of `position_embeddings` rows, and
of the `token_type_embeddings` rows (drawn by bertlens.plots.positions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.results import Result, table


@dataclass(frozen=True, repr=False)
class PositionSimilarity(Result):
    """Cosine similarity of every pair of `position_embeddings` rows, and of the `token_type_embeddings` rows.

    >>> table = position_similarity(load_model(), limit=4)
    >>> round(float(table.cosine[0, 1]), 2)  # position 0 against position 1  # doctest: +SKIP
    """

    model: str
    family: str
    rows: int  # position rows compared (the first `rows` of the table)
    table_rows: int  # rows in the whole table
    first_position: int  # the row of a text's first token (RoBERTa-like: padding_idx + 1; rows before it unused)
    cosine: np.ndarray  # (rows, rows) float64
    norms: np.ndarray  # (rows,) float64: each position row's length
    token_types: np.ndarray | None  # (types, types) float64 cosine of token_type_embeddings rows; None if absent
    token_type_norms: np.ndarray | None  # (types,)
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return f"PositionSimilarity({self.family}, {self.rows} positions)"

    def by_distance(self, distances: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256)) -> list[tuple[int, float]]:
        """Mean cosine of position rows i and i + d, for each distance d that fits (over used rows)."""
        used = self.cosine[self.first_position :, self.first_position :]
        return [(d, float(np.diagonal(used, d).mean())) for d in distances if d < len(used)]

    def to_table(self) -> str:
        lines = [
            f"{self.family} position_embeddings: {self.rows} of {self.table_rows} rows compared "
            f"(cosine of rows i and j); a text's first token uses row {self.first_position}.",
            table(["distance", "mean cosine"], self.by_distance()),
            f"norms of the rows: min {self.norms.min():.4g}, mean {self.norms.mean():.4g}, max {self.norms.max():.4g}",
        ]
        if self.token_types is not None and self.token_type_norms is not None:
            rows = [
                (i, float(self.token_type_norms[i]), *self.token_types[i].tolist())
                for i in range(len(self.token_types))
            ]
            lines += ["", "token_type_embeddings rows:", table(["type", "norm", *map(str, range(len(rows)))], rows)]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _cosine_matrix(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of every pair of rows (n, E) in float64: (n, n), and the norms (n,). A zero row has cosine 0."""
    wide = rows.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1)
    unit = wide / np.where(norms == 0, 1, norms)[:, None]
    return unit @ unit.T, norms


def position_similarity(model: Model, limit: int | None = None) -> PositionSimilarity:
    """Cosine similarity of the first `limit` (default: all) rows of the position table, and of the token-type rows.

    Families without absolute position rows (ModernBERT's rotary positions, DeBERTa-v2's relative attention) have
    nothing to compare: a clear InputError.

    >>> table = position_similarity(load_model(), limit=128)
    >>> table.cosine.shape, table.token_types.shape
    ((128, 128), (2, 2))
    """
    weights = model.embedding_weights
    positions = weights.position_embeddings
    if positions is None:
        raise InputError(
            f"{model.family.label} adds no absolute position rows in its embedding layer: positions enter inside "
            "attention (relative or rotary), so there is no position table to compare.",
            "Use a model with absolute positions (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA).",
        )
    total = len(positions)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
        raise InputError(f"limit must be a positive integer, got {limit!r}.", f"This table has {total} rows.")
    rows = total if limit is None else min(int(limit), total)
    notes: list[str] = []
    if limit is not None and limit > total:
        notes.append(f"limit {limit} is more than the table's {total} rows: all {total} are shown.")
    first = (model.config.pad_token_id or 0) + 1 if model.family.position_scheme == "absolute-offset" else 0
    if first:
        notes.append(
            f"Rows 0..{first - 1} are never used for real tokens: position ids start at padding_idx + 1 = {first}."
        )
    cosine, norms = _cosine_matrix(positions[:rows])
    types = weights.token_type_embeddings
    type_cosine, type_norms = (None, None) if types is None else _cosine_matrix(types)
    if types is None:
        notes.append(f"{model.family.label} has no token_type_embeddings.")
    return PositionSimilarity(
        model=model.source.description,
        family=model.family.label,
        rows=rows,
        table_rows=total,
        first_position=min(first, rows - 1),
        cosine=cosine,
        norms=norms,
        token_types=type_cosine,
        token_type_norms=type_norms,
        notes=tuple(notes),
    )
