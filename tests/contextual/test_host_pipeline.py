"""The word path's host pipeline (contextual/pipeline.py) with a device step that runs the real model on the CPU
(contextual/device_step.py): the same words and rows as the normal word path, for tiny models of several families
and the default model, over ragged, empty and long texts, whatever the chunks and batches; and its flat arrays (ids,
words, their characters) as the tokenizer's own encodings give them, token by token."""

from __future__ import annotations

import threading
from importlib import resources

import numpy as np
import pytest
from nasty import NASTY
from tokenizers import AddedToken, Tokenizer

from bertlens.contextual.device_step import WordStep, attention_kind, flat_encoder_reason
from bertlens.contextual.pipeline import flat_positions, lay_out, word_batches
from bertlens.contextual.pooling import word_runs
from bertlens.contextual.word_states import word_states
from bertlens.core.families import position_ids
from bertlens.core.tokens import tokenization_of

TEXTS = [
    "I like eating bread.",
    "",
    "a",
    "The bank raised its rates; we sat on the river bank.",
    "   ",
    "Unbelievably, antidisestablishmentarianism resurfaced again, " * 2,
    "photosynthesis",
    "dogs walked",
]
LONG = "the dog walked and the cat sat " * 12  # over a tiny model's 64 positions: windows, not the pipeline


def pipeline_states(model, texts, layers, pool, combine, attention=None, batch_tokens=24, chunk=3):
    """Each text's (first, last, starts, ends, vectors) from the pipeline, and the texts it left out."""
    step = WordStep(model, "cpu", "float32", layers, pool, combine, attention=attention)
    found, over = {}, []
    limit = model.config.max_position_embeddings if model.family.model_type == "bert" else None
    for batch in word_batches(model, texts, step, batch_tokens=batch_tokens, chunk=chunk, limit=limit, over=over):
        vectors = batch.vectors.numpy()
        assert vectors.dtype == np.float32 and vectors.shape[1] == len(batch)
        for row, i in enumerate(batch.texts.tolist()):
            a, b = batch.word_starts[row], batch.word_starts[row + 1]
            columns = (batch.first[a:b], batch.last[a:b], batch.starts[a:b], batch.ends[a:b])
            found[i] = (*(c.tolist() for c in columns), vectors[:, a:b])
            assert batch.pieces(row) == tuple(model.vocabulary.tokenizer.encode(texts[i]).tokens)
    return found, [i for i, _ in over]


def assert_same(model, texts, found, layers, pool, combine):
    expected = word_states(model, texts, layers=layers, pool=pool, combine=combine)
    assert sorted(found) == list(range(len(texts)))
    for i, want in enumerate(expected):
        first, last, starts, ends, vectors = found[i]
        assert (first, last, starts, ends) == (want.first, want.last, want.starts, want.ends), texts[i]
        assert vectors.shape == want.vectors.shape
        scale = max(1.0, np.abs(want.vectors).max(initial=0))
        np.testing.assert_allclose(vectors, want.vectors, rtol=0, atol=2e-5 * scale)


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "electra"])
def test_the_pipelines_rows_are_the_word_paths_on_tiny_models(tiny_models, family):
    model = tiny_models[family]
    texts = [*TEXTS, "the <pad> dog" if family == "roberta" else "the [PAD] dog"]  # a pad token inside a text
    layers = [0, model.config.num_hidden_layers]
    found, over = pipeline_states(model, texts, layers, "mean", None)
    assert over == []
    assert_same(model, texts, found, layers, "mean", None)


@pytest.mark.parametrize("attention", ["padded", "jagged"])
@pytest.mark.parametrize(("pool", "combine"), [("mean", "concat"), ("max", "mean"), ("first+last", None)])
def test_every_attention_and_pooling_gives_the_word_paths_rows(tiny_models, attention, pool, combine):
    model = tiny_models["bert"]
    found, _ = pipeline_states(model, TEXTS, [0, 1, 2], pool, combine, attention=attention)
    assert_same(model, TEXTS, found, [0, 1, 2], pool, combine)


def test_the_default_models_rows_in_one_batch_or_many(default_model):
    layers = [0, 3, 6]
    one, _ = pipeline_states(default_model, TEXTS, layers, "mean", "concat", batch_tokens=10_000, chunk=100)
    many, _ = pipeline_states(default_model, TEXTS, layers, "mean", "concat", batch_tokens=16, chunk=2)
    assert_same(default_model, TEXTS, one, layers, "mean", "concat")
    for i in range(len(TEXTS)):
        assert one[i][:4] == many[i][:4]
        np.testing.assert_allclose(one[i][4], many[i][4], rtol=0, atol=1e-4)


def test_texts_over_the_limit_are_left_to_the_caller(tiny_models):
    model = tiny_models["bert"]
    texts = ["a dog", LONG, "the cat"]
    found, over = pipeline_states(model, texts, [2], "mean", None)
    assert over == [1] and sorted(found) == [0, 2]
    assert len(model.vocabulary.tokenizer.encode(LONG).ids) > model.config.max_position_embeddings


