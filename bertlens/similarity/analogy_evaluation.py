"""Analogy benchmarks on the input matrix: accuracy overall, per group and per category, with coverage.

`a : b :: c : ?` is answered by 3CosAdd or 3CosMul (`analogy`) among the whole-word tokens, a, b and c's pieces
excluded. A question is covered when one of its accepted answers is a single whole-word token; accuracy is given over
the covered questions and over all of them. `evaluate` (word-pair evaluation) re-exports the public names here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.results import Result, table
from ..embeddings.token_classes import TokenFilter
from .analogy import METHOD_LABELS, AnalogyMethod, check_method, solve_analogies, unit_vector
from .benchmarks import NAMED, locate_benchmark, parse_analogies, read_benchmark
from .index import VectorIndex
from .query import given_index, term_vector

__all__ = ["AnalogyEvaluation", "AnalogyScore", "evaluate_analogies"]


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
    """Accuracy of `a : b :: c : ?` over an analogy benchmark, overall, per group and per category.

    >>> result = evaluate_analogies(load_model(), "google", method="3cosmul")
    >>> result.questions, result.covered
    (19544, 17098)
    """

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

    >>> round(evaluate_analogies(load_model(), "google").accuracy, 3)
    0.551
    """
    check_method(method)
    label, path = locate_benchmark(benchmark, "analogy")
    questions = parse_analogies(read_benchmark(path, label), label, label if label in NAMED else None)
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
    covered = np.asarray((accepted >= 0).any(axis=1))  # (Q,)
    exclude = _padded([[i for r in row for i in pieces[r]] for row in rows])  # (Q, X)
    correct = np.zeros(len(questions), dtype=bool)
    asked = np.flatnonzero(covered)  # an uncovered question cannot be answered right: skip its work
    if len(asked):
        best, _ = solve_analogies(
            index.raw.unit, candidates, np.stack(vectors), rows[asked], exclude[asked], k=1, method=method
        )  # (asked, 1)
        correct[asked] = (accepted[asked] == best).any(axis=1) & (best[:, 0] >= 0)

    categories, groups = _category_and_group_scores([(q.category, q.group) for q in questions], covered, correct)
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


def _category_and_group_scores(
    kinds: list[tuple[str, str | None]], covered: np.ndarray, correct: np.ndarray
) -> tuple[list[AnalogyScore], list[AnalogyScore]]:
    """The scores per category and per group (in file order) of the questions whose (category, group) are `kinds`,
    from each question's `covered` and `correct` (Q,)."""
    category_of = dict(kinds)  # in file order
    code_of = {name: i for i, name in enumerate(category_of)}
    codes = np.array([code_of[category] for category, _ in kinds], dtype=np.int64)  # (Q,)
    categories = [
        _score(name, group, covered[codes == i], correct[codes == i])
        for i, (name, group) in enumerate(category_of.items())
    ]
    groups = []
    for group in dict.fromkeys(g for g in category_of.values() if g is not None):
        mask = np.isin(codes, [i for i, g in enumerate(category_of.values()) if g == group])
        groups.append(_score(group, None, covered[mask], correct[mask]))
    return categories, groups


def _padded(lists: list[list[int]]) -> np.ndarray:
    """(len(lists), longest) int64, -1 where a list is shorter."""
    width = max((len(x) for x in lists), default=0) or 1
    out = np.full((len(lists), width), -1, dtype=np.int64)
    for i, values in enumerate(lists):
        out[i, : len(values)] = values
    return out
