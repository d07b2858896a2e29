"""The contextual side of two spaces: every layer of A against every layer of B over the same word occurrences.

`contextual_diff` reads a corpus's texts in order and runs each through both models on the word path
(`contextual.word_states`: transformers computes the hidden states, each word's pieces mean-pooled), keeping every layer
(0 = embedding output). Two models may split text into words differently: an occurrence is kept only where both
models read the same characters of the text as one word, and the words left out are counted. Over the occurrences kept:

- linear CKA of every layer pair (spaces/cka.py), a (layers_a + 1, layers_b + 1) matrix;
- at one chosen layer of each, every occurrence's k nearest other occurrences by cosine in A and in B
  (spaces/neighbours.py) and their overlap (Jaccard), averaged per word (case folded): the words whose contextual
  neighbours changed most.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from ..contextual.word_states import WordStates, word_states
from ..core.checks import seed as checked_seed
from ..core.checks import whole_number
from ..core.corpus import iter_texts
from ..core.errors import NAME, InputError
from ..core.model import Model, require_model
from ..core.results import Result, table, visible
from ..core.tokens import word_key
from .cka import cka_matrix
from .neighbours import jaccard, nearest_sets, unit_rows

SHOWN = 20  # words listed, those whose contextual neighbours changed most
FIRST_TEXTS = 8  # texts in the first pair of passes; later ones are sized from the words per text seen so far
MOST_TEXTS = 256  # texts in one pair of passes at most


@dataclass(frozen=True)
class WordChange:
    """One word (case folded) seen at least twice: the mean overlap of its occurrences' nearest occurrences."""

    word: str
    count: int  # occurrences of it among those compared
    overlap: float  # mean Jaccard of each occurrence's k nearest occurrences in A and in B


@dataclass(frozen=True, repr=False)
class ContextualDiff(Result):
    """Two models' layers over the same word occurrences: CKA of every layer pair, and the words whose contextual
    neighbours changed most at the chosen layers.

    >>> found = contextual_diff(load_model(), load_model(), occurrences=500)  # doctest: +SKIP
    >>> float(found.cka[-1, -1]), found.overlap_mean  # doctest: +SKIP
    (1.0, 1.0)
    """

    model_a: str
    model_b: str
    corpus: str
    cka: np.ndarray  # (layers_a + 1, layers_b + 1) float64, row = A's layer, column = B's (0 = embedding output)
    layer_a: int  # the layers whose neighbours are compared
    layer_b: int
    k: int
    occurrences: int  # word occurrences compared: the same characters read as one word by both models
    asked: int  # occurrences asked for
    texts: int  # texts read
    dropped_a: int  # words of A, in the texts read, that B does not read as one word with the same characters
    dropped_b: int  # and the other way round
    overlap_mean: float  # mean Jaccard over every occurrence
    words: tuple[WordChange, ...]  # lowest overlap first (at most SHOWN): words with a letter, seen at least twice
    note: str | None  # what stopped short, and how to get more
    word_overlap: dict[str, float] = field(default_factory=dict, repr=False, compare=False)  # all seen twice or more

    def __repr__(self) -> str:
        shape = "x".join(str(n) for n in self.cka.shape)
        return f"ContextualDiff({self.occurrences} occurrences, CKA {shape}, layers {self.layer_a}/{self.layer_b})"

    def to_dict(self) -> dict[str, object]:
        found = super().to_dict()
        del found["word_overlap"]  # every word's figure: for Python, not for every JSON answer
        return found

    def to_table(self) -> str:
        heads = ["A \\ B", *(str(j) for j in range(self.cka.shape[1]))]
        rows = [(i, *(float(v) for v in row)) for i, row in enumerate(self.cka.tolist())]
        changed = [(visible(w.word), w.count, w.overlap) for w in self.words]
        lines = [
            f"Linear CKA of every layer pair (0 = embedding output) over {self.occurrences:,} word occurrences "
            f"from {self.texts:,} texts of {self.corpus}: A = {self.model_a}, B = {self.model_b}",
            table(heads, rows),
            "",
            f"Contextual neighbours at layer {self.layer_a} of A and {self.layer_b} of B: each occurrence's {self.k} "
            f"nearest occurrences by cosine; mean overlap (Jaccard) {self.overlap_mean:.4f}. Changed most:",
            table(["word", "occurrences", "overlap"], changed) if changed else "(no word seen twice)",
            f"Left out: {self.dropped_a:,} words of A and {self.dropped_b:,} of B that the other model does not read "
            "as one word with the same characters.",
        ]
        if self.note:
            lines.append(f"Note: {self.note}")
        return "\n".join(lines)


