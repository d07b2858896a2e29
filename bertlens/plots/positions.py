"""Drawers for a `PositionSimilarity` (bertlens.embeddings.positions): the cosine of every pair of position rows as
a heat map, with the token-type rows beside it when the model has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .style import MatplotlibFigure, PlotOptions, escape_html, figure_title, text_colour

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..embeddings.positions import PositionSimilarity

SCALE = "RdBu_r"  # red positive, blue negative, white 0 (matplotlib's name; plotly: RdBu reversed)


def cell_colour(value: float) -> str:
    """The colour of a cosine's cell on the -1..1 scale, as hex."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    return to_hex(colormaps[SCALE]((value + 1) / 2))


def _positions_title(similarity: PositionSimilarity, options: PlotOptions) -> str:
    """The heading: the family and how many position rows are compared."""
    default = f"{similarity.family}: cosine of position_embeddings rows ({similarity.rows} of {similarity.table_rows})"
    return figure_title(default, options)


def positions_static(
    figure: MatplotlibFigure, similarity: PositionSimilarity, options: PlotOptions, notes: list[str]
) -> None:
    """Draw the position cosines as a heat map on `figure` (matplotlib), the token-type cosines beside it."""
    notes.extend(similarity.notes)
    types = similarity.token_types
    grid = figure.add_gridspec(1, 2, width_ratios=[4, 1]) if types is not None else figure.add_gridspec(1, 1)
    ax = figure.add_subplot(grid[0, 0])
    image = ax.imshow(similarity.cosine, cmap=SCALE, vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("position row j")
    ax.set_ylabel("position row i")
    figure.colorbar(image, ax=ax, label="cosine", shrink=0.8)
    if similarity.first_position:
        ax.axhline(similarity.first_position - 0.5, color="black", linewidth=0.6)
        ax.axvline(similarity.first_position - 0.5, color="black", linewidth=0.6)
    if types is not None:
        tx = figure.add_subplot(grid[0, 1])
        tx.imshow(types, cmap=SCALE, vmin=-1, vmax=1)
        for i in range(len(types)):
            for j in range(len(types)):  # black or white, whichever reads on the cell's colour
                colour = text_colour(cell_colour(float(types[i, j])))
                tx.text(j, i, f"{types[i, j]:.2f}", ha="center", va="center", fontsize=9, color=colour)
        tx.set_xticks(range(len(types)))
        tx.set_yticks(range(len(types)))
        tx.set_title("token-type rows", fontsize=8)
    figure.suptitle(_positions_title(similarity, options), fontsize=10)


def positions_html(similarity: PositionSimilarity, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """The position cosines (and token-type cosines) as plotly heat maps."""
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
        figure.add_trace(go.Heatmap(z=types, showscale=False, hovertemplate=hover, **scale), 1, 2)
        for i in range(len(types)):
            for j in range(len(types)):  # each value in black or white, whichever reads on its cell
                colour = text_colour(cell_colour(float(types[i, j])))
                figure.add_annotation(
                    x=j, y=i, text=f"{types[i, j]:.2f}", showarrow=False, font=dict(color=colour), row=1, col=2
                )
        rows = list(range(len(types)))  # whole row numbers only: no half-row ticks between the cells
        figure.update_yaxes(autorange="reversed", tickvals=rows, title_text="token-type row", row=1, col=2)
        figure.update_xaxes(tickvals=rows, title_text="token-type row", row=1, col=2)
    figure.update_yaxes(autorange="reversed", title_text="position row i", row=1, col=1)
    figure.update_xaxes(title_text="position row j", row=1, col=1)
    figure.update_layout(title=dict(text=escape_html(_positions_title(similarity, options))))
    return figure
