"""Training data for masked-LM pre-training: a tokenized corpus packed into full sequences, masked on the fly.

The corpus is tokenized once into a *token stream*: every sentence's pieces, one text after another, each text
followed by [SEP]. Sequences are cut from the stream back to back, so no position is ever padding:

- masked-LM only: `[CLS] + seq_length-2 stream tokens + [SEP]`, token type 0 throughout;
- with next-sentence prediction: `[CLS] A [SEP] B [SEP]` filling seq_length exactly; A ends at a sentence start
  when the window holds one; B continues A (label 0, IsNext) or, half the time, comes from a random place in the
  stream (label 1, NotNext); A and its [SEP] have token type 0, B and the last [SEP] type 1.

Which block a sequence takes, its masks and its pairing all follow from `(seed, global sequence index)` alone, so
the data of step s is the same whether the run was interrupted or not, and whatever the number of processes that
share a step (each takes its slice of the global batch). Masking is BERT's: each non-special token is chosen with
probability `mlm_probability`; of the chosen, 80% become [MASK], 10% a random non-special token, 10% stay.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.corpus import corpus_files, corpus_path, iter_texts, sentences
from ..core.errors import InputError
from ..core.outputs import atomic_file, make_folder, replace_text

if TYPE_CHECKING:
    import torch

STREAM_VERSION = 1
_ENCODE_BATCH = 2048  # sentences per tokenizers encode_batch call


@dataclass(frozen=True)
class SpecialIds:
    """The ids masked-LM training needs from the tokenizer."""

    cls: int
    sep: int
    mask: int
    pad: int
    vocab_size: int  # rows of the embedding matrix
    special: tuple[int, ...]  # ids never chosen for prediction nor drawn as random replacements

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, vocab_size: int) -> SpecialIds:
        """From a `tokenizers.Tokenizer` with BERT's special tokens."""
        found = {name: tokenizer.token_to_id(name) for name in ("[CLS]", "[SEP]", "[MASK]", "[PAD]")}
        missing = [name for name, value in found.items() if value is None]
        if missing:
            raise InputError(
                f"The tokenizer has no {' '.join(missing)} token, which masked-LM training needs.",
                "Train a tokenizer with `bertlens train-tokenizer` (it adds [PAD] [UNK] [CLS] [SEP] [MASK]).",
            )
        special = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special} | set(found.values())
        return cls(found["[CLS]"], found["[SEP]"], found["[MASK]"], found["[PAD]"], vocab_size, tuple(sorted(special)))


def continuation_pieces(tokenizer: Any, vocab_size: int, prefix: str = "##") -> np.ndarray:
    """(vocab_size,) bool: True for the pieces that continue a word (WordPiece's `##` pieces)."""
    table = np.zeros(vocab_size, dtype=bool)
    for token, token_id in tokenizer.get_vocab(with_added_tokens=True).items():
        if token.startswith(prefix) and len(token) > len(prefix) and 0 <= token_id < vocab_size:
            table[token_id] = True
    return table


@dataclass(frozen=True)
class TokenStream:
    """A tokenized corpus: (tokens,) ids with [SEP] after every text, and where sentences start."""

    ids: np.ndarray  # (tokens,) uint16 or int32
    sentence_starts: np.ndarray  # (sentences,) int64 positions in `ids`, ascending
    texts: int

    def __len__(self) -> int:
        return len(self.ids)


