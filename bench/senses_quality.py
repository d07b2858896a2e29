"""How good `bertlens senses` is, by two published protocols, every layer in one run (the protocols and the run).

Pseudo-word disambiguation (Schütze 1998; Yarowsky 1993; Gale, Church & Yarowsky 1992): two unrelated words of similar
frequency (museum, election) are replaced everywhere by one synthetic word (museumelection), so the model cannot
see which was there; the synthetic word's occurrences are clustered as `word_senses` clusters them. With k = 2 the
score is the accuracy of the better of the two ways to name the clusters (chance: 0.5 with as many occurrences of
each word); with k = "auto" the purity (each cluster named by its majority) and how often k = 2 was found. As a
control, each real word's own occurrences (unreplaced) are clustered with k = "auto": how often one sense is found.

Agreement with WiC (Pilehvar & Camacho-Collados 2019): for each pair, the two sentences' occurrences of the word are
clustered together with the word's occurrences in a corpus; "same sense" is predicted when both fall in the same
cluster, and the accuracy is measured against WiC's T/F labels (chance 0.5: the split is balanced).

Every layer is scored from one forward pass. Sentences come from one pass over the corpus (`collect`).

Data from ../shared/data (never shipped): English Wikipedia 2015 (enwiki-2015, WikiExtractor) as the corpus; WiC dev
(CC BY-NC 4.0) for the labels. The default model, CPU. tests/senses/test_senses_quality.py checks the protocols'
mechanics on a tiny model.

Pseudo-words: PAIRS below, unrelated nouns of similar frequency in enwiki-2015 (counts in its first 40 files beside
each pair); `--per-word` sentences of each word (sentences holding both are skipped), the same number of each.

    python bench/senses_quality.py --per-word 50 --wic-pairs 150 --wic-per-word 20 --json-out senses_quality.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens import load_model
from bertlens.contextual.pooling import occurrences, word_runs
from bertlens.contextual.states import RunOptions, hidden_states
from bertlens.core.corpus import iter_texts, sentences
from bertlens.core.errors import InputError
from bertlens.core.model import Model
from bertlens.core.progress import bar
from bertlens.core.results import Result, table
from bertlens.core.tokens import find_word, text_words, word_key
from bertlens.views.clusters import cluster
from bertlens.wic.wic import read_wic, word_span

BATCH = 64
_WORD = re.compile(r"\w+")


def collect(
    corpus: str | os.PathLike[str],
    words: Iterable[str],
    per_word: int,
    *,
    exclusive: bool = False,
    model: Model | None = None,
) -> dict[str, list[str]]:
    """Up to `per_word` sentences of the corpus for each word (casefolded, whole words), in corpus order, read in one
    pass that stops when every word has its sentences. `exclusive`: a sentence holding two of the words is skipped.

    Whole words are the words `model`'s tokenizer reads (`core.tokens.text_words`, compared by `word_key`): the words
    the vectors are pooled for; without a model, runs of letters, digits and underscores."""
    wanted = {word_key(w) for w in words}
    found: dict[str, list[str]] = {w: [] for w in wanted}
    open_words = set(wanted)

    def words_in(sentence: str) -> set[str]:
        if model is None:
            return set(_WORD.findall(sentence.casefold()))
        return {word_key(sentence[s:e]) for s, e in text_words(model, [sentence])[0]}

    for text in iter_texts(corpus):
        folded = text.text.casefold()  # a cheap first test: only a text that holds a word's letters is split
        if not open_words or not any(w in folded for w in open_words):
            if not open_words:
                break
            continue
        for sentence in sentences(text.text):
            present = wanted & words_in(sentence)
            if exclusive and len(present) > 1:
                continue
            for word in present & open_words:
                found[word].append(sentence)
                if len(found[word]) >= per_word:
                    open_words.discard(word)
    return found


def layer_vectors(
    model: Model, texts: Sequence[str], spans: Sequence[str | tuple[int, int]], *, run: RunOptions, progress: bool
) -> list[np.ndarray | None]:
    """Each text's vectors of one word at every layer, its pieces averaged: (layers + 1, D) per occurrence, a list per
    text. A span is a word (every occurrence of it) or character offsets (the words overlapping them, as one)."""
    found: list[np.ndarray | None] = []
    with bar(len(texts), desc="forward passes", unit="sentence", show=progress) as shown:
        for first in range(0, len(texts), BATCH):
            chunk = list(texts[first : first + BATCH])
            for states, span in zip(
                hidden_states(model, chunk, options=run), spans[first : first + BATCH], strict=True
            ):
                if isinstance(span, str):
                    runs = [[t.index for t in r] for r in occurrences(states, span)]
                else:
                    hit = [
                        t.index for r in word_runs(states.tokens) for t in r if t.start < span[1] and t.end > span[0]
                    ]
                    runs = [hit] if hit else []
                rows = [states.states[:, r].mean(axis=1) for r in runs]  # each (layers + 1, D)
                found.append(np.stack(rows) if rows else None)  # (occurrences, layers + 1, D)
            shown.update(len(chunk))
    return found


@dataclass(frozen=True)
class PseudoPair:
    first: str
    second: str
    occurrences: tuple[int, int]  # of each word
    accuracy: dict[int, float]  # layer -> k = 2 accuracy
    auto_k: dict[int, int]  # layer -> k found by k = "auto"
    auto_purity: dict[int, float]  # layer -> purity of the k = "auto" clusters
    alone_k: dict[int, tuple[int, int]]  # layer -> k = "auto" on each word's own occurrences


@dataclass(frozen=True, repr=False)
class PseudoWordResult(Result):
    """Pseudo-word disambiguation over several pairs, per layer."""

    model: str
    corpus: str
    per_word: int
    pairs: tuple[PseudoPair, ...]
    accuracy: dict[int, float]  # layer -> mean k = 2 accuracy over the pairs
    auto_two: dict[int, float]  # layer -> share of pairs where k = "auto" found exactly 2
    auto_purity: dict[int, float]  # layer -> mean purity of the k = "auto" clusters
    alone_one: dict[int, float]  # layer -> share of the real words alone given one sense by k = "auto"

    def __repr__(self) -> str:
        best = max(self.accuracy, key=lambda layer: self.accuracy[layer])
        return f"PseudoWordResult({len(self.pairs)} pairs, best layer {best}: {self.accuracy[best]:.3f})"

    def to_table(self) -> str:
        rows = [
            (layer, self.accuracy[layer], self.auto_two[layer], self.auto_purity[layer], self.alone_one[layer])
            for layer in sorted(self.accuracy)
        ]
        head = ["layer", "k=2 accuracy", "auto finds 2", "auto purity", "alone: auto finds 1"]
        return f"Pseudo-words: {len(self.pairs)} pairs, {self.per_word} sentences a word.\n{table(head, rows)}"


def two_way_accuracy(labels: np.ndarray, gold: np.ndarray) -> float:
    same = float(np.mean(labels == gold))
    return max(same, 1 - same)


def purity(labels: np.ndarray, gold: np.ndarray) -> float:
    return float(sum(np.bincount(gold[labels == c]).max() for c in np.unique(labels)) / len(gold))


def pseudo_words(
    model: Model,
    corpus: str | os.PathLike[str],
    pairs: Sequence[tuple[str, str]],
    *,
    per_word: int = 100,
    seed: int = 0,
    run: RunOptions = RunOptions(),  # noqa: B008 - frozen
    progress: bool = False,
) -> PseudoWordResult:
    """Pseudo-word disambiguation (see the module docstring) of each pair, at every layer."""
    if not pairs:
        raise InputError("No word pairs were given.", "Give pairs such as [('museum', 'election')].")
    found = collect(corpus, [w for pair in pairs for w in pair], per_word, exclusive=True, model=model)
    texts: list[str] = []
    spans: list[str | tuple[int, int]] = []
    owners: list[tuple[int, int, bool]] = []  # (pair, which word, replaced)
    for p, (a, b) in enumerate(pairs):
        pseudo = word_key(a + b)
        n = min(len(found[word_key(a)]), len(found[word_key(b)]))  # as many of each: chance is 0.5
        if n < 6:
            raise InputError(f"{a!r} or {b!r} occurs in fewer than 6 sentences of {corpus}.", "Choose commoner words.")
        for which, word in enumerate((a, b)):
            for sentence in found[word_key(word)][:n]:
                swapped = sentence
                for start, end in reversed(find_word(model, sentence, word)):  # the words collect found
                    swapped = swapped[:start] + pseudo + swapped[end:]
                texts += [swapped, sentence]
                spans += [pseudo, word_key(word)]
                owners += [(p, which, True), (p, which, False)]
    vectors = layer_vectors(model, texts, spans, run=run, progress=progress)
    layers = range(model.config.num_hidden_layers + 1)
    results = []
    for p, (a, b) in enumerate(pairs):
        rows: dict[bool, tuple[list[np.ndarray], list[int]]] = {
            True: ([], []),
            False: ([], []),
        }  # replaced -> (vectors, gold)
        for (q, which, replaced), found_vectors in zip(owners, vectors, strict=True):
            if q == p and found_vectors is not None:
                rows[replaced][0].extend(found_vectors)
                rows[replaced][1].extend([which] * len(found_vectors))
        stacked = np.stack(rows[True][0])  # (occurrences, layers + 1, D)
        gold = np.array(rows[True][1])
        alone = np.stack(rows[False][0])
        alone_gold = np.array(rows[False][1])
        accuracy, auto_k, pure, alone_k = {}, {}, {}, {}
        for layer in layers:
            accuracy[layer] = two_way_accuracy(cluster(stacked[:, layer], 2, seed=seed).labels, gold)
            auto = cluster(stacked[:, layer], "auto", seed=seed)
            auto_k[layer], pure[layer] = auto.k, purity(auto.labels, gold)
            alone_k[layer] = tuple(cluster(alone[alone_gold == w, layer], "auto", seed=seed).k for w in (0, 1))
        counts = (int(np.sum(gold == 0)), int(np.sum(gold == 1)))
        results.append(PseudoPair(a, b, counts, accuracy, auto_k, pure, alone_k))  # type: ignore[arg-type]
    return PseudoWordResult(
        model=model.source.description,
        corpus=str(corpus),
        per_word=per_word,
        pairs=tuple(results),
        accuracy={layer: float(np.mean([r.accuracy[layer] for r in results])) for layer in layers},
        auto_two={layer: float(np.mean([r.auto_k[layer] == 2 for r in results])) for layer in layers},
        auto_purity={layer: float(np.mean([r.auto_purity[layer] for r in results])) for layer in layers},
        alone_one={layer: float(np.mean([k == 1 for r in results for k in r.alone_k[layer]])) for layer in layers},
    )


@dataclass(frozen=True, repr=False)
class WicAgreement(Result):
    """Agreement of same-cluster with WiC's same-sense labels, per layer, for k = "auto" and k = 2."""

    model: str
    corpus: str
    per_word: int
    pairs: int  # pairs scored
    skipped: int  # pairs whose word had too few corpus sentences
    gold_same: float  # share of T among the scored pairs
    auto: dict[int, float]  # layer -> accuracy with k = "auto"
    auto_same: dict[int, float]  # layer -> share predicted "same" with k = "auto"
    two: dict[int, float]  # layer -> accuracy with k = 2

    def __repr__(self) -> str:
        best = max(self.auto, key=lambda layer: self.auto[layer])
        return f"WicAgreement({self.pairs} pairs, best layer {best}: {self.auto[best]:.3f})"

    def to_table(self) -> str:
        rows = [(layer, self.auto[layer], self.auto_same[layer], self.two[layer]) for layer in sorted(self.auto)]
        head = ["layer", "accuracy (auto)", "said same (auto)", "accuracy (k=2)"]
        return (
            f"WiC agreement: {self.pairs} pairs ({self.skipped} skipped), {self.gold_same:.0%} same in the gold.\n"
            + table(head, rows)
        )


