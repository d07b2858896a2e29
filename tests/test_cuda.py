"""On a CUDA GPU (skipped without one; CI has none): every precision keeps the CPU's words and cosine >= 0.999 with
the CPU's float32 in every layer, and auto picks the precision the GPU's tensor cores compute.

Run where a GPU is: `python -m pytest tests/test_cuda.py`. The CPU side of the precision choice (float16 refused off
CUDA, the capability table) is tested in test_precision.py on every machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.contextual import RunOptions, hidden_states, word_vectors_many
from bertlens.contextual.word_states import word_states
from bertlens.core.options import WORD_POOLS
from bertlens.core.precision import FIDELITY, choose_precision, cuda_precision

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")

TEXTS = [
    "I like eating bread.",
    "The bank raised its rates; we sat on the river bank.",
    "Tokenizers split photosynthesis into word pieces.",
    "a",
    "Unbelievably, the antidisestablishmentarianism debate resurfaced again and again, " * 3,
]


def layer_cosines(a: np.ndarray, b: np.ndarray, layers: int) -> np.ndarray:
    """Per layer, the smallest row cosine of two (rows, layers x H) arrays."""
    a = a.astype(np.float64).reshape(len(a), layers, -1)  # (rows, layers, H)
    b = b.astype(np.float64).reshape(len(b), layers, -1)
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))  # (rows, layers)
    return cos.min(axis=0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_words_on_the_gpu_are_the_cpus(default_model, dtype):
    every = list(range(default_model.config.num_hidden_layers + 1))
    cpu = word_vectors_many(default_model, TEXTS, layers=every, combine="concat")
    options = RunOptions(device="cuda", dtype=dtype, batch_tokens=64)  # several batches, padded rows
    gpu = word_vectors_many(default_model, TEXTS, layers=every, combine="concat", options=options)
    bound = 1 - 1e-5 if dtype == "float32" else FIDELITY  # float32: only the order of sums differs
    for a, b in zip(cpu, gpu, strict=True):
        assert [(w.start, w.end, w.pieces) for w in a.words] == [(w.start, w.end, w.pieces) for w in b.words]
        assert b.vectors.dtype == np.float32
        assert (layer_cosines(a.vectors, b.vectors, len(every)) >= bound).all()


@pytest.mark.parametrize("pool", WORD_POOLS)
@pytest.mark.parametrize("combine", [None, "mean", "concat"])
def test_every_pooling_on_the_gpu_is_the_cpus(default_model, pool, combine):
    layers = [0, 3, -1]
    cpu = word_states(default_model, TEXTS, layers=layers, pool=pool, combine=combine)
    options = RunOptions(device="cuda", batch_tokens=64)
    gpu = word_states(default_model, TEXTS, layers=layers, pool=pool, combine=combine, options=options)
    for a, b in zip(cpu, gpu, strict=True):
        assert a.vectors.shape == b.vectors.shape
        for x, y in zip(a.vectors, b.vectors, strict=True):  # (words, D) per layer or combined
            assert (layer_cosines(x, y, 1) >= 1 - 1e-5).all()


def test_hidden_states_on_the_gpu_are_the_cpus(default_model):
    cpu = hidden_states(default_model, TEXTS)
    gpu = hidden_states(default_model, TEXTS, options=RunOptions(device="cuda", dtype="float16"))
    for a, b in zip(cpu, gpu, strict=True):
        assert a.tokens == b.tokens
        layers = a.states.shape[0]
        flat = [s.transpose(1, 0, 2).reshape(len(a.tokens), -1) for s in (a.states, b.states)]  # (tokens, layers x H)
        assert (layer_cosines(*flat, layers) >= FIDELITY).all()


def test_auto_on_the_gpu_picks_what_its_tensor_cores_compute(default_model):
    choice = choose_precision(default_model, "auto", "cuda")
    expected = cuda_precision(torch.cuda.get_device_capability()) or "float32"
    assert choice.dtype == expected and choice.device == "cuda"
    if expected != "float32":
        assert choice.probed == expected and min(choice.min_cosine) >= FIDELITY
        assert f"{expected} tensor cores on {torch.cuda.get_device_name()}" in choice.reason
