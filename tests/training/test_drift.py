"""Embedding drift of a continued run: a tiny untied BERT continued on a text that leaves some tokens out. Absent
tokens' rows stay bit for bit, the report's buckets, rows, neighbours, overlaps and parts equal a brute-force numpy
computation from the two safetensors files and `spaces.diff`'s answer for the same token, a frozen matrix does not
move, a run from scratch has no drift, and `watch --json` carries it."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import ADJECTIVES, NOUNS, VERBS, tiny

from bertlens import InputError, ModelNotFoundError, load_model
from bertlens.cli import main
from bertlens.spaces import diff
from bertlens.spaces.frequency import BUCKETS
from bertlens.spaces.neighbours import unit_rows
from bertlens.training import TokenizerConfig, pretrain, train_tokenizer
from bertlens.training.drift import embedding_drift, run_drift
from bertlens.training.drift_report import drift_section, drift_text

LEFT_OUT = ["piano", "violin", "guitar", "trumpet", "drum", "flute"]  # in the tokenizer's text, never in the new one


def write_text(file: Path, words: list[str], lines: int, seed: int) -> Path:
    rng = random.Random(seed)
    rows = [
        f"The {rng.choice(ADJECTIVES)} {rng.choice(words)} {rng.choice(VERBS)} the {rng.choice(ADJECTIVES)} "
        f"{rng.choice(words)}."
        for _ in range(lines)
    ]
    file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return file


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("drift-texts")
    return {
        "old": write_text(folder / "old.txt", NOUNS + LEFT_OUT, 120, 0),
        "new": write_text(folder / "new.txt", NOUNS, 40, 1),  # about one pass in the steps below
    }


@pytest.fixture(scope="module")
def base_model(texts: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertForMaskedLM with an untied decoder, built from a config and saved in Hugging Face layout."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = tmp_path_factory.mktemp("drift-tokenizer")
    train_tokenizer(texts["old"], tokenizer, TokenizerConfig(vocab_size=120))
    folder = tmp_path_factory.mktemp("drift-base") / "base"
    vocab = len((tokenizer / "vocab.txt").read_text(encoding="utf-8").splitlines())
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(folder)  # model.safetensors
    for file in tokenizer.iterdir():
        shutil.copy(file, folder / file.name)
    return folder


def continued(base: Path, text: Path, out: Path, **overrides: object) -> Path:
    values: dict[str, object] = dict(init_from=str(base), random_ratio=0.0, max_steps=4, watch=False, seed=3)
    pretrain(tiny(**(values | overrides)), text, out)
    return out


@pytest.fixture(scope="module")
def run(base_model: Path, texts: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return continued(base_model, texts["new"], tmp_path_factory.mktemp("drift-run") / "run", watch=True)


def rows_of(folder: Path, name: str = "bert.embeddings.word_embeddings.weight") -> np.ndarray:
    from safetensors.numpy import load_file

    tensors = load_file(str(folder / "model.safetensors"))
    return tensors[name if name in tensors else name.removeprefix("bert.")]


def brute_counts(base: Path, text: Path, rows: int) -> np.ndarray:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    ids = [i for line in text.read_text().splitlines() for i in tokenizer.encode(line, add_special_tokens=False).ids]
    return np.bincount(ids, minlength=rows)


def compared_rows(base: Path) -> np.ndarray:
    """(rows,) bool: rows the report compares (no special tokens, no [unused] rows)."""
    tokens = (base / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return np.array([not (t.startswith("[") and t.endswith("]")) for t in tokens])


def fed_tokens(base: Path, text: Path, sequences: int) -> set[int]:
    """The ids the run's batches fed as inputs (after masking), replayed from the same packed data."""
    from tokenizers import Tokenizer

    from bertlens.training.data import PackedData, SpecialIds, tokenize_corpus

    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    special = SpecialIds.from_tokenizer(tokenizer, tokenizer.get_vocab_size())
    data = PackedData(tokenize_corpus(tokenizer, text), special, 32, False, 3, random_ratio=0.0)
    return {int(i) for n in range(sequences) for i in data.sequence(n)[0]}


