"""The local server, safe by construction: the Host check decided by the address bound, `--allow-host` off loopback,
another site's requests refused, framing and foreign scripts forbidden, strict request types, cost limits (caps on
t-SNE and UMAP, a time limit on half-sent bodies, bounds on request heads and connections, no work for a client that
has gone)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import threading
from contextlib import closing, contextmanager
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from bertlens.cli import main
from bertlens.core.errors import InputError
from bertlens.web import ServerLimits, create_app
from bertlens.web.guard import canonical, host_spellings, split_host
from bertlens.web.server import LOOPBACK_HOSTS, allowed_hosts, bind, is_loopback, resolve, start

WAIT = 120  # seconds: a bound on any wait below (never an assertion on time)


@pytest.fixture(scope="module")
def app(tiny_models):
    return create_app([tiny_models["bert"]], ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS)


@pytest.fixture(scope="module")
def client(app):
    return TestClient(app, base_url="http://127.0.0.1:8000")


def error_of(response, status: int, error: str) -> dict:
    assert response.status_code == status, response.text[:500]
    data = response.json()
    assert set(data) == {"error", "message", "hint"} and data["error"] == error and data["hint"]
    return data


# The Host check: decided by the address bound, not by how --host is spelled


@pytest.mark.parametrize(
    ("host", "bound"),
    [("127.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.2"), ("localhost", None)],
)
def test_every_spelling_of_loopback_is_loopback(host, bound):
    ip = resolve(host, 0)[4][0]
    assert bound is None or ip == bound
    assert is_loopback(ip)
    names = allowed_hosts(ip)
    assert {"127.0.0.1", "localhost", "::1", canonical(ip)} <= names and "evil.example.com" not in names


def test_an_ipv4_loopback_address_mapped_into_ipv6_is_loopback():
    assert is_loopback("::ffff:127.0.0.1") and is_loopback("::ffff:127.0.0.2") and is_loopback("::1")
    assert not is_loopback("::ffff:10.0.0.1") and not is_loopback("0.0.0.0") and not is_loopback("::")
    assert allowed_hosts("::ffff:127.0.0.1") == allowed_hosts("127.0.0.1")
    assert split_host("[::ffff:7f00:1]:8000") == ("127.0.0.1", 8000)  # how a browser writes it


def test_beyond_loopback_only_the_allowed_names_and_the_address_are_answered():
    with pytest.raises(InputError, match="--allow-host") as caught:
        allowed_hosts("0.0.0.0")
    assert "DNS rebinding" in caught.value.hint
    with pytest.raises(InputError, match="--allow-host"):
        allowed_hosts("192.0.2.7", [])
    assert allowed_hosts("0.0.0.0", ["My-Machine.local."]) == {"my-machine.local"}  # no wildcard address
    assert allowed_hosts("192.0.2.7", ["box", "[2001:db8::1]"]) == {"192.0.2.7", "box", "2001:db8::1"}


@pytest.mark.parametrize("name", ["*", "*.example.com", "box:8000", "http://box", "", "  ", "a b", "127.1", "x/y"])
def test_an_allowed_name_must_be_a_host_name(name):
    with pytest.raises(InputError, match="not a host name"):
        allowed_hosts("0.0.0.0", [name])


def test_serve_beyond_loopback_without_allowed_names_refuses_to_start(capsys):
    """Refused before anything is bound or loaded (the model named does not even exist)."""
    assert main(["serve", "--host", "0.0.0.0", "--port", "0", "--model", "/nonexistent/model"]) == 2
    captured = capsys.readouterr()
    assert "--allow-host NAME" in captured.err and "loading" not in captured.err and captured.out == ""
    assert main(["serve", "--host", "0.0.0.0", "--allow-host", "*", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["error"] == "InputError" and "not a host name" in data["message"] and "--allow-host" in data["hint"]


def http_get(url: str, host: str) -> tuple[int, bytes]:
    """GET `url` with this Host header (urllib would write the URL's): the status and the body."""
    import http.client

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT)
    try:
        connection.putrequest("GET", parts.path, skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@contextmanager
def serving(*argv: str):
    """`bertlens serve ARGV --port 0` in a subprocess; yields (url, process); stopped by Ctrl-C (killed at worst)."""
    command = [sys.executable, "-m", "bertlens", "serve", "--port", "0", "--no-precompute", *argv]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()  # "bertlens: serving NAME at URL  (…)", or "" if it ended
        assert " at http://" in line, process.communicate(timeout=WAIT)
        yield line.split(" at ")[1].split()[0], process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that ignores Ctrl-C
            process.kill()
            process.wait()


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1", "::ffff:127.0.0.1"])
def test_a_real_server_on_any_loopback_spelling_refuses_a_foreign_host(tiny_dirs, host):
    """A DNS-rebinding page sends its own name as Host: refused, on every loopback address; no warning either."""
    try:
        bind(host, 0).close()
    except InputError as exc:
        pytest.skip(f"this machine cannot listen on {host}: {exc}")
    with serving("--host", host, "--model", str(tiny_dirs["bert"])) as (url, process):
        own = urlsplit(url)
        assert http_get(url + "api/models", "evil.example.com") == (400, b"Invalid host header")
        assert http_get(url + "api/models", f"evil.example.com:{own.port}")[0] == 400
        status, body = http_get(url + "api/models", own.netloc)
        assert status == 200 and json.loads(body)["models"][0]["name"] == "bert"
        for name in ("localhost", "127.0.0.1", "[::1]"):
            assert http_get(url + "api/models", f"{name}:{own.port}")[0] == 200, name
    with process.stdout, process.stderr:  # the pipes are closed once read
        assert "beyond this machine" not in process.stderr.read()


LOOPBACK_SPELLINGS = [
    "127.0.0.1:8000", "127.0.0.1", "localhost:8000", "LocalHost:8000", "localhost.:8000", "[::1]:8000", "[::1]",
    "[0:0:0:0:0:0:0:1]:8000", "[::ffff:127.0.0.1]:8000", "[::ffff:7f00:1]:8000",  # the last as a browser writes it
]  # fmt: skip


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_every_spelling_of_a_loopback_name_passes_the_host_check(client, host):
    assert client.get("/api/models", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example.com", "localhost.evil.example.com", "127.0.0.2:8000", "[::2]:8000", "[", "", "a b"]
)
def test_other_hosts_fail_the_host_check(client, host):
    response = client.get("/api/models", headers={"Host": host})
    assert response.status_code == 400 and response.text == "Invalid host header"


def test_a_bound_address_is_answered_in_each_spelling():
    assert {"127.0.0.2", "[::ffff:127.0.0.2]", "[::ffff:7f00:2]"} <= host_spellings("::ffff:127.0.0.2")
    assert {"[2001:db8::1]", "[2001:db8:0:0:0:0:0:1]"} <= host_spellings("2001:db8::1")
    assert host_spellings("My-Machine.local.") == {"my-machine.local", "my-machine.local."}


def test_an_allowed_name_is_answered_and_others_are_not(tiny_models):
    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False), hosts=allowed_hosts("0.0.0.0", ["box"]))
    assert TestClient(app, base_url="http://box:8000").get("/api/models").status_code == 200
    assert TestClient(app, base_url="http://BOX.:8000").get("/").status_code == 200
    for other in ("http://127.0.0.1:8000", "http://localhost:8000", "http://0.0.0.0:8000", "http://box.evil:8000"):
        response = TestClient(app, base_url=other).get("/api/models")
        assert response.status_code == 400 and response.text == "Invalid host header"


