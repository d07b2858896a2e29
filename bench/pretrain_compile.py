"""torch.compile or not: training steps of bertlens' objective (tiny preset, 32 x 128 tokens, 15% predicted).

Eager vs `torch.compile`, float32 vs bfloat16 autocast, on random ids; the first two steps (compilation) are timed
apart. `--compiled-first` runs the compiled variants first (timings on a shared machine drift: compare both orders).

    python bench/pretrain_compile.py --threads 2
    python bench/pretrain_compile.py --threads 2 --compiled-first
"""

from __future__ import annotations

import argparse
import time

B, L, V = 32, 128, 30522


def measure(compiled: bool, bf16: bool) -> tuple[float, float]:
    """(seconds of the first two steps, seconds per step after them)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from bertlens.training.objective import objective_module

    torch.manual_seed(0)
    ids = torch.randint(5, V, (B, L))
    positions = torch.randperm(B * L)[: int(B * L * 0.15)]
    labels = torch.randint(5, V, (len(positions),))
    shape = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512)
    config = BertConfig(vocab_size=V, **shape)
    model = BertForMaskedLM(config)
    objective = objective_module(model, False)
    runner = torch.compile(objective) if compiled else objective
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            mlm, _ = runner(ids, None, positions, labels, None)
        (mlm / len(labels)).backward()
        optimizer.step()
        optimizer.zero_grad()

    start = time.perf_counter()
    step()
    step()
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(8):
        step()
    return first, (time.perf_counter() - start) / 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compiled-first", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    for compiled in (True, False) if args.compiled_first else (False, True):
        for bf16 in (False, True):
            first, per_step = measure(compiled, bf16)
            print(
                f"compile={compiled!s:5} bf16={bf16!s:5}  first 2 steps {first:5.1f} s, then {per_step:.3f} s/step "
                f"= {B * L / per_step:.0f} tok/s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
