"""The Corpus view's API, in-process: occurrence indexes opened at start (`serve --index`), search and senses answering
exactly the library's `to_dict()` (what `bertlens search/senses --json` print), and every bad request a 4xx JSON error
with a hint. One tiny random model and one tiny index, built once for the module."""

from __future__ import annotations

import json

import pytest
from api_answers import ok, refused, same
from fastapi.testclient import TestClient

from bertlens.cli import main
from bertlens.core.errors import InputError
from bertlens.occurrences.build import IndexOptions, index_corpus
from bertlens.occurrences.search import SearchOptions, search_occurrences
from bertlens.occurrences.store import open_index
from bertlens.web import ServerLimits, create_app

CORPUS = [
    "the cat sat on the mat",
    "the dog ran in the house",
    "a big red car was at the house",
    "the cat ran to the tree",
    "she sat on the old mat",
    "we walk at night in the tree house",
    "the bread was bad",
    "a banana bread is good",
    "he ran to the blue car",
    "the small dog sat on the mat",
    "it was a good day for the cat",
    "they walk in the old house at night",
]
EXAMPLE = "the [cat] sat on a mat"
LIMITS = ServerLimits(precompute=False, max_search_k=20, max_sense_occurrences=40)


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_models):
    """A tiny index of the tiny BERT model (layers 1 and 2), and the model's folder."""
    root = tmp_path_factory.mktemp("corpus")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    index_corpus(tiny_models["bert"], corpus, root / "index", options=IndexOptions(layers=(1, 2)))
    return root / "index"


@pytest.fixture(scope="module")
def client(built, tiny_models):
    return TestClient(create_app([tiny_models["bert"]], LIMITS, indexes=[built]))


