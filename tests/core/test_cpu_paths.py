"""Every x86 code path PyTorch lets us force: the LayerNorm emulation matches its kernel bit for bit, or the check
says it does not and measures the difference within a bound derived from the data.

Each case runs in a fresh interpreter because PyTorch reads ATEN_CPU_CAPABILITY once, when it starts.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="ATEN_CPU_CAPABILITY selects x86 kernels"),
    pytest.mark.slow,  # six fresh interpreters, each loading torch and the default model
]

PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import torch
    from bertlens import explain, load_model
    from bertlens.embeddings import layer_norm as ln

    if sys.argv[1] == "unknown":  # a PyTorch whose kernel bertlens does not repeat: offer only the other one
        ln.KERNELS = tuple(k for k in ln.KERNELS if k != ln.matching_kernel(384, 1e-12, True))
        ln.matching_kernel.cache_clear()
    model = load_model()
    result = explain(model, "The quick brown fox jumps over the lazy dog.", "I like eating bread")
    x = result.matrix("sum")
    weights = model.embedding_weights
    # The oracle: transformers' own embedding layer, run on the same ids and segments under this capability.
    net = model.torch_model()
    with torch.inference_mode():
        oracle = net.embeddings(
            input_ids=torch.tensor([[t.id for t in result.tokens]]),
            token_type_ids=torch.tensor([[t.token_type_id for t in result.tokens]]),
        )[0].numpy()
    print(json.dumps({
        "capability": torch.backends.cpu.get_cpu_capability(),
        "kernel": result.to_dict()["layer_norm_kernel"],
        "bit_exact": result.layer_norm_bit_exact,
        "max_abs_diff": result.max_abs_diff,
        "tolerance": result.tolerance,
        "bound": ln.difference_bound(x, weights.layer_norm_weight, weights.layer_norm_bias, 1e-12),
        "matches": result.matches,
        "table": result.to_table(verbose=True),  # the plain check, then its technical detail
        "plain": result.to_table(),
        "transformers_diff": float(np.abs(result.matrix("output").astype(np.float64) - oracle).max()),
    }))
    """
)


def probe(capability: str | None, unknown: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "unknown" if unknown else "known"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def native() -> dict:
    return probe(None)


def capabilities(native: dict) -> list[str]:
    """avx2 and default everywhere x86 PyTorch runs; avx512 only where this CPU has it."""
    return ["avx2", "default"] + (["avx512"] if native["capability"] == "AVX512" else [])


@pytest.mark.parametrize("capability", ["avx2", "avx512", "default"])
def test_each_kernel_is_repeated_bit_for_bit(native, capability):
    if capability not in capabilities(native):
        pytest.skip(f"this CPU runs {native['capability']}, not AVX512")
    result = probe(capability)
    assert result["capability"] == capability.upper()
    # PyTorch's AVX-512 slot for LayerNorm runs the AVX2 kernel (8 lanes, fused); the generic one fuses nothing.
    expected = {"capability": "default", "lanes": 8, "fused": False} if capability == "default" else None
    assert result["kernel"] == (expected or {"capability": "avx2", "lanes": 8, "fused": True})
    assert result["bit_exact"] is True
    assert result["max_abs_diff"] == result["tolerance"] == 0.0 and result["matches"]
    assert result["transformers_diff"] == 0.0  # transformers' own embedding layer agrees: the same float32 numbers
    assert "bit for bit" in result["table"]
    assert "exactly equal to the model's output" in result["plain"] and "bit for bit" not in result["plain"]


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_an_unrepeated_kernel_is_reported_with_its_measured_difference(capability):
    """With the matching emulation withheld, the check must not promise 0: it says so, measures the difference and
    holds it to `difference_bound`, derived from the rows LayerNorm saw."""
    result = probe(capability, unknown=True)
    assert result["bit_exact"] is False
    assert 0.0 < result["max_abs_diff"] <= result["tolerance"] == result["bound"]
    assert result["matches"]
    assert result["transformers_diff"] == result["max_abs_diff"]  # measured against transformers' own layer
    assert "none that bertlens repeats" in result["table"]
    assert "OUTSIDE" not in result["table"]
    assert "float32 rounding" in result["plain"] and "none that bertlens repeats" not in result["plain"]
