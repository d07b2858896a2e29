"""Keep a long-running process's memory steady, without paying for it in page faults.

glibc's malloc starts by mmapping every block of 128 KB or more and raises that threshold (up to 32 MB) each time such
a block is freed; the heap's top is returned to the system past a trim threshold that moves with it. A streaming job
whose blocks change size as it goes (model activations of ever-new batch shapes) then fragments its heap, and its
peak memory creeps up with the corpus (docs/benchmarks.md, "Memory of `bertlens extract`"). Fixing both thresholds at
glibc's own settled values, from the start, keeps activations (a few MB each) on a heap that is neither trimmed nor
re-mapped between batches. A fixed 128 KB threshold would also keep the peak flat, but would map every activation
anew, and the kernel's zero-filling of each fresh page costs extract and the corpus index about a third of
their speed (docs/benchmarks.md). It is a setting of the whole process, so only functions that stream for
a long time call this, and only when asked (they take a flag that defaults to on).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 32 * 1024 * 1024  # glibc's largest dynamic mmap threshold on 64-bit: larger blocks are mmapped
FIRST_BLOCK = 128 * 1024  # glibc's initial mmap and trim thresholds


def _mallopt() -> Any:
    """glibc's `mallopt` and `malloc_trim`, or None off glibc (macOS, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


def steady_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """Fix glibc's mmap threshold (and the trim threshold, at twice it) for this process; True if set (False off
    glibc, e.g. macOS or musl)."""
    libc = _mallopt()
    if libc is None:
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, 2 * threshold))


def release_large_blocks() -> bool:
    """After streaming: glibc's first thresholds again (every block of 128 KB or more mapped, and unmapped when
    freed) and the heap's free memory handed back now, for a last step that holds large arrays of its own (the
    occurrence index's search structures: on the steady heap its peak rose from 1.2 to 2.2 GB at 100,000
    sentences). True if done (False off glibc)."""
    libc = _mallopt()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, FIRST_BLOCK)) and bool(libc.mallopt(M_TRIM_THRESHOLD, FIRST_BLOCK))
    libc.malloc_trim(0)
    return done
