"""The occurrence index build, side by side with `extract` on the same corpus: throughput, peak memory, float16.

Corpora are the first N sentences of ../shared/data/corpus/enwiki-2015 (as bench/extract_memory.py). Every run is a
fresh process that loads the default model, then times one library call (imports and model load excluded) and reports
its peak resident memory:

- throughput: `extract` (word level, last layer, NumPy shards) against `index_corpus` (last layer), run alternately
  (extract, index, index, extract) so that a busy machine weighs on both alike; tokens/s counts every model token
  (special tokens included). The index's time includes its compaction and search structures (`ann`), also shown alone;
- memory: `index_corpus` at each of `--sizes` (peak RSS should stay flat: one batch of vectors in memory at a time);
- float16: the same corpus indexed with float16 vectors: size on disk, and how rankings move against float32:
  same-word rankings (every occurrence of a query's word ranked by cosine) compared by overlap@10 and Spearman's rho,
  and any-word top-10 (exact, over every occurrence) by overlap@10.

    python bench/index_build.py --throughput 2000 --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from itertools import islice
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENWIKI = ROOT / ".." / "shared" / "data" / "corpus" / "enwiki-2015"

CHILD = r"""
import json, resource, sys, threading, time
import bertlens.occurrences.ann as ann
from bertlens import load_model
from bertlens.contextual.extract import ExtractOptions, extract
from bertlens.occurrences.build import IndexOptions, index_corpus
kind, corpus, out = sys.argv[1:4]
model = load_model()
model.torch_model()
start = time.perf_counter()
cpu = time.process_time()


def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024


def trace():  # the resident size every 2 s, kept in OUT.rss as the run goes
    with open(out + ".rss", "w") as log:
        while True:
            log.write(f"{time.perf_counter() - start:.0f} {rss('VmRSS:'):.0f}\n")
            log.flush()
            time.sleep(2)


threading.Thread(target=trace, daemon=True).start()
writing = {}
original = ann.build_search_indexes


def marked(index, **kwargs):  # the peak so far is the rows' writing (and compaction): the search structures come next
    writing["writing_peak_mb"] = rss("VmHWM:")
    writing["writing_seconds"] = time.perf_counter() - start
    writing["writing_cpu_seconds"] = time.process_time() - cpu
    return original(index, **kwargs)


ann.build_search_indexes = marked
if kind == "extract":
    extract(model, corpus, out, options=ExtractOptions())
else:
    index_corpus(model, corpus, out, options=IndexOptions(dtype="float16" if kind == "index16" else "float32"))
