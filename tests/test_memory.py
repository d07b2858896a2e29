"""bertlens.core.memory: a streaming job's blocks are reused, not mapped anew, and the largest go back when freed."""

from __future__ import annotations

import resource
import sys

import numpy as np
import pytest

from bertlens.core.memory import LARGE_BLOCK, release_large_blocks, steady_large_blocks


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_activation_sized_blocks_are_reused_and_huge_ones_leave():
    assert steady_large_blocks() is True
    pages = 8 * 2**20 // 4096

    def batch() -> None:  # a batch's activations: a few blocks of MBs, written, then freed
        blocks = [np.ones(2 * 2**20, dtype=np.float32) for _ in range(4)]  # 4 x 8 MB
        del blocks

    batch()
    before = faults()
    for _ in range(5):
        batch()
    assert faults() - before < pages  # five batches reused the first one's pages: not 5 x 4 x 2,048 fresh ones

    start = resident_mb()
    huge = np.ones(2 * LARGE_BLOCK // 4, dtype=np.float32)  # twice the threshold: mmapped
    assert resident_mb() - start > 50
    del huge
    assert resident_mb() - start < 20  # and unmapped when freed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_released_heap_hands_blocks_back_at_once():
    assert steady_large_blocks() is True
    assert release_large_blocks() is True  # glibc's first rules: 128 KB and more mapped, unmapped when freed
    start = resident_mb()
    blocks = [np.ones(2 * 2**20, dtype=np.float32) for _ in range(4)]  # 4 x 8 MB: the steady heap would keep them
    assert resident_mb() - start > 25
    del blocks
    assert resident_mb() - start < 10
