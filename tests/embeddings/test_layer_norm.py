"""The float32 LayerNorm emulation against PyTorch's own kernel, bit for bit, on random rows of many widths.

Whichever kernel this process's PyTorch runs (ATEN_CPU_CAPABILITY=avx2, avx512 or default: tests/core/test_cpu_paths.py
runs this file under each), `matching_kernel` must name it and the emulation must equal it to the bit.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch

from bertlens.embeddings.layer_norm import (
    AVX2,
    GENERIC,
    KERNELS,
    difference_bound,
    error_bound,
    layer_norm,
    matching_kernel,
    moments_error_bound,
    probe_rows,
    row_moments,
)

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="emulates PyTorch's x86 float32 kernels"
)
WIDTHS = [1, 3, 8, 13, 16, 32, 100, 128, 136, 384, 768, 1024, 4096]


def rows(width: int, seed: int = 0, count: int = 500) -> np.ndarray:
    rng = np.random.default_rng(seed + width)
    scale = rng.uniform(0.01, 3.0, (count, 1))
    shift = rng.uniform(-1.0, 1.0, (count, 1))
    return (rng.standard_normal((count, width)) * scale + shift).astype(np.float32)


def affine(width: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(width)
    return rng.standard_normal(width).astype(np.float32), rng.standard_normal(width).astype(np.float32)


def expected_kernel():
    """The kernel PyTorch documents for this process: its AVX-512 slot for LayerNorm runs the AVX2 kernel."""
    return GENERIC if torch.backends.cpu.get_cpu_capability() == "DEFAULT" else AVX2


@pytest.mark.parametrize("width", WIDTHS)
def test_mean_rstd_and_output_equal_torch_bit_for_bit(width):
    x = rows(width)
    weight, bias = affine(width)
    kernel = matching_kernel(width, 1e-12, True)
    assert kernel == expected_kernel() or (width < 8 and kernel is not None)  # under 8, every kernel agrees
    out, mean, rstd = torch.native_layer_norm(
        torch.from_numpy(x), [width], torch.from_numpy(weight), torch.from_numpy(bias), 1e-12
    )
    ours_mean, ours_rstd, ours_out = layer_norm(x, weight, bias, 1e-12, kernel)
    np.testing.assert_array_equal(ours_mean, mean.numpy().ravel())
    np.testing.assert_array_equal(ours_rstd, rstd.numpy().ravel())
    np.testing.assert_array_equal(ours_out, out.numpy())


def test_without_bias_equals_torch():
    x = rows(32, seed=1)
    weight = np.linspace(0.5, 2.0, 32, dtype=np.float32)
    expected = torch.nn.functional.layer_norm(torch.from_numpy(x), [32], torch.from_numpy(weight), None, 1e-5)
    kernel = matching_kernel(32, 1e-5, False)
    assert kernel == expected_kernel()
    np.testing.assert_array_equal(layer_norm(x, weight, None, 1e-5, kernel)[2], expected.numpy())


def test_the_kernels_differ_and_only_one_matches():
    """Detection means something: on probe rows the two emulations differ, so at most one equals PyTorch."""
    x = probe_rows(384)
    weight, bias = affine(384)
    outputs = [layer_norm(x, weight, bias, 1e-12, kernel)[2] for kernel in KERNELS]
    assert not np.array_equal(*outputs)
    assert {kernel.capability for kernel in KERNELS} == {"avx2", "default"}
    assert [k.lanes for k in KERNELS] == [8, 8] and [k.fused for k in KERNELS] == [True, False]


@pytest.mark.parametrize("width", [8, 32, 384, 1024])
def test_kernels_and_torch_stay_within_the_derived_bounds(width):
    """Two float32 LayerNorms (the kernels, or either against torch) differ by no more than `difference_bound`, and
    each is within `error_bound` of the exact (float64) LayerNorm: the bound a check uses when no kernel matches."""
    x = rows(width, seed=3, count=200)
    weight, bias = affine(width)
    avx2, generic = (layer_norm(x, weight, bias, 1e-12, kernel)[2] for kernel in KERNELS)
    torch_out = torch.nn.functional.layer_norm(
        torch.from_numpy(x), [width], torch.from_numpy(weight), torch.from_numpy(bias), 1e-12
    ).numpy()
    x64 = x.astype(np.float64)
    exact = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-12) * weight + bias
    bound = error_bound(x, weight, bias, 1e-12)
    for out in (avx2, generic, torch_out):
        assert (np.abs(out - exact) <= bound).all()
    assert np.abs(avx2 - generic).max() <= difference_bound(x, weight, bias, 1e-12)
    assert np.abs(avx2 - generic).max() > 0


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.capability)
def test_moments_are_the_mean_and_biased_variance(kernel):
    x = rows(384, seed=2, count=20)
    mean, var = row_moments(x, kernel)
    mean_error, var_error = moments_error_bound(x)  # derived from each row's size, spread and offset
    x64 = x.astype(np.float64)
    assert (np.abs(mean - x64.mean(axis=1)) <= mean_error[:, 0]).all()
    assert (np.abs(var - x64.var(axis=1)) <= var_error[:, 0] * x64.var(axis=1)).all()
