"""Linear CKA (Kornblith et al. 2019): how alike two sets of vectors of the same items are, whatever their axes.

For n items seen as X (n, d1) and as Y (n, d2), columns centred:

    CKA(X, Y) = ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)

It is 1 for a space against itself, and stays 1 when either side is rotated (any orthogonal map of its columns) or
scaled as a whole; the two widths may differ. Everything is computed in float64 on the features' side (d x d
products, never the n x n Gram matrices), so 10,000 items cost no more memory than their vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError


def centred(x: np.ndarray) -> np.ndarray:
    """(n, d) float64: `x` with each column's mean taken away."""
    x = np.asarray(x, dtype=np.float64)
    out: np.ndarray = x - x.mean(axis=0)
    return out


def self_norm(xc: np.ndarray, name: str) -> float:
    """||Xc^T Xc||_F of centred rows (n, d); an InputError when it is 0 (every row the same: no variance to compare)."""
    norm = float(np.linalg.norm(xc.T @ xc))  # (d, d) -> Frobenius norm
    if norm == 0.0:
        raise InputError(
            f"{name} has no variance: every row is the same, so CKA is undefined.",
            "Give vectors of at least two different items.",
        )
    return norm


def _checked(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or y.ndim != 2:
        raise InputError(
            f"CKA compares two matrices (items, features), got arrays of {x.ndim} and {y.ndim} dimensions.",
            "Give x as (n, d1) and y as (n, d2): one row per item in both.",
        )
    if len(x) != len(y) or len(x) < 2:
        raise InputError(
            f"CKA needs the same items on both sides, at least two: got {len(x)} and {len(y)} rows.",
            "Give one row per item in both, in the same order.",
        )
    return x, y


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of the same n items as x (n, d1) and y (n, d2), in float64: 1 for x against itself, unchanged by a
    rotation or an overall scale of either.

    >>> x = np.random.default_rng(0).normal(size=(100, 8))
    >>> round(linear_cka(x, 3 * x), 12), linear_cka(x, x[:, ::-1]) == linear_cka(x, x)
    (1.0, True)
    """
    x, y = _checked(x, y)
    xc, yc = centred(x), centred(y)
    cross = float(np.linalg.norm(yc.T @ xc))  # (d2, d1) -> Frobenius norm
    return cross**2 / (self_norm(xc, "x") * self_norm(yc, "y"))


def cka_matrix(layers_a: Sequence[np.ndarray], layers_b: Sequence[np.ndarray]) -> np.ndarray:
    """(len(layers_a), len(layers_b)) float64: linear CKA of every layer of A (each (n, d1)) against every layer of B
    (each (n, d2)), the same n items in both. Each layer is centred once and its own norm taken once; B's centred
    layers are kept while A's are taken one at a time."""
    if not len(layers_a) or not len(layers_b):
        raise InputError("CKA needs at least one layer on each side.", "Give each model's layers as (n, d) arrays.")
    for a in layers_a:
        for b in layers_b:
            _checked(a, b)
    kept = [centred(b) for b in layers_b]  # each (n, d2) float64
    norms_b = [self_norm(yc, f"layer {j} of B") for j, yc in enumerate(kept)]
    out = np.empty((len(layers_a), len(layers_b)), dtype=np.float64)
    for i, a in enumerate(layers_a):
        xc = centred(a)  # (n, d1)
        norm_a = self_norm(xc, f"layer {i} of A")
        for j, yc in enumerate(kept):
            cross = float(np.linalg.norm(yc.T @ xc))  # (d2, d1) -> Frobenius norm
            out[i, j] = cross**2 / (norm_a * norms_b[j])
    return out
