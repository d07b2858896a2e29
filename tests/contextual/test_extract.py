"""Streaming extraction: shards equal in-memory vectors, resume neither loses nor duplicates rows, bad inputs."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from bertlens import InputError
from bertlens.contextual import RunOptions, hidden_states, word_vectors_many
from bertlens.contextual.extract import ExtractOptions, extract, read_shards

LINES = ["the cat sat on the mat", "a dog ran", "", "the big red car", " = Heading = ", "good day", "the house"]


@pytest.fixture
def corpus(tmp_path):
    file = tmp_path / "corpus.txt"
    file.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return file


def rows(out):
    shards = list(read_shards(out))
    return (
        np.concatenate([s[0] for s in shards]),
        np.concatenate([s[1] for s in shards]),
        [w for s in shards for w in s[2]],
        np.concatenate([s[3] for s in shards]),
    )


@pytest.mark.parametrize("fmt", ["npy", "parquet"])
def test_word_rows_equal_in_memory_vectors(tiny_models, corpus, tmp_path, fmt):
    model = tiny_models["bert"]
    result = extract(model, corpus, tmp_path / "out", options=ExtractOptions(format=fmt, shard_texts=2))
    texts = [t for t in LINES if t.strip() and not t.strip().startswith("=")]
    assert result.texts == 5 and result.shards == 3
    ids, positions, words, vectors = rows(tmp_path / "out")
    # A shard's texts run through the model together, as word_vectors_many runs them: the same forward pass and
    # pooling, so the same bits (alone, a text would be summed in other orders: test_contextual bounds that).
    expected = [e for start in range(0, len(texts), 2) for e in word_vectors_many(model, texts[start : start + 2])]
    assert words == [w.text for e in expected for w in e.words]
    assert ids.tolist() == [i for i, e in enumerate(expected) for _ in e.words]
    assert positions.tolist() == [p for e in expected for p in range(len(e.words))]
    np.testing.assert_array_equal(vectors, np.concatenate([e.vectors for e in expected]))
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["complete"] is True


def test_token_rows_and_layers(tiny_models, corpus, tmp_path):
    model = tiny_models["bert"]
    options = ExtractOptions(level="token", layers=(0, -1), combine="concat")
    result = extract(model, corpus, tmp_path / "out", options=options)
    _, _, pieces, vectors = rows(tmp_path / "out")
    assert result.dims == 64 and vectors.shape == (result.rows, 64)
    texts = [t for t in LINES if t.strip() and not t.strip().startswith("=")]
    first = hidden_states(model, texts)[0]  # one shard: every text in one batch, as extract runs them
    assert pieces[:6] == ["the", "cat", "sat", "on", "the", "mat"]
    np.testing.assert_array_equal(vectors[0], np.concatenate([first.states[0, 1], first.states[-1, 1]]))


def test_interrupted_run_resumes_without_losing_or_duplicating(tiny_models, corpus, tmp_path, monkeypatch):
    module = importlib.import_module("bertlens.contextual.extract")  # the module: the package exports its function

    model = tiny_models["bert"]
    options = ExtractOptions(shard_texts=2)
    complete = extract(model, corpus, tmp_path / "full", options=options)
    real = module._write_shard
    calls = {"n": 0}

    def dies_on_second_shard(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "_write_shard", dies_on_second_shard)
    with pytest.raises(KeyboardInterrupt):
        extract(model, corpus, tmp_path / "cut", options=options)
    monkeypatch.setattr(module, "_write_shard", real)
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["texts_done"] == 2
    with pytest.raises(InputError, match="exists"):
        extract(model, corpus, tmp_path / "cut", options=options)
    resumed = extract(model, corpus, tmp_path / "cut", options=options, resume=True)
    assert resumed.resumed_after == 2 and resumed.rows == complete.rows
    for a, b in zip(rows(tmp_path / "cut"), rows(tmp_path / "full"), strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    assert not list((tmp_path / "cut").glob(".tmp-*"))


def test_resume_with_other_options_is_refused(tiny_models, corpus, tmp_path):
    model = tiny_models["bert"]
    extract(model, corpus, tmp_path / "out")
    with pytest.raises(InputError, match="options differs"):
        extract(model, corpus, tmp_path / "out", options=ExtractOptions(level="token"), resume=True)
    with pytest.raises(InputError, match="Nothing to resume"):
        extract(model, corpus, tmp_path / "new", resume=True)


def test_the_precision_is_recorded_and_a_resume_keeps_it(tiny_models, corpus, tmp_path):
    model = tiny_models["bert"]
    extract(model, corpus, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["precision"] == "float32"
    with pytest.raises(InputError, match=r"precision differs from this run's \(float32, this run bfloat16\)"):
        extract(model, corpus, tmp_path / "out", run=RunOptions(dtype="bfloat16"), resume=True)
    del manifest["precision"]  # an extract from before precisions were recorded resumes in any
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
    assert extract(model, corpus, tmp_path / "out", resume=True).resumed_after == manifest["texts_done"]


@pytest.mark.parametrize(("content", "message"), [(b"", "holds no text"), (b"fine\n\xff\xfe\n", "not valid UTF-8")])
def test_bad_corpus_writes_nothing(tiny_models, tmp_path, content, message):
    file = tmp_path / "bad.txt"
    file.write_bytes(content)
    with pytest.raises(InputError, match=message):
        extract(tiny_models["bert"], file, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ExtractOptions(level="sentence"), "Unknown level"),  # type: ignore[arg-type]
        (ExtractOptions(format="csv"), "Unknown format"),  # type: ignore[arg-type]
        (ExtractOptions(pool="median"), "Unknown pooling"),  # type: ignore[arg-type]
        (ExtractOptions(shard_texts=0), "shard_texts"),
    ],
)
def test_bad_options(tiny_models, corpus, tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        extract(tiny_models["bert"], corpus, tmp_path / "out", options=options)
    assert not (tmp_path / "out").exists()


def test_layer_out_of_range_leaves_no_output(tiny_models, corpus, tmp_path):
    with pytest.raises(InputError, match="Layer 9 does not exist"):
        extract(tiny_models["bert"], corpus, tmp_path / "out", options=ExtractOptions(layers=(9,)))
    assert not (tmp_path / "out").exists()
