"""`bertlens serve`: the local web explorer (the page and its JSON API) for one or more models."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.options import CACHE_DIR_OPTION, THREADS_OPTION
from ..core.results import Result
from .common import Commands, FlagParser, add_option, offline, only_with, show_progress

if TYPE_CHECKING:
    from ..core.model import Model
    from ..web.preparation import TablePreparation


def register(commands: Commands, common: FlagParser) -> None:
    """Add the serve command."""
    cmd = commands.add_parser(
        "serve",
        help="the local web explorer: tokens, embedding layer, similar tokens, context, projection, corpus (a page + "
        "JSON API)",
        description="Serve the bertlens web explorer on this machine. The page calls a JSON API (documented at "
        "/docs) that answers exactly what the commands print with --json.",
    )
    cmd.add_argument(
        "--model",
        "-m",
        action="extend",
        nargs="+",
        default=argparse.SUPPRESS,
        metavar="MODEL",
        help="the models to serve, switchable in the page ('default', a directory, a Hugging Face Hub id such as "
        "bert-base-uncased, fetched once into the Hugging Face cache; repeatable; default: $BERTLENS_MODEL or the "
        "bundled model)",
    )
    cmd.add_argument(
        "--offline",
        action="store_true",
        default=argparse.SUPPRESS,
        help="never fetch a model: a hub id must already be in the Hugging Face cache (as HF_HUB_OFFLINE=1)",
    )
    cmd.add_argument(
        "--index",
        action="append",
        metavar="DIR",
        help="an occurrence index (bertlens index CORPUS --out DIR) to open in the Corpus view: search by example, "
        "senses; its model must be one served (repeatable)",
    )
    cmd.add_argument("--host", help="the address to listen on (default 127.0.0.1: only this machine)")
    cmd.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name (or address) the page is opened by: needed, and then the only names answered, when --host "
        "is not a loopback address (repeatable; e.g. --host 0.0.0.0 --allow-host my-machine.local)",
    )
    cmd.add_argument("--port", type=int, help="the port (default 8000; 0 picks a free one)")
    cmd.add_argument("--open", action="store_true", help="open the page in the default web browser")
    cmd.add_argument(
        "--no-precompute",
        action="store_true",
        help="build no neighbour table (by default a model's missing one is built in the background once the page "
        "answers, ~15 s once per model, then cached; until then and without it each neighbours request scans the "
        "matrix, ~2 ms)",
    )
    cmd.add_argument("--workers", type=int, help="forward passes run at once (default 1)")
    add_option(cmd, THREADS_OPTION, help="torch's CPU threads (default: torch's choice, one per core)")
    add_option(cmd, CACHE_DIR_OPTION, help="where the similarity indexes are cached (default: ~/.cache/bertlens)")
    cmd.add_argument(
        "--get", metavar="PATH", help="run one GET request in-process (no server), print its JSON: --get /api/info"
    )
    cmd.add_argument(
        "--post",
        nargs=2,
        metavar=("PATH", "JSON"),
        help='run one POST request in-process and print its JSON: --post /api/tokens \'{"text": "hello"}\'',
    )
    cmd.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print results as JSON")
    cmd.set_defaults(run=_run_serve)


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


def _sources(args: argparse.Namespace) -> list[str | None]:
    chosen = getattr(args, "model", None)
    if chosen is None:
        return [None]  # $BERTLENS_MODEL or the bundled default, as every command
    return [chosen] if isinstance(chosen, str) else list(chosen)


def _models(args: argparse.Namespace) -> list[Model]:
    """Every model to serve, loaded (a hub id fetched into the Hugging Face cache the first time, unless --offline)."""
    from ..core.model import load_model

    return [load_model(source, offline=offline(args), progress=show_progress(args)) for source in _sources(args)]


def _run_serve(args: argparse.Namespace) -> Answer | Served:
    from ..core.errors import BertlensError
    from ..core.extras import require
    from ..similarity.index import cache_root
    from ..web.app import call, create_app
    from ..web.limits import ServerLimits

    require("fastapi", extra="web")  # before any model is loaded
    one_request = _check(args)
    cache_root(args.cache_dir)  # a bad --cache-dir is refused now, not at the first neighbours request
    limits = ServerLimits(
        model_workers=1 if args.workers is None else args.workers,
        precompute=not args.no_precompute and not one_request,
        cache_dir=args.cache_dir,
    )
    if one_request:
        app = create_app(_models(args), limits, indexes=args.index or ())
        if args.get is not None:
            status, body = call(app, "GET", args.get)
        else:
            status, body = call(app, "POST", args.post[0], _request_body(args.post[1]))
        if status >= 400:
            raise _response_error(body)
        return Answer(status, body)

    require("uvicorn", extra="web")
    from ..web import server

    host = "127.0.0.1" if args.host is None else args.host
    port = 8000 if args.port is None else args.port
    address = server.resolve(host, port)
    ip = address[4][0]
    hosts = server.allowed_hosts(ip, args.allow_host or ())  # decided by the address bound, before anything is loaded
    sock = server.bind(host, port, address)  # before loading: a busy port fails fast
    print(f"bertlens: loading {len(_sources(args))} model(s)…", file=sys.stderr, flush=True)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    try:
        app = create_app(_models(args), limits, hosts=hosts, indexes=args.index or (), prepare_hook=report_preparation)
    except BaseException:
        sock.close()
        raise
    url = server.url_of(sock, args.allow_host or ())
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
        if args.open:
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


def _check(args: argparse.Namespace) -> bool:
    """Refuse contradictory or out-of-range options; True when one in-process request is asked (--get/--post)."""
    from ..core.errors import InputError

    if args.get is not None and args.post is not None:
        raise InputError("Give either --get or --post, not both.", "Run one request at a time.")
    one_request = args.get is not None or args.post is not None
    if one_request:
        server_only = ["--host", "--port", "--allow-host", "--open", "--no-precompute", "--workers", "--threads"]
        only_with(args, server_only, "to a running server (not --get/--post)")
    for option, value in (("--workers", args.workers), ("--threads", args.threads)):
        if value is not None and value < 1:
            raise InputError(f"{option} must be 1 or more, got {value}.", f"Example: {option} 2 (or leave it out).")
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
