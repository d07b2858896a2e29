"""What `--precision auto` weighs: float32 against bfloat16 with the CPU's ISA as it is, and capped by the environment.

Each row runs in a fresh interpreter with ONEDNN_MAX_CPU_ISA / ATEN_CPU_CAPABILITY set (oneDNN and ATen read them once,
at start), on the same WikiText-2 validation sentences, default model, `hidden_states` (every layer). The float32 and
bfloat16 passes alternate; each keeps its best wall time (the least disturbed pass). Each row also says what
`--precision auto` picks there. Without native bfloat16 (AMX-BF16 or AVX512-BF16) oneDNN emulates it.

    python bench/precision.py --sentences 200 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # after the packages: bench modules shadow nothing
from contextual import load_sentences  # the sentences of bench/contextual.py

CAPS = {
    "as found": {},
    "oneDNN AVX512_CORE (AVX-512, no BF16)": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "ATen avx2 only": {"ATEN_CPU_CAPABILITY": "avx2"},
    "oneDNN AVX2 + ATen avx2 (an AVX2 machine)": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
}


def child(sentences: int, repeats: int) -> dict[str, object]:
    """One row, in this interpreter: tokens/s of float32 and bfloat16, and auto's choice."""
    from bertlens import load_model
    from bertlens.contextual import RunOptions, hidden_states
    from bertlens.core.precision import choose_precision

    texts = load_sentences(sentences)
    model = load_model()
    tokens = sum(len(model.vocabulary.tokenizer.encode(t).ids) for t in texts)
    best = {"float32": float("inf"), "bfloat16": float("inf")}
    for dtype in best:
        hidden_states(model, texts[:32], options=RunOptions(dtype=dtype))  # warm-up
    for _ in range(repeats):
        for dtype in best:
            start = time.perf_counter()
            hidden_states(model, texts, options=RunOptions(dtype=dtype))
            best[dtype] = min(best[dtype], time.perf_counter() - start)
    choice = choose_precision(model, "auto", "cpu")
    return {
        "tokens": tokens,
        "float32": tokens / best["float32"],
        "bfloat16": tokens / best["bfloat16"],
        "auto": choice.dtype,
        "isa": choice.isa,
        "cpu": choice.cpu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.sentences, args.repeats)))
        return 0
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
    }
    command = [sys.executable, __file__, "--child", "--sentences", str(args.sentences), "--repeats", str(args.repeats)]
    print("| ISA caps | ISA auto sees | float32 tok/s | bfloat16 tok/s | bfloat16 / float32 | auto picks |")
    print("|---|---|---:|---:|---:|---|")
    cpu = ""
    for name, caps in CAPS.items():
        done = subprocess.run(command, env=base | caps, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        cpu = str(row["cpu"])
        shown = " ".join(f"{k}={v}" for k, v in caps.items()) or "none"
        print(
            f"| {name}: {shown} | {row['isa']} | {row['float32']:,.0f} | {row['bfloat16']:,.0f} | "
            f"{row['bfloat16'] / row['float32']:.2f}x | {row['auto']} |"
        )
    print(f"\n{cpu}; {args.sentences} sentences, default model, hidden_states, best of {args.repeats} passes each.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
