"""Text to tokens: pieces, ids, character offsets, words, segments, special tokens. Never padded or truncated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from . import notebook
from .errors import InputError
from .model import Model
from .records import Records
from .results import Result, box, data_frame, table, table_html, visible

if TYPE_CHECKING:
    from tokenizers import Encoding


@dataclass(frozen=True)
class Token:
    """One token. `start`/`end` are character offsets into its own sequence (`text` or `pair`).

    >>> token = tokenize(load_model(), "I am Sinan").tokens[4]
    >>> token.piece, token.id, token.start, token.end, token.word
    ('##an', 2319, 8, 10, 2)
    """

    index: int
    piece: str
    id: int
    start: int
    end: int
    word: int | None  # index of the word within its sequence; None for special tokens
    sequence: int | None  # 0 for the text, 1 for the pair, None for special tokens
    segment: int  # the token-type id the model receives
    special: bool


class Tokens(Records[Token]):
    """A text's tokens, kept as columns (one list per field of `Token`); each `Token` is made when read."""

    def __init__(
        self,
        pieces: list[str],
        ids: list[int],
        starts: list[int],
        ends: list[int],
        words: list[int | None],
        sequences: list[int | None],
        segments: list[int],
        special: list[bool],
    ) -> None:
        super().__init__(len(pieces))
        self.pieces, self.ids, self.starts, self.ends = pieces, ids, starts, ends
        self.words, self.sequences, self.segments, self.special = words, sequences, segments, special

    def record(self, index: int) -> Token:
        return Token(
            index,
            self.pieces[index],
            self.ids[index],
            self.starts[index],
            self.ends[index],
            self.words[index],
            self.sequences[index],
            self.segments[index],
            self.special[index],
        )


