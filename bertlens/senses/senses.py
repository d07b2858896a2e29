"""A word's senses: its occurrences in a corpus clustered (k automatic or given), each named by the words that set it
apart and its most typical sentences, and every occurrence in 2-D.

`word_senses(model, word, index=...)` reads the word's occurrences from an occurrence index (a filter on the `key`
column, the vectors of one stored layer); `word_senses(model, word, corpus=...)` needs no index: it streams the
corpus, keeps the sentences that contain the word and runs only those through the model (each sentence alone). Either
way at most `max_occurrences` are clustered, a seeded random sample of all found, and the result says so.

Clustering and the choice of k are in `clusters` (k-means on unit vectors; k="auto" by silhouette against one
Gaussian blob of the same spread). A sense's typical sentences are the occurrences nearest its centre (cosine); its
words are those that set it apart from the word's other senses, by class-based TF-IDF with names and stop words left
out (`senses_text.distinctive`). The 2-D picture is the
PCA of the unit vectors (`views.projection.pca`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contextual.pooling import occurrences, pool_pieces
from ..contextual.states import RunOptions, check_layers, hidden_states
from ..core.checks import seed as check_seed
from ..core.checks import whole_number
from ..core.corpus import corpus_path, iter_texts, sentences
from ..core.errors import NAME, InputError
from ..core.model import Model
from ..core.options import WORD_POOLS, WordPool, check_choice
from ..core.progress import bar
from ..core.results import Result, table
from ..core.tokens import find_word, tokenize, word_key
from ..occurrences.search import sql_string
from ..occurrences.store import OccurrenceIndex, open_index
from ..views.clusters import K, check_k, cluster
from ..views.projection import pca
from .senses_text import CoWord, Snippet, context_words, distinctive, snippet_of

CORPUS_LAYER = -1  # without an index: the last layer, which told pseudo-words apart best (docs/benchmarks.md)
BATCH = 64  # sentences per forward pass call when reading a corpus


@dataclass(frozen=True)
class SensesOptions:
    """How a word's occurrences are clustered and described.

    >>> options = SensesOptions(k=3, layer=-1)  # three senses at the last layer, instead of k="auto"
    """

    k: K = "auto"  # "auto" or a number of senses (1..20)
    layer: int | None = None  # None: the index's last stored layer, or CORPUS_LAYER without an index
    max_occurrences: int = 500  # the most occurrences clustered (a seeded random sample when more are found)
    typical: int = 3  # sentences shown per sense (nearest its centre)
    words: int = 8  # words shown per sense (those that set it apart, most distinctive first)
    pool: WordPool = "mean"  # without an index: how a word's pieces pool (an index keeps its own)
    seed: int = 0  # the sample and k-means

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k))  # "3" (from a command line) becomes 3
        if self.layer is not None:
            whole_number(self.layer, "layer", minimum=-100, maximum=100)
        whole_number(self.max_occurrences, "max_occurrences", minimum=6, maximum=100_000)
        whole_number(self.typical, "typical", minimum=0, maximum=100)
        whole_number(self.words, "words", minimum=0, maximum=100)
        check_seed(self.seed)
        check_choice(self.pool, WORD_POOLS, "pooling")


@dataclass(frozen=True)
class Sense:
    """One sense: its size, the sentences nearest its centre (most typical first, with their cosine to it), and the
    words that set it apart from the word's other senses (most distinctive first)."""

    sense: int  # 0 = the largest
    size: int
    share: float  # of the occurrences clustered
    typical: tuple[Snippet, ...]
    scores: tuple[float, ...]  # cosine of each typical occurrence with the sense's centre
    words: tuple[CoWord, ...]


@dataclass(frozen=True)
class Point:
    """One occurrence in the picture: its 2-D coordinates, its sense and its sentence."""

    x: float
    y: float
    sense: int
    occurrence: Snippet


