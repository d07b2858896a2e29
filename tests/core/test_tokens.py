"""Tokens: exact ids on the default model, pairs, offsets, no padding or truncation, length reported."""

from __future__ import annotations

import pytest
from nasty import NASTY

from bertlens import InputError, tokenize

pytestmark = pytest.mark.parity  # held to transformers and tokenizers: run on each version pyproject allows

KNOWN = {
    "hello, world!": [101, 7592, 1010, 2088, 999, 102],
    "I like eating bread": [101, 1045, 2066, 5983, 7852, 102],
    "The banana bread was horrible": [101, 1996, 15212, 7852, 2001, 9202, 102],
    "dog": [101, 3899, 102],
    "I am Sinan": [101, 1045, 2572, 8254, 2319, 102],
}


@pytest.mark.parametrize("text", list(KNOWN))
def test_known_ids_on_the_default_model(default_model, text):
    assert tokenize(default_model, text).ids == KNOWN[text]


@pytest.mark.parametrize("text", list(KNOWN))
def test_ids_equal_transformers_tokenizer(default_model, text):
    from transformers import AutoTokenizer

    oracle = AutoTokenizer.from_pretrained(str(default_model.source.path))
    assert tokenize(default_model, text).ids == oracle(text, padding=False, truncation=False)["input_ids"]


def test_no_padding_even_though_tokenizer_json_pads_to_128(default_model):
    import json

    raw = json.loads((default_model.source.path / "tokenizer.json").read_text())
    assert raw["padding"]["strategy"] == {"Fixed": 128}  # the trap this guards against
    assert len(tokenize(default_model, "dog")) == 3


def test_sinan_is_two_pieces_of_one_word(default_model):
    result = tokenize(default_model, "I am Sinan")
    assert result.pieces == ["[CLS]", "i", "am", "sin", "##an", "[SEP]"]
    assert [t.word for t in result.tokens] == [None, 0, 1, 2, 2, None]
    assert [(t.start, t.end) for t in result.tokens[3:5]] == [(5, 8), (8, 10)]


def test_pair_segments_sequences_and_specials(default_model):
    result = tokenize(default_model, "I like bread", "Banana bread")
    assert result.pieces == ["[CLS]", "i", "like", "bread", "[SEP]", "banana", "bread", "[SEP]"]
    assert [t.segment for t in result.tokens] == [0, 0, 0, 0, 0, 1, 1, 1]
    assert [t.sequence for t in result.tokens] == [None, 0, 0, 0, None, 1, 1, None]
    assert [t.special for t in result.tokens] == [True, False, False, False, True, False, False, True]
    banana = result.tokens[5]
    assert "Banana bread"[banana.start : banana.end] == "Banana"


def test_without_special_tokens(default_model):
    assert tokenize(default_model, "hello, world!", add_special_tokens=False).ids == [7592, 1010, 2088, 999]


def test_too_long_is_reported_never_cut(default_model):
    text = "word " * 600
    result = tokenize(default_model, text)
    assert result.max_length == 512
    assert result.exceeds_max_length
    assert len(result) == 602
    assert "TOO LONG" in result.to_table()
    assert not tokenize(default_model, "word " * 510).exceeds_max_length


def test_roberta_length_limit_accounts_for_position_offset(tiny_models):
    # 64 position rows, the first pad + 1 = 2 unusable
    assert tokenize(tiny_models["roberta"], "the").max_length == 62