def read_pairs(
    data: str | os.PathLike[str], gold: str | os.PathLike[str]
) -> list[tuple[str, int, int, str, str, bool]]:
    """WiC pairs (read and checked by `wic.read_wic`): (lemma, target index in sentence 1, in sentence 2, sentence 1,
    sentence 2, same sense)."""
    return [(p.word, p.index_1, p.index_2, p.sentence_1, p.sentence_2, bool(p.same)) for p in read_wic(data, gold=gold)]


def wic_agreement(
    model: Model,
    data: str | os.PathLike[str],
    gold: str | os.PathLike[str],
    corpus: str | os.PathLike[str],
    *,
    per_word: int = 30,
    limit: int | None = None,
    layers: Sequence[int] | None = None,
    seed: int = 0,
    run: RunOptions = RunOptions(),  # noqa: B008 - frozen
    progress: bool = False,
) -> WicAgreement:
    """Same cluster or not against WiC's labels (see the module docstring), the first `limit` pairs."""
    pairs = read_pairs(data, gold)[:limit]
    forms = {p: {_form(p[3], p[1]), _form(p[4], p[2])} for p in pairs}
    found = collect(corpus, {f for fs in forms.values() for f in fs}, per_word, model=model)
    texts: list[str] = []
    spans: list[str | tuple[int, int]] = []
    plan: list[tuple[int, int] | None] = []  # per pair: (first text, corpus texts) or None when skipped
    for pair in pairs:
        context = [(s, f) for f in sorted(forms[pair]) for s in found[f]][:per_word]
        if len(context) < 6:
            plan.append(None)
            continue
        plan.append((len(texts), len(context)))
        texts += [pair[3], pair[4]] + [s for s, _ in context]
        spans += [word_span(pair[3], pair[1]), word_span(pair[4], pair[2])] + [f for _, f in context]
    vectors = layer_vectors(model, texts, spans, run=run, progress=progress)
    chosen = list(range(model.config.num_hidden_layers + 1)) if layers is None else list(layers)
    hits = {"auto": {layer: 0 for layer in chosen}, "two": {layer: 0 for layer in chosen}}
    said_same = {layer: 0 for layer in chosen}
    scored = same_gold = 0
    for pair, where in zip(pairs, plan, strict=True):
        one, two_ = (None, None) if where is None else (vectors[where[0]], vectors[where[0] + 1])
        if where is None or one is None or two_ is None:
            continue
        rows = [one[0], two_[0]]  # the two WiC occurrences first
        rows += [
            v
            for found_vectors in vectors[where[0] + 2 : where[0] + 2 + where[1]]
            if found_vectors is not None
            for v in found_vectors
        ]
        if len(rows) < 8:
            continue
        stacked = np.stack(rows)  # (occurrences, layers + 1, D)
        scored += 1
        same_gold += pair[5]
        for layer in chosen:
            auto = cluster(stacked[:, layer], "auto", seed=seed).labels
            two = cluster(stacked[:, layer], 2, seed=seed).labels
            said_same[layer] += int(auto[0] == auto[1])
            hits["auto"][layer] += int((auto[0] == auto[1]) == pair[5])
            hits["two"][layer] += int((two[0] == two[1]) == pair[5])
    if not scored:
        raise InputError(
            "No WiC pair could be scored: the corpus holds too few sentences of their words.", "Use a larger corpus."
        )
    return WicAgreement(
        model=model.source.description,
        corpus=str(corpus),
        per_word=per_word,
        pairs=scored,
        skipped=len(pairs) - scored,
        gold_same=same_gold / scored,
        auto={layer: hits["auto"][layer] / scored for layer in chosen},
        auto_same={layer: said_same[layer] / scored for layer in chosen},
        two={layer: hits["two"][layer] / scored for layer in chosen},
    )


