"""Search by example (bertlens.occurrences.search): marked examples, same-word and any-word search against numpy's
exact cosine, baselines, the ANN path's recall against exact search, errors, the CLI; the default model on "bank"."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny import make_tiny

from bertlens import Lens, load_model
from bertlens.cli import main
from bertlens.core.errors import InputError
from bertlens.occurrences.ann import ann_settings, build_search_indexes
from bertlens.occurrences.baseline import CACHE, layer_baseline, word_baseline
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.marked import parse_example, snippet
from bertlens.occurrences.search import SearchOptions, search_occurrences
from bertlens.occurrences.store import OccurrenceRows, TextRows, create_index, open_index

LINES = [
    "the cat sat on the mat. the dog ran to the house",
    "a big cat was on the red car",
    "the small dog sat in the tree at night",
    "she saw a blue cat and a dog",
    "it's a bad cat, it's an old cat",
    "we walk the dog in the day",
    "they ran to the big house",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("tiny") / "bert")))


@pytest.fixture(scope="module")
def index(tiny, tmp_path_factory):
    corpus = tmp_path_factory.mktemp("corpus") / "pets.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("index") / "idx"
    index_corpus(tiny, corpus, out, options=IndexOptions(layers=(1, -1)))
    return out


@pytest.fixture(scope="module")
def table(index):
    """Every row of the tiny index, as numpy (the oracle's data)."""
    rows = open_index(index).occurrences.to_arrow().to_pydict()
    return {k: np.asarray(v) if k.startswith("layer_") else v for k, v in rows.items()}


def cosines(matrix, vector):
    matrix, vector = np.asarray(matrix, dtype=np.float64), np.asarray(vector, dtype=np.float64)
    return matrix @ vector / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector))


def oracle(table, column, query_row, keep, k):
    """numpy's exact ranking: (text_id, position) of the best k rows among `keep`, and their scores."""
    scores = cosines(table[column], table[column][query_row])
    rows = sorted(np.flatnonzero(keep), key=lambda i: (-scores[i], table["text_id"][i], table["position"][i]))[:k]
    return [(table["text_id"][i], table["position"][i]) for i in rows], [scores[i] for i in rows]


def row_of(table, word, nth=0):
    return [i for i, key in enumerate(table["key"]) if key == word][nth]


# --- the example -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "word", "text", "target", "note"),
    [
        ("I sat on the river [bank]", None, "I sat on the river bank", "bank", False),
        (r"see \[1\] and the [bank]", None, "see [1] and the bank", "bank", False),
        ("bank of the Bank", "BANK", "bank of the Bank", "bank", True),
        ("the [bank] and [1]", "bank", "the [bank] and [1]", "bank", False),
        ("the [Bank] is here", "bank", "the Bank is here", "Bank", False),
    ],
)
def test_examples_parse_to_the_sentence_and_the_span(example, word, text, target, note):
    parsed = parse_example(example, word)
    assert parsed.text == text and parsed.word == target and (parsed.note is not None) == note


@pytest.mark.parametrize(
    ("example", "word", "message"),
    [
        ("no mark here", None, "no \\[marked\\] word"),
        ("[two] [marks]", None, "marks 2 words"),
        ("an empty [] mark", None, "empty"),
        ("[two words]", None, "not one word"),
        ("an [open mark", None, "never closes"),
        ("a closed] mark", None, "never opened"),
        ("the bankers", "bank", "does not occur as a whole word"),
        ("", None, "empty"),
        ("the bank", "two words", "one word"),
    ],
)
def test_bad_examples_are_refused_with_a_hint(example, word, message):
    with pytest.raises(InputError, match=message) as caught:
        parse_example(example, word)
    assert caught.value.hint


