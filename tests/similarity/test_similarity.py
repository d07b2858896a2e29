"""Nearest neighbours and pair similarity, with gensim's most_similar as the oracle on the same matrix."""

from __future__ import annotations

import numpy as np
import pytest
from bounds import EPS32, EPS64, assert_same_top, cosine_rounding, dot_bound, gamma, mean_bound

from bertlens import InputError
from bertlens.embeddings.token_classes import TokenFilter, token_classes
from bertlens.similarity.index import Adjustment, open_index
from bertlens.similarity.nearest import Expression, neighbors, neighbors_many, similarity


@pytest.fixture(scope="module")
def index(default_model, tmp_path_factory):
    return open_index(default_model, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def gensim_vectors(default_model):
    from gensim.models import KeyedVectors

    matrix = default_model.embedding_weights.word_embeddings
    vectors = KeyedVectors(matrix.shape[1])
    vectors.add_vectors([default_model.vocabulary.id_to_token(i) for i in range(len(matrix))], matrix)
    return vectors


def gensim_top(gensim_vectors, index, k, **query):
    """gensim's answer, restricted (as ours by default) to rows that are not special or [unused]."""
    allowed = index.allowed(TokenFilter())
    found = gensim_vectors.most_similar(topn=k + 2000, **query)
    return [(key, score) for key, score in found if allowed[gensim_vectors.key_to_index[key]]][:k]


@pytest.mark.parametrize("word", ["dog", "bread", "king", "running", "paris", "##ing"])
def test_token_neighbours_equal_gensim(default_model, index, gensim_vectors, word):
    ours = neighbors(default_model, word, 10, index=index)
    theirs = gensim_top(gensim_vectors, index, 11, positive=[word])
    # Each float32 cosine: two 384-term norms and a dot product of unit vectors, summed in any order (Higham).
    wobble = gamma(2 * 384 + 4, EPS32)
    assert_same_top([(n.token, n.score) for n in ours.neighbors], theirs, wobble)
    assert [n.rank for n in ours.neighbors] == list(range(1, 11))


def test_expression_equals_gensim_positive_negative(default_model, index, gensim_vectors):
    ours = neighbors(default_model, Expression(("king", "woman"), ("man",)), 5, index=index)
    theirs = gensim_top(gensim_vectors, index, 6, positive=["king", "woman"], negative=["man"])
    wobble = gamma(3 * 384 + 8, EPS32)  # three unit vectors summed and normalised, then a cosine, in any order
    assert_same_top([(n.token, n.score) for n in ours.neighbors], theirs, wobble)
    assert ours.neighbors[0].token == "queen"
    assert set(ours.ids) == {default_model.vocabulary.token_to_id(t) for t in ("king", "woman", "man")}


def test_every_result_shows_id_and_token_and_excludes_the_query(default_model, index):
    result = neighbors(default_model, "dog", 20, index=index)
    assert all(default_model.vocabulary.id_to_token(n.id) == n.token for n in result.neighbors)
    assert 3899 not in [n.id for n in result.neighbors]
    by_id = neighbors(default_model, 3899, 20, index=index)
    assert [n.id for n in by_id.neighbors] == [n.id for n in result.neighbors]
    assert by_id.kind == "id" and result.kind == "token"


def test_word_of_several_pieces_is_pooled_and_its_pieces_excluded(default_model, index):
    result = neighbors(default_model, "Sinan", 50, index=index)
    assert result.kind == "word" and result.pieces == ("sin", "##an")
    assert not {8254, 2319} & {n.id for n in result.neighbors}


def test_raw_vector_query(default_model, index):
    row = default_model.embedding_weights.word_embeddings[3899]
    result = neighbors(default_model, row, 3, index=index)
    assert result.kind == "vector" and result.neighbors[0].id == 3899  # not excluded: a vector names no token
    with pytest.raises(InputError, match="384 values"):
        neighbors(default_model, np.zeros(5), index=index)
    with pytest.raises(InputError, match="NaN"):
        neighbors(default_model, np.full(384, np.nan), index=index)


def test_filters(default_model, index):
    assert any(n.token.startswith("##") for n in neighbors(default_model, "bread", 30, index=index).neighbors)
    words = neighbors(default_model, "bread", 30, filters=TokenFilter.words_only(), index=index)
    assert not any(n.token.startswith("##") for n in words.neighbors)
    numbers = neighbors(default_model, "1990", 10, index=index)
    assert any(n.token.isdigit() for n in numbers.neighbors)
    no_numbers = neighbors(default_model, "1990", 10, filters=TokenFilter(numbers=False), index=index)
    assert not any(n.token.isdigit() for n in no_numbers.neighbors)
    specials = neighbors(default_model, "[CLS]", 10, filters=TokenFilter(special=True, unused=True), index=index)
    assert any(n.token.startswith("[unused") or n.token in ("[SEP]", "[PAD]") for n in specials.neighbors)
    default = neighbors(default_model, "[CLS]", 50, index=index)
    assert not any(n.token.startswith("[unused") or n.token in ("[SEP]", "[PAD]") for n in default.neighbors)


def test_token_classes_on_hand_made_vocabulary():
    tokens = ["[PAD]", "[unused3]", "dog", "##s", "1990", "##5", "3.5", "!", "...", "€", None]
    classes = token_classes(tokens, frozenset({0}))
    assert np.flatnonzero(classes["special"]).tolist() == [0]
    assert np.flatnonzero(classes["unused"]).tolist() == [1, 10]
    assert np.flatnonzero(classes["continuation"]).tolist() == [3, 5]
    assert np.flatnonzero(classes["numbers"]).tolist() == [4, 5, 6]
    assert np.flatnonzero(classes["punctuation"]).tolist() == [7, 8, 9]


def test_token_filter_from_flags():
    assert TokenFilter.from_flags() == TokenFilter()
    assert TokenFilter.from_flags(words_only=True) == TokenFilter.words_only()
    assert TokenFilter.from_flags(no_pieces=True, no_numbers=True) == TokenFilter(continuation=False, numbers=False)
    assert TokenFilter.from_flags(no_punctuation=True) == TokenFilter(punctuation=False)
    kept = TokenFilter.from_flags(words_only=True, specials=True, unused=True)  # keeping wins over words_only
    assert kept == TokenFilter(continuation=False, special=True, unused=True, numbers=False, punctuation=False)


def test_parse_queries():
    from bertlens.similarity.nearest import parse_queries

    assert parse_queries(["dog", "cat"], [], []) == ["dog", "cat"]
    assert parse_queries(["3899", " 7 "], ids=True) == [3899, 7]
    assert parse_queries([], ["king", "woman"], ["man"]) == [Expression(("king", "woman"), ("man",))]
    assert parse_queries([], [], ["man"]) == [Expression((), ("man",))]
    with pytest.raises(InputError, match=r"either queries or positive/negative terms, not both"):
        parse_queries(["dog"], ["king"], [])
    with pytest.raises(InputError, match="No query given"):
        parse_queries([], [], [])
    with pytest.raises(InputError, match=r"id expects integers, got 3899 dog"):
        parse_queries(["3899", "dog"], ids=True)
    with pytest.raises(InputError, match="not to positive/negative terms"):
        parse_queries([], ["king"], [], ids=True)


def test_adjustment_refuses_negative_remove_top():
    assert Adjustment(remove_top=0).describe() == "none"
    with pytest.raises(InputError, match=r"remove_top must be 0 or more, got -1"):
        Adjustment(center=True, remove_top=-1)


def test_metrics_against_numpy(default_model, index):
    matrix = default_model.embedding_weights.word_embeddings.astype(np.float64)
    allowed = index.allowed(TokenFilter())
    query = matrix[7852]
    dots = np.where(allowed, matrix @ query, -np.inf)
    dots[7852] = -np.inf
    distances = np.where(allowed, np.linalg.norm(matrix - query, axis=1), np.inf)
    distances[7852] = np.inf
    # Both sides in float64, each score within rounding of the exact one: a dot product within dot_bound; a distance,
    # its 384 differences and squares summed and a square root, within gamma_387 of itself. Ids are compared where no
    # neighbouring score lies within rounding (assert_same_top).
    dot = neighbors(default_model, "bread", 5, metric="dot", index=index)
    theirs = [(int(i), dots[i]) for i in np.argsort(-dots)[:6]]
    wobble = float(dot_bound(matrix[[i for i, _ in theirs]], query, EPS64).max())
    assert_same_top([(n.id, n.score) for n in dot.neighbors], theirs, wobble)
    euclid = neighbors(default_model, "bread", 5, metric="euclidean", index=index)
    theirs = [(int(i), distances[i]) for i in np.argsort(distances)[:6]]
    assert_same_top([(n.id, n.score) for n in euclid.neighbors], theirs, gamma(384 + 3, EPS64) * theirs[-1][1])


def test_adjusted_scores_beside_raw(default_model, index):
    plain = neighbors(default_model, "bread", 5, index=index)
    adjusted = neighbors(default_model, "bread", 5, adjustment=Adjustment(center=True, remove_top=3), index=index)
    assert adjusted.adjustment == "centred, top 3 principal directions removed"
    assert all(n.raw_score is not None for n in adjusted.neighbors)
    raw_by_id = {n.id: n.score for n in neighbors(default_model, "bread", 200, index=index).neighbors}
    for n in adjusted.neighbors:
        if n.id in raw_by_id:
            assert abs(n.raw_score - raw_by_id[n.id]) <= 2 * cosine_rounding(384, EPS64)  # float64, same rows
    assert adjusted.baseline < plain.baseline
    assert "(adjusted)" in adjusted.to_table() and "raw" in adjusted.to_table()


def test_all_but_the_top_space_is_centred_and_orthogonal_to_removed_directions(index):
    space = index.space(Adjustment(center=True, remove_top=2))
    fit = index.raw.rows[index.allowed(TokenFilter())]
    mean, c = space.mean.astype(np.float64), space.components.astype(np.float64)  # (E,), (2, E) as float32 stores them

    def rounding(rows: np.ndarray) -> np.ndarray:
        """|transform(rows) - P (rows - mean)| in float32, P = I - C^T C: y = rows - mean rounds once, y C^T sums 384
        terms, (y C^T) C two, the last subtraction once: gamma_2 |y| + gamma_389 |y| |C|^T |C| (Higham, any order)."""
        y = np.abs(rows.astype(np.float64) - mean)  # (n, E)
        return gamma(2) * y + gamma(384 + 5) * (y @ np.abs(c).T) @ np.abs(c)

    # Exactly, the mean of P (fit - mean) is P (mean(fit) - mean): the float32 rounding of the stored mean. The
    # float64 reference itself is off by float64 rounding (gamma_400 in EPS64 of the magnitudes), 2**-29 of the rest.
    wide = fit.astype(np.float64)
    off = wide.mean(axis=0) - mean
    exact = off - (off @ c.T) @ c
    reference = gamma(400, EPS64) * (np.abs(wide).mean(axis=0) + np.abs(mean)) @ (np.eye(len(mean)) + np.abs(c.T @ c))
    moved = space.transform(fit)
    bound = np.abs(exact) + reference + rounding(fit).mean(axis=0) + mean_bound(moved, axis=0)
    assert (np.abs(moved.mean(axis=0)) <= bound).all()
    # Exactly, P y C^T = (y C^T)(I - C C^T): zero up to how far the float32 components are from orthonormal.
    y = index.raw.rows.astype(np.float64) - mean
    exact = (y @ c.T) @ (np.eye(2) - c @ c.T)
    reference = gamma(400, EPS64) * (np.abs(y) @ np.abs(c).T) @ (np.eye(2) + np.abs(c @ c.T))
    bound = np.abs(exact) + reference + (rounding(index.raw.rows) + gamma(384) * np.abs(space.rows)) @ np.abs(c).T
    assert (np.abs(space.rows @ space.components.T) <= bound).all()


def test_baseline_is_mean_cosine_of_random_pairs(index):
    baseline = index.baseline(Adjustment(), TokenFilter())
    assert 0.0 < baseline < 0.1


def test_batch_equals_single_queries(default_model, index):
    words = ["dog", "cat", "Sinan", 101]
    batch = neighbors_many(default_model, words, 5, index=index)
    assert len(batch) == 4
    for word, result in zip(words, batch.results, strict=True):
        assert result.to_dict() == neighbors(default_model, word, 5, index=index).to_dict()


def test_pair_similarity(default_model, index):
    result = similarity(default_model, "dog", "cat", index=index)
    rows = default_model.embedding_weights.word_embeddings.astype(np.float64)
    expected = rows[3899] @ rows[4937] / np.linalg.norm(rows[3899]) / np.linalg.norm(rows[4937])
    assert abs(result.score - expected) <= 2 * cosine_rounding(384, EPS64)  # float64 cosines of the same rows
    pooled = similarity(default_model, "Sinan", "dog", index=index)
    assert pooled.pieces_a == ("sin", "##an")
    adjusted = similarity(default_model, "bread", "loaf", adjustment=Adjustment(True, 3), index=index)
    assert adjusted.raw_score == pytest.approx(0.5286, abs=5e-5)  # printed to 4 decimals; float64 rounding is 1e-13


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, i: neighbors(m, "dog", 0, index=i), "k must be a positive"),
        (lambda m, i: neighbors(m, "dog", -3, index=i), "k must be a positive"),
        (lambda m, i: neighbors(m, "dog", 2.5, index=i), "k must be a positive"),
        (lambda m, i: neighbors(m, "dog", metric="manhattan", index=i), "Unknown metric"),
        (lambda m, i: neighbors(m, "", index=i), "no pieces"),
        (lambda m, i: neighbors(m, 99999, index=i), "out of range"),
        (lambda m, i: neighbors(m, Expression(), index=i), "no terms"),
        (lambda m, i: neighbors_many(m, [], index=i), "No queries"),
        (lambda m, i: similarity(m, "dog", "   ", index=i), "no pieces"),
    ],
)
def test_bad_inputs(default_model, index, call, message):
    with pytest.raises(InputError, match=message):
        call(default_model, index)


