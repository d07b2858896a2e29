"""Static token vectors: rows of the input matrix (`word_embeddings`), without position or segment parts.

Needs neither torch nor transformers: the tokenizer file and the one embedding tensor suffice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import POOLS, Pool, check_choice
from ..core.results import Result, table, visible
from ..core.tokens import check_text, encode

QueryKind = Literal["token", "id", "word"]


@dataclass(frozen=True, repr=False)
class StaticVector(Result):
    """A token's row of the input matrix, or a word's pieces' rows pooled."""

    model: str
    query: str  # what was asked for
    kind: QueryKind  # a token string, a token id, or a word tokenized into pieces
    pieces: tuple[str, ...]
    ids: tuple[int, ...]
    pool: str | None  # how the pieces' rows were combined; None for a single row
    unknown: bool  # whether a piece is the tokenizer's unknown token
    vector: np.ndarray  # (E,) float32
    norm: float

    def __repr__(self) -> str:
        how = f", {self.pool} of {len(self.ids)} pieces" if self.pool else ""
        return (
            f"StaticVector({self.query!r}: {' '.join(self.pieces)}{how}, dims={len(self.vector)}, norm={self.norm:.4g})"
        )

    def to_table(self) -> str:
        head = table(["piece", "id"], [(visible(p), i) for p, i in zip(self.pieces, self.ids, strict=True)])
        how = f"{self.pool} of {len(self.ids)} pieces" if self.pool else "one row of word_embeddings"
        lines = [
            head,
            "",
            f"{self.query!r} ({self.kind}): {how}; {len(self.vector)} dims, norm {self.norm:.6g}",
        ]
        if self.unknown:
            lines.append("note: a piece is the unknown token: the vocabulary cannot spell this word.")
        values = [f"{v: .6f}" for v in self.vector.tolist()]
        lines += ["  ".join(values[i : i + 8]) for i in range(0, len(values), 8)]
        return "\n".join(lines)


def unknown_id(model: Model) -> int | None:
    """The id of the tokenizer's unknown token ([UNK] or <unk>), or None when it has none."""
    for name in ("[UNK]", "<unk>"):
        found = model.vocabulary.token_to_id(name)
        if found is not None:
            return found
    return None


def _result(model: Model, query: str, kind: QueryKind, ids: list[int], pool: str | None) -> StaticVector:
    rows = model.embedding_weights.word_embeddings[np.asarray(ids, dtype=np.int64)]  # (pieces, E)
    if pool is None or pool == "mean":
        vector = rows.mean(axis=0, dtype=np.float64).astype(np.float32) if len(ids) > 1 else rows[0].copy()
    elif pool == "sum":
        vector = rows.sum(axis=0, dtype=np.float64).astype(np.float32)
    else:
        vector = rows[0 if pool == "first" else -1].copy()
    unk = unknown_id(model)
    return StaticVector(
        model=model.source.description,
        query=query,
        kind=kind,
        pieces=tuple(model.vocabulary.id_to_token(i) or f"[row_{i}]" for i in ids),
        ids=tuple(ids),
        pool=pool if len(ids) > 1 else None,
        unknown=unk is not None and unk in ids,
        vector=vector,
        norm=float(np.linalg.norm(vector)),
    )


def token_vector(model: Model, token: str | int) -> StaticVector:
    """The row of one token, given as its exact vocabulary string (e.g. "dog", "##ing", "[CLS]") or its id."""
    rows = model.matrix_rows
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        if not 0 <= int(token) < rows:
            raise InputError(
                f"Token id {token} is out of range: the matrix has rows 0 to {rows - 1}.",
                f"Give an id from 0 to {rows - 1} (bertlens tokens TEXT shows a text's ids).",
            )
        return _result(model, str(int(token)), "id", [int(token)], None)
    token = check_text(token, "token")
    found = model.vocabulary.token_to_id(token)
    if found is None:
        raise InputError(
            f"{token!r} is not a token of this vocabulary.",
            "Use word_vector (CLI: bertlens vector --word) to split it into pieces and pool them.",
        )
    return _result(model, token, "token", [found], None)


def word_vector(model: Model, word: str, pool: Pool = "mean") -> StaticVector:
    """A word tokenized alone (no special tokens, no padding), its pieces' rows pooled by `pool`."""
    check_text(word, "word")
    check_choice(pool, POOLS, "pooling")
    ids = list(encode(model, word, add_special_tokens=False).ids)
    if not ids:
        raise InputError(f"{word!r} has no pieces: it is empty or only whitespace.", "Give a word with letters.")
    return _result(model, word, "word", ids, pool)


def vector(model: Model, query: str, pool: Pool = "mean") -> StaticVector:
    """A token's row if `query` is a token of the vocabulary, else the pooled rows of its pieces."""
    check_text(query, "query")
    if model.vocabulary.token_to_id(query) is not None:
        return token_vector(model, query)
    return word_vector(model, query, pool)
