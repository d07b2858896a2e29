"""Training: WordPiece tokenizer, packed and masked data, the pre-training loop (resume, DDP, continued training),
the watcher and its report. Tiny models (2 layers x 32) on a few KB of generated text, a few steps each."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from bounds import EPS32, EPS64, cosine_rounding, float64_wobble, gamma, rounded_bound, spearman_bound
from tiny_runs import TINY_SHAPE, tiny, weights

from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.training import PretrainConfig, TokenizerConfig, pretrain, train_tokenizer, watch_report
from bertlens.training.data import PackedData, SpecialIds, tokenize_corpus
from bertlens.training.optimizer import learning_rate


@pytest.fixture(scope="module")
def trained(paragraphs: Path, paragraphs_tokenizer: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished tiny run with validation and watching (checkpoints at 4 and 8)."""
    out = tmp_path_factory.mktemp("run") / "tiny-bert"
    result = pretrain(tiny(checkpoint_every=4), paragraphs, out, tokenizer=paragraphs_tokenizer, validation=paragraphs)
    assert result.step == 8 and result.stopped == "finished"
    assert result.validation_perplexity is not None and result.validation_perplexity > 1
    return out


# --- tokenizer ------------------------------------------------------------------------------------------------------


def test_tokenizer_matches_transformers(paragraphs_tokenizer: Path):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(paragraphs_tokenizer))
    text, pair = "The big Dog sat.", "A red car"
    encoded = hf(text, pair)
    vocab = (paragraphs_tokenizer / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(vocab) == hf.vocab_size <= 120
    assert encoded["input_ids"][0] == hf.cls_token_id == 2 and hf.mask_token_id == 4
    assert set(encoded["token_type_ids"]) == {0, 1}
    from tokenizers import Tokenizer

    ours = Tokenizer.from_file(str(paragraphs_tokenizer / "tokenizer.json")).encode(text, pair)
    assert ours.ids == encoded["input_ids"] and ours.type_ids == encoded["token_type_ids"]
    assert hf.convert_ids_to_tokens(hf("dog")["input_ids"]) == ["[CLS]", "dog", "[SEP]"]  # lower-cased


def test_tokenizer_bad_inputs(paragraphs: Path, tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no text"):
        train_tokenizer(empty, tmp_path / "a")
    with pytest.raises(InputError, match="no room beside the 5 special tokens"):
        train_tokenizer(paragraphs, tmp_path / "b", TokenizerConfig(vocab_size=5))
    with pytest.raises(InputError, match="more than the 12 asked for"):
        train_tokenizer(paragraphs, tmp_path / "c", TokenizerConfig(vocab_size=12))
    with pytest.raises(InputError, match=r"lack \[MASK\]"):
        train_tokenizer(
            paragraphs, tmp_path / "d", TokenizerConfig(special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]"))
        )
    assert not any((tmp_path / name).exists() for name in "abcd")  # nothing half-written
    train_tokenizer(paragraphs, tmp_path / "e", TokenizerConfig(vocab_size=100))
    with pytest.raises(InputError, match="already holds"):
        train_tokenizer(paragraphs, tmp_path / "e", TokenizerConfig(vocab_size=100))


# --- config and data ------------------------------------------------------------------------------------------------


def test_config_round_trip_and_presets(tmp_path: Path):
    config = PretrainConfig.preset_config("mini", max_steps=7, probe_words=("a", "b"))
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (4, 256, 4)
    config.save(tmp_path / "c.json")
    assert PretrainConfig.load(tmp_path / "c.json") == config
    assert PretrainConfig.preset_config("base").intermediate_size == 3072
    with pytest.raises(InputError, match="Unknown pre-training config field"):
        PretrainConfig.from_dict({"hidden": 3})
    with pytest.raises(InputError, match="Unknown preset"):
        PretrainConfig.preset_config("huge")
    with pytest.raises(InputError, match="longer than the position table"):
        PretrainConfig(seq_length=600).check()
    with pytest.raises(InputError, match="not a multiple"):
        PretrainConfig(hidden_size=100, num_attention_heads=3).check()


def test_learning_rate_schedule():
    config = PretrainConfig(learning_rate=1.0, warmup_steps=4, max_steps=14)
    rates = [learning_rate(config, s) for s in range(14)]
    assert rates[:4] == [0.25, 0.5, 0.75, 1.0]
    assert rates[4] == 1.0 and rates[9] == 0.5 and rates[13] == 0.1  # 1.0 * (5 / 10), 1.0 * (1 / 10): correctly rounded
    assert learning_rate(PretrainConfig(learning_rate=1.0, warmup_steps=0, schedule="constant"), 99) == 1.0


def test_packed_sequences_and_masks(paragraphs: Path, paragraphs_tokenizer: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(paragraphs_tokenizer / "tokenizer.json"))
    stream = tokenize_corpus(tokenizer, paragraphs)
    special = SpecialIds.from_tokenizer(tokenizer, tokenizer.get_vocab_size())
    assert stream.texts == 80 and int((stream.ids == special.sep).sum()) == 80  # [SEP] after every text
    data = PackedData(stream, special, 32, False, seed=3)
    assert data.blocks == len(stream) // 30
    batch = data.batch(0, 64)
    ids = batch.input_ids
    assert ids.shape == (64, 32) and not (ids == special.pad).any()  # packed: never a padding token
    assert (ids[:, 0] == special.cls).all() and (ids[:, -1] == special.sep).all()
    share = len(batch.positions) / (64 * 30)
    assert 0.10 < share < 0.20  # about 15% of the tokens are predicted
    originals = np.concatenate([stream.ids[data.block(i) * 30 : data.block(i) * 30 + 30] for i in range(64)])
    rows, cols = np.divmod(batch.positions.numpy(), 32)
    assert np.array_equal(batch.labels.numpy(), originals[rows * 30 + cols - 1])  # labels are the original ids
    replaced = ids.reshape(-1)[batch.positions]
    masked = (replaced == special.mask).float().mean().item()
    assert 0.65 < masked < 0.95  # 80% [MASK], the rest random or unchanged
    again = PackedData(stream, special, 32, False, seed=3).batch(5, 3)  # any slice, any order: the same sequences
    assert torch.equal(again.input_ids, batch.input_ids[5:8])
    pairs = PackedData(stream, special, 32, True, seed=3).batch(0, 32)
    types = pairs.token_type_ids
    assert set(pairs.next_sentence.tolist()) == {0, 1}
    assert (types[:, 0] == 0).all() and (types[:, -1] == 1).all()
    assert ((pairs.input_ids == special.sep).sum(dim=1) >= 2).all()
    assert (types.diff(dim=1) >= 0).all()  # 0 then 1: segment A, then segment B


# --- the loop -------------------------------------------------------------------------------------------------------


def test_saved_model_loads_in_transformers_and_bertlens(trained: Path):
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    mlm = AutoModelForMaskedLM.from_pretrained(str(trained)).eval()
    assert type(mlm).__name__ == "BertForMaskedLM"
    base = AutoModel.from_pretrained(str(trained)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(trained))
    inputs = tokenizer("The big dog sat on the red mat.", return_tensors="pt")
    with torch.no_grad():
        hidden = base(**inputs).last_hidden_state
        full = mlm(**inputs, output_hidden_states=True)
    assert torch.equal(
        full.hidden_states[-1], hidden
    )  # the same BertModel weights and inputs: the same kernels and bits
    # our loss (vocabulary projection on the chosen rows only) equals BertForMaskedLM's own loss
    from bertlens.training.objective import objective_module

    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 2:5] = inputs["input_ids"][0, 2:5]
    # In float64 our head on the chosen rows and BertForMaskedLM's on all rows agree to float64_wobble (another batch
    # shape sums in another order); ours then rounds the logits to float32 and takes the cross-entropy in float32:
    # a row's log-sum-exp moves by at most its largest logit's rounding, its exps, sum, log and difference by
    # gamma_(V+5) of (1 + |lse| + |loss|), and the three rows' sum by gamma_3 (Higham, in any order).
    net = copy.deepcopy(mlm).double()
    with torch.no_grad():
        reference = net(**inputs, labels=labels).loss
        ours, _ = objective_module(net, False)(
            inputs["input_ids"], inputs["token_type_ids"], torch.tensor([2, 3, 4]), inputs["input_ids"][0, 2:5], None
        )
        logits = net(**inputs).logits[0, 2:5].numpy()  # (3, V) float64
    wobble = float64_wobble(float(np.abs(logits).max()))
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)  # (3,)
    losses = lse - logits[np.arange(3), inputs["input_ids"][0, 2:5].numpy()]  # (3,)
    rows = 2 * rounded_bound(logits, wobble).max(axis=1) + gamma(logits.shape[1] + 5, EPS32) * (
        1 + abs(lse) + abs(losses)
    )
    assert abs(float(ours) / 3 - float(reference)) <= (rows.sum() + gamma(3, EPS32) * losses.sum()) / 3
    model = load_model(str(trained))
    assert model.config.hidden_size == 32 and model.matrix_rows == tokenizer.vocab_size
    assert np.array_equal(
        model.embedding_weights.word_embeddings, base.embeddings.word_embeddings.weight.detach().numpy()
    )
    code = main(["neighbors", "king", "-k", "3", "--model", str(trained), "--json"])
    assert code == 0