# Another site's pages, framing, scripts


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example.com"},
        {"Origin": "http://127.0.0.1:9999"},  # another port is another site
        {"Origin": "https://127.0.0.1:8000"},  # and another scheme
        {"Origin": "null"},  # a sandboxed frame, a file:// page
        {"Origin": "http://127.0.0.1:8000.evil.example.com"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
        {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"},
    ],
)
def test_requests_from_another_site_are_refused_before_any_work(client, headers):
    data = error_of(client.post("/api/explain", json={"text": "the cat"}, headers=headers), 403, "ForeignOrigin")
    assert "another site" in data["message"]
    error_of(client.get("/api/info", headers=headers), 403, "ForeignOrigin")


def test_the_page_s_own_requests_and_tools_are_answered(client):
    assert client.post("/api/tokens", json={"text": "hi"}, headers={"Origin": "http://127.0.0.1:8000"}).is_success
    assert client.post("/api/tokens", json={"text": "hi"}, headers={"Sec-Fetch-Site": "same-origin"}).is_success
    assert client.post("/api/tokens", json={"text": "hi"}).is_success  # curl, Python: no Origin
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}  # a link from another site to the page
    assert client.get("/", headers=link).is_success
    local = TestClient(client.app, base_url="http://[::1]:8000")
    assert local.post("/api/tokens", json={"text": "hi"}, headers={"Origin": "http://[::1]:8000"}).is_success


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/", 200), ("GET", "/static/app.js", 200), ("GET", "/api/models", 200), ("GET", "/nothing", 404),
     ("DELETE", "/api/tokens", 405), ("POST", "/api/tokens", 422)],
)  # fmt: skip
def test_every_answer_forbids_framing_and_foreign_scripts(client, method, path, status):
    response = client.request(method, path)
    assert response.status_code == status
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    policy = dict(part.strip().split(" ", 1) for part in response.headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'self'" and policy["frame-ancestors"] == "'none'"
    assert "'unsafe-inline'" not in policy["script-src"] and "*" not in response.headers["content-security-policy"]
    assert policy["connect-src"] == "'self'" and policy["object-src"] == "'none'"


def test_refusals_carry_the_security_headers_too(client):
    for response in (
        TestClient(client.app, base_url="http://evil.example.com").get("/"),
        client.post("/api/tokens", json={"text": "hi"}, headers={"Origin": "http://evil.example.com"}),
        client.post("/api/tokens", content=b"x" * 3_000_000),
    ):
        assert response.status_code in (400, 403, 413) and response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [("GET", "/api/tokens", "POST"), ("DELETE", "/api/explain", "POST"), ("POST", "/api/info", "GET"),
     ("PUT", "/", "GET")],
)  # fmt: skip
def test_405_says_which_methods_are_allowed(client, method, path, allow):
    response = client.request(method, path)
    data = error_of(response, 405, "MethodNotAllowed")
    assert allow in response.headers["allow"].split(", ")
    assert method in data["message"] and allow in data["hint"]


