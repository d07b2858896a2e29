"""Clustering a word's occurrence vectors into senses: k-means on unit vectors, k given or chosen by silhouette.

`cluster(vectors, k)` scales the rows to unit length, so that it groups by direction (cosine), as the rest of bertlens
compares contextual vectors, and works on their top `DIMS` principal components (Euclidean distances between unit
vectors order pairs as cosines do; 32 axes keep the clusters and make k-means many times faster on
384-dimensional vectors). It runs k-means (k-means++ starts, a fixed seed). With `k="auto"` it tries k = 2 .. `max_k`
(at most a third of the occurrences, so that every sense can hold a few) and keeps the k with the highest mean
silhouette. Whether that k beats "one sense" is decided against the data itself: the same search
is run on reference data drawn from one Gaussian with the occurrences' own mean and covariance (one blob, no senses,
the same spread), and the word gets one sense unless its best silhouette beats every reference draw's best. This is
the gap statistic's idea (Tibshirani, Walther & Hastie 2001) with the silhouette as the score.

Senses are numbered by size: sense 0 is the largest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.checks import whole_number
from ..core.errors import InputError
from ..core.extras import require

MAX_K = 20  # the most senses a user may ask for
MAX_AUTO_K = 8  # k="auto" tries 2 .. 8 senses
MIN_PER_SENSE = 3  # k="auto" tries k only up to occurrences // 3
MIN_OCCURRENCES = 2 * MIN_PER_SENSE  # fewer cannot be split into two senses of 3
DIMS = 32  # principal components of the unit vectors that k-means and the silhouette see
NULL_DRAWS = 3  # reference draws of one Gaussian blob
N_INIT = 4  # k-means starts per k

K = int | Literal["auto"]


@dataclass(frozen=True)
class Clustering:
    """Senses of n occurrences: a label per occurrence, and how k was chosen."""

    labels: np.ndarray  # (n,) int64, 0 = the largest sense
    centres: np.ndarray  # (k, D) unit vectors: each sense's mean direction
    k: int
    auto: bool  # k chosen automatically
    silhouettes: dict[int, float]  # the mean silhouette of each k tried (auto), or of the k given (k >= 2)
    reference: float | None  # auto: the best silhouette a one-blob reference reached (the bar for k >= 2)

    @property
    def how(self) -> str:
        """How k was chosen, in words."""
        if not self.auto:
            return f"k = {self.k} as given"
        best = max(self.silhouettes, key=lambda k: self.silhouettes[k])
        score, bar = self.silhouettes[best], self.reference if self.reference is not None else float("nan")
        tried = f"silhouette over k = 2..{max(self.silhouettes)}"
        if self.k == 1:
            return (
                f"one sense: the best {tried} was {score:.3f} (k = {best}), not above {bar:.3f}, the best reached "
                f"by {NULL_DRAWS} draws of one Gaussian blob with these occurrences' mean and covariance"
            )
        return f"k = {self.k} by {tried}: {score:.3f}, above {bar:.3f} reached by one Gaussian blob of the same spread"


def check_k(k: object) -> K:
    """`k` as given by a user: "auto" or a whole number from 1 to MAX_K."""
    if k == "auto":
        return "auto"
    if isinstance(k, str):
        try:
            k = int(k)
        except ValueError:
            raise InputError(
                f"k must be 'auto' or a number of senses, got {k!r}.", "Example: k='auto', or k=2."
            ) from None
    return whole_number(k, "k (the number of senses)", minimum=1, maximum=MAX_K)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, float64: (n, D) -> (n, D); zero rows stay zero."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)  # (n, 1)
    return matrix / np.where(norms > 0, norms, 1.0)


def kmeans(rows: np.ndarray, k: int, seed: int, *, starts: int = N_INIT, iterations: int = 300) -> np.ndarray:
    """k-means labels of rows (n, d) -> (n,): k-means++ starts, Lloyd's iterations, the best of `starts` by inertia;
    relabelled so that 0 is the largest cluster.

    numpy, not scikit-learn's KMeans: on these small problems (hundreds of rows, 32 columns) its thread pool cost
    about 50 times the arithmetic here; tests/senses/test_senses.py checks both find the same clusters."""
    n = len(rows)
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    squares = np.einsum("nd,nd->n", rows, rows)  # (n,)
    best, least = np.zeros(n, dtype=np.int64), np.inf
    for _ in range(starts):
        centres = np.empty((k, rows.shape[1]))  # (k, d)
        centres[0] = rows[rng.integers(n)]
        nearest = ((rows - centres[0]) ** 2).sum(axis=1)  # (n,) squared distance to the nearest centre so far
        for j in range(1, k):
            total = nearest.sum()
            centres[j] = rows[rng.choice(n, p=nearest / total) if total > 0 else rng.integers(n)]
            nearest = np.minimum(nearest, ((rows - centres[j]) ** 2).sum(axis=1))
        labels = np.full(n, -1)
        for _ in range(iterations):
            distances = squares[:, None] - 2 * rows @ centres.T + np.einsum("kd,kd->k", centres, centres)  # (n, k)
            new = distances.argmin(axis=1)
            if np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                members = labels == j
                if members.any():
                    centres[j] = rows[members].mean(axis=0)
        inertia = float(distances[np.arange(n), labels].sum())
        if inertia < least:
            best, least = labels, inertia
    sizes = np.bincount(best, minlength=k)
    order = np.argsort(-sizes, kind="stable")  # old label of each new one
    new_label = np.empty(k, dtype=np.int64)
    new_label[order] = np.arange(k)
    return new_label[best]


def silhouette(rows: np.ndarray, labels: np.ndarray) -> float:
    """The mean silhouette of a labelling (Euclidean distance); -1 when it has fewer than two clusters."""
    require("sklearn", extra="index", what="Clustering (a word's senses)")
    from sklearn.metrics import silhouette_score

    if len(np.unique(labels)) < 2:
        return -1.0
    return float(silhouette_score(rows, labels, metric="euclidean"))


def one_blob(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows drawn from one Gaussian with the rows' mean and sample covariance: (n, d).

    mean + Z @ (X - mean) / sqrt(n - 1) with Z (n, n) standard normal has exactly that covariance, without forming
    the (d, d) matrix."""
    n = len(rows)
    mean = rows.mean(axis=0)  # (d,)
    z = rng.standard_normal((n, n))  # (n, n)
    sample: np.ndarray = mean + z @ (rows - mean) / np.sqrt(max(n - 1, 1))
    return sample


