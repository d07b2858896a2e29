"""Contextual-vector throughput on a CUDA GPU: bertlens against its peers and the GPU's limit, side by side in one run.

The CPU bench (bench/contextual.py) has the CPU peers; this one runs where a CUDA GPU is, in one process, with the
packages found there (the peers need nothing beyond sentence-transformers and transformers):

    python bench/contextual_gpu.py --json gpu.json                       # WikiText-2 validation, every sentence
    python bench/contextual_gpu.py --data wiki.valid.raw wiki.test.raw   # more text

    python bench/contextual_gpu.py --host-only                           # no GPU needed: the host side alone

`--host-only` runs bertlens' whole word path as it runs for a GPU (bertlens/contextual/pipeline.py: each text encoded
once by the tokenizers library in a thread ahead of the device, token-budget batches, word boundaries, pooling
indices, result columns) with the device's work replaced by a stand-in step that hands back precomputed pooled rows of
the right shapes (every layer concatenated, bfloat16, on the CPU), and prints `host-only: N tokens/s` beside the
tokenizers library's own batch-encode rate over the same sentences in the same run (the ratio is what holds from one
machine to another), then where each microsecond per token goes (cProfile of one pass in one thread).

Configurations, each over the same sentences:

* `transformers <dtype>`: the plain loop. AutoModel with `attn_implementation="sdpa"` in float32, float16 and
  bfloat16 (`dtype=`), batches of 32 in corpus order padded to the longest, `output_hidden_states=True`, every layer
  stacked on the GPU and left there (nothing copied to the host: the loop's best case).
* `st-torch <dtype> b<batch>`: sentence-transformers `encode(output_value="token_embeddings",
  convert_to_numpy=False)`, backend torch on CUDA, `model_kwargs={"dtype": ...}`, its default batch of 32 and 256
  (it sorts by length itself; the last layer's vectors stay on the GPU).
* `bertlens hidden_states <dtype>`: every layer of every token, copied to the host as float32 arrays.
* `bertlens words <dtype> <batch tokens>`: word-pooled vectors of every layer (`word_vectors_many(..., layers=0..L,
  combine="concat")`), pooled on the GPU, only the words copied out, at bertlens' default batch (2,048 tokens) and
  larger ones.
* `bertlens word columns <dtype> <batch tokens>`: the same words through the pipeline (bertlens/contextual/pipeline.py)
  as columns per batch, every layer's rows copied to the host, without a result object per text.
* the limit: the linear layers of one forward pass at the model's shapes (bench/gemm_limit.Shapes), M = 16,384
  tokens, as cuBLAS runs them (`torch.nn.functional.linear`) in float32 (TF32 off), TF32, float16 and bfloat16:
  GFLOP/s and the tokens/s they would allow.

One warm round runs every configuration (bertlens' word vectors kept for the fidelity table: the smallest cosine per
layer of each reduced precision against bertlens' float32 on the same GPU, and whether the word boundaries are the
same); then `--repeats` rounds time each once, round-robin; medians are shown, the best round in brackets. Tokens/s
counts the sentences' tokens with special tokens (bertlens' tokenizer), the same count for every row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a bench script's own process: nothing may be fetched
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from contextual import WIKITEXT, cosines, load_sentences  # noqa: E402  (bench/contextual.py)
from gemm_limit import Shapes, shapes_of  # noqa: E402

DTYPES = ("float32", "float16", "bfloat16")
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "tf32": "tf32"}
LIMIT_TOKENS = 16_384
PEER_BATCH = 32


def gpu_limit(shapes: Shapes, tokens: int, repeats: int) -> dict[str, dict[str, float]]:
    """Per precision, the best time of one forward pass's linear layers on (tokens, in) inputs, as GFLOP/s and
    tokens/s (CUDA events, after a warm pass)."""
    import torch

    found = {}
    for name in ("float32", "tf32", "float16", "bfloat16"):
        dtype = torch.float32 if name in ("float32", "tf32") else getattr(torch, name)
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        cuda = {"device": "cuda", "dtype": dtype}
        layer = [  # (out, in) weights, (M, in) inputs
            (torch.randn(n_out, n_in, **cuda) / n_in**0.5, torch.randn(tokens, n_in, **cuda))
            for n_in, n_out in shapes.products()
        ]

        def run(layer: list[Any] = layer) -> None:
            for _ in range(shapes.layers):
                for w, x in layer:
                    torch.nn.functional.linear(x, w)

        run()
        best = float("inf")
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        flops = shapes.flops_per_token * tokens
        found[name] = {"seconds": best, "gflops": flops / best / 1e9, "tokens_per_s": tokens / best}
    torch.backends.cuda.matmul.allow_tf32 = False
    return found


def peers(
    model_path: str,
    sentences: list[str],
    dtypes: tuple[str, ...] = DTYPES,
    batches: tuple[int, ...] = (PEER_BATCH, 256),
) -> dict[str, Callable[[], Any]]:
    """The peer configurations, loaded: name -> a call that encodes every sentence once."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    found: dict[str, Callable[[], Any]] = {}
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    for dtype in dtypes:
        net = AutoModel.from_pretrained(model_path, dtype=getattr(torch, dtype), attn_implementation="sdpa")
        net = net.cuda().eval()

        def loop(net: Any = net) -> None:
            for start in range(0, len(sentences), PEER_BATCH):
                batch = tokenizer(sentences[start : start + PEER_BATCH], padding=True, return_tensors="pt").to("cuda")
                with torch.inference_mode():
                    torch.stack(net(**batch, output_hidden_states=True).hidden_states)  # (layers + 1, B, T, H)
            torch.cuda.synchronize()

        found[f"transformers {SHORT[dtype]}"] = loop
        encoder = SentenceTransformer(model_path, device="cuda", model_kwargs={"dtype": getattr(torch, dtype)})
        for batch in batches:

            def encode(encoder: Any = encoder, batch: int = batch) -> None:
                encoder.encode(sentences, output_value="token_embeddings", batch_size=batch, convert_to_numpy=False)
                torch.cuda.synchronize()

            found[f"st-torch {SHORT[dtype]} b{batch}"] = encode
    return found


