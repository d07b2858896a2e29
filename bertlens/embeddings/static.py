"""Static token vectors: rows of the input matrix (`word_embeddings`), without position or segment parts.

Needs neither torch nor transformers: the tokenizer file and the one embedding tensor suffice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core import notebook
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import POOLS, SHOWN_NUMBERS, Pool, check_choice
from ..core.results import Result, first_numbers, table, visible
from ..core.tokens import check_text, encode

if TYPE_CHECKING:
    import torch

QueryKind = Literal["token", "id", "word"]


@dataclass(frozen=True, repr=False)
class StaticVector(Result):
    """A token's row of the input matrix, or a word's pieces' rows pooled.

    >>> v = vector(load_model(), "dog")
    >>> v.ids, v.vector.dtype
    ((3899,), dtype('float32'))
    """

    model: str
    query: str  # what was asked for
    kind: QueryKind  # a token string, a token id, or a word tokenized into pieces
    pieces: tuple[str, ...]
    ids: tuple[int, ...]
    pool: str | None  # how the pieces' rows were combined; None for a single row
    unknown: bool  # whether a piece is the tokenizer's unknown token
    vector: np.ndarray  # (E,) float32
    norm: float
    notes: tuple[str, ...] = ()  # what a reader must know: a word that is not a token is pooled from its pieces

    def __repr__(self) -> str:
        how = f", {self.pool} of {len(self.ids)} pieces" if self.pool else ""
        return (
            f"StaticVector({self.query!r}: {' '.join(self.pieces)}{how}, dims={len(self.vector)}, norm={self.norm:.4g})"
        )

    def as_torch(self) -> torch.Tensor:
        """The vector as a torch tensor, (E,): for a token, `get_input_embeddings().weight[id]` exactly."""
        return notebook.torch_tensor(self.vector)

    def to_table(self) -> str:
        """The pieces, and the vector's first numbers as `layers --vectors` shows them (`table(every=True)`: all)."""
        return self.table()

    def table(self, *, every: bool = False) -> str:
        """The pieces and what the vector is; its first `SHOWN_NUMBERS` numbers, or with `every` all of them (eight
        a line)."""
        head = table(["piece", "id"], [(visible(p), i) for p, i in zip(self.pieces, self.ids, strict=True)])
        how = f"{self.pool} of {len(self.ids)} pieces" if self.pool else "one row of word_embeddings"
        lines = [
            head,
            "",
            f"{self.query!r} ({self.kind}): {how}; {len(self.vector)} dims, norm {self.norm:.6g}",
            *(f"note: {note}" for note in self.notes),
        ]
        if not every and len(self.vector) > SHOWN_NUMBERS:
            shown = f"the first {SHOWN_NUMBERS} of {len(self.vector)} numbers; --all shows every one, as --json does"
            return "\n".join([*lines, first_numbers(self.vector), shown])
        values = [f"{v: .6f}" for v in self.vector.tolist()]
        lines += ["  ".join(values[i : i + 8]) for i in range(0, len(values), 8)]
        return "\n".join(lines)


def unknown_id(model: Model) -> int | None:
    """The id of the tokenizer's unknown token ([UNK] or <unk>), or None when it has none."""
    for name in ("[UNK]", "<unk>"):
        found = model.vocabulary.token_to_id(name)
        if found is not None:
            return found
    return None


_POOLED = {"mean": "the mean of", "sum": "the sum of"}
UNKNOWN_NOTE = "a piece is the unknown token: the vocabulary cannot spell this word."


def pooled_note(query: str, pieces: Sequence[str], pool: str | None) -> str | None:
    """What a word's vector is when the word is not a token of the vocabulary (None when it is one): said in every
    answer that pools pieces (`vector`, `neighbors`, `similarity`), e.g. "'qwzxv' is not a token: its vector is the
    mean of its 5 pieces' rows (q ##w ##z ##x ##v)"."""
    if len(pieces) == 1:
        if pieces[0] == query:
            return None
        return f"{query!r} is not a token: it is tokenized as the one piece {pieces[0]!r}, whose row this is."
    spelled = " ".join(pieces)
    if pool in _POOLED:
        how = f"{_POOLED[pool]} its {len(pieces)} pieces' rows"
    else:
        how = f"the row of its {pool} piece of {len(pieces)}"
    return f"{query!r} is not a token: its vector is {how} ({spelled})."


def check_one_word(text: str) -> None:
    """Refuse a text of several words (whitespace inside): pooling them would silently average different words."""
    words = text.split()
    if len(words) > 1:
        raise InputError(
            f"{text!r} is {len(words)} words: a static vector is one word's (or token's), and bertlens does not "
            "average different words into one.",
            f"Give them as separate queries ({' '.join(repr(w) for w in words[:4])}): one vector each.",
        )


