"""The word path's host side: texts encoded once, ahead of the device, cut into token-budget batches of texts laid end
to end, each batch's word boundaries and pooling indices made as flat arrays, and the pooled rows handed on as
columns. The device's own work (the forward pass and the pooling) is a `DeviceStep`: `device_step.py` has the real
ones; a benchmark can give a stand-in that hands back precomputed rows (bench/contextual_gpu.py --host-only).

The tokenizers library encodes a chunk of texts in parallel (`Tokenizer.encode_batch`), in a thread that works ahead of
the device; another reads the encodings into flat arrays (`lay_out`: ids, words from `Encoding.word_ids`, their
characters from `Encoding.offsets`; the only Python that runs per token), and everything after it is a handful of
numpy operations per chunk and per batch. Texts within a chunk are sorted by length, so a batch's rows are near-equal
and padding (where a step pads) is small.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..core.families import position_ids
from ..core.model import Model

if TYPE_CHECKING:
    import torch
    from tokenizers import Encoding

CHUNK_TEXTS = 256  # the fewest texts encoded together (the tokenizers library's batch, and the span texts are
# sorted within); a chunk holds at least a batch's tokens at 16 a text, so that batches are full
AHEAD = 2  # chunks encoded ahead of the one being run


@dataclass
class WordIndex:
    """Words as index arrays into a flat token axis (numpy arrays, or tensors on the device)."""

    pieces: Any  # (pieces,) token index of every piece of every word, word after word
    word_of_piece: Any  # (pieces,) which word each piece belongs to
    first: Any  # (words,) first token of each word
    last: Any  # (words,) last token of each word


@dataclass
class DeviceBatch:
    """One pass's input: texts end to end on one token axis, and where their words lie on it."""

    ids: np.ndarray  # (tokens,) int64
    positions: np.ndarray  # (tokens,) int64, each text's own (core/families.position_ids)
    offsets: np.ndarray  # (rows + 1,) int64: each text's first token, then the total
    longest: int  # the longest text's tokens
    words: WordIndex  # into this batch's token axis


class Pending(Protocol):
    """A batch handed to the device: `rows()` waits for its pooled rows and answers them on the host."""

    def rows(self) -> torch.Tensor: ...


DeviceStep = Callable[[DeviceBatch], Pending]  # a batch in; its pooled rows (layers or 1, words, D) on the host out


@dataclass
class WordBatch:
    """One batch's words as columns: which texts, each word's tokens and characters, and the pooled rows."""

    texts: np.ndarray  # (rows,) the caller's index of each text, in the batch's order
    word_starts: np.ndarray  # (rows + 1,) each text's first word in the columns below
    first: np.ndarray  # (words,) each word's first token within its text
    last: np.ndarray  # (words,) each word's last token within its text
    starts: np.ndarray  # (words,) character offsets into the word's text
    ends: np.ndarray
    encodings: list[Encoding]  # each text's encoding, as the tokenizer gives it, in the batch's order
    vectors: torch.Tensor  # (layers or 1, words, D) on the host, in the step's output dtype

    def __len__(self) -> int:
        """The number of words."""
        return len(self.first)

    def pieces(self, row: int) -> tuple[str, ...]:
        """The tokens of the batch's text `row` as strings, special tokens included, as the tokenizer gives them."""
        return tuple(self.encodings[row].tokens)


@dataclass
class LaidOut:
    """Encodings of single texts laid end to end on one token axis, and where their words lie (`lay_out`)."""

    token_starts: np.ndarray  # (texts + 1,) int64: each text's first token, then the total
    ids: np.ndarray  # (tokens,) int64
    words: WordIndex  # into the token axis
    starts: np.ndarray  # (words,) the character where each word begins in its text
    ends: np.ndarray  # (words,) and the one after its last


@dataclass
class _Chunk:
    """Texts encoded and sorted by length, laid end to end: every column a batch slices."""

    texts: np.ndarray  # (n,) the caller's indices, shortest first
    encodings: list[Encoding]  # the texts' encodings, shortest first
    token_starts: np.ndarray  # (n + 1,)
    ids: np.ndarray  # (tokens,)
    positions: np.ndarray  # (tokens,)
    words: WordIndex  # into the chunk's token axis
    word_starts: np.ndarray  # (n + 1,) each text's first word
    piece_starts: np.ndarray  # (n + 1,) each text's first piece
    starts: np.ndarray  # (words,) character offsets
    ends: np.ndarray
    over: list[tuple[int, Any]]  # texts over the limit, left out: the caller's index and the encoding


