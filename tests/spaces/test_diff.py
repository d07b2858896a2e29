"""`diff` on models whose answer is known by construction: a model against itself, against a rotated copy of itself,
against a model of another width; `nearest_sets` against a float64 brute force; bad inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tiny import make_tiny

from bertlens import load_model
from bertlens.core.errors import InputError
from bertlens.core.model import Model
from bertlens.spaces import SpaceDiff, diff
from bertlens.spaces.neighbours import jaccard, nearest_sets, unit_rows

EPS32 = float(np.finfo(np.float32).eps)


def brute_sets(unit: np.ndarray, k: int) -> np.ndarray:
    """(n, k) each row's k nearest other rows by float64 cosine, ties by the smaller id."""
    x = unit.astype(np.float64)
    scores = x @ x.T
    np.fill_diagonal(scores, -np.inf)
    ids = np.broadcast_to(np.arange(len(x)), scores.shape)
    return np.lexsort((ids, -scores), axis=1)[:, :k]


@pytest.mark.parametrize(("block", "probe"), [(7, 5), (64, 16), (2048, 8192)])
def test_nearest_sets_are_the_brute_force_sets_whatever_the_blocks(block: int, probe: int) -> None:
    rng = np.random.default_rng(0)
    unit = unit_rows(rng.standard_normal((300, 16)).astype(np.float32))
    unit[7] = unit[3]  # exact ties: rows 3 and 7 are the same row
    found = nearest_sets(unit, 10, block=block, probe=probe)
    expected = brute_sets(unit, 10)
    assert (np.sort(found, axis=1) == np.sort(expected, axis=1)).all()
    assert (found != np.arange(300)[:, None]).all()  # never the row itself


def test_jaccard_counts_shared_ids_over_the_union() -> None:
    a = np.array([[1, 2, 3, 4], [1, 2, 3, 4]])
    b = np.array([[4, 3, 2, 1], [1, 2, 8, 9]])
    assert jaccard(a, b).tolist() == [1.0, 2 / 6]


@pytest.fixture(scope="module")
def itself(default_model: Model) -> SpaceDiff:
    """The default model against itself, with Genesis's token counts."""
    return diff(default_model, default_model, top=3, corpus="genesis")


def test_a_model_against_itself_keeps_every_neighbour_and_leaves_nothing(itself: SpaceDiff) -> None:
    result = itself
    assert result.tokens == 30522 - 994  # every token but the [unused] rows
    assert result.overlap_mean == 1.0 and result.histogram[-1] == result.tokens
    assert result.residual.max() <= 4 * result.width_a * EPS32  # 1 - cos of a row with itself, float64 of float32
    assert result.raw_cosine_mean == pytest.approx(1.0, abs=result.width_a * EPS32)
    bank = result.token("bank")
    assert bank.overlap == 1.0 and [n.token for n in bank.neighbours_a] == [n.token for n in bank.neighbours_b]
    assert "banks" in bank.shared
    assert {g.label for g in result.by_kind} == {"word", "piece", "number", "punctuation", "special"}
    assert sum(g.tokens for g in result.by_kind) == result.tokens


@pytest.fixture(scope="module")
def rotated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, Model]:
    """A tiny BERT and a copy whose `word_embeddings` are the same rows turned by a random rotation."""
    root = tmp_path_factory.mktemp("rotated")
    original = make_tiny("bert", root / "a")
    copy = root / "b"
    shutil.copytree(original, copy)
    tensors = load_file(copy / "model.safetensors")
    name = next(n for n in tensors if n.endswith("word_embeddings.weight"))
    rows = tensors[name]
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((rows.shape[1], rows.shape[1])))
    tensors[name] = (rows.astype(np.float64) @ q).astype(np.float32)
    save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
    return load_model(str(original)), load_model(str(copy))


def test_a_rotated_copy_has_meaningless_raw_cosines_but_aligns_exactly(rotated: tuple[Model, Model]) -> None:
    a, b = rotated
    result = diff(a, b, k=5, top=3)
    width = result.width_a
    assert result.raw_cosine_mean is not None and abs(result.raw_cosine_mean) < 4 / np.sqrt(width)
    assert result.residual.max() <= 8 * width * EPS32  # the rotation recovered, up to float32 storage of the copy
    assert result.fit == pytest.approx(1.0, abs=8 * width * EPS32)
    assert result.overlap_mean == 1.0  # a rotation moves no neighbour


def test_spaces_of_different_widths_are_aligned_by_padding_the_narrower(tmp_path: Path) -> None:
    a = load_model(str(make_tiny("bert", tmp_path / "a", hidden_size=32)))
    b = load_model(str(make_tiny("bert", tmp_path / "b", hidden_size=48, num_attention_heads=4, seed=3)))
    result = diff(a, b, k=5, top=3)
    assert (result.width_a, result.width_b, result.padded) == (32, 48, "A")
    assert result.raw_cosine_mean is None
    assert 0 < result.fit < 1 and result.overlap_mean < 1
    text = result.to_table()
    assert "padded with zeros to 48" in text and "Raw row-to-row" not in text


def test_the_result_says_the_same_in_json_and_table(itself: SpaceDiff) -> None:
    result = itself
    data = result.to_dict()
    assert isinstance(result, SpaceDiff)
    assert "overlap" not in data and "lookup" not in data  # per-token arrays stay out of the JSON
    assert data["tokens"] == result.tokens and len(data["moved"]) == 3
    assert data["by_frequency"][0]["label"] == "absent (0)"
    assert sum(g["tokens"] for g in data["by_frequency"]) == result.tokens
    lord = next(g for g in result.by_frequency if g.label == "1000+")
    assert lord.tokens > 0  # "the", "and", "of" occur over 1,000 times in Genesis
    assert "By the token's count in genesis" in result.to_table()
    assert sum(p.moved for p in result.plane) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be at least 1"),
        ({"k": 30522}, "must be below the"),
        ({"top": 0}, "top must be at least 1"),
        ({"k": 2.5}, "k must be a whole number"),
        ({"contextual": "yes"}, "contextual"),
    ],
)
def test_bad_options_are_input_errors(default_model: Model, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        diff(default_model, default_model, **kwargs)  # type: ignore[arg-type]


def test_a_token_not_shared_is_an_input_error_with_a_hint(itself: SpaceDiff) -> None:
    result = itself
    with pytest.raises(InputError, match="not a token both vocabularies hold") as caught:
        result.token("Bank")
    assert "bertlens tokens" in caught.value.hint


def test_progress_names_each_step_on_standard_error_and_stays_out_of_json(
    rotated: tuple[Model, Model], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a, b = rotated
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n", encoding="utf-8")
    diff(a, b, k=5, top=3, corpus=corpus, progress=True)
    shown = capsys.readouterr().err
    assert "diff" in shown and "nearest" in shown and "4/4" in shown  # the count, both searches, the alignment
    from bertlens.cli import main

    folder_a, folder_b = (str(m.source.path) for m in rotated)
    assert main(["diff", folder_a, folder_b, "-k", "5", "--json"]) == 0
    assert capsys.readouterr().err == ""
