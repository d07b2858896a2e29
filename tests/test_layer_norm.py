"""The float32 LayerNorm emulation against PyTorch's own kernel, bit for bit, on random rows of many widths."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch

from bertlens.layer_norm import layer_norm, row_moments

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="emulates PyTorch's x86 float32 kernels"
)


def rows(width: int, seed: int = 0, count: int = 500) -> np.ndarray:
    rng = np.random.default_rng(seed + width)
    scale = rng.uniform(0.01, 3.0, (count, 1))
    shift = rng.uniform(-1.0, 1.0, (count, 1))
    return (rng.standard_normal((count, width)) * scale + shift).astype(np.float32)


@pytest.mark.parametrize("width", [1, 3, 8, 13, 16, 32, 100, 128, 136, 384, 768, 1024, 4096])
def test_mean_rstd_and_output_equal_torch_bit_for_bit(width):
    x = rows(width)
    rng = np.random.default_rng(width)
    weight = rng.standard_normal(width).astype(np.float32)
    bias = rng.standard_normal(width).astype(np.float32)
    out, mean, rstd = torch.native_layer_norm(
        torch.from_numpy(x), [width], torch.from_numpy(weight), torch.from_numpy(bias), 1e-12
    )
    ours_mean, ours_rstd, ours_out = layer_norm(x, weight, bias, 1e-12)
    np.testing.assert_array_equal(ours_mean, mean.numpy().ravel())
    np.testing.assert_array_equal(ours_rstd, rstd.numpy().ravel())
    np.testing.assert_array_equal(ours_out, out.numpy())


def test_without_bias_equals_torch():
    x = rows(32, seed=1)
    weight = np.linspace(0.5, 2.0, 32, dtype=np.float32)
    expected = torch.nn.functional.layer_norm(torch.from_numpy(x), [32], torch.from_numpy(weight), None, 1e-5)
    np.testing.assert_array_equal(layer_norm(x, weight, None, 1e-5)[2], expected.numpy())


def test_moments_are_the_mean_and_biased_variance():
    x = rows(384, seed=2, count=20)
    mean, var = row_moments(x)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.astype(np.float64).var(axis=1), rtol=1e-5)
