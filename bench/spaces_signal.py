"""Does `diff` find what new text changed? The default model continued with masked-LM on Genesis (the bundled text of
another kind than the encyclopaedia text `sample`), compared with itself before.

    bertlens pretrain genesis --init-from default --max-steps 200 --warmup-steps 20 --lr 1e-4 --batch-size 16 \
        --out genesis-run/
    python bench/spaces_signal.py genesis-run/

Two expectations:
1. The 100 tokens that moved most are enriched in Genesis's frequent tokens. The control is random tokens matched in
   general frequency: for each moved token, tokens of the same frequency bucket in `sample` (orders of magnitude of
   the count), drawn 1,000 times. The ratio is the share of moved tokens that are frequent in Genesis (>= 10
   occurrences) over the same share among the matched random tokens.
2. Linear CKA between the same layer of the two models is highest near the input and falls toward the top.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bertlens import load_model
from bertlens.spaces import diff
from bertlens.spaces.frequency import BUCKETS, bucket_of, token_counts

FREQUENT = 10  # occurrences in Genesis that make a token one of its frequent tokens
TOP = 100
DRAWS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="the continued model (a pretrain --init-from default run folder)")
    parser.add_argument("--occurrences", type=int, default=10_000)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    before, after = load_model(), load_model(args.run)
    start = time.perf_counter()
    result = diff(before, after, top=TOP, corpus="genesis")
    print(f"diff: {time.perf_counter() - start:.1f} s; overlap {result.overlap_mean:.3f}, fit {result.fit:.3f}")
    shared = list(result.token_list)
    where = {t: i for i, t in enumerate(shared)}
    ids = np.asarray([before.vocabulary.token_to_id(t) for t in shared])
    genesis = token_counts(before, "genesis")[ids]  # (n,)
    general = bucket_of(token_counts(before, "sample")[ids])  # (n,) bucket in the encyclopaedia text
    moved = np.asarray([where[m.token] for m in result.moved])
    share_moved = float((genesis[moved] >= FREQUENT).mean())
    rng = np.random.default_rng(0)
    pools = {
        b: np.flatnonzero((general == b) & np.isin(result_kinds(result), ("word", "piece")))
        for b in range(len(BUCKETS))
    }
    shares = []
    for _ in range(DRAWS):
        drawn = np.asarray([rng.choice(pools[general[m]]) for m in moved])
        shares.append(float((genesis[drawn] >= FREQUENT).mean()))
    share_random = float(np.mean(shares))
    print(f"\nThe {TOP} tokens that moved most: {share_moved:.2f} are frequent in Genesis (>= {FREQUENT} occurrences)")
    print(f"Random tokens of the same frequency buckets in sample ({DRAWS} draws): {share_random:.3f}")
    print(f"Enrichment ratio: {share_moved / share_random:.1f}")
    print("Moved most:", ", ".join(m.token for m in result.moved[:30]))
    print("\nBy the token's count in genesis:")
    for g in result.by_frequency:
        print(f"  {g.label:12} {g.tokens:6,} tokens  overlap {g.overlap or 0:.3f}  residual {g.residual or 0:.4f}")
    from bertlens.spaces.contextual import contextual_diff

    start = time.perf_counter()
    context = contextual_diff(before, after, "sample", occurrences=args.occurrences)
    print(f"\nCKA over {context.occurrences:,} occurrences of sample ({time.perf_counter() - start:.1f} s):")
    print("  same layer: " + ", ".join(f"{i}: {context.cka[i, i]:.3f}" for i in range(len(context.cka))))
    print(f"load average: {os.getloadavg()}")


def result_kinds(result) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(n,) each shared token's kind, from the diff's per-token lookup."""
    return np.asarray(result.lookup.spaces.shared.kinds)


if __name__ == "__main__":
    main()
