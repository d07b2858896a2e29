"""Contextual vectors against transformers' hidden_states; batching, windows, words, layers, context comparison."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny import FAMILIES

from bertlens import InputError, explain
from bertlens.context import compare_contexts
from bertlens.contextual import (
    RunOptions,
    _best_window,
    _windows,
    hidden_states,
    pool_pieces,
    pool_words,
    select_layers,
    word_vectors,
    word_vectors_many,
)

TEXTS = ["I like eating bread", "The banana bread was horrible", "hello, world!", "", "I am Sinan"]


def oracle(model, text: str) -> np.ndarray:
    """transformers' own hidden_states for one unpadded text: (layers + 1, tokens, H)."""
    ids = torch.tensor([model.vocabulary.tokenizer.encode(text).ids])
    with torch.inference_mode():
        out = model.torch_model()(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].float().numpy()


def test_default_model_equals_transformers(default_model):
    result = hidden_states(default_model, TEXTS)
    assert len(result) == len(TEXTS)
    for text, states in zip(TEXTS, result.results, strict=True):
        expected = oracle(default_model, text)
        assert states.states.shape == expected.shape == (7, len(states.tokens), 384)
        assert np.abs(states.states - expected).max() <= 1e-5


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_equals_transformers(tiny_models, family):
    model = tiny_models[family]
    texts = ["the cat sat on the mat", "a dog", "the big red car ran"]
    for text, states in zip(texts, hidden_states(model, texts).results, strict=True):
        assert np.abs(states.states - oracle(model, text)).max() <= 1e-5, family


def test_batch_invariance(default_model):
    alone = hidden_states(default_model, "The banana bread was horrible")[0].states
    crowded = hidden_states(default_model, ["a", "The banana bread was horrible", "x " * 200]).results[1].states
    tiny_batches = hidden_states(
        default_model, ["The banana bread was horrible", "b"], options=RunOptions(batch_tokens=1)
    )
    assert np.abs(alone - crowded).max() <= 1e-5
    assert np.abs(alone - tiny_batches.results[0].states).max() <= 1e-5


def test_windows_cover_every_token_and_pick_the_most_context():
    assert _windows(10, 62, 31) == [0]
    starts = _windows(150, 62, 31)
    assert starts == [0, 31, 62, 88]
    covered = {p for s in starts for p in range(s, s + 62)}
    assert covered == set(range(150))
    assert _best_window(0, starts, 62) == 0
    assert _best_window(61, starts, 62) == 1  # 30 tokens of context each side in window 1, none to the right in 0
    assert _best_window(149, starts, 62) == 3


def test_long_text_takes_each_token_from_its_best_window(tiny_models):
    model = tiny_models["bert"]  # 64 positions: 62 content tokens per window
    text = " ".join(["the cat sat on the mat"] * 25)  # 150 content tokens
    result = hidden_states(model, text)[0]
    assert result.windows == 4 and result.states.shape[1] == 152
    content = model.vocabulary.tokenizer.encode(text, add_special_tokens=False).ids
    cls, sep = model.vocabulary.token_to_id("[CLS]"), model.vocabulary.token_to_id("[SEP]")
    starts = [0, 31, 62, 88]
    for position in (0, 40, 61, 62, 100, 149):
        start = starts[_best_window(position, starts, 62)]
        ids = torch.tensor([[cls, *content[start : start + 62], sep]])
        with torch.inference_mode():
            window = torch.stack(model.torch_model()(input_ids=ids, output_hidden_states=True).hidden_states)
        expected = window[:, 0, 1 + position - start].numpy()
        assert np.abs(result.states[:, 1 + position] - expected).max() <= 1e-5


def test_word_vectors_pool_pieces(default_model):
    states = hidden_states(default_model, "I am Sinan")[0].states
    words = word_vectors(default_model, "I am Sinan", layers=[-1])
    assert [w.text for w in words.words] == ["I", "am", "Sinan"]
    assert words.words[2].pieces == ("sin", "##an") and words.words[2].token_indices == (3, 4)
    np.testing.assert_allclose(words.vectors[2], states[-1, 3:5].mean(axis=0), atol=1e-5)
    first_last = word_vectors(default_model, "I am Sinan", layers=[0, 6], combine="concat", pool="first+last")
    assert first_last.vectors.shape == (3, 4 * 384)
    np.testing.assert_allclose(first_last.vectors[2][:384], states[0, 3], atol=1e-5)
    np.testing.assert_allclose(first_last.vectors[2][-384:], states[6, 4], atol=1e-5)


def test_layer_selection_and_pooling_rules():
    states = np.arange(3 * 2 * 2, dtype=np.float32).reshape(3, 2, 2)  # (layers, tokens, H)
    np.testing.assert_array_equal(select_layers(states, [0, 2], "mean"), (states[0] + states[2]) / 2)
    np.testing.assert_array_equal(select_layers(states, [-1], "sum"), states[2])
    assert select_layers(states, [0, 1], "concat").shape == (2, 4)
    pieces = np.array([[1.0, 5.0], [3.0, 2.0]])
    assert pool_pieces(pieces, "max").tolist() == [3.0, 5.0]
    assert pool_pieces(pieces, "last").tolist() == [3.0, 2.0]


