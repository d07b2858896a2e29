"""A word's path through the layers: its vector at every layer in several sentences, all projected by ONE fit.

- `trajectory`: follows the first occurrence of a word in each sentence from layer 0 (the embedding output) to L;
- `Trajectory`: the points (sentences, layers + 1, dims) in one shared space, with where the word was found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contextual.pooling import occurrences_in_every, pool_pieces
from ..contextual.states import RunOptions, hidden_states
from ..core.checks import items
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import ProjectionMethod
from ..core.results import Result, table, visible
from .projection import Projection, ProjectionSettings, describe, project


@dataclass(frozen=True, repr=False)
class Trajectory(Result):
    """A word's vector at every layer (0 = embedding output .. L) in each sentence, projected by one shared fit.

    >>> path = trajectory(load_model(), "bread", ["I like eating bread", "The banana bread was horrible"])
    >>> path.layers
    (0, 1, 2, 3, 4, 5, 6)
    """

    model: str
    word: str
    sentences: tuple[str, ...]
    layers: tuple[int, ...]  # 0 .. L
    points: np.ndarray  # (sentences, layers + 1, dims) float32, all from ONE projection of every (sentence, layer)
    method: str
    dims: int
    explained: tuple[float, ...] | None  # PCA: variance fraction per axis
    spans: tuple[tuple[int, int], ...]  # per sentence: the character offsets of the occurrence followed (the first)
    pieces: tuple[tuple[str, ...], ...]  # per sentence: the word's pieces there
    parameters: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        s, layers, dims = self.points.shape
        return f"Trajectory({self.word!r}: {s} sentences x {layers} layers, {self.method} to {dims} dims)"

    def projection(self) -> Projection:
        """The same points flat (sentence-major), with metadata sentence and layer: what was fitted."""
        s, layers, dims = self.points.shape
        return Projection(
            method=self.method,
            dims=dims,
            points=self.points.reshape(s * layers, dims),  # (sentences * (layers + 1), dims)
            labels=tuple(f"{self.word} s{i} L{layer}" for i in range(s) for layer in self.layers),
            metadata={
                "sentence": tuple(i for i in range(s) for _ in self.layers),
                "layer": tuple(layer for _ in range(s) for layer in self.layers),
            },
            explained=self.explained,
            parameters=self.parameters,
            title=f"{self.word!r} across layers in {s} sentences",
        )

    def to_table(self) -> str:
        axes = ["x", "y", "z"][: self.dims]
        rows = [
            (i, layer, *self.points[i, j].tolist())
            for i in range(len(self.sentences))
            for j, layer in enumerate(self.layers)
        ]
        places = table(
            ["#", "sentence", "chars", "pieces"],
            [
                (i, visible(s if len(s) <= 60 else s[:59] + "…"), f"{a}:{b}", " ".join(p))
                for i, (s, (a, b), p) in enumerate(zip(self.sentences, self.spans, self.pieces, strict=True))
            ],
        )
        n = len(self.sentences) * len(self.layers)
        return "\n".join(
            [
                f"{self.word!r} in {len(self.sentences)} sentences, every layer, one shared projection:",
                places,
                "",
                table(["sentence", "layer", *axes], rows),
                describe(self.method, self.dims, n, self.explained, self.parameters),
            ]
        )


def trajectory(
    model: Model,
    word: str,
    sentences: Sequence[str],
    method: ProjectionMethod = "pca",
    dims: int = 2,
    seed: int = 0,
    options: RunOptions | None = None,
    *,
    settings: ProjectionSettings = ProjectionSettings(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
) -> Trajectory:
    """`word`'s vector (pieces mean-pooled) at layers 0..L in each sentence, all (sentence, layer) vectors projected
    together by one fit, so every layer lies in the same space. The first occurrence in each sentence is followed.
    `progress` shows a clock on standard error while t-SNE or UMAP fits.

    >>> path = trajectory(load_model(), "bread", ["I like eating bread", "The banana bread was horrible"])
    >>> path.points.shape  # sentences x layers 0..6 x dims
    (2, 7, 2)
    """
    if not isinstance(word, str) or not word.strip():
        raise InputError("The word is empty.", "Give the word to follow, e.g. bread.")
    sentences = items(sentences, "sentences", "['I like bread', 'Banana bread is good']")
    if not sentences:
        raise InputError("No sentences were given.", "Give one or more sentences that contain the word.")
    states = hidden_states(model, sentences, options=options or RunOptions())
    stacked, spans, pieces = [], [], []
    for result, runs in zip(states.results, occurrences_in_every(states.results, word), strict=True):
        indices = [t.index for t in runs[0]]
        stacked.append(np.stack([pool_pieces(layer[indices], "mean") for layer in result.states]))  # (L+1, H)
        spans.append((runs[0][0].start, runs[0][-1].end))
        pieces.append(tuple(t.piece for t in runs[0]))
    vectors = np.stack(stacked)  # (sentences, layers + 1, H)
    s, layers, hidden = vectors.shape
    flat = project(
        vectors.reshape(s * layers, hidden),  # (sentences * (layers + 1), H), sentence-major
        [f"{word} s{i} L{j}" for i in range(s) for j in range(layers)],
        method,
        dims,
        seed,
        settings=settings,
        progress=progress,
    )
    return Trajectory(
        model=model.source.description,
        word=word,
        sentences=tuple(sentences),
        layers=tuple(range(layers)),
        points=flat.points.reshape(s, layers, dims),  # (sentences, layers + 1, dims)
        method=method,
        dims=dims,
        explained=flat.explained,
        spans=tuple(spans),
        pieces=tuple(pieces),
        parameters=flat.parameters,
    )
