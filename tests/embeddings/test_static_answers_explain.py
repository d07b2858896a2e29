"""Static answers explain themselves: a word that is not a token is said to be pooled from its pieces in
every answer (vector, neighbors, similarity; tables and to_dict alike), a query of several words is refused rather
than averaged, `vector` takes several queries, and `explain --compare` says the shared token's word_embeddings row is
the same in both inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens import InputError, Lens, explain, neighbors, similarity, token_vector, vector, word_vector
from bertlens.cli import main
from bertlens.core.tokens import encode
from bertlens.embeddings import compare_inputs, vectors
from bertlens.similarity.nearest import Expression

NONSENSE = "qwzxv"  # q ##w ##z ##x ##v in the default model


def run_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_word_that_is_not_a_token_is_said_to_be_pooled(default_model):
    found = vector(default_model, NONSENSE)
    pieces = encode(default_model, NONSENSE, add_special_tokens=False).tokens
    assert found.pieces == tuple(pieces) and len(pieces) == 5
    rows = default_model.embedding_weights.word_embeddings[list(found.ids)].astype(np.float64)
    np.testing.assert_allclose(found.vector, rows.mean(axis=0), rtol=0, atol=1e-7)  # what the note says it is
    note = f"{NONSENSE!r} is not a token: its vector is the mean of its 5 pieces' rows ({' '.join(pieces)})."
    assert found.notes == (note,)
    assert found.to_dict()["notes"] == [note] and f"note: {note}" in found.to_table()
    assert "the sum of its 5 pieces' rows" in vector(default_model, NONSENSE, "sum").notes[0]
    assert "the row of its last piece of 5" in vector(default_model, NONSENSE, "last").notes[0]


def test_a_token_needs_no_note_and_a_cased_word_names_its_one_piece(default_model):
    assert vector(default_model, "dog").notes == () and token_vector(default_model, 3899).notes == ()
    assert word_vector(default_model, "dog").notes == ()  # tokenized, but it is the token itself
    assert vector(default_model, "Dog").notes == (
        "'Dog' is not a token: it is tokenized as the one piece 'dog', whose row this is.",
    )
    unknown = vector(default_model, "\U0001f99c")  # a parrot: the uncased vocabulary has no piece for it
    assert unknown.unknown and unknown.notes[-1].startswith("a piece is the unknown token")


def test_neighbors_and_similarity_say_the_same(default_model, tmp_path):
    note = vector(default_model, NONSENSE).notes[0]
    found = neighbors(default_model, NONSENSE, 3, cache_dir=tmp_path)
    assert found.notes == (note,) and found.to_dict()["notes"] == [note] and f"note: {note}" in found.to_table()
    assert neighbors(default_model, "dog", 3, cache_dir=tmp_path).notes == ()
    expression = neighbors(default_model, Expression(positive=("king", NONSENSE)), 3, cache_dir=tmp_path)
    assert expression.notes == (note,)
    pair = similarity(default_model, NONSENSE, "Dog", cache_dir=tmp_path)
    assert pair.notes == (note, vector(default_model, "Dog").notes[0]) and f"note: {note}" in pair.to_table()
    assert similarity(default_model, "dog", "cat", cache_dir=tmp_path).notes == ()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: vector(m, "banana bread"),
        lambda m: word_vector(m, "banana bread"),
        lambda m: vector(m, " banana\tbread "),
        lambda m: neighbors(m, "banana bread", 3),
        lambda m: neighbors(m, Expression(positive=("banana bread",)), 3),
        lambda m: similarity(m, "banana bread", "cake"),
        lambda m: vectors(m, ["dog", "banana bread"]),
    ],
)
def test_several_words_are_refused_not_averaged(default_model, call):
    with pytest.raises(InputError, match="is 2 words") as caught:
        call(default_model)
    assert "separate queries ('banana' 'bread')" in caught.value.hint


def test_a_phrase_pools_only_when_asked(default_model):
    phrase = word_vector(default_model, "banana bread", phrase=True)  # SemEval-17's multi-word entries
    assert phrase.pieces == ("banana", "bread") and "mean of its 2 pieces' rows" in phrase.notes[0]


def test_vectors_gives_one_result_per_query(default_model):
    found = vectors(default_model, ["dog", NONSENSE, 3899])
    assert [r.query for r in found] == ["dog", NONSENSE, "3899"] and len(found) == 3
    assert found[1].to_dict() == vector(default_model, NONSENSE).to_dict()
    assert found.to_dict()["results"][2] == token_vector(default_model, 3899).to_dict()
    assert Lens(default_model).vectors(["dog"]).to_dict() == vectors(default_model, ["dog"]).to_dict()
    for bad, message in (("dog", "must be a list"), ([], "No queries")):
        with pytest.raises(InputError, match=message):
            vectors(default_model, bad)


def test_cli_vector_takes_several_queries_and_refuses_phrases(capsys, default_model):
    data = run_json(capsys, "vector", "dog", NONSENSE)
    assert data == vectors(default_model, ["dog", NONSENSE]).to_dict()
    assert run_json(capsys, "vector", "--id", "3899", "4937")["results"][1]["pieces"] == ["cat"]
    assert run_json(capsys, "vector", NONSENSE)["notes"] == list(vector(default_model, NONSENSE).notes)  # one: as ever
    assert main(["vector", "banana bread"]) == 2
    assert "separate queries" in capsys.readouterr().err
    assert main(["neighbors", NONSENSE, "-k", "2"]) == 0
    assert "is not a token: its vector is the mean of its 5 pieces' rows" in capsys.readouterr().out


def test_compare_says_the_shared_word_row_is_the_same(default_model):
    a, b = "I like bread", "Banana bread is good"
    found = compare_inputs(default_model, a, b, check=False)
    bread = next(s for s in found.shared if s.piece == "bread")
    ea, eb = explain(default_model, a, check=False), explain(default_model, b, check=False)
    ta, tb = ea.tokens[bread.index_a], eb.tokens[bread.index_b]
    np.testing.assert_array_equal(ta.word_row, tb.word_row)  # the oracle: the rows themselves
    assert bread.word_row_max_abs_diff == 0.0
    assert bread.position_row_max_abs_diff == float(np.abs(ta.position_row - tb.position_row).max()) > 0
    assert bread.segment_row_max_abs_diff == 0.0
    statement = bread.statement
    assert statement.startswith("'bread': the same word_embeddings row (id 7852) in both; the outputs differ by")
    assert "position rows (3 vs 2; max |diff| " in statement
    table = found.to_table()
    assert "'bread' (id 7852): the same row of word_embeddings in both texts" in table  # in plain words
    assert found.to_dict()["shared"][1]["statement"] == statement  # JSON keeps the detailed statement
    cls = next(s for s in found.shared if s.piece == "[CLS]")
    assert "identical outputs" in cls.statement and cls.output_max_abs_diff == 0.0