def test_absent_tokens_rows_stay_bit_for_bit_with_untied_weights(base_model, texts, run):
    before, after = rows_of(base_model), rows_of(run)
    counts = brute_counts(base_model, texts["new"], len(before))
    kept = compared_rows(base_model)
    fed = np.zeros(len(before), bool)
    fed[list(fed_tokens(base_model, texts["new"], 4 * 4))] = True  # 4 steps of 4 sequences
    absent = kept & (counts == 0)
    assert absent.sum() >= 20 and (kept & fed).sum() >= 20 and not (fed & absent).any()
    assert np.array_equal(after[absent], before[absent])  # not a single bit moved
    assert np.array_equal(after[kept & ~fed], before[kept & ~fed])  # nor any row whose token no batch fed as input
    assert np.all(np.any(after[kept & fed] != before[kept & fed], axis=1))  # every row a batch fed moved
    drift = embedding_drift(run)
    assert drift is not None and not drift.tied and drift.embeddings == "trainable"
    first = drift.buckets[0]
    assert first["label"].startswith("absent") and first["rows"] == absent.sum()
    assert first["max"] == 0.0 and first["unchanged"] == first["rows"]
    assert drift.unchanged == (kept & ~fed).sum()


def brute_sets(matrix: np.ndarray, k: int) -> np.ndarray:
    """(rows, k) each row's k nearest other rows by float64 cosine of its float32 unit row, ties by the smaller id."""
    unit = unit_rows(matrix).astype(np.float64)
    scores = unit @ unit.T
    np.fill_diagonal(scores, -np.inf)
    ids = np.broadcast_to(np.arange(len(unit)), scores.shape)
    return np.lexsort((ids, -scores), axis=1)[:, :k]


