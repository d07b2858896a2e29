"""New words explain themselves: given rows are checked against the input matrix's space (norm against the
old rows' norms, cosine with the pieces' mean) and warned about, in the result and on standard error; every new row's
norm percentile and cosine with its pieces are reported; extend-report ends with a recommendation drawn from its own
figures, and shows progress."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny import make_tiny

from bertlens import load_model
from bertlens.cli import main
from bertlens.extend import ExtendOptions, extend_vocabulary, plan_extension
from bertlens.extend.report import ReportOptions, compare_strategies
from bertlens.extend.report_results import MaskedShift, StrategyReport, WordReport, recommend

WORDS = ["aspirin", "ibuprofen"]  # as ##pi ##rin, ib ##up ##ro ##fen in the default model


def old_norms_by_hand(model) -> np.ndarray:
    """Norms of the rows neighbors would return by default: no special tokens, no [unused] rows."""
    tokens = model.vocabulary.tokens_by_id(model.matrix_rows)
    keep = [
        i
        for i, t in enumerate(tokens)
        if t is not None and not t.startswith("[unused") and i not in model.vocabulary.special_ids
    ]
    return np.linalg.norm(model.embedding_weights.word_embeddings[keep].astype(np.float64), axis=1)


def pieces_mean(model, word: str) -> np.ndarray:
    ids = plan_extension(model, [word], ExtendOptions(strategy="pieces")).added[0].piece_ids
    return model.embedding_weights.word_embeddings[list(ids)].astype(np.float64).mean(axis=0)


def write_rows(path: Path, rows: dict[str, np.ndarray]) -> Path:
    path.write_text("".join(f"{w} {' '.join(repr(float(v)) for v in r)}\n" for w, r in rows.items()))
    return path


def test_rows_in_the_matrix_space_pass_quietly(default_model):
    rows = {w: pieces_mean(default_model, w).astype(np.float32) for w in WORDS}
    planned = plan_extension(default_model, WORDS, ExtendOptions(strategy="rows"), rows=rows)
    assert planned.warnings == () and "warning" not in planned.to_table()
    norms = old_norms_by_hand(default_model)
    for word in planned.added:
        norm = float(np.linalg.norm(rows[word.word].astype(np.float64)))
        assert word.norm_percentile == pytest.approx(100.0 * float(np.mean(norms < norm)), abs=100.0 / len(norms))
        assert word.cosine_pieces == pytest.approx(1.0, abs=1e-6)  # the row is its pieces' mean (float32)


def test_rows_from_another_space_are_warned_about(default_model, tmp_path):
    norms = old_norms_by_hand(default_model)
    p99 = float(np.percentile(norms, 99))
    scaled = (pieces_mean(default_model, "aspirin") * 4).astype(np.float32)  # 4x: far above every old row
    foreign = np.random.default_rng(0).normal(0, 0.06, 384).astype(np.float32)  # right size, unrelated direction
    assert np.linalg.norm(scaled) > 1.5 * p99
    rows = {"aspirin": scaled, "ibuprofen": foreign}
    planned = plan_extension(default_model, WORDS, ExtendOptions(strategy="rows"), rows=rows)
    (warning,) = planned.warnings
    assert warning.startswith("2 of 2 given rows do not look like rows of this input matrix")
    assert f"'aspirin': norm {np.linalg.norm(scaled):.3g} is" in warning and "99th percentile" in warning
    cosine = planned.added[1].cosine_pieces
    assert abs(cosine) < 0.1 and f"'ibuprofen': cosine with its old pieces' mean is {cosine:.3f}" in warning
    expected = float(foreign.astype(np.float64) @ pieces_mean(default_model, "ibuprofen"))
    expected /= np.linalg.norm(foreign.astype(np.float64)) * np.linalg.norm(pieces_mean(default_model, "ibuprofen"))
    assert cosine == pytest.approx(expected, abs=1e-12)
    assert planned.added[0].norm_percentile == 100.0
    assert planned.to_dict()["warnings"] == [warning] and f"warning: {warning}" in planned.to_table()
    saved = extend_vocabulary(default_model, WORDS, tmp_path / "new", ExtendOptions(strategy="rows"), rows=rows)
    assert saved.warnings == (warning,) and saved.to_dict()["warnings"] == [warning]


def test_strategies_own_rows_are_described_not_warned(default_model):
    mean = plan_extension(default_model, WORDS, ExtendOptions(strategy="mean"))
    assert mean.warnings == () and all(w.norm_percentile < 1.0 for w in mean.added)  # short rows, by design
    assert "norm pct" in mean.to_table()


def test_cli_says_the_warning_on_standard_error(default_model, capsys, tmp_path):
    rows = {"aspirin": (pieces_mean(default_model, "aspirin") * 4).astype(np.float32)}
    path = write_rows(tmp_path / "rows.txt", rows)
    argv = ["extend", "-w", "aspirin", "--init", "rows", "--rows", str(path), "--out", str(tmp_path / "m"), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    (warning,) = json.loads(captured.out)["warnings"]
    assert captured.err == f"bertlens: warning: {warning}\n"


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    folder = make_tiny("bert", tmp_path_factory.mktemp("mlm") / "bert", mlm=True)
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "PreTrainedTokenizerFast"}')
    return load_model(str(folder))


def test_report_ends_with_a_recommendation_from_its_figures(tiny_mlm):
    texts = ("the walking dog sat", "a cat ran to the house .", "she was in the car .", "it is a good day")
    report = compare_strategies(tiny_mlm, ["walking", "houses"], options=ReportOptions(texts=texts, k=3))
    safe = [s for s in report.strategies if s.masked is None or s.masked.new_top1 == 0] or list(report.strategies)
    best = max(safe, key=lambda s: (s.layer_cosines[-1], s.context_cosines[-1]))
    assert report.recommended == best.strategy
    assert report.recommendation.startswith(f"{best.strategy}: its new tokens read most like their old pieces")
    assert f"word cos {best.layer_cosines[-1]:.3f}" in report.recommendation
    table = report.to_table()
    assert table.rstrip().endswith(report.recommendation) and "\nRecommendation: " in table
    assert report.to_dict()["recommended"] == best.strategy


def shift(new_top1: int) -> MaskedShift:
    return MaskedShift(100, 0.01, 0.01, 0.1, new_top1, new_top1 / 100, 0.0, 0.0)


def strategy(name: str, word_cos: float, context_cos: float, new_top1: int, pct: float = 50.0) -> StrategyReport:
    word = WordReport("walking", "walking", 80, 1.0, pct, 0.0, 0.9, (), (0.9, word_cos), 4)
    return StrategyReport(name, (word,), shift(new_top1), (0.9, word_cos), (1.0, context_cos))


def test_a_strategy_whose_word_takes_over_predictions_is_passed_over():
    reports = [
        strategy("random", 0.2, 0.9, 0, pct=0.0),
        strategy("pieces", 0.6, 0.8, 3),
        strategy("neighbors", 0.5, 0.85, 0),
    ]
    name, text = recommend(reports)
    assert name == "neighbors"
    assert "word cos 0.500; next random, 0.200" in text
    assert "random disturbs the other tokens a little less (context cos 0.900 against 0.850)" in text
    assert "Passed over: a new word took over masked predictions under pieces (3.0%) (Hewitt 2021)." in text
    assert text.endswith("Rows with norms outside the old rows' 1-99% range: random (norm pct 0).")
    only, said = recommend([strategy("pieces", 0.6, 0.8, 0)])
    assert only == "pieces" and said.startswith("pieces, the only strategy compared (word cos 0.600)")
    assert recommend([]) == (None, "")


@pytest.mark.slow  # three strategy comparisons on the default model
def test_report_progress_on_standard_error(default_model, capsys):
    compare_strategies(default_model, ["Aspirinex"], ["pieces"], progress=True)
    err = capsys.readouterr().err
    assert "extend-report: planning" in err and "extend-report" in err and "2/2" in err
    compare_strategies(default_model, ["Aspirinex"], ["pieces"])
    assert capsys.readouterr().err == ""
    argv = ["extend-report", "-w", "Aspirinex", "--init", "pieces", "--no-progress"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "\nRecommendation: pieces, the only strategy compared" in captured.out