@pytest.mark.parametrize("pool", ["mean", "first", "last", "first+last", "max"])
def test_pool_words_equals_pooling_word_by_word(pool):
    vectors = np.random.default_rng(0).normal(size=(3, 9, 4)).astype(np.float32)  # (layers, tokens, H)
    runs = [[1], [2, 3, 4], [6, 7]]  # token 0, 5 and 8 are outside words (specials, a gap)
    pooled = pool_words(vectors, runs, pool)  # (layers, words, D)
    for layer in range(3):
        for w, run in enumerate(runs):
            np.testing.assert_allclose(pooled[layer, w], pool_pieces(vectors[layer, run], pool), rtol=1e-6)
    assert pool_words(vectors[0], [], pool).shape[0] == 0


def test_word_vectors_of_many_texts_equal_one_at_a_time(default_model):
    texts = ["I like eating bread", "The banana bread was horrible", "Sinan's embeddings, tokenized."]
    many = word_vectors_many(default_model, texts, layers=[0, 3, 6], combine="concat", pool="max")
    for text, result in zip(texts, many, strict=True):
        one = word_vectors(default_model, text, layers=[0, 3, 6], combine="concat", pool="max")
        assert result.words == one.words
        np.testing.assert_allclose(result.vectors, one.vectors, atol=1e-5)
    with pytest.raises(InputError, match="list of texts"):
        word_vectors_many(default_model, "one text")


def test_bfloat16_keeps_direction(default_model):
    full = word_vectors(default_model, "The banana bread was horrible").vectors
    half = word_vectors(default_model, "The banana bread was horrible", options=RunOptions(dtype="bfloat16")).vectors
    cosines = (full * half).sum(axis=1) / np.linalg.norm(full, axis=1) / np.linalg.norm(half, axis=1)
    assert cosines.min() >= 0.99
    assert next(default_model.torch_model().parameters()).dtype == torch.float32  # the float32 model is untouched
    assert np.abs(word_vectors(default_model, "The banana bread was horrible").vectors - full).max() == 0.0


def test_context_comparison(default_model):
    sentences = ["I like eating bread", "The banana bread was horrible", "Bread and butter"]
    result = compare_contexts(default_model, "bread", sentences)
    assert [o.sentence for o in result.occurrences] == [0, 1, 2]
    assert result.layers[0].layer == "input matrix" and result.layers[0].mean_cosine == 1.0
    assert [s.layer for s in result.layers[1:]] == [str(i) for i in range(7)]
    a = explain(default_model, sentences[0]).tokens[4].output
    b = explain(default_model, sentences[1]).tokens[3].output
    expected = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert result.layers[1].matrix[0, 1] == pytest.approx(expected, abs=1e-5)  # layer 0 is the embedding output
    assert result.layers[-1].mean_cosine < result.layers[1].mean_cosine
    assert "input matrix" in result.to_table()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: hidden_states(m, []), "No texts"),
        (lambda m: hidden_states(m, [3]), "must be a string"),
        (lambda m: word_vectors(m, "dog", layers=[7]), "Layer 7 does not exist"),
        (lambda m: word_vectors(m, "dog", layers=[-8]), "Layer -8 does not exist"),
        (lambda m: word_vectors(m, "dog", layers=[]), "No layers"),
        (lambda m: word_vectors(m, "dog", pool="median"), "Unknown pooling"),
        (lambda m: word_vectors(m, "dog", combine="product"), "Unknown layer combination"),
        (lambda m: hidden_states(m, "dog", options=RunOptions(overlap=600)), "overlap must be"),
        (lambda m: compare_contexts(m, "bread", ["I like bread", "no butter"]), "does not occur in sentence 1"),
        (lambda m: compare_contexts(m, "bread", ["I like bread"]), "at least two sentences"),
        (lambda m: compare_contexts(m, "", ["a", "b"]), "empty"),
    ],
)
def test_bad_inputs(default_model, call, message):
    with pytest.raises(InputError, match=message):
        call(default_model)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message for a missing CUDA device")
def test_cuda_asked_for_but_absent(default_model):
    with pytest.raises(InputError, match="no CUDA device"):
        hidden_states(default_model, "dog", options=RunOptions(device="cuda"))


def test_sentence_vectors(default_model):
    from bertlens.contextual import sentence_vectors

    texts = ["I like eating bread", "hello, world!"]
    states = hidden_states(default_model, texts)
    cls = sentence_vectors(default_model, texts, method="cls")
    np.testing.assert_allclose(cls.vectors[0], states[0].states[-1, 0], atol=1e-6)
    mean = sentence_vectors(default_model, texts, method="mean", layers=[0, -1])
    expected = ((states[1].states[0] + states[1].states[-1]) / 2)[1:-1].mean(axis=0)  # specials left out
    np.testing.assert_allclose(mean.vectors[1], expected, atol=1e-5)
    with_special = sentence_vectors(default_model, texts, method="max", special=True)
    np.testing.assert_allclose(with_special.vectors[0], states[0].states[-1].max(axis=0), atol=1e-6)
    assert sentence_vectors(default_model, "", method="mean").vectors.shape == (1, 384)  # only specials: uses them
    with pytest.raises(InputError, match="Unknown sentence pooling"):
        sentence_vectors(default_model, texts, method="median")
