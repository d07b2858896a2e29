"""Writing in the background: a corpus command hands each batch's writing to one thread and goes on computing, so
storage never stalls the device (a GPU computes a shard in the time a disk takes to write one).

`BackgroundWriter` runs the calls it is given one after another, in the order given, in a single thread; at most
`depth` wait, so memory stays bounded (the caller waits when the writer falls behind). The first error a call raises
is raised again in the caller's thread, by the next `submit` or by `close`, and nothing after it is written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any


class BackgroundWriter:
    """One writing thread, fed in order: `submit(call)`, then `close()` (or use it as a context manager)."""

    def __init__(self, depth: int = 2, name: str = "bertlens-writer") -> None:
        self._calls: queue.Queue[Callable[[], Any] | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            if self._error is None:
                try:
                    call()
                except BaseException as error:  # kept for the caller's thread
                    self._error = error

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, call: Callable[[], Any]) -> None:
        """Run `call` after the calls before it; raises the error of an earlier call, if one failed."""
        self._raise()
        self._calls.put(call)

    def close(self) -> None:
        """Wait for every call to finish; raises the first error one raised."""
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join()
        self._raise()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
            return
        self._error = self._error or error  # the caller's own error wins: the writer stops writing
        self._calls.put(None)
        self._thread.join()
        self._error = None