@dataclass(frozen=True)
class Tokenization(Result):
    """The tokens of a text (or text pair) exactly as the model receives them.

    >>> t = tokenize(load_model(), "I am Sinan")
    >>> t.ids, t.exceeds_max_length
    ([101, 1045, 2572, 8254, 2319, 102], False)
    """

    model: str
    text: str
    pair: str | None
    tokens: Sequence[Token]  # a `Tokens`: reads like a tuple of `Token`
    max_length: int | None  # the most tokens the model can take
    exceeds_max_length: bool  # reported, never cut

    @property
    def ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    @property
    def pieces(self) -> list[str]:
        return [t.piece for t in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Tokenization({len(self.tokens)} tokens: {' '.join(self.pieces[:12])}{' …' if len(self) > 12 else ''})"

    def to_table(self) -> str:
        rows = [
            (t.index, visible(t.piece), t.id, f"{t.start}:{t.end}", t.word, t.sequence, t.segment, t.special)
            for t in self.tokens
        ]
        body = table(["#", "piece", "id", "chars", "word", "sequence", "segment", "special"], rows)
        note = f"{len(self.tokens)} tokens; the model takes at most {self.max_length}."
        if self.exceeds_max_length:
            note += " TOO LONG: the model cannot take this input whole (nothing was cut here)."
        return f"{body}\n{note}"

    def _repr_html_(self) -> str:
        """In a notebook: the pieces as chips (id below, coloured by segment, special tokens dashed), the text with
        each piece's characters shaded, and the whole table folded below."""
        said = notebook.spans(self.text, self.tokens, 0)
        if self.pair is not None:
            said += notebook.spans(self.pair, self.tokens, 1)
        note = f"{len(self.tokens)} tokens; the model takes at most {self.max_length}."
        if self.exceeds_max_length:
            note += ' <span class="bl-warn">TOO LONG: the model cannot take this input whole (nothing was cut).</span>'
        body = (
            f"{notebook.chips(self.tokens)}{notebook.legend([t.segment for t in self.tokens])}{said}<div>{note}</div>"
            f"<details><summary>every token: ids, offsets, words, segments</summary>{table_html(self)}</details>"
        )
        return box("Tokenization", body, notebook.STYLE)

    def to_pandas(self) -> Any:
        """One row per token (indexed by its position): piece, id, start, end, word, sequence, segment, special."""
        columns = [f.name for f in fields(Token)]
        frame = data_frame(columns, [[getattr(t, c) for c in columns] for t in self.tokens])
        frame = frame.astype({"word": "Int64", "sequence": "Int64"})  # None for special tokens: <NA>, not floats
        return frame.set_index("index")


def check_text(text: Any, what: str = "text") -> str:
    if not isinstance(text, str):
        raise InputError(f"The {what} must be a string, got {type(text).__name__}.", "Pass text as str.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from undecodable bytes
        raise InputError(
            f"The {what} holds characters that are not valid Unicode (at position {exc.start}).",
            "Decode the input as UTF-8 before passing it.",
        ) from None
    return text


def max_length(model: Model) -> int | None:
    """The most tokens one input can have: the positions the model has, and the tokenizer's stated limit."""
    limits = [n for n in (position_capacity(model), model.vocabulary.model_max_length) if n is not None]
    return min(limits) if limits else None


def position_capacity(model: Model) -> int | None:
    """How many positions the position table can index (RoBERTa-style tables lose padding_idx + 1 rows)."""
    rows = model.config.max_position_embeddings
    if rows is None or not model.config.uses_absolute_positions:
        return None
    if model.family.position_scheme == "absolute-offset":
        return rows - (model.config.pad_token_id or 0) - 1
    return rows


def pair_of(pair: str | None) -> str | None:
    """The second text as the model takes it: an empty one is no pair (as transformers' tokenizers treat an empty
    `text_pair`); any other, whitespace only included, is a pair."""
    return None if pair == "" else pair


def encode(model: Model, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Encoding:
    """The raw `tokenizers.Encoding` (no padding, no truncation); an empty `pair` is no pair (`pair_of`)."""
    check_text(text)
    if pair is not None:
        check_text(pair, "pair")
    return model.vocabulary.tokenizer.encode(text, pair_of(pair), add_special_tokens=add_special_tokens)


def tokenize(model: Model, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Tokenization:
    """Tokenize `text` (and `pair`) as the model would receive it, reporting inputs that exceed the model's length.

    >>> t = tokenize(load_model(), "I am Sinan", "and you?")
    >>> [token.segment for token in t.tokens]
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    """
    encoding = encode(model, text, pair, add_special_tokens=add_special_tokens)
    return tokenization_of(model, encoding, text, pair_of(pair))


def tokenization_of(model: Model, encoding: Any, text: str, pair: str | None = None) -> Tokenization:
    """The Tokenization of `text` (and `pair`) from its `tokenizers.Encoding` (no padding, no truncation), e.g. one
    of `encode_batch`'s."""
    special_ids = model.vocabulary.special_ids
    ids, sequences = encoding.ids, encoding.sequence_ids
    offsets = encoding.offsets
    tokens = Tokens(
        pieces=encoding.tokens,
        ids=ids,
        starts=[start for start, _ in offsets],
        ends=[end for _, end in offsets],
        words=encoding.word_ids,
        sequences=sequences,
        segments=encoding.type_ids,
        special=[
            bool(mask) or (token_id in special_ids and sequence is None)
            for token_id, sequence, mask in zip(ids, sequences, encoding.special_tokens_mask, strict=True)
        ],
    )
    limit = max_length(model)
    return Tokenization(
        model=model.source.description,
        text=text,
        pair=pair,
        tokens=tokens,
        max_length=limit,
        exceeds_max_length=limit is not None and len(tokens) > limit,
    )


# Words. A word is what the model's tokenizer reads as one: the tokens that share one of its pre-tokenizer's word
# indices (`Token.word`; BERT's splits at spaces and at every punctuation mark, so "bread's" is three words and
# "bread-maker" three; RoBERTa's also between letters and digits). Every word look-up (context, distill, senses,
# search, the corpus index) finds words by this rule and compares them with `word_key`.


def word_key(word: str) -> str:
    """How a word is compared wherever one is looked for: as written, outer spaces dropped, case folded.

    >>> word_key(" Bread "), word_key("STRASSE") == word_key("straße")
    ('bread', True)
    """
    return word.strip().casefold()


def word_spans(encoding: Any) -> list[tuple[int, int]]:
    """The words of one text's `tokenizers.Encoding` as character spans [start, end) into the text: runs of
    neighbouring tokens with one word index and sequence; special tokens belong to none."""
    spans: list[tuple[int, int]] = []
    last: tuple[int, int | None] | None = None
    for word, sequence, (start, end) in zip(encoding.word_ids, encoding.sequence_ids, encoding.offsets, strict=True):
        if word is None:
            last = None
            continue
        if (word, sequence) == last:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
        last = (word, sequence)
    return spans


def text_words(model: Model, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """Each text's words as the model's tokenizer splits them, as character spans (`word_spans`); the texts are
    encoded together, in parallel.

    >>> text = "the bread's crust"
    >>> [text[s:e] for s, e in text_words(load_model(), [text])[0]]
    ['the', 'bread', "'", 's', 'crust']
    """
    for i, text in enumerate(texts):
        check_text(text, f"text #{i}")
    encodings = model.vocabulary.tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return [word_spans(encoding) for encoding in encodings]


def find_word(model: Model, text: str, word: str) -> list[tuple[int, int]]:
    """Where `word` occurs in `text` as a whole word (`text_words`, compared by `word_key`): its spans, in order.

    A text whose case-folded form does not hold the word's key at all is not tokenized (a cheap first test).

    >>> find_word(load_model(), "The bread's crust, a bread-maker", "BREAD")
    [(4, 9), (21, 26)]
    """
    key = word_key(word)
    if not key or key not in check_text(text).casefold():
        return []
    return [(s, e) for s, e in text_words(model, [text])[0] if word_key(text[s:e]) == key]
