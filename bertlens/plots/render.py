"""Pictures of bertlens results: PNG and SVG (matplotlib) and self-contained interactive HTML (plotly).

`render(result, target)` draws a `Projection` (bertlens.views.projection), a `Trajectory` (bertlens.views.trajectory),
a `PositionSimilarity` (bertlens.embeddings.positions), an `EmbeddingLayerExplanation` (bertlens.embeddings.layer), a
`Contextuality` (bertlens.contextual.contextuality), a `ContextComparison` (bertlens.contextual.context), a
`SensesResult` (bertlens.senses) or a `SpaceDiff` (bertlens.spaces). It only draws: the numbers come from those
functions.

This module holds `render`, its results (`Rendered`, `PlotResult`) and the switch from a result's type to its
drawers, one module per kind: plots.projection, plots.trajectory, plots.positions, plots.layer (the embedding layer),
plots.contextual (per-layer curves), plots.senses and plots.spaces (two spaces side by side). `PlotOptions` and the
shared colours are in plots.style, the target checks and the atomic writing in plots.files.

- matplotlib is used through `Figure` objects and the Agg canvas, never pyplot: no global backend or state changes;
- HTML is self-contained and fetches nothing: an interactive plotly figure (hover, zoom, rotate in 3-D) that fills the
  window and follows its size, with plotly.js inlined from the installed plotly package (~4.8 MB: the package ships
  no smaller bundle). `PlotOptions(html="svg")` writes the static picture in a page instead (~50 KB);
- files are written to a temporary file beside the target and renamed into place (never half-written); an existing
  file is replaced only when `overwrite` is set.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core import notebook
from ..core.errors import InputError
from ..core.extras import require
from ..core.results import Result, box
from . import contextual, layer, positions, projection, senses, spaces, trajectory
from .files import check_target, write
from .style import HTML_KINDS, PlotOptions

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

__all__ = ["PlotOptions", "PlotResult", "Rendered", "render"]


@dataclass(frozen=True, repr=False)
class Rendered(Result):
    """A picture: where it was written (None when only the bytes were asked for), its format and size.

    >>> picture = render(project_tokens(load_model(), ["king", "queen", "man"]), "png")
    >>> picture.format, picture.path
    ('png', None)
    """

    kind: (
        str  # what was drawn: projection, trajectory, positions, embedding-layer, contextuality, context, senses, diff
    )
    format: str  # png, svg or html
    path: str | None  # the file written, or None
    size: int  # bytes
    notes: tuple[str, ...]  # choices made while drawing that the reader should know about
    content: bytes = field(default=b"", repr=False)  # the picture itself (left out of to_dict)

    def __repr__(self) -> str:
        return f"Rendered({self.kind}, {self.format}, {self.size:,} bytes{', ' + self.path if self.path else ''})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "format": self.format,
            "path": self.path,
            "size": self.size,
            "notes": list(self.notes),
        }

    def to_table(self) -> str:
        where = f"Wrote {self.path}" if self.path else "Drew"
        lines = [f"{where} ({self.format}, {self.size:,} bytes): {self.kind}."]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def _repr_html_(self) -> str:
        """In a notebook the picture itself, inline (PNG or SVG as an image, HTML in a sandboxed frame), with notes."""
        if not self.content:
            return super()._repr_html_()
        notes = notebook.listed(self.notes)
        return box(
            f"Rendered {self.kind}",
            f'<div class="bl-picture">{notebook.picture(self.format, self.content)}</div>{notes}',
            notebook.STYLE,
        )

    def _repr_png_(self) -> bytes | None:  # for front ends that show images but not HTML
        return self.content if self.format == "png" and self.content else None

    def _repr_svg_(self) -> str | None:
        return self.content.decode("utf-8") if self.format == "svg" and self.content else None


@dataclass(frozen=True, repr=False)
class PlotResult(Result):
    """What `bertlens plot` returns: the data drawn (a projection, explanation, …) and the file written, if any."""

    kind: str  # tokens, contextual, trajectory, positions, embedding-layer, context, contextuality
    data: Result  # the library result the picture shows (its to_dict() is the JSON under "data")
    file: Rendered | None  # None when no --out was given

    def __repr__(self) -> str:
        return f"PlotResult({self.kind}, {self.file!r})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "data": self.data.to_dict(),
            "file": None if self.file is None else self.file.to_dict(),
        }

    def to_table(self) -> str:
        tail = self.file.to_table() if self.file else "Nothing drawn: add --out FILE.png, .svg or .html to draw it."
        return f"{self.data.to_table()}\n\n{tail}"


def render(
    result: object,
    target: str | os.PathLike[str],
    options: PlotOptions = PlotOptions(),  # noqa: B008 - frozen dataclass
) -> Rendered:
    """Draw `result` as PNG, SVG or HTML.

    `target` is a file path whose suffix picks the format (.png, .svg, .html), written atomically and never over an
    existing file unless `options.overwrite`; or just a format name ("png", "svg", "html"), and then nothing is
    written: the picture is in `Rendered.content`.

    >>> points = project_tokens(load_model(), ["king", "queen", "man", "woman"])
    >>> render(points, "royals.svg", PlotOptions(color_by="kind")).path
    'royals.svg'
    >>> picture = render(points, "png")  # only the bytes, no file
    >>> picture.content[:4]
    b'\x89PNG'
    """
    fmt, path = check_target(target, options.overwrite)
    kind, draw_static, draw_html = _drawer(result)
    _check_options(options)
    require("matplotlib", extra="plots")  # every picture's colours, and PNG and SVG
    if fmt == "html" and options.html != "svg":
        require("plotly", extra="plots", otherwise="write PNG or SVG")
    notes: list[str] = []
    if fmt == "html" and options.html == "svg":
        content = _svg_page(_static(draw_static, result, options, notes, "svg"), kind)
        notes.append(
            f"HTML: the picture as SVG in a page ({len(content) // 1024:,} KB); --html plotly for hover and zoom."
        )
    elif fmt == "html":
        content = _html(draw_html(result, options, notes), options)
    else:
        content = _static(draw_static, result, options, notes, fmt)
    if path is not None:
        write(content, path, options.overwrite)
    return Rendered(kind, fmt, None if path is None else str(path), len(content), tuple(notes), content)


def _check_options(options: PlotOptions) -> None:
    for name in ("width", "height"):
        value = getattr(options, name)
        if not isinstance(value, (int, float)) or not 1 <= value <= 100:
            raise InputError(
                f"The picture's {name} must be 1 to 100 inches, got {value!r}.", f"Example: {name}=8 (--{name} 8)."
            )
    if not isinstance(options.dpi, int) or not 20 <= options.dpi <= 1200:
        raise InputError(
            f"dpi must be an integer from 20 to 1200, got {options.dpi!r}.", "Example: dpi=150 (the default)."
        )
    if options.html not in HTML_KINDS:
        raise InputError(
            f"Unknown HTML kind {options.html!r}.",
            "Choose plotly (interactive, ~4.8 MB) or svg (the static picture in a page, ~50 KB).",
        )
    if not isinstance(options.max_labels, int) or options.max_labels < 0:
        raise InputError(
            f"max_labels must be a non-negative integer, got {options.max_labels!r}.",
            "Example: {max_labels} (0 draws no labels).",
            arguments={"max_labels": 60},
        )


def _drawer(result: object) -> tuple[str, Callable[..., None], Callable[..., PlotlyFigure]]:
    from ..contextual.context import ContextComparison
    from ..contextual.contextuality import Contextuality
    from ..embeddings.layer import EmbeddingLayerExplanation
    from ..embeddings.positions import PositionSimilarity
    from ..senses.senses import SensesResult
    from ..spaces.diff_results import SpaceDiff
    from ..views.projection import Projection
    from ..views.trajectory import Trajectory

    drawers: list[tuple[type, str, Callable[..., None], Callable[..., PlotlyFigure]]] = [
        (Projection, "projection", projection.projection_static, projection.projection_html),
        (Trajectory, "trajectory", trajectory.trajectory_static, trajectory.trajectory_html),
        (PositionSimilarity, "positions", positions.positions_static, positions.positions_html),
        (EmbeddingLayerExplanation, "embedding-layer", layer.explain_static, layer.explain_html),
        (Contextuality, "contextuality", contextual.contextuality_static, contextual.contextuality_html),
        (ContextComparison, "context", contextual.context_static, contextual.context_html),
        (SensesResult, "senses", senses.senses_static, senses.senses_html),
        (SpaceDiff, "diff", spaces.spaces_static, spaces.spaces_html),
    ]
    for kind, name, static, html in drawers:
        if isinstance(result, kind):
            return name, static, html
    names = ", ".join(k.__name__ for k, *_ in drawers)
    raise InputError(f"bertlens cannot draw a {type(result).__name__}.", f"It draws: {names}.")


# --- backends ------------------------------------------------------------------------------------------------------


def _static(draw: Callable[..., None], result: object, options: PlotOptions, notes: list[str], fmt: str) -> bytes:
    """Draw with matplotlib on a private Figure (Agg canvas, no pyplot) and save it as PNG or SVG bytes."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # rc_context restores every setting afterwards: the caller's matplotlib is left as it was.
    with matplotlib.rc_context({"svg.hashsalt": "bertlens", "svg.fonttype": "path"}), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a glyph missing from the bundled font for an emoji label
        figure = Figure(figsize=(options.width, options.height), layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure, result, options, notes)
        buffer = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": "bertlens"}
        figure.savefig(buffer, format=fmt, dpi=options.dpi, metadata=metadata)
    return buffer.getvalue()


