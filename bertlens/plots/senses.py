"""Drawers for a `SensesResult` (bertlens.senses.senses): every occurrence of a word in 2-D (the PCA of its
unit vectors), coloured by sense, as a matplotlib figure (PNG, SVG) or a plotly figure (HTML: each occurrence's
sentence on hover, and a star per sense whose hover lists its most typical sentences).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .style import MatplotlibFigure, PlotOptions, axis_names, escape_html, figure_title, palette_for, short

if TYPE_CHECKING:
    from plotly.graph_objects import Figure as PlotlyFigure  # plotly has no type information: Any to mypy

    from ..senses.senses import Sense, SensesResult
    from ..senses.senses_text import Snippet


def _title(result: SensesResult) -> str:
    return f"{result.word!r}: {result.k} sense{'s' if result.k != 1 else ''} at layer {result.layer}"


def _subtitle(result: SensesResult) -> str:
    how = "k chosen by silhouette" if result.auto else "k given"
    return f"{result.clustered:,} occurrences ({how}); PCA of their unit vectors"


NAME_WORDS = 3  # words that name a sense in the legend
PHRASE_WORDS = 3  # words either side of the occurrence in the sense's most typical sentence


def sense_name(sense: Sense) -> str:
    """What the legend calls a sense, on two lines: the words that set it apart, as the senses table has them ("sense
    0 (44): school, season, set"), and its most typical sentence around the word ("“…set a world endurance flight
    record in 1935 .…”"), which names the sense even where its words say little."""
    words = ", ".join(w.word for w in sense.words[:NAME_WORDS]) or "no distinctive words"
    name = short(f"sense {sense.sense} ({sense.size}): {words}", 56)
    if not sense.typical:
        return name
    snip = sense.typical[0]
    before = snip.snippet[: snip.start].split()[-PHRASE_WORDS:]
    after = snip.snippet[snip.end :].split()[:PHRASE_WORDS]
    while after and not any(c.isalnum() for c in after[-1]):  # a phrase ends on a word, not on a stop or comma
        after.pop()
    phrase = " ".join([*before, snip.snippet[snip.start : snip.end], *after])
    return f"{name}\n“…{short(phrase, 50)}…”"


def _arrays(result: SensesResult) -> tuple[np.ndarray, np.ndarray]:
    xy = np.array([[p.x, p.y] for p in result.points], dtype=np.float64).reshape(-1, 2)  # (n, 2)
    senses = np.array([p.sense for p in result.points], dtype=np.int64)  # (n,)
    return xy, senses


def senses_static(figure: MatplotlibFigure, result: SensesResult, options: PlotOptions, notes: list[str]) -> None:
    """Draw the occurrences on `figure` (matplotlib), one colour per sense, the sense's centre as a star."""
    xy, senses = _arrays(result)
    palette = palette_for(result.k)
    ax = figure.add_subplot()
    size = 18 if len(xy) <= 2000 else 5
    for sense in result.senses:
        keep = senses == sense.sense
        colour = palette[sense.sense % len(palette)]
        ax.scatter(xy[keep, 0], xy[keep, 1], color=colour, s=size, linewidths=0, alpha=0.8, label=sense_name(sense))
        if keep.any():
            ax.scatter(*xy[keep].mean(axis=0), color=colour, s=160, marker="*", edgecolors="black", linewidths=0.6)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False, markerscale=1.5, labelspacing=1.2)
    axes = axis_names("pca", result.explained, 2)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    figure.suptitle(figure_title(_title(result), options), fontsize=10)
    ax.set_title(_subtitle(result), fontsize=8)
    notes.append("Stars: each sense's mean position in the picture; the HTML shows every occurrence's sentence.")


def _marked(snip: Snippet, width: int = 160) -> str:
    """A snippet as HTML with the word in bold, cut around it to about `width` characters."""
    text, start, end = snip.snippet, snip.start, snip.end
    lo = max(0, start - width // 2)
    hi = min(len(text), end + width // 2)
    before = ("…" if lo else "") + escape_html(text[lo:start])
    after = escape_html(text[end:hi]) + ("…" if hi < len(text) else "")
    return f"{before}<b>{escape_html(text[start:end])}</b>{after}"


def senses_html(result: SensesResult, options: PlotOptions, notes: list[str]) -> PlotlyFigure:
    """The occurrences as a plotly figure: one trace per sense (its sentences on hover), a star per sense."""
    import plotly.graph_objects as go

    xy, senses = _arrays(result)
    palette = palette_for(result.k)
    figure = go.Figure()
    kind = go.Scattergl if len(xy) > 5000 else go.Scatter
    for sense in result.senses:
        keep = np.flatnonzero(senses == sense.sense)
        colour = palette[sense.sense % len(palette)]
        hover = [
            f"sense {sense.sense}<br>{_marked(result.points[i].occurrence)}"
            f"<br><i>{escape_html(result.points[i].occurrence.file.rsplit('/', 1)[-1])}:"
            f"{result.points[i].occurrence.line}</i>"
            for i in keep
        ]
        figure.add_trace(
            kind(
                x=xy[keep, 0],
                y=xy[keep, 1],
                mode="markers",
                name=escape_html(sense_name(sense)).replace("\n", "<br>"),
                legendgroup=str(sense.sense),
                hovertext=hover,
                hoverinfo="text",
                marker=dict(size=7, color=colour, opacity=0.8),
            )
        )
        if len(keep):
            typical = "<br>".join(f"• {_marked(s, 120)}" for s in sense.typical)
            words = escape_html(", ".join(w.word for w in sense.words))
            centre = xy[keep].mean(axis=0)
            figure.add_trace(
                go.Scatter(
                    x=[centre[0]],
                    y=[centre[1]],
                    mode="markers",
                    name=f"sense {sense.sense}: typical",
                    legendgroup=str(sense.sense),
                    showlegend=False,
                    hovertext=[f"<b>sense {sense.sense}</b> ({sense.size}, {sense.share:.0%})<br>{words}<br>{typical}"],
                    hoverinfo="text",
                    marker=dict(size=18, color=colour, symbol="star", line=dict(width=1, color="black")),
                )
            )
    axes = axis_names("pca", result.explained, 2)
    figure.update_layout(
        title=dict(text=f"{escape_html(figure_title(_title(result), options))}<br><sup>{_subtitle(result)}</sup>"),
        xaxis_title=axes[0],
        yaxis_title=axes[1],
        legend=dict(title="sense"),
    )
    notes.append("Hover: each occurrence's sentence; a sense's star lists its most typical sentences.")
    return figure
