"""Contextual vectors against transformers' hidden_states; batching, windows, words, layers, context comparison."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from bounds import EPS64, cosine_rounding, direction_shift, float64_twin, float64_wobble, mean_bound, rounded_bound
from tiny import FAMILIES

from bertlens import InputError
from bertlens.contextual.context import compare_contexts
from bertlens.contextual.pooling import pool_pieces, pool_words
from bertlens.contextual.runner import Job, forward_batches
from bertlens.contextual.states import RunOptions, _best_window, _windows, hidden_states, select_layers
from bertlens.contextual.vectors import word_vectors, word_vectors_many
from bertlens.core.packing import inference_model, product_rows

TEXTS = ["I like eating bread", "The banana bread was horrible", "hello, world!", "", "I am Sinan"]


def reference(model) -> torch.nn.Module:
    """The module transformers' forward runs as the oracle: for a float32 model, the one bertlens runs (its linear
    products prepacked for oneDNN, each within its bound: tests/core/test_packing.py), for the same bits; for a
    float64 twin, transformers' model itself, untouched."""
    net = model.torch_model()
    return inference_model(model, "cpu", "float32") if next(net.parameters()).dtype == torch.float32 else net


def oracle(model, text: str) -> np.ndarray:
    """transformers' own hidden_states for one unpadded text: (layers + 1, tokens, H), in the model's dtype."""
    ids = torch.tensor([model.vocabulary.tokenizer.encode(text).ids])
    with torch.inference_mode():
        out = reference(model)(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].numpy()


@pytest.fixture(scope="module")
def twin(default_model):
    return float64_twin(default_model)


def assert_rounded_from(ours: np.ndarray, exact: np.ndarray) -> None:
    """`ours` (float32): a float64 forward pass, summed in any order, rounded; `exact`: transformers' float64 one."""
    assert ours.dtype == np.float32 and exact.dtype == np.float64 and ours.shape == exact.shape
    assert (np.abs(ours - exact) <= rounded_bound(exact, float64_wobble(np.abs(exact).max()))).all()


@pytest.mark.parity
def test_default_model_equals_transformers(default_model, twin):
    # One text alone is transformers' own forward pass (same module, ids and shapes): the same bits on any CPU.
    for text in TEXTS:
        states = hidden_states(default_model, text)[0]
        assert states.states.shape == (7, len(states.tokens), 384)
        np.testing.assert_array_equal(states.states, oracle(default_model, text))
    # Together the texts are padded into one batch, which another CPU sums in another order: compared in float64.
    result = hidden_states(twin, TEXTS)
    assert len(result) == len(TEXTS)
    for text, states in zip(TEXTS, result.results, strict=True):
        assert_rounded_from(states.states, oracle(twin, text))


@pytest.mark.parity
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_equals_transformers(tiny_models, family):
    model = float64_twin(tiny_models[family])  # the texts run as one batch: see the test above
    texts = ["the cat sat on the mat", "a dog", "the big red car ran", "a dog"]  # BERT-style: ragged, "a dog" twice
    for text, states in zip(texts, hidden_states(model, texts).results, strict=True):
        assert_rounded_from(states.states, oracle(model, text))
    one = hidden_states(tiny_models[family], texts[0])[0].states  # alone: transformers' own float32 pass, bit for bit
    np.testing.assert_array_equal(one, oracle(tiny_models[family], texts[0]), err_msg=family)