def _svg_page(svg: bytes, kind: str) -> bytes:
    """The SVG picture in a complete, responsive HTML page (as wide as the window, never wider than drawn)."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]  # without the XML declaration and doctype
    opening = text[: text.index(">") + 1]
    width = re.search(r'\swidth="([\d.]+)pt"', opening)
    bare = re.sub(r'\s(width|height)="[^"]*"', "", opening, count=2)
    widest = f"max-width:{float(width.group(1)) * 4 / 3:.0f}px;" if width else ""
    text = bare.replace("<svg", f'<svg style="width:100%;height:auto;{widest}display:block"', 1) + text[len(opening) :]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>bertlens: {kind}</title>\n"
        "<style>body{margin:0;background:#fff}#bertlens-plot{margin:0 auto;padding:8px;box-sizing:border-box}</style>\n"
        f'</head>\n<body>\n<div id="bertlens-plot">\n{text}\n</div>\n</body>\n</html>\n'
    )
    return page.encode("utf-8")


# The page fills the window and the figure follows it (plotly's responsive mode redraws on every resize); a figure
# never shrinks below what its labels need (MIN_HEIGHT pixels, or the height it asks for), the page scrolls instead.
PAGE_STYLE = "html,body{margin:0;padding:0;height:100%;background:#fff}"
MIN_HEIGHT = 480


def _html(figure: PlotlyFigure, options: PlotOptions) -> bytes:
    """A complete HTML page with plotly.js inlined from the installed package: no CDN, nothing fetched. The figure
    fills the window (width and height) and follows it when the window is resized."""
    asked = figure.layout.height  # a drawer that needs room (a heat map per token) sets its height
    least = max(MIN_HEIGHT, int(asked)) if asked else MIN_HEIGHT
    figure.update_layout(height=None, width=None, template="plotly_white", autosize=True)
    page = figure.to_html(
        include_plotlyjs=True,
        full_html=True,
        div_id="bertlens-plot",
        default_width="100%",
        default_height="100vh",
        config={"displaylogo": False, "responsive": True},
    )
    page = page.replace(
        "<head>",
        f'<head>\n<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"\n<style>{PAGE_STYLE}#bertlens-plot{{min-height:{least}px}}</style>",
        1,
    )
    if re.search(r"<script[^>]*\ssrc=|<link[^>]*\shref=[\"']?https?:", page, re.IGNORECASE):  # pragma: no cover
        raise RuntimeError("plotly wrote a page that loads an external script")
    data: bytes = page.encode("utf-8")
    return data
