"""A word's senses: clusters against scikit-learn, index and corpus paths against the model's own vectors, snippets,
pictures, the command line, bad inputs; and "bank" split into river and money by the default model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny import make_tiny

from bertlens import InputError, Lens, load_model
from bertlens.cli import main
from bertlens.contextual.pooling import occurrences
from bertlens.contextual.states import hidden_states
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.plots.render import render
from bertlens.senses.senses import SensesOptions, SensesResult, describe, word_senses
from bertlens.senses.senses_text import STOP_WORDS, Snippet, context_words, distinctive, names, snippet_of
from bertlens.views.clusters import MIN_OCCURRENCES, cluster, silhouette

CAT_LINES = [
    "the cat sat on the mat",
    "a cat ran to the house",
    "the big cat was red",
    "she walked the cat at night",
    "the small cat ran in the tree",
    "we had a new cat that day",
    "they say the old cat is good",
    "i saw a blue cat and a dog",
    "it was a bad cat",
    "the cat and the dog sat",
]
OTHER_LINES = ["the dog ran", "a dog sat on the mat"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_model(str(make_tiny("bert", tmp_path_factory.mktemp("tiny") / "bert")))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    file = tmp_path_factory.mktemp("corpus") / "cats.txt"
    file.write_text("\n".join(CAT_LINES + OTHER_LINES) + "\n", encoding="utf-8")
    return file


@pytest.fixture(scope="module")
def index(tiny, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "idx"
    index_corpus(tiny, corpus, out, options=IndexOptions(layers=(1, -1)))
    return out


def direct_vectors(model, lines, word, layer):
    """The word's vectors computed here: hidden states, its pieces averaged (n, D)."""
    rows = []
    for states in hidden_states(model, lines):
        for run in occurrences(states, word):
            rows.append(states.states[layer][[t.index for t in run]].mean(axis=0))
    return np.array(rows)


def unit(matrix):
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def points(result):
    return np.array([[p.x, p.y] for p in result.points])


# --- clustering --------------------------------------------------------------------------------------------------


def test_two_directions_are_two_senses_and_one_blob_is_one():
    rng = np.random.default_rng(1)
    centre = rng.standard_normal((2, 32)) * 3
    two = np.concatenate([centre[0] + rng.standard_normal((40, 32)), centre[1] + rng.standard_normal((30, 32))])
    found = cluster(two, "auto")
    assert found.k == 2 and found.auto
    assert sorted(np.bincount(found.labels)) == [30, 40] and set(found.labels[:40]) == {0}  # 0 is the larger
    blob = centre[0] + rng.standard_normal((70, 32))
    assert cluster(blob, "auto").k == 1


def test_given_k_finds_sklearns_kmeans_clusters_and_silhouette_is_numpy():
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((60, 16)) + np.repeat(rng.standard_normal((3, 16)) * 2, 20, axis=0)
    found = cluster(vectors, 3, seed=5)
    theirs = KMeans(n_clusters=3, n_init=4, random_state=5).fit_predict(unit(vectors))
    assert len(set(zip(found.labels.tolist(), theirs.tolist(), strict=True))) == 3  # one partition, labels renamed
    u = unit(vectors)  # 16 columns: the 32 principal axes are all of them, a rotation, so distances are these
    distance = np.linalg.norm(u[:, None] - u[None], axis=-1)  # (60, 60)
    labels = found.labels
    own = np.array([distance[i, labels == labels[i]].sum() / (np.sum(labels == labels[i]) - 1) for i in range(60)])
    other = np.array([min(distance[i, labels == c].mean() for c in range(3) if c != labels[i]) for i in range(60)])
    expected = float(np.mean((other - own) / np.maximum(own, other)))
    assert found.silhouettes[3] == pytest.approx(expected, abs=1e-9)
    assert silhouette(u, labels) == pytest.approx(expected, abs=1e-9)


# --- the index and the corpus give the model's own vectors ---------------------------------------------------------


def test_index_and_corpus_points_are_the_pca_of_the_models_unit_vectors(tiny, corpus, index):
    from sklearn.decomposition import PCA

    options = SensesOptions(k=2, layer=1)
    from_index = word_senses(tiny, "cat", index=index, options=options)
    from_corpus = word_senses(tiny, "cat", corpus=corpus, options=options)
    assert isinstance(from_index, SensesResult) and from_index.layer == 1 and from_index.found == 10
    expected = PCA(2).fit_transform(unit(direct_vectors(tiny, CAT_LINES, "cat", 1)).astype(np.float64))
    np.testing.assert_allclose(points(from_index), expected, atol=1e-5)
    np.testing.assert_allclose(points(from_corpus), expected, atol=1e-5)  # each text is one sentence here
    assert [p.sense for p in from_index.points] == [p.sense for p in from_corpus.points]
    assert sum(s.size for s in from_index.senses) == from_index.clustered == 10
    for p in from_index.points:  # the word's offsets in its snippet, for highlighting
        assert p.occurrence.snippet[p.occurrence.start : p.occurrence.end] == "cat"
        assert p.occurrence.text_id >= 0 and p.occurrence.line >= 1
    typical = from_index.senses[0].typical[0]
    assert typical in [p.occurrence for p in from_index.points if p.sense == 0]
    assert all(w.word not in ("the", "a", "cat") for s in from_index.senses for w in s.words)
    assert from_index.to_dict()["points"][0]["occurrence"]["snippet"]