def _result(model: Model, query: str, kind: QueryKind, ids: list[int], pool: str | None) -> StaticVector:
    rows = model.embedding_weights.word_embeddings[np.asarray(ids, dtype=np.int64)]  # (pieces, E)
    if pool is None or pool == "mean":
        vector = rows.mean(axis=0, dtype=np.float64).astype(np.float32) if len(ids) > 1 else rows[0].copy()
    elif pool == "sum":
        vector = rows.sum(axis=0, dtype=np.float64).astype(np.float32)
    else:
        vector = rows[0 if pool == "first" else -1].copy()
    unk = unknown_id(model)
    pieces = tuple(model.vocabulary.id_to_token(i) or f"[row_{i}]" for i in ids)
    unknown = unk is not None and unk in ids
    note = pooled_note(query, pieces, pool) if kind == "word" else None
    return StaticVector(
        model=model.source.description,
        query=query,
        kind=kind,
        pieces=pieces,
        ids=tuple(ids),
        pool=pool if len(ids) > 1 else None,
        unknown=unknown,
        vector=vector,
        norm=float(np.linalg.norm(vector)),
        notes=tuple(n for n in (note, UNKNOWN_NOTE if unknown else None) if n is not None),
    )


def token_vector(model: Model, token: str | int) -> StaticVector:
    """The row of one token, given as its exact vocabulary string (e.g. "dog", "##ing", "[CLS]") or its id.

    >>> token_vector(load_model(), "##ing").ids
    (2075,)
    """
    rows = model.matrix_rows
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        if not 0 <= int(token) < rows:
            raise InputError(
                f"Token id {token} is out of range: the matrix has rows 0 to {rows - 1}.",
                f"Give an id from 0 to {rows - 1} (bertlens tokens TEXT shows a text's ids).",
            )
        return _result(model, str(int(token)), "id", [int(token)], None)
    token = check_text(token, "token")
    found = model.vocabulary.token_to_id(token)
    if found is None:
        raise InputError(
            f"{token!r} is not a token of this vocabulary.",
            "Use word_vector (`bertlens vector --word`) to split it into pieces and pool them.",
        )
    return _result(model, token, "token", [found], None)


def word_vector(model: Model, word: str, pool: Pool = "mean", *, phrase: bool = False) -> StaticVector:
    """A word tokenized alone (no special tokens, no padding), its pieces' rows pooled by `pool`.

    A text of several words is refused (`InputError`): one vector per word. `phrase=True` pools them all the same,
    for benchmarks whose entries are phrases (SemEval-2017's "multiple sclerosis").

    >>> v = word_vector(load_model(), "Sinan", pool="mean")
    >>> v.pieces, v.vector.shape
    (('sin', '##an'), (384,))
    """
    check_text(word, "word")
    if not phrase:
        check_one_word(word)
    check_choice(pool, POOLS, "pooling")
    ids = list(encode(model, word, add_special_tokens=False).ids)
    if not ids:
        raise InputError(f"{word!r} has no pieces: it is empty or only whitespace.", "Give a word with letters.")
    return _result(model, word, "word", ids, pool)


def vector(model: Model, query: str, pool: Pool = "mean") -> StaticVector:
    """A token's row if `query` is a token of the vocabulary, else the pooled rows of its pieces (said in `notes`).

    A query of several words is refused: one vector per word (see `vectors` for several queries).

    >>> model = load_model()
    >>> vector(model, "dog").kind, vector(model, "Sinan").pieces
    ('token', ('sin', '##an'))
    """
    check_text(query, "query")
    if model.vocabulary.token_to_id(query) is not None:
        return token_vector(model, query)
    return word_vector(model, query, pool)


@dataclass(frozen=True, repr=False)
class StaticVectors(Result):
    """Several queries' static vectors, in query order (`bertlens vector dog cat`).

    >>> [v.pieces for v in vectors(load_model(), ["dog", "Sinan"])]
    [('dog',), ('sin', '##an')]
    """

    results: tuple[StaticVector, ...]

    def __repr__(self) -> str:
        return f"StaticVectors({', '.join(repr(r.query) for r in self.results)})"

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> StaticVector:
        return self.results[i]

    def __iter__(self) -> Iterator[StaticVector]:
        return iter(self.results)

    def as_torch(self) -> torch.Tensor:
        """The vectors as one torch tensor, (queries, E), in query order: row i is `self[i].as_torch()`.

        >>> Lens().vectors(["dog", "cat"]).as_torch().shape
        torch.Size([2, 384])
        """
        return notebook.torch_tensor(np.stack([r.vector for r in self.results]))

    def to_table(self) -> str:
        return self.table()

    def table(self, *, every: bool = False) -> str:
        """Each query's `StaticVector.table`, one after another."""
        return "\n\n".join(r.table(every=every) for r in self.results)


@dataclass(frozen=True, repr=False)
class EveryNumber(Result):
    """A static vector result shown with every number (`bertlens vector --all`); `to_dict()` is the result's own."""

    result: StaticVector | StaticVectors

    def __repr__(self) -> str:
        return f"EveryNumber({self.result!r})"

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_table(self) -> str:
        return self.result.table(every=True)


def vectors(model: Model, queries: Sequence[str | int], pool: Pool = "mean") -> StaticVectors:
    """`vector` of every query (an int is a token id): one result each, in order.

    >>> [v.query for v in vectors(load_model(), ["dog", 2293])]
    ['dog', '2293']
    """
    if isinstance(queries, (str, int)) or not isinstance(queries, Sequence):
        raise InputError(
            f"queries must be a list of queries, got {type(queries).__name__}.", "Pass e.g. ['dog', 'qwzxv']."
        )
    if not queries:
        raise InputError("No queries were given.", "Give at least one token, word or token id.")
    return StaticVectors(
        tuple(vector(model, q, pool) if isinstance(q, str) else token_vector(model, q) for q in queries)
    )
