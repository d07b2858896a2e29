"""Static vectors: rows of the input matrix for tokens, ids and words, checked against transformers' own matrix."""

from __future__ import annotations

import numpy as np
import pytest
from bounds import EPS32, gamma, sum_bound

from bertlens import InputError, token_vector, vector, word_vector
from bertlens.contextual.vectors import preview, word_vectors
from bertlens.core.results import first_numbers

pytestmark = pytest.mark.parity  # held to transformers and tokenizers: run on each version pyproject allows


@pytest.fixture(scope="module")
def matrix(default_model) -> np.ndarray:
    """The oracle: transformers' input embedding matrix of the default model."""
    return default_model.torch_model().get_input_embeddings().weight.detach().numpy()


def test_token_row_equals_transformers_matrix(default_model, matrix):
    result = token_vector(default_model, "dog")
    assert result.ids == (3899,) and result.pieces == ("dog",) and result.kind == "token"
    assert result.pool is None
    np.testing.assert_array_equal(result.vector, matrix[3899])
    exact = float(np.linalg.norm(matrix[3899].astype(np.float64)))
    assert abs(result.norm - exact) <= gamma(384 + 2, EPS32) * exact  # a 384-term sum of squares, then sqrt


def test_id_and_special_and_subword_tokens(default_model, matrix):
    np.testing.assert_array_equal(token_vector(default_model, 101).vector, matrix[101])
    assert token_vector(default_model, "[CLS]").ids == (101,)
    assert token_vector(default_model, "##an").ids == (2319,)


def test_word_of_several_pieces_pools_them(default_model, matrix):
    rows = matrix[[8254, 2319]]
    mean = word_vector(default_model, "Sinan")
    assert mean.pieces == ("sin", "##an") and mean.pool == "mean" and mean.kind == "word"
    exact = rows.astype(np.float64)
    # Two rows added and halved in float32: one or two roundings of the result, in any order (sum_bound / n).
    assert (np.abs(mean.vector - exact.mean(axis=0)) <= sum_bound(rows, axis=0) / 2).all()
    np.testing.assert_array_equal(word_vector(default_model, "Sinan", "first").vector, rows[0])
    np.testing.assert_array_equal(word_vector(default_model, "Sinan", "last").vector, rows[1])
    summed = word_vector(default_model, "Sinan", "sum").vector
    assert (np.abs(summed - exact.sum(axis=0)) <= sum_bound(rows, axis=0)).all()


def test_single_piece_word_is_its_row(default_model, matrix):
    result = word_vector(default_model, "Dog")  # lower-cased by the tokenizer
    assert result.pieces == ("dog",) and result.pool is None
    np.testing.assert_array_equal(result.vector, matrix[3899])


def test_vector_chooses_token_then_word(default_model):
    assert vector(default_model, "dog").kind == "token"
    assert vector(default_model, "Sinan").kind == "word"
    assert vector(default_model, "##an").kind == "token"


def test_unknown_piece_is_flagged(default_model):
    result = word_vector(default_model, "🙂")
    assert result.pieces == ("[UNK]",) and result.unknown
    assert "unknown token" in result.to_table()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: token_vector(m, "sinan"), "not a token"),
        (lambda m: token_vector(m, 30522), "out of range"),
        (lambda m: token_vector(m, -1), "out of range"),
        (lambda m: word_vector(m, ""), "no pieces"),
        (lambda m: word_vector(m, "   "), "no pieces"),
        (lambda m: word_vector(m, "dog", "median"), "Unknown pooling"),
        (lambda m: vector(m, None), "must be a string"),
    ],
)
def test_bad_queries_are_input_errors(default_model, call, message):
    with pytest.raises(InputError, match=message):
        call(default_model)


def test_to_dict_and_table(default_model):
    result = word_vector(default_model, "Sinan")
    data = result.to_dict()
    assert data["pieces"] == ["sin", "##an"] and len(data["vector"]) == 384
    table = result.to_table()
    assert "mean of 2 pieces" in table and "384 dims" in table
    *_, numbers, said = table.splitlines()  # the first numbers, as `layers --vectors` shows a vector
    assert numbers.startswith("[") and numbers.endswith(" … (384)]") and "--all" in said
    shown = [float(x) for x in numbers[1:].split(" … ")[0].split()]
    assert shown == [round(float(x), 4) for x in result.vector[:8]]  # each number to the 4 decimals written
    assert numbers == first_numbers(result.vector)
    contextual = word_vectors(default_model, "dog")  # `layers --words --vectors` writes its vectors the same way
    assert first_numbers(contextual.vectors[0]) in preview(contextual).to_table()
    every = result.table(every=True)
    assert len(every.splitlines()) == 4 + 1 + 1 + 1 + 384 // 8  # the pooling note; every value: no truncation
    values = [float(x) for line in every.splitlines()[7:] for x in line.split()]
    assert values == [round(float(x), 6) for x in result.vector]
    assert "StaticVector('Sinan'" in repr(result)


def test_every_family_reads_its_own_input_matrix(tiny_models):
    for family, model in tiny_models.items():
        expected = model.torch_model().get_input_embeddings().weight.detach().numpy()
        np.testing.assert_array_equal(token_vector(model, 7).vector, expected[7], err_msg=family)
