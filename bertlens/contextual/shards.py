"""The files of an extract: its manifest (started fresh, or checked for a resume), each shard file's size and
SHA-256, the shards a resume keeps, reading the shards back, and `verify_extract`.

The checks are `core.integrity`'s, as for an occurrence index: reading the shards back checks every file's size; on
resume every shard is checked against its recorded size and checksum (from the first damaged or missing one on, the
shards' files are removed and the manifest cut before it); `verify_extract` checks every byte and reports.
`extract` writes the shards and re-exports `read_shards`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import NAME, InputError
from ..core.extras import require
from ..core.integrity import IntegrityReport, Problem, check_contents, check_sizes, file_digest
from ..core.outputs import make_folder, read_small_text, replace_text, write_error

__all__ = [
    "MANIFEST",
    "MANIFEST_VERSION",
    "file_facts",
    "read_manifest",
    "read_shards",
    "start_manifest",
    "verify_extract",
    "write_json",
]

MANIFEST = "manifest.json"
MANIFEST_VERSION = 2  # 2: each shard lists its files with size and SHA-256
RESUME = {"resume": True}  # the argument that resumes an extract


def start_manifest(target: Path, settings: dict[str, Any], resume: bool) -> dict[str, Any]:
    """A fresh manifest (the folder must not exist), or the one to resume from (its settings must match)."""
    if target.exists():
        if not resume:
            raise InputError(
                f"{target} exists.", "Choose a new folder, or resume an interrupted run ({resume}).", arguments=RESUME
            )
        manifest = read_manifest(target)
        for key in ("model", "corpus_key", "options", "precision"):
            stored = manifest.get(key, settings[key] if key == "precision" else None)  # older ones hold no precision
            if stored != settings[key]:
                raise InputError(
                    f"Cannot resume {target}: its {key.replace('_', ' ')} differs from this run's"
                    + (f" ({stored}, this run {settings[key]})." if key == "precision" else "."),
                    "Resume with the same model, corpus, options and {precision}, or write to a new folder.",
                    arguments={"precision": NAME},
                )
        manifest = _keep_sound_shards(target, manifest)
        settings["resumed_after"] = manifest["texts_done"]
        return manifest
    if resume:
        raise InputError(
            f"Nothing to resume: {target} does not exist.", "Leave out {resume} for a fresh run.", arguments=RESUME
        )
    try:
        make_folder(target)
        manifest = {
            **settings,
            "version": MANIFEST_VERSION,
            "texts_done": 0,
            "rows": 0,
            "shards": [],
            "complete": False,
        }
        write_json(target / MANIFEST, manifest)
    except OSError as exc:
        raise write_error(target, exc, "the extract") from None
    return manifest


def read_manifest(target: Path) -> dict[str, Any]:
    """The manifest of the extract in `target`, checked to be one bertlens wrote (a list of named shards)."""
    hint = "Give the folder of an extract that bertlens wrote, or write a new one without {resume}."
    try:
        manifest = json.loads(read_small_text(target / MANIFEST, "manifest", limit=64 << 20))
    except (InputError, json.JSONDecodeError):
        raise InputError(
            f"{target} holds no readable {MANIFEST}: it is not an extract to resume.", hint, arguments=RESUME
        ) from None
    shards = manifest.get("shards") if isinstance(manifest, dict) else None
    if not isinstance(shards, list) or not all(isinstance(s, dict) and "name" in s for s in shards):
        raise InputError(f"The {MANIFEST} of {target} is damaged (no list of shards).", hint)
    checked: dict[str, Any] = manifest
    return checked


def file_facts(file: Path) -> dict[str, Any]:
    """Size and SHA-256 of a shard file, as the manifest records them."""
    return {"bytes": file.stat().st_size, "sha256": file_digest(file, "sha256")}


def _shard_sound(target: Path, shard: dict[str, Any]) -> bool:
    """Every file of the shard is there with its recorded size and checksum (a shard without them is not trusted)."""
    files = shard.get("files")
    if not isinstance(files, dict) or not files or not all(isinstance(f, dict) for f in files.values()):
        return False
    return not check_contents(target, files)[0]


def _keep_sound_shards(target: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest cut before its first damaged or missing shard (whose files and later ones' are removed)."""
    shards = manifest["shards"]
    sound = next((i for i, shard in enumerate(shards) if not _shard_sound(target, shard)), len(shards))
    if sound == len(shards):
        return manifest
    for shard in shards[sound:]:
        for name in _shard_file_names(shard):
            (target / name).unlink(missing_ok=True)
    kept = shards[:sound]
    manifest = {
        **manifest,
        "version": MANIFEST_VERSION,
        "shards": kept,
        "texts_done": sum(int(s["texts"]) for s in kept),
        "rows": sum(int(s["rows"]) for s in kept),
        "complete": False,
    }
    write_json(target / MANIFEST, manifest)
    return manifest


