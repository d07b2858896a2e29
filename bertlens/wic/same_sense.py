"""Same sense or not: a word's two uses compared per layer, with a calibrated probability.

`same_sense` gives per layer the cosine, its percentile among same-sense and among different-sense pairs, and what the
layer reads on the verdict's own scale; and a verdict from the read-out (or from one layer, when asked), against the
model's calibration (`calibration.py`). The layers' readings add up to the verdict: with the read-out each layer's
share of its log-odds (the layer reads "same" when its share is >= 0, and the shares sum to the verdict's log-odds);
with one layer each layer's own P(same), 0.5 at that layer's balanced cut. So when every layer reads "same" the
verdict is "same", and when every layer reads "different" it is "different".

The default model needs no fit: bertlens ships its calibration, fitted on sentence pairs written for bertlens (MIT
licence; never on WiC, which is CC BY-NC). A calibration the user fitted takes precedence. For any
other model without one it still gives the cosines, no verdict, and says how to fit one (the shipped pairs will do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..contextual.states import RunOptions, check_layers
from ..core.errors import InputError
from ..core.model import Model
from ..core.results import Result, table
from ..core.tokens import find_word
from ..occurrences.marked import WordFinder
from .calibration import HOW_TO_FIT, SHIPPED_CALIBRATION
from .calibration import SHIPPED_PAIRS as SHIPPED_PAIRS
from .calibration import Calibration as Calibration
from .calibration import LayerCalibration as LayerCalibration
from .calibration import calibration_path as calibration_path
from .calibration import fit_calibration as fit_calibration
from .calibration import load_calibration as load_calibration
from .calibration import shipped_calibration as shipped_calibration
from .wic import Target, mask_text, target_vectors
from .wic_readout import PairVectors, WicRecipe, cosines

READOUT = "the read-out over all layers"  # what decides the verdict unless a layer is asked for


def find_target(
    sentence: str, word: str, which: str, find: WordFinder | None = None
) -> tuple[str, int, int, str | None]:
    """The sentence (marks removed) and the target's characters: the one `[marked]` word, else the first whole-word
    match of `word` (any case), else of a word starting with it ("board" finds "boards"); and a note, if any.

    `find` finds whole words as the model splits them (`same_sense` passes `core.tokens.find_word` with its model);
    without it a whole word is one not touching a letter, digit or underscore."""
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
    if find is not None:
        found = find(sentence, word)
    else:
        found = [m.span() for m in re.finditer(rf"(?<!\w){escaped}(?!\w)", sentence, re.IGNORECASE)]
    note = None
    if not found:
        found = [m.span() for m in re.finditer(rf"(?<!\w){escaped}\w*", sentence, re.IGNORECASE)]
        if found:
            note = f"{word!r} is read as {sentence[found[0][0] : found[0][1]]!r} in the {which} sentence."
    if not found:
        raise InputError(
            f"{word!r} does not occur in the {which} sentence: {sentence!r}.",
            "Use the word as written in both sentences, or mark it: 'I sat on the river [bank]'.",
        )
    if len(found) > 1:
        note = (
            f"{word!r} occurs {len(found)} times in the {which} sentence: the first is compared (mark another: [word])."
        )
    return sentence, found[0][0], found[0][1], note


@dataclass(frozen=True)
class SameSenseLayer:
    """One layer: the word's cosine, the context's (word masked), and against the calibration."""

    layer: int
    cosine: float
    context_cosine: float | None  # the vectors at the word's place with the word masked
    same_percentile: float | None  # where the cosine falls among same-sense pairs (0..100)
    different_percentile: float | None  # and among different-sense pairs
    probability: float | None  # P(same sense) from this layer's cosine alone (Platt scaling, 0.5 at its cut)
    cut: float | None  # this layer's balanced cosine cut (the median over the calibration pairs)
    log_odds: float | None  # this layer's share of the read-out's log-odds of the same sense (they sum to it)
    reads: str | None  # "same" or "different": by log_odds >= 0 under the read-out, else by probability >= 0.5


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

        head = ["layer", "cos(word)", "cos(context)", "pct among same", "pct among different"]
        rows: list[tuple[Any, ...]] = [
            (f"L{r.layer}", r.cosine, r.context_cosine, r.same_percentile, r.different_percentile) for r in self.layers
        ]
        if self.decided_by == READOUT:
            head += ["log-odds share", "reads"]
            rows = [(*row, r.log_odds, r.reads) for row, r in zip(rows, self.layers, strict=True)]
        elif self.decided_by is not None:
            head += ["cut (cos)", "P(same)", "reads"]
            rows = [(*row, r.cut, r.probability, r.reads) for row, r in zip(rows, self.layers, strict=True)]
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
                f"{self.decided_by}; 0.5 is the balanced cut). Calibrated on {self.calibrated_on}."
            )
            lines.append(self._why())
        return "\n".join(lines + list(self.notes))

    def _why(self) -> str:
        """How the layers' readings give the verdict, in words."""
        same = sum(r.reads == "same" for r in self.layers)
        if self.decided_by != READOUT:
            return (
                f"{same} of {len(self.layers)} layers read the same sense by their own cosine cut; the verdict is "
                f"{self.decided_by}'s."
            )
        total = sum(r.log_odds or 0.0 for r in self.layers)
        return (
            f"{same} of {len(self.layers)} layers lean to the same sense; their log-odds shares (each layer's cosines "
            f"of the word, of the context with the word masked, of their sum and crossed, weighed by the read-out) sum "
            f"to {total:+.2f}, so the verdict is {self.verdict} (same when the sum is >= 0)."
        )


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
    find: WordFinder = partial(find_word, model)  # whole words as the model's tokenizer splits them
    first = find_target(sentence_1, word, "first", find)
    second = find_target(sentence_2, word, "second", find)
    if calibration is None:
        calibration = load_calibration(model, cache_dir)
    elif not isinstance(calibration, Calibration):
        raise InputError(f"calibration must be a Calibration, got {type(calibration).__name__}.", HOW_TO_FIT)
    recipe = calibration.readout.recipe if calibration else WicRecipe(context=mask_text(model) is not None)
    targets = [Target(first[0], first[1], first[2]), Target(second[0], second[1], second[2])]
    target, masked = target_vectors(model, targets, pool=recipe.pool, context=recipe.context, options=options)
    word_cos = cosines(target[0], target[1])  # (layers + 1,)
    context_cos = None if masked is None else cosines(masked[0], masked[1])
    shares: list[float | None] = [None] * len(word_cos)
    probability = decided_by = verdict = None
    if calibration is not None:
        if chosen is None:
            shape = (2, 1, *target.shape[1:])  # (2, 1 pair, layers + 1, D)
            vectors = PairVectors(target.reshape(shape), None if masked is None else masked.reshape(shape))
            shares = calibration.readout.layer_log_odds(calibration.readout.features(vectors))[0].tolist()
            probability = float(1.0 / (1.0 + np.exp(-sum(s or 0.0 for s in shares))))  # the read-out's P(same)
            decided_by = READOUT
        else:
            cos = float(word_cos[chosen])
            probability, decided_by = calibration.layers[chosen].probability(cos), f"layer {chosen}"
        verdict = "same sense" if probability >= 0.5 else "different senses"
    rows = []
    for i, cos in enumerate(word_cos.tolist()):
        c = calibration.layers[i] if calibration else None
        share = shares[i]
        p = c.probability(cos) if c else None
        reads = None
        if decided_by == READOUT and share is not None:
            reads = "same" if share >= 0 else "different"
        elif p is not None:
            reads = "same" if p >= 0.5 else "different"
        rows.append(
            SameSenseLayer(
                i,
                cos,
                None if context_cos is None else float(context_cos[i]),
                c.percentile(cos, True) if c else None,
                c.percentile(cos, False) if c else None,
                p,
                c.threshold if c else None,
                share,
                reads,
            )
        )
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
        return (
            f"{calibration.about}: shipped with bertlens for this model (fit your own with --calibrate PATH, in "
            "Python fit_calibration)"
        )
    return f"{calibration.pairs} pairs of {calibration.source} (stored in {calibration.path})"


def _unused_layer(layer: int | None, calibration: Calibration | None) -> str | None:
    """A note when a layer was chosen for a verdict that cannot be given."""
    if layer is None or calibration is not None:
        return None
    return f"Layer {layer} was asked for the verdict, but without a calibration there is none: every layer is shown."
