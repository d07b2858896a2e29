"""Every word's vectors from chosen layers, pooled inside the batch: the path word vectors and corpus work take.

`word_states` runs texts through the model (`runner.forward_batches`) and, for each batch, gathers the pieces of
every word from the layers asked for, combines the layers where asked and pools the pieces, all in torch, before
anything is copied out: only the words' vectors leave the batch, never every layer of every token. The numbers are
those of `hidden_states` then `pooling.pool_words` (the states are widened to float32 first in both, then the layers
are combined and the pieces pooled, in that order); a text longer than one window takes that path itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, WORD_POOLS, Combine, WordPool, check_choice
from ..core.tokens import check_text
from .pooling import pool_words
from .runner import Job, RunOptions, forward_batches, special_frame, window_plan
from .states import hidden_states, select_layers

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class WordStates:
    """One text's words and their vectors: (layers, words, D), one row per chosen layer, or one combined row.

    Words are kept as plain lists of ints, not a tuple per word: corpus work makes millions of them, and every
    container Python's garbage collector tracks adds to its full collections (`runs` and `spans` build them)."""

    text: str
    pieces: tuple[str, ...]  # every token of the text as the model received it, special tokens included
    first: list[int]  # each word's first token (a word's pieces are neighbouring tokens)
    last: list[int]  # each word's last token
    starts: list[int]  # each word's character offsets into `text`
    ends: list[int]
    vectors: np.ndarray  # (layers, words, D) float32; layers = 1 when combined; D = H, 2H for first+last, nH concat

    def __len__(self) -> int:
        """The number of words."""
        return len(self.first)

    def word(self, w: int) -> str:
        """Word `w` as written in the text."""
        return self.text[self.starts[w] : self.ends[w]]

    @property
    def runs(self) -> tuple[tuple[int, ...], ...]:
        """Each word's token indices."""
        return tuple(tuple(range(f, e + 1)) for f, e in zip(self.first, self.last, strict=True))

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """Each word's character offsets into `text`."""
        return tuple(zip(self.starts, self.ends, strict=True))


@dataclass
class _Words:
    """Words as index arrays: into one text's tokens, or (merged for a batch) into its flat token axis."""

    pieces: np.ndarray  # (pieces,) token index of every piece of every word, word after word
    word_of_piece: np.ndarray  # (pieces,) which word each piece belongs to
    first: np.ndarray  # (words,) first token of each word
    last: np.ndarray  # (words,) last token of each word


def _words(encoding: Any) -> _Words:
    """A text's words from its `tokenizers.Encoding`, as `pooling.word_runs` makes them from tokens: consecutive
    tokens of one word index and sequence; special tokens (no word index) belong to none."""
    word = np.array([-1 if w is None else w for w in encoding.word_ids], dtype=np.int64)
    sequence = np.array([0 if q is None else q for q in encoding.sequence_ids], dtype=np.int64)
    pieces = np.flatnonzero(word >= 0)  # (pieces,)
    key = word[pieces] * 2 + sequence[pieces]
    starts = np.ones(len(pieces), dtype=bool)
    starts[1:] = key[1:] != key[:-1]  # a piece that begins a word
    ends = np.ones(len(pieces), dtype=bool)
    ends[:-1] = starts[1:]
    return _Words(pieces, np.cumsum(starts) - 1, pieces[starts], pieces[ends])


def _pool(
    states: tuple[torch.Tensor, ...], words: _Words, count: int, pool: WordPool, combine: Combine | None
) -> torch.Tensor:
    """Pool words from each layer's states (tokens, H), `words` indexing the batch's flat token axis:
    (layers or 1, words, D) float32. Mean, first and last are linear: each layer is pooled on its own (only its
    words' pieces are read) and the pooled layers combined; max is not, so its layers are combined first."""
    import torch

    flats = list(states)  # each (tokens, H)
    if pool == "max":
        return _max_pool(flats, words, count, combine)
    if pool == "first+last":  # first's layers, then last's, as pool_words lays out combined layers
        ends = [_pool(states, words, count, end, combine) for end in ("first", "last")]
        return torch.cat(ends, dim=-1)
    device = flats[0].device  # the indices go where the states are (the GPU's, on CUDA)
    at = {k: torch.from_numpy(getattr(words, k)).to(device) for k in ("pieces", "word_of_piece", "first", "last")}
    sizes = torch.from_numpy(words.last - words.first + 1).to(device, torch.float32)[:, None]  # contiguous runs

    def one(flat: torch.Tensor) -> torch.Tensor:  # (words, D) of one layer
        if pool in ("first", "last"):
            return flat.index_select(0, at[pool]).float()
        pieces = flat.index_select(0, at["pieces"]).float()  # (pieces, H)
        total = torch.zeros((count, flat.shape[1]), device=device)
        return total.index_add_(0, at["word_of_piece"], pieces).div_(sizes)

    pooled = [one(flat) for flat in flats]  # layers x (words, D)
    if combine is None:
        return torch.stack(pooled)
    if combine == "concat":
        return torch.cat(pooled, dim=1)[None]  # (1, words, layers x D)
    total = torch.stack(pooled).sum(0)
    return (total if combine == "sum" else total / len(pooled))[None]