def test_resume_equals_uninterrupted_run(paragraphs: Path, paragraphs_tokenizer: Path, tmp_path: Path):
    config = tiny(max_steps=7, watch=False)  # dropout on (0.1): its RNG must be restored too
    pretrain(config, paragraphs, tmp_path / "whole", tokenizer=paragraphs_tokenizer)
    first = pretrain(
        tiny(max_steps=7, watch=False, stop_at_step=3), paragraphs, tmp_path / "split", tokenizer=paragraphs_tokenizer
    )
    assert (first.step, first.stopped) == (3, "stop_at_step")
    second = pretrain(config, paragraphs, tmp_path / "split", tokenizer=paragraphs_tokenizer, resume=True)
    assert (second.step, second.resumed_from, second.stopped) == (7, 3, "finished")
    whole, split = weights(tmp_path / "whole"), weights(tmp_path / "split")
    assert whole.keys() == split.keys()
    for name in whole:
        assert torch.equal(whole[name], split[name]), name  # bit for bit
    logged = [json.loads(line)["step"] for line in (tmp_path / "split/training/log.jsonl").read_text().splitlines()]
    assert logged == sorted(set(logged))  # no step logged twice across the interruption


def test_run_folder_errors(paragraphs: Path, paragraphs_tokenizer: Path, trained: Path, tmp_path: Path):
    with pytest.raises(InputError, match="already holds a run"):
        pretrain(tiny(), paragraphs, trained, tokenizer=paragraphs_tokenizer)
    with pytest.raises(InputError, match="comes from another config.*seq_length"):
        pretrain(
            tiny(seq_length=16, checkpoint_every=4), paragraphs, trained, tokenizer=paragraphs_tokenizer, resume=True
        )
    with pytest.raises(InputError, match="no checkpoint to resume"):
        pretrain(tiny(), paragraphs, tmp_path / "new", tokenizer=paragraphs_tokenizer, resume=True)
    with pytest.raises(InputError, match="more than the 12 asked for"):  # the vocabulary a run without one trains
        pretrain(tiny(vocab_size=12), paragraphs, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="holds no text"):
        pretrain(tiny(), empty, tmp_path / "new", tokenizer=paragraphs_tokenizer)
    with pytest.raises(InputError, match="fewer than one sequence"):
        pretrain(tiny(seq_length=64), paragraphs, tmp_path / "new2", tokenizer=paragraphs_tokenizer, max_texts=1)
    with pytest.raises(InputError, match="longer than the model's position table"):
        pretrain(tiny(init_from=str(trained), seq_length=128, max_position_embeddings=512), paragraphs, tmp_path / "x")


