"""Who may talk to the server, and what every answer forbids the browser.

- The Host check (DNS rebinding) is Starlette's `TrustedHostMiddleware`: a page on another site whose name is made to
  resolve to this machine sends its own name in `Host`, and only the names the server was started for are answered
  (400 otherwise). `host_spellings` lists each name as browsers and tools write it, for that check's exact match.
- `Guard`, around it, refuses a request sent by another site's page (an `Origin`, or `Sec-Fetch-Site`, that is not
  the server's own: 403, before any work; another site's page may send requests but must not run or queue anything
  here) and a request line that names no path (`GET http://host/path`, `*`: 400); and gives every answer
  `X-Frame-Options: DENY` and a Content-Security-Policy that allows only this server's own scripts, styles, images and
  API, and no framing.
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

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


def host_spellings(name: str) -> frozenset[str]:
    """The ways a Host header writes `name`, as `TrustedHostMiddleware` compares them (lower case, an IPv6 address
    in brackets, no port): a name with and without its trailing dot; an IPv6 address compressed and in full; an IPv4
    address also mapped into IPv6 (`[::ffff:127.0.0.1]`, and `[::ffff:7f00:1]` as browsers write it). Other spellings
    of an address (`[::0:1]`) are refused."""
    name = canonical(name)
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return frozenset({name, name + "."})
    if isinstance(address, ipaddress.IPv4Address):
        return frozenset(
            {str(address), f"[::ffff:{address}]", *_ipv6_spellings(ipaddress.IPv6Address(f"::ffff:{name}"))}
        )
    return _ipv6_spellings(address)


def _ipv6_spellings(address: ipaddress.IPv6Address) -> frozenset[str]:
    """An IPv6 address in brackets: compressed (`[::1]`), in full (`[0:0:0:0:0:0:0:1]`) and zero-padded."""
    full = ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
    return frozenset(f"[{spelling}]" for spelling in (address.compressed, full, address.exploded))


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


def error_body(error: str, message: str, hint: str) -> bytes:
    return json.dumps({"error": error, "message": message, "hint": hint}).encode("utf-8")


class Guard:
    """ASGI middleware, outermost: the Origin check, request lines that name no path refused, the security headers
    on every answer (the Host check's refusals included: `TrustedHostMiddleware` runs inside it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        raw_path = scope.get("raw_path") or b"/"
        if not raw_path.startswith(b"/"):  # absolute form or `*`, left whole as the path by uvicorn's h11 protocol
            shown = raw_path.decode("latin-1")[:200]
            hint = "Send the path alone, as browsers and tools do: `GET /api/info`."
            await self._refuse(send, 400, "BadRequestTarget", f"This server answers paths, not {shown!r}.", hint)
            return
        origin = headers.get(b"origin")
        if origin is not None:
            host = split_host(headers.get(b"host", b"").decode("latin-1"))
            if host is None or not same_origin(origin.decode("latin-1"), scope.get("scheme", "http"), host):
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
