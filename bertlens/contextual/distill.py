"""Static word vectors distilled from contexts (Bommasani et al. 2020): a word's contextual vector averaged over
up to N of its occurrences in a corpus, per layer, written in word2vec text format.

The corpus is streamed: a word filter keeps only sentences that hold a word still short of contexts (words as the
model's tokenizer splits them, `core.tokens.text_words`: the words the model's vectors are pooled for), and those run
through the model in chunks, so memory holds one chunk plus one running sum per word.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.checks import flag, whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, Combine, check_choice
from ..core.outputs import atomic_file, folder_for, output_path, write_error
from ..core.progress import Bar, bar
from ..core.results import Result, table
from ..core.tokens import check_text, text_words, word_key
from .states import RunOptions, check_layers
from .word_states import word_states

if TYPE_CHECKING:
    import torch

    from .engines import RayOptions

_CHUNK = 1000  # sentences per word_states call (more sort better by length: less padding)
_BLOCK = 256  # texts the word filter tokenizes together (in parallel)
_NAMED = 30  # words not seen that the table names (--json names all)


@dataclass(frozen=True, repr=False)
class DistilledVectors(Result):
    """One vector per word from its contexts (per-layer means combined as asked).

    >>> distilled = distill(load_model(), ["bread", "cake"], ["I like eating bread"])
    >>> distilled.missing  # words the texts never used
    ('cake',)
    """

    model: str
    words: tuple[str, ...]
    contexts: tuple[int, ...]  # occurrences averaged, per word (0: no context found; see `missing`)
    missing: tuple[str, ...]  # words with no context in the corpus (left out of `vectors`)
    layers: tuple[int, ...]
    combine: str
    max_contexts: int
    texts_read: int
    vectors: np.ndarray  # (found words, D) float32, in the order of `words` without `missing`
    out: str | None  # the word2vec file written, if any

    def __repr__(self) -> str:
        return f"DistilledVectors({len(self.vectors)} words x {self.vectors.shape[1]}, layers {list(self.layers)})"

    def as_torch(self) -> torch.Tensor:
        """The vectors as a torch tensor, (found words, D): the rows of `as_mapping()`, in its order."""
        from ..core.notebook import torch_tensor

        return torch_tensor(self.vectors)

    def as_mapping(self) -> dict[str, np.ndarray]:
        found = [w for w in self.words if w not in set(self.missing)]
        return dict(zip(found, self.vectors, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """Every field, and `contexts_per_word`: each word -> the contexts averaged for it (0: not seen)."""
        return {**super().to_dict(), "contexts_per_word": dict(zip(self.words, self.contexts, strict=True))}

    def to_table(self) -> str:
        seen = np.array([c for c in self.contexts if c > 0])
        spread = f"{seen.min()} / {float(np.median(seen)):g} / {seen.max()}" if len(seen) else "-"
        shown = ", ".join(self.missing[:_NAMED]) + (
            f", … ({len(self.missing) - _NAMED} more; all in --json)" if len(self.missing) > _NAMED else ""
        )
        rows = [
            ("words", len(self.words)),
            ("seen in the corpus", len(seen)),
            ("not seen in the corpus", len(self.missing)),
            ("contexts per word seen (min / median / max)", spread),
            ("texts read", self.texts_read),
            ("layers", " ".join(map(str, self.layers)) + f" ({self.combine})"),
            ("dims", int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0),
            ("written to", self.out or "-"),
        ]
        how = (
            f"Each context is one text (at most {self.max_contexts} per word); a word that is not one token is the "
            "mean of its pieces' vectors there. A word not seen has no vector: pairs with it are not scored."
        )
        unseen = f"\nNot seen in the corpus: {shown}." if self.missing else ""
        return f"{table(['', 'value'], rows)}{unseen}\n{how}"


def distill(
    model: Model,
    words: Sequence[str],
    texts: Iterable[str],
    *,
    layers: Sequence[int] = (-1,),
    combine: Combine = "mean",
    max_contexts: int = 50,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
    progress: bool = False,
    engine: str = "local",
    ray: RayOptions | None = None,
) -> DistilledVectors:
    """Average each word's contextual vector (pieces mean-pooled) over up to `max_contexts` texts that contain it.

    With `progress`, a bar on standard error counts the texts read and the words that have all their contexts.
    `engine="ray"` runs the chunks of texts on Ray actors (`ray`: `RayOptions`): the vectors are the local engine's
    (each text's contexts are added in the same order); `texts_read` may count texts read ahead for the actors.

    >>> texts = ["I like eating bread", "The banana bread was horrible", "A dog ate the bread"]
    >>> distilled = distill(load_model(), ["bread", "dog"], texts, out="bread.w2v")
    >>> distilled.vectors.shape, distilled.contexts
    ((2, 384), (3, 1))
    """
    from .engines import check_engine, run_batches

    check_engine(engine)
    wanted = _wanted(words)
    whole_number(max_contexts, "max_contexts", minimum=1)
    check_choice(combine, COMBINES, "layer combination")
    if model.config.num_hidden_layers:
        layers = check_layers(model, layers)
    if isinstance(texts, str) or not isinstance(texts, Iterable):
        raise InputError("texts must be an iterable of texts (e.g. a list).", "Pass iter_sentences(corpus) or a list.")
    target = None if out is None else _target(out, flag(overwrite, "overwrite"))
    keys = {word_key(w): w for w in wanted}
    active = set(keys)  # words still short of contexts
    reader = _Reader(model, texts, active)
    total = len(texts) if isinstance(texts, Sized) else None
    with bar(total, desc="distil", unit="texts", show=flag(progress, "progress")) as shown:
        work = partial(_contexts, layers=tuple(layers), combine=combine, run=options)
        computed = run_batches(model, reader.chunks(shown), work, engine, ray)
        try:
            sums, counts = _summed(computed, keys, active, max_contexts, shown)
        finally:
            computed.close()
    found, vectors = _means(keys, sums, counts, reader.read)
    if target is not None:
        write_word2vec(target, found, vectors)
    return DistilledVectors(
        model=model.source.description,
        words=tuple(keys[k] for k in keys),
        contexts=tuple(counts[k] for k in keys),
        missing=tuple(keys[k] for k in keys if counts[k] == 0),
        layers=tuple(int(layer) for layer in layers),
        combine=combine,
        max_contexts=max_contexts,
        texts_read=reader.read,
        vectors=vectors,
        out=None if target is None else str(target),
    )


def _summed(
    computed: Iterable[tuple[object, list[dict[str, np.ndarray]]]],
    keys: dict[str, str],
    active: set[str],
    max_contexts: int,
    shown: Bar,
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Each word's vectors summed over its contexts, and their count: one occurrence per text (contexts are texts),
    in the order of the texts, until every word has `max_contexts` (each word that has is dropped from `active`)."""
    sums: dict[str, np.ndarray] = {}
    counts = dict.fromkeys(keys, 0)
    for _, found_in in computed:
        for hits in found_in:  # per text, in order: its first occurrence of each word still short
            for key in active & hits.keys():  # one occurrence per text: contexts are texts
                sums[key] = sums.get(key, 0.0) + hits[key]
                counts[key] += 1
                if counts[key] >= max_contexts:
                    active.discard(key)
        shown.set_postfix_str(f"{len(keys) - len(active)} of {len(keys)} words have {max_contexts} contexts")
        if not active:
            break
    return sums, counts


def _means(
    keys: dict[str, str], sums: dict[str, np.ndarray], counts: dict[str, int], read: int
) -> tuple[list[str], np.ndarray]:
    """The words seen and their mean vectors (found, D) float32; refused when the corpus held no text, or none of the
    words."""
    if read == 0:
        raise InputError("The corpus holds no text.", "Give a corpus with text in it.")
    found = [keys[k] for k in keys if counts[k] > 0]
    if not found:
        raise InputError(
            f"None of the {len(keys)} words occurs in the {read} texts read.", "Give a corpus that contains them."
        )
    vectors = np.stack([sums[k] / counts[k] for k in keys if counts[k] > 0]).astype(np.float32)  # (found, D)
    return found, vectors


class _Reader:
    """The texts read in blocks, and those holding a word still short of contexts passed on in chunks."""

    def __init__(self, model: Model, texts: Iterable[str], active: set[str]) -> None:
        self.model, self.texts = model, texts
        self.active = active  # the words still short of contexts (the caller removes the ones that have enough)
        self.read = 0  # texts read so far

    def holding(self, block: list[str]) -> list[str]:
        """The texts of `block` that hold a word still short of contexts."""
        spans = text_words(self.model, block)
        return [
            text
            for text, words in zip(block, spans, strict=True)
            if any(word_key(text[s:e]) in self.active for s, e in words)
        ]

    def chunks(self, shown: Bar) -> Iterator[tuple[list[str], frozenset[str]]]:
        """Texts with a word still short, and those words; `shown` counts the texts read."""
        pending: list[str] = []
        block: list[str] = []
        for text in self.texts:
            if not isinstance(text, str):
                raise InputError(f"Text #{self.read + 1} is not a string: {type(text).__name__}.", "Pass texts as str.")
            check_text(text, f"text #{self.read + 1}")
            self.read += 1
            shown.update()
            block.append(text)
            if len(block) < _BLOCK:
                continue
            pending += self.holding(block)
            block = []
            if len(pending) >= _CHUNK:
                yield pending, frozenset(self.active)
                pending = []
                if not self.active:
                    return
        pending += self.holding(block) if block else []
        if pending:
            yield pending, frozenset(self.active)


def _wanted(words: Sequence[str]) -> list[str]:
    """The words to distil, stripped, each once, in the order given (one word alone is accepted)."""
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, Iterable):
        raise InputError(f"words must be a list of words, got {type(words).__name__}.", "Pass e.g. ['bread', 'bank'].")
    wanted = list(dict.fromkeys(w.strip() for w in words if isinstance(w, str) and w.strip()))
    if not wanted:
        raise InputError("No words were given.", "Give the words to distil, e.g. the words of a benchmark.")
    return wanted


