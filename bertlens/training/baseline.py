"""The word2vec baseline: gensim's skip-gram trained on a run's corpus for a wall-clock budget, scored the same way.

`word2vec_baseline` trains on the same corpus for a given time (by default the run's own training time) and scores
the vectors on the same word-similarity benchmarks as the watcher, and on the category purity of the same learning
groups (`purity.py`, the words word2vec holds), so MLM-trained input rows stand beside a classic method;
`save_word2vec_baseline` keeps the result beside the run (training/word2vec.json), where the report finds it.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.corpus import corpus_path
from ..core.errors import InputError
from ..core.extras import require
from ..core.outputs import make_folder, output_path, replace_text, write_error
from ..core.progress import Bar, bar
from ..core.results import Result, table
from .config import PretrainConfig
from .purity import PURITY_K, Purity, category_purity, learning_groups

WORD2VEC_FILE = "word2vec.json"
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def _words(corpus: Path, lowercase: bool, max_texts: int | None) -> Iterator[list[str]]:
    from ..core.corpus import iter_texts, sentences

    for count, text in enumerate(iter_texts(corpus)):
        if max_texts is not None and count >= max_texts:
            return
        for sentence in sentences(text.text):
            words = _WORD.findall(sentence.lower() if lowercase else sentence)
            if words:
                yield words


@dataclass(frozen=True, repr=False)
class Word2VecBaseline(Result):
    """gensim word2vec trained on the same corpus for a wall-clock budget, scored on the same benchmarks.

    >>> baseline = word2vec_baseline("sample", seconds=60)  # doctest: +SKIP
    >>> baseline.vocabulary, baseline.vector_size  # doctest: +SKIP
    """

    corpus: str
    seconds_budget: float
    seconds: float  # wall-clock time used, vocabulary building included
    words_trained: int  # running words fed to training (epochs over the corpus included)
    vocabulary: int
    vector_size: int
    threads: int
    benchmarks: dict[str, dict[str, Any]]  # name -> spearman, pairs_used, pairs_total
    category_purity: dict[str, Any] | None = None  # `Purity.to_dict()` of the learning groups (words it holds)

    def __repr__(self) -> str:
        return f"Word2VecBaseline({self.words_trained} words in {self.seconds:.0f} s)"

    def to_table(self) -> str:
        rows = [(n, s["spearman"], s["pairs_used"], s["pairs_total"]) for n, s in self.benchmarks.items()]
        head = (
            f"word2vec (skip-gram, {self.vector_size} dims, {self.threads} threads) on {self.corpus}: "
            f"{self.words_trained} words in {self.seconds:.0f} s, {self.vocabulary} words kept"
        )
        lines = [head, table(["benchmark", "spearman", "pairs used", "pairs"], rows)]
        if self.category_purity:
            found = self.category_purity
            lines.append(
                f"category purity {found['purity']:.3f} (chance {found['chance']:.3f}, k={found['k']}) on "
                f"{found['words_used']} of the {found['words_total']} learning-group words"
            )
        return "\n".join(lines)


def word2vec_baseline(
    corpus: str | os.PathLike[str],
    seconds: float,
    *,
    benchmarks: Sequence[str] = PretrainConfig.watch_benchmarks,
    vector_size: int = 128,
    threads: int = 1,
    lowercase: bool = True,
    max_texts: int | None = None,
    min_count: int = 5,
    seed: int = 0,
    progress: bool = False,
) -> Word2VecBaseline:
    """Train skip-gram word2vec on `corpus` until `seconds` of wall-clock time are spent; score it.

    The vocabulary pass counts against the budget. Training then goes through the corpus in chunks of sentences,
    epoch after epoch, with the learning rate falling linearly with the time spent (0.025 to 0.0001). `progress`
    shows a bar over the time budget on standard error (seconds spent, words fed).

    >>> baseline = word2vec_baseline("sample", seconds=60)  # doctest: +SKIP
    >>> baseline.words_trained, baseline.benchmarks  # doctest: +SKIP
    """
    require("gensim", extra="train", what="The word2vec baseline")
    from gensim.models import Word2Vec

    finite = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
    if not finite or seconds <= 0:
        raise InputError(f"The word2vec budget must be a positive number of seconds, got {seconds!r}.", "Example: 300.")
    for name, value in (("vector_size", vector_size), ("threads", threads), ("min_count", min_count)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
            raise InputError(f"{name} must be a whole number from 1 to 65,536, got {value!r}.", "Example: 1.")
    if max_texts is not None and (isinstance(max_texts, bool) or not isinstance(max_texts, int) or max_texts < 1):
        raise InputError(f"max_texts must be a whole number of at least 1, got {max_texts!r}.", "Example: 10000.")
    source = corpus_path(corpus)
    start = time.perf_counter()
    model = Word2Vec(vector_size=vector_size, window=5, min_count=min_count, sg=1, workers=threads, seed=seed)
    total = math.ceil(seconds)
    with bar(total, desc="word2vec", unit="s", show=progress) as shown:
        clock = _Clock(shown, start, total)
        model.build_vocab(_words(source, lowercase, max_texts))
        clock.tick("vocabulary built")
        if not model.wv.key_to_index:
            raise InputError(f"No word of {source} occurs {min_count} times.", "Give a larger corpus.")
        fed = 0
        done = False
        while not done:
            chunk: list[list[str]] = []
            for words in _words(source, lowercase, max_texts):
                chunk.append(words)
                if len(chunk) == 20000:
                    done = _train_chunk(model, chunk, start, seconds)
                    fed += sum(len(c) for c in chunk)
                    clock.tick(f"{fed:,} words")
                    chunk = []
                    if done:
                        break
            if chunk and not done:
                done = _train_chunk(model, chunk, start, seconds)
                fed += sum(len(c) for c in chunk)
                clock.tick(f"{fed:,} words")
    vectors = model.wv
    kept = {w: vectors[w] for w in vectors.index_to_key}
    scores = score_vectors(kept, benchmarks)
    purity = vectors_purity(kept, learning_groups())
    return Word2VecBaseline(
        corpus=str(source),
        seconds_budget=seconds,
        seconds=time.perf_counter() - start,
        words_trained=fed,
        vocabulary=len(vectors.index_to_key),
        vector_size=vector_size,
        threads=threads,
        benchmarks=scores,
        category_purity=None if purity is None else purity.to_dict(),
    )


class _Clock:
    """Moves a bar over the time budget to the seconds spent (never past its end)."""

    def __init__(self, shown: Bar, start: float, total: int) -> None:
        self.shown, self.start, self.total, self.at = shown, start, total, 0

    def tick(self, note: str) -> None:
        now = min(int(time.perf_counter() - self.start), self.total)
        self.shown.update(now - self.at)
        self.shown.set_postfix_str(note)
        self.at = now


def _train_chunk(model: Any, chunk: list[list[str]], start: float, budget: float) -> bool:
    """Train on one chunk with the learning rate of the time spent; True when the budget is used up."""
    spent = (time.perf_counter() - start) / budget
    alpha = max(0.025 * (1 - spent), 0.0001)
    model.train(chunk, total_examples=len(chunk), epochs=1, start_alpha=alpha, end_alpha=alpha)
    return time.perf_counter() - start >= budget


def score_vectors(vectors: dict[str, np.ndarray], benchmarks: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Spearman of given word vectors on word-pair benchmarks (pairs with a missing word are skipped and counted);
    `lines` and `cosines` keep each scored pair (its line in the benchmark file), for comparisons on shared pairs."""
    from ..similarity.benchmarks import locate_benchmark, parse_pairs, read_benchmark
    from ..similarity.statistics import spearman

    out: dict[str, dict[str, Any]] = {}
    for name in benchmarks:
        label, path = locate_benchmark(name, "similarity")
        pairs = parse_pairs(read_benchmark(path, label), label)
        human: list[float] = []
        model: list[float] = []
        lines: list[int] = []
        for pair in pairs:
            a = vectors.get(pair.word1, vectors.get(pair.word1.casefold()))
            b = vectors.get(pair.word2, vectors.get(pair.word2.casefold()))
            if a is None or b is None:
                continue
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            human.append(pair.score)
            lines.append(pair.line)
            model.append(float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64) or 1.0)))
        value = spearman(np.array(human), np.array(model)) if len(human) >= 2 else float("nan")
        out[name] = {
            "spearman": value,
            "pairs_used": len(human),
            "pairs_total": len(pairs),
            "lines": lines,
            "cosines": model,
        }
    return out


