"""The plan: which words are new, their tokens and ids, and their rows (computed, not written)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import NAME, BertlensError, InputError
from ..core.model import Model
from .inputs import ExtendOptions, check_extend_options, check_rows, check_words, read_rows
from .results import Extension, KnownWord, NewWord, Source
from .space import SpaceCheck, check_space
from .strategies import Mix, head_rows, mixes_for, rows_for

if TYPE_CHECKING:
    import tokenizers
    from tokenizers import AddedToken
    from tokenizers.normalizers import Normalizer


_SPACE_MARKED = {"ByteLevel", "Metaspace"}  # pre-tokenizers whose pieces carry the space before a word


def _space_marked(tokenizer: tokenizers.Tokenizer) -> bool:
    """Whether the tokenizer's pieces carry the space before a word (byte-level BPE, SentencePiece)."""
    data = json.loads(tokenizer.to_str())

    def types(node: object) -> Iterable[str]:
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                yield node["type"]
            for value in node.values():
                yield from types(value)
        elif isinstance(node, list):
            for value in node:
                yield from types(value)

    return any(t in _SPACE_MARKED for t in types([data.get("pre_tokenizer"), data.get("normalizer")]))


def _old_pieces(model: Model, words: Sequence[str], marked: bool) -> list[list[int]]:
    """How the old tokenizer splits each word, as it would inside a text (after a space for space-marked ones)."""
    tokenizer = model.vocabulary.tokenizer
    texts = [(" " + w) if marked else w for w in words]
    out = []
    for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
        ids = list(encoding.ids)
        bare = [i for i, t in zip(ids, encoding.tokens, strict=True) if t.strip("Ġ▁ ") != ""]
        out.append(bare or ids)
    return out


def _unknown_id(model: Model) -> int | None:
    for name in ("[UNK]", "<unk>", "<UNK>"):
        found = model.vocabulary.token_to_id(name)
        if found is not None:
            return found
    return None


