"""How a picture looks: the drawing options, headings, colours (categories or a scale), palettes and axis names,
shared by every drawer in bertlens.plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..core.errors import InputError
from ..core.results import visible

if TYPE_CHECKING:
    from ..views.projection import Projection

# The matplotlib `Figure` a drawer draws on. Taken as Any: matplotlib's annotations give `add_subplot` 2-D axes (the
# 3-D scatters draw on Axes3D) and refuse coordinates passed as *args, so checking it would take a cast at every call.
MatplotlibFigure: TypeAlias = Any

MAX_CATEGORIES = 20  # colours with a legend entry each; past that, the most frequent are named and the rest "other"
CONTINUOUS_ABOVE = 12  # a numeric column with more distinct values than this gets a colour scale, not categories
HTML_KINDS = ("plotly", "svg")  # plotly: interactive, plotly.js inlined (~4.8 MB); svg: the picture (~50 KB)
# names of groups, never a scale
CATEGORICAL = ("sentence", "kind", "label", "word", "piece", "query", "unknown", "group", "theme")
OTHER_COLOUR = "#b0b0b0"  # the "other" category past MAX_CATEGORIES


@dataclass(frozen=True)
class PlotOptions:
    """How a picture is drawn. None picks the default written beside the field.

    >>> options = PlotOptions(color_by="kind", max_labels=20, title="Royals", overwrite=True)
    >>> render(project_tokens(load_model(), ["king", "queen", "man", "woman"]), "royals.png", options).format
    'png'
    """

    color_by: str | None = None  # metadata column that colours the points (None: a sensible one per result)
    label_by: str | None = None  # metadata column written beside the points (None: the points' labels)
    max_labels: int = 60  # PNG/SVG write text labels only when there are at most this many points (HTML: on hover)
    title: str | None = None  # heading (None: the result's own)
    width: float = 9.0  # inches for PNG/SVG (an SVG-in-HTML page at most this wide); plotly HTML fills the window
    height: float = (
        6.5  # inches for PNG/SVG (explanations grow with the number of tokens); plotly HTML fills the window
    )
    dpi: int = 150  # PNG resolution
    overwrite: bool = False  # replace an existing file
    html: str = "plotly"  # what an HTML file holds: HTML_KINDS (plotly: interactive, fills the window)


def figure_title(result_title: str, options: PlotOptions) -> str:
    """The heading to draw: `options.title` when given, else the result's own `result_title`."""
    return options.title if options.title is not None else result_title


