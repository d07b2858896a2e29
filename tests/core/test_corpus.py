"""Corpus reading and Ethayarajh's contextuality measures."""

from __future__ import annotations

import numpy as np
import pytest
from bounds import (
    EPS32,
    EPS64,
    cosine_rounding,
    direction_shift,
    float64_twin,
    float64_wobble,
    gamma,
    mean_bound,
    rounded_bound,
)

from bertlens import InputError
from bertlens.contextual.contextuality import measure_contextuality
from bertlens.contextual.states import hidden_states
from bertlens.core.corpus import corpus_files, iter_texts, sentences


def test_plain_file_wikitext_headings_and_blank_lines(tmp_path):
    file = tmp_path / "wiki.txt"
    file.write_text(" = Title = \n\n First paragraph . \n = = Section = = \nSecond one.\n", encoding="utf-8")
    assert [(t.line, t.text) for t in iter_texts(file)] == [(3, "First paragraph ."), (5, "Second one.")]


def test_folder_of_wikiextractor_files_in_order_hidden_skipped(tmp_path):
    (tmp_path / "AB").mkdir()
    (tmp_path / "AA").mkdir()
    (tmp_path / "AB" / "wiki_00").write_text('<doc id="2" title="B">\nB\nText b.\n</doc>\n')
    (tmp_path / "AA" / "wiki_00").write_text('<doc id="1" title="A">\nA\nText a.\n</doc>\n')
    (tmp_path / ".hidden").write_text("secret\n")
    assert [t.text for t in iter_texts(tmp_path)] == ["A", "Text a.", "B", "Text b."]
    assert [p.parent.name for p in corpus_files(tmp_path)] == ["AA", "AB"]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "holds no text"), (b"\n\n  \n", "holds no text"), (b"ok\nbad \xff byte\n", "line 2: not valid UTF-8")],
)
def test_bad_corpora(tmp_path, content, message):
    file = tmp_path / "c.txt"
    file.write_bytes(content)
    with pytest.raises(InputError, match=message):
        list(iter_texts(file))


def test_missing_corpus_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="No such file"):
        list(iter_texts(tmp_path / "nope"))
    with pytest.raises(InputError, match="holds no files"):
        list(iter_texts(tmp_path))


def test_sentence_split():
    assert sentences("It rained. Then it stopped! Was it 3 p.m.? 42 people came.") == [
        "It rained.",
        "Then it stopped!",
        "Was it 3 p.m.?",
        "42 people came.",
    ]


def test_identical_contexts_have_self_similarity_one(tiny_models):
    # Two rows of one padded batch need not sum alike on every CPU, so in float64: each "cat" vector is a float64
    # state (float64_wobble from the exact one) rounded to float32, and 1 - cos = |u1 - u2|^2 / 2 for unit vectors.
    model = float64_twin(tiny_models["bert"])
    texts = ["the cat sat on the mat", "the cat sat on the mat", "a dog ran in the house"]
    result = measure_contextuality(model, texts, words=["cat"])
    assert result.words == ("cat",) and result.occurrences == 2
    cat = hidden_states(model, texts)[0].states[:, 2]  # (L+1, H) [CLS] the cat: the same call, the same bits
    for layer, vector in zip(result.layers, cat, strict=True):
        apart = np.linalg.norm(2 * rounded_bound(vector, float64_wobble(np.abs(vector).max())))
        bound = float(direction_shift(apart, np.linalg.norm(vector))) ** 2 / 2 + 4 * cosine_rounding(len(vector), EPS64)
        assert abs(layer.self_similarity - 1.0) <= bound
        assert abs(layer.adjusted_self_similarity - (1.0 - layer.baseline)) <= bound + 2 * EPS64 * (1 + layer.baseline)


def test_measures_against_a_direct_computation(tiny_models):
    model = tiny_models["bert"]
    texts = ["the cat sat", "a cat ran", "the big cat sat on the mat"]
    result = measure_contextuality(model, texts, words=["cat"])
    states = hidden_states(model, texts)
    cats = [s.states[:, next(t.index for t in s.tokens if t.piece == "cat")] for s in states.results]  # (L+1, H)
    unit = [c / np.linalg.norm(c, axis=-1, keepdims=True) for c in np.asarray(cats, np.float64)]
    expected = np.mean([(unit[i] * unit[j]).sum(-1) for i in range(3) for j in range(3) if i < j], axis=0)
    # The same states (the same call); both in float64: each cosine within cosine_rounding, the library's 3 x 3 gram
    # less its trace doubles that ((n + 1) / (n - 1)), the test's mean of three adds one: 4 covers both and the sums.
    self_similarity = np.array([layer.self_similarity for layer in result.layers])
    assert (np.abs(self_similarity - expected) <= 4 * cosine_rounding(cats[0].shape[-1] + 9, EPS64)).all()
    per_text, bounds = [], []
    for s in states.results:  # every word of these texts is one piece: its token's vector
        words = s.states[:, 1:-1]  # (L+1, words, H) float32, specials dropped
        wide = words.astype(np.float64)
        centre = wide.mean(axis=1, keepdims=True)
        cosines = (wide * centre).sum(-1) / np.linalg.norm(wide, axis=-1) / np.linalg.norm(centre, axis=-1)
        per_text.append(cosines.mean(axis=1))  # (L+1,)
        # The library works in float32: its mean turns the centre by at most direction_shift of the mean's error,
        # each word's cosine rounds by cosine_rounding, and the mean over the words by gamma.
        off = np.linalg.norm(mean_bound(words, axis=1), axis=-1)  # (L+1,)
        turn = direction_shift(off, np.linalg.norm(centre[:, 0], axis=-1))  # (L+1,)
        bounds.append(turn + cosine_rounding(words.shape[-1], EPS32) + gamma(words.shape[1] + 1, EPS32))
    intra = np.array([layer.intra_sentence for layer in result.layers])
    assert (np.abs(intra - np.mean(per_text, 0)) <= np.mean(bounds, 0) + gamma(len(bounds), EPS32)).all()


def test_contextuality_errors(tiny_models):
    model = tiny_models["bert"]
    with pytest.raises(InputError, match="at least two texts"):
        measure_contextuality(model, ["the cat"])
    with pytest.raises(InputError, match="None of the words"):
        measure_contextuality(model, ["the cat", "a dog"], words=["house"])
    with pytest.raises(InputError, match="max_contexts"):
        measure_contextuality(model, ["the cat", "a cat"], max_contexts=1)
