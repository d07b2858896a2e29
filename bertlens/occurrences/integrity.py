"""The index's record of what it holds, kept in its manifest, and its checks (the record itself: `core.integrity`).

- Each batch a build writes adds one data file to each table: its size, BLAKE2b checksum and rows are recorded with
  the batch (`record_new_data`), so a resumed build can verify every committed batch.
- When a build or add completes (`seal`), LanceDB cleans its tables (`clean`: `Table.optimize`, which compacts the
  batches' small fragments, brings the search structures up to date and removes every version but the latest, with
  the files only they used), and then every file of each table's folder is recorded, with each table's version and
  rows and `bertlens-search.json`. The files are recorded as bytes: which of them LanceDB needs is its own affair.
- The manifest carries a checksum of its own content (`manifest_text` writes it).

`check_record` is the cheap check of every open (a stat call per file, the tables' versions, the rows per table);
`check_structures` hashes, before LanceDB opens a table, the small files it reads first (its version manifests,
transactions and search structures, `_indices`): LanceDB's Rust code panics or aborts the whole process (SIGABRT) on
some damage to them, which no Python code can catch. `verify_files` reads every recorded byte.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..core.errors import DamagedError, InputError
from ..core.integrity import (
    DIGESTS,
    IntegrityReport,
    Problem,
    check_contents,
    check_sizes,
    damage_error,
    file_facts,
    json_checksum,
    lock_owner,
    relative_files,
)

RECORD = "record"  # the manifest's key: {"files": {path: facts}, "versions": {table: version}, "rows": {table: rows}}
CHECKSUM = "checksum"  # the manifest's key for the checksum of its other content
MANIFEST_NAME = "bertlens-index.json"  # the manifest's file name (as store.MANIFEST)
LOCK = "bertlens-index.lock"  # held by the process that builds the index (core.integrity.take_lock)
STRUCTURE_LIMIT = 16 << 20  # a table's files outside data/ up to this size are hashed at every open (~0.1 s)


DAMAGED_HINT = "Build it again into a new folder, or replace it: `bertlens index CORPUS --out DIR --overwrite`."


def damaged(path: Path, why: str) -> DamagedError:
    """The error of a damaged index, saying why."""
    return DamagedError(f"The index at {path} is damaged: {why}.", DAMAGED_HINT)


def unopenable(path: Path, manifest: Mapping[str, Any], why: str) -> InputError:
    """The error of an index whose tables LanceDB cannot open: the recorded files missing or of another size
    (a stat call each) when there are any, else `why`."""
    found = manifest_problems(manifest, MANIFEST_NAME) + check_sizes(
        path, _recorded(manifest, bool(manifest.get("complete")))
    )
    if not found:
        return damaged(path, why)
    return damage_error(IntegrityReport(str(path), "index", False, 0, 0, tuple(found), DAMAGED_HINT))


RESUME_HINT = "Finish it with the same call and {resume} (`bertlens index CORPUS --out DIR --resume`)"
RESUME = {"resume": True}  # the argument RESUME_HINT names


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
        record.pop("rows", None)


def clean(table: Any) -> None:
    """LanceDB's own upkeep of a table (`Table.optimize`): its small fragments compacted, its search structures
    brought up to date, and every version but the latest removed with the files only those used (an interrupted
    write's uncommitted files too: `delete_unverified`). Only the writer that holds the index's lock calls it, so no
    other writer is at work; a reader of an older version (a server) opens the new one (`versions.LatestVersions`)."""
    with warnings.catch_warnings():  # LanceDB warns that readers of older versions lose them: see above
        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)", category=UserWarning)
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)


def seal(path: Path, manifest: dict[str, Any], tables: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
    """Clean each table (`clean`), then record every file of its folder (in place of what was recorded of it), its
    version and rows, and the `extra` files of the index folder (e.g. the search settings)."""
    forget_sealed(manifest)
    record = manifest.setdefault(RECORD, {})
    files: dict[str, Any] = record.setdefault("files", {})
    versions: dict[str, int] = {}
    rows: dict[str, int] = {}
    for name, table in tables.items():
        clean(table)
        folder = f"{name}.lance"
        for gone in [k for k in files if k.startswith(f"{folder}/")]:
            del files[gone]
        files.update({relative: file_facts(path / relative) for relative in relative_files(path, [folder])})
        versions[name] = int(table.version)
        rows[name] = int(table.count_rows())
    for name in extra:
        if (path / name).is_file():
            files[name] = file_facts(path / name)
    record["versions"] = versions
    record["rows"] = rows


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


def is_structure(name: str) -> bool:
    """A recorded file of a table that is not one of its data files: a version manifest, a transaction, a search
    structure (`_indices`)."""
    return ".lance/" in name and "/data/" not in name


def check_structures(path: Path, manifest: Mapping[str, Any]) -> list[Problem]:
    """The recorded structure files (`is_structure`, at most `STRUCTURE_LIMIT` bytes, with a checksum) of a complete
    index whose bytes differ from those recorded: read before LanceDB reads them. An index whose record holds no
    checksums (an earlier bertlens) has none to check."""
    small = {
        name: facts
        for name, facts in _recorded(manifest, bool(manifest.get("complete"))).items()
        if is_structure(name)
        and isinstance(facts, Mapping)
        and isinstance(facts.get("bytes"), int)
        and facts["bytes"] <= STRUCTURE_LIMIT
        and any(a in facts for a in DIGESTS)
    }
    return check_contents(path, small)[0]


def facts_problems(manifest: Mapping[str, Any], tables: Mapping[str, Any], counts: Mapping[str, int]) -> list[Problem]:
    """The tables' versions against the record, and the rows the record counts per table against the manifest's
    (of a complete index: an unfinished one's tables have moved on)."""
    if not manifest.get("complete"):
        return []
    problems: list[Problem] = []
    record = manifest.get(RECORD)
    if not isinstance(record, Mapping):
        return problems
    versions, rows = record.get("versions"), record.get("rows")
    for name, table in tables.items():
        if isinstance(versions, Mapping) and name in versions and int(table.version) != versions[name]:
            problems.append(
                Problem(f"{name}.lance", f"its version is {int(table.version)}, the index recorded {versions[name]}")
            )
    for name, expected in counts.items():
        held = rows.get(name) if isinstance(rows, Mapping) else None
        if isinstance(held, int) and held != expected:
            problems.append(
                Problem(f"{name}.lance", f"it held {held:,} rows when sealed, the manifest counts {expected:,}")
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