# JSON types are not coerced


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/neighbors", {"queries": ["dog"], "k": True}, "k"),
        ("/api/neighbors", {"queries": ["dog"], "k": 5.0}, "k"),
        ("/api/neighbors", {"queries": ["dog"], "k": "5"}, "k"),
        ("/api/neighbors", {"queries": ["dog"], "remove_top": False}, "remove_top"),
        ("/api/neighbors", {"queries": ["dog"], "center": 1}, "center"),
        ("/api/neighbors", {"queries": ["dog"], "words_only": "yes"}, "words_only"),
        ("/api/tokens", {"text": "hi", "model": True}, "model"),
        ("/api/tokens", {"text": "hi", "add_special_tokens": 0}, "add_special_tokens"),
        ("/api/explain", {"text": "hi", "check": "false"}, "check"),
        ("/api/trajectory", {"word": "cat", "sentences": ["a cat", "the cat"], "seed": True}, "seed"),
        ("/api/projection", {"count": True}, "count"),
        ("/api/projection", {"tokens": [True, "cat", "dog"]}, "tokens"),
        ("/api/projection", {"tokens": ["the", "cat", "dog"], "dims": True}, "dims"),
        ("/api/projection", {"source": "contextual", "texts": ["the cat sat"], "layer": False}, "layer"),
        ("/api/projection", {"tokens": ["the", "cat", "dog"], "seed": 1.5}, "seed"),
    ],
)
def test_booleans_floats_and_strings_are_not_integers(client, path, body, field):
    data = error_of(client.post(path, json=body), 422, "InvalidRequest")
    assert field in data["message"]


def test_integers_are_still_integers(client):
    data = client.post("/api/neighbors", json={"queries": ["cat"], "k": 3, "model": 0}).json()
    assert len(data["results"][0]["neighbors"]) == 3
    assert client.post("/api/projection", json={"tokens": [5, "cat", "dog"], "seed": 1}).is_success


# Cost limits


