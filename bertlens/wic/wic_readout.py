"""The WiC read-out: per-layer cosines of a pair's vectors (the word's, and the context's with the word masked),
centred per layer, standardised, and a logistic regression fitted on training pairs; and the best cosine threshold
(the published protocol). Numbers only: the vectors come from `wic.pair_vectors`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.extras import require
from ..core.options import WORD_POOLS, WordPool, check_choice


@dataclass(frozen=True)
class WicRecipe:
    """How a pair becomes a same-sense probability (the default: best in cross-validation, docs/benchmarks.md).

    >>> recipe = WicRecipe(pool="first", context=True, centre=True, c=0.1)
    >>> result = evaluate_wic(load_model(), "WiC/dev", train="WiC/train", recipe=recipe)  # doctest: +SKIP
    """

    pool: WordPool = "mean"  # how the word's pieces pool
    context: bool = True  # also compare the vectors at the word's place with the word masked (needs a mask token)
    centre: bool = True  # subtract each layer's mean vector over the training pairs before the cosines
    c: float = 0.1  # the logistic read-out's inverse L2 strength (on standardised cosines)
    cross: bool = False  # with context: also the cosine of each word's vector with the other's context (word masked)

    def __post_init__(self) -> None:
        check_choice(self.pool, WORD_POOLS, "pooling")
        if isinstance(self.c, bool) or not isinstance(self.c, (int, float)) or not 0 < self.c < float("inf"):
            raise InputError(f"The read-out's c must be a positive number, got {self.c!r}.", "Example: c=0.1")


@dataclass(frozen=True)
class PairVectors:
    """The vectors of each pair's two targets: (2, pairs, layers + 1, D); `masked` with the word replaced by the
    mask token (None when the recipe does not use the context alone)."""

    target: np.ndarray
    masked: np.ndarray | None


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine along the last axis: (..., D), (..., D) -> (...); 0 where a vector is zero."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    dots = (a * b).sum(axis=-1)
    cosines: np.ndarray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return cosines


def best_threshold(scores: np.ndarray, same: np.ndarray) -> tuple[float, float]:
    """The threshold t maximising the accuracy of "same sense iff score >= t" on (scores, labels), and that accuracy.

    Every cut between two distinct sorted scores is tried (and "all same"); ties go to the lowest threshold; the
    threshold is the midpoint of its cut."""
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], same[order].astype(bool)
    n = len(s)
    false_below = np.concatenate([[0], np.cumsum(~y)])  # (n + 1,): labels F among the k lowest
    true_above = np.concatenate([np.cumsum(y[::-1])[::-1], [0]])  # (n + 1,): labels T from k on
    correct = false_below + true_above  # cut k: the k lowest are called different
    valid = np.concatenate([[True], s[1:] > s[:-1], [True]])  # a cut only between distinct scores
    k = int(np.argmax(np.where(valid, correct, -1)))
    if k == 0:
        threshold = -np.inf
    elif k == n:
        threshold = np.inf
    else:
        threshold = float((s[k - 1] + s[k]) / 2)
    return float(threshold), float(correct[k] / n)


@dataclass(frozen=True)
class Readout:
    """The fitted read-out: centres per layer, the features' standardisation, and a logistic regression."""

    recipe: WicRecipe
    centre_target: np.ndarray | None  # (layers + 1, D) mean over the training targets, or None
    centre_masked: np.ndarray | None  # (layers + 1, D), or None
    mean: np.ndarray  # (features,) the training features' mean
    scale: np.ndarray  # (features,) and standard deviation
    weights: np.ndarray  # (features,)
    bias: float

    def features(self, vectors: PairVectors) -> np.ndarray:
        """Per pair the per-layer cosines the read-out takes: (pairs, kinds x (layers + 1))."""
        return pair_features(vectors, self.centre_target, self.centre_masked, cross=self.recipe.cross)

    def probability(self, features: np.ndarray) -> np.ndarray:
        """P(same sense) per pair from its features (pairs, F) -> (pairs,)."""
        z = ((features - self.mean) / self.scale) @ self.weights + self.bias
        probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return probabilities

    def layer_log_odds(self, features: np.ndarray) -> np.ndarray:
        """Each layer's share of the log-odds of the same sense: its features' terms plus an equal share of the bias,
        (pairs, F) -> (pairs, layers + 1). They sum to the log-odds, so when every layer's share is >= 0 the
        probability is >= 0.5, and when every share is < 0 it is < 0.5."""
        terms = (features - self.mean) / self.scale * self.weights  # (pairs, kinds x (layers + 1))
        layers = self.mean.shape[0] // self.kinds
        shares: np.ndarray = terms.reshape(len(features), self.kinds, layers).sum(axis=1) + self.bias / layers
        return shares

    @property
    def kinds(self) -> int:
        """How many cosines per layer the read-out takes (the word's; the context's and the sum's; the crossed)."""
        return 3 + int(self.recipe.cross) if self.recipe.context else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "recipe": vars(self.recipe),
            "centre_target": _float32_rows(self.centre_target),
            "centre_masked": _float32_rows(self.centre_masked),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Readout:
        def array(value: Any) -> np.ndarray | None:
            return None if value is None else np.asarray(value, dtype=np.float32)

        return cls(
            recipe=WicRecipe(**data["recipe"]),
            centre_target=array(data["centre_target"]),
            centre_masked=array(data["centre_masked"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            bias=float(data["bias"]),
        )


def _float32_rows(centre: np.ndarray | None) -> list[list[float]] | None:
    """(layers + 1, D) float32 as lists of the shortest decimals that read back as the same float32 (half the text)."""
    return None if centre is None else [[float(str(v)) for v in row] for row in np.asarray(centre, np.float32)]


def pair_features(
    vectors: PairVectors, centre_target: np.ndarray | None, centre_masked: np.ndarray | None, *, cross: bool = False
) -> np.ndarray:
    """(pairs, kinds x (layers + 1)) cosines: the word's vectors; with masked vectors also the context's and their
    sums', and with `cross` the mean cosine of each word's vector with the other sentence's context. Centres
    (layers + 1, D) are subtracted first when given."""
    t = vectors.target if centre_target is None else vectors.target - centre_target
    kinds = [cosines(t[0], t[1])]  # (pairs, layers + 1)
    if vectors.masked is not None:
        m = vectors.masked if centre_masked is None else vectors.masked - centre_masked
        kinds += [cosines(m[0], m[1]), cosines(t[0] + m[0], t[1] + m[1])]
        if cross:
            kinds.append((cosines(t[0], m[1]) + cosines(m[0], t[1])) / 2)
    return np.concatenate(kinds, axis=1)


def fit_readout(vectors: PairVectors, same: np.ndarray, recipe: WicRecipe) -> Readout:
    """The read-out fitted on training pairs' vectors and labels (a logistic regression, scikit-learn's lbfgs)."""
    require("sklearn", extra="index", what="The WiC read-out")
    from sklearn.linear_model import LogisticRegression

    labels = same.astype(bool)
    if labels.all() or not labels.any():
        raise InputError("The training pairs all have the same label.", "Give pairs of both labels (T and F).")
    centre_t = vectors.target.mean(axis=(0, 1)) if recipe.centre else None  # (layers + 1, D)
    centre_m = vectors.masked.mean(axis=(0, 1)) if recipe.centre and vectors.masked is not None else None
    features = pair_features(vectors, centre_t, centre_m, cross=recipe.cross).astype(np.float64)  # (pairs, F)
    mean, scale = features.mean(axis=0), features.std(axis=0)
    scale[scale == 0] = 1.0
    fitted = LogisticRegression(C=recipe.c, max_iter=5000).fit((features - mean) / scale, labels)
    return Readout(recipe, centre_t, centre_m, mean, scale, fitted.coef_[0].copy(), float(fitted.intercept_[0]))


def balanced_readout(vectors: PairVectors, same: np.ndarray, words: Sequence[str], recipe: WicRecipe) -> Readout:
    """The read-out fitted on all the pairs, its bias moved so that P(same) = 0.5 falls at the median of the
    cross-validated log-odds: on pairs like these, half same and half different, half its answers are "same".

    The log-odds are those of pairs held out of the fit (5 folds grouped by word, so no word is judged by a fit that
    saw it): in-sample ones are too confident, and the 0.5 cut of a fit is balanced only on the data it was fitted
    on. With fewer than two words, or a fold without both labels, the median of the in-sample log-odds is used."""
    readout = fit_readout(vectors, same, recipe)
    labels = same.astype(bool)
    distinct = sorted(set(words))
    folds = min(5, len(distinct))
    fold_of = {w: i % folds for i, w in enumerate(np.random.default_rng(0).permutation(distinct))} if folds else {}
    fold = np.array([fold_of[w] for w in words])
    log_odds = readout.layer_log_odds(readout.features(vectors)).sum(axis=1)  # (pairs,) in-sample
    if folds >= 2 and all(0 < labels[fold != k].sum() < (fold != k).sum() for k in range(folds)):
        for k in range(folds):

            def part(mask: np.ndarray) -> PairVectors:
                return PairVectors(vectors.target[:, mask], None if vectors.masked is None else vectors.masked[:, mask])

            held = fit_readout(part(fold != k), labels[fold != k], recipe)
            log_odds[fold == k] = held.layer_log_odds(held.features(part(fold == k))).sum(axis=1)
    return replace(readout, bias=readout.bias - float(np.median(log_odds)))
