"""Running the app: a socket bound first (so a busy port is a clear error), then uvicorn on it.

Used by `bertlens serve`, by the browser tests and by the benchmarks (`start` runs it in a thread).
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")  # Host headers a loopback server answers


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free port), or an InputError saying why not."""
    if not 0 <= port <= 65535:
        raise InputError(f"Port {port} is not a TCP port.", "Choose a port between 1 and 65535, or 0 for any free one.")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(
            f"Cannot use host {host!r}: {exc.strerror}.", "The default, 127.0.0.1, is this machine only."
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"Port {port} on {host} is already in use.", "Choose another with --port, or --port 0 for a free one."
            ) from None
        raise InputError(f"Cannot listen on {host}:{port}: {exc.strerror}.", "Check --host and --port.") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def _server(app: Any) -> Any:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_config=None,  # leave the process's logging alone; uvicorn's warnings still reach stderr
        log_level="warning",
        access_log=False,
        lifespan="off",  # everything is loaded by create_app before the server starts
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


def run(app: Any, sock: socket.socket, on_ready: Callable[[], None] | None = None) -> None:
    """Serve `app` on `sock` until interrupted (Ctrl-C); `on_ready` runs once the server accepts connections."""
    server = _server(app)
    if on_ready is not None:

        def wait() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                on_ready()

        threading.Thread(target=wait, daemon=True).start()
    server.run(sockets=[sock])


@dataclass
class Running:
    """A server running in a background thread (tests, benchmarks, screenshots)."""

    url: str
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start(app: Any, host: str = "127.0.0.1", port: int = 0) -> Running:
    """Serve `app` from a background thread on a free loopback port; returns once it accepts connections."""
    sock = bind(host, port)
    server = _server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return Running(url_of(sock), server, thread)
