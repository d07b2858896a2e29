"""Pictures of bertlens results: PNG and SVG (matplotlib) and self-contained interactive HTML (plotly).

`render(result, target)` draws a `Projection`, `Trajectory`, `PositionSimilarity` (bertlens.views.projection), an
`EmbeddingLayerExplanation` (bertlens.embeddings.layer), a `Contextuality` (bertlens.contextual.contextuality) or
a `ContextComparison` (bertlens.contextual.context). It only draws: the numbers come from those functions.

- matplotlib is used through `Figure` objects and the Agg canvas, never pyplot: no global backend or state changes;
- the HTML inlines plotly.js from the installed plotly package: it opens offline and fetches nothing;
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
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.options import PLOT_FORMATS
from ..core.outputs import atomic_file, folder_for
from ..core.results import Result, visible

SUFFIXES = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html"}
MAX_CATEGORIES = 20  # colours with a legend entry each; a column with more values is coloured without a legend
CONTINUOUS_ABOVE = 12  # a numeric column with more distinct values than this gets a colour scale, not categories
WEBGL_ABOVE = 5000  # HTML scatters with more points use WebGL (plotly Scattergl)


@dataclass(frozen=True)
class PlotOptions:
    """How a picture is drawn. None picks the default written beside the field."""

    color_by: str | None = None  # metadata column that colours the points (None: a sensible one per result)
    label_by: str | None = None  # metadata column written beside the points (None: the points' labels)
    max_labels: int = 60  # PNG/SVG write text labels only when there are at most this many points (HTML: on hover)
    title: str | None = None  # heading (None: the result's own)
    width: float = 9.0  # inches for PNG/SVG; HTML uses 100 pixels per inch
    height: float = 6.5  # inches (explanations grow with the number of tokens)
    dpi: int = 150  # PNG resolution
    overwrite: bool = False  # replace an existing file


@dataclass(frozen=True, repr=False)
class Rendered(Result):
    """A picture: where it was written (None when only the bytes were asked for), its format and size."""

    kind: str  # what was drawn: projection, trajectory, positions, embedding-layer, contextuality, context
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


def render(result: Any, target: str | os.PathLike[str], options: PlotOptions = PlotOptions()) -> Rendered:
    """Draw `result` as PNG, SVG or HTML.

    `target` is a file path whose suffix picks the format (.png, .svg, .html), written atomically and never over an
    existing file unless `options.overwrite`; or just a format name ("png", "svg", "html"), and then nothing is
    written: the picture is in `Rendered.content`.
    """
    fmt, path = check_target(target, options.overwrite)
    kind, draw_static, draw_html = _drawer(result)
    _check_options(options)
    notes: list[str] = []
    if fmt == "html":
        content = _html(draw_html(result, options, notes), options)
    else:
        content = _static(draw_static, result, options, notes, fmt)
    if path is not None:
        _write(content, path, options.overwrite)
    return Rendered(kind, fmt, None if path is None else str(path), len(content), tuple(notes), content)


# --- targets and files ---------------------------------------------------------------------------------------------


def check_target(target: str | os.PathLike[str], overwrite: bool) -> tuple[str, Path | None]:
    """The format and file a target means (None for a bare format name); refuses an existing file unless overwrite."""
    if isinstance(target, str) and target.lower().lstrip(".") in PLOT_FORMATS and not os.path.splitext(target)[1]:
        return target.lower().lstrip("."), None
    if not isinstance(target, (str, os.PathLike)) or not str(target).strip():
        raise InputError(f"Expected a file path or a format name, got {target!r}.", "Example: tokens.png")
    path = Path(target).expanduser()
    if path.is_dir():
        raise InputError(f"{path} is a directory.", "Give a file name, e.g. plot.png.")
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        what = f"the suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise InputError(
            f"Cannot draw to {path}: {what} is not a picture format bertlens writes.",
            "End the file name in .png, .svg or .html (interactive, self-contained).",
        )
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; it was left as it is.", "Choose another name, or pass --overwrite.")
    return fmt, path


def _write(content: bytes, path: Path, overwrite: bool) -> None:
    """Write `content` into a staged file beside `path`, moved in when complete (replacing only if `overwrite`);
    folders made for it are removed again if the write fails."""
    try:
        with folder_for(path.parent):
            try:
                with atomic_file(path, overwrite=overwrite) as out:
                    out.write(content)
            except FileExistsError:
                raise InputError(f"{path} appeared while drawing; it was left as it is.", "Pass --overwrite.") from None
    except OSError as exc:
        raise InputError(
            f"Cannot write {path}: {exc.strerror or exc}.", "Choose a folder you can write to, with free space."
        ) from None


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
    if not isinstance(options.max_labels, int) or options.max_labels < 0:
        raise InputError(
            f"max_labels must be a non-negative integer, got {options.max_labels!r}.",
            "Example: max_labels=60 (--max-labels 60; 0 draws no labels).",
        )


def _drawer(result: Any) -> tuple[str, Callable[..., None], Callable[..., Any]]:
    from ..contextual.context import ContextComparison
    from ..contextual.contextuality import Contextuality
    from ..embeddings.layer import EmbeddingLayerExplanation
    from ..views.projection import PositionSimilarity, Projection, Trajectory

    drawers: list[tuple[type, str, Callable[..., None], Callable[..., Any]]] = [
        (Projection, "projection", _projection_static, _projection_html),
        (Trajectory, "trajectory", _trajectory_static, _trajectory_html),
        (PositionSimilarity, "positions", _positions_static, _positions_html),
        (EmbeddingLayerExplanation, "embedding-layer", _explain_static, _explain_html),
        (Contextuality, "contextuality", _contextuality_static, _contextuality_html),
        (ContextComparison, "context", _context_static, _context_html),
    ]
    for kind, name, static, html in drawers:
        if isinstance(result, kind):
            return name, static, html
    names = ", ".join(k.__name__ for k, *_ in drawers)
    raise InputError(f"bertlens cannot draw a {type(result).__name__}.", f"It draws: {names}.")


# --- backends ------------------------------------------------------------------------------------------------------


def _static(draw: Callable[..., None], result: Any, options: PlotOptions, notes: list[str], fmt: str) -> bytes:
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


def _html(figure: Any, options: PlotOptions) -> bytes:
    """A complete HTML page with plotly.js inlined from the installed package: no CDN, nothing fetched."""
    height = figure.layout.height or int(options.height * 100)
    figure.update_layout(width=int(options.width * 100), height=height, template="plotly_white", autosize=False)
    page = figure.to_html(
        include_plotlyjs=True,
        full_html=True,
        div_id="bertlens-plot",
        config={"displaylogo": False, "responsive": True},
    )
    if re.search(r"<script[^>]*\ssrc=|<link[^>]*\shref=[\"']?https?:", page, re.IGNORECASE):  # pragma: no cover
        raise RuntimeError("plotly wrote a page that loads an external script")
    return page.encode("utf-8")


def _title(result_title: str, options: PlotOptions) -> str:
    return options.title if options.title is not None else result_title


def _short(text: str, width: int = 48) -> str:
    text = visible(text)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- colours -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Colours:
    column: str | None
    continuous: np.ndarray | None  # (n,) float values for a colour scale
    categories: tuple[str, ...]  # category names, in first-seen order
    codes: np.ndarray | None  # (n,) int index into categories


def _colours(metadata: dict[str, tuple], column: str | None, n: int, notes: list[str]) -> _Colours:
    if column is None:
        return _Colours(None, None, (), None)
    if column not in metadata:
        available = ", ".join(metadata) or "none"
        raise InputError(f"No metadata column {column!r} to colour by.", f"Columns: {available}.")
    values = metadata[column]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if numeric and len(set(values)) > CONTINUOUS_ABOVE:
        return _Colours(column, np.asarray(values, dtype=np.float64), (), None)
    names = ["-" if v is None else str(v) for v in values]
    order = sorted(set(names), key=names.index) if not numeric else [str(v) for v in sorted(set(values))]
    index = {name: i for i, name in enumerate(order)}
    if len(order) > MAX_CATEGORIES:
        notes.append(
            f"{len(order)} values of {column!r}: colours repeat and only the first {MAX_CATEGORIES} are named."
        )
    return _Colours(column, None, tuple(order), np.array([index[name] for name in names], dtype=np.int64))


def _palette(count: int) -> list[str]:
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab10" if count <= 10 else "tab20"]
    size = 10 if count <= 10 else 20
    return [to_hex(cmap(i % size)) for i in range(max(count, 1))]


def _labels(projection: Any, column: str | None) -> tuple[str, ...]:
    if column is None:
        return projection.labels
    if column not in projection.metadata:
        available = ", ".join(projection.metadata) or "none"
        raise InputError(f"No metadata column {column!r} to label by.", f"Columns: {available}.")
    return tuple("" if v is None else str(v) for v in projection.metadata[column])


def _default_colour(projection: Any) -> str | None:
    for column in ("label", "sentence", "layer", "kind"):
        values = projection.metadata.get(column)
        if values is not None and len(set(values)) > 1:
            return column
    return None


def _axis_names(method: str, explained: tuple[float, ...] | None, dims: int) -> list[str]:
    name = {"pca": "PC", "tsne": "t-SNE ", "umap": "UMAP "}.get(method, method)
    names = [f"{name}{i + 1}" for i in range(dims)]
    if explained is not None:
        names = [f"{n} ({100 * e:.1f}%)" for n, e in zip(names, explained, strict=True)]
    return names


# --- projection ----------------------------------------------------------------------------------------------------


def _projection_static(figure: Any, projection: Any, options: PlotOptions, notes: list[str]) -> None:
    from ..views.projection import describe

    points, n = projection.points, len(projection)
    colours = _colours(projection.metadata, options.color_by or _default_colour(projection), n, notes)
    labels = _labels(projection, options.label_by)
    ax = figure.add_subplot(projection="3d" if projection.dims == 3 else None)
    coords = [points[:, i] for i in range(projection.dims)]
    size = 14 if n <= 2000 else 4 if n <= 20000 else 1.5
    if colours.continuous is not None:
        drawn = ax.scatter(*coords, c=colours.continuous, cmap="viridis", s=size, linewidths=0)
        figure.colorbar(drawn, ax=ax, label=colours.column, shrink=0.8)
    elif colours.codes is not None:
        palette = _palette(len(colours.categories))
        for code, name in enumerate(colours.categories):
            keep = colours.codes == code
            label = _short(name, 30) if code < MAX_CATEGORIES else None
            ax.scatter(*(c[keep] for c in coords), color=palette[code], s=size, linewidths=0, label=label)
        ax.legend(title=colours.column, fontsize=7, title_fontsize=8, loc="best", markerscale=1.5)
    else:
        ax.scatter(*coords, s=size, linewidths=0, color="#1f77b4")
    if n <= options.max_labels:
        for i in range(n):
            ax.text(*(float(c[i]) for c in coords), " " + visible(labels[i]), fontsize=7)
    elif options.max_labels:
        notes.append(f"{n:,} points: text labels left out (more than {options.max_labels}); the HTML shows them.")
    axes = _axis_names(projection.method, projection.explained, projection.dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if projection.dims == 3:
        ax.set_zlabel(axes[2])
    figure.suptitle(_title(projection.title, options), fontsize=10)
    ax.set_title(
        describe(projection.method, projection.dims, n, projection.explained, projection.parameters), fontsize=8
    )


def _hover(projection: Any) -> list[str]:
    columns = list(projection.metadata)
    escape = _escape_html
    return [
        f"<b>{escape(projection.labels[i])}</b>"
        + "".join(f"<br>{escape(c)}: {escape(str(projection.metadata[c][i]))}" for c in columns)
        for i in range(len(projection))
    ]


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _projection_html(projection: Any, options: PlotOptions, notes: list[str]) -> Any:
    import plotly.graph_objects as go

    from ..views.projection import describe

    n, dims = len(projection), projection.dims
    colours = _colours(projection.metadata, options.color_by or _default_colour(projection), n, notes)
    labels = _labels(projection, options.label_by)
    hover = np.array(_hover(projection), dtype=object)
    points = projection.points.astype(np.float64)
    show_text = n <= options.max_labels
    text = np.array([visible(label) for label in labels], dtype=object)
    mode = "markers+text" if show_text else "markers"
    size = 7 if n <= 2000 else 4 if n <= 20000 else 3

    def trace(keep: np.ndarray, name: str | None, marker: dict[str, Any]) -> Any:
        coords = {axis: points[keep, i] for i, axis in enumerate("xyz"[:dims])}
        common = dict(
            mode=mode,
            name=name,
            text=text[keep],
            hovertext=hover[keep],
            hoverinfo="text",
            marker=marker,
            textposition="top center",
            showlegend=name is not None,
        )
        if dims == 3:
            return go.Scatter3d(**coords, **common)
        kind = go.Scattergl if n > WEBGL_ABOVE else go.Scatter
        return kind(**coords, **common)

    everything = np.ones(n, dtype=bool)
    figure = go.Figure()
    if colours.continuous is not None:
        marker = dict(
            size=size, color=colours.continuous, colorscale="Viridis", colorbar=dict(title=colours.column), opacity=0.85
        )
        figure.add_trace(trace(everything, None, marker))
    elif colours.codes is not None and len(colours.categories) <= MAX_CATEGORIES:
        palette = _palette(len(colours.categories))
        for code, name in enumerate(colours.categories):
            figure.add_trace(trace(colours.codes == code, _short(name, 30), dict(size=size, color=palette[code])))
    elif colours.codes is not None:
        palette = np.array(_palette(len(colours.categories)), dtype=object)
        figure.add_trace(trace(everything, None, dict(size=size, color=list(palette[colours.codes]))))
    else:
        figure.add_trace(trace(everything, None, dict(size=size, color="#1f77b4")))
    axes = _axis_names(projection.method, projection.explained, dims)
    subtitle = describe(projection.method, dims, n, projection.explained, projection.parameters)
    figure.update_layout(
        title=dict(text=f"{_escape_html(_title(projection.title, options))}<br><sup>{subtitle}</sup>"),
        legend=dict(title=colours.column or ""),
    )
    if dims == 3:
        figure.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
    else:
        figure.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    return figure


# --- trajectory ----------------------------------------------------------------------------------------------------


def _trajectory_static(figure: Any, trajectory: Any, options: PlotOptions, notes: list[str]) -> None:
    from ..views.projection import describe

    s, layers, dims = trajectory.points.shape
    ax = figure.add_subplot(projection="3d" if dims == 3 else None)
    palette = _palette(s)
    for i in range(s):
        coords = [trajectory.points[i, :, d] for d in range(dims)]
        ax.plot(
            *coords,
            "-o",
            color=palette[i],
            markersize=4,
            linewidth=1.2,
            label=f"{i}: {_short(trajectory.sentences[i])}",
        )
        for j, layer in enumerate(trajectory.layers):
            ax.text(*(float(c[j]) for c in coords), f" {layer}", fontsize=7, color=palette[i])
    axes = _axis_names(trajectory.method, trajectory.explained, dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if dims == 3:
        ax.set_zlabel(axes[2])
    ax.legend(fontsize=7, loc="best")
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    figure.suptitle(_title(default, options), fontsize=10)
    ax.set_title(describe(trajectory.method, dims, s * layers, trajectory.explained, trajectory.parameters), fontsize=8)


def _trajectory_html(trajectory: Any, options: PlotOptions, notes: list[str]) -> Any:
    import plotly.graph_objects as go

    from ..views.projection import describe

    s, layers, dims = trajectory.points.shape
    palette = _palette(s)
    figure = go.Figure()
    for i in range(s):
        coords = {axis: trajectory.points[i, :, d].astype(np.float64) for d, axis in enumerate("xyz"[:dims])}
        hover = [
            f"<b>{_escape_html(trajectory.word)}</b>, layer {layer}<br>sentence {i}: "
            f"{_escape_html(_short(trajectory.sentences[i], 80))}"
            for layer in trajectory.layers
        ]
        common = dict(
            mode="lines+markers+text",
            name=f"{i}: {_escape_html(_short(trajectory.sentences[i]))}",
            text=[str(layer) for layer in trajectory.layers],
            textposition="top center",
            hovertext=hover,
            hoverinfo="text",
            line=dict(color=palette[i]),
            marker=dict(color=palette[i], size=6),
        )
        figure.add_trace(go.Scatter3d(**coords, **common) if dims == 3 else go.Scatter(**coords, **common))
    axes = _axis_names(trajectory.method, trajectory.explained, dims)
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    subtitle = describe(trajectory.method, dims, s * layers, trajectory.explained, trajectory.parameters)
    figure.update_layout(title=dict(text=f"{_escape_html(_title(default, options))}<br><sup>{subtitle}</sup>"))
    if dims == 3:
        figure.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
    else:
        figure.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    return figure


# --- position similarity -------------------------------------------------------------------------------------------


def _positions_title(similarity: Any, options: PlotOptions) -> str:
    default = f"{similarity.family}: cosine of position_embeddings rows ({similarity.rows} of {similarity.table_rows})"
    return _title(default, options)


def _positions_static(figure: Any, similarity: Any, options: PlotOptions, notes: list[str]) -> None:
    notes.extend(similarity.notes)
    types = similarity.token_types
    grid = figure.add_gridspec(1, 2, width_ratios=[4, 1]) if types is not None else figure.add_gridspec(1, 1)
    ax = figure.add_subplot(grid[0, 0])
    image = ax.imshow(similarity.cosine, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("position row j")
    ax.set_ylabel("position row i")
    figure.colorbar(image, ax=ax, label="cosine", shrink=0.8)
    if similarity.first_position:
        ax.axhline(similarity.first_position - 0.5, color="black", linewidth=0.6)
        ax.axvline(similarity.first_position - 0.5, color="black", linewidth=0.6)
    if types is not None:
        tx = figure.add_subplot(grid[0, 1])
        tx.imshow(types, cmap="RdBu_r", vmin=-1, vmax=1)
        for i in range(len(types)):
            for j in range(len(types)):
                tx.text(j, i, f"{types[i, j]:.2f}", ha="center", va="center", fontsize=7)
        tx.set_xticks(range(len(types)))
        tx.set_yticks(range(len(types)))
        tx.set_title("token-type rows", fontsize=8)
    figure.suptitle(_positions_title(similarity, options), fontsize=10)


def _positions_html(similarity: Any, options: PlotOptions, notes: list[str]) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    notes.extend(similarity.notes)
    types = similarity.token_types
    if types is None:
        figure = make_subplots(rows=1, cols=1)
    else:
        figure = make_subplots(
            rows=1,
            cols=2,
            column_widths=[0.8, 0.2],
            subplot_titles=("position_embeddings rows", "token_type_embeddings rows"),
        )
    scale = dict(colorscale="RdBu", reversescale=True, zmin=-1, zmax=1)
    hover = "row %{y}, row %{x}: cosine %{z:.4f}<extra></extra>"
    figure.add_trace(go.Heatmap(z=similarity.cosine, hovertemplate=hover, colorbar=dict(title="cosine"), **scale), 1, 1)
    if types is not None:
        labels = [[f"{v:.2f}" for v in row] for row in types]
        figure.add_trace(
            go.Heatmap(z=types, text=labels, texttemplate="%{text}", showscale=False, hovertemplate=hover, **scale),
            1,
            2,
        )
        figure.update_yaxes(autorange="reversed", row=1, col=2)
    figure.update_yaxes(autorange="reversed", title_text="position row i", row=1, col=1)
    figure.update_xaxes(title_text="position row j", row=1, col=1)
    figure.update_layout(title=dict(text=_escape_html(_positions_title(similarity, options))))
    return figure


# --- embedding layer -----------------------------------------------------------------------------------------------


def _explain_parts(explanation: Any) -> list[tuple[str, np.ndarray]]:
    """The panels, in the order the layer computes them: (heading, (tokens, dims) matrix)."""
    first = explanation.tokens[0]
    parts = [("word_embeddings[id]", "word_row")]
    if first.token_type_row is not None:
        parts.append(("token_type_embeddings[segment]", "token_type_row"))
    if first.position_row is not None:
        parts.append(("position_embeddings[position]", "position_row"))
    parts.append(("sum of the rows (LayerNorm's input)", "sum"))
    if first.projected is not None:
        parts.append(("projected (before LayerNorm)", "projected"))
    parts.append(("LayerNorm output", "layer_norm_output"))
    if not np.array_equal(first.output, first.layer_norm_output):
        parts.append(("output (projected after LayerNorm)", "output"))
    return [(heading, explanation.matrix(name)) for heading, name in parts]


def _explain_checked(explanation: Any) -> str:
    title = f"{explanation.family}: {explanation.formula}"
    if explanation.checked:
        verdict = "matches" if explanation.matches else "DIFFERS FROM"
        title += f"\nchecked: {verdict} the model's hidden_states[0] (max |diff| {explanation.max_abs_diff:.1e})"
    return title


def _clip(matrix: np.ndarray) -> float:
    """The colour limit of a panel: the 99th percentile of |value| (a few outlier dimensions would wash it out)."""
    limit = float(np.percentile(np.abs(matrix), 99)) if matrix.size else 1.0
    return limit if limit > 0 else 1.0


def _explain_static(figure: Any, explanation: Any, options: PlotOptions, notes: list[str]) -> None:
    if not explanation.tokens:
        raise InputError("The explanation has no tokens to draw.", "Explain a text with at least one token.")
    parts = _explain_parts(explanation)
    tokens = len(explanation.tokens)
    figure.set_size_inches(options.width, max(options.height, 1.2 + len(parts) * (0.5 + 0.16 * tokens)))
    pieces = [
        f"{visible(t.piece)} ({t.position_id})" if t.position_id is not None else visible(t.piece)
        for t in explanation.tokens
    ]
    axes = figure.subplots(len(parts), 1, sharex=False)
    for ax, (heading, matrix) in zip(np.atleast_1d(axes), parts, strict=True):
        limit = _clip(matrix)
        image = ax.imshow(matrix, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        ax.set_yticks(range(tokens))
        ax.set_yticklabels(pieces, fontsize=7 if tokens <= 30 else 5)
        norms = np.linalg.norm(matrix, axis=1)
        ax.set_title(f"{heading}   (norms {norms.min():.3g}–{norms.max():.3g})", fontsize=8, loc="left")
        ax.tick_params(axis="x", labelsize=7)
        figure.colorbar(image, ax=ax, extend="both", pad=0.01, aspect=10)
    np.atleast_1d(axes)[-1].set_xlabel("dimension")
    notes.append("Each panel's colours are clipped at the 99th percentile of its |values|.")
    notes.extend(f"absent: {a}" for a in explanation.absent_parts)
    figure.suptitle(_title(_explain_checked(explanation), options), fontsize=9)


def _explain_html(explanation: Any, options: PlotOptions, notes: list[str]) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not explanation.tokens:
        raise InputError("The explanation has no tokens to draw.", "Explain a text with at least one token.")
    parts = _explain_parts(explanation)
    tokens = len(explanation.tokens)
    pieces = [f"{t.index}: {_escape_html(visible(t.piece))}" for t in explanation.tokens]
    figure = make_subplots(rows=len(parts), cols=1, subplot_titles=[h for h, _ in parts], vertical_spacing=0.06)
    for row, (heading, matrix) in enumerate(parts, 1):
        limit = _clip(matrix)
        figure.add_trace(
            go.Heatmap(
                z=matrix.astype(np.float64),
                y=pieces,
                colorscale="RdBu",
                reversescale=True,
                zmin=-limit,
                zmax=limit,
                showscale=False,
                hovertemplate=f"{heading}<br>%{{y}}, dim %{{x}}: %{{z:.5f}}<extra></extra>",
            ),
            row,
            1,
        )
        figure.update_yaxes(autorange="reversed", row=row, col=1)
    notes.append("Each panel's colours are clipped at the 99th percentile of its |values|.")
    notes.extend(f"absent: {a}" for a in explanation.absent_parts)
    if options.title is not None:
        title = _escape_html(options.title)
    else:  # the formula and the check as smaller lines under a short heading: plotly does not wrap titles
        lines = [_escape_html(line) for line in _explain_checked(explanation).split("\n")]
        title = f"{_escape_html(explanation.family)} embedding layer" + "".join(f"<br><sup>{x}</sup>" for x in lines)
    figure.update_layout(title=dict(text=title), margin=dict(t=110))
    pixels = int(100 * max(options.height, 1.2 + len(parts) * (0.5 + 0.16 * tokens)))
    figure.update_layout(height=pixels)  # grows with the tokens; _html keeps a height already set
    return figure


# --- per-layer curves ----------------------------------------------------------------------------------------------


def _curves(result: Any) -> tuple[str, list[str], list[tuple[str, list[tuple[str, list[float | None]]]]]]:
    """Title, x labels, and panels of named curves for a Contextuality or ContextComparison."""
    from ..contextual.context import ContextComparison

    if isinstance(result, ContextComparison):
        x = [s.layer for s in result.layers]
        title = f"{result.word!r} across {len(result.sentences)} sentences: cosine between its vectors, per layer"
        series = [
            ("mean cosine", [s.mean_cosine for s in result.layers]),
            ("min cosine", [s.min_cosine for s in result.layers]),
        ]
        return title, x, [("similarity of the word's vectors", series)]
    layers = result.layers
    x = [str(s.layer) for s in layers]

    def values(name: str) -> list[float | None]:
        return [None if not np.isfinite(getattr(s, name)) else float(getattr(s, name)) for s in layers]

    raw = [
        ("self-similarity", values("self_similarity")),
        ("intra-sentence", values("intra_sentence")),
        ("anisotropy baseline", values("baseline")),
    ]
    adjusted = [
        ("self-similarity - baseline", values("adjusted_self_similarity")),
        ("intra-sentence - baseline", values("adjusted_intra_sentence")),
    ]
    title = (
        f"Contextuality per layer over {result.texts:,} texts ({len(result.words):,} words, "
        f"{result.occurrences:,} occurrences)"
    )
    return title, x, [("raw", raw), ("adjusted (minus the baseline)", adjusted)]


def _curves_static(figure: Any, result: Any, options: PlotOptions) -> None:
    title, x, panels = _curves(result)
    axes = np.atleast_1d(figure.subplots(1, len(panels)))
    for ax, (heading, series) in zip(axes, panels, strict=True):
        for name, ys in series:
            ax.plot(range(len(x)), [np.nan if y is None else y for y in ys], "-o", markersize=4, label=name)
        ax.set_xticks(range(len(x)))
        ax.set_xticklabels(x, fontsize=7, rotation=30 if len(x[0]) > 3 else 0)
        ax.set_xlabel("layer (0 = embedding output)")
        ax.set_ylabel("cosine")
        ax.set_title(heading, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    figure.suptitle(_title(title, options), fontsize=10)


def _curves_html(result: Any, options: PlotOptions) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    title, x, panels = _curves(result)
    figure = make_subplots(rows=1, cols=len(panels), subplot_titles=[h for h, _ in panels])
    for col, (_, series) in enumerate(panels, 1):
        for name, ys in series:
            figure.add_trace(
                go.Scatter(
                    x=x, y=ys, mode="lines+markers", name=name, hovertemplate=f"{name}<br>layer %{{x}}: %{{y:.4f}}"
                ),
                1,
                col,
            )
        figure.update_xaxes(title_text="layer (0 = embedding output)", type="category", row=1, col=col)
        figure.update_yaxes(title_text="cosine", row=1, col=col)
    figure.update_layout(title=dict(text=_escape_html(_title(title, options))))
    return figure


def _contextuality_static(figure: Any, result: Any, options: PlotOptions, notes: list[str]) -> None:
    _curves_static(figure, result, options)


def _contextuality_html(result: Any, options: PlotOptions, notes: list[str]) -> Any:
    return _curves_html(result, options)


def _context_static(figure: Any, result: Any, options: PlotOptions, notes: list[str]) -> None:
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    _curves_static(figure, result, options)


def _context_html(result: Any, options: PlotOptions, notes: list[str]) -> Any:
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    return _curves_html(result, options)
