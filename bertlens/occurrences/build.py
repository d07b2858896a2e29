"""`index_corpus`: every word occurrence of a corpus, with its vectors from chosen layers, into an occurrence index.

A build validates the corpus and lists its files (`plan`) before it writes anything, then streams batches of texts:
`occurrence_rows` (pure: texts in, rows out) computes a batch's rows, locally or in Ray actors, and the one writer
appends them (`OccurrenceIndex.append`: texts, occurrences, then the manifest). Memory holds one batch's vectors at a
time. At the end the search structures are built (`ann.build_search_indexes`), and only then
is the manifest marked complete. `resume=True` continues an interrupted build (or add) from its manifest, after
removing any half-written batch; `add=True` indexes new corpus files into a complete index; `overwrite=True` replaces
an existing index (only an index: another folder is never touched).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..contextual.states import RunOptions, check_layers
from ..core.checks import whole_number
from ..core.corpus import corpus_files, corpus_path
from ..core.errors import NAME, InputError
from ..core.extras import require
from ..core.memory import release_large_blocks, steady_large_blocks
from ..core.model import Model, require_model
from ..core.options import WORD_POOLS, WordPool, check_choice
from ..core.outputs import output_path, refuse_inside, write_error
from ..core.precision import choose_precision
from ..core.progress import bar
from .build_results import IndexResult
from .folder import EXISTING, building, existing_hint, folder_state, remove_index
from .integrity import forget_sealed, seal
from .plan import Entry, cap, check_unchanged, plan_files, renumber, text_batches
from .rows import local_batches, occurrence_rows
from .store import (
    MANIFEST,
    VECTOR_DTYPES,
    OccurrenceIndex,
    OccurrenceRows,
    TextRows,
    VectorDtype,
    create_index,
    damaged,
    open_for_writing,
)

if TYPE_CHECKING:
    from .ray_engine import RayOptions

Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = ("local", "ray")


@dataclass(frozen=True)
class IndexOptions:
    """What an index stores.

    >>> options = IndexOptions(layers=(3, 6), dtype="float16")  # two layers, half the size on disk
    """

    layers: tuple[int, ...] = (-1,)  # each stored as its own vector column
    pool: WordPool = "mean"  # how a word's pieces pool
    dtype: VectorDtype = "float32"  # float16 halves the index (its effect on rankings: docs/benchmarks.md)
    batch_texts: int = 1000  # texts per write: memory holds one batch's vectors


def index_corpus(
    model: Model,
    corpus: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    options: IndexOptions | None = None,
    run: RunOptions = RunOptions(),  # noqa: B008
    resume: bool = False,
    add: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    engine: Engine = "local",
    ray: RayOptions | None = None,
    max_texts: int | None = None,
    steady_memory: bool = True,
) -> IndexResult:
    """Index every word occurrence of `corpus` (a file or folder, as `extract` reads; "sample": the bundled one) into
    the folder `out` (see the module docstring).

    `options` None: the index's own when resuming or adding, `IndexOptions()` otherwise; given, they must match an
    existing index's (model, layers, pool and dtype: refused naming which differs). `engine="ray"` computes the
    batches in Ray actors (`ray`: `RayOptions`); the rows written are the local engine's. `max_texts` indexes only
    the corpus's first texts (with `add`, the new files' first texts); a resumed build keeps its own. `steady_memory`
    fixes glibc's mmap threshold (see `bertlens.core.memory`) so that the peak memory stays flat however long the
    corpus.

    >>> built = index_corpus(load_model(), "sample", "sample-index", max_texts=300)  # doctest: +SKIP
    >>> built.texts  # doctest: +SKIP
    300
    """
    model = require_model(model)
    _check_arguments(model, options, run, engine, ray, max_texts, resume=resume, add=add, overwrite=overwrite)
    source, target = corpus_path(corpus), output_path(out, "index")
    if model.source.path is not None:
        refuse_inside(target, model.source.path, "the model's folder")
    state = folder_state(target)
    if state == "other":
        raise InputError(
            f"{target} exists and is not a bertlens index.", "Choose a new folder for the index (it is never touched)."
        )
    if state == "broken" and not overwrite:
        raise damaged(target, f"its {MANIFEST} is missing")
    if steady_memory:
        steady_large_blocks()
    precision = choose_precision(model, run.dtype, run.device).dtype  # what the vectors are computed in
    if (resume or add) and state in ("absent", "empty"):
        raise InputError(
            f"Nothing to {'add to' if add else 'resume'}: {target} holds no index.",
            "Leave out {add} to build one." if add else "Leave out {resume} to build one.",
            arguments={"add": True} if add else {"resume": True},
        )
    if state == "index" and not (resume or add or overwrite):
        raise InputError(f"{target} is already an index.", existing_hint(target), arguments=EXISTING)
    files = None if (resume or add) else cap(plan_files(source), max_texts)  # the corpus validated before any write
    if engine == "ray":  # Ray's processes start (by fork) before LanceDB is loaded: see contextual/engines.py
        from .ray_engine import connect_ahead

        connect_ahead(ray)
    with building(target):
        skipped: tuple[str, ...] = ()
        if files is None:
            index, start, skipped = _reopen(
                model, source, target, state, options, precision, add=add, max_texts=max_texts
            )
        else:
            if state in ("index", "broken"):
                remove_index(target)
            index, start = _created(model, source, target, options or IndexOptions(), files, precision), 0
        if add and start == sum(int(f["texts"]) for f in index.manifest["files"]):
            result = _result(index, start)  # nothing new: the index (and its search structures) stay as they are
        else:
            result = _write(model, index, start, run, progress, engine, ray, retrain=not add, steady=steady_memory)
        return replace(result, skipped=skipped, resumed_after=start if resume else 0)


def _check_arguments(
    model: Model,
    options: IndexOptions | None,
    run: RunOptions,
    engine: Engine,
    ray: RayOptions | None,
    max_texts: int | None,
    *,
    resume: bool,
    add: bool,
    overwrite: bool,
) -> None:
    """`index_corpus`'s arguments checked, Ray's cluster reached when asked for, before any file is looked at."""
    require("lancedb", extra="index")  # found, not imported (Ray's processes start before LanceDB is loaded)
    if sum(map(bool, (resume, add, overwrite))) > 1:
        raise InputError(
            "Choose one of resume, add and overwrite.",
            "{resume} continues, {add} adds files, {overwrite} builds anew.",
            arguments={"resume": True, "add": True, "overwrite": True},
        )
    check_choice(engine, ENGINES, "engine")
    if engine == "ray":  # Ray installed and its cluster reachable, before anything is written
        from .ray_engine import check_ray

        check_ray(ray)
    if options is not None:
        _check_options(model, options)
    if max_texts is not None:
        whole_number(max_texts, "max_texts", minimum=1)
        if resume:
            raise InputError(
                "A resumed build keeps the texts it planned.",
                "Leave out {max_texts} with {resume}.",
                arguments={"max_texts": NAME, "resume": True},
            )
    if not isinstance(run, RunOptions):
        raise InputError(f"run must be RunOptions, got {type(run).__name__}.", "Pass RunOptions().")


def _created(
    model: Model, source: Path, target: Path, chosen: IndexOptions, files: list[dict[str, Any]], precision: str
) -> OccurrenceIndex:
    """A new, empty index in `target` for the corpus files `files`, computed in `precision`."""
    try:
        return create_index(
            target,
            model,
            layers=_absolute(model, chosen.layers),
            pool=chosen.pool,
            dtype=chosen.dtype,
            extra={"corpus": str(source), "batch_texts": chosen.batch_texts, "files": files, "precision": precision},
        )
    except OSError as exc:
        raise write_error(target, exc, "the index") from None


def _write(
    model: Model,
    index: OccurrenceIndex,
    start: int,
    run: RunOptions,
    progress: bool,
    engine: str,
    ray: RayOptions | None,
    retrain: bool = True,
    steady: bool = False,
) -> IndexResult:
    """Append the plan's texts from `start` on, then build the search structures and mark the index complete (an add
    passes `retrain=False`: its ANN indexes are kept while the table has not grown much, see `ann.py`). `steady`:
    the rows were streamed on `steady_large_blocks`' heap, which `release_large_blocks` hands back before the end."""
    from .ann import SETTINGS, build_search_indexes

    files: list[Entry] = index.manifest["files"]
    total = sum(int(f["texts"]) for f in files)
    rows_before = index.rows
    batches = text_batches(files, start, int(index.manifest.get("batch_texts", IndexOptions.batch_texts)))
    computed = (
        _ray_batches(model, batches, index, run, ray)
        if engine == "ray"
        else local_batches(model, batches, index.layers, index.manifest["pool"], run)
    )
    try:
        with bar(total, desc="index", unit="text", show=progress, initial=start) as shown:
            for texts, rows in computed:
                index.append(texts, rows, next_text=int(texts.text_id[-1]) + 1)
                shown.update(len(texts.text))
        if index.text_count != total:
            raise damaged(index.path, f"its corpus files gave {index.text_count:,} texts, their plan {total:,}")
        # One batch is one fragment while the build streams (the peak stays one batch's); `seal` has LanceDB compact
        # them once, with its cleanup of older versions.
        if steady:  # the search structures' arrays get glibc's first rules back, not the streaming heap
            release_large_blocks()
        build_search_indexes(index, progress=progress, retrain=retrain)
        seal(index.path, index.manifest, index.tables, extra=(SETTINGS,))  # LanceDB's cleanup; what it holds recorded
        index.manifest["complete"] = True
        index.write_manifest()
    except OSError as exc:
        raise write_error(index.path, exc, "the index") from None
    return _result(index, start, rows_before)


