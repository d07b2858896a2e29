"""The contextual side of two spaces (bertlens.spaces.cka, bertlens.spaces.contextual): linear CKA against the Gram
formula and its invariances, exact by construction; a model against itself (CKA diagonal 1, every neighbourhood kept)
and against another; occurrences two tokenizers split differently; a short corpus; the errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from bounds import EPS64, gamma

from bertlens import load_model
from bertlens.core.errors import InputError
from bertlens.spaces.cka import cka_matrix, linear_cka
from bertlens.spaces.contextual import ContextualDiff, contextual_diff

HADAMARD = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]) / 2  # orthogonal, entries exact


def paired(rows: int, width: int, seed: int) -> np.ndarray:
    """(2 * rows, width) small integers, each row followed later by its negation: every column's mean is exactly 0,
    so centring changes nothing and every product and sum of squares below is an exact float64 integer (or dyadic)."""
    z = np.random.default_rng(seed).integers(-3, 4, size=(rows, width)).astype(np.float64)
    return np.concatenate([z, -z])


def gram_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA from the n x n Gram matrices, HSIC(K, L) = tr(K H L H), with H scaled to integers (n I - 1 1^T; the scale
    cancels): on integer data every sum is an exact float64 integer, so only the last square root and division round."""
    n = len(x)
    h = n * np.eye(n) - np.ones((n, n))  # (n, n)
    k, g = h @ (x @ x.T) @ h, h @ (y @ y.T) @ h  # centred Gram matrices (n, n)
    return float(np.sum(k * g) / math.sqrt(np.sum(k * k) * np.sum(g * g)))


def self_bound(n: int, d: int) -> float:
    """How far from 1 a float64 CKA of n identical rows of width d may land. Each Gram entry (X^T X)_ij is summed
    within gamma_n * (|X|^T |X|)_ij, whose Frobenius norm is at most trace(X^T X) <= sqrt(d) ||X^T X||_F; each
    Frobenius norm then sums d^2 squares. The ratio has the cross norm squared over two self norms: four such factors,
    and a few roundings of the square roots, the square, the product and the division."""
    rho = gamma(n, EPS64) * math.sqrt(d) + gamma(d * d, EPS64)
    return 4 * rho + 8 * EPS64


def test_linear_cka_equals_the_gram_formula():
    x, y = paired(20, 6, seed=1), paired(20, 4, seed=2)
    assert abs(linear_cka(x, y) - gram_cka(x, y)) <= 8 * EPS64  # each side: a square root, a product, a division
    x = x + np.array([3.0, -2.0, 0.0, 5.0, 1.0, 7.0])  # shifted columns: the Gram side centres them itself
    assert abs(linear_cka(x, y) - gram_cka(x, y)) <= 8 * EPS64


def test_linear_cka_ignores_shifts_rotations_and_scale():
    x, y = paired(25, 8, seed=3), paired(25, 5, seed=4)
    found = linear_cka(x, y)
    assert 0 < found < 1
    rotation = np.kron(np.eye(2), HADAMARD)  # (8, 8) orthogonal
    assert np.array_equal(rotation @ rotation.T, np.eye(8))
    # Each changes every product by an exact factor (or not at all), so the figure is the same to the last bit.
    assert linear_cka(x @ rotation, y) == found
    assert linear_cka(4.0 * x, y) == found
    assert linear_cka(x + 5.0, y) == found  # integer shifts: the column means are exact, centring removes them exactly
    assert linear_cka(y, x) == pytest.approx(found, rel=8 * EPS64, abs=0)
    assert linear_cka(x, x) == pytest.approx(1.0, rel=self_bound(len(x), 8), abs=0)


def test_cka_matrix_is_linear_cka_of_every_pair():
    rng = np.random.default_rng(5)
    a = [rng.normal(size=(60, 7)) for _ in range(3)]
    b = [rng.normal(size=(60, 4)) for _ in range(2)]
    matrix = cka_matrix(a, b)
    assert matrix.shape == (3, 2) and matrix.dtype == np.float64
    assert matrix.tolist() == [[linear_cka(x, y) for y in b] for x in a]  # the same float64 steps, pair by pair


def test_linear_cka_refuses_what_it_cannot_compare():
    x = np.arange(12.0).reshape(6, 2)
    with pytest.raises(InputError, match="same items"):
        linear_cka(x, x[:5])
    with pytest.raises(InputError, match="no variance"):
        linear_cka(np.ones((6, 3)), x)
    with pytest.raises(InputError, match="dimensions"):
        linear_cka(x.ravel(), x)


