"""The same-sense calibration shipped with bertlens for the default model, made from sentences written for bertlens
(bench/same_sense/senses.tsv, MIT like the rest of the repository), and measured on WiC's dev split.

senses.tsv holds, per word, a few sentences for each of two senses. Every word gives every pair of its sentences of
the same sense (labelled T) and as many pairs of sentences of different senses (F), written in WiC's format to
bertlens/data/same_sense/pairs.{data,gold}.txt. The calibration (`fit_calibration`, the default read-out) is fitted on
them and stored as bertlens/data/same_sense/calibration.json; its cut is balanced (the median of the log-odds of pairs
held out of the fit, grouped by word: `balanced_readout`). It is then scored on WiC dev (CC BY-NC: used to measure,
never shipped or fitted on): the verdict's accuracy and its share of "same" answers (dev is half same), and the same
on WiC train, beside the same read-out fitted on WiC's train split.

    python bench/same_sense_calibration.py                    # write the pairs and the calibration, score on WiC dev
    python bench/same_sense_calibration.py --check            # score the shipped calibration only (nothing written)
    python bench/same_sense_calibration.py --wic-train        # also fit on WiC train and score that on dev (slower)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import re
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SENSES = ROOT / "bench" / "same_sense" / "senses.tsv"
SHIPPED = ROOT / "bertlens" / "data" / "same_sense"
DEFAULT_WIC = ROOT.parent / "shared" / "data" / "wic"
_MARK = re.compile(r"\[([^\[\]]+)\]")


def wic_line(word: str, pos: str, first: str, second: str) -> str:
    """One pair in WiC's format; the marked word becomes one whitespace token (punctuation around it split off)."""

    def plain(sentence: str) -> tuple[str, int]:
        mark = _MARK.search(sentence)
        assert mark is not None and len(_MARK.findall(sentence)) == 1, sentence
        before, after = sentence[: mark.start()], sentence[mark.end() :]
        before = before if not before or before.endswith(" ") else before + " "
        after = after if not after or after.startswith(" ") else " " + after
        return f"{before}{mark[1]}{after}", len(before.split())

    (one, i), (two, j) = plain(first), plain(second)
    return f"{word}\t{pos}\t{i}-{j}\t{one}\t{two}"


def make_pairs() -> tuple[list[str], list[str]]:
    """(data lines, gold lines): per word, all same-sense pairs and as many different-sense pairs."""
    by_word: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in SENSES.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            word, pos, sense, sentence = line.split("\t")
            by_word[(word, pos)][sense].append(sentence)
    data, gold = [], []
    for (word, pos), senses in by_word.items():
        assert len(senses) == 2, word
        a, b = senses.values()
        same = [*itertools.combinations(a, 2), *itertools.combinations(b, 2)]
        different = [(x, y) for i, x in enumerate(a) for j, y in enumerate(b) if i != j][: len(same)]
        for label, pairs in (("T", same), ("F", different)):
            for first, second in pairs:
                data.append(wic_line(word, pos, first, second))
                gold.append(label)
    return data, gold


def readout_accuracy(model, calibration, path: Path) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The calibration's verdict (read-out, P >= 0.5) against the gold labels of a WiC split: (accuracy, the share of
    "same" answers)."""
    from bertlens.contextual.states import RunOptions
    from bertlens.wic.wic import pair_vectors, read_wic

    pairs = read_wic(path)
    vectors = pair_vectors(model, pairs, calibration.readout.recipe, RunOptions())
    readout = calibration.readout
    same = np.array([p.same for p in pairs], dtype=bool)
    answers = readout.probability(readout.features(vectors)) >= 0.5
    return float((answers == same).mean()), float(answers.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wic", type=Path, default=DEFAULT_WIC, help="WiC's folder (with dev/ and train/)")
    parser.add_argument("--check", action="store_true", help="score the shipped calibration; write nothing")
    parser.add_argument("--wic-train", action="store_true", help="also fit the read-out on WiC train, score on dev")
    args = parser.parse_args()

    from bertlens import load_model
    from bertlens.core.sources import DEFAULT_MODEL_PIP_NAME
    from bertlens.wic.same_sense import SHIPPED_CALIBRATION, Calibration, fit_calibration

    model = load_model()
    if args.check:
        calibration = Calibration.from_json(SHIPPED_CALIBRATION.read_text("utf-8"), str(SHIPPED_CALIBRATION))
    else:
        data, gold = make_pairs()
        SHIPPED.mkdir(exist_ok=True)
        (SHIPPED / "pairs.data.txt").write_text("\n".join(data) + "\n", "utf-8")
        (SHIPPED / "pairs.gold.txt").write_text("\n".join(gold) + "\n", "utf-8")
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as cache:
            fitted = fit_calibration(model, SHIPPED, cache_dir=cache)
        words = len({line.split("\t")[0] for line in data})
        print(f"fitted on {len(data)} pairs of {words} words in {time.perf_counter() - start:.0f} s")
        # the shipped file names the model without this machine's path to it
        model_named = {**fitted.model, "description": f"default model ({DEFAULT_MODEL_PIP_NAME})"}
        calibration = dataclasses.replace(fitted, source="pairs.data.txt", model=model_named)
    dev, dev_same = readout_accuracy(model, calibration, args.wic / "dev")
    print(
        f"WiC dev (638 pairs, half same): the shipped verdict is right on {100 * dev:.1f}%, "
        f"'same' on {100 * dev_same:.1f}%"
    )
    if args.wic_train:
        train, train_same = readout_accuracy(model, calibration, args.wic / "train")
        print(f"WiC train (half same): right on {100 * train:.1f}%, 'same' on {100 * train_same:.1f}%")
    if not args.check:
        about = (
            f"{calibration.pairs:,} pairs of sentences written for bertlens (MIT), "
            f"{100 * dev:.1f}% right on WiC's dev split, answering 'same' on {100 * dev_same:.1f}%"
        )
        calibration = dataclasses.replace(calibration, about=about, wic_dev_accuracy=dev, wic_dev_same=dev_same)
        text = json.dumps(json.loads(calibration.to_json()), separators=(",", ":")) + "\n"
        (SHIPPED / "calibration.json").write_text(text, "utf-8")
        print(f"wrote {SHIPPED / 'calibration.json'} ({len(text) // 1024} KiB)")
    if args.wic_train:
        with tempfile.TemporaryDirectory() as cache:
            on_wic = fit_calibration(model, args.wic / "train", cache_dir=cache)
        on_dev, on_dev_same = readout_accuracy(model, on_wic, args.wic / "dev")
        print(
            f"The read-out fitted on WiC train, on WiC dev: right on {100 * on_dev:.1f}%, "
            f"'same' on {100 * on_dev_same:.1f}%"
        )


if __name__ == "__main__":
    main()
