"""Search speed over an occurrence index, side by side in one run: same-word search (scalar index, exact cosine) and
any-word search (IVF-PQ with exact re-ranking; IVF-HNSW-SQ for comparison) against FAISS IndexFlatIP and exact numpy
on the same vectors, with recall@10 against exact search.

Vectors: the bundled sample corpus (WikiText-2 valid, 1,841 passages, 217,092 word occurrences) indexed with the
default model at its last layer: real vectors. To reach a size N they are resampled with noise: copy c of every real
occurrence is its vector plus Gaussian noise of `--noise` times its norm (spread over the dimensions), with the same
word, the same text (under a new text id) and offsets. Whole copies are written, so N is rounded up to a multiple of
217,092. Timings are warm (after `--warmup` queries), one query at a time, through the library's
`search_occurrences` (vector search, exact re-ranking, snippets from the texts table, the cached baseline).

    python bench/search.py                                  # 1 M same-word, 1 M and 2 M any-word
    python bench/search.py --sizes 1000000 3000000 --queries 200 --work search-bench --json search.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 2_000_000], help="occurrences (any word)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per measure")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries first")
    parser.add_argument("--noise", type=float, default=0.25, help="noise norm relative to the vector's norm")
    parser.add_argument(
        "--work",
        default=str(Path(tempfile.gettempdir()) / "bertlens-search-bench"),
        help="where the indexes are written (default: bertlens-search-bench in the system's temporary folder)",
    )
    parser.add_argument("--source-index", help="an index of the sample corpus already built (default: build it)")
    parser.add_argument("--hnsw", action="store_true", help="also build IVF-HNSW-SQ at the first size")
    parser.add_argument("--no-pq", action="store_true", help="do not build IVF-PQ for comparison at the first size")
    parser.add_argument("--no-faiss", action="store_true", help="leave out FAISS IndexFlatIP")
    parser.add_argument("--reuse", action="store_true", help="reuse the indexes and search structures of --work")
    parser.add_argument("--json", metavar="PATH", help="also write every figure here")
    args = parser.parse_args()

    from bertlens import load_model

    model = load_model()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    source = Path(args.source_index) if args.source_index else build_source(model, work / "source")
    real = read_source(source)
    print(f"Model: {model.source.description}; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(
        f"Real vectors: {len(real['key']):,} occurrences of the sample corpus, layer {real['layer']}, D={real['dims']}"
    )
    report: dict[str, Any] = {"model": model.source.description, "real_rows": len(real["key"]), "sizes": {}}
    for n, size in enumerate(args.sizes):
        print(f"\n### {size:,} occurrences requested")
        report["sizes"][size] = measure_size(model, real, size, work, args, first=n == 0)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=float))
    return 0


def build_source(model: Any, out: Path) -> Path:
    from bertlens.occurrences.build import IndexOptions, index_corpus

    if not out.exists():
        start = time.perf_counter()
        index_corpus(model, "sample", out, options=IndexOptions(layers=(-1,)))
        print(f"indexed the sample corpus in {time.perf_counter() - start:.0f} s")
    return out


def read_source(path: Path) -> dict[str, Any]:
    from bertlens.occurrences.store import open_index

    index = open_index(path)
    layer = index.layers[-1]
    column = index.column(layer)
    rows = index.occurrences.search().select(["text_id", "position", "start", "end", "word", "key", column])
    table = rows.limit(None).to_arrow()
    vectors = table[column].combine_chunks().values.to_numpy().astype(np.float32).reshape(table.num_rows, -1)
    texts = index.texts.to_arrow().to_pydict()
    data = {name: table[name].to_numpy(zero_copy_only=False) for name in ("text_id", "position", "start", "end")}
    return {
        **data,
        "word": table["word"].to_pylist(),
        "key": np.asarray(table["key"].to_pylist(), dtype=object),
        "vectors": vectors,  # (real rows, D)
        "texts": texts,
        "layer": layer,
        "dims": index.dims,
    }


def synthetic_index(model: Any, real: dict[str, Any], copies: int, path: Path, noise: float) -> tuple[Any, np.ndarray]:
    """An index of `copies` noisy copies of the real occurrences; returns it and its unit vectors (rows, D)."""
    from bertlens.occurrences.store import OccurrenceRows, TextRows, create_index, open_index

    rng = np.random.default_rng(0)
    base = real["vectors"]
    dims = base.shape[1]
    unit = np.empty((copies * len(base), dims), dtype=np.float32)
    if (path / "bertlens-index.json").exists():
        index = open_index(path)
        for c in range(copies):
            unit[c * len(base) : (c + 1) * len(base)] = noisy(base, rng, noise, c)
        return index, normalise(unit)
    index = create_index(path, model, layers=(real["layer"],), pool="mean", dtype="float32", extra={"bench": True})
    n_texts = len(real["texts"]["text_id"])
    for c in range(copies):
        vectors = noisy(base, rng, noise, c)  # (real rows, D)
        unit[c * len(base) : (c + 1) * len(base)] = vectors
        texts = TextRows(
            np.asarray(real["texts"]["text_id"], dtype=np.int64) + c * n_texts,
            list(real["texts"]["file"]),
            np.asarray(real["texts"]["line"], dtype=np.int32),
            list(real["texts"]["text"]),
        )
        rows = OccurrenceRows(
            text_id=real["text_id"].astype(np.int64) + c * n_texts,
            position=real["position"].astype(np.int32),
            start=real["start"].astype(np.int32),
            end=real["end"].astype(np.int32),
            word=list(real["word"]),
            vectors={real["layer"]: vectors},
        )
        index.append(texts, rows, next_text=(c + 1) * n_texts)
    index.occurrences.optimize()
    index.texts.optimize()
    index.manifest["complete"] = True
    index.write_manifest()
    return index, normalise(unit)


def noisy(base: np.ndarray, rng: np.random.Generator, noise: float, copy: int) -> np.ndarray:
    if copy == 0:
        return base.copy()
    scale = noise * np.linalg.norm(base, axis=1, keepdims=True) / math.sqrt(base.shape[1])
    return (base + scale * rng.standard_normal(base.shape, dtype=np.float32)).astype(np.float32)


def normalise(matrix: np.ndarray) -> np.ndarray:
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def percentiles(times: list[float]) -> tuple[float, float]:
    ms = np.asarray(times) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def timed(run: Any, queries: list[Any], warmup: int) -> tuple[list[float], list[Any]]:
    for q in queries[:warmup]:
        run(q)
    times, results = [], []
    for q in queries[warmup:]:
        start = time.perf_counter()
        results.append(run(q))
        times.append(time.perf_counter() - start)
    return times, results


def measure_size(model: Any, real: dict[str, Any], size: int, work: Path, args: Any, *, first: bool) -> dict[str, Any]:
    from bertlens.occurrences.ann import build_search_indexes
    from bertlens.occurrences.search import EXACT_MAX, SearchOptions, search_occurrences

    base_rows = len(real["key"])
    copies = math.ceil(size / base_rows)
    start = time.perf_counter()
    index, unit = synthetic_index(model, real, copies, work / f"copies-{copies}", args.noise)
    rows = index.occurrences.count_rows()
    written = time.perf_counter() - start
    start = time.perf_counter()
    if not (args.reuse and (index.path / "bertlens-search.json").exists()):
        build_search_indexes(index)
    built = time.perf_counter() - start
    print(
        f"{rows:,} occurrences ({copies} copies): written {written:.0f} s, search indexes (BTREE, IVF-SQ) {built:.0f} s"
    )
    out: dict[str, Any] = {"rows": rows, "copies": copies, "write_s": written, "search_indexes_s": built}
    keys = np.tile(real["key"], copies)
    text_ids = np.concatenate([real["text_id"] + c * len(real["texts"]["text_id"]) for c in range(copies)])
    positions = np.tile(real["position"], copies)
    rng = np.random.default_rng(1)
    wordlike = np.flatnonzero([any(ch.isalnum() for ch in k) for k in keys[:base_rows]])
    picks = rng.choice(wordlike, args.queries + args.warmup, replace=False) + base_rows * rng.integers(
        0, copies, args.queries + args.warmup
    )
    occurrences = [(int(text_ids[i]), int(positions[i])) for i in picks]
    layer = real["layer"]
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = pc.dictionary_encode(pa.array(keys.tolist())).indices.to_numpy()  # (rows,) the word of each row
    row_of = {(int(t), int(p)): i for i, (t, p) in enumerate(zip(text_ids, positions, strict=True))}

    if first:  # same word: scalar index, exact cosine over the word's occurrences
        for kind in ("BTREE", "BITMAP"):  # the shipped one (BITMAP) last, so it stays
            from lancedb.index import Bitmap, BTree

            index.occurrences.create_index("key", config=BTree() if kind == "BTREE" else Bitmap(), replace=True)

            def same(o: tuple[int, int]) -> Any:
                return search_occurrences(None, index, options=SearchOptions(occurrence=o, layer=layer))

            times, results = timed(same, occurrences, args.warmup)
            p50, p99 = percentiles(times)
            sizes = [r.candidates for r in results]
            recalls = []
            for o, r in zip(occurrences[args.warmup :], results, strict=True):
                i = row_of[o]
                scores = unit @ unit[i]  # (rows,)
                scores[codes != codes[i]] = -np.inf
                scores[i] = -np.inf
                top = np.argsort(-scores)[: min(10, int(np.isfinite(scores).sum()))]
                truth = {(int(text_ids[j]), int(positions[j])) for j in top}
                recalls.append(len(truth & {(h.text_id, h.position) for h in r.hits}) / max(len(truth), 1))
            big = [x for x, c in zip(recalls, sizes, strict=True) if c > EXACT_MAX]
            print(
                f"  recall@10 against numpy: all {np.mean(recalls):.3f}; words over {EXACT_MAX:,} occurrences "
                f"({len(big)} queries) {np.mean(big) if big else float('nan'):.3f}"
            )
            print(
                f"same word ({kind}): p50 {p50:.1f} ms, p99 {p99:.1f} ms over {len(times)} random occurrences "
                f"(the word's occurrences: median {int(np.median(sizes)):,}, max {max(sizes):,})"
            )
            out[f"same_word_{kind.lower()}"] = {
                "p50_ms": p50,
                "p99_ms": p99,
                "median_candidates": np.median(sizes),
                "recall": float(np.mean(recalls)),
            }

    # any word: exact numpy, FAISS IndexFlatIP, LanceDB IVF-PQ + exact re-ranking
    import faiss

    qrows = [int(i) for i in picks]
    exact: dict[int, set[tuple[int, int]]] = {}

    def numpy_exact(i: int) -> list[int]:
        scores = unit @ unit[i]  # (rows,)
        scores[codes == codes[i]] = -np.inf
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])].tolist()

    times, results = timed(numpy_exact, qrows, args.warmup)
    for i, top in zip(qrows[args.warmup :], results, strict=True):
        exact[i] = {(int(text_ids[j]), int(positions[j])) for j in top}
    p50, _ = percentiles(times)
    print(f"any word, exact numpy (float32 matmul, the word masked): p50 {p50:.1f} ms")
    out["numpy_exact_p50_ms"] = p50
    if not args.no_faiss:
        flat = faiss.IndexFlatIP(unit.shape[1])
        flat.add(unit)

        def faiss_flat(i: int) -> list[int]:
            allowed = np.packbits(codes != codes[i], bitorder="little")  # the word's rows left out, as numpy does
            params = faiss.SearchParameters(sel=faiss.IDSelectorBitmap(len(codes), faiss.swig_ptr(allowed)))
            _, found = flat.search(unit[i : i + 1], 10, params=params)
            return [int(j) for j in found[0]]

        times, results = timed(faiss_flat, qrows, args.warmup)
        recall = np.mean(
            [
                len({(int(text_ids[j]), int(positions[j])) for j in top} & exact[i]) / 10
                for i, top in zip(qrows[args.warmup :], results, strict=True)
            ]
        )
        p50, _ = percentiles(times)
        print(
            f"any word, FAISS IndexFlatIP (the word's rows left out by an IDSelectorBitmap): p50 {p50:.1f} ms, "
            f"recall@10 {recall:.3f}"
        )
        out["faiss_flat"] = {"p50_ms": p50, "recall": float(recall)}
        flat.reset()

    def lance_ann(i: int) -> Any:
        return search_occurrences(
            None, index, options=SearchOptions(occurrence=(int(text_ids[i]), int(positions[i])), any_word=True)
        )

    times, results = timed(lance_ann, qrows, args.warmup)
    recall = np.mean(
        [
            len({(h.text_id, h.position) for h in r.hits} & exact[i]) / 10
            for i, r in zip(qrows[args.warmup :], results, strict=True)
        ]
    )
    p50, p99 = percentiles(times)
    print(f"any word, {results[0].method}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, recall@10 {recall:.3f}")
    out["lancedb_ivf_pq"] = {"p50_ms": p50, "p99_ms": p99, "recall": float(recall), "method": results[0].method}
    out["sweep"] = sweep(index, unit, keys, text_ids, positions, qrows, exact, args, real["layer"])  # every size
    if first and not args.no_pq:
        out["ivf_pq"] = compare_pq(index, unit, keys, text_ids, positions, qrows, exact, args, real["layer"])
        build_search_indexes(index)  # back to the shipped settings
    if first and args.hnsw:
        out["hnsw"] = hnsw(index, unit, qrows, exact, text_ids, positions, keys, args, real["layer"])
        build_search_indexes(index)  # back to the shipped settings
    return out


def raw_query(index: Any, column: str, vector: np.ndarray, key: str, nprobes: int, refine: int) -> Any:
    search = index.occurrences.search(vector, vector_column_name=column).distance_type("cosine")
    search = search.where(f"key != '{key.replace(chr(39), chr(39) * 2)}'", prefilter=True)
    return search.nprobes(nprobes).refine_factor(refine).limit(10).select(["text_id", "position", "_distance"])


def sweep(index: Any, unit: np.ndarray, keys: Any, text_ids: Any, positions: Any, qrows: list[int], exact: Any,
          args: Any, layer: int) -> list[dict[str, Any]]:  # fmt: skip
    """nprobes x refine_factor on the IVF-PQ index: recall@10 and p50 of the bare vector query."""
    column = f"layer_{layer}"
    found = []
    print("IVF-SQ (shipped) settings:")
    print("| nprobes | refine factor | recall@10 | p50 ms (vector query only) |")
    print("| ---: | ---: | ---: | ---: |")
    for nprobes, refine in ((16, 10), (32, 10), (48, 10), (64, 10), (96, 10)):

        def run(i: int, nprobes: int = nprobes, refine: int = refine) -> Any:
            return raw_query(index, column, unit[i], str(keys[i]), nprobes, refine).to_arrow()

        times, results = timed(run, qrows, args.warmup)
        recall = np.mean(
            [
                len(set(zip(r["text_id"].to_pylist(), r["position"].to_pylist(), strict=True)) & exact[i]) / 10
                for i, r in zip(qrows[args.warmup :], results, strict=True)
            ]
        )
        p50, _ = percentiles(times)
        print(f"| {nprobes} | {refine} | {recall:.3f} | {p50:.1f} |")
        found.append({"nprobes": nprobes, "refine_factor": refine, "recall": float(recall), "p50_ms": p50})
    return found


def compare_pq(index: Any, unit: np.ndarray, keys: Any, text_ids: Any, positions: Any, qrows: list[int],
               exact: Any, args: Any, layer: int) -> dict[str, Any]:  # fmt: skip
    """IVF-PQ (as many partitions as the shipped IVF-SQ, D/8 sub-vectors): build time, recall@10 and p50."""
    from lancedb.index import IvfPq

    from bertlens.occurrences.ann import ann_partitions

    column = f"layer_{layer}"
    partitions = ann_partitions(len(unit))
    start = time.perf_counter()
    config = IvfPq(
        distance_type="cosine", num_partitions=partitions, num_sub_vectors=unit.shape[1] // 8, sample_rate=64,
        max_iterations=20,
    )  # fmt: skip
    index.occurrences.create_index(column, config=config, replace=True)
    built = time.perf_counter() - start
    result: dict[str, Any] = {"build_s": built, "partitions": partitions}
    for nprobes, refine in ((32, 10), (64, 10)):

        def run(i: int, nprobes: int = nprobes, refine: int = refine) -> Any:
            return raw_query(index, column, unit[i], str(keys[i]), nprobes, refine).to_arrow()

        times, results = timed(run, qrows, args.warmup)
        recall = np.mean(
            [
                len(set(zip(r["text_id"].to_pylist(), r["position"].to_pylist(), strict=True)) & exact[i]) / 10
                for i, r in zip(qrows[args.warmup :], results, strict=True)
            ]
        )
        p50, _ = percentiles(times)
        print(
            f"IVF-PQ ({partitions} partitions, {unit.shape[1] // 8} sub-vectors, built in {built:.0f} s), nprobes "
            f"{nprobes}, refine {refine}: recall@10 {recall:.3f}, p50 {p50:.1f} ms (vector query only)"
        )
        result[f"nprobes{nprobes}_refine{refine}"] = {"recall": float(recall), "p50_ms": p50}
    return result


def hnsw(index: Any, unit: np.ndarray, qrows: list[int], exact: Any, text_ids: Any, positions: Any, keys: Any,
         args: Any, layer: int) -> dict[str, Any]:  # fmt: skip
    from lancedb.index import IvfHnswSq

    column = f"layer_{layer}"
    rows = len(unit)
    partitions = max(1, rows // 100_000)
    start = time.perf_counter()
    index.occurrences.create_index(column, config=IvfHnswSq(distance_type="cosine", num_partitions=partitions))
    built = time.perf_counter() - start
    result = {}
    for ef, refine in ((64, 1), (64, 10), (128, 10)):

        def run(i: int, ef: int = ef, refine: int = refine) -> Any:
            search = index.occurrences.search(unit[i], vector_column_name=column).distance_type("cosine")
            search = search.where(f"key != '{str(keys[i]).replace(chr(39), chr(39) * 2)}'", prefilter=True)
            return search.ef(ef).refine_factor(refine).limit(10).select(["text_id", "position", "_distance"]).to_arrow()

        times, results = timed(run, qrows, args.warmup)
        recall = np.mean(
            [
                len(set(zip(r["text_id"].to_pylist(), r["position"].to_pylist(), strict=True)) & exact[i]) / 10
                for i, r in zip(qrows[args.warmup :], results, strict=True)
            ]
        )
        p50, _ = percentiles(times)
        print(f"IVF-HNSW-SQ ({partitions} partitions, built in {built:.0f} s), ef {ef}, refine {refine}: "
              f"recall@10 {recall:.3f}, p50 {p50:.1f} ms (vector query only)")  # fmt: skip
        result[f"ef{ef}_refine{refine}"] = {"recall": float(recall), "p50_ms": p50}
    result["build_s"] = built
    return result


if __name__ == "__main__":
    sys.exit(main())
