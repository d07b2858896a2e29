"""Each row's k nearest other rows, exactly, for a whole matrix at once; and how much two such sets overlap.

`nearest_sets` ranks every row against every other by cosine. The products run in torch in float32 over blocks of the
upper triangle only (the score matrix is symmetric: each block serves its rows and its columns' rows, half the work),
keeping `k + MARGIN` candidates per row; the candidates are then scored again in float64 and ranked with ties broken by
id, so the answer depends neither on the block size nor on BLAS rounding (as `similarity.kernel.exact_top` does for
single queries).
"""

from __future__ import annotations

import numpy as np

from ..similarity.kernel import MARGIN

BLOCK = 2048  # rows per block of the product: (BLOCK, BLOCK) float32 scores, 16 MiB
PROBE = 8192  # rows spread over the matrix that set each row's floor: about k * rows / PROBE candidates kept per row
CANDIDATES = 50_000_000  # candidates kept in all (about 1 GB): a larger vocabulary spreads more rows to stay within


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """(n, d) float32 rows scaled to length 1 (all-zero rows stay zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray = rows / np.where(norms == 0, 1, norms)
    return unit


def nearest_sets(unit: np.ndarray, k: int, *, block: int = BLOCK, probe: int = PROBE) -> np.ndarray:
    """(n, k) int64: for each row of `unit` (n, d), unit rows, the ids of its k nearest other rows by cosine, nearest
    first by float32 score. The set is exact: where rounding could swap the k-th and the next, float64 scores (ties
    by the smaller id) decide.

    Each row first gets a floor: the score of its (k + MARGIN)-th best among `probe` rows spread over the matrix,
    less the largest rounding two float32 products of unit rows can differ by. The scan then keeps, block by block of
    the upper triangle, every score at or above the floor of its row or of its column (a comparison, far cheaper than
    a top-k per block), which holds each row's k + MARGIN best; those are sorted once, per row.
    """
    import torch

    n, width = unit.shape
    if not 1 <= k < n:
        raise ValueError(f"k must be between 1 and {n - 1} (rows - 1), not {k}")
    keep = min(n - 1, k + MARGIN)
    x = torch.from_numpy(np.ascontiguousarray(unit, dtype=np.float32))
    slack = 2 * width * float(np.finfo(np.float32).eps)  # |float32 dot - exact| <= d*eps for unit rows, twice
    with torch.inference_mode():
        spread_rows = max(probe, keep + 1, -(-keep * n * n // CANDIDATES))  # 8,192 for BERT's 30,522 rows
        spread = torch.linspace(0, n - 1, min(n, spread_rows)).round().long().unique()  # rows spread over the matrix
        floor = torch.empty(n)  # (n,) at or below each row's keep-th best score
        for i in range(0, n, block):
            near = x[i : i + block] @ x[spread].T  # (block, spread)
            inside = (spread >= i) & (spread < i + block)
            near[spread[inside] - i, inside.nonzero()[:, 0]] = -float("inf")  # not itself
            floor[i : i + block] = near.topk(keep, dim=1).values[:, -1] - slack
        rows: list[torch.Tensor] = []
        cols: list[torch.Tensor] = []
        found: list[torch.Tensor] = []
        for i in range(0, n, block):
            end_i = min(i + block, n)
            for j in range(i, n, block):
                end_j = min(j + block, n)
                scores = x[i:end_i] @ x[j:end_j].T  # (block_i, block_j)
                if i == j:
                    scores.fill_diagonal_(-float("inf"))
                r, c = (scores >= floor[i:end_i, None]).nonzero(as_tuple=True)
                rows.append(r + i)
                cols.append(c + j)
                found.append(scores[r, c])
                if j != i:  # the same scores, for the rows of block j
                    r, c = (scores >= floor[None, j:end_j]).nonzero(as_tuple=True)
                    rows.append(c + j)
                    cols.append(r + i)
                    found.append(scores[r, c])
        row, col, score = torch.cat(rows), torch.cat(cols), torch.cat(found)  # (candidates,) each
        order = torch.sort(row.double() * 4 + (1 - score.double())).indices  # by row, best first within a row
        counts = torch.bincount(row, minlength=n)  # (n,) candidates per row: at least `keep` each
        starts = torch.cumsum(counts, 0) - counts
        ranked = order[starts[:, None] + torch.arange(keep)[None, :]]  # (n, keep) each row's best, best first
        best, best_scores = col[ranked].numpy(), score[ranked].numpy()
    sets: np.ndarray = best[:, :k].copy()
    if keep > k:  # where the k-th and the next are closer than rounding can tell apart, rank exactly
        unsure = np.flatnonzero(best_scores[:, k - 1] - best_scores[:, k] <= slack)
        sets[unsure] = _exact(unit, unsure, best[unsure], k)
    return sets


def _exact(unit: np.ndarray, rows: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """(len(rows), k): for each of `rows`, its k best `candidates` (len(rows), width) by float64 cosine, ties by id."""
    gathered = unit[candidates].astype(np.float64)  # (r, width, d)
    scores = np.einsum("rwd,rd->rw", gathered, unit[rows].astype(np.float64))  # (r, width)
    order = np.lexsort((candidates, -scores), axis=1)[:, :k]  # by score, then id
    chosen: np.ndarray = np.take_along_axis(candidates, order, axis=1)
    return chosen


def jaccard(sets_a: np.ndarray, sets_b: np.ndarray) -> np.ndarray:
    """(n,) float64: |A_i ∩ B_i| / |A_i ∪ B_i| of row i's sets (n, k) in A and in B (each row's ids distinct)."""
    common = (sets_a[:, :, None] == sets_b[:, None, :]).any(axis=2).sum(axis=1)  # (n,)
    union = sets_a.shape[1] + sets_b.shape[1] - common
    overlap: np.ndarray = common / union
    return overlap
