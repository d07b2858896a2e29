"""What the server takes from uvicorn beyond its options, checked: web/server.py's `Connection` wraps uvicorn's HTTP
protocol and relies on how uvicorn starts a request (from the connection's `data_received`, so the request's task
inherits the connection). A uvicorn outside the versions it was checked with, or one that starts requests elsewhere,
fails here (the head timer would cut off a running request, or an absolute target would go unchecked)."""

from __future__ import annotations

import socket
from contextlib import closing
from importlib.metadata import version

import pytest

from bertlens.web import ServerLimits
from bertlens.web.guard import Guard
from bertlens.web.server import UVICORN_CHECKED, start

WAIT = 30  # s: a socket read that never ends fails the test instead of hanging it


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def test_uvicorn_is_a_version_the_server_was_checked_with():
    lowest, beyond = UVICORN_CHECKED
    installed = version("uvicorn")
    assert lowest <= numbers(installed) < beyond, (
        f"uvicorn {installed} is outside the versions web/server.py's Connection was checked with; check that it "
        "still starts each request's task from the protocol's data_received (these tests), then widen UVICORN_CHECKED"
    )


def slow_app(seconds: float):
    """A plain ASGI app answering "ok" after `seconds` (longer than the head timeout)."""
    import asyncio

    async def app(scope, receive, send):
        assert scope["type"] == "http"
        await asyncio.sleep(seconds)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


@pytest.fixture
def serve():
    running = []

    def start_app(app, **limits):
        running.append(start(app, limits=ServerLimits(precompute=False, **limits)))
        return running[-1]

    yield start_app
    for server in running:
        server.stop()


def connect(url: str) -> socket.socket:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=WAIT)


def answer(reader) -> bytes:
    """One answer with a content-length, read whole from `reader` (the socket's `makefile("rb")`: answers sent
    back to back stay in its buffer for the next call)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = reader.readline()
        assert line, f"the connection closed after {head!r}"
        head += line
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head + reader.read(length)


def test_a_request_running_longer_than_the_head_timeout_is_answered_and_the_clock_restarts(serve):
    """The head timer stops while the app answers (uvicorn started the request's task inside the connection's
    data_received) and starts again once the answer ends: the connection, silent then, gets its 408."""
    server = serve(slow_app(0.8), read_timeout=0.5)
    with closing(connect(server.url)) as sock, sock.makefile("rb") as reader:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer(reader).startswith(b"HTTP/1.1 200 ")
        rest = reader.read()  # nothing more sent: closed once the head timer runs out
    assert rest.startswith(b"HTTP/1.1 408 ")


def test_pipelined_requests_each_have_their_own_target_checked(serve):
    """Heads sent in one packet: the path is answered, the absolute target naming another host is refused, the one
    naming this server is answered, in order (each request gets its own head's target)."""
    app = Guard(slow_app(0), hosts=frozenset({"127.0.0.1"}))
    server = serve(app)
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    lines = ["GET / HTTP/1.1", "GET http://evil.example.com/ HTTP/1.1", f"GET http://127.0.0.1:{port}/ HTTP/1.1"]
    packet = "".join(f"{line}\r\nHost: 127.0.0.1:{port}\r\n\r\n" for line in lines).encode()
    with closing(connect(server.url)) as sock, sock.makefile("rb") as reader:
        sock.sendall(packet)
        statuses = [answer(reader).split(b" ")[1] for _ in lines]
    assert statuses == [b"200", b"400", b"200"]
