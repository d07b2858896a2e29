"""WiC (word in context): pairs read from its files, the target word's vectors in both sentences, per-layer cosines,
and accuracy with the published protocol (a cosine threshold chosen on the training split, applied to the evaluated
one), beside the read-out bertlens uses by default.

The format (Pilehvar and Camacho-Collados, NAACL 2019): `NAME.data.txt` holds `word <TAB> N|V <TAB> i-j <TAB>
sentence 1 <TAB> sentence 2`, where i and j index the whitespace-separated tokens of each sentence, and
`NAME.gold.txt` beside it holds T (same sense) or F per line. WiC is CC BY-NC: bertlens never ships it.

The default read-out (`WicRecipe`, chosen on WiC's train and dev splits, docs/benchmarks.md): per layer the cosine
of the word's vectors, the cosine of the vectors at its place with the word replaced by the mask token (what the
context alone says), and the cosine of their sums, each vector centred by its layer's mean over the training pairs;
a logistic regression over those per-layer cosines, fitted on the training pairs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contextual.pooling import pool_pieces
from ..contextual.states import RunOptions, hidden_states
from ..core.errors import NAME, InputError
from ..core.model import Model
from ..core.options import WordPool
from ..core.outputs import read_small_text
from ..core.paths import INPUT, user_path
from ..core.progress import bar
from ..core.results import Result, table
from .wic_readout import PairVectors, WicRecipe, best_threshold, cosines, fit_readout

FILE_LIMIT = 64 << 20  # bytes: WiC's training split is 0.5 MB
CHUNK = 256  # sentences per hidden_states call: bounded memory, and a progress step
REFERENCES = (  # accuracy (%) in the WiC paper (Table 3, test split); humans: the paper's agreement estimate
    ("random", 50.0),
    ("BERT-large, cosine threshold", 65.5),
    ("Context2vec, cosine threshold", 59.3),
    ("ELMo, cosine threshold", 57.7),
    ("humans (agreement)", 80.0),
)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class WicPair:
    """One WiC line: the word (a lemma), its part of speech, its token index in each sentence, and the gold label."""

    word: str
    pos: str
    index_1: int
    index_2: int
    sentence_1: str
    sentence_2: str
    same: bool | None  # True: the same sense; None when no gold file was read
    where: str  # "file:line", for messages


@dataclass(frozen=True)
class Target:
    """A word in a sentence: the characters [start, end) of `sentence`."""

    sentence: str
    start: int
    end: int


def wic_files(path: Any) -> tuple[Path, Path]:
    """The data file and its gold file: `path` is a `*.data.txt` or a folder holding exactly one."""
    given = user_path(path, "WiC file", INPUT)
    if given.is_dir():
        found = sorted(given.glob("*.data.txt"))
        if len(found) != 1:
            raise InputError(
                f"{given} holds {len(found)} *.data.txt files: {', '.join(p.name for p in found) or 'none'}.",
                "Give a WiC folder with one NAME.data.txt (and NAME.gold.txt), or the .data.txt file itself.",
            )
        given = found[0]
    if not given.name.endswith(".data.txt"):
        raise InputError(f"{given} is not a WiC data file (NAME.data.txt).", "Give NAME.data.txt or its folder.")
    return given, given.with_name(given.name[: -len(".data.txt")] + ".gold.txt")


def read_wic(path: Any, *, labels: bool = True, gold: Any = None) -> tuple[WicPair, ...]:
    """The pairs of a WiC file or folder; with `labels`, the gold file (beside it, or `gold`) is required and read.

    >>> pairs = read_wic("WiC/dev", labels=True)  # doctest: +SKIP
    >>> len(pairs)  # doctest: +SKIP
    638
    """
    data, beside = wic_files(path)
    gold = beside if gold is None else user_path(gold, "WiC gold file", INPUT)
    lines = read_small_text(data, "WiC data file", limit=FILE_LIMIT).splitlines()
    golds: list[str | None] = [None] * len(lines)
    if labels:
        if not gold.is_file():
            raise InputError(
                f"No gold file beside {data}: {gold} is missing.", "Put NAME.gold.txt (T/F per line) there."
            )
        golds = list(read_small_text(gold, "WiC gold file", limit=FILE_LIMIT).splitlines())
        if len(golds) != len(lines):
            raise InputError(
                f"{gold} has {len(golds)} lines but {data} has {len(lines)}: they are not the same length.",
                "Each pair needs one T or F line.",
            )
    pairs = [
        _pair(line, label, f"{data}:{n}", f"{gold}:{n}")
        for n, (line, label) in enumerate(zip(lines, golds, strict=True), 1)
    ]
    if not pairs:
        raise InputError(f"{data} holds no pairs.", "Give a WiC data file with one pair per line.")
    return tuple(pairs)


def _pair(line: str, label: str | None, where: str, gold_where: str) -> WicPair:
    fields = line.split("\t")
    if len(fields) != 5:
        raise InputError(
            f"{where}: expected 5 tab-separated fields, found {len(fields)}.",
            "Each line is: word <TAB> N|V <TAB> i-j <TAB> sentence 1 <TAB> sentence 2.",
        )
    word, pos, indices, first, second = fields
    match = re.fullmatch(r"(\d+)-(\d+)", indices.strip())
    if match is None:
        raise InputError(f"{where}: the indices {indices!r} are not i-j.", "Give the word's index in each: e.g. 2-0.")
    if not word.strip() or not first.strip() or not second.strip():
        raise InputError(f"{where}: an empty word or sentence.", "Give the word and both sentences.")
    same = None
    if label is not None:
        if label.strip() not in ("T", "F"):
            raise InputError(f"{gold_where}: the label {label!r} is not T or F.", "Write T (same sense) or F.")
        same = label.strip() == "T"
    pair = WicPair(word.strip(), pos.strip(), int(match[1]), int(match[2]), first, second, same, where)
    word_span(first, pair.index_1, where)  # both indices exist
    word_span(second, pair.index_2, where)
    return pair


def word_span(sentence: str, index: int, where: str = "the sentence") -> tuple[int, int]:
    """The characters [start, end) of the `index`-th whitespace-separated token of `sentence`."""
    spans = [m.span() for m in _WORD.finditer(sentence)]
    if not 0 <= index < len(spans):
        raise InputError(
            f"{where}: word index {index} does not exist in {sentence!r} ({len(spans)} words).",
            "Indices count whitespace-separated tokens from 0.",
        )
    return spans[index]


def pair_targets(pairs: Sequence[WicPair]) -> list[Target]:
    """The targets of all first sentences, then of all second sentences (2 x pairs)."""
    first = [Target(p.sentence_1, *word_span(p.sentence_1, p.index_1, p.where)) for p in pairs]
    return first + [Target(p.sentence_2, *word_span(p.sentence_2, p.index_2, p.where)) for p in pairs]


def mask_text(model: Model) -> str | None:
    """The model's mask token as written in a text ([MASK] or <mask>), or None when it has none."""
    vocabulary = model.vocabulary
    return next((t for t in ("[MASK]", "<mask>") if vocabulary.token_to_id(t) is not None), None)


