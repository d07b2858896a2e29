"""The statistics of the word-pair benchmarks, in numpy alone: ranks (ties given their average rank), Pearson's
and Spearman's correlation coefficients, and when a score rests on too few pairs to trust."""

from __future__ import annotations

import math

import numpy as np


def ranks(values: np.ndarray) -> np.ndarray:
    """(n,) float64 ranks from 1, ties given the average of the ranks they span (as scipy's rankdata 'average')."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]]  # (n,) a new value begins here
    starts = np.flatnonzero(starts_group)
    ends = np.r_[starts[1:], n]  # exclusive
    average = (starts + ends + 1) / 2  # mean of ranks starts+1 .. ends
    out = np.empty(n, dtype=np.float64)
    out[order] = average[np.cumsum(starts_group) - 1]
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation coefficient of two (n,) samples; NaN when either is constant or n < 2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    if len(x) < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0:
        return float("nan")
    return max(-1.0, min(1.0, float(dx @ dy) / denominator))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's on the ranks, ties given average ranks."""
    return pearson(ranks(np.asarray(x)), ranks(np.asarray(y)))


RELIABLE_PAIRS = 30  # below this a rank correlation's standard error (about 1.06 / sqrt(n - 3)) passes 0.2


def coverage_warning(used: int, total: int) -> list[str]:
    """A line saying a score rests on too few pairs, or on too small a part of its benchmark; none when it does not.

    A Spearman correlation over n pairs has a standard error of about 1.06 / sqrt(n - 3) (Fieller et al. 1957); a
    score over less than half of a benchmark's pairs is not comparable with scores over all of them.
    """
    reasons = []
    if used < RELIABLE_PAIRS:
        error = f"its standard error is about {1.06 / math.sqrt(used - 3):.2f}" if used > 3 else "it is barely defined"
        reasons.append(f"too few for a reliable score ({error})")
    if used * 2 < total:
        reasons.append(f"not comparable with scores over all {total} pairs")
    if not reasons:
        return []
    return [f"Warning: {used} of {total} pairs scored: " + "; ".join(reasons) + "."]
