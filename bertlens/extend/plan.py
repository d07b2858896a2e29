"""New words: add whole-word tokens to a model's vocabulary, with principled first rows, saved as a new model.

Strategies for the new rows of `word_embeddings` (E values each):

- `random`: normal(0, initializer_range), transformers' old default (`mean_resizing=False`).
- `mean`: the mean of all old rows, the same for every word (Hewitt 2021).
- `mean-resizing`: transformers' current default, reproduced: a draw from a multivariate normal around the old mean
  with 1e-9 times the old rows' covariance (the mean alone when that covariance is not positive definite).
- `pieces`: the mean of the rows of the pieces the old tokenizer splits the word into (FVT, Gee et al. 2022);
  `pieces-first` / `pieces-last` take the first / last piece; `pieces-weighted` weights each piece by its number of
  characters (word-start markers `##`, `Ġ`, `▁` not counted).
- `neighbors`: a mix of the k old tokens nearest (cosine) to the pieces' mean, weighted by softmax(cosine / T)
  (FOCUS's weighting; WECHSEL mixes neighbours the same way); the special and [unused] rows never take part.
- `rows`: a vector given by the user for each word (word2vec text format, or a mapping in Python).

A model with a masked-LM head gets the same treatment for every vocabulary-sized head tensor: the decoder matrix (when
stored and tied, the new input rows; when untied, the same strategy over the decoder's own rows) and the output
bias. Strategies that mix old rows give the new bias the same mix of the old biases, so the new word's logit starts as
the same mix of the mixed tokens' logits; `random` gives 0 (transformers' Linear init), `mean-resizing` transformers'
normal(mean, 1e-9 std), `mean` and `rows` the mean bias.

The words become added tokens (`single_word`, matched on the normalised text, absorbing the space before them for
byte-level BPE and SentencePiece vocabularies), so transformers' tokenizer and bertlens' own split text alike. The
new model is written into a folder beside the destination and moved in only when complete; the source is only read.
Weights are copied tensor by tensor from the source's safetensors files (dtype kept), so no torch model is built.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal, get_args

import numpy as np

from ..errors import BertlensError, CorruptModelError, InputError
from ..families import base_prefix
from ..index import TokenFilter
from ..model import Model
from ..results import Result, plain, table, visible
from ..tokens import check_text

Strategy = Literal[
    "random", "mean", "mean-resizing", "pieces", "pieces-first", "pieces-last", "pieces-weighted", "neighbors", "rows"
]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
MIXING: frozenset[str] = frozenset({"pieces", "pieces-first", "pieces-last", "pieces-weighted", "neighbors"})
MEAN_RESIZING_EPSILON = 1e-9  # transformers' _init_added_embeddings_weights_with_mean scales the covariance by this
_MARKERS = ("##", "Ġ", "▁")  # word-start / continuation markers of WordPiece, byte-level BPE, SentencePiece
_SPACE_MARKED = {"ByteLevel", "Metaspace"}  # pre-tokenizers whose pieces carry the space before a word
_OTHER_WEIGHTS = (".h5", ".msgpack", ".onnx", ".ot", ".ckpt", ".tflite", ".mlmodel", ".gguf")
_CHUNK = 1 << 24  # bytes copied at a time between weights files


@dataclass(frozen=True)
class ExtendOptions:
    """How the new rows start."""

    strategy: Strategy = "pieces"  # one of STRATEGIES
    seed: int = 0  # random and mean-resizing draws come from numpy.random.default_rng(seed)
    k: int = 10  # neighbors: how many old tokens are mixed
    temperature: float = 0.1  # neighbors: weights are softmax(cosine / temperature), as FOCUS
    filters: TokenFilter = TokenFilter()  # noqa: RUF009 - frozen; neighbors: which old tokens may be mixed (no specials, no [unused])
    cache_dir: str | None = None  # neighbors: where the similarity index is cached (default ~/.cache/bertlens)


@dataclass(frozen=True)
class Source:
    """An old token that went into a new row, with its weight in the mix."""

    token: str
    id: int
    weight: float


@dataclass(frozen=True)
class NewWord:
    """A word added to the vocabulary."""

    word: str  # as given
    token: str  # the added token: the word as the tokenizer's normaliser writes it (lowercased for uncased models)
    id: int  # its id, which is also its row of word_embeddings
    pieces: tuple[str, ...]  # how the old tokenizer split it
    piece_ids: tuple[int, ...]
    unknown: bool  # a piece is the unknown token: the old vocabulary could not spell the word
    norm: float  # of its new row
    sources: tuple[Source, ...]  # the old tokens mixed into its row (empty for random, mean, mean-resizing, rows)


@dataclass(frozen=True)
class KnownWord:
    """A word the vocabulary already has as one token: reported, left alone."""

    word: str
    token: str
    id: int


@dataclass(frozen=True, repr=False)
class Extension(Result):
    """New rows for new words, computed but not written: what `extend_vocabulary` saves and the report inspects."""

    model: str
    strategy: str
    old_rows: int  # rows of word_embeddings before
    new_rows: int  # rows after (old tokenizers smaller than the matrix fill its token-less rows first)
    added: tuple[NewWord, ...]
    known: tuple[KnownWord, ...]
    rows: np.ndarray = field(repr=False)  # (added, E) float32: the new rows of word_embeddings, in `added` order
    head: dict[str, np.ndarray] = field(repr=False)  # head tensor name -> (added,) or (added, E) new values
    tokenizer: Any = field(repr=False)  # the new tokenizers.Tokenizer (no padding, no truncation)
    token_flags: dict[str, bool] = field(repr=False)  # AddedToken flags used: lstrip, normalized
    notes: tuple[str, ...] = ()

    @property
    def ids(self) -> list[int]:
        return [w.id for w in self.added]

    def __repr__(self) -> str:
        return f"Extension({len(self.added)} words, {self.strategy}, rows {self.old_rows} -> {self.new_rows})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "strategy": self.strategy,
            "old_rows": self.old_rows,
            "new_rows": self.new_rows,
            "added": plain(self.added),
            "known": plain(self.known),
            "head_tensors": sorted(self.head),
            "notes": list(self.notes),
        }

    def to_table(self) -> str:
        return _summary(self.strategy, self.added, self.known, self.notes)


@dataclass(frozen=True, repr=False)
class ExtendResult(Result):
    """What `extend_vocabulary` wrote."""

    model: str
    directory: str
    strategy: str
    old_rows: int
    new_rows: int
    added: tuple[NewWord, ...]
    known: tuple[KnownWord, ...]
    head_tensors: tuple[str, ...]  # vocabulary-sized head tensors extended too (decoder weight, output bias)
    files: tuple[str, ...]  # written, relative to `directory`
    left_out: tuple[str, ...]  # source files not copied, each with the reason
    sentence_transformers: bool  # whether the sentence-transformers layout was carried over
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return f"ExtendResult({len(self.added)} words -> {self.directory})"

    def to_table(self) -> str:
        lines = [
            f"Extended {self.model}",
            f"  -> {self.directory}  ({self.strategy}; word_embeddings {self.old_rows} -> {self.new_rows} rows"
            + (f"; also {', '.join(self.head_tensors)}" if self.head_tensors else "")
            + (")" if not self.sentence_transformers else "; sentence-transformers layout kept)"),
            _summary(self.strategy, self.added, self.known, self.notes),
        ]
        if self.left_out:
            lines.append("Not copied: " + "; ".join(self.left_out))
        return "\n".join(lines)


def _summary(strategy: str, added: Sequence[NewWord], known: Sequence[KnownWord], notes: Sequence[str]) -> str:
    shown = 30
    rows = [
        (
            visible(w.word),
            visible(w.token),
            w.id,
            " ".join(visible(p) for p in w.pieces) + (" (unknown)" if w.unknown else ""),
            w.norm,
            ", ".join(f"{visible(s.token)} {s.weight:.2f}" for s in w.sources[:3])
            + (" …" if len(w.sources) > 3 else ""),
        )
        for w in added[:shown]
    ]
    head = ["word", "token", "id", "old pieces", "norm", "made of"]
    lines = [f"{len(added)} new words ({strategy}):", table(head, rows)]
    if len(added) > shown:
        lines.append(f"… and {len(added) - shown} more (all of them in --json / to_dict()).")
    if known:
        lines.append(f"{len(known)} already in the vocabulary, left alone:")
        lines.append(table(["word", "token", "id"], [(visible(k.word), visible(k.token), k.id) for k in known]))
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------- inputs


def read_words(path: str | os.PathLike[str]) -> list[str]:
    """Words from a UTF-8 text file, one per line; blank lines are skipped, surrounding whitespace dropped."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"No such words file: {file}", "Give a text file with one word per line.") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{file} is not valid UTF-8 (byte {exc.start}).", "Convert the file to UTF-8.") from None
    except OSError as exc:
        raise InputError(f"Cannot read {file}: {exc.strerror or exc}.", "Give a readable text file.") from None
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
    file = Path(path).expanduser()
    hint = "Give a word2vec text file: optional 'COUNT DIMS' header, then 'word v1 v2 … vD' on each line."
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"No such rows file: {file}", hint) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{file} is not valid UTF-8 (byte {exc.start}).", hint) from None
    except OSError as exc:
        raise InputError(f"Cannot read {file}: {exc.strerror or exc}.", hint) from None
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


