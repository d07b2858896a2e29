"""What an output holds, recorded when it is written and checked when it is read; and who is writing it.

A record maps each data file (a path relative to the output's folder) to its facts: its size in bytes and a checksum
of its bytes (BLAKE2b, 32 hex digits; an extract written before BLAKE2b was used records SHA-256, which is read too),
with any other facts the writer keeps beside them (rows). Two levels of checking read it:

- `check_sizes`: every recorded file is there at its recorded size, one `stat` call each (cheap: done on every open);
- `check_contents`: the sizes, then every byte read and its checksum compared (a single changed byte is found).

A JSON record carries a checksum of its own content (`json_checksum`), so the record cannot change unnoticed either.
`IntegrityReport` is what a verification answers (`bertlens index INDEX --verify`).

A writer that builds an output in place holds its lock (`take_lock`: a file with its process id and host), so a reader
that finds the output unfinished can say whether a live process is still building it (`lock_owner`) or its build was
interrupted; a second writer is refused while the first lives.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DamagedError, InputError, fill
from .outputs import process_alive
from .results import Result, table

DIGEST = "blake2b"  # the checksum recorded for new files
DIGESTS = ("blake2b", "sha256")  # the checksums a record may hold (sha256: extracts written before BLAKE2b)
BLOCK = 1 << 20  # bytes read at a time

FileFacts = dict[str, Any]  # {"bytes": int, "blake2b" or "sha256": hex, ...}
Record = Mapping[str, Mapping[str, Any]]  # relative path -> facts


def file_digest(path: Path, algorithm: str = DIGEST) -> str:
    """The checksum of a file's bytes, read in blocks (BLAKE2b: 32 hex digits; SHA-256: 64)."""
    digest = hashlib.blake2b(digest_size=16) if algorithm == "blake2b" else hashlib.new(algorithm)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_facts(path: Path, **extra: Any) -> FileFacts:
    """A file's size and BLAKE2b checksum, with `extra` facts (e.g. rows) beside them."""
    return {"bytes": path.stat().st_size, DIGEST: file_digest(path), **extra}


