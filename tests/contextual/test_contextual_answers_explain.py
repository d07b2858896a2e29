"""Contextual answers that explain themselves: the anisotropy baseline beside every cosine, words said to be pooled
from their pieces, vectors shown and not only norms, benchmark coverage, progress on standard error."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from bounds import EPS64, cosine_rounding, gamma

from bertlens.cli import main
from bertlens.contextual import hidden_states, word_vectors
from bertlens.contextual.context import compare_contexts, unrelated_cosine
from bertlens.contextual.contextuality import measure_contextuality
from bertlens.contextual.distill import distill
from bertlens.contextual.pooling import pooling_note
from bertlens.contextual.vectors import preview
from bertlens.similarity.statistics import coverage_warning

BREAD = ["the bread is warm", "I like the bread", "bread and butter, please!"]


def unrelated_oracle(states, word: str, rows=None) -> tuple[np.ndarray, int]:
    """The baseline by its definition, pair by pair: every two words (not `word`, with a letter or digit) from
    different sentences and of different text, each a single piece here; float64 cosines, (layers,) and the count."""
    found = []  # (sentence, text, vectors (layers, D) float64)
    for s, result in enumerate(states):
        words: dict[int, list] = {}
        for token in result.tokens:
            if token.word is not None:
                words.setdefault(token.word, []).append(token)
        for tokens in words.values():
            text = result.text[tokens[0].start : tokens[-1].end].casefold()
            if text == word or not any(c.isalnum() for c in text):
                continue
            assert len(tokens) == 1  # one piece: the pooled vector is the piece's vector, with no rounding
            vector = result.states[:, tokens[0].index] if rows is None else rows[[tokens[0].id]]
            found.append((s, text, vector.astype(np.float64)))
    cosines = [
        (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        for (s, t, a), (r, u, b) in combinations(found, 2)
        if s != r and t != u
    ]
    return np.mean(cosines, axis=0), len(cosines)


def test_baseline_is_the_mean_cosine_of_unrelated_words(default_model):
    result = compare_contexts(default_model, "bread", BREAD)
    states = hidden_states(default_model, BREAD)  # the same batch compare_contexts runs: the same float32 states
    expected, pairs = unrelated_oracle(states, "bread")
    matrix = default_model.embedding_weights.word_embeddings
    at_input, same = unrelated_oracle(states, "bread", rows=np.asarray(matrix))
    assert pairs == same == result.unrelated_pairs
    # "the" is in two sentences: not a pair of unrelated words; "," and "!" are not words.
    assert pairs == 3 * 3 * 3 - 1  # three sentences of three words, less (the, the)
    ours = np.array([s.baseline for s in result.layers])
    # Both sides: float64 cosines of the same float32 vectors (each within cosine_rounding of the exact one), then
    # a mean of `pairs` of them (gamma_pairs of the sum of magnitudes, each at most 1).
    tolerance = 2 * (cosine_rounding(384, EPS64) + gamma(pairs, EPS64))
    assert abs(ours[0] - at_input[0]) <= tolerance
    assert np.all(np.abs(ours[1:] - expected) <= tolerance)
    assert all(0 < b < s.mean_cosine for b, s in zip(ours[1:], result.layers[1:], strict=True))
    data = result.to_dict()
    assert [layer["baseline"] for layer in data["layers"]] == ours.tolist()
    assert "unrelated words" in result.to_table()


def test_baseline_without_unrelated_words_is_said(default_model):
    result = compare_contexts(default_model, "bread", ["bread", "Bread."])
    assert result.unrelated_pairs == 0 and all(np.isnan(s.baseline) for s in result.layers)
    assert result.to_dict()["layers"][1]["baseline"] is None
    assert "no baseline" in result.to_table()


def test_unrelated_cosine_blocks_equal_the_whole():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(7, 2, 5))  # (n, layers, D)
    sentence, word = np.array([0, 0, 1, 1, 2, 2, 2]), np.array([0, 1, 0, 2, 3, 4, 1])
    mean, pairs = unrelated_cosine(vectors, sentence, word)
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    chosen = [(i, j) for i, j in combinations(range(7), 2) if sentence[i] != sentence[j] and word[i] != word[j]]
    assert pairs == len(chosen) == 14
    expected = np.mean([(unit[i] * unit[j]).sum(-1) for i, j in chosen], axis=0)
    assert np.all(np.abs(mean - expected) <= 2 * (cosine_rounding(5, EPS64) + gamma(pairs, EPS64)))
    assert np.isnan(unrelated_cosine(vectors[:1], sentence[:1], word[:1])[0]).all()


def test_a_word_of_pieces_is_said_to_be_pooled(default_model):
    context = compare_contexts(default_model, "qwzx", ["I like qwzx", "qwzx is good"])
    note = "'qwzx' is not a token: its vector is the mean of its 4 pieces' vectors (q ##w ##z ##x)."
    assert context.pooling_notes == (note,) and note in context.to_table()
    assert compare_contexts(default_model, "bread", BREAD).pooling_notes == ()
    words = word_vectors(default_model, "I like qwzx", pool="first")
    assert words.pooling_notes == ("'qwzx' is not a token: its vector is its first piece's vector (of 4 pieces) "
                                   "(q ##w ##z ##x).",)  # fmt: skip
    assert words.to_dict()["pooling_notes"] == list(words.pooling_notes)
    assert pooling_note("bread", ["bread"], "mean") is None


def test_layers_takes_several_texts_and_shows_vectors(capsys, default_model):
    assert main(["layers", "I like qwzx", "a dog", "--words", "--vectors", "3"]) == 0
    out = capsys.readouterr().out
    first = word_vectors(default_model, "I like qwzx").vectors[2]
    assert f"[{' '.join(f'{x:+.4f}' for x in first[:3].tolist())} … (384)]" in out
    assert "'qwzx' is not a token" in out and "dog" in out
    assert main(["layers", "I like qwzx", "a dog", "--words", "--vectors", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["text"] for r in data["results"]] == ["I like qwzx", "a dog"]
    assert np.array_equal(np.array(data["results"][0]["vectors"], np.float32)[2], first)  # in full
    assert main(["layers", "a b", "--vectors", "2", "--layers", "0", "-1"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[2] for line in out.splitlines()[2:8]] == ["0", "6"] * 3  # (token, layer) rows
    assert main(["layers", "a", "--layers", "0"]) == 2
    assert main(["layers", "-", "-"]) == 2 and "only once" in capsys.readouterr().err
    with pytest.raises(Exception, match="dims"):
        preview(word_vectors(default_model, "a"), 0)


def test_layers_writes_the_vectors(capsys, default_model, tmp_path):
    out = tmp_path / "words.npy"
    assert main(["layers", "I like qwzx", "--words", "--out", str(out)]) == 0
    assert "Wrote" in capsys.readouterr().out
    assert np.array_equal(np.load(out), word_vectors(default_model, "I like qwzx").vectors)
    assert main(["layers", "I like qwzx", "--words", "--out", str(out)]) == 2 and "exists" in capsys.readouterr().err
    assert main(["layers", "I like qwzx", "--words", "--out", str(out), "--overwrite"]) == 0
    both = tmp_path / "states.npz"
    assert main(["layers", "a dog", "I like bread", "--out", str(both)]) == 0
    with np.load(both) as saved:
        assert [saved[k].shape for k in ("0", "1")] == [(7, 4, 384), (7, 5, 384)]
        assert np.array_equal(saved["1"], hidden_states(default_model, ["a dog", "I like bread"])[1].states)
    assert main(["layers", "a", "b", "--out", str(tmp_path / "x.npy")]) == 2 and ".npz" in capsys.readouterr().err
    assert main(["layers", "a", "--out", str(tmp_path / "x.txt")]) == 2 and ".npy or .npz" in capsys.readouterr().err
    assert main(["layers", "a", "--overwrite"]) == 2


def test_distill_benchmark_coverage_is_said(capsys, tiny_dirs, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The car was fast.\nA car and an automobile.\nThe automobile is red. A journey by car.\n")
    argv = ["distill", str(corpus), "--benchmark", "mc30", "--model", str(tiny_dirs["bert"]), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "pieces' rows given vectors-pooled" not in out
    assert "of 30 pairs scored" in out and "too few for a reliable score" in out


def test_coverage_warning():
    assert coverage_warning(30, 30) == coverage_warning(353, 353) == []
    assert coverage_warning(5, 65) == [
        "Warning: 5 of 65 pairs scored: too few for a reliable score (its standard error is about 0.75); "
        "not comparable with scores over all 65 pairs."
    ]
    assert coverage_warning(100, 353) == [
        "Warning: 100 of 353 pairs scored: not comparable with scores over all 353 pairs."
    ]


def test_progress_on_standard_error_and_not_in_json(capsys, tiny_models, tiny_dirs, tmp_path):
    texts = ["the cat sat", "a dog ran", "the big cat"]
    distill(tiny_models["bert"], ["cat"], texts, progress=True)
    assert "texts" in capsys.readouterr().err
    measure_contextuality(tiny_models["bert"], texts, words=["cat"], progress=True)
    assert "texts" in capsys.readouterr().err
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n")
    assert main(["distill", str(corpus), "--words", "cat", "--model", str(tiny_dirs["bert"]), "--json"]) == 0
    assert capsys.readouterr().err == ""
