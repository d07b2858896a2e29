"""Export the input matrix with its vocabulary: .npy, safetensors, word2vec text, TensorBoard projector files.

npy and safetensors hold the whole matrix (row i is token id i). word2vec and TensorBoard can hold a subset: rows kept
by a `TokenFilter` (the same classes as `bertlens neighbors`' filters) and at most `count` of them, by id. TensorBoard
leaves out special and [unused] rows unless asked, and writes `projector_config.pbtxt`, so
`tensorboard --logdir DIR` opens the projector on the folder directly.

Files are written into a staging folder beside the destination (see `bertlens.core.outputs`) and moved in only when all
are complete, so a failed export leaves nothing half-written, and one killed midway is cleaned up by the next.
Floats are written with 9 significant digits, which round-trips float32.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import EXPORT_FORMATS, ExportFormat
from ..core.outputs import folder_for, follow_umask, move_in, output_path, staging, write_error
from ..core.progress import Bar, bar
from ..core.results import Result, table

if TYPE_CHECKING:
    from .token_classes import TokenFilter

FILES: dict[str, tuple[str, ...]] = {
    "npy": ("word_embeddings.npy", "vocab.txt"),
    "safetensors": ("word_embeddings.safetensors", "vocab.txt"),
    "word2vec": ("word_embeddings.w2v.txt",),
    "tensorboard": ("vectors.tsv", "metadata.tsv", "projector_config.pbtxt"),
}
SUBSETS = ("word2vec", "tensorboard")  # formats whose rows carry their token, so a subset keeps its meaning
_KINDS = ("special", "unused", "continuation", "numbers", "punctuation")  # a row's kind: the first class it is in
_KIND_NAMES = {"continuation": "piece", "numbers": "number"}


@dataclass(frozen=True)
class RenamedToken:
    """A row whose token could not be written as-is (empty, with whitespace, or no token at all)."""

    id: int
    token: str | None
    written_as: str


@dataclass(frozen=True)
class ExportResult(Result):
    """What `export_matrix` wrote: the files, how many rows of how many dimensions, and what was left out.

    >>> export_matrix(load_model(), "vectors-st/", "safetensors").files
    ('vectors-st/word_embeddings.safetensors', 'vectors-st/vocab.txt')
    """

    model: str
    format: str
    directory: str
    files: tuple[str, ...]
    rows: int  # rows written
    dims: int
    renamed: tuple[RenamedToken, ...]  # rows written under a stand-in name, each listed
    matrix_rows: int = 0  # rows of the whole matrix
    kept: str = "every row"  # which rows were written: every row, or the filter and count that chose them
    notes: tuple[str, ...] = ()

    def to_table(self) -> str:
        lines = [f"Exported {self.rows} rows x {self.dims} dims ({self.format}) from {self.model}:"]
        lines += [f"  {f}" for f in self.files]
        if self.rows != self.matrix_rows:
            lines.append(f"Rows kept: {self.rows:,} of {self.matrix_rows:,}: {self.kept}.")
        lines += [f"note: {note}" for note in self.notes]
        if self.renamed:
            lines.append(
                f"{len(self.renamed)} rows written under a stand-in name (their token has whitespace or is missing):"
            )
            lines.append(
                table(["id", "token", "written as"], [(r.id, repr(r.token), r.written_as) for r in self.renamed])
            )
        return "\n".join(lines)


def row_names(model: Model, rows: int) -> tuple[list[str], list[RenamedToken]]:
    """One writable name per row: the token itself, or `[row_N]` when it is empty, has whitespace or is absent."""
    names: list[str] = []
    renamed: list[RenamedToken] = []
    seen: set[str] = set()
    for i, token in enumerate(model.vocabulary.tokens_by_id(rows)):
        name = token if token is not None and _writable(token) and token not in seen else f"[row_{i}]"
        if name != token:
            renamed.append(RenamedToken(i, token, name))
        seen.add(name)
        names.append(name)
    return names, renamed


def chosen_rows(
    model: Model, filters: TokenFilter | None, count: int | None, fmt: str
) -> tuple[np.ndarray, list[str], str]:
    """The ids to export (ascending), every row's kind (word, piece, number, punctuation, special, unused), and which
    rows were kept, in words. No filter and no count: every row, except that TensorBoard leaves out special and
    [unused] rows (TokenFilter()); a count alone keeps the first `count` rows that TokenFilter() allows."""
    from .token_classes import TokenFilter, token_classes

    rows = model.matrix_rows
    classes = token_classes(model.vocabulary.tokens_by_id(rows), model.vocabulary.special_ids)
    kinds = ["word"] * rows
    for name in reversed(_KINDS):  # the first class listed wins
        for i in np.flatnonzero(classes[name]).tolist():
            kinds[i] = _KIND_NAMES.get(name, name)
    if filters is None and count is None and fmt != "tensorboard":
        return np.arange(rows), kinds, "every row"
    used = TokenFilter() if filters is None else filters
    ids = np.flatnonzero(used.keep(classes))
    if count is not None:
        ids = ids[:count]
    said = describe_filter(used) + ("" if count is None else f", the first {count:,} by id")
    return ids, kinds, said


def describe_filter(filters: TokenFilter) -> str:
    """Which rows a filter keeps, in words: "whole words, pieces, numbers, punctuation (no special, no [unused])"."""
    kept = [name for name, on in (("whole words", True), ("pieces", filters.continuation)) if on]
    kept += [name for name, on in (("numbers", filters.numbers), ("punctuation", filters.punctuation)) if on]
    kept += [name for name, on in (("special tokens", filters.special), ("[unused] rows", filters.unused)) if on]
    left = [name for name, on in (("special tokens", filters.special), ("[unused] rows", filters.unused)) if not on]
    return ", ".join(kept) + (f" (no {', no '.join(left)})" if left else "")


def _writable(token: str) -> bool:
    """Whether a token can stand as a row's name in every format: not empty, printable, no whitespace."""
    return token != "" and token.isprintable() and not any(c.isspace() for c in token)


