"""The Ray engine for an occurrence index: its batches' rows computed on model actors (see `contextual/engines.py`).

The rows are the local engine's: the actors call the builder's own `occurrence_rows` on the same batches, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from ..contextual.engines import (
    ENGINES,
    INSTALL,
    Engine,
    RayOptions,
    check_engine,
    check_ray,
    connect,
    connect_ahead,
    ray_map,
    ray_module,
    run_batches,
    threads,
)
from ..core.model import Model
from ..core.options import WordPool
from .store import OccurrenceRows, TextRows

__all__ = [
    "ENGINES",
    "INSTALL",
    "Engine",
    "RayOptions",
    "check_engine",
    "check_ray",
    "connect",
    "connect_ahead",
    "ray_batches",
    "ray_map",
    "ray_module",
    "run_batches",
    "threads",
]


def ray_batches(
    model: Model,
    batches: Iterable[TextRows],
    layers: tuple[int, ...],
    pool: WordPool,
    run: Any,
    ray: RayOptions,
    *,
    rows: Callable[..., OccurrenceRows],
) -> Iterator[tuple[TextRows, OccurrenceRows]]:
    """Each batch of texts with its occurrence rows, computed by `rows` on actors, in the order given.

    `rows` is the builder's `occurrence_rows` (passed in: `build` imports this module, so this one cannot import it),
    called as `rows(model, texts, layers, pool, run)`; `run` is the builder's `RunOptions`.
    """
    work = partial(_occurrences, rows=rows, layers=layers, pool=pool, run=run)
    return ray_map(model, batches, work, ray)


def _occurrences(
    model: Model, texts: TextRows, *, rows: Callable[..., OccurrenceRows], layers: tuple[int, ...], pool: Any, run: Any
) -> OccurrenceRows:
    return rows(model, texts, layers, pool, run)