def test_drift_equals_brute_force_numpy(base_model, texts, run):
    before, after = rows_of(base_model).astype(np.float64), rows_of(run).astype(np.float64)
    counts = brute_counts(base_model, texts["new"], len(before))
    kept = compared_rows(base_model)  # [PAD], all zeros in a new model, is one of the rows left out
    change = np.linalg.norm(after - before, axis=1) / np.maximum(np.linalg.norm(before, axis=1), 1e-300)
    drift = embedding_drift(run, top=4, k=3)
    assert drift is not None and drift.text_tokens == counts.sum() + 40  # a [SEP] after every text (line)
    tokens = (base_model / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert not any(t.startswith("[unused") for t in tokens)  # every row is compared, specials too
    near_before, near_after = brute_sets(rows_of(base_model), 3), brute_sets(rows_of(run), 3)
    common = [len(set(a) & set(b)) for a, b in zip(near_before, near_after, strict=True)]
    overlap = np.array([c / (6 - c) for c in common])  # (rows,) Jaccard of two sets of 3
    assert drift.k == 3 and drift.overlap_mean == pytest.approx(overlap.mean(), rel=1e-12)
    for bucket, (least, most, label) in zip(drift.buckets, BUCKETS, strict=True):
        inside = kept & (counts >= least) & (counts <= (most if most is not None else counts.max()))
        assert (bucket["label"], bucket["rows"]) == (label, inside.sum())
        if inside.any():
            values = change[inside]
            assert bucket["max"] == pytest.approx(values.max(), rel=1e-12)
            assert bucket["mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert bucket["median"] == pytest.approx(np.median(values), rel=1e-12)
            assert bucket["overlap"] == pytest.approx(overlap[inside].mean(), rel=1e-12)
    order = [i for i in np.argsort(-change) if kept[i]][:4]
    assert [t["id"] for t in drift.top] == order
    assert [t["count"] for t in drift.top] == [counts[i] for i in order]
    assert [t["id"] for t in drift.top_in_text] == [i for i in np.argsort(-change) if kept[i] and counts[i]][:4]
    spaces = diff(load_model(base_model), load_model(run), k=3)  # what `bertlens diff BASE RUN -k 3` answers
    for row in drift.top + drift.top_in_text:
        assert {tokens.index(t) for t in row["before"]} == set(near_before[row["id"]])
        assert {tokens.index(t) for t in row["after"]} == set(near_after[row["id"]])
        assert row["overlap"] == overlap[row["id"]]
        same = spaces.token(row["token"])
        assert row["before"] == [n.token for n in same.neighbours_a]
        assert row["after"] == [n.token for n in same.neighbours_b] and row["overlap"] == same.overlap
    parts = {g["name"]: g for g in drift.groups}
    assert parts["word_embeddings"]["change"] == pytest.approx(
        np.linalg.norm(after - before) / np.linalg.norm(before), rel=1e-9
    )
    from safetensors.numpy import load_file

    old, new = (
        {n: t.astype(np.float64) for n, t in load_file(str(f / "model.safetensors")).items()} for f in (base_model, run)
    )
    feed_forward = [
        n for n in old if n.startswith(("bert.encoder.layer.1.intermediate.", "bert.encoder.layer.1.output."))
    ]
    assert len(feed_forward) == 6  # two dense layers' weights and biases, and a LayerNorm's
    squares = [(np.sum((new[n] - old[n]) ** 2), np.sum(old[n] ** 2)) for n in feed_forward]
    expected = np.sqrt(sum(d for d, _ in squares)) / np.sqrt(sum(o for _, o in squares))
    assert parts["layer 1 feed-forward"]["change"] == pytest.approx(expected, rel=1e-9)
    assert parts["MLM head"]["change"] > 0 and parts["position_embeddings"]["change"] > 0


def test_frozen_rows_do_not_move_and_scratch_runs_have_no_drift(base_model, texts, tmp_path):
    frozen = embedding_drift(continued(base_model, texts["new"], tmp_path / "frozen", embeddings="frozen", max_steps=2))
    assert frozen is not None and frozen.overall == 0.0 and frozen.unchanged == frozen.rows_compared
    assert all(b["max"] in (0.0, None) for b in frozen.buckets) and frozen.overlap_mean == 1.0
    assert all(b["overlap"] in (1.0, None) for b in frozen.buckets)
    assert all(row["before"] == row["after"] and row["overlap"] == 1.0 for row in frozen.top)
    parts = {g["name"]: g["change"] for g in frozen.groups}
    assert parts["word_embeddings"] == 0.0 and parts["layer 0 attention"] > 0  # the rest of the model trained
    scratch = tmp_path / "scratch"
    pretrain(tiny(max_steps=1, watch=False), texts["new"], scratch, tokenizer=base_model)
    assert embedding_drift(scratch) is None


def test_watch_json_and_page_carry_the_drift(run, tmp_path, capsys):
    assert main(["watch", str(run), "--json", "--out", str(tmp_path / "report")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["drift"]["buckets"][0]["label"].startswith("absent") and data["drift"]["buckets"][0]["max"] == 0.0
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "<section id=drift>" in page and "nearest before" in page
    saved = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert saved["drift"] == data["drift"]
    assert "overlap" in page and "bertlens diff" in page
    section = drift_section(data["drift"])
    assert section.count("<svg") == 3 and "<script" not in section
    text = main(["watch", str(run), "--out", str(tmp_path / "text")])
    assert text == 0 and "neighbour overlap (Jaccard of the 10 nearest" in capsys.readouterr().out


def test_rows_are_listed_once_when_the_most_moved_are_all_the_new_texts(run):
    drift = run_drift(run)
    assert drift is not None and drift["top"]
    same = drift | {"top_in_text": drift["top"]}  # every row that moved most is a token of the new text
    for shown in (drift_text(same), drift_section(same)):
        assert "new text's tokens that moved most" in shown and "Rows of the new text's tokens" not in shown
    text = drift_text(same)
    first = next(line for line in text.splitlines() if line.startswith(f"{drift['top'][0]['token']} "))
    assert text.count(first) == 1  # its row printed once
    other = drift | {"top_in_text": drift["top"][1:]}
    for shown in (drift_text(other), drift_section(other)):
        assert shown.count("Rows of the new text's tokens that moved most") == 1


def test_moved_model_is_named_with_what_to_do(base_model, run, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(base_model, moved)
    config = json.loads((run / "training" / "pretrain_config.json").read_text())
    gone = tmp_path / "gone"
    copy = tmp_path / "run-copy"
    shutil.copytree(run, copy)
    (copy / "training" / "pretrain_config.json").write_text(json.dumps(config | {"init_from": str(gone)}))
    with pytest.raises(ModelNotFoundError, match="cannot be loaded") as error:
        embedding_drift(copy)
    assert "init_from=FOLDER" in error.value.hint
    failed = run_drift(copy)  # the watch report says so, and shows the rest
    assert failed is not None and "cannot be loaded" in failed["error"]
    assert "cannot be loaded" in drift_text(failed) and "cannot be loaded" in drift_section(failed)
    assert embedding_drift(copy, init_from=moved) is not None
    with pytest.raises(InputError, match="top must be"):
        embedding_drift(run, top=0)
