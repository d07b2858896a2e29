"""Quality of the input matrix as static word vectors: every named word-similarity benchmark, and Google and BATS
analogies by 3CosAdd and 3CosMul, printed as the Markdown tables of docs/benchmarks.md.

Word pairs: each word tokenized alone (no special tokens, no padding), its pieces' rows mean-pooled, cosine;
Spearman and Pearson against the human scores (`bertlens.similarity.evaluate.evaluate_pairs`).
Analogies: answers among the whole-word tokens, with a, b and c's pieces excluded; a question is covered when an
accepted answer is a single whole-word token (`bertlens.similarity.evaluate.evaluate_analogies`). Everything reads
the data shipped inside the package.

    python bench/benchmarks_quality.py                    # the bundled default model
    python bench/benchmarks_quality.py --model DIR --json quality.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import version


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="a model directory or cached hub id (default: the bundled one)")
    parser.add_argument("--json", metavar="PATH", help="also write every result's to_dict() here")
    args = parser.parse_args()

    from bertlens import load_model
    from bertlens.similarity.benchmarks import ANALOGY_BENCHMARKS, SIMILARITY_BENCHMARKS
    from bertlens.similarity.evaluate import evaluate_analogies, evaluate_pairs
    from bertlens.similarity.index import open_index

    model = load_model(args.model)
    print(f"Model: {model.source.description}\n")
    dump: dict[str, object] = {"model": model.source.description, "pairs": {}, "analogies": {}}

    print("| benchmark | pairs | several pieces | [UNK] | skipped | Spearman | Pearson | seconds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in SIMILARITY_BENCHMARKS:
        start = time.perf_counter()
        result = evaluate_pairs(model, name)
        seconds = time.perf_counter() - start
        dump["pairs"][name] = result.to_dict()  # type: ignore[index]
        print(
            f"| {name} | {result.pairs_total} | {result.pairs_multi_piece} | {result.pairs_unknown} | "
            f"{len(result.skipped)} | {result.spearman:.3f} | {result.pearson:.3f} | {seconds:.2f} |"
        )

    with tempfile.TemporaryDirectory() as cache:  # a fresh similarity index, so no old cache is timed
        index = open_index(model, cache)
        print()
        print("| benchmark | method | questions | covered | correct | accuracy | on covered | by group | seconds |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
        for name in ANALOGY_BENCHMARKS:
            for method in ("3cosadd", "3cosmul"):
                start = time.perf_counter()
                result = evaluate_analogies(model, name, method=method, index=index)
                seconds = time.perf_counter() - start
                dump["analogies"][f"{name} {method}"] = result.to_dict()  # type: ignore[index]
                groups = ", ".join(f"{_short(g.name)} {g.accuracy:.3f}" for g in result.groups)
                print(
                    f"| {name} | {method} | {result.questions} | {result.covered} | {result.correct} | "
                    f"{result.accuracy:.3f} | {result.accuracy_covered:.3f} | {groups} | {seconds:.1f} |"
                )

    print(
        f"\nMachine: nproc {os.cpu_count()}, {platform.platform()}; Python {platform.python_version()}, "
        f"numpy {version('numpy')}, bertlens {version('bertlens')}."
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(dump, out)
    return 0


def _short(group: str) -> str:
    """'1_Inflectional_morphology' -> 'inflectional morphology' (BATS); other names unchanged."""
    head, _, rest = group.partition("_")
    return rest.replace("_", " ").lower() if head.isdigit() and rest else group


if __name__ == "__main__":
    sys.exit(main())
