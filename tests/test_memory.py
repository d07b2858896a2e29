"""bertlens.core.memory: large blocks go back to the system when freed, so a streaming job's peak stays flat."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from bertlens.core.memory import steady_large_blocks


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_large_blocks_leave_the_process():
    assert steady_large_blocks() is True
    before = resident_mb()
    blocks = [np.ones(1_000_000, dtype=np.float32) for _ in range(64)]  # 64 blocks of 4 MB, below glibc's 32 MB cap
    held = resident_mb()
    del blocks
    after = resident_mb()
    assert held - before > 200  # the blocks were really resident
    assert after - before < 20  # and all went back when freed