def serve_json(capsys, *argv: str) -> tuple[int, dict]:
    """`bertlens serve … --get/--post … --json`: the exit status and the JSON printed (answer or error)."""
    status = main(["serve", *argv, "--json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out or captured.err)


def test_indexes_are_listed(client, built):
    data = ok(client.get("/api/indexes"))
    index = open_index(built)
    assert data == {
        "indexes": [
            {
                "index": 0,
                "name": "index",
                "model": "bert",
                "texts": len(CORPUS),
                "rows": index.rows,
                "layers": [1, 2],
                "model_layers": 2,
                "dims": 32,
                "dtype": "float32",
                "pool": "mean",
            }
        ]
    }
    assert index.rows == sum(len(line.split()) for line in CORPUS)
    limits = ok(client.get("/api/models"))["limits"]
    assert limits["max_search_k"] == 20 and limits["max_sense_occurrences"] == 40


@pytest.mark.parametrize(
    ("body", "options"),
    [
        ({"example": EXAMPLE}, {}),
        ({"example": "the dog sat on the mat", "word": "dog", "k": 3, "layer": 1}, {"word": "dog", "k": 3, "layer": 1}),
        ({"example": EXAMPLE, "any_word": True, "k": 5}, {"any_word": True, "k": 5}),
        ({"example": "[the] cat sat on the mat", "exclude_same_text": True}, {"exclude_same_text": True}),
    ],
)
def test_search_equals_the_library(client, built, tiny_models, body, options):
    from bertlens.occurrences.search import SearchOptions, search_occurrences

    answer = ok(client.post("/api/search", json=body))
    expected = search_occurrences(tiny_models["bert"], built, body["example"], options=SearchOptions(**options))
    assert answer == same(expected)
    assert answer["hits"] and all(
        h["snippet"][h["snippet_start"] : h["snippet_end"]] == h["word"] for h in answer["hits"]
    )  # what the page highlights
    if body.get("exclude_same_text"):
        assert CORPUS.index("the cat sat on the mat") not in {h["text_id"] for h in answer["hits"]}


def test_all_occurrences_per_text_when_asked(client, built, tiny_models):
    from bertlens.occurrences.search import SearchOptions, search_occurrences

    body = {"example": "[the] cat sat on the mat", "k": 20}  # "the" is twice in several texts
    one = ok(client.post("/api/search", json=body))
    every = ok(client.post("/api/search", json={**body, "one_per_text": False}))
    expected = search_occurrences(
        tiny_models["bert"], built, body["example"], options=SearchOptions(k=20, one_per_text=False)
    )
    assert every == same(expected) and not every["one_per_text"]
    texts = [h["text_id"] for h in every["hits"]]
    assert len(texts) == sum(line.split().count("the") for line in CORPUS) > len(set(texts))  # several from one text
    assert one["one_per_text"] and len({h["text_id"] for h in one["hits"]}) == len(one["hits"]) == len(set(texts))


def test_the_search_request_has_every_search_option_with_its_default():
    """The API's search body mirrors the library's `SearchOptions`: each option by its name, with its default."""
    from dataclasses import fields

    from bertlens.occurrences.search import SearchOptions
    from bertlens.web.requests import SearchRequest

    for option in fields(SearchOptions):
        assert SearchRequest.model_fields[option.name].default == option.default, option.name


def cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_search_and_senses_equal_the_cli_json(client, built, tiny_dirs, capsys):
    """`bertlens search … --json` and `bertlens senses … --json` print what the API answers, byte for byte as JSON."""
    model = ("--model", str(tiny_dirs["bert"]))
    web = ok(client.post("/api/search", json={"example": EXAMPLE, "k": 5, "any_word": True, "layer": 1}))
    assert web == cli_json(capsys, "search", str(built), EXAMPLE, "-k", "5", "--any-word", "--layer", "1", *model)
    hit = web["hits"][0]
    web = ok(
        client.post("/api/search", json={"occurrence": [hit["text_id"], hit["position"]], "exclude_same_text": True})
    )
    where = f"{hit['text_id']}:{hit['position']}"
    assert web == cli_json(capsys, "search", str(built), "--from", where, "--exclude-same-text", *model)
    web = ok(client.post("/api/senses", json={"word": "the", "k": 2, "typical": 2, "words": 3}))
    assert web == cli_json(capsys, "senses", str(built), "the", "--k", "2", "--typical", "2", "--words", "3", *model)


def test_search_from_a_hit(client, built, tiny_models):
    from bertlens.occurrences.search import SearchOptions, search_occurrences

    first = ok(client.post("/api/search", json={"example": EXAMPLE}))["hits"][0]
    occurrence = [first["text_id"], first["position"]]
    answer = ok(client.post("/api/search", json={"occurrence": occurrence, "k": 3}))
    expected = search_occurrences(tiny_models["bert"], built, options=SearchOptions(k=3, occurrence=tuple(occurrence)))
    assert answer == same(expected)
    assert answer["query"]["text_id"] == first["text_id"] and answer["query"]["word"] == "cat"


def test_senses_equal_the_library_and_serve_post(client, built, tiny_models, tiny_dirs, capsys):
    from bertlens.senses.senses import SensesOptions, word_senses

    model = tiny_models["bert"]
    answer = ok(client.post("/api/senses", json={"word": "the", "k": 2, "layer": 1}))
    assert answer == same(word_senses(model, "the", index=built, options=SensesOptions(k=2, layer=1)))
    assert answer["k"] == 2 and len(answer["points"]) == answer["clustered"] == answer["found"]
    assert {p["sense"] for p in answer["points"]} == {0, 1}
    by_number = ok(client.post("/api/senses", json={"index": 0, "word": "The", "max_occurrences": 10}))
    assert by_number == same(word_senses(model, "The", index=built, options=SensesOptions(max_occurrences=10)))
    assert by_number["clustered"] == 10 < by_number["found"]  # a sample, said so
    status, printed = serve_json(
        capsys,
        "--model",
        str(tiny_dirs["bert"]),
        "--index",
        str(built),
        "--post",
        "/api/senses",
        '{"word": "the", "k": 2, "layer": 1}',
    )
    assert status == 0 and printed == answer


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/search", {"example": EXAMPLE, "k": 21}, 413, ("21", "at most 20")),
        ("/api/search", {"example": EXAMPLE, "index": "elsewhere"}, 404, ("'elsewhere'", "GET /api/indexes")),
        ("/api/search", {"example": EXAMPLE, "index": 3}, 404, ("3", "GET /api/indexes")),
        ("/api/search", {"example": EXAMPLE, "path": "/etc"}, 422, ("path", "not a field")),
        ("/api/search", {"example": EXAMPLE, "k": "5"}, 422, ("k",)),
        ("/api/search", {"example": EXAMPLE, "one_per_text": 0}, 422, ("one_per_text",)),
        ("/api/search", {"k": 5}, 400, ("example sentence", "occurrence")),
        ("/api/search", {"example": "x" * 20_001}, 413, ("example sentence", "20,000")),
        ("/api/search", {"example": "the cat sat"}, 400, ("no [marked] word",)),
        ("/api/search", {"example": "the [cat] [sat]"}, 400, ("marks 2 words",)),
        ("/api/search", {"example": EXAMPLE, "k": 0}, 400, ("k",)),
        ("/api/search", {"example": "the dogs [run]"}, 400, ("'run'", "does not occur")),
        ("/api/search", {"example": EXAMPLE, "layer": 0}, 400, ("layers [1, 2]",)),
        ("/api/search", {"occurrence": [999, 0]}, 400, ("no occurrence 999:0",)),
        ("/api/search", {"occurrence": [0, 1, 2]}, 422, ("occurrence",)),
        ("/api/senses", {"word": "the", "max_occurrences": 41}, 413, ("41", "at most 40")),
        ("/api/senses", {"word": "the", "k": "many"}, 422, ("k",)),
        ("/api/senses", {"word": "the", "k": 50}, 400, ("50",)),
        ("/api/senses", {"word": "the", "layer": 0}, 400, ("layers [1, 2]",)),
        ("/api/senses", {"word": "  "}, 400, ("word", "empty")),
        ("/api/senses", {"word": "zebra"}, 400, ("'zebra'", "does not occur")),
    ],
)
def test_bad_requests_are_refused_with_a_hint(client, path, body, status, words):
    refused(client.post(path, json=body), status, *words)


