"""`answered_from_table` against what `neighbors_many` actually does.

The oracle: an index whose neighbour table holds the real table's ids with every score raised by 2. A cosine is at most
1, so a query answered from that table shows scores of exactly (scan score + 2), and a scanned query shows the scan's
own scores: which path answered each query is read off the result, with nothing patched.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bertlens import InputError
from bertlens.embeddings.token_classes import TokenFilter
from bertlens.similarity.index import Adjustment, NeighborTable, VectorIndex, open_index
from bertlens.similarity.nearest import Expression, answered_from_table, neighbors_many, parse_queries

MARK = 2.0  # added to every table score: beyond any cosine, and exact in float64 for scores in [-1, 1]


@pytest.fixture(scope="module")
def model(tiny_models):
    return tiny_models["bert"]


@pytest.fixture(scope="module")
def plain(model, tmp_path_factory) -> VectorIndex:
    """The index without a neighbour table: every query scans."""
    index = open_index(model, tmp_path_factory.mktemp("plain"))
    assert index.table is None
    return index


def marked(index: VectorIndex, width: int) -> VectorIndex:
    """A copy of `index` whose table (the real one, `width` wide) has every score raised by MARK."""
    real = dataclasses.replace(index, folder=None, table=None, _spaces={}, _baselines={}).precompute(width)
    return dataclasses.replace(index, table=NeighborTable(real.ids, real.scores + MARK), _spaces={}, _baselines={})


@pytest.fixture(scope="module")
def wide(plain) -> VectorIndex:
    return marked(plain, 50)


def looked_up(model, index: VectorIndex, plain: VectorIndex, queries, k, **options) -> list[bool]:
    """For each query, whether `neighbors_many` answered it from `index`'s (marked) table, read off its scores."""
    found = neighbors_many(model, queries, k, index=index, **options)
    scans = neighbors_many(model, queries, k, index=plain, **options)
    paths = []
    for result, scan in zip(found.results, scans.results, strict=True):
        assert scan.neighbors, "an empty answer cannot tell the paths apart"
        assert [n.id for n in result.neighbors] == [n.id for n in scan.neighbors]
        scores, scanned = [n.score for n in result.neighbors], [n.score for n in scan.neighbors]
        table = scores == [s + MARK for s in scanned]
        assert table or scores == scanned
        paths.append(table)
    return paths


TOKENS = ["dog", "cat", "house"]
CASES = {  # name: (queries, k, options, answered from the table)
    "tokens": (TOKENS, 5, {}, True),
    "one token": (["bread"], 1, {}, True),
    "ids": ([22, 23, 40], 5, {}, True),
    "numpy ids": ([np.int64(22), np.int32(30)], 5, {}, True),
    "continuation piece": (["##s"], 5, {}, True),
    "punctuation token": ([","], 5, {}, True),
    "k at the table width": (TOKENS, 50, {}, True),
    "k beyond the table width": (TOKENS, 51, {}, False),
    "a word of pieces": (["cats"], 5, {}, False),
    "tokens and a word": (["dog", "cats"], 5, {}, False),
    "tokens and a vector": (["dog", "vector"], 5, {}, False),
    "expression": ([Expression(("dog",), ("cat",))], 5, {}, False),
    "expression of one token": ([Expression(("dog",))], 5, {}, False),
    "dot": (TOKENS, 5, {"metric": "dot"}, False),
    "euclidean": (TOKENS, 5, {"metric": "euclidean"}, False),
    "centred": (TOKENS, 5, {"adjustment": Adjustment(center=True)}, False),
    "top removed": (TOKENS, 5, {"adjustment": Adjustment(remove_top=1)}, False),
    "specials kept": (TOKENS, 5, {"filters": TokenFilter(special=True)}, False),
    "unused kept": (TOKENS, 5, {"filters": TokenFilter(unused=True)}, False),
    "words only": (TOKENS, 5, {"filters": TokenFilter.words_only()}, True),
    "no pieces": (TOKENS, 10, {"filters": TokenFilter.from_flags(no_pieces=True)}, True),
    "words only, too few left in the table": (TOKENS, 50, {"filters": TokenFilter.words_only()}, False),
}


