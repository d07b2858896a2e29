"""How good `bertlens senses` is: pseudo-word disambiguation and agreement with WiC, every layer, one run.

Data from ../shared/data (never shipped): English Wikipedia 2015 (enwiki-2015, WikiExtractor) as the corpus; WiC dev
(CC BY-NC 4.0) for the labels. The default model, CPU. See bertlens/occurrences/senses_quality.py for the protocols.

Pseudo-words: PAIRS below, unrelated nouns of similar frequency in enwiki-2015 (counts in its first 40 files beside
each pair); `--per-word` sentences of each word (sentences holding both are skipped), the same number of each.

    python bench/senses_quality.py --per-word 50 --wic-pairs 150 --wic-per-word 20 --json-out senses_quality.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bertlens import load_model
from bertlens.occurrences.senses_quality import pseudo_words, wic_agreement

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CORPUS = DATA / "corpus" / "enwiki-2015"
WIC = DATA / "wic" / "dev"
PAIRS = [
    ("museum", "election"),  # 1051, 1002
    ("medicine", "airport"),  # 701, 689
    ("forest", "engine"),  # 644, 608
    ("theatre", "mathematics"),  # 451, 440
    ("senate", "guitar"),  # 426, 372
    ("poetry", "castle"),  # 311, 290
    ("cathedral", "bicycle"),  # 203, 195
    ("piano", "tennis"),  # 184, 165
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-word", type=int, default=50, help="pseudo-words: sentences of each word")
    parser.add_argument("--pairs", type=int, default=len(PAIRS), help="pseudo-words: how many of PAIRS")
    parser.add_argument("--wic-pairs", type=int, default=150, help="WiC dev pairs scored (the first N)")
    parser.add_argument("--wic-per-word", type=int, default=20, help="WiC: corpus sentences of each word")
    parser.add_argument("--skip-wic", action="store_true")
    parser.add_argument("--json-out", help="write both results' to_dict() here")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"needs {CORPUS} (../shared/data)")
    model = load_model()
    start = time.perf_counter()
    pseudo = pseudo_words(model, CORPUS, PAIRS[: args.pairs], per_word=args.per_word, progress=True)
    print(pseudo.to_table())
    for pair in pseudo.pairs:
        best = max(pair.accuracy, key=lambda layer: pair.accuracy[layer])
        print(
            f"  {pair.first}/{pair.second} {pair.occurrences}: "
            f"best k=2 accuracy {pair.accuracy[best]:.3f} (layer {best})"
        )
    print(f"pseudo-words: {time.perf_counter() - start:.0f} s")
    out = {"pseudo_words": pseudo.to_dict()}
    if not args.skip_wic:
        start = time.perf_counter()
        wic = wic_agreement(
            model,
            WIC / "dev.data.txt",
            WIC / "dev.gold.txt",
            CORPUS,
            per_word=args.wic_per_word,
            limit=args.wic_pairs,
            progress=True,
        )
        print(wic.to_table())
        print(f"WiC agreement: {time.perf_counter() - start:.0f} s")
        out["wic"] = wic.to_dict()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