def short(text: str, width: int = 48) -> str:
    """`text` with invisible characters shown, cut to `width` characters (an ellipsis marks the cut)."""
    text = visible(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def escape_html(text: str) -> str:
    """`text` safe inside plotly's HTML labels: &, < and > escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- colours -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Colours:
    """How points are coloured: by a numeric scale (`continuous`), by categories (`codes`), or not at all."""

    column: str | None
    continuous: np.ndarray | None  # (n,) float values for a colour scale
    categories: tuple[str, ...]  # category names, in first-seen order (the last is "other …" when `other`)
    codes: np.ndarray | None  # (n,) int index into categories
    other: bool = False  # more than MAX_CATEGORIES values: the last category gathers the least frequent, in grey

    def palette(self) -> list[str]:
        """One colour per category: tab10/tab20, and grey for "other"."""
        colours = palette_for(len(self.categories))
        if self.other:
            colours[-1] = OTHER_COLOUR
        return colours


def choose_colours(metadata: dict[str, tuple], column: str | None, n: int, notes: list[str]) -> Colours:
    """The colouring of `n` points by metadata `column`: a scale for a numeric column with many values (unless the
    column names groups: `CATEGORICAL`), else categories in first-seen (numbers: sorted) order, each with a legend
    entry; past `MAX_CATEGORIES` values the most frequent are named and the rest gathered as "other" (with a note).
    """
    if column is None:
        return Colours(None, None, (), None)
    if column not in metadata:
        available = ", ".join(metadata) or "none"
        raise InputError(f"No metadata column {column!r} to colour by.", f"Columns: {available}.")
    values = metadata[column]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if numeric and column not in CATEGORICAL and len(set(values)) > CONTINUOUS_ABOVE:
        return Colours(column, np.asarray(values, dtype=np.float64), (), None)
    names = ["-" if v is None else str(v) for v in values]
    order = sorted(set(names), key=names.index) if not numeric else [str(v) for v in sorted(set(values))]
    if column == "theme":  # "theme 0: …", "theme 1: …": in their own order, the largest first
        order = sorted(order, key=lambda name: int(name.split(":")[0].split()[-1]) if name[:6] == "theme " else 0)
    if len(order) <= MAX_CATEGORIES:
        index = {name: i for i, name in enumerate(order)}
        return Colours(column, None, tuple(order), np.array([index[name] for name in names], dtype=np.int64))
    counts = {name: names.count(name) for name in order}
    named = sorted(order, key=lambda name: -counts[name])[:MAX_CATEGORIES]  # stable: ties keep their order
    named = [name for name in order if name in set(named)]
    rest = len(order) - len(named)
    notes.append(
        f"{len(order)} values of {column!r}: the {MAX_CATEGORIES} most frequent are named, the other {rest} are grey."
    )
    index = {name: i for i, name in enumerate(named)}
    codes = np.array([index.get(name, len(named)) for name in names], dtype=np.int64)
    return Colours(column, None, (*named, f"other ({rest} values)"), codes, other=True)


def palette_for(count: int) -> list[str]:
    """`count` hex colours from matplotlib's tab10 (up to 10) or tab20, repeating past 20."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    size = 10 if count <= 10 else 20
    return [to_hex(cmap(i % size)) for i in range(max(count, 1))]


def point_labels(projection: Projection, column: str | None) -> tuple[str, ...]:
    """The text beside each point: the projection's labels, or the values of metadata `column`."""
    if column is None:
        labels: tuple[str, ...] = projection.labels
        return labels
    if column not in projection.metadata:
        available = ", ".join(projection.metadata) or "none"
        raise InputError(f"No metadata column {column!r} to label by.", f"Columns: {available}.")
    return tuple("" if v is None else str(v) for v in projection.metadata[column])


def default_colour(projection: Projection) -> str | None:
    """The column to colour by when none is asked for: the first of group, theme, label, sentence, layer, kind that
    varies."""
    for column in ("group", "theme", "label", "sentence", "layer", "kind"):
        values = projection.metadata.get(column)
        if values is not None and len(set(values)) > 1:
            return column
    return None


def axis_names(method: str, explained: tuple[float, ...] | None, dims: int) -> list[str]:
    """Axis titles: PC1, t-SNE 1, UMAP 1, …, with PCA's explained variance per axis when known."""
    name = {"pca": "PC", "tsne": "t-SNE ", "umap": "UMAP "}.get(method, method)
    names = [f"{name}{i + 1}" for i in range(dims)]
    if explained is not None:
        names = [f"{n} ({100 * e:.1f}%)" for n, e in zip(names, explained, strict=True)]
    return names


# --- text inside the picture ---------------------------------------------------------------------------------------


def keep_inside(ax: Any, texts: list[Any], pad: float = 4.0) -> None:
    """Widen the limits of a 2-D `ax` until every text in `texts` (drawn at data points) lies inside the axes, `pad`
    pixels from the edge: a label beside the outermost point is never cut. The figure needs a canvas (Agg)."""
    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if not texts:
        return
    figure = ax.figure
    for _ in range(4):  # each pass widens by what is missing at the current scale; the scale shrinks as it widens
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        box = ax.get_window_extent(renderer)
        extents = [t.get_window_extent(renderer) for t in texts]
        left = max(0.0, box.x0 + pad - min(e.x0 for e in extents))
        right = max(0.0, max(e.x1 for e in extents) - (box.x1 - pad))
        below = max(0.0, box.y0 + pad - min(e.y0 for e in extents))
        above = max(0.0, max(e.y1 for e in extents) - (box.y1 - pad))
        if left + right + below + above < 0.5:
            return
        x0, x1 = ax.get_xlim()
        y0, y1 = ax.get_ylim()
        per_x, per_y = (x1 - x0) / max(box.width, 1.0), (y1 - y0) / max(box.height, 1.0)  # data units per pixel
        ax.set_xlim(x0 - 1.2 * left * per_x, x1 + 1.2 * right * per_x)
        ax.set_ylim(y0 - 1.2 * below * per_y, y1 + 1.2 * above * per_y)


def hide_overlaps(figure: MatplotlibFigure, texts: list[Any]) -> int:
    """Hide each text that overlaps one kept before it (`texts` in order of importance); returns how many were
    hidden. The figure needs a canvas (Agg)."""
    from matplotlib.transforms import Bbox

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    kept: list[Any] = []
    hidden = 0
    for text in texts:
        extent = text.get_window_extent(renderer)
        if hasattr(text, "get_position_3d"):  # a 3-D text knows its place on screen only while drawn: project it
            from mpl_toolkits.mplot3d import proj3d  # type: ignore[import-untyped]

            ax = text.axes
            x, y, _ = proj3d.proj_transform(*text.get_position_3d(), ax.get_proj())
            left, bottom = ax.transData.transform((x, y))
            extent = Bbox.from_bounds(left, bottom, extent.width, extent.height)
        if any(extent.overlaps(other) for other in kept):
            text.set_visible(False)
            hidden += 1
        else:
            kept.append(extent)
    return hidden


def luminance(colour: Any) -> float:
    """The relative luminance (WCAG 2) of a matplotlib colour: 0 for black, 1 for white."""
    from matplotlib.colors import to_rgb

    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast(one: Any, two: Any) -> float:
    """The WCAG contrast ratio of two colours: 1 (the same) to 21 (black on white)."""
    a, b = sorted((luminance(one), luminance(two)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def text_colour(background: Any) -> str:
    """Black or white, whichever reads better on `background` (the higher contrast ratio)."""
    return "#000000" if contrast("#000000", background) >= contrast("#ffffff", background) else "#ffffff"


def readable(colour: Any, against: Any = "#ffffff", ratio: float = 4.5) -> str:
    """`colour` darkened (mixed with black) just enough that text in it reads on `against`: a contrast of `ratio`
    (WCAG AA for normal text), so a label keeps its series' hue."""
    from matplotlib.colors import to_hex, to_rgb

    rgb = np.array(to_rgb(colour))
    for step in range(21):
        mixed = rgb * (1 - step / 20)
        if contrast(mixed, against) >= ratio:
            return to_hex((float(mixed[0]), float(mixed[1]), float(mixed[2])))
    return "#000000"


def place_apart(figure: MatplotlibFigure, texts: list[Any]) -> None:
    """Move each annotation (a text offset in points from its data point) that overlaps one placed before it to the
    first of the other sides of its point (below, left, below-left) where it overlaps none; one that fits nowhere
    stays. The figure needs a canvas (Agg)."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    placed: list[Any] = []
    for text in texts:
        dx, dy = text.xyann
        width = text.get_window_extent(renderer).width * 72 / figure.dpi  # points
        for offset in ((dx, dy), (dx, -dy - 9), (-dx - width, dy), (-dx - width, -dy - 9)):
            text.xyann = offset
            extent = text.get_window_extent(renderer)
            if not any(extent.overlaps(other) for other in placed):
                break
        else:
            text.xyann = (dx, dy)
            extent = text.get_window_extent(renderer)
        placed.append(extent)
