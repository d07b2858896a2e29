"""Static vectors distilled from contexts: averages checked by hand, word2vec output checked with gensim."""

from __future__ import annotations

import json

import numpy as np
import pytest
from bounds import EPS64, float64_twin, float64_wobble, mean_bound, rounded_bound

from bertlens import InputError
from bertlens.contextual import hidden_states, word_vectors
from bertlens.contextual.distill import distill
from bertlens.similarity.benchmarks import benchmark_words
from bertlens.similarity.evaluate import evaluate_pairs

TEXTS = ["the cat sat on the mat", "a dog ran", "the big cat ran", "a cat and a cat", "the house"]


def test_average_of_contexts_one_occurrence_per_text(tiny_models):
    # distill runs its texts as a padded batch, which another CPU sums in another order: compared in float64.
    model = float64_twin(tiny_models["bert"])
    result = distill(model, ["cat", "dog", "tree"], TEXTS, layers=[-1, 0])
    assert result.words == ("cat", "dog", "tree") and result.contexts == (3, 1, 0)
    assert result.missing == ("tree",)
    found = [(word_vectors(model, t, layers=[-1, 0]), i) for t, i in [(TEXTS[0], 1), (TEXTS[2], 2), (TEXTS[3], 1)]]
    contexts = np.array([words.vectors[i] for words, i in found], np.float64)  # (3, H) "cat" alone in each text
    # Each context's vector, alone or batched: two float64 states (float64_wobble apart, either way) rounded to
    # float32, halved and added in float32 (one more rounding): off the exact vector by at most `each`.
    each = []
    for words, i in found:
        assert words.words[i].pieces == ("cat",)  # one piece: pooling it is exact
        states = hidden_states(model, words.text)[0].states  # (L+1, tokens, H)
        pair = states[[-1, 0], words.words[i].token_indices[0]]  # (2, H) the two layers averaged
        each.append(
            rounded_bound(pair, 2 * float64_wobble(np.abs(states).max())).mean(axis=0) + rounded_bound(pair.mean(0))
        )
    expected = contexts.mean(axis=0)
    apart = 2 * np.mean(each, axis=0) + mean_bound(contexts, axis=0, eps=EPS64)  # ours' contexts, the test's, the means
    assert (np.abs(result.as_mapping()["cat"] - expected) <= rounded_bound(expected, apart)).all()


def test_max_contexts_and_word2vec_output(tiny_models, tmp_path):
    from gensim.models import KeyedVectors

    model = tiny_models["bert"]
    out = tmp_path / "vectors.txt"
    result = distill(model, ["cat", "dog"], TEXTS, max_contexts=2, out=out)
    assert result.contexts == (2, 1) and result.out == str(out)
    loaded = KeyedVectors.load_word2vec_format(str(out))
    np.testing.assert_array_equal(loaded["cat"], result.as_mapping()["cat"])
    with pytest.raises(InputError, match="exists"):
        distill(model, ["cat"], TEXTS, out=out)
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.txt"]  # nothing staged left behind


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"words": []}, "No words"),
        ({"words": ["  "]}, "No words"),
        ({"words": ["tree"]}, "None of the 1 words"),
        ({"words": ["cat"], "max_contexts": 0}, "max_contexts"),
        ({"words": ["cat"], "combine": "product"}, "Unknown layer combination"),
        ({"words": ["cat"], "layers": [9]}, "Layer 9 does not exist"),
    ],
)
def test_bad_inputs(tiny_models, kwargs, message):
    with pytest.raises(InputError, match=message):
        distill(tiny_models["bert"], texts=TEXTS, **kwargs)


def test_empty_corpus(tiny_models):
    with pytest.raises(InputError, match="no text"):
        distill(tiny_models["bert"], ["cat"], [])


def test_evaluating_given_vectors(default_model):
    words = benchmark_words(["mc30"])
    assert len(words) == 39 and "car" in words
    rows = {
        w: default_model.embedding_weights.word_embeddings[default_model.vocabulary.token_to_id(w.lower()) or 100]
        for w in words
    }
    given = evaluate_pairs(default_model, "mc30", vectors=rows)
    assert given.pool == "given vectors" and given.pairs_used == 30
    partial = evaluate_pairs(default_model, "mc30", vectors={w: v for w, v in list(rows.items())[:20]})
    assert partial.skipped and all("no vector" in s.reason for s in partial.skipped)


def test_benchmark_words_not_seen_are_named_and_contexts_counted(capsys, tiny_dirs, tmp_path):
    from bertlens.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A car and a boy.\nThe car was red.\nA gem, a jewel and a car.\nThe boy saw a jewel.\n")
    assert main(["distill", str(corpus), "--benchmark", "mc30", "--model", str(tiny_dirs["bert"])]) == 2
    assert "have a word not seen in the corpus" in capsys.readouterr().err  # only gem-jewel scored: no correlation
    corpus.write_text(corpus.read_text() + "An automobile.\n")
    argv = ["distill", str(corpus), "--benchmark", "mc30", "--model", str(tiny_dirs["bert"]), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "no vector given" not in text
    assert "'lad': not seen in the corpus" in text  # boy, lad: boy was seen
    assert "'magician' and 'wizard': not seen in the corpus" in text
    assert "Not seen in the corpus: " in text and "lad" in text.split("Not seen in the corpus: ")[1].split("\n")[0]
    assert "contexts per word seen (min / median / max)  1 / 2 / 3" in text  # automobile, gem 1; boy, jewel 2; car 3
    assert main([*argv, "--json"]) == 0
    distilled, scores = json.loads(capsys.readouterr().out)["results"]
    seen = {w: n for w, n in distilled["contexts_per_word"].items() if n}
    assert seen == {"car": 3, "automobile": 1, "gem": 1, "jewel": 2, "boy": 2}
    assert [s["reason"] for s in scores["skipped"] if s["word1"] == "boy"] == ["'lad': not seen in the corpus"]
