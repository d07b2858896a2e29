"""The occurrence index build: rows against transformers, float16, a build killed and resumed, adding files, bad inputs.

A tiny random BERT (built here) and a tiny corpus carry the mechanics; the default model builds one small real index.
The oracle for the stored vectors is transformers' own `hidden_states` on each text alone, pooled by hand over the
pieces the tokenizer (the `tokenizers` library, not bertlens) gives each word.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from oracle import transformers_model
from tiny import WORDS, make_tiny

import bertlens
from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.store import MANIFEST, open_for_writing, open_index

EPS32 = float(np.finfo(np.float32).eps)


def write_corpus(folder: Path, seed: int, files: int = 2, lines: int = 30) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        body = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) for _ in range(lines)]
        body.insert(3, "")  # a blank line is not a text
        (folder / f"part-{f}.txt").write_text("\n".join(body) + "\n", encoding="utf-8")
    (folder / "empty.txt").write_text("\n\n", encoding="utf-8")  # a file without texts
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny("bert", tmp_path_factory.mktemp("index-tiny") / "bert")


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> bertlens.Model:
    return load_model(str(tiny_dir))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("index-corpus") / "corpus", seed=0)


OPTIONS = IndexOptions(layers=(0, -1), batch_texts=10)


@pytest.fixture(scope="module")
def reference(tiny: bertlens.Model, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted build of the tiny corpus (layers 0 and 2, ten texts per write)."""
    out = tmp_path_factory.mktemp("index-reference") / "index"
    index_corpus(tiny, corpus, out, options=OPTIONS)
    return out


def table_of(out: Path) -> tuple[dict[str, list], dict[str, list]]:
    """(occurrences, texts) of an index as columns, occurrences in (text_id, position) order."""
    index = open_index(out)
    occ = index.occurrences.to_arrow().sort_by([("text_id", "ascending"), ("position", "ascending")])
    texts = index.texts.to_arrow().sort_by("text_id")
    return occ.to_pydict(), texts.to_pydict()


def vectors(rows: dict[str, list], column: str) -> np.ndarray:
    return np.asarray(rows[column], dtype=np.float32)  # (occurrences, D)


def oracle_words(model_dir: Path, text: str, layers: list[int]) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Each word's (start, end) and its vectors at `layers`, (layers, words, H): transformers, pooled by hand."""
    import torch
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # a saved tokenizer may pad every text to a fixed length
    tokenizer.no_truncation()
    encoding = tokenizer.encode(text)
    with torch.inference_mode():
        states = transformers_model(model_dir)(
            input_ids=torch.tensor([encoding.ids]), output_hidden_states=True
        ).hidden_states
    chosen = torch.stack([states[layer][0] for layer in layers]).numpy()  # (layers, tokens, H)
    groups: dict[int, list[int]] = {}
    for token, word in enumerate(encoding.word_ids):
        if word is not None:
            groups.setdefault(word, []).append(token)
    spans = [(encoding.offsets[g[0]][0], encoding.offsets[g[-1]][1]) for g in groups.values()]
    return spans, np.stack([chosen[:, g].mean(axis=1) for g in groups.values()], axis=1)


def tolerance(model: bertlens.Model, values: np.ndarray) -> float:
    """How far a padded, batched forward pass may lie from one text alone: float32 rounding of sums over the hidden
    size, accumulated through every layer, at the scale of the values."""
    config = model.config
    return EPS32 * config.hidden_size * (config.num_hidden_layers + 1) * float(np.abs(values).max())