def json_checksum(data: Mapping[str, Any]) -> str:
    """A checksum of JSON-ready data, independent of key order and layout."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Problem:
    """One damaged part of an output: the file (relative to its folder) and what is wrong with it."""

    file: str
    what: str

    def __str__(self) -> str:
        return f"{self.file}: {self.what}"


def _size_problem(root: Path, name: str, facts: Mapping[str, Any]) -> Problem | None:
    try:
        size = (root / name).stat().st_size
    except FileNotFoundError:
        return Problem(name, "missing")
    except OSError as exc:
        return Problem(name, f"cannot be read ({exc.strerror or exc})")
    recorded = facts.get("bytes") if isinstance(facts, Mapping) else None
    if size != recorded:
        return Problem(name, f"{size:,} bytes, {recorded:,} recorded" if isinstance(recorded, int) else "no size")
    return None


def check_sizes(root: Path, record: Record) -> list[Problem]:
    """The recorded files that are missing or not of their recorded size (one stat call each)."""
    return [p for name, facts in record.items() if (p := _size_problem(root, name, facts)) is not None]


def check_contents(root: Path, record: Record) -> tuple[list[Problem], int]:
    """The recorded files that are missing, of another size or whose checksum differs; and the bytes read."""
    problems, read = [], 0
    for name, facts in record.items():
        found = _size_problem(root, name, facts)
        if found is None:
            algorithm = next((a for a in DIGESTS if a in facts), None)
            if algorithm is None:
                found = Problem(name, "no checksum recorded")
            else:
                try:
                    if file_digest(root / name, algorithm) != facts[algorithm]:
                        found = Problem(name, "its bytes differ from those written (checksum)")
                except OSError as exc:
                    found = Problem(name, f"cannot be read ({exc.strerror or exc})")
                read += int(facts["bytes"])
        if found is not None:
            problems.append(found)
    return problems, read


@dataclass(frozen=True, repr=False)
class IntegrityReport(Result):
    """A verification of an output (an occurrence index, an extract): whole, or its damaged files and what to do.

    >>> report = verify_index("sample-index")  # doctest: +SKIP
    >>> report.whole, report.files  # doctest: +SKIP
    (True, 31)
    """

    path: str
    kind: str  # "index" or "extract"
    whole: bool
    files: int  # files whose every byte was checked
    bytes: int  # bytes read
    problems: tuple[Problem, ...] = ()
    hint: str = ""  # what to do when not whole, its Python arguments as `{name}` placeholders (core/errors.py)
    complete: bool = True  # False: its writer has not finished (still running, or interrupted)
    arguments: Mapping[str, object] = field(default_factory=dict)  # the arguments the hint names, by placeholder

    def to_dict(self) -> dict[str, Any]:
        found = super().to_dict()
        found["hint"] = fill(self.hint, self.arguments)
        del found["arguments"]
        return found

    def __repr__(self) -> str:
        return f"IntegrityReport({self.summary()})"

    def summary(self) -> str:
        """One line: whole (files and bytes checked), or how many files are damaged."""
        if self.whole:
            return f"The {self.kind} at {self.path} is whole: {self.files:,} files, {self.bytes:,} bytes checked."
        if not self.complete and len(self.problems) == 1:
            return f"The {self.kind} at {self.path} is not complete: {self.problems[0].what}."
        return f"The {self.kind} at {self.path} is damaged: {len(self.problems):,} problem(s)."

    def to_table(self) -> str:
        if self.whole:
            return self.summary()
        rows = [(p.file, p.what) for p in self.problems]
        return "\n".join((self.summary(), table(["file", "problem"], rows), f"hint: {fill(self.hint, self.arguments)}"))


def damage_error(report: IntegrityReport, limit: int = 5) -> InputError:
    """The error a damaged (`DamagedError`) or unfinished (`InputError`) output raises: the first `limit` damaged
    files, and the report's hint."""
    if not report.complete and len(report.problems) == 1:
        return InputError(report.summary(), report.hint, arguments=report.arguments)
    named = "; ".join(str(p) for p in report.problems[:limit])
    more = f" (and {len(report.problems) - limit:,} more)" if len(report.problems) > limit else ""
    return DamagedError(
        f"The {report.kind} at {report.path} is damaged: {named}{more}.", report.hint, arguments=report.arguments
    )


# --- who is writing an output ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """The process that holds an output's lock: its id and host, and whether it still runs (None: another host)."""

    pid: int
    host: str
    alive: bool | None

    def describe(self) -> str:
        if self.alive is None:
            return f"a process on host {self.host} (pid {self.pid})"
        return f"a live process (pid {self.pid})" if self.alive else f"a process that has ended (pid {self.pid})"


def lock_owner(lock: Path) -> Owner | None:
    """Who holds the lock file `lock`, or None when there is none (or it cannot be read: a writer killed mid-write)."""
    try:
        about = json.loads(lock.read_text(encoding="utf-8"))
        pid, host = int(about["pid"]), str(about["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Owner(pid, host, process_alive(pid) if host == socket.gethostname() else None)


def take_lock(lock: Path, what: str) -> None:
    """Hold `lock` for this process; InputError if another process that may still run holds it (one that has ended
    on this host, or an unreadable lock, is taken over)."""
    about = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
    for _ in range(3):
        try:
            descriptor = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            owner = lock_owner(lock)
            if owner is not None and owner.pid != os.getpid() and owner.alive is not False:
                raise InputError(
                    f"{what} is being built by {owner.describe()}.",
                    f"Wait for that build to finish; if it runs no more, remove {lock}.",
                ) from None
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(about)
        return
    raise InputError(f"{what} is being built by another process.", f"Wait for it; if none runs, remove {lock}.")


def release_lock(lock: Path) -> None:
    """Give up `lock` if this process holds it."""
    owner = lock_owner(lock)
    if owner is not None and owner.pid == os.getpid() and owner.host == socket.gethostname():
        lock.unlink(missing_ok=True)


def relative_files(root: Path, folders: Iterable[str]) -> list[str]:
    """Every file under the given sub-folders of `root`, as paths relative to `root` (sorted)."""
    found: list[str] = []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            found += [p.relative_to(root).as_posix() for p in base.rglob("*") if p.is_file()]
    return sorted(found)