def flat_positions(ids: np.ndarray, token_starts: np.ndarray, scheme: Any, pad: int | None) -> np.ndarray:
    """`core.families.position_ids` of every text of texts laid end to end (`token_starts`: each text's first
    token, then the total), without a Python loop over the texts: the rule applied once to the whole axis, then
    each text's count restarted at its first token."""
    lengths = np.diff(token_starts)
    every = np.asarray(position_ids(ids, scheme, pad), dtype=np.int64)  # as if one text
    if scheme == "absolute-offset":
        not_pad = ids != (pad or 0)
        before = np.concatenate([[0], np.cumsum(not_pad)])[token_starts[:-1]]  # non-pad tokens before each text
        positions: np.ndarray = every - np.repeat(before, lengths) * not_pad
        return positions
    positions = every - np.repeat(token_starts[:-1], lengths)
    return positions


def lay_out(encodings: Sequence[Encoding]) -> LaidOut:
    """Encodings of single texts (`tokenizers.Encoding`, special tokens included) laid end to end, and their words as
    `pooling.word_runs` makes them from tokens: consecutive tokens of one text and one word index (`Encoding.word_ids`;
    special tokens have none and belong to no word), each word's characters from `Encoding.offsets`."""
    every = itertools.chain.from_iterable
    lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))  # (texts,)
    token_starts = np.concatenate([[0], np.cumsum(lengths)])
    total = int(token_starts[-1])
    ids = np.fromiter(every([e.ids for e in encodings]), dtype=np.int64, count=total)  # (tokens,)
    word = np.array([-1 if w is None else w for w in every([e.word_ids for e in encodings])], dtype=np.int64)
    offsets = np.fromiter(every(every(e.offsets for e in encodings)), dtype=np.int64, count=2 * total)
    offsets = offsets.reshape(total, 2)  # (tokens, 2) each token's characters in its text
    pieces = np.flatnonzero(word >= 0)  # (pieces,) the tokens that belong to a word
    text = np.repeat(np.arange(len(encodings)), lengths)[pieces]  # (pieces,) each piece's text
    begins = np.ones(len(pieces), dtype=bool)  # a piece that begins a word: a new word index, or a new text
    begins[1:] = (word[pieces[1:]] != word[pieces[:-1]]) | (text[1:] != text[:-1])
    ends = np.ones(len(pieces), dtype=bool)
    ends[:-1] = begins[1:]
    first, last = pieces[begins], pieces[ends]  # (words,)
    words = WordIndex(pieces, np.cumsum(begins) - 1, first, last)
    return LaidOut(token_starts, ids, words, offsets[first, 0], offsets[last, 1])


def _chunk(model: Model, encodings: list[Encoding], indices: np.ndarray, limit: int | None) -> _Chunk:
    """Texts (the caller's `indices`) encoded, laid out sorted by length; texts of more than `limit` tokens are left
    out (`_Chunk.over`, with their encodings)."""
    lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))  # (texts,)
    order = np.argsort(lengths, kind="stable")
    over: list[tuple[int, Any]] = []
    if limit is not None and len(lengths) and lengths[order[-1]] > limit:
        keep = int(np.searchsorted(lengths[order], limit, side="right"))
        over = [(int(indices[i]), encodings[i]) for i in order[keep:].tolist()]  # for windows
        order = order[:keep]
    encodings = [encodings[i] for i in order.tolist()]
    laid = lay_out(encodings)
    scheme, pad = model.family.position_scheme, model.config.pad_token_id
    return _Chunk(
        texts=indices[order],
        encodings=encodings,
        token_starts=laid.token_starts,
        ids=laid.ids,
        positions=flat_positions(laid.ids, laid.token_starts, scheme, pad),
        words=laid.words,
        word_starts=np.searchsorted(laid.words.first, laid.token_starts),
        piece_starts=np.searchsorted(laid.words.pieces, laid.token_starts),
        starts=laid.starts,
        ends=laid.ends,
        over=over,
    )


