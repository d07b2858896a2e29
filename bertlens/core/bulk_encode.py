"""Many texts encoded exactly as the tokenizer encodes them, in less time: for a corpus on its way to a GPU.

`tokenizers.Tokenizer.encode_batch` spends much of its time on work whose result is known in advance for most texts.
Each shortcut below is taken only where that step of the tokenizer is of a kind known to allow it (read from its
tokenizer.json), so that the output is the tokenizer's for every tokenizer:

* The post-processor puts the same special tokens around every text (`[CLS] ... [SEP]` for BERT). A copy of the
  tokenizer without it encodes the texts bare, and `lay_out` adds the frame in numpy, on the flat arrays (checked on
  probe texts when the encoder is made).
* On a printable-ASCII text the normalizers accepted here (BERT's, NFC, NFD, NFKC, NFKD, stripping accents,
  lowercasing, and sequences of them) at most lowercase, one character for one: Python's `str.lower` gives the same
  string with the same character offsets, and a copy without the normalizer (and without added tokens) encodes it.
  Every other text (a tab, an accent, a CJK character, or an added token such as `[MASK]` written in it, in any
  case) goes through the normalizer as usual.
* Where that copy is BERT's pre-tokenizer and WordPiece, a printable-ASCII text is encoded for its ids alone
  (`encode_batch_fast`, which tracks no offsets): a word begins at every piece that does not continue one (`##s`),
  and BERT's pre-tokenizer finds the words' characters in numpy, since on printable ASCII a space parts words, a run
  of letters and digits is one word, and every other character is a word of its own.

tests/core/test_bulk_encode.py holds the result to `encode_batch`'s on a corpus sample and on odd texts, for
tokenizers that take each shortcut and for tokenizers that rule each one out.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

# Normalizers that, on printable ASCII, change nothing or lowercase
_ASCII_SAFE = {"NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Lowercase", "BertNormalizer"}
_FRAMES = {"TemplateProcessing", "BertProcessing"}  # post-processors that only put special tokens around a text
_MOST_ADDED = 100  # more added tokens than this: every text goes through the normalizer (each is looked for in it)
_PROBES = ("a", "hello world", " The  bank's rates, 1.5% (ok)! ", "café naïve 東京", "")
_ALNUM = np.zeros(256, dtype=bool)  # BERT's pre-tokenizer on printable ASCII: a space parts words, a run of letters
_ALNUM[list(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")] = True  # and digits is one, and every
# other character (punctuation, to it) is a word of its own


@dataclass(frozen=True)
class Encoded:
    """Texts encoded without their special tokens, in the texts' order (`BulkEncoder.encode`)."""

    encodings: list[Encoding]
    texts: list[str]  # the texts, as given
    from_text: np.ndarray  # (texts,) bool: encoded for ids alone; words and offsets are read off the text

    def __len__(self) -> int:
        return len(self.encodings)

    def take(self, order: list[int]) -> Encoded:
        """The texts at `order`, in that order."""
        return Encoded([self.encodings[i] for i in order], [self.texts[i] for i in order], self.from_text[order])


@dataclass(frozen=True)
class LaidOut:
    """Encoded texts end to end, with the tokenizer's special tokens around each, and where their words lie."""

    token_starts: np.ndarray  # (texts + 1,) int64: each text's first token, then the total
    ids: np.ndarray  # (tokens,) int64
    pieces: np.ndarray  # (pieces,) the token index of every piece of every word, word after word
    word_of_piece: np.ndarray  # (pieces,) which word each piece belongs to
    first: np.ndarray  # (words,) each word's first token
    last: np.ndarray  # (words,) each word's last token
    starts: np.ndarray  # (words,) the character where each word begins in its text
    ends: np.ndarray  # (words,) and where it ends