def _result(index: OccurrenceIndex, start: int, rows_before: int | None = None) -> IndexResult:
    return IndexResult(
        out=str(index.path),
        texts=index.text_count,
        rows=index.rows,
        layers=index.layers,
        dims=index.dims,
        dtype=index.dtype,
        pool=str(index.manifest["pool"]),
        added_texts=index.text_count - start,
        added_rows=0 if rows_before is None else index.rows - rows_before,
        repaired=index.repaired,
    )


def _reopen(
    model: Model,
    source: Path,
    target: Path,
    state: str,
    options: IndexOptions | None,
    precision: str,
    *,
    add: bool,
    max_texts: int | None = None,
) -> tuple[OccurrenceIndex, int, tuple[str, ...]]:
    """The index to continue (resume) or to extend (add), checked against this run; the first text id to write; the
    corpus files skipped as already indexed (an add)."""
    if add:
        files = plan_files(source)  # validates the corpus before the index is even opened for writing
    index = open_for_writing(target)
    _check_same(index, model, options, precision)
    known = index.manifest.setdefault("files", [])
    if not add:
        pending = [f for f in known if int(f["first"]) + int(f["texts"]) > index.text_count]
        if index.complete:
            raise InputError(
                f"Nothing to resume: the index at {target} is complete.",
                "Add files with {add}.",
                arguments={"add": True},
            )
        given = {str(f.resolve()) for f in corpus_files(source)}
        if any(f["path"] not in given for f in pending):
            raise InputError(
                f"Cannot resume {target} with {source}: its interrupted build was of {index.manifest.get('corpus')}.",
                "Resume with the corpus the build started with.",
            )
        check_unchanged(pending)
        return index, index.text_count, ()
    if not index.complete:
        raise InputError(
            f"The index at {target} is not complete: its last build or add was interrupted.",
            "Finish it first with the same call and {resume}, then {add}.",
            arguments={"resume": True, "add": True},
        )
    by_path = {f["path"]: f for f in known}
    changed = [f for f in files if f["path"] in by_path and by_path[f["path"]]["key"] != f["key"]]
    if changed:
        raise InputError(
            f"{changed[0]['path']} is already in the index at {target}, with other content.",
            "Give the new content under another file name, or build the index again ({overwrite}).",
            arguments={"overwrite": True},
        )
    held = {f["key"] for f in known}  # the same content under another name (a copy, another folder) is held too
    fresh = []
    for f in files:
        if f["path"] not in by_path and f["key"] not in held:
            fresh.append(f)
            held.add(f["key"])  # a file given twice in this add is indexed once
    new = renumber(cap([f for f in fresh if int(f["texts"])], max_texts), index.text_count)
    if new:
        known += new
        index.manifest.update(complete=False, corpus=str(source))
        forget_sealed(index.manifest)  # the search structures are about to change: recorded again when complete
        index.write_manifest()  # the plan first: an interrupted add resumes from it
    return index, index.text_count, tuple(f["file"] for f in files if f not in fresh)


