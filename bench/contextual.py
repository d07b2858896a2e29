"""Contextual-vector throughput: bertlens against a plain transformers loop and sentence-transformers, one run.

The same sentences from WikiText-2 validation (../shared/data), the default model, CPU:

* plain transformers loop: batches of 32 in corpus order, padded to the longest, `output_hidden_states=True`;
* sentence-transformers: `encode(output_value="token_embeddings", batch_size=32)` (last layer only);
* bertlens `hidden_states` (every layer, every token), `word_vectors`-style pooling of every layer, and bfloat16.

Tokens/s counts the sentences' tokens with special tokens. Also reported: the smallest cosine between bertlens'
bfloat16 and float32 word vectors (last layer).

    python bench/contextual.py --sentences 1000
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np

WIKITEXT = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw" / "wiki.valid.raw"
)


def load_sentences(count: int) -> list[str]:
    found: list[str] = []
    for line in WIKITEXT.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        found += [s for s in re.split(r"(?<=[.!?]) (?=[A-Z])", line) if len(s.split()) > 3]
        if len(found) >= count:
            break
    return found[:count]


def timed(function) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from bertlens import load_model
    from bertlens.contextual import RunOptions, hidden_states, word_vectors_many

    sentences = load_sentences(args.sentences)
    model = load_model()
    tokenizer = model.vocabulary.tokenizer
    tokens = sum(len(tokenizer.encode(s).ids) for s in sentences)
    net = model.torch_model()

    def plain_loop() -> None:
        for start in range(0, len(sentences), 32):
            encodings = tokenizer.encode_batch(sentences[start : start + 32])
            longest = max(len(e.ids) for e in encodings)
            ids = torch.zeros((len(encodings), longest), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, e in enumerate(encodings):
                ids[row, : len(e.ids)] = torch.tensor(e.ids)
                mask[row, : len(e.ids)] = 1
            with torch.inference_mode():
                torch.stack(net(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)

    st = SentenceTransformer(str(model.source.path), device="cpu")

    every_layer = list(range(model.config.num_hidden_layers + 1))

    def words(dtype: str) -> list[np.ndarray]:
        """Every layer of every word, pieces mean-pooled: one (words, layers + 1, H) array per sentence."""
        options = RunOptions(dtype=dtype)  # type: ignore[arg-type]
        results = word_vectors_many(model, sentences, layers=every_layer, combine="concat", options=options)
        return [r.vectors.reshape(len(r.words), len(every_layer), -1) for r in results]

    for warm in (plain_loop, lambda: st.encode(sentences[:32], output_value="token_embeddings")):
        warm()
    hidden_states(model, sentences[:32])
    rows = [
        ("plain transformers loop (all layers)", timed(plain_loop)),
        (
            "sentence-transformers token_embeddings (last layer)",
            timed(lambda: st.encode(sentences, output_value="token_embeddings", batch_size=32)),
        ),
        ("bertlens hidden_states (all layers, tokens)", timed(lambda: hidden_states(model, sentences))),
        ("bertlens words (all layers, pieces mean-pooled)", timed(lambda: words("float32"))),
        ("bertlens words, bfloat16", timed(lambda: words("bfloat16"))),
    ]
    full, half = words("float32"), words("bfloat16")
    cosines = [
        (a[:, -1] * b[:, -1]).sum(-1) / np.linalg.norm(a[:, -1], axis=-1) / np.linalg.norm(b[:, -1], axis=-1)
        for a, b in zip(full, half, strict=True)
    ]
    print(f"{len(sentences)} sentences, {tokens} tokens; torch threads: {torch.get_num_threads()}\n")
    print("| tool | seconds | tokens/s |")
    print("| --- | ---: | ---: |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {tokens / seconds:.0f} |")
    print(f"\nbfloat16 vs float32 word vectors, last layer: smallest cosine {min(c.min() for c in cosines):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
