"""The index's record of what it holds, kept in its manifest, and its checks (the record itself: `core.integrity`).

- Each batch a build writes adds one data file to each table: its size, BLAKE2b checksum and rows are recorded with
  the batch (`record_new_data`), so a resumed build can verify every committed batch.
- When a build or add completes (`seal`), what LanceDB left of earlier versions is removed (search structures the
  latest version no longer uses, older version manifests, an interrupted write's data files), and the rest is
  recorded: the search structures, the latest version manifest of each table and its version number,
  `bertlens-search.json`.
- The manifest carries a checksum of its own content (`manifest_text` writes it).

`check_record` is the cheap check of every open (a stat call per file, the tables' versions, the rows per table);
`verify_files` reads every recorded byte.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.integrity import (
    Problem,
    check_contents,
    check_sizes,
    file_facts,
    json_checksum,
    lock_owner,
    relative_files,
)

RECORD = "record"  # the manifest's key for the record: {"files": {path: facts}, "versions": {table: version}}
CHECKSUM = "checksum"  # the manifest's key for the checksum of its other content
MANIFEST_NAME = "bertlens-index.json"  # the manifest's file name (as store.MANIFEST)
LOCK = "bertlens-index.lock"  # held by the process that builds the index (core.integrity.take_lock)


DAMAGED_HINT = "Build it again into a new folder, or replace it: `bertlens index CORPUS --out DIR --overwrite`."


def damaged(path: Path, why: str) -> InputError:
    """The InputError of a damaged index, saying why."""
    return InputError(f"The index at {path} is damaged: {why}.", DAMAGED_HINT)


RESUME_HINT = "Finish it with the same call and `resume=True` (`bertlens index CORPUS --out DIR --resume`)"


def unfinished(path: Path, texts: int) -> tuple[str, str]:
    """Why the index at `path` is not complete, and what to do: a live build still writes it (its lock's owner
    runs), or its build was interrupted after `texts` texts."""
    owner = lock_owner(path / LOCK)
    if owner is not None and owner.alive is not False:
        return f"it is being built by {owner.describe()}, {texts:,} texts so far", "Wait for that build to finish"
    return f"its build was interrupted after {texts:,} texts", RESUME_HINT


def manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as written: its checksum (of every other key) set, then JSON with one-space indents."""
    manifest[CHECKSUM] = json_checksum({k: v for k, v in manifest.items() if k != CHECKSUM})
    return json.dumps(manifest, indent=1)


def manifest_problems(manifest: Mapping[str, Any], name: str, raw: str | None = None) -> list[Problem]:
    """The manifest's own damage: its checksum differs from its content (or, given its `raw` text, that text is not
    exactly what was written). A manifest without a checksum (written by an earlier bertlens) is taken as it is."""
    if CHECKSUM not in manifest:
        return []
    if manifest[CHECKSUM] != json_checksum({k: v for k, v in manifest.items() if k != CHECKSUM}):
        return [Problem(name, "its content differs from what was written (checksum)")]
    if raw is not None and raw != json.dumps(manifest, indent=1):
        return [Problem(name, "its bytes differ from what was written")]
    return []


def _data_prefix(table: str) -> str:
    return f"{table}.lance/data/"


def data_names(path: Path, table: str) -> set[str]:
    """The file names in a table's data folder now (before a write, to tell the files it adds)."""
    try:
        return set(os.listdir(path / _data_prefix(table)))
    except FileNotFoundError:
        return set()


def record_new_data(path: Path, manifest: dict[str, Any], table: str, before: set[str], rows: int) -> None:
    """Record the data files a write added to `table` (those not in `before`): size, checksum and rows."""
    added = sorted(data_names(path, table) - before)
    files = manifest.setdefault(RECORD, {}).setdefault("files", {})
    for name in added:
        relative = _data_prefix(table) + name
        files[relative] = file_facts(path / relative, rows=rows if len(added) == 1 else None)


