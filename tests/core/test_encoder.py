"""The model's forward pass built without transformers (core/encoder.py), held to transformers' own, bit for bit.

transformers is the oracle: `Model.torch_model()` is its model, loaded by `from_pretrained`. The encoder built from
the same files must give the same hidden states to the last bit (the same PyTorch modules in the same order), in a
padded batch too, packed (core/packing.py) as well as plain; families and configs it does not build exactly must run
in transformers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file, save_file

from bertlens import explain, load_model
from bertlens.core.encoder import NATIVE_FAMILIES, Encoder, embedding_module, encoder_model, native_reason
from bertlens.core.errors import CorruptModelError
from bertlens.core.packing import PackedLinear, Ragged, packed_copy

OTHER_FAMILIES = ("distilbert", "albert", "electra", "deberta-v2", "modernbert")


def batch(model, texts=("the cat sat on the mat", "a dog")) -> dict[str, torch.Tensor]:
    """The texts as one padded batch (rows, tokens), with the mask and zero token types."""
    rows = [model.vocabulary.tokenizer.encode(text).ids for text in texts]
    pad = model.config.pad_token_id or 0
    ids = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, found in enumerate(rows):
        ids[row, : len(found)], mask[row, : len(found)] = torch.tensor(found), 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def states(net, **inputs) -> torch.Tensor:
    with torch.inference_mode():
        return torch.stack(net(**inputs, output_hidden_states=True).hidden_states)  # (layers + 1, B, T, H)


@pytest.mark.parametrize("family", NATIVE_FAMILIES[:3])
def test_native_families_give_transformers_hidden_states_bit_for_bit(tiny_models, family):
    model = tiny_models[family]
    assert native_reason(model) is None
    ours, theirs = encoder_model(model), model.torch_model()
    assert isinstance(ours, Encoder) and model.forward_model() is not theirs
    padded = batch(model)
    single = {name: tensor[:1] for name, tensor in padded.items()}  # one text, no padding: no mask at all
    for inputs in (padded, single):
        expected = states(theirs, **inputs)
        assert expected.shape[0] == model.config.num_hidden_layers + 1
        assert torch.equal(states(ours, **inputs), expected)
    assert not torch.equal(states(ours, **single)[1:], states(ours, **single)[:-1])  # every layer changes the states


@pytest.mark.parametrize("family", NATIVE_FAMILIES[:3])
def test_a_pad_token_inside_a_text_takes_the_position_transformers_gives_it(tiny_models, family):
    """A padded batch (the CUDA path's) whose texts hold the pad token: RoBERTa's pads inside take padding_idx and the
    other tokens count on past them, in both models alike, bit for bit."""
    model = tiny_models[family]
    pad = "[PAD]" if family == "bert" else "<pad>"
    padded = batch(model, (f"a {pad} b {pad} c", f"{pad} the cat {pad}", "a dog"))
    assert int((padded["input_ids"][0] == model.config.pad_token_id).sum()) == 2  # the pad token inside the text
    assert torch.equal(states(encoder_model(model), **padded), states(model.torch_model(), **padded))


def test_the_default_model_gives_transformers_hidden_states_bit_for_bit(default_model):
    ours = default_model.forward_model()
    assert isinstance(ours, Encoder)
    inputs = batch(default_model, ("hello, world!", "I like eating bread"))
    assert torch.equal(states(ours, **inputs), states(default_model.torch_model(), **inputs))


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_packed_copies_of_both_compute_alike(tiny_models, family):
    """The runs use the packed copy: packed from the native encoder it is the packed transformers model, bit for bit,
    over a padded batch and a ragged one."""
    model = tiny_models[family]
    native, padded = encoder_model(model), batch(model)
    before = states(native, **padded)
    ours, theirs = packed_copy(native), packed_copy(model.torch_model())
    assert torch.equal(states(ours, **padded), states(theirs, **padded))
    assert torch.equal(states(native, **padded), before)  # the copy shares the encoder's tensors, and leaves it be
    assert not any(isinstance(m, PackedLinear) for m in native.modules())
    lengths = padded["attention_mask"].sum(1).tolist()
    flat = torch.cat([padded["input_ids"][row, :n] for row, n in enumerate(lengths)])[None]  # (1, tokens)
    first = model.config.pad_token_id + 1 if family == "roberta" else 0
    positions = torch.cat([torch.arange(first, first + n) for n in lengths])[None]
    groups = Ragged(((0, 1, lengths[0]), (lengths[0], 1, lengths[1])))
    ragged = {"input_ids": flat, "position_ids": positions, "token_type_ids": torch.zeros_like(flat)}
    assert torch.equal(states(ours, **ragged, ragged=groups), states(theirs, **ragged, ragged=groups))


@pytest.mark.parametrize("family", NATIVE_FAMILIES[:3])
def test_the_embedding_layer_alone_is_hidden_states_0(tiny_models, family):
    model = tiny_models[family]
    layer = embedding_module(model)
    assert layer is not None
    single = {name: tensor[:1] for name, tensor in batch(model).items()}
    with torch.inference_mode():
        ours = layer(single["input_ids"], single["token_type_ids"])
    assert torch.equal(ours, states(model.torch_model(), **single)[0])
    assert explain(model, "the cat sat").max_abs_diff == 0.0  # explain's check runs it


@pytest.mark.parametrize("family", OTHER_FAMILIES)
def test_other_families_run_in_transformers(tiny_models, family):
    model = tiny_models[family]
    assert native_reason(model) is not None
    assert encoder_model(model) is None and embedding_module(model) is None
    assert model.forward_model() is model.torch_model()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"hidden_act": "gelu_new"}, "hidden_act"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"is_decoder": True}, "decoder"),
        ({"num_hidden_layers": None}, "num_hidden_layers"),  # None: the field left out
    ],
)
def test_configs_it_does_not_compute_exactly_run_in_transformers(tiny_copy, change, reason):
    path = tiny_copy("bert")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({k: v for k, v in (config | change).items() if v is not None}))
    model = load_model(str(path))
    assert reason in (native_reason(model) or "")
    assert encoder_model(model) is None


@pytest.mark.parametrize(
    ("name", "embedding_layer_built"),
    [("encoder.layer.0.output.dense.bias", True), ("embeddings.LayerNorm.bias", False)],
)
def test_a_missing_tensor_leaves_the_load_to_transformers(tiny_copy, name, embedding_layer_built):
    path = tiny_copy("bert")
    tensors = load_file(path / "model.safetensors")
    del tensors[name]
    save_file(tensors, path / "model.safetensors")
    model = load_model(str(path))
    assert encoder_model(model) is None
    assert (embedding_module(model) is not None) == embedding_layer_built  # explain needs the embedding layer alone


def test_nan_in_a_layer_is_refused_as_transformers_load_refuses_it(tiny_copy):
    path = tiny_copy("bert")
    tensors = load_file(path / "model.safetensors")
    tensors["encoder.layer.1.intermediate.dense.weight"][0, 0] = np.nan
    save_file(tensors, path / "model.safetensors")
    with pytest.raises(CorruptModelError, match="encoder.layer.1.intermediate.dense.weight"):
        encoder_model(load_model(str(path)))


def test_an_already_loaded_transformers_model_runs_as_it_is(tiny_models):
    given = tiny_models["bert"].torch_model()
    model = load_model(given, tokenizer=tiny_models["bert"].vocabulary.tokenizer)
    assert "already-loaded" in (native_reason(model) or "")
    assert model.forward_model() is given
