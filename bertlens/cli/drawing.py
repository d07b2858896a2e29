"""What every `bertlens plot` kind shares: where and how its picture is drawn (--out and the drawing flags, checked
before any slow work), how its points are projected (t-SNE and UMAP settings, refused where the method ignores them),
coloured and labelled; and the result drawn once it is computed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.options import (
    DIMS_OPTION,
    METHOD_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PROJECTION_METRIC_OPTION,
    PROJECTION_NEIGHBORS_OPTION,
    SEED_OPTION,
)
from ..plots.style import HTML_KINDS
from .common import Call
from .params import option, progress_flag

if TYPE_CHECKING:
    from ..core.options import ProjectionMethod, ProjectionMetric
    from ..core.results import Result
    from ..plots.render import PlotResult
    from ..views.projection import ProjectionSettings

F = TypeVar("F", bound=Callable[..., Any])

# Every drawing option a kind can have: refused without --out (a picture)
DRAWING = ("overwrite", "title", "width", "height", "html", "color_by", "label_by", "max_labels")


def _stack(function: F, decorators: list[Callable[[F], F]]) -> F:
    """`function` with `decorators` applied as if written above it in this order (so --help lists them so)."""
    for decorate in reversed(decorators):
        function = decorate(function)
    return function


def draw_flags(function: F) -> F:
    """Where and how a picture is drawn: --out, --overwrite, --title, --width, --height, --html (every kind)."""
    return _stack(
        function,
        [
            option(
                OUT_OPTION,
                metavar="FILE",
                help="the picture to write: .png, .svg or .html (interactive, fills the window); without it only the "
                "data is printed",
            ),
            option(OVERWRITE_OPTION, help="replace --out if it exists"),
            click.option("--title", help="a heading instead of the default one"),
            click.option(
                "--width",
                type=float,
                default=9.0,
                show_default=True,
                help="inches for .png and .svg (an HTML page fills the window)",
            ),
            click.option("--height", type=float, default=6.5, show_default=True, help="inches for .png and .svg"),
            click.option(
                "--html",
                type=click.Choice(HTML_KINDS),
                default="plotly",
                show_default=True,
                help="what an .html file holds: plotly (interactive, hover, zoom, rotate in 3-D; fills the window and "
                "follows its size; plotly.js inlined, ~4.8 MB, works offline), svg (the static picture in a page, "
                "~50 KB)",
            ),
        ],
    )


def projection_flags(function: F) -> F:
    """How points are projected: --method, --dims, --seed and the t-SNE/UMAP settings (the kinds that project); t-SNE
    and UMAP fits show a ticking clock on standard error (--no-progress)."""
    return _stack(
        function,
        [
            option(METHOD_OPTION),
            option(DIMS_OPTION),
            option(SEED_OPTION),
            click.option("--perplexity", type=float, help="t-SNE perplexity (default min(30, (n - 1) / 3))"),
            option(PROJECTION_NEIGHBORS_OPTION),
            option(PROJECTION_METRIC_OPTION),
            progress_flag(),
        ],
    )


def point_flags(function: F) -> F:
    """How a projection's points are coloured and labelled (tokens, contextual)."""
    return _stack(
        function,
        [
            click.option("--color-by", metavar="COLUMN", help="metadata column that colours the points"),
            click.option("--label-by", metavar="COLUMN", help="metadata column written beside the points"),
            click.option(
                "--max-labels",
                type=int,
                default=60,
                show_default=True,
                help="PNG/SVG write labels only up to this many points",
            ),
        ],
    )


def projection_settings(
    call: Call, method: ProjectionMethod, perplexity: float | None, neighbors: int | None, metric: ProjectionMetric
) -> ProjectionSettings:
    """t-SNE/UMAP settings; an option the chosen method does not use is refused, not ignored."""
    from ..views.projection import ProjectionSettings

    if method != "tsne":
        call.applies_only(["--perplexity"], "with --method tsne")
    if method != "umap":
        call.applies_only(["--neighbors"], "with --method umap")
    if method == "pca":
        call.applies_only(["--seed", "--metric"], "with --method tsne or umap (PCA is exact and euclidean)")
    return ProjectionSettings(perplexity=perplexity, neighbors=neighbors, metric=metric)


def check_out(call: Call) -> None:
    """Refuse a bad --out, or drawing options without one, before any slow work (render checks again)."""
    params = call.ctx.params
    if params["out"] is None:
        call.applies_only([name for name in DRAWING if name in params], "with --out (a picture)")
        return
    from ..plots.files import check_target

    fmt, _ = check_target(Path(params["out"]), params["overwrite"])
    if fmt != "html":
        call.applies_only(["--html"], "with an .html --out")
    elif params["html"] != "svg":  # an interactive page takes the window's size
        call.applies_only(
            ["--width", "--height"], "with .png, .svg or --html svg (an interactive page fills the window)"
        )


def finish(call: Call, kind: str, data: Result) -> PlotResult:
    """Draw `data` when --out is given (the drawing options as the command line gave them); return the data with what
    was written."""
    from ..plots.render import PlotOptions, PlotResult, render

    params = call.ctx.params
    if params["out"] is None:
        return PlotResult(kind, data, None)
    options = PlotOptions(
        color_by=params.get("color_by"),
        label_by=params.get("label_by"),
        max_labels=params.get("max_labels", 60),
        title=params["title"],
        width=params["width"],
        height=params["height"],
        overwrite=params["overwrite"],
        html=params["html"],
    )
    return PlotResult(kind, data, render(data, Path(params["out"]), options))  # a Path: '--out png' is a file name
