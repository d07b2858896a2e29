"""What every result type shares: `to_dict()` for JSON (CLI `--json`, the web API), a readable table, and in a
notebook the same table as HTML (`_repr_html_`) or as a pandas DataFrame (`to_pandas()`).

The HTML and the DataFrame are made from the very tables `to_table()` draws: while they are asked for, `table()`
records its headers and rows (raw values) and leaves a marker in the text, so every result reads in a notebook as it
does in a terminal, with no second description of its columns. Specific results draw more (bertlens.core.notebook).
pandas is imported only inside `to_pandas()`.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import math
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np

from .errors import InputError
from .options import SHOWN_NUMBERS
from .records import Records

# A pandas DataFrame. pandas is optional, ships no type information and has no stubs installed here, so to mypy its
# values are of unknown type; the name says what they are.
DataFrame: TypeAlias = Any
_SIMPLE = (str, int, bool, type(None))  # returned as they are (checked first: most values are these)


def plain(value: Any) -> object:
    """`value` as JSON-ready Python data: dataclasses become dicts, arrays lists, NaN None (others as they are)."""
    kind = type(value)
    if kind in _SIMPLE:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Records)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Result:
    """Mixin for result dataclasses: `to_dict()`, `__str__` as a table, and a short `__repr__` for notebooks."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def to_table(self) -> str:  # pragma: no cover - every result overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_table()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.to_table())

    def _repr_html_(self) -> str:
        """The table of `to_table()` as HTML, escaped: tables as tables, the lines around them as they print."""
        return box(type(self).__name__, table_html(self))

    def to_pandas(self) -> DataFrame:
        """The table of `to_table()` as a pandas DataFrame, with the raw values (several tables of the same columns
        are stacked, with a `part` column saying which each row came from)."""
        return tables_frame(type(self).__name__, captured_tables(self))


TableData = tuple[tuple[str, ...], list[tuple[Any, ...]]]  # (headers, rows) of one table()
# While HTML or a DataFrame is made: the tables recorded so far, and the marker's nonce (no text can forge a marker).
_CAPTURE: ContextVar[tuple[str, list[TableData]] | None] = ContextVar("bertlens_table_capture", default=None)


@contextmanager
def capturing() -> Iterator[tuple[str, list[TableData]]]:
    """While inside, `table()` records each table it is given and returns a marker line in its place."""
    state: tuple[str, list[TableData]] = (secrets.token_hex(8), [])
    token = _CAPTURE.set(state)
    try:
        yield state
    finally:
        _CAPTURE.reset(token)


def captured_tables(result: Result) -> list[TableData]:
    with capturing() as (_, found):
        result.to_table()
    return found


# Turns one captured table into (headers, rows, names of columns that hold ready-made HTML), e.g. adding score bars.
Columns = Callable[[tuple[str, ...], list[tuple[Any, ...]]], tuple[Sequence[str], Sequence[Sequence[Any]], list[str]]]