@pytest.mark.parametrize(("family", "ragged"), [("bert", True), ("roberta", True), ("distilbert", False)])
def test_batches_lay_rows_end_to_end(tiny_models, family, ragged):
    # BERT-style attention (SelfAttention) runs ragged batches: no padding, rows of one length side by side. Other
    # attentions get padded rows. test_every_family_equals_transformers checks the numbers of both.
    model = float64_twin(tiny_models[family])
    texts = ["the cat sat on the mat", "a dog", "the big red car ran", "a dog"]
    jobs = [Job(i, 0, model.vocabulary.tokenizer.encode(text).ids) for i, text in enumerate(texts)]
    [batch] = forward_batches(model, jobs, RunOptions())
    assert batch.lengths == sorted(len(job.ids) for job in jobs) and batch.jobs[:2] in ([1, 3], [3, 1])
    if ragged:
        assert batch.starts == [sum(batch.lengths[:row]) for row in range(4)]
        assert batch.states[0].shape[0] == product_rows(sum(batch.lengths))  # padding only after the last row
    else:
        assert batch.starts == [row * max(batch.lengths) for row in range(4)]
        assert batch.states[0].shape[0] == 4 * max(batch.lengths)


@pytest.mark.parity
def test_batch_invariance(default_model, twin):
    text = "The banana bread was horrible"
    alone = hidden_states(default_model, text)[0].states
    tiny_batches = hidden_states(default_model, [text, "b"], options=RunOptions(batch_tokens=1))
    np.testing.assert_array_equal(alone, tiny_batches.results[0].states)  # a batch of one: the same forward pass
    crowded = hidden_states(twin, ["a", text, "x " * 200]).results[1].states  # padded to 202 tokens
    assert_rounded_from(crowded, oracle(twin, text))


def test_windows_cover_every_token_and_pick_the_most_context():
    assert _windows(10, 62, 31) == [0]
    starts = _windows(150, 62, 31)
    assert starts == [0, 31, 62, 88]
    covered = {p for s in starts for p in range(s, s + 62)}
    assert covered == set(range(150))
    assert _best_window(0, starts, 62) == 0
    assert _best_window(61, starts, 62) == 1  # 30 tokens of context each side in window 1, none to the right in 0
    assert _best_window(149, starts, 62) == 3


@pytest.mark.parity
def test_long_text_takes_each_token_from_its_best_window(tiny_models):
    model = float64_twin(tiny_models["bert"])  # 64 positions: 62 content tokens per window, 4 windows in one batch
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
            window = torch.stack(reference(model)(input_ids=ids, output_hidden_states=True).hidden_states)
        expected = window[:, 0, 1 + position - start].numpy()
        assert_rounded_from(result.states[:, 1 + position], expected)


@pytest.mark.parity
def test_word_vectors_pool_pieces(default_model):
    states = hidden_states(default_model, "I am Sinan")[0].states
    words = word_vectors(default_model, "I am Sinan", layers=[-1])
    assert [w.text for w in words.words] == ["I", "am", "Sinan"]
    assert words.words[2].pieces == ("sin", "##an") and words.words[2].token_indices == (3, 4)
    # The same forward pass; a mean of two pieces is one float32 addition (order-free) and an exact halving.
    np.testing.assert_array_equal(words.vectors[2], states[-1, 3:5].mean(axis=0))
    first_last = word_vectors(default_model, "I am Sinan", layers=[0, 6], combine="concat", pool="first+last")
    assert first_last.vectors.shape == (3, 4 * 384)
    np.testing.assert_array_equal(first_last.vectors[2][:384], states[0, 3])
    np.testing.assert_array_equal(first_last.vectors[2][-384:], states[6, 4])


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
            expected = pool_pieces(vectors[layer, run], pool)
            if pool == "mean":  # two float32 means of the same pieces, each within mean_bound in any order
                assert (np.abs(pooled[layer, w] - expected) <= 2 * mean_bound(vectors[layer, run], axis=0)).all()
            else:  # picking and max are exact
                np.testing.assert_array_equal(pooled[layer, w], expected)
    assert pool_words(vectors[0], [], pool).shape[0] == 0