def _check_options(options: ExtendOptions) -> None:
    if options.strategy not in STRATEGIES:
        raise InputError(f"Unknown strategy {options.strategy!r}.", f"Choose one of: {', '.join(STRATEGIES)}.")
    if isinstance(options.k, bool) or not isinstance(options.k, int) or options.k < 1:
        raise InputError(f"k must be a positive whole number, got {options.k!r}.", "Example: k=10.")
    if not options.temperature > 0:
        raise InputError(f"temperature must be positive, got {options.temperature!r}.", "Example: 0.1.")


def _check_words(words: Iterable[str]) -> list[str]:
    if isinstance(words, str):
        words = [words]
    words = list(words)
    if not words:
        raise InputError("No words were given.", "Give at least one word (inline, or a file with one per line).")
    seen: dict[str, int] = {}
    for i, word in enumerate(words):
        check_text(word, f"word #{i + 1}")
        if not word.strip():
            raise InputError(f"Word #{i + 1} is empty or only whitespace.", "Give words with letters.")
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


def _check_rows(rows: Mapping[str, Any], words: Sequence[str], width: int) -> dict[str, np.ndarray]:
    missing = [w for w in words if w not in rows]
    if missing:
        shown = ", ".join(repr(w) for w in missing[:10]) + (" …" if len(missing) > 10 else "")
        raise InputError(
            f"The rows file has no vector for {len(missing)} new word(s): {shown}.", "Give a row for every new word."
        )
    checked = {}
    for word in words:
        vector = np.asarray(rows[word], dtype=np.float32)
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
    """The output folder, which must not exist yet."""
    path = Path(out).expanduser()
    if path.exists() or path.is_symlink():
        raise InputError(
            f"{path} already exists.", "Choose a new folder for the extended model; nothing is ever overwritten."
        )
    return path


