"""LayerNorm in float32, operation for operation as PyTorch's CPU kernel computes it.

Exact arithmetic (float64) lands up to ~3 float32 steps away from PyTorch's float32 LayerNorm, which is more than
1e-6 on outputs of magnitude 6. To check a reconstruction at that level, bertlens repeats PyTorch's own float32
steps instead:

- the row's mean and variance come from Welford's algorithm run in 8 SIMD lanes: the row is read as vectors of 8
  floats, in chunks of 16 vectors; each chunk's per-lane moments are merged pairwise into a binary cascade, then the
  lanes are merged one by one after any tail elements that fill no whole vector;
- several of those updates are fused multiply-adds (one rounding for `a * b + c`), emulated here by computing the
  product and sum in float64 and rounding once (exact, since a product of two float32 values fits in float64);
- the output is `((x - mean) * rstd) * weight + bias`, the last multiply-add fused.

The emulation was derived by comparing with `torch.native_layer_norm` on random rows, where it agrees bit for bit
(mean, rstd and output; a test keeps it so). On a CPU whose PyTorch kernels use other vector widths (e.g. ARM) it
may differ by a float32 step; the check then reports that difference, it does not hide it.
"""

from __future__ import annotations

import numpy as np

LANES = 8  # float lanes of the vectors PyTorch's moments kernel uses on x86 CPUs
CHUNK = 16  # vectors per Welford chunk

f32 = np.float32


def _fma(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """a * b + c rounded once to float32."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(f32)


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else int(x - 1).bit_length()


Moments = tuple[int, np.ndarray, np.ndarray]  # (count, mean, m2): m2 is the sum of squared deviations


def _merge_lanes(acc: Moments, add: Moments) -> Moments:
    """Fold the per-lane moments `add` into `acc` (vectors: (rows, LANES))."""
    count = acc[0] + add[0]
    c = f32(0) if count == 0 else f32(add[0]) / f32(count)
    delta = add[1] - acc[1]
    mean = acc[1] + c * delta
    m2 = _fma(delta, (delta * c) * f32(acc[0]), acc[2] + add[2])
    return count, mean.astype(f32), m2


def _merge_scalar(acc: tuple[np.ndarray, np.ndarray, np.ndarray], count_b: int, mean_b, m2_b):
    """Fold one lane's moments into the running per-row moments (rows,)."""
    count_a, mean_a, m2_a = acc
    count = count_a + count_b
    c = np.where(count == 0, f32(0), f32(count_b) / np.maximum(count, 1).astype(f32)).astype(f32)
    delta = mean_b - mean_a
    mean = _fma(c, delta, mean_a)
    m2 = m2_a + _fma(delta * delta * c, count_a.astype(f32), m2_b)
    return count, mean, m2.astype(f32)


def row_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and biased variance of each row of x (rows, N) float32, as PyTorch's RowwiseMoments: (rows,), (rows,)."""
    x = np.ascontiguousarray(x, dtype=f32)
    rows, size = x.shape
    vectors = size // LANES
    chunks = -(-vectors // CHUNK)
    depth = _ceil_log2(chunks)
    zero = np.zeros((rows, LANES), dtype=f32)
    stack: list[Moments] = [(0, zero, zero)] * depth
    inverse = f32(1) / np.arange(1, CHUNK + 1, dtype=f32)  # 1 / (j + 1)
    body = x[:, : vectors * LANES].reshape(rows, vectors, LANES)  # (rows, vectors, lanes)
    for i in range(chunks):
        block = body[:, i * CHUNK : (i + 1) * CHUNK]  # (rows, <=16, lanes)
        mean, m2 = zero, zero
        for j in range(block.shape[1]):
            value = block[:, j]
            delta = value - mean
            mean = _fma(delta, inverse[j], mean)
            m2 = _fma(delta, value - mean, m2)
        stack[0] = _merge_lanes(stack[0], (block.shape[1], mean, m2))
        mask, level = i + 1, 1
        while level < depth and mask & 1 == 0:  # a binary counter: merge equal-sized partial results
            stack[level] = _merge_lanes(stack[level], stack[level - 1])
            stack[level - 1] = (0, zero, zero)
            mask >>= 1
            level += 1
    for level in range(1, depth):
        stack[0] = _merge_lanes(stack[0], stack[level])

    count = np.zeros(rows, dtype=np.int64)
    mean_r, m2_r = np.zeros(rows, dtype=f32), np.zeros(rows, dtype=f32)
    for k in range(vectors * LANES, size):  # tail elements, one at a time
        value = x[:, k]
        delta = value - mean_r
        count += 1
        mean_r = mean_r + delta / count.astype(f32)
        m2_r = m2_r + delta * (value - mean_r)
    acc = (count, mean_r, m2_r)
    if depth:
        for lane in range(LANES):
            acc = _merge_scalar(acc, stack[0][0], stack[0][1][:, lane], stack[0][2][:, lane])
    return acc[1], (acc[2] / f32(size)).astype(f32)


def layer_norm(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LayerNorm of x (tokens, D) float32 over its last axis: mean (tokens,), rstd (tokens,), output (tokens, D)."""
    mean, var = row_moments(x)
    rstd = (f32(1) / np.sqrt(np.maximum(var, f32(0)) + f32(eps))).astype(f32)
    scaled = (x - mean[:, None]) * rstd[:, None]  # (tokens, D) float32
    out = _fma(scaled, weight, bias) if bias is not None else (scaled * weight).astype(f32)
    return mean, rstd, out
