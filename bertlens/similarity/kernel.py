"""The search kernel: scores of queries against every row (a float32 scan), and the exact top k of them.

`exact_top` picks candidates from a float32 scan and re-scores them in float64, so that a result depends neither on
the batch a query came in nor on BLAS rounding. The neighbour search (`nearest`) and the precomputed neighbour table
(`index`) both rank with it, which is why a table lookup returns what a scan would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .space import Space

MARGIN = 16  # extra candidates re-scored exactly, so float32 rounding in the scan cannot change the top k


def scan_scores(space: Space, queries: np.ndarray, metric: str, squared_norms: np.ndarray | None) -> np.ndarray:
    """(queries, rows) float32 scan scores, larger is nearer (euclidean: negative squared distance).

    `queries` (queries, E) are in `space`; `squared_norms` (rows,) holds the squared norms of `space.rows`, needed for
    euclidean only.
    """
    if metric == "cosine":
        norms = np.linalg.norm(queries, axis=1, keepdims=True)
        scores: np.ndarray = (queries / np.where(norms == 0, 1, norms)) @ space.unit.T  # (q, E) @ (E, rows)
        return scores
    dots: np.ndarray = queries @ space.rows.T
    if metric == "dot":
        return dots
    if squared_norms is None:
        raise ValueError("euclidean scan scores need the rows' squared norms")
    q_norms = np.einsum("ij,ij->i", queries, queries)[:, None]  # (q, 1)
    scores = -(squared_norms[None, :] - 2 * dots + q_norms)
    return scores


def exact_scores(space: Space, vectors: np.ndarray, ids: np.ndarray, metric: str) -> np.ndarray:
    """Scores of rows `ids` (q, c) for query `vectors` (q, E), from the raw values in float64: larger is nearer."""
    rows = space.rows[ids].astype(np.float64)  # (q, c, E)
    query = vectors.astype(np.float64)[:, None, :]  # (q, 1, E)
    if metric == "euclidean":
        scores: np.ndarray = -np.sqrt(((rows - query) ** 2).sum(axis=-1))
        return scores
    dots: np.ndarray = (rows * query).sum(axis=-1)
    if metric == "dot":
        return dots
    norms = np.linalg.norm(rows, axis=-1) * np.linalg.norm(query, axis=-1)
    scores = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return scores


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
    take = min(k + MARGIN, columns)
    top = np.argpartition(scores, columns - take, axis=1)[:, -take:]  # (queries, take), unordered
    top.sort(axis=1)  # by id, so that equal scores come out in id order
    finite = np.isfinite(np.take_along_axis(scores, top, axis=1))
    exact = np.where(finite, exact_scores(space, vectors, top, metric), -np.inf)  # (queries, take)
    order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(exact, order, axis=1)