@pytest.mark.parametrize(("method", "most"), [("tsne", 5_000), ("umap", 10_000)])
def test_t_sne_and_umap_are_capped_before_any_work(default_model, method, most):
    app = create_app([default_model], ServerLimits(precompute=False))
    client = TestClient(app)
    data = error_of(
        client.post("/api/projection", json={"count": most + 1, "method": method}), 413, "RequestTooLargeError"
    )
    assert f"{most + 1:,} points" in data["message"] and f"at most {most:,}" in data["message"]
    assert "PCA" in data["hint"] and "bertlens plot" in data["hint"]
    data = error_of(client.post("/api/projection", json={"method": method}), 413, "RequestTooLargeError")  # every word
    assert f"{app.state.registry.models[0].whole_words:,} points" in data["message"]
    texts = [" ".join(["cat"] * 100)] * (most // 100 + 1)  # one point more than the cap, in words
    body = {"source": "contextual", "texts": texts, "method": method}
    assert (
        f"{most + 100:,} points"
        in error_of(client.post("/api/projection", json=body), 413, "RequestTooLargeError")["message"]
    )
    ids = client.post("/api/projection", json={"tokens": list(range(2000, 2000 + most + 1)), "method": method})
    error_of(ids, 413, "RequestTooLargeError")


def test_capped_methods_run_up_to_the_cap(tiny_models):
    limits = ServerLimits(precompute=False, max_tsne_points=20, max_umap_points=20)
    client = TestClient(create_app([tiny_models["bert"]], limits))
    words = ["the", "cat", "dog", "sat", "a", "on", "mat", "ran", "big", "red"]
    assert client.post("/api/projection", json={"tokens": words * 2, "method": "tsne"}).is_success
    error_of(
        client.post("/api/projection", json={"tokens": words * 2 + ["up"], "method": "tsne"}),
        413,
        "RequestTooLargeError",
    )
    body = {"source": "contextual", "texts": [" ".join(words)] * 2, "method": "tsne", "level": "token"}
    assert len(client.post("/api/projection", json=body).json()["points"]) == 20
    body["texts"].append("up")
    error_of(client.post("/api/projection", json=body), 413, "RequestTooLargeError")
    assert client.post("/api/projection", json={"tokens": words * 5, "method": "pca"}).is_success  # PCA: no such cap


def asgi_request(app, path: str, body: dict, *, leave: threading.Event | None = None, asked=None) -> tuple[int, dict]:
    """One POST through the app in-process. The client sends its body, then (when `leave` is set) goes away;
    `asked` is called each time the app looks whether the client is still there."""
    data = json.dumps(body).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode())],
    }  # fmt: skip
    sent: list[dict] = []
    calls = 0

    async def receive() -> dict:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": data, "more_body": False}
        if asked is not None:
            asked()
        if leave is not None and leave.is_set():
            return {"type": "http.disconnect"}
        await asyncio.sleep(WAIT)  # still there (the app stops waiting at once)
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))


def test_a_client_that_has_gone_gets_no_work(app):
    gone = threading.Event()
    gone.set()
    status, data = asgi_request(app, "/api/explain", {"text": "the cat"}, leave=gone)
    assert status == 499 and data["error"] == "ClientGoneError" and "nothing was run" in data["message"]
    assert asgi_request(app, "/api/explain", {"text": "the cat"})[0] == 200  # the same request, waited for


def test_a_request_queued_behind_another_is_dropped_when_its_client_goes(app):
    """The forward-pass slot is busy; the client goes while waiting: once the slot frees, its work is not started."""
    registry = app.state.registry
    looked, leave, answer = threading.Event(), threading.Event(), {}

    def ask() -> None:
        answer["status"], answer["data"] = asgi_request(
            app, "/api/context", {"word": "cat", "sentences": ["a cat", "the cat"]}, leave=leave, asked=looked.set
        )

    with registry.forward_slots:  # another request's forward pass
        thread = threading.Thread(target=ask)
        thread.start()
        assert looked.wait(WAIT)  # the first look: still there, so it queues for the slot
        leave.set()
    thread.join(WAIT)
    assert answer["status"] == 499 and answer["data"]["error"] == "ClientGoneError"


def test_explain_is_answered_while_a_projection_runs(app):
    """Projections (t-SNE, UMAP, contextual) hold their own slot: a forward pass never queues behind one."""
    registry = app.state.registry
    answers: dict[str, int] = {}

    def ask(path: str, body: dict) -> None:
        answers[path] = asgi_request(app, path, body)[0]

    with registry.projection_slots:  # a long projection running
        threads = [
            threading.Thread(target=ask, args=("/api/explain", {"text": "the cat"})),
            threading.Thread(target=ask, args=("/api/context", {"word": "cat", "sentences": ["a cat", "the cat"]})),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert answers == {"/api/explain": 200, "/api/context": 200}


def test_a_half_sent_body_times_out(tiny_models):
    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False, read_timeout=0.2))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/tokens", "raw_path": b"/api/tokens", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"), (b"content-length", b"100")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000),
    }  # fmt: skip
    sent: list[dict] = []
    first = True

    async def receive() -> dict:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b'{"text": "', "more_body": True}
        await asyncio.sleep(WAIT)  # the rest never comes
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 408
    data = json.loads(sent[1]["body"])
    assert data["error"] == "RequestTimeout" and "10 bytes came" in data["message"] and data["hint"]


@pytest.fixture
def real_server(tiny_models):
    """Start real servers (on free loopback ports) with these limits; all stopped after the test."""
    running = []

    def serve(**limits):
        app = create_app([tiny_models["bert"]], ServerLimits(precompute=False, **limits), hosts=LOOPBACK_HOSTS)
        running.append(start(app))
        return running[-1]

    yield serve
    for server in running:
        server.stop()


