"""The shipped word groups (bertlens/data/groups/words.csv) and their projection, the teaching default of a token
projection: every word a token of the default vocabulary, groups that lie together in the input matrix, the group
of each point in the metadata, and clear errors for names and vocabularies that do not fit."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens import InputError, project_tokens
from bertlens.views import project_word_groups, word_groups


def test_every_shipped_word_is_one_token_of_the_default_vocabulary(default_model):
    groups = word_groups()
    assert list(groups)[:3] == ["numbers", "months", "days of the week"] and len(groups) == 12
    assert groups["months"] == tuple(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
    words = [word for members in groups.values() for word in members]
    assert len(words) == len(set(words)) == 168  # no word in two groups
    assert [w for w in words if default_model.vocabulary.token_to_id(w) is None] == []


def test_words_of_a_group_are_each_others_nearest_rows(default_model):
    """What the picture is meant to show holds in the original space: most of a word's 5 nearest rows (by cosine,
    among the 168) are words of its own group."""
    groups = word_groups()
    words = [w for members in groups.values() for w in members]
    group = np.array([name for name, members in groups.items() for _ in members])
    rows = default_model.embedding_weights.word_embeddings[[default_model.vocabulary.token_to_id(w) for w in words]]
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosine = unit @ unit.T
    np.fill_diagonal(cosine, -np.inf)
    nearest = np.argsort(-cosine, axis=1)[:, :5]
    assert (group[nearest] == group[:, None]).mean() > 0.8


def test_the_projection_is_project_tokens_of_the_words_with_a_group_column(default_model):
    projected = project_word_groups(default_model, ["months", "colours"], method="pca")
    words = [*word_groups()["months"], *word_groups()["colours"]]
    plain = project_tokens(default_model, words, method="pca")
    assert projected.labels == tuple(words)
    np.testing.assert_array_equal(projected.points, plain.points)
    assert projected.metadata["group"] == ("months",) * 12 + ("colours",) * 13
    assert "label" not in projected.metadata
    assert projected.title.startswith("Input-matrix rows (word_embeddings) of 25 words in 2 groups")
    assert projected.to_dict()["metadata"]["group"][0] == "months"


def test_own_groups_as_a_mapping(default_model):
    projected = project_word_groups(
        default_model, {"royals": ["king", "queen", "prince"], "fruit": ["apple", "pear", "plum"]}, method="pca"
    )
    assert projected.metadata["group"] == ("royals",) * 3 + ("fruit",) * 3
    assert projected.labels == ("king", "queen", "prince", "apple", "pear", "plum")


def test_an_unknown_group_name_is_refused_with_the_choices(default_model):
    with pytest.raises(InputError, match="No shipped word group is called 'planets'") as raised:
        project_word_groups(default_model, ["months", "planets"])
    assert "months" in raised.value.hint and "dict" in raised.value.hint


def test_words_a_small_vocabulary_cannot_spell_are_left_out_and_counted(tiny_models):
    projected = project_word_groups(tiny_models["bert"], method="pca")  # its 80 tokens know six of the words
    assert sorted(projected.labels) == ["banana", "blue", "bread", "cat", "dog", "red"]
    assert set(projected.metadata["group"]) == {"colours", "animals", "food"}
    assert "(162 words the vocabulary cannot spell left out)" in projected.title
    with pytest.raises(InputError, match="cannot spell 2 of the 2 words") as raised:
        project_word_groups(tiny_models["bert"], {"planets": ["mars", "jupiter"]})
    assert "count=1000" in raised.value.hint


def test_the_api_answers_the_library_projection_and_refuses_mixed_fields(tiny_models):
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.app import call

    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False))
    body = {"source": "groups", "groups": ["colours", "animals", "food"], "method": "pca"}
    status, data = call(app, "POST", "/api/projection", body)
    assert status == 200, data
    expected = project_word_groups(tiny_models["bert"], ["colours", "animals", "food"], method="pca", nearest=5)
    assert data["labels"] == list(expected.labels) and data["metadata"]["group"] == list(expected.metadata["group"])
    assert np.allclose(data["points"], expected.points, atol=1e-6) and len(data["nearest"][0]) == 5
    for wrong, words in (
        ({"source": "groups", "count": 10}, "takes groups only"),
        ({"source": "tokens", "groups": ["months"]}, 'Set "source": "groups"'),
        ({"source": "groups", "groups": ["planets"]}, "No shipped word group is called 'planets'"),
    ):
        status, data = call(app, "POST", "/api/projection", wrong)
        assert status == 400 and words in data["message"] + data["hint"], (wrong, data)
