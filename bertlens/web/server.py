"""Running the app: a socket bound first (so a busy port is a clear error), then stock uvicorn on it, set up by its
documented settings (`_server`); and the Host names a server answers, decided by the address it is bound to.

Used by `bertlens serve`, by the browser tests and by the benchmarks (`start` runs it in a thread).
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import NAME, InputError
from .limits import ServerLimits

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # Host names a loopback server answers (and its own address)
HOST_NAME = re.compile(
    r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?"
)


def resolve(host: str, port: int) -> tuple[Any, ...]:
    """What `host:port` binds: getaddrinfo's first (family, type, proto, canonname, sockaddr), or an InputError."""
    if isinstance(port, bool) or not 0 <= port <= 65535:
        raise InputError(f"Port {port} is not a TCP port.", "Choose a port between 1 and 65535, or 0 for any free one.")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else "not a host name"
        raise InputError(
            f"Cannot use host {host!r}: {reason}.", "The default, 127.0.0.1, is this machine only."
        ) from None
    return infos[0]


def bind(host: str, port: int, address: tuple[Any, ...] | None = None) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free port), or an InputError saying why not.

    `address` is what `resolve(host, port)` gave, when the caller has already looked at it."""
    family, kind, proto, _, sockaddr = address if address is not None else resolve(host, port)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"Port {port} on {host} is already in use.",
                "Choose another port, or {port} for a free one.",
                arguments={"port": 0},
            ) from None
        raise InputError(
            f"Cannot listen on {host}:{port}: {exc.strerror}.",
            "Check {host} and {port}.",
            arguments={"host": NAME, "port": NAME},
        ) from None
    sock.set_inheritable(True)
    return sock


def is_loopback(ip: str) -> bool:
    """Whether an address is this machine only: 127.0.0.0/8, ::1, or an IPv4 loopback address mapped into IPv6."""
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def allowed_hosts(ip: str, names: Sequence[str] = ()) -> frozenset[str]:
    """The Host names a server bound to `ip` answers: on loopback, the loopback names, the address itself and
    `names`; elsewhere only `names` (which must be given: no check at all would let any site's page in by DNS
    rebinding) and the address itself (unless it is a wildcard such as 0.0.0.0)."""
    from .guard import canonical

    given = frozenset(canonical(check_host_name(name)) for name in names)
    address = ipaddress.ip_address(ip.split("%")[0])
    own = set() if address.is_unspecified else {canonical(str(address))}
    if is_loopback(ip):
        return frozenset({*(canonical(n) for n in LOOPBACK_HOSTS), *own, *given})
    if not given:
        where = "every address of this machine" if address.is_unspecified else ip
        raise InputError(
            f"Listening on {where} needs the host names the page will be opened by.",
            "Give each (`bertlens serve --host 0.0.0.0 --allow-host NAME`, repeated: e.g. my-machine.local, "
            "192.168.1.20); requests naming any other host are refused, so that no web page elsewhere can reach the "
            "server by DNS rebinding. To use it on this machine only, serve on 127.0.0.1 (the default).",
        )
    return frozenset({*own, *given})


def check_host_name(name: str) -> str:
    """`name` if it is a host name or an IP address (as a Host header has it, without a port), else an InputError."""
    text = name.strip()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ipaddress.ip_address(bare)
        return text
    except ValueError:
        pass
    if HOST_NAME.fullmatch(text.lower()) and not text.replace(".", "").isdigit():
        return text
    raise InputError(
        f"{name!r} is not a host name.",
        "Give a name or address the page is opened by, without scheme, port or wildcard: "
        "`bertlens serve --allow-host my-machine.local`.",
    )


def url_of(sock: socket.socket, names: Sequence[str] = ()) -> str:
    """The page's address: the bound address, or the first of `names` where that is a wildcard such as 0.0.0.0."""
    host, port = sock.getsockname()[:2]
    if names and ipaddress.ip_address(host.split("%")[0]).is_unspecified:
        host = names[0].strip("[]")
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def _server(app: ASGIApp, limits: ServerLimits | None = None) -> uvicorn.Server:
    """uvicorn's `Server` for `app`, set up by its documented settings only (`uvicorn.Config`):

    - `http="h11"`: uvicorn's pure-Python HTTP/1.1 protocol whatever else is installed, so that a request head
      still incomplete past `limits.max_head_bytes` is refused (400) by `h11_max_incomplete_event_size`, and a request
      line in absolute form keeps its whole target as the path, where `guard.Guard` refuses it;
    - `limit_concurrency`: a request arriving while more than `limits.max_connections` connections are open (its
      own included), or as many requests are running, is answered 503 by uvicorn;
    - `timeout_keep_alive`: a connection left idle after an answer is closed;
    - no proxy headers (nothing stands in front: `X-Forwarded-*` is ignored), no lifespan (create_app loads
      everything first), no access log, the process's logging left alone."""
    import uvicorn

    if limits is None:
        registry = getattr(getattr(app, "state", None), "registry", None)
        limits = registry.limits if registry is not None else ServerLimits()
    config = uvicorn.Config(
        app,
        http="h11",
        h11_max_incomplete_event_size=limits.max_head_bytes,  # a head still incomplete past this: 400
        limit_concurrency=limits.max_connections + 1,  # uvicorn counts the new connection itself: 503 from here
        timeout_keep_alive=limits.keep_alive_timeout,  # an idle connection is closed after this many seconds
        timeout_graceful_shutdown=2,
        proxy_headers=False,
        lifespan="off",  # everything is loaded by create_app before the server starts
        log_config=None,  # leave the process's logging alone; uvicorn's warnings still reach stderr
        log_level="warning",
        access_log=False,
    )
    return uvicorn.Server(config)


def run(app: ASGIApp, sock: socket.socket, on_ready: Callable[[], None] | None = None) -> None:
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
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start(app: ASGIApp, host: str = "127.0.0.1", port: int = 0, limits: ServerLimits | None = None) -> Running:
    """Serve `app` from a background thread on a free loopback port; returns once it accepts connections. The server's
    time and connection limits are `limits`, else those `create_app` gave `app`, else the defaults."""
    sock = bind(host, port)
    server = _server(app, limits)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return Running(url_of(sock), server, thread)
