"""Stream contextual vectors of a whole corpus to disk: NumPy or Parquet shards, bounded memory, resumable.

Layout of the output folder:

- `manifest.json`: model, corpus, options, precision, texts done, the shards written (each file with its size and
  SHA-256), and `complete`;
- per shard `k`: NumPy: `vectors-k.npy` (rows, D) float32 and `rows-k.tsv` (text id, position, word or piece);
  Parquet: `shard-k.parquet` with columns text_id, position, word, vector.

Each shard is written into a staging folder (`core.outputs`) and renamed, then the manifest is replaced: an interrupted
run leaves whole shards and a manifest that names exactly them, and `resume=True` continues after the last one. On
resume every shard is checked against its recorded size and checksum first: from the first damaged or missing one on,
the shards are written again. The corpus is checked (UTF-8, not empty) before anything is written. The manifest and
the shard files' checks, and reading the shards back (`read_shards`, importable from here too), are in `shards`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.background import BackgroundWriter
from ..core.corpus import corpus_files, corpus_path, iter_texts
from ..core.errors import InputError
from ..core.extras import require
from ..core.memory import steady_large_blocks
from ..core.model import Model
from ..core.options import COMBINES, WORD_POOLS, Combine, WordPool, check_choice
from ..core.outputs import output_path, staging, write_error
from ..core.precision import choose_precision
from ..core.progress import Bar, NoBar, progress_bar
from ..core.results import Result, table
from .shards import MANIFEST, file_facts, start_manifest, write_json
from .shards import read_shards as read_shards
from .states import RunOptions, hidden_states
from .states import select_layers as combine_layers
from .word_states import word_states

if TYPE_CHECKING:
    from .engines import RayOptions

_RUN = 128  # texts per hidden_states call in a shard (all layers in memory); word_states takes a whole shard
Rows = tuple[np.ndarray, np.ndarray, list[str], np.ndarray]  # a shard's text ids (n,), positions (n,), words, (n, D)


@dataclass(frozen=True)
class ExtractOptions:
    """What is written for every text.

    >>> options = ExtractOptions(level="token", layers=(0, 6), combine="concat", format="npy")
    """

    level: Literal["word", "token"] = "word"  # one row per word (pieces pooled) or per token
    layers: tuple[int, ...] = (-1,)  # layers combined into each row's vector
    combine: Combine = "mean"
    pool: WordPool = "mean"  # for words
    special: bool = False  # keep special tokens ([CLS], [SEP]) at token level
    format: Literal["npy", "parquet"] = "npy"
    shard_texts: int = 1000  # texts per shard: memory holds one shard's vectors


@dataclass(frozen=True, repr=False)
class ExtractResult(Result):
    """What `extract` wrote: the folder, how many texts and rows, their width, and the shards.

    >>> result = extract(load_model(), "sample", "shards/")  # doctest: +SKIP
    >>> result.rows, result.dims  # doctest: +SKIP
    """

    out: str
    format: str
    level: str
    texts: int
    rows: int
    dims: int
    shards: int
    resumed_after: int  # texts already done when this run started (0 for a fresh run)

    def __repr__(self) -> str:
        return f"ExtractResult({self.rows} rows from {self.texts} texts in {self.shards} shards at {self.out})"

    def to_table(self) -> str:
        rows = [(f, getattr(self, f)) for f in ("out", "format", "level", "texts", "rows", "dims", "shards")]
        return table(["", "value"], [*rows, ("resumed after", self.resumed_after)])


def _corpus_key(path: Path) -> str:
    digest = hashlib.sha256()
    for file in corpus_files(path):
        stat = file.stat()
        digest.update(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def _check(options: ExtractOptions) -> None:
    if options.level not in ("word", "token"):
        raise InputError(f"Unknown level {options.level!r}.", "Choose word or token.")
    if options.format not in ("npy", "parquet"):
        raise InputError(f"Unknown format {options.format!r}.", "Choose npy or parquet.")
    check_choice(options.pool, WORD_POOLS, "pooling")
    check_choice(options.combine, COMBINES, "layer combination")
    shard_texts = options.shard_texts
    if isinstance(shard_texts, bool) or not isinstance(shard_texts, int) or shard_texts < 1:
        raise InputError(
            f"The texts per shard (shard_texts) must be a whole number of at least 1, got {shard_texts!r}.",
            "Give a positive whole number, e.g. {shard_texts}.",
            arguments={"shard_texts": 1000},
        )
    if options.format == "parquet":
        require("pyarrow", extra="parquet", otherwise="use format npy")


def extract(
    model: Model,
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    options: ExtractOptions = ExtractOptions(),
    run: RunOptions = RunOptions(),  # noqa: B008
    resume: bool = False,
    progress: bool = False,
    steady_memory: bool = True,
    engine: str = "local",
    ray: RayOptions | None = None,
) -> ExtractResult:
    """Write the contextual vectors of every text of `corpus` into the folder `out` (see the module docstring).

    `steady_memory` fixes glibc's mmap threshold for the process (see `bertlens.core.memory`), which keeps the peak
    memory flat however long the corpus; pass False to leave the allocator alone. `engine="ray"` computes the shards
    on Ray actors (`ray`: `RayOptions`; see `bertlens.occurrences.ray_engine`); the files written are the same.

    >>> options = ExtractOptions(layers=(-1,), format="parquet")
    >>> result = extract(load_model(), "sample", "shards/", options=options)  # doctest: +SKIP
    >>> result.texts, result.shards  # doctest: +SKIP
    """
    from .engines import check_engine, run_batches

    _check(options)
    check_engine(engine)
    if steady_memory:
        steady_large_blocks()
    count = model.config.num_hidden_layers + 1
    combine_layers(np.zeros((count, 1, 1), dtype=np.float32), options.layers, options.combine)  # checks the layers
    source, target = corpus_path(corpus), output_path(out, "extract")
    total = sum(1 for _ in iter_texts(source))  # validates the whole corpus first: nothing is written for a bad one
    settings = _settings(model, source, options, run)
    first: list[int] = []  # the texts already done: known once the manifest is (the shards are read lazily)

    def shards() -> Iterator[tuple[list[str], int]]:
        done, texts = first[0], islice(iter_texts(source), first[0], None)
        while batch := [t.text for t in islice(texts, options.shard_texts)]:
            yield batch, done
            done += len(batch)

    computed = run_batches(model, shards(), partial(_shard_vectors, options=options, run=run), engine, ray)
    manifest = _write_shards(computed, target, settings, options, resume, first, total, progress)
    return ExtractResult(
        out=str(target),
        format=options.format,
        level=options.level,
        texts=total,
        rows=int(manifest["rows"]),
        dims=int(manifest.get("dims", 0)),
        shards=len(manifest["shards"]),
        resumed_after=int(settings.get("resumed_after", 0)),
    )


def _settings(model: Model, source: Path, options: ExtractOptions, run: RunOptions) -> dict[str, Any]:
    """What the manifest records of the run, and a resume must find unchanged: the model, the corpus (its files' key),
    the options, and the precision the vectors are computed in."""
    settings: dict[str, Any] = {
        "model": model.source.description,
        "corpus": str(source),
        "corpus_key": _corpus_key(source),
    }
    settings["options"] = json.loads(json.dumps(asdict(options)))  # as the manifest stores it (tuples as lists)
    settings["precision"] = choose_precision(model, run.dtype, run.device).dtype  # what the vectors are computed in
    return settings


def _write_shards(
    computed: Generator[tuple[tuple[list[str], int], Rows], None, None],
    target: Path,
    settings: dict[str, Any],
    options: ExtractOptions,
    resume: bool,
    first: list[int],
    total: int,
    progress: bool,
) -> dict[str, Any]:
    """Each computed shard written (in the background, so storage never stalls the model) and the manifest replaced
    after it; the manifest, complete. `first` receives the texts already done once the manifest is started."""
    bar: Bar = NoBar()
    try:  # Ray (when asked) is reached before this, before anything is written
        manifest = start_manifest(target, settings, resume)
        first.append(int(manifest["texts_done"]))
        bar = progress_bar(total, desc="extract", unit="text", show=progress, initial=first[0])
        with staging(target, "extract") as folder, BackgroundWriter() as writer:

            def write(
                batch: list[str], ids: np.ndarray, positions: np.ndarray, words: list[str], vectors: np.ndarray
            ) -> None:
                index = len(manifest["shards"])
                name, files = _write_shard(folder, target, index, options.format, ids, positions, words, vectors)
                manifest["shards"].append({"name": name, "rows": len(ids), "texts": len(batch), "files": files})
                manifest["texts_done"] = manifest["texts_done"] + len(batch)
                manifest["rows"] = manifest["rows"] + len(ids)
                manifest["dims"] = int(vectors.shape[1]) if len(vectors) else manifest.get("dims", 0)
                write_json(target / MANIFEST, manifest)
                bar.update(len(batch))

            for (batch, _), rows in computed:
                writer.submit(partial(write, batch, *rows))
        manifest["complete"] = True
        write_json(target / MANIFEST, manifest)
    except OSError as exc:
        raise write_error(target, exc, "the extract") from None
    finally:
        computed.close()
        bar.close()
    return manifest


def _shard_vectors(model: Model, shard: tuple[list[str], int], *, options: ExtractOptions, run: RunOptions) -> Rows:
    """`_vectors` of one shard (its texts, the first one's id): the work of either engine."""
    return _vectors(model, shard[0], shard[1], options, run)


def _vectors(model: Model, texts: list[str], first_id: int, options: ExtractOptions, run: RunOptions) -> Rows:
    """Rows for a shard: text ids (n,), positions (n,), words or pieces, vectors (n, D) float32."""
    ids: list[np.ndarray] = []  # per text (its rows,)
    words: list[str] = []
    vectors: list[np.ndarray] = []  # per text (its rows, D)
    if options.level == "word":  # pooled inside each batch: only the words' vectors leave it
        found = word_states(model, texts, layers=options.layers, pool=options.pool, combine=options.combine,
                            options=run)  # fmt: skip
        for offset, text in enumerate(found):
            ids.append(np.full(len(text), first_id + offset, dtype=np.int64))
            words += [text.word(w) for w in range(len(text))]
            vectors.append(text.vectors[0])  # (words, D)
    else:
        for start in range(0, len(texts), _RUN):
            for offset, states in enumerate(hidden_states(model, texts[start : start + _RUN], options=run)):
                combined = combine_layers(states.states, options.layers, options.combine)  # (tokens, D)
                chosen = [t for t in states.tokens if options.special or not t.special]
                ids.append(np.full(len(chosen), first_id + start + offset, dtype=np.int64))
                words += [t.piece for t in chosen]
                vectors.append(combined[[t.index for t in chosen]])
    if not words:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), [], np.zeros((0, 0), np.float32)
    stacked = np.ascontiguousarray(np.concatenate(vectors), dtype=np.float32)  # (n, D)
    positions = np.concatenate([np.arange(len(i), dtype=np.int32) for i in ids])  # each text's rows from 0
    return np.concatenate(ids), positions, words, stacked


def _write_shard(
    folder: Path,
    target: Path,
    index: int,
    fmt: str,
    ids: np.ndarray,
    positions: np.ndarray,
    words: list[str],
    vectors: np.ndarray,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Write one shard into the staging `folder`, then rename into `target`: a shard exists whole or not at all.

    Returns the shard's name and, per file, its size and SHA-256 (taken before the move).
    """
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        name = f"shard-{index:05d}.parquet"
        dims = vectors.shape[1] if vectors.ndim == 2 else 0
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dims)
        tbl = pa.table({"text_id": ids, "position": positions, "word": words, "vector": column})
        pq.write_table(tbl, folder / name)
        names = [name]
    else:
        name = f"vectors-{index:05d}.npy"
        np.save(folder / name, vectors)
        lines = "".join(
            f"{i}\t{p}\t{w.replace(chr(9), ' ').replace(chr(10), ' ')}\n"
            for i, p, w in zip(ids, positions, words, strict=True)
        )
        (folder / f"rows-{index:05d}.tsv").write_text(lines, encoding="utf-8")
        names = [f"rows-{index:05d}.tsv", name]
    facts = {n: file_facts(folder / n) for n in names}
    for n in names:
        os.replace(folder / n, target / n)
    return name, facts