def test_word_states_with_a_long_text_still_match_after_the_change(tiny_models):
    model = tiny_models["bert"]
    texts = ["a dog", LONG]
    states = word_states(model, texts, layers=[1])
    assert [len(s) for s in states] == [2, len(LONG.split())]


EDGES = [
    "[MASK] in capitals",
    "a [mask] in small letters and a [Sep] in both",
    "the [CLS][SEP] pair",
    "a cafe here, a café there, a CAFÉ and a new-word or NEW-WORD",
    "tab\tseparated, new\nline",
    "  leading and trailing  ",
    "123,456.78 and 1e-9; 'single' \"double\" `back`",
]


def corpus_sample() -> list[str]:
    text = resources.files("bertlens.data.sample").joinpath("wikitext-2-valid.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines()[:200]]


def assert_laid_out_as_encoded(model, tokenizer, texts):
    """`lay_out` of the tokenizer's encodings: their ids end to end, and each text's words as `pooling.word_runs`
    groups its tokens (core/tokens), read token by token."""
    encodings = tokenizer.encode_batch(texts)
    laid = lay_out(encodings)
    assert laid.token_starts.tolist() == np.cumsum([0] + [len(e) for e in encodings]).tolist()
    assert laid.ids.tolist() == [i for e in encodings for i in e.ids]
    want = {key: [] for key in ("pieces", "word_of_piece", "first", "last", "starts", "ends")}
    for base, encoding, text in zip(laid.token_starts.tolist(), encodings, texts, strict=False):
        for run in word_runs(tokenization_of(model, encoding, text).tokens):
            want["pieces"] += [base + token.index for token in run]
            want["word_of_piece"] += [len(want["first"])] * len(run)
            want["first"].append(base + run[0].index)
            want["last"].append(base + run[-1].index)
            want["starts"].append(run[0].start)
            want["ends"].append(run[-1].end)
    found = vars(laid.words) | {"starts": laid.starts, "ends": laid.ends}
    assert {key: column.tolist() for key, column in found.items()} == want


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta", "distilbert", "albert", "deberta-v2"])
def test_laid_out_as_the_tokenizer_encodes_on_tiny_models(tiny_models, family):
    model = tiny_models[family]
    assert_laid_out_as_encoded(model, model.vocabulary.tokenizer, [*corpus_sample()[:50], *NASTY, *EDGES])


def test_laid_out_as_the_default_tokenizer_encodes(default_model):
    tokenizer = default_model.vocabulary.tokenizer
    assert_laid_out_as_encoded(default_model, tokenizer, [*corpus_sample(), *NASTY, *EDGES])
    for texts in ([], [""], ["[MASK]"]):
        assert_laid_out_as_encoded(default_model, tokenizer, texts)


def test_laid_out_with_added_tokens_that_the_normalizer_changes(default_model):
    tokenizer = Tokenizer.from_str(default_model.vocabulary.tokenizer.to_str())
    tokenizer.add_tokens(["café", AddedToken("new-word", normalized=True)])  # an uncased tokenizer: "café" is "cafe"
    cafe = tokenizer.token_to_id("café")
    assert cafe in tokenizer.encode("a cafe here").ids  # the added token, not the vocabulary's "cafe"
    assert_laid_out_as_encoded(default_model, tokenizer, [*corpus_sample()[:50], *NASTY, *EDGES])


@pytest.mark.parametrize("scheme", ["absolute", "absolute-offset"])
def test_flat_positions_restart_at_every_text(scheme):
    rows = [np.array([0, 5, 1, 1, 7, 2]), np.array([0, 1, 2]), np.array([0, 9, 2])]  # 1 is the pad id
    ids = np.concatenate(rows)
    starts = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    expected = np.concatenate([position_ids(r, scheme, 1) for r in rows])
    assert flat_positions(ids, starts, scheme, 1).tolist() == expected.tolist()


def test_which_models_run_flat_and_how_they_attend(tiny_models, default_model):
    assert flat_encoder_reason(default_model.torch_model_on("cpu", "float32")) is None
    assert flat_encoder_reason(tiny_models["distilbert"].torch_model_on("cpu", "float32")) == "not a BERT-style encoder"
    assert attention_kind(default_model, "cpu", "float32") == "padded"  # nested tensors take a slow path on CPUs


def test_an_error_on_the_device_reaches_the_caller_and_no_thread_is_left(tiny_models):
    model = tiny_models["bert"]
    texts = ["the dog walked", "a cat"] * 20

    def failing(batch):
        raise RuntimeError("the device failed")

    with pytest.raises(RuntimeError, match="the device failed"):
        list(word_batches(model, texts, failing, batch_tokens=16, chunk=4))
    step = WordStep(model, "cpu", "float32", [1], "mean", None)
    batches = word_batches(model, texts, step, batch_tokens=16, chunk=4)
    assert len(next(batches)) > 0
    batches.close()  # stopped early: the encoding and layout threads end with it
    assert not [thread.name for thread in threading.enumerate() if thread.name.startswith("bertlens-")]
