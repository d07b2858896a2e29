"""The flat token axis's public attention routes (contextual/device_step.py), forced on the CPU.

On CUDA `attention_kind` picks "varlen" (PyTorch's private variable-length kernels) where its probe finds them
running and agreeing with "padded"; else "jagged" (`scaled_dot_product_attention` over nested jagged tensors) or
"padded" (the same with a key mask). Both public routes are forced here, texts end to end through `FlatEncoder`, and
their rows held to transformers' own forward pass of a float64 twin, one text at a time, within float64's rounding
of the largest value (`float64_wobble`: any order of sums lies within it, so a float32 run is exact up to its own
rounding; tests/contextual/test_contextual.py holds float32 runs to such twins). tests/contextual/test_cuda.py runs
every route on a GPU.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from bounds import float64_twin, float64_wobble

from bertlens.contextual.device_step import attention_kind, flat_encoder, flat_tensors
from bertlens.core.families import position_ids

TEXTS = ["the cat sat on the mat", "a dog", "the big red car ran", "a dog", "cat"]


def flat_rows(model, kind: str) -> list[np.ndarray]:
    """Each text's hidden states through `FlatEncoder` with attention `kind`, the texts end to end in one batch:
    (layers + 1, tokens, H) per text."""
    tokenizer = model.vocabulary.tokenizer
    rows = [tokenizer.encode(text).ids for text in TEXTS]
    offsets = np.concatenate([[0], np.cumsum([len(row) for row in rows])])
    scheme, pad = model.family.position_scheme, model.config.pad_token_id
    positions = np.concatenate([position_ids(torch.tensor([row]), scheme, pad)[0].numpy() for row in rows])
    ids = np.concatenate(rows)
    flat, _ = flat_tensors(torch.device("cpu"), ids, offsets, max(map(len, rows)), positions)
    encoder = flat_encoder(model, "cpu", "float32", attention=kind)
    assert encoder is not None
    every = list(range(model.config.num_hidden_layers + 1))
    with torch.inference_mode():
        states = torch.stack(encoder(flat, every)).numpy()  # (layers + 1, tokens, H)
    return [states[:, a:b] for a, b in itertools.pairwise(offsets)]


def transformers_rows(model) -> list[np.ndarray]:
    """transformers' own hidden states of each text alone: (layers + 1, tokens, H)."""
    found = []
    for text in TEXTS:
        ids = torch.tensor([model.vocabulary.tokenizer.encode(text).ids])
        with torch.inference_mode():
            out = model.torch_model()(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        found.append(torch.stack(out.hidden_states)[:, 0].numpy())
    return found


def test_the_cpu_takes_the_padded_route_unless_told():
    from bertlens import load_model

    assert attention_kind(load_model(), "cpu", "float32") == "padded"


@pytest.mark.parametrize("kind", ["jagged", "padded"])
@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_each_public_route_gives_transformers_rows(tiny_models, family, kind):
    twin = float64_twin(tiny_models[family])
    for ours, theirs in zip(flat_rows(twin, kind), transformers_rows(twin), strict=True):
        assert ours.dtype == np.float64 and ours.shape == theirs.shape
        assert (np.abs(ours - theirs) <= float64_wobble(float(np.abs(theirs).max()))).all()


@pytest.mark.parametrize("kind", ["jagged", "padded"])
def test_the_default_model_on_each_public_route(default_model, kind):
    twin = float64_twin(default_model)
    for ours, theirs in zip(flat_rows(twin, kind), transformers_rows(twin), strict=True):
        assert (np.abs(ours - theirs) <= float64_wobble(float(np.abs(theirs).max()))).all()