def test_no_index_says_how_to_open_one(tiny_models):
    bare = TestClient(create_app([tiny_models["bert"]], LIMITS))
    assert ok(bare.get("/api/indexes")) == {"indexes": []}
    for path, body in (("/api/search", {"example": EXAMPLE}), ("/api/senses", {"word": "the"})):
        refused(bare.post(path, json=body), 404, "no occurrence index", "bertlens serve --index DIR")


def test_an_index_of_a_model_not_served_is_refused(built, tiny_models, tiny_dirs, capsys):
    with pytest.raises(InputError, match="does not serve") as caught:
        create_app([tiny_models["distilbert"]], LIMITS, indexes=[built])
    assert str(tiny_dirs["bert"]) in str(caught.value) and f"--model {tiny_dirs['bert']} --index" in caught.value.hint
    status, error = serve_json(
        capsys, "--model", str(tiny_dirs["distilbert"]), "--index", str(built), "--get", "/api/indexes"
    )
    assert status == 2 and "does not serve" in error["message"]
    status, error = serve_json(
        capsys, "--model", str(tiny_dirs["bert"]), "--index", str(built / "nowhere"), "--get", "/api/indexes"
    )
    assert status == 2 and "does not exist" in error["message"]


# --- hostile JSON: every corpus endpoint answers 200 or a 4xx JSON error, never a 500 -------------------------------

HOSTILE = [None, True, 1.5, -1, 0, 10**30, -(10**30), 2**63, 2**31, "", " ", "\x00", "a'b\\%_", "x" * 30_000, [], {},
           [[[]]], {"a": {"b": [1]}}, [0, 0], [10**30, 1], [1, 2**31], [-1, -1], [0.5, 1], ["0", "1"], [None, None],
           [True, False], [0, 0, 0], [1] * 10_000]  # fmt: skip