@pytest.mark.parity
def test_word_vectors_of_many_texts_equal_one_at_a_time(twin):
    texts = ["I like eating bread", "The banana bread was horrible", "Sinan's embeddings, tokenized."]
    many = word_vectors_many(twin, texts, layers=[0, 3, 6], combine="concat", pool="max")  # one padded batch
    for text, result in zip(texts, many, strict=True):
        one = word_vectors(twin, text, layers=[0, 3, 6], combine="concat", pool="max")
        assert result.words == one.words
        # Both: float64 states (float64_wobble apart) rounded to float32, then picked (max, concat: exact).
        wobble = float64_wobble(np.abs(one.vectors).max())
        assert (np.abs(result.vectors - one.vectors) <= 2 * rounded_bound(one.vectors, wobble)).all()
    with pytest.raises(InputError, match="list of texts"):
        word_vectors_many(twin, "one text")


def test_bfloat16_keeps_direction(default_model):
    full = word_vectors(default_model, "The banana bread was horrible").vectors
    half = word_vectors(default_model, "The banana bread was horrible", options=RunOptions(dtype="bfloat16")).vectors
    cosines = (full * half).sum(axis=1) / np.linalg.norm(full, axis=1) / np.linalg.norm(half, axis=1)
    # Not a comparison of equal computations: 1 - cos = |relative error|^2 / 2, so 0.99 allows a 14% error, about 70
    # bfloat16 half-steps (2**-9); here 1 - cos is 6e-5 on AVX-512, AVX2 and default kernels alike.
    assert cosines.min() >= 0.99
    assert next(default_model.torch_model().parameters()).dtype == torch.float32  # the float32 model is untouched
    assert np.abs(word_vectors(default_model, "The banana bread was horrible").vectors - full).max() == 0.0


@pytest.mark.parity
def test_context_comparison(default_model, twin):
    sentences = ["I like eating bread", "The banana bread was horrible", "Bread and butter"]
    result = compare_contexts(default_model, "bread", sentences)
    assert [o.sentence for o in result.occurrences] == [0, 1, 2]
    assert result.layers[0].layer == "input matrix" and result.layers[0].mean_cosine == 1.0
    assert [s.layer for s in result.layers[1:]] == [str(i) for i in range(7)]
    # Layer 0 is the embedding output. The sentences run as one padded batch, so compared in float64: each float32
    # vector turns from the exact one by at most direction_shift, and two float64 cosines differ by rounding only.
    vectors = [oracle(twin, sentences[0])[0, 4], oracle(twin, sentences[1])[0, 3]]  # (H,) float64, "bread"
    expected = float(vectors[0] @ vectors[1] / np.linalg.norm(vectors[0]) / np.linalg.norm(vectors[1]))
    steps = [np.linalg.norm(rounded_bound(v, float64_wobble(np.abs(v).max()))) for v in vectors]
    shift = sum(direction_shift(float(d), float(np.linalg.norm(v))) for d, v in zip(steps, vectors, strict=True))
    ours = compare_contexts(twin, "bread", sentences).layers[1].matrix[0, 1]
    assert abs(ours - expected) <= shift + 2 * cosine_rounding(384, EPS64)
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
    from bertlens.contextual.vectors import sentence_vectors

    texts = ["I like eating bread", "hello, world!"]
    states = hidden_states(default_model, texts)
    cls = sentence_vectors(default_model, texts, method="cls")
    np.testing.assert_array_equal(cls.vectors[0], states[0].states[-1, 0])  # the same batch: the same bits
    mean = sentence_vectors(default_model, texts, method="mean", layers=[0, -1])
    rows = ((states[1].states[0] + states[1].states[-1]) / 2)[1:-1]  # (tokens, H) specials left out; halving exact
    assert (np.abs(mean.vectors[1] - rows.mean(axis=0)) <= 2 * mean_bound(rows, axis=0)).all()  # two float32 means
    with_special = sentence_vectors(default_model, texts, method="max", special=True)
    np.testing.assert_array_equal(with_special.vectors[0], states[0].states[-1].max(axis=0))  # max is exact
    assert sentence_vectors(default_model, "", method="mean").vectors.shape == (1, 384)  # only specials: uses them
    with pytest.raises(InputError, match="Unknown sentence pooling"):
        sentence_vectors(default_model, texts, method="median")