def test_the_table_and_pandas_name_each_field_alike(default_model):
    pytest.importorskip("pandas", reason="to_pandas() needs pandas, which the core install lacks")
    result = tokenize(default_model, "I am Sinan", "and you?")
    header = result.to_table().splitlines()[0].split()
    columns = set(result.to_pandas().columns)
    assert {"word", "sequence", "segment", "special"} <= set(header) & columns  # one name for each field


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_nasty_text_offsets_stay_inside_the_input(default_model, text):
    result = tokenize(default_model, text)
    assert result.pieces[0] == "[CLS]" and result.pieces[-1] == "[SEP]"
    for token in result.tokens:
        assert 0 <= token.start <= token.end <= len(text)
        if not token.special:
            assert token.end > token.start
    assert result.to_dict()["tokens"][0]["piece"] == "[CLS]"
    # The table shows what to_dict() holds: one row per token, its cells the same values, pieces escaped to be seen.
    header, rule, *rows, note = result.to_table().splitlines()
    assert header.split() == ["#", "piece", "id", "chars", "word", "sequence", "segment", "special"]
    assert set(rule.replace(" ", "")) == {"-"}

    def cell(value: object) -> str:
        return "-" if value is None else str(value)

    expected = [
        [cell(t["index"]), t["piece"] if t["piece"].isprintable() else t["piece"].encode("unicode_escape").decode()]
        + [cell(t["id"]), f"{t['start']}:{t['end']}", cell(t["word"]), cell(t["sequence"]), cell(t["segment"])]
        + (["yes"] if t["special"] else [])  # an empty cell for "no"
        for t in result.to_dict()["tokens"]
    ]
    assert [row.split() for row in rows] == expected
    assert note == f"{len(result)} tokens; the model takes at most 512."


def test_non_string_is_an_input_error(default_model):
    with pytest.raises(InputError, match="must be a string"):
        tokenize(default_model, 42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="pair must be a string"):
        tokenize(default_model, "a", ["b"])  # type: ignore[arg-type]


def test_to_dict_holds_every_field(default_model):
    data = tokenize(default_model, "dog").to_dict()
    assert data["tokens"][1] == {
        "index": 1,
        "piece": "dog",
        "id": 3899,
        "start": 0,
        "end": 3,
        "word": 0,
        "sequence": 0,
        "segment": 0,
        "special": False,
    }
    assert data["exceeds_max_length"] is False


def test_lone_surrogates_are_an_input_error(default_model):
    with pytest.raises(InputError, match="not valid Unicode"):
        tokenize(default_model, "a\udcffb")


def test_tokens_read_like_the_tuple_of_tokens_they_stand_for(default_model):
    """`Tokens` keeps columns and makes each `Token` when read; it must behave as the tuple of those tokens would."""
    from bertlens.core.tokens import Token

    found = tokenize(default_model, "I am Sinan").tokens
    whole = tuple(found)
    assert all(type(t) is Token for t in whole) and [t.index for t in whole] == list(range(6))
    assert found == whole and whole == found and found == tokenize(default_model, "I am Sinan").tokens
    assert found != whole[:-1] and found != list(whole)  # a tuple never equals a list; neither do these
    assert hash(found) == hash(whole) and repr(found) == repr(whole)
    assert found[-1] == whole[-1] and found[1:-1] == whole[1:-1] and found[::-2] == whole[::-2]
    assert found + whole[:1] == (*whole, whole[0]) and whole[:1] + found == (whole[0], *whole)
    assert whole[3] in found and found.index(whole[3]) == 3 and found.count(whole[0]) == 1
    assert [t.piece for t in reversed(found)] == [t.piece for t in reversed(whole)]
    for bad in (6, -7):
        with pytest.raises(IndexError):
            found[bad]
    with pytest.raises(TypeError):
        found["0"]


@pytest.mark.parametrize("pair", ["", " ", "and you?"])
def test_an_empty_second_text_is_no_pair_as_in_transformers(default_model, pair):
    from transformers import AutoTokenizer

    from bertlens import explain

    theirs = AutoTokenizer.from_pretrained(str(default_model.source.path))("I am Sinan", pair)
    ours = tokenize(default_model, "I am Sinan", pair)
    assert ours.ids == theirs["input_ids"]
    assert [t.segment for t in ours.tokens] == theirs["token_type_ids"]
    assert ours.pair == (None if pair == "" else pair)
    explained = explain(default_model, "I am Sinan", pair)
    assert [t.id for t in explained.tokens] == theirs["input_ids"]
    assert explained.pair == ours.pair
