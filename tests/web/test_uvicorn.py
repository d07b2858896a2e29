"""The server is stock uvicorn set up by its documented settings (web/server.py): what those settings promise, on a
real server. An idle connection is closed after the keep-alive time, a request head over the size limit is refused,
pipelined requests are each checked in turn, and bertlens reaches uvicorn through its public names only."""

from __future__ import annotations

import ast
import socket
from contextlib import closing
from pathlib import Path

import pytest

import bertlens
from bertlens.web import ServerLimits
from bertlens.web.guard import Guard
from bertlens.web.server import start

WAIT = 30  # s: a socket read that never ends fails the test instead of hanging it


def slow_app(seconds: float):
    """A plain ASGI app answering "ok" after `seconds`."""
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


def test_a_request_running_longer_than_the_keep_alive_time_is_answered_then_the_idle_connection_closes(serve):
    server = serve(slow_app(1.5), keep_alive_timeout=1)
    with closing(connect(server.url)) as sock, sock.makefile("rb") as reader:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer(reader).startswith(b"HTTP/1.1 200 ")
        assert reader.read() == b""  # nothing more sent: uvicorn closes the idle connection


def test_a_request_head_growing_past_the_limit_is_refused(serve):
    """h11 refuses a head once more than `max_head_bytes` of it wait incomplete; a whole head within it is answered."""
    server = serve(slow_app(0), max_head_bytes=2_000)
    for size, end, status in ((1_000, b"\r\nConnection: close\r\n\r\n", b"200"), (3_000, b"", b"400")):
        with closing(connect(server.url)) as sock, sock.makefile("rb") as reader:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * size + end)
            assert reader.read().split(b" ")[1] == status  # read until the server closes


def test_pipelined_requests_are_each_checked_in_turn(serve):
    """Heads sent in one packet: the paths are answered, the request line naming a URL between them is refused."""
    server = serve(Guard(slow_app(0)))
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    lines = ["GET / HTTP/1.1", f"GET http://127.0.0.1:{port}/ HTTP/1.1", "GET / HTTP/1.1"]
    packet = "".join(f"{line}\r\nHost: 127.0.0.1:{port}\r\n\r\n" for line in lines).encode()
    with closing(connect(server.url)) as sock, sock.makefile("rb") as reader:
        sock.sendall(packet)
        statuses = [answer(reader).split(b" ")[1] for _ in lines]
    assert statuses == [b"200", b"400", b"200"]


def test_bertlens_uses_uvicorn_s_public_names_only():
    """No module imports uvicorn's submodules (its protocol classes) or an HTTP parser of its own."""
    found = []
    for path in Path(bertlens.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.startswith(("uvicorn.", "httptools", "h11"))]
    assert found == []
