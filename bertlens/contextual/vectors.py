"""Word and sentence vectors: hidden states of chosen layers combined, then pieces or tokens pooled.

`word_vectors` / `word_vectors_many` give one vector per word (pieces pooled by `pooling.pool_words`);
`sentence_vectors` one per text (the first token, or the mean or max over its tokens). `preview` shows the vectors
themselves (their first dimensions) where the tables show only norms.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import notebook
from ..core.checks import flag, whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import (
    COMBINES,
    SENTENCE_POOLS,
    SHOWN_NUMBERS,
    WORD_POOLS,
    Combine,
    SentencePool,
    WordPool,
    check_choice,
)
from ..core.outputs import atomic_file, folder_for, output_path, write_error
from ..core.records import Records
from ..core.results import Result, ResultList, first_numbers, table, visible
from .pooling import pooling_notes
from .states import HiddenStates, RunOptions, TokenStates, check_layers, hidden_states, select_layers
from .word_states import word_states

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a text: where it is written and which tokens (pieces) make it."""

    index: int
    text: str  # the word as written in the input
    start: int  # character offsets into the text
    end: int
    pieces: tuple[str, ...]
    token_indices: tuple[int, ...]


class Words(Records[Word]):
    """A text's words, kept as columns (each word's first and last token, its start and end offset); each `Word` is
    made when read."""

    def __init__(
        self, text: str, pieces: Sequence[str], first: list[int], last: list[int], starts: list[int], ends: list[int]
    ) -> None:
        super().__init__(len(first))
        self.text, self.pieces = text, pieces  # pieces: the text's tokens, specials included
        self.first, self.last, self.starts, self.ends = first, last, starts, ends

    def record(self, index: int) -> Word:
        first, last, start, end = self.first[index], self.last[index], self.starts[index], self.ends[index]
        pieces = tuple(self.pieces[first : last + 1])
        return Word(index, self.text[start:end], start, end, pieces, tuple(range(first, last + 1)))


@dataclass(frozen=True, repr=False)
class WordVectors(Result):
    """One vector per word of a text, from chosen layers, its pieces pooled by one rule.

    >>> words = word_vectors(load_model(), "I am Sinan")
    >>> words.words[2].text, words.words[2].pieces
    ('Sinan', ('sin', '##an'))
    """

    model: str
    text: str
    layers: tuple[int, ...]
    combine: str
    pool: str
    words: Sequence[Word]  # a `Words`: reads like a tuple of `Word`
    vectors: np.ndarray  # (words, D) float32
    pooling_notes: tuple[str, ...] = ()  # how each word that is not one token got its vector

    def __repr__(self) -> str:
        return f"WordVectors({len(self.words)} words x {self.vectors.shape[1]} dims, layers {list(self.layers)})"

    def as_torch(self) -> torch.Tensor:
        """The word vectors as a torch tensor, (words, D)."""
        return notebook.torch_tensor(self.vectors)

    def to_table(self) -> str:
        rows = [
            (w.index, visible(w.text), " ".join(w.pieces), float(np.linalg.norm(v)))
            for w, v in zip(self.words, self.vectors, strict=True)
        ]
        how = f"layers {list(self.layers)} ({self.combine}), pieces pooled by {self.pool}"
        notes = "".join(f"\n{note}" for note in self.pooling_notes) + _no_words(self.words)
        return f"{table(['#', 'word', 'pieces', 'norm'], rows)}\n{self.vectors.shape[1]} dims per word; {how}.{notes}"


def _no_words(words: Sequence[Word]) -> str:
    """A line saying that a text holds no word (empty, spaces or control characters only), else nothing."""
    return "" if len(words) else "\nThe text holds no words: it has no vectors (0 rows)."