def _fingerprint(corpus: Path, tokenizer: Any, limit: int | None) -> str:
    digest = hashlib.sha256(f"stream v{STREAM_VERSION} {limit}".encode())
    for file in corpus_files(corpus):
        stat = file.stat()
        digest.update(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    digest.update(tokenizer.to_str().encode())
    return digest.hexdigest()[:24]


def _sentence_batches(corpus: Path, max_texts: int | None) -> Iterator[tuple[list[str], list[bool]]]:
    """Sentences in batches, with a flag on the last sentence of each text."""
    batch: list[str] = []
    ends: list[bool] = []
    for count, text in enumerate(iter_texts(corpus)):
        if max_texts is not None and count >= max_texts:
            break
        parts = sentences(text.text) or [text.text]
        batch += parts
        ends += [False] * (len(parts) - 1) + [True]
        if len(batch) >= _ENCODE_BATCH:
            yield batch, ends
            batch, ends = [], []
    if batch:
        yield batch, ends


def tokenize_corpus(tokenizer: Any, corpus: str | os.PathLike[str], *, max_texts: int | None = None) -> TokenStream:
    """Tokenize every sentence of `corpus` (no special tokens) into one stream, [SEP] after each text."""
    sep = tokenizer.token_to_id("[SEP]")
    pieces: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    position = 0
    texts = 0
    for batch, ends in _sentence_batches(corpus_path(corpus), max_texts):
        encodings = tokenizer.encode_batch(batch, add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        flat: list[int] = []
        for encoding, end in zip(encodings, ends, strict=True):
            flat.extend(encoding.ids)
            if end:
                flat.append(sep)
        sizes = lengths + np.asarray(ends, dtype=np.int64)  # (sentences,) tokens each adds, its [SEP] included
        starts.append(position + np.concatenate([[0], np.cumsum(sizes)[:-1]]))
        pieces.append(np.asarray(flat, dtype=np.int32))
        position += int(sizes.sum())
        texts += int(sum(ends))
    ids = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    if tokenizer.get_vocab_size(with_added_tokens=True) <= 65535:
        ids = ids.astype(np.uint16)
    sentence_starts = np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)
    return TokenStream(ids, sentence_starts, texts)


def cached_stream(
    tokenizer: Any, corpus: str | os.PathLike[str], folder: Path, *, max_texts: int | None = None
) -> TokenStream:
    """`tokenize_corpus`, kept in `folder` as .npy files keyed by the corpus files and the tokenizer (memory-mapped)."""
    path = corpus_path(corpus)
    key = _fingerprint(path, tokenizer, max_texts)
    ids_file, starts_file, about = folder / f"{key}.ids.npy", folder / f"{key}.starts.npy", folder / f"{key}.json"
    if ids_file.exists() and starts_file.exists() and about.exists():
        texts = int(json.loads(about.read_text(encoding="utf-8"))["texts"])
        return TokenStream(np.load(ids_file, mmap_mode="r"), np.load(starts_file), texts)
    stream = tokenize_corpus(tokenizer, path, max_texts=max_texts)
    make_folder(folder)
    for file, array in ((ids_file, stream.ids), (starts_file, stream.sentence_starts)):
        with atomic_file(file) as handle:
            np.save(handle, array)
    facts = {"corpus": str(path), "texts": stream.texts, "tokens": len(stream), "max_texts": max_texts}
    replace_text(about, json.dumps(facts) + "\n")
    return stream


@dataclass
class Batch:
    """One step's sequences for one process. Shapes: B sequences of L tokens; n chosen positions."""

    input_ids: torch.Tensor  # (B, L) int64, masks applied
    token_type_ids: torch.Tensor | None  # (B, L) int64, or None without next-sentence pairs
    positions: torch.Tensor  # (n,) int64 flat indices into B*L of the tokens to predict
    labels: torch.Tensor  # (n,) int64 original ids at those positions
    next_sentence: torch.Tensor | None  # (B,) int64 0 IsNext / 1 NotNext, or None
    tokens: int  # B*L: real text tokens fed (no padding exists)


@dataclass
class PackedData:
    """Sequences cut from a token stream: `sequence(i)` and `batch(first, count)` for global sequence indices."""

    stream: TokenStream
    special: SpecialIds
    seq_length: int  # L
    next_sentence: bool
    seed: int
    mlm_probability: float = 0.15
    mask_ratio: float = 0.8
    random_ratio: float = 0.1
    shuffle: bool = True  # False for validation: blocks in corpus order
    continuation: np.ndarray | None = None  # (vocab,) bool: a piece that continues a word (##…); set: whole words

    def __post_init__(self) -> None:
        self.content = self.seq_length - (3 if self.next_sentence else 2)  # stream tokens per sequence
        self.blocks = len(self.stream) // self.content
        if self.blocks < 1:
            raise InputError(
                f"The corpus has {len(self.stream)} tokens, fewer than one sequence of {self.seq_length} needs.",
                "Give more text or a shorter seq_length.",
            )
        self._order: tuple[int, np.ndarray] | None = None
        self._special_table = np.zeros(max(self.special.vocab_size, int(np.max(self.special.special)) + 1), bool)
        self._special_table[list(self.special.special)] = True
        self._normal = np.flatnonzero(~self._special_table[: self.special.vocab_size])  # random replacements
        self._starts = np.asarray(self.stream.sentence_starts)

    def block(self, index: int) -> int:
        """The stream block that global sequence `index` reads: a fresh permutation every epoch."""
        epoch, within = divmod(index, self.blocks)
        if not self.shuffle:
            return within
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.seed, 7, epoch]).permutation(self.blocks))
        return int(self._order[1][within])

    def sequence(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Global sequence `index`: masked ids (L,), token types (L,), labels (L,) with -1 where none, NSP label."""
        rng = np.random.default_rng([self.seed, 11, index])
        start = self.block(index) * self.content
        ids = np.asarray(self.stream.ids[start : start + self.content], dtype=np.int64)
        s = self.special
        nsp = -1
        if self.next_sentence:
            ids, types, nsp = self._pair(ids, start, rng)
        else:
            ids = np.concatenate([[s.cls], ids, [s.sep]])
            types = np.zeros(self.seq_length, dtype=np.int64)
        masked, labels = self._mask(ids, rng)
        return masked, types, labels, nsp

    def _pair(self, window: np.ndarray, start: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
        s, n = self.special, self.content
        inside = self._starts[np.searchsorted(self._starts, start + 1) : np.searchsorted(self._starts, start + n - 1)]
        split = int(rng.choice(inside) - start) if len(inside) else int(rng.integers(1, n))  # A = window[:split]
        first = window[:split]
        if rng.random() < 0.5:
            second, label = window[split:], 0
        else:
            need = n - split
            other = int(rng.integers(0, len(self.stream) - need + 1))
            if abs(other - (start + split)) < n:  # too close to be "random": take the far side of the stream
                other = (other + len(self.stream) // 2) % (len(self.stream) - need + 1)
            second, label = np.asarray(self.stream.ids[other : other + need], dtype=np.int64), 1
        ids = np.concatenate([[s.cls], first, [s.sep], second, [s.sep]])
        types = np.zeros(self.seq_length, dtype=np.int64)
        types[split + 2 :] = 1
        return ids, types, label

    def _mask(self, ids: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        candidates = ~self._special_table[ids]
        draw = rng.random(len(ids))  # (L,)
        word = np.arange(len(ids))  # (L,) the word of each piece: itself, unless whole words are chosen
        if self.continuation is not None:  # whole words: a piece takes the draw of the piece its word starts with
            inside = self.continuation[np.minimum(ids, len(self.continuation) - 1)] & candidates  # (L,)
            inside[1:] &= candidates[:-1]  # a ## piece after a special token (a cut word) starts its own
            inside[0] = False
            word = np.cumsum(~inside) - 1
            draw = draw[np.flatnonzero(~inside)][word]
        chosen = (draw < self.mlm_probability) & candidates
        if not chosen.any() and candidates.any():  # every sequence predicts at least one token (or word)
            chosen |= (word == word[rng.choice(np.flatnonzero(candidates))]) & candidates
        labels = np.where(chosen, ids, -1)
        action = rng.random(len(ids))
        masked = ids.copy()
        to_mask = chosen & (action < self.mask_ratio)
        to_random = chosen & (action >= self.mask_ratio) & (action < self.mask_ratio + self.random_ratio)
        masked[to_mask] = self.special.mask
        masked[to_random] = self._normal[rng.integers(0, len(self._normal), int(to_random.sum()))]
        return masked, labels

    def batch(self, first: int, count: int) -> Batch:
        """Global sequences first .. first+count-1 as torch tensors."""
        import torch

        rows = [self.sequence(first + i) for i in range(count)]
        ids = np.stack([r[0] for r in rows])  # (B, L)
        labels = np.stack([r[2] for r in rows]).reshape(-1)  # (B*L,)
        positions = np.flatnonzero(labels >= 0)  # (n,)
        return Batch(
            input_ids=torch.from_numpy(ids),
            token_type_ids=torch.from_numpy(np.stack([r[1] for r in rows])) if self.next_sentence else None,
            positions=torch.from_numpy(positions),
            labels=torch.from_numpy(labels[positions]),
            next_sentence=torch.tensor([r[3] for r in rows], dtype=torch.int64) if self.next_sentence else None,
            tokens=int(ids.size),
        )
