"""The corpus commands' throughput against the raw forward pass, one run, same corpus, same machine, default model.

Do `extract`, `distill` and `index_corpus` run as fast as the model itself? Each is timed on the same sentences
(WikiText-2 validation, ../shared/data, as bench/contextual.py picks them; written to a temporary corpus file, one
sentence per line), in float32 and in bfloat16 (`RunOptions(dtype=...)`), and shown as a share of the raw forward at
the same precision:

- forward: `hidden_states(model, sentences)` consumed (every layer of every token: the ceiling the others build on);
- extract: `extract(model, corpus, out)` (word level, last layer, NumPy shards: the defaults);
- distill: `distill(model, words, sentences, max_contexts=10**9)` with every word of the corpus as `words`, so that
  every sentence goes through the model (each sentence is a context of its words; last layer);
- index: `index_corpus(model, corpus, out)` (last layer, float32 vectors), whole (rows, then the search
  structures) and its rows alone (timed up to the search structures' build, as bench/index_build.py does).

Tokens are counted once, the same way for all: the tokenizer's ids with special tokens (bench/index_build.py's
`count_tokens`). Each (command, precision) runs in a fresh process, as a user's would: the model is loaded and the
command is run once on the first `--warm` sentences (imports, packing, kernels) before the timed run over the whole
corpus; the runs go round-robin (forward, extract, distill, index; reversed on every other repeat) so that a busy
machine weighs on all alike, and the table shows tokens per wall second, the median and the best of `--repeats` runs
(the best is the least swayed by other processes on a shared machine), and tokens per CPU second (every thread's
time, median) beside them. Each row also says how many batches the model ran and its padded tokens per real token
(counted by a hook on the model's inference copy): the commands call the model on chunks of a corpus, and texts sort
by length only within a chunk, so smaller chunks mean more padding, which the model computes like any token; and
its minor page faults per token (memory touched fresh: `steady_memory`, on by default in extract and index_corpus,
has every large block mmapped anew; `--no-steady-memory` runs them without it).
Output folders live in a temporary folder, removed after.

    python bench/corpus_throughput.py --sentences 2000 --repeats 2 --json corpus_throughput.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.append(str(HERE))  # after the packages: bench's module names shadow nothing

from contextual import load_sentences  # noqa: E402
from index_build import count_tokens  # noqa: E402

KINDS = ("forward", "extract", "distill", "index")
DTYPES = ("float32", "bfloat16")
WORD = re.compile(r"\w+(?:[-']\w+)*")  # distill's own word filter: every word of the corpus is asked for


def corpus_words(sentences: list[str]) -> list[str]:
    return list(dict.fromkeys(m.group(0).casefold() for s in sentences for m in WORD.finditer(s)))


def run_once(model: Any, kind: str, dtype: str, corpus: Path, out: Path, steady: bool = True) -> dict[str, float]:
    """One timed call of `kind` over the corpus file (the model loaded by the caller)."""
    from bertlens.contextual import RunOptions, hidden_states
    from bertlens.contextual.distill import distill
    from bertlens.contextual.extract import extract
    from bertlens.core.corpus import iter_texts
    from bertlens.occurrences import ann
    from bertlens.occurrences.build import index_corpus

    run = RunOptions(dtype=dtype)  # type: ignore[arg-type]
    sentences = [t.text for t in iter_texts(corpus)]
    found: dict[str, float] = {}
    original = ann.build_search_indexes
    start, cpu = time.perf_counter(), time.process_time()

    def rows_done(index: Any, **kwargs: Any) -> Any:  # the index's rows are written: its search structures come next
        found["rows_seconds"] = time.perf_counter() - start
        found["rows_cpu_seconds"] = time.process_time() - cpu
        return original(index, **kwargs)

    ann.build_search_indexes = rows_done
    try:
        if kind == "forward":
            for _ in hidden_states(model, sentences, options=run):
                pass
        elif kind == "extract":
            extract(model, corpus, out, run=run, steady_memory=steady)
        elif kind == "distill":
            distill(model, corpus_words(sentences), sentences, max_contexts=10**9, options=run)
        else:
            index_corpus(model, corpus, out, run=run, steady_memory=steady)
    finally:
        ann.build_search_indexes = original
    return {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu, **found}


def padded_counter(model: Any, dtype: str) -> dict[str, int]:
    """Count the batches and padded tokens the model's inference copy runs from now on (a forward pre-hook)."""
    from bertlens.core.precision import choose_precision

    try:
        from bertlens.core.packing import inference_model
    except ImportError:  # before it moved to core
        from bertlens.contextual.runner import inference_model  # type: ignore[attr-defined,no-redef]

    seen = {"batches": 0, "padded_tokens": 0}

    def hook(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]  # (rows, padded tokens)
        seen["batches"] += 1
        seen["padded_tokens"] += int(ids.numel())

    inference_model(model, "cpu", choose_precision(model, dtype, "cpu").dtype).register_forward_pre_hook(
        hook, with_kwargs=True
    )
    return seen


