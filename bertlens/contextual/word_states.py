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
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, WORD_POOLS, Combine, WordPool, check_choice
from ..core.tokens import Token, check_text, tokenize
from .pooling import pool_words, word_runs
from .runner import Job, RunOptions, forward_batches, special_frame, window_plan
from .states import hidden_states, select_layers

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class WordStates:
    """One text's words and their vectors: (layers, words, D), one row per chosen layer, or one combined row."""

    text: str
    tokens: tuple[Token, ...]
    runs: tuple[tuple[int, ...], ...]  # each word's token indices (contiguous pieces)
    vectors: np.ndarray  # (layers, words, D) float32; layers = 1 when combined; D = H, 2H for first+last, nH concat


@dataclass
class _Words:
    """A text's words as index arrays into its tokens."""

    pieces: np.ndarray  # (pieces,) token index of every piece of every word, word after word
    word_of_piece: np.ndarray  # (pieces,) which word each piece belongs to
    first: np.ndarray  # (words,) first token of each word
    last: np.ndarray  # (words,) last token of each word


def _words(runs: Sequence[Sequence[int]]) -> _Words:
    if not runs:
        empty = np.zeros(0, dtype=np.int64)
        return _Words(empty, empty, empty, empty)
    return _Words(
        np.concatenate([np.asarray(run, dtype=np.int64) for run in runs]),
        np.repeat(np.arange(len(runs), dtype=np.int64), [len(run) for run in runs]),
        np.array([run[0] for run in runs], dtype=np.int64),
        np.array([run[-1] for run in runs], dtype=np.int64),
    )


def _pool(
    states: tuple[torch.Tensor, ...], words: _Words, count: int, pool: WordPool, combine: Combine | None
) -> torch.Tensor:
    """Pool words from each layer's states (rows, tokens, H), `words` indexing the flattened rows x tokens:
    (layers or 1, words, D) float32."""
    import torch

    def gather(at: np.ndarray) -> torch.Tensor:  # (layers or 1, len(at), D): the layers combined where asked
        index = torch.from_numpy(at)
        picked = torch.stack([layer.reshape(-1, layer.shape[-1])[index] for layer in states]).float()  # (layers, n, H)
        if combine is None:
            return picked
        if combine == "concat":
            return picked.permute(1, 0, 2).reshape(1, len(at), -1)  # (1, n, layers x H)
        return picked.sum(0, keepdim=True) if combine == "sum" else picked.mean(0, keepdim=True)

    if pool == "first":
        return gather(words.first)
    if pool == "last":
        return gather(words.last)
    if pool == "first+last":
        return torch.cat([gather(words.first), gather(words.last)], dim=-1)
    pieces = gather(words.pieces)  # (layers or 1, pieces, D)
    index = torch.from_numpy(words.word_of_piece)
    out = torch.zeros((pieces.shape[0], count, pieces.shape[2]), dtype=torch.float32)
    if pool == "max":
        spread = index[None, :, None].expand_as(pieces)
        return out.scatter_reduce_(1, spread, pieces, "amax", include_self=False)
    sizes = torch.from_numpy(words.last - words.first + 1).to(torch.float32)  # runs are contiguous tokens
    return out.index_add_(1, index, pieces) / sizes[None, :, None]


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
    tokenized = [tokenize(model, text).tokens for text in texts]
    runs = [tuple(tuple(t.index for t in run) for run in word_runs(tokens)) for tokens in tokenized]
    fits = [size is None or len(tokens) - len(prefix) - len(suffix) <= size for tokens in tokenized]

    results: dict[int, np.ndarray] = {}
    jobs = [Job(i, 0, [t.id for t in tokenized[i]]) for i in range(len(texts)) if fits[i]]
    for batch in forward_batches(model, jobs, options, absolute):
        width = batch.states[0].shape[1]  # each layer (B, T, H)
        texts_in = [jobs[j].text for j in batch.jobs]
        shapes = [_words(runs[i]) for i in texts_in]
        offsets = np.cumsum([0] + [len(runs[i]) for i in texts_in])
        merged = _Words(
            np.concatenate([w.pieces + row * width for row, w in enumerate(shapes)]),
            np.concatenate([w.word_of_piece + offsets[row] for row, w in enumerate(shapes)]),
            np.concatenate([w.first + row * width for row, w in enumerate(shapes)]),
            np.concatenate([w.last + row * width for row, w in enumerate(shapes)]),
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
            results[i] = pool_words(chosen, runs[i], pool)
    return [WordStates(texts[i], tokenized[i], runs[i], results[i]) for i in range(len(texts))]
