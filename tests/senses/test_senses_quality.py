"""The senses' quality protocols of bench/senses_quality.py, mechanics only (a tiny model, a tiny corpus): sentences
gathered as asked, pseudo-words scored against their hidden identity, WiC pairs read and scored."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from tiny import make_tiny

from bertlens import InputError, load_model

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # the protocols live in their benchmark
from senses_quality import (
    collect,
    pseudo_words,
    purity,
    read_pairs,
    two_way_accuracy,
    wic_agreement,
)

CAT = ["the cat sat on the mat", "a cat ran", "the big cat was red", "it was a cat at night", "the old cat is good"]
DOG = ["the dog sat", "a dog ran to the house", "the small dog was blue", "a new dog that day", "the bad dog ran"]
BOTH = ["the cat and the dog sat"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("tiny") / "bert")))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    file = tmp_path_factory.mktemp("corpus") / "pets.txt"
    lines = [line for pair in zip(CAT * 2, DOG * 2, strict=True) for line in pair] + BOTH + ["the car ran"]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return file


def test_collect_keeps_whole_words_stops_at_the_count_and_skips_shared_sentences(corpus):
    found = collect(corpus, ["cat", "Dog", "car", "banana"], 4, exclusive=True)
    assert found["cat"] == CAT[:4] and found["dog"] == DOG[:4]
    assert found["car"] == ["the car ran"] and found["banana"] == []
    shared = collect(corpus, ["cat", "dog"], 100)
    assert "the cat and the dog sat" in shared["cat"] and "the cat and the dog sat" in shared["dog"]


def test_pseudo_words_score_every_layer_against_the_hidden_word(tiny, corpus):
    result = pseudo_words(tiny, corpus, [("cat", "dog")], per_word=10)
    (pair,) = result.pairs
    assert pair.occurrences == (10, 10)  # as many of each word: chance is 0.5
    assert sorted(result.accuracy) == [0, 1, 2]
    for layer in result.accuracy:
        assert 0.5 <= pair.accuracy[layer] <= 1 and 0.5 <= pair.auto_purity[layer] <= 1
        assert pair.auto_k[layer] >= 1 and all(k >= 1 for k in pair.alone_k[layer])
    assert result.to_dict()["pairs"][0]["first"] == "cat"
    with pytest.raises(InputError, match="fewer than 6"):
        pseudo_words(tiny, corpus, [("cat", "car")], per_word=10)


def test_wic_pairs_are_read_and_scored(tiny, corpus, tmp_path):
    data, gold = tmp_path / "x.data.txt", tmp_path / "x.gold.txt"
    data.write_text("cat\tN\t1-3\tthe cat sat .\tit was a cat .\ndog\tN\t1-1\tthe dog ran\ta dog sat\n")
    gold.write_text("T\nF\n")
    assert read_pairs(data, gold)[0] == ("cat", 1, 3, "the cat sat .", "it was a cat .", True)
    result = wic_agreement(tiny, data, gold, corpus, per_word=10)
    assert result.pairs == 2 and result.skipped == 0 and result.gold_same == 0.5
    for layer in result.auto:
        assert result.auto[layer] in (0.0, 0.5, 1.0) and result.two[layer] in (0.0, 0.5, 1.0)
    gold.write_text("T\n")
    with pytest.raises(InputError, match="same length"):
        read_pairs(data, gold)


def test_purity_and_accuracy_match_sklearn():
    from sklearn.metrics import accuracy_score
    from sklearn.metrics.cluster import contingency_matrix

    rng = np.random.default_rng(0)
    labels, gold = rng.integers(0, 3, 50), rng.integers(0, 2, 50)
    assert purity(labels, gold) == pytest.approx(contingency_matrix(gold, labels).max(axis=0).sum() / 50)
    two = rng.integers(0, 2, 50)
    assert two_way_accuracy(two, gold) == pytest.approx(max(accuracy_score(gold, two), accuracy_score(gold, 1 - two)))