def test_the_cap_is_a_reported_seeded_sample(tiny, index):
    result = word_senses(tiny, "cat", index=index, options=SensesOptions(k=2, max_occurrences=7, seed=3))
    assert result.found == 10 and result.clustered == 7
    assert any("10 occurrences found; 7 clustered" in n for n in result.notes)
    again = word_senses(tiny, "cat", index=index, options=SensesOptions(k=2, max_occurrences=7, seed=3))
    assert again.to_dict() == result.to_dict()


def test_snippet_is_the_sentence_cut_around_the_word():
    text = "First one here. " + "word " * 100 + "the bank is here " + "word " * 100 + ". Last one."
    start = text.index("bank")
    cut, s, e = snippet_of(text, start, start + 4, width=60)
    assert cut[s:e] == "bank" and len(cut) <= 62 and cut.startswith("…") and cut.endswith("…")
    sentence, s, e = snippet_of("It rained. We sat on the bank. Then home.", 25, 29)
    assert sentence == "We sat on the bank." and sentence[s:e] == "bank"


# --- what names a sense ----------------------------------------------------------------------------------------------

RIVER_BANKS = [
    "We sat with Alan on the grassy bank of the river, close to the water.",
    "The shore and the bank were flooded when the river rose over the water.",
    "Fish swim near the bank where the water meets the shore.",
    "They fished from the bank of the Thames, where the river is wide.",
    "Herons stood on the muddy bank of the Thames by the shore.",
]
MONEY_BANKS = [
    "She opened an account at the bank to save money.",
    "The bank gave Alan a loan with his account as security.",
    "He took a loan from the bank, Barclays, to pay the money back.",
    "The bank approved the loan and moved the money into her account.",
    "His savings sat in an account at Barclays, a bank that lends money.",
]


def bank_contexts(sentences):
    return [context_words(s, s.index("bank"), s.index("bank") + 4, "bank") for s in sentences]


def test_senses_are_named_by_their_distinctive_words_without_names_or_stop_words():
    contexts = bank_contexts(RIVER_BANKS + MONEY_BANKS)
    assert names(contexts) == {"alan", "thames", "barclays"}  # capitalised inside a sentence; "Herons" starts one
    labels = np.array([0] * len(RIVER_BANKS) + [1] * len(MONEY_BANKS))
    river, money = distinctive(contexts, labels, 2, 20)
    assert [w.word for w in river[:3]] == ["river", "shore", "water"]  # 3 sentences each, none of the money ones
    assert [w.word for w in money[:3]] == ["account", "money", "loan"]
    shown = {w.word for w in river + money}
    assert not shown & STOP_WORDS and not shown & {"alan", "thames", "barclays", "bank"}
    assert "herons" in {w.word for w in river}  # a sentence's first word is no name
    # c-TF-IDF by hand: "river" is 3 of the river sense's words, in 3 sentences of all; A is the mean words per sense
    words = [sum(len(c.words - names(contexts)) for c in part) for part in (contexts[:5], contexts[5:])]
    assert river[0].score == pytest.approx(3 / words[0] * np.log(1 + np.mean(words) / 3), rel=1e-12)
    assert (river[0].count, river[0].others, money[0].count) == (3, 0, 4)


def test_a_sentence_holding_the_word_twice_counts_once(tiny):
    twice = "The officer at the bank sent a cheque to another bank."
    texts = RIVER_BANKS + MONEY_BANKS + [twice, twice]
    spans = [(t.index("bank"), t.index("bank") + 4) for t in texts[:-1]] + [(len(twice) - 5, len(twice) - 1)]
    snippets = [Snippet(t, *span, "banks.txt", i + 1, -1) for i, (t, span) in enumerate(zip(texts, spans, strict=True))]
    snippets[-1] = Snippet(twice, *spans[-1], "banks.txt", len(texts) - 1, -1)  # the same sentence's second "bank"
    rows = np.zeros((len(texts), 8))
    rows[:5, 0], rows[5:, 1] = 1, 1  # river, then money: two separate directions
    result = describe(tiny, "bank", "banks.txt", 1, rows, snippets, len(texts), SensesOptions(k=2), [])
    money = next(s for s in result.senses if s.size == 7)
    assert {w.word: w.count for w in money.words}["cheque"] == 1  # one sentence, not two occurrences' worth