def auto_range(n: int, max_k: int = MAX_AUTO_K) -> range:
    """The k that k="auto" tries for n occurrences: 2 .. min(max_k, n // MIN_PER_SENSE)."""
    return range(2, min(max_k, n // MIN_PER_SENSE) + 1)


def best_silhouette(rows: np.ndarray, ks: range, seed: int) -> tuple[dict[int, float], dict[int, np.ndarray]]:
    labels = {k: kmeans(rows, k, seed) for k in ks}
    return {k: silhouette(rows, labels[k]) for k in ks}, labels


def reduced(unit: np.ndarray) -> np.ndarray:
    """Unit rows (n, D) on their top principal components: (n, min(DIMS, n - 1, D))."""
    from .projection import pca

    n, width = unit.shape
    return pca(unit, max(1, min(DIMS, n - 1, width)))[0]


def cluster(vectors: np.ndarray, k: K = "auto", *, seed: int = 0, max_k: int = MAX_AUTO_K) -> Clustering:
    """Cluster occurrence vectors (n, D) into senses (see the module docstring)."""
    unit = unit_rows(vectors)  # (n, D)
    n = len(unit)
    k = check_k(k)
    if n < MIN_OCCURRENCES:
        raise InputError(
            f"{n} occurrence{'s' if n != 1 else ''} cannot be clustered into senses: at least {MIN_OCCURRENCES} "
            "are needed.",
            "Use a larger corpus (or index), or a more frequent word.",
        )
    if k != "auto" and k > n // 2:
        raise InputError(
            f"k = {k} is out of range for {n} occurrences: k may be 1 to {min(MAX_K, n // 2)} (two occurrences a "
            "sense at least).",
            "Ask for fewer senses, or {k}.",
            arguments={"k": "auto"},
        )
    rows = reduced(unit)  # (n, d)
    if k != "auto":
        labels = kmeans(rows, k, seed)
        scores = {k: silhouette(rows, labels)} if k > 1 else {}
        return Clustering(labels, centres(unit, labels, k), k, False, scores, None)
    ks = auto_range(n, max_k)
    scores, labels_of = best_silhouette(rows, ks, seed)
    rng = np.random.default_rng(seed)
    reference = max(max(best_silhouette(one_blob(rows, rng), ks, seed)[0].values()) for _ in range(NULL_DRAWS))
    best = max(ks, key=lambda k: scores[k])
    chosen = best if scores[best] > reference else 1
    labels = labels_of[best] if chosen > 1 else np.zeros(n, dtype=np.int64)
    return Clustering(labels, centres(unit, labels, chosen), chosen, True, scores, reference)


def centres(unit: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Each cluster's mean direction, as unit rows: (k, D)."""
    sums = np.zeros((k, unit.shape[1]))  # (k, D)
    np.add.at(sums, labels, unit)
    return unit_rows(sums)
