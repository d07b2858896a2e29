"""Word-similarity and analogy benchmarks on the input matrix, with coverage reported and nothing dropped silently.

Word pairs: every word is tokenized alone (no special tokens, no padding), its pieces' rows pooled, and the cosine of
the two vectors is compared with the human score by Spearman's rank correlation (average ranks for ties) and
Pearson's. Given the same vectors, the figures equal gensim's `KeyedVectors.evaluate_word_pairs`.

Analogies: `a : b :: c : ?` answered by 3CosAdd or 3CosMul among the whole-word tokens, a, b and c excluded. A question
is covered when one of its accepted answers is a single whole-word token; accuracy is given over the covered
questions and over all of them.

The named benchmarks ship inside the package (bertlens/data, each with the README and licence terms of its source),
so they work offline; any CSV of `word1,word2,score` works by path.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.outputs import read_small_text
from ..core.results import Result, table, visible
from ..embeddings.static import POOLS, Pool, StaticVector, word_vector
from .analogy import METHOD_LABELS, AnalogyMethod, check_method, solve_analogies, unit_vector
from .index import TokenFilter, VectorIndex
from .query import given_index, term_vector

DATA = Path(__file__).resolve().parent.parent / "data"
MAX_BENCHMARK_BYTES = 256 << 20  # the largest bundled set (BATS) is about 1 MB
Kind = Literal["similarity", "analogy"]


@dataclass(frozen=True)
class _Named:
    kind: Kind
    file: str  # under bertlens/data
    title: str
    licence: str  # as the source states it


_MFARUQUI = "MIT (mfaruqui/eval-word-vectors)"
_VECTO = "none stated (vecto-ai/word-benchmarks)"
NAMED: dict[str, _Named] = {
    "wordsim353": _Named(
        "similarity", "similarity/wordsim353.csv", "WordSim-353 (Finkelstein et al., 2002)", _MFARUQUI
    ),
    "wordsim353-sim": _Named(
        "similarity", "similarity/wordsim353-sim.csv", "WordSim-353, similarity split (Agirre et al., 2009)", _VECTO
    ),
    "wordsim353-rel": _Named(
        "similarity", "similarity/wordsim353-rel.csv", "WordSim-353, relatedness split (Agirre et al., 2009)", _VECTO
    ),
    "men": _Named("similarity", "similarity/men.csv", "MEN (Bruni et al., 2014)", _MFARUQUI),
    "rg65": _Named("similarity", "similarity/rg65.csv", "RG-65 (Rubenstein and Goodenough, 1965)", _VECTO),
    "mc30": _Named("similarity", "similarity/mc30.csv", "MC-30 (Miller and Charles, 1991)", _MFARUQUI),
    "rw": _Named("similarity", "similarity/rw.csv", "Stanford Rare Words (Luong et al., 2013)", _VECTO),
    "simverb3500": _Named("similarity", "similarity/simverb3500.csv", "SimVerb-3500 (Gerz et al., 2016)", _VECTO),
    "mturk287": _Named("similarity", "similarity/mturk287.csv", "MTurk-287 (Radinsky et al., 2011)", _VECTO),
    "mturk771": _Named("similarity", "similarity/mturk771.csv", "MTurk-771 (Halawi et al., 2012)", _VECTO),
    "yp130": _Named("similarity", "similarity/yp130.csv", "YP-130 (Yang and Powers, 2006)", _VECTO),
    "verb143": _Named("similarity", "similarity/verb143.csv", "Verb-143 (Baker et al., 2014)", _MFARUQUI),
    "semeval17": _Named(
        "similarity", "similarity/semeval17.csv", "SemEval-2017 Task 2, English (Camacho-Collados et al., 2017)", _VECTO
    ),
    "google": _Named(
        "analogy", "analogy/questions-words.txt", "Google analogies (Mikolov et al., 2013)", "LGPL-2.1 (gensim)"
    ),
    "bats": _Named(
        "analogy", "analogy/bats.csv", "BATS 3.0 (Gladkova et al., 2016)", "none stated (vecto.space/projects/BATS)"
    ),
}
SIMILARITY_BENCHMARKS: tuple[str, ...] = tuple(n for n, b in NAMED.items() if b.kind == "similarity")
ANALOGY_BENCHMARKS: tuple[str, ...] = tuple(n for n, b in NAMED.items() if b.kind == "analogy")


# --- the list of named benchmarks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    kind: str  # "similarity" or "analogy"
    size: int  # pairs (similarity) or questions (analogy)
    title: str
    licence: str  # as stated by the source; each set's README is beside it in bertlens/data
    path: str


@dataclass(frozen=True, repr=False)
class Benchmarks(Result):
    """The benchmarks bertlens ships, with their sizes."""

    benchmarks: tuple[BenchmarkInfo, ...]

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.benchmarks]

    def __len__(self) -> int:
        return len(self.benchmarks)

    def __iter__(self) -> Iterator[BenchmarkInfo]:
        return iter(self.benchmarks)

    def __getitem__(self, name: str) -> BenchmarkInfo:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def __repr__(self) -> str:
        return f"Benchmarks({', '.join(self.names)})"

    def to_table(self) -> str:
        rows = [(b.name, b.kind, b.size, b.title, b.licence) for b in self.benchmarks]
        return "\n".join(
            [
                table(["name", "kind", "size", "what", "licence (as stated)"], rows),
                "Size: pairs for similarity, questions for analogies. Sources and terms: bertlens/data/*.README.md.",
            ]
        )


def list_benchmarks() -> Benchmarks:
    """Every named benchmark: similarity sets (sizes in pairs) and analogy sets (sizes in questions)."""
    out = []
    for name, named in NAMED.items():
        path = DATA / named.file
        text = _read(path, name)
        size = len(_parse_pairs(text, name)) if named.kind == "similarity" else len(_parse_analogies(text, name, name))
        out.append(BenchmarkInfo(name, named.kind, size, named.title, named.licence, str(path)))
    return Benchmarks(tuple(out))


# --- reading benchmark files ----------------------------------------------------------------------------------------


def _locate(benchmark: str | os.PathLike[str], kind: Kind) -> tuple[str, Path]:
    """(label, file) of a named benchmark of `kind`, or of a file given by path."""
    names = SIMILARITY_BENCHMARKS if kind == "similarity" else ANALOGY_BENCHMARKS
    listed = ", ".join(names)
    if not isinstance(benchmark, (str, os.PathLike)):
        raise InputError(
            f"The benchmark must be a name or a path, got {type(benchmark).__name__}.", f"Named: {listed}."
        )
    if isinstance(benchmark, str) and benchmark in NAMED:
        named = NAMED[benchmark]
        if named.kind != kind:
            other = "evaluate_pairs (CLI: bertlens evaluate)" if named.kind == "similarity" else "evaluate_analogies"
            article = "an" if named.kind == "analogy" else "a"
            raise InputError(f"{benchmark!r} is {article} {named.kind} benchmark, not a {kind} one.", f"Use {other}.")
        return benchmark, DATA / named.file
    text = os.fspath(benchmark)
    if not text.strip():
        raise InputError("No benchmark was given.", f"Give a name ({listed}) or the path of a file.")
    path = Path(text).expanduser()
    if path.is_file():
        return text, path
    if path.exists():
        raise InputError(f"{text} is not a file.", "Give the path of a CSV file, or a benchmark name.")
    if isinstance(benchmark, str) and not any(sep in text for sep in "/\\") and not path.suffix:
        raise InputError(f"Unknown benchmark {text!r}.", f"Named {kind} benchmarks: {listed}. Or give a file's path.")
    raise InputError(f"File not found: {text}.", f"Check the path, or use a named {kind} benchmark: {listed}.")


def _read(path: Path, label: str) -> str:
    """A benchmark file's text (a regular UTF-8 file of at most MAX_BENCHMARK_BYTES; a BOM is dropped)."""
    what = "benchmark" if label in (str(path), path.name) else f"benchmark {label}"  # a file's label is its path
    text = read_small_text(path, what, limit=MAX_BENCHMARK_BYTES, hint="Give a UTF-8 CSV file of word1,word2,score.")
    return text.removeprefix("\ufeff")


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line that is not blank."""
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _number(value: str) -> float | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _fields(line: str, delimiter: str) -> list[str]:
    return next(csv.reader([line], delimiter=delimiter))


@dataclass(frozen=True)
class _Pair:
    line: int
    word1: str
    word2: str
    score: float


_PAIR_FORMAT = "lines of word1,word2,score (a header line is optional)"


def _parse_pairs(text: str, label: str) -> list[_Pair]:
    """The pairs of a CSV (or tab-separated) file `word1,word2,score`, header optional; extra columns ignored."""
    lines = _lines(text)
    if not lines:
        raise InputError(f"{label} is empty.", f"Give {_PAIR_FORMAT}.")
    first = lines[0][1]
    delimiter = "\t" if "\t" in first and "," not in first else ","
    head = _fields(first, delimiter)
    columns = (0, 1, 2)
    if len(head) >= 3 and _number(head[2]) is None:  # a header line
        names = [h.strip().lower() for h in head]
        if {"word1", "word2", "score"} <= set(names):
            columns = (names.index("word1"), names.index("word2"), names.index("score"))
        lines = lines[1:]
        if not lines:
            raise InputError(f"{label} has a header line but no pairs.", f"Give {_PAIR_FORMAT}.")
    pairs = []
    for n, line in lines:
        fields = _fields(line, delimiter)
        if len(fields) <= max(columns):
            raise InputError(
                f"{label}, line {n}: {len(fields)} column(s) in {line.strip()!r}; expected word1,word2,score.",
                f"Give {_PAIR_FORMAT}.",
            )
        score = _number(fields[columns[2]])
        if score is None:
            raise InputError(
                f"{label}, line {n}: the score {fields[columns[2]].strip()!r} is not a number.",
                "The third column must hold the human score, e.g. 7.35.",
            )
        pairs.append(_Pair(n, fields[columns[0]].strip(), fields[columns[1]].strip(), score))
    return pairs


# --- correlation ----------------------------------------------------------------------------------------------------


def ranks(values: np.ndarray) -> np.ndarray:
    """(n,) float64 ranks from 1, ties given the average of the ranks they span (as scipy's rankdata 'average')."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]]  # (n,) a new value begins here
    starts = np.flatnonzero(starts_group)
    ends = np.r_[starts[1:], n]  # exclusive
    average = (starts + ends + 1) / 2  # mean of ranks starts+1 .. ends
    out = np.empty(n, dtype=np.float64)
    out[order] = average[np.cumsum(starts_group) - 1]
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation coefficient of two (n,) samples; NaN when either is constant or n < 2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    if len(x) < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0:
        return float("nan")
    return max(-1.0, min(1.0, float(dx @ dy) / denominator))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's on the ranks, ties given average ranks."""
    return pearson(ranks(np.asarray(x)), ranks(np.asarray(y)))


# --- word-pair evaluation -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairScore:
    line: int  # line of the benchmark file
    word1: str
    word2: str
    human: float
    model: float  # cosine of the two pooled vectors
    pieces1: tuple[str, ...]
    pieces2: tuple[str, ...]
    unknown: bool  # a piece of either word is the unknown token


@dataclass(frozen=True)
class SkippedPair:
    line: int
    word1: str
    word2: str
    reason: str


@dataclass(frozen=True, repr=False)
class PairEvaluation(Result):
    """How well the input matrix's cosines rank word pairs as people did."""

    model: str
    benchmark: str  # a name, or the path given
    pool: str  # how a word's pieces' rows were combined
    metric: str  # "cosine"
    spearman: float  # rank correlation, human vs model, over the pairs used
    pearson: float
    pairs_total: int
    pairs_used: int
    pairs_multi_piece: int  # used pairs where a word needed several pieces
    pairs_unknown: int  # used pairs where a piece is the unknown token
    skipped: tuple[SkippedPair, ...]  # pairs that could not be scored (a word with no pieces), never dropped silently
    pairs: tuple[PairScore, ...]  # every used pair, in file order

    def __repr__(self) -> str:
        return (
            f"PairEvaluation({self.benchmark}: spearman={self.spearman:.3f}, pearson={self.pearson:.3f}, "
            f"{self.pairs_used}/{self.pairs_total} pairs)"
        )

    def to_table(self) -> str:
        head = ["benchmark", "spearman", "pearson", "pairs", "used", "several pieces", "[UNK]", "skipped"]
        row = (
            self.benchmark,
            round(self.spearman, 4),
            round(self.pearson, 4),
            self.pairs_total,
            self.pairs_used,
            self.pairs_multi_piece,
            self.pairs_unknown,
            len(self.skipped),
        )
        lines = [
            table(head, [row]),
            f"Each word tokenized alone, its pieces' rows {self.pool}-pooled; {self.metric} against the human scores.",
        ]
        if self.skipped:
            lines += ["", "Skipped (not scored):"]
            lines.append(
                table(
                    ["line", "word1", "word2", "reason"],
                    [(s.line, visible(s.word1), visible(s.word2), s.reason) for s in self.skipped],
                )
            )
        return "\n".join(lines)


def _unit64(v: np.ndarray) -> np.ndarray:
    """(E,) float64 at unit length; a zero vector stays zero (its cosine with anything is then 0, as in gensim)."""
    v64 = v.astype(np.float64)
    norm = float(np.linalg.norm(v64))
    return v64 / norm if norm > 0 else v64


def _cosines(first: list[StaticVector], second: list[StaticVector]) -> np.ndarray:
    """(n,) float64 cosines of the pairs (first[i], second[i]): unit vectors dotted, as gensim's `similarity`.

    All rows go through one einsum, so (a, b) and (b, a) get the same value to the bit and tie in the ranking.
    """
    units: dict[int, np.ndarray] = {}

    def unit(v: StaticVector) -> np.ndarray:
        if id(v) not in units:
            units[id(v)] = _unit64(v.vector)
        return units[id(v)]

    left = np.stack([unit(v) for v in first])  # (n, E)
    right = np.stack([unit(v) for v in second])  # (n, E)
    return np.einsum("ij,ij->i", left, right)


def evaluate_pairs(
    model: Model,
    benchmark: str | os.PathLike[str],
    *,
    pool: Pool = "mean",
    cache_dir: str | os.PathLike[str] | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
) -> PairEvaluation:
    """Spearman and Pearson correlation of the model's cosines with a word-similarity benchmark's human scores.

    `benchmark` is a name (see `list_benchmarks()`) or the path of a CSV `word1,word2,score`. Each word is tokenized
    alone and its pieces' rows pooled by `pool`. `cache_dir` is accepted for a signature like the other similarity
    functions; word pairs need no similarity index. With `vectors` (word -> vector, e.g. distilled from contexts),
    words are looked up there instead (exactly, then lower-cased); a word without one is skipped and listed.
    """
    del cache_dir  # pair scores are computed from the pooled vectors directly
    if pool not in POOLS:
        raise InputError(f"Unknown pooling {pool!r}.", f"Choose one of: {', '.join(POOLS)}.")
    if vectors is not None and not isinstance(vectors, Mapping):
        raise InputError(
            f"vectors must map words to vectors, got {type(vectors).__name__}.",
            "Pass a dict (result.as_mapping()).",
        )
    label, path = _locate(benchmark, "similarity")
    pairs = _parse_pairs(_read(path, label), label)
    found: dict[str, StaticVector | str] = {}  # word -> its vector, or why it has none

    def look(word: str) -> StaticVector | str:
        if word not in found:
            if vectors is not None:
                given = vectors.get(word, vectors.get(word.casefold()))
                found[word] = "no vector given" if given is None else _given(model, word, given)
                return found[word]
            try:
                found[word] = word_vector(model, word, pool)
            except InputError as exc:
                found[word] = exc.message
        return found[word]

    used: list[tuple[_Pair, StaticVector, StaticVector]] = []
    skipped: list[SkippedPair] = []
    for pair in pairs:
        first, second = look(pair.word1), look(pair.word2)
        if isinstance(first, str) or isinstance(second, str):
            reason = "; ".join(r for r in (first, second) if isinstance(r, str))
            skipped.append(SkippedPair(pair.line, pair.word1, pair.word2, reason))
        else:
            used.append((pair, first, second))
    cosines = _cosines([u[1] for u in used], [u[2] for u in used]) if used else np.zeros(0)  # (n,)
    scored = [
        PairScore(
            line=pair.line,
            word1=pair.word1,
            word2=pair.word2,
            human=pair.score,
            model=float(cosine),
            pieces1=first.pieces,
            pieces2=second.pieces,
            unknown=first.unknown or second.unknown,
        )
        for (pair, first, second), cosine in zip(used, cosines, strict=True)
    ]
    if len(scored) < 2:
        raise InputError(
            f"{label}: only {len(scored)} of {len(pairs)} pairs could be scored; a correlation needs at least 2.",
            "Skipped pairs have a word with no pieces (empty, or only whitespace or invisible characters).",
        )
    human = np.array([p.human for p in scored])  # (n,)
    return PairEvaluation(
        model=model.source.description,
        benchmark=label,
        pool=pool if vectors is None else "given vectors",
        metric="cosine",
        spearman=spearman(human, cosines),
        pearson=pearson(human, cosines),
        pairs_total=len(pairs),
        pairs_used=len(scored),
        pairs_multi_piece=sum(len(p.pieces1) > 1 or len(p.pieces2) > 1 for p in scored),
        pairs_unknown=sum(p.unknown for p in scored),
        skipped=tuple(skipped),
        pairs=tuple(scored),
    )


def _given(model: Model, word: str, vector: np.ndarray) -> StaticVector:
    """A user-given word vector in the shape of a static one (no pieces: it was not read from the matrix)."""
    row = np.asarray(vector, dtype=np.float32)
    return StaticVector(model.source.description, word, "word", (), (), None, False, row, float(np.linalg.norm(row)))


def benchmark_words(benchmarks: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Every distinct word of some word-pair benchmarks, in first-seen order."""
    words: dict[str, None] = {}
    for benchmark in benchmarks:
        label, path = _locate(benchmark, "similarity")
        for pair in _parse_pairs(_read(path, label), label):
            words.setdefault(pair.word1)
            words.setdefault(pair.word2)
    return list(words)


# --- analogy benchmarks ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Question:
    line: int
    category: str
    group: str | None
    terms: tuple[str, str, str]  # a, b, c
    answers: tuple[str, ...]  # every accepted answer


_ANALOGY_FORMAT = (
    "word2vec's questions-words.txt format (': section' lines, then 'a b c d'), a CSV with the header "
    "category,word1,word2,word3,word4, or a BATS-style CSV of pairs with the header word1,word2_alternatives "
    "(optional columns group, code, relation; alternatives separated by '/')"
)


def _parse_analogies(text: str, label: str, name: str | None) -> list[_Question]:
    lines = _lines(text)
    if not lines:
        raise InputError(f"{label} is empty.", f"Give {_ANALOGY_FORMAT}.")
    first = lines[0][1]
    if first.lstrip().startswith(":") or ("," not in first and len(first.split()) == 4):
        return _parse_questions_words(lines, label, google=name == "google")
    head = [h.strip().lower() for h in _fields(first, ",")]
    if {"word1", "word2", "word3", "word4"} <= set(head):
        return _parse_question_csv(lines, head, label)
    if "word1" in head and ("word2_alternatives" in head or "word2" in head):
        return _parse_pair_csv(lines, head, label)
    raise InputError(
        f"{label}: the analogy file's format is not recognised (first line {first.strip()!r}).",
        f"Give {_ANALOGY_FORMAT}.",
    )


def _parse_questions_words(lines: list[tuple[int, str]], label: str, google: bool) -> list[_Question]:
    questions, category = [], "all"
    for n, line in lines:
        if line.lstrip().startswith(":"):
            category = line.strip()[1:].strip() or "all"
            continue
        words = line.split()
        if len(words) != 4:
            raise InputError(
                f"{label}, line {n}: {len(words)} word(s) in {line.strip()!r}; expected 4 (a b c d, read a:b :: c:d).",
                f"Give {_ANALOGY_FORMAT}.",
            )
        group = ("syntactic" if category.startswith("gram") else "semantic") if google else None
        questions.append(_Question(n, category, group, (words[0], words[1], words[2]), (words[3],)))
    if not questions:
        raise InputError(f"{label} has no questions.", f"Give {_ANALOGY_FORMAT}.")
    return questions


def _csv_rows(lines: list[tuple[int, str]], head: list[str], need: list[str], label: str) -> Iterator[tuple[int, dict]]:
    width = len(head)
    if len(lines) < 2:
        raise InputError(f"{label} has a header line but no questions.", f"Give {_ANALOGY_FORMAT}.")
    for n, line in lines[1:]:
        fields = [f.strip() for f in _fields(line, ",")]
        if len(fields) < width:
            raise InputError(
                f"{label}, line {n}: {len(fields)} column(s) in {line.strip()!r}; the header has {width}.",
                f"Give {_ANALOGY_FORMAT}.",
            )
        row = dict(zip(head, fields, strict=False))
        empty = [c for c in need if not row[c]]
        if empty:
            raise InputError(f"{label}, line {n}: the column {empty[0]} is empty.", "Every question needs its words.")
        yield n, row


def _alternatives(value: str, label: str, line: int) -> tuple[str, ...]:
    """The accepted words of a field such as "dinosaur/reptile"."""
    words = tuple(w.strip() for w in value.split("/") if w.strip())
    if not words:
        raise InputError(f"{label}, line {line}: no word in {value!r}.", "Separate accepted answers with '/'.")
    return words


def _parse_question_csv(lines: list[tuple[int, str]], head: list[str], label: str) -> list[_Question]:
    need = ["word1", "word2", "word3", "word4"]
    return [
        _Question(
            n,
            row.get("category") or "all",
            None,
            (row["word1"], row["word2"], row["word3"]),
            _alternatives(row["word4"], label, n),
        )
        for n, row in _csv_rows(lines, head, need, label)
    ]


def _parse_pair_csv(lines: list[tuple[int, str]], head: list[str], label: str) -> list[_Question]:
    """BATS: every ordered pair of distinct pairs (a, b), (c, d…) within a relation makes the question a:b :: c:d…."""
    answer_column = "word2_alternatives" if "word2_alternatives" in head else "word2"
    relations: dict[str, tuple[str | None, list[tuple[int, str, tuple[str, ...]]]]] = {}
    for n, row in _csv_rows(lines, head, ["word1", answer_column], label):
        parts = [row.get("code", ""), f"[{row['relation']}]" if row.get("relation") else ""]
        category = " ".join(p for p in parts if p) or "all"
        group = row.get("group") or None
        answers = _alternatives(row[answer_column], label, n)
        relations.setdefault(category, (group, []))[1].append((n, row["word1"], answers))
    questions = []
    for category, (group, pairs) in relations.items():
        for i, (_, a, b_all) in enumerate(pairs):
            for j, (n, c, d_all) in enumerate(pairs):
                if i != j:
                    questions.append(_Question(n, category, group, (a, b_all[0], c), d_all))
    if not questions:
        raise InputError(f"{label}: no relation has two pairs, so there are no questions.", "Add more pairs.")
    return questions


@dataclass(frozen=True)
class AnalogyScore:
    """Accuracy over one category, one group of categories, or the whole benchmark."""

    name: str
    group: str | None
    questions: int
    covered: int  # an accepted answer is a single whole-word token
    correct: int  # the best answer is an accepted one
    accuracy: float  # correct / questions
    accuracy_covered: float  # correct / covered (NaN when none is covered)


@dataclass(frozen=True, repr=False)
class AnalogyEvaluation(Result):
    """Accuracy of `a : b :: c : ?` over an analogy benchmark, overall, per group and per category."""

    model: str
    benchmark: str
    method: str
    candidates: int  # whole-word tokens that could be answers
    questions: int
    covered: int
    correct: int
    accuracy: float  # correct / questions
    accuracy_covered: float  # correct / covered
    groups: tuple[AnalogyScore, ...]  # Google: semantic, syntactic; BATS: its four groups
    categories: tuple[AnalogyScore, ...]

    def __repr__(self) -> str:
        return (
            f"AnalogyEvaluation({self.benchmark}, {self.method}: accuracy {self.accuracy:.3f} "
            f"({self.accuracy_covered:.3f} of {self.covered}/{self.questions} covered))"
        )

    def to_table(self) -> str:
        head = ["category", "questions", "covered", "correct", "accuracy", "on covered"]

        def row(s: AnalogyScore) -> tuple:
            return (s.name, s.questions, s.covered, s.correct, round(s.accuracy, 4), _round(s.accuracy_covered))

        rows = [row(s) for s in self.categories]
        if self.groups:
            rows += [("", "", "", "", "", "")] + [row(s) for s in self.groups]
        rows.append(
            ("all", self.questions, self.covered, self.correct, round(self.accuracy, 4), _round(self.accuracy_covered))
        )
        label = METHOD_LABELS.get(self.method, self.method)
        return "\n".join(
            [
                f"{self.benchmark}, {label}: answers among {self.candidates} whole-word tokens, a, b and c excluded. "
                "Covered: an accepted answer is a single whole-word token.",
                table(head, rows),
            ]
        )


def _round(value: float) -> float | None:
    return round(value, 4) if math.isfinite(value) else None


def _score(name: str, group: str | None, covered: np.ndarray, correct: np.ndarray) -> AnalogyScore:
    questions, n_covered, n_correct = len(covered), int(covered.sum()), int(correct.sum())
    return AnalogyScore(
        name=name,
        group=group,
        questions=questions,
        covered=n_covered,
        correct=n_correct,
        accuracy=n_correct / questions if questions else float("nan"),
        accuracy_covered=n_correct / n_covered if n_covered else float("nan"),
    )


def evaluate_analogies(
    model: Model,
    benchmark: str | os.PathLike[str] = "google",
    *,
    method: AnalogyMethod = "3cosadd",
    cache_dir: str | os.PathLike[str] | None = None,
    index: VectorIndex | None = None,
) -> AnalogyEvaluation:
    """Accuracy on an analogy benchmark ("google", "bats", or a file): overall, per group and per category.

    Terms are tokens or words (pieces mean-pooled), answers whole-word tokens, with a, b and c's pieces excluded.
    A question is covered when one of its accepted answers is a single whole-word token; uncovered questions count
    as wrong in `accuracy` and are left out of `accuracy_covered`.
    """
    check_method(method)
    label, path = _locate(benchmark, "analogy")
    questions = _parse_analogies(_read(path, label), label, label if label in NAMED else None)
    index = given_index(model, index, cache_dir)
    allowed = index.allowed(TokenFilter.words_only())  # (rows,)
    candidates = np.flatnonzero(allowed)

    row_of: dict[str, int] = {}  # term -> row of `terms`
    vectors: list[np.ndarray] = []
    pieces: list[tuple[int, ...]] = []
    answer_id: dict[str, int] = {}  # answer -> its token id when a single whole-word token, else -1

    def term(word: str, line: int) -> int:
        if word not in row_of:
            try:
                found = term_vector(model, word)
            except InputError as exc:
                raise InputError(f"{label}, line {line}: {exc.message}", exc.hint) from None
            row_of[word] = len(vectors)
            vectors.append(unit_vector(found.vector))
            pieces.append(found.ids)
        return row_of[word]

    def answer(word: str) -> int:
        if word not in answer_id:
            try:
                ids = term_vector(model, word).ids
            except InputError:
                ids = ()
            answer_id[word] = ids[0] if len(ids) == 1 and allowed[ids[0]] else -1
        return answer_id[word]

    rows = np.array([[term(w, q.line) for w in q.terms] for q in questions], dtype=np.int64)  # (Q, 3)
    accepted = _padded([[answer(w) for w in q.answers] for q in questions])  # (Q, M), -1 pads
    covered = (accepted >= 0).any(axis=1)  # (Q,)
    exclude = _padded([[i for r in row for i in pieces[r]] for row in rows])  # (Q, X)
    correct = np.zeros(len(questions), dtype=bool)
    asked = np.flatnonzero(covered)  # an uncovered question cannot be answered right: skip its work
    if len(asked):
        best, _ = solve_analogies(
            index.raw.unit, candidates, np.stack(vectors), rows[asked], exclude[asked], k=1, method=method
        )  # (asked, 1)
        correct[asked] = (accepted[asked] == best).any(axis=1) & (best[:, 0] >= 0)

    category_of = {q.category: q.group for q in questions}  # in file order
    code_of = {name: i for i, name in enumerate(category_of)}
    codes = np.array([code_of[q.category] for q in questions], dtype=np.int64)  # (Q,)
    categories = [
        _score(name, group, covered[codes == i], correct[codes == i])
        for i, (name, group) in enumerate(category_of.items())
    ]
    groups = []
    for group in dict.fromkeys(g for g in category_of.values() if g is not None):
        mask = np.isin(codes, [i for i, g in enumerate(category_of.values()) if g == group])
        groups.append(_score(group, None, covered[mask], correct[mask]))
    total = _score("all", None, covered, correct)
    return AnalogyEvaluation(
        model=model.source.description,
        benchmark=label,
        method=method,
        candidates=len(candidates),
        questions=total.questions,
        covered=total.covered,
        correct=total.correct,
        accuracy=total.accuracy,
        accuracy_covered=total.accuracy_covered,
        groups=tuple(groups),
        categories=tuple(categories),
    )


def _padded(lists: list[list[int]]) -> np.ndarray:
    """(len(lists), longest) int64, -1 where a list is shorter."""
    width = max((len(x) for x in lists), default=0) or 1
    out = np.full((len(lists), width), -1, dtype=np.int64)
    for i, values in enumerate(lists):
        out[i, : len(values)] = values
    return out
