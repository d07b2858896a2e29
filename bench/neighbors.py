"""Nearest-neighbour speed: bertlens against FAISS IndexFlatIP and gensim most_similar, side by side in one run.

On the default model's 30,522 x 384 input matrix, warm and in-process:

* single: one top-10 cosine query for a token, repeated over 200 different tokens (median, p90 per query);
* batch: 1,000 token queries at once.

bertlens is timed twice: scanning the matrix (what any query without the table does), and with the precomputed
neighbour table (`open_index(model, precompute=True)`, built once and cached). FAISS searches the same unit-length
matrix; gensim's KeyedVectors hold the same rows. Every tool's top-10 list is checked identical to bertlens' for every
query (FAISS and gensim asked for extra results, then restricted to the rows bertlens allows by default: specials and
[unused…] rows out). Also timed: the cold start of `bertlens neighbors dog` (fresh process, warm cache).

    pip install faiss-cpu   # the peer
    python bench/neighbors.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def per_call(function: Callable[[], object], repeat: int) -> list[float]:
    function()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    import faiss
    from gensim.models import KeyedVectors

    from bertlens import load_model
    from bertlens.embeddings.token_classes import TokenFilter
    from bertlens.similarity.index import open_index
    from bertlens.similarity.nearest import neighbors, neighbors_many

    model = load_model()
    cache = Path(tempfile.mkdtemp(prefix="bertlens-bench-"))
    scan_index = open_index(model, cache)
    start = time.perf_counter()
    table_index = open_index(model, cache, precompute=True)
    build = time.perf_counter() - start
    scan_index.table = None  # the same index without the table: every query scans

    matrix = model.embedding_weights.word_embeddings
    tokens = [model.vocabulary.id_to_token(i) for i in range(len(matrix))]
    allowed = scan_index.allowed(TokenFilter())
    unit = np.ascontiguousarray(scan_index.raw.unit)
    flat = faiss.IndexFlatIP(unit.shape[1])
    flat.add(unit)
    keyed = KeyedVectors(matrix.shape[1])
    keyed.add_vectors(tokens, matrix)
    keyed.fill_norms()

    rng = np.random.default_rng(0)
    words = np.flatnonzero(scan_index.allowed(TokenFilter.words_only()))
    singles = [int(i) for i in rng.choice(words, 200, replace=False)]
    batch = [int(i) for i in rng.choice(words, 1000, replace=False)]

    def faiss_top(ids: list[int]) -> list[list[int]]:
        _, found = flat.search(unit[ids], 200)
        return [[int(j) for j in row if allowed[j] and j != i][:10] for i, row in zip(ids, found, strict=True)]

    def gensim_top(i: int) -> list[int]:
        return [keyed.key_to_index[key] for key, _ in keyed.most_similar(tokens[i], topn=200)]

    # Identical top-10 lists, every query.
    ours = {i: [n.id for n in neighbors(model, i, 10, index=scan_index).neighbors] for i in singles + batch}
    table = {i: [n.id for n in neighbors(model, i, 10, index=table_index).neighbors] for i in singles + batch}
    theirs_faiss = dict(zip(singles + batch, faiss_top(singles + batch), strict=True))
    theirs_gensim = {i: [j for j in gensim_top(i) if allowed[j]][:10] for i in singles}
    same = {
        "table": all(table[i] == ours[i] for i in ours),
        "faiss": all(theirs_faiss[i] == ours[i] for i in ours),
        "gensim": all(theirs_gensim[i] == ours[i] for i in singles),
    }

    def single(function: Callable[[int], object]) -> list[float]:
        times = []
        for i in singles:
            function(i)
        for i in singles:
            start = time.perf_counter()
            function(i)
            times.append(time.perf_counter() - start)
        return times

    rows = [
        ("single", "bertlens (scan)", single(lambda i: neighbors(model, i, 10, index=scan_index))),
        ("single", "bertlens (table)", single(lambda i: neighbors(model, i, 10, index=table_index))),
        ("single", "FAISS IndexFlatIP", single(lambda i: flat.search(unit[i : i + 1], 12))),
        ("single", "gensim most_similar", single(lambda i: keyed.most_similar(tokens[i], topn=10))),
        ("batch 1000", "bertlens (scan)", per_call(lambda: neighbors_many(model, batch, 10, index=scan_index), 5)),
        ("batch 1000", "bertlens (table)", per_call(lambda: neighbors_many(model, batch, 10, index=table_index), 5)),
        ("batch 1000", "FAISS IndexFlatIP", per_call(lambda: flat.search(unit[batch], 12), 5)),
        (
            "batch 1000",
            "gensim most_similar",
            per_call(lambda: [keyed.most_similar(tokens[i], topn=10) for i in batch], 1),
        ),
    ]

    script = Path(sys.executable).with_name("bertlens")
    cold = []
    for _ in range(6):
        start = time.perf_counter()
        subprocess.run([str(script), "neighbors", "dog", "--cache-dir", str(cache)], check=True, capture_output=True)
        cold.append(time.perf_counter() - start)

    print("| task | tool | median ms | p90 ms |")
    print("| --- | --- | ---: | ---: |")
    for task, tool, times in rows:
        ms = sorted(t * 1000 for t in times)
        p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
        print(f"| {task} | {tool} | {statistics.median(ms):.3f} | {p90:.3f} |")
    print(f"| cold start | `bertlens neighbors dog` (cache warm) | {statistics.median(cold[1:]) * 1000:.0f} | - |")
    print()
    print(f"Neighbour table build (once per model, then cached): {build:.1f} s")
    print(f"Identical top-10 lists: {same} over {len(ours)} queries (gensim: {len(singles)})")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
