"""WiC and same-sense: the files read and refused, the word's vectors against transformers, the published threshold
protocol against numpy, the calibration stored and used, and the commands. WiC is read from ../shared/data/wic (CC
BY-NC, never copied into the package); subsets of it are written into temporary folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from bounds import mean_bound
from conftest import SHARED_DATA
from tiny import make_tiny

from bertlens import InputError, Lens, load_model
from bertlens.cli import main
from bertlens.contextual.states import RunOptions
from bertlens.core.packing import inference_model
from bertlens.wic.same_sense import (
    SHIPPED_CALIBRATION,
    SHIPPED_PAIRS,
    Calibration,
    calibration_path,
    fit_calibration,
    load_calibration,
    same_sense,
    shipped_calibration,
)
from bertlens.wic.wic import Target, evaluate_wic, pair_vectors, read_wic, target_vectors, word_span
from bertlens.wic.wic_readout import WicRecipe, best_threshold, cosines

WIC = SHARED_DATA / "wic"


def wic(split: str) -> Path:
    """WiC's folder for `split`; the test is skipped where the data is absent (it is never shipped)."""
    folder = WIC / split
    if not (folder / f"{split}.data.txt").is_file():
        pytest.skip(f"WiC's {split} split is not at {folder} (../shared/data/wic: CC BY-NC, never shipped)")
    return folder


ALONE = RunOptions(batch_tokens=1)  # every sentence its own forward pass: transformers' own numbers, bit for bit


def write_split(folder: Path, name: str, lines: list[str], golds: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.data.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    (folder / f"{name}.gold.txt").write_text("".join(f"{g}\n" for g in golds), encoding="utf-8")
    return folder


def subset(split: str, count: int) -> tuple[list[str], list[str]]:
    lines = (wic(split) / f"{split}.data.txt").read_text(encoding="utf-8").splitlines()
    golds = (wic(split) / f"{split}.gold.txt").read_text(encoding="utf-8").splitlines()
    return lines[:count], golds[:count]


@pytest.fixture(scope="module")
def small_wic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WiC's layout with 60 train and 40 dev pairs."""
    root = tmp_path_factory.mktemp("wic")
    write_split(root / "train", "train", *subset("train", 60))
    write_split(root / "dev", "dev", *subset("dev", 40))
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny("bert", tmp_path_factory.mktemp("tiny") / "bert")


# --- the files ------------------------------------------------------------------------------------------------------


def test_reads_the_dev_split():
    pairs = read_wic(wic("dev"))
    golds = (wic("dev") / "dev.gold.txt").read_text(encoding="utf-8").split()
    assert len(pairs) == 638 == len(golds)
    assert [p.same for p in pairs] == [g == "T" for g in golds]
    first = pairs[0]
    assert (first.word, first.pos, first.index_1, first.index_2) == ("board", "N", 2, 2)
    assert first.sentence_2[slice(*word_span(first.sentence_2, 2))] == "boards"
    assert read_wic(wic("dev") / "dev.data.txt") == pairs  # the file itself, or its folder


GOOD = "bank\tN\t1-0\tThe bank .\tBank on it ."


@pytest.mark.parametrize(
    ("line", "gold", "says"),
    [
        ("bank\tN\t1-0\tThe bank .", "T", "expected 5 tab-separated fields, found 4"),
        ("bank\tN\t1x0\tThe bank .\tBank on it .", "T", "are not i-j"),
        ("bank\tN\t7-0\tThe bank .\tBank on it .", "T", "word index 7 does not exist"),
        ("bank\tN\t1-0\t \tBank on it .", "T", "an empty word or sentence"),
        (GOOD, "maybe", "is not T or F"),
    ],
)
def test_malformed_lines_are_refused_with_file_and_line(tmp_path, line, gold, says):
    folder = write_split(tmp_path, "mine", [GOOD, line], ["T", gold])
    with pytest.raises(InputError, match=says) as caught:
        read_wic(folder)
    assert ":2: " in caught.value.message and "mine." in caught.value.message


def test_missing_or_unmatched_files_are_refused(tmp_path):
    folder = write_split(tmp_path / "a", "x", [GOOD], ["T"])
    (folder / "x.gold.txt").unlink()
    with pytest.raises(InputError, match="No gold file"):
        read_wic(folder)
    assert read_wic(folder, labels=False)[0].same is None  # a file without labels still reads, unlabelled
    write_split(tmp_path / "b", "y", [GOOD, GOOD], ["T"])
    with pytest.raises(InputError, match="has 1 lines but"):
        read_wic(tmp_path / "b")
    (tmp_path / "c").mkdir()
    with pytest.raises(InputError, match="holds 0"):
        read_wic(tmp_path / "c")
    with pytest.raises(InputError, match="No such"):
        read_wic(tmp_path / "nowhere.data.txt")
    with pytest.raises(InputError, match="holds no pairs"):
        read_wic(write_split(tmp_path / "d", "z", [], []))


# --- the numbers ----------------------------------------------------------------------------------------------------


def test_vectors_are_transformers_pieces_pooled_by_hand(default_model):
    pair = read_wic(wic("dev"))[4]  # domesticity: two pieces
    start, end = word_span(pair.sentence_1, pair.index_1)
    ours, masked = target_vectors(default_model, [Target(pair.sentence_1, start, end)], options=ALONE)
    encoding = default_model.vocabulary.tokenizer.encode(pair.sentence_1)
    pieces = [
        i for i, (a, b) in enumerate(encoding.offsets) if encoding.word_ids[i] is not None and a < end and b > start
    ]
    assert len(pieces) == 2
    with torch.inference_mode():  # transformers' forward pass of the unpadded sentence (the module bertlens runs)
        ids = torch.tensor([encoding.ids])
        out = inference_model(default_model, "cpu", "float32")(
            input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True
        )
    states = torch.stack(out.hidden_states)[:, 0].numpy()  # (layers + 1, tokens, H)
    by_hand = states[:, pieces].mean(axis=1)  # (layers + 1, H)
    assert (np.abs(ours[0] - by_hand) <= 2 * mean_bound(states[:, pieces], axis=1)).all()
    # the context alone: the same sentence with the word replaced by [MASK], its vector at the mask
    text = pair.sentence_1[:start] + "[MASK]" + pair.sentence_1[end:]
    alone, _ = target_vectors(default_model, [Target(text, start, start + 6)], context=False, options=ALONE)
    np.testing.assert_array_equal(masked, alone)


def test_best_threshold_is_the_brute_force_one():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=200), 1)  # many ties
    same = rng.random(200) < 1 / (1 + np.exp(-2 * scores))
    threshold, accuracy = best_threshold(scores, same)
    cuts = np.concatenate([[-np.inf], np.unique(scores) + 1e-9, [np.inf]])
    brute = max(((scores >= t) == same).mean() for t in cuts)
    assert accuracy == brute == ((scores >= threshold) == same).mean()


