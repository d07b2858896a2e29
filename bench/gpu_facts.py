"""Facts about a CUDA device that the word path depends on, printed: which attention each precision gets (nested
jagged or padded), what a kernel launch costs, and the pipeline's words of every layer with either attention at two
batch sizes (the word path without building results per text). Run by bench/gpu_run.sh.

    python3 bench/gpu_facts.py --data .gpu/wiki.valid.raw
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from contextual import WIKITEXT, load_sentences  # noqa: E402  (bench/contextual.py)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=WIKITEXT)
    parser.add_argument("--sentences", type=int, default=4000)
    args = parser.parse_args()

    import torch

    from bertlens import load_model
    from bertlens.contextual.device_step import WordStep, attention_kind
    from bertlens.contextual.pipeline import word_batches

    model = load_model()
    print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(), flush=True)
    for dtype in ("float32", "bfloat16", "float16"):
        print("attention", dtype, attention_kind(model, "cuda", dtype), flush=True)
    x = torch.zeros(16, device="cuda")
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(2000):
        x.add_(1)
    queued = time.perf_counter() - start
    torch.cuda.synchronize()
    done = time.perf_counter() - start
    print(f"launch: {queued / 2000 * 1e6:.1f} us a kernel queued, {done / 2000 * 1e6:.1f} us done", flush=True)
    texts = load_sentences(args.sentences, args.data)
    tokens = sum(len(e) for e in model.vocabulary.tokenizer.encode_batch(texts))
    every = list(range(model.config.num_hidden_layers + 1))
    for dtype in ("float32", "bfloat16"):
        for attention in ("jagged", "padded"):
            for batch_tokens in (16384, 65536):
                try:
                    step = WordStep(model, "cuda", dtype, every, "mean", "concat", attention=attention)
                    best = float("inf")
                    for _ in range(3):
                        torch.cuda.synchronize()
                        start = time.perf_counter()
                        for _batch in word_batches(model, texts, step, batch_tokens=batch_tokens):
                            pass
                        best = min(best, time.perf_counter() - start)
                    rate = f"{tokens / best:,.0f} tokens/s"
                except Exception as error:  # a fact too: which combination fails here
                    rate = f"FAILED {type(error).__name__}: {error}"
                print(f"pipeline, every layer's words: {dtype} {attention} {batch_tokens}: {rate}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
