"""The Ray engine against the local engine on one machine: the same corpus, the same `extract`, side by side.

The corpus is the first N sentences of ../shared/data/corpus/enwiki-2015 (as bench/index_build.py). Every run is a
fresh process that loads the default model, then times one `extract` call (word level, last layer, NumPy shards of
`--shard-texts` texts: the batches both engines compute). Runs alternate (local, ray, ray, local) so that a busy
machine weighs on both alike; the load average is printed beside each run, and the CPU seconds of each run's whole
process tree (driver, Ray's daemons and actors; polled) are counted, which a busy machine disturbs less than time.

- local: this process, torch with every core of the machine;
- ray: `--engine ray` with as many one-CPU actors as the machine has cores, on a local cluster this run starts: its
  start (`ray.init`) is timed apart from the extract, whose time includes the actors' start (torch imported, model
  loaded, once per actor);
- per CPU: local with one torch thread, and Ray with one one-CPU actor: tokens/s of one core, the number
  docs/scale.md projects from.

tokens/s counts every model token (special tokens included). The rows of the two engines are compared at the end
(they are equal bit for bit when both run the same thread count; with different counts they may differ in the last
bits, and the largest difference is printed).

    python bench/ray_engine.py --sentences 2000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from itertools import islice
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENWIKI = ROOT / ".." / "shared" / "data" / "corpus" / "enwiki-2015"

CHILD = r"""
import json, os, sys, threading, time
import psutil
kind, corpus, out, actors, shard_texts = sys.argv[1:6]
seen = {}  # pid -> (create time, CPU seconds): every process of this run's tree, polled (Ray's actors included)


def poll():
    while True:
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                times = process.cpu_times()
                seen[(process.pid, process.create_time())] = times.user + times.system
            except psutil.Error:
                pass
        time.sleep(0.2)


threading.Thread(target=poll, daemon=True).start()
import torch
from bertlens import load_model
from bertlens.contextual.extract import ExtractOptions, extract
from bertlens.occurrences.ray_engine import RayOptions
if kind == "local-1":
    torch.set_num_threads(1)
model = load_model()
model.torch_model()
facts = {"threads": torch.get_num_threads()}
time.sleep(0.5)
setup = sum(seen.values())  # imports and model load in this process
options = ExtractOptions(shard_texts=int(shard_texts))
if kind.startswith("ray"):
    import ray
    start = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False)
    facts["cluster_start_seconds"] = time.perf_counter() - start
start = time.perf_counter()
if kind.startswith("ray"):
    extract(model, corpus, out, options=options, engine="ray", ray=RayOptions(actors=int(actors)))
else:
    extract(model, corpus, out, options=options)