def _contexts(
    model: Model,
    chunk: tuple[list[str], frozenset[str]],
    *,
    layers: tuple[int, ...],
    combine: Combine,
    run: RunOptions,
) -> list[dict[str, np.ndarray]]:
    """Per text of the chunk: each asked word (case-folded) it holds -> its first occurrence's vector (D,) float64."""
    texts, wanted = chunk
    found: list[dict[str, np.ndarray]] = []
    for text in word_states(model, texts, layers=layers, pool="mean", combine=combine, options=run):
        first: dict[str, int] = {}  # each word of the text (case-folded) -> its first occurrence
        for w in range(len(text)):
            first.setdefault(word_key(text.word(w)), w)
        vectors = text.vectors[0]  # (words, D): pieces mean-pooled inside the batch
        found.append({key: vectors[first[key]].astype(np.float64) for key in wanted & first.keys()})
    return found


def _target(out: str | os.PathLike[str], overwrite: bool) -> Path:
    """The word2vec file to write: new, or (with overwrite) an existing regular file; never a folder or a device."""
    target = output_path(out, "word2vec file")
    try:
        info = target.stat()
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise InputError(
            f"Cannot write {target}: {exc.strerror or exc}.", "Choose a path in a writable folder."
        ) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(f"{target} is {kind}.", "Give the path of a new .txt file for the vectors.")
    if not overwrite:
        raise InputError(
            f"{target} exists.", "Choose another path, or pass {overwrite}.", arguments={"overwrite": True}
        )
    return target


def write_word2vec(path: Path, words: Sequence[str], vectors: np.ndarray) -> None:
    """word2vec text format, written beside `path` and moved into place whole. Spaces in words become '_'."""
    try:
        with folder_for(path.parent), atomic_file(path) as handle:
            handle.write(f"{len(words)} {vectors.shape[1]}\n".encode())
            template = " ".join(["%.9g"] * vectors.shape[1])
            for word, row in zip(words, vectors.tolist(), strict=True):
                handle.write((re.sub(r"\s+", "_", word) + " " + template % tuple(row) + "\n").encode("utf-8"))
    except OSError as exc:
        raise write_error(path, exc, "the word vectors") from None
