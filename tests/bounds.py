"""Rounding bounds derived from the data, for tests that compare two float computations of the same quantity.

Each bound follows from the standard error analysis (Higham, "Accuracy and Stability of Numerical Algorithms"), not
from what one CPU happened to print, so it holds whatever order a BLAS library or SIMD width sums in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bertlens import Model

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


def mean_bound(values: np.ndarray, axis: int | None = None, eps: float = EPS32) -> np.ndarray:
    """|fl(mean) - mean| for float means in any order: the sum's bound over n (gamma_n covers the division too)."""
    n = np.size(values) if axis is None else np.shape(values)[axis]
    return sum_bound(values, axis, eps) / n


def cosine_rounding(n: int, eps: float = EPS32) -> float:
    """|fl(cos(a, b)) - cos(a, b)| for n-vectors given exactly: two n-term norms, their square roots and divisions, and
    an n-term dot product (of unit vectors, or divided afterwards), in any order: gamma_(2n + 4)."""
    return gamma(2 * n + 4, eps)


def direction_shift(change: np.ndarray | float, norm: np.ndarray | float) -> np.ndarray:
    """The most a / |a| moves (and so its cosine with any unit vector) when a, of norm `norm`, moves by `change`.

    a/|a| - a'/|a'| = (a - a')/|a| + a' (|a'| - |a|) / (|a| |a'|), and each term is at most |a - a'| / |a|.
    """
    norm = np.asarray(norm, np.float64)
    return np.where(norm > 0, 2 * np.asarray(change, np.float64) / np.where(norm > 0, norm, 1), np.inf)


def float64_wobble(scale: float) -> float:
    """How far two float64 evaluations of one quantity, summed in any order, may lie apart.

    To first order a rounding error is the unit roundoff times a factor set by the data and the order of the sums. A
    float32 evaluation in any order keeps that error below `scale` (the largest magnitude involved: else float32
    could not compute it at all); float64's unit roundoff is 2**-29 of float32's, so its errors stay below
    scale * 2**-29 whatever the order, SIMD width or BLAS kernel.
    """
    return scale * EPS64 / EPS32


def rounded_bound(value: np.ndarray, rounding: np.ndarray | float = 0.0) -> np.ndarray:
    """|fl32(x') - x| for a float64 x' within `rounding` of x: half a float32 step at x', plus `rounding`.

    `value` is x itself or any float32 rounding of such an x' (one step further out covers both: the step at x' is
    at most the step there, and a step at most doubles from one power of two to the next).
    """
    reach = np.abs(np.asarray(value, np.float64)) + rounding
    reach = reach + np.spacing(reach.astype(np.float32))
    return np.spacing(reach.astype(np.float32)).astype(np.float64) / 2 + rounding


def float64_twin(model: Model) -> Model:
    """A float64 copy of a loaded model, for comparisons that need a bound on the forward pass itself.

    No useful bound follows from float32 eps for six layers of attention, GELU and LayerNorm, and another CPU sums a
    padded batch in another order. In float64 two orders differ by at most `float64_wobble` of the values, and the
    float32 states bertlens hands back are then exact up to `rounded_bound`.
    """
    import copy

    from bertlens import load_model

    return load_model(copy.deepcopy(model.torch_model()).double(), tokenizer=model.vocabulary.tokenizer)


def spearman_bound(values: np.ndarray, wobble: float) -> float:
    """How far Spearman's rho against any ranking may move when each of `values` moves by at most `wobble`."""
    from scipy.stats import rankdata

    return RANK_CORRELATION_ROUNDING + correlation_shift_bound(rankdata(values), rank_change(values, wobble))


def pca_bounds(x: np.ndarray, dims: int, moved: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How far two float64 PCAs of x (n, D) may put each point (n, dims), each explained ratio (dims,) and each unit
    axis (dims,) apart, signs aside; `moved` (n,): how far each row of the other's input may lie from x's.

    Centring, forming the scatter matrix (or not) and a backward-stable eigen- or singular-value solver each give the
    exact PCA of a scatter matrix C + E with |E|_2 <= 3 g |x|_F^2, g = gamma_(nD + D^2 + n) in float64; moved rows add
    2 |x|_F |m| + |m|^2: delta in all. Davis-Kahan puts each axis within sin(theta) <= delta / (gap - delta) of the
    exact one, gap its eigenvalue's distance to the rest of the spectrum (zeros included): the two unit axes lie
    2 sqrt(2) sin(theta) apart, a point |row| times that (plus rounding and its own move); an undetermined axis
    (gap <= 2 delta) gets inf. Yet no point lies farther than sqrt(lambda + 2 delta) from 0 on an axis of eigenvalue
    lambda (the Rayleigh quotient of C + E), whatever the gap. Each variance read back is within 2 delta of its
    eigenvalue (Weyl), the trace within delta.
    """
    x = np.asarray(x, np.float64)
    n, width = x.shape
    moved = np.zeros(n) if moved is None else np.asarray(moved, np.float64)
    g = gamma(n * width + width**2 + n, EPS64)
    size, change = float(np.linalg.norm(x)), float(np.linalg.norm(moved))
    delta = 3 * g * size**2 + 2 * size * change + change**2
    mean = x.mean(axis=0)
    eigen = np.zeros(width)
    values = np.linalg.svd(x - mean, compute_uv=False) ** 2  # (min(n, D),) descending
    eigen[: len(values)] = values
    gaps = np.array([np.delete(np.abs(eigen - eigen[i]), i).min() for i in range(dims)])
    sine = np.full(dims, np.inf)
    sine[gaps > 2 * delta] = delta / (gaps[gaps > 2 * delta] - delta)
    axes = 2 * np.sqrt(2) * sine + 2 * g  # (dims,)
    rows = np.linalg.norm(x - mean, axis=1) + g * (np.linalg.norm(x, axis=1) + np.linalg.norm(mean))  # (n,)
    points = rows[:, None] * axes[None, :] + (moved + moved.max(initial=0.0))[:, None]  # the row's move and the mean's
    points = np.minimum(points, 2 * np.sqrt(eigen[:dims] + 2 * delta)[None, :])  # (n, dims)
    total = float(eigen.sum())
    ratios = np.full(dims, np.inf if total <= delta else 8 * delta / (total - delta))
    return points, ratios, axes


def pca_signs_agree(x: np.ndarray, dims: int, moved: np.ndarray | None = None) -> bool:
    """Whether each axis's largest loading stands out from the others by more than rounding can move them, so that
    "the largest loading is positive" picks the same sign in any two PCAs."""
    x = np.asarray(x, np.float64)
    _, _, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    _, _, axes = pca_bounds(x, dims, moved)
    loadings = -np.sort(-np.abs(vt[:dims]), axis=1)  # (dims, D) largest first
    return bool((loadings[:, 0] - loadings[:, 1] > 2 * axes).all())
