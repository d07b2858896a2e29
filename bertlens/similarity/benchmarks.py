"""The word-similarity and analogy benchmarks: the catalogue bertlens ships (`NAMED`, `list_benchmarks`), finding a
benchmark by name or path, reading its file, and the parsers of its formats.

Word pairs: a CSV (or tab-separated) file `word1,word2,score`, header optional. Analogies: word2vec's
questions-words.txt, a CSV `category,word1,word2,word3,word4`, or a BATS-style CSV of pairs.

The named benchmarks ship inside the package (bertlens/data, each with the README and licence terms of its source),
so they work offline; any file in these formats works by path.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..core.errors import InputError
from ..core.outputs import read_small_text
from ..core.results import Result, table

DATA = Path(__file__).resolve().parent.parent / "data"
MAX_BENCHMARK_BYTES = 256 << 20  # the largest bundled set (BATS) is about 1 MB
Kind = Literal["similarity", "analogy"]


@dataclass(frozen=True)
class NamedBenchmark:
    """A benchmark bertlens ships: its kind, its file under bertlens/data, what it is and its licence."""

    kind: Kind
    file: str  # under bertlens/data
    title: str
    licence: str  # as the source states it


_MFARUQUI = "MIT (mfaruqui/eval-word-vectors)"
_VECTO = "none stated (vecto-ai/word-benchmarks)"
NAMED: dict[str, NamedBenchmark] = {
    "wordsim353": NamedBenchmark(
        "similarity", "similarity/wordsim353.csv", "WordSim-353 (Finkelstein et al., 2002)", _MFARUQUI
    ),
    "wordsim353-sim": NamedBenchmark(
        "similarity", "similarity/wordsim353-sim.csv", "WordSim-353, similarity split (Agirre et al., 2009)", _VECTO
    ),
    "wordsim353-rel": NamedBenchmark(
        "similarity", "similarity/wordsim353-rel.csv", "WordSim-353, relatedness split (Agirre et al., 2009)", _VECTO
    ),
    "men": NamedBenchmark("similarity", "similarity/men.csv", "MEN (Bruni et al., 2014)", _MFARUQUI),
    "rg65": NamedBenchmark("similarity", "similarity/rg65.csv", "RG-65 (Rubenstein and Goodenough, 1965)", _VECTO),
    "mc30": NamedBenchmark("similarity", "similarity/mc30.csv", "MC-30 (Miller and Charles, 1991)", _MFARUQUI),
    "rw": NamedBenchmark("similarity", "similarity/rw.csv", "Stanford Rare Words (Luong et al., 2013)", _VECTO),
    "simverb3500": NamedBenchmark(
        "similarity", "similarity/simverb3500.csv", "SimVerb-3500 (Gerz et al., 2016)", _VECTO
    ),
    "mturk287": NamedBenchmark("similarity", "similarity/mturk287.csv", "MTurk-287 (Radinsky et al., 2011)", _VECTO),
    "mturk771": NamedBenchmark("similarity", "similarity/mturk771.csv", "MTurk-771 (Halawi et al., 2012)", _VECTO),
    "yp130": NamedBenchmark("similarity", "similarity/yp130.csv", "YP-130 (Yang and Powers, 2006)", _VECTO),
    "verb143": NamedBenchmark("similarity", "similarity/verb143.csv", "Verb-143 (Baker et al., 2014)", _MFARUQUI),
    "semeval17": NamedBenchmark(
        "similarity", "similarity/semeval17.csv", "SemEval-2017 Task 2, English (Camacho-Collados et al., 2017)", _VECTO
    ),
    "google": NamedBenchmark(
        "analogy", "analogy/questions-words.txt", "Google analogies (Mikolov et al., 2013)", "LGPL-2.1 (gensim)"
    ),
    "bats": NamedBenchmark(
        "analogy", "analogy/bats.csv", "BATS 3.0 (Gladkova et al., 2016)", "none stated (vecto.space/projects/BATS)"
    ),
}
SIMILARITY_BENCHMARKS: tuple[str, ...] = tuple(n for n, b in NAMED.items() if b.kind == "similarity")
ANALOGY_BENCHMARKS: tuple[str, ...] = tuple(n for n, b in NAMED.items() if b.kind == "analogy")


# --- the list of named benchmarks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkInfo:
    """One row of `list_benchmarks()`: a named benchmark with its size and the path of its file."""

    name: str
    kind: str  # "similarity" or "analogy"
    size: int  # pairs (similarity) or questions (analogy)
    title: str
    licence: str  # as stated by the source; each set's README is beside it in bertlens/data
    path: str


@dataclass(frozen=True, repr=False)
class Benchmarks(Result):
    """The benchmarks bertlens ships, with their sizes.

    >>> first = list_benchmarks().benchmarks[0]
    >>> first.name, first.kind, first.size
    ('wordsim353', 'similarity', 353)
    """

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
    """Every named benchmark: similarity sets (sizes in pairs) and analogy sets (sizes in questions).

    >>> [b.name for b in list_benchmarks().benchmarks][:3]
    ['wordsim353', 'wordsim353-sim', 'wordsim353-rel']
    """
    out = []
    for name, named in NAMED.items():
        path = DATA / named.file
        text = read_benchmark(path, name)
        size = len(parse_pairs(text, name)) if named.kind == "similarity" else len(parse_analogies(text, name, name))
        out.append(BenchmarkInfo(name, named.kind, size, named.title, named.licence, str(path)))
    return Benchmarks(tuple(out))


# --- reading benchmark files ----------------------------------------------------------------------------------------


def locate_benchmark(benchmark: str | os.PathLike[str], kind: Kind) -> tuple[str, Path]:
    """(label, file) of a named benchmark of `kind`, or of a file given by path (the label is then the path as given).

    `InputError` for a benchmark of the other kind, an unknown name, a missing file or a folder.
    """
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


def read_benchmark(path: Path, label: str) -> str:
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
class BenchmarkPair:
    """One word pair of a similarity benchmark, with the human score and the line it was read from."""

    line: int
    word1: str
    word2: str
    score: float


_PAIR_FORMAT = "lines of word1,word2,score (a header line is optional)"


def parse_pairs(text: str, label: str) -> list[BenchmarkPair]:
    """The pairs of a CSV (or tab-separated) file `word1,word2,score`, header optional; extra columns ignored.

    `label` names the file in errors (`InputError` for an empty file, a short line or a score that is no number).
    """
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
        pairs.append(BenchmarkPair(n, fields[columns[0]].strip(), fields[columns[1]].strip(), score))
    return pairs


def benchmark_words(benchmarks: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Every distinct word of some word-pair benchmarks, in first-seen order."""
    words: dict[str, None] = {}
    for benchmark in benchmarks:
        label, path = locate_benchmark(benchmark, "similarity")
        for pair in parse_pairs(read_benchmark(path, label), label):
            words.setdefault(pair.word1)
            words.setdefault(pair.word2)
    return list(words)