class StandIn:
    """The device step's stand-in: precomputed pooled rows (1, words, D) in bfloat16, handed back at once."""

    def __init__(self, width: int, most: int) -> None:
        import torch

        self.rows = torch.randn((1, most, width), generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)

    def __call__(self, batch: Any) -> Any:
        rows = self.rows[:, : len(batch.words.first)]
        return type("Ready", (), {"rows": lambda self: rows})()


STAGES = (  # (function, file) that a cProfile entry's time belongs to -> the stage; builtins, comprehensions and
    # generators count with the nearest function that called them; the rest is "other Python" (threads, queues)
    ("encode: the tokenizers library (parallel)", (("encode_batch", ""),)),
    ("lay out: ids, words and their characters read off the encodings", (("lay_out", "pipeline.py"),)),
    (
        "positions, sort (numpy)",
        (("_chunk", "pipeline.py"), ("flat_positions", "pipeline.py"), ("position_ids", "families.py")),
    ),
    ("batches: cuts, slices, columns", (("_cuts", "pipeline.py"), ("_batch", "pipeline.py"))),
    ("device step (stand-in)", (("__call__", "contextual_gpu.py"), ("<lambda>", "contextual_gpu.py"))),
)


def stage_of(key: tuple[str, int, str], stats: dict[Any, Any], seen: frozenset[Any] = frozenset()) -> str:
    """The stage of a cProfile entry: its own function's, or that of the caller it spent most of its time under."""
    file, _, function = key
    for name, owners in STAGES:
        for owner, where in owners:
            builtin = file == "~" and not where and owner in function  # e.g. "<method 'encode_batch' of ...>"
            if builtin or (function == owner and where and file.endswith(where)):
                return name
    callers = stats[key][4]
    if (file.endswith(".py") and not function.startswith("<")) or not callers or key in seen:
        return "other Python"
    caller = max(callers, key=lambda c: callers[c][2])  # (calls, primitive calls, tottime, cumtime) under it
    return stage_of(caller, stats, seen | {key})


