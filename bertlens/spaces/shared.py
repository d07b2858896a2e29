"""The tokens two vocabularies share: the rows `diff` compares, one per token, in A's id order.

When the two models have the same vocabulary (the same token at every id: a model and its fine-tuned copy, two
checkpoints of one run) every row is shared. When they differ (MiniLM against a cased BERT, a vocabulary and its
extension) the shared rows are the tokens spelled the same in both, as each tokenizer writes them ("##ing" is a piece
in both WordPiece vocabularies). Rows with no token and `[unused…]` rows are left out: no text holds them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..embeddings.token_classes import token_classes

KINDS = ("word", "piece", "number", "punctuation", "special")  # a shared token's class, as `diff` summarises them


@dataclass(frozen=True)
class SharedTokens:
    """The rows of A and of B that hold the same token, aligned: row i is `tokens[i]`, id `ids_a[i]` in A and
    `ids_b[i]` in B."""

    ids_a: np.ndarray  # (n,) int64
    ids_b: np.ndarray  # (n,) int64
    tokens: tuple[str, ...]
    kinds: np.ndarray  # (n,) str: one of KINDS
    same_vocabulary: bool  # every id holds the same token in both

    def __len__(self) -> int:
        return len(self.tokens)


def kinds_of(tokens: list[str | None], special_ids: frozenset[int]) -> tuple[np.ndarray, np.ndarray]:
    """(rows,) kind of each token (one of KINDS, or "" for rows with no token and [unused] rows) and (rows,) bool:
    which rows are real tokens."""
    classes = token_classes(tokens, special_ids)
    kinds = np.full(len(tokens), "word", dtype=object)
    kinds[classes["continuation"]] = "piece"
    kinds[classes["numbers"]] = "number"
    kinds[classes["punctuation"]] = "punctuation"
    kinds[classes["special"]] = "special"
    kept = ~classes["unused"]
    kinds[~kept] = ""
    return kinds.astype(str), kept


def shared_tokens(model_a: Model, model_b: Model) -> SharedTokens:
    """The tokens of A's vocabulary that B's holds too (all of them for one vocabulary), as aligned rows."""
    tokens_a = model_a.vocabulary.tokens_by_id(model_a.matrix_rows)
    tokens_b = model_b.vocabulary.tokens_by_id(model_b.matrix_rows)
    kinds, kept = kinds_of(tokens_a, model_a.vocabulary.special_ids)
    same = tokens_a == tokens_b
    if same:
        ids_a = np.flatnonzero(kept)
        ids_b = ids_a.copy()
    else:
        where_b = {t: i for i, t in enumerate(tokens_b) if t is not None}
        pairs = [(i, where_b[t]) for i, t in enumerate(tokens_a) if kept[i] and t is not None and t in where_b]
        ids_a = np.asarray([a for a, _ in pairs], dtype=np.int64)
        ids_b = np.asarray([b for _, b in pairs], dtype=np.int64)
    if len(ids_a) < 3:
        raise InputError(
            f"The two vocabularies share {len(ids_a)} token{'s' if len(ids_a) != 1 else ''}: too few to compare "
            "their spaces.",
            "Compare models whose tokenizers share tokens (the same vocabulary, or two WordPiece vocabularies).",
        )
    return SharedTokens(
        ids_a=ids_a.astype(np.int64),
        ids_b=ids_b.astype(np.int64),
        tokens=tuple(str(tokens_a[i]) for i in ids_a),
        kinds=kinds[ids_a],
        same_vocabulary=same,
    )
