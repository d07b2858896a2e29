"""Drawers for per-layer curves: a `Contextuality` (bertlens.contextual.contextuality: self-similarity,
intra-sentence similarity and the anisotropy baseline) and a `ContextComparison` (bertlens.contextual.context: one
word's vectors across sentences).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .style import MatplotlibFigure, PlotOptions, escape_html, figure_title

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..contextual.context import ContextComparison
    from ..contextual.contextuality import Contextuality


def _curves(
    result: Contextuality | ContextComparison,
) -> tuple[str, list[str], list[tuple[str, list[tuple[str, list[float | None]]]]]]:
    """Title, x labels, and panels of named curves for a Contextuality or ContextComparison."""
    from ..contextual.context import ContextComparison

    if isinstance(result, ContextComparison):
        x = ["input" if s.layer == "input matrix" else s.layer for s in result.layers]  # short: never rotated
        title = f"{result.word!r} across {len(result.sentences)} sentences: cosine between its vectors, per layer"
        series: list[tuple[str, list[float | None]]] = [
            ("mean cosine (this word)", [s.mean_cosine for s in result.layers]),
            ("lowest cosine (this word)", [s.min_cosine for s in result.layers]),
        ]
        baseline = [getattr(s, "baseline", None) for s in result.layers]
        baseline = [None if b is None or not np.isfinite(b) else float(b) for b in baseline]
        if any(b is not None for b in baseline):  # the anisotropy baseline: what unrelated words score per layer
            series.append(("unrelated words (baseline)", baseline))
        if len(result.sentences) == 2:  # one pair of vectors: its mean and its lowest cosine are the same number
            series = [("cosine of its two vectors (this word)", series[0][1]), *series[2:]]
        return title, x, [("similarity of the word's vectors", merged(series))]
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
    return title, x, [("raw", merged(raw)), ("adjusted (minus the baseline)", merged(adjusted))]


def merged(series: list[tuple[str, list[float | None]]]) -> list[tuple[str, list[float | None]]]:
    """The curves with any that equals an earlier one folded into it ("a = b"): a line drawn exactly over another
    would hide it, and its legend entry would name nothing visible."""
    kept: list[tuple[str, list[float | None]]] = []
    for name, ys in series:
        same = next((i for i, (_, other) in enumerate(kept) if other == ys), None)
        if same is None:
            kept.append((name, ys))
        else:
            kept[same] = (f"{kept[same][0]} = {name}", kept[same][1])
    return kept


DODGE = 0.06  # layers apart: curves that run close side by side are shifted this much, so each marker shows


XLABEL = "layer (input = the input matrix's row; 0 = the embedding output)"
# Lines told apart without colour (overlapping curves, grey-scale prints): a dash and a marker each.
STYLES: tuple[tuple[Any, str, str, str], ...] = (  # matplotlib dash, marker; plotly dash, symbol
    ("-", "o", "solid", "circle"),
    ("--", "s", "dash", "square"),
    (":", "D", "dot", "diamond"),
    ("-.", "^", "dashdot", "triangle-up"),
    ((0, (5, 1)), "v", "longdash", "triangle-down"),
)


def _y_range(series: list[tuple[str, list[float | None]]]) -> tuple[float, float]:
    """The y-axis from 0 (or below, for negative values) to 1 (or above): a cosine's scale is never cut."""
    values = [y for _, ys in series for y in ys if y is not None]
    low = min([0.0, *values])
    high = max([1.0, *values]) if any(v > 0.5 for v in values) else max([0.0, *values]) * 1.1 + 0.05
    pad = 0.03 * (high - low)
    return low - (pad if low < 0 else 0.0), high + pad


def _curves_static(figure: MatplotlibFigure, result: Contextuality | ContextComparison, options: PlotOptions) -> None:
    """Draw the curves on `figure` (matplotlib): one panel per group, layers across, the legend below each panel."""
    title, x, panels = _curves(result)
    axes = np.atleast_1d(figure.subplots(1, len(panels)))
    for ax, (heading, series) in zip(axes, panels, strict=True):
        for i, (name, ys) in enumerate(series):
            dash, marker, _, _ = STYLES[i % len(STYLES)]
            values = [np.nan if y is None else y for y in ys]
            wide = 3.2 if i == 0 else 1.6  # the first line wider: a curve drawn over it leaves it visible
            size = 8 if i == 0 else 5
            shift = DODGE * (i - (len(series) - 1) / 2)  # side by side: each marker visible where curves meet
            xs = np.arange(len(x)) + shift
            ax.plot(xs, values, linestyle=dash, marker=marker, markersize=size, linewidth=wide, label=name)
        ax.set_xticks(range(len(x)))
        ax.set_xticklabels(x, fontsize=8)
        ax.set_xlabel(XLABEL if x[0] == "input" else "layer (0 = embedding output)")
        ax.set_ylabel("cosine")
        ax.set_ylim(*_y_range(series))
        ax.axhline(0, color="#444444", linewidth=0.6)
        ax.set_title(heading, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(3, len(series)), frameon=False)
    figure.suptitle(figure_title(title, options), fontsize=10)


def _curves_html(result: Contextuality | ContextComparison, options: PlotOptions) -> PlotlyFigure:
    """The curves as a plotly figure: one panel per group, layers across."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    title, x, panels = _curves(result)
    figure = make_subplots(rows=1, cols=len(panels), subplot_titles=[h for h, _ in panels])
    for col, (_, series) in enumerate(panels, 1):
        for i, (name, ys) in enumerate(series):
            _, _, dash, symbol = STYLES[i % len(STYLES)]
            line = go.Scatter(
                x=x,
                y=ys,
                mode="lines+markers",
                name=name,
                line=dict(dash=dash, width=4 if i == 0 else 2),  # the first wider: visible under the others
                marker=dict(symbol=symbol, size=11 if i == 0 else 7),
                hovertemplate=f"{name}<br>layer %{{x}}: %{{y:.4f}}<extra></extra>",
            )
            figure.add_trace(line, 1, col)
        xlabel = XLABEL if x[0] == "input" else "layer (0 = embedding output)"
        figure.update_xaxes(title_text=xlabel, type="category", automargin=True, row=1, col=col)
        figure.update_yaxes(title_text="cosine", range=list(_y_range(series)), zeroline=True, row=1, col=col)
    figure.update_layout(
        title=dict(text=escape_html(figure_title(title, options))),
        legend=dict(orientation="h", yanchor="top", y=-0.2),
        margin=dict(b=120),
    )
    return figure


def contextuality_static(
    figure: MatplotlibFigure, result: Contextuality, options: PlotOptions, notes: list[str]
) -> None:
    """Draw a Contextuality's raw and baseline-adjusted curves on `figure` (matplotlib)."""
    _curves_static(figure, result, options)


def contextuality_html(result: Contextuality, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """A Contextuality's raw and baseline-adjusted curves as a plotly figure."""
    return _curves_html(result, options)


def context_static(figure: MatplotlibFigure, result: ContextComparison, options: PlotOptions, notes: list[str]) -> None:
    """Draw a ContextComparison's mean and minimum cosine per layer on `figure` (matplotlib)."""
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    _curves_static(figure, result, options)


def context_html(result: ContextComparison, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """A ContextComparison's mean and minimum cosine per layer as a plotly figure."""
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    return _curves_html(result, options)
