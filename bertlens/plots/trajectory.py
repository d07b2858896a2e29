"""Drawers for a `Trajectory` (bertlens.views.trajectory): one line per sentence through the layers, each point
numbered with its layer, in the one shared projection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..views.projection import describe
from .style import (
    MatplotlibFigure,
    PlotOptions,
    axis_names,
    escape_html,
    figure_title,
    keep_inside,
    palette_for,
    place_apart,
    readable,
    short,
)

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..views.trajectory import Trajectory

LABEL_OFFSETS = ((6, 6), (6, -14), (-14, 6), (-14, -14))  # points: each sentence's layer numbers on its own side


def _subtitle(trajectory: Trajectory) -> str:
    s, layers, dims = trajectory.points.shape
    made = describe(trajectory.method, dims, s * layers, trajectory.explained, trajectory.parameters)
    return f"numbers: layers; arrows: layer 0 to {trajectory.layers[-1]}. {made}"


def trajectory_static(figure: MatplotlibFigure, trajectory: Trajectory, options: PlotOptions, notes: list[str]) -> None:
    """Draw one line per sentence on `figure` (matplotlib): arrows from each layer to the next, each point numbered
    with its layer, every number inside the axes; the legend below the plot, never over a line."""
    from matplotlib import patheffects

    s, layers, dims = trajectory.points.shape
    ax = figure.add_subplot(projection="3d" if dims == 3 else None)
    palette = palette_for(s)
    outline = [patheffects.withStroke(linewidth=3, foreground="white")]
    texts = []
    for i in range(s):
        coords = [trajectory.points[i, :, d].astype(np.float64) for d in range(dims)]
        colour = palette[i]
        name = f"{i}: {short(trajectory.sentences[i])}"
        if dims == 3:  # in 2-D the arrows are the line
            ax.plot(*coords, "-", color=colour, linewidth=1.2, alpha=0.5)
        sizes = [
            18 + 40 * j / max(layers - 1, 1) for j in range(layers)
        ]  # growing: small at layer 0, large at the last
        ax.scatter(*coords, color=colour, s=sizes, zorder=3, label=name)
        if dims == 2:
            for j in range(layers - 1):  # the direction: an arrow from each layer to the next
                ax.annotate(
                    "",
                    xy=(coords[0][j + 1], coords[1][j + 1]),
                    xytext=(coords[0][j], coords[1][j]),
                    arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.6, shrinkA=5, shrinkB=6, mutation_scale=14),
                )
            offset = LABEL_OFFSETS[i % len(LABEL_OFFSETS)]
            for j, layer in enumerate(trajectory.layers):
                texts.append(
                    ax.annotate(
                        str(layer),
                        (coords[0][j], coords[1][j]),
                        xytext=offset,
                        textcoords="offset points",
                        fontsize=10,
                        fontweight="bold",
                        color=readable(colour),
                        path_effects=outline,
                    )
                )
        else:
            # the direction: one arrow head of one size at the middle of each step (3-D arrows scale with their length)
            points = trajectory.points[i].astype(np.float64)  # (layers, 3)
            steps = np.diff(points, axis=0)  # (layers - 1, 3)
            lengths = np.linalg.norm(steps, axis=1, keepdims=True)  # (layers - 1, 1)
            size = 0.05 * float(np.ptp(trajectory.points.reshape(-1, 3), axis=0).max() or 1.0)
            units = steps / np.where(lengths > 0, lengths, 1.0)
            starts = points[:-1] + steps / 2 - units * size / 2
            ax.quiver(*starts.T, *(units * size).T, color=colour, arrow_length_ratio=0.9, linewidth=1.6)
            for j, layer in enumerate(trajectory.layers):
                point = (float(c[j]) for c in coords)
                ax.text(
                    *point, f" {layer}", fontsize=10, fontweight="bold", color=readable(colour), path_effects=outline
                )
    axes = axis_names(trajectory.method, trajectory.explained, dims)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    if dims == 3:
        ax.set_zlabel(axes[2])
        figure.legend(fontsize=8, loc="outside lower center", ncol=1, frameon=False)
    else:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1, frameon=False)
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    figure.suptitle(figure_title(default, options), fontsize=10)
    ax.set_title(_subtitle(trajectory), fontsize=8)
    if dims == 2:
        keep_inside(ax, texts, pad=6)
        place_apart(figure, texts)  # layer numbers that would overlap move to another side of their point
        keep_inside(ax, texts, pad=6)


def trajectory_html(trajectory: Trajectory, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
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
            text=[f"<b>{layer}</b>" for layer in trajectory.layers],
            textposition=("top right", "bottom right", "top left", "bottom left")[i % 4],
            textfont=dict(size=15, color=readable(palette[i])),
            hovertext=hover,
            hoverinfo="text",
            line=dict(color=palette[i], width=2),
            marker=dict(color=palette[i], size=[7 + 8 * j / max(layers - 1, 1) for j in range(layers)]),
        )
        figure.add_trace(go.Scatter3d(**coords, **common) if dims == 3 else go.Scatter(**coords, **common))
        if dims == 2:  # the direction: an arrow from each layer to the next
            x, y = coords["x"], coords["y"]
            for j in range(layers - 1):
                figure.add_annotation(
                    x=x[j + 1],
                    y=y[j + 1],
                    ax=x[j],
                    ay=y[j],
                    xref="x",
                    yref="y",
                    axref="x",
                    ayref="y",
                    showarrow=True,
                    arrowhead=2,
                    arrowsize=1.4,
                    arrowwidth=1.6,
                    arrowcolor=palette[i],
                    standoff=6,
                    startstandoff=4,
                    text="",
                )
    axes = axis_names(trajectory.method, trajectory.explained, dims)
    default = f"{trajectory.word!r} from layer 0 (embedding output) to {trajectory.layers[-1]}, one shared projection"
    subtitle = _subtitle(trajectory)
    figure.update_layout(
        title=dict(text=f"{escape_html(figure_title(default, options))}<br><sup>{subtitle}</sup>"),
        legend=dict(orientation="h", yanchor="top", y=-0.12),
    )
    if dims == 3:
        figure.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2]))
    else:
        figure.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    return figure