@dataclass(frozen=True, repr=False)
class SensesResult(Result):
    """A word's senses in a corpus or index (`to_dict()` is what `--json` prints and the web page draws).

    >>> senses = word_senses(load_model(), "bank", corpus="sample")  # doctest: +SKIP
    >>> print(senses.to_table())  # doctest: +SKIP
    """

    model: str
    word: str
    source: str  # the index folder or the corpus path
    layer: int  # absolute layer of the vectors (0 = embedding output)
    k: int
    auto: bool  # k chosen automatically
    how: str  # how k was chosen, in words
    silhouettes: dict[int, float]  # mean silhouette (cosine) per k tried
    reference: float | None  # k="auto": the best silhouette one Gaussian blob reached
    found: int  # occurrences found
    clustered: int  # occurrences clustered (found, or max_occurrences of them)
    senses: tuple[Sense, ...]
    points: tuple[Point, ...] = field(repr=False)  # every occurrence clustered, in 2-D (PCA of the unit vectors)
    explained: tuple[float, float]  # variance on each PCA axis
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return f"SensesResult({self.word!r}: {self.k} senses of {self.clustered} occurrences, layer {self.layer})"

    def to_table(self) -> str:
        head = f"{self.word!r} at layer {self.layer}: {self.k} sense{'s' if self.k != 1 else ''} of {self.clustered:,}"
        head += f" occurrences in {self.source}."
        rows = [(s.sense, s.size, f"{s.share:.0%}", ", ".join(w.word for w in s.words)) for s in self.senses]
        lines = [head, f"How k was chosen: {self.how}.", table(["sense", "size", "share", "what sets it apart"], rows)]
        for s in self.senses:
            lines.append(f"\nsense {s.sense}: most typical sentences")
            for snip, score in zip(s.typical, s.scores, strict=True):
                marked = (
                    f"{snip.snippet[: snip.start]}[{snip.snippet[snip.start : snip.end]}]{snip.snippet[snip.end :]}"
                )
                lines.append(f"  {score:.3f}  {marked}  ({os.path.basename(snip.file)}:{snip.line})")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def word_senses(
    model: Model,
    word: str,
    *,
    index: str | os.PathLike[str] | OccurrenceIndex | None = None,
    corpus: str | os.PathLike[str] | None = None,
    options: SensesOptions = SensesOptions(),
    run: RunOptions = RunOptions(),  # noqa: B008 - frozen
    progress: bool = False,
) -> SensesResult:
    """Cluster `word`'s occurrences in an occurrence `index` or in a `corpus` (exactly one) into senses.

    >>> senses = word_senses(load_model(), "record", index="sample-index")  # doctest: +SKIP
    >>> [sense.size for sense in senses.senses]  # doctest: +SKIP
    """
    key = check_word(model, word)
    if (index is None) == (corpus is None):
        raise InputError(
            "Give either an index or a corpus (exactly one).",
            "Pass {index} or {corpus}.",
            arguments={"index": NAME, "corpus": NAME},
        )
    notes: list[str] = []
    if index is not None:
        source, layer, vectors, snippets, found = _from_index(model, key, index, options)
    else:
        source, layer, vectors, snippets, found = _from_corpus(model, key, corpus, options, run, progress)
        notes.append("Without an index, each sentence that holds the word ran through the model alone.")
    if not found:
        raise InputError(
            f"{word!r} does not occur in {source} (compared as a whole word, case-insensitively).",
            "Check the spelling, or ask for a word the corpus holds.",
        )
    if found > len(snippets):
        notes.append(
            f"{found:,} occurrences found; {len(snippets):,} clustered (a random sample, seed {options.seed}; "
            "--max-occurrences to change it)."
        )
    return describe(model, key, source, layer, vectors, snippets, found, options, notes)


def describe(
    model: Model,
    word: str,
    source: str,
    layer: int,
    vectors: np.ndarray,
    snippets: list[Snippet],
    found: int,
    options: SensesOptions,
    notes: list[str],
) -> SensesResult:
    """Cluster the occurrences' vectors (n, D) and describe each sense."""
    found_k = cluster(vectors, options.k, seed=options.seed)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # (n, D)
    closeness = np.einsum("nd,nd->n", unit, found_k.centres[found_k.labels])  # (n,) cosine with own centre
    sentences: dict[tuple[str, int, str, int], int] = {}  # a sentence once per sense, however often it holds the word
    for i, (snip, label) in enumerate(zip(snippets, found_k.labels.tolist(), strict=True)):
        sentences.setdefault((snip.file, snip.line, snip.snippet, label), i)
    once = list(sentences.values())
    contexts = [context_words(snippets[i].snippet, snippets[i].start, snippets[i].end, word) for i in once]
    words = distinctive(contexts, found_k.labels[once], found_k.k, options.words)
    senses = []
    for s in range(found_k.k):
        members = np.flatnonzero(found_k.labels == s)
        nearest = members[np.argsort(-closeness[members], kind="stable")[: options.typical]]
        senses.append(
            Sense(
                s,
                len(members),
                len(members) / len(unit),
                tuple(snippets[i] for i in nearest),
                tuple(float(closeness[i]) for i in nearest),
                tuple(words[s]),
            )
        )
    points, explained = pca(unit, 2)  # (n, 2)
    return SensesResult(
        model=model.source.description,
        word=word,
        source=source,
        layer=layer,
        k=found_k.k,
        auto=found_k.auto,
        how=found_k.how,
        silhouettes={k: round(v, 4) for k, v in found_k.silhouettes.items()},
        reference=None if found_k.reference is None else round(found_k.reference, 4),
        found=found,
        clustered=len(unit),
        senses=tuple(senses),
        points=tuple(
            Point(float(x), float(y), int(label), snip)
            for (x, y), label, snip in zip(points, found_k.labels, snippets, strict=True)
        ),
        explained=(float(explained[0]), float(explained[1])),
        notes=tuple(notes),
    )


