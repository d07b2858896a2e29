"""LayerNorm in float32, operation for operation as PyTorch's CPU kernel computes it, and a check of which kernel runs.

Exact arithmetic (float64) lands up to ~3 float32 steps away from PyTorch's float32 LayerNorm, which is more than
1e-6 on outputs of magnitude 6. To check a reconstruction at that level, bertlens repeats PyTorch's own float32
steps instead:

- the row's mean and variance come from Welford's algorithm run in 8 SIMD lanes: the row is read as vectors of 8
  floats, in chunks of 16 vectors; each chunk's per-lane moments are merged pairwise into a binary cascade, then the
  lanes are merged one by one after any tail elements that fill no whole vector;
- the output is `((x - mean) * rstd) * weight + bias`;
- in the AVX2 build several of those multiply-adds are fused (one rounding for `a * b + c`), emulated by computing
  the product and sum in float64 and rounding once (exact, since a product of two float32 values fits in float64);
  the generic build (`ATEN_CPU_CAPABILITY=default`) rounds the product and the sum separately.

What it assumes: an x86-64 build of PyTorch (checked on 2.13) whose LayerNorm kernel is one of `KERNELS`. On x86
PyTorch runs the AVX2 kernel (8 lanes, fused) on AVX2 and on AVX-512 CPUs alike: its AVX-512 dispatch slot for
LayerNorm falls back to the AVX2 kernel (with `ATEN_CPU_CAPABILITY=avx512` a 16-lane emulation differs and the 8-lane
one is equal, bit for bit); `ATEN_CPU_CAPABILITY=default` runs the generic kernel (8 lanes, nothing fused). Another
build (ARM's 4-lane NEON, a future AVX-512 kernel) may differ by a float32 step or so. `matching_kernel` finds, once
per process and row width, which emulation equals `torch.native_layer_norm` bit for bit on probe rows; when none
does, the embedding-layer check says so and accepts only differences within `difference_bound`, a bound on how far
two float32 LayerNorms can be apart, derived from the row, never a promise of 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

CHUNK = 16  # vectors per Welford chunk
UNIT_ROUNDOFF = 2.0**-24  # float32: a rounding moves a value by at most this fraction of itself

f32 = np.float32


@dataclass(frozen=True)
class Kernel:
    """One build of PyTorch's CPU LayerNorm kernel that bertlens repeats operation for operation."""

    capability: str  # the ATEN_CPU_CAPABILITY that runs it
    lanes: int  # float lanes of its vectors
    fused: bool  # whether its multiply-adds round once (FMA) or twice

    def describe(self) -> str:
        adds = "fused multiply-adds" if self.fused else "separately rounded multiply and add"
        return f"PyTorch's {self.capability} kernel: Welford moments in {self.lanes} float lanes, {adds}"


AVX2 = Kernel("avx2", 8, True)  # also what ATEN_CPU_CAPABILITY=avx512 runs for LayerNorm (PyTorch 2.13)
GENERIC = Kernel("default", 8, False)
KERNELS = (AVX2, GENERIC)  # tried in this order


def fallback_kernel() -> Kernel:
    """The emulation used where none is known to match (not checked, or none did): the first of `KERNELS`."""
    return KERNELS[0]


def _fma(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float, fused: bool) -> np.ndarray:
    """a * b + c in float32: rounded once when `fused`, else the product and the sum each rounded."""
    if not fused:
        return (np.asarray(a, f32) * np.asarray(b, f32)).astype(f32) + np.asarray(c, f32)
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(f32)


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else int(x - 1).bit_length()


Moments = tuple[int, np.ndarray, np.ndarray]  # (count, mean, m2): m2 is the sum of squared deviations


def _merge_lanes(acc: Moments, add: Moments, fused: bool) -> Moments:
    """Fold the per-lane moments `add` into `acc` (vectors: (rows, lanes))."""
    count = acc[0] + add[0]
    c = f32(0) if count == 0 else f32(add[0]) / f32(count)
    delta = add[1] - acc[1]
    mean = acc[1] + c * delta
    m2 = _fma(delta, (delta * c) * f32(acc[0]), acc[2] + add[2], fused)
    return count, mean.astype(f32), m2


RowMoments = tuple[np.ndarray, np.ndarray, np.ndarray]  # (count, mean, m2) per row: (rows,) each