def test_snippet_is_the_sentence_with_the_words_offsets():
    text = "First one. The river bank was muddy! Then more."
    piece, s, e = snippet(text, 21, 25)
    assert piece == "The river bank was muddy!" and piece[s:e] == "bank"
    long = " ".join(f"w{i}" for i in range(300)) + " bank " + " ".join(f"v{i}" for i in range(300))
    start = long.index("bank")
    piece, s, e = snippet(long, start, start + 4, limit=100)
    assert piece[s:e] == "bank" and len(piece) <= 102 and piece[0] == piece[-1] == "…"
    assert " w" in piece and " v" in piece  # cut at spaces, on both sides of the word


# --- the search, against numpy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer", [1, -1])
def test_same_word_ranking_and_scores_are_numpys_exact_cosine(index, table, layer):
    column = "layer_1" if layer == 1 else "layer_2"
    query = row_of(table, "cat", 1)
    place = (table["text_id"][query], table["position"][query])
    result = search_occurrences(None, index, options=SearchOptions(layer=layer, occurrence=place, one_per_text=False))
    keep = np.asarray([key == "cat" for key in table["key"]]) & (np.arange(len(table["key"])) != query)
    expected, scores = oracle(table, column, query, keep, 10)
    assert [(h.text_id, h.position) for h in result.hits] == expected
    np.testing.assert_allclose([h.score for h in result.hits], scores, rtol=1e-12)
    assert result.candidates == int(sum(key == "cat" for key in table["key"])) and len(result.hits) == 4
    assert result.notes and "fewer than k=10" in result.notes[-1]  # k above the candidates: all of them
    for h in result.hits:
        assert h.snippet[h.snippet_start : h.snippet_end] == h.word and h.word.casefold() == "cat"
        assert h.file == "pets.txt" and LINES[h.line - 1][h.start : h.end] == h.word


def test_any_word_is_numpys_exact_ranking_without_the_word(index, table):
    query = row_of(table, "dog", 0)
    result = search_occurrences(
        None,
        index,
        options=SearchOptions(any_word=True, k=5, occurrence=(table["text_id"][query], query), one_per_text=False),
    )
    keep = np.asarray([key != "dog" for key in table["key"]])
    expected, scores = oracle(table, "layer_2", query, keep, 5)
    assert [(h.text_id, h.position) for h in result.hits] == expected
    np.testing.assert_allclose([h.score for h in result.hits], scores, rtol=1e-12)
    assert result.mode == "any word" and "exact" in result.method


def test_a_sentence_of_the_corpus_finds_itself_with_cosine_one(tiny, index):
    """The example's vector is computed by the builder's code: the same sentence gives the stored vector."""
    result = search_occurrences(tiny, index, "she saw a blue [cat] and a dog", options=SearchOptions(k=1))
    assert result.hits[0].line == 4 and result.hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert result.query.word == "cat" and result.query.text_id is None
    mixed = search_occurrences(tiny, index, "a blue Cat", options=SearchOptions(word="cat", exclude_same_text=True))
    assert mixed.query.word == "Cat" and len(mixed.hits) == 4  # casefolded key; no text contains "a blue Cat"
    assert len({h.text_id for h in mixed.hits}) == 4  # "cat" 5 times in 4 texts: one hit per text
    alone = search_occurrences(
        tiny, index, "she saw a blue [cat] and a dog", options=SearchOptions(exclude_same_text=True)
    )
    assert 4 not in {h.line for h in alone.hits} and len(alone.hits) == 3


def test_exclude_same_text_from_an_occurrence_and_quoted_words(index, table):
    query = row_of(table, "'", 0)  # the apostrophe of "it's": a key that needs quoting in the filter
    text_id = table["text_id"][query]
    result = search_occurrences(None, index, options=SearchOptions(occurrence=(text_id, table["position"][query])))
    assert [h.word for h in result.hits] == ["'"]  # the other apostrophe, in the same text
    alone = search_occurrences(
        None, index, options=SearchOptions(exclude_same_text=True, occurrence=(text_id, table["position"][query]))
    )
    assert alone.hits == ()


