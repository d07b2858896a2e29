"""Drawers for a `SpaceDiff` (bertlens.spaces): two embedding spaces side by side in one figure.

- the aligned plane (`SpaceDiff.plane`): A's rows rotated onto B and B's rows, projected together; the tokens that moved
  most drawn as arrows from their place in A to their place in B, labelled; a background of word tokens in grey at
  their place in B;
- the overlap distribution (`SpaceDiff.histogram`): tokens per tenth of the overlap of their k nearest tokens;
- with the contextual side (`SpaceDiff.contextual`): linear CKA of every layer pair as a heat map, rows A's layers,
  columns B's, each value written in its cell, on a 0..1 colour scale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .style import (
    OTHER_COLOUR,
    MatplotlibFigure,
    PlotOptions,
    escape_html,
    figure_title,
    keep_inside,
    place_apart,
    readable,
    short,
    text_colour,
)

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..spaces import SpaceDiff, TokenChange
    from ..spaces.contextual import ContextualDiff
    from ..spaces.diff_results import PlanePoint

MOVED = "#d62728"  # the tokens that moved most: arrows, points and labels
BARS = "#1f77b4"  # the overlap histogram
CKA_SCALE = "viridis"  # 0 dark, 1 bright (matplotlib's name; plotly: Viridis)
SHOWN = 5  # neighbours per side in a moved token's hover text (HTML)


def _title(result: SpaceDiff, options: PlotOptions) -> str:
    """The heading: both models and the summary figures."""
    default = (
        f"A: {short(result.model_a, 60)}   B: {short(result.model_b, 60)}\n{result.tokens:,} shared tokens: neighbour "
        f"overlap {result.overlap_mean:.3f} (k = {result.k}), aligned cosine {result.fit:.3f}"
    )
    return figure_title(default, options)


def _plane_note(result: SpaceDiff) -> str:
    grey = sum(1 for p in result.plane if not p.moved)
    moved = len(result.plane) - grey
    return (
        f"The plane: A's rows rotated onto B (orthogonal Procrustes) and B's rows, projected together by PCA; arrows "
        f"from A to B for the {moved} tokens that moved most; grey: {grey} word tokens at their place in B."
    )


def _bins(result: SpaceDiff) -> tuple[np.ndarray, list[str]]:
    """The left edges of the overlap bins and their names ("0.0-0.1", ..., "0.9-1.0")."""
    count = len(result.histogram)
    edges = np.linspace(0.0, 1.0, count + 1)  # (bins + 1,)
    return edges[:-1], [f"{edges[i]:.1f}-{edges[i + 1]:.1f}" for i in range(count)]


def _arrowed(result: SpaceDiff) -> list[PlanePoint]:
    """The moved tokens whose arrow from A to B is long enough to see: at least 1/200 of the plane's extent (a
    shorter one, a token that stayed where it was, would be drawn as a head without a shaft)."""
    if not result.plane:
        return []
    xy = np.array([p.b for p in result.plane] + [p.a for p in result.plane])  # (2m, 2)
    extent = float(np.max(xy.max(axis=0) - xy.min(axis=0)))
    return [p for p in result.plane if p.moved and np.hypot(p.b[0] - p.a[0], p.b[1] - p.a[1]) >= extent / 200]


def _cka_font(cka: np.ndarray) -> float:
    """Cell text small enough for the heat map's larger side (7 layers: 8 points; 13: 6)."""
    return float(max(4.0, min(8.0, 80.0 / max(cka.shape))))


# --- PNG and SVG (matplotlib) --------------------------------------------------------------------------------------


def spaces_static(figure: MatplotlibFigure, result: SpaceDiff, options: PlotOptions, notes: list[str]) -> None:
    """Draw the aligned plane, the overlap histogram and (contextual) the CKA heat map on `figure` (matplotlib)."""
    notes.append(_plane_note(result))
    context = result.contextual
    if context is None:
        grid = figure.add_gridspec(1, 2, width_ratios=[3, 2])
        plane, bars = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[0, 1])
    else:
        grid = figure.add_gridspec(2, 2, width_ratios=[3, 2])
        plane, bars = figure.add_subplot(grid[:, 0]), figure.add_subplot(grid[0, 1])
        _cka_static(figure, figure.add_subplot(grid[1, 1]), context)
    _histogram_static(bars, result)
    _plane_static(figure, plane, result, options)
    figure.suptitle(_title(result, options), fontsize=9)