def test_continue_with_only_new_rows_trainable(paragraphs: Path, trained: Path, tmp_path: Path):
    before = weights(trained)["bert.embeddings.word_embeddings.weight"]
    config = tiny(init_from=str(trained), embeddings="new-rows", new_rows_from=100, max_steps=3, watch=False)
    pretrain(config, paragraphs, tmp_path / "rows")
    after = weights(tmp_path / "rows")["bert.embeddings.word_embeddings.weight"]
    assert torch.equal(after[:100], before[:100])  # old rows untouched, bit for bit
    assert not torch.equal(after[100:], before[100:])
    frozen = tiny(init_from=str(trained), embeddings="frozen", max_steps=2, watch=False)
    pretrain(frozen, paragraphs, tmp_path / "frozen")
    moved = weights(tmp_path / "frozen")
    assert torch.equal(moved["bert.embeddings.word_embeddings.weight"], before)
    assert not torch.equal(
        moved["bert.encoder.layer.0.output.dense.weight"], weights(trained)["bert.encoder.layer.0.output.dense.weight"]
    )


@pytest.mark.slow  # two fresh processes join a gloo group
def test_two_process_gloo_run_equals_one_process(paragraphs: Path, paragraphs_tokenizer: Path, tmp_path: Path):
    """torchrun, 2 CPU processes x 2 sequences == 1 process x 4 sequences (no dropout, so only rounding differs)."""
    common = [
        "--seq-length",
        "32",
        "--max-steps",
        "3",
        "--warmup-steps",
        "1",
        *TINY_SHAPE,
        "--dropout",
        "0",
        "--attention-dropout",
        "0",
        "--precision",
        "float32",
        "--threads",
        "1",
        "--no-watch",
        "--no-progress",
        "--tokenizer",
        str(paragraphs_tokenizer),
        "--json",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "bertlens",
            "pretrain",
            str(paragraphs),
            "--out",
            str(tmp_path / "ddp"),
            "--batch-size",
            "2",
            *common,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    reports = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(reports) == 2 and all(r["processes"] == 2 and r["step"] == 3 for r in reports)  # both finished
    assert main(["pretrain", str(paragraphs), "--out", str(tmp_path / "one"), "--batch-size", "4", *common]) == 0
    two, one = weights(tmp_path / "ddp"), weights(tmp_path / "one")
    for name in one:
        assert torch.allclose(two[name], one[name], atol=1e-5), name


# --- the watcher and the CLI ----------------------------------------------------------------------------------------


def test_watch_report(trained: Path, paragraphs: Path, tmp_path: Path):
    records = [json.loads(line) for line in (trained / "training/watch.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 4, 8]
    first = records[0]
    assert set(first["neighbors"]) == {"king", "queen", "cat"} and len(first["neighbors"]["king"]) == 8
    assert -1 <= first["benchmarks"]["rg65"]["spearman"] <= 1 and first["benchmarks"]["rg65"]["pairs_total"] == 65
    assert first["norms"]["p0"] <= first["norms"]["p50"] <= first["norms"]["p100"]
    model = load_model(str(trained))  # the last record describes the saved matrix
    rows = model.embedding_weights.word_embeddings
    norms = np.linalg.norm(rows[5:].astype(np.float64), axis=1)
    # Two float64 norms of the same float32 rows: a sum of H squares and a root, within gamma_(H+2) of each other.
    assert abs(records[-1]["norms"]["p100"] - norms.max()) <= 2 * gamma(rows.shape[1] + 2, EPS64) * norms.max()
    code = main(["watch", str(trained), "--word2vec", str(paragraphs), "--word2vec-minutes", "0.02", "--json"])
    assert code == 0
    report = watch_report(trained, tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 5 and "<script" not in page
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)  # self-contained: nothing is fetched
    assert "word2vec" in page
    assert report.word2vec is not None and report.word2vec["words_trained"] > 0
    data = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert set(data["projection"]) == {"king", "queen", "cat"} and len(data["projection"]["king"]) == 3


def test_cli_train_tokenizer_and_pretrain(paragraphs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code = main(["train-tokenizer", str(paragraphs), "--out", str(tmp_path / "tok"), "--vocab-size", "100", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["vocab_size"] <= 100 and result["special_tokens"][4] == "[MASK]"
    args = [
        "pretrain",
        str(paragraphs),
        "--out",
        str(tmp_path / "run"),
        "--tokenizer",
        str(tmp_path / "tok"),
        "--hidden-size",
        "32",
        "--heads",
        "2",
        "--intermediate-size",
        "64",
        "--seq-length",
        "32",
        "--max-steps",
        "4",
        "--stop-at-step",
        "2",
        "--batch-size",
        "2",
        "--next-sentence",
        "--probe",
        "king",
        "--benchmarks",
        "rg65",
        "--precision",
        "float32",
        "--no-progress",
        "--json",
    ]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["step"], result["stopped"]) == (2, "stop_at_step")
    assert (tmp_path / "run" / "report.html").exists()
    config = json.loads((tmp_path / "run/config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"] and config["type_vocab_size"] == 2
    from transformers import AutoModelForMaskedLM

    nsp = load_model(str(tmp_path / "run"))  # BertForPreTraining weights: the base model sits under bert.
    mlm = AutoModelForMaskedLM.from_pretrained(str(tmp_path / "run"))
    rows = mlm.bert.embeddings.token_type_embeddings.weight.detach().numpy()
    assert np.array_equal(nsp.embedding_weights.token_type_embeddings, rows)
    assert (
        main(["pretrain", str(paragraphs), "--out", str(tmp_path / "run"), "--resume", "--no-progress", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["step"] == 4  # resumed with the run's own config
    assert (
        main(["pretrain", str(paragraphs), "--out", str(tmp_path / "run"), "--resume", "--seq-length", "16", "--json"])
        == 2
    )
    assert "another config" in json.loads(capsys.readouterr().out)["message"]
    assert (
        main(
            [
                "pretrain",
                str(paragraphs),
                "--out",
                str(tmp_path / "r2"),
                "--tokenizer",
                str(tmp_path / "tok"),
                "--seq-length",
                "1024",
                "--json",
            ]
        )
        == 2
    )
    assert "position table" in json.loads(capsys.readouterr().out)["message"]


def test_word2vec_scores_equal_gensim_evaluate_word_pairs(tmp_path: Path):
    """The baseline's benchmark figures, on given vectors, are gensim's own evaluate_word_pairs figures."""
    from gensim.models import KeyedVectors

    from bertlens.similarity.benchmarks import DATA
    from bertlens.training.baseline import score_vectors

    lines = (DATA / "similarity" / "rg65.csv").read_text(encoding="utf-8").splitlines()[1:]
    words = sorted({w for line in lines for w in line.split(",")[:2]})[:40]  # some pairs lack a word, as in real use
    rng = np.random.default_rng(0)
    vectors = {w: rng.normal(size=16).astype(np.float32) for w in words}
    kv = KeyedVectors(16)
    kv.add_vectors(words, np.stack([vectors[w] for w in words]))
    copy = tmp_path / "rg65.csv"
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, (spearman, _), oov = kv.evaluate_word_pairs(str(copy), delimiter=",", case_insensitive=False)
    ours = score_vectors(vectors, ["rg65"])["rg65"]
    # gensim's float32 cosines (and these) are within cosine_rounding of ours (float64): ranks swap only within that.
    pairs = [line.split(",") for line in lines]
    cosines = [
        float(vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b]))
        for a, b, _ in pairs
        if a in vectors and b in vectors
    ]
    assert abs(ours["spearman"] - spearman) <= spearman_bound(np.array(cosines), 2 * cosine_rounding(16))
    assert ours["pairs_used"] == round(65 * (1 - oov / 100))
