"""The same-sense calibration of a model: fitted on labelled pairs (WiC's format), stored per model, or shipped.

`fit_calibration` reads pairs in WiC's format (the user's, or WiC's training split), and stores per layer the
distribution of the word's cosine among same-sense and among different-sense pairs (101 quantiles each), a Platt
scaling of that cosine (a one-feature logistic regression), and the read-out over all layers (`wic_readout`), in
`cache_root(cache_dir) / <model hash> / same-sense-calibration.json` (written atomically; a new fit replaces it).

Every cut is balanced: on pairs half same and half different, half the answers are "same". A layer's cut is the
median of its cosine over the calibration pairs (its Platt scaling is moved to give 0.5 there); the read-out's is the
median of its log-odds on pairs held out of its fit (`balanced_readout`). A cut that maximises accuracy on the
calibration pairs instead leans to whichever answer those pairs make easy: the shipped pairs' different senses are
far apart (a river bank, a money bank), so such a cut answers "same" to most pairs of closer senses.

bertlens ships the default model's calibration (`SHIPPED_CALIBRATION`), fitted on sentence pairs written for bertlens
(MIT licence, `SHIPPED_PAIRS`; never on WiC, which is CC BY-NC): `load_calibration` finds the user's own first, then
that one when the model is the default (by its numbers, `model_identity`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contextual.states import RunOptions
from ..core.errors import InputError
from ..core.extras import require
from ..core.model import Model
from ..core.outputs import make_folder, read_small_text, replace_text, write_error
from ..core.results import Result, table
from ..occurrences.store import model_identity
from ..similarity.index import cache_root
from .wic import mask_text, pair_vectors, read_wic, wic_files
from .wic_readout import Readout, WicRecipe, balanced_readout, cosines

CALIBRATION_FILE = "same-sense-calibration.json"
SHIPPED_PAIRS = Path(__file__).resolve().parents[1] / "data" / "same_sense"  # pairs.data.txt, pairs.gold.txt
SHIPPED_CALIBRATION = SHIPPED_PAIRS / "calibration.json"  # the default model's, fitted on SHIPPED_PAIRS
FORMAT = "bertlens-same-sense-calibration"
VERSION = 2  # 2: balanced cuts, the crossed cosines in the read-out
QUANTILES = 101  # 0th to 100th percentile
HOW_TO_FIT = (
    "Fit a calibration once for this model on pairs labelled same or different sense, in WiC's format: `bertlens "
    "same-sense WORD S1 S2 --calibrate PATH`, or bertlens.wic.fit_calibration(model, PATH). PATH may be the "
    f"pairs bertlens ships ({SHIPPED_PAIRS}), WiC's train folder, or your own."
)


@dataclass(frozen=True)
class LayerCalibration:
    """One layer's calibration: the word cosine's quantiles among same- and different-sense pairs, and Platt."""

    layer: int
    same: np.ndarray  # (101,) quantiles of the cosine among same-sense pairs
    different: np.ndarray  # (101,) among different-sense pairs
    slope: float  # P(same) = 1 / (1 + exp(-(slope * cosine + intercept))), 0.5 at the threshold
    intercept: float
    threshold: float  # the balanced cut: the median cosine over the calibration pairs
    accuracy: float  # its accuracy there

    def percentile(self, cosine: float, same: bool) -> float:
        """Where `cosine` falls in the same-sense (or different-sense) distribution, 0..100."""
        quantiles = self.same if same else self.different
        return float(np.interp(cosine, quantiles, np.linspace(0.0, 100.0, len(quantiles))))

    def probability(self, cosine: float) -> float:
        return float(1.0 / (1.0 + np.exp(-(self.slope * cosine + self.intercept))))


@dataclass(frozen=True, repr=False)
class Calibration(Result):
    """A model's same-sense calibration (per layer and over all layers), fitted on `pairs` labelled pairs.

    >>> calibration = fit_calibration(load_model(), "WiC/train")  # doctest: +SKIP
    >>> calibration.path  # stored beside the model's cache, used by same_sense from then on  # doctest: +SKIP
    """

    model: dict[str, str]  # model_identity(model)
    source: str  # the WiC file it was fitted on
    pairs: int
    layers: tuple[LayerCalibration, ...]
    readout: Readout
    readout_accuracy: float  # on the calibration pairs
    path: str  # where it is stored
    about: str = ""  # what it was fitted on, in words (the shipped calibration says its data and licence)
    wic_dev_accuracy: float | None = None  # its verdict's accuracy on WiC's dev split, where measured
    wic_dev_same: float | None = None  # and the share of "same" answers there (WiC dev is half same)

    def __repr__(self) -> str:
        return f"Calibration({self.pairs} pairs of {self.source}, read-out accuracy {self.readout_accuracy:.3f})"

    def to_dict(self) -> dict[str, Any]:
        """What it is (the numbers themselves are in the stored file)."""
        return {
            "model": self.model,
            "source": self.source,
            "pairs": self.pairs,
            "path": self.path,
            "readout_accuracy": self.readout_accuracy,
            "recipe": vars(self.readout.recipe),
            "layers": [{"layer": c.layer, "threshold": c.threshold, "accuracy": c.accuracy} for c in self.layers],
        }

    def to_table(self) -> str:
        rows = [
            (f"L{c.layer}", c.threshold, c.accuracy, float(np.median(c.same)), float(np.median(c.different)))
            for c in self.layers
        ]
        return (
            f"Same-sense calibration of {self.model['description']} on {self.pairs} pairs of {self.source}.\n"
            + table(["layer", "cut (median cos)", "accuracy", "median cos (same)", "median cos (different)"], rows)
            + f"\nread-out over all layers: accuracy {self.readout_accuracy:.4f} on these pairs. Stored in {self.path}."
        )

    def to_json(self) -> str:
        layers = [
            {
                "layer": c.layer,
                "same": c.same.tolist(),
                "different": c.different.tolist(),
                "slope": c.slope,
                "intercept": c.intercept,
                "threshold": c.threshold,
                "accuracy": c.accuracy,
            }
            for c in self.layers
        ]
        about = {"format": FORMAT, "version": VERSION, "model": self.model, "source": self.source, "pairs": self.pairs}
        body = {"layers": layers, "readout": self.readout.to_dict(), "readout_accuracy": self.readout_accuracy}
        if self.about or self.wic_dev_accuracy is not None:
            body |= {"about": self.about, "wic_dev_accuracy": self.wic_dev_accuracy, "wic_dev_same": self.wic_dev_same}
        return json.dumps({**about, **body}) + "\n"

    @classmethod
    def from_json(cls, text: str, path: str) -> Calibration:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError("not a calibration of this version")
        layers = tuple(
            LayerCalibration(
                int(c["layer"]),
                np.asarray(c["same"], dtype=np.float64),
                np.asarray(c["different"], dtype=np.float64),
                float(c["slope"]),
                float(c["intercept"]),
                float(c["threshold"]),
                float(c["accuracy"]),
            )
            for c in data["layers"]
        )
        readout = Readout.from_dict(data["readout"])
        return cls(
            dict(data["model"]),
            str(data["source"]),
            int(data["pairs"]),
            layers,
            readout,
            float(data["readout_accuracy"]),
            path,
            str(data.get("about", "")),
            None if data.get("wic_dev_accuracy") is None else float(data["wic_dev_accuracy"]),
            None if data.get("wic_dev_same") is None else float(data["wic_dev_same"]),
        )


def calibration_path(model: Model, cache_dir: Any = None) -> Path:
    """Where `model`'s calibration is stored: `cache_root(cache_dir) / <model hash> / same-sense-calibration.json`."""
    return cache_root(cache_dir) / model_identity(model)["sha256"] / CALIBRATION_FILE


