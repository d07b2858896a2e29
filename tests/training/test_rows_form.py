"""Rows that form: category purity against a brute-force count, whole-word masking, a run that trains its own
vocabulary, and the demo preset (tests/test_notebook.py and the README run it, shortened)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bertlens import InputError
from bertlens.cli import main
from bertlens.training import PretrainConfig
from bertlens.training.data import PackedData, SpecialIds, continuation_pieces, tokenize_corpus
from bertlens.training.purity import category_purity, learning_groups, matrix_purity
from bertlens.training.tokenizer_training import TokenizerConfig, trained_tokenizer

WORDS = ["one", "two", "three", "january", "march", "may", "red", "blue", "green", "unbelievably", "photosynthesis"]


def brute_force_purity(rows: np.ndarray, labels: list[int], k: int) -> float:
    """The definition, word by word: the share of its k nearest other rows (cosine, lower index first on ties)
    that carry its label, averaged over words."""
    shares = []
    for i, row in enumerate(rows):
        scored = []
        for j, other in enumerate(rows):
            if j != i:
                cosine = float(row @ other / (np.linalg.norm(row) * np.linalg.norm(other)))
                scored.append((-cosine, j))
        nearest = [j for _, j in sorted(scored)[:k]]
        shares.append(sum(labels[j] == labels[i] for j in nearest) / k)
    return sum(shares) / len(shares)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_category_purity_equals_brute_force(seed: int):
    rng = np.random.default_rng(seed)
    labels = [int(g) for g in rng.integers(0, 4, 40)]
    centres = rng.normal(size=(4, 16))
    rows = centres[labels] * 0.8 + rng.normal(size=(40, 16))  # (40, 16): groups that overlap
    for k in (1, 5):
        found = category_purity(rows, labels, k=k)
        assert found.purity == pytest.approx(brute_force_purity(rows, labels, k), abs=1e-12)
        sizes = np.bincount(labels)
        assert found.chance == pytest.approx(float((sizes * (sizes - 1)).sum() / (40 * 39)))
        assert found.words_used == 40 and sum(found.per_group.values()) > 0


def test_category_purity_extremes_and_bad_inputs():
    islands = np.repeat(np.eye(3), 6, axis=0) + 1e-3 * np.arange(18)[:, None]  # (18, 3): three tight groups
    labels = [g for g in range(3) for _ in range(6)]
    assert category_purity(islands, labels).purity == 1.0
    with pytest.raises(InputError, match="at least two groups"):
        category_purity(islands, [0] * 18)
    with pytest.raises(InputError, match="one label per row"):
        category_purity(islands, labels[:-1])


def test_matrix_purity_uses_the_words_the_vocabulary_holds_as_one_piece():
    ids = {"one": 0, "two": 1, "three": 2, "january": 3, "march": 4, "june": 5, "red": 6, "blue": 7}
    vocabulary = SimpleNamespace(token_to_id=ids.get)  # what a Vocabulary answers

    groups = {"numbers": ("one", "two", "three", "seventeen"), "months": ("january", "march", "june")}
    groups |= {"colours": ("red", "blue")}
    rows = np.random.default_rng(0).normal(size=(8, 4))
    found = matrix_purity(rows, vocabulary, groups, k=2)
    assert found is not None and (found.words_used, found.words_total) == (8, 9)
    assert found.purity == pytest.approx(brute_force_purity(rows, [0, 0, 0, 1, 1, 1, 2, 2], 2))
    assert matrix_purity(rows, vocabulary, {"numbers": ("one", "two", "three")}, k=2) is None  # one group


def test_learning_groups_are_single_pieces_of_a_vocabulary_trained_on_the_sample():
    tokenizer, _ = trained_tokenizer("sample", TokenizerConfig(vocab_size=8000))
    groups = learning_groups()
    assert len(groups) >= 6 and all(len(words) >= 6 for words in groups.values())
    missing = [w for words in groups.values() for w in words if tokenizer.token_to_id(w) is None]
    assert missing == []


def test_whole_word_masking_predicts_every_piece_of_a_chosen_word(tmp_path: Path):
    corpus = tmp_path / "words.txt"
    rng = random.Random(0)
    corpus.write_text("\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(60)) + "\n", encoding="utf-8")
    tokenizer, _ = trained_tokenizer(corpus, TokenizerConfig(vocab_size=60))
    stream = tokenize_corpus(tokenizer, corpus)
    special = SpecialIds.from_tokenizer(tokenizer, tokenizer.get_vocab_size())
    continuation = continuation_pieces(tokenizer, special.vocab_size)
    assert continuation.any()  # the long words are cut into pieces
    data = PackedData(stream, special, 32, False, seed=1, mlm_probability=0.3, continuation=continuation)
    plain = PackedData(stream, special, 32, False, seed=1, mlm_probability=0.3)
    split_words = 0
    for i in range(64):
        block = data.block(i) * data.content
        pieces = np.concatenate([[special.cls], stream.ids[block : block + data.content], [special.sep]])  # (32,)
        inside = continuation[pieces]  # a ## piece belongs to the word of the piece before it …
        inside[1:] &= pieces[:-1] != special.cls  # … unless the sequence cut its word
        chosen = data.sequence(i)[2] >= 0  # labels: -1 where not predicted
        assert (chosen[1:][inside[1:]] == chosen[:-1][inside[1:]]).all()  # whole words only
        split_words += int((chosen[1:][inside[1:]] != (plain.sequence(i)[2] >= 0)[:-1][inside[1:]]).any())
    assert split_words > 0  # piece by piece, words are cut


def test_a_new_run_without_a_tokenizer_trains_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    corpus = tmp_path / "c.txt"
    rng = random.Random(1)
    corpus.write_text("\n".join(" ".join(rng.choices(WORDS, k=20)) for _ in range(40)) + "\n", encoding="utf-8")
    args = ["pretrain", str(corpus), "--out", str(tmp_path / "run"), "--vocab-size", "70", "--hidden-size", "32"]
    args += ["--heads", "2", "--intermediate-size", "64", "--seq-length", "16", "--batch-size", "4", "--max-steps", "4"]
    args += ["--stop-at-step", "2", "--precision", "float32", "--benchmarks", "rg65", "--probe", "one", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["step"] == 2 and result["watch"]["checkpoints"][0]["step"] == 0
    vocab = (tmp_path / "run" / "training" / "tokenizer" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocab) <= 70 and (tmp_path / "run" / "vocab.txt").read_text(encoding="utf-8").splitlines() == vocab
    config = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert config["vocab_size"] == len(vocab)
    assert main(["pretrain", "--out", str(tmp_path / "run"), "--resume", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 4  # the run's own vocabulary on resume


def test_demo_preset_and_its_flags():
    demo = PretrainConfig.preset_config("demo")
    assert (demo.num_hidden_layers, demo.hidden_size, demo.vocab_size) == (2, 128, 8000)
    assert demo.hidden_dropout_prob == 0 and demo.mlm_probability > 0.15
    assert PretrainConfig.preset_config("demo", whole_word_masking=True, tie_word_embeddings=False).check() is None
    with pytest.raises(InputError, match="vocab_size"):
        PretrainConfig.preset_config("demo", vocab_size=0)