def test_one_hit_per_text_keeps_each_texts_best_occurrence(index, table):
    query = row_of(table, "cat", 1)
    place = (table["text_id"][query], table["position"][query])
    every = search_occurrences(None, index, options=SearchOptions(occurrence=place, one_per_text=False))
    one = search_occurrences(None, index, options=SearchOptions(occurrence=place))
    assert [h.text_id for h in every.hits].count(4) == 2  # "it's a bad cat, it's an old cat"
    best = {}
    for h in every.hits:  # ranked best first: the first hit of each text is its best
        best.setdefault(h.text_id, (h.text_id, h.position))
    assert [(h.text_id, h.position) for h in one.hits] == list(best.values())
    assert one.one_per_text and any("one_per_text=False" in n and "1 more occurrence " in n for n in one.notes)
    assert not any("one_per_text" in n for n in every.notes)
    k1 = search_occurrences(None, index, options=SearchOptions(occurrence=place, k=1))
    assert [(h.text_id, h.position) for h in k1.hits] == list(best.values())[:1]
    with pytest.raises(InputError, match="one_per_text"):
        search_occurrences(None, index, options=SearchOptions(occurrence=place, one_per_text="no"))


def test_scores_are_read_against_the_words_own_pairs(index, table):
    opened = open_index(index)
    own = word_baseline(opened, 2, "cat")
    rows = [i for i, key in enumerate(table["key"]) if key == "cat"]
    texts = [table["text_id"][i] for i in rows]
    vectors = np.asarray(table["layer_2"], dtype=np.float64)[rows]
    pairs = [(a, b) for a in range(len(rows)) for b in range(a + 1, len(rows)) if texts[a] != texts[b]]
    expected = np.array([cosines(vectors[[a]], vectors[b])[0] for a, b in pairs])  # numpy's cosines, pair by pair
    assert (own.occurrences, own.sampled, own.pairs) == (5, 5, 9)  # 10 pairs but one within a text
    np.testing.assert_allclose(own.quantiles, np.quantile(expected, np.linspace(0, 1, 101)), rtol=1e-9, atol=1e-12)
    assert own.median == pytest.approx(float(np.median(expected)), abs=1e-12)
    assert word_baseline(opened, 2, "cat") == own  # read back from the cache
    query = rows[1]
    result = search_occurrences(None, index, options=SearchOptions(occurrence=(texts[1], table["position"][query])))
    assert result.word_baseline == own
    for h in result.hits:
        assert h.word_percentile == pytest.approx(
            100 * float(np.interp(h.score, own.quantiles, np.linspace(0, 1, 101)))
        )
    text = result.to_table()
    assert "pairs below" in text.splitlines()[3] and "this word's typical pair" in text
    level = "more alike than" if result.hits[0].score > own.median else "no more alike than"
    assert f"top hit: {result.hits[0].score:.2f} is {level} this word's typical pair" in text
    alone = word_baseline(opened, 2, "house")  # twice, in two texts: one pair
    assert alone.pairs == 1 and word_baseline(opened, 2, "mat").pairs == 0
    assert "too few occurrences" in word_baseline(opened, 2, "mat").reading(0.5)
    anyword = search_occurrences(None, index, options=SearchOptions(any_word=True, occurrence=(0, 1)))
    assert anyword.word_baseline is None and all(h.word_percentile is None for h in anyword.hits)


def test_baseline_is_cached_by_table_version_and_read_against(index):
    opened = open_index(index)
    first = layer_baseline(opened, 2)
    assert (index / CACHE).exists() and -1 <= first.random_pairs <= 1 and -1 <= first.same_word_pairs <= 1
    cached = json.loads((index / CACHE).read_text())
    assert cached["version"] == opened.occurrences.version
    assert layer_baseline(opened, 2) == first
    (index / CACHE).write_text(json.dumps({"version": -1, "layers": {"layer_2:2000:0": {"random_pairs": 9}}}))
    assert layer_baseline(opened, 2) == first  # a stale cache (another table version) is sampled again
    assert "high" in first.reading(1.0) and "low" in first.reading(-1.0)