def test_evaluate_follows_the_published_protocol(tiny, small_wic):
    model = load_model(str(tiny))
    result = evaluate_wic(model, small_wic / "dev", recipe=WicRecipe(c=1.0))  # train: the folder beside
    assert (result.pairs, result.train_pairs, len(result.layers)) == (40, 60, model.config.num_hidden_layers + 1)
    train, dev = read_wic(small_wic / "train"), read_wic(small_wic / "dev")
    recipe = WicRecipe(context=False)
    tv, dv = pair_vectors(model, train, recipe, RunOptions()), pair_vectors(model, dev, recipe, RunOptions())
    y_train, y_dev = np.array([p.same for p in train]), np.array([p.same for p in dev])
    train_cos, dev_cos = cosines(tv.target[0], tv.target[1]), cosines(dv.target[0], dv.target[1])
    for row in result.layers:  # the threshold is the best on train; the accuracy is dev's at that threshold
        cuts = np.concatenate([[-np.inf], np.unique(train_cos[:, row.layer]), [np.inf]])
        best = max(((train_cos[:, row.layer] >= t) == y_train).mean() for t in cuts)
        assert row.train_accuracy == pytest.approx(best, abs=1 / 60 / 2)
        assert row.accuracy == pytest.approx(((dev_cos[:, row.layer] >= row.threshold) == y_dev).mean(), abs=1 / 40)
    assert result.best_layer == max(result.layers, key=lambda r: r.train_accuracy).layer
    assert 0 <= result.recipe_accuracy <= 1 and "read-out" in result.to_table()
    assert json.loads(json.dumps(result.to_dict()))["recipe"]["c"] == 1.0


# --- same sense -----------------------------------------------------------------------------------------------------


