"""Words pooled inside the batch (contextual/word_states.py) against every layer of every token pooled afterwards.

The oracle is the path word vectors took before: `hidden_states` for the texts, then `select_layers` and `pool_words`
in numpy. Run on a float64 twin, both see the same float64 states rounded to float32; pooling in torch and in numpy
then differ only in the order of a few float32 sums (mean: its pieces; sum/mean of layers: seven terms).
"""

from __future__ import annotations

import numpy as np
import pytest
from bounds import float64_twin, mean_bound, sum_bound

from bertlens import InputError
from bertlens.contextual.pooling import pool_words, word_runs
from bertlens.contextual.states import RunOptions, hidden_states, select_layers
from bertlens.contextual.word_states import word_states

pytestmark = pytest.mark.parity  # held to transformers and tokenizers: run on each version pyproject allows

TEXTS = ["The banana bread was horrible, unbelievably so.", "", "hello , world !!", "I like eating bread"]
LONG = "the cat sat on the mat " * 15  # over the tiny model's 64 tokens: windows, pooled in numpy after hidden_states


@pytest.fixture(scope="module")
def twin(tiny_models):
    return float64_twin(tiny_models["bert"])  # 2 layers: layers 0, 1, 2


@pytest.fixture(scope="module")
def oracle_states(twin):
    return hidden_states(twin, [*TEXTS, LONG])


@pytest.mark.parametrize("pool", ["mean", "max", "first", "last", "first+last"])
@pytest.mark.parametrize("combine", [None, "mean", "sum", "concat"])
def test_pooled_in_the_batch_equals_pooled_afterwards(twin, oracle_states, pool, combine):
    layers = [0, 1, -1]
    ours = word_states(twin, [*TEXTS, LONG], layers=layers, pool=pool, combine=combine)
    for mine, states in zip(ours, oracle_states, strict=True):
        runs = [[t.index for t in r] for r in word_runs(states.tokens)]
        assert [list(r) for r in mine.runs] == runs and mine.pieces == tuple(t.piece for t in states.tokens)
        spans = [(r[0].start, r[-1].end) for r in word_runs(states.tokens)]
        assert list(mine.spans) == spans and [mine.word(w) for w in range(len(spans))] == [
            states.text[a:b] for a, b in spans
        ]
        chosen = states.states[[0, 1, 2]]  # (3, tokens, H)
        if combine is not None:
            chosen = select_layers(chosen, [0, 1, 2], combine)[None]  # (1, tokens, D)
        expected = pool_words(chosen, runs, pool)  # (layers or 1, words, D)
        assert mine.vectors.shape == expected.shape and mine.vectors.dtype == np.float32
        if not runs:
            continue
        # Both sum the same float32 values in their own order: twice the any-order bound of those sums.
        pieces = np.stack([chosen[:, r].sum(axis=1) if pool == "mean" else chosen[:, r[0]] for r in runs], axis=1)
        slack = 2 * (mean_bound(np.abs(pieces), axis=None) if pool == "mean" else 0.0)
        if combine in ("mean", "sum"):
            slack = slack + 2 * sum_bound(np.abs(states.states[[0, 1, 2]]), axis=0).max()
        assert np.abs(mine.vectors - expected).max() <= slack + np.spacing(np.abs(expected)).max()


def test_bfloat16_words_are_widened_before_pooling(default_model):
    full = word_states(default_model, TEXTS, layers=[-1], options=RunOptions())
    half = word_states(default_model, TEXTS, layers=[-1], options=RunOptions(dtype="bfloat16"))
    for a, b in zip(full, half, strict=True):
        assert a.runs == b.runs and b.vectors.dtype == np.float32
        if a.runs:
            cos = (
                (a.vectors * b.vectors).sum(-1)
                / np.linalg.norm(a.vectors, axis=-1)
                / np.linalg.norm(b.vectors, axis=-1)
            )
            assert cos.min() > 0.99  # bfloat16's 8 bits: see test_contextual.test_bfloat16_keeps_direction


def test_bad_inputs(default_model):
    with pytest.raises(InputError, match="list of texts"):
        word_states(default_model, "one text", layers=[-1])
    with pytest.raises(InputError, match="pooling"):
        word_states(default_model, ["a"], layers=[-1], pool="median")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="layer combination"):
        word_states(default_model, ["a"], layers=[-1], combine="product")  # type: ignore[arg-type]


def test_words_and_tokens_leave_little_for_the_garbage_collector(default_model):
    """Each new object Python's collector tracks adds to its full collections, which walk every object torch and
    transformers keep alive: words and tokens are lists of ints and strings per text (word_states, `Words`, `Tokens`),
    and a `Word` or `Token` is made only when read. Counted with the collector paused: what the results keep."""
    import gc
    import random

    from bertlens.contextual.vectors import word_vectors_many

    rng = random.Random(0)
    vocabulary = [
        "the",
        "a",
        "bread",
        "river",
        "bank",
        "unbelievably",
        "photosynthesis",
        "sat",
        "on",
        "mat",
        "cat",
        "dog",
        ",",
        ".",
        "ran",
        "quickly",
    ]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 30))) for _ in range(200)]
    layers = [0, -1]
    word_vectors_many(default_model, texts, layers=layers)  # warm: the model's inference copy and caches

    def kept(run):  # (tracked objects the results keep, words)
        gc.collect()
        gc.disable()
        try:
            before = gc.get_count()[0]
            found = run()
            return gc.get_count()[0] - before, found
        finally:
            gc.enable()

    new, states = kept(lambda: word_states(default_model, texts, layers=layers))
    words = sum(len(s) for s in states)
    assert words > 2000 and new < 10 * len(texts)  # a handful per text, none per word (a tuple per run and span was)
    new, vectors = kept(lambda: word_vectors_many(default_model, texts, layers=layers))
    assert sum(len(v.words) for v in vectors) == words
    assert new < 20 * len(texts)  # none per word: it was a Word and three tuples, then a Word
    new, states = kept(lambda: hidden_states(default_model, texts))
    assert sum(len(s.tokens) for s in states) > words and new < 20 * len(texts)  # none per token: a Token each was
