"""Same sense or not: a word's two uses compared per layer, with a calibrated probability.

`fit_calibration` reads pairs in WiC's format (the user's, or WiC's training split), and stores per layer the
distribution of the word's cosine among same-sense and among different-sense pairs (101 quantiles each), a Platt
scaling of that cosine (a one-feature logistic regression), and the read-out over all layers (`wic_readout`), in
`cache_root(cache_dir) / <model hash> / same-sense-calibration.json` (written atomically; a new fit replaces it).

`same_sense` then gives per layer the cosine, its percentile among same-sense and among different-sense pairs and
the layer's probability, and a verdict from the read-out (or from one layer, when asked). The default model needs no
fit: bertlens ships its calibration (`SHIPPED_CALIBRATION`), fitted on sentence pairs written for bertlens (MIT
licence, `SHIPPED_PAIRS`; never on WiC, which is CC BY-NC). A calibration the user fitted takes precedence. For any
other model without one it still gives the cosines, no verdict, and says how to fit one (the shipped pairs will do).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contextual.states import RunOptions, check_layers
from ..core.errors import InputError
from ..core.model import Model
from ..core.outputs import make_folder, read_small_text, replace_text, write_error
from ..core.results import Result, table
from ..similarity.index import cache_root
from .store import model_identity
from .wic import Target, mask_text, pair_vectors, read_wic, target_vectors, wic_files
from .wic_readout import PairVectors, Readout, WicRecipe, best_threshold, cosines, fit_readout

CALIBRATION_FILE = "same-sense-calibration.json"
SHIPPED_PAIRS = Path(__file__).resolve().parents[1] / "data" / "same_sense"  # pairs.data.txt, pairs.gold.txt
SHIPPED_CALIBRATION = SHIPPED_PAIRS / "calibration.json"  # the default model's, fitted on SHIPPED_PAIRS
FORMAT = "bertlens-same-sense-calibration"
VERSION = 1
QUANTILES = 101  # 0th to 100th percentile
READOUT = "the read-out over all layers"  # what decides the verdict unless a layer is asked for
HOW_TO_FIT = (
    "Fit a calibration once for this model on pairs labelled same or different sense, in WiC's format: `bertlens "
    "same-sense WORD S1 S2 --calibrate PATH`, or bertlens.fit_calibration(model, PATH). PATH may be the pairs "
    f"bertlens ships ({SHIPPED_PAIRS}), WiC's train folder, or your own."
)


@dataclass(frozen=True)
class LayerCalibration:
    """One layer's calibration: the word cosine's quantiles among same- and different-sense pairs, and Platt."""

    layer: int
    same: np.ndarray  # (101,) quantiles of the cosine among same-sense pairs
    different: np.ndarray  # (101,) among different-sense pairs
    slope: float  # P(same) = 1 / (1 + exp(-(slope * cosine + intercept)))
    intercept: float
    threshold: float  # the best cosine threshold on the calibration pairs
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
            + table(["layer", "threshold", "accuracy", "median cos (same)", "median cos (different)"], rows)
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
            body |= {"about": self.about, "wic_dev_accuracy": self.wic_dev_accuracy}
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
    recipe = recipe or WicRecipe(context=mask_text(model) is not None)
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
    readout = fit_readout(vectors, same, recipe)
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
    from sklearn.linear_model import LogisticRegression

    levels = np.linspace(0.0, 1.0, QUANTILES)
    platt = LogisticRegression(C=1e4, max_iter=1000).fit(cosine[:, None].astype(np.float64), same)
    threshold, accuracy = best_threshold(cosine, same)
    return LayerCalibration(
        layer,
        np.quantile(cosine[same], levels),
        np.quantile(cosine[~same], levels),
        float(platt.coef_[0, 0]),
        float(platt.intercept_[0]),
        threshold,
        accuracy,
    )


def find_target(sentence: str, word: str, which: str) -> tuple[str, int, int, str | None]:
    """The sentence (marks removed) and the target's characters: the one `[marked]` word, else the first whole-word
    match of `word` (any case), else of a word starting with it ("board" finds "boards"); and a note, if any."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise InputError(f"The {which} sentence is empty.", "Give two sentences that use the word.")
    marks = list(re.finditer(r"\[([^\[\]]+)\]", sentence))
    if len(marks) > 1:
        raise InputError(f"The {which} sentence marks {len(marks)} words: {sentence!r}.", "Mark one word: [word].")
    if marks:
        mark = marks[0]
        plain = sentence[: mark.start()] + mark[1] + sentence[mark.end() :]
        return plain, mark.start(), mark.start() + len(mark[1]), None
    if not isinstance(word, str) or not word.strip():
        raise InputError("The word is empty.", "Give the word whose two uses are compared, e.g. bank.")
    escaped = re.escape(word.strip())
    found = list(re.finditer(rf"(?<!\w){escaped}(?!\w)", sentence, re.IGNORECASE))
    note = None
    if not found:
        found = list(re.finditer(rf"(?<!\w){escaped}\w*", sentence, re.IGNORECASE))
        if found:
            note = f"{word!r} is read as {found[0][0]!r} in the {which} sentence."
    if not found:
        raise InputError(
            f"{word!r} does not occur in the {which} sentence: {sentence!r}.",
            "Use the word as written in both sentences, or mark it: 'I sat on the river [bank]'.",
        )
    if len(found) > 1:
        note = (
            f"{word!r} occurs {len(found)} times in the {which} sentence: the first is compared (mark another: [word])."
        )
    return sentence, found[0].start(), found[0].end(), note