def test_rows_are_transformers_words_pooled_by_hand(tiny, tiny_dir, corpus, reference):
    rows, texts = table_of(reference)
    index = open_index(reference, model=tiny, layers=[0, -1])
    assert index.complete and index.layers == (0, 2) and index.dims == 32 and index.dtype == "float32"
    assert texts["text_id"] == list(range(60)) and len(rows["word"]) == index.rows
    lines = (corpus / "part-1.txt").read_text(encoding="utf-8").splitlines()
    assert texts["file"][30] == "part-1.txt" and texts["text"][30] == lines[texts["line"][30] - 1]
    for text_id in (0, 17, 30, 59):
        text = texts["text"][text_id]
        mine = [i for i, t in enumerate(rows["text_id"]) if t == text_id]
        spans, expected = oracle_words(tiny_dir, text, [0, 2])
        assert [(rows["start"][i], rows["end"][i]) for i in mine] == spans
        assert [rows["word"][i] for i in mine] == [text[s:e] for s, e in spans]
        assert [rows["key"][i] for i in mine] == [text[s:e].casefold() for s, e in spans]
        assert [rows["position"][i] for i in mine] == list(range(len(spans)))
        for n, column in enumerate(("layer_0", "layer_2")):
            got = vectors(rows, column)[mine]
            np.testing.assert_allclose(got, expected[n], rtol=0, atol=tolerance(tiny, expected[n]))


def test_float16_stores_the_float32_vectors_rounded(tiny, corpus, reference, tmp_path):
    result = index_corpus(
        tiny, corpus, tmp_path / "half", options=IndexOptions(layers=(0, -1), dtype="float16", batch_texts=10)
    )
    assert result.dtype == "float16" and result.rows == open_index(reference).rows
    half, _ = table_of(tmp_path / "half")
    full, _ = table_of(reference)
    assert str(open_index(tmp_path / "half").occurrences.schema.field("layer_2").type.value_type) == "halffloat"
    for column in ("layer_0", "layer_2"):
        assert np.array_equal(np.asarray(half[column], np.float16), vectors(full, column).astype(np.float16))


CHILD = """
import sys
from bertlens import load_model
from bertlens.occurrences.build import IndexOptions, index_corpus
index_corpus(load_model(sys.argv[1]), sys.argv[2], sys.argv[3], options=IndexOptions(layers=(0, -1), batch_texts=10))
"""


@pytest.mark.slow  # a fresh Python process that imports torch
def test_a_killed_build_resumes_with_nothing_lost_or_duplicated(tiny, tiny_dir, corpus, reference, tmp_path):
    out = tmp_path / "killed"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(tiny_dir), str(corpus), str(out)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and child.poll() is None:
            try:
                if json.loads((out / MANIFEST).read_text(encoding="utf-8"))["texts"] >= 10:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert child.returncode == -signal.SIGKILL and not manifest["complete"], "the build ended before it was killed"
    with pytest.raises(InputError, match="not complete") as refused:
        open_index(out)
    assert "resume=True" in refused.value.hint
    # A batch written after the manifest's last one, as a kill between the tables' writes and the manifest leaves it.
    index = open_for_writing(out)
    saved = (out / MANIFEST).read_bytes()
    from bertlens.occurrences.build import occurrence_rows
    from bertlens.occurrences.plan import text_batches

    batch = next(text_batches(index.manifest["files"], index.text_count, 10))
    index.append(batch, occurrence_rows(tiny, batch, index.layers, "mean", bertlens.RunOptions()), next_text=0)
    (out / MANIFEST).write_bytes(saved)
    with pytest.raises(InputError, match="already an index"):
        index_corpus(tiny, corpus, out, options=OPTIONS)
    result = index_corpus(tiny, corpus, out, options=None, resume=True)
    assert result.resumed_after == manifest["texts"] and result.repaired > 0
    assert result.added_texts == 60 - manifest["texts"]
    got, got_texts = table_of(out)
    want, want_texts = table_of(reference)
    assert got_texts == want_texts
    for column in ("text_id", "position", "start", "end", "word", "key"):
        assert got[column] == want[column], column
    for column in ("layer_0", "layer_2"):  # the same batches as the uninterrupted build: the same numbers
        assert np.array_equal(vectors(got, column), vectors(want, column))
    with pytest.raises(InputError, match="Nothing to resume"):
        index_corpus(tiny, corpus, out, resume=True)