@pytest.mark.parametrize(
    ("example", "options", "message"),
    [
        ("the [zebra] ran", SearchOptions(), "does not occur in the index"),
        ("the [cat] ran", SearchOptions(layer=0), "holds layers \\[1, 2\\], not layer 0"),
        ("the [cat] ran", SearchOptions(k=0), "k must be at least 1"),
        ("the [cat] ran", SearchOptions(k=1001), "at most 1,000"),
        ("the [cat] ran", SearchOptions(occurrence=(0, 1)), "either an example sentence or an occurrence"),
        (None, SearchOptions(), "either an example sentence or an occurrence"),
        (None, SearchOptions(occurrence=(0, 999)), "no occurrence 0:999"),
        (None, SearchOptions(occurrence=(0, 1), word="cat"), "only to an example"),
        ("the [cat's] ran", SearchOptions(), 'does not read "cat\'s" as one word'),
    ],
)
def test_bad_searches_are_refused_with_a_hint(tiny, index, example, options, message):
    with pytest.raises(InputError, match=message) as caught:
        search_occurrences(tiny, index, example, options=options)
    assert caught.value.hint


@pytest.mark.parametrize(
    "occurrence",
    [
        (10**30, 1),  # past int64: the filter would read it as a float
        (2**63, 1),  # past int64 by one
        (2**63 - 1, 1),  # int64's largest: no such text
        (7, 0),  # one past the last text
        (1, 2**31),  # past the int32 position column
        (1, 10**30),
        (-1, 1),
        (1, -1),
    ],
)
def test_an_occurrence_beyond_the_index_is_refused_with_its_range(index, occurrence):
    with pytest.raises(InputError, match=f"no occurrence {occurrence[0]}:{occurrence[1]}") as caught:
        search_occurrences(None, index, options=SearchOptions(occurrence=occurrence))
    assert "Text ids run from 0 to 6" in caught.value.hint


@pytest.mark.parametrize(
    "value",
    ["1000000000000000000000000000000:1", "1:1e30", "9223372036854775808:1", "1:2147483648", "-1:1", "nan:1", "inf:1",
     "1:", ":", "\u0661:1", "0x1:1", "1:2:3"],
)  # fmt: skip
def test_cli_from_beyond_the_index_exits_2_with_a_hint(tiny, index, capsys, value):
    for json_flag in ([], ["--json"]):
        code = main(["search", str(index), f"--from={value}", "--model", str(tiny.source.path), *json_flag])
        captured = capsys.readouterr()
        assert code == 2 and "Traceback" not in captured.err and "unexpected" not in captured.err
        assert "\n  hint: " in captured.err
        if json_flag:
            error = json.loads(captured.out)
            assert error["error"] == "InputError" and (
                "Text ids run from 0 to 6" in error["hint"] or "--from" in error["hint"]
            )


def test_the_positions_of_the_text_asked_for_are_in_the_hint(index):
    with pytest.raises(InputError, match="no occurrence 1:2147483648") as caught:
        search_occurrences(None, index, options=SearchOptions(occurrence=(1, 2**31)))
    assert "text 1 has positions 0 to 7" in caught.value.hint  # "a big cat was on the red car"


@pytest.mark.parametrize(
    ("example", "options", "message"),
    [
        ("the [cat] ran", SearchOptions(layer=True), "layer"),
        ("the [cat] ran", SearchOptions(layer=1.0), "layer"),
        ("the [cat] ran", SearchOptions(layer="1"), "layer"),
        ("the [cat] ran", SearchOptions(layer=10**30), "not layer"),
        ("the [cat] ran", SearchOptions(any_word="yes"), "any_word"),
        ("the [cat] ran", SearchOptions(exclude_same_text=None), "exclude_same_text"),
        (b"the [cat] ran", SearchOptions(), "must be a string"),
        (5, SearchOptions(), "must be a string"),
        (None, SearchOptions(occurrence=(0.0, 1)), "whole number"),
        (None, SearchOptions(occurrence=(True, 1)), "whole number"),
        (None, SearchOptions(occurrence="01"), "text_id, position"),
        (None, SearchOptions(occurrence=(1, 2, 3)), "text_id, position"),
        ("the [cat] \udcff", SearchOptions(exclude_same_text=True), "not valid Unicode"),
    ],
)
def test_options_of_the_wrong_kind_are_refused_with_a_hint(tiny, index, example, options, message):
    with pytest.raises(InputError, match=message) as caught:
        search_occurrences(tiny, index, example, options=options)
    assert caught.value.hint