def test_k_larger_than_the_allowed_rows(tiny_models):
    model = tiny_models["bert"]
    result = neighbors(model, "dog", 500)
    assert len(result.neighbors) == 80 - 5 - 1  # every row but the specials and the query itself


def test_cache_is_written_reused_and_rebuilt(default_model, tmp_path):
    first = open_index(default_model, tmp_path)
    folders = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and (folders[0] / "unit.npy").exists()
    again = open_index(default_model, tmp_path)
    np.testing.assert_array_equal(first.raw.unit, again.raw.unit)
    (folders[0] / "unit.npy").write_bytes(b"broken")  # a damaged cache is rebuilt, not an error
    assert open_index(default_model, tmp_path).rows == 30522


def test_cache_path_under_a_file_is_an_input_error(default_model, tmp_path):
    from bertlens import InputError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="which is a file"):  # a silent rebuild on every call would hide it
        open_index(default_model, blocker / "cache")


def test_every_family_answers(tiny_models):
    for family, model in tiny_models.items():
        result = neighbors(model, "dog", 3)
        assert len(result.neighbors) == 3, family


def test_precomputed_table_answers_exactly_as_a_scan(tiny_dirs, tmp_path):
    from bertlens import load_model

    model = load_model(str(tiny_dirs["bert"]))
    plain = open_index(model, tmp_path)
    queries = list(range(5, 80))
    scans = {
        (k, filters): neighbors_many(model, queries, k, filters=filters, index=plain).to_dict()
        for k in (1, 10, 60)
        for filters in (TokenFilter(), TokenFilter.words_only())
    }
    table = open_index(model, tmp_path, precompute=True)
    assert table.table is not None and table.table.width == 50
    assert open_index(model, tmp_path).table is not None  # read back from the cache
    for (k, filters), expected in scans.items():  # k = 60 > width: falls back to a scan
        assert neighbors_many(model, queries, k, filters=filters, index=table).to_dict() == expected
