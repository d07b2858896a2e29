"""The bundled sample corpus: what the name `sample` means wherever a corpus is taken; when a local one wins."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bertlens import InputError
from bertlens.core.corpus import SAMPLE_FILE, corpus_files, corpus_path, iter_sentences, iter_texts

ROOT = Path(__file__).resolve().parents[2]
SHA256 = "4cd0f6876d07a413aa911261ff6d363c72d757d47f0fdd6015702014c89cb9c7"  # as its README states


def test_the_sample_is_wikitext2_validation_byte_for_byte_with_its_readme():
    assert hashlib.sha256(SAMPLE_FILE.read_bytes()).hexdigest() == SHA256
    readme = (SAMPLE_FILE.parent / "README.md").read_text(encoding="utf-8")
    assert SHA256 in readme and "CC BY-SA 3.0" in readme and "Merity" in readme and "Wikipedia contributors" in readme


def test_sample_names_the_bundled_corpus_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert corpus_path("sample") == SAMPLE_FILE
    assert corpus_files("sample") == [SAMPLE_FILE]
    texts = list(iter_texts("sample"))
    assert len(texts) == 1841  # paragraphs; the ` = Title = ` headings and blank lines skipped
    assert texts[0].text.startswith("Homarus gammarus , known as the European lobster")
    assert sum(1 for _ in iter_sentences("sample")) == 8482


def test_a_local_sample_is_reached_as_dot_slash_sample(tmp_path, monkeypatch):
    """`sample` always means the bundled corpus; a file or folder of that name in the current folder is `./sample`
    (or any other spelling of its path), and a pathlib.Path is always a path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sample").mkdir()
    (tmp_path / "sample" / "mine.txt").write_text("My own text.\n", encoding="utf-8")
    assert corpus_path("sample") == SAMPLE_FILE
    assert [t.text for t in iter_texts("./sample")] == ["My own text."]
    assert [t.text for t in iter_texts(Path("sample"))] == ["My own text."]
    assert [t.text for t in iter_texts(str(tmp_path / "sample"))] == ["My own text."]
    assert [t.text for t in iter_texts("sample/")] == ["My own text."]  # not the name: a path to the folder


def test_only_the_exact_name_is_the_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for other in ("Sample", " sample", "samples"):
        with pytest.raises(InputError, match="No such file or folder") as caught:
            list(iter_texts(other))
        assert "'sample' for the bundled one" in (caught.value.hint or "")


def test_the_cli_reads_sample_in_an_empty_folder(tmp_path):
    """A command that reads a corpus, run where there is nothing: `sample` is found inside the package."""
    env = {k: v for k, v in os.environ.items() if k != "BERTLENS_MODEL"}
    command = ["train-tokenizer", "sample", "--vocab-size", "500", "--max-texts", "50", "--out", "tok", "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "bertlens", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "tok" / "tokenizer.json").is_file()


def test_the_wheel_ships_the_sample():
    """pyproject's package-data names the sample folder, so a wheel (not only this checkout) carries it."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/sample/*"' in text
