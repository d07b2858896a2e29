"""What a vocabulary extension computes (`Extension`) and what saving it wrote (`ExtendResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.results import Result, plain, table, visible

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Source:
    """An old token that went into a new row, with its weight in the mix."""

    token: str
    id: int
    weight: float


@dataclass(frozen=True)
class NewWord:
    """A word added to the vocabulary."""

    word: str  # as given
    token: str  # the added token: the word as the tokenizer's normaliser writes it (lowercased for uncased models)
    id: int  # its id, which is also its row of word_embeddings
    pieces: tuple[str, ...]  # how the old tokenizer split it
    piece_ids: tuple[int, ...]
    unknown: bool  # a piece is the unknown token: the old vocabulary could not spell the word
    norm: float  # of its new row
    sources: tuple[Source, ...]  # the old tokens mixed into its row (empty for random, mean, mean-resizing, rows)
    norm_percentile: float | None = None  # % of the old rows (no specials, no [unused]) with a smaller norm
    cosine_pieces: float | None = None  # cosine of its new row with the mean of its old pieces' rows


@dataclass(frozen=True)
class KnownWord:
    """A word the vocabulary already has as one token: reported, left alone."""

    word: str
    token: str
    id: int


@dataclass(frozen=True, repr=False)
class Extension(Result):
    """New rows for new words, computed but not written: what `extend_vocabulary` saves and the report inspects.

    >>> plan = plan_extension(load_model(), ["aspirinex", "dog"], ExtendOptions(strategy="mean"))
    >>> [word.token for word in plan.known], plan.rows.shape  # words already in the vocabulary are left alone
    (['dog'], (1, 384))
    """

    model: str
    strategy: str
    old_rows: int  # rows of word_embeddings before
    new_rows: int  # rows after (old tokenizers smaller than the matrix fill its token-less rows first)
    added: tuple[NewWord, ...]
    known: tuple[KnownWord, ...]
    rows: np.ndarray = field(repr=False)  # (added, E) float32: the new rows of word_embeddings, in `added` order
    head: dict[str, np.ndarray] = field(repr=False)  # head tensor name -> (added,) or (added, E) new values
    tokenizer: Any = field(repr=False)  # the new tokenizers.Tokenizer (no padding, no truncation)
    token_flags: dict[str, bool] = field(repr=False)  # AddedToken flags used: lstrip, normalized
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # given rows that lie far outside the input matrix's space (see extend.space)

    @property
    def ids(self) -> list[int]:
        return [w.id for w in self.added]

    def as_torch(self) -> torch.Tensor:
        """The new rows of `word_embeddings` as a torch tensor, (added, E), in `added` order (ids `self.ids`)."""
        from ..core.notebook import torch_tensor

        return torch_tensor(self.rows)

    def __repr__(self) -> str:
        return f"Extension({len(self.added)} words, {self.strategy}, rows {self.old_rows} -> {self.new_rows})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "strategy": self.strategy,
            "old_rows": self.old_rows,
            "new_rows": self.new_rows,
            "added": plain(self.added),
            "known": plain(self.known),
            "head_tensors": sorted(self.head),
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }

    def to_table(self) -> str:
        return _summary(self.strategy, self.added, self.known, self.notes, self.warnings)


@dataclass(frozen=True, repr=False)
class ExtendResult(Result):
    """What `extend_vocabulary` wrote.

    >>> result = extend_vocabulary(load_model(), ["ibuprofenol"], "drugs-model-2/")
    >>> result.directory
    'drugs-model-2'
    """

    model: str
    directory: str
    strategy: str
    old_rows: int
    new_rows: int
    added: tuple[NewWord, ...]
    known: tuple[KnownWord, ...]
    head_tensors: tuple[str, ...]  # vocabulary-sized head tensors extended too (decoder weight, output bias)
    files: tuple[str, ...]  # written, relative to `directory`
    left_out: tuple[str, ...]  # source files not copied, each with the reason
    sentence_transformers: bool  # whether the sentence-transformers layout was carried over
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # given rows that lie far outside the input matrix's space (see extend.space)

    def __repr__(self) -> str:
        return f"ExtendResult({len(self.added)} words -> {self.directory})"

    def to_table(self) -> str:
        lines = [
            f"Extended {self.model}",
            f"  -> {self.directory}  ({self.strategy}; word_embeddings {self.old_rows} -> {self.new_rows} rows"
            + (f"; also {', '.join(self.head_tensors)}" if self.head_tensors else "")
            + (")" if not self.sentence_transformers else "; sentence-transformers layout kept)"),
            _summary(self.strategy, self.added, self.known, self.notes, self.warnings),
        ]
        if self.left_out:
            lines.append("Not copied: " + "; ".join(self.left_out))
        return "\n".join(lines)


def _summary(
    strategy: str,
    added: Sequence[NewWord],
    known: Sequence[KnownWord],
    notes: Sequence[str],
    warnings: Sequence[str] = (),
) -> str:
    shown = 30
    rows = [
        (
            visible(w.word),
            visible(w.token),
            w.id,
            " ".join(visible(p) for p in w.pieces) + (" (unknown)" if w.unknown else ""),
            w.norm,
            w.norm_percentile,
            w.cosine_pieces,
            ", ".join(f"{visible(s.token)} {s.weight:.2f}" for s in w.sources[:3])
            + (" …" if len(w.sources) > 3 else ""),
        )
        for w in added[:shown]
    ]
    head = ["word", "token", "id", "old pieces", "norm", "norm pct", "cos(pieces)", "made of"]
    lines = [f"{len(added)} new words ({strategy}):", table(head, rows)]
    if len(added) > shown:
        lines.append(f"… and {len(added) - shown} more (all of them in --json / to_dict()).")
    if known:
        lines.append(f"{len(known)} already in the vocabulary, left alone:")
        lines.append(table(["word", "token", "id"], [(visible(k.word), visible(k.token), k.id) for k in known]))
    lines.append("norm pct: share of old rows with a smaller norm; cos(pieces): cosine with the old pieces' mean.")
    lines += [f"note: {n}" for n in notes]
    lines += [f"warning: {w}" for w in warnings]
    return "\n".join(lines)