def test_add_indexes_only_new_files(tiny, corpus, reference, tmp_path):
    mine, out = tmp_path / "corpus", tmp_path / "grown"
    shutil.copytree(corpus, mine)
    first = index_corpus(tiny, mine / "part-0.txt", out, options=OPTIONS)
    assert first.texts == 30
    with pytest.raises(InputError, match=r"layers \[0, 2\] \(this run asks for \[1\]\)"):
        index_corpus(tiny, mine, out, options=IndexOptions(layers=(1,)), add=True)
    with pytest.raises(InputError, match="dtype float32"):
        index_corpus(tiny, mine, out, options=IndexOptions(layers=(0, 2), dtype="float16"), add=True)
    assert json.loads((out / MANIFEST).read_text())["precision"] == "float32"
    with pytest.raises(InputError, match=r"computed in float32; this run would compute bfloat16"):
        index_corpus(tiny, mine, out, run=bertlens.RunOptions(dtype="bfloat16"), add=True)
    result = index_corpus(tiny, mine, out, add=True)
    assert result.skipped == ("part-0.txt",) and result.added_texts == 30 and result.texts == 60
    again = index_corpus(tiny, mine, out, add=True)
    assert again.added_texts == 0 and set(again.skipped) == {"part-0.txt", "part-1.txt"}
    got, got_texts = table_of(out)
    want, want_texts = table_of(reference)
    assert got_texts["text"] == want_texts["text"] and got_texts["line"] == want_texts["line"]
    for column in ("text_id", "position", "start", "end", "word"):
        assert got[column] == want[column], column
    for column in ("layer_0", "layer_2"):  # other batches: equal up to float32 rounding
        expected = vectors(want, column)
        np.testing.assert_allclose(vectors(got, column), expected, rtol=0, atol=tolerance(tiny, expected))
    (mine / "part-0.txt").write_text("a changed cat\n", encoding="utf-8")
    with pytest.raises(InputError, match="other content"):
        index_corpus(tiny, mine, out, add=True)


def test_an_add_skips_texts_held_under_another_name(tiny, corpus, tmp_path):
    """A folder holding copies of indexed files beside new ones: the copies are skipped (and named), by content."""
    out, grown = tmp_path / "index", tmp_path / "grown"
    first = index_corpus(tiny, corpus / "part-0.txt", out, options=OPTIONS)
    grown.mkdir()
    shutil.copy(corpus / "part-0.txt", grown / "copy-of-part-0.txt")
    shutil.copy(corpus / "part-0.txt", grown / "another-copy.txt")
    (grown / "new.txt").write_text("the dog ran\na red car\n", encoding="utf-8")
    result = index_corpus(tiny, grown, out, add=True)
    assert set(result.skipped) == {"copy-of-part-0.txt", "another-copy.txt"}
    assert result.added_texts == 2 and result.texts == first.texts + 2
    _, texts = table_of(out)
    assert sorted(texts["text"]).count("the dog ran") == 1 and len(texts["text"]) == first.texts + 2


def test_another_model_is_refused(tiny, corpus, reference, tmp_path):
    other = load_model(str(make_tiny("bert", tmp_path / "other", seed=1)))
    with pytest.raises(InputError, match="another model") as refused:
        index_corpus(other, corpus, reference, add=True)
    assert str(tmp_path / "other") in str(refused.value)