def test_odd_characters_in_a_filter_are_literal(index):
    """Quotes, backslashes, LIKE's wildcards and NUL reach LanceDB's filter as literal text: nothing found, no error."""
    from bertlens.occurrences.search import sql_string

    opened = open_index(index)
    for word in ["'", "''", "\\", "\\'", "%", "_", "%a%", "c_t", "\x00", "a\x00b", "' OR '1'='1", "\n", '"', "😀"]:
        expected = sum(key == word for key in opened.occurrences.to_arrow()["key"].to_pylist())
        assert opened.occurrences.count_rows(f"key = {sql_string(word)}") == expected, word
        found = opened.texts.search().where(f"strpos(text, {sql_string(word)}) > 0").limit(None).to_arrow()
        assert found.num_rows == sum(word in t for t in opened.texts.to_arrow()["text"].to_pylist()), word
    with pytest.raises(InputError, match="not valid Unicode"):
        sql_string("\udcff")


def test_another_model_or_no_model_is_refused(tiny, index, tmp_path_factory):
    other = load_model(str(make_tiny("roberta", tmp_path_factory.mktemp("other") / "roberta")))
    with pytest.raises(InputError, match="another model"):
        search_occurrences(other, index, "the [cat] sat")
    with pytest.raises(InputError, match="needs the model"):
        search_occurrences(None, index, "the [cat] sat")


def test_cli_json_is_the_library_result_and_the_lens_delegates(tiny, index, capsys):
    options = SearchOptions(k=3, any_word=True)
    expected = search_occurrences(tiny, index, "the [cat] sat", options=options).to_dict()
    assert Lens(tiny).search(index, "the [cat] sat", options=options).to_dict() == expected
    code = main(
        ["search", str(index), "the [cat] sat", "--any-word", "-k", "3", "--json", "--model", str(tiny.source.path)]
    )
    assert code == 0 and json.loads(capsys.readouterr().out) == expected
    assert main(["search", str(index), "the [cat] sat", "-k", "2", "--model", str(tiny.source.path)]) == 0
    shown = capsys.readouterr().out
    assert "[cat]" in shown and "this word's typical pair" in shown and "pets.txt:" in shown
    result = search_occurrences(tiny, index, "the [cat] sat", options=SearchOptions(k=2))
    assert "\x1b[1;33mcat\x1b[0m" in result.render(color=True)
    assert main(["search", str(index), "--from", "0:1", "-k", "2", "--json", "--model", str(tiny.source.path)]) == 0
    assert json.loads(capsys.readouterr().out)["query"]["word"] == "cat"
    assert main(["search", str(index), "--from", "x", "--model", str(tiny.source.path)]) == 2
    assert main(["search", str(index), "--model", str(tiny.source.path)]) == 2


# --- the ANN path ----------------------------------------------------------------------------------------------------


