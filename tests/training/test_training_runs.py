"""Training keeps its promises: a resumed run keeps every option of the run it continues (and names what it changes),
its time limit is the whole run's, SIGTERM and SIGINT write a checkpoint before exiting (no step lost, the library's
signal handlers restored), checkpoints scale with the run's length, and the watch report explains itself."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from tiny_runs import TINY_SHAPE, tiny, weights

from bertlens import InputError
from bertlens.cli import main
from bertlens.training import PretrainConfig, pretrain
from bertlens.training.checkpoints import checkpoints
from bertlens.training.early_stop import read_stop

SHAPE = [
    *TINY_SHAPE,
    "--seq-length",
    "32",
    "--batch-size",
    "4",
    "--warmup-steps",
    "2",
    "--precision",
    "float32",
    "--threads",
    "1",
    "--probe",
    "king",
    "--benchmarks",
    "rg65",
    "--no-progress",
    "--json",
]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


# --- resume keeps the run's options ---------------------------------------------------------------------------------


@pytest.mark.slow  # a training run resumed three times
def test_resume_keeps_every_option_and_names_what_changes(paragraphs, paragraphs_tokenizer, tmp_path, capsys):
    out = str(tmp_path / "run")
    first = [
        "pretrain",
        str(paragraphs),
        "--out",
        out,
        "--tokenizer",
        str(paragraphs_tokenizer),
        "--validation",
        str(paragraphs),
    ]
    code, result, _ = run_cli(capsys, *first, "--max-steps", "6", "--stop-at-step", "2", "--minutes", "60", *SHAPE)
    assert code == 0 and (result["step"], result["stopped"], result["max_minutes"]) == (2, "stop_at_step", 60)
    assert result["validation_perplexity"] is not None

    # no corpus, no --validation, no limits: all the run's own; a new --minutes is named on stderr and in the result
    code, result, err = run_cli(
        capsys,
        "pretrain",
        "--out",
        out,
        "--resume",
        "--minutes",
        "90",
        "--stop-at-step",
        "4",
        "--no-progress",
        "--json",
    )
    assert code == 0 and (result["step"], result["resumed_from"], result["max_steps"]) == (4, 2, 6)
    assert result["validation_perplexity"] is not None  # the validation text was kept
    assert result["notes"] == ["max_minutes: 60.0 -> 90.0"]
    assert "pretrain --resume: max_minutes: 60.0 -> 90.0 (given on the command line)" in err
    assert result["max_minutes"] == 90 and result["seconds_before"] > 0
    saved = PretrainConfig.load(tmp_path / "run/training/pretrain_config.json")
    assert (saved.max_minutes, saved.hidden_size, saved.probe_words) == (90, 32, ("king",))

    # the next resume continues from the options the last one saved, and changes nothing
    code, result, err = run_cli(capsys, "pretrain", "--out", out, "--resume", "--no-progress", "--json")
    assert code == 0 and (result["step"], result["stopped"], result["notes"]) == (6, "finished", [])
    assert result["max_minutes"] == 90 and "pretrain --resume" not in err
    log = [json.loads(line)["step"] for line in (tmp_path / "run/training/log.jsonl").read_text().splitlines()]
    assert log == sorted(set(log)) and log[-1] == 6

    # an option that changes what the run computes is still refused, naming it
    code, result, _ = run_cli(capsys, "pretrain", "--out", out, "--resume", "--lr", "0.1", "--json")
    assert code == 2 and "learning_rate" in result["message"]


def test_resume_with_another_corpus_says_so(paragraphs, paragraphs_tokenizer, tmp_path):
    out = tmp_path / "run"
    pretrain(tiny(stop_at_step=1, max_steps=3, watch=False), paragraphs, out, tokenizer=paragraphs_tokenizer)
    moved = tmp_path / "moved.txt"
    moved.write_text(paragraphs.read_text(encoding="utf-8"), encoding="utf-8")
    result = pretrain(tiny(max_steps=3, watch=False), moved, out, resume=True)
    assert result.step == 3 and result.notes == (f"corpus: {paragraphs.resolve()} -> {moved.resolve()}",)
    assert "Changed on resume" in result.to_table()


def test_time_limit_is_the_whole_runs(paragraphs, paragraphs_tokenizer, tmp_path, capsys):
    """A limit of 60 µs (less than any step takes, so this holds on any machine) stops the run on its limit after
    one step; resuming it as it is would train no step, and is refused with what to do; --no-time-limit drops it
    (and says so)."""
    out = str(tmp_path / "run")
    first = ["pretrain", str(paragraphs), "--out", out, "--tokenizer", str(paragraphs_tokenizer), "--no-watch"]
    code, result, _ = run_cli(capsys, *first, "--max-steps", "100000", "--minutes", "0.000001", *SHAPE)
    assert code == 0 and result["stopped"] == "time limit" and result["step"] < 100000
    step = result["step"]
    code, error, _ = run_cli(capsys, "pretrain", "--out", out, "--resume", "--json")
    assert code == 2 and "time limit" in error["message"] and "--no-time-limit" in error["hint"]
    code, result, err = run_cli(
        capsys, "pretrain", "--out", out, "--resume", "--no-time-limit", "--stop-at-step", str(step + 2), "--json"
    )
    assert code == 0 and (result["step"], result["max_minutes"]) == (step + 2, None)
    assert result["seconds_before"] >= 0.00006 and "max_minutes: 1e-06 -> none" in err
    code, error, _ = run_cli(
        capsys, "pretrain", str(paragraphs), "--out", str(tmp_path / "x"), "--no-time-limit", "--json"
    )
    assert code == 2 and "--no-time-limit" in error["message"]


def test_new_run_needs_a_corpus(tmp_path, capsys):
    code, error, _ = run_cli(capsys, "pretrain", "--out", str(tmp_path / "run"), "--json")
    assert code == 2 and "No corpus" in error["message"]


# --- checkpoints scale with the run ---------------------------------------------------------------------------------


def test_checkpoints_scale_with_the_run(paragraphs, paragraphs_tokenizer, tmp_path):
    assert PretrainConfig().checkpoint_every is None and PretrainConfig().checkpoint_interval == 1000
    assert PretrainConfig(max_steps=50).checkpoint_interval == 5
    assert PretrainConfig(max_steps=55).checkpoint_interval == 6  # ceil(55 / 10)
    assert PretrainConfig(max_steps=3).checkpoint_interval == 1
    assert PretrainConfig(max_steps=10**6).checkpoint_interval == 1000  # at least every 1000 steps
    assert PretrainConfig(max_steps=1000, stop_at_step=200).checkpoint_interval == 20
    assert PretrainConfig(max_steps=50, checkpoint_every=7).checkpoint_interval == 7
    assert PretrainConfig(max_minutes=5).checkpoint_seconds == 30.0  # a tenth of the limit
    assert PretrainConfig(max_minutes=5, checkpoint_every=7).checkpoint_seconds is None
    result = pretrain(
        tiny(max_steps=20, checkpoint_every=None, keep_checkpoints=20),
        paragraphs,
        tmp_path / "run",
        tokenizer=paragraphs_tokenizer,
    )
    assert [s for s, _ in checkpoints(tmp_path / "run")] == list(range(2, 21, 2)) and result.step == 20
    records = [json.loads(line)["step"] for line in (tmp_path / "run/training/watch.jsonl").read_text().splitlines()]
    assert records == list(range(0, 21, 2))  # the watcher saw the matrix at every one


# --- signals --------------------------------------------------------------------------------------------------------


def test_library_leaves_signal_handlers_as_they_were(paragraphs, paragraphs_tokenizer, tmp_path):
    def mine(number, frame):  # pragma: no cover - never called
        pass

    before = signal.signal(signal.SIGTERM, mine)
    try:
        interrupt = signal.getsignal(signal.SIGINT)
        pretrain(tiny(max_steps=2, watch=False), paragraphs, tmp_path / "run", tokenizer=paragraphs_tokenizer)
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGINT) is interrupt
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.slow  # a fresh process trains for a few seconds
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_signal_writes_a_checkpoint_and_resume_finishes_the_same(
    number, paragraphs, paragraphs_tokenizer, tmp_path, capsys
):
    out = tmp_path / "run"
    args = [
        "pretrain",
        str(paragraphs),
        "--tokenizer",
        str(paragraphs_tokenizer),
        "--max-steps",
        "400",
        "--log-every",
        "1",
    ]
    args += ["--checkpoint-every", "10000", "--no-watch", *SHAPE]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "bertlens", *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    log = out / "training" / "log.jsonl"
    try:
        for _ in range(2400):  # until the first log lines (at most 2 minutes)
            if (log.exists() and log.read_text(encoding="utf-8").count("\n") >= 3) or process.poll() is not None:
                break
            time.sleep(0.05)
        process.send_signal(number)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err[-2000:]
    steps = [json.loads(line)["step"] for line in log.read_text(encoding="utf-8").splitlines()]
    last = steps[-1]
    assert 3 <= last < 400, "the run ended before the signal came"
    assert [s for s, _ in checkpoints(out)] == [last]  # a checkpoint at the last completed step: none lost
    assert f"{signal.Signals(number).name} at step {last}" in err
    assert f"continue with: bertlens pretrain --out {out} --resume" in err
    stop = read_stop(out, last)  # the watch report's banner names the signal
    assert stop is not None and (stop.reason, stop.step, stop.max_steps) == (signal.Signals(number).name, last, 400)
    code, result, _ = run_cli(capsys, "pretrain", "--out", str(out), "--resume", "--no-progress", "--json")
    assert code == 0 and (result["step"], result["resumed_from"], result["notes"]) == (400, last, [])
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    whole, split = weights(tmp_path / "whole"), weights(out)
    for name in whole:
        assert torch.equal(whole[name], split[name]), name  # bit for bit


def test_resume_refuses_a_run_without_kept_inputs(paragraphs, paragraphs_tokenizer, tmp_path):
    out = tmp_path / "run"
    pretrain(tiny(stop_at_step=1, max_steps=2, watch=False), paragraphs, out, tokenizer=paragraphs_tokenizer)
    (out / "training" / "run_inputs.json").unlink()  # as an older bertlens left it
    with pytest.raises(InputError, match="did not keep the name of its corpus"):
        pretrain(tiny(max_steps=2, watch=False), None, out, resume=True)
    assert pretrain(tiny(max_steps=2, watch=False), paragraphs, out, resume=True).step == 2


# --- the watch report explains itself ------------------------------------------------------------------------------


def test_rows_get_gradients_as_the_report_says(paragraphs, paragraphs_tokenizer):
    """One MLM step of the model a run trains: with the decoder tied to word_embeddings (as trained), every row gets a
    gradient; untied, only the rows of tokens present in the batch do (exactly zero elsewhere)."""
    from tokenizers import Tokenizer

    from bertlens.training.data import PackedData, SpecialIds, tokenize_corpus
    from bertlens.training.model import new_model
    from bertlens.training.objective import objective_module
    from bertlens.training.watch_html import HOW_ROWS_LEARN

    backend = Tokenizer.from_file(str(paragraphs_tokenizer / "tokenizer.json"))
    special = SpecialIds.from_tokenizer(backend, backend.get_vocab_size())
    config = tiny()
    batch = PackedData(tokenize_corpus(backend, paragraphs), special, 32, False, seed=0).batch(0, 2)
    inputs = (batch.input_ids, None, batch.positions, batch.labels, None)
    present = torch.zeros(special.vocab_size, dtype=torch.bool)
    present[batch.input_ids.unique()] = True
    assert not present.all()  # some tokens are absent from the batch

    def row_grads(tied: bool) -> torch.Tensor:
        model = new_model(config, special)
        if not tied:
            model.cls.predictions.decoder.weight = torch.nn.Parameter(model.cls.predictions.decoder.weight.clone())
        mlm, _ = objective_module(model, False)(*inputs)
        mlm.backward()
        return model.bert.embeddings.word_embeddings.weight.grad.abs().sum(dim=1)  # (V,)

    tied = new_model(config, special)
    assert tied.cls.predictions.decoder.weight is tied.bert.embeddings.word_embeddings.weight
    assert (row_grads(True) > 0).all()
    untied = row_grads(False)
    assert (untied[~present] == 0).all() and (untied[present] > 0).any()
    assert "only the rows of tokens present" in HOW_ROWS_LEARN and "tied to word_embeddings" in HOW_ROWS_LEARN


@pytest.fixture(scope="module")
def rg65_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sentences made of half of rg65's words only: word2vec covers some of its pairs, not all."""
    from bertlens.similarity.benchmarks import DATA

    lines = (DATA / "similarity" / "rg65.csv").read_text(encoding="utf-8").splitlines()[1:]
    words = sorted({w for line in lines for w in line.split(",")[:2]})
    kept = words[::2]
    rng = random.Random(0)
    file = tmp_path_factory.mktemp("rg65") / "rg65.txt"
    file.write_text("\n".join(" ".join(rng.choices(kept, k=8)) + "." for _ in range(600)) + "\n", encoding="utf-8")
    return file