def _plane_static(figure: MatplotlibFigure, ax: Any, result: SpaceDiff, options: PlotOptions) -> None:
    background = [p for p in result.plane if not p.moved]
    moved = [p for p in result.plane if p.moved]
    if background:
        xy = np.array([p.b for p in background])  # (m, 2)
        ax.scatter(xy[:, 0], xy[:, 1], s=5, color=OTHER_COLOUR, linewidths=0, label="word tokens (in B)")
    for p in _arrowed(result):
        ax.annotate("", xy=p.b, xytext=p.a, arrowprops=dict(arrowstyle="->", color=MOVED, lw=0.8, shrinkA=2, shrinkB=2))
    texts = []
    if moved:
        a, b = np.array([p.a for p in moved]), np.array([p.b for p in moved])  # (moved, 2) each
        ax.scatter(a[:, 0], a[:, 1], s=14, facecolors="none", edgecolors=MOVED, linewidths=0.8, label="moved: in A")
        ax.scatter(b[:, 0], b[:, 1], s=14, color=MOVED, linewidths=0, label="moved: in B")
        label = readable(MOVED)
        for p in moved[: options.max_labels]:  # most moved first: they keep their place when labels collide
            texts.append(
                ax.annotate(short(p.token, 24), p.b, xytext=(3, 3), textcoords="offset points", fontsize=7, color=label)
            )
    ax.set_xlabel("PC1 of A (aligned) and B together", fontsize=8)
    ax.set_ylabel("PC2", fontsize=8)
    ax.set_title("the aligned plane: where the tokens that moved most went", fontsize=9)
    ax.tick_params(labelsize=7)
    if result.plane:
        ax.legend(fontsize=7, loc="best", markerscale=1.5)
    if texts:
        place_apart(figure, texts)
        keep_inside(ax, texts)


def _histogram_static(ax: Any, result: SpaceDiff) -> None:
    lefts, _ = _bins(result)
    width = 1.0 / len(result.histogram)
    ax.bar(lefts, result.histogram, width=width, align="edge", color=BARS, edgecolor="white", linewidth=0.6)
    for left, count in zip(lefts, result.histogram, strict=True):
        ax.text(left + width / 2, count, f"{count:,}", ha="center", va="bottom", fontsize=6)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0, max(max(result.histogram), 1) * 1.15)  # room for the counts above the bars
    ax.set_xlabel(f"overlap of the {result.k} nearest tokens in A and in B (Jaccard)", fontsize=8)
    ax.set_ylabel("tokens", fontsize=8)
    ax.set_title(f"neighbour overlap of {result.tokens:,} tokens", fontsize=9)
    ax.tick_params(labelsize=7)


def _cka_static(figure: MatplotlibFigure, ax: Any, context: ContextualDiff) -> None:
    from matplotlib import colormaps

    cka = context.cka  # (layers_a + 1, layers_b + 1)
    scale = colormaps[CKA_SCALE]
    image = ax.imshow(cka, cmap=scale, vmin=0.0, vmax=1.0, interpolation="nearest")
    font = _cka_font(cka)
    for i in range(cka.shape[0]):
        for j in range(cka.shape[1]):  # black or white, whichever reads on the cell's colour
            value = float(cka[i, j])
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=font, color=text_colour(scale(value)))
    ax.set_xticks(range(cka.shape[1]))
    ax.set_yticks(range(cka.shape[0]))
    ax.tick_params(labelsize=7)
    ax.set_xlabel("layer of B (0 = embedding output)", fontsize=8)
    ax.set_ylabel("layer of A", fontsize=8)
    ax.set_title(f"linear CKA over {context.occurrences:,} word occurrences", fontsize=9)
    bar = figure.colorbar(image, ax=ax, shrink=0.9)
    bar.set_label("CKA", fontsize=8)
    bar.ax.tick_params(labelsize=7)


# --- HTML (plotly) -------------------------------------------------------------------------------------------------


def _hover(token: str, change: TokenChange | None) -> str:
    """A moved token's hover text: its overlap, residual and nearest tokens in A and in B."""
    if change is None:
        return escape_html(token)
    near_a = ", ".join(escape_html(n.token) for n in change.neighbours_a[:SHOWN])
    near_b = ", ".join(escape_html(n.token) for n in change.neighbours_b[:SHOWN])
    return (
        f"<b>{escape_html(token)}</b> ({change.kind})<br>overlap {change.overlap:.2f}, residual "
        f"{change.residual:.3f}<br>in A: {near_a}<br>in B: {near_b}"
    )


