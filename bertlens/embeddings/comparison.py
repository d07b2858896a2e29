"""The same tokens in two inputs: `compare_inputs` explains both texts (`bertlens.embeddings.layer`) and compares the
embedding-layer outputs of the token ids they share; a token's `word_embeddings` row is the same in both, and what
differs is its position and segment rows, and through them (and LayerNorm) its output.
"""

from __future__ import annotations

import numpy as np

from ..core.model import Model
from .layer import explain
from .layer_results import EmbeddingComparison, SharedToken, TokenEmbedding

__all__ = ["EmbeddingComparison", "SharedToken", "compare_inputs"]


def compare_inputs(model: Model, text_a: str, text_b: str, *, check: bool = True) -> EmbeddingComparison:
    """For each token of `text_a` whose id also occurs in `text_b`, compare the two embedding-layer outputs.

    >>> c = compare_inputs(load_model(), "I like eating bread", "The banana bread was horrible")
    >>> [token.piece for token in c.shared]
    ['[CLS]', 'bread', '[SEP]']
    """
    a, b = explain(model, text_a, check=check), explain(model, text_b, check=check)
    first_in_b: dict[int, TokenEmbedding] = {}
    for token in b.tokens:
        first_in_b.setdefault(token.id, token)
    shared = []
    for ta in a.tokens:
        tb = first_in_b.get(ta.id)
        if tb is None:
            continue
        # In exact (float64) arithmetic the sums differ by the position and segment rows' differences alone.
        sum_a, sum_b = _exact_sum(ta), _exact_sum(tb)
        explained = np.zeros_like(sum_a)
        for row_a, row_b in ((ta.position_row, tb.position_row), (ta.token_type_row, tb.token_type_row)):
            if row_a is not None and row_b is not None:
                explained = explained + row_a.astype(np.float64) - row_b
        output_diff = float(np.abs(ta.output - tb.output).max())
        position_diff, segment_diff = (
            _row_diff(ta.position_row, tb.position_row),
            _row_diff(ta.token_type_row, tb.token_type_row),
        )
        shared.append(
            SharedToken(
                piece=ta.piece,
                id=ta.id,
                index_a=ta.index,
                index_b=tb.index,
                position_a=ta.position_id,
                position_b=tb.position_id,
                segment_a=ta.token_type_id,
                segment_b=tb.token_type_id,
                same_position_and_segment=(ta.position_id, ta.token_type_id) == (tb.position_id, tb.token_type_id),
                output_max_abs_diff=output_diff,
                rows_explain_sum=float(np.abs(sum_a - sum_b - explained).max()),
                word_row_max_abs_diff=float(np.abs(ta.word_row - tb.word_row).max()),
                position_row_max_abs_diff=position_diff,
                segment_row_max_abs_diff=segment_diff,
                statement=_statement(ta, tb, position_diff, segment_diff, output_diff),
            )
        )
    return EmbeddingComparison(
        model=model.source.description,
        text_a=text_a,
        text_b=text_b,
        shared=tuple(shared),
        max_abs_diff_a=a.max_abs_diff,
        max_abs_diff_b=b.max_abs_diff,
    )


def _row_diff(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    return None if a is None or b is None else float(np.abs(a - b).max())


def _statement(
    a: TokenEmbedding, b: TokenEmbedding, position_diff: float | None, segment_diff: float | None, output_diff: float
) -> str:
    """One shared token compared in a sentence: its word_embeddings row is the same in both inputs (one id, one row);
    what differs is the position and segment rows, and through them (and LayerNorm) the outputs."""
    same_row = f"{a.piece!r}: the same word_embeddings row (id {a.id}) in both"
    moved = []
    if position_diff:
        moved.append(f"position rows ({a.position_id} vs {b.position_id}; max |diff| {position_diff:.4g})")
    if segment_diff:
        moved.append(f"segment rows ({a.token_type_id} vs {b.token_type_id}; max |diff| {segment_diff:.4g})")
    if not moved:
        same_place = (a.position_id, a.token_type_id) == (b.position_id, b.token_type_id)
        where = "at the same position and segment" if same_place else "and no position or segment row differs"
        return f"{same_row}, {where}: identical outputs (max |diff| {output_diff:.4g})."
    return (
        f"{same_row}; the outputs differ by {' and '.join(moved)}: max |output diff| {output_diff:.4g} after LayerNorm."
    )


def _exact_sum(token: TokenEmbedding) -> np.ndarray:
    rows = [r for r in (token.word_row, token.token_type_row, token.position_row) if r is not None]
    total: np.ndarray = np.sum([r.astype(np.float64) for r in rows], axis=0)  # (E,)
    return total