def export_matrix(
    model: Model,
    directory: str | os.PathLike[str],
    fmt: ExportFormat = "word2vec",
    *,
    overwrite: bool = False,
    filters: TokenFilter | None = None,
    count: int | None = None,
    progress: bool = False,
) -> ExportResult:
    """Write `word_embeddings` and its vocabulary into `directory` in format `fmt`.

    `filters` (a `TokenFilter`) and `count` (the first N kept rows, by id) export a subset, for word2vec and
    TensorBoard; TensorBoard leaves out special and [unused] rows unless `filters` keeps them. `progress` shows a bar
    on standard error while rows are written.

    >>> result = export_matrix(load_model(), "vectors-w2v/", "word2vec", filters=TokenFilter.words_only(), count=1000)
    >>> result.rows
    1000
    """
    if not isinstance(fmt, str) or fmt not in EXPORT_FORMATS:
        raise InputError(f"Unknown export format {fmt!r}.", f"Choose one of: {', '.join(EXPORT_FORMATS)}.")
    _check_subset(fmt, filters, count)
    out = output_path(directory, "export")
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a directory.", "Give a directory (it is created if missing).")
    targets = [out / name for name in FILES[fmt]]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise InputError(
            f"Would overwrite {', '.join(existing)}.",
            "Choose another directory, or pass {overwrite}.",
            arguments={"overwrite": True},
        )
    matrix = model.embedding_weights.word_embeddings  # (rows, E)
    ids, kinds, kept = chosen_rows(model, filters, count, fmt)
    if len(ids) == 0:
        raise InputError(f"No rows are left to export ({kept}).", "Keep more kinds of tokens (drop a filter).")
    names, renamed = row_names(model, len(matrix))
    rows = Rows(
        matrix if len(ids) == len(matrix) else matrix[ids], ids, [names[i] for i in ids], [kinds[i] for i in ids]
    )
    try:
        with folder_for(out.parent), staging(out.parent, "export") as folder:  # beside `out`: the moves are renames
            built = folder / "export"  # the marker stays behind in `folder` when `built` is moved in
            built.mkdir(mode=0o777)
            with bar(len(ids), desc=f"export {fmt}", unit="row", show=progress) as shown:
                _WRITERS[fmt](built, rows, shown, _tensor_name(model))
            move_in(built, out, FILES[fmt])
    except OSError as exc:
        raise write_error(out, exc, "the export") from None
    written = set(ids.tolist())
    notes = []
    if fmt == "tensorboard":
        notes.append(f"tensorboard --logdir {out} opens the projector on it (projector_config.pbtxt).")
    return ExportResult(
        model=model.source.description,
        format=fmt,
        directory=str(out),
        files=tuple(str(t) for t in targets),
        rows=len(ids),
        dims=int(matrix.shape[1]),
        renamed=tuple(r for r in renamed if r.id in written),
        matrix_rows=int(matrix.shape[0]),
        kept=kept,
        notes=tuple(notes),
    )