def spaces_html(result: SpaceDiff, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """The aligned plane, the overlap histogram and (contextual) the CKA heat map as one plotly figure."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    notes.append(_plane_note(result))
    context = result.contextual
    titles = ["the aligned plane: where the tokens that moved most went", f"neighbour overlap (k = {result.k})"]
    if context is None:
        figure = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], subplot_titles=titles)
    else:
        titles.append(f"linear CKA over {context.occurrences:,} word occurrences")
        specs = [[{"rowspan": 2}, {}], [None, {}]]
        figure = make_subplots(rows=2, cols=2, column_widths=[0.6, 0.4], specs=specs, subplot_titles=titles)
    background = [p for p in result.plane if not p.moved]
    moved = [p for p in result.plane if p.moved]
    figure.add_trace(
        go.Scatter(
            x=[p.b[0] for p in background],
            y=[p.b[1] for p in background],
            mode="markers",
            marker=dict(size=4, color=OTHER_COLOUR),
            text=[escape_html(p.token) for p in background],
            hovertemplate="%{text}<extra></extra>",
            name="word tokens (in B)",
        ),
        1,
        1,
    )
    for p in _arrowed(result):  # an arrow from the token's place in A to its place in B
        figure.add_annotation(
            x=p.b[0], y=p.b[1], ax=p.a[0], ay=p.a[1], xref="x", yref="y", axref="x", ayref="y", text="",
            showarrow=True, arrowhead=2, arrowsize=1, arrowwidth=1, arrowcolor=MOVED, standoff=3,
        )  # fmt: skip
    changes = {m.token: m for m in result.moved}
    hover = [_hover(p.token, changes.get(p.token)) for p in moved]
    figure.add_trace(
        go.Scatter(
            x=[p.a[0] for p in moved],
            y=[p.a[1] for p in moved],
            mode="markers",
            marker=dict(size=7, color="rgba(0,0,0,0)", line=dict(color=MOVED, width=1.2)),
            hovertext=hover,
            hovertemplate="%{hovertext}<extra>in A</extra>",
            name="moved: in A",
        ),
        1,
        1,
    )
    figure.add_trace(
        go.Scatter(
            x=[p.b[0] for p in moved],
            y=[p.b[1] for p in moved],
            mode="markers+text",
            marker=dict(size=7, color=MOVED),
            text=[escape_html(p.token) for p in moved],
            textposition="top right",
            textfont=dict(size=10, color=readable(MOVED)),
            hovertext=hover,
            hovertemplate="%{hovertext}<extra>in B</extra>",
            name="moved: in B",
        ),
        1,
        1,
    )
    figure.update_xaxes(title_text="PC1 of A (aligned) and B together", row=1, col=1)
    figure.update_yaxes(title_text="PC2", row=1, col=1)
    lefts, names = _bins(result)
    width = 1.0 / len(result.histogram)
    figure.add_trace(
        go.Bar(
            x=[left + width / 2 for left in lefts],
            y=list(result.histogram),
            width=width,
            marker=dict(color=BARS, line=dict(color="white", width=1)),
            text=[f"{c:,}" for c in result.histogram],
            textposition="outside",
            customdata=names,
            hovertemplate="overlap %{customdata}: %{y:,} tokens<extra></extra>",
            showlegend=False,
        ),
        1,
        2,
    )
    figure.update_xaxes(range=[0, 1], title_text="overlap of the nearest tokens (Jaccard)", row=1, col=2)
    figure.update_yaxes(title_text="tokens", row=1, col=2)
    if context is not None:
        _cka_html(figure, context)
    figure.update_layout(
        title=dict(text=escape_html(_title(result, options)).replace("\n", "<br>"), font=dict(size=13)),
        height=760 if context is not None else None,
        legend=dict(orientation="h", yanchor="top", y=-0.08, x=0),
        margin=dict(t=110),
    )
    return figure


def _cka_html(figure: PlotlyFigure, context: ContextualDiff) -> None:
    import plotly.graph_objects as go

    cka = context.cka  # (layers_a + 1, layers_b + 1)
    figure.add_trace(
        go.Heatmap(
            z=cka.tolist(),
            x=list(range(cka.shape[1])),
            y=list(range(cka.shape[0])),
            zmin=0.0,
            zmax=1.0,
            colorscale="Viridis",
            text=[[f"{v:.2f}" for v in row] for row in cka.tolist()],
            texttemplate="%{text}",
            hovertemplate="layer %{y} of A, layer %{x} of B: CKA %{z:.4f}<extra></extra>",
            colorbar=dict(title="CKA", len=0.45, y=0.22),
        ),
        2,
        2,
    )
    figure.update_yaxes(autorange="reversed", tickvals=list(range(cka.shape[0])), title_text="layer of A", row=2, col=2)
    figure.update_xaxes(tickvals=list(range(cka.shape[1])), title_text="layer of B", row=2, col=2)