def _cuts(token_starts: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive runs of texts [a, b) of at most `budget` tokens each (a text over it alone)."""
    cuts, a, n = [], 0, len(token_starts) - 1
    while a < n:
        b = int(np.searchsorted(token_starts, token_starts[a] + budget, side="right")) - 1
        b = min(max(b, a + 1), n)
        cuts.append((a, b))
        a = b
    return cuts


def _batch(chunk: _Chunk, a: int, b: int) -> tuple[DeviceBatch, WordBatch]:
    """Texts [a, b) of a chunk: the device's input and the columns its rows will join."""
    t0, t1 = int(chunk.token_starts[a]), int(chunk.token_starts[b])
    w0, w1 = int(chunk.word_starts[a]), int(chunk.word_starts[b])
    p0, p1 = int(chunk.piece_starts[a]), int(chunk.piece_starts[b])
    offsets = chunk.token_starts[a : b + 1] - t0
    words = chunk.words
    index = WordIndex(
        words.pieces[p0:p1] - t0, words.word_of_piece[p0:p1] - w0, words.first[w0:w1] - t0, words.last[w0:w1] - t0
    )
    longest = int((offsets[1:] - offsets[:-1]).max())
    device = DeviceBatch(chunk.ids[t0:t1], chunk.positions[t0:t1], offsets, longest, index)
    text_of_word = np.repeat(np.arange(b - a), np.diff(chunk.word_starts[a : b + 1]))
    base = chunk.token_starts[a:b][text_of_word]  # each word's text's first token
    columns = WordBatch(
        texts=chunk.texts[a:b],
        word_starts=chunk.word_starts[a : b + 1] - w0,
        first=words.first[w0:w1] - base,
        last=words.last[w0:w1] - base,
        starts=chunk.starts[w0:w1],
        ends=chunk.ends[w0:w1],
        encodings=chunk.encodings[a:b],
        vectors=None,  # type: ignore[arg-type]  # the step's rows, filled in when they arrive
    )
    return device, columns


def _ahead(items: Iterator[Any], name: str) -> Iterator[Any]:
    """`items`, made in a thread that runs up to `AHEAD` items in front of the caller."""
    done: queue.Queue[Any] = queue.Queue(maxsize=AHEAD)
    stop = threading.Event()
    end = object()

    def work() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                done.put(item)
            done.put(end)
        except BaseException as error:  # handed to the caller, raised there
            done.put(error)
        finally:
            close = getattr(items, "close", None)
            if close is not None:  # a generator of chunks ends its own thread now, not when it is collected
                close()

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while (item := done.get()) is not end:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # let a blocked put finish, so the thread ends
            with contextlib.suppress(queue.Empty):
                done.get(timeout=0.05)


def _chunks(
    model: Model, texts: Sequence[str], indices: np.ndarray, chunk: int, limit: int | None
) -> Generator[_Chunk, None, None]:
    """Chunks of `texts`, laid out: the tokenizers library encodes chunks in one thread (in parallel, without holding
    Python's lock) while another lays out the last ones, both ahead of the caller, who keeps the device fed."""
    tokenizer = model.vocabulary.tokenizer
    spans = [(start, min(start + chunk, len(texts))) for start in range(0, len(texts), chunk)]
    encoded = ((tokenizer.encode_batch([texts[i] for i in indices[a:b].tolist()]), indices[a:b]) for a, b in spans)
    if len(spans) <= 1:  # nothing to overlap
        yield from (_chunk(model, some, chosen, limit) for some, chosen in encoded)
        return
    laid = (_chunk(model, some, chosen, limit) for some, chosen in _ahead(encoded, "bertlens-encode"))
    yield from _ahead(laid, "bertlens-layout")


def word_batches(
    model: Model,
    texts: Sequence[str],
    step: DeviceStep,
    *,
    batch_tokens: int,
    indices: Sequence[int] | None = None,
    limit: int | None = None,
    over: list[tuple[int, Any]] | None = None,
    chunk: int | None = None,
    depth: int = 2,
) -> Iterator[WordBatch]:
    """Every word of `texts` (those at `indices`; default all) with its pooled rows, a batch at a time, in the
    order the batches ran (shortest texts first within each chunk of `chunk` texts; default: enough for a batch).

    `step` runs each batch on the device; up to `depth` batches are handed to it before the first one's rows are
    waited for, so the device always has the next batch queued while the host collects the last. Texts of more
    than `limit` tokens are not run: each one's index and encoding is added to `over` (a list the caller reads when
    the batches are done).
    """
    chosen = np.arange(len(texts)) if indices is None else np.asarray(indices, dtype=np.int64)
    chunk = chunk or max(CHUNK_TEXTS, batch_tokens // 16)  # small chunks: the device starts early
    waiting: list[tuple[Pending, WordBatch]] = []
    chunks = _chunks(model, texts, chosen, chunk, limit)
    try:
        for encoded in chunks:
            if over is not None:
                over.extend(encoded.over)
            for a, b in _cuts(encoded.token_starts, batch_tokens):
                device, columns = _batch(encoded, a, b)
                waiting.append((step(device), columns))
                if len(waiting) >= depth:
                    pending, ready = waiting.pop(0)
                    ready.vectors = pending.rows()
                    yield ready
    finally:  # an error or an early stop ends the encoding and layout threads now, not when the chunks are collected
        chunks.close()
    for pending, ready in waiting:
        ready.vectors = pending.rows()
        yield ready
