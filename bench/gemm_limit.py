"""The machine's limit for one forward pass: the model's own GEMMs, float32 and bfloat16, two kernels, best of repeats.

A BERT layer's linear layers are four H x H products (query, key, value, attention output) and two H x I ones
(intermediate, output), so one token costs 2 x (4 H^2 + 2 H I) x layers FLOPs (the biases and attention's own
matmuls, score = Q K^T and context = P V, left out: they grow with the sequence length and are a few percent at this
corpus's lengths). For each precision this times the layers' products on an (M, H) input, M = tokens per batch,
with both kernels PyTorch offers on CPU:

* `torch.nn.functional.linear` (MKL for float32 on x86, oneDNN for bfloat16), and
* oneDNN with weights prepacked for M (`torch.ops.mkldnn._reorder_linear_weight` then
  `torch.ops.mkldnn._linear_pointwise`, the path torch.compile's freezing takes),

each both with the four H x H products apart and with query, key and value as one H x 3H product (the same FLOPs;
wider products run faster). The limit is the fastest of the four, as GFLOP/s and as tokens/s (GFLOP/s / FLOPs per
token). The 2048 x 2048 x 2048 product is timed too, the figure usually quoted for a CPU.

    python bench/gemm_limit.py                # the default model's shapes, M = 2048 (bertlens' batch)
    python bench/gemm_limit.py --tokens 2048 1200 --json limit.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

DTYPES = ("float32", "bfloat16")
KERNELS = ("linear", "onednn_prepacked")
LAYOUTS = ("separate", "fused_qkv")  # query, key, value as three H x H products, or one H x 3H


@dataclass(frozen=True)
class Shapes:
    """The linear layers of one encoder layer, and how many layers."""

    hidden: int
    intermediate: int
    layers: int

    def products(self, layout: str = "separate") -> list[tuple[int, int]]:
        """(in, out) of each product of one layer: query, key, value (apart or fused), attention output, I, output."""
        h, i = self.hidden, self.intermediate
        qkv = [(h, 3 * h)] if layout == "fused_qkv" else [(h, h), (h, h), (h, h)]
        return [*qkv, (h, h), (h, i), (i, h)]

    @property
    def flops_per_token(self) -> int:
        """2 x weights x layers: multiply-adds of the linear layers, biases and attention matmuls left out."""
        return 2 * sum(a * b for a, b in self.products()) * self.layers


@dataclass(frozen=True)
class Timing:
    dtype: str
    kernel: str
    layout: str  # LAYOUTS
    tokens: int  # M: rows of the input
    seconds: float  # best of the repeats, one forward pass's linear layers
    gflops: float
    tokens_per_s: float


@dataclass
class Limit:
    """Every timing, and per (dtype, M) the fastest kernel and layout."""

    shapes: Shapes
    flops_per_token: int
    threads: int
    timings: list[Timing] = field(default_factory=list)
    square_2048: dict[str, float] = field(default_factory=dict)  # dtype/kernel -> GFLOP/s

    def best(self, dtype: str, tokens: int | None = None) -> Timing:
        """The fastest kernel and layout for dtype at M = tokens (the first M measured when None)."""
        rows = [t for t in self.timings if t.dtype == dtype and (tokens is None or t.tokens == tokens)]
        if tokens is None:
            rows = [t for t in rows if t.tokens == self.timings[0].tokens]
        return max(rows, key=lambda t: t.gflops)

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["limits"] = {
            f"{d}@{m}": asdict(self.best(d, m)) for d in DTYPES for m in sorted({t.tokens for t in self.timings})
        }
        return found


def shapes_of(model: Any) -> Shapes:
    """The model's linear shapes from its config.json (a bertlens Model)."""
    config = json.loads((model.source.path / "config.json").read_text(encoding="utf-8"))
    return Shapes(int(config["hidden_size"]), int(config["intermediate_size"]), int(config["num_hidden_layers"]))