def test_watch_report_shows_coverage_and_both_on_shared_pairs(
    paragraphs, paragraphs_tokenizer, rg65_corpus, tmp_path, capsys
):
    from scipy.stats import spearmanr

    from bertlens import load_model
    from bertlens.similarity.evaluate import evaluate_pairs

    out = tmp_path / "run"
    pretrain(tiny(max_steps=4, checkpoint_every=2), paragraphs, out, tokenizer=paragraphs_tokenizer)
    args = ["watch", str(out), "--word2vec", str(rg65_corpus), "--word2vec-minutes", "0.01", "--no-progress"]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert "word2vec" not in captured.err  # no bar with --json / --no-progress
    assert "tied to word_embeddings" in report["how_rows_learn"]
    assert report["checkpoints"][-1]["pairs"]["rg65"] == {"pairs_used": 65, "pairs_total": 65}
    w2v = report["word2vec"]["benchmarks"]["rg65"]
    assert 2 <= w2v["pairs_used"] < 65 and "lines" not in w2v  # partial coverage; per-pair data stays in report.json
    shared = report["shared"]["rg65"]
    kept = json.loads((out / "report.json").read_text(encoding="utf-8"))["word2vec"]["benchmarks"]["rg65"]
    cosines = dict(zip(kept["lines"], kept["cosines"], strict=True))
    ours = [p for p in evaluate_pairs(load_model(str(out)), "rg65").pairs if p.line in cosines]
    assert (shared["pairs_shared"], shared["pairs_total"], shared["step"]) == (len(ours), 65, 4)
    human = [p.human for p in ours]
    assert shared["bertlens"] == pytest.approx(spearmanr(human, [p.model for p in ours]).statistic, abs=1e-12)
    assert shared["word2vec"] == pytest.approx(spearmanr(human, [cosines[p.line] for p in ours]).statistic, abs=1e-12)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"({w2v['pairs_used']} of 65 pairs)" in page and "(65 of 65 pairs)" in page
    assert "Both on the pairs both cover" in page and "How the rows learn" in page
    assert main([*args[:2], "--no-progress"]) == 0  # the table: coverage beside every score, the shared pairs
    text = capsys.readouterr().out
    assert f"{w2v['pairs_used']} of 65" in text and "65 of 65" in text and "On the pairs both cover" in text
    assert "only the rows of tokens" in text


def test_word2vec_progress(rg65_corpus, capsys):
    from bertlens.training.baseline import word2vec_baseline

    word2vec_baseline(rg65_corpus, 0.5, benchmarks=["rg65"], progress=True)
    assert "word2vec" in capsys.readouterr().err
    word2vec_baseline(rg65_corpus, 0.5, benchmarks=["rg65"])
    assert capsys.readouterr().err == ""
