"""The orthogonal Procrustes alignment of one space onto another, and how far each row stays from its partner.

Two separately trained spaces are arbitrary rotations of whatever they learned: the same geometry can sit on any axes,
so the raw cosine of a token's row in A with its row in B says nothing (near 0 for a rotated copy of the very same
space). What can be compared is the geometry: the neighbours of a token (rotation does not change them), and the rows
after the rotation that best maps A onto B. `align` finds that rotation with scipy's `orthogonal_procrustes` on rows
made comparable first, as in cross-lingual embedding mapping: each row scaled to unit length, the mean row taken away
(the common direction every BERT space has), and scaled to unit length again. When the two spaces have different
widths, the narrower one's rows are padded with zeros to the wider: the map found is then a rotation of the wider
space whose restriction is an isometric embedding of the narrower one (no stretching, as an orthogonal map must be).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.extras import require
from .neighbours import unit_rows


@dataclass(frozen=True)
class Alignment:
    """A's rows rotated onto B's: the rotation, the cosine left per row, and the raw cosine (same width only)."""

    rotation: np.ndarray  # (d, d) float64, d = the wider width; rows of A (padded) @ rotation ≈ rows of B
    aligned_cosine: np.ndarray  # (n,) float64: cos(a_i R, b_i) of the prepared rows
    raw_cosine: np.ndarray | None  # (n,) float64: cos(a_i, b_i) of the raw rows; None when the widths differ
    padded: str | None  # "A" or "B": whose rows were padded with zeros to the other's width; None when equal
    centre_a: np.ndarray  # (d_a,) the mean of A's unit rows, taken away before the rotation (`prepared`)
    centre_b: np.ndarray  # (d_b,)

    @property
    def residual(self) -> np.ndarray:
        """(n,) cosine distance left after alignment, 1 - cos(a_i R, b_i): 0 for a row that lies where A's rotation
        takes it, up to 2."""
        residual: np.ndarray = 1.0 - self.aligned_cosine
        return residual

    @property
    def fit(self) -> float:
        """The mean aligned cosine: 1.0 when B is a rotation of A."""
        return float(self.aligned_cosine.mean())


def prepared(rows: np.ndarray, centre: np.ndarray | None = None) -> np.ndarray:
    """(n, d) float64 rows made comparable across spaces: unit length, centred (on `centre`, by default the mean of the
    unit rows), unit length again."""
    centred = unit_rows(rows).astype(np.float64)
    centred -= centred.mean(axis=0) if centre is None else centre
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    out: np.ndarray = centred / np.where(norms == 0, 1, norms)
    return out


def padded_to(rows: np.ndarray, width: int) -> np.ndarray:
    return rows if rows.shape[1] == width else np.pad(rows, ((0, 0), (0, width - rows.shape[1])))


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) float64 cosine of row i of `a` with row i of `b` (0 where either is all zeros)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("nd,nd->n", a, b)
    out: np.ndarray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return out


def align(a: np.ndarray, b: np.ndarray) -> Alignment:
    """The rotation that best maps rows `a` (n, d_a) onto rows `b` (n, d_b), one row per token, both orders alike."""
    require("scipy", extra="diff", what="Aligning two spaces")
    from scipy.linalg import orthogonal_procrustes

    width = max(a.shape[1], b.shape[1])
    centre_a = unit_rows(a).astype(np.float64).mean(axis=0)  # (d_a,)
    centre_b = unit_rows(b).astype(np.float64).mean(axis=0)  # (d_b,)
    x = padded_to(prepared(a, centre_a), width)  # (n, d)
    y = padded_to(prepared(b, centre_b), width)  # (n, d)
    rotation, _ = orthogonal_procrustes(x, y)
    aligned = x @ rotation  # (n, d): unit rows still (an orthogonal map keeps lengths)
    padded = None if a.shape[1] == b.shape[1] else ("A" if a.shape[1] < b.shape[1] else "B")
    return Alignment(
        rotation=rotation,
        aligned_cosine=np.clip(row_cosines(aligned, y), -1.0, 1.0),
        raw_cosine=row_cosines(a, b) if padded is None else None,
        padded=padded,
        centre_a=centre_a,
        centre_b=centre_b,
    )