def forget_sealed(manifest: dict[str, Any]) -> None:
    """Drop what `seal` recorded (an add or a resume changes it), keeping the data files."""
    record = manifest.get(RECORD)
    if isinstance(record, dict):
        files = record.get("files") or {}
        record["files"] = {k: v for k, v in files.items() if "/data/" in k}
        record.pop("versions", None)


def _version_manifest(table_folder: Path, version: int) -> Path | None:
    """A table's manifest file of `version` (LanceDB's v2 names count down from 2**64 - 1; v1 names count up)."""
    for name in (f"{(1 << 64) - 1 - version:020d}.manifest", f"{version}.manifest"):
        if (table_folder / "_versions" / name).is_file():
            return table_folder / "_versions" / name
    return None


def prune(table_folder: Path, table: Any) -> int:
    """Remove what the table's latest version no longer uses: search structures replaced since, and older version
    manifests. Returns the bytes freed. Nothing is removed when the table's indexes cannot all be named."""
    version = int(table.version)
    latest = _version_manifest(table_folder, version)
    indices = list(table.list_indices())
    if latest is None or any(int(getattr(i, "num_segments", 1) or 1) != 1 for i in indices):
        return 0
    used = {str(i.index_uuid) for i in indices}
    freed = 0
    folder = table_folder / "_indices"
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        if entry.is_dir() and entry.name not in used:
            freed += sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
            shutil.rmtree(entry)
    for entry in (table_folder / "_versions").glob("*.manifest"):
        if entry != latest:
            freed += entry.stat().st_size
            entry.unlink()
    return freed


def drop_unrecorded_data(path: Path, name: str, table: Any, files: Mapping[str, Any]) -> int:
    """Remove the data files of table `name` that the record does not name (an interrupted write's, whose rows
    `repair` deleted), only when the record provably names every data file the latest version uses: as many as the
    table has fragments (one file each), holding all its rows. Returns the bytes freed."""
    prefix = _data_prefix(name)
    mine = {k: f for k, f in files.items() if k.startswith(prefix) and isinstance(f, Mapping)}
    rows = [f.get("rows") for f in mine.values()]
    counted = [r for r in rows if isinstance(r, int)]
    try:
        stats = table.stats()
        fragments = stats["fragment_stats"]["num_fragments"] if isinstance(stats, Mapping) else None
        held = int(table.count_rows())
    except Exception:  # a lancedb without these statistics: keep everything
        return 0
    if fragments != len(mine) or len(counted) != len(rows) or sum(counted) != held:
        return 0
    freed = 0
    for entry in sorted(p for p in (path / prefix).iterdir() if p.is_file()):
        if prefix + entry.name not in mine:
            freed += entry.stat().st_size
            entry.unlink()
    return freed