def connect(url: str) -> socket.socket:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=WAIT)
    return sock


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_half_sent_body_on_a_real_server_is_a_408(real_server):
    quick_server = real_server(read_timeout=0.5)
    with closing(connect(quick_server.url)) as sock:
        head = b"POST /api/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        sock.sendall(head + b'Content-Length: 100\r\n\r\n{"text": "')
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"RequestTimeout" in answer


def test_connections_beyond_the_limit_get_a_503(real_server):
    server = real_server(max_connections=3)
    request = b"GET /api/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    with closing(connect(server.url)) as sock:
        sock.sendall(request)
        assert read_all(sock).startswith(b"HTTP/1.1 200 ")
    idle = [connect(server.url) for _ in range(3)]
    try:
        with closing(connect(server.url)) as sock:
            sock.sendall(request)
            assert read_all(sock).startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in idle:
            sock.close()


def test_steady_keep_alive_clients_below_the_limit_are_all_answered(real_server):
    """20 clients each sending requests back to back on one connection (bench/serve.py's load) get no 503 from a
    server with the default limits (uvicorn's limit_concurrency counts requests in flight beside connections, and a
    request's task can outlive its answer by a moment: the default leaves room for both)."""
    server = real_server()
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    body = b'{"queries": ["cat"], "k": 3}'
    head = f"POST /api/neighbors HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    async def client() -> list[bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        statuses = []
        for _ in range(15):
            writer.write(request)
            answer = await reader.readuntil(b"\r\n\r\n")
            length = int(answer.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            statuses.append(answer.split(b" ")[1])
        writer.close()
        await writer.wait_closed()
        return statuses

    async def load() -> list[list[bytes]]:
        return await asyncio.wait_for(asyncio.gather(*(client() for _ in range(20))), WAIT)

    assert {status for statuses in asyncio.run(load()) for status in statuses} == {b"200"}


def test_bind_refuses_what_is_not_a_port():
    for port in (-1, 70_000, True):
        with pytest.raises(InputError, match="not a TCP port"):
            bind("127.0.0.1", port)


# The request line in absolute form (a proxy's form): its host is checked as Host is


def raw_request(url: str, line: str, host: str) -> tuple[bytes, dict | None]:
    """One request line and Host header sent on a raw socket; the status line and the JSON body (None if not JSON)."""
    with closing(connect(url)) as sock:
        sock.sendall(f"{line}\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        answer = read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    try:
        return head.split(b"\r\n")[0], json.loads(body)
    except ValueError:
        return head.split(b"\r\n")[0], None


TARGETS = [
    "http://evil.example.com/api/info",
    "http://evil.example.com:{port}/api/info",
    "http://127.0.0.1.evil.example.com/api/info",
    "http://127.0.0.1@evil.example.com/api/info",
    "http://evil@127.0.0.1:{port}/api/info",
    "https://127.0.0.1:{port}/api/info",
    "ftp://127.0.0.1:{port}/api/info",
    "http://127.0.0.1:{port}/api/info",  # this server itself, in a proxy's form
    "http://localhost:{port}/api/info",
    "*",
]


def test_a_request_line_naming_no_path_is_refused(real_server):
    """Browsers and tools send the path alone; a URL (a proxy's form) or `*` is refused, whatever host it names."""
    server = real_server()
    port = urlsplit(server.url).port
    own = f"127.0.0.1:{port}"
    for target in TARGETS:
        status, body = raw_request(server.url, f"GET {target.format(port=port)} HTTP/1.1", own)
        assert status.startswith(b"HTTP/1.1 400 "), (target, status)
        assert body is not None and body["error"] == "BadRequestTarget" and body["hint"], (target, body)
    for line in ("GET http://evil.example.com HTTP/1.1", "CONNECT evil.example.com:443 HTTP/1.1"):
        assert raw_request(server.url, line, own)[0].startswith(b"HTTP/1.1 400 ")
    status, body = raw_request(server.url, "GET /api/models HTTP/1.1", own)  # the path alone: answered
    assert status.startswith(b"HTTP/1.1 200 ") and body is not None and body["models"][0]["name"] == "bert"


def test_a_target_left_whole_as_the_path_is_refused_in_process(app):
    """uvicorn's h11 protocol leaves an absolute target in `raw_path`: the guard refuses it there."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": "http://evil.example.com/api/models", "raw_path": b"http://evil.example.com/api/models",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000),
        "headers": [(b"host", b"127.0.0.1:8000")],
    }  # fmt: skip
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"] == "BadRequestTarget"