def time_pass(run: Any, repeats: int) -> float:
    """Best wall seconds of `repeats` calls (after one warm call)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def layer_pass(shapes: Shapes, tokens: int, dtype: str, kernel: str, layout: str = "separate") -> Any:
    """A callable running one forward pass's linear layers (layers x the layout's products) on (M, in) inputs."""
    import torch

    torch_dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(0)
    weights, inputs = [], []
    for n_in, n_out in shapes.products(layout):
        w = (torch.randn(n_out, n_in, generator=generator) / n_in**0.5).to(torch_dtype)  # (out, in)
        b = torch.zeros(n_out, dtype=torch_dtype)
        x = torch.randn(tokens, n_in, generator=generator).to(torch_dtype)  # (M, in)
        if kernel == "onednn_prepacked":
            w = torch.ops.mkldnn._reorder_linear_weight(w, tokens)
        weights.append((w, b))
        inputs.append(x)

    if kernel == "linear":

        def run() -> None:
            with torch.inference_mode():
                for _ in range(shapes.layers):
                    for (w, b), x in zip(weights, inputs, strict=True):
                        torch.nn.functional.linear(x, w, b)

    else:

        def run() -> None:
            with torch.inference_mode():
                for _ in range(shapes.layers):
                    for (w, b), x in zip(weights, inputs, strict=True):
                        torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")

    return run


def square(size: int, dtype: str, kernel: str, repeats: int) -> float:
    """GFLOP/s of one size x size x size product."""
    import torch

    torch_dtype = getattr(torch, dtype)
    a = torch.randn(size, size).to(torch_dtype)
    w = torch.randn(size, size).to(torch_dtype)
    if kernel == "onednn_prepacked":
        packed = torch.ops.mkldnn._reorder_linear_weight(w, size)

        def run() -> None:
            with torch.inference_mode():
                torch.ops.mkldnn._linear_pointwise(a, packed, None, "none", [], "")

    else:

        def run() -> None:
            with torch.inference_mode():
                torch.mm(a, w)

    return 2 * size**3 / time_pass(run, repeats) / 1e9


def measure(shapes: Shapes, tokens: list[int], repeats: int = 5, square_size: int = 2048) -> Limit:
    """Time every (dtype, kernel, layout, M); best of `repeats` each."""
    import torch

    limit = Limit(shapes, shapes.flops_per_token, torch.get_num_threads())
    for m in tokens:
        for dtype in DTYPES:
            for kernel in KERNELS:
                for layout in LAYOUTS:
                    seconds = time_pass(layer_pass(shapes, m, dtype, kernel, layout), repeats)
                    flops = shapes.flops_per_token * m
                    limit.timings.append(Timing(dtype, kernel, layout, m, seconds, flops / seconds / 1e9, m / seconds))
    if square_size:
        for dtype in DTYPES:
            for kernel in KERNELS:
                limit.square_2048[f"{dtype}/{kernel}"] = square(square_size, dtype, kernel, repeats)
    return limit


def table(limit: Limit) -> str:
    lines = [
        f"GEMMs of one forward pass: {limit.shapes.layers} layers x (4 x {limit.shapes.hidden}x{limit.shapes.hidden}"
        f" + {limit.shapes.hidden}x{limit.shapes.intermediate} + {limit.shapes.intermediate}x{limit.shapes.hidden}),"
        f" {limit.flops_per_token / 1e6:.1f} MFLOP per token (attention matmuls left out); torch threads:"
        f" {limit.threads}",
        "",
        "| dtype | kernel | Q, K, V | M (tokens) | ms per pass | GFLOP/s | tokens/s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for t in limit.timings:
        best = limit.best(t.dtype, t.tokens) is t
        mark = "**" if best else ""
        lines.append(
            f"| {t.dtype} | {t.kernel} | {t.layout} | {t.tokens} | {t.seconds * 1e3:.1f} |"
            f" {mark}{t.gflops:,.0f}{mark} | {mark}{t.tokens_per_s:,.0f}{mark} |"
        )
    if limit.square_2048:
        squares = ", ".join(f"{k} {v:,.0f}" for k, v in limit.square_2048.items())
        lines += ["", f"2048 x 2048 x 2048 product, GFLOP/s: {squares}"]
    lines += ["", "Bold: the limit (the fastest kernel and layout) for each dtype and M."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tokens", type=int, nargs="+", default=[2048], help="M values (tokens per batch; bertlens: 2048)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write every figure to this JSON file")
    args = parser.parse_args()

    from bertlens import load_model

    limit = measure(shapes_of(load_model()), args.tokens, args.repeats)
    print(table(limit))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(limit.to_dict(), out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
