"""Export the whole input matrix with its vocabulary: .npy, safetensors, word2vec text, TensorBoard projector TSV.

Files are written into a staging folder beside the destination (see `bertlens.core.outputs`) and moved in only when all
are complete, so a failed export leaves nothing half-written, and one killed midway is cleaned up by the next.
Floats are written with 9 significant digits, which round-trips float32.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.model import Model
from ..core.options import EXPORT_FORMATS, ExportFormat
from ..core.outputs import folder_for, follow_umask, output_path, staging, write_error
from ..core.results import Result, table

FILES: dict[str, tuple[str, ...]] = {
    "npy": ("word_embeddings.npy", "vocab.txt"),
    "safetensors": ("word_embeddings.safetensors", "vocab.txt"),
    "word2vec": ("word_embeddings.w2v.txt",),
    "tensorboard": ("vectors.tsv", "metadata.tsv"),
}


@dataclass(frozen=True)
class RenamedToken:
    """A row whose token could not be written as-is (empty, with whitespace, or no token at all)."""

    id: int
    token: str | None
    written_as: str


@dataclass(frozen=True)
class ExportResult(Result):
    model: str
    format: str
    directory: str
    files: tuple[str, ...]
    rows: int
    dims: int
    renamed: tuple[RenamedToken, ...]  # rows written under a stand-in name, each listed

    def to_table(self) -> str:
        lines = [f"Exported {self.rows} rows x {self.dims} dims ({self.format}) from {self.model}:"]
        lines += [f"  {f}" for f in self.files]
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


def _writable(token: str) -> bool:
    """Whether a token can stand as a row's name in every format: not empty, printable, no whitespace."""
    return token != "" and token.isprintable() and not any(c.isspace() for c in token)


def export_matrix(
    model: Model,
    directory: str | os.PathLike[str],
    fmt: ExportFormat = "word2vec",
    *,
    overwrite: bool = False,
) -> ExportResult:
    """Write `word_embeddings` and its vocabulary into `directory` in format `fmt`."""
    if not isinstance(fmt, str) or fmt not in EXPORT_FORMATS:
        raise InputError(f"Unknown export format {fmt!r}.", f"Choose one of: {', '.join(EXPORT_FORMATS)}.")
    out = output_path(directory, "export")
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a directory.", "Give a directory (it is created if missing).")
    targets = [out / name for name in FILES[fmt]]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise InputError(f"Would overwrite {', '.join(existing)}.", "Choose another directory, or pass --overwrite.")
    matrix = model.embedding_weights.word_embeddings  # (rows, E)
    names, renamed = row_names(model, len(matrix))
    try:
        with folder_for(out), staging(out.parent, "export") as folder:  # beside `out`: the moves are renames
            _WRITERS[fmt](folder, matrix, names)
            for name in FILES[fmt]:
                os.replace(folder / name, out / name)
    except OSError as exc:
        raise write_error(out, exc, "the export") from None
    return ExportResult(
        model=model.source.description,
        format=fmt,
        directory=str(out),
        files=tuple(str(t) for t in targets),
        rows=int(matrix.shape[0]),
        dims=int(matrix.shape[1]),
        renamed=tuple(renamed),
    )


def _write_vocab(path: Path, names: list[str]) -> None:
    path.write_text("".join(n + "\n" for n in names), encoding="utf-8")


def _write_npy(staging: Path, matrix: np.ndarray, names: list[str]) -> None:
    np.save(staging / "word_embeddings.npy", matrix)
    _write_vocab(staging / "vocab.txt", names)


def _write_safetensors(staging: Path, matrix: np.ndarray, names: list[str]) -> None:
    from safetensors.numpy import save_file

    save_file({"word_embeddings": np.ascontiguousarray(matrix)}, str(staging / "word_embeddings.safetensors"))
    follow_umask(staging / "word_embeddings.safetensors")  # save_file makes it 0o600
    _write_vocab(staging / "vocab.txt", names)


def _write_rows(path: Path, matrix: np.ndarray, names: list[str] | None, sep: str, header: str | None) -> None:
    template = sep.join(["%.9g"] * matrix.shape[1])
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        if header is not None:
            handle.write(header)
        for i, row in enumerate(matrix.tolist()):
            prefix = "" if names is None else names[i] + sep
            handle.write(prefix + template % tuple(row) + "\n")


def _write_word2vec(staging: Path, matrix: np.ndarray, names: list[str]) -> None:
    rows, dims = matrix.shape
    _write_rows(staging / "word_embeddings.w2v.txt", matrix, names, " ", f"{rows} {dims}\n")


def _write_tensorboard(staging: Path, matrix: np.ndarray, names: list[str]) -> None:
    _write_rows(staging / "vectors.tsv", matrix, None, "\t", None)
    (staging / "metadata.tsv").write_text(
        "token\tid\n" + "".join(f"{n}\t{i}\n" for i, n in enumerate(names)), encoding="utf-8"
    )


_WRITERS: dict[str, Callable[[Path, np.ndarray, list[str]], None]] = {
    "npy": _write_npy,
    "safetensors": _write_safetensors,
    "word2vec": _write_word2vec,
    "tensorboard": _write_tensorboard,
}
