"""Vector spaces of the input matrix's rows: the raw space, and anisotropy-adjusted ones (centred, optionally with
the top principal directions removed, "all-but-the-top"), each with unit-length rows for cosine scans."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import NAME, InputError


@dataclass(frozen=True)
class Adjustment:
    """Anisotropy correction: subtract the mean row, and optionally remove the top principal directions.

    >>> pair = similarity(load_model(), "bread", "loaf", adjustment=Adjustment(center=True, remove_top=3))
    >>> pair.raw_score is not None  # the raw cosine beside the adjusted one
    True
    """

    center: bool = False  # subtract the mean vector of all rows
    remove_top: int = 0  # "all-but-the-top" (Mu & Viswanath 2018): remove the D top principal directions

    def __post_init__(self) -> None:
        if not isinstance(self.center, bool):
            raise InputError(f"center must be True or False, got {self.center!r}.", "Pass Adjustment(center=True).")
        if isinstance(self.remove_top, bool) or not isinstance(self.remove_top, (int, np.integer)):
            raise InputError(
                f"{{remove_top}} must be a whole number, got {self.remove_top!r}.",
                "Give the number of principal directions to remove, e.g. 3; 0 removes none.",
                arguments={"remove_top": NAME},
            )
        if self.remove_top < 0:
            raise InputError(
                f"{{remove_top}} must be 0 or more, got {self.remove_top}.",
                "Give the number of principal directions to remove, e.g. 3; 0 removes none.",
                arguments={"remove_top": NAME},
            )

    @property
    def active(self) -> bool:
        return self.center or self.remove_top > 0

    def describe(self) -> str:
        if not self.active:
            return "none"
        parts = ["centred"]  # all-but-the-top centres first
        if self.remove_top:
            parts.append(f"top {self.remove_top} principal directions removed")
        return ", ".join(parts)


@dataclass
class Space:
    """Rows in one vector space (raw, or adjusted): unit rows for cosine, raw rows for dot/euclidean."""

    rows: np.ndarray  # (rows, E) float32
    unit: np.ndarray  # (rows, E) float32, unit length (zero rows stay zero)
    mean: np.ndarray | None = None  # (E,) subtracted before projection, when adjusted
    components: np.ndarray | None = None  # (D, E) principal directions removed, when adjusted

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        """Map vectors (n, E) of the raw space into this space."""
        out = vectors.astype(np.float32)
        if self.mean is not None:
            out = out - self.mean
        if self.components is not None and len(self.components):
            out = out - (out @ self.components.T) @ self.components  # (n, D) @ (D, E)
        return out


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """(rows, E) float32 rows at unit length; zero rows stay zero."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


def adjusted_space(rows: np.ndarray, adjustment: Adjustment, fit_rows: np.ndarray) -> Space:
    """Centre (mean of the rows in `fit_rows`) and remove the top principal directions of the centred rows."""
    fit = rows[fit_rows].astype(np.float64)
    mean = fit.mean(axis=0)
    components = np.zeros((0, rows.shape[1]))
    if adjustment.remove_top:
        centred = fit - mean
        _, vectors = np.linalg.eigh(centred.T @ centred)  # (E, E), columns by ascending eigenvalue
        components = vectors[:, ::-1][:, : adjustment.remove_top].T  # (D, E), largest first
    space = Space(rows=rows, unit=rows, mean=mean.astype(np.float32), components=components.astype(np.float32))
    adjusted = space.transform(rows)  # (rows, E)
    return Space(rows=adjusted, unit=unit_rows(adjusted), mean=space.mean, components=space.components)
