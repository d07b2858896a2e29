"""Analogies: answers checked by hand on a handcrafted matrix, and against gensim's most_similar(_cosmul)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from bounds import EPS32, assert_same_top, gamma
from handmade import make_handmade

from bertlens import InputError, load_model
from bertlens.core.options import ANALOGY_METHODS as METHODS
from bertlens.embeddings.token_classes import TokenFilter
from bertlens.similarity.analogy import EPSILON, AnalogyResult, analogy, solve_analogies
from bertlens.similarity.index import open_index


@pytest.fixture(scope="module")
def handmade(tiny_dirs, tmp_path_factory) -> Path:
    return make_handmade(tiny_dirs["bert"], tmp_path_factory.mktemp("handmade") / "bert")


@pytest.fixture(scope="module")
def hand_model(handmade):
    return load_model(str(handmade))


@pytest.fixture(scope="module")
def index(default_model, tmp_path_factory):
    return open_index(default_model, tmp_path_factory.mktemp("cache"))


def test_3cosadd_by_hand(hand_model, tmp_path):
    result = analogy(hand_model, "he", "she", "day", k=3, cache_dir=tmp_path)
    assert [a.token for a in result.answers] == ["night", "dog", "the"]
    # cos(night, unit(she) - unit(he) + unit(day)) = 1; dog = e1: 1/sqrt(2); the rest are orthogonal: 0, lowest id first
    # Every vector involved has at most 4 nonzero entries (zeros add no rounding): unit rows, the cosines, their sum
    # and its float32 norm take at most 16 roundings of values no larger than 1, on any CPU (Higham's gamma_16).
    assert [a.score for a in result.answers] == pytest.approx([1.0, 1 / math.sqrt(2), 0.0], abs=gamma(16, EPS32))
    assert [a.rank for a in result.answers] == [1, 2, 3]
    vocab = hand_model.vocabulary
    assert [a.id for a in result.answers] == [vocab.token_to_id(t) for t in ("night", "dog", "the")]
    assert result.pieces_a == ("he",) and result.ids_b == (vocab.token_to_id("she"),)


def test_3cosmul_by_hand(hand_model, tmp_path):
    result = analogy(hand_model, "he", "she", "day", k=3, method="3cosmul", cache_dir=tmp_path)
    assert [a.token for a in result.answers] == ["night", "dog", "the"]
    shifted = lambda cos: (cos + 1) / 2  # noqa: E731
    # (B, C, A): shifted cosines with she, day and he. cos(night, she) = cos(night, day) = 1/2; dog = e1; the rest 0.
    terms = [(shifted(0.5), shifted(0.5), shifted(0.0)), (shifted(1 / math.sqrt(2)), shifted(0.0), shifted(0.0))]
    terms.append((shifted(0.0),) * 3)
    for answer, (b, c, a) in zip(result.answers, terms, strict=True):
        # Each shifted cosine is within gamma_6 (a unit row: 2 roundings; a product, a sum, + 1 and its rounding);
        # B * C / (A + eps) adds their relative errors and rounds three more times (Higham), on any CPU.
        relative = gamma(6, EPS32) * (1 / b + 1 / c + 1 / (a + 0.001)) + gamma(3, EPS32)
        assert abs(answer.score - b * c / (a + 0.001)) <= relative * b * c / (a + 0.001)


def test_word_terms_are_pooled_and_all_their_pieces_excluded(hand_model, tmp_path):
    result = analogy(hand_model, "he", "she", "days", k=5, cache_dir=tmp_path)  # days -> day ##s, pooled
    assert result.pieces_c == ("day", "##s")
    excluded = set(result.ids_a + result.ids_b + result.ids_c)
    assert not excluded & {a.id for a in result.answers}
    with_pieces = analogy(hand_model, "he", "she", "days", k=80, filters=TokenFilter(), cache_dir=tmp_path)
    assert "##s" not in [a.token for a in with_pieces.answers]  # excluded although pieces are allowed
    assert len(with_pieces.answers) == with_pieces.candidates - 4  # he, she, day, ##s left out


def test_core_by_hand_on_a_small_matrix():
    unit = np.array([[1, 0], [0, 1], [-1, 0], [0, -1], [0.6, 0.8]], dtype=np.float32)  # (5, 2)
    terms = unit[[0, 1, 2]]  # a = e0, b = e1, c = -e0: b - a + c = (-2, 1)/sqrt(5)
    ids, scores = solve_analogies(unit, np.arange(5), terms, np.array([[0, 1, 2]]), np.array([[0, 1, 2]]), k=2)
    assert ids.tolist() == [[4, 3]]  # row 4: (0.6*-2 + 0.8)/sqrt(5) = -0.179; row 3: -1/sqrt(5) = -0.447
    # float32 rows (0.6 and 0.8 round), three cosines summed, a float32 norm and a division: gamma_6 of the magnitudes.
    magnitudes = (np.abs(unit[[4, 3]]) @ np.abs(terms).T).sum(axis=1) / math.sqrt(5)  # (2,)
    assert (np.abs(scores[0] - [-0.4 / math.sqrt(5), -1 / math.sqrt(5)]) <= gamma(6, EPS32) * magnitudes).all()
    ids, scores = solve_analogies(unit, np.arange(5), terms, np.array([[0, 1, 2]]), np.array([[0, 1, 2]]), k=4)
    assert ids.tolist() == [[4, 3, -1, -1]] and np.isneginf(scores[0, 2:]).all()  # only two rows left
    ids, _ = solve_analogies(unit, np.array([3, 0, 1]), terms, np.array([[0, 1, 2]]), None, k=1)
    assert ids.tolist() == [[1]]  # no exclusion: b itself is the best candidate


def test_core_ties_go_to_the_lower_id():
    unit = np.zeros((6, 2), dtype=np.float32)
    unit[:, 0] = 1  # every row the same
    ids, _ = solve_analogies(unit, np.arange(6), unit[:3], np.array([[0, 1, 2]]), np.array([[1, -1, -1]]), k=3)
    assert ids.tolist() == [[0, 2, 3]]


@pytest.mark.parametrize("method", METHODS)
def test_core_is_the_same_in_any_chunking(method):
    rng = np.random.default_rng(1)
    unit = rng.standard_normal((300, 16)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    terms = unit[rng.choice(300, 40)]
    questions = rng.integers(0, 40, (97, 3))
    exclude = rng.integers(-1, 300, (97, 4))
    candidates = rng.choice(300, 200, replace=False)
    expected = solve_analogies(unit, candidates, terms, questions, exclude, k=5, method=method)
    small = solve_analogies(unit, candidates, terms, questions, exclude, k=5, method=method, chunk=7, terms_at_once=3)
    # Each cosine is a 16-term float32 dot product of unit vectors: another chunking may sum it in another order, which
    # moves it by at most gamma_16 (Higham). 3CosAdd adds three and divides by |b - a + c|; 3CosMul's B * C / (A + eps)
    # moves by at most that times (B + C + score) / eps. Doubled: both runs round.
    cosine = gamma(16 + 2, EPS32)
    if method == "3cosadd":
        t = terms.astype(np.float64)
        norms = np.linalg.norm(t[questions[:, 1]] - t[questions[:, 0]] + t[questions[:, 2]], axis=1)  # (Q,)
        bound = (3 * cosine + gamma(4, EPS32)) / norms[:, None]  # (Q, 1)
    else:
        bound = cosine * (2 + np.where(np.isfinite(expected[1]), expected[1], 0).max(axis=1, keepdims=True)) / EPSILON
    finite = np.isfinite(expected[1])  # (Q, k) -inf where fewer than k candidates are left
    assert (np.abs(expected[1] - small[1]) <= 2 * bound)[finite].all()
    # The same answers, except where a neighbouring score lies within rounding: there either order is right.
    wall = solve_analogies(unit, candidates, terms, questions, exclude, k=6, method=method)  # the 6th score too
    np.testing.assert_array_equal(wall[0][:, :5], expected[0])  # the same chunking: the same scores, the same order
    for q in range(len(questions)):
        ours = list(zip(small[0][q].tolist(), small[1][q].tolist(), strict=True))
        assert_same_top(ours, list(zip(wall[0][q].tolist(), wall[1][q].tolist(), strict=True)), float(bound[q, 0]))
    assert np.isin(expected[0], candidates).all()
    assert not (expected[0][:, :, None] == exclude[:, None, :]).any()
    top1 = solve_analogies(unit, candidates, terms, questions, exclude, k=1, method=method)
    np.testing.assert_array_equal(top1[0][:, 0], expected[0][:, 0])


def test_default_model_king_queen(default_model, index):
    result = analogy(default_model, "man", "king", "woman", index=index)
    assert result.best.token == "queen" and result.best.id == 3035
    assert len(result.answers) == 10 and all(a.token == index.tokens[a.id] for a in result.answers)
    assert all(a.token not in ("man", "king", "woman") for a in result.answers)
    assert analogy(default_model, "man", "king", "woman", method="3cosmul", index=index).best.token == "queen"
    assert analogy(default_model, 2158, 2332, 2450, index=index).answers == result.answers  # ids work too
    table = result.to_table()
    assert "queen" in table and "3CosAdd" in table and "whole words only" in table
    data = json.loads(json.dumps(result.to_dict()))
    assert data["answers"][0] == {"rank": 1, "id": 3035, "token": "queen", "score": result.best.score}  # JSON: exact
    assert data["filters"]["continuation"] is False
    assert "queen" in repr(result) and isinstance(result, AnalogyResult)


def _gensim_vectors(index):
    from gensim.models import KeyedVectors

    ids = np.flatnonzero(index.allowed(TokenFilter.words_only()))
    kv = KeyedVectors(index.dims)
    kv.add_vectors([index.tokens[i] for i in ids], np.asarray(index.raw.unit)[ids])
    return kv, ids


QUESTIONS = [
    ("man", "king", "woman"),
    ("france", "paris", "germany"),
    ("good", "better", "bad"),
    ("walk", "walked", "swim"),
    ("dog", "dogs", "cat"),
    ("big", "bigger", "small"),
    ("athens", "greece", "tokyo"),
    ("boy", "girl", "brother"),
]


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")  # inside gensim's cosmul
@pytest.mark.parametrize("method", METHODS)
def test_matches_gensim_most_similar(index, method):
    """Given the same unit vectors, the top 10 equal gensim's most_similar / most_similar_cosmul (eps 1e-6)."""
    kv, candidates = _gensim_vectors(index)
    rows = {w: index.tokens.index(w) for q in QUESTIONS for w in q}
    terms = np.asarray(index.raw.unit)[[rows[w] for q in QUESTIONS for w in q]]  # (3 * questions, E)
    questions = np.arange(len(terms)).reshape(-1, 3)
    exclude = np.array([[rows[w] for w in q] for q in QUESTIONS])
    epsilon = 1e-6 if method == "3cosmul" else 0.001  # gensim's choice, for the comparison only
    ids, scores = solve_analogies(
        index.raw.unit, candidates, terms, questions, exclude, k=10, method=method, epsilon=epsilon
    )
    unit = np.asarray(index.raw.unit, np.float64)
    cosine = gamma(3 * 384 + 8, EPS32)  # a float32 cosine with up to three unit vectors summed, in any order
    for row, (a, b, c) in enumerate(QUESTIONS):
        if method == "3cosadd":
            expected = kv.most_similar(positive=[b, c], negative=[a], topn=11)
            wobble = cosine
        else:
            expected = kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=11)
            # score = B * C / (A + eps) with shifted cosines (cos + 1) / 2, each within the cosine bound: its relative
            # error is at most the sum of theirs, measured at the answers' own cosines.
            shifted = (unit[ids[row]] @ unit[[rows[a], rows[b], rows[c]]].T + 1) / 2  # (10, 3)
            relative = cosine * (1 / shifted[:, 1] + 1 / shifted[:, 2] + 1 / (shifted[:, 0] + epsilon))
            wobble = float((np.abs(scores[row]) * relative).max()) * 2 + cosine
        assert_same_top(list(zip([index.tokens[i] for i in ids[row]], scores[row], strict=True)), expected, wobble)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: analogy(m, "man", "king", "woman", k=0), "k must be a positive"),
        (lambda m: analogy(m, "man", "king", "woman", k=2.5), "k must be a positive"),
        (lambda m: analogy(m, "man", "king", "woman", method="3cosmax"), "Unknown analogy method"),
        (lambda m: analogy(m, "man", "", "woman"), "has no pieces"),
        (lambda m: analogy(m, "man", "king", 10**6), "out of range"),
        (lambda m: analogy(m, "man", None, "woman"), "must be a string"),
    ],
)
def test_bad_input(default_model, index, call, message):
    with pytest.raises(InputError, match=message):
        call(default_model)
