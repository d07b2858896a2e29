"""How fast `diff` compares two full input matrices (30,522 rows of 384), against the obvious ways to do the same, and
how fast its contextual side computes CKA over 10,000 word occurrences.

Side by side in one run, on models already loaded (the times start once both matrices are in memory):

- `bertlens.spaces.diff`: exact k-nearest sets of both matrices (upper-triangle blocks), Jaccard overlap, orthogonal
  Procrustes, the moved tokens, the aligned plane: the whole answer;
- FAISS `IndexFlatIP` (exact inner-product search over unit rows) for both matrices' k nearest, then the same Jaccard
  and scipy's `orthogonal_procrustes`: the sets only, not the rest of the answer;
- torch, full-width row stripes and `topk`: what one writes first.

Each runs `--runs` times; the table gives the median and the fastest, and how many rows' sets agree with diff's.
B is the model given by `--b` (a continued run, say), else the default model's rows with a little noise added
(saved to a temporary folder).

    python bench/spaces_diff.py --runs 3                 # the static diff
    python bench/spaces_diff.py --runs 3 --cka           # and CKA of all layer pairs over 10,000 occurrences
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bertlens import load_model
from bertlens.spaces import diff
from bertlens.spaces.alignment import prepared
from bertlens.spaces.neighbours import jaccard, unit_rows
from bertlens.spaces.shared import shared_tokens


def noisy_copy(folder: Path) -> Path:
    """The default model with every row of word_embeddings moved by a little Gaussian noise."""
    from safetensors.numpy import load_file, save_file

    source = load_model().source.path
    assert source is not None
    target = folder / "noisy"
    shutil.copytree(source, target)
    weights = next(target.glob("*.safetensors"))
    tensors = load_file(weights)
    name = next(n for n in tensors if n.endswith("word_embeddings.weight"))
    rows = tensors[name]
    noise = np.random.default_rng(0).standard_normal(rows.shape).astype(np.float32)
    tensors[name] = rows + 0.3 * rows.std() * noise
    save_file(tensors, weights, metadata={"format": "pt"})
    return target


def faiss_sets(unit: np.ndarray, k: int) -> np.ndarray:
    import faiss

    index = faiss.IndexFlatIP(unit.shape[1])
    index.add(unit)
    _, ids = index.search(unit, k + 1)
    out = np.empty((len(unit), k), dtype=np.int64)
    for i, row in enumerate(ids):
        out[i] = [j for j in row if j != i][:k]
    return out


def torch_sets(unit: np.ndarray, k: int, stripe: int = 2048) -> np.ndarray:
    import torch

    x = torch.from_numpy(unit)
    out = []
    for i in range(0, len(unit), stripe):
        scores = x[i : i + stripe] @ x.T
        scores[torch.arange(scores.shape[0]), torch.arange(i, i + scores.shape[0])] = -float("inf")
        out.append(scores.topk(k, dim=1).indices)
    return torch.cat(out).numpy()


def procrustes(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.linalg import orthogonal_procrustes

    x, y = prepared(a), prepared(b)
    rotation, _ = orthogonal_procrustes(x, y)
    return float(np.einsum("nd,nd->n", x @ rotation, y).mean())


def timed(runs: int, work):  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--b", help="model B (default: the default model with noise added)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--cka", action="store_true", help="also time CKA over 10,000 occurrences")
    args = parser.parse_args()
    import torch

    print(f"load average before: {os.getloadavg()}; torch threads {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory() as tmp:
        a = load_model()
        b = load_model(args.b or str(noisy_copy(Path(tmp))))
        shared = shared_tokens(a, b)
        rows_a = a.embedding_weights.word_embeddings[shared.ids_a]
        rows_b = b.embedding_weights.word_embeddings[shared.ids_b]
        diff(a, b, top=5)  # warm: imports (torch, scipy), first products
        results = {}
        results["bertlens diff (whole answer)"] = timed(args.runs, lambda: diff(a, b, k=args.k))

        def peer(sets):  # type: ignore[no-untyped-def]
            def work():  # type: ignore[no-untyped-def]
                ua, ub = unit_rows(rows_a), unit_rows(rows_b)
                sa, sb = sets(ua, args.k), sets(ub, args.k)
                jaccard(sa, sb)
                procrustes(rows_a, rows_b)
                return sa

            return work

        results["FAISS IndexFlatIP + scipy (sets, overlap, fit only)"] = timed(args.runs, peer(faiss_sets))
        results["torch row stripes + topk + scipy (same)"] = timed(args.runs, peer(torch_sets))
        print(f"load average after: {os.getloadavg()}")
        print(f"\n{len(shared):,} shared rows of widths {rows_a.shape[1]} and {rows_b.shape[1]}, k = {args.k}\n")
        print("| method | median s | fastest s |")
        print("|---|---|---|")
        for name, (times, _) in results.items():
            print(f"| {name} | {statistics.median(times):.2f} | {min(times):.2f} |")
        if args.cka:
            from bertlens.spaces.contextual import contextual_diff

            times, found = timed(1, lambda: contextual_diff(a, b, "sample", occurrences=10_000))
            print(
                f"\nCKA, all {found.cka.shape[0]}x{found.cka.shape[1]} layer pairs over {found.occurrences:,} "
                f"occurrences ({found.texts} texts): {times[0]:.1f} s; load average {os.getloadavg()}"
            )


if __name__ == "__main__":
    main()
