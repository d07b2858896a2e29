"""What every result type shares: `to_dict()` for JSON (CLI `--json`, later the web API) and a readable table."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

_SIMPLE = (str, int, bool, type(None))  # returned as they are (checked first: most values are these)


def plain(value: Any) -> Any:
    """`value` as JSON-ready Python data: dataclasses become dicts, arrays lists, NaN None."""
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
    if isinstance(value, (list, tuple)):
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


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: columns padded to their widest cell, numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


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