# -------------------------------------------------------------------------------------------------------- the plan


def _space_marked(tokenizer: Any) -> bool:
    """Whether the tokenizer's pieces carry the space before a word (byte-level BPE, SentencePiece)."""
    data = json.loads(tokenizer.to_str())

    def types(node: Any) -> Iterable[str]:
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


def _head_tensors(model: Model) -> dict[str, tuple[int, ...]]:
    """Vocabulary-sized tensors outside the base model: MLM decoder weights (V, E) and output biases (V,)."""
    reader = model.reader
    prefix = base_prefix(reader.names(), model.family)
    rows, width = model.matrix_rows, model.config.embedding_size
    found = {}
    if not prefix:
        return found  # a base model saved alone has no head
    for name in reader.names():
        shape = tuple(reader.shape(name))
        if name.startswith(prefix) or not shape or shape[0] != rows:
            continue
        if len(shape) == 1 or (len(shape) == 2 and shape[1] == width):
            found[name] = shape
    return found


def has_mlm_head(model: Model) -> bool:
    """Whether the checkpoint holds a masked-LM head (a vocabulary-sized output bias or decoder)."""
    return bool(_head_tensors(model))


def _tied(model: Model) -> bool:
    return bool(model.raw_config.get("tie_word_embeddings", True))