@dataclass(frozen=True)
class SameSenseLayer:
    """One layer: the word's cosine, the context's (word masked), and against the calibration."""

    layer: int
    cosine: float
    context_cosine: float | None  # the vectors at the word's place with the word masked
    same_percentile: float | None  # where the cosine falls among same-sense pairs (0..100)
    different_percentile: float | None  # and among different-sense pairs
    probability: float | None  # P(same sense) from this layer's cosine (Platt scaling)


@dataclass(frozen=True, repr=False)
class SameSenseResult(Result):
    """Whether `word` has the same sense in two sentences: per-layer cosines and, calibrated, a verdict.

    >>> result = same_sense(load_model(), "bank", "the river [bank]", "the [bank] raised its rates")
    >>> result.verdict, result.probability  # doctest: +SKIP
    """

    model: str
    word: str
    sentence_1: str
    sentence_2: str
    span_1: tuple[int, int]
    span_2: tuple[int, int]
    layers: tuple[SameSenseLayer, ...]
    probability: float | None  # P(same sense); None without a calibration
    verdict: str | None  # "same sense" or "different senses"
    decided_by: str | None  # "the read-out over all layers" or "layer L"
    calibration: str | None  # the calibration file used
    notes: tuple[str, ...] = ()
    calibrated_on: str | None = None  # what that calibration was fitted on, in words

    def __repr__(self) -> str:
        return f"SameSenseResult({self.word!r}: {self.verdict or 'not calibrated'})"

    def to_table(self) -> str:
        def marked(text: str, span: tuple[int, int]) -> str:
            return f"{text[: span[0]]}[{text[span[0] : span[1]]}]{text[span[1] :]}"

        rows = [
            (f"L{r.layer}", r.cosine, r.context_cosine, r.same_percentile, r.different_percentile, r.probability)
            for r in self.layers
        ]
        head = ["layer", "cos(word)", "cos(context)", "pct among same", "pct among different", "P(same)"]
        lines = [
            f"1: {marked(self.sentence_1, self.span_1)}",
            f"2: {marked(self.sentence_2, self.span_2)}",
            table(head, rows),
        ]
        if self.verdict is None:
            lines.append(
                "No verdict: this model has no same-sense calibration (bertlens ships one for its default model "
                f"only). {HOW_TO_FIT}"
            )
        else:
            lines.append(
                f"Verdict: {self.verdict} (probability of the same sense {self.probability:.2f}, from "
                f"{self.decided_by}). Calibrated on {self.calibrated_on}."
            )
            if self.decided_by == READOUT:
                lines.append(
                    "Each layer's P(same) reads that layer's word cosine alone; the verdict weighs all layers' cosines "
                    "together (the word's, and the context's with the word masked)."
                )
        return "\n".join(lines + list(self.notes))


