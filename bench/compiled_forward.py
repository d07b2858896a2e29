"""What a compiler gives the forward pass: torch.compile (inductor) against bertlens' eager engine, one run, in float32
(the default) or bfloat16 (`--dtype bfloat16`; `--modes default` leaves out max-autotune's long compile).

The float32 target of the contextual bench (80 % of the GEMM limit) leaves 20 % of the time for everything that is not
a linear layer's product. bertlens' engine is eager PyTorch (core/packing.py); this asks how far a compiled forward
pass gets on the same sentences, the same machine, beside the limit measured in the same run (bench/gemm_limit.py):

* `inductor`: `torch.compile(model, dynamic=True)` with freezing (weights folded and prepacked for oneDNN), the plain
  transformers model (SDPA attention), padded batches of at most 2,048 tokens sorted by length, every layer's hidden
  states stacked (none copied out, no words pooled);
* `inductor max-autotune`: the same with `mode="max-autotune"` (inductor's C++ GEMM templates timed against oneDNN
  per shape, epilogues fused);
* `bertlens words`: `word_vectors_many`, every layer, concatenated: ragged batches, words pooled, vectors copied out.

A compiled model here needs padding (the ragged attention loops over groups of texts whose sizes change per batch;
dynamo would recompile for each): the padded tokens per real token are printed, and "per real token" divides the
compiled rows' time by the real tokens only, as if padding were free (an upper bound for a ragged compiled engine).
Compiling needs a C++ compiler at run time; its first pass (the compile) is reported apart.

    python bench/compiled_forward.py --sentences 1000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import contextual
import gemm_limit

BATCH = 2048


def padded_batches(lengths: list[int]) -> list[list[int]]:
    """Text indices sorted by length, in batches of at most BATCH padded tokens (as bertlens' padded engine makes)."""
    batches: list[list[int]] = [[]]
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batches[-1] and lengths[i] * (len(batches[-1]) + 1) > BATCH:
            batches.append([])
        batches[-1].append(i)
    return batches


def compiled_rounds(
    model: Any, ids: list[list[int]], mode: str | None, repeats: int, dtype: str
) -> tuple[float, list[float]]:
    """(seconds of the first pass, seconds of each later pass) of the compiled model over padded batches."""
    import torch
    import torch._inductor.config as inductor

    inductor.freezing = True
    torch._dynamo.reset()
    net = torch.compile(model.torch_model_on("cpu", dtype).eval(), dynamic=True, mode=mode)
    data = []
    for batch in padded_batches([len(x) for x in ids]):
        width = max(len(ids[i]) for i in batch)
        tokens = torch.zeros((len(batch), width), dtype=torch.long)  # (rows, width), padding id 0
        mask = torch.zeros_like(tokens)
        for row, i in enumerate(batch):
            tokens[row, : len(ids[i])] = torch.tensor(ids[i])
            mask[row, : len(ids[i])] = 1
        data.append((tokens, mask, torch.zeros_like(tokens)))

    def run() -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            for tokens, mask, types in data:
                out = net(input_ids=tokens, attention_mask=mask, token_type_ids=types, output_hidden_states=True)
                torch.stack(out.hidden_states)  # (layers + 1, rows, width, H), as the eager engines hand them on
        return time.perf_counter() - start

    return run(), [run() for _ in range(repeats)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes after the first (median reported)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--modes", nargs="+", choices=["default", "max-autotune"], default=["default", "max-autotune"])
    args = parser.parse_args()

    import statistics

    from bertlens import load_model
    from bertlens.contextual import RunOptions, word_vectors_many

    model = load_model()
    sentences = contextual.load_sentences(args.sentences)
    ids = [model.vocabulary.tokenizer.encode(s).ids for s in sentences]
    real = sum(len(x) for x in ids)
    padded = sum(max(len(ids[i]) for i in b) * len(b) for b in padded_batches([len(x) for x in ids]))
    shapes = gemm_limit.shapes_of(model)
    flops = shapes.flops_per_token

    def limit() -> float:  # tokens/s at M = BATCH in the chosen precision
        return gemm_limit.measure(shapes, [BATCH], 3, square_size=0).best(args.dtype, BATCH).gflops * 1e9 / flops

    limits = [limit()]
    rows: list[tuple[str, float, list[float], bool]] = []  # (name, first pass, later passes, padded)
    layers = list(range(model.config.num_hidden_layers + 1))

    def words() -> float:
        start = time.perf_counter()
        word_vectors_many(model, sentences, layers=layers, combine="concat", options=RunOptions(dtype=args.dtype))
        return time.perf_counter() - start

    first = words()
    rows.append(("bertlens words (eager, ragged)", first, [words() for _ in range(args.repeats)], False))
    for mode in args.modes:
        name = "inductor" if mode == "default" else f"inductor {mode}"
        first, later = compiled_rounds(model, ids, None if mode == "default" else mode, args.repeats, args.dtype)
        rows.append((name, first, later, True))
    limits.append(limit())
    rate = statistics.mean(limits)

    print(f"{len(sentences):,} sentences, {real:,} tokens; padded: {padded / real:.3f} tokens per real one")
    print(f"{args.dtype} limit (GEMMs at M={BATCH}): {limits[0]:,.0f} and {limits[1]:,.0f} tokens/s (start, end)")
    print("| configuration | first pass s | median s | tokens/s | % of limit | if padding were free | % of limit |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, first, later, pads in rows:
        seconds = statistics.median(later)
        speed, free = real / seconds, padded / seconds  # free: as if every padded token were a real one
        cells = f"{free:,.0f} | {free / rate:.1%}" if pads else " | "
        print(f"| {name} | {first:.1f} | {seconds:.3f} | {speed:,.0f} | {speed / rate:.1%} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
