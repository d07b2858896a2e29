"""Drawers for a `Projection` (bertlens.views.projection): a scatter of the points, coloured by a metadata column,
as a matplotlib figure (PNG, SVG) or a plotly figure (HTML, labels on hover).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.results import visible
from ..views.projection import describe
from .style import (
    PlotOptions,
    axis_names,
    choose_colours,
    default_colour,
    escape_html,
    figure_title,
    point_labels,
    short,
)

WEBGL_ABOVE = 5000  # HTML scatters with more points use WebGL (plotly Scattergl)


def projection_static(figure: Any, projection: Any, options: PlotOptions, notes: list[str]) -> None:
    """Draw the points on `figure` (matplotlib): a 2-D or 3-D scatter, text labels when there are few points."""
    points, n = projection.points, len(projection)
    colours = choose_colours(projection.metadata, options.color_by or default_colour(projection), n, notes)
    labels = point_labels(projection, options.label_by)
    ax = figure.add_subplot(projection="3d" if projection.dims == 3 else None)
    coords = [points[:, i] for i in range(projection.dims)]
    size = 14 if n <= 2000 else 4 if n <= 20000 else 1.5
    if colours.continuous is not None:
        drawn = ax.scatter(*coords, c=colours.continuous, cmap="viridis", s=size, linewidths=0)
        figure.colorbar(drawn, ax=ax, label=colours.column, shrink=0.8)
    elif colours.codes is not None:
        palette = colours.palette()
        for code, name in enumerate(colours.categories):
            keep = colours.codes == code
            ax.scatter(*(c[keep] for c in coords), color=palette[code], s=size, linewidths=0, label=short(name, 30))
        # beside the axes, not over the points; constrained layout makes room so nothing is clipped
        ax.legend(
            title=colours.column,
            fontsize=7,
            title_fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.02, 1),
            markerscale=1.5,
            frameon=False,
        )
    else:
        ax.scatter(*coords, s=size, linewidths=0, color="#1f77b4")
    if n <= options.max_labels:
        for i in range(n):
            ax.text(*(float(c[i]) for c in coords), " " + visible(labels[i]), fontsize=7)
    elif options.max_labels:
        notes.append(f"{n:,} points: text labels left out (more than {options.max_labels}); the HTML shows them.")
    axes = axis_names(projection.method, projection.explained, projection.dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if projection.dims == 3:
        ax.set_zlabel(axes[2])
    figure.suptitle(figure_title(projection.title, options), fontsize=10)
    ax.set_title(
        describe(projection.method, projection.dims, n, projection.explained, projection.parameters), fontsize=8
    )


def _hover(projection: Any) -> list[str]:
    """Each point's hover text: its label in bold, then every metadata column."""
    columns = list(projection.metadata)
    escape = escape_html
    return [
        f"<b>{escape(projection.labels[i])}</b>"
        + "".join(f"<br>{escape(c)}: {escape(str(projection.metadata[c][i]))}" for c in columns)
        for i in range(len(projection))
    ]


def projection_html(projection: Any, options: PlotOptions, notes: list[str]) -> Any:
    """The points as a plotly figure: one trace per named category, WebGL for large 2-D scatters."""
    import plotly.graph_objects as go

    n, dims = len(projection), projection.dims
    colours = choose_colours(projection.metadata, options.color_by or default_colour(projection), n, notes)
    labels = point_labels(projection, options.label_by)
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
    elif colours.codes is not None:  # one trace, and legend entry, per category ("other" last, in grey)
        palette = colours.palette()
        for code, name in enumerate(colours.categories):
            figure.add_trace(trace(colours.codes == code, short(name, 30), dict(size=size, color=palette[code])))
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