def _max_pool(flats: list[torch.Tensor], words: _Words, count: int, combine: Combine | None) -> torch.Tensor:
    """The element-wise max over each word's pieces, the layers combined per piece first: (layers or 1, words, D)."""
    import torch

    index = torch.from_numpy(words.pieces).to(flats[0].device)
    pieces = torch.stack([flat.index_select(0, index) for flat in flats]).float()  # (layers, pieces, H)
    if combine == "concat":
        pieces = pieces.permute(1, 0, 2).reshape(1, len(index), -1)  # (1, pieces, layers x H)
    elif combine is not None:
        pieces = pieces.sum(0, keepdim=True) if combine == "sum" else pieces.mean(0, keepdim=True)
    out = torch.zeros((pieces.shape[0], count, pieces.shape[2]), dtype=torch.float32, device=pieces.device)
    spread = torch.from_numpy(words.word_of_piece).to(pieces.device)[None, :, None].expand_as(pieces)
    return out.scatter_reduce_(1, spread, pieces, "amax", include_self=False)


def word_states(
    model: Model,
    texts: Sequence[str],
    *,
    layers: Sequence[int],
    pool: WordPool = "mean",
    combine: Combine | None = None,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> list[WordStates]:
    """Each text's words with their vectors from `layers` (checked numbers; negative counts from the last), pieces
    pooled by `pool`; `combine` ("mean", "sum", "concat") merges the layers first, None keeps one row per layer."""
    check_choice(pool, WORD_POOLS, "pooling")
    if combine is not None:
        check_choice(combine, COMBINES, "layer combination")
    if isinstance(texts, str):
        raise InputError("word_states takes a list of texts, not one string.", "Wrap the text in a list.")
    for i, text in enumerate(texts):
        check_text(text, f"text #{i}")
    count = model.config.num_hidden_layers + 1
    absolute = [layer % count for layer in layers]
    prefix, suffix = special_frame(model)
    size, _ = window_plan(model, options)
    encodings = model.vocabulary.tokenizer.encode_batch(list(texts))  # as tokenize() encodes each, in parallel
    words = [_words(encoding) for encoding in encodings]
    fits = [size is None or len(e.ids) - len(prefix) - len(suffix) <= size for e in encodings]

    results: dict[int, np.ndarray] = {}
    jobs = [Job(i, 0, encodings[i].ids) for i in range(len(texts)) if fits[i]]
    for batch in forward_batches(model, jobs, options, absolute):
        texts_in = [jobs[j].text for j in batch.jobs]
        shapes = [words[i] for i in texts_in]
        offsets = np.cumsum([0] + [len(w.first) for w in shapes])
        starts = batch.starts  # each row's first token in the batch's (tokens, H) layers
        merged = _Words(
            np.concatenate([w.pieces + starts[row] for row, w in enumerate(shapes)]),
            np.concatenate([w.word_of_piece + offsets[row] for row, w in enumerate(shapes)]),
            np.concatenate([w.first + starts[row] for row, w in enumerate(shapes)]),
            np.concatenate([w.last + starts[row] for row, w in enumerate(shapes)]),
        )
        pooled = _pool(batch.states, merged, int(offsets[-1]), pool, combine).cpu().numpy()  # (layers or 1, words, D)
        for row, i in enumerate(texts_in):
            results[i] = pooled[:, offsets[row] : offsets[row + 1]]

    long = [i for i in range(len(texts)) if not fits[i]]
    if long:  # windows: every layer of every token first, then the same pooling in numpy
        for i, states in zip(long, hidden_states(model, [texts[i] for i in long], options=options), strict=True):
            chosen = states.states[absolute]  # (layers, tokens, H)
            if combine is not None:
                chosen = select_layers(chosen, list(range(len(absolute))), combine)[None]  # (1, tokens, D)
            results[i] = pool_words(chosen, _token_runs(words[i]), pool)
    return [_result(texts[i], encodings[i], words[i], results[i]) for i in range(len(texts))]


def _token_runs(words: _Words) -> list[range]:
    """Each word's token indices (a word's pieces are neighbouring tokens)."""
    return [range(f, e + 1) for f, e in zip(words.first.tolist(), words.last.tolist(), strict=True)]


def _result(text: str, encoding: Any, words: _Words, vectors: np.ndarray) -> WordStates:
    """One text's WordStates: its pieces, words (first and last tokens, character offsets) and vectors."""
    first, last = words.first.tolist(), words.last.tolist()
    offsets = encoding.offsets
    starts, ends = [offsets[f][0] for f in first], [offsets[e][1] for e in last]
    return WordStates(text, tuple(encoding.tokens), first, last, starts, ends, vectors)
