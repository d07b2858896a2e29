"""bertlens.core.memory: a streaming job's blocks are reused, not mapped anew, the largest go back when freed, and a
released heap hands its blocks back at once. Each check runs in a fresh interpreter: the allocator's settings are
the whole process's, and a test worker's heap holds what earlier tests left in it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")

PRELUDE = """
import json, resource
import numpy as np
from bertlens.core.memory import LARGE_BLOCK, release_large_blocks, steady_large_blocks

def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
"""


def run(body: str) -> dict:
    """Run PRELUDE + body in a fresh interpreter; body prints one JSON object."""
    code = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_activation_sized_blocks_are_reused_and_huge_ones_leave():
    found = run("""
        steady = steady_large_blocks()

        def batch():  # a batch's activations: a few blocks of MBs, written, then freed
            blocks = [np.ones(2 * 2**20, dtype=np.float32) for _ in range(4)]  # 4 x 8 MB
            del blocks

        batch()
        before = faults()
        for _ in range(5):
            batch()
        reuse = faults() - before
        start = resident_mb()
        huge = np.ones(2 * LARGE_BLOCK // 4, dtype=np.float32)  # twice the threshold: mmapped
        held = resident_mb() - start
        del huge
        print(json.dumps({"steady": steady, "faults": reuse, "held": held, "left": resident_mb() - start}))
    """)
    assert found["steady"] is True
    assert found["faults"] < 8 * 2**20 // 4096  # five batches reused the first's pages, not 5 x 4 x 2,048 fresh ones
    assert found["held"] > 50 and found["left"] < 20  # the huge block was mapped, and unmapped when freed


def test_released_heap_hands_blocks_back_at_once():
    found = run("""
        steady = steady_large_blocks()
        kept = [np.ones(2 * 2**20, dtype=np.float32) for _ in range(4)]  # 4 x 8 MB on the steady heap
        del kept
        steady_left = resident_mb()  # the steady heap keeps them (below its 64 MB trim threshold)
        released = release_large_blocks()  # glibc's first rules, and the heap's free memory handed back
        start = resident_mb()
        blocks = [np.ones(2 * 2**20, dtype=np.float32) for _ in range(4)]
        held = resident_mb() - start
        del blocks
        print(json.dumps({"steady": steady, "released": released, "trimmed": steady_left - start,
                          "held": held, "left": resident_mb() - start}))
    """)
    assert found["steady"] is True and found["released"] is True
    assert found["trimmed"] > 25  # release_large_blocks returned the 32 MB the steady heap had kept
    assert found["held"] > 25 and found["left"] < 10  # then blocks of 8 MB are mapped and unmapped when freed
