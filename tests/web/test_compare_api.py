"""The Compare view's API, in-process: two tiny random models of one family (different seeds) served together;
`POST /api/diff` answers exactly the library's `SpaceDiff.to_dict()` (what `bertlens diff --json` prints),
`POST /api/diff/token` its `TokenChange.to_dict()`, read from the comparison the server keeps (never computed again),
and every bad request is a 4xx JSON error with a hint."""

from __future__ import annotations

import inspect

import pytest
from api_answers import ok, refused, same
from fastapi.testclient import TestClient
from tiny import make_tiny

from bertlens.core.model import load_model
from bertlens.spaces import diff
from bertlens.web import ServerLimits, create_app
from bertlens.web.requests import DiffRequest

LIMITS = ServerLimits(precompute=False, max_diff_k=20, max_diff_top=30, max_diff_occurrences=500, kept_diffs=2)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    return load_model(str(make_tiny("bert", root / "a"))), load_model(str(make_tiny("bert", root / "b", seed=7)))


@pytest.fixture
def app(models):
    """A fresh app per test: its cache starts empty."""
    return create_app(list(models), LIMITS)


@pytest.fixture
def client(app):
    return TestClient(app)


def test_the_request_defaults_are_the_library_s():
    parameters = inspect.signature(diff).parameters
    fields = DiffRequest.model_fields
    for name in ("k", "top", "corpus", "contextual", "layer", "layer_b", "occurrences"):
        assert fields[name].default == parameters[name].default, name
    assert fields["model_a"].default is None and fields["model_b"].default == 1  # the first two served


def test_diff_answers_the_library_s_result(client, models):
    a, b = models
    answer = ok(client.post("/api/diff", json={}))
    assert answer == same(diff(a, b))
    assert answer["contextual"] is None and answer["by_frequency"] == []
    by_name = ok(client.post("/api/diff", json={"model_a": "a", "model_b": "b", "k": 5, "top": 7}))
    assert by_name == same(diff(a, b, k=5, top=7)) and len(by_name["moved"]) == 7
    assert ok(client.post("/api/diff", json={"model_a": 1, "model_b": 1}))["overlap_mean"] == 1.0  # B with itself


def test_diff_with_a_shipped_corpus_and_the_layers(client, models):
    a, b = models
    asked = {"k": 4, "corpus": "genesis", "contextual": True, "layer": 1, "occurrences": 200}
    answer = ok(client.post("/api/diff", json=asked))
    assert answer == same(diff(a, b, k=4, corpus="genesis", contextual=True, layer=1, occurrences=200))
    layers = a.config.num_hidden_layers + 1
    assert len(answer["contextual"]["cka"]) == layers and answer["contextual"]["layer_a"] == 1
    assert answer["by_frequency"]


def test_a_token_is_read_from_the_comparison_kept(client, app, models):
    a, b = models
    kept = app.state.registry.diffs
    first = ok(client.post("/api/diff", json={"k": 5}))
    assert (len(kept), kept.computed) == (1, 1)
    token = first["moved"][0]["token"]
    change = ok(client.post("/api/diff/token", json={"model_a": 0, "model_b": "b", "k": 5, "token": token}))
    assert change == same(diff(a, b, k=5).token(token)) and change == first["moved"][0]
    assert ok(client.post("/api/diff/token", json={"k": 5, "token": "cat"}))["token"] == "cat"
    assert ok(client.post("/api/diff", json={"k": 5})) == first  # asked again: read, not computed
    assert (len(kept), kept.computed) == (1, 1)


def test_a_token_before_any_comparison_computes_the_default_one_once(client, app, models):
    a, b = models
    kept = app.state.registry.diffs
    change = ok(client.post("/api/diff/token", json={"token": "dog"}))
    assert change == same(diff(a, b).token("dog"))
    ok(client.post("/api/diff/token", json={"token": "cat"}))
    ok(client.post("/api/diff", json={}))  # the very comparison the token asked for
    assert (len(kept), kept.computed) == (1, 1)


def test_the_cache_keeps_the_last_few(client, app):
    kept = app.state.registry.diffs
    for k in (2, 3, 4):
        ok(client.post("/api/diff", json={"k": k}))
    assert (len(kept), kept.computed) == (LIMITS.kept_diffs, 3)
    assert [key.k for key in kept.entries] == [3, 4]  # the least recently used went first
    ok(client.post("/api/diff/token", json={"k": 2, "token": "cat"}))  # no longer kept: computed again
    assert kept.computed == 4 and [key.k for key in kept.entries] == [4, 2]


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/diff", {"model_b": "nothing"}, 404, ("No model 'nothing'", "GET /api/models")),
        ("/api/diff", {"model_a": 5}, 404, ("No model 5",)),
        ("/api/diff", {"k": 21}, 413, ("21 nearest tokens per token (k)", "at most 20")),
        ("/api/diff", {"top": 31}, 413, ("31 tokens that moved most (top)",)),
        ("/api/diff", {"contextual": True, "occurrences": 501}, 413, ("501 word occurrences", "at most 500")),
        ("/api/diff", {"k": 0}, 400, ("k must be at least 1",)),
        ("/api/diff", {"top": 0}, 400, ("top must be at least 1",)),
        ("/api/diff", {"k": "5"}, 422, ("k:",)),
        ("/api/diff", {"corpus": "/etc/passwd"}, 422, ("corpus:",)),
        ("/api/diff", {"contextual": True, "occurrences": 5}, 400, ("occurrences must be at least 10",)),
        ("/api/diff", {"contextual": True, "layer": 9, "occurrences": 100}, 400, ("layer",)),
        ("/api/diff", {"seed": 1}, 422, ("seed: is not a field",)),
        ("/api/diff/token", {"token": "zebra"}, 400, ("'zebra' is not a token both vocabularies hold",)),
        ("/api/diff/token", {"token": ""}, 400, ("The token is empty",)),
        ("/api/diff/token", {"token": "cat", "k": 21}, 413, ("at most 20",)),
        ("/api/diff/token", {}, 422, ("token: is required",)),
    ],
)
def test_bad_requests_are_refused_with_a_hint(client, path, body, status, words):
    refused(client.post(path, json=body), status, *words)


def test_a_server_of_one_model_says_how_to_serve_two(models):
    client = TestClient(create_app([models[0]], LIMITS))
    refused(client.post("/api/diff", json={}), 404, "a comparison needs two", "bertlens serve --model default")
    assert ok(client.post("/api/diff", json={"model_b": 0}))["overlap_mean"] == 1.0  # itself, asked for