def word_vectors(
    model: Model,
    text: str,
    *,
    layers: Sequence[int] = (-1,),
    combine: Combine = "mean",
    pool: WordPool = "mean",
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> WordVectors:
    """Per-word vectors of `text`: chosen layers combined, each word's pieces pooled.

    >>> words = word_vectors(load_model(), "I like eating bread", layers=[-1])
    >>> [word.text for word in words.words], words.vectors.shape
    (['I', 'like', 'eating', 'bread'], (4, 384))
    """
    return word_vectors_many(model, [text], layers=layers, combine=combine, pool=pool, options=options)[0]


def word_vectors_many(
    model: Model,
    texts: Sequence[str],
    *,
    layers: Sequence[int] = (-1,),
    combine: Combine = "mean",
    pool: WordPool = "mean",
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> tuple[WordVectors, ...]:
    """`word_vectors` of several texts, run through the model together (batched by length): one result per text.

    >>> results = word_vectors_many(load_model(), ["I like bread", "a dog"], layers=[0, 6], combine="concat")
    >>> [result.vectors.shape for result in results]
    [(3, 768), (2, 768)]
    """
    check_choice(pool, WORD_POOLS, "pooling")
    if isinstance(texts, str):
        raise InputError("word_vectors_many takes a list of texts, not one string.", "Use word_vectors for one text.")
    check_choice(combine, COMBINES, "layer combination")
    layers = check_layers(model, layers) if model.config.num_hidden_layers else layers
    results = []
    source, chosen = model.source.description, tuple(int(layer) for layer in layers)  # the same for every text
    for states in word_states(model, texts, layers=layers, pool=pool, combine=combine, options=options):
        text, pieces = states.text, states.pieces
        words = Words(text, pieces, states.first, states.last, states.starts, states.ends)
        pieced = [
            (text[start:end], pieces[first : last + 1])
            for first, last, start, end in zip(states.first, states.last, states.starts, states.ends, strict=True)
            if first != last
        ]
        results.append(
            WordVectors(
                model=source,
                text=text,
                layers=chosen,
                combine=combine,
                pool=pool,
                words=words,
                vectors=np.ascontiguousarray(states.vectors[0], dtype=np.float32),  # (words, D)
                pooling_notes=pooling_notes(pieced, pool),
            )
        )
    return tuple(results)


@dataclass(frozen=True, repr=False)
class SentenceVectors(Result):
    """One vector per text: the first token's (CLS), or the mean or max over its tokens.

    >>> sentence_vectors(load_model(), "I like bread", method="cls").vectors.shape
    (1, 384)
    """

    model: str
    texts: tuple[str, ...]
    layers: tuple[int, ...]
    combine: str
    method: str
    special: bool  # whether special tokens were included in mean/max
    vectors: np.ndarray  # (texts, D) float32

    def __repr__(self) -> str:
        return f"SentenceVectors({len(self.texts)} texts x {self.vectors.shape[1]}, {self.method})"

    def as_torch(self) -> torch.Tensor:
        """The sentence vectors as a torch tensor, (texts, D)."""
        return notebook.torch_tensor(self.vectors)

    def to_table(self) -> str:
        shown = [visible(t if len(t) <= 60 else t[:59] + "…") for t in self.texts]  # the full texts are in to_dict()
        rows = [(i, t, float(np.linalg.norm(v))) for i, (t, v) in enumerate(zip(shown, self.vectors, strict=True))]
        how = f"{self.method} over layers {list(self.layers)} ({self.combine})"
        return f"{table(['#', 'text', 'norm'], rows)}\n{self.vectors.shape[1]} dims per text; {how}."


def sentence_vectors(
    model: Model,
    texts: str | Sequence[str],
    *,
    method: SentencePool = "mean",
    layers: Sequence[int] = (-1,),
    combine: Combine = "mean",
    special: bool = False,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> SentenceVectors:
    """A vector per text from chosen layers: CLS (the first token), or mean / max over the tokens.

    >>> sentence_vectors(load_model(), ["I like bread", "a dog"], method="mean").vectors.shape
    (2, 384)
    """
    check_choice(method, SENTENCE_POOLS, "sentence pooling")
    check_choice(combine, COMBINES, "layer combination")
    layers = check_layers(model, layers) if model.config.num_hidden_layers else layers
    flag(special, "special")
    results = hidden_states(model, texts, options=options)
    vectors = []
    for states in results:
        combined = select_layers(states.states, layers, combine)  # (tokens, D)
        if method == "cls":
            vectors.append(combined[0])
            continue
        chosen = [t.index for t in states.tokens if special or not t.special] or [t.index for t in states.tokens]
        rows = combined[chosen]  # (n, D)
        vectors.append(rows.max(axis=0) if method == "max" else rows.mean(axis=0))
    return SentenceVectors(
        model=model.source.description,
        texts=tuple(r.text for r in results),
        layers=tuple(int(layer) for layer in layers),
        combine=combine,
        method=method,
        special=special,
        vectors=np.asarray(vectors, dtype=np.float32),
    )


@dataclass(frozen=True, repr=False)
class VectorPreview(Result):
    """A result's vectors shown, not only their norms: the first `dims` numbers of each ("…" when there are more).

    `to_dict()` is the result's own, with every vector in full.
    """

    result: TokenStates | WordVectors | SentenceVectors
    dims: int
    layers: tuple[int, ...] | None = None  # for token states: the layers shown (None: every layer)

    def __repr__(self) -> str:
        return f"VectorPreview({self.result!r}, {self.dims} dims)"

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_table(self) -> str:
        shown = self.result
        if isinstance(shown, TokenStates):
            layers = range(shown.states.shape[0]) if self.layers is None else self.layers
            cells = [
                (t.index, visible(t.piece), layer, *self._cells(shown.states[layer, t.index]))
                for t in shown.tokens
                for layer in layers
            ]
            note = f"{shown.states.shape[2]} dims per vector (layer 0 = embedding output); --json gives them in full."
            return f"{table(['#', 'piece', 'layer', 'norm', 'vector'], cells)}\n{note}"
        if isinstance(shown, WordVectors):
            words = [
                (w.index, visible(w.text), " ".join(w.pieces), *self._cells(v))
                for w, v in zip(shown.words, shown.vectors, strict=True)
            ]
            how = f"layers {list(shown.layers)} ({shown.combine}), pieces pooled by {shown.pool}"
            notes = "".join(f"\n{note}" for note in shown.pooling_notes) + _no_words(shown.words)
            head = table(["#", "word", "pieces", "norm", "vector"], words)
            return f"{head}\n{shown.vectors.shape[1]} dims per word; {how}; --json gives them in full.{notes}"
        texts = [visible(t if len(t) <= 40 else t[:39] + "…") for t in shown.texts]
        rows = [(i, t, *self._cells(v)) for i, (t, v) in enumerate(zip(texts, shown.vectors, strict=True))]
        how = f"{shown.method} over layers {list(shown.layers)} ({shown.combine})"
        return f"{table(['#', 'text', 'norm', 'vector'], rows)}\n{shown.vectors.shape[1]} dims per text; {how}."

    def _cells(self, vector: np.ndarray) -> tuple[float, str]:
        """The vector's norm, and its first `dims` numbers ("…" and the size when there are more)."""
        return float(np.linalg.norm(vector)), first_numbers(vector, self.dims)


def preview(
    result: TokenStates | HiddenStates | WordVectors | SentenceVectors | Sequence[WordVectors],
    dims: int = SHOWN_NUMBERS,
    *,
    layers: Sequence[int] | None = None,
) -> Result:
    """`result` with its vectors shown (the first `dims` numbers), one `VectorPreview` per text.

    For token states, `layers` chooses the layers shown (default: every layer; negative counts from the last).
    """
    whole_number(dims, "dims", minimum=1)
    if isinstance(result, HiddenStates):
        return ResultList(tuple(preview(r, dims, layers=layers) for r in result))
    if isinstance(result, (list, tuple)):
        return ResultList(tuple(preview(r, dims, layers=layers) for r in result))
    chosen = None
    if isinstance(result, TokenStates) and layers is not None:
        count = result.states.shape[0]
        for layer in layers:
            if not -count <= layer < count:
                raise InputError(
                    f"Layer {layer} does not exist: the model has layers 0..{count - 1}.",
                    f"Give layers between {-count} and {count - 1} (-1 is the last).",
                )
        chosen = tuple(layer % count for layer in layers)
    if not isinstance(result, (TokenStates, WordVectors, SentenceVectors)):
        raise InputError(
            f"Cannot preview a {type(result).__name__}.", "Pass token states, word vectors or sentence vectors."
        )
    return VectorPreview(result, dims, chosen)


@dataclass(frozen=True, repr=False)
class SavedVectors(Result):
    """Vectors written to a NumPy file: which arrays, of which shapes."""

    path: str
    arrays: tuple[str, ...]  # the arrays' names in an .npz ("vectors" for an .npy)
    shapes: tuple[tuple[int, ...], ...]

    def __repr__(self) -> str:
        return f"SavedVectors({self.path!r}, {len(self.arrays)} arrays)"

    def to_table(self) -> str:
        sizes = (" x ".join(map(str, shape)) for shape in self.shapes)
        shapes = ", ".join(f"{name!r} {size}" for name, size in zip(self.arrays, sizes, strict=True))
        return f"Wrote {self.path}: {shapes} (float32; numpy.load reads it)."


def save_vectors(
    result: TokenStates | HiddenStates | WordVectors | SentenceVectors | Sequence[WordVectors],
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> SavedVectors:
    """Write the vectors of `result` to `path`: an .npy holds one array, an .npz one per text ("0", "1", …).

    Token states are (layers + 1, tokens, H) per text, word vectors (words, D), sentence vectors (texts, D). Several
    texts of tokens or words differ in length, so they need an .npz. An existing file is replaced only with
    `overwrite`.
    """
    results = list(result) if isinstance(result, (HiddenStates, list, tuple)) else [result]
    arrays: list[np.ndarray] = []
    for item in results:
        if isinstance(item, TokenStates):
            arrays.append(item.states)
        elif isinstance(item, (WordVectors, SentenceVectors)):
            arrays.append(item.vectors)
        else:
            raise InputError(f"Cannot save a {type(item).__name__}.", "Pass token states, word or sentence vectors.")
    target = output_path(path, "vectors file")
    suffix = target.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise InputError(
            f"{target}: the vectors file must end in .npy or .npz.",
            "Example: {path}.",
            arguments={"path": "vectors.npy"},
        )
    if suffix == ".npy" and len(arrays) > 1:
        raise InputError(
            f"{len(arrays)} texts give {len(arrays)} arrays (each of its text's length); an .npy holds one.",
            "Write an .npz instead: {path}.",
            arguments={"path": str(target.with_suffix(".npz"))},
        )
    refused = InputError(
        f"{target} exists.", "Choose a new file name, or pass {overwrite}.", arguments={"overwrite": True}
    )
    if target.is_dir() or (target.exists() and not flag(overwrite, "overwrite")):
        raise refused
    names = ("vectors",) if suffix == ".npy" else tuple(str(i) for i in range(len(arrays)))
    try:
        with folder_for(target.parent), atomic_file(target, overwrite=overwrite) as handle:
            if suffix == ".npy":
                np.save(handle, arrays[0])
            else:
                save_many: Any = np.savez  # numpy's stubs do not type named arrays
                save_many(handle, **dict(zip(names, arrays, strict=True)))
    except FileExistsError:
        raise refused from None
    except OSError as exc:
        raise write_error(target, exc, "the vectors") from None
    return SavedVectors(str(target), names, tuple(tuple(int(n) for n in a.shape) for a in arrays))