def seal(path: Path, manifest: dict[str, Any], tables: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
    """Prune each table (`prune`), then record the files of its latest version beside the data files already
    recorded, its version, and the `extra` files of the index folder (e.g. the search settings)."""
    forget_sealed(manifest)
    record = manifest.setdefault(RECORD, {})
    files: dict[str, Any] = record.setdefault("files", {})
    versions: dict[str, int] = {}
    for name, table in tables.items():
        folder = path / f"{name}.lance"
        prune(folder, table)
        drop_unrecorded_data(path, name, table, files)
        versions[name] = int(table.version)
        kept = relative_files(path, [f"{name}.lance/_indices", f"{name}.lance/_deletions"])
        latest = _version_manifest(folder, versions[name])
        if latest is not None:
            kept.append(latest.relative_to(path).as_posix())
        hint = folder / "_versions" / "latest_version_hint.json"
        if hint.is_file():
            kept.append(hint.relative_to(path).as_posix())
        files.update({relative: file_facts(path / relative) for relative in kept})
    for name in extra:
        if (path / name).is_file():
            files[name] = file_facts(path / name)
    record["versions"] = versions


def _describe(schema: Any) -> str:
    """What a table schema stores, as a reader would say it: its vector columns' layers, dims and type, else columns."""
    vectors = [f for f in schema if f.name.startswith("layer_") and hasattr(f.type, "list_size")]
    others = [f.name for f in schema if f not in vectors]
    if not vectors:
        return f"columns {', '.join(others)}"
    shapes = sorted(
        {
            (
                f.type.list_size,
                {"halffloat": "float16", "float": "float32"}.get(str(f.type.value_type), str(f.type.value_type)),
            )
            for f in vectors
        }
    )
    shape = "; ".join(f"{d} dims of {t}" for d, t in shapes)
    return f"layers {sorted(int(f.name[6:]) for f in vectors if f.name[6:].isdigit())} ({shape})"


def schema_problems(tables: Mapping[str, Any], expected: Mapping[str, Any]) -> list[Problem]:
    """Each table whose schema (column names and types) is not the one its manifest describes (`expected`)."""
    problems: list[Problem] = []
    for name, table in tables.items():
        try:
            stored = table.schema
        except Exception as exc:  # lance reports an unreadable manifest as RuntimeError, OSError or ValueError
            problems.append(Problem(f"{name}.lance", f"its schema cannot be read ({str(exc)[:200]})"))
            continue
        want = expected[name]
        if [(f.name, f.type) for f in stored] != [(f.name, f.type) for f in want]:
            problems.append(
                Problem(f"{name}.lance", f"it stores {_describe(stored)}; the manifest says {_describe(want)}")
            )
    return problems


def _recorded(manifest: Mapping[str, Any], complete: bool) -> dict[str, Any]:
    """The recorded files to check: all of them when the index is complete, else only the committed data files."""
    record = manifest.get(RECORD)
    files = record.get("files") if isinstance(record, Mapping) else None
    if not isinstance(files, Mapping):
        return {}
    return {k: v for k, v in files.items() if complete or "/data/" in k}


def facts_problems(manifest: Mapping[str, Any], tables: Mapping[str, Any], counts: Mapping[str, int]) -> list[Problem]:
    """The tables' versions against the record, and the rows the record counts per table against the manifest's
    (of a complete index: an unfinished one's tables have moved on)."""
    if not manifest.get("complete"):
        return []
    problems: list[Problem] = []
    record = manifest.get(RECORD)
    if not isinstance(record, Mapping):
        return problems
    versions = record.get("versions")
    for name, table in tables.items():
        if isinstance(versions, Mapping) and name in versions and int(table.version) != versions[name]:
            problems.append(
                Problem(f"{name}.lance", f"its version is {int(table.version)}, the index recorded {versions[name]}")
            )
    files = _recorded(manifest, complete=False)  # the data files
    for name, expected in counts.items():
        rows = [f.get("rows") for k, f in files.items() if k.startswith(_data_prefix(name)) and isinstance(f, Mapping)]
        held = sum(r for r in rows if isinstance(r, int))
        if rows and all(isinstance(r, int) for r in rows) and held != expected:
            problems.append(
                Problem(
                    f"{name}.lance", f"its recorded data files hold {held:,} rows, the manifest counts {expected:,}"
                )
            )
    return problems


def check_record(
    path: Path, manifest: Mapping[str, Any], tables: Mapping[str, Any], counts: Mapping[str, int]
) -> list[Problem]:
    """The cheap checks: every recorded file there at its size, versions and rows as recorded, the manifest's own
    checksum. `counts`: the rows each table should hold."""
    complete = bool(manifest.get("complete"))
    problems = manifest_problems(manifest, MANIFEST_NAME) + check_sizes(path, _recorded(manifest, complete))
    return problems + facts_problems(manifest, tables, counts)


def verify_files(path: Path, manifest: Mapping[str, Any]) -> tuple[list[Problem], int, int]:
    """Every recorded byte read and checked (all files when complete, the committed data files otherwise): the
    problems, the files checked and the bytes read. Needs no table open (a damaged one may not open)."""
    recorded = _recorded(manifest, bool(manifest.get("complete")))
    problems, read = check_contents(path, recorded)
    return problems, len(recorded), read
