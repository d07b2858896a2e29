"""Adding 10,000 words to the default model: bertlens `extend` next to transformers' own resize, time and memory.

The words are the first N distinct lowercase alphabetic words of ../shared/data/corpus (WikiText-2, then enwiki-2015)
that the default model's tokenizer splits into two or more pieces (so none is in the vocabulary already). Each run is
a fresh Python process that loads the model, adds the words and saves a complete model directory; it reports the
seconds from before the load to after the save (imports excluded) and the process's peak resident memory
(`ru_maxrss`). What is compared:

* bertlens `pieces`, `neighbors` (k=10, over a cold similarity cache) and `mean-resizing`: `extend_vocabulary`, which
  copies the safetensors tensor by tensor and writes tokenizer.json with the new added tokens.
* transformers: `AutoTokenizer.add_tokens(words)` + `AutoModel.resize_token_embeddings(len(tokenizer),
  mean_resizing=True)` + `save_pretrained` of both (the usual recipe).

Afterwards the two mean-resizing outputs are compared: the mean of their new rows (they should agree within 1e-6).

    python bench/extend.py --words 10000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "corpus"
CORPORA = [DATA / "wikitext-2-raw" / f"wiki.{part}.raw" for part in ("valid", "test")] + [DATA / "enwiki-2015" / "AA"]

BERTLENS = """
import json, resource, sys, time
from bertlens import load_model
from bertlens.extend import ExtendOptions, extend_vocabulary
words = open(sys.argv[1], encoding="utf-8").read().split()
start = time.perf_counter()
result = extend_vocabulary(load_model(), words, sys.argv[2], ExtendOptions(strategy=sys.argv[3]))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "added": len(result.added)}))
"""

TRANSFORMERS = """
import json, resource, sys, time
import transformers
from transformers import AutoModel, AutoTokenizer
from bertlens.core.sources import default_model_dir
transformers.logging.set_verbosity_error()
words = open(sys.argv[1], encoding="utf-8").read().split()
directory = str(default_model_dir())
start = time.perf_counter()
tokenizer = AutoTokenizer.from_pretrained(directory)
added = tokenizer.add_tokens(words)
model = AutoModel.from_pretrained(directory)
model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
model.save_pretrained(sys.argv[2])
tokenizer.save_pretrained(sys.argv[2])
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "added": added}))
"""


def new_words(count: int) -> list[str]:
    """The first `count` distinct lowercase alphabetic corpus words the default tokenizer splits into pieces."""
    sys.path.insert(0, str(ROOT))
    from bertlens import load_model
    from bertlens.core.corpus import iter_texts

    tokenizer = load_model().vocabulary.tokenizer
    seen: set[str] = set()
    words: list[str] = []
    for corpus in CORPORA:
        for text in iter_texts(corpus):
            candidates = [w for w in dict.fromkeys(re.findall(r"\b[a-z]{4,}\b", text.text)) if w not in seen]
            seen.update(candidates)
            for word, encoding in zip(
                candidates, tokenizer.encode_batch(candidates, add_special_tokens=False), strict=True
            ):
                if len(encoding.ids) > 1:
                    words.append(word)
            if len(words) >= count:
                return words[:count]
    raise SystemExit(f"extend bench: only {len(words)} new words found in the corpora")


def run(script: str, words: Path, out: Path, *extra: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(words), str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"extend bench: a run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def new_rows_mean(directory: Path, count: int) -> object:
    from safetensors.numpy import load_file

    weights = load_file(str(directory / "model.safetensors"))
    name = next(k for k in weights if k.endswith("word_embeddings.weight"))
    return weights[name][-count:].astype("float64").mean(axis=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=10_000, help="how many words to add (default 10,000)")
    args = parser.parse_args()
    words = new_words(args.words)
    print(f"{len(words)} new words, e.g. {', '.join(words[:8])}")
    print()
    print("| tool | strategy | seconds | peak RSS MB | words added |")
    print("| --- | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        listing = folder / "words.txt"
        listing.write_text("\n".join(words) + "\n", encoding="utf-8")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERTLENS_CACHE": str(folder / "cache")}  # children only
        runs = [
            ("bertlens", "pieces", BERTLENS, ("pieces",)),
            ("bertlens", "neighbors", BERTLENS, ("neighbors",)),
            ("bertlens", "mean-resizing", BERTLENS, ("mean-resizing",)),
            ("transformers", "mean_resizing=True", TRANSFORMERS, ()),
        ]
        outputs = {}
        for tool, strategy, script, extra in runs:
            out = folder / f"{tool}-{strategy}"
            found = run(script, listing, out, *extra, env=env)
            outputs[(tool, strategy)] = out
            print(f"| {tool} | {strategy} | {found['seconds']:.1f} | {found['peak_mb']:.0f} | {found['added']:.0f} |")
        ours = new_rows_mean(outputs[("bertlens", "mean-resizing")], len(words))
        theirs = new_rows_mean(outputs[("transformers", "mean_resizing=True")], len(words))
        print()
        print(f"mean-resizing: largest difference between the means of the new rows: {abs(ours - theirs).max():.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