def _merge_scalar(acc: RowMoments, count_b: int, mean_b: np.ndarray, m2_b: np.ndarray, fused: bool) -> RowMoments:
    """Fold one lane's moments (count_b, mean_b (rows,), m2_b (rows,)) into the running per-row moments."""
    count_a, mean_a, m2_a = acc
    count = count_a + count_b
    c = np.where(count == 0, f32(0), f32(count_b) / np.maximum(count, 1).astype(f32)).astype(f32)
    delta = mean_b - mean_a
    mean = _fma(c, delta, mean_a, fused)
    m2 = m2_a + _fma(delta * delta * c, count_a.astype(f32), m2_b, fused)
    return count, mean, m2.astype(f32)


def row_moments(x: np.ndarray, kernel: Kernel = AVX2) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance of each row of x (rows, N) float32, as PyTorch's RowwiseMoments: (rows,), (rows,)."""
    x = np.ascontiguousarray(x, dtype=f32)
    rows, size = x.shape
    lanes, fused = kernel.lanes, kernel.fused
    vectors = size // lanes
    chunks = -(-vectors // CHUNK)
    depth = _ceil_log2(chunks)
    zero = np.zeros((rows, lanes), dtype=f32)
    stack: list[Moments] = [(0, zero, zero)] * depth
    inverse = f32(1) / np.arange(1, CHUNK + 1, dtype=f32)  # 1 / (j + 1)
    body = x[:, : vectors * lanes].reshape(rows, vectors, lanes)  # (rows, vectors, lanes)
    for i in range(chunks):
        block = body[:, i * CHUNK : (i + 1) * CHUNK]  # (rows, <=16, lanes)
        mean, m2 = zero, zero
        for j in range(block.shape[1]):
            value = block[:, j]
            delta = value - mean
            mean = _fma(delta, inverse[j], mean, fused)
            m2 = _fma(delta, value - mean, m2, fused)
        stack[0] = _merge_lanes(stack[0], (block.shape[1], mean, m2), fused)
        mask, level = i + 1, 1
        while level < depth and mask & 1 == 0:  # a binary counter: merge equal-sized partial results
            stack[level] = _merge_lanes(stack[level], stack[level - 1], fused)
            stack[level - 1] = (0, zero, zero)
            mask >>= 1
            level += 1
    for level in range(1, depth):
        stack[0] = _merge_lanes(stack[0], stack[level], fused)

    count = np.zeros(rows, dtype=np.int64)
    mean_r: np.ndarray = np.zeros(rows, dtype=f32)
    m2_r: np.ndarray = np.zeros(rows, dtype=f32)
    for k in range(vectors * lanes, size):  # tail elements, one at a time
        value = x[:, k]
        delta = value - mean_r
        count += 1
        mean_r = mean_r + delta / count.astype(f32)
        m2_r = m2_r + delta * (value - mean_r)
    acc: RowMoments = (count, mean_r, m2_r)
    if depth:
        for lane in range(lanes):
            acc = _merge_scalar(acc, stack[0][0], stack[0][1][:, lane], stack[0][2][:, lane], fused)
    return acc[1], (acc[2] / f32(size)).astype(f32)


def layer_norm(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, eps: float, kernel: Kernel = AVX2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LayerNorm of x (tokens, D) float32 over its last axis: mean (tokens,), rstd (tokens,), output (tokens, D)."""
    mean, var = row_moments(x, kernel)
    rstd = (f32(1) / np.sqrt(np.maximum(var, f32(0)) + f32(eps))).astype(f32)
    scaled = (x - mean[:, None]) * rstd[:, None]  # (tokens, D) float32
    out = _fma(scaled, weight, bias, kernel.fused) if bias is not None else (scaled * weight).astype(f32)
    return mean, rstd, out


def probe_rows(width: int, count: int = 16) -> np.ndarray:
    """Random float32 rows (count, width) of varied scale and offset, the same in every process."""
    rng = np.random.default_rng(width)
    scale = rng.uniform(0.01, 3.0, (count, 1))
    shift = rng.uniform(-1.0, 1.0, (count, 1))
    return (rng.standard_normal((count, width)) * scale + shift).astype(f32)


@functools.cache
def matching_kernel(width: int, eps: float, with_bias: bool) -> Kernel | None:
    """The emulated kernel equal bit for bit to this process's `torch.native_layer_norm` on rows of `width`, or None.

    Checked once per process and (width, eps, bias): PyTorch picks its kernel once, when it starts.
    """
    import torch

    x = probe_rows(width)
    rng = np.random.default_rng(width + 1)
    weight = rng.standard_normal(width).astype(f32)
    bias = rng.standard_normal(width).astype(f32) if with_bias else None
    out, mean, rstd = torch.native_layer_norm(
        torch.from_numpy(x), [width], torch.from_numpy(weight), None if bias is None else torch.from_numpy(bias), eps
    )
    expected = (mean.numpy().ravel(), rstd.numpy().ravel(), out.numpy())
    for kernel in KERNELS:
        ours = layer_norm(x, weight, bias, eps, kernel)
        if all(np.array_equal(a, b) for a, b in zip(ours, expected, strict=True)):
            return kernel
    return None


def gamma(n: int | float) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n float32 roundings in a row."""
    return n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)


def _rounding_chain(width: int) -> int:
    """Most roundings on one path through PyTorch's chunked Welford moments, in any build of 4 to 16 lanes.

    A value passes at most CHUNK updates in its lane, the cascade's depth of merges, then up to 16 lane merges and
    15 tail updates; each step rounds at most twice.
    """
    return 2 * (CHUNK + _ceil_log2(-(-width // (4 * CHUNK))) + 16 + 15)


def moments_error_bound(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the float32 moments of each row of x (rows, D): |mean error| (rows, 1), variance's relative error.

    From the standard error analysis, to first order, with k = `_rounding_chain`: the mean is off by at most
    gamma_k * max|x| (each rounding moves it by at most u times a value no larger than max|x|); the variance's
    relative error is at most gamma_2k times the condition number 1 + |mean| / std (Chan, Golub and LeVeque).
    """
    x64 = x.astype(np.float64)
    chain = _rounding_chain(x.shape[-1])
    mean = x64.mean(axis=-1, keepdims=True)  # (rows, 1)
    std = x64.std(axis=-1, keepdims=True)
    condition = 1 + np.abs(mean) / np.maximum(std, np.finfo(np.float64).tiny)
    return gamma(chain) * np.abs(x64).max(axis=-1, keepdims=True), gamma(2 * chain) * condition


def error_bound(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, eps: float) -> np.ndarray:
    """(tokens, D) bound on |a float32 LayerNorm of x - the exact one|, for PyTorch's moments in any build.

    To first order: the moments' errors (`moments_error_bound`); rstd adds 3 roundings; the output formula 3 more
    and the final rounding of |y|. A worst case: the actual difference is usually far smaller (it is measured and
    reported beside it).
    """
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)  # (tokens, 1)
    deviation = np.abs(x64 - mean)  # (tokens, D)
    rstd = 1 / np.sqrt((deviation**2).mean(axis=-1, keepdims=True) + eps)
    mean_error, var_error = moments_error_bound(x)
    rstd_error = var_error / 2 + gamma(3)  # relative
    scale = np.abs(weight.astype(np.float64)) * rstd  # (tokens, D)
    exact = deviation * scale + (0 if bias is None else np.abs(bias.astype(np.float64)))
    bound: np.ndarray = scale * (mean_error + deviation * rstd_error) + gamma(4) * exact
    return bound


def difference_bound(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, eps: float) -> float:
    """How far two float32 LayerNorms of x (tokens, D) may be apart: twice `error_bound`, at its largest."""
    return 2 * float(error_bound(x, weight, bias, eps).max(initial=0.0))


def propagated_bound(x: np.ndarray, weight: np.ndarray, eps: float, input_error: np.ndarray) -> np.ndarray:
    """(tokens, D) bound on how much LayerNorm's output moves when each input x[t, j] moves by input_error[t, j].

    To first order: the mean moves by at most max|d|, the standard deviation by at most max|d| (it is 1-Lipschitz
    in the rms of the centred change), so y_j = w_j (x_j - mean) / std moves by |w_j| / std * (|d_j| + max|d| *
    (1 + |x_j - mean| / std)); doubled to cover the second-order terms while max|d| is below half the std.
    """
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(x64.var(axis=-1, keepdims=True) + eps)  # (tokens, 1)
    largest = input_error.max(axis=-1, keepdims=True)  # (tokens, 1)
    normalised = np.abs(x64 - mean) * rstd
    bound: np.ndarray = 2 * np.abs(weight.astype(np.float64)) * rstd * (input_error + largest * (1 + normalised))
    return bound