SEARCH_FIELDS = ("index", "example", "word", "layer", "any_word", "k", "exclude_same_text", "one_per_text")
SENSES_FIELDS = ("index", "word", "k", "layer", "max_occurrences", "typical", "words", "seed")
HOSTILE_CASES = [
    *(("/api/search", {"example": EXAMPLE}, field) for field in SEARCH_FIELDS),
    *(("/api/search", {"occurrence": [0, 1]}, field) for field in ("occurrence", "layer", "k", "any_word")),
    ("/api/search", {"example": "the cat sat", "exclude_same_text": True}, "word"),
    *(("/api/senses", {"word": "the"}, field) for field in SENSES_FIELDS),
]
RAW_BODIES = [b"", b"null", b"[]", b"1", b'"the"', b"{", b"NaN", b'{"word": NaN}', b'{"occurrence": [Infinity, 1]}',
              b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000, b"\xff\xfe",
              b'{"word": "\\udcff"}', b'{"example": "the [\\udcff] sat"}']  # fmt: skip
ODD_BODIES = [b'{"word": "the", "word": "cat"}', b'{"occurrence": [0, 1], "example": null, "word": null}']  # either


def answered(response) -> int:
    """200, or a 4xx whose body is the JSON error with a hint: never a 500, never another shape."""
    assert response.status_code == 200 or 400 <= response.status_code < 500, response.text[:500]
    body = response.json()
    if response.status_code != 200:
        assert set(body) == {"error", "message", "hint"} and body["hint"], body
    return response.status_code


@pytest.mark.parametrize(("path", "base", "field"), HOSTILE_CASES, ids=[f"{p} {f}" for p, _, f in HOSTILE_CASES])
def test_hostile_values_of_a_field_are_answered_with_a_json_error(client, path, base, field):
    statuses = {answered(client.post(path, json={**base, field: value})) for value in HOSTILE}
    assert statuses - {200}  # some of them refused


@pytest.mark.parametrize("path", ["/api/search", "/api/senses"])
def test_hostile_bodies_are_answered_with_a_json_error(client, path):
    for raw in RAW_BODIES:
        response = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert answered(response) != 200, raw[:40]
    for raw in ODD_BODIES:
        answered(client.post(path, content=raw, headers={"content-type": "application/json"}))
    assert answered(client.post(path, json={})) == (
        422 if path == "/api/senses" else 400
    )  # search: example or occurrence
    extra = {f"field{i}": i for i in range(1000)}
    assert answered(client.post(path, json={"example": EXAMPLE, "word": "the", **extra})) == 422


@pytest.mark.parametrize(
    "occurrence", [[10**30, 1], [2**63, 1], [2**63 - 1, 1], [1, 2**31], [1, 10**30], [12, 0], [-1, 0]]
)
def test_an_occurrence_beyond_the_index_is_a_400_with_its_range(client, occurrence):
    body = refused(client.post("/api/search", json={"occurrence": occurrence}), 400, "no occurrence")
    assert "Text ids run from 0 to 11" in body["hint"]


def test_a_served_index_grown_by_an_add_answers_from_its_new_version(tmp_path, built, tiny_models):
    """`bertlens index DIR --add` has LanceDB remove the versions it replaced: a server opened before the add reopens
    the index once LanceDB reports a newer version, and finds the added texts."""
    import shutil

    index = tmp_path / "index"
    shutil.copytree(built, index)
    served = TestClient(create_app([tiny_models["bert"]], LIMITS, indexes=[index]))
    before = ok(served.get("/api/indexes"))["indexes"][0]
    more = tmp_path / "more.txt"
    more.write_text("the zebra sat on the mat\nthe zebra ran home\n", encoding="utf-8")
    index_corpus(tiny_models["bert"], more, index, add=True)
    after = ok(served.get("/api/indexes"))["indexes"][0]
    assert (before["texts"], after["texts"]) == (len(CORPUS), len(CORPUS) + 2)
    found = ok(served.post("/api/search", json={"example": "the [zebra] ran", "k": 5}))
    assert found == same(
        search_occurrences(tiny_models["bert"], open_index(index), "the [zebra] ran", options=SearchOptions(k=5))
    )
    assert {hit["text_id"] for hit in found["hits"]} == {len(CORPUS), len(CORPUS) + 1}
