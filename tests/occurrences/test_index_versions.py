"""What an open index reads and what its folder holds now, as LanceDB's versions tell it (`occurrences.versions`): a
server that compares them follows an add, and an index built again in the same folder whose versions count the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny import WORDS, make_tiny

import bertlens
from bertlens import load_model
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.store import open_index
from bertlens.occurrences.versions import LatestVersions, opened

OPTIONS = IndexOptions(batch_texts=5)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> bertlens.Model:
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("versions") / "bert")))


def test_the_latest_versions_follow_an_add_and_a_rebuild(tiny, tmp_path: Path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i : i + 5]) for i in range(12)) + "\n", encoding="utf-8")
    out = tmp_path / "index"
    index_corpus(tiny, corpus, out, options=OPTIONS)
    first = open_index(out)
    latest = LatestVersions(first)
    assert latest.now() == opened(first)  # nothing new

    index_corpus(tiny, corpus, out, options=OPTIONS, overwrite=True)  # the same texts in the same batches
    rebuilt = latest.now()
    assert rebuilt is not None and rebuilt != opened(first)
    assert [version for _, version, _ in rebuilt] == [version for _, version, _ in opened(first)]  # told apart
    assert rebuilt == opened(open_index(out))  # by the ids of the search structures

    more = tmp_path / "more.txt"
    more.write_text("the zebra sat on the mat\n", encoding="utf-8")
    index_corpus(tiny, more, out, add=True)
    grown = open_index(out)
    assert latest.now() == opened(grown) != rebuilt and grown.text_count == 13