def plan_extension(
    model: Model,
    words: Iterable[str],
    options: ExtendOptions = ExtendOptions(),
    *,
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> Extension:
    """Compute the new tokens and their rows (nothing is written). `rows` is needed for the `rows` strategy."""
    import tokenizers

    _check_options(options)
    words = _check_words(words)
    if options.strategy == "rows" and rows is None:
        raise InputError("The rows strategy needs a vector per word.", "Pass --rows FILE (word2vec text format).")
    if rows is not None and options.strategy != "rows":
        raise InputError(
            f"Rows were given, but the strategy is {options.strategy!r}.", "Use the rows strategy to start from them."
        )
    if rows is not None and not isinstance(rows, Mapping):
        rows = read_rows(rows)
    tokenizer = model.vocabulary.tokenizer
    marked = _space_marked(tokenizer)
    normalizer = tokenizer.normalizer
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
    pieces = _old_pieces(model, words, marked)
    unk = _unknown_id(model)
    new_words, known = [], []
    for word, ids in zip(words, pieces, strict=True):
        existing = tokenizer.token_to_id(contents[word])
        if existing is None and len(ids) == 1 and ids[0] != unk:
            existing = ids[0]
        if existing is not None:
            known.append(KnownWord(word, model.vocabulary.id_to_token(existing) or contents[word], int(existing)))
        else:
            new_words.append((word, ids))
    if not new_words:
        listed = ", ".join(f"{k.word!r} (id {k.id})" for k in known[:10]) + (" …" if len(known) > 10 else "")
        raise InputError(
            f"Every word is already a token of this vocabulary, so there is nothing to add: {listed}.",
            "Give words the tokenizer splits into several pieces.",
        )
    flags = {"lstrip": marked, "normalized": normalizer is not None}
    new_tokenizer = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    new_tokenizer.add_tokens([_added_token(contents[w], flags) for w, _ in new_words])
    ids = [new_tokenizer.token_to_id(contents[w]) for w, _ in new_words]
    if any(i is None for i in ids) or len(set(ids)) != len(ids):
        raise BertlensError("The tokenizer did not give each new word its own id.", "Please report this.")
    old_rows = model.matrix_rows
    new_rows = max([old_rows, *(i + 1 for i in ids)])  # type: ignore[operator]
    notes = []
    inside = [i for i in ids if i < old_rows]  # type: ignore[operator]
    if inside:
        notes.append(
            f"The tokenizer had fewer tokens than the matrix has rows: {len(inside)} new word(s) take rows "
            f"{min(inside)}–{max(inside)}, which no token used before."
        )
    if options.strategy == "rows":
        rows = _check_rows(rows or {}, [w for w, _ in new_words], model.config.embedding_size)
    matrix = model.embedding_weights.word_embeddings  # (old_rows, E)
    mixes = _mixes(model, matrix, [p for _, p in new_words], options)
    new_matrix_rows, note = _rows_for(matrix, mixes, len(new_words), options, model, rows, [w for w, _ in new_words])
    notes += note
    head = _head_rows(model, new_matrix_rows, mixes, len(new_words), options)
    added = tuple(
        NewWord(
            word=word,
            token=contents[word],
            id=int(token_id),  # type: ignore[arg-type]
            pieces=tuple(model.vocabulary.id_to_token(i) or f"[row_{i}]" for i in piece_ids),
            piece_ids=tuple(int(i) for i in piece_ids),
            unknown=unk is not None and unk in piece_ids,
            norm=float(np.linalg.norm(new_matrix_rows[n].astype(np.float64))),
            sources=()
            if mixes is None
            else tuple(
                Source(model.vocabulary.id_to_token(i) or f"[row_{i}]", int(i), float(w))
                for i, w in zip(*mixes[n], strict=True)
            ),
        )
        for n, ((word, piece_ids), token_id) in enumerate(zip(new_words, ids, strict=True))
    )
    new_tokenizer.no_padding()
    new_tokenizer.no_truncation()
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
    )


def _first_clash(words: Sequence[str], contents: Mapping[str, str]) -> tuple[str, str] | None:
    first: dict[str, str] = {}
    for word in words:
        other = first.setdefault(contents[word], word)
        if other != word:
            return other, word
    return None


def _added_token(content: str, flags: Mapping[str, bool]) -> Any:
    from tokenizers import AddedToken

    return AddedToken(content, single_word=True, lstrip=flags["lstrip"], rstrip=False, normalized=flags["normalized"])


Mix = tuple[np.ndarray, np.ndarray]  # (ids (m,) int64, weights (m,) float64 summing to 1)


def _mixes(model: Model, matrix: np.ndarray, pieces: list[list[int]], options: ExtendOptions) -> list[Mix] | None:
    """For strategies that mix old rows: each new word's old ids and weights; None for the others."""
    strategy = options.strategy
    if strategy not in MIXING:
        return None
    mixes: list[Mix] = []
    if strategy == "neighbors":
        return _neighbor_mixes(model, matrix, pieces, options)
    for ids in pieces:
        array = np.asarray(ids, dtype=np.int64)
        if strategy == "pieces-first":
            array = array[:1]
        elif strategy == "pieces-last":
            array = array[-1:]
        if strategy == "pieces-weighted":
            lengths = [max(1, len(_bare(model.vocabulary.id_to_token(int(i)) or ""))) for i in array]
            weights = np.asarray(lengths, dtype=np.float64)
        else:
            weights = np.ones(len(array), dtype=np.float64)
        mixes.append((array, weights / weights.sum()))
    return mixes


def _bare(piece: str) -> str:
    for marker in _MARKERS:
        if piece.startswith(marker):
            return piece[len(marker) :]
    return piece


def _neighbor_mixes(model: Model, matrix: np.ndarray, pieces: list[list[int]], options: ExtendOptions) -> list[Mix]:
    """The k allowed old tokens nearest (cosine) to each word's pieces' mean, weighted by softmax(cosine / T)."""
    from ..index import open_index
    from ..similarity import neighbors_many

    if not pieces:
        return []
    queries = [_piece_mean(matrix, ids) for ids in pieces]
    index = open_index(model, options.cache_dir)
    found = neighbors_many(model, queries, options.k, filters=options.filters, index=index)
    mixes = []
    for result in found:
        if not result.neighbors:
            raise InputError(
                "No old token is allowed as a neighbour (the filter leaves none).", "Loosen the neighbour filter."
            )
        ids = np.asarray([n.id for n in result.neighbors], dtype=np.int64)
        scores = np.asarray([n.score for n in result.neighbors], dtype=np.float64) / options.temperature
        weights = np.exp(scores - scores.max())
        mixes.append((ids, weights / weights.sum()))
    return mixes