@pytest.mark.parametrize("name", CASES)
def test_decision_agrees_with_the_path_taken(model, plain, wide, name):
    queries, k, options, expected = CASES[name]
    queries = [
        model.embedding_weights.word_embeddings[22] if isinstance(q, str) and q == "vector" else q for q in queries
    ]
    decision = answered_from_table(
        model,
        wide,
        queries,
        k,
        metric=options.get("metric", "cosine"),
        filters=options.get("filters", TokenFilter()),
        adjustment=options.get("adjustment", Adjustment()),
    )
    paths = looked_up(model, wide, plain, queries, k, **options)
    assert decision == all(paths)
    assert decision == expected  # the cases cover both answers
    if name == "tokens and a word":
        assert paths == [True, False]  # the token is still a lookup; the batch as a whole is not


@pytest.mark.parametrize(
    ("queries", "positive", "negative", "ids", "expected"),
    [
        (["dog", "cat"], [], [], False, True),
        (["22", "23"], [], [], True, True),
        ([], ["dog"], [], False, False),  # terms make an Expression, which always scans
        ([], ["dog", "woman"], ["cat"], False, False),
    ],
)
def test_decision_on_parsed_queries(model, plain, wide, queries, positive, negative, ids, expected):
    parsed = parse_queries(queries, positive, negative, ids=ids)
    options = {"metric": "cosine", "filters": TokenFilter(), "adjustment": Adjustment()}
    assert answered_from_table(model, wide, parsed, 10, **options) is expected
    assert all(looked_up(model, wide, plain, parsed, 10, **options)) is expected


def test_narrow_table_and_k_beyond_it(model, plain):
    narrow = marked(plain, 8)
    options = {"metric": "cosine", "filters": TokenFilter(), "adjustment": Adjustment()}
    for k, expected in ((8, True), (9, False)):
        assert answered_from_table(model, narrow, TOKENS, k, **options) is expected
        assert all(looked_up(model, narrow, plain, TOKENS, k, **options)) is expected


def test_a_complete_table_row_answers_any_filter(model, plain):
    """A table as wide as the rows holds every allowed row (then -inf): a stricter filter leaving fewer than k is
    still answered from it, with the rows that are left."""
    full = marked(plain, plain.rows - 1)
    assert full.table is not None and not np.isfinite(full.table.scores[:, -1]).any()
    options = {"metric": "cosine", "filters": TokenFilter.words_only(), "adjustment": Adjustment()}
    k = plain.rows - 1
    assert answered_from_table(model, full, TOKENS, k, **options)
    assert all(looked_up(model, full, plain, TOKENS, k, **options))
    assert len(neighbors_many(model, TOKENS, k, index=plain, filters=options["filters"])[0].neighbors) < k


def test_no_table_no_lookup(model, plain):
    options = {"metric": "cosine", "filters": TokenFilter(), "adjustment": Adjustment()}
    assert not answered_from_table(model, plain, TOKENS, 5, **options)


@pytest.mark.parametrize(
    ("queries", "k", "metric"),
    [
        ([], 5, "cosine"),  # no queries
        ("dog", 5, "cosine"),  # a str, not a list of queries
        (["dog"], 0, "cosine"),
        (["dog"], 5, "manhattan"),
        (["dog", "\ud800"], 5, "cosine"),  # a lone surrogate in a token query
    ],
)
def test_refused_arguments_are_never_answered_from_the_table(model, wide, queries, k, metric):
    options = {"filters": TokenFilter(), "adjustment": Adjustment()}
    assert not answered_from_table(model, wide, queries, k, metric=metric, **options)
    with pytest.raises(InputError):
        neighbors_many(model, queries, k, metric=metric, index=wide, **options)