# --- analogy benchmarks ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalogyQuestion:
    """One question `a : b :: c : ?` of an analogy benchmark, with every accepted answer."""

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


def parse_analogies(text: str, label: str, name: str | None) -> list[AnalogyQuestion]:
    """The questions of an analogy file in any of its three formats (see `_ANALOGY_FORMAT`), in file order.

    `label` names the file in errors; `name` is the benchmark's name when it is a named one ("google" gets its
    semantic and syntactic groups).
    """
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


def _parse_questions_words(lines: list[tuple[int, str]], label: str, google: bool) -> list[AnalogyQuestion]:
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
        questions.append(AnalogyQuestion(n, category, group, (words[0], words[1], words[2]), (words[3],)))
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


def _parse_question_csv(lines: list[tuple[int, str]], head: list[str], label: str) -> list[AnalogyQuestion]:
    need = ["word1", "word2", "word3", "word4"]
    return [
        AnalogyQuestion(
            n,
            row.get("category") or "all",
            None,
            (row["word1"], row["word2"], row["word3"]),
            _alternatives(row["word4"], label, n),
        )
        for n, row in _csv_rows(lines, head, need, label)
    ]


def _parse_pair_csv(lines: list[tuple[int, str]], head: list[str], label: str) -> list[AnalogyQuestion]:
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
                    questions.append(AnalogyQuestion(n, category, group, (a, b_all[0], c), d_all))
    if not questions:
        raise InputError(f"{label}: no relation has two pairs, so there are no questions.", "Add more pairs.")
    return questions
