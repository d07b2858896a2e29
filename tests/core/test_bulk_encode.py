"""Many texts encoded at once (core/bulk_encode.py): the tokenizer's own ids, words, offsets and pieces for every text,
on the default model's tokenizer and on variants of it whose normalizer, post-processor or added tokens allow each
shortcut or rule it out, over a corpus sample, odd strings and texts that hold special tokens."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
from nasty import NASTY
from tokenizers import AddedToken, Tokenizer

from bertlens.core.bulk_encode import BulkEncoder, _ascii_words, bulk_encoder
from bertlens.core.vocab import from_tokenizer

EDGES = [
    "[MASK] in capitals",
    "a [mask] in small letters and a [Sep] in both",
    "the [CLS][SEP] pair",
    "Bertlens BERTLENS bertlens, and a new-word or NEW-WORD",
    "tab\tseparated",
    "new\nline",
    "vertical\x0btab and form\x0cfeed",
    "plain ASCII then é",
    "  leading and trailing  ",
    "!!! ??? ...",
    "'single' \"double\" `back`",
    "under_score and hy-phen",
    "123,456.78 and 1e-9",
    "UNBELIEVABLY long words: antidisestablishmentarianism",
    "~^|\\{}",
]


def corpus_sample() -> list[str]:
    text = resources.files("bertlens.data.sample").joinpath("wikitext-2-valid.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines()[:400]]


def expected(tokenizer: Tokenizer, texts: list[str]) -> dict[str, list[int]]:
    """The tokenizer's own encodings, flat: ids, each text's length, and each word's first and last token (on the
    flat axis) and characters (a word: a run of tokens of one word id within a text)."""
    encodings = tokenizer.encode_batch(texts)
    found: dict[str, list[int]] = {key: [] for key in ("ids", "lengths", "first", "last", "starts", "ends")}
    base = 0
    for encoding in encodings:
        found["ids"] += encoding.ids
        found["lengths"].append(len(encoding))
        previous = None
        for t, word in enumerate(encoding.word_ids):
            if word is not None and word != previous:
                found["first"].append(base + t)
                found["starts"].append(encoding.offsets[t][0])
            if word is not None and (t + 1 == len(encoding) or encoding.word_ids[t + 1] != word):
                found["last"].append(base + t)
                found["ends"].append(encoding.offsets[t][1])
            previous = word
        base += len(encoding)
    return found


def assert_as_the_tokenizer(bulk: BulkEncoder, texts: list[str]) -> None:
    encoded = bulk.encode(texts)
    laid = bulk.lay_out(encoded)
    want = expected(bulk.tokenizer, texts)
    assert np.diff(laid.token_starts).tolist() == bulk.lengths(encoded).tolist() == want["lengths"]
    assert laid.ids.tolist() == want["ids"]
    for key in ("first", "last", "starts", "ends"):
        assert getattr(laid, key).tolist() == want[key], key
    words = np.repeat(np.arange(len(laid.first)), laid.last - laid.first + 1)
    assert laid.word_of_piece.tolist() == words.tolist()
    assert laid.pieces.tolist() == [t for a, b in zip(laid.first, laid.last, strict=True) for t in range(a, b + 1)]
    for row, whole in enumerate(bulk.tokenizer.encode_batch(texts)):
        assert bulk.pieces(encoded, row) == tuple(whole.tokens), texts[row]


def variant(base: Tokenizer, **parts: object) -> Tokenizer:
    """The tokenizer with some of tokenizer.json's parts replaced (each a JSON-ready dict, or None)."""
    return Tokenizer.from_str(json.dumps(json.loads(base.to_str()) | parts))


@pytest.fixture(scope="module")
def base(default_model) -> Tokenizer:
    return default_model.vocabulary.tokenizer


