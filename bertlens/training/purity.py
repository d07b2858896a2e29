"""Category purity: do the rows of words that belong together lie together?

For each word of some groups (numbers, months, countries, …), take its `k` nearest rows (cosine) among all the
groups' words, and count the share that belong to its own group; the purity is the mean of that share over the
words. Random rows score about the chance level, sum over groups of n_g (n_g - 1) / (N (N - 1)); rows where every
group forms its own island score 1.

The shipped groups for watching a model learn (`learning_groups`, bertlens/data/groups/learning.csv, MIT) are common
words of the sample corpus (each at least 10 times in it, so that a vocabulary trained on it holds each as one piece).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError

LEARNING_GROUPS_FILE = Path(__file__).resolve().parent.parent / "data" / "groups" / "learning.csv"  # group,word
PURITY_K = 5  # nearest rows counted per word


def learning_groups() -> dict[str, tuple[str, ...]]:
    """The shipped groups for watching rows form: group name -> words, in file order.

    Eight groups of 6 to 12 words (73 in all: numbers, months, countries, directions, family, colours, war, music),
    each frequent in the shipped sample corpus.

    >>> groups = learning_groups()
    >>> groups["numbers"][:3]
    ('one', 'two', 'three')
    """
    groups: dict[str, list[str]] = {}
    with LEARNING_GROUPS_FILE.open(encoding="utf-8", newline="") as file:
        for row in csv.DictReader(file):
            groups.setdefault(row["group"], []).append(row["word"])
    return {name: tuple(words) for name, words in groups.items()}


@dataclass(frozen=True)
class Purity:
    """The category purity of some rows, with what it was computed on.

    >>> rows = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> category_purity(rows, [0, 0, 1, 1], k=1).purity
    1.0
    """

    purity: float  # mean share of a word's k nearest rows (among the groups' words) that share its group
    chance: float  # the expected purity of random rows
    k: int
    words_used: int  # group words the vocabulary holds as one piece
    words_total: int
    per_group: dict[str, float]  # the mean share per group

    def to_dict(self) -> dict[str, Any]:
        return {
            "purity": self.purity,
            "chance": self.chance,
            "k": self.k,
            "words_used": self.words_used,
            "words_total": self.words_total,
            "per_group": dict(self.per_group),
        }


def category_purity(
    rows: np.ndarray, labels: Sequence[int], k: int = PURITY_K, names: Sequence[str] | None = None
) -> Purity:
    """Category purity of `rows` (words, E) whose groups are `labels` (one int per row); `names` names the groups.

    Cosine similarity, each word's own row excluded; ties are broken by the lower row index. Needs at least two
    groups and more than `k` rows.
    """
    matrix = np.asarray(rows, dtype=np.float64)  # (words, E)
    group = np.asarray(labels, dtype=np.int64)  # (words,)
    if matrix.ndim != 2 or group.shape != (matrix.shape[0],):
        raise InputError(
            f"rows must be (words, E) with one label per row; got rows {matrix.shape} and {group.shape[0]} labels.",
            "Give one group label per row.",
        )
    if len(set(group.tolist())) < 2 or matrix.shape[0] <= k:
        raise InputError(
            f"Category purity needs at least two groups and more than k={k} words; got {matrix.shape[0]} words in "
            f"{len(set(group.tolist()))} group(s).",
            "Give more words, or a smaller k.",
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms > 0, norms, 1.0)
    cosine = unit @ unit.T  # (words, words)
    np.fill_diagonal(cosine, -np.inf)
    nearest = np.argsort(-cosine, axis=1, kind="stable")[:, :k]  # (words, k)
    shares = (group[nearest] == group[:, None]).mean(axis=1)  # (words,)
    sizes = np.bincount(group)
    total = group.size
    chance = float((sizes * (sizes - 1)).sum() / (total * (total - 1)))
    labels_seen = sorted(set(group.tolist()))
    label_names = list(names) if names is not None else [str(g) for g in range(max(labels_seen) + 1)]
    per_group = {label_names[g]: float(shares[group == g].mean()) for g in labels_seen}
    return Purity(
        purity=float(shares.mean()),
        chance=chance,
        k=k,
        words_used=int(total),
        words_total=int(total),
        per_group=per_group,
    )


def matrix_purity(
    matrix: np.ndarray, vocabulary: Any, groups: Mapping[str, Sequence[str]], k: int = PURITY_K
) -> Purity | None:
    """Category purity of the rows of `matrix` (vocab, E) for the group words that `vocabulary` holds as one piece
    (`vocabulary.token_to_id`); None where fewer than two groups or k + 1 words are held."""
    names = list(groups)
    ids: list[int] = []
    labels: list[int] = []
    for label, name in enumerate(names):
        for word in groups[name]:
            token_id = vocabulary.token_to_id(word)
            if token_id is not None and 0 <= token_id < matrix.shape[0]:
                ids.append(token_id)
                labels.append(label)
    total = sum(len(words) for words in groups.values())
    if len(set(labels)) < 2 or len(ids) <= k:
        return None
    found = category_purity(matrix[ids], labels, k, names)
    return Purity(
        purity=found.purity,
        chance=found.chance,
        k=k,
        words_used=len(ids),
        words_total=total,
        per_group=found.per_group,
    )