def _form(sentence: str, index: int) -> str:
    """The WiC target as written in the sentence (casefolded, outer punctuation stripped)."""
    return sentence.split()[index].casefold().strip(".,;:!?\"'()")


DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CORPUS = DATA / "corpus" / "enwiki-2015"
WIC = DATA / "wic" / "dev"
PAIRS = [
    ("museum", "election"),  # 1051, 1002
    ("medicine", "airport"),  # 701, 689
    ("forest", "engine"),  # 644, 608
    ("theatre", "mathematics"),  # 451, 440
    ("senate", "guitar"),  # 426, 372
    ("poetry", "castle"),  # 311, 290
    ("cathedral", "bicycle"),  # 203, 195
    ("piano", "tennis"),  # 184, 165
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-word", type=int, default=50, help="pseudo-words: sentences of each word")
    parser.add_argument("--pairs", type=int, default=len(PAIRS), help="pseudo-words: how many of PAIRS")
    parser.add_argument("--wic-pairs", type=int, default=150, help="WiC dev pairs scored (the first N)")
    parser.add_argument("--wic-per-word", type=int, default=20, help="WiC: corpus sentences of each word")
    parser.add_argument("--skip-wic", action="store_true")
    parser.add_argument("--json-out", help="write both results' to_dict() here")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"needs {CORPUS} (../shared/data)")
    model = load_model()
    start = time.perf_counter()
    pseudo = pseudo_words(model, CORPUS, PAIRS[: args.pairs], per_word=args.per_word, progress=True)
    print(pseudo.to_table())
    for pair in pseudo.pairs:
        best = max(pair.accuracy, key=lambda layer: pair.accuracy[layer])
        print(
            f"  {pair.first}/{pair.second} {pair.occurrences}: "
            f"best k=2 accuracy {pair.accuracy[best]:.3f} (layer {best})"
        )
    print(f"pseudo-words: {time.perf_counter() - start:.0f} s")
    out = {"pseudo_words": pseudo.to_dict()}
    if not args.skip_wic:
        start = time.perf_counter()
        wic = wic_agreement(
            model,
            WIC / "dev.data.txt",
            WIC / "dev.gold.txt",
            CORPUS,
            per_word=args.wic_per_word,
            limit=args.wic_pairs,
            progress=True,
        )
        print(wic.to_table())
        print(f"WiC agreement: {time.perf_counter() - start:.0f} s")
        out["wic"] = wic.to_dict()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