facts["seconds"] = time.perf_counter() - start
time.sleep(0.5)
facts["cpu_seconds"] = sum(seen.values()) - setup  # the run's CPU in every process (cluster start included)
print(json.dumps(facts))
"""


def write_corpus(path: Path, size: int) -> None:
    sys.path.insert(0, str(ROOT))
    from bertlens.core.corpus import iter_texts, sentences

    lines = islice((s for t in iter_texts(ENWIKI) for s in sentences(t.text)), size)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def count_tokens(corpus: Path) -> int:
    from bertlens import load_model

    tokenizer = load_model().vocabulary.tokenizer
    texts = corpus.read_text(encoding="utf-8").splitlines()
    return sum(len(e.ids) for e in tokenizer.encode_batch([t for t in texts if t.strip()]))


def child(kind: str, corpus: Path, out: Path, actors: int, shard_texts: int) -> dict[str, float]:
    """One run in a fresh process; its CPU seconds are those of its whole process tree (Ray's daemons and actors
    included), polled every 0.2 s, less the imports and model load."""
    before = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(corpus), str(out), str(actors), str(shard_texts)],
        check=True,
        capture_output=True,
        text=True,
    )
    facts = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    facts["load"] = (before + os.getloadavg()[0]) / 2
    return facts


def largest_difference(a: Path, b: Path) -> tuple[bool, float]:
    """Same ids, positions and words in the same order; the largest |difference| of the vectors."""
    from bertlens.contextual.extract import read_shards

    largest = 0.0
    for x, y in zip(read_shards(a), read_shards(b), strict=True):
        if not (np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) and x[2] == y[2]):
            return False, float("nan")
        largest = max(largest, float(np.abs(x[3] - y[3]).max(initial=0.0)))
    return True, largest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=2000, help="sentences of the corpus")
    parser.add_argument("--shard-texts", type=int, default=125, help="texts per batch (shard), both engines")
    parser.add_argument("--actors", type=int, default=os.cpu_count() or 1, help="one-CPU Ray actors (default: cores)")
    parser.add_argument("--work", help="a folder to keep the corpus and outputs (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        corpus = work / f"corpus-{args.sentences}.txt"
        write_corpus(corpus, args.sentences)
        tokens = count_tokens(corpus)
        print(f"{args.sentences} sentences, {tokens} tokens, {os.cpu_count()} cores, {args.actors} actors\n")
        plan = [("local", args.actors), ("ray", args.actors), ("ray", args.actors), ("local", args.actors)]
        plan += [("local-1", 1), ("ray-1", 1), ("ray-1", 1), ("local-1", 1)]
        runs: dict[str, list[dict[str, float]]] = {}
        for n, (kind, actors) in enumerate(plan):
            facts = child(kind, corpus, work / f"{kind}-{n}", actors, args.shard_texts)
            runs.setdefault(kind, []).append({**facts, "out": n})  # type: ignore[dict-item]
            print(kind, json.dumps(facts), flush=True)
        names = {
            "local": f"local ({runs['local'][0]['threads']:.0f} torch threads)",
            "ray": f"ray ({args.actors} actors x 1 CPU)",
            "local-1": "local, 1 torch thread",
            "ray-1": "ray, 1 actor x 1 CPU",
        }
        print("\n| run | extract s | tokens/s | Ray start s | CPU s | tokens per CPU s | load avg |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for kind, done in runs.items():
            wall = float(np.mean([d["seconds"] for d in done]))
            cpu = float(np.mean([d["cpu_seconds"] for d in done]))
            start = np.mean([d.get("cluster_start_seconds", np.nan) for d in done])
            load = np.mean([d["load"] for d in done])
            shown = "-" if np.isnan(start) else f"{start:.1f}"
            print(
                f"| {names[kind]} | {wall:.1f} | {tokens / wall:.0f} | {shown} | {cpu:.1f} | {tokens / cpu:.0f} "
                f"| {load:.1f} |"
            )
        local = float(np.mean([d["seconds"] for d in runs["local"]]))
        ray = float(np.mean([d["seconds"] for d in runs["ray"]]))
        start = float(np.mean([d["cluster_start_seconds"] for d in runs["ray"]]))
        print(
            f"\nRay engine / local engine, extract time: {ray / local:.2f}; with the cluster's start: "
            f"{(ray + start) / local:.2f}"
        )
        one_local = float(np.mean([d["seconds"] for d in runs["local-1"]]))
        one_ray = float(np.mean([d["seconds"] for d in runs["ray-1"]]))
        print(
            f"one CPU: local {tokens / one_local:.0f} tokens/s, one Ray actor {tokens / one_ray:.0f} tokens/s "
            f"(ratio {one_ray / one_local:.2f})"
        )
        cpu_local = float(np.mean([d["cpu_seconds"] for d in runs["local"]]))
        cpu_ray = float(np.mean([d["cpu_seconds"] for d in runs["ray"]]))
        one = np.mean([d["cpu_seconds"] for d in runs["ray-1"]]) / np.mean([d["cpu_seconds"] for d in runs["local-1"]])
        print(
            f"CPU seconds, Ray engine / local engine: {cpu_ray / cpu_local:.2f} ({args.actors} actors); "
            f"one CPU: {one:.2f}"
        )
        rows = json.loads((work / "local-0" / "manifest.json").read_text())["rows"]
        print(f"words (rows) per model token: {rows / tokens:.3f}")
        same, largest = largest_difference(work / "local-0", work / "ray-1")
        print(f"rows: same ids, positions and words: {same}; largest |vector difference| {largest:.3g}")
        same, largest = largest_difference(work / "local-1-4", work / "ray-1-5")  # both one thread
        print(f"rows at one thread each: same ids, positions and words: {same}; largest |difference| {largest:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
