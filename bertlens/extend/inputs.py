"""What the user gives: the options, the words and rows files, and their checks (nothing is loaded)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.checks import real_number, seed, whole_number
from ..core.errors import NAME, InputError
from ..core.options import STRATEGIES, Strategy, check_choice
from ..core.outputs import read_small_text
from ..core.tokens import check_text
from ..embeddings.token_classes import TokenFilter

MAX_WORD_CHARS = 100  # as WordPiece's max_input_chars_per_word: a longer "word" is read as [UNK]
MAX_WORDS_BYTES = 16 << 20  # a words file: one word per line
MAX_ROWS_BYTES = 1 << 30  # a rows file (word2vec text)
MIXING: frozenset[str] = frozenset({"pieces", "pieces-first", "pieces-last", "pieces-weighted", "neighbors"})


@dataclass(frozen=True)
class ExtendOptions:
    """How the new rows start.

    >>> options = ExtendOptions(strategy="neighbors", k=10, temperature=0.1, seed=0)
    """

    strategy: Strategy = "pieces"  # one of STRATEGIES
    seed: int = 0  # random and mean-resizing draws come from numpy.random.default_rng(seed)
    k: int = 10  # neighbors: how many old tokens are mixed
    temperature: float = 0.1  # neighbors: weights are softmax(cosine / temperature), as FOCUS
    filters: TokenFilter = TokenFilter()  # noqa: RUF009 - frozen; neighbors: which old tokens may be mixed (no specials, no [unused])
    cache_dir: str | None = None  # neighbors: where the similarity index is cached (default ~/.cache/bertlens)


def read_words(path: str | os.PathLike[str]) -> list[str]:
    """Words from a UTF-8 text file, one per line; blank lines are skipped, surrounding whitespace dropped."""
    text = read_small_text(path, "words file", limit=MAX_WORDS_BYTES, hint="Give a UTF-8 text file, one word a line.")
    file = Path(path).expanduser()
    words = []
    for number, line in enumerate(text.splitlines(), 1):
        word = line.strip()
        if not word:
            continue
        if any(c.isspace() for c in word):
            raise InputError(
                f"Line {number} of {file} holds more than one word: {word!r}.",
                "Put one word per line; a new token cannot contain spaces.",
            )
        words.append(word)
    return words


def read_rows(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Vectors in word2vec text format (an optional `count dims` header line, then `word v1 … vD` per line)."""
    hint = "Give a UTF-8 word2vec text file: optional 'COUNT DIMS' header, then 'word v1 v2 … vD' on each line."
    lines = read_small_text(path, "rows file", limit=MAX_ROWS_BYTES, hint=hint).splitlines()
    file = Path(path).expanduser()
    rows: dict[str, np.ndarray] = {}
    width: int | None = None
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            width = int(parts[1])
            continue
        word, values = parts[0], parts[1:]
        if width is None:
            width = len(values)
        if len(values) != width or width == 0:
            raise InputError(f"Line {number} of {file} has {len(values)} values, expected {width}.", hint)
        try:
            vector = np.array([float(v) for v in values], dtype=np.float32)
        except ValueError:
            raise InputError(f"Line {number} of {file} holds a value that is not a number.", hint) from None
        if word in rows:
            raise InputError(f"{word!r} appears twice in {file} (again on line {number}).", "Keep one row per word.")
        rows[word] = vector
    if not rows:
        raise InputError(f"{file} holds no vectors.", hint)
    return rows


def check_extend_options(options: ExtendOptions) -> None:
    """Refuse ExtendOptions with a wrong type or an out-of-range value (before anything is computed)."""
    if not isinstance(options, ExtendOptions):
        raise InputError(
            f"options must be ExtendOptions, got {type(options).__name__}.", "Pass ExtendOptions(strategy=...)."
        )
    check_choice(options.strategy, STRATEGIES, "strategy")
    whole_number(options.k, "k", minimum=1)
    real_number(options.temperature, "temperature", positive=True)
    seed(options.seed, "seed")
    if not isinstance(options.filters, TokenFilter):
        raise InputError(f"filters must be a TokenFilter, got {options.filters!r}.", "Pass TokenFilter(...).")


def check_words(words: Iterable[str]) -> list[str]:
    """The words to add as a list (one word alone is accepted), each checked: one printable word, not too long, once."""
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, Iterable):
        raise InputError(
            f"words must be a list of words (or one word), got {type(words).__name__}.", "Pass e.g. ['aspirin']."
        )
    words = list(words)
    if not words:
        raise InputError("No words were given.", "Give at least one word (inline, or a file with one per line).")
    seen: dict[str, int] = {}
    for i, word in enumerate(words):
        check_text(word, f"word #{i + 1}")
        if not word.strip():
            raise InputError(f"Word #{i + 1} is empty or only whitespace.", "Give words with letters.")
        if len(word) > MAX_WORD_CHARS:
            raise InputError(
                f"Word #{i + 1} has {len(word):,} characters; a new token may have at most {MAX_WORD_CHARS}.",
                "Give words, not texts or file contents (a file of words: {words_file}).",
                arguments={"words_file": NAME},
            )
        if any(c.isspace() for c in word):
            raise InputError(
                f"{word!r} contains whitespace: a new token must be one word.",
                "Add its parts as separate words, or join them (e.g. with '-' or '_').",
            )
        if not word.isprintable():
            raise InputError(f"{word!r} contains control or invisible characters.", "Give printable words.")
        if word in seen:
            raise InputError(f"{word!r} is given twice (#{seen[word] + 1} and #{i + 1}).", "List each word once.")
        seen[word] = i
    return words


def check_rows(rows: Mapping[str, Any], words: Sequence[str], width: int) -> dict[str, np.ndarray]:
    """Each of `words`' given row as a finite float32 vector of `width` values; a missing or wrong row is refused."""
    missing = [w for w in words if w not in rows]
    if missing:
        shown = ", ".join(repr(w) for w in missing[:10]) + (" …" if len(missing) > 10 else "")
        raise InputError(
            f"The rows file has no vector for {len(missing)} new word(s): {shown}.", "Give a row for every new word."
        )
    checked = {}
    for word in words:
        try:
            vector = np.asarray(rows[word], dtype=np.float32)
        except (TypeError, ValueError):
            raise InputError(f"The row for {word!r} is not a vector of numbers.", f"Give {width} numbers.") from None
        if vector.ndim != 1 or vector.shape[0] != width:
            raise InputError(
                f"The row for {word!r} has {vector.shape[-1] if vector.ndim else 1} values, but this model's rows "
                f"have {width}.",
                f"Give {width}-dimensional vectors (the model's embedding size).",
            )
        if not np.all(np.isfinite(vector)):
            raise InputError(f"The row for {word!r} holds NaN or infinite values.", "Give finite numbers.")
        checked[word] = vector
    return checked


def check_destination(out: str | os.PathLike[str]) -> Path:
    """The output folder, which must not exist yet (nor be unusable: a too-long name, a file as its parent)."""
    path = Path(out).expanduser()
    try:
        path.lstat()
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise InputError(
            f"Cannot use {path} as the extended model's folder: {exc.strerror or exc}.",
            "Choose a new folder under an existing, writable folder.",
        ) from None
    raise InputError(
        f"{path} already exists.", "Choose a new folder for the extended model; nothing is ever overwritten."
    )