def test_a_word_shared_by_the_senses_names_neither_and_one_sense_gets_its_frequent_words():
    contexts = bank_contexts([s.replace("bank", "bank by the road") for s in RIVER_BANKS + MONEY_BANKS])
    labels = np.array([0] * len(RIVER_BANKS) + [1] * len(MONEY_BANKS))
    assert all("road" not in {w.word for w in sense} for sense in distinctive(contexts, labels, 2, 20))
    (alone,) = distinctive(contexts, np.zeros(len(contexts), dtype=np.int64), 1, 1)
    assert [w.word for w in alone] == ["road"]  # in all 10 sentences: the most frequent, whatever its weight


# --- pictures, command line, Lens ----------------------------------------------------------------------------------


def test_pictures_show_every_occurrence_and_the_typical_sentences(tiny, index):
    result = word_senses(tiny, "cat", index=index, options=SensesOptions(k=2))
    assert render(result, "png").content.startswith(b"\x89PNG")
    assert b"<svg" in render(result, "svg").content
    page = render(result, "html").content.decode()
    assert "sense 0" in page and "\\u003cb\\u003ecat\\u003c" in page  # plotly escapes < in its JSON


def test_cli_json_is_the_library_result_and_the_lens_delegates(tiny, index, capsys, tmp_path):
    path = str(tiny.source.path)
    assert main(["senses", "--model", path, str(index), "cat", "--k", "2", "--layer", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    library = word_senses(tiny, "cat", index=index, options=SensesOptions(k=2, layer=1))
    assert printed == json.loads(json.dumps(library.to_dict()))
    assert Lens(tiny).senses("cat", index=index, options=SensesOptions(k=2, layer=1)).to_dict() == library.to_dict()
    picture = tmp_path / "cat.svg"
    assert main(["senses", "--model", path, str(index), "cat", "--k", "2", "--plot", str(picture)]) == 0
    assert picture.read_bytes().startswith(b"<?xml") or b"<svg" in picture.read_bytes()
    assert main(["senses", "--model", path, str(index), "cat", "--plot", str(picture)]) == 2  # never overwritten


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"word": "banana"}, "does not occur"),
        ({"word": "dog"}, f"at least {MIN_OCCURRENCES}"),
        ({"word": "cat", "options": SensesOptions(k=6)}, "out of range"),
        ({"word": "the cat"}, "2 words"),
        ({"word": "cat", "options": SensesOptions(layer=0)}, "not layer 0"),
    ],
)
def test_bad_inputs_are_refused_with_a_hint(tiny, index, kwargs, message):
    with pytest.raises(InputError, match=message) as error:
        word_senses(tiny, index=index, **kwargs)
    assert error.value.hint


def test_other_model_and_both_sources_are_refused(tiny, index, corpus, tmp_path_factory):
    other = load_model(str(make_tiny("roberta", tmp_path_factory.mktemp("other") / "roberta")))
    with pytest.raises(InputError, match="another model"):
        word_senses(other, "cat", index=index)
    with pytest.raises(InputError, match="exactly one"):
        word_senses(tiny, "cat", index=index, corpus=corpus)
    with pytest.raises(InputError, match="k must be"):
        SensesOptions(k="many")
    with pytest.raises(InputError, match="at most 20"):
        SensesOptions(k=21)


# --- the real model --------------------------------------------------------------------------------------------------

BANK_RIVER = [
    "We walked along the river bank at dusk.",
    "The fisherman sat on the muddy bank of the stream.",
    "Reeds grew thick on the bank where the river bends.",
    "The boat drifted toward the grassy bank of the lake.",
    "Children played on the sandy bank beside the water.",
    "Ducks rested on the far bank of the canal.",
]
BANK_MONEY = [
    "She deposited her salary at the bank this morning.",
    "The bank approved the loan for the new house.",
    "He withdrew cash from the bank on Friday.",
    "The bank raised its interest rates again.",
    "My savings account at the bank earns little interest.",
    "The central bank printed more money last year.",
]


@pytest.fixture(scope="module")
def bank_senses(default_model, tmp_path_factory):
    file = tmp_path_factory.mktemp("bank") / "bank.txt"
    file.write_text("\n".join(BANK_RIVER + BANK_MONEY) + "\n", encoding="utf-8")
    return word_senses(default_model, "bank", corpus=file)


def test_the_default_model_splits_river_banks_from_money_banks(bank_senses):
    assert bank_senses.k == 2 and bank_senses.auto  # chosen, not given
    by_sentence = {p.occurrence.snippet: p.sense for p in bank_senses.points}
    river = {by_sentence[s] for s in BANK_RIVER}
    money = {by_sentence[s] for s in BANK_MONEY}
    assert len(river) == 1 and len(money) == 1 and river != money
    words = {s.sense: {w.word for w in s.words} for s in bank_senses.senses}
    assert "river" in words[river.pop()] and "interest" in words[money.pop()]
    assert not set.union(*words.values()) & (STOP_WORDS | {"friday"})  # "on Friday": a name