def test_ann_path_recall_against_exact_search(tiny, tmp_path):
    """IVF-SQ with exact re-ranking (ann.py's settings) over 4,000 clustered random vectors: recall@10 >= 0.95."""
    rng = np.random.default_rng(0)
    n, dims = 4000, tiny.config.hidden_size
    centres = rng.normal(size=(40, dims))
    vectors = (centres[rng.integers(0, 40, n)] + 0.5 * rng.normal(size=(n, dims))).astype(np.float32)  # (n, D)
    index = create_index(tmp_path / "ann", tiny, layers=(2,), pool="mean", dtype="float32", extra={})
    texts = TextRows(np.arange(n, dtype=np.int64), ["random"] * n, np.arange(1, n + 1, dtype=np.int32), ["w"] * n)
    rows = OccurrenceRows(
        text_id=np.arange(n, dtype=np.int64),
        position=np.zeros(n, dtype=np.int32),
        start=np.zeros(n, dtype=np.int32),
        end=np.ones(n, dtype=np.int32),
        word=[f"w{i}" for i in range(n)],
        vectors={2: vectors},
    )
    index.append(texts, rows, next_text=n)
    index.manifest["complete"] = True
    index.write_manifest()
    build_search_indexes(index, min_rows=0)
    assert ann_settings(index, "layer_2") is not None
    scores = cosines(vectors, vectors[0])  # warm-up shape check
    found = 0
    queries = rng.choice(n, 20, replace=False)
    for q in queries:
        result = search_occurrences(None, index, options=SearchOptions(any_word=True, occurrence=(int(q), 0)))
        assert "IVF_SQ" in result.method
        scores = cosines(vectors, vectors[q])
        scores[q] = -np.inf
        exact = set(np.argsort(-scores, kind="stable")[:10].tolist())
        found += len(exact & {h.text_id for h in result.hits})
        np.testing.assert_allclose([h.score for h in result.hits], scores[[h.text_id for h in result.hits]], rtol=1e-12)
    assert found / (10 * len(queries)) >= 0.95


# --- the real model --------------------------------------------------------------------------------------------------

RIVER = [
    "We walked along the river bank at dusk.",
    "The fisherman sat on the muddy bank of the stream.",
    "Reeds grew thick on the bank where the river bends.",
    "Ducks rested on the far bank of the canal.",
]
MONEY = [
    "She deposited her salary at the bank this morning.",
    "The bank approved the loan for the new house.",
    "He withdrew cash from the bank on Friday.",
    "My savings account at the bank earns little interest.",
]


def test_the_default_model_ranks_river_banks_first_from_a_river_example(default_model, tmp_path):
    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(MONEY + RIVER) + "\n", encoding="utf-8")
    index_corpus(default_model, corpus, tmp_path / "idx")
    river = search_occurrences(default_model, tmp_path / "idx", "I sat on the grassy [bank] of the river")
    assert {h.snippet for h in river.hits[:4]} == set(RIVER)
    money = search_occurrences(default_model, tmp_path / "idx", "I opened an account at the [bank]")
    assert {h.snippet for h in money.hits[:4]} == set(MONEY)
    assert river.baseline.random_pairs < river.baseline.same_word_pairs


CRANE_BIRD = [
    "A crane waded through the shallow marsh.",
    "The crane caught a frog with its long beak.",
    "We watched a crane fly low over the lake.",
    "A pair of cranes nested in the reeds.",
]
CRANE_NAME = [
    "Crane said the plan would fail.",
    "Mr Crane and his wife moved to Boston.",
    "The novel was written by Stephen Crane in 1895.",
    "Crane scored twice in the second half, and Crane's coach was pleased.",
]


def test_a_surname_does_not_read_as_alike_against_the_words_own_pairs(default_model, tmp_path):
    corpus = tmp_path / "crane.txt"
    corpus.write_text("\n".join(CRANE_BIRD + CRANE_NAME) + "\n", encoding="utf-8")
    index_corpus(default_model, corpus, tmp_path / "idx")
    result = search_occurrences(default_model, tmp_path / "idx", "A [crane] stood on one leg in the river.")
    by_sentence = {h.snippet: h for h in result.hits}
    assert set(by_sentence) == set(CRANE_BIRD[:3] + CRANE_NAME)  # one hit per text; "cranes" is another word
    names = [by_sentence[s].word_percentile for s in CRANE_NAME]
    assert all(p is not None and p < 50 for p in names), names  # no more alike than the word's typical pair
    assert result.hits[0].snippet in CRANE_BIRD and result.hits[0].word_percentile > 50
    assert "top hit: " in result.to_table() and "is more alike than this word's typical pair" in result.to_table()