def shipped_calibration(model: Model) -> Calibration | None:
    """The calibration shipped with bertlens when `model` is the one it was fitted for (the default model, by its
    numbers: `model_identity`), else None. Fitted on sentence pairs written for bertlens (MIT), never on WiC."""
    calibration = _shipped()
    if calibration is None or calibration.model.get("sha256") != model_identity(model)["sha256"]:
        return None
    return calibration


@functools.cache
def _shipped() -> Calibration | None:
    try:
        return Calibration.from_json(SHIPPED_CALIBRATION.read_text("utf-8"), str(SHIPPED_CALIBRATION))
    except FileNotFoundError:  # a source tree without package data
        return None


def load_calibration(model: Model, cache_dir: Any = None) -> Calibration | None:
    """`model`'s calibration: the one fitted and stored for it (`fit_calibration`), else the one shipped with bertlens
    for the default model, else None; InputError when the stored file is damaged."""
    path = calibration_path(model, cache_dir)
    if not path.exists():
        return shipped_calibration(model)
    text = read_small_text(path, "same-sense calibration", limit=16 << 20)
    try:
        calibration = Calibration.from_json(text, str(path))
    except (ValueError, KeyError, TypeError, InputError):
        raise InputError(f"The same-sense calibration {path} is damaged or of another version.", HOW_TO_FIT) from None
    if calibration.model.get("sha256") != model_identity(model)["sha256"]:
        raise InputError(f"The calibration {path} was fitted for another model ({calibration.model}).", HOW_TO_FIT)
    return calibration


