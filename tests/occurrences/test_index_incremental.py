"""An add keeps the ANN indexes while the table has grown little (the new rows searched exactly beside them until
LanceDB's upkeep adds them), and trains them anew past `RETRAIN_GROWTH`; a build always trains them."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from tiny import WORDS, make_tiny

import bertlens
from bertlens import load_model
from bertlens.occurrences.ann import RETRAIN_GROWTH, ann_settings, build_search_indexes
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.integrity import clean
from bertlens.occurrences.rows import occurrence_rows
from bertlens.occurrences.store import TextRows, open_for_writing

MIN_ROWS = 256  # instead of ANN_MIN_ROWS: a tiny corpus gets ANN indexes too


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> bertlens.Model:
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("incremental") / "bert")))


def texts(first: int, count: int, seed: int) -> TextRows:
    rng = random.Random(seed)
    return TextRows(
        text_id=np.arange(first, first + count, dtype=np.int64),
        file=["more.txt"] * count,
        line=np.arange(1, count + 1, dtype=np.int32),
        text=[" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(count)],
    )


def unindexed(index, column: str) -> int:
    return int(index.occurrences.index_stats(f"{column}_idx").num_unindexed_rows)


def test_an_add_keeps_the_ann_index_until_the_table_has_grown(tiny, tmp_path: Path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts(0, 100, 0).text) + "\n", encoding="utf-8")
    index_corpus(tiny, corpus, tmp_path / "index", options=IndexOptions(layers=(-1,)))
    index = open_for_writing(tmp_path / "index")
    column = index.column()
    build_search_indexes(index, min_rows=MIN_ROWS)  # trained on every row
    trained = index.rows
    assert ann_settings(index, column) is not None and unindexed(index, column) == 0

    def add(count: int, seed: int) -> int:
        batch = texts(index.text_count, count, seed)
        rows = occurrence_rows(tiny, batch, index.layers, "mean", bertlens.RunOptions())
        index.append(batch, rows, next_text=index.text_count + count)
        return len(rows)

    small = add(10, 1)  # ~10% more rows
    assert index.rows <= trained * (1 + RETRAIN_GROWTH)
    build_search_indexes(index, min_rows=MIN_ROWS, retrain=False)
    assert unindexed(index, column) == small  # kept: the new rows are searched exactly beside it
    assert ann_settings(index, column) is not None
    clean(index.occurrences)  # LanceDB's upkeep at the end of an add adds them to it
    assert unindexed(index, column) == 0 and ann_settings(index, column) is not None

    add(40, 2)  # now well past the growth allowed
    assert index.rows > trained * (1 + RETRAIN_GROWTH)
    build_search_indexes(index, min_rows=MIN_ROWS, retrain=False)
    assert unindexed(index, column) == 0  # trained anew on every row

    add(5, 3)
    build_search_indexes(index, min_rows=MIN_ROWS)  # a build (retrain=True) always trains
    assert unindexed(index, column) == 0
