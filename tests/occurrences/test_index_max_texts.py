"""`index --max-texts N`: only the corpus's first N texts are indexed, exactly as a full build indexes them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tiny import WORDS, make_tiny

import bertlens
from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.store import MANIFEST, open_index

OPTIONS = IndexOptions(layers=(-1,), batch_texts=7)


def write_file(path: Path, seed: int, lines: int) -> None:
    rng = random.Random(seed)
    body = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(lines)]
    path.write_text("\n".join(body) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> bertlens.Model:
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("max-texts") / "bert")))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("max-texts-corpus")
    write_file(folder / "a.txt", 1, 12)
    write_file(folder / "b.txt", 2, 12)
    return folder


def rows(out: Path, below: int | None = None) -> list[tuple]:
    table = open_index(out).occurrences.to_arrow().sort_by([("text_id", "ascending"), ("position", "ascending")])
    columns = table.to_pydict()
    found = list(
        zip(columns["text_id"], columns["start"], columns["end"], columns["word"], columns["layer_2"], strict=True)
    )
    return [r for r in found if below is None or r[0] < below]


def test_the_first_texts_are_indexed_as_a_full_build_indexes_them(tiny, corpus, tmp_path):
    index_corpus(tiny, corpus, tmp_path / "full", options=OPTIONS)
    result = index_corpus(tiny, corpus, tmp_path / "part", options=OPTIONS, max_texts=14)
    assert result.texts == 14  # all of a.txt (12) and the first 2 of b.txt (two whole batches of 7: same inputs)
    assert rows(tmp_path / "part") == rows(tmp_path / "full", below=14)
    files = json.loads((tmp_path / "part" / MANIFEST).read_text())["files"]
    assert [(f["file"], f["texts"], f.get("partial", False)) for f in files] == [
        ("a.txt", 12, False),
        ("b.txt", 2, True),
    ]


def test_add_takes_the_new_files_first_texts(tiny, corpus, tmp_path):
    index_corpus(tiny, corpus / "a.txt", tmp_path / "index", options=OPTIONS)
    result = index_corpus(tiny, corpus, tmp_path / "index", add=True, max_texts=3)
    assert (result.texts, result.added_texts, result.skipped) == (15, 3, ("a.txt",))


def test_bad_max_texts_are_refused_before_anything_is_written(tiny, corpus, tmp_path):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="max_texts"):
            index_corpus(tiny, corpus, tmp_path / "never", options=OPTIONS, max_texts=bad)
    assert not (tmp_path / "never").exists()
    index_corpus(tiny, corpus, tmp_path / "index", options=OPTIONS, max_texts=2)
    with pytest.raises(InputError, match="resumed build keeps the texts it planned") as caught:
        index_corpus(tiny, corpus, tmp_path / "index", resume=True, max_texts=2)
    assert "Leave out max_texts" in caught.value.hint


def test_the_cli_flag(tiny, corpus, tmp_path, capsys):
    model = str(tiny.source.path)
    assert (
        main(["--model", model, "index", str(corpus), "--out", str(tmp_path / "i"), "--max-texts", "4", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["texts"] == 4
    assert main(["--model", model, "index", str(corpus), "--out", str(tmp_path / "j"), "--max-texts", "0"]) == 2
    assert "--max-texts must be at least 1" in capsys.readouterr().err