def same_sense(
    model: Model,
    word: str,
    sentence_1: str,
    sentence_2: str,
    *,
    layer: int | None = None,
    calibration: Calibration | None = None,
    cache_dir: Any = None,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> SameSenseResult:
    """Whether `word` is used in the same sense in both sentences (mark it `[word]` where it is ambiguous).

    `layer` takes the verdict from that layer's calibrated cosine instead of the read-out over all layers;
    `calibration` defaults to the one stored for `model` (see `fit_calibration`); without one, no verdict.

    >>> result = same_sense(load_model(), "bank", "I sat on the river bank .", "The bank raised its interest rates .")
    >>> len(result.layers)  # the word's two vectors compared at every layer
    7
    """
    chosen = None if layer is None else check_layers(model, [layer])[0] % (model.config.num_hidden_layers + 1)
    first = find_target(sentence_1, word, "first")
    second = find_target(sentence_2, word, "second")
    if calibration is None:
        calibration = load_calibration(model, cache_dir)
    elif not isinstance(calibration, Calibration):
        raise InputError(f"calibration must be a Calibration, got {type(calibration).__name__}.", HOW_TO_FIT)
    recipe = calibration.readout.recipe if calibration else WicRecipe(context=mask_text(model) is not None)
    targets = [Target(first[0], first[1], first[2]), Target(second[0], second[1], second[2])]
    target, masked = target_vectors(model, targets, pool=recipe.pool, context=recipe.context, options=options)
    word_cos = cosines(target[0], target[1])  # (layers + 1,)
    context_cos = None if masked is None else cosines(masked[0], masked[1])
    rows = []
    for i, cos in enumerate(word_cos.tolist()):
        c = calibration.layers[i] if calibration else None
        rows.append(
            SameSenseLayer(
                i,
                cos,
                None if context_cos is None else float(context_cos[i]),
                c.percentile(cos, True) if c else None,
                c.percentile(cos, False) if c else None,
                c.probability(cos) if c else None,
            )
        )
    probability = decided_by = verdict = None
    if calibration is not None:
        if chosen is None:
            shape = (2, 1, *target.shape[1:])  # (2, 1 pair, layers + 1, D)
            vectors = PairVectors(target.reshape(shape), None if masked is None else masked.reshape(shape))
            probability = float(calibration.readout.probability(calibration.readout.features(vectors))[0])
            decided_by = READOUT
        else:
            probability, decided_by = rows[chosen].probability, f"layer {chosen}"
        verdict = "same sense" if probability is not None and probability >= 0.5 else "different senses"
    return SameSenseResult(
        model=model.source.description,
        word=word,
        sentence_1=first[0],
        sentence_2=second[0],
        span_1=(first[1], first[2]),
        span_2=(second[1], second[2]),
        layers=tuple(rows),
        probability=probability,
        verdict=verdict,
        decided_by=decided_by,
        calibration=calibration.path if calibration else None,
        calibrated_on=None if calibration is None else _fitted_on(calibration),
        notes=tuple(n for n in (first[3], second[3], _unused_layer(chosen, calibration)) if n),
    )


def _fitted_on(calibration: Calibration) -> str:
    """What a calibration was fitted on, in words."""
    if calibration.path == str(SHIPPED_CALIBRATION):
        return f"{calibration.about}: shipped with bertlens for this model (--calibrate PATH fits your own)"
    return f"{calibration.pairs} pairs of {calibration.source} (stored in {calibration.path})"


def _unused_layer(layer: int | None, calibration: Calibration | None) -> str | None:
    """A note when a layer was chosen for a verdict that cannot be given."""
    if layer is None or calibration is not None:
        return None
    return f"Layer {layer} was asked for the verdict, but without a calibration there is none: every layer is shown."