@dataclass(frozen=True)
class BulkEncoder:
    """Encodes texts as `tokenizer.encode_batch` does (no padding, no truncation): `encode`, then `lay_out`."""

    tokenizer: Tokenizer  # the tokenizer itself
    bare: Tokenizer  # the same without its post-processor, when that only frames a text (else the tokenizer)
    raw: Tokenizer | None  # the bare one without its normalizer, for printable-ASCII texts (None: not safe here)
    lowercase: bool  # what the normalizer does to printable ASCII
    added: tuple[str, ...]  # every added token's content, lowercased: a text holding one is normalized as usual
    prefix: tuple[int, ...]  # the ids put before every text, e.g. (101,) for BERT
    suffix: tuple[int, ...]  # the ids put after it, e.g. (102,)
    vocabulary: tuple[str, ...]  # every id's token
    continues: np.ndarray | None  # (ids,) bool: a WordPiece token that continues a word ("##s"), where the raw
    # tokenizer is BERT's pre-tokenizer and WordPiece, so that a printable-ASCII text's words can be read off its
    # characters (None: they are read off the encodings)

    @property
    def frame_length(self) -> int:
        """The special tokens around each text."""
        return len(self.prefix) + len(self.suffix)

    def encode(self, texts: list[str]) -> Encoded:
        """Each text encoded without its special tokens (`lay_out` and `pieces` add them)."""
        none = np.zeros(len(texts), dtype=bool)
        if self.raw is None:
            return Encoded(self.bare.encode_batch(texts), texts, none)
        lowered = [text.lower() for text in texts]
        plain = np.fromiter((t.isascii() and t.isprintable() for t in texts), dtype=bool, count=len(texts))
        if self.added:  # a text that holds an added token, in any case, is normalized as usual
            joined = "\n".join(lowered)  # a match within a printable text lies in that text: it has no newline
            ends = np.cumsum(np.fromiter(map(len, lowered), dtype=np.int64, count=len(texts)) + 1)  # (texts,)
            for token in self.added:
                at = joined.find(token)
                while at != -1:
                    plain[np.searchsorted(ends, at, side="right")] = False
                    at = joined.find(token, at + 1)
        source = lowered if self.lowercase else texts
        run = self.raw.encode_batch if self.continues is None else self.raw.encode_batch_fast  # ids alone
        from_text = plain if self.continues is not None else none
        if plain.all():
            return Encoded(run(source), texts, from_text)
        fast, slow = np.flatnonzero(plain).tolist(), np.flatnonzero(~plain).tolist()
        encodings: list[Any] = [None] * len(texts)
        for i, encoding in zip(fast, run([source[i] for i in fast]), strict=True):
            encodings[i] = encoding
        for i, encoding in zip(slow, self.bare.encode_batch([texts[i] for i in slow]), strict=True):
            encodings[i] = encoding
        return Encoded(encodings, texts, from_text)

    def lengths(self, encoded: Encoded) -> np.ndarray:
        """(texts,) each text's tokens, the special ones included."""
        count = len(encoded)
        return np.fromiter(map(len, encoded.encodings), dtype=np.int64, count=count) + self.frame_length

    def pieces(self, encoded: Encoded, row: int) -> tuple[str, ...]:
        """The tokens of text `row` as strings, the special ones included."""
        ids = encoded.encodings[row].ids
        inner = [self.vocabulary[i] for i in ids] if encoded.from_text[row] else encoded.encodings[row].tokens
        return (*(self.vocabulary[i] for i in self.prefix), *inner, *(self.vocabulary[i] for i in self.suffix))

    def lay_out(self, encoded: Encoded) -> LaidOut:
        """The encoded texts end to end, framed, and their words: as the tokenizer's own encodings would give them,
        without a Python loop per token beyond reading the encodings."""
        every = itertools.chain.from_iterable
        encodings, from_text = encoded.encodings, encoded.from_text
        lengths = self.lengths(encoded) - self.frame_length  # (texts,) without the frame
        inner = int(lengths.sum())
        ids = np.fromiter(every([e.ids for e in encodings]), dtype=np.int64, count=inner)  # (tokens,) unframed
        token_starts = np.concatenate([[0], np.cumsum(lengths + self.frame_length)])
        inner_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)  # (texts,)
        text_of = np.repeat(np.arange(len(encodings)), lengths)  # (tokens,) each token's text
        at = np.arange(inner) + (token_starts[:-1] + len(self.prefix) - inner_starts)[text_of]  # (tokens,) framed
        framed = np.empty(int(token_starts[-1]), dtype=np.int64)
        framed[at] = ids
        for k, special in enumerate(self.prefix):
            framed[token_starts[:-1] + k] = special
        for k, special in enumerate(self.suffix):
            framed[token_starts[1:] - len(self.suffix) + k] = special
        in_word = np.ones(inner, dtype=bool)  # (tokens,) a token that is a piece of a word
        begins = np.zeros(inner, dtype=bool)  # (tokens,) a piece that begins a word
        begins[inner_starts[lengths > 0]] = True
        read = ~from_text[text_of]  # (tokens,) tokens whose words and offsets the encoding has
        offsets = np.zeros((inner, 2), dtype=np.int64)
        if read.any():
            kept = [encodings[i] for i in np.flatnonzero(~from_text).tolist()]
            words = [e.word_ids for e in kept]
            count = int(read.sum())
            try:  # a bare encoding has a word for every token
                word_ids = np.fromiter(every(words), dtype=np.int64, count=count)
            except TypeError:  # None where a token belongs to no word (a post-processor's own tokens)
                word_ids = np.array([-1 if w is None else w for w in every(words)], dtype=np.int64)
            in_word[read] = word_ids >= 0
            begins[read] |= np.concatenate([[True], word_ids[1:] != word_ids[:-1]])  # a new word index
            offsets[read] = np.fromiter(every(every(e.offsets for e in kept)), np.int64, 2 * count).reshape(-1, 2)
        if not read.all():
            assert self.continues is not None
            begins[~read] |= ~self.continues[ids[~read]]
        begins &= in_word
        pieces = np.flatnonzero(in_word)  # (pieces,) unframed
        starting = begins[pieces]
        ending = np.ones(len(pieces), dtype=bool)
        ending[:-1] = starting[1:]
        first, last = pieces[starting], pieces[ending]  # (words,) unframed
        starts, stops = offsets[first, 0], offsets[last, 1]
        if not read.all():
            chosen = from_text[text_of[first]]  # (words,) words read off the text
            rank = np.cumsum(from_text) - 1  # (texts,) each text's place among those
            text_of_span, span_starts, span_ends = _ascii_words([encoded.texts[i] for i in np.flatnonzero(from_text)])
            if not np.array_equal(text_of_span, rank[text_of[first[chosen]]]):  # not BERT's words: read them
                return self.lay_out(self._read(encoded))
            starts[chosen], stops[chosen] = span_starts, span_ends
        return LaidOut(token_starts, framed, at[pieces], np.cumsum(starting) - 1, at[first], at[last], starts, stops)

    def _read(self, encoded: Encoded) -> Encoded:
        """The texts encoded from the text again, each word read off its encoding."""
        again = [i for i, f in enumerate(encoded.from_text.tolist()) if f]
        assert self.raw is not None
        encodings = list(encoded.encodings)
        texts = [encoded.texts[i].lower() if self.lowercase else encoded.texts[i] for i in again]
        for i, encoding in zip(again, self.raw.encode_batch(texts), strict=True):
            encodings[i] = encoding
        return Encoded(encodings, encoded.texts, np.zeros(len(encodings), dtype=bool))