@dataclass
class _Gathered:
    """The occurrences kept so far: their layers in both models and their words."""

    vectors_a: list[np.ndarray] = field(default_factory=list)  # each (layers_a + 1, m, d_a) float32
    vectors_b: list[np.ndarray] = field(default_factory=list)  # each (layers_b + 1, m, d_b)
    keys: list[str] = field(default_factory=list)  # each occurrence's word, case folded
    texts: int = 0
    dropped_a: int = 0
    dropped_b: int = 0

    def add(self, a: WordStates, b: WordStates, room: int) -> None:
        """One text's words that both models read alike (by character span), at most `room` of them."""
        in_b = {span: j for j, span in enumerate(zip(b.starts, b.ends, strict=True))}
        pairs = [(i, in_b[span]) for i, span in enumerate(zip(a.starts, a.ends, strict=True)) if span in in_b]
        self.texts += 1
        self.dropped_a += len(a) - len(pairs)
        self.dropped_b += len(b) - len(pairs)
        pairs = pairs[:room]
        if pairs:
            ia, ib = (list(side) for side in zip(*pairs, strict=True))
            self.vectors_a.append(a.vectors[:, ia])  # (layers_a + 1, m, d_a)
            self.vectors_b.append(b.vectors[:, ib])
            self.keys.extend(word_key(a.word(i)) for i in ia)


def _gather(model_a: Model, model_b: Model, corpus: str | os.PathLike[str], wanted: int) -> _Gathered:
    """Texts of `corpus`, in order, through both models until `wanted` occurrences are kept (or the texts end)."""
    layers_a = list(range(model_a.config.num_hidden_layers + 1))
    layers_b = list(range(model_b.config.num_hidden_layers + 1))
    texts = (t.text for t in iter_texts(corpus))
    gathered, size = _Gathered(), FIRST_TEXTS
    while len(gathered.keys) < wanted:
        chunk = list(itertools.islice(texts, size))
        if not chunk:
            break
        found_a = word_states(model_a, chunk, layers=layers_a)
        found_b = word_states(model_b, chunk, layers=layers_b)
        for a, b in zip(found_a, found_b, strict=True):
            if len(gathered.keys) < wanted:
                gathered.add(a, b, wanted - len(gathered.keys))
        per_text = max(len(gathered.keys) / gathered.texts, 1.0)  # occurrences kept per text so far
        size = min(MOST_TEXTS, math.ceil((wanted - len(gathered.keys)) / per_text) + 1)
    return gathered


def _layer(value: object, model: Model, name: str, side: str) -> int:
    """A layer number of `model` (negative counts from the last), as 0..layers; None is the last."""
    count = model.config.num_hidden_layers + 1
    if value is None:
        return count - 1
    if isinstance(value, bool) or not isinstance(value, Integral) or not -count <= int(value) < count:
        raise InputError(
            f"Layer {value!r} ({{{name}}}) does not exist in model {side}: it has layers 0 (embedding output) to "
            f"{count - 1}.",
            f"Give {{{name}}} from 0 to {count - 1}, or a negative number counting from the last (-1).",
            arguments={name: NAME},
        )
    return int(value) % count


