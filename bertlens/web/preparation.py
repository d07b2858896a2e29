"""What a server prepares in the background once it answers: each served model's similar-token table (the neighbour
table, `VectorIndex.precompute`), built one model after another on one thread, with its progress.

A table read from the cache is ready at once; one still being built is only a speed-up, never a condition: the
neighbours of a token are found by a scan of the matrix until it is ready (`similarity.nearest` decides which answers),
so every request is answered meanwhile. `GET /api/status` reports each model's state and progress, and the page shows
it in the views it concerns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .registry import ServedModel

State = Literal["ready", "waiting", "preparing", "failed", "off"]
WHAT = "the similar-token table"
Hook = Callable[["TablePreparation"], None]  # called on the preparing thread at each step, with where it stands


@dataclass
class TablePreparation:
    """One model's similar-token table: its state and the share of it built."""

    name: str  # the served model's name
    state: State
    fraction: float = 0.0  # 0..1
    seconds: float | None = None  # how long the build took, once ready
    error: str | None = None  # what went wrong, when failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": WHAT,
            "state": self.state,
            "progress": round(self.fraction, 4),
            "seconds": None if self.seconds is None else round(self.seconds, 1),
            "error": self.error,
        }


@dataclass
class Preparation:
    """Every served model's similar-token table, built in the background by `start` (one thread, models in order).

    `hook(table)` is called on that thread at every step with a copy of where the table stands (preparing at 0.0
    first, then ready or failed): the CLI says on the terminal when a table is ready, and a test may hold the build
    at a step to look at the server while it is still preparing.
    """

    models: Sequence[ServedModel]
    hook: Hook | None = None
    tables: dict[str, TablePreparation] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        for served in self.models:
            ready = served.index.table is not None  # read from the cache by open_index
            self.tables[served.name] = TablePreparation(served.name, "ready" if ready else "off", 1.0 if ready else 0.0)
        self.done.set()

    def pending(self) -> list[str]:
        """The models whose table is still to be built (none read from the cache)."""
        return [name for name, table in self.tables.items() if table.state != "ready"]

    def start(self) -> threading.Thread | None:
        """Build every missing table on a background thread (daemon: a server stopped meanwhile does not wait for
        it, and the cache is written atomically); None when every table is ready already."""
        names = self.pending()
        if not names or self.thread is not None:
            return self.thread
        for name in names:
            self._set(name, state="waiting", fraction=0.0)
        self.done.clear()
        self.thread = threading.Thread(target=self._build, args=(names,), name="bertlens-prepare", daemon=True)
        self.thread.start()
        return self.thread

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until nothing is being prepared; False when `timeout` seconds passed first."""
        return self.done.wait(timeout)

    def of(self, name: str) -> TablePreparation:
        with self.lock:
            table = self.tables[name]
            return TablePreparation(table.name, table.state, table.fraction, table.seconds, table.error)

    def preparing(self) -> bool:
        """Whether any table is waiting or being built."""
        with self.lock:
            return any(t.state in ("waiting", "preparing") for t in self.tables.values())

    def to_dict(self) -> dict[str, Any]:
        """What GET /api/status answers: each model's table, and whether anything is still being prepared."""
        return {
            "preparing": self.preparing(),
            "models": [
                {"name": served.name, "neighbor_table": self.of(served.name).to_dict()} for served in self.models
            ],
        }

    def _set(self, name: str, **changes: Any) -> None:
        with self.lock:
            table = self.tables[name]
            for key, value in changes.items():
                setattr(table, key, value)

    def _build(self, names: Sequence[str]) -> None:
        try:
            for served in self.models:
                if served.name in names:
                    self._build_one(served)
        finally:
            self.done.set()

    def _build_one(self, served: ServedModel) -> None:
        started = time.monotonic()

        def step(fraction: float) -> None:
            if fraction < 1.0:  # 1.0: the table is in place, said once precompute returns
                self._set(served.name, state="preparing", fraction=fraction)
                self._tell(served.name)

        try:
            served.index.precompute(progress=step)
        except Exception as exc:  # a failed build leaves the server answering by scans; /api/status says why
            self._set(served.name, state="failed", error=f"{type(exc).__name__}: {exc}")
        else:
            self._set(served.name, state="ready", fraction=1.0, seconds=time.monotonic() - started)
        self._tell(served.name)

    def _tell(self, name: str) -> None:
        if self.hook is not None:
            self.hook(self.of(name))
