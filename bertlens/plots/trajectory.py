"""Drawers for a `Trajectory` (bertlens.views.trajectory): one line per sentence through the layers, each point
numbered with its layer, in the one shared projection.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..views.projection import describe
from .style import PlotOptions, axis_names, escape_html, figure_title, palette_for, short


def trajectory_static(figure: Any, trajectory: Any, options: PlotOptions, notes: list[str]) -> None:
    """Draw one line per sentence on `figure` (matplotlib), each point numbered with its layer."""
    s, layers, dims = trajectory.points.shape
    ax = figure.add_subplot(projection="3d" if dims == 3 else None)
    palette = palette_for(s)
    for i in range(s):
        coords = [trajectory.points[i, :, d] for d in range(dims)]
        ax.plot(
            *coords,
            "-o",
            color=palette[i],
            markersize=4,
            linewidth=1.2,
            label=f"{i}: {short(trajectory.sentences[i])}",
        )
        for j, layer in enumerate(trajectory.layers):
            ax.text(*(float(c[j]) for c in coords), f" {layer}", fontsize=7, color=palette[i])
    axes = axis_names(trajectory.method, trajectory.explained, dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if dims == 3:
        ax.set_zlabel(axes[2])
    ax.legend(fontsize=7, loc="best")
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    figure.suptitle(figure_title(default, options), fontsize=10)
    ax.set_title(describe(trajectory.method, dims, s * layers, trajectory.explained, trajectory.parameters), fontsize=8)


def trajectory_html(trajectory: Any, options: PlotOptions, notes: list[str]) -> Any:
    """The trajectories as a plotly figure: one line per sentence, the layer written on each point."""
    import plotly.graph_objects as go

    s, layers, dims = trajectory.points.shape
    palette = palette_for(s)
    figure = go.Figure()
    for i in range(s):
        coords = {axis: trajectory.points[i, :, d].astype(np.float64) for d, axis in enumerate("xyz"[:dims])}
        hover = [
            f"<b>{escape_html(trajectory.word)}</b>, layer {layer}<br>sentence {i}: "
            f"{escape_html(short(trajectory.sentences[i], 80))}"
            for layer in trajectory.layers
        ]
        common = dict(
            mode="lines+markers+text",
            name=f"{i}: {escape_html(short(trajectory.sentences[i]))}",
            text=[str(layer) for layer in trajectory.layers],
            textposition="top center",
            hovertext=hover,
            hoverinfo="text",
            line=dict(color=palette[i]),
            marker=dict(color=palette[i], size=6),
        )
        figure.add_trace(go.Scatter3d(**coords, **common) if dims == 3 else go.Scatter(**coords, **common))
    axes = axis_names(trajectory.method, trajectory.explained, dims)
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    subtitle = describe(trajectory.method, dims, s * layers, trajectory.explained, trajectory.parameters)
    figure.update_layout(title=dict(text=f"{escape_html(figure_title(default, options))}<br><sup>{subtitle}</sup>"))
    if dims == 3:
        figure.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
    else:
        figure.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    return figure
