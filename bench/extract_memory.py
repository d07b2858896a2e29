"""Peak memory of `bertlens extract` as the corpus grows: it should stay flat (one shard in memory at a time).

Writes corpora of N sentences taken from ../shared/data/corpus/enwiki-2015, runs `bertlens extract` on each in a
fresh process (word level, last layer, NumPy shards of 1,000 texts) and reports wall time, throughput and the process's
peak resident memory (GNU time's %M).

    python bench/extract_memory.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

ENWIKI = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "enwiki-2015"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bertlens.core.corpus import iter_texts, sentences

    script = Path(sys.executable).with_name("bertlens")
    gnu_time = shutil.which("time")  # GNU time (Debian's `time` package), not the shell's keyword
    if gnu_time is None:
        parser.error("GNU time is not on PATH: install it (Debian: apt-get install time)")
    print("| sentences | seconds | sentences/s | peak RSS MB |")
    print("| ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            corpus = Path(tmp) / f"corpus-{size}.txt"
            lines = islice((s for t in iter_texts(ENWIKI) for s in sentences(t.text)), size)
            corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
            start = time.perf_counter()
            command = [str(script), "extract", str(corpus), "--out", str(Path(tmp) / f"out-{size}"), "--no-progress"]
            done = subprocess.run([gnu_time, "-f", "%M", *command], check=True, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            peak_kb = int(done.stderr.strip().splitlines()[-1])  # GNU time: the child's peak RSS in KB
            print(f"| {size} | {seconds:.0f} | {size / seconds:.0f} | {peak_kb / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
