"""Word pooling: which tokens of a text make each word, and how a word's piece vectors pool into one vector.

Pure array work on tokens and vectors already computed (no model, no torch): `word_runs` groups a text's tokens into
words, `occurrences` finds the runs that spell a given word, `pool_pieces` pools one word and `pool_words` every word
of a text at once; `pooling_note` says, in words, how a word that is not one token got its vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import InputError
from ..core.options import WORD_POOLS, WordPool, check_choice
from ..core.tokens import Token, word_key

if TYPE_CHECKING:
    from .states import TokenStates


def word_runs(tokens: Sequence[Token]) -> list[list[Token]]:
    """A text's tokens grouped into words: consecutive tokens with the same word index and sequence (no specials)."""
    words: list[list[Token]] = []
    for token in tokens:
        if token.word is None:
            continue
        if words and words[-1][-1].word == token.word and words[-1][-1].sequence == token.sequence:
            words[-1].append(token)
        else:
            words.append([token])
    return words


def occurrences(states: TokenStates, word: str) -> list[list[Token]]:
    """The runs of tokens in `states` that spell `word` (compared by the text they cover: `core.tokens.word_key`)."""
    wanted = word_key(word)
    return [run for run in word_runs(states.tokens) if word_key(states.text[run[0].start : run[-1].end]) == wanted]


def occurrences_in_every(results: Sequence[TokenStates], word: str) -> list[list[list[Token]]]:
    """The runs that spell `word` in each text's states; `InputError` naming the first text without the word."""
    found = []
    for s, states in enumerate(results):
        runs = occurrences(states, word)
        if not runs:
            raise InputError(
                f"{word!r} does not occur in sentence {s}: {states.text!r}.",
                "Every sentence must contain the word as a whole word (case does not matter).",
            )
        found.append(runs)
    return found


def pool_pieces(vectors: np.ndarray, pool: WordPool) -> np.ndarray:
    """Pool a word's piece vectors (pieces, D) into one vector: (D,), or (2D,) for first+last."""
    check_choice(pool, WORD_POOLS, "pooling")
    if pool == "first":
        pooled: np.ndarray = vectors[0]
        return pooled
    if pool == "last":
        pooled = vectors[-1]
        return pooled
    if pool == "first+last":
        return np.concatenate([vectors[0], vectors[-1]])
    pooled = vectors.max(axis=0) if pool == "max" else vectors.mean(axis=0)
    return pooled


def pooling_note(word: str, pieces: Sequence[str], pool: WordPool) -> str | None:
    """How a word of several pieces got its vector, said plainly; None for a word that is one token."""
    if len(pieces) < 2:
        return None
    n = len(pieces)
    how = {
        "mean": f"the mean of its {n} pieces' vectors",
        "max": f"the element-wise max of its {n} pieces' vectors",
        "first": f"its first piece's vector (of {n} pieces)",
        "last": f"its last piece's vector (of {n} pieces)",
        "first+last": f"its first and last pieces' vectors, concatenated (of {n} pieces)",
    }[pool]
    return f"{word!r} is not a token: its vector is {how} ({' '.join(pieces)})."


def pooling_notes(words: Sequence[tuple[str, Sequence[str]]], pool: WordPool, *, most: int = 5) -> tuple[str, ...]:
    """`pooling_note` of each distinct word of several pieces (as written, with its pieces), the first `most` of them
    and then a count of the rest."""
    distinct = dict.fromkeys((word, tuple(pieces)) for word, pieces in words if len(pieces) > 1)
    notes = [note for word, pieces in list(distinct)[:most] if (note := pooling_note(word, pieces, pool))]
    if len(distinct) > most:
        notes.append(f"{len(distinct) - most} more words are not tokens: their pieces are pooled the same way.")
    return tuple(notes)


def pool_words(vectors: np.ndarray, runs: Sequence[Sequence[int]], pool: WordPool) -> np.ndarray:
    """Pool every word's pieces at once: vectors (..., tokens, H) and each word's token indices -> (..., words, D).

    D is H, or 2H for first+last. Equal to `pool_pieces` word by word, without a Python loop over the words.
    """
    check_choice(pool, WORD_POOLS, "pooling")
    if not runs:
        width = vectors.shape[-1] * (2 if pool == "first+last" else 1)
        return np.zeros((*vectors.shape[:-2], 0, width), dtype=vectors.dtype)
    first = np.array([run[0] for run in runs])
    last = np.array([run[-1] for run in runs])
    if pool == "first":
        return vectors[..., first, :]
    if pool == "last":
        return vectors[..., last, :]
    if pool == "first+last":
        return np.concatenate([vectors[..., first, :], vectors[..., last, :]], axis=-1)
    flat = np.concatenate([np.asarray(run) for run in runs])  # every word's tokens, word after word
    offsets = np.concatenate([[0], np.cumsum([len(run) for run in runs])[:-1]])
    pieces = vectors[..., flat, :]  # (..., pieces of all words, H)
    if pool == "max":
        return np.maximum.reduceat(pieces, offsets, axis=-2)
    sums = np.add.reduceat(pieces, offsets, axis=-2)  # (..., words, H)
    counts = (last - first + 1).astype(vectors.dtype)[:, None]  # runs are contiguous tokens
    pooled: np.ndarray = (sums / counts).astype(vectors.dtype, copy=False)
    return pooled
