"""The index's read boundary: every read of its LanceDB tables passes through `ReadGuard`, which turns the error of a
damaged file into the index's `DamagedError`.

The cheap checks of every open (`integrity.check_record`: each file there at its size) do not read the bytes of the
data files (the small structure files are hashed first, `integrity.check_structures`), so a data file changed in
place opens, and LanceDB fails only when a search reads it. How it fails depends on the byte: one of
lance's errors (ValueError "Invalid input, ...", RuntimeError "lance error: Encountered corrupt file ...", OSError),
pyarrow's (`ArrowException`), or a panic in its Rust code, which reaches Python as the async runtime's `RustPanic`
(an Exception) or as pyo3's `PanicException` (a BaseException, told apart by its name here so that nothing else
derived from BaseException, KeyboardInterrupt above all, is caught). Each becomes `DamagedError`: the index is
damaged, the file where LanceDB's message names one, and `bertlens index DIR --verify` as what to do.

`ReadGuard` wraps a table's reads (`READS`: `search`, `count_rows`, `take_offsets`, ...), the query builders they
return (each step and `to_arrow`, `to_batches`, ...) and the batches a reader streams. Every other attribute of the
table (its writes, `version`, `list_indices`) is the table's own, untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import DamagedError
from ..core.integrity import Problem

READS = frozenset({"search", "query", "count_rows", "take_offsets", "take_row_ids", "head", "to_arrow", "to_pandas"})
PANICS = frozenset({"PanicException", "RustPanic"})  # pyo3's (a BaseException) and pyo3-async-runtimes' (Exception)
# a file of a table named in LanceDB's message: `occurrences.lance/data/x.lance`, `texts.lance/_indices/u/page_data...`
_FILE = re.compile(r"\b(?:texts|occurrences)\.lance/[^\s,;:'\"()\[\]]+")
_SOURCE = re.compile(r",?\s*\S*/\.cargo/\S*")  # where in LanceDB's Rust source the error was raised: not for a user


def is_panic(exc: BaseException) -> bool:
    """A panic in LanceDB's Rust code, as pyo3 raises it (by the class's name: pyo3 does not export the class)."""
    return any(kind.__name__ in PANICS for kind in type(exc).__mro__)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (at most 200 characters), or its type's name when it has none."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:200]


def verify_hint(path: Path) -> str:
    """What to do about the damaged index at `path`: verify it, then build it again."""
    return (
        f"`bertlens index {path} --verify` checks every byte and names each damaged file; then build the index "
        "again (`bertlens index CORPUS --out DIR --overwrite`)."
    )


def unreadable(path: Path, table: str, why: str) -> DamagedError:
    """The DamagedError of a table of the index at `path` that cannot be read, saying `why`."""
    return DamagedError(f"The index at {path} is damaged: its {table} table cannot be read: {why}.", verify_hint(path))


def damaged_files(path: Path, problems: Sequence[Problem], limit: int = 5) -> DamagedError:
    """The DamagedError of the index at `path` whose files `problems` names (the first `limit` of them)."""
    more = f" (and {len(problems) - limit:,} more)" if len(problems) > limit else ""
    named = "; ".join(str(p) for p in problems[:limit])
    return DamagedError(f"The index at {path} is damaged: {named}{more}.", verify_hint(path))


def is_read_failure(exc: BaseException) -> bool:
    """A failure of a LanceDB or pyarrow read: one of lance's errors, pyarrow's, or a panic in LanceDB's Rust code."""
    import pyarrow as pa

    return isinstance(exc, (OSError, ValueError, RuntimeError, pa.ArrowException)) or is_panic(exc)


def read_error(path: Path, table: str, exc: BaseException) -> DamagedError:
    """The DamagedError of a read of `table` that LanceDB failed with `exc`: the file where its message names one."""
    named = _FILE.search(str(exc))
    where = f"{named[0]}: " if named else ""
    return unreadable(path, table, f"{where}LanceDB says {_SOURCE.sub('', first_line(exc))!r}")


def guarded(path: Path, table: str, read: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`read(*args, **kwargs)`, a LanceDB, pyarrow or Rust failure of it turned into `read_error` (the end of a
    stream, StopIteration, and everything else go on as raised)."""
    import pyarrow as pa

    try:
        return read(*args, **kwargs)
    except (OSError, ValueError, RuntimeError, pa.ArrowException) as exc:  # lance's errors and pyarrow's
        raise read_error(path, table, exc) from None
    except BaseException as exc:  # a Rust panic, and nothing else: anything else goes on as it was raised
        if not is_panic(exc):
            raise
        raise read_error(path, table, exc) from None


class ReadGuard:
    """A LanceDB table (`READS` guarded), query builder (every call guarded) or stream of batches (each guarded)."""

    def __init__(self, inner: Any, path: Path, table: str, *, whole: bool = False) -> None:
        self._inner = inner
        self._path = path
        self._table = table
        self._whole = whole  # every call is a read (a query builder, a reader), not only `READS`

    def __repr__(self) -> str:
        return repr(self._inner)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found) or not (self._whole or name in READS):
            return found
        return self._call(found)

    def _call(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(guarded(self._path, self._table, method, *args, **kwargs))

        return call

    def _wrap(self, result: Any) -> Any:
        """A query builder or a stream of batches guarded in turn; any other result as it is."""
        import pyarrow as pa

        if type(result).__module__.startswith("lancedb.") or isinstance(result, pa.RecordBatchReader):
            return ReadGuard(result, self._path, self._table, whole=True)
        return result

    def __iter__(self) -> ReadGuard:
        return self

    def __next__(self) -> Any:
        return guarded(self._path, self._table, next, self._inner)


def guard_table(table: Any, path: Path, name: str) -> ReadGuard:
    """`table` (LanceDB's, of the index at `path`) with its reads guarded."""
    return ReadGuard(table, path, name)
