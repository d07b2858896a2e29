"""Progress on standard error for work that takes more than a few seconds: a bar where the work has steps, a ticking
clock where it has none (a t-SNE fit), and nothing at all when it is not wanted.

Library functions take `progress: bool = False`; the CLI turns it on unless `--no-progress` or `--json` is given or
standard error is not a terminal (`cli.common.Call.progress`). tqdm (a dependency of transformers) is imported only
when a bar is shown.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Bar(Protocol):
    """What a progress bar offers: tqdm's own names, so a real bar and `NoBar` are used alike (what they return is
    never used)."""

    def update(self, n: int = 1) -> object: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> object: ...

    def close(self) -> object: ...


class NoBar:
    """A bar that shows nothing (progress off)."""

    def update(self, n: int = 1) -> None:
        return None

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        return None

    def close(self) -> None:
        return None


def progress_bar(
    total: int | None, *, desc: str, unit: str, show: bool, initial: int = 0, smoothing: float = 0.3
) -> Bar:
    """A tqdm bar on standard error (or `NoBar` when `show` is false); close it when the work ends. `smoothing` is
    tqdm's: 0 takes the rate (and the time left) from the average since the start, pauses between steps included."""
    if not show:
        return NoBar()
    from tqdm import tqdm

    bar: Bar = tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        smoothing=smoothing,
    )
    return bar


@contextmanager
def bar(total: int | None, *, desc: str, unit: str, show: bool, initial: int = 0) -> Iterator[Bar]:
    """`progress_bar` as a context manager: the bar is closed however the work ends."""
    shown = progress_bar(total, desc=desc, unit=unit, show=show, initial=initial)
    try:
        yield shown
    finally:
        shown.close()


@contextmanager
def ticking(desc: str, *, show: bool, every: float = 1.0) -> Iterator[None]:
    """A line `desc: 12 s` on standard error, rewritten every `every` seconds while the block runs, then ended with
    the total time: for work that reports no steps (a t-SNE or UMAP fit, a word2vec epoch)."""
    if not show:
        yield
        return
    stop = threading.Event()
    start = time.perf_counter()

    def tick() -> None:
        while not stop.wait(every):
            sys.stderr.write(f"\r{desc}: {time.perf_counter() - start:.0f} s")
            sys.stderr.flush()

    thread = threading.Thread(target=tick, name="bertlens-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.stderr.write(f"\r{desc}: done in {time.perf_counter() - start:.1f} s\n")
        sys.stderr.flush()