def plan_extension(
    model: Model,
    words: Iterable[str],
    options: ExtendOptions = ExtendOptions(),  # noqa: B008 - frozen dataclass
    *,
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> Extension:
    """Compute the new tokens and their rows (nothing is written). `rows` is needed for the `rows` strategy.

    >>> plan = plan_extension(load_model(), ["aspirinex"], ExtendOptions(strategy="pieces"))
    >>> [(word.token, word.id, word.pieces) for word in plan.added]
    [('aspirinex', 30522, ('as', '##pi', '##rine', '##x'))]
    """
    check_extend_options(options)
    words = check_words(words)
    rows = _given_rows(options, rows)
    tokenizer = model.vocabulary.tokenizer
    marked = _space_marked(tokenizer)
    normalizer = tokenizer.normalizer
    contents = _contents(normalizer, words)
    unk = _unknown_id(model)
    new_words, known = _new_and_known(model, words, contents, _old_pieces(model, words, marked), unk)
    flags = {"lstrip": marked, "normalized": normalizer is not None}
    new_tokenizer, ids = _tokenizer_with(tokenizer, [contents[w] for w, _ in new_words], flags)
    old_rows = model.matrix_rows
    new_rows = max([old_rows, *(i + 1 for i in ids)])
    notes = _inside_notes(ids, old_rows)
    if options.strategy == "rows":
        rows = check_rows(rows or {}, [w for w, _ in new_words], model.config.embedding_size)
    matrix = model.embedding_weights.word_embeddings  # (old_rows, E)
    mixes = mixes_for(model, matrix, [p for _, p in new_words], options)
    new_matrix_rows, note = rows_for(matrix, mixes, len(new_words), options, model, rows, [w for w, _ in new_words])
    notes += note
    head = head_rows(model, new_matrix_rows, mixes, len(new_words), options)
    space = check_space(
        model, new_matrix_rows, [w for w, _ in new_words], [p for _, p in new_words], warn=options.strategy == "rows"
    )
    added = _added_words(model, new_words, ids, contents, unk, new_matrix_rows, mixes, space)
    return Extension(
        model=model.source.description,
        strategy=options.strategy,
        old_rows=old_rows,
        new_rows=new_rows,
        added=added,
        known=tuple(known),
        rows=new_matrix_rows,
        head=head,
        tokenizer=new_tokenizer,
        token_flags=flags,
        notes=tuple(notes),
        warnings=space.warnings,
    )


def _tokenizer_with(
    tokenizer: tokenizers.Tokenizer, contents: Sequence[str], flags: Mapping[str, bool]
) -> tuple[tokenizers.Tokenizer, list[int]]:
    """A copy of the tokenizer with each new token added (no padding, no truncation), and the id each one got,
    checked to be its own."""
    import tokenizers

    new_tokenizer = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    new_tokenizer.add_tokens([added_token(content, flags) for content in contents])
    given = [new_tokenizer.token_to_id(content) for content in contents]
    ids = [i for i in given if i is not None]
    if len(ids) != len(given) or len(set(ids)) != len(ids):
        raise BertlensError("The tokenizer did not give each new word its own id.", "Please report this.")
    new_tokenizer.no_padding()
    new_tokenizer.no_truncation()
    return new_tokenizer, ids


def _inside_notes(ids: Sequence[int], old_rows: int) -> list[str]:
    """A note when new ids fall inside the matrix (a tokenizer with fewer tokens than the matrix has rows)."""
    inside = [i for i in ids if i < old_rows]
    if not inside:
        return []
    return [
        f"The tokenizer had fewer tokens than the matrix has rows: {len(inside)} new word(s) take rows "
        f"{min(inside)}–{max(inside)}, which no token used before."
    ]


def _added_words(
    model: Model,
    new_words: Sequence[tuple[str, list[int]]],
    ids: Sequence[int],
    contents: Mapping[str, str],
    unk: int | None,
    rows: np.ndarray,
    mixes: list[Mix] | None,
    space: SpaceCheck,
) -> tuple[NewWord, ...]:
    """Each new word's record: its token and id, its old pieces, its row's norm, the rows it was mixed from, and how
    its row sits among the old ones."""

    def name(i: int) -> str:
        return model.vocabulary.id_to_token(i) or f"[row_{i}]"

    return tuple(
        NewWord(
            word=word,
            token=contents[word],
            id=int(token_id),
            pieces=tuple(name(i) for i in piece_ids),
            piece_ids=tuple(int(i) for i in piece_ids),
            unknown=unk is not None and unk in piece_ids,
            norm=float(np.linalg.norm(rows[n].astype(np.float64))),
            sources=()
            if mixes is None
            else tuple(Source(name(i), int(i), float(w)) for i, w in zip(*mixes[n], strict=True)),
            norm_percentile=space.percentiles[n],
            cosine_pieces=space.cosines[n],
        )
        for n, ((word, piece_ids), token_id) in enumerate(zip(new_words, ids, strict=True))
    )


def _given_rows(
    options: ExtendOptions, rows: Mapping[str, Any] | str | os.PathLike[str] | None
) -> Mapping[str, Any] | None:
    """The rows the `rows` strategy starts from (read from a word2vec text file when given its path), checked to come
    with that strategy and only with it."""
    if options.strategy == "rows" and rows is None:
        raise InputError(
            "The rows strategy needs a vector per word.",
            "Pass {rows} (a word2vec text file).",
            arguments={"rows": NAME},
        )
    if rows is not None and options.strategy != "rows":
        raise InputError(
            f"Rows were given, but the strategy is {options.strategy!r}.", "Use the rows strategy to start from them."
        )
    if rows is None or isinstance(rows, Mapping):
        return rows
    if not isinstance(rows, (str, os.PathLike)):
        raise InputError(
            f"rows must be a mapping of word to vector or a file's path, got {type(rows).__name__}.",
            "Pass {'word': vector, …} or the path of a word2vec text file.",
        )
    return read_rows(rows)


def _contents(normalizer: Normalizer | None, words: Sequence[str]) -> dict[str, str]:
    """Each word as the tokenizer's normaliser leaves it (its new token), checked to be one word and one token each."""
    contents: dict[str, str] = {}
    for word in words:
        content = normalizer.normalize_str(word).strip() if normalizer is not None else word
        if not content or any(c.isspace() for c in content):
            raise InputError(
                f"{word!r} becomes {content!r} under the tokenizer's normalisation: not a single word.",
                "Leave out characters the tokenizer removes or splits (e.g. CJK characters in BERT's vocabulary).",
            )
        contents[word] = content
    clash = _first_clash(words, contents)
    if clash:
        raise InputError(
            f"{clash[0]!r} and {clash[1]!r} are the same token for this tokenizer ({contents[clash[0]]!r}).",
            "The model's tokenizer normalises them alike (e.g. it lowercases): give one of them.",
        )
    return contents


def _new_and_known(
    model: Model, words: Sequence[str], contents: Mapping[str, str], pieces: Sequence[list[int]], unk: int | None
) -> tuple[list[tuple[str, list[int]]], list[KnownWord]]:
    """The words to add, with their pieces under the old vocabulary, and the words that are already one token
    (refused when every word is)."""
    tokenizer = model.vocabulary.tokenizer
    new_words, known = [], []
    for word, word_pieces in zip(words, pieces, strict=True):
        existing = tokenizer.token_to_id(contents[word])
        if existing is None and len(word_pieces) == 1 and word_pieces[0] != unk:
            existing = word_pieces[0]
        if existing is not None:
            known.append(KnownWord(word, model.vocabulary.id_to_token(existing) or contents[word], int(existing)))
        else:
            new_words.append((word, word_pieces))
    if not new_words:
        listed = ", ".join(f"{k.word!r} (id {k.id})" for k in known[:10]) + (" …" if len(known) > 10 else "")
        raise InputError(
            f"Every word is already a token of this vocabulary, so there is nothing to add: {listed}.",
            "Give words the tokenizer splits into several pieces.",
        )
    return new_words, known


def _first_clash(words: Sequence[str], contents: Mapping[str, str]) -> tuple[str, str] | None:
    first: dict[str, str] = {}
    for word in words:
        other = first.setdefault(contents[word], word)
        if other != word:
            return other, word
    return None


def added_token(content: str, flags: Mapping[str, bool]) -> AddedToken:
    """A new word's `tokenizers.AddedToken`: a single word, its `lstrip` and `normalized` flags as planned."""
    from tokenizers import AddedToken

    return AddedToken(content, single_word=True, lstrip=flags["lstrip"], rstrip=False, normalized=flags["normalized"])
