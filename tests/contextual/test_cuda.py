"""On a CUDA GPU (skipped without one; CI has none): every precision keeps the CPU's words and cosine >= 0.999 with
the CPU's float32 in every layer, and auto picks the precision the GPU's tensor cores compute. The word path's
pipeline (contextual/pipeline.py, device_step.py) keeps the CPU's rows with either attention (nested jagged or padded),
for models that run flat and those that run as they are, over long texts, without a synchronisation per batch, and
`extract` writes the CPU's rows from it.

Run where a GPU is: `python -m pytest tests/contextual/test_cuda.py`. The CPU side of the precision choice (float16
refused off CUDA, the capability table) is tested in tests/core/test_precision.py on every machine.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from tiny import make_tiny

from bertlens import load_model
from bertlens.contextual import RunOptions, hidden_states, word_vectors_many
from bertlens.contextual.device_step import WordStep, attention_kind
from bertlens.contextual.extract import ExtractOptions, extract
from bertlens.contextual.pipeline import word_batches
from bertlens.contextual.shards import read_shards
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
    "",
    "the river bank " * 200,  # over 512 tokens: windows, beside the pipeline
]


def layer_cosines(a: np.ndarray, b: np.ndarray, layers: int) -> np.ndarray:
    """Per layer, the smallest row cosine of two (rows, layers x H) arrays."""
    if not len(a):  # a text without words
        return np.ones(layers)
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


def pipeline_rows(model, texts, layers, dtype, attention, batch_tokens=48):
    """Each text's (first, last, vectors (layers, words, H)) from the pipeline on the GPU, the device step never
    synchronising (CUDA's sync debug mode raises on one)."""
    run = WordStep(model, "cuda", dtype, layers, "mean", None, attention=attention)

    def step(batch):  # a batch handed over: nothing may wait for the GPU (reading the rows later waits for them)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "synchronization debug mode is a prototype feature"
            torch.cuda.set_sync_debug_mode("error")
        try:
            return run(batch)
        finally:
            torch.cuda.set_sync_debug_mode(0)

    found = {}
    for batch in word_batches(model, texts, step, batch_tokens=batch_tokens, chunk=3):
        vectors = batch.vectors.float().numpy()
        for row, i in enumerate(batch.texts.tolist()):
            a, b = batch.word_starts[row], batch.word_starts[row + 1]
            found[i] = (batch.first[a:b].tolist(), batch.last[a:b].tolist(), vectors[:, a:b])
    return found


@pytest.mark.parametrize("attention", ["varlen", "jagged", "padded"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_pipeline_on_the_gpu_keeps_the_cpus_rows(default_model, attention, dtype):
    texts = TEXTS[:-1]  # the pipeline alone: no text over the window
    layers = [0, 3, 6]
    cpu = word_states(default_model, texts, layers=layers)
    gpu = pipeline_rows(default_model, texts, layers, dtype, attention)
    bound = 1 - 1e-5 if dtype == "float32" else FIDELITY
    for i, want in enumerate(cpu):
        first, last, vectors = gpu[i]
        assert (first, last) == (want.first, want.last)
        for x, y in zip(want.vectors, vectors, strict=True):  # (words, H) per layer
            assert (layer_cosines(x, y, 1) >= bound).all()


def test_variable_length_attention_is_found_where_pytorch_has_it(default_model):
    kinds = {dtype: attention_kind(default_model, "cuda", dtype) for dtype in ("float32", "bfloat16", "float16")}
    assert kinds == dict.fromkeys(kinds, "varlen"), kinds  # flash and memory-efficient attention's own kernels


@pytest.fixture(scope="module")
def two_tiny(tmp_path_factory):
    """A tiny RoBERTa (flat, position ids from padding_idx) and DistilBERT (run as it is), built for this file alone."""
    root = tmp_path_factory.mktemp("tiny-cuda")
    return {family: load_model(str(make_tiny(family, root / family))) for family in ("roberta", "distilbert")}


@pytest.mark.parametrize("family", ["roberta", "distilbert"])
def test_tiny_models_on_the_gpu_keep_the_cpus_words(two_tiny, family):
    model = two_tiny[family]
    texts = ["the dog walked", "a <pad> cat" if family == "roberta" else "a [PAD] cat", "", "dogs " * 40]
    cpu = word_states(model, texts, layers=[0, 2])
    gpu = word_states(model, texts, layers=[0, 2], options=RunOptions(device="cuda", batch_tokens=32))
    for a, b in zip(cpu, gpu, strict=True):
        assert (a.first, a.last, a.starts, a.ends, a.pieces) == (b.first, b.last, b.starts, b.ends, b.pieces)
        for x, y in zip(a.vectors, b.vectors, strict=True):
            assert (layer_cosines(x, y, 1) >= 1 - 1e-5).all()


def test_extract_on_the_gpu_writes_the_cpus_rows(default_model, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(t for t in TEXTS if t) + "\n", encoding="utf-8")
    options = ExtractOptions(layers=(0, -1), shard_texts=2)
    extract(default_model, corpus, tmp_path / "cpu", options=options)
    extract(default_model, corpus, tmp_path / "gpu", options=options, run=RunOptions(device="cuda", batch_tokens=64))
    for (ids_a, pos_a, words_a, vec_a), (ids_b, pos_b, words_b, vec_b) in zip(
        read_shards(tmp_path / "cpu"), read_shards(tmp_path / "gpu"), strict=True
    ):
        assert ids_a.tolist() == ids_b.tolist() and pos_a.tolist() == pos_b.tolist() and words_a == words_b
        assert (layer_cosines(vec_a, vec_b, 1) >= 1 - 1e-5).all()
