"""Whether new rows live in the input matrix's space: each row's norm against the old rows' norms, and its cosine with
the mean of the word's old pieces' rows. Rows given by the user (`--init rows`) that lie far outside are warned about:
a vector from another model or another training run has another scale and other directions, and the model reads it
as noise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.model import Model

LOW_FACTOR = 0.5  # a norm below LOW_FACTOR x the old rows' 1st percentile is far outside
HIGH_FACTOR = 1.5  # a norm above HIGH_FACTOR x their 99th percentile is far outside
ORTHOGONAL = 0.1  # |cosine| with the pieces' mean below this: no relation to what the pieces say (384 dims: ~2 sd)
LISTED = 10  # words named in the warnings; the rest are counted


def old_norms(model: Model) -> np.ndarray:
    """The old rows' norms, sorted (special tokens and [unused] rows left out, as `TokenFilter()` does): (rows,)."""
    from ..embeddings.token_classes import TokenFilter, token_classes

    matrix = model.embedding_weights.word_embeddings  # (V, E)
    classes = token_classes(model.vocabulary.tokens_by_id(len(matrix)), model.vocabulary.special_ids)
    keep = TokenFilter().keep(classes)
    return np.sort(np.linalg.norm(matrix[keep].astype(np.float64), axis=1))


def norm_percentile(norms: np.ndarray, norm: float) -> float:
    """% of the (sorted) old norms smaller than `norm`."""
    return float(100.0 * np.searchsorted(norms, norm) / len(norms))


def cosine_with_pieces(matrix: np.ndarray, row: np.ndarray, piece_ids: Sequence[int]) -> float:
    """Cosine of `row` (E,) with the mean of the old rows `piece_ids` (0 when either is zero)."""
    pieces = matrix[np.asarray(piece_ids, dtype=np.int64)].astype(np.float64).mean(axis=0)
    row64 = row.astype(np.float64)
    denominator = float(np.linalg.norm(row64) * np.linalg.norm(pieces))
    return float(row64 @ pieces / denominator) if denominator > 0 else 0.0


@dataclass(frozen=True)
class SpaceCheck:
    """New rows against the old: per word, the norm's percentile and the cosine with the pieces' mean; warnings."""

    percentiles: tuple[float, ...]
    cosines: tuple[float, ...]
    warnings: tuple[str, ...]  # empty unless `warn` and some row lies far outside


def check_space(
    model: Model, rows: np.ndarray, words: Sequence[str], pieces: Sequence[Sequence[int]], *, warn: bool
) -> SpaceCheck:
    """`rows` (n, E) for `words` (split into old `pieces`) against the input matrix; warnings only when `warn`
    (given rows: a strategy's own rows are what they are by design, and the report compares them)."""
    matrix = model.embedding_weights.word_embeddings
    norms = old_norms(model)
    low, high = float(np.percentile(norms, 1)), float(np.percentile(norms, 99))
    median = float(np.median(norms))
    percentiles, cosines, outside = [], [], []
    for word, row, ids in zip(words, rows, pieces, strict=True):
        norm = float(np.linalg.norm(row.astype(np.float64)))
        cosine = cosine_with_pieces(matrix, row, ids)
        percentiles.append(norm_percentile(norms, norm))
        cosines.append(cosine)
        said = []
        if norm < LOW_FACTOR * low:
            said.append(f"norm {norm:.3g} is {norm / low:.2g}x the old rows' 1st percentile ({low:.3g})")
        elif norm > HIGH_FACTOR * high:
            said.append(f"norm {norm:.3g} is {norm / high:.2g}x the old rows' 99th percentile ({high:.3g})")
        if abs(cosine) < ORTHOGONAL:
            said.append(f"cosine with its old pieces' mean is {cosine:.3f}")
        if said:
            outside.append(f"{word!r}: {' and '.join(said)}")
    warnings = []
    if warn and outside:
        shown = "; ".join(outside[:LISTED]) + (f"; and {len(outside) - LISTED} more" if len(outside) > LISTED else "")
        warnings.append(
            f"{len(outside)} of {len(words)} given rows do not look like rows of this input matrix (old rows' norms: "
            f"1% {low:.3g}, median {median:.3g}, 99% {high:.3g}): {shown}. Rows from another model or space are read "
            "as noise: map them into this space first (or scale them to the median norm), or use the pieces strategy."
        )
    return SpaceCheck(tuple(percentiles), tuple(cosines), tuple(warnings))