def host_only(model: Any, sentences: list[str], batch_tokens: int, repeats: int) -> dict[str, Any]:
    """The host side alone: the pipeline with a stand-in device step, against the tokenizers library's batch-encode
    rate over the same chunks of sentences; then a cProfile of one pass by stage."""
    import cProfile
    import pstats

    from bertlens.contextual.pipeline import CHUNK_TEXTS, word_batches

    tokenizer = model.vocabulary.tokenizer
    tokens = sum(len(e) for e in tokenizer.encode_batch(sentences))
    width = model.config.hidden_size * (model.config.num_hidden_layers + 1)
    step = StandIn(width, batch_tokens)

    texts = max(CHUNK_TEXTS, batch_tokens // 16)  # the pipeline's own chunks (pipeline.word_batches)

    def encode() -> None:
        for start in range(0, len(sentences), texts):
            tokenizer.encode_batch(sentences[start : start + texts])

    def pipeline(chunk: int = texts) -> int:
        return sum(len(batch) for batch in word_batches(model, sentences, step, batch_tokens=batch_tokens, chunk=chunk))

    words = pipeline()
    times: dict[str, list[float]] = {"encode": [], "pipeline": []}
    for _ in range(repeats):  # alternated, so that both meet the same load on a shared machine
        for name, run in (("encode", encode), ("pipeline", pipeline)):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    rates = {name: tokens / statistics.median(t) for name, t in times.items()}
    profile = cProfile.Profile()
    profile.enable()
    pipeline(chunk=len(sentences) + 1)  # one chunk: everything in this thread, where cProfile sees it
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values())  # tottime
    shares: dict[str, float] = {name: 0.0 for name, _ in STAGES} | {"other Python": 0.0}
    for key, entry in stats.items():
        shares[stage_of(key, stats)] += entry[2]
    return {
        "sentences": len(sentences),
        "tokens": tokens,
        "words": words,
        "batch_tokens": batch_tokens,
        "rows": f"(1, words, {width}) bfloat16",
        "tokens_per_s": rates["pipeline"],
        "encode_tokens_per_s": rates["encode"],
        "ratio": rates["pipeline"] / rates["encode"],
        "seconds": times,
        "profile_us_per_token": {name: t / tokens * 1e6 for name, t in shares.items()},
        "profile_total_us_per_token": total / tokens * 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", type=Path, default=[WIKITEXT], help="WikiText-style raw text files")
    parser.add_argument("--sentences", type=int, default=10**9, help="at most this many sentences (default: all)")
    parser.add_argument("--batch-tokens", type=int, nargs="+", default=[2048, 8192, 32768])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write every figure to this JSON file")
    parser.add_argument("--host-only", action="store_true", help="the host side alone, with a stand-in device step")
    parser.add_argument("--quick", action="store_true", help="float32 and bfloat16 only, the peers at batch 32")
    parser.add_argument("--profile-dir", help="write each torch.profiler table here")
    args = parser.parse_args()

    import torch

    from bertlens import load_model
    from bertlens.contextual import RunOptions, hidden_states, word_vectors_many

    if args.host_only:
        sentences = [s for path in args.data for s in load_sentences(args.sentences, path)][: args.sentences]
        found = host_only(load_model(), sentences, max(args.batch_tokens), args.repeats)
        print(f"{found['sentences']} sentences, {found['tokens']} tokens, {found['words']} words; rows {found['rows']}")
        print(f"tokenizers encode_batch alone: {found['encode_tokens_per_s']:,.0f} tokens/s")
        print("profile of one pass (cProfile, one thread), microseconds per token:")
        for name, us in found["profile_us_per_token"].items():
            print(f"  {us:6.3f}  {name}")
        print(f"  {found['profile_total_us_per_token']:6.3f}  in all (cProfile's own cost included)")
        print(f"ratio to encode_batch alone: {found['ratio']:.2f}")
        print(f"host-only: {found['tokens_per_s']:,.0f} tokens/s")
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=2), encoding="utf-8")
        return 0
    if not torch.cuda.is_available():
        print("No CUDA device: this bench runs on a GPU (bench/contextual.py is the CPU one).", file=sys.stderr)
        return 2
    sentences = [s for path in args.data for s in load_sentences(args.sentences, path)][: args.sentences]
    model = load_model()
    tokens = sum(len(e.ids) for e in model.vocabulary.tokenizer.encode_batch(sentences))
    every_layer = list(range(model.config.num_hidden_layers + 1))
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    say(f"{len(sentences)} sentences, {tokens} tokens, on {torch.cuda.get_device_name()}")
    dtypes = ("float32", "bfloat16") if args.quick else DTYPES

    runs: dict[str, Callable[[], Any]] = {}
    for dtype in dtypes:
        options = RunOptions(device="cuda", dtype=dtype)  # type: ignore[arg-type]
        runs[f"bertlens hidden_states {SHORT[dtype]}"] = lambda o=options: hidden_states(model, sentences, options=o)
        for batch in args.batch_tokens:
            options = RunOptions(device="cuda", dtype=dtype, batch_tokens=batch)  # type: ignore[arg-type]
            runs[f"bertlens words {SHORT[dtype]} {batch}"] = lambda o=options: word_vectors_many(
                model, sentences, layers=every_layer, combine="concat", options=o
            )
    from bertlens.contextual.device_step import WordStep
    from bertlens.contextual.pipeline import word_batches

    for dtype in dtypes:  # the word path's columns, without a result object per text (what corpus commands read)

        def columns(dtype: str = dtype, batch: int = max(args.batch_tokens)) -> int:
            step = WordStep(model, "cuda", dtype, every_layer, "mean", "concat")
            return sum(len(found) for found in word_batches(model, sentences, step, batch_tokens=batch))

        runs[f"bertlens word columns {SHORT[dtype]} {max(args.batch_tokens)}"] = columns
    runs |= peers(str(model.source.path), sentences, dtypes, (PEER_BATCH,) if args.quick else (PEER_BATCH, 256))

    sampler = Utilisation()
    say("warm round ...")
    kept = {name: run() for name, run in runs.items()}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(args.repeats):
        say(f"round {r + 1} of {args.repeats} ...")
        for name, run in runs.items():
            sampler.label = name
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
            sampler.label = None
    sampler.stop()
    timed = {name: {"tokens_per_s": tokens / statistics.median(s), "seconds": s} for name, s in seconds.items()}
    if args.json:  # kept should a later step not finish
        Path(args.json).write_text(json.dumps({"tokens": tokens, "rows": timed}, indent=2), encoding="utf-8")
    say("\n".join(f"{name}: {row['tokens_per_s']:,.0f} tokens/s" for name, row in timed.items()))
    limit = gpu_limit(shapes_of(model), LIMIT_TOKENS, repeats=20)
    profiles = {}
    for dtype in dtypes:
        name = f"bertlens words {SHORT[dtype]} {max(args.batch_tokens)}"
        profiles[name] = profile(runs[name], args.profile_dir, name)

    hidden = model.config.hidden_size
    base = kept[f"bertlens words f32 {args.batch_tokens[0]}"]
    fidelity = {}
    for dtype in dtypes[1:]:
        other = kept[f"bertlens words {SHORT[dtype]} {args.batch_tokens[0]}"]
        same = all(
            [(w.start, w.end) for w in a.words] == [(w.start, w.end) for w in b.words]
            for a, b in zip(base, other, strict=True)
        )
        a = np.concatenate([r.vectors for r in base]).astype(np.float64)  # (words, layers x H)
        b = np.concatenate([r.vectors for r in other]).astype(np.float64)
        per_layer = [
            float(cosines(a[:, i * hidden : (i + 1) * hidden], b[:, i * hidden : (i + 1) * hidden]).min())
            for i in range(len(every_layer))
        ]
        fidelity[dtype] = {"min_cosine_per_layer": per_layer, "same_word_boundaries": same}

    import sentence_transformers
    import transformers

    from bertlens.contextual.device_step import attention_kind

    report = {
        "gpu": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "versions": {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
            "sentence-transformers": sentence_transformers.__version__,
        },
        "attention": {dtype: attention_kind(model, "cuda", dtype) for dtype in dtypes},
        "sentences": len(sentences),
        "tokens": tokens,
        "rows": {
            name: {
                "tokens_per_s": tokens / statistics.median(s),
                "best": tokens / min(s),
                "seconds": s,
                "gpu_utilisation": sampler.mean(name),
            }
            for name, s in seconds.items()
        },
        "limit": {"tokens": LIMIT_TOKENS, "flops_per_token": shapes_of(model).flops_per_token, **limit},
        "fidelity": fidelity,
        "profiles": profiles,
    }
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


