"""WiC (word in context) with the default model: per-layer dev accuracy under the published protocol (a cosine
threshold chosen on train), then a search over read-out recipes, printed as the Markdown of docs/benchmarks.md.

Each recipe is fitted on WiC's train split and scored three ways: on train itself, by 5-fold cross-validation on train
with the folds grouped by word (no lemma in two folds, so the score is not inflated by pairs sharing a word), and on
dev. The default recipe is chosen by the grouped cross-validation, not by dev. WiC is read from ../shared/data/wic
(CC BY-NC: never copied into the package).

    python bench/wic.py                                  # the bundled default model, CPU
    python bench/wic.py --wic ../shared/data/wic --device cuda --json wic.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

DEFAULT_WIC = Path(__file__).resolve().parents[2] / "shared" / "data" / "wic"
POOLS = ("mean", "first", "last", "max")
CS = (0.01, 0.1, 1.0)


def grouped_cv(vectors, same, words, recipe, folds: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Accuracy of `recipe`'s read-out by cross-validation on train, folds grouped by word."""
    from bertlens.wic.wic_readout import PairVectors, fit_readout

    distinct = sorted(set(words))
    fold_of = {w: i % folds for i, w in enumerate(np.random.default_rng(0).permutation(distinct))}
    fold = np.array([fold_of[w] for w in words])
    hits = 0
    for k in range(folds):
        train, test = fold != k, fold == k

        def part(mask: np.ndarray) -> PairVectors:
            return PairVectors(vectors.target[:, mask], None if vectors.masked is None else vectors.masked[:, mask])

        readout = fit_readout(part(train), same[train], recipe)
        hits += int(((readout.probability(readout.features(part(test))) >= 0.5) == same[test]).sum())
    return hits / len(same)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="a model directory or cached hub id (default: the bundled one)")
    parser.add_argument("--wic", default=str(DEFAULT_WIC), help="the WiC folder holding train/ and dev/")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()

    from bertlens import load_model
    from bertlens.contextual.states import RunOptions
    from bertlens.wic.wic import evaluate_wic, pair_vectors, read_wic
    from bertlens.wic.wic_readout import PairVectors, WicRecipe, fit_readout

    model = load_model(args.model)
    options = RunOptions(device=args.device)
    train_path, dev_path = Path(args.wic) / "train", Path(args.wic) / "dev"
    start = time.perf_counter()
    result = evaluate_wic(model, dev_path, train=train_path, options=options)
    print(f"Model: {model.source.description}; {time.perf_counter() - start:.0f} s for evaluate_wic\n")
    print("| layer | threshold (from train) | train accuracy | dev accuracy |\n|---|---|---|---|")
    for r in result.layers:
        star = " (best on train)" if r.layer == result.best_layer else ""
        print(f"| {r.layer}{star} | {r.threshold:.4f} | {100 * r.train_accuracy:.1f} | {100 * r.accuracy:.1f} |")
    print(f"| default read-out | | {100 * result.recipe_train_accuracy:.1f} | {100 * result.recipe_accuracy:.1f} |\n")

    train, dev = read_wic(train_path), read_wic(dev_path)
    y_train = np.array([p.same for p in train], dtype=bool)
    y_dev = np.array([p.same for p in dev], dtype=bool)
    words = [p.word for p in train]
    rows = []
    for pool in POOLS:
        full = WicRecipe(pool=pool, context=True)
        vectors = pair_vectors(model, train, full, options), pair_vectors(model, dev, full, options)
        for context, centre, c in itertools.product((False, True), (False, True), CS):
            recipe = WicRecipe(pool=pool, context=context, centre=centre, c=c)
            tv, dv = (v if context else PairVectors(v.target, None) for v in vectors)
            readout = fit_readout(tv, y_train, recipe)
            fit = float(((readout.probability(readout.features(tv)) >= 0.5) == y_train).mean())
            held = float(((readout.probability(readout.features(dv)) >= 0.5) == y_dev).mean())
            cv = grouped_cv(tv, y_train, words, recipe)
            rows.append(
                {"pool": pool, "context": context, "centre": centre, "c": c, "train": fit, "cv": cv, "dev": held}
            )
            print(f"  {pool} context={context} centre={centre} c={c}: train {fit:.3f} cv {cv:.3f} dev {held:.3f}")
    print("\n| pooling | context (word masked) | centred per layer | C | train | grouped 5-fold CV on train | dev |")
    print("|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -r["cv"]):
        print(
            f"| {r['pool']} | {'yes' if r['context'] else 'no'} | {'yes' if r['centre'] else 'no'} | {r['c']} | "
            f"{100 * r['train']:.1f} | {100 * r['cv']:.1f} | {100 * r['dev']:.1f} |"
        )
    best = max(rows, key=lambda r: r["cv"])
    print(f"\nBest by grouped CV: {best}")
    if args.json:
        dump = {"model": model.source.description, "layers": result.to_dict(), "recipes": rows, "best": best}
        Path(args.json).write_text(json.dumps(dump, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