def child(kind: str, dtype: str, corpus: Path, warm: Path, out: Path, steady: bool) -> None:
    """A fresh process's measurement: load, warm on the small corpus, time the whole one; JSON on the last line."""
    from bertlens import load_model

    model = load_model()
    model.torch_model()
    run_once(model, kind, dtype, warm, out.with_name(out.name + "-warm"), steady)
    seen = padded_counter(model, dtype)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    found = run_once(model, kind, dtype, corpus, out, steady)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before  # pages first touched: fresh memory
    print(json.dumps({**found, **seen, "minor_faults": faults}))


def measure(kind: str, dtype: str, corpus: Path, warm: Path, out: Path, steady: bool) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", kind, dtype, str(corpus), str(warm), str(out), str(int(steady))]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{kind} {dtype} failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def summary(runs: dict[str, list[dict[str, float]]], tokens: int) -> dict[str, dict[str, float]]:
    """Per "kind/dtype" (and "index rows/dtype"): median and best tokens/s, tokens per CPU s, shares of forward."""
    found: dict[str, dict[str, float]] = {}
    for key, done in runs.items():
        kind, dtype = key.split("/")
        parts = [(key, "seconds", "cpu_seconds")]
        if kind == "index":
            parts.append((f"index rows/{dtype}", "rows_seconds", "rows_cpu_seconds"))
        for name, wall, cpu in parts:
            seconds = statistics.median(d[wall] for d in done)
            cpu_seconds = statistics.median(d[cpu] for d in done)
            found[name] = {
                "seconds": seconds,
                "tokens_per_s": tokens / seconds,
                "best_tokens_per_s": tokens / min(d[wall] for d in done),
                "cpu_seconds": cpu_seconds,
                "tokens_per_cpu_s": tokens / cpu_seconds,
                "runs": len(done),
                "batches": done[0].get("batches", 0),
                "padded_per_token": done[0].get("padded_tokens", 0) / tokens,
                "minor_faults_per_token": statistics.median(d.get("minor_faults", 0) for d in done) / tokens,
            }
    for name, row in found.items():
        ceiling = found[f"forward/{name.split('/')[1]}"]
        for rate in ("tokens_per_s", "best_tokens_per_s", "tokens_per_cpu_s"):
            row[f"{rate}_share"] = row[rate] / ceiling[rate]
    return found


def table(found: dict[str, dict[str, float]]) -> str:
    lines = [
        "| command | precision | seconds (median) | tokens/s | % of forward | best tokens/s | % of forward (best) "
        "| tokens per CPU s | % of forward (CPU) | batches | padded / real tokens | page faults per token |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for dtype in DTYPES:
        for kind in (*KINDS, "index rows"):
            row = found.get(f"{kind}/{dtype}")
            if row is None:
                continue
            cells = [kind, dtype, f"{row['seconds']:.1f}"]
            for rate in ("tokens_per_s", "best_tokens_per_s", "tokens_per_cpu_s"):
                cells += [f"{row[rate]:,.0f}", f"{row[rate + '_share']:.0%}"]
            cells += [f"{row['batches']:.0f}", f"{row['padded_per_token']:.3f}", f"{row['minor_faults_per_token']:.1f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        names = sys.argv[2:8]
        child(names[0], names[1], Path(names[2]), Path(names[3]), Path(names[4]), names[5] == "1")
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=2000, help="sentences of WikiText-2 validation")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each (command, precision): the median")
    parser.add_argument("--warm", type=int, default=64, help="sentences of each process's warm-up run")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="forward always runs")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument(
        "--steady-memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="extract and index_corpus's steady_memory (their default: on; off shows what it costs)",
    )
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    kinds = ["forward", *(k for k in KINDS if k in args.kinds and k != "forward")]
    sentences = load_sentences(args.sentences)
    with tempfile.TemporaryDirectory(prefix="corpus-throughput-") as tmp:
        work = Path(tmp)
        corpus, warm = work / "corpus.txt", work / "warm.txt"
        corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        warm.write_text("\n".join(sentences[: args.warm]) + "\n", encoding="utf-8")
        from bertlens.core.corpus import iter_texts

        assert [t.text for t in iter_texts(corpus)] == [s.strip() for s in sentences], "one text per sentence"
        tokens = count_tokens(corpus)
        import torch

        print(
            f"{len(sentences)} sentences, {tokens:,} tokens; {cpu_model()}, {os.cpu_count()} CPUs, "
            f"torch {torch.__version__} with {torch.get_num_threads()} threads",
            flush=True,
        )
        runs: dict[str, list[dict[str, float]]] = {}
        for repeat in range(args.repeats):
            order = [(k, d) for d in args.dtypes for k in kinds]
            for kind, dtype in order if repeat % 2 == 0 else order[::-1]:
                done = measure(kind, dtype, corpus, warm, work / f"{kind}-{dtype}-{repeat}", args.steady_memory)
                runs.setdefault(f"{kind}/{dtype}", []).append(done)
                print(
                    f"  {kind} {dtype}: {done['seconds']:.1f} s ({tokens / done['seconds']:,.0f} tokens/s)", flush=True
                )
    found = summary(runs, tokens)
    print()
    print(table(found))
    if args.json:
        report = {
            "sentences": len(sentences),
            "tokens": tokens,
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "repeats": args.repeats,
            "steady_memory": args.steady_memory,
            "results": found,
            "runs": runs,
        }
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
