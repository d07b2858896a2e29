"""Rounding bounds derived from the data, for tests that compare two float computations of the same quantity.

Each bound follows from the standard error analysis (Higham, "Accuracy and Stability of Numerical Algorithms"), not
from what one CPU happened to print, so it holds whatever order a BLAS library or SIMD width sums in.
"""

from __future__ import annotations

import numpy as np

EPS64 = float(np.finfo(np.float64).eps)  # float64 spacing at 1: a rounding moves a value by at most EPS64 / 2 of it
EPS32 = float(np.finfo(np.float32).eps)

# Ranks are multiples of 1/2 no larger than n, so every sum behind a rank correlation is exact in float64 while
# n**3 < 2**53; only the last product, square root and division round: a few EPS64 apart in any implementation.
RANK_CORRELATION_ROUNDING = 8 * EPS64


def gamma(n: int, eps: float = EPS32) -> float:
    """Higham's gamma_n: the relative error of n roundings in a row (unit roundoff eps / 2)."""
    u = eps / 2
    return n * u / (1 - n * u)


def dot_bound(a: np.ndarray, b: np.ndarray, eps: float = EPS32) -> np.ndarray:
    """|fl(a @ b) - a @ b| for float sums in any order: gamma_k * (|a| @ |b|), k the summed length."""
    k = np.shape(a)[-1]
    return gamma(k, eps) * (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))


def sum_bound(values: np.ndarray, axis: int | None = None, eps: float = EPS32) -> np.ndarray:
    """|fl(sum) - sum| for float sums in any order: gamma_n * sum|x| (mean: divide both by n)."""
    n = np.size(values) if axis is None else np.shape(values)[axis]
    return gamma(n, eps) * np.abs(np.asarray(values, np.float64)).sum(axis=axis)


def pearson_rounding(*samples: np.ndarray) -> float:
    """How far two float64 implementations of Pearson's r over these samples may be apart.

    Each of its sums of n terms is off by at most n * EPS64 of the sum of magnitudes, and centring loses up to
    |mean| / std more (cancellation): 4 * n * EPS64 * (1 + |mean| / std) covers both sums in both implementations.
    """
    n = len(samples[0])
    spread = max(1 + abs(float(np.mean(s))) / float(np.std(s)) for s in samples)
    return 4 * n * EPS64 * spread


def correlation_shift_bound(y: np.ndarray, change: float) -> float:
    """The most Pearson's r of (g, y) can move, for any g, when y moves by a vector of norm at most `change`.

    With centred vectors, |r' - r| <= ||d|| / ||y'|| + |r| * | ||y|| - ||y'|| | / ||y'|| <= 2 ||d|| / (||y|| - ||d||)
    (Cauchy-Schwarz and the triangle inequality; centring never lengthens d).
    """
    norm = float(np.linalg.norm(np.asarray(y, np.float64) - np.mean(y)))
    return float("inf") if change >= norm else 2 * change / (norm - change)


def rank_change(values: np.ndarray, wobble: float) -> float:
    """Norm of the largest change of the ranks of `values` when each value moves by at most `wobble`.

    A value's rank (ties averaged) can only move past the values within 2 * wobble of it: at most that many places.
    """
    values = np.sort(np.asarray(values, np.float64))
    within = np.searchsorted(values, values + 2 * wobble, "right") - np.searchsorted(values, values - 2 * wobble)
    return float(np.linalg.norm(within - 1))


def assert_same_top(ours: list[tuple[object, float]], theirs: list[tuple[object, float]], wobble: float) -> None:
    """Two top-k lists of (key, score) over the same candidates, each score within `wobble` of the exact one.

    The i-th best score is 1-Lipschitz in the scores, so the two agree within 2 * wobble at every rank; a key must sit
    at the same rank unless a neighbouring score (theirs' next one included, for the last rank) lies within 4 * wobble,
    where rounding alone may swap the two.
    """
    k = len(ours)
    assert len(theirs) > k, "give one more of theirs than ours, to see past the last rank"
    ours_scores = np.array([s for _, s in ours], np.float64)
    theirs_scores = np.array([s for _, s in theirs[: k + 1]], np.float64)
    assert np.abs(ours_scores - theirs_scores[:k]).max() <= 2 * wobble
    around = np.r_[np.inf, ours_scores, theirs_scores[k]]  # (k + 2,) a wall before the first rank
    for i in range(k):
        if min(abs(around[i] - around[i + 1]), abs(around[i + 1] - around[i + 2])) > 4 * wobble:
            assert ours[i][0] == theirs[i][0], (i, ours[i], theirs[i])