def _check_subset(fmt: str, filters: TokenFilter | None, count: int | None) -> None:
    from .token_classes import TokenFilter

    if filters is not None and not isinstance(filters, TokenFilter):
        raise InputError(f"filters must be a TokenFilter, got {filters!r}.", "Example: TokenFilter.words_only().")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InputError(f"count must be a positive whole number, got {count!r}.", "Example: count=5000.")
    if (filters is not None or count is not None) and fmt not in SUBSETS:
        raise InputError(
            f"{fmt} exports hold the whole matrix (row i is token id i); a subset would lose that.",
            f"Export a subset as {' or '.join(SUBSETS)} (each row names its token), or the whole matrix as {fmt}.",
        )


@dataclass(frozen=True)
class Rows:
    """The rows to write: vectors (n, E), their ids, names and kinds, in order."""

    vectors: np.ndarray
    ids: np.ndarray
    names: list[str]
    kinds: list[str]


def _tensor_name(model: Model) -> str:
    name = os.path.basename(model.source.description.split(" at ")[0].rstrip("/")) or "model"
    return f"word_embeddings of {name}"


def _write_vocab(path: Path, names: list[str]) -> None:
    path.write_text("".join(n + "\n" for n in names), encoding="utf-8")


def _write_npy(staging: Path, rows: Rows, shown: Bar, tensor: str) -> None:
    np.save(staging / "word_embeddings.npy", rows.vectors)
    _write_vocab(staging / "vocab.txt", rows.names)
    shown.update(len(rows.ids))


def _write_safetensors(staging: Path, rows: Rows, shown: Bar, tensor: str) -> None:
    from safetensors.numpy import save_file

    save_file({"word_embeddings": np.ascontiguousarray(rows.vectors)}, str(staging / "word_embeddings.safetensors"))
    follow_umask(staging / "word_embeddings.safetensors")  # save_file makes it 0o600
    _write_vocab(staging / "vocab.txt", rows.names)
    shown.update(len(rows.ids))


_CHUNK = 2048  # rows formatted at a time (and progress steps)


def _write_rows(
    path: Path, matrix: np.ndarray, names: list[str] | None, sep: str, header: str | None, shown: Bar
) -> None:
    template = sep.join(["%.9g"] * matrix.shape[1])
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        if header is not None:
            handle.write(header)
        for start in range(0, len(matrix), _CHUNK):
            chunk = matrix[start : start + _CHUNK].tolist()
            for i, row in enumerate(chunk, start):
                prefix = "" if names is None else names[i] + sep
                handle.write(prefix + template % tuple(row) + "\n")
            shown.update(len(chunk))


def _write_word2vec(staging: Path, rows: Rows, shown: Bar, tensor: str) -> None:
    count, dims = rows.vectors.shape
    _write_rows(staging / "word_embeddings.w2v.txt", rows.vectors, rows.names, " ", f"{count} {dims}\n", shown)


def _write_tensorboard(staging: Path, rows: Rows, shown: Bar, tensor: str) -> None:
    _write_rows(staging / "vectors.tsv", rows.vectors, None, "\t", None, shown)
    lines = (f"{n}\t{i}\t{k}\n" for n, i, k in zip(rows.names, rows.ids.tolist(), rows.kinds, strict=True))
    (staging / "metadata.tsv").write_text("token\tid\tkind\n" + "".join(lines), encoding="utf-8")
    (staging / "projector_config.pbtxt").write_text(projector_config(tensor, rows.vectors.shape), encoding="utf-8")


def projector_config(tensor: str, shape: tuple[int, ...]) -> str:
    """TensorBoard's ProjectorConfig in protobuf text format: one embedding, its TSV files beside the config."""
    quoted = tensor.replace("\\", "\\\\").replace('"', '\\"')
    return (
        "embeddings {\n"
        f'  tensor_name: "{quoted}"\n'
        f"  tensor_shape: {shape[0]}\n"
        f"  tensor_shape: {shape[1]}\n"
        '  tensor_path: "vectors.tsv"\n'
        '  metadata_path: "metadata.tsv"\n'
        "}\n"
    )


_WRITERS: dict[str, Callable[[Path, Rows, Bar, str], None]] = {
    "npy": _write_npy,
    "safetensors": _write_safetensors,
    "word2vec": _write_word2vec,
    "tensorboard": _write_tensorboard,
}