def _piece_mean(matrix: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    return matrix[np.asarray(ids, dtype=np.int64)].mean(axis=0, dtype=np.float64).astype(np.float32)


def _mixed(values: np.ndarray, mixes: list[Mix]) -> np.ndarray:
    """Each mix applied to `values` (rows (V, E) or biases (V,)): (n, E) or (n,), float32."""
    out = [np.tensordot(weights, values[ids].astype(np.float64), axes=1) for ids, weights in mixes]
    return np.asarray(out, dtype=np.float32).reshape(len(mixes), *values.shape[1:])


def mean_resizing_rows(old: np.ndarray, count: int, seed: int = 0) -> tuple[np.ndarray, bool]:
    """transformers' `mean_resizing`: `count` draws from N(mean, 1e-9 * covariance) of the old rows (V, E).

    As in transformers, the covariance is centred_rows.T @ centred_rows / V in float32, and the mean alone is used
    when 1e-9 times it is not positive definite (the second value says which happened). The draws come from
    numpy.random.default_rng(seed) (transformers draws from torch's global generator), so the rows match
    transformers' in distribution, not draw for draw.
    """
    rows64 = old.astype(np.float64)
    mean = rows64.mean(axis=0)  # (E,)
    centred = (old.astype(np.float32) - mean.astype(np.float32)).astype(np.float32)  # (V, E)
    covariance = (centred.T @ centred) / np.float32(len(old))  # (E, E) float32, as transformers computes it
    scaled = (MEAN_RESIZING_EPSILON * covariance).astype(np.float32)
    try:
        np.linalg.cholesky(scaled)  # the same positive-definiteness test as torch's constraints.positive_definite
    except np.linalg.LinAlgError:
        return np.repeat(mean.astype(np.float32)[None, :], count, axis=0), False
    factor = np.linalg.cholesky(scaled.astype(np.float64))  # (E, E) lower
    draws = np.random.default_rng(seed).standard_normal((count, old.shape[1]))  # (count, E)
    return (mean[None, :] + draws @ factor.T).astype(np.float32), True


def _rows_for(
    matrix: np.ndarray,
    mixes: list[Mix] | None,
    count: int,
    options: ExtendOptions,
    model: Model,
    given: Mapping[str, np.ndarray] | None,
    words: Sequence[str],
) -> tuple[np.ndarray, list[str]]:
    """The new rows of `matrix` (V, E) for `count` words: (count, E) float32, and notes."""
    strategy, width = options.strategy, matrix.shape[1]
    if count == 0:
        return np.zeros((0, width), dtype=np.float32), []
    if mixes is not None:
        return _mixed(matrix, mixes), []
    if strategy == "mean":
        return np.repeat(matrix.mean(axis=0, dtype=np.float64).astype(np.float32)[None, :], count, axis=0), []
    if strategy == "random":
        std = float(model.raw_config.get("initializer_range", 0.02))
        return np.random.default_rng(options.seed).normal(0.0, std, (count, width)).astype(np.float32), []
    if strategy == "mean-resizing":
        rows, drawn = mean_resizing_rows(matrix, count, options.seed)
        note = [] if drawn else ["The old rows' covariance is not positive definite: every new row is the mean."]
        return rows, note
    assert given is not None  # strategy == "rows"
    return np.stack([given[w] for w in words]).astype(np.float32), []


def _head_rows(
    model: Model, input_rows: np.ndarray, mixes: list[Mix] | None, count: int, options: ExtendOptions
) -> dict[str, np.ndarray]:
    """New values for each vocabulary-sized head tensor (decoder weight, output bias)."""
    head: dict[str, np.ndarray] = {}
    for name, shape in _head_tensors(model).items():
        old = model.reader.get(name)  # (V,) or (V, E) float32
        if len(shape) == 2:
            if _tied(model):
                head[name] = input_rows.copy()
            elif options.strategy in ("rows",):
                head[name] = np.repeat(old.mean(axis=0, dtype=np.float64).astype(np.float32)[None], count, axis=0)
            else:
                seeded = dataclasses.replace(options, seed=options.seed + 1)  # draws independent of the input rows
                head[name] = _rows_for(old, mixes, count, seeded, model, None, [])[0]
            continue
        if mixes is not None:
            head[name] = _mixed(old, mixes)
        elif options.strategy == "random":
            head[name] = np.zeros(count, dtype=np.float32)
        elif options.strategy == "mean-resizing":  # transformers: normal(mean, 1e-9 * std) of the old biases
            rng = np.random.default_rng(options.seed + 2)
            std = float(old.astype(np.float64).std(ddof=1)) if len(old) > 1 else 0.0
            mean = float(old.mean(dtype=np.float64))
            head[name] = rng.normal(mean, MEAN_RESIZING_EPSILON * std, count).astype(np.float32)
        else:  # mean, rows
            head[name] = np.full(count, old.mean(dtype=np.float64), dtype=np.float32)
    return head


# ------------------------------------------------------------------------------------------------------- writing


def extend_vocabulary(
    model: Model,
    words: Iterable[str],
    out: str | os.PathLike[str],
    options: ExtendOptions = ExtendOptions(),
    *,
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> ExtendResult:
    """Add `words` to `model`'s vocabulary with rows from `options.strategy` and save the new model into `out`.

    `out` must not exist. It is written completely (a Hugging Face directory that transformers' AutoModel and
    AutoTokenizer, sentence-transformers and bertlens load) or not at all. The source model is only read.
    """
    destination = check_destination(out)
    if model.source.path is None:
        raise InputError(
            "This model was given as a Python object, so there are no files to extend.",
            "Load it from its directory (load_model(PATH)) or save it first with save_pretrained.",
        )
    extension = plan_extension(model, words, options, rows=rows)
    return save_extension(model, extension, destination)


def save_extension(model: Model, extension: Extension, out: str | os.PathLike[str]) -> ExtendResult:
    """Write `extension` of `model` as a new model directory `out` (staged beside it, then moved in)."""
    destination = check_destination(out)
    source = model.source
    if source.path is None:
        raise InputError("This model has no files to extend.", "Load it from its directory.")
    root, inner = _layout_root(source.path)
    staging: Path | None = None
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".bertlens-extend-", dir=destination.parent))
        left_out = _copy_other_files(root, inner, staging, {f.name for f in source.weights_files})
        target = staging / inner if inner else staging
        target.mkdir(parents=True, exist_ok=True)
        files = _write_weights(model, extension, target)
        config = dict(model.raw_config)
        config["vocab_size"] = extension.new_rows
        (target / "config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        files += ["config.json", *_write_tokenizer(model, extension, target)]
        _verify(target, extension)
        if destination.exists():
            raise InputError(f"{destination} appeared while the model was being written.", "Choose a new folder.")
        os.rename(staging, destination)
        staging = None
    except OSError as exc:
        raise InputError(
            f"Cannot write the extended model into {destination}: {exc.strerror or exc}.",
            "Choose a folder you can write to, with enough free space.",
        ) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    prefix = f"{inner}/" if inner else ""
    return ExtendResult(
        model=model.source.description,
        directory=str(destination),
        strategy=extension.strategy,
        old_rows=extension.old_rows,
        new_rows=extension.new_rows,
        added=extension.added,
        known=extension.known,
        head_tensors=tuple(sorted(extension.head)),
        files=tuple(prefix + f for f in files),
        left_out=tuple(left_out),
        sentence_transformers=(root / "modules.json").is_file(),
        notes=extension.notes,
    )


def _layout_root(path: Path) -> tuple[Path, str]:
    """The folder to mirror, and the transformer's sub-folder in it ('' when the model sits at the root).

    A sentence-transformers model keeps its transformer at the root (path "") or in a sub-folder named in
    `modules.json`; either way the whole layout (modules.json, 1_Pooling/, …) is carried over.
    """
    parent = path.parent
    modules = parent / "modules.json"
    if not (path / "modules.json").is_file() and modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            entries = []
        for entry in entries if isinstance(entries, list) else []:
            transformer = isinstance(entry, dict) and str(entry.get("type", "")).endswith("Transformer")
            if transformer and (parent / str(entry.get("path", ""))).resolve() == path.resolve():
                return parent, path.name
    return path, ""


def _module_folders(root: Path) -> set[str]:
    """Sub-folders that `modules.json` names (sentence-transformers modules such as 1_Pooling)."""
    try:
        entries = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return set()
    return (
        {str(e.get("path")) for e in entries if isinstance(e, dict) and e.get("path")}
        if isinstance(entries, list)
        else set()
    )


_REWRITTEN = {"config.json", "tokenizer.json", "tokenizer_config.json", "added_tokens.json"}
_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def _copy_other_files(root: Path, inner: str, staging: Path, weights: set[str]) -> list[str]:
    """Copy what the new model shares with the old (sentence-transformers modules, tokenizer vocab files, cards).

    Weights (rewritten, or in other frameworks' formats that would no longer match), config.json and the
    tokenizer files that change are not copied; other sub-folders than the sentence-transformers modules neither.
    Returns what was left out, each with the reason.
    """
    modules = _module_folders(root)
    left_out = []

    def copy_folder(folder: Path, into: Path, is_model: bool) -> None:
        into.mkdir(parents=True, exist_ok=True)
        for item in sorted(folder.iterdir()):
            if item.name.startswith(".") and item.is_dir():
                continue
            relative = item.relative_to(root).as_posix()
            if item.is_dir():
                if folder == root and item.name in modules and item.name != inner:
                    shutil.copytree(item, into / item.name)
                elif not (folder == root and item.name == inner):
                    left_out.append(f"{relative}/ (not a sentence-transformers module)")
                continue
            if is_model and (item.name in _REWRITTEN or item.name in weights or item.name in _INDEXES):
                continue
            if item.name.endswith(_OTHER_WEIGHTS):
                left_out.append(f"{relative} (weights in another format, which would not match)")
                continue
            shutil.copy2(item, into / item.name)

    copy_folder(root, staging, is_model=not inner)
    if inner:
        copy_folder(root / inner, staging / inner, is_model=True)
    return left_out


def _write_tokenizer(model: Model, extension: Extension, target: Path) -> list[str]:
    """tokenizer.json with the new added tokens (the source's own file when it has one, padding settings kept)."""
    import tokenizers

    first = model.source.tokenizer_files[0]
    writer = (
        tokenizers.Tokenizer.from_file(str(first))
        if first.name == "tokenizer.json"
        else tokenizers.Tokenizer.from_str(model.vocabulary.tokenizer.to_str())
    )
    if extension.added:
        writer.add_tokens([_added_token(w.token, extension.token_flags) for w in extension.added])
    wrong = [w.word for w in extension.added if writer.token_to_id(w.token) != w.id]
    if wrong:
        raise BertlensError(f"The tokenizer file gave other ids to {', '.join(wrong[:5])}.", "Please report this.")
    writer.save(str(target / "tokenizer.json"))
    written = ["tokenizer.json"]
    assert model.source.path is not None
    config_file = model.source.path / "tokenizer_config.json"
    if config_file.is_file():
        config = model.source.read_json("tokenizer_config.json") or {}
        decoder = config.get("added_tokens_decoder")
        if isinstance(decoder, dict):  # transformers 4 lists added tokens here too: keep the two in step
            for w in extension.added:
                decoder[str(w.id)] = {
                    "content": w.token,
                    "lstrip": extension.token_flags["lstrip"],
                    "normalized": extension.token_flags["normalized"],
                    "rstrip": False,
                    "single_word": True,
                    "special": False,
                }
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        (target / "tokenizer_config.json").write_text(text, encoding="utf-8")
        written.append("tokenizer_config.json")
    if (model.source.path / "added_tokens.json").is_file():  # transformers 4's slow tokenizers read this one
        table_ = model.source.read_json("added_tokens.json") or {}
        table_.update({w.token: w.id for w in extension.added})
        text = json.dumps(table_, indent=2, ensure_ascii=False) + "\n"
        (target / "added_tokens.json").write_text(text, encoding="utf-8")
        written.append("added_tokens.json")
    return written


def _verify(target: Path, extension: Extension) -> None:
    """Every new word must come out of the written tokenizer as exactly its one new token."""
    from ..vocab import load_vocabulary

    vocabulary = load_vocabulary((target / "tokenizer.json",), None)
    encodings = vocabulary.tokenizer.encode_batch([w.word for w in extension.added], add_special_tokens=False)
    wrong = [w.word for w, e in zip(extension.added, encodings, strict=True) if list(e.ids) != [w.id]]
    if wrong:
        raise InputError(
            f"The tokenizer does not keep {len(wrong)} new word(s) whole: {', '.join(map(repr, wrong[:5]))}.",
            "These words contain characters the tokenizer treats specially; leave them out.",
        )


# ---------------------------------------------------------------------------------------------- safetensors out

_NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def _as_dtype(values: np.ndarray, dtype: str) -> bytes:
    """float32 values as the bytes of a safetensors dtype (bfloat16 rounded to nearest even)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype in _NUMPY:
        return values.astype(_NUMPY[dtype]).tobytes()
    if dtype == "BF16":
        bits = values.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
    raise InputError(
        f"The embedding matrix is stored as {dtype}, which bertlens cannot extend.",
        "Extend a float32, float16 or bfloat16 copy of the model.",
    )


@dataclass
class _Tensor:
    """One tensor of an output safetensors file: its header entry and where its bytes come from."""

    name: str
    dtype: str
    shape: list[int]
    parts: list[bytes | tuple[Path, int, int]]  # literal bytes, or (file, start, end) to copy

    @property
    def nbytes(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p[2] - p[1] for p in self.parts)


def _read_header(file: Path) -> tuple[dict[str, Any], int]:
    try:
        with file.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"Cannot read the safetensors header of {file}: {exc}", "Restore the file.") from None
    return header, 8 + size


def _write_file(path: Path, tensors: list[_Tensor], metadata: dict[str, str] | None) -> None:
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for tensor in tensors:
        header[tensor.name] = {
            "dtype": tensor.dtype,
            "shape": tensor.shape,
            "data_offsets": [offset, offset + tensor.nbytes],
        }
        offset += tensor.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # data starts 8-byte aligned
    with path.open("wb") as out:
        out.write(len(raw).to_bytes(8, "little"))
        out.write(raw)
        for tensor in tensors:
            for part in tensor.parts:
                if isinstance(part, bytes):
                    out.write(part)
                else:
                    _copy_range(part, out)


def _copy_range(part: tuple[Path, int, int], out: BinaryIO) -> None:
    file, start, end = part
    with file.open("rb") as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            chunk = handle.read(min(_CHUNK, left))
            if not chunk:
                raise CorruptModelError(f"{file} ends early.", "Restore the file from the model's original copy.")
            out.write(chunk)
            left -= len(chunk)


def _new_values(model: Model, extension: Extension) -> dict[str, np.ndarray]:
    """Tensor name -> the new words' values (added, ...) float32, for every tensor that grows."""
    name = base_prefix(model.reader.names(), model.family) + model.family.word_embeddings + ".weight"
    return {name: extension.rows, **extension.head}


def _grown(
    old: tuple[int, ...], dtype: str, parts: list[Any], values: np.ndarray, ids: list[int], new_rows: int
) -> _Tensor:
    """The parts of a vocabulary-sized tensor grown to `new_rows`, new values at `ids` (beyond or inside old)."""
    old_rows = old[0]
    row_bytes = len(_as_dtype(np.zeros(old[1:], dtype=np.float32), dtype))
    inside = [n for n, i in enumerate(ids) if i < old_rows]
    if inside:  # rare: the tokenizer was smaller than the matrix; patch the token-less rows in place
        data = bytearray().join(p if isinstance(p, bytes) else _read_range(p) for p in parts)
        for n in inside:
            data[ids[n] * row_bytes : (ids[n] + 1) * row_bytes] = _as_dtype(values[n], dtype)
        parts = [bytes(data)]
    tail = np.zeros((new_rows - old_rows, *old[1:]), dtype=np.float32)
    for n, i in enumerate(ids):
        if i >= old_rows:
            tail[i - old_rows] = values[n]
    return _Tensor("", dtype, [new_rows, *old[1:]], [*parts, _as_dtype(tail, dtype)])


def _read_range(part: tuple[Path, int, int]) -> bytes:
    file, start, end = part
    with file.open("rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def _write_weights(model: Model, extension: Extension, target: Path) -> list[str]:
    """Write the weights with the grown tensors: safetensors shard by shard, or one file from PyTorch pickles."""
    growing = _new_values(model, extension)
    ids = extension.ids
    if model.source.weights_format != "safetensors":
        return _write_from_pickles(model, extension, target, growing)
    written = []
    sizes: dict[str, int] = {}
    for file in model.source.weights_files:
        header, start = _read_header(file)
        metadata = header.pop("__metadata__", None)
        tensors = []
        for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
            begin, end = entry["data_offsets"]
            parts: list[Any] = [(file, start + begin, start + end)]
            if name in growing:
                grown = _grown(tuple(entry["shape"]), entry["dtype"], parts, growing[name], ids, extension.new_rows)
                grown.name = name
                tensors.append(grown)
            else:
                tensors.append(_Tensor(name, entry["dtype"], list(entry["shape"]), parts))
        _write_file(target / file.name, tensors, metadata)
        sizes[file.name] = sum(t.nbytes for t in tensors)
        written.append(file.name)
    assert model.source.path is not None
    index = model.source.path / "model.safetensors.index.json"
    if len(model.source.weights_files) > 1 or index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        data.setdefault("metadata", {})["total_size"] = sum(sizes.values())
        (target / index.name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written.append(index.name)
    return written


_TORCH_DTYPES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


def _write_from_pickles(model: Model, extension: Extension, target: Path, growing: dict[str, np.ndarray]) -> list[str]:
    """PyTorch pickles (read with torch, weights only) become one model.safetensors."""
    import torch

    reader = model.reader
    tensors = []
    for file in model.source.weights_files:
        state = reader._load_pickle(file)  # type: ignore[union-attr]
        for name, value in state.items():
            if not hasattr(value, "shape"):
                continue
            dtype = _TORCH_DTYPES.get(str(value.dtype).replace("torch.", ""))
            if dtype is None:
                raise InputError(f"Tensor {name} has dtype {value.dtype}, which bertlens cannot copy.", "")
            data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
            if name in growing:
                grown = _grown(tuple(value.shape), dtype, [data], growing[name], extension.ids, extension.new_rows)
                grown.name = name
                tensors.append(grown)
            else:
                tensors.append(_Tensor(name, dtype, list(value.shape), [data]))
    _write_file(target / "model.safetensors", tensors, {"format": "pt"})
    return ["model.safetensors"]
