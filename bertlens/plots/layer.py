"""Drawers for an `EmbeddingLayerExplanation` (bertlens.embeddings.layer): one heat map per step of the embedding
layer (rows looked up, their sum, LayerNorm, projection), tokens down and dimensions across.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import InputError
from ..core.results import visible
from .style import MatplotlibFigure, PlotOptions, escape_html, figure_title

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..embeddings.layer_results import EmbeddingLayerExplanation


def _explain_parts(explanation: EmbeddingLayerExplanation) -> list[tuple[str, np.ndarray]]:
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


def _explain_checked(explanation: EmbeddingLayerExplanation) -> str:
    """The heading: the family's formula, and whether the decomposition matched hidden_states[0]."""
    title = f"{explanation.family}: {explanation.formula}"
    if explanation.checked:
        verdict = "matches" if explanation.matches else "DIFFERS FROM"
        title += f"\nchecked: {verdict} the model's hidden_states[0] (max |diff| {explanation.max_abs_diff:.1e})"
    return title


ROWS: tuple[str, ...] = ("word_embeddings[id]", "token_type_embeddings[segment]", "position_embeddings[position]")
ROWS += ("sum of the rows (LayerNorm's input)",)  # compared with each other: one colour scale


def _groups(parts: list[tuple[str, np.ndarray]]) -> list[tuple[str, list[int], float]]:
    """Panels that are compared share a colour scale: the rows and their sum, then the normalised steps. Each group:
    (name, panel indices, colour limit = the 99th percentile of its |values|: a few outlier dimensions would wash
    out the rest)."""
    groups = []
    for name, members in (
        ("rows and sum", [i for i, (heading, _) in enumerate(parts) if heading in ROWS]),
        ("normalised", [i for i, (heading, _) in enumerate(parts) if heading not in ROWS]),
    ):
        if members:
            values = np.concatenate([np.abs(parts[i][1]).ravel() for i in members])
            limit = float(np.percentile(values, 99)) if values.size else 1.0
            groups.append((name, members, limit if limit > 0 else 1.0))
    return groups


_SCALE_NOTE = (
    "The rows and their sum share one colour scale, the normalised steps another; each is clipped at the 99th "
    "percentile of its |values|."
)


def explain_static(
    figure: MatplotlibFigure, explanation: EmbeddingLayerExplanation, options: PlotOptions, notes: list[str]
) -> None:
    """Draw one heat map per step of the layer on `figure` (matplotlib); the figure grows with the tokens."""
    if not explanation.tokens:
        raise InputError("The explanation has no tokens to draw.", "Explain a text with at least one token.")
    parts = _explain_parts(explanation)
    tokens = len(explanation.tokens)
    figure.set_size_inches(options.width, max(options.height, 1.2 + len(parts) * (0.5 + 0.16 * tokens)))
    pieces = [
        f"{visible(t.piece)} ({t.position_id})" if t.position_id is not None else visible(t.piece)
        for t in explanation.tokens
    ]
    axes = np.atleast_1d(figure.subplots(len(parts), 1, sharex=False))
    for name, members, limit in _groups(parts):
        image = None
        for i in members:
            heading, matrix = parts[i]
            ax = axes[i]
            image = ax.imshow(matrix, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
            ax.set_yticks(range(tokens))
            ax.set_yticklabels(pieces, fontsize=7 if tokens <= 30 else 5)
            norms = np.linalg.norm(matrix, axis=1)
            ax.set_title(f"{heading}   (norms {norms.min():.3g}–{norms.max():.3g})", fontsize=8, loc="left")
            ax.tick_params(axis="x", labelsize=7)
        bar = figure.colorbar(image, ax=[axes[i] for i in members], extend="both", pad=0.01, aspect=12 * len(members))
        bar.set_label(name, fontsize=8)
    axes[-1].set_xlabel("dimension")
    notes.append(_SCALE_NOTE)
    notes.extend(f"absent: {a}" for a in explanation.absent_parts)
    figure.suptitle(figure_title(_explain_checked(explanation), options), fontsize=9)


def explain_html(explanation: EmbeddingLayerExplanation, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """The steps of the layer as stacked plotly heat maps, each value on hover."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not explanation.tokens:
        raise InputError("The explanation has no tokens to draw.", "Explain a text with at least one token.")
    parts = _explain_parts(explanation)
    tokens = len(explanation.tokens)
    pieces = [f"{t.index}: {escape_html(visible(t.piece))}" for t in explanation.tokens]
    figure = make_subplots(rows=len(parts), cols=1, subplot_titles=[h for h, _ in parts], vertical_spacing=0.06)
    for g, (name, members, limit) in enumerate(_groups(parts)):
        axis = "coloraxis" if g == 0 else f"coloraxis{g + 1}"
        for i in members:
            heading, matrix = parts[i]
            figure.add_trace(
                go.Heatmap(
                    z=matrix.astype(np.float64),
                    y=pieces,
                    coloraxis=axis,
                    hovertemplate=f"{heading}<br>%{{y}}, dim %{{x}}: %{{z:.5f}}<extra></extra>",
                ),
                i + 1,
                1,
            )
            figure.update_yaxes(autorange="reversed", row=i + 1, col=1)
        domains = [figure.layout[f"yaxis{'' if i == 0 else i + 1}"].domain for i in members]  # (bottom, top)
        low, high = min(d[0] for d in domains), max(d[1] for d in domains)
        bar = dict(title=dict(text=name, side="right"), y=(low + high) / 2, len=high - low, thickness=14)
        figure.update_layout({axis: dict(colorscale="RdBu", reversescale=True, cmin=-limit, cmax=limit, colorbar=bar)})
    notes.append(_SCALE_NOTE)
    notes.extend(f"absent: {a}" for a in explanation.absent_parts)
    if options.title is not None:
        title = escape_html(options.title)
    else:  # the formula and the check as smaller lines under a short heading: plotly does not wrap titles
        lines = [escape_html(line) for line in _explain_checked(explanation).split("\n")]
        title = f"{escape_html(explanation.family)} embedding layer" + "".join(f"<br><sup>{x}</sup>" for x in lines)
    figure.update_layout(title=dict(text=title), margin=dict(t=130))
    pixels = int(100 * max(options.height, 1.2 + len(parts) * (0.5 + 0.16 * tokens)))
    figure.update_layout(height=pixels)  # grows with the tokens: the page keeps at least this height
    return figure