def fit_calibration(
    model: Model,
    path: Any,
    *,
    recipe: WicRecipe | None = None,
    cache_dir: Any = None,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
) -> Calibration:
    """Fit `model`'s same-sense calibration on the labelled pairs of `path` (WiC format) and store it (replacing an
    earlier one).

    >>> calibration = fit_calibration(load_model(), "WiC/train")  # WiC (CC BY-NC): download it  # doctest: +SKIP
    >>> calibration.pairs  # doctest: +SKIP
    5428
    """
    masks = mask_text(model) is not None
    recipe = recipe or WicRecipe(context=masks, cross=masks)
    if not isinstance(recipe, WicRecipe):
        raise InputError(f"recipe must be a WicRecipe, got {type(recipe).__name__}.", "Pass WicRecipe().")
    target = calibration_path(model, cache_dir)  # the cache folder is checked before the long work
    pairs = read_wic(path)
    same = np.array([p.same for p in pairs], dtype=bool)
    if same.all() or not same.any():
        raise InputError(
            f"The pairs of {path} all have the same label.", "Calibrate on pairs of both labels (T and F)."
        )
    vectors = pair_vectors(model, pairs, recipe, options, progress)
    raw = cosines(vectors.target[0], vectors.target[1])  # (pairs, layers + 1)
    layers = tuple(_layer(layer, raw[:, layer], same) for layer in range(raw.shape[1]))
    readout = balanced_readout(vectors, same, [p.word for p in pairs], recipe)
    accuracy = float(((readout.probability(readout.features(vectors)) >= 0.5) == same).mean())
    calibration = Calibration(
        model_identity(model), str(wic_files(path)[0]), len(pairs), layers, readout, accuracy, str(target)
    )
    try:
        make_folder(target.parent)
        replace_text(target, calibration.to_json())
    except OSError as exc:
        raise write_error(target.parent, exc, "the same-sense calibration") from None
    return calibration


def _layer(layer: int, cosine: np.ndarray, same: np.ndarray) -> LayerCalibration:
    require("sklearn", extra="index", what="Fitting a same-sense calibration")
    from sklearn.linear_model import LogisticRegression

    levels = np.linspace(0.0, 1.0, QUANTILES)
    platt = LogisticRegression(C=1e4, max_iter=1000).fit(cosine[:, None].astype(np.float64), same)
    threshold = float(np.median(cosine))  # balanced: half the calibration pairs on either side
    slope = float(platt.coef_[0, 0])
    return LayerCalibration(
        layer,
        np.quantile(cosine[same], levels),
        np.quantile(cosine[~same], levels),
        slope,
        -slope * threshold,  # P(same) = 0.5 at the balanced cut
        threshold,
        float(((cosine >= threshold) == same).mean()),
    )