def target_vectors(
    model: Model,
    targets: Sequence[Target],
    *,
    pool: WordPool = "mean",
    context: bool = True,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each target's pooled vector at every layer, (targets, layers + 1, D), and with `context` the same at its place
    with the word replaced by the mask token (None without). One `hidden_states` call per chunk of sentences."""
    mask = mask_text(model) if context else None
    if context and mask is None:
        raise InputError(
            "The model's tokenizer has no mask token, so the context alone cannot be read.", "Use context=False."
        )
    texts = [t.sentence for t in targets]
    spans = [(t.start, t.end) for t in targets]
    if mask is not None:
        texts += [t.sentence[: t.start] + mask + t.sentence[t.end :] for t in targets]
        spans += [(t.start, t.start + len(mask)) for t in targets]
    pooled: list[np.ndarray] = []
    with bar(len(texts), desc="sentences", unit="sentence", show=progress) as shown:
        for begin in range(0, len(texts), CHUNK):
            for states, (start, end) in zip(
                hidden_states(model, texts[begin : begin + CHUNK], options=options),
                spans[begin : begin + CHUNK],
                strict=True,
            ):
                pieces = [t.index for t in states.tokens if t.sequence == 0 and t.start < end and t.end > start]
                if not pieces:
                    raise InputError(
                        f"No token covers characters {start}-{end} of {states.text!r}.",
                        "The target word must be made of characters the tokenizer keeps.",
                    )
                chosen = np.moveaxis(states.states[:, pieces], 1, 0)  # (pieces, layers + 1, H)
                pooled.append(pool_pieces(chosen, pool))  # (layers + 1, D)
            shown.update(len(texts[begin : begin + CHUNK]))
    vectors = np.stack(pooled).astype(np.float32)  # (targets [x2], layers + 1, D)
    n = len(targets)
    return vectors[:n], (vectors[n:] if mask is not None else None)


def pair_vectors(
    model: Model, pairs: Sequence[WicPair], recipe: WicRecipe, options: RunOptions, progress: bool = False
) -> PairVectors:
    """The vectors of every pair's two targets (see `PairVectors`)."""
    target, masked = target_vectors(
        model, pair_targets(pairs), pool=recipe.pool, context=recipe.context, options=options, progress=progress
    )
    n = len(pairs)
    shape = (2, n, *target.shape[1:])  # (2, pairs, layers + 1, D)
    return PairVectors(target.reshape(shape), None if masked is None else masked.reshape(shape))


@dataclass(frozen=True)
class WicLayer:
    """One layer under the published protocol: the threshold from the training split and both accuracies."""

    layer: int
    threshold: float
    train_accuracy: float
    accuracy: float


@dataclass(frozen=True, repr=False)
class WicResult(Result):
    """WiC accuracy per layer (cosine threshold chosen on train) and with the read-out (fitted on train).

    >>> result = evaluate_wic(load_model(), "WiC/dev", train="WiC/train")  # doctest: +SKIP
    >>> print(result.to_table())  # per layer: threshold, train and dev accuracy  # doctest: +SKIP
    """

    model: str
    data: str
    train: str
    pairs: int
    train_pairs: int
    layers: tuple[WicLayer, ...]
    best_layer: int  # the layer with the best training accuracy (chosen without looking at the evaluated split)
    recipe: WicRecipe
    recipe_accuracy: float
    recipe_train_accuracy: float
    notes: tuple[str, ...] = ()
    references: tuple[tuple[str, float], ...] = field(default=REFERENCES)

    def __repr__(self) -> str:
        return f"WicResult({self.pairs} pairs, read-out {self.recipe_accuracy:.3f}, best layer {self.best_layer})"

    def to_table(self) -> str:
        rows: list[tuple[str, str | float, float, float]] = [
            (f"L{r.layer}" + (" *" if r.layer == self.best_layer else ""), r.threshold, r.train_accuracy, r.accuracy)
            for r in self.layers
        ]
        rows.append(("read-out", "", self.recipe_train_accuracy, self.recipe_accuracy))
        recipe = self.recipe
        how = (
            f"read-out: logistic regression (C={recipe.c}) on per-layer cosines of the word"
            + (", of the context (word masked) and of their sum" if recipe.context else "")
            + (", centred per layer" if recipe.centre else "")
            + f"; pieces pooled by {recipe.pool}."
        )
        refs = "; ".join(f"{name} {value:.1f}" for name, value in self.references)
        return (
            f"WiC: {self.pairs} pairs of {self.data}, thresholds and read-out fitted on {self.train_pairs} pairs of "
            f"{self.train}.\n"
            + table(["layer", "threshold", "train accuracy", "accuracy"], rows)
            + f"\n* the layer with the best training accuracy. {how}\nReference points (%, WiC paper): {refs}."
            + "".join(f"\n{note}" for note in self.notes)
        )


def default_train(path: Any) -> Path:
    """WiC's training split beside an evaluated one: `PATH/../train` (the layout of WiC's release)."""
    data, _ = wic_files(path)
    for folder in (data.parent.parent / "train", data.parent):
        found = sorted(folder.glob("train*.data.txt")) if folder.is_dir() else []
        if found and found[0] != data:
            return found[0]
    raise InputError(
        f"No training split found beside {data}.", "Give the training split: {train}.", arguments={"train": NAME}
    )


def evaluate_wic(
    model: Model,
    path: Any,
    *,
    train: Any = None,
    recipe: WicRecipe = WicRecipe(),  # noqa: B008 - frozen dataclass
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
) -> WicResult:
    """WiC accuracy of `path` (a WiC file or folder) per layer with the published protocol, and with `recipe`'s
    read-out; both fitted on `train` (default: the `train` folder beside `path`'s folder).

    >>> result = evaluate_wic(load_model(), "WiC/dev", train="WiC/train")  # doctest: +SKIP
    >>> result.best_layer, result.recipe_accuracy  # doctest: +SKIP
    """
    if not isinstance(recipe, WicRecipe):
        raise InputError(f"recipe must be a WicRecipe, got {type(recipe).__name__}.", "Pass WicRecipe().")
    train_path = default_train(path) if train is None else wic_files(train)[0]
    pairs, train_pairs = read_wic(path), read_wic(train_path)
    notes: list[str] = []
    if recipe.context and mask_text(model) is None:
        recipe = WicRecipe(recipe.pool, False, recipe.centre, recipe.c)
        notes.append("The model has no mask token: the read-out uses the word's own vectors only.")
    train_vectors = pair_vectors(model, train_pairs, recipe, options, progress)
    vectors = pair_vectors(model, pairs, recipe, options, progress)
    y_train = np.array([p.same for p in train_pairs], dtype=bool)
    y = np.array([p.same for p in pairs], dtype=bool)
    raw_train = cosines(train_vectors.target[0], train_vectors.target[1])  # (train pairs, layers + 1)
    raw = cosines(vectors.target[0], vectors.target[1])  # (pairs, layers + 1)
    layers = []
    for layer in range(raw.shape[1]):
        threshold, train_accuracy = best_threshold(raw_train[:, layer], y_train)
        accuracy = float(((raw[:, layer] >= threshold) == y).mean())
        layers.append(WicLayer(layer, threshold, train_accuracy, accuracy))
    readout = fit_readout(train_vectors, y_train, recipe)
    train_hits = (readout.probability(readout.features(train_vectors)) >= 0.5) == y_train
    hits = (readout.probability(readout.features(vectors)) >= 0.5) == y
    return WicResult(
        model=model.source.description,
        data=str(wic_files(path)[0]),
        train=str(train_path),
        pairs=len(pairs),
        train_pairs=len(train_pairs),
        layers=tuple(layers),
        best_layer=max(layers, key=lambda r: r.train_accuracy).layer,
        recipe=recipe,
        recipe_accuracy=float(hits.mean()),
        recipe_train_accuracy=float(train_hits.mean()),
        notes=tuple(notes),
    )
