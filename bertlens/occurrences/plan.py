"""Which corpus files an occurrence index holds: their content keys, text counts and text ids; their texts in batches.

A build (or an add) first lists its corpus files as plan entries, `{"file", "path", "key", "first", "texts"}`: the name
shown with a text (relative to the corpus given), the resolved path, a SHA-256 of the file's bytes, the first global
text id and the number of texts. Making the plan reads the whole corpus once (UTF-8, not empty), so a bad corpus is
refused before anything is written. The manifest keeps the entries: a resumed build reads the texts again from them,
from the first text id not yet committed, and an add skips the files already there: the same path, or the same
content (key) under any name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from ..core.corpus import corpus_files, iter_texts
from ..core.errors import InputError
from .store import TextRows

Entry = dict[str, Any]  # one corpus file of the plan (JSON-ready, as the manifest stores it)


def file_key(path: Path) -> str:
    """A SHA-256 of the file's bytes (32 hex digits): the same file, unchanged, wherever and whenever it is read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror or exc}.", "Check the corpus file is readable.") from None
    return digest.hexdigest()[:32]


def plan_files(source: Path, first: int = 0) -> list[Entry]:
    """Every file of the corpus at `source`, validated, as plan entries whose text ids start at `first`."""
    counts: dict[str, int] = {}
    for text in iter_texts(source):  # every line decoded: InputError naming the file and line if not UTF-8
        counts[text.file] = counts.get(text.file, 0) + 1
    entries = []
    for file in corpus_files(source):
        texts = counts.get(str(file), 0)
        entries.append(
            {
                "file": file.name if source.is_file() else str(file.relative_to(source)),
                "path": str(file.resolve()),
                "key": file_key(file),
                "first": first,
                "texts": texts,
            }
        )
        first += texts
    return entries


def cap(entries: Sequence[Entry], max_texts: int | None) -> list[Entry]:
    """The entries holding only the first `max_texts` texts (None: all); a file cut short is marked `partial`."""
    if max_texts is None:
        return list(entries)
    out, left = [], max_texts
    for entry in entries:
        texts = min(int(entry["texts"]), left)
        if texts:
            out.append({**entry, "texts": texts, **({"partial": True} if texts < int(entry["texts"]) else {})})
        left -= texts
    return out


def renumber(entries: Sequence[Entry], first: int) -> list[Entry]:
    """The entries with consecutive text ids from `first` (after some were left out)."""
    out = []
    for entry in entries:
        out.append({**entry, "first": first})
        first += int(entry["texts"])
    return out


def text_batches(entries: Sequence[Entry], start: int, size: int) -> Iterator[TextRows]:
    """The texts of the plan with ids from `start` on, `size` at a time (a batch may span files)."""
    texts = (
        (int(entry["first"]) + n, str(entry["file"]), text.line, text.text)
        for entry in entries
        if int(entry["first"]) + int(entry["texts"]) > start and int(entry["texts"]) > 0
        for n, text in enumerate(
            islice(iter_texts(Path(entry["path"])), max(0, start - int(entry["first"])), int(entry["texts"])),
            start=max(0, start - int(entry["first"])),
        )
    )
    while batch := list(islice(texts, size)):
        yield TextRows(
            text_id=np.asarray([b[0] for b in batch], dtype=np.int64),  # (m,)
            file=[b[1] for b in batch],
            line=np.asarray([b[2] for b in batch], dtype=np.int32),  # (m,)
            text=[b[3] for b in batch],
        )


def check_unchanged(entries: Sequence[Entry]) -> None:
    """InputError unless every entry's file is still there with the same content (its texts are read again)."""
    for entry in entries:
        path = Path(entry["path"])
        if not path.is_file() or file_key(path) != entry["key"]:
            what = "is gone" if not path.is_file() else "has changed"
            raise InputError(
                f"The corpus file {path} {what} since this index's build started.",
                "Put the file back as it was and resume ({resume}), or build the index again ({overwrite}).",
                arguments={"resume": True, "overwrite": True},
            )
