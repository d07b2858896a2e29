"""Drawers for a `Projection` (bertlens.views.projection): a scatter of the points, coloured by a metadata column,
as a matplotlib figure (PNG, SVG) or a plotly figure (HTML, labels on hover).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.results import visible
from ..views.projection import describe
from .style import (
    MatplotlibFigure,
    PlotOptions,
    axis_names,
    choose_colours,
    default_colour,
    escape_html,
    figure_title,
    hide_overlaps,
    keep_inside,
    point_labels,
    short,
)

if TYPE_CHECKING:
    from plotly.basedatatypes import BaseTraceType
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..views.projection import Projection

WEBGL_ABOVE = 5000  # HTML scatters with more points use WebGL (plotly Scattergl)


def labelled(projection: Projection, options: PlotOptions) -> list[int]:
    """The points a picture writes a label beside: all of them up to `max_labels`, else the projection's featured
    points (e.g. the words that name each theme; where they collide the first are kept); none if `max_labels` is 0."""
    if len(projection) <= options.max_labels:
        return list(range(len(projection)))
    return list(projection.featured) if options.max_labels else []


def projection_static(figure: MatplotlibFigure, projection: Projection, options: PlotOptions, notes: list[str]) -> None:
    """Draw the points on `figure` (matplotlib): a 2-D or 3-D scatter, text labels when there are few points (or
    the featured ones), every label inside the axes."""
    from matplotlib import patheffects

    points, n = projection.points, len(projection)
    colours = choose_colours(projection.metadata, options.color_by or default_colour(projection), n, notes)
    labels = point_labels(projection, options.label_by)
    ax = figure.add_subplot(projection="3d" if projection.dims == 3 else None)
    coords = [points[:, i] for i in range(projection.dims)]
    size = 30 if n <= 100 else 14 if n <= 2000 else 4 if n <= 20000 else 1.5
    if colours.continuous is not None:
        drawn = ax.scatter(*coords, c=colours.continuous, cmap="viridis", s=size, linewidths=0)
        figure.colorbar(drawn, ax=ax, label=colours.column, shrink=0.8)
    elif colours.codes is not None:
        palette = colours.palette()
        for code, name in enumerate(colours.categories):
            keep = colours.codes == code
            ax.scatter(*(c[keep] for c in coords), color=palette[code], s=size, linewidths=0, label=short(name, 40))
        # beside the axes, not over the points; constrained layout makes room so nothing is clipped (a 3-D axes
        # keeps no room for its own legend: the figure's, outside the axes, then)
        where = dict(loc="upper left", bbox_to_anchor=(1.02, 1)) if projection.dims == 2 else dict(loc="outside right")
        owner = ax if projection.dims == 2 else figure
        owner.legend(title=colours.column, fontsize=7, title_fontsize=8, markerscale=1.5, frameon=False, **where)
    else:
        ax.scatter(*coords, s=size, linewidths=0, color="#1f77b4")
    chosen = labelled(projection, options)
    crowded = n > options.max_labels  # labels among many unlabelled points: outlined in white, readable over them
    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")] if crowded else None
    texts = []
    for i in chosen:
        label = visible(labels[i])
        if projection.dims == 3:
            texts.append(ax.text(*(float(c[i]) for c in coords), " " + label, fontsize=8, path_effects=outline))
        else:  # a few points beside the marker, in the marker's frame: the label moves with it, never over it
            at = (float(coords[0][i]), float(coords[1][i]))
            texts.append(
                ax.annotate(
                    label,
                    at,
                    xytext=(4, 3),
                    textcoords="offset points",
                    fontsize=9 if n <= 100 else 8,
                    path_effects=outline,
                )
            )
    if crowded and options.max_labels:
        what = f"{len(chosen)} featured points labelled where they fit" if chosen else "text labels left out"
        notes.append(
            f"{n:,} points: {what} (more than {options.max_labels} points); the HTML shows every label on hover."
        )
    axes = axis_names(projection.method, projection.explained, projection.dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if projection.dims == 3:
        ax.set_zlabel(axes[2])
    figure.suptitle(figure_title(projection.title, options), fontsize=10)
    ax.set_title(
        describe(projection.method, projection.dims, n, projection.explained, projection.parameters), fontsize=8
    )
    if projection.dims == 2:
        keep_inside(ax, texts)
    if crowded:  # featured labels among many points: the first (most central) win where they collide
        hide_overlaps(figure, texts)
        ringed = [i for i, text in zip(chosen, texts, strict=True) if text.get_visible()]
        if ringed and len(ringed) <= n // 4:  # a few labelled among many: ringed, so a label's point is found
            ax.scatter(*(c[ringed] for c in coords), s=max(size, 4) * 4, facecolors="none", edgecolors="black", lw=0.8)


def _hover(projection: Projection) -> list[str]:
    """Each point's hover text: its label in bold, then every metadata column."""
    columns = list(projection.metadata)
    escape = escape_html
    return [
        f"<b>{escape(projection.labels[i])}</b>"
        + "".join(f"<br>{escape(c)}: {escape(str(projection.metadata[c][i]))}" for c in columns)
        for i in range(len(projection))
    ]


def projection_html(projection: Projection, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """The points as a plotly figure: one trace per named category, WebGL for large 2-D scatters."""
    import plotly.graph_objects as go

    n, dims = len(projection), projection.dims
    colours = choose_colours(projection.metadata, options.color_by or default_colour(projection), n, notes)
    labels = point_labels(projection, options.label_by)
    hover = np.array(_hover(projection), dtype=object)
    points = projection.points.astype(np.float64)
    chosen = set(labelled(projection, options))
    text = np.array([visible(label) if i in chosen else "" for i, label in enumerate(labels)], dtype=object)
    mode = "markers+text" if chosen else "markers"
    size: float = 10 if n <= 100 else 7 if n <= 2000 else 4 if n <= 20000 else 3
    if dims == 3 and n > 2000:  # a 3-D cloud: small markers, so the labelled words inside it show
        size = 2.5

    def trace(keep: np.ndarray, name: str | None, marker: dict[str, Any]) -> BaseTraceType:
        coords = {axis: points[keep, i] for i, axis in enumerate("xyz"[:dims])}
        common = dict(
            mode=mode,
            name=name,
            text=text[keep],
            hovertext=hover[keep],
            hoverinfo="text",
            marker=marker,
            textposition="top center",
            textfont=dict(size=13 if n <= 100 else 12, color="#111111"),
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
    elif colours.codes is not None:  # one trace, and legend entry, per category ("other" last, in grey)
        palette = colours.palette()
        for code, name in enumerate(colours.categories):
            figure.add_trace(trace(colours.codes == code, short(name, 40), dict(size=size, color=palette[code])))
    else:
        figure.add_trace(trace(everything, None, dict(size=size, color="#1f77b4")))
    axes = axis_names(projection.method, projection.explained, dims)
    subtitle = describe(projection.method, dims, n, projection.explained, projection.parameters)
    figure.update_layout(
        title=dict(text=f"{escape_html(figure_title(projection.title, options))}<br><sup>{subtitle}</sup>"),
        legend=dict(title=colours.column or ""),
    )
    if dims == 3:
        figure.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
    else:
        figure.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    return figure
