"""The contextuality measures of Ethayarajh (2019), per layer, over a corpus.

- self-similarity: for a word seen in several sentences, the mean cosine between its vectors in different sentences
  (1 = context changes nothing); averaged over words;
- intra-sentence similarity: for a sentence, the mean cosine between each word's vector and the sentence's mean
  word vector; averaged over sentences;
- anisotropy baseline: the mean cosine between vectors of random word occurrences from different sentences, in the
  same layer. Each measure is also given minus the baseline ("adjusted"), as the paper argues.

Words are whitespace-and-punctuation words of the tokenizer, their pieces mean-pooled; a word's text is compared
case-insensitively. Texts run in chunks, and only the occurrences needed are kept, so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.checks import flag, whole_number
from ..core.checks import seed as check_seed
from ..core.errors import NAME, InputError
from ..core.model import Model
from ..core.progress import bar
from ..core.results import Result, table
from ..core.tokens import word_key
from .pooling import word_runs
from .states import RunOptions, TokenStates, hidden_states

_CHUNK = 256  # texts per hidden_states call


@dataclass(frozen=True)
class LayerContextuality:
    layer: int  # 0 = embedding output
    self_similarity: float
    intra_sentence: float
    baseline: float
    adjusted_self_similarity: float  # self_similarity - baseline
    adjusted_intra_sentence: float  # intra_sentence - baseline


@dataclass(frozen=True, repr=False)
class Contextuality(Result):
    """Ethayarajh's measures per layer: self-similarity, intra-sentence similarity and the anisotropy baseline.

    >>> texts = ["I like eating bread", "The banana bread was horrible", "bread is good", "a dog barked at the cat"]
    >>> layer = measure_contextuality(load_model(), texts, words=["bread"]).layers[-1]
    >>> layer.self_similarity > layer.baseline
    True
    """

    model: str
    texts: int
    words: tuple[str, ...]  # the words whose self-similarity was measured (seen in at least two texts)
    occurrences: int  # word occurrences behind the self-similarity
    max_contexts: int
    layers: tuple[LayerContextuality, ...]

    def __repr__(self) -> str:
        return f"Contextuality({len(self.words)} words over {self.texts} texts, {len(self.layers)} layers)"

    def to_table(self) -> str:
        rows = [
            (
                s.layer,
                s.self_similarity,
                s.intra_sentence,
                s.baseline,
                s.adjusted_self_similarity,
                s.adjusted_intra_sentence,
            )
            for s in self.layers
        ]
        head = ["layer", "self-sim", "intra-sent", "baseline", "self-sim adj.", "intra-sent adj."]
        return (
            f"{table(head, rows)}\n{len(self.words)} words in up to {self.max_contexts} contexts each "
            f"({self.occurrences} occurrences), {self.texts} texts; adjusted = measure - baseline.\n"
            "A word that is not one token is the mean of its pieces' vectors; baseline: random pairs of words from "
            "different texts (the anisotropy baseline)."
        )


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def measure_contextuality(
    model: Model,
    texts: Sequence[str],
    *,
    words: Sequence[str] | None = None,
    max_contexts: int = 50,
    pairs: int = 5000,
    seed: int = 0,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
) -> Contextuality:
    """Self-similarity, intra-sentence similarity and the anisotropy baseline of every layer over `texts`.

    With `progress`, a bar on standard error counts the texts run through the model.

    >>> texts = ["I like eating bread", "The banana bread was horrible", "bread is good", "a dog barked at the cat"]
    >>> measured = measure_contextuality(load_model(), texts, words=["bread"])
    >>> measured.layers[0].layer, len(measured.layers)
    (0, 7)
    """
    wanted = _checked(texts, words, max_contexts, pairs, seed)
    gathered = _Gathered(wanted, max_contexts, capacity=2 * pairs, rng=np.random.default_rng(seed))
    with bar(len(texts), desc="contextuality", unit="texts", show=flag(progress, "progress")) as shown:
        for start in range(0, len(texts), _CHUNK):
            chunk = hidden_states(model, list(texts[start : start + _CHUNK]), options=options)
            for offset, states in enumerate(chunk):
                gathered.add(start + offset, states)
            shown.update(min(_CHUNK, len(texts) - start))
    measured = {w: np.stack(v) for w, v in gathered.seen.items() if len(v) >= 2}  # (n, L+1, H)
    if not measured:
        missing = "none of the words" if wanted else "no word"
        raise InputError(
            f"{missing.capitalize()} occurs in two or more texts, so self-similarity cannot be measured.",
            "Give more texts, or words that occur in at least two of them.",
        )
    self_sim = np.mean([_mean_pairwise(v) for v in measured.values()], axis=0)  # (L+1,)
    baseline = _baseline(gathered.reservoir, pairs, gathered.rng)  # (L+1,)
    intra_mean = np.mean(gathered.intra, axis=0) if gathered.intra else np.full_like(self_sim, np.nan)
    return Contextuality(
        model=model.source.description,
        texts=len(texts),
        words=tuple(sorted(measured)),
        occurrences=int(sum(len(v) for v in measured.values())),
        max_contexts=max_contexts,
        layers=_layers(self_sim, intra_mean, baseline),
    )


@dataclass
class _Gathered:
    """What the texts leave for the measures, kept small: each wanted word's vectors in up to `max_contexts` texts,
    each text's intra-sentence similarity, and a reservoir sample of word occurrences for the baseline."""

    wanted: set[str] | None  # the words asked about, as keys (None: every word)
    max_contexts: int
    capacity: int  # occurrences the reservoir holds
    rng: np.random.Generator  # the reservoir's draws (and after it the baseline's pairs)
    seen: dict[str, list[np.ndarray]] = field(default_factory=dict)  # word -> its vectors (layers + 1, H), one per text
    intra: list[np.ndarray] = field(default_factory=list)  # per text: (layers + 1,) mean cosine to its mean word
    reservoir: list[tuple[int, np.ndarray]] = field(default_factory=list)  # (text index, vector) for the baseline
    offered: int = 0  # occurrences offered to the reservoir so far

    def add(self, number: int, states: TokenStates) -> None:
        """Text `number`'s words: their vectors pooled from their pieces, each offered to the reservoir, the wanted
        ones kept (once per text)."""
        runs = word_runs(states.tokens)
        if not runs:
            return
        pieces = [states.states[:, [t.index for t in run]] for run in runs]  # each (L+1, pieces, H)
        vectors = np.stack([p.mean(axis=1) for p in pieces])  # (w, L+1, H)
        if len(runs) > 1:
            centre = _unit(vectors.mean(axis=0))  # (L+1, H)
            self.intra.append((_unit(vectors) * centre).sum(axis=-1).mean(axis=0))  # (L+1,)
        used: set[str] = set()
        for run, vector in zip(runs, vectors, strict=True):
            key = word_key(states.text[run[0].start : run[-1].end])
            self.offered += 1
            if len(self.reservoir) < self.capacity:
                self.reservoir.append((number, vector))
            elif (slot := int(self.rng.integers(self.offered))) < self.capacity:
                self.reservoir[slot] = (number, vector)
            if key in used or (self.wanted is not None and key not in self.wanted) or not any(c.isalpha() for c in key):
                continue
            used.add(key)
            bucket = self.seen.setdefault(key, [])
            if len(bucket) < self.max_contexts:
                bucket.append(vector)


