"""An index's folder as a whole: what it holds, the lock its writer holds, and `verify_index`, every byte checked.

- `folder_state`: absent, empty, an index, broken (tables without their manifest), or another folder (never touched);
- `building`: the lock a build, resume or add holds while it writes (`bertlens-index.lock`: process id and host), so a
  second writer is refused and a reader can tell a live build from an interrupted one;
- `verify_index`: the manifest's own checksum, the tables' schemas against it, then every file its build recorded
  (sizes and BLAKE2b checksums), the tables' versions and rows: an `IntegrityReport`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from ..core.errors import InputError
from ..core.integrity import IntegrityReport, Problem, release_lock, take_lock
from ..core.outputs import read_small_text, write_error
from .integrity import DAMAGED_HINT, LOCK, RECORD, RESUME, is_structure, manifest_problems, unfinished, verify_files
from .store import MANIFEST, MANIFEST_LIMIT, OCCURRENCES, TEXTS, connect, drop_tables, read_manifest


@contextmanager
def building(target: Path) -> Iterator[None]:
    """Hold the index's lock (`core.integrity.take_lock`) while writing it: a second writer is refused, and a reader
    that finds it unfinished can tell a live build from an interrupted one."""
    try:
        target.mkdir(mode=0o777, parents=True, exist_ok=True)
        take_lock(target / LOCK, f"The index at {target}")
    except OSError as exc:
        raise write_error(target, exc, "the index") from None
    try:
        yield
    finally:
        release_lock(target / LOCK)


def folder_state(target: Path) -> str:
    """absent, empty (a folder), index (a manifest), broken (an index's tables without their manifest), or other."""
    if not target.exists() and not target.is_symlink():
        return "absent"
    if not target.is_dir():
        return "other"
    if (target / MANIFEST).is_file():
        return "index"
    names = {p.name for p in target.iterdir()} - {LOCK}
    if not names:
        return "empty"
    return "broken" if {f"{TEXTS}.lance", f"{OCCURRENCES}.lance"} <= names else "other"


EXISTING = {"resume": True, "add": True, "overwrite": True}  # the arguments existing_hint names


def existing_hint(target: Path) -> str:
    """What to do with an existing index (read only: nothing is repaired here)."""
    try:
        complete = bool(read_manifest(target).get("complete"))
    except InputError:
        return "Choose a new folder, or replace it ({overwrite}: it is damaged)."
    if not complete:
        return "Its build was interrupted: finish it ({resume}), replace it ({overwrite}), or choose another."
    return "Choose a new folder, add new files to it ({add}), or replace it ({overwrite})."


def remove_index(target: Path) -> None:
    """Remove an index's own tables (LanceDB drops them, damaged or not), then its manifest; nothing else in the
    folder is touched."""
    try:
        drop_tables(target)
        (target / MANIFEST).unlink(missing_ok=True)
    except OSError as exc:
        raise write_error(target, exc, "the index") from None


def verify_index(path: str | os.PathLike[str]) -> IntegrityReport:
    """Check every byte of the index at `path` against what its build recorded: `whole`, or the damaged files (each
    with what is wrong) and what to do. An index still being built, or interrupted, is not whole either.

    InputError only when `path` is not an index at all. An index built before bertlens kept a record is reported as
    not verifiable (build it again to make it so).

    >>> verify_index("sample-index").whole  # doctest: +SKIP
    True
    """
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"An index path must be a folder path, got {type(path).__name__}.", "Give the index folder.")
    folder = Path(path).expanduser()

    def report(problems: list[Problem], files: int = 0, read: int = 0, hint: str = DAMAGED_HINT) -> IntegrityReport:
        return IntegrityReport(
            str(folder), "index", not problems, files, read, tuple(problems), hint if problems else ""
        )

    if not (folder / MANIFEST).exists():
        read_manifest(folder)  # raises: not an index
    try:
        raw = read_small_text(folder / MANIFEST, "index manifest", limit=MANIFEST_LIMIT)
        manifest = read_manifest(folder)
    except InputError as exc:
        return report([Problem(MANIFEST, exc.message)])
    problems = manifest_problems(manifest, MANIFEST, raw)
    if problems:  # the record itself cannot be trusted
        return report(problems, 1, len(raw))
    if RECORD not in manifest and manifest.get("complete") is False:  # killed before its first batch was recorded
        what, hint = unfinished(folder, int(manifest.get("texts", 0)))
        return replace(report([Problem(MANIFEST, what)], 1, len(raw), f"{hint}."), complete=False, arguments=RESUME)
    if RECORD not in manifest:
        unrecorded = Problem(MANIFEST, "it holds no record of its files (an index built by an earlier bertlens)")
        made = report([unrecorded], hint="Build it again ({overwrite}) to make it verifiable.")
        return replace(made, arguments={"overwrite": True})
    problems, files, read = verify_files(folder, manifest)  # first: a damaged table may not even open
    if any(is_structure(p.file) for p in problems):  # LanceDB may abort on opening it: the files say it all
        return report(problems, files + 1, read + len(raw))
    try:
        index = connect(folder, manifest)
        found = index.problems()[0]  # the schemas, versions and rows (sizes again: said once)
        problems += [p for p in found if p not in problems]
        if not problems:
            index.verify()  # every text id read: the tables hold the rows the manifest counts
    except InputError as exc:
        problems.append(Problem("tables", exc.message))
    if problems or manifest.get("complete"):
        return report(problems, files + 1, read + len(raw))
    what, hint = unfinished(folder, int(manifest["texts"]))
    return replace(
        report([Problem(MANIFEST, what)], files + 1, read + len(raw), f"{hint}."), complete=False, arguments=RESUME
    )
