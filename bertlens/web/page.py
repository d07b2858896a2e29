"""The page and its assets: a fixed set of files under static/ (and plotly.min.js from the plotly package), read
once into memory and served from fixed URLs; no request ever names a file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..core.extras import require

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.responses import Response

STATIC = Path(__file__).parent / "static"

PAGE_FILES = {  # URL -> (file, media type): the only files the server ever reads for a request
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/corpus.js": ("corpus.js", "text/javascript; charset=utf-8"),
    "/static/compare.js": ("compare.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
    "/docs": ("docs.html", "text/html; charset=utf-8"),
    "/static/docs.js": ("docs.js", "text/javascript; charset=utf-8"),
}
PLOTLY_URL = "/static/plotly.min.js"


def plotly_js() -> Path:
    """plotly.min.js from the installed plotly package: the page's only library, served locally (no CDN)."""
    import importlib.util

    require("plotly", extra="web", what="The web explorer's pictures")
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("The plotly package has no files.", "Reinstall plotly.")
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise InputError(f"plotly.min.js is missing from the plotly package ({path}).", "Reinstall plotly.")
    return path


def add_page(app: FastAPI) -> None:
    """The page and its assets, read once into memory and served from fixed URLs."""
    from starlette.responses import Response

    assets = {url: ((STATIC / name).read_bytes(), media) for url, (name, media) in PAGE_FILES.items()}
    assets[PLOTLY_URL] = (plotly_js().read_bytes(), "text/javascript; charset=utf-8")
    caching = {PLOTLY_URL: "public, max-age=86400"}

    def endpoint(url: str) -> Callable[[], Response]:
        content, media = assets[url]
        headers = {"Cache-Control": caching.get(url, "no-cache")}  # the security headers are added by guard.Guard

        def page() -> Response:
            return Response(content, media_type=media, headers=headers)

        return page

    for url in assets:
        app.add_api_route(url, endpoint(url), methods=["GET"], include_in_schema=False)
