"""Every word's vectors from chosen layers, pooled inside the batch: the path word vectors and corpus work take.

`word_states` runs texts through the model (`runner.forward_batches`) and, for each batch, gathers the pieces of
every word from the layers asked for, combines the layers where asked and pools the pieces, all in torch, before
anything is copied out: only the words' vectors leave the batch, never every layer of every token. The numbers are
those of `hidden_states` then `pooling.pool_words` (the states are widened to float32 first in both, then the layers
are combined and the pieces pooled, in that order); a text longer than one window takes that path itself. On CUDA
the texts take the pipeline instead (pipeline.py, device_step.py): encoded once ahead of the GPU, laid end to end,
pooled on the GPU and copied out without waiting for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, WORD_POOLS, Combine, WordPool, check_choice
from ..core.precision import choose_precision, torch_device
from ..core.tokens import check_text
from .pipeline import WordIndex, lay_out, word_batches
from .pooling import pool_words
from .runner import Job, RunOptions, forward_batches, special_frame, window_plan
from .states import hidden_states, select_layers


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


def _words(encoding: Any) -> WordIndex:
    """A text's words from its `tokenizers.Encoding`, found as the pipeline finds them (`pipeline.lay_out`)."""
    return lay_out([encoding]).words


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
    limit = None if size is None else size + len(prefix) + len(suffix)  # a text of more tokens takes windows
    device = torch_device(options.device)
    results: dict[int, WordStates] = {}
    if device == "cuda":  # the pipeline: texts encoded once, ahead of the GPU, which never waits for the host
        from .device_step import WordStep

        dtype = choose_precision(model, options.dtype, device).dtype
        step = WordStep(model, device, dtype, absolute, pool, combine)
        over: list[tuple[int, Any]] = []
        for batch in word_batches(model, texts, step, batch_tokens=options.batch_tokens, limit=limit, over=over):
            vectors, bounds = batch.vectors.numpy(), batch.word_starts.tolist()
            columns = [batch.first.tolist(), batch.last.tolist(), batch.starts.tolist(), batch.ends.tolist()]
            for row, i in enumerate(batch.texts.tolist()):
                a, b = bounds[row], bounds[row + 1]
                first, last, starts, ends = (column[a:b] for column in columns)
                pieces = batch.pieces(row)
                results[i] = WordStates(texts[i], pieces, first, last, starts, ends, vectors[:, a:b])
        long = [(i, encoding, _words(encoding)) for i, encoding in over]
    else:
        encodings = model.vocabulary.tokenizer.encode_batch(list(texts))  # as tokenize() encodes each, in parallel
        words = [_words(encoding) for encoding in encodings]
        fits = [limit is None or len(e.ids) <= limit for e in encodings]
        jobs = [Job(i, 0, encodings[i].ids) for i in range(len(texts)) if fits[i]]
        for i, pooled in _run_jobs(model, jobs, [words[job.text] for job in jobs], absolute, pool, combine, options):
            results[i] = _result(texts[i], encodings[i], words[i], pooled)
        long = [(i, encodings[i], words[i]) for i in range(len(texts)) if not fits[i]]
    if long:  # windows: every layer of every token first, then the same pooling in numpy
        found = hidden_states(model, [texts[i] for i, _, _ in long], options=options)
        for (i, encoding, shape), states in zip(long, found, strict=True):
            chosen = states.states[absolute]  # (layers, tokens, H)
            if combine is not None:
                chosen = select_layers(chosen, list(range(len(absolute))), combine)[None]  # (1, tokens, D)
            results[i] = _result(texts[i], encoding, shape, pool_words(chosen, _token_runs(shape), pool))
    return [results[i] for i in range(len(texts))]


def _run_jobs(
    model: Model,
    jobs: list[Job],
    shapes: list[WordIndex],
    absolute: list[int],
    pool: WordPool,
    combine: Combine | None,
    options: RunOptions,
) -> Iterator[tuple[int, np.ndarray]]:
    """The runner's batches (`forward_batches`), each batch's words pooled inside it: each text's index and its
    pooled rows (layers or 1, words, D)."""
    from .device_step import pool_states

    for batch in forward_batches(model, jobs, options, absolute):
        texts_in = [jobs[j].text for j in batch.jobs]
        chosen = [shapes[j] for j in batch.jobs]
        offsets = np.cumsum([0] + [len(w.first) for w in chosen])
        starts = batch.starts  # each row's first token in the batch's (tokens, H) layers
        merged = WordIndex(
            np.concatenate([w.pieces + starts[row] for row, w in enumerate(chosen)]),
            np.concatenate([w.word_of_piece + offsets[row] for row, w in enumerate(chosen)]),
            np.concatenate([w.first + starts[row] for row, w in enumerate(chosen)]),
            np.concatenate([w.last + starts[row] for row, w in enumerate(chosen)]),
        )
        pooled = pool_states(batch.states, merged, int(offsets[-1]), pool, combine).cpu().numpy()  # (layers, words, D)
        for row, i in enumerate(texts_in):
            yield i, pooled[:, offsets[row] : offsets[row + 1]]


def _token_runs(words: WordIndex) -> list[range]:
    """Each word's token indices (a word's pieces are neighbouring tokens)."""
    return [range(f, e + 1) for f, e in zip(words.first.tolist(), words.last.tolist(), strict=True)]


def _result(text: str, encoding: Any, words: WordIndex, vectors: np.ndarray) -> WordStates:
    """One text's WordStates: its pieces, words (first and last tokens, character offsets) and vectors."""
    first, last = words.first.tolist(), words.last.tolist()
    offsets = encoding.offsets
    starts, ends = [offsets[f][0] for f in first], [offsets[e][1] for e in last]
    return WordStates(text, tuple(encoding.tokens), first, last, starts, ends, vectors)