def table_html(result: Result, columns: Columns | None = None) -> str:
    """`result.to_table()` as HTML: each table() an HTML table (through `columns` when given), the text between in
    <pre> (escaped)."""
    with capturing() as (nonce, found):
        text = result.to_table()
    parts: list[str] = []
    for i, chunk in enumerate(re.split(f"\x00{nonce}:(\\d+)\x00", text)):
        lines = chunk.strip("\n")
        if i % 2:
            headers, rows = found[int(chunk)]
            parts.append(html_table(*columns(headers, rows)) if columns else html_table(headers, rows))
        elif lines:
            parts.append(f'<pre class="bl-text">{html.escape(lines)}</pre>')
    return "\n".join(parts)


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], raw: Sequence[str] = ()) -> str:
    """An HTML table: cells formatted as `table()` formats them (escaped), numbers right-aligned. Columns named in
    `raw` hold HTML already made (not escaped again)."""
    numeric = [all(is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]
    keep = [h in raw for h in headers]

    def td(value: Any, num: bool, ready: bool) -> str:
        return f"<td{' class=num' if num else ''}>{value if ready else html.escape(cell(value))}</td>"

    head = "".join(
        f"<th{' class=num' if n else ''}>{html.escape(h)}</th>" for h, n in zip(headers, numeric, strict=True)
    )
    body = "".join(
        "<tr>" + "".join(td(v, n, k) for v, n, k in zip(row, numeric, keep, strict=True)) + "</tr>" for row in rows
    )
    return f'<table class="bl-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


STYLE = """<style>
.bl{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4;color:inherit;
max-width:100%;overflow-x:auto}
.bl-kind{font-size:11px;letter-spacing:.04em;text-transform:uppercase;opacity:.6;margin:0 0 4px}
.bl-table{border-collapse:collapse;margin:4px 0 8px;font-variant-numeric:tabular-nums}
.bl-table th,.bl-table td{padding:2px 10px 2px 6px;text-align:left;border-bottom:1px solid rgba(128,128,128,.25);
white-space:nowrap}
.bl-table th{font-weight:600;border-bottom:1px solid rgba(128,128,128,.6)}
.bl-table .num{text-align:right}
.bl-text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;white-space:pre-wrap;
margin:4px 0;background:none;padding:0;border:0}
</style>"""


def box(kind: str, body: str, style: str = "") -> str:
    """A result's HTML: the shared style, its type as a small heading, then `body`."""
    return f'{STYLE}{style}<div class="bl"><div class="bl-kind">{html.escape(kind)}</div>{body}</div>'


def pandas_module() -> ModuleType:
    """pandas, imported now (never at `import bertlens`), or an InputError that says how to get it."""
    try:
        pandas = importlib.import_module("pandas")  # by name: no pandas stubs needed for mypy
    except ImportError:
        raise InputError(
            "to_pandas() needs pandas, which is not installed.",
            "pip install pandas (or use to_dict(), which needs nothing).",
        ) from None
    return pandas


def data_frame(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> DataFrame:
    """A pandas DataFrame of `rows` under `columns`."""
    frame: DataFrame = pandas_module().DataFrame([list(r) for r in rows], columns=list(columns))
    return frame


def tables_frame(kind: str, found: list[TableData]) -> DataFrame:
    if not found:
        raise InputError(f"{kind} has no table to turn into a DataFrame.", "Use to_dict() for its data.")
    if len({headers for headers, _ in found}) > 1:
        raise InputError(
            f"{kind} holds {len(found)} tables with different columns.",
            "Take one part (e.g. result[0].to_pandas()) or use to_dict().",
        )
    if len(found) == 1:
        return data_frame(found[0][0], found[0][1])
    headers = found[0][0]
    return data_frame(["part", *headers], [(i, *row) for i, (_, rows) in enumerate(found) for row in rows])


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: columns padded to their widest cell, numbers right-aligned. (Inside `capturing()`, the
    headers and rows are recorded and a marker stands in the text instead.)"""
    state = _CAPTURE.get()
    if state is not None:
        nonce, found = state
        found.append((tuple(headers), [tuple(row) for row in rows]))
        return f"\x00{nonce}:{len(found) - 1}\x00"
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def cell(value: Any) -> str:
    """One value as a table shows it: None as '-', booleans as 'yes' or nothing, floats to 4 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


def first_numbers(vector: np.ndarray, dims: int = SHOWN_NUMBERS) -> str:
    """A vector (D,) as a table shows it: its first `dims` numbers, "…" and the size when there are more:
    "[+0.0214 -0.1142 … (384)]"."""
    numbers = " ".join(f"{x:+.4f}" for x in vector[:dims].tolist())
    more = f" … ({len(vector)})" if len(vector) > dims else ""
    return f"[{numbers}{more}]"


def visible(piece: str) -> str:
    """A token as text a person can read in a table: whitespace and control characters escaped."""
    return piece.encode("unicode_escape").decode("ascii") if not piece.isprintable() else piece


@dataclasses.dataclass(frozen=True, repr=False)
class ResultList(Result):
    """Several results of one command, in order: JSON `{"results": [...]}`, tables one after another."""

    results: tuple[Result, ...]

    def __repr__(self) -> str:
        return f"ResultList({len(self.results)} results)"

    def to_table(self) -> str:
        return "\n\n".join(r.to_table() for r in self.results)