def _shard_file_names(shard: dict[str, Any]) -> list[str]:
    name = str(shard["name"])
    if name.endswith(".npy"):
        return [name, name.replace("vectors-", "rows-").replace(".npy", ".tsv")]
    return [name]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write `data` as JSON to `path` atomically: readers see the old manifest or the new one, never a part."""
    replace_text(path, json.dumps(data, indent=1))


def read_shards(out: str | os.PathLike[str]) -> Iterator[tuple[np.ndarray, np.ndarray, list[str], np.ndarray]]:
    """Read back an extract's NumPy shards in order: (text ids, positions, words, vectors) per shard."""
    folder = Path(out).expanduser()
    manifest = read_manifest(folder)
    for shard in manifest["shards"]:
        name = shard["name"]
        for problem in check_sizes(folder, shard.get("files") or {})[:1]:
            raise InputError(
                f"The shard file {folder / problem.file} is damaged or missing ({problem.what}).",
                RESUME_HINT,
                arguments=RESUME,
            )
        if name.endswith(".parquet"):
            require("pyarrow", extra="parquet", what="Reading Parquet shards")
            import pyarrow.parquet as pq

            tbl = pq.read_table(folder / name)
            vectors = np.asarray(tbl.column("vector").combine_chunks().flatten(), dtype=np.float32)
            dims = manifest.get("dims", 0)
            yield (
                tbl.column("text_id").to_numpy(),
                tbl.column("position").to_numpy(),
                tbl.column("word").to_pylist(),
                vectors.reshape(-1, dims) if dims else vectors.reshape(0, 0),
            )
            continue
        rows = (folder / name.replace("vectors-", "rows-").replace(".npy", ".tsv")).read_text(encoding="utf-8")
        parts = [line.split("\t") for line in rows.splitlines()]
        yield (
            np.array([int(p[0]) for p in parts], dtype=np.int64),
            np.array([int(p[1]) for p in parts], dtype=np.int32),
            [p[2] for p in parts],
            np.load(folder / name),
        )


RESUME_HINT = "Run the extract again with {resume}: damaged shards are written again."


def verify_extract(out: str | os.PathLike[str]) -> IntegrityReport:
    """Check every byte of the extract in `out` against its manifest's record (each shard file's size and SHA-256):
    `whole`, or the damaged files and what to do. An unfinished extract is not whole either.

    >>> verify_extract("shards/").whole  # doctest: +SKIP
    True
    """
    folder = Path(out).expanduser()
    manifest = read_manifest(folder)
    problems: list[Problem] = []
    files, read = 0, 0
    for shard in manifest["shards"]:
        record = shard.get("files")
        if not isinstance(record, dict) or not record or not all(isinstance(f, dict) for f in record.values()):
            problems.append(
                Problem(str(shard["name"]), "no size or checksum recorded (an extract of an earlier bertlens)")
            )
            continue
        found, bytes_read = check_contents(folder, record)
        problems += found
        files, read = files + len(record), read + bytes_read
    complete = bool(problems) or bool(manifest.get("complete"))
    if not complete:
        problems.append(Problem(MANIFEST, f"{int(manifest.get('texts_done', 0)):,} texts written so far"))
    damaged = tuple(problems)
    hint = RESUME_HINT if damaged else ""
    return IntegrityReport(
        str(folder), "extract", not damaged, files, read, damaged, hint, complete=complete, arguments=RESUME
    )