@pytest.fixture(scope="module")
def tiny_bert(tiny_models):
    return tiny_models["bert"]  # 2 layers of width 32


def test_a_model_against_itself_keeps_everything(tiny_bert):
    found = contextual_diff(tiny_bert, tiny_bert, occurrences=200, k=5)
    assert isinstance(found, ContextualDiff) and found.note is None
    assert found.occurrences == found.asked == 200 and found.dropped_a == found.dropped_b == 0
    assert found.cka.shape == (3, 3) and (found.layer_a, found.layer_b) == (2, 2)
    diagonal = np.diagonal(found.cka)
    assert np.abs(diagonal - 1).max() <= self_bound(200, 32)
    assert found.overlap_mean == 1.0 and all(w.overlap == 1.0 for w in found.words)
    assert set(found.word_overlap.values()) == {1.0} and 0 < len(found.words) <= 20
    assert all(w.count >= 2 for w in found.words)
    data = found.to_dict()
    assert np.array(data["cka"]).shape == (3, 3) and "word_overlap" not in data
    assert "Linear CKA" in found.to_table() and "Note" not in found.to_table()


def test_the_default_model_against_itself(default_model):
    found = contextual_diff(default_model, default_model, occurrences=150)
    assert found.cka.shape == (7, 7) and (found.layer_a, found.layer_b) == (6, 6)
    assert np.abs(np.diagonal(found.cka) - 1).max() <= self_bound(150, 384)
    assert found.overlap_mean == 1.0


def test_two_different_models(tiny_models, tiny_bert):
    other = tiny_models["electra"]
    found = contextual_diff(tiny_bert, other, occurrences=120, layer=1, k=3)
    assert (found.layer_a, found.layer_b) == (1, 1) and found.cka.shape == (3, 3)
    assert found.cka.max() < 1 - self_bound(120, 32) and found.cka.min() > 0
    assert 0 <= found.overlap_mean < 1
    overlaps = [w.overlap for w in found.words]
    assert overlaps == sorted(overlaps)  # changed most first
    assert contextual_diff(tiny_bert, other, occurrences=120, layer=-1, layer_b=0).layer_b == 0


def test_words_split_differently_are_left_out_and_a_short_corpus_says_so(tiny_copy, tiny_bert, tmp_path):
    from tokenizers import Tokenizer, pre_tokenizers

    folder = tiny_copy("bert")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # "cat," is one word here, two in BERT's split
    tokenizer.save(str(folder / "tokenizer.json"))
    corpus = tmp_path / "short.txt"
    corpus.write_text("the cat, the dog. a cat sat\n", encoding="utf-8")
    found = contextual_diff(tiny_bert, load_model(str(folder)), corpus, occurrences=10, k=2)
    # BERT: the cat , the dog . a cat sat (9 words); whitespace: the cat, the dog. a cat sat (7): 5 alike.
    assert (found.occurrences, found.dropped_a, found.dropped_b, found.texts) == (5, 4, 2, 1)
    assert found.note == "the corpus held only 5 word occurrences; give a larger corpus (10 were asked for)"
    assert [(w.word, w.count) for w in found.words] == [("the", 2)]
    assert "Note: the corpus held only 5" in found.to_table()


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"layer": 3}, "0 (embedding output) to 2"),
        ({"layer_b": -4}, "does not exist in model B"),
        ({"layer": 2, "layer_b": 3}, "Layer 3 (layer_b) does not exist in model B"),
        ({"layer": "1"}, "does not exist in model A"),
        ({"occurrences": 5}, "at least 10"),
        ({"occurrences": 10.5}, "whole number"),
        ({"k": 0}, "at least 1"),
        ({"k": 50, "occurrences": 50}, "must be below"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_inputs_are_input_errors(tiny_bert, arguments, words):
    with pytest.raises(InputError, match=re.escape(words)) as raised:
        contextual_diff(tiny_bert, tiny_bert, **arguments)
    assert raised.value.hint


def test_a_missing_corpus_and_too_few_occurrences(tiny_bert, tmp_path):
    with pytest.raises(InputError, match="No such") as raised:
        contextual_diff(tiny_bert, tiny_bert, tmp_path / "nowhere.txt")
    assert "corpus" in raised.value.hint
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("the cat sat\n", encoding="utf-8")
    with pytest.raises(InputError, match="only 3 word occurrences"):
        contextual_diff(tiny_bert, tiny_bert, corpus, k=5)
    with pytest.raises(InputError, match="model_b must be a bertlens Model"):
        contextual_diff(tiny_bert, "bert")
