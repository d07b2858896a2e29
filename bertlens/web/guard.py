"""Who may talk to the server, and what every answer forbids the browser.

- The Host check (DNS rebinding): a page on another site whose name is made to resolve to this machine sends its own
  name in `Host`; only the names the server was started for are answered (400 otherwise). A request line in absolute
  form (`GET http://host:port/path`) names its host in the target too, and HTTP says that name, not `Host`, is the
  one meant: it is checked the same way (and must be this server's scheme, without user information), and so is
  `Host`.
- The Origin check: a page of another site may send requests (a form, a `fetch`) but not read the answers; such
  requests are refused (403) before any work, so another site's page can neither run nor queue anything here.
- Every answer carries `X-Frame-Options: DENY` and a Content-Security-Policy that allows only this server's own
  scripts, styles, images and API, and no framing.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-eval'",  # no inline script; plotly's WebGL plots (regl) compile with Function()
        "style-src 'self' 'unsafe-inline'",  # plotly adds <style> elements, the page and plotly style attributes
        "img-src 'self' data: blob:",  # the page's empty icon (data:,), plotly's 'download as PNG'
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
DEFAULT_PORTS = {"http": 80, "https": 443}
TARGET = "bertlens.request_target"  # scope extension {"target": bytes}: a request line's target that is not a path
OTHER_SITE = (b"cross-site", b"same-site")  # Sec-Fetch-Site values of requests made by another site's page


def canonical(name: str) -> str:
    """A host name as compared: lower case, no trailing dot, IP addresses in one spelling (`[::1]` is `::1`;
    `::ffff:127.0.0.1`, an IPv4 address mapped into IPv6, is `127.0.0.1`)."""
    name = name.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def split_host(value: str) -> tuple[str, int | None] | None:
    """The (canonical name, port or None) of a Host header such as `127.0.0.1:8000` or `[::1]:8000`; None when
    `value` is not one."""
    value = value.strip()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text = value.rpartition(":") if ":" in value else (value, "", "")
        if not colon:
            port_text = None
    if port_text is not None and not (port_text.isdigit() and len(port_text) <= 5):
        return None
    if not name or any(c in name for c in "/\\@ \t"):
        return None
    return canonical(name), None if port_text is None else int(port_text)


def same_origin(origin: str, scheme: str, host: tuple[str, int | None]) -> bool:
    """Whether an Origin header names the site the request was sent to: its scheme, Host name and port (the scheme's
    default port where none is written)."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme != scheme or scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return False
    name, host_port = host
    default = DEFAULT_PORTS[scheme]
    return canonical(parts.hostname) == name and (port or default) == (host_port or default)


def request_target(scope: Scope) -> bytes | None:
    """The request line's target when it is not a path (absolute form, `*`), else None: put into the scope by
    server.py's `RequestClock` (uvicorn's httptools protocol keeps only the path), or the raw path itself where the
    server keeps it whole (h11)."""
    target = ((scope.get("extensions") or {}).get(TARGET) or {}).get("target")
    if target is None:
        raw = scope.get("raw_path")
        target = raw if isinstance(raw, bytes) and raw and not raw.startswith(b"/") else None
    return bytes(target) if target is not None else None


def target_authority(target: bytes, scheme: str) -> tuple[str, int | None] | None:
    """The (canonical name, port or None) of an absolute-form target such as `http://127.0.0.1:8000/api/info`; None
    when it is not `scheme://host[:port]/…` (another scheme, user information, no host, `*`)."""
    text = target.decode("latin-1")
    given, separator, rest = text.partition("://")
    if not separator or given.lower() != scheme:
        return None
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return split_host(authority) if authority else None


def routed_by_path(scope: Scope, target: bytes) -> Scope:
    """`scope` routed by the path of an absolute-form target where the server kept the whole target as the path
    (h11: `http://host:port/api/models` is the path `/api/models`); unchanged where the server kept the path alone."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes) or raw.startswith(b"/") or b"://" not in target:
        return scope
    after = raw.partition(b"://")[2]
    path = b"/" + after.partition(b"/")[2] if b"/" in after else b"/"
    return {**scope, "raw_path": path, "path": unquote(path.decode("latin-1"))}


def error_body(error: str, message: str, hint: str) -> bytes:
    return json.dumps({"error": error, "message": message, "hint": hint}).encode("utf-8")


class Guard:
    """ASGI middleware: the Host check (when `hosts` is given), the Origin check, and the security headers."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts  # canonical names; None: any Host (an app mounted by its user)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        raw_host = headers.get(b"host", b"").decode("latin-1")
        host = split_host(raw_host)
        target = request_target(scope)
        if target is not None:  # absolute form: its authority is the host meant (RFC 9112, 3.2.2), checked as Host
            authority = target_authority(target, scope.get("scheme", "http"))
            if self.hosts is not None and (authority is None or authority[0] not in self.hosts):
                shown = target.decode("latin-1")[:200]
                hint = (
                    "Send the path alone (`GET /api/info`), or a URL naming this server's own address; a proxy's "
                    "form of a request naming another host is not answered."
                )
                await self._refuse(send, 400, "HostNotAllowed", f"This server does not answer for {shown!r}.", hint)
                return
        if self.hosts is not None and (host is None or host[0] not in self.hosts):  # and Host all the same
            names = ", ".join(sorted(self.hosts or ())) or "its own address"
            hint = (
                f"Open the page at one of: {names}. A server started on another address answers only the names "
                "given with `bertlens serve --allow-host NAME`."
            )
            await self._refuse(send, 400, "HostNotAllowed", f"This server does not answer for host {raw_host!r}.", hint)
            return
        if target is not None:
            host = target_authority(target, scope.get("scheme", "http"))  # the host meant, for the Origin check
            scope = routed_by_path(scope, target)
        origin = headers.get(b"origin")
        if origin is not None and (
            host is None or not same_origin(origin.decode("latin-1"), scope.get("scheme", "http"), host)
        ):
            message = f"Requests from pages of another site ({origin.decode('latin-1')}) are refused."
            await self._refuse(send, 403, "ForeignOrigin", message, _FOREIGN_HINT)
            return
        if headers.get(b"sec-fetch-site") in OTHER_SITE and headers.get(b"sec-fetch-mode") != b"navigate":
            message = "Requests made by pages of another site are refused."
            await self._refuse(send, 403, "ForeignOrigin", message, _FOREIGN_HINT)
            return

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, guarded_send)

    async def _refuse(self, send: Send, status: int, error: str, message: str, hint: str) -> None:
        body = error_body(error, message, hint)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *SECURITY_HEADERS]})
        await send({"type": "http.response.body", "body": body})


_FOREIGN_HINT = (
    "Use the page this server serves, at its own address; scripts and tools (curl, Python) send no Origin header "
    "and are answered."
)