def test_bad_corpora_write_nothing(tiny, tmp_path):
    (tmp_path / "blank.txt").write_text("\n \n = Heading =\n", encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes("café\n".encode("latin-1"))
    for name, message in (("blank.txt", "holds no text"), ("latin.txt", "not valid UTF-8"), ("gone", "No such")):
        with pytest.raises(InputError, match=message):
            index_corpus(tiny, tmp_path / name, tmp_path / "out")
        assert not (tmp_path / "out").exists()


def test_existing_folders(tiny, tiny_dir, corpus, reference, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine", encoding="utf-8")
    for flags in ({}, {"overwrite": True}, {"add": True}, {"resume": True}):
        with pytest.raises(InputError, match="not a bertlens index"):
            index_corpus(tiny, corpus, theirs, **flags)
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    with pytest.raises(InputError, match="Nothing to resume"):
        index_corpus(tiny, corpus, tmp_path / "none", resume=True)
    with pytest.raises(InputError, match="Choose one of"):
        index_corpus(tiny, corpus, tmp_path / "none", resume=True, add=True)
    with pytest.raises(InputError, match="model's folder"):
        index_corpus(tiny, corpus, tiny_dir / "index")
    replaced = tmp_path / "replaced"
    shutil.copytree(reference, replaced)
    (replaced / "notes.txt").write_text("mine", encoding="utf-8")
    result = index_corpus(tiny, corpus / "part-1.txt", replaced, options=IndexOptions(), overwrite=True)
    assert result.texts == 30 and open_index(replaced).layers == (2,)
    assert (replaced / "notes.txt").read_text(encoding="utf-8") == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert index_corpus(tiny, corpus / "part-1.txt", empty).texts == 30


def test_a_damaged_index_is_refused(tiny, corpus, reference, tmp_path):
    for damage in ("manifest", "removed", "truncated"):
        out = tmp_path / damage
        shutil.copytree(reference, out)
        data = sorted((out / "occurrences.lance" / "data").iterdir())
        if damage == "manifest":
            (out / MANIFEST).unlink()
        elif damage == "removed":
            data[0].unlink()
        else:
            with data[0].open("r+b") as handle:
                handle.truncate(data[0].stat().st_size // 2)
        with pytest.raises(InputError, match="damaged"):
            index_corpus(tiny, corpus, out, resume=True)
    assert index_corpus(tiny, corpus, out, options=OPTIONS, overwrite=True).texts == 60


def test_options_are_checked_before_anything_is_written(tiny, corpus, tmp_path):
    for options, message in (
        (IndexOptions(layers=(9,)), "does not exist"),
        (IndexOptions(pool="median"), "pooling"),  # type: ignore[arg-type]
        (IndexOptions(dtype="int8"), "vector dtype"),  # type: ignore[arg-type]
        (IndexOptions(batch_texts=0), "batch_texts"),
    ):
        with pytest.raises(InputError, match=message):
            index_corpus(tiny, corpus, tmp_path / "out", options=options)
    with pytest.raises(InputError, match="engine"):
        index_corpus(tiny, corpus, tmp_path / "out", engine="spark")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_cli_and_lens(tiny, tiny_dir, corpus, tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["index", str(corpus / "part-0.txt"), "--out", str(out), "--model", str(tiny_dir), "--no-progress"]
    assert main([*args, "--layers", "1", "--float16", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["texts"] == 30 and answer["layers"] == [1] and answer["dtype"] == "float16"
    assert main([*args, "--add", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == ["part-0.txt"]
    assert main([*args, "--level", "token"]) == 2
    assert "extract --level token" in capsys.readouterr().err
    assert main([*args, "--address", "auto"]) == 2
    lens = bertlens.Lens(tiny)
    assert lens.index_corpus(corpus / "part-1.txt", tmp_path / "lens").texts == 30


@pytest.fixture(scope="module")
def real_index(default_model, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    from itertools import islice

    from bertlens.core.corpus import iter_sentences

    sentences = list(islice(iter_sentences("sample"), 12))
    folder = tmp_path_factory.mktemp("index-real")
    (folder / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    index_corpus(default_model, folder / "sentences.txt", folder / "index", options=IndexOptions(layers=(6, 3)))
    return folder / "index", sentences


def test_a_real_index_holds_the_default_models_vectors(default_model, real_index):
    out, sentences = real_index
    rows, texts = table_of(out)
    assert texts["text"] == sentences
    folder = default_model.source.path
    for text_id in (0, 7):
        mine = [i for i, t in enumerate(rows["text_id"]) if t == text_id]
        spans, expected = oracle_words(folder, sentences[text_id], [3, 6])
        assert [(rows["start"][i], rows["end"][i]) for i in mine] == spans
        for n, column in enumerate(("layer_3", "layer_6")):
            np.testing.assert_allclose(
                vectors(rows, column)[mine], expected[n], rtol=0, atol=tolerance(default_model, expected[n])
            )