def _ascii_words(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where BERT's pre-tokenizer finds the words of printable-ASCII texts, one after another: each word's text,
    and its first character and the one after its last (words,) in that text. Lowercasing moves no word."""
    joined = " ".join(texts).encode("ascii")  # one space between texts parts their words
    chars = np.frombuffer(joined, dtype=np.uint8)  # (characters,)
    letters = _ALNUM[chars]
    space = chars == 32
    after_letter = np.zeros(len(chars), dtype=bool)
    after_letter[1:] = letters[:-1]
    before_letter = np.zeros(len(chars), dtype=bool)
    before_letter[:-1] = letters[1:]
    starts = np.flatnonzero(~space & ~(letters & after_letter))  # (words,)
    ends = np.flatnonzero(~space & ~(letters & before_letter)) + 1
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    text_starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])  # (texts,) each text's first character
    text_of = np.searchsorted(text_starts, starts, side="right") - 1  # (words,)
    base = text_starts[text_of]
    return text_of, starts - base, ends - base


def bulk_encoder(tokenizer: Tokenizer) -> BulkEncoder:
    """The fastest encoder of `tokenizer`'s that gives its own output: each shortcut taken only where its step is of
    a kind known to allow it, and checked on probe texts."""
    from tokenizers import Tokenizer

    spec = json.loads(tokenizer.to_str())
    bare = tokenizer
    prefix: list[int] = []
    suffix: list[int] = []
    post = spec.get("post_processor")
    if post is not None and post.get("type") in _FRAMES:
        bare = Tokenizer.from_str(json.dumps(spec | {"post_processor": None}))
        framed = _frame(tokenizer, bare)
        if framed is None:
            bare = tokenizer
        else:
            prefix, suffix = framed
            spec["post_processor"] = None
    raw: Tokenizer | None = None
    lowercase = _lowercases(spec.get("normalizer"))
    added = tuple(sorted({t.content.lower() for t in tokenizer.get_added_tokens_decoder().values() if t.content}))
    if lowercase is not None and len(added) <= _MOST_ADDED:  # no text it encodes holds an added token
        raw = Tokenizer.from_str(json.dumps(spec | {"normalizer": None, "added_tokens": []}))
    ids = tokenizer.get_vocab(with_added_tokens=True)
    vocabulary = [""] * (max(ids.values(), default=-1) + 1)
    for token, i in ids.items():
        vocabulary[i] = token
    model = spec.get("model") or {}
    mark = model.get("continuing_subword_prefix") if model.get("type") == "WordPiece" else None
    continues = None
    fast = hasattr(raw, "encode_batch_fast")  # tokenizers 0.21 and later
    if raw is not None and fast and mark and spec.get("pre_tokenizer") == {"type": "BertPreTokenizer"}:
        continues = np.fromiter((t.startswith(mark) for t in vocabulary), dtype=bool, count=len(vocabulary))
    return BulkEncoder(
        tokenizer=tokenizer,
        bare=bare,
        raw=raw,
        lowercase=bool(lowercase),
        added=added,
        prefix=tuple(prefix),
        suffix=tuple(suffix),
        vocabulary=tuple(vocabulary),
        continues=continues,
    )


def _lowercases(normalizer: dict[str, Any] | None) -> bool | None:
    """Whether `normalizer` (tokenizer.json's) lowercases printable ASCII; None where it may do anything else."""
    if normalizer is None:
        return False
    kind = normalizer.get("type")
    if kind == "Sequence":
        steps = [_lowercases(step) for step in normalizer.get("normalizers", [])]
        return None if None in steps else any(steps)
    if kind not in _ASCII_SAFE:
        return None
    return kind == "Lowercase" or bool(kind == "BertNormalizer" and normalizer.get("lowercase"))


def _frame(tokenizer: Tokenizer, bare: Tokenizer) -> tuple[list[int], list[int]] | None:
    """The special ids the post-processor puts before and after a text, or None where on some probe text it does
    more than that (or puts a special token's offsets anywhere but (0, 0))."""
    whole, inner = tokenizer.encode(_PROBES[0]), bare.encode(_PROBES[0])
    starts = [s for s in range(len(whole) - len(inner) + 1) if whole.ids[s : s + len(inner)] == inner.ids]
    if not inner.ids or not starts:
        return None
    prefix, suffix = whole.ids[: starts[0]], whole.ids[starts[0] + len(inner) :]
    for text in _PROBES:
        whole, inner = tokenizer.encode(text), bare.encode(text)
        before, after = [None] * len(prefix), [None] * len(suffix)
        if (
            whole.ids != prefix + inner.ids + suffix
            or whole.word_ids != before + inner.word_ids + after
            or whole.offsets != [(0, 0)] * len(prefix) + inner.offsets + [(0, 0)] * len(suffix)
        ):
            return None
    return prefix, suffix
