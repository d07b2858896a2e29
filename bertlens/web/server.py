"""Running the app: a socket bound first (so a busy port is a clear error), then uvicorn on it, each connection
inside a `Connection` (a request head's time limit, the connection limit, the request target kept for `Guard`).

Used by `bertlens serve`, by the browser tests and by the benchmarks (`start` runs it in a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from .guard import TARGET
from .limits import ServerLimits

if TYPE_CHECKING:
    import httptools
    import uvicorn
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
                f"Port {port} on {host} is already in use.", "Choose another `port`, or `port=0` for a free one."
            ) from None
        raise InputError(f"Cannot listen on {host}:{port}: {exc.strerror}.", "Check `host` and `port`.") from None
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


UVICORN_CHECKED = ((0, 27), (0, 55))  # uvicorn versions Connection and RequestClock were checked with: >=0.27, <0.55
REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
TOO_MANY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
UNSEEN = object()  # a request head uvicorn read but Connection's parser did not (they disagree): refused
CONNECTION: ContextVar[Connection | None] = ContextVar("bertlens_connection", default=None)


def _server(app: ASGIApp, limits: ServerLimits | None = None) -> uvicorn.Server:
    """uvicorn's `Server` for `app`, with the defences uvicorn has no option for (`Connection`, `RequestClock`).

    From uvicorn's own options: `timeout_keep_alive` (an idle connection is closed), no lifespan (everything is
    loaded by create_app first), no access log. Not its `limit_concurrency`: it also counts request tasks, which
    outlive their answers under keep-alive load (20 steady clients got 503s); `Connection` limits connections only."""
    import uvicorn

    if limits is None:
        registry = getattr(getattr(app, "state", None), "registry", None)
        limits = registry.limits if registry is not None else ServerLimits()
    config = uvicorn.Config(
        RequestClock(app),
        http=connection_protocol(limits.read_timeout, limits.max_connections),
        log_config=None,  # leave the process's logging alone; uvicorn's warnings still reach stderr
        log_level="warning",
        access_log=False,
        lifespan="off",  # everything is loaded by create_app before the server starts
        timeout_graceful_shutdown=2,
        timeout_keep_alive=limits.keep_alive_timeout,  # an idle connection is closed after this many seconds
    )
    return uvicorn.Server(config)


def connection_protocol(seconds: float, max_connections: int) -> type[asyncio.Protocol]:
    """The protocol class uvicorn makes each connection with (`Config(http=...)`): a `Connection` around uvicorn's own
    HTTP protocol (httptools', else h11's), made with whatever uvicorn passes, sharing one count of open connections."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as inner

        read_targets = True  # httptools' protocol keeps only the path: the targets are read here
    except ImportError:  # pragma: no cover - httptools is not installed
        from uvicorn.protocols.http.h11_impl import H11Protocol as inner  # type: ignore[assignment]

        read_targets = False  # h11's keeps the whole target as the raw path, where Guard reads it
    opened: set[Connection] = set()

    class ServedConnection(Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(inner(*args, **kwargs), seconds, max_connections, opened, read_targets)

    return ServedConnection


class Connection(asyncio.Protocol):
    """One client connection: uvicorn's HTTP protocol inside it, and the defences uvicorn has no option for.

    - A request head (request line and headers) must arrive within `seconds` of the connection opening or of the
      previous answer ending, else 408 and the connection is closed: uvicorn alone waits for ever on a half-sent head
      (its keep-alive timer stops at the first byte), so a few slow clients could hold every connection. (A half-sent
      body is timed by `BodyLimit`.)
    - A connection beyond `max_connections` open at once is answered 503 and closed (uvicorn never sees it).
    - A request line in absolute form (`GET http://host/path`) keeps its target in the scope (`guard.TARGET`), so that
      `Guard` checks its host as it checks `Host`: uvicorn's httptools protocol keeps only the path, so the same
      parser (httptools, with uvicorn's leniency) reads the same bytes here and hands each head's target on, in order.

    Composed, not subclassed: only asyncio's Protocol interface, httptools' parser callbacks and ASGI are used. The
    one thing taken from uvicorn's behaviour rather than its options: it starts a request's task from within
    `data_received` (or from the task of the request before it on the same connection), so the task inherits
    `CONNECTION` and `RequestClock` finds its connection. Checked for uvicorn 0.27 to 0.54 (`UVICORN_CHECKED`); a
    uvicorn outside that range fails tests/web/test_uvicorn.py until it is checked again."""

    def __init__(
        self, inner: Any, seconds: float, max_connections: int, opened: set[Connection], read_targets: bool
    ) -> None:
        self.inner = inner  # uvicorn's protocol: it parses, runs the app, writes the answers
        self.seconds = seconds
        self.max_connections = max_connections
        self.opened = opened  # every connection of this server open now, this one included
        self.transport: Any = None
        self.refused = False  # beyond max_connections: its first data is answered 503, then it closes
        self.closed = False
        self.running = 0  # requests of this connection the app is answering now
        self.timer: asyncio.TimerHandle | None = None
        self.targets: deque[bytes | None] = deque()  # each head's target when not a path, in order; None: a path
        self.parser = target_parser(self.targets) if read_targets else None  # httptools' parser, as uvicorn's

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.opened.add(self)
        self.refused = len(self.opened) > self.max_connections
        if not self.refused:
            self.inner.connection_made(transport)
        self.arm()

    def data_received(self, data: bytes) -> None:
        if self.refused:
            if not self.transport.is_closing():  # the request was read, so closing sends no reset
                self.transport.write(TOO_MANY)
                self.transport.close()
            return
        if self.parser is not None:
            import httptools

            # uvicorn's parser, fed the same bytes, stops at the same byte (and answers a bad head 400)
            with contextlib.suppress(httptools.HttpParserError, httptools.HttpParserUpgrade):
                self.parser.feed_data(data)
        token = CONNECTION.set(self)  # inherited by the request tasks uvicorn starts here
        try:
            self.inner.data_received(data)
        finally:
            CONNECTION.reset(token)

    def eof_received(self) -> bool | None:
        return None if self.refused else self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.opened.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        if not self.refused:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if not self.refused:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if not self.refused:
            self.inner.resume_writing()

    def request_began(self) -> object:
        """A request of this connection reached the app (its head was read): no head is awaited meanwhile. Its target
        when not a path, None for a path, UNSEEN where this connection's parser saw no head (refused)."""
        self.running += 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.parser is None:
            return None
        return self.targets.popleft() if self.targets else UNSEEN

    def request_ended(self) -> None:
        """A request's answer ended: the next head has `seconds` to arrive."""
        self.running -= 1
        if self.running == 0:
            self.arm()

    def arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if not self.closed:
            self.timer = asyncio.get_running_loop().call_later(self.seconds, self.head_late)

    def head_late(self) -> None:
        # a head read in this very loop iteration has had its task created but not begun: look once it has
        asyncio.get_running_loop().call_soon(self.close_unless_running)

    def close_unless_running(self) -> None:
        if self.running == 0 and not self.closed and not self.transport.is_closing():  # no request began in time
            self.transport.write(REQUEST_TIMEOUT)
            self.transport.close()


def target_parser(targets: deque[bytes | None]) -> httptools.HttpRequestParser:
    """An httptools request parser that appends each request head's target to `targets` (None when it is a path),
    with the leniency uvicorn sets on its own (so both read the same requests from the same bytes)."""
    import httptools

    class Heads:
        url = b""

        def on_message_begin(self) -> None:
            self.url = b""

        def on_url(self, url: bytes) -> None:
            self.url += url

        def on_headers_complete(self) -> None:
            targets.append(None if self.url.startswith(b"/") else bytes(self.url))

    parser = httptools.HttpRequestParser(Heads())
    with contextlib.suppress(AttributeError):  # httptools < 0.6.3 has no leniencies (uvicorn sets none there either)
        parser.set_dangerous_leniencies(lenient_data_after_close=True)
    return parser


class RequestClock:
    """ASGI middleware, outermost (the server adds it): tells each request's `Connection` when the request began
    and when its answer ended (for the head timer), and puts an absolute-form target into the scope for `Guard`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection = CONNECTION.get()
        if connection is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        target = connection.request_began()
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                connection.request_ended()

        async def timed_send(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                end()

        try:
            if target is UNSEEN:
                await send({"type": "http.response.start", "status": 400, "headers": [(b"connection", b"close")]})
                await timed_send({"type": "http.response.body", "body": b""})
                return
            if target is not None:
                scope["extensions"] = {**(scope.get("extensions") or {}), TARGET: {"target": target}}
            await self.app(scope, receive, timed_send)
        finally:
            end()


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