def _word_changes(keys: list[str], overlap: np.ndarray) -> tuple[tuple[WordChange, ...], dict[str, float]]:
    """Each word's mean overlap over its occurrences, for words seen at least twice: those with letters that changed
    most (lowest overlap, then most seen, then by word), and every word's figure."""
    words, inverse = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    counts = np.bincount(inverse, minlength=len(words))  # (words,)
    means = np.bincount(inverse, weights=overlap, minlength=len(words)) / counts  # (words,)
    seen = [i for i in range(len(words)) if counts[i] >= 2]
    every = {str(words[i]): float(means[i]) for i in seen}
    lettered = [i for i in seen if any(c.isalpha() for c in words[i])]
    lettered.sort(key=lambda i: (means[i], -counts[i], words[i]))
    changes = tuple(WordChange(str(words[i]), int(counts[i]), float(means[i])) for i in lettered[:SHOWN])
    return changes, every


def contextual_diff(
    model_a: Model,
    model_b: Model,
    corpus: str | os.PathLike[str] = "sample",
    *,
    occurrences: int = 10_000,
    layer: int | None = None,
    layer_b: int | None = None,
    k: int = 10,
    seed: int = 0,
) -> ContextualDiff:
    """Compare two models' layers over the first `occurrences` word occurrences of `corpus` (a file or folder, or
    "sample"/"genesis") that both read as one word: linear CKA of every layer pair, and at `layer` of A and `layer_b`
    of B (default: `layer` when given, else each model's last; negative numbers count from the last) each occurrence's
    `k` nearest occurrences in both, per word. The occurrences are read in corpus order, so nothing is drawn at random;
    `seed` is checked and kept for the callers that pass one on.

    >>> found = contextual_diff(load_model(), load_model(), occurrences=500)  # doctest: +SKIP
    >>> found.cka.shape  # doctest: +SKIP
    (7, 7)
    """
    model_a = require_model(model_a, "model_a")
    model_b = require_model(model_b, "model_b")
    occurrences = whole_number(occurrences, "occurrences", minimum=10)
    k = whole_number(k, "k", minimum=1)
    if k >= occurrences:
        raise InputError(
            f"k={k} must be below the {occurrences:,} occurrences compared (each has at most that many others).",
            "Give a smaller {k} (the default is 10) or more {occurrences}.",
            arguments={"k": NAME, "occurrences": NAME},
        )
    checked_seed(seed)
    layer_a = _layer(layer, model_a, "layer", "A")
    if layer_b is None and layer is not None:  # one layer number for both
        chosen_b = _layer(layer, model_b, "layer", "B")
    else:
        chosen_b = _layer(layer_b, model_b, "layer_b", "B")
    gathered = _gather(model_a, model_b, corpus, occurrences)
    n = len(gathered.keys)
    if n <= k:
        raise InputError(
            f"The corpus held only {n:,} word occurrences that both models read as one word: too few to find "
            f"{k} nearest ones for each.",
            "Give a larger corpus, or a smaller {k}.",
            arguments={"k": NAME},
        )
    vectors_a = np.concatenate(gathered.vectors_a, axis=1)  # (layers_a + 1, n, d_a) float32
    vectors_b = np.concatenate(gathered.vectors_b, axis=1)  # (layers_b + 1, n, d_b)
    cka = cka_matrix(list(vectors_a), list(vectors_b))  # (layers_a + 1, layers_b + 1)
    sets_a = nearest_sets(unit_rows(vectors_a[layer_a]), k)  # (n, k)
    sets_b = nearest_sets(unit_rows(vectors_b[chosen_b]), k)
    overlap = jaccard(sets_a, sets_b)  # (n,)
    changes, every = _word_changes(gathered.keys, overlap)
    note = None
    if n < occurrences:
        note = f"the corpus held only {n:,} word occurrences; give a larger corpus ({occurrences:,} were asked for)"
    return ContextualDiff(
        model_a=model_a.source.description,
        model_b=model_b.source.description,
        corpus=str(corpus),
        cka=cka,
        layer_a=layer_a,
        layer_b=chosen_b,
        k=k,
        occurrences=n,
        asked=occurrences,
        texts=gathered.texts,
        dropped_a=gathered.dropped_a,
        dropped_b=gathered.dropped_b,
        overlap_mean=float(overlap.mean()),
        words=changes,
        note=note,
        word_overlap=every,
    )
