"""Contextual throughput of two checkouts of bertlens, run alternately: word vectors per second, every layer, on the
default model, in float32 and bfloat16.

A refactoring must keep the speed a user feels. This runs the same work (`word_vectors_many` over WikiText-2
validation sentences, every layer concatenated, as `bench/contextual.py`'s "words" rows) in fresh processes, one
checkout then the other, round after round, so that drift on the machine hits both alike; each process warms up
once, then times `--timed` runs and reports its fastest. The table gives each side's median over the rounds and the
ratio after / before.

    git worktree add ../before <commit>          # the checkout to compare with
    python bench/checkout_ab.py --before ../before --after . --rounds 3

Both sides run with this interpreter (the project's venv) and their own source first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIKITEXT = ROOT / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw" / "wiki.valid.raw"

CHILD = """
import json, sys, time
from bertlens import load_model
from bertlens.contextual import RunOptions, word_vectors_many

sentences = json.loads(sys.stdin.read())
dtype, timed = sys.argv[1], int(sys.argv[2])
model = load_model()
layers = list(range(model.config.num_hidden_layers + 1))
options = RunOptions(dtype=dtype)


def once():
    return word_vectors_many(model, sentences, layers=layers, combine="concat", options=options)


words = sum(result.vectors.shape[0] for result in once())  # the warm-up run
best = float("inf")
for _ in range(timed):
    start = time.perf_counter()
    once()
    best = min(best, time.perf_counter() - start)
print(json.dumps({"words": words, "seconds": best}))
"""


def sentences(count: int) -> list[str]:
    lines = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("=")][:count]


def run(checkout: Path, texts: list[str], dtype: str, timed: int) -> float:
    """Words per second of one fresh process on `checkout`'s source."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve()), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, dtype, str(timed)],
        input=json.dumps(texts),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout} ({dtype}) failed:\n{done.stderr[-3000:]}")
    reply = json.loads(done.stdout.splitlines()[-1])
    return float(reply["words"] / reply["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--after", type=Path, default=ROOT, help="the checkout measured (default: this one)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per side and precision")
    parser.add_argument("--timed", type=int, default=2, help="timed runs per process (its fastest counts)")
    parser.add_argument("--sentences", type=int, default=400, help="WikiText-2 validation paragraphs")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    args = parser.parse_args()
    texts = sentences(args.sentences)
    rates: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for dtype in args.dtypes:
            for side, checkout in (("before", args.before), ("after", args.after)):
                rates.setdefault((side, dtype), []).append(run(checkout, texts, dtype, args.timed))
        load = os.getloadavg()[0]
        print(f"round {r + 1} of {args.rounds} done (load average {load:.2f})", file=sys.stderr, flush=True)
    print(f"{len(texts)} paragraphs, every layer, {args.rounds} rounds of fresh processes, alternating\n")
    print("| precision | before, words/s (median) | after, words/s (median) | after / before | each round |")
    print("| --- | ---: | ---: | ---: | --- |")
    for dtype in args.dtypes:
        before, after = rates[("before", dtype)], rates[("after", dtype)]
        each = ", ".join(f"{a / b:.3f}" for a, b in zip(after, before, strict=True))
        ratio = statistics.median(after) / statistics.median(before)
        print(
            f"| {dtype} | {statistics.median(before):,.0f} | {statistics.median(after):,.0f} | {ratio:.3f} | {each} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