def _layers(self_sim: np.ndarray, intra: np.ndarray, baseline: np.ndarray) -> tuple[LayerContextuality, ...]:
    """Each layer's measures, (L+1,) each, and the two adjusted by the baseline."""
    return tuple(
        LayerContextuality(
            layer=i,
            self_similarity=float(self_sim[i]),
            intra_sentence=float(intra[i]),
            baseline=float(baseline[i]),
            adjusted_self_similarity=float(self_sim[i] - baseline[i]),
            adjusted_intra_sentence=float(intra[i] - baseline[i]),
        )
        for i in range(len(self_sim))
    )


def _checked(
    texts: Sequence[str], words: Sequence[str] | None, max_contexts: int, pairs: int, seed: int
) -> set[str] | None:
    """`measure_contextuality`'s arguments checked; the words asked about as keys (None: every word)."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InputError(
            f"texts must be a list of texts, got {type(texts).__name__}.", "Pass e.g. a list of sentences."
        )
    if isinstance(words, str):
        words = [words]
    if words is not None and (not isinstance(words, Iterable) or not all(isinstance(w, str) for w in words)):
        raise InputError("words must be a list of words (or None for every word).", "Example: words=['bank', 'bread'].")
    if len(texts) < 2:
        raise InputError("Give at least two texts.", "Contextuality compares a word across different texts.")
    whole_number(pairs, "pairs", minimum=1)
    check_seed(seed)
    if isinstance(max_contexts, bool) or not isinstance(max_contexts, int) or max_contexts < 2:
        raise InputError(
            f"{{max_contexts}} must be at least 2, got {max_contexts}.",
            "Give 2 or more: self-similarity compares a word's contexts in pairs (default 50).",
            arguments={"max_contexts": NAME},
        )
    return None if words is None else {word_key(w) for w in words if w.strip()}


def _mean_pairwise(vectors: np.ndarray) -> np.ndarray:
    """Mean cosine over all pairs i < j of vectors (n, L+1, H), per layer: (L+1,)."""
    unit = _unit(vectors.astype(np.float64)).transpose(1, 0, 2)  # (L+1, n, H)
    grams = unit @ unit.transpose(0, 2, 1)  # (L+1, n, n)
    n = vectors.shape[0]
    means: np.ndarray = (grams.sum(axis=(1, 2)) - np.trace(grams, axis1=1, axis2=2)) / (n * (n - 1))
    return means


def _baseline(reservoir: list[tuple[int, np.ndarray]], pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Mean cosine of random pairs of occurrences from different texts, per layer: (L+1,)."""
    texts = np.array([t for t, _ in reservoir])
    stacked = _unit(np.stack([v for _, v in reservoir]).astype(np.float64))  # (r, L+1, H)
    a, b = rng.integers(len(reservoir), size=pairs), rng.integers(len(reservoir), size=pairs)
    keep = texts[a] != texts[b]
    if not keep.any():
        return np.full(stacked.shape[1], np.nan)
    means: np.ndarray = (stacked[a[keep]] * stacked[b[keep]]).sum(axis=-1).mean(axis=0)
    return means
