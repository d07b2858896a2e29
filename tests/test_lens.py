"""`Lens` only delegates: each method gives exactly what the module function gives for the same model and inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bertlens
from bertlens import Lens

BREAD = ["I like eating bread", "The banana bread was horrible"]


@pytest.fixture(scope="module")
def lens(default_model):
    return Lens(default_model)


def same(a, b) -> bool:
    """Equal results: the same plain data (numbers to the last bit, as JSON text)."""
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def test_similarity_capabilities(lens, default_model):
    assert same(lens.analogy("man", "king", "woman", k=3), bertlens.analogy(default_model, "man", "king", "woman", k=3))
    assert same(lens.evaluate("rg65"), bertlens.evaluate_pairs(default_model, "rg65"))


def test_contextual_capabilities(lens, default_model):
    model = default_model
    a, b = lens.hidden_states(BREAD), bertlens.hidden_states(model, BREAD)
    for ours, theirs in zip(a.results, b.results, strict=True):
        assert np.array_equal(ours.states, theirs.states)  # (layers, tokens, hidden)
    assert same(lens.word_vectors(BREAD[0], layers=(2, 4)), bertlens.word_vectors(model, BREAD[0], layers=(2, 4)))
    assert same(lens.sentence_vectors(BREAD, method="cls"), bertlens.sentence_vectors(model, BREAD, method="cls"))
    assert same(lens.context("bread", BREAD), bertlens.compare_contexts(model, "bread", BREAD))
    many = lens.word_vectors_many(BREAD, pool="max")
    assert all(same(x, y) for x, y in zip(many, bertlens.word_vectors_many(model, BREAD, pool="max"), strict=True))


def test_view_and_embedding_capabilities(lens, default_model, tmp_path):
    tokens = ["king", "queen", "man", "woman"]
    assert same(lens.project_tokens(tokens), bertlens.project_tokens(default_model, tokens))
    assert same(lens.trajectory("bread", BREAD), bertlens.trajectory(default_model, "bread", BREAD))
    assert same(lens.position_similarity(limit=16), bertlens.position_similarity(default_model, limit=16))
    drawn = lens.plot(lens.position_similarity(limit=16), tmp_path / "positions.svg")
    assert drawn.path == str(tmp_path / "positions.svg") and (tmp_path / "positions.svg").read_bytes().startswith(b"<")


def test_new_word_capabilities(lens, default_model):
    planned = lens.plan_extension(["covid"])
    assert planned.to_dict() == bertlens.plan_extension(default_model, ["covid"]).to_dict()


def test_continuing_pretraining_needs_a_model_folder():
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from bertlens.core.errors import InputError

    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    tokenizer = BertTokenizerFast.from_pretrained(str(bertlens.load_model().source.path), local_files_only=True)
    in_memory = Lens(BertModel(config), tokenizer=tokenizer)
    with pytest.raises(InputError, match="needs a model loaded from its folder"):
        in_memory.pretrain("corpus.txt", "run")
