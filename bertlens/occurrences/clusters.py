"""Clustering a word's occurrence vectors into senses: k-means on unit vectors, k given or chosen by silhouette.

`cluster(vectors, k)` runs k-means (scikit-learn, several starts, a fixed seed) on the rows scaled to unit length, so
that it groups by direction (cosine), as the rest of bertlens compares contextual vectors. With `k="auto"` it tries
k = 2 .. `max_k` (at most a third of the occurrences, so that every sense can hold a few) and keeps the k with the
highest mean silhouette (cosine). Whether that k beats "one sense" is decided against the data itself: the same search
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

MAX_K = 20  # the most senses a user may ask for
MAX_AUTO_K = 8  # k="auto" tries 2 .. 8 senses
MIN_PER_SENSE = 3  # k="auto" tries k only up to occurrences // 3
MIN_OCCURRENCES = 2 * MIN_PER_SENSE  # fewer cannot be split into two senses of 3
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
    silhouettes: dict[int, float]  # the mean silhouette (cosine) of each k tried (auto), or of the k given (k >= 2)
    reference: float | None  # auto: the best silhouette a one-blob reference reached (the bar for k >= 2)

    @property
    def how(self) -> str:
        """How k was chosen, in words."""
        if not self.auto:
            return f"k = {self.k} as given"
        best = max(self.silhouettes, key=lambda k: self.silhouettes[k])
        score, bar = self.silhouettes[best], self.reference if self.reference is not None else float("nan")
        tried = f"silhouette (cosine) over k = 2..{max(self.silhouettes)}"
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
                f"k must be 'auto' or a number of senses, got {k!r}.", "Example: --k auto, or --k 2."
            ) from None
    return whole_number(k, "k (the number of senses)", minimum=1, maximum=MAX_K)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, float64: (n, D) -> (n, D); zero rows stay zero."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)  # (n, 1)
    return matrix / np.where(norms > 0, norms, 1.0)


def kmeans(unit: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means labels of unit rows (n, D) -> (n,), relabelled so that 0 is the largest cluster."""
    if k == 1:
        return np.zeros(len(unit), dtype=np.int64)
    from sklearn.cluster import KMeans

    raw = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit_predict(unit)
    sizes = np.bincount(raw, minlength=k)
    order = np.argsort(-sizes, kind="stable")  # old label of each new one
    new = np.empty(k, dtype=np.int64)
    new[order] = np.arange(k)
    return new[raw]


def silhouette(unit: np.ndarray, labels: np.ndarray) -> float:
    """The mean silhouette of a labelling (cosine distance); -1 when it has fewer than two clusters."""
    from sklearn.metrics import silhouette_score

    if len(np.unique(labels)) < 2:
        return -1.0
    return float(silhouette_score(unit, labels, metric="cosine"))


def one_blob(unit: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows drawn from one Gaussian with the rows' mean and sample covariance, scaled to unit length: (n, D).

    mean + Z @ (X - mean) / sqrt(n - 1) with Z (n, n) standard normal has exactly that covariance, without forming
    the (D, D) matrix."""
    n = len(unit)
    mean = unit.mean(axis=0)  # (D,)
    z = rng.standard_normal((n, n))  # (n, n)
    return unit_rows(mean + z @ (unit - mean) / np.sqrt(max(n - 1, 1)))


def auto_range(n: int, max_k: int = MAX_AUTO_K) -> range:
    """The k that k="auto" tries for n occurrences: 2 .. min(max_k, n // MIN_PER_SENSE)."""
    return range(2, min(max_k, n // MIN_PER_SENSE) + 1)


def best_silhouette(unit: np.ndarray, ks: range, seed: int) -> tuple[dict[int, float], dict[int, np.ndarray]]:
    labels = {k: kmeans(unit, k, seed) for k in ks}
    return {k: silhouette(unit, labels[k]) for k in ks}, labels


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
            "Ask for fewer senses, or --k auto.",
        )
    if k != "auto":
        labels = kmeans(unit, k, seed)
        scores = {k: silhouette(unit, labels)} if k > 1 else {}
        return Clustering(labels, centres(unit, labels, k), k, False, scores, None)
    ks = auto_range(n, max_k)
    scores, labels_of = best_silhouette(unit, ks, seed)
    rng = np.random.default_rng(seed)
    reference = max(max(best_silhouette(one_blob(unit, rng), ks, seed)[0].values()) for _ in range(NULL_DRAWS))
    best = max(ks, key=lambda k: scores[k])
    chosen = best if scores[best] > reference else 1
    labels = labels_of[best] if chosen > 1 else np.zeros(n, dtype=np.int64)
    return Clustering(labels, centres(unit, labels, chosen), chosen, True, scores, reference)


def centres(unit: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Each cluster's mean direction, as unit rows: (k, D)."""
    sums = np.zeros((k, unit.shape[1]))  # (k, D)
    np.add.at(sums, labels, unit)
    return unit_rows(sums)
