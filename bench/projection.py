"""Projection speed at 50,000 points: bertlens `project` against scikit-learn and umap-learn called directly.

The points are real contextual word vectors: the last layer of the default model over WikiText-2 (validation, then
test) paragraphs, pieces mean-pooled, until there are `--points` words (384 dims). Timed in one process, warm:

* PCA: bertlens (numpy, float64 eigendecomposition of the 384 x 384 scatter matrix) against scikit-learn's `PCA(2)`
  with its default solver and with `svd_solver="full"`; median of `--repeat` runs; max |difference| reported;
* t-SNE: bertlens (scikit-learn's Barnes-Hut `TSNE` underneath) against `TSNE` called directly with the same
  settings (perplexity 30, cosine, PCA start, 1,000 iterations); one run each;
* UMAP: bertlens (umap-learn underneath) against `umap.UMAP` called directly (15 neighbours, cosine, seeded);
  one run each, after a warm-up fit on 5,000 points so numba's compilation is not counted;
* drawing the PCA result: PNG and the self-contained HTML (size in bytes).

The TensorFlow Embedding Projector cannot be run here (it is a browser app); its caps are constants in its source
(tensorboard/plugins/projector/vz_projector/data.ts): t-SNE runs on a random sample of 10,000 points, UMAP on 5,000,
and PCA computes its axes from a sample of 50,000 points reduced to 200 random dimensions.

    python bench/projection.py                       # 50,000 points, every method (tens of minutes on 2 cores)
    python bench/projection.py --points 5000 --methods pca umap --json out.json --vectors wiki50k.npz
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw"


def word_vectors(count: int) -> tuple[np.ndarray, list[str], float]:
    """`count` contextual word vectors (last layer) of WikiText-2 paragraphs, their words, and the seconds taken."""
    from bertlens import load_model
    from bertlens.contextual import word_vectors_many
    from bertlens.core.corpus import iter_sentences

    model = load_model()
    start = time.perf_counter()
    vectors: list[np.ndarray] = []
    words: list[str] = []
    for source in (iter_sentences(CORPUS / "wiki.valid.raw"), iter_sentences(CORPUS / "wiki.test.raw")):
        while len(words) < count:
            chunk = list(islice(source, 256))
            if not chunk:
                break
            for result in word_vectors_many(model, chunk):
                vectors.append(result.vectors)
                words += [w.text for w in result.words]
    if len(words) < count:
        raise SystemExit(f"The corpus has only {len(words)} words.")
    return np.concatenate(vectors)[:count], words[:count], time.perf_counter() - start


def timed(function, repeat: int = 1) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def machine() -> str:
    import sklearn
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import umap

        umap_version = umap.__version__
    except ImportError:
        umap_version = "absent"
    return (
        f"nproc {cores}, {platform.platform()}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, umap-learn {umap_version}, torch {torch.__version__}; "
        f"load average before: {os.getloadavg()[0]:.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=50_000)
    parser.add_argument("--methods", nargs="+", default=["pca", "tsne", "umap"], choices=["pca", "tsne", "umap"])
    parser.add_argument("--repeat", type=int, default=3, help="PCA runs per tool (median)")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--skip-peers", action="store_true", help="t-SNE and UMAP: time bertlens only")
    parser.add_argument("--vectors", help="a .npz to reuse the extracted vectors from (written when missing)")
    args = parser.parse_args()

    from bertlens import PlotOptions, render
    from bertlens.views import project
    from bertlens.views.projection import ProjectionSettings

    info = machine()
    if args.vectors and Path(args.vectors).exists():
        with np.load(args.vectors) as saved:
            x, words, extract_s = saved["vectors"][: args.points], list(saved["words"][: args.points]), 0.0
    else:
        x, words, extract_s = word_vectors(args.points)
        if args.vectors:
            np.savez(args.vectors, vectors=x, words=np.array(words))
    n = len(x)
    print(f"{n:,} word vectors x {x.shape[1]} dims extracted in {extract_s:.1f} s", file=sys.stderr)
    rows: list[dict[str, object]] = []

    def add(method: str, tool: str, seconds: float, note: str = "") -> None:
        rows.append({"method": method, "tool": tool, "points": n, "seconds": round(seconds, 3), "note": note})
        print(f"{method:6} {tool:42} {seconds:9.2f} s  {note}", file=sys.stderr)

    if "pca" in args.methods:
        from sklearn.decomposition import PCA

        ours_s, ours = timed(lambda: project(x, words, "pca", 2), args.repeat)
        auto_s, auto = timed(lambda: PCA(2).fit_transform(x), args.repeat)
        full_s, full = timed(lambda: PCA(2, svd_solver="full").fit_transform(x), args.repeat)
        diff = float(np.abs(ours.points - full).max())
        add("pca", "bertlens project", ours_s, f"max |diff| vs sklearn full: {diff:.1e}")
        add(
            "pca",
            "sklearn PCA(2) (default solver)",
            auto_s,
            f"max |diff|: {float(np.abs(ours.points - auto).max()):.1e}",
        )
        add("pca", 'sklearn PCA(2, svd_solver="full")', full_s)
        with tempfile.TemporaryDirectory() as folder:
            png_s, png = timed(lambda: render(ours, Path(folder) / "p.png", PlotOptions(overwrite=True)))
            html_s, html = timed(lambda: render(ours, Path(folder) / "p.html", PlotOptions(overwrite=True)))
        add("draw", "bertlens render PNG", png_s, f"{png.size:,} bytes")
        add("draw", "bertlens render HTML (plotly.js inlined)", html_s, f"{html.size:,} bytes")

    if "tsne" in args.methods:
        from sklearn.manifold import TSNE

        ours_s, ours = timed(lambda: project(x, words, "tsne", 2, seed=0))
        add("tsne", "bertlens project", ours_s, f"perplexity {ours.parameters['perplexity']}")
        if not args.skip_peers:
            direct_s, _ = timed(
                lambda: TSNE(2, perplexity=30.0, metric="cosine", init="pca", random_state=0).fit_transform(x)
            )
            add("tsne", "sklearn TSNE (Barnes-Hut), directly", direct_s)

    if "umap" in args.methods:
        import umap

        # Warm-up: numba compiles umap-learn's functions once per process, the approximate-neighbour (NNDescent) path
        # only for more than 4,096 points; compiling it inside the first timed fit would cost that fit tens of seconds.
        warm = min(n, 5000)
        project(x[:warm], words[:warm], "umap", 2)
        ours_s, ours = timed(lambda: project(x, words, "umap", 2, seed=0, settings=ProjectionSettings()))
        add("umap", "bertlens project", ours_s, f"neighbors {ours.parameters['neighbors']}")
        if not args.skip_peers:
            direct_s, _ = timed(
                lambda: umap.UMAP(n_neighbors=15, metric="cosine", random_state=0, n_jobs=1).fit_transform(x)
            )
            add("umap", "umap-learn UMAP, directly", direct_s)

    print(f"\nMachine: {info}; vectors extracted in {extract_s:.1f} s.\n")
    print("| method | tool | points | seconds | note |\n| --- | --- | ---: | ---: | --- |")
    for row in rows:
        note = str(row["note"]).replace("|", "\\|")  # a pipe inside a cell would end it
        print(f"| {row['method']} | {row['tool']} | {row['points']:,} | {row['seconds']:.2f} | {note} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