def vectors_purity(vectors: dict[str, np.ndarray], groups: dict[str, tuple[str, ...]]) -> Purity | None:
    """Category purity (`purity.category_purity`) of the group words that `vectors` holds, as the watcher computes
    it for a run's rows; None where fewer than two groups or k + 1 words are held."""
    names = list(groups)
    rows: list[np.ndarray] = []
    labels: list[int] = []
    for label, name in enumerate(names):
        for word in groups[name]:
            if word in vectors:
                rows.append(np.asarray(vectors[word], dtype=np.float64))
                labels.append(label)
    found_groups = sorted(set(labels))
    if len(found_groups) < 2 or len(rows) <= PURITY_K:
        return None
    found = category_purity(np.stack(rows), labels, PURITY_K, names)
    return Purity(
        purity=found.purity,
        chance=found.chance,
        k=found.k,
        words_used=len(rows),
        words_total=sum(len(words) for words in groups.values()),
        per_group=found.per_group,
    )


def shared_scores(run: Path, word2vec: dict[str, Any], step: int) -> dict[str, dict[str, Any]] | None:
    """Both on the pairs both cover, per benchmark: the run's model (its newest checkpoint, `step`) scored as the
    watcher scores it, and word2vec. None when the baseline kept no pairs (an older file) or the model cannot load."""
    from ..core.model import load_model
    from ..similarity.evaluate import evaluate_pairs
    from ..similarity.statistics import spearman

    if not all(isinstance(s, dict) and "lines" in s for s in word2vec.get("benchmarks", {}).values()):
        return None
    try:
        model = load_model(str(run))
    except InputError:
        return None
    out: dict[str, dict[str, Any]] = {}
    for name, theirs in word2vec["benchmarks"].items():
        try:
            ours = {p.line: (p.human, p.model) for p in evaluate_pairs(model, name).pairs}
        except InputError:
            continue
        cosines = dict(zip(theirs["lines"], theirs["cosines"], strict=True))
        lines = sorted(set(ours) & set(cosines))
        human = np.array([ours[line][0] for line in lines])  # (shared,)
        both = len(lines) >= 2
        out[name] = {
            "step": step,
            "pairs_shared": len(lines),
            "pairs_total": theirs["pairs_total"],
            "pairs_bertlens": len(ours),
            "pairs_word2vec": len(cosines),
            "bertlens": spearman(human, np.array([ours[line][1] for line in lines])) if both else None,
            "word2vec": spearman(human, np.array([cosines[line] for line in lines])) if both else None,
        }
    return out


def save_word2vec_baseline(result: Word2VecBaseline, run: str | os.PathLike[str]) -> Path:
    """Keep the baseline beside a run (training/word2vec.json), where the report finds it."""
    file = output_path(run, "run", run=True) / "training" / WORD2VEC_FILE
    try:
        make_folder(file.parent)
        replace_text(file, json.dumps(result.to_dict(), indent=2) + "\n")
    except OSError as exc:
        raise write_error(file.parent, exc, "the word2vec baseline") from None
    return file