def _check_same(index: OccurrenceIndex, model: Model, options: IndexOptions | None, precision: str) -> None:
    """InputError unless this run's model, options and precision are the index's, saying which differ."""
    index.check_model(model)
    stored = index.manifest.get("precision", precision)  # indexes from before it was recorded hold none
    if stored != precision:
        raise InputError(
            f"The index at {index.path} was computed in {stored}; this run would compute {precision}.",
            "Give {precision} (the index's own), or build another index in a new folder.",
            arguments={"precision": str(stored)},
        )
    if options is None:
        return
    asked = {"layers": list(_absolute(model, options.layers)), "pool": options.pool, "dtype": options.dtype}
    stored = {"layers": list(index.layers), "pool": index.manifest["pool"], "dtype": index.dtype}
    differ = [f"{key} {stored[key]} (this run asks for {asked[key]})" for key in asked if asked[key] != stored[key]]
    if differ:
        raise InputError(
            f"The index at {index.path} was built with other options: {'; '.join(differ)}.",
            "Give the index's own options (or none), or build another index in a new folder.",
        )


def _check_options(model: Model, options: IndexOptions) -> None:
    if not isinstance(options, IndexOptions):
        raise InputError(f"options must be IndexOptions, got {type(options).__name__}.", "Pass IndexOptions().")
    check_layers(model, options.layers)
    check_choice(options.pool, WORD_POOLS, "pooling")
    check_choice(options.dtype, VECTOR_DTYPES, "vector dtype")
    whole_number(options.batch_texts, "batch_texts", minimum=1)


def _absolute(model: Model, layers: Iterable[int]) -> tuple[int, ...]:
    count = model.config.num_hidden_layers + 1
    return tuple(sorted({layer + count if layer < 0 else layer for layer in layers}))


def _ray_batches(
    model: Model, batches: Iterable[TextRows], index: OccurrenceIndex, run: RunOptions, ray: RayOptions | None
) -> Iterator[tuple[TextRows, OccurrenceRows]]:
    try:
        from .ray_engine import RayOptions, ray_batches
    except ImportError:
        raise InputError(
            "The Ray engine is not part of this installation.",
            "Use the local engine ({engine}).",
            arguments={"engine": "local"},
        ) from None
    return ray_batches(
        model, batches, index.layers, index.manifest["pool"], run, ray or RayOptions(), rows=occurrence_rows
    )
