"""Every x86 code path PyTorch lets us force: under each, `explain`'s sum through the model's own LayerNorm equals
transformers' own embedding layer bit for bit, and the check says so.

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
    pytest.mark.slow,  # fresh interpreters, each loading torch, transformers and the default model
]

PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    import torch
    from transformers import AutoModel
    from bertlens import explain, load_model

    model = load_model()
    result = explain(model, "The quick brown fox jumps over the lazy dog.", "I like eating bread")
    # The oracle: transformers' own model, loaded by transformers, run on the same ids and segments.
    net = AutoModel.from_pretrained(str(model.source.path), local_files_only=True).eval()
    with torch.inference_mode():
        oracle = net(
            input_ids=torch.tensor([[t.id for t in result.tokens]]),
            token_type_ids=torch.tensor([[t.token_type_id for t in result.tokens]]),
            output_hidden_states=True,
        ).hidden_states[0][0].numpy()
    print(json.dumps({
        "capability": torch.backends.cpu.get_cpu_capability(),
        "max_abs_diff": result.max_abs_diff,
        "matches": result.matches,
        "checked_against": result.checked_against,
        "plain": result.to_table(),
        "transformers_diff": float(np.abs(result.matrix("output").astype(np.float64) - oracle).max()),
    }))
    """
)


def probe(capability: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def native() -> dict:
    return probe(None)


def capabilities(native: dict) -> list[str]:
    """avx2 and default everywhere x86 PyTorch runs; avx512 only where this CPU has it."""
    return ["avx2", "default"] + (["avx512"] if native["capability"] == "AVX512" else [])


@pytest.mark.parametrize("capability", ["avx2", "avx512", "default"])
def test_each_kernel_gives_the_models_own_numbers(native, capability):
    if capability not in capabilities(native):
        pytest.skip(f"this CPU runs {native['capability']}, not AVX512")
    result = probe(capability)
    assert result["capability"] == capability.upper()
    assert result["max_abs_diff"] == 0.0 and result["matches"]
    assert result["transformers_diff"] == 0.0  # transformers' own model agrees: the same float32 numbers
    assert result["checked_against"].endswith(" BertEmbeddings")
    assert "exactly equal to the model's own output" in result["plain"]