CASED = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "lowercase": False}
NFD_LOWER_STRIP = {"type": "Sequence", "normalizers": [{"type": t} for t in ("NFD", "Lowercase", "StripAccents")]}
LOWERCASE_AND_REPLACE = [{"type": "Lowercase"}, {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}]
SPECIALS = (("[CLS]", 101), ("[MASK]", 103), ("[SEP]", 102))
TWO_BEFORE = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": n, "type_id": 0}} for n in ("[CLS]", "[MASK]")]
    + [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {n: {"id": n, "ids": [i], "tokens": [n]} for n, i in SPECIALS},
}
TRIMS = {
    "type": "RobertaProcessing",
    "sep": ["[SEP]", 102],
    "cls": ["[CLS]", 101],
    "trim_offsets": True,
    "add_prefix_space": False,
}
# name -> (the parts of tokenizer.json replaced in the default tokenizer, and which shortcuts the encoder takes:
# the frame in numpy, printable ASCII without the normalizer, its words read off the characters)
VARIANTS: dict[str, tuple[dict[str, object], tuple[bool, bool, bool]]] = {
    "default": ({}, (True, True, True)),
    "cased": ({"normalizer": CASED}, (True, True, True)),
    "NFD, lowercase, strip accents": (
        {
            "normalizer": {
                "type": "Sequence",
                "normalizers": [{"type": t} for t in ("NFD", "Lowercase", "StripAccents")],
            }
        },
        (True, True, True),
    ),
    "a normalizer that replaces": (
        {"normalizer": {"type": "Sequence", "normalizers": LOWERCASE_AND_REPLACE}},
        (True, False, False),
    ),
    "no normalizer, no post-processor": ({"normalizer": None, "post_processor": None}, (False, True, True)),
    "a post-processor that trims offsets": ({"post_processor": TRIMS}, (False, True, True)),
    "a template with two tokens before": ({"post_processor": TWO_BEFORE}, (True, True, True)),
    "another pre-tokenizer": ({"pre_tokenizer": {"type": "Whitespace"}}, (True, True, False)),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_text_is_encoded_as_the_tokenizer_encodes_it(base, name):
    parts, shortcuts = VARIANTS[name]
    bulk = bulk_encoder(variant(base, **parts))
    assert (bool(bulk.prefix or bulk.suffix), bulk.raw is not None, bulk.continues is not None) == shortcuts
    assert_as_the_tokenizer(bulk, [*corpus_sample(), *NASTY, *EDGES])


def test_added_words_send_their_texts_through_the_normalizer(base):
    tokenizer = variant(base)
    tokenizer.add_tokens(["Bertlens", AddedToken("new-word", normalized=True)])
    bulk = bulk_encoder(tokenizer)
    assert bulk.raw is not None and {"bertlens", "new-word"} <= set(bulk.added)
    assert_as_the_tokenizer(bulk, [*corpus_sample()[:100], *NASTY, *EDGES])


@pytest.mark.parametrize("texts", [[], [""], ["only ASCII here"], ["é only"], ["[MASK]"]])
def test_chunks_all_of_one_kind_or_empty(base, texts):
    assert_as_the_tokenizer(bulk_encoder(base), texts)


def test_the_default_frame_and_one_encoder_per_vocabulary(default_model):
    bulk = default_model.vocabulary.bulk
    assert (bulk.prefix, bulk.suffix, bulk.vocabulary[101], bulk.vocabulary[102]) == ((101,), (102,), "[CLS]", "[SEP]")
    assert default_model.vocabulary.bulk is bulk
    assert bulk.tokenizer is default_model.vocabulary.tokenizer


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta", "distilbert", "albert", "deberta-v2"])
def test_tiny_families(tiny_models, family):
    assert_as_the_tokenizer(tiny_models[family].vocabulary.bulk, [*corpus_sample()[:50], *NASTY, *EDGES])


def test_a_vocab_txt_tokenizer_cased(tmp_path, base):
    from tokenizers.implementations import BertWordPieceTokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(base.id_to_token(i) for i in range(base.get_vocab_size())) + "\n", encoding="utf-8")
    cased = BertWordPieceTokenizer(str(vocab), lowercase=False)._tokenizer
    bulk = from_tokenizer(cased, source="test").bulk
    assert bulk.raw is not None and not bulk.lowercase
    assert_as_the_tokenizer(bulk, [*corpus_sample()[:100], *NASTY, *EDGES])


def test_words_read_off_printable_ascii_are_berts_words(base):
    texts = [t for t in [*corpus_sample(), *NASTY, *EDGES] if t.isascii() and t.isprintable()]
    text_of, starts, ends = _ascii_words(texts)
    want = [(i, a, b) for i, t in enumerate(texts) for _, (a, b) in base.pre_tokenizer.pre_tokenize_str(t.lower())]
    assert list(zip(text_of.tolist(), starts.tolist(), ends.tolist(), strict=True)) == want