class Utilisation:
    """The GPU's utilisation (torch.cuda.utilization, NVML), sampled every 20 ms while a labelled run is timed."""

    def __init__(self) -> None:
        import threading

        self.label: str | None = None
        self.samples: dict[str, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import torch

        while not self._stop.wait(0.02):
            label = self.label
            if label is None:
                continue
            try:
                value = int(torch.cuda.utilization())
            except Exception:  # no NVML: nothing sampled
                return
            self.samples.setdefault(label, []).append(value)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def mean(self, label: str) -> float | None:
        found = self.samples.get(label)
        return float(np.mean(found)) if found else None


def profile(run: Callable[[], Any], folder: str | None, name: str) -> dict[str, Any]:
    """One run under torch.profiler: the wall time, the GPU's busy time, and the operators that took most of it."""
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    start = time.perf_counter()
    with torch.profiler.profile(activities=activities) as prof:
        run()
    wall = time.perf_counter() - start
    events = prof.key_averages()
    device = sum(e.self_device_time_total for e in events) / 1e6  # seconds of kernels, summed
    top = sorted(events, key=lambda e: e.self_device_time_total, reverse=True)[:12]
    table = events.table(sort_by="self_device_time_total", row_limit=25)
    if folder:
        Path(folder, name.replace(" ", "_") + ".profile.txt").write_text(table, encoding="utf-8")
    return {
        "wall_s": wall,
        "kernels_s": device,
        "top": [
            {
                "op": e.key,
                "device_s": e.self_device_time_total / 1e6,
                "cpu_s": e.self_cpu_time_total / 1e6,
                "calls": e.count,
            }
            for e in top
        ],
    }


def render(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
    rows = report["rows"]
    st32 = rows.get(f"st-torch f32 b{PEER_BATCH}", {}).get("tokens_per_s")
    lines = [
        f"{report['gpu']} (compute capability {'.'.join(map(str, report['capability']))}); "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items()),
        f"{report['sentences']} sentences, {report['tokens']} tokens",
        "",
        f"attention: {report.get('attention')}",
        "",
        "| configuration | tokens/s (best) | x st-torch f32 | GPU busy |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, row in rows.items():
        ratio = f"{row['tokens_per_s'] / st32:.2f}x" if st32 else "-"
        busy = "-" if row.get("gpu_utilisation") is None else f"{row['gpu_utilisation']:.0f}%"
        lines.append(f"| {name} | {row['tokens_per_s']:,.0f} ({row['best']:,.0f}) | {ratio} | {busy} |")
    limit = report["limit"]
    lines += [
        "",
        f"Limit: the linear layers of one pass at M = {limit['tokens']:,} tokens (cuBLAS):",
        "",
        "| precision | TFLOP/s | tokens/s |",
        "| --- | ---: | ---: |",
    ]
    for name in ("float32", "tf32", "float16", "bfloat16"):
        lines.append(f"| {name} | {limit[name]['gflops'] / 1e3:,.1f} | {limit[name]['tokens_per_s']:,.0f} |")
    lines += ["", "| precision | min cosine with float32, layers 0..L | word boundaries |", "| --- | --- | --- |"]
    for dtype, found in report["fidelity"].items():
        shown = " ".join(f"{c:.5f}" for c in found["min_cosine_per_layer"])
        lines.append(f"| {dtype} | {shown} | {'same' if found['same_word_boundaries'] else 'DIFFER'} |")
    for name, found in report.get("profiles", {}).items():
        lines += ["", f"torch.profiler, {name}: {found['wall_s']:.3f} s wall, {found['kernels_s']:.3f} s of kernels"]
        lines += [f"  {e['device_s'] * 1e3:8.1f} ms GPU {e['calls']:6d} calls  {e['op'][:70]}" for e in found["top"]]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
