"""What every `bertlens plot` kind shares: where and how its picture is drawn (--out and the drawing flags, checked
before any slow work), how its points are projected (t-SNE and UMAP settings, refused where the method ignores them),
coloured and labelled; and the result drawn once it is computed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

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
from .common import FlagParser, add_option, add_progress, only_with, value_of

if TYPE_CHECKING:
    from ..core.results import Result
    from ..plots.render import PlotResult
    from ..views.projection import ProjectionSettings


def draw_options() -> FlagParser:
    """Where and how a picture is drawn: --out, --overwrite, --title, --width, --height, --html (every kind)."""
    draw = FlagParser(add_help=False)
    add_option(
        draw,
        OUT_OPTION,
        metavar="FILE",
        help="the picture to write: .png, .svg or .html (interactive, fills the window)",
    )
    add_option(draw, OVERWRITE_OPTION, help="replace --out if it exists")
    draw.add_argument("--title", help="a heading instead of the default one")
    draw.add_argument("--width", type=float, help="inches for .png and .svg (default 9; an HTML page fills the window)")
    draw.add_argument("--height", type=float, help="inches for .png and .svg (default 6.5)")
    draw.add_argument(
        "--html",
        choices=HTML_KINDS,
        help="what an .html file holds: plotly (default: interactive, hover, zoom, rotate in 3-D; fills the window "
        "and follows its size; plotly.js inlined, ~4.8 MB, works offline), svg (the static picture in a page, ~50 KB)",
    )
    return draw


def projection_options() -> FlagParser:
    """How points are projected: --method, --dims, --seed and the t-SNE/UMAP settings (the kinds that project)."""
    projection = FlagParser(add_help=False)
    for option in (METHOD_OPTION, DIMS_OPTION, SEED_OPTION):
        add_option(projection, option)
    projection.add_argument("--perplexity", type=float, help="t-SNE perplexity (default min(30, (n - 1) / 3))")
    add_option(projection, PROJECTION_NEIGHBORS_OPTION)
    add_option(projection, PROJECTION_METRIC_OPTION)
    add_progress(projection)  # t-SNE and UMAP fits show a ticking clock on standard error
    return projection


def point_options() -> FlagParser:
    """How a projection's points are coloured and labelled (tokens, contextual)."""
    points = FlagParser(add_help=False)
    points.add_argument("--color-by", metavar="COLUMN", help="metadata column that colours the points")
    points.add_argument("--label-by", metavar="COLUMN", help="metadata column written beside the points")
    points.add_argument("--max-labels", type=int, help="PNG/SVG write labels only up to this many points (default 60)")
    return points


DRAWING = ["--overwrite", "--title", "--width", "--height", "--html", "--color-by", "--label-by", "--max-labels"]


def projection_settings(args: argparse.Namespace) -> ProjectionSettings:
    """t-SNE/UMAP settings; an option the chosen method does not use is refused, not ignored."""
    from ..views.projection import ProjectionSettings

    if args.method != "tsne":
        only_with(args, ["--perplexity"], "with --method tsne")
    if args.method != "umap":
        only_with(args, ["--neighbors"], "with --method umap")
    if args.method == "pca":
        only_with(args, ["--seed", "--metric"], "with --method tsne or umap (PCA is exact and euclidean)")
    return ProjectionSettings(
        perplexity=args.perplexity, neighbors=args.neighbors, metric=value_of(args, PROJECTION_METRIC_OPTION)
    )


def finish(kind: str, data: Result, args: argparse.Namespace) -> PlotResult:
    """Draw `data` when --out is given; return the data with what was written."""
    from ..plots.render import PlotOptions, PlotResult, render

    if args.out is None:
        return PlotResult(kind, data, None)
    options = PlotOptions(
        color_by=getattr(args, "color_by", None),
        label_by=getattr(args, "label_by", None),
        max_labels=60 if getattr(args, "max_labels", None) is None else args.max_labels,
        title=args.title,
        width=9.0 if args.width is None else args.width,
        height=6.5 if args.height is None else args.height,
        overwrite=args.overwrite,
        html=args.html or "plotly",
    )
    return PlotResult(kind, data, render(data, Path(args.out), options))  # a Path: '--out png' is a file name


def check_out(args: argparse.Namespace) -> None:
    """Refuse a bad --out, or drawing options without one, before any slow work (render checks again)."""
    if args.out is None:
        only_with(args, [o for o in DRAWING if hasattr(args, o[2:].replace("-", "_"))], "with --out (a picture)")
        return
    from ..plots.files import check_target

    fmt, _ = check_target(Path(args.out), args.overwrite)
    if fmt != "html":
        only_with(args, ["--html"], "with an .html --out")
    elif args.html != "svg":  # an interactive page takes the window's size
        only_with(args, ["--width", "--height"], "with .png, .svg or --html svg (an interactive page fills the window)")
