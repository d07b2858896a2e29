"""Drawers for per-layer curves: a `Contextuality` (bertlens.contextual.contextuality: self-similarity,
intra-sentence similarity and the anisotropy baseline) and a `ContextComparison` (bertlens.contextual.context: one
word's vectors across sentences).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .style import PlotOptions, escape_html, figure_title


def _curves(result: Any) -> tuple[str, list[str], list[tuple[str, list[tuple[str, list[float | None]]]]]]:
    """Title, x labels, and panels of named curves for a Contextuality or ContextComparison."""
    from ..contextual.context import ContextComparison

    if isinstance(result, ContextComparison):
        x = [s.layer for s in result.layers]
        title = f"{result.word!r} across {len(result.sentences)} sentences: cosine between its vectors, per layer"
        series: list[tuple[str, list[float | None]]] = [
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
    """Draw the curves on `figure` (matplotlib): one panel per group, layers across."""
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
    figure.suptitle(figure_title(title, options), fontsize=10)


def _curves_html(result: Any, options: PlotOptions) -> Any:
    """The curves as a plotly figure: one panel per group, layers across."""
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
    figure.update_layout(title=dict(text=escape_html(figure_title(title, options))))
    return figure


def contextuality_static(figure: Any, result: Any, options: PlotOptions, notes: list[str]) -> None:
    """Draw a Contextuality's raw and baseline-adjusted curves on `figure` (matplotlib)."""
    _curves_static(figure, result, options)


def contextuality_html(result: Any, options: PlotOptions, notes: list[str]) -> Any:
    """A Contextuality's raw and baseline-adjusted curves as a plotly figure."""
    return _curves_html(result, options)


def context_static(figure: Any, result: Any, options: PlotOptions, notes: list[str]) -> None:
    """Draw a ContextComparison's mean and minimum cosine per layer on `figure` (matplotlib)."""
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    _curves_static(figure, result, options)


def context_html(result: Any, options: PlotOptions, notes: list[str]) -> Any:
    """A ContextComparison's mean and minimum cosine per layer as a plotly figure."""
    notes.append("The input-matrix point is 1 by construction: a word has one row whatever the sentence.")
    return _curves_html(result, options)
