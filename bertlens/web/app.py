"""The web app: `create_app` puts together the models (registry.py), the JSON API (api.py), the page (page.py), the
guards (Starlette's TrustedHostMiddleware, guard.py, body.py) and errors as JSON (errors.py); `call` runs one
request through it in-process.

The server only uses the models it was started with: a request names one of them (by name or by index) and never
carries a file path; the only files the server reads are the page's own assets, by fixed names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import BertlensError
from ..core.extras import require
from ..core.model import Model
from ..core.tokens import check_text
from .errors import describe_validation, http_error, internal_error, status_of
from .limits import ServerLimits
from .page import add_page
from .preparation import Hook
from .registry import new_registry
from .responses import JSON, dumps

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.responses import Response
    from starlette.types import Message


def create_app(
    models: Sequence[Model | str],
    limits: ServerLimits | None = None,
    *,
    hosts: Iterable[str] | None = None,
    indexes: Sequence[str | os.PathLike[str]] = (),
    prepare_hook: Hook | None = None,
) -> FastAPI:
    """The FastAPI app serving `models` (loaded `Model`s, or sources for `load_model`): the API, the page, /docs.

    Every model and its similarity index are loaded here, once; requests choose among them by name or index. A
    neighbour table the cache lacks is built afterwards on a background thread (`limits.precompute`; preparation.py),
    so the app answers at once: neighbours by a scan until it is ready, its progress at GET /api/status;
    `prepare_hook(table)` is called at each step of that build (the CLI reports it; a test may hold it there).
    `indexes` are occurrence index folders (`bertlens index`) opened once for the Corpus view, each refused unless
    one of `models` built it (corpus.py).
    `hosts`, when given, are the only Host names answered (others get Starlette's `TrustedHostMiddleware` 400):
    `bertlens serve` answers only the names of the address it is bound to (`server.allowed_hosts`), so that a web
    page elsewhere cannot reach it by DNS rebinding. Requests sent by another site's page get a 403, and every answer
    forbids framing and foreign scripts (`guard.Guard`).

    >>> app = create_app(["default"], ServerLimits(max_k=100))  # a FastAPI app: mount it, or serve it  # doctest: +SKIP
    >>> import uvicorn
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    require("fastapi", extra="web")
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from . import api, compare, corpus
    from .body import BodyLimit
    from .guard import Guard, host_spellings

    limits = limits or ServerLimits()
    registry = new_registry(models, limits, prepare_hook)
    registry.indexes = corpus.open_served_indexes(indexes, registry.models)
    app = FastAPI(
        title="bertlens",
        version=_version(),
        description=(
            "The JSON API of the bertlens web explorer. Each endpoint calls the same library function as the "
            "matching `bertlens` command and returns that result's `to_dict()`, exactly what the command prints "
            'with `--json`. Errors are JSON too: `{"error": type, "message": what is wrong, "hint": what to do}`.'
        ),
        docs_url=None,  # FastAPI's Swagger UI loads scripts from a CDN: /docs is our own page, drawn from the spec
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.registry = registry  # what the endpoints' `registry` dependency reads (work.py)
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes, seconds=limits.read_timeout)
    if hosts is not None:  # checked before the body is read
        spellings = sorted({spelling for host in hosts for spelling in host_spellings(host)})
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=spellings, www_redirect=False)
    app.add_middleware(Guard)  # outermost: its headers go on the Host check's refusals too

    @app.exception_handler(BertlensError)
    def _bertlens_error(request: Request, exc: BertlensError) -> Response:
        return JSON(exc.to_dict(), status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> Response:
        status, body = describe_validation(exc.errors())
        return JSON(body, status_code=status)

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})  # a 405's Allow
        body = http_error(exc.status_code, request.url.path, str(exc.detail), request.method, headers.get("Allow", ""))
        response = JSON(body, status_code=exc.status_code)
        response.headers.update(headers)
        return response

    @app.exception_handler(Exception)
    def _bug(request: Request, exc: Exception) -> Response:
        return JSON(internal_error(exc), status_code=500)

    app.include_router(api.router)
    app.include_router(corpus.router)
    app.include_router(compare.router)
    add_page(app)
    if limits.precompute:
        registry.preparation.start()  # the missing neighbour tables, on a background thread
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bertlens")
    except PackageNotFoundError:
        return "unknown"


def call(app: FastAPI, method: str, path: str, body: object = None) -> tuple[int, Any]:
    """Run one request through `app` in-process (no socket): (status, parsed JSON body, or text for non-JSON). `body`:
    bytes as they are, else data sent as JSON. Any: the answer's JSON, of whatever shape the endpoint gives."""
    import asyncio
    from urllib.parse import urlsplit

    parts = urlsplit(check_text(path, "request path"))
    data = b"" if body is None else (body if isinstance(body, bytes) else dumps(body))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "http",
        "path": parts.path or "/",
        "raw_path": (parts.path or "/").encode(),
        "query_string": parts.query.encode(),
        "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")]
        + ([(b"content-length", str(len(data)).encode())] if data else []),
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 80),
    }
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    try:
        return status, json.loads(content)
    except ValueError:
        return status, content.decode("utf-8", "replace")
