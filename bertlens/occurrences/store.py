"""The occurrence index on disk: a LanceDB database of every word occurrence of a corpus, with its vectors.

Layout of an index folder:

- `bertlens-index.json` (the manifest): the store version, the model (description and a content hash), the layers
  stored, the word pooling, the vector dtype, the dimensions, the corpus files indexed (each with its key, texts and
  whether it is complete), the texts and rows committed, and `complete`;
- `texts.lance`: one row per corpus text: `text_id` (int64, global across the files), `file` (str), `line` (int32,
  1-based), `text` (str);
- `occurrences.lance`: one row per word occurrence: `text_id` (int64), `position` (int32, the word's index in its text),
  `start`, `end` (int32, character offsets into the text), `word` (str, as written), `key` (str, casefolded: the word
  a same-word search filters on), and one vector column per stored layer, `layer_L` (fixed-size list of float32 or
  float16, D).

Writes go texts first, then occurrences, then the manifest (atomically replaced). The manifest is the truth: rows of
a text id at or past its `texts` count are from an interrupted write and `repair` deletes them, so a resumed build
neither loses nor duplicates a row. An index whose tables hold fewer rows than its manifest counts is damaged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..core.errors import NAME, InputError
from ..core.extras import require
from ..core.integrity import IntegrityReport, Problem, damage_error
from ..core.model import Model
from ..core.outputs import read_small_text, replace_text
from .integrity import (
    DAMAGED_HINT,
    MANIFEST_NAME,
    RESUME,
    check_record,
    check_structures,
    damaged,
    data_names,
    facts_problems,
    manifest_problems,
    manifest_text,
    record_new_data,
    schema_problems,
    unfinished,
    unopenable,
    verify_files,
)
from .reads import damaged_files, first_line, guard_table, is_read_failure, unreadable

MANIFEST = MANIFEST_NAME
MANIFEST_LIMIT = 64 << 20  # bytes: the manifest lists every corpus file (~200 bytes each)
STORE_VERSION = 1
TEXTS = "texts"
OCCURRENCES = "occurrences"
VectorDtype = Literal["float32", "float16"]
VECTOR_DTYPES: tuple[VectorDtype, ...] = ("float32", "float16")


def layer_column(layer: int) -> str:
    """The vector column of an absolute layer number (0 = the embedding layer's output)."""
    return f"layer_{layer}"


def model_identity(model: Model) -> dict[str, str]:
    """Who made the vectors: the model's description and its `content_hash` (config, `word_embeddings`, vocabulary).

    The hash depends only on the model's numbers (not on where its files lie), so an index moved to another machine
    or to object storage still matches its model.
    """
    return {"description": model.source.description, "sha256": model.content_hash}


@dataclass(frozen=True)
class OccurrenceRows:
    """A batch of occurrences to append, all arrays of length n (vectors: per absolute layer, (n, D))."""

    text_id: np.ndarray  # (n,) int64
    position: np.ndarray  # (n,) int32
    start: np.ndarray  # (n,) int32
    end: np.ndarray  # (n,) int32
    word: list[str]
    vectors: Mapping[int, np.ndarray] = field(default_factory=dict)  # layer -> (n, D)

    def __len__(self) -> int:
        return len(self.word)


@dataclass(frozen=True)
class TextRows:
    """A batch of corpus texts to append (all of length m)."""

    text_id: np.ndarray  # (m,) int64
    file: list[str]
    line: np.ndarray  # (m,) int32
    text: list[str]


def _lancedb() -> Any:
    require("lancedb", extra="index")
    import lancedb

    return lancedb


def _schema(layers: Sequence[int], dims: int, dtype: VectorDtype) -> tuple[Any, Any]:
    import pyarrow as pa

    value = pa.float16() if dtype == "float16" else pa.float32()
    texts = pa.schema([("text_id", pa.int64()), ("file", pa.string()), ("line", pa.int32()), ("text", pa.string())])
    columns = [
        ("text_id", pa.int64()),
        ("position", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("word", pa.string()),
        ("key", pa.string()),
    ]
    columns += [(layer_column(layer), pa.list_(value, dims)) for layer in layers]
    return texts, pa.schema(columns)


class OccurrenceIndex:
    """An open index: its manifest and LanceDB tables (see the module docstring for the layout)."""

    def __init__(self, path: Path, manifest: dict[str, Any], db: Any) -> None:
        self.path = path
        self.manifest = manifest
        self.db = db
        self.texts = guard_table(db.open_table(TEXTS), path, TEXTS)  # a read LanceDB fails: DamagedError (reads)
        self.occurrences = guard_table(db.open_table(OCCURRENCES), path, OCCURRENCES)
        self.repaired = 0  # occurrences of an interrupted write that `open_for_writing` removed

    def __repr__(self) -> str:
        return f"OccurrenceIndex({self.rows} occurrences of {self.text_count} texts, layers {list(self.layers)})"

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(int(layer) for layer in self.manifest["layers"])

    @property
    def dims(self) -> int:
        return int(self.manifest["dims"])

    @property
    def dtype(self) -> VectorDtype:
        return "float16" if self.manifest["dtype"] == "float16" else "float32"

    @property
    def rows(self) -> int:
        return int(self.manifest["rows"])

    @property
    def text_count(self) -> int:
        return int(self.manifest["texts"])

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    def column(self, layer: int | None = None) -> str:
        """The vector column of `layer` (absolute, or negative from the last stored layer's model); None: the last."""
        if layer is None:
            return layer_column(self.layers[-1])
        absolute = layer + int(self.manifest["model_layers"]) + 1 if layer < 0 else layer
        if absolute not in self.layers:
            raise InputError(
                f"The index at {self.path} holds layers {list(self.layers)}, not layer {layer}.",
                "Ask for one of those layers, or build an index that stores this layer.",
            )
        return layer_column(absolute)

    def check_model(self, model: Model) -> None:
        """InputError unless `model` is the model this index was built with (same numbers, wherever its files are)."""
        theirs = self.manifest["model"]
        if model_identity(model)["sha256"] != theirs.get("sha256"):
            raise InputError(
                f"The index at {self.path} was built with another model ({theirs.get('description')}), not "
                f"{model.source.description}.",
                "Search it with the {model} it was built with, or build an index with this model.",
                arguments={"model": NAME},
            )

    def texts_of(self, ids: Sequence[int]) -> dict[int, tuple[str, int, str]]:
        """The (file, line, text) of each text id asked for; DamagedError when the texts table lacks one of them."""
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return {}
        table = self.texts.search().where(f"text_id IN ({', '.join(map(str, wanted))})").limit(len(wanted))
        rows = table.to_arrow().to_pydict()
        found = {
            int(t): (str(f), int(n), str(x))
            for t, f, n, x in zip(rows["text_id"], rows["file"], rows["line"], rows["text"], strict=True)
        }
        if len(found) < len(wanted):
            lost = next(i for i in wanted if i not in found)
            raise unreadable(self.path, TEXTS, f"it does not give text {lost:,}, which its occurrences name")
        return found

    def write_manifest(self) -> None:
        replace_text(self.path / MANIFEST, manifest_text(self.manifest))

    @property
    def tables(self) -> dict[str, Any]:
        return {TEXTS: self.texts, OCCURRENCES: self.occurrences}

    def counts(self) -> dict[str, int]:
        """The rows each table holds by the manifest."""
        return {TEXTS: self.text_count, OCCURRENCES: self.rows}

    def append(self, texts: TextRows, rows: OccurrenceRows, *, next_text: int) -> None:
        """Add a batch (texts first, occurrences next, the manifest last); `next_text` is the text count after it."""
        import pyarrow as pa

        text_schema, occ_schema = _schema(self.layers, self.dims, self.dtype)
        if len(texts.text):
            before = data_names(self.path, TEXTS)
            self.texts.add(
                pa.table(
                    {"text_id": texts.text_id, "file": texts.file, "line": texts.line, "text": texts.text},
                    schema=text_schema,
                )
            )
            record_new_data(self.path, self.manifest, TEXTS, before, len(texts.text))
        if len(rows):
            value = np.float16 if self.dtype == "float16" else np.float32
            columns: dict[str, Any] = {
                "text_id": rows.text_id,
                "position": rows.position,
                "start": rows.start,
                "end": rows.end,
                "word": rows.word,
                "key": [w.casefold() for w in rows.word],
            }
            for layer in self.layers:
                matrix = np.ascontiguousarray(rows.vectors[layer], dtype=value)  # (n, D)
                columns[layer_column(layer)] = pa.FixedSizeListArray.from_arrays(
                    pa.array(matrix.reshape(-1)), self.dims
                )
            before = data_names(self.path, OCCURRENCES)
            self.occurrences.add(pa.table(columns, schema=occ_schema))
            record_new_data(self.path, self.manifest, OCCURRENCES, before, len(rows))
        self.manifest["texts"] = int(next_text)
        self.manifest["rows"] = self.rows + len(rows)
        self.write_manifest()

    def problems(self, full: bool = False) -> tuple[list[Problem], int, int]:
        """What is damaged (`integrity.check_record`: cheap; `full`: every recorded byte read, `verify_record`): the
        problems, the files and the bytes checked. The tables' schemas are checked against the manifest first."""
        expected = dict(zip((TEXTS, OCCURRENCES), _schema(self.layers, self.dims, self.dtype), strict=True))
        found = schema_problems(self.tables, expected)
        if found:
            return found, 0, 0
        if full:
            problems, files, read = verify_files(self.path, self.manifest)
            facts = facts_problems(self.manifest, self.tables, self.counts())
            return problems + manifest_problems(self.manifest, MANIFEST) + facts, files, read
        return check_record(self.path, self.manifest, self.tables, self.counts()), 0, 0

    def check(self, full: bool = False) -> None:
        """InputError naming the damaged files when `problems` finds any (the tables' rows counted as well)."""
        problems = self.problems(full)[0]
        if problems:
            raise damage_error(IntegrityReport(str(self.path), "index", False, 0, 0, tuple(problems), DAMAGED_HINT))
        if self.texts.count_rows() < self.text_count or self.occurrences.count_rows() < self.rows:
            raise damaged(self.path, "its tables hold fewer rows than its manifest counts")

    def verify(self) -> None:
        """Read every text id of both tables (streamed; vectors are not read): `damaged` if a table file is missing or
        cut short, or if the tables hold fewer rows than the manifest counts."""
        for table, name in ((self.texts, TEXTS), (self.occurrences, OCCURRENCES)):
            reader = table.search().select(["text_id"]).limit(None).to_batches()  # a file it cannot read: `reads`
            kept = sum(int((batch.column(0).to_numpy() < self.text_count).sum()) for batch in reader)
            expected = self.text_count if name == TEXTS else self.rows
            if kept != expected:
                said = f"its {name} table holds {kept:,} rows of committed texts, its manifest counts {expected:,}"
                raise damaged(self.path, said)

    def repair(self) -> int:
        """Delete rows past the manifest's text count (left by an interrupted write); return how many were removed."""
        texts, rows = self.texts.count_rows(), self.occurrences.count_rows()
        if texts < self.text_count or rows < self.rows:
            raise damaged(self.path, f"its tables hold {rows:,} occurrences, its manifest counts {self.rows:,}")
        if texts == self.text_count and rows == self.rows:
            return 0
        cut = f"text_id >= {self.text_count}"
        self.occurrences.delete(cut)
        self.texts.delete(cut)
        if self.occurrences.count_rows() != self.rows:
            raise damaged(self.path, "its occurrences do not match its manifest after removing an interrupted write")
        return int(rows - self.rows)


def create_index(
    path: Path, model: Model, *, layers: Sequence[int], pool: str, dtype: VectorDtype, extra: Mapping[str, Any]
) -> OccurrenceIndex:
    """A new, empty index in the folder `path` (which must not exist or be empty): manifest and both tables.

    `layers` are absolute layer numbers. `extra` is stored in the manifest as given (build options, corpus files).
    """
    lancedb = _lancedb()
    dims = model.config.hidden_size * (2 if pool == "first+last" else 1)
    manifest: dict[str, Any] = {
        "version": STORE_VERSION,
        "model": model_identity(model),
        "model_layers": model.config.num_hidden_layers,
        "layers": [int(layer) for layer in layers],
        "pool": pool,
        "dtype": dtype,
        "dims": dims,
        "texts": 0,
        "rows": 0,
        "complete": False,
        **extra,
    }
    path.mkdir(mode=0o777, parents=True, exist_ok=True)
    replace_text(path / MANIFEST, manifest_text(manifest))  # first: a folder killed here is an index (damaged)
    db = lancedb.connect(str(path))
    text_schema, occ_schema = _schema(layers, dims, dtype)
    db.create_table(TEXTS, schema=text_schema)
    db.create_table(OCCURRENCES, schema=occ_schema)
    return OccurrenceIndex(path, manifest, db)


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the index at `path`; InputError when there is none or it cannot be read."""
    hint = "Give the folder of an index that `bertlens index` wrote."
    if not (path / MANIFEST).exists():
        what = "does not exist" if not path.exists() else f"holds no {MANIFEST}: it is not a bertlens index"
        raise InputError(f"{path} {what}.", hint)
    try:
        manifest = json.loads(read_small_text(path / MANIFEST, "index manifest", limit=MANIFEST_LIMIT, hint=hint))
    except json.JSONDecodeError:
        raise damaged(path, f"its {MANIFEST} is not valid JSON") from None
    needed = ("version", "model", "layers", "dims", "dtype", "texts", "rows")
    if not isinstance(manifest, dict) or any(k not in manifest for k in needed):
        raise damaged(path, f"its {MANIFEST} lacks {', '.join(needed)}")
    if manifest["version"] != STORE_VERSION:
        raise InputError(
            f"The index at {path} has store version {manifest['version']}; this bertlens reads {STORE_VERSION}.",
            "Build the index again with this bertlens.",
        )
    return manifest


def open_index(
    path: str | os.PathLike[str], *, model: Model | None = None, layers: Sequence[int] | None = None
) -> OccurrenceIndex:
    """Open the index at `path` for reading: checked against `model` and `layers` when given, complete, undamaged.

    `layers` (absolute or negative) must all be stored. An index whose build was interrupted is refused with the
    hint to resume it.
    """
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"An index path must be a folder path, got {type(path).__name__}.", "Give the index folder.")
    folder = Path(path).expanduser()
    index = connect(folder, read_manifest(folder))
    if not index.complete:
        what, hint = unfinished(folder, index.text_count)
        raise InputError(
            f"The index at {folder} is not complete: {what}.", f"{hint}, then search it.", arguments=RESUME
        )
    index.check()
    if model is not None:
        index.check_model(model)
    for layer in layers or ():
        index.column(layer)
    return index


def open_for_writing(path: Path) -> OccurrenceIndex:
    """Open an existing index to resume or add to (no completeness check): every recorded byte checked (all of a
    complete index; an unfinished one's committed batches), every table file read (`verify`), then interrupted writes
    removed (`repaired` says how many occurrences)."""
    index = connect(path, read_manifest(path))
    index.check(full=True)
    index.verify()
    index.repaired = index.repair()
    return index


def drop_tables(folder: Path) -> None:
    """Drop the index's tables from the LanceDB database in `folder` (`DBConnection.drop_table`), where present."""
    for name in (TEXTS, OCCURRENCES):
        _lancedb().connect(str(folder)).drop_table(name, ignore_missing=True)


def connect(folder: Path, manifest: dict[str, Any]) -> OccurrenceIndex:
    if found := check_structures(folder, manifest):  # hashed before LanceDB reads them: some damage aborts it
        raise damaged_files(folder, found)
    try:
        return OccurrenceIndex(folder, manifest, _lancedb().connect(str(folder)))
    except BaseException as exc:  # lance's errors and a panic in its Rust code; anything else as raised
        if not is_read_failure(exc):
            raise
        raise unopenable(folder, manifest, f"its tables cannot be opened ({first_line(exc)})") from None