def check_word(model: Model, word: object) -> str:
    """The word, casefolded, once checked to be one word as the model's tokenizer splits words."""
    if not isinstance(word, str) or not word.strip():
        raise InputError(f"The word must be a non-empty string, got {word!r}.", "Example: bank.")
    words = {t.word for t in tokenize(model, word.strip(), add_special_tokens=False).tokens if t.word is not None}
    if len(words) != 1:
        raise InputError(
            f"{word!r} is {len(words)} words to this model's tokenizer; senses are found for one word.",
            "Give a single word (no spaces or punctuation inside), e.g. bank.",
        )
    return word_key(word)


def absolute_layer(model: Model, layer: int) -> int:
    return layer + model.config.num_hidden_layers + 1 if layer < 0 else layer


def _from_index(
    model: Model, key: str, index: str | os.PathLike[str] | OccurrenceIndex, options: SensesOptions
) -> tuple[str, int, np.ndarray, list[Snippet], int]:
    opened = index if isinstance(index, OccurrenceIndex) else open_index(index, model=model)
    if isinstance(index, OccurrenceIndex):
        opened.check_model(model)
    column = opened.column(options.layer)  # refuses a layer the index does not hold
    where = f"key = {sql_string(key)}"
    found = int(opened.occurrences.count_rows(where))
    keep = _sample(found, options.max_occurrences, options.seed)
    wanted = ["text_id", "start", "end", column]
    rows: dict[str, list[Any]] = {name: [] for name in wanted}
    seen = 0
    for batch in opened.occurrences.search().where(where).select(wanted).limit(found or 1).to_batches():
        picked = keep[(keep >= seen) & (keep < seen + batch.num_rows)] - seen
        seen += batch.num_rows
        if len(picked):
            chosen = batch.take(picked).to_pydict()
            for name in wanted:
                rows[name].extend(chosen[name])
    texts = opened.texts_of(rows["text_id"])
    snippets = []
    for text_id, start, end in zip(rows["text_id"], rows["start"], rows["end"], strict=True):
        file, line, text = texts[int(text_id)]
        cut, s, e = snippet_of(text, int(start), int(end))
        snippets.append(Snippet(cut, s, e, file, line, int(text_id)))
    vectors = np.asarray(rows[column], dtype=np.float32).reshape(len(snippets), opened.dims)  # (n, D)
    return str(opened.path), int(column.removeprefix("layer_")), vectors, snippets, found


def _sample(found: int, most: int, seed: int) -> np.ndarray:
    """Sorted positions of the rows kept: all, or `most` drawn at random (seeded)."""
    if found <= most:
        return np.arange(found)
    return np.sort(np.random.default_rng(seed).choice(found, size=most, replace=False))


def _from_corpus(
    model: Model,
    key: str,
    corpus: str | os.PathLike[str] | None,
    options: SensesOptions,
    run: RunOptions,
    progress: bool,
) -> tuple[str, int, np.ndarray, list[Snippet], int]:
    assert corpus is not None
    layer = absolute_layer(model, check_layers(model, [CORPUS_LAYER if options.layer is None else options.layer])[0])
    source = corpus_path(corpus)
    rng = np.random.default_rng(options.seed)
    kept: list[tuple[str, int, str]] = []  # (file, line, sentence): a reservoir sample of the sentences with the word
    matching = 0
    for text in iter_texts(source):  # the word as the model's tokenizer splits words (core/tokens.py: find_word)
        if key not in text.text.casefold():  # a cheap first test: find_word tokenizes only sentences that pass it
            continue
        for sentence in sentences(text.text):
            if find_word(model, sentence, key):
                matching += 1
                if len(kept) < options.max_occurrences:
                    kept.append((text.file, text.line, sentence))
                elif (j := int(rng.integers(matching))) < options.max_occurrences:
                    kept[j] = (text.file, text.line, sentence)
    vectors: list[np.ndarray] = []
    snippets: list[Snippet] = []
    with bar(len(kept), desc=f"senses of {key}", unit="sentence", show=progress) as shown:
        for first in range(0, len(kept), BATCH):
            chunk = kept[first : first + BATCH]
            for (file, line, _), states in zip(
                chunk, hidden_states(model, [c[2] for c in chunk], options=run), strict=True
            ):
                for found_run in occurrences(states, key):
                    indices = [t.index for t in found_run]
                    vectors.append(pool_pieces(states.states[layer][indices], options.pool))  # (D,)
                    cut, s, e = snippet_of(states.text, found_run[0].start, found_run[-1].end)
                    snippets.append(Snippet(cut, s, e, file, line, -1))
            shown.update(len(chunk))
    if not snippets:
        return str(corpus), layer, np.zeros((0, 1), dtype=np.float32), [], 0
    total = len(snippets) + max(matching - len(kept), 0)  # occurrences, counting unsampled sentences as one each
    keep = _sample(len(snippets), options.max_occurrences, options.seed)
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(snippets), -1)[keep]  # (n, D)
    return str(corpus), layer, matrix, [snippets[i] for i in keep], total