seconds = time.perf_counter() - start
after = {"cpu_seconds": time.process_time() - cpu}
if kind.startswith("index"):
    from bertlens.occurrences.store import open_index
    index = open_index(out)
    again = time.perf_counter()
    original(index)
    after["search_seconds"] = time.perf_counter() - again
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, **writing, **after}))
"""


def write_corpus(path: Path, size: int) -> None:
    sys.path.insert(0, str(ROOT))
    from bertlens.core.corpus import iter_texts, sentences

    lines = islice((s for t in iter_texts(ENWIKI) for s in sentences(t.text)), size)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def child(kind: str, corpus: Path, out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(corpus), str(out)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def count_tokens(corpus: Path) -> int:
    from bertlens import load_model

    tokenizer = load_model().vocabulary.tokenizer
    texts = corpus.read_text(encoding="utf-8").splitlines()
    return sum(len(e.ids) for e in tokenizer.encode_batch([t for t in texts if t.strip()]))


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def rank_columns(out: Path) -> tuple[list[str], np.ndarray]:
    from bertlens.occurrences.store import open_index

    index = open_index(out)
    table = index.occurrences.to_arrow().sort_by([("text_id", "ascending"), ("position", "ascending")])
    column = table.column(index.column()).combine_chunks()
    vectors = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(table), -1)
    return table.column("key").to_pylist(), vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def float16_effect(full: Path, half: Path, queries: int, seed: int = 0) -> dict[str, float]:
    keys, v32 = rank_columns(full)
    keys16, v16 = rank_columns(half)
    assert keys == keys16
    by_key: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_key.setdefault(key, []).append(i)
    frequent = [i for i, key in enumerate(keys) if len(by_key[key]) >= 21 and key.isalpha()]
    chosen = np.random.default_rng(seed).choice(frequent, size=min(queries, len(frequent)), replace=False)
    same_overlap, rhos, any_overlap = [], [], []
    for q in chosen:
        others = np.array([i for i in by_key[keys[q]] if i != q])
        s32, s16 = v32[others] @ v32[q], v16[others] @ v16[q]
        top32, top16 = set(others[np.argsort(-s32)[:10]]), set(others[np.argsort(-s16)[:10]])
        same_overlap.append(len(top32 & top16) / 10)
        rhos.append(spearman(s32, s16))
        a32, a16 = v32 @ v32[q], v16 @ v16[q]
        a32[q] = a16[q] = -np.inf
        any_overlap.append(len(set(np.argsort(-a32)[:10]) & set(np.argsort(-a16)[:10])) / 10)
    return {
        "queries": len(chosen),
        "same_word_overlap_at_10": float(np.mean(same_overlap)),
        "same_word_spearman": float(np.mean(rhos)),
        "same_word_spearman_min": float(np.min(rhos)),
        "any_word_overlap_at_10": float(np.mean(any_overlap)),
        "largest_cosine_change": float(np.max(np.abs((v32 * v16).sum(axis=1) - 1))),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--throughput", type=int, default=2000, help="sentences for throughput and float16")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000], help="sentences for peak memory")
    parser.add_argument("--queries", type=int, default=200, help="float16: query occurrences")
    parser.add_argument(
        "--runs", type=int, default=4, help="throughput runs: extract, index, index, extract (2: one each)"
    )
    parser.add_argument("--work", help="a folder to keep the corpora and outputs (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        corpus = work / f"corpus-{args.throughput}.txt"
        write_corpus(corpus, args.throughput)
        tokens = count_tokens(corpus)
        print(f"{args.throughput} sentences, {tokens} tokens\n")
        runs: dict[str, list[dict[str, float]]] = {"extract": [], "index": []}
        for n, kind in enumerate(("extract", "index", "index", "extract")[: args.runs]):
            runs[kind].append(child(kind, corpus, work / f"{kind}-{n}"))
            print(kind, json.dumps(runs[kind][-1]), flush=True)
        print("| run | wall s | tokens/s (wall) | CPU s | tokens per CPU s | peak RSS MB |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        rates: dict[str, float] = {}
        for kind, done in runs.items():
            wall = float(np.mean([d["seconds"] for d in done]))
            cpu = float(np.mean([d["cpu_seconds"] for d in done]))
            rates[kind] = tokens / cpu
            peak = max(d["peak_mb"] for d in done)
            print(f"| {kind} | {wall:.1f} | {tokens / wall:.0f} | {cpu:.1f} | {tokens / cpu:.0f} | {peak:.0f} |")
        index = runs["index"]
        wall = float(np.mean([d["writing_seconds"] for d in index]))
        cpu = float(np.mean([d["writing_cpu_seconds"] for d in index]))
        peak = max(d["writing_peak_mb"] for d in index)
        print(
            f"| index: rows written and compacted | {wall:.1f} | {tokens / wall:.0f} | {cpu:.1f} | {tokens / cpu:.0f} "
            f"| {peak:.0f} |"
        )
        search = np.mean([d["search_seconds"] for d in index])
        print(
            f"\nindex / extract (tokens per CPU s): {rates['index'] / rates['extract']:.1%}, rows only "
            f"{tokens / cpu / rates['extract']:.1%}; search structures built again alone: {search:.1f} s\n"
        )
        half = child("index16", corpus, work / "index16")
        effect = float16_effect(work / "index-1", work / "index16", args.queries)
        print(
            f"float16: {folder_mb(work / 'index16'):.1f} MB on disk vs float32 {folder_mb(work / 'index-1'):.1f} MB; "
            f"build {half['seconds']:.1f} s"
        )
        print(json.dumps(effect, indent=1))
        if args.sizes:
            print("\n| sentences | wall s | CPU s | peak RSS MB |")
            print("| ---: | ---: | ---: | ---: |")
        for size in args.sizes:
            sized = work / f"corpus-{size}.txt"
            write_corpus(sized, size)
            done = child("index", sized, work / f"memory-{size}")
            print(
                f"| {size} | {done['seconds']:.0f} (rows {done['writing_seconds']:.0f}) | {done['cpu_seconds']:.0f} "
                f"| {done['writing_peak_mb']:.0f} while writing rows, {done['peak_mb']:.0f} in all |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
