"""Rows from every checkpoint in one 2-D frame, so that their movement between checkpoints is comparable.

Both projections are fitted once, to the unit rows of all checkpoints together (PCA: the two directions of most
variance of all of them, centred), and every checkpoint's rows are drawn in that same plane:

- `shared_projection`: the probe words' (pooled) rows, one path per word;
- `group_projection`: the learning groups' words' rows (`purity.learning_groups`), one frame per checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _plane(stacked: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """(points, 2) coordinates of the unit rows of `stacked` (points, E) in their two principal directions, and the
    share of the variance each direction holds. The sign of each direction is fixed (its largest loading positive),
    so the picture does not flip between runs of the same rows."""
    unit = stacked / np.where((n := np.linalg.norm(stacked, axis=1, keepdims=True)) > 0, n, 1.0)
    centred = unit - unit.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (E', E), rows by decreasing variance
    axes = vt[:2] * np.sign(vt[:2][np.arange(min(2, vt.shape[0])), np.abs(vt[:2]).argmax(axis=1)])[:, None]
    xy = centred @ axes.T  # (points, <=2)
    if xy.shape[1] < 2:
        xy = np.pad(xy, ((0, 0), (0, 2 - xy.shape[1])))
    variance = singular**2
    total = float(variance.sum()) or 1.0
    shares = [float(v / total) for v in variance[:2]] + [0.0] * (2 - min(2, variance.size))
    return xy, shares


def shared_projection(records: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, float, float]]]:
    """Every probe's (step, x, y) in one 2-D PCA plane fitted to all probes' unit rows at all checkpoints."""
    points = [(r["step"], word, np.asarray(v, dtype=np.float64)) for r in records for word, v in r["probes"].items()]
    if len(points) < 2:
        return {}
    xy, _ = _plane(np.stack([v for _, _, v in points]))  # (points, 2)
    out: dict[str, list[tuple[int, float, float]]] = {}
    for (step, word, _), (x, y) in zip(points, xy, strict=True):
        out.setdefault(word, []).append((int(step), float(x), float(y)))
    return out


def group_projection(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The learning groups' words at every checkpoint in one 2-D PCA plane fitted to all their unit rows together.

    Returns words, their groups, the steps, `points` (one list of [x, y] per step, in word order), and `variance`
    (the share of the variance each axis holds); None when no record holds the group words' rows (an older run, or
    a vocabulary without them)."""
    last = next((r["group_rows"] for r in reversed(records) if r.get("group_rows") and r["group_rows"]["words"]), None)
    if last is None:
        return None
    words = list(last["words"])
    kept = [r for r in records if r.get("group_rows") and list(r["group_rows"]["words"]) == words]
    stacked = np.concatenate([np.asarray(r["group_rows"]["rows"], dtype=np.float64) for r in kept])  # (steps*words, E)
    if stacked.shape[0] < 2:
        return None
    xy, variance = _plane(stacked)
    frames = xy.reshape(len(kept), len(words), 2)  # (steps, words, 2)
    return {
        "words": words,
        "groups": list(last["groups"]),
        "steps": [int(r["step"]) for r in kept],
        "points": [[[round(float(x), 5), round(float(y), 5)] for x, y in frame] for frame in frames],
        "variance": variance,
    }