def test_calibration_is_stored_and_gives_a_verdict(default_model, small_wic, tmp_path):
    cache = tmp_path / "cache"
    pair = read_wic(wic("dev"))[1]
    before = same_sense(default_model, pair.word, pair.sentence_1, pair.sentence_2, cache_dir=cache)
    assert before.calibration == str(SHIPPED_CALIBRATION)  # nothing fitted yet: the shipped calibration answers
    calibration = fit_calibration(default_model, small_wic / "train", cache_dir=cache)
    assert Path(calibration.path) == calibration_path(default_model, cache) and Path(calibration.path).is_file()
    assert load_calibration(default_model, cache).to_dict() == calibration.to_dict()
    after = same_sense(default_model, "circulate", pair.sentence_1, pair.sentence_2, cache_dir=cache)
    assert after.notes == ("'circulate' is read as 'circulated' in the second sentence.",)
    assert [r.cosine for r in after.layers] == [r.cosine for r in before.layers]  # the same forward passes
    assert after.verdict in ("same sense", "different senses") and 0 < after.probability < 1
    assert after.calibration == calibration.path and "60 pairs of" in after.calibrated_on  # the fitted one, first
    assert (after.verdict == "same sense") == (after.probability >= 0.5)
    for row, layer in zip(after.layers, calibration.layers, strict=True):  # percentiles read off the stored quantiles
        assert row.same_percentile == pytest.approx(float(np.interp(row.cosine, layer.same, np.linspace(0, 100, 101))))
        assert 0 <= row.different_percentile <= 100 and 0 < row.probability < 1
    by_layer = same_sense(default_model, pair.word, pair.sentence_1, pair.sentence_2, layer=-1, cache_dir=cache)
    assert by_layer.decided_by == "layer 6" and by_layer.probability == after.layers[6].probability
    # the same pair as a WiC line: its word cosines are the evaluation's
    vectors = pair_vectors(default_model, [pair], WicRecipe(), RunOptions())
    assert cosines(vectors.target[0], vectors.target[1])[0].tolist() == [r.cosine for r in after.layers]


def test_default_model_gives_a_verdict_out_of_the_box(default_model, tmp_path):
    river = "I sat on the river bank ."
    money = same_sense(default_model, "bank", river, "The bank raised its interest rates .", cache_dir=tmp_path)
    assert money.verdict == "different senses" and money.probability < 0.5
    again = same_sense(default_model, "bank", river, "We walked along the bank of the river .", cache_dir=tmp_path)
    assert again.verdict == "same sense" and again.probability >= 0.5
    assert money.calibration == str(SHIPPED_CALIBRATION) and not list(tmp_path.iterdir())  # nothing fitted or written
    text = money.to_table()
    assert "Verdict: different senses" in text and "written for bertlens (MIT)" in text and "WiC" in text


def test_layers_read_on_the_verdicts_scale_and_add_up_to_it(default_model, tmp_path):
    for pair in read_wic(wic("dev"))[:8]:
        result = same_sense(default_model, pair.word, pair.sentence_1, pair.sentence_2, cache_dir=tmp_path)
        shares = [r.log_odds for r in result.layers]
        assert all(s is not None for s in shares) and result.probability is not None
        total = sum(s for s in shares if s is not None)
        assert (result.verdict == "same sense") == (total >= 0) == (result.probability >= 0.5)
        assert [r.reads for r in result.layers] == ["same" if s >= 0 else "different" for s in shares if s is not None]
        reads = {r.reads for r in result.layers}
        if reads == {"same"}:  # every layer leans one way: so does the verdict
            assert result.verdict == "same sense"
        if reads == {"different"}:
            assert result.verdict == "different senses"
        leaning = sum(r.reads == "same" for r in result.layers)
        assert f"{leaning} of 7 layers lean to the same sense" in result.to_table()
        assert list(result.to_pandas()["reads"]) == [r.reads for r in result.layers]  # pandas shows the same
        one = same_sense(default_model, pair.word, pair.sentence_1, pair.sentence_2, layer=3, cache_dir=tmp_path)
        for row in one.layers:  # one layer: each layer's own P(same), 0.5 at its balanced cosine cut
            assert row.cut is not None and row.probability is not None
            assert row.reads == ("same" if row.probability >= 0.5 else "different")
        assert one.verdict == ("same sense" if one.layers[3].reads == "same" else "different senses")


def test_calibration_cuts_are_balanced_on_its_pairs(default_model):
    shipped = shipped_calibration(default_model)
    assert shipped is not None
    pairs = read_wic(SHIPPED_PAIRS)
    vectors = pair_vectors(default_model, pairs, shipped.readout.recipe, RunOptions())
    raw = cosines(vectors.target[0], vectors.target[1])  # (pairs, layers + 1)
    for layer in shipped.layers:  # each layer's cut is its median cosine: half the pairs on either side
        assert layer.probability(layer.threshold) == pytest.approx(0.5)
        above = (raw[:, layer.layer] >= layer.threshold).mean()
        assert abs(above - 0.5) <= 1 / len(pairs)
    answers = shipped.readout.probability(shipped.readout.features(vectors)) >= 0.5
    same = np.array([p.same for p in pairs])
    assert ((answers == same).mean()) == pytest.approx(shipped.readout_accuracy)
    # the read-out's cut comes from pairs held out of its fit, so on its own pairs it is near, not at, half
    assert 0.4 <= answers.mean() <= 0.6


