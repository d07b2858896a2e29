"""Token classes of a vocabulary: which rows are continuation pieces, special tokens, unused rows, numbers or
punctuation, and `TokenFilter`, which of them a search or an export may return. No torch, no model: the tokens alone.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

_UNUSED = re.compile(r"^(\[unused\d+\]|<unused\d+>|\[UNUSED_\d+\]|madeupword\d+)$")


@dataclass(frozen=True)
class TokenFilter:
    """Which vocabulary rows may be returned. Defaults keep whole words, pieces, numbers and punctuation.

    >>> whole_words = TokenFilter.words_only()  # no pieces, specials, unused rows, numbers or punctuation
    >>> [n.token for n in neighbors(load_model(), "run", 3, filters=whole_words).neighbors]
    ['runs', 'running', 'ran']
    """

    continuation: bool = True  # keep '##' continuation pieces (WordPiece) / tokens without a word-start marker
    special: bool = False  # keep special tokens such as [CLS], [SEP], [PAD]
    unused: bool = False  # keep [unused…] rows and rows with no token
    numbers: bool = True  # keep tokens made of digits (1990, ##5, 3.5)
    punctuation: bool = True  # keep tokens made only of punctuation or symbols

    @classmethod
    def words_only(cls) -> TokenFilter:
        """Whole-word tokens only: no pieces, specials, unused rows, numbers or punctuation."""
        return cls(continuation=False, special=False, unused=False, numbers=False, punctuation=False)

    @classmethod
    def from_flags(
        cls,
        *,
        words_only: bool = False,
        no_pieces: bool = False,
        no_numbers: bool = False,
        no_punctuation: bool = False,
        specials: bool = False,
        unused: bool = False,
    ) -> TokenFilter:
        """The filter that `bertlens neighbors`' options (and the web API's fields of the same names) describe.

        `words_only` starts from `words_only()`, otherwise from the defaults; the `no_*` flags drop more classes;
        `specials` and `unused` keep those rows (even with `words_only`).
        """
        keep = cls.words_only() if words_only else cls()
        return cls(
            continuation=keep.continuation and not no_pieces,
            special=specials,
            unused=unused,
            numbers=keep.numbers and not no_numbers,
            punctuation=keep.punctuation and not no_punctuation,
        )

    def keep(self, classes: dict[str, np.ndarray]) -> np.ndarray:
        """(rows,) bool: which rows this filter lets through, given the rows' classes (`token_classes`)."""
        rows = len(next(iter(classes.values())))
        keep = np.ones(rows, dtype=bool)
        for name in ("continuation", "special", "unused", "numbers", "punctuation"):
            if not getattr(self, name):
                keep &= ~classes[name]
        return keep


def token_classes(tokens: list[str | None], special_ids: frozenset[int]) -> dict[str, np.ndarray]:
    """(rows,) bool arrays: continuation, special, unused, numbers, punctuation."""
    rows = len(tokens)
    classes = {
        name: np.zeros(rows, dtype=bool) for name in ("continuation", "special", "unused", "numbers", "punctuation")
    }
    word_start = any(t is not None and t.startswith(("▁", "Ġ")) for t in tokens)  # SentencePiece / byte-level BPE
    for i, token in enumerate(tokens):
        if token is None or _UNUSED.match(token):
            classes["unused"][i] = True
            continue
        if i in special_ids:
            classes["special"][i] = True
            continue
        body = token
        if token.startswith("##"):
            classes["continuation"][i] = True
            body = token[2:]
        elif word_start:
            if token.startswith(("▁", "Ġ")):
                body = token[1:]
            else:
                classes["continuation"][i] = True
        if body and all(c.isdigit() or c in ".,:/-" for c in body) and any(c.isdigit() for c in body):
            classes["numbers"][i] = True
        elif body and all(unicodedata.category(c)[0] in "PS" for c in body):
            classes["punctuation"][i] = True
    return classes
