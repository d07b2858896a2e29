"""`bertlens serve`: the local web explorer (the page and its JSON API) for one or more models."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ..core.options import CACHE_DIR_OPTION, THREADS_OPTION
from ..core.results import Result
from .common import Call, command
from .params import Many, option

if TYPE_CHECKING:
    from ..core.model import Model
    from ..web.preparation import TablePreparation

SERVER_ONLY = ["--host", "--port", "--allow-host", "--open", "--no-precompute", "--workers", "--threads"]


@command(
    "serve",
    "the local web explorer: tokens, embedding layer, similar tokens, context, projection, corpus (a page + JSON API)",
    "Serve the bertlens web explorer on this machine. The page calls a JSON API (documented at /docs) that answers "
    "exactly what the commands print with --json.",
    shared=False,
)
@click.option(
    "--model",
    "-m",
    cls=Many,
    metavar="MODEL",
    help="the models to serve, switchable in the page ('default', a directory, a Hugging Face Hub id such as "
    "bert-base-uncased, fetched once into the Hugging Face cache; several after one flag, or the flag repeated; "
    "default: bertlens --model, $BERTLENS_MODEL or the bundled model)",
)
@click.option(
    "--offline",
    is_flag=True,
    help="never fetch a model: a hub id must already be in the Hugging Face cache (as HF_HUB_OFFLINE=1)",
)
@click.option(
    "--index",
    multiple=True,
    metavar="DIR",
    help="an occurrence index (bertlens index CORPUS --out DIR) to open in the Corpus view: search by example, "
    "senses; its model must be one served (repeatable)",
)
@click.option(
    "--host",
    metavar="ADDRESS",
    default="127.0.0.1",
    show_default=True,
    help="the address to listen on (127.0.0.1: only this machine)",
)
@click.option(
    "--allow-host",
    multiple=True,
    metavar="NAME",
    help="a host name (or address) the page is opened by: needed, and then the only names answered, when --host "
    "is not a loopback address (repeatable; e.g. --host 0.0.0.0 --allow-host my-machine.local)",
)
@click.option("--port", type=int, default=8000, show_default=True, help="the port (0 picks a free one)")
@click.option("--open", is_flag=True, help="open the page in the default web browser")
@click.option(
    "--no-precompute",
    is_flag=True,
    help="build no neighbour table (by default a model's missing one is built in the background once the page "
    "answers, ~15 s once per model, then cached; until then and without it each neighbours request scans the "
    "matrix, ~2 ms)",
)
@click.option("--workers", type=int, default=1, show_default=True, help="forward passes run at once")
@option(THREADS_OPTION, help="torch's CPU threads (default: torch's choice, one per core)")
@option(CACHE_DIR_OPTION, metavar="DIR", help="where the similarity indexes are cached (default: ~/.cache/bertlens)")
@click.option(
    "--get", metavar="PATH", help="run one GET request in-process (no server), print its JSON: --get /api/info"
)
@click.option(
    "--post",
    nargs=2,
    metavar="PATH JSON",
    help='run one POST request in-process and print its JSON: --post /api/tokens \'{"text": "hello"}\'',
)
@click.option("--json", is_flag=True, help="print results as JSON")
def serve(
    call: Call,
    model: tuple[str, ...],
    offline: bool,
    index: tuple[str, ...],
    host: str,
    allow_host: tuple[str, ...],
    port: int,
    open: bool,
    no_precompute: bool,
    workers: int,
    threads: int | None,
    cache_dir: str | None,
    get: str | None,
    post: tuple[str, str] | None,
    json: bool,
) -> Answer | Served:
    from ..core.errors import BertlensError
    from ..core.extras import require
    from ..similarity.index import cache_root
    from ..web.app import call as request
    from ..web.app import create_app
    from ..web.limits import ServerLimits

    require("fastapi", extra="web")  # before any model is loaded
    one_request = _check(call, get, post, workers, threads)
    cache_root(cache_dir)  # a bad --cache-dir is refused now, not at the first neighbours request
    limits = ServerLimits(model_workers=workers, precompute=not no_precompute and not one_request, cache_dir=cache_dir)
    sources = _sources(call, model)
    if one_request:
        app = create_app(_models(call, sources), limits, indexes=index)
        if get is not None:
            status, body = request(app, "GET", get)
        else:
            assert post is not None
            status, body = request(app, "POST", post[0], _request_body(post[1]))
        if status >= 400:
            raise _response_error(body)
        return Answer(status, body)

    require("uvicorn", extra="web")
    from ..web import server

    address = server.resolve(host, port)
    ip = address[4][0]
    hosts = server.allowed_hosts(ip, allow_host)  # decided by the address bound, before anything is loaded
    sock = server.bind(host, port, address)  # before loading: a busy port fails fast
    print(f"bertlens: loading {len(sources)} model(s)…", file=sys.stderr, flush=True)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    try:
        app = create_app(_models(call, sources), limits, hosts=hosts, indexes=index, prepare_hook=report_preparation)
    except BaseException:
        sock.close()
        raise
    url = server.url_of(sock, allow_host)
    names = tuple(s.name for s in app.state.registry.models)
    if not server.is_loopback(ip):
        print(
            f"bertlens: warning: listening beyond this machine ({ip}); anyone who can reach it can use it, by the "
            f"names {', '.join(sorted(hosts))}",
            file=sys.stderr,
        )
    print(f"bertlens: serving {', '.join(names)} at {url}  (API docs: {url}docs; Ctrl-C stops)", flush=True)
    for opened in app.state.registry.indexes:
        print(f"bertlens: index {opened.name} ({opened.index.rows:,} occurrences, {opened.served.name}): {url}#corpus")

    def ready() -> None:
        if open:
            open_browser(url)
        first = app.state.registry.models[0]
        try:  # load torch and the first model now, so that the page's first check or context does not wait for it
            first.torch_model()
        except BertlensError as exc:
            print(f"bertlens: warning: {first.name}: {exc}", file=sys.stderr)

    try:
        server.run(app, sock, on_ready=ready)
    finally:
        sock.close()
    return Served(url, names)


@dataclass(frozen=True)
class Answer:
    """What one in-process request answered (--get / --post): its JSON as it was (or the text of a page), printed
    as it is with --json, indented otherwise."""

    status: int
    body: object  # parsed JSON: an object (every API answer and error), or the text of a page

    def to_dict(self) -> object:
        return self.body

    def __str__(self) -> str:
        return json.dumps(self.body, ensure_ascii=False, indent=2)


@dataclass(frozen=True, repr=False)
class Served(Result):
    """What a finished `bertlens serve` served."""

    url: str
    models: tuple[str, ...]

    def to_table(self) -> str:
        return f"bertlens: stopped serving {', '.join(self.models)} at {self.url}"


def _sources(call: Call, given: tuple[str, ...]) -> list[str | None]:
    """The models to serve: serve's own --model, else the program's (`bertlens --model X serve`), else
    $BERTLENS_MODEL or the bundled default (None), as every command."""
    if given:
        return list(given)
    return [call.ctx.find_root().params.get("model")]


def _models(call: Call, sources: list[str | None]) -> list[Model]:
    """Every model to serve, loaded (a hub id fetched into the Hugging Face cache the first time, unless --offline)."""
    from ..core.model import load_model

    return [load_model(source, offline=call.offline, progress=call.progress) for source in sources]


def report_preparation(table: TablePreparation) -> None:
    """Say on standard error what is prepared in the background: when a model's neighbour table starts (its first
    step), and when it is ready or failed."""
    if table.state == "preparing" and table.fraction == 0.0:
        print(
            f"bertlens: preparing the similar-token table of {table.name} in the background (once, then cached); "
            "the page answers meanwhile, similar tokens by a scan of the matrix (progress: GET /api/status)",
            file=sys.stderr,
            flush=True,
        )
    elif table.state == "ready":
        seconds = f"{table.seconds:.0f} s" if table.seconds is not None else "done"
        print(f"bertlens: the similar-token table of {table.name} is ready ({seconds})", file=sys.stderr, flush=True)
    elif table.state == "failed":
        print(
            f"bertlens: warning: the similar-token table of {table.name} could not be built ({table.error}); similar "
            "tokens are found by a scan of the matrix",
            file=sys.stderr,
            flush=True,
        )


def open_browser(url: str) -> bool:
    """Open `url` in the default web browser; say so on standard error when none could be opened (no browser, no
    display, a headless machine). The URL itself is always printed by `serve`."""
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:  # pragma: no cover - webbrowser reports most failures as False
        opened = False
    if opened:
        print(f"bertlens: opened {url} in the web browser", file=sys.stderr, flush=True)
    else:
        print(
            f"bertlens: no web browser could be opened on this machine; open {url} yourself "
            "(on a remote machine, forward its port with ssh -L first)",
            file=sys.stderr,
            flush=True,
        )
    return opened


def _check(call: Call, get: str | None, post: tuple[str, str] | None, workers: int, threads: int | None) -> bool:
    """Refuse contradictory or out-of-range options; True when one in-process request is asked (--get/--post)."""
    from ..core.errors import InputError

    if get is not None and post is not None:
        raise InputError("Give either --get or --post, not both.", "Run one request at a time.")
    one_request = get is not None or post is not None
    if one_request:
        call.applies_only(SERVER_ONLY, "to a running server (not --get/--post)")
    for flag, value in (("--workers", workers), ("--threads", threads)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be 1 or more, got {value}.", f"Example: {flag} 2 (or leave it out).")
    return one_request


def _request_body(text: str) -> bytes:
    """The --post JSON as UTF-8 (a command line can carry undecodable bytes, which no JSON text may hold)."""
    from ..core.tokens import check_text

    return check_text(text, "request JSON (--post)").encode("utf-8")


def _response_error(body: object) -> Exception:
    """The API's error as a BertlensError (exit status 2; with --json, the API's JSON error as it was)."""
    from ..core.errors import BertlensError

    class ResponseError(BertlensError):
        def to_dict(self) -> dict[str, str]:
            return body if isinstance(body, dict) else {"error": "Error", "message": str(body), "hint": hint}

    hint = "See each endpoint's form at /docs (bertlens serve, then open the page) or --get /openapi.json."
    if isinstance(body, dict):
        return ResponseError(str(body.get("message", body)), str(body.get("hint") or hint))
    return ResponseError(str(body), hint)