def test_shipped_calibration_is_the_default_models_and_made_from_the_shipped_pairs(default_model):
    shipped = shipped_calibration(default_model)
    assert shipped is not None and shipped.model["sha256"] == default_model.content_hash
    pairs = read_wic(SHIPPED_PAIRS)
    assert shipped.pairs == len(pairs) and shipped.source == "pairs.data.txt"
    assert sum(p.same for p in pairs) == len(pairs) // 2  # as many same-sense pairs as different
    assert len({p.word for p in pairs}) >= 100
    accuracy, share = shipped.wic_dev_accuracy, shipped.wic_dev_same
    assert accuracy is not None and f"{100 * accuracy:.1f}% right on WiC's dev split" in shipped.about
    assert share is not None and f"answering 'same' on {100 * share:.1f}%" in shipped.about
    assert SHIPPED_CALIBRATION.stat().st_size < 128 << 10  # small package data
    assert Calibration.from_json(shipped.to_json(), "x").to_json() == shipped.to_json()  # float32 centres round-trip


def test_other_models_get_no_verdict_and_are_told_how(tiny, tmp_path, capsys):
    result = same_sense(load_model(str(tiny)), "cat", "the cat sat", "a cat ran", cache_dir=tmp_path)
    assert result.verdict is None and result.calibrated_on is None
    assert "ships one for its default model only" in result.to_table() and str(SHIPPED_PAIRS) in result.to_table()
    argv = ["same-sense", "cat", "the cat sat", "a cat ran", "--model", str(tiny), "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    assert "--calibrate PATH" in capsys.readouterr().out


def test_same_sense_refuses_what_it_cannot_read(default_model, tiny, small_wic, tmp_path):
    with pytest.raises(InputError, match="does not occur in the second sentence"):
        same_sense(default_model, "bank", "The bank is shut.", "We swam.", cache_dir=tmp_path)
    with pytest.raises(InputError, match="marks 2 words"):
        same_sense(default_model, "bank", "[The] [bank] is shut.", "A bank.", cache_dir=tmp_path)
    with pytest.raises(InputError, match="Layer 9 does not exist"):
        same_sense(default_model, "bank", "The bank.", "A bank.", layer=9, cache_dir=tmp_path)
    with pytest.raises(InputError, match="empty"):
        same_sense(default_model, "bank", " ", "A bank.", cache_dir=tmp_path)
    marked = same_sense(default_model, "whatever", "I sat on the river [bank].", "A [bank].", cache_dir=tmp_path)
    assert marked.sentence_1 == "I sat on the river bank." and marked.span_1 == (19, 23)
    target = calibration_path(default_model, tmp_path)
    target.parent.mkdir(parents=True)
    target.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="damaged"):
        same_sense(default_model, "bank", "The bank.", "A bank.", cache_dir=tmp_path)
    other = fit_calibration(load_model(str(tiny)), small_wic / "train", cache_dir=tmp_path / "other")
    target.write_text(Path(other.path).read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(InputError, match="fitted for another model"):
        same_sense(default_model, "bank", "The bank.", "A bank.", cache_dir=tmp_path)


# --- the commands ---------------------------------------------------------------------------------------------------


def test_commands(tiny, small_wic, tmp_path, capsys):
    cache = str(tmp_path / "cache")
    args = ["--model", str(tiny), "--json"]
    assert main(["evaluate", "wic", str(small_wic / "dev"), "--train", str(small_wic / "train"), *args]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["pairs"] == 40 and len(result["layers"]) == 3
    assert (
        main(
            [
                "same-sense",
                "cat",
                "the cat sat",
                "a cat ran",
                "--calibrate",
                str(small_wic / "train"),
                "--cache-dir",
                cache,
                *args,
            ]
        )
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    assert answer["verdict"] in ("same sense", "different senses") and answer["calibration"].startswith(cache)
    assert (
        Lens(str(tiny), cache_dir=cache).same_sense("cat", "the cat sat", "a cat ran").probability
        == answer["probability"]
    )
    assert main(["evaluate", "wic", *args]) == 2
    assert "takes one WiC path" in json.loads(capsys.readouterr().out)["message"]
    assert main(["evaluate", "wordsim353", "--train", "x", *args]) == 2
    assert "--train applies only to evaluate wic" in json.loads(capsys.readouterr().out)["message"]
    assert main(["same-sense", "dog", "the cat sat", "a cat ran", *args]) == 2
    assert "does not occur" in json.loads(capsys.readouterr().out)["message"]
