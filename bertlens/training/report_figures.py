"""The watch report's pictures (matplotlib figures on a private Agg canvas, inlined as SVG by `watch_html.py`).

The learning groups' words in one shared plane at a few checkpoints (small multiples, the same axes in every panel),
the category purity and the frequency plateau over checkpoints (word2vec's purity beside it), each benchmark's
Spearman (word2vec's dashed), loss and validation perplexity, the anisotropy baseline and the row norms, and the
probe words' rows moving in one shared plane. Every line is named in a legend beside or below its plot (never over
a point), and every label lies inside its figure.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Where legends go: beside the plot, over nothing (OUTSIDE); under the plot's x label (BELOW).
OUTSIDE: dict[str, Any] = dict(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8, frameon=False)
BELOW: dict[str, Any] = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, frameon=False)
MOST_PANELS = 6  # checkpoints drawn as small multiples of the group words
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # one per benchmark line (its colour too), so each shows alone
GROUPS_HEADING = "The group words' rows forming, in one shared plane"
PLATEAU_TAG = (
    "\u201cplateau\u201d in a panel's title: the rows are on the frequency plateau at that checkpoint, the probe "
    "words' nearest rows mostly the text's most frequent tokens, whatever the words mean (shaded in the next picture)."
)


def svg(figure: Any) -> str:
    """A figure as an inline <svg> element (no date: the same figure gives the same text)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def new_figure(width: float, height: float) -> Figure:
    """A private matplotlib figure on the Agg canvas (no pyplot: nothing global changes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def panel_indices(steps: Sequence[int], plateau: Mapping[str, Any] | None, most: int = MOST_PANELS) -> list[int]:
    """Which checkpoints (indices into `steps`) the small multiples show: all when at most `most`, else the first,
    the last, the plateau's middle and the checkpoint where the rows left it, and evenly spaced others up to `most`."""
    n = len(steps)
    if n <= most:
        return list(range(n))
    chosen = {0, n - 1}
    if plateau and plateau.get("steps"):
        on = list(plateau["steps"])
        chosen.add(steps.index(on[len(on) // 2]) if on[len(on) // 2] in steps else 0)
        if plateau.get("left_at") in steps:
            chosen.add(steps.index(plateau["left_at"]))
    spaced = [round(i * (n - 1) / (most - 1)) for i in range(most)]
    for index in sorted(spaced, key=lambda i: min(abs(i - c) for c in chosen), reverse=True):
        if len(chosen) >= most:
            break
        chosen.add(index)
    return sorted(chosen)


def _purity(record: Mapping[str, Any]) -> float | None:
    found = record.get("category_purity")
    return None if not found else float(found["purity"])


def groups_figure(
    groups: Mapping[str, Any], records: Sequence[Mapping[str, Any]], plateau: Mapping[str, Any] | None
) -> Figure:
    """Small multiples: the group words' rows at a few checkpoints, one shared plane (the same axes everywhere)."""
    from matplotlib.lines import Line2D

    from ..plots.style import palette_for

    steps = list(groups["steps"])
    by_step = {r["step"]: r for r in records}
    picks = panel_indices(steps, plateau)
    names = list(dict.fromkeys(groups["groups"]))
    palette = dict(zip(names, palette_for(len(names)), strict=True))
    colours = [palette[g] for g in groups["groups"]]
    columns = min(3, len(picks))
    rows = -(-len(picks) // columns)
    figure = new_figure(3.3 * columns + 0.4, 3.0 * rows + 0.7)
    axes = np.atleast_1d(figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)).ravel()
    points = np.asarray(groups["points"], dtype=np.float64)  # (steps, words, 2)
    low, high = points.reshape(-1, 2).min(axis=0), points.reshape(-1, 2).max(axis=0)
    margin = (high - low) * 0.06 + 1e-9
    on_plateau = set(plateau["steps"]) if plateau else set()
    for axis, index in zip(axes, picks, strict=False):
        frame = points[index]  # (words, 2)
        axis.scatter(frame[:, 0], frame[:, 1], s=22, c=colours, edgecolors="white", linewidths=0.4)
        step = steps[index]
        purity = _purity(by_step.get(step, {}))
        title = f"step {step}" + ("" if purity is None else f" · purity {purity:.2f}")
        if step in on_plateau:
            title += " · plateau"
        axis.set_title(title, fontsize=9)
        axis.set_xlim(low[0] - margin[0], high[0] + margin[0])
        axis.set_ylim(low[1] - margin[1], high[1] + margin[1])
        axis.tick_params(labelsize=7)
    for axis in axes[len(picks) :]:
        axis.set_visible(False)
    variance = groups.get("variance") or [0.0, 0.0]
    figure.supxlabel(f"first principal direction ({variance[0]:.0%} of the variance)", fontsize=8)
    figure.supylabel(f"second principal direction ({variance[1]:.0%} of the variance)", fontsize=8)
    handles = [
        Line2D([], [], ls="", marker="o", ms=6, color=palette[n], label=f"{n} ({groups['groups'].count(n)})")
        for n in names
    ]
    figure.legend(handles=handles, loc="outside upper center", ncol=min(len(names), 8), fontsize=8, frameon=False)
    return figure


def purity_figure(records: Sequence[Mapping[str, Any]], word2vec: Mapping[str, Any] | None, plateau: Any) -> Figure:
    """Category purity (with its chance level and word2vec's) and the frequency plateau's measures, per checkpoint."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    steps = [r["step"] for r in records]
    purity = [_purity(r) for r in records]
    frequency = [r.get("frequency") or {} for r in records]
    has_purity = any(p is not None for p in purity)
    has_frequency = any(f.get("top_share") is not None for f in frequency)
    panels = int(has_purity) + int(has_frequency)
    figure = new_figure(10 if panels == 2 else 7, 3.6)
    axes = list(np.atleast_1d(figure.subplots(1, panels, squeeze=False)).ravel())
    engine = figure.get_layout_engine()  # new_figure's constrained layout
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(wspace=0.12)  # the right panel's axis name clear of the left panel
    span = _plateau_span(steps, plateau)
    if has_purity:
        axis = axes.pop(0)
        last = next(r["category_purity"] for r in reversed(records) if r.get("category_purity"))
        axis.plot(steps, [np.nan if p is None else p for p in purity], "o-", ms=3, color="C0", label="category purity")
        chance = [np.nan if not r.get("category_purity") else r["category_purity"]["chance"] for r in records]
        axis.plot(steps, chance, "--", color="grey", lw=1, label="chance (random rows)")
        theirs = (word2vec or {}).get("category_purity")
        if theirs:
            axis.axhline(theirs["purity"], color="C2", ls=":", lw=1.5, label=f"word2vec ({theirs['words_used']} words)")
        if span:
            axis.axvspan(*span, color="#f2c14e", alpha=0.25, lw=0, label="frequency plateau")
        axis.set_ylim(0, 1.02)
        axis.set_xlabel("step")
        axis.set_ylabel("purity")
        axis.set_title(
            f"words' {last['k']} nearest among the groups' {last['words_used']} words: own group's share", fontsize=9
        )
        axis.legend(ncol=2, **BELOW)
    if has_frequency:
        axis = axes.pop(0)
        top = next(f["top"] for f in frequency if f.get("top_share") is not None)
        share = [np.nan if f.get("top_share") is None else f["top_share"] for f in frequency]
        axis.plot(steps, share, "o-", ms=3, color="C3", label=f"probes' nearest among the {top} most frequent")
        axis.plot(
            steps, [f.get("chance", np.nan) for f in frequency], "--", color="#d98c8c", lw=1, label="its chance level"
        )
        norm = [np.nan if f.get("norm_spearman") is None else f["norm_spearman"] for f in frequency]
        axis.plot(steps, norm, "s-", ms=3, color="C4", label="Spearman(row norm, frequency)")
        if plateau:
            axis.axhline(plateau["threshold"], color="black", lw=0.6, ls=":", label="plateau threshold")
        if span:
            axis.axvspan(*span, color="#f2c14e", alpha=0.25, lw=0, label="frequency plateau")
        axis.axhline(0, color="grey", lw=0.5)
        axis.set_ylim(min([-0.05] + [v - 0.05 for v in norm if np.isfinite(v)]), 1.02)
        axis.set_xlabel("step")
        axis.set_ylabel("share / Spearman")
        axis.set_title("frequency first: nearest rows are the most frequent tokens", fontsize=9)
        axis.legend(ncol=2, **BELOW)
    return figure


def _plateau_span(steps: Sequence[int], plateau: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """The x range to shade for the plateau: from its first to its last checkpoint, half a checkpoint either side,
    within the checkpoints' own range (never before the first nor past the last)."""
    if not plateau or not plateau.get("steps") or not steps:
        return None
    on = list(plateau["steps"])
    gap = min((b - a for a, b in pairwise(steps)), default=1) / 2
    return max(on[0] - gap, steps[0]), min(on[-1] + gap, steps[-1])


def similarity_figure(records: Sequence[Mapping[str, Any]], word2vec: Mapping[str, Any] | None) -> tuple[str, Any]:
    """Each benchmark's Spearman per checkpoint (coverage in the legend), word2vec's as a dashed line of its colour.
    Each benchmark has its own colour and marker, and a line drawn earlier is wider with larger markers, so lines that
    coincide (two sets scoring alike) all stay visible, the later inside the earlier."""
    steps = [r["step"] for r in records]
    figure = new_figure(8, 3.4)
    axis = figure.add_subplot()
    names = list(records[-1]["benchmarks"])
    baselines = False
    for i, name in enumerate(names):
        color, later = f"C{i % 10}", len(names) - 1 - i  # lines drawn after this one
        spearman = [r["benchmarks"].get(name, {}).get("spearman") for r in records]
        label = _label(name, records[-1]["benchmarks"].get(name))
        values = [np.nan if v is None else v for v in spearman]
        marker, width, size = MARKERS[i % len(MARKERS)], 1.2 + 0.7 * later, 3.5 + 1.3 * later
        axis.plot(steps, values, "-", color=color, label=label, marker=marker, lw=width, ms=size, zorder=2 + i)
        theirs = (word2vec or {}).get("benchmarks", {}).get(name)
        if theirs and theirs.get("spearman") is not None:
            axis.axhline(theirs["spearman"], color=color, ls="--", lw=1, label=_label(f"{name} (word2vec", theirs, ")"))
            baselines = True
    axis.set_xlabel("step")
    axis.set_ylabel("Spearman")
    axis.axhline(0, color="grey", lw=0.5)
    if baselines:  # how to read the dashes, as an entry of its own
        axis.plot([], [], color="black", ls="--", lw=1, label="dashed: word2vec, same corpus and time")
    axis.legend(**OUTSIDE)
    note = " (dashed: word2vec, same corpus and wall-clock time)" if baselines else ""
    return f"Word similarity of the input matrix{note}", figure


def _label(name: str, scores: Mapping[str, Any] | None, close: str = "") -> str:
    """A benchmark's legend entry with its coverage where known: 'men (412 of 3000 pairs)'."""
    if not scores or "pairs_used" not in scores:
        return name + close
    coverage = f"{scores['pairs_used']} of {scores['pairs_total']} pairs"
    return f"{name}, {coverage})" if close else f"{name} ({coverage})"


def loss_figure(records: Sequence[Mapping[str, Any]], log: Sequence[Mapping[str, Any]]) -> Figure:
    """Training loss per logged step and validation perplexity per checkpoint (log scale), one legend below."""
    figure = new_figure(8, 3.2)
    left = figure.add_subplot()
    handles = []
    if log:
        handles += left.plot(
            [r["step"] for r in log], [r["loss"] for r in log], color="#1f77b4", lw=1, label="training loss"
        )
    left.set_xlabel("step")
    left.set_ylabel("loss (nats)")
    ppl = [(r["step"], r["perplexity"]) for r in records if r["perplexity"] is not None]
    if ppl:
        right = left.twinx()
        handles += right.plot(
            [s for s, _ in ppl], [p for _, p in ppl], "o-", color="#d62728", label="validation perplexity"
        )
        right.set_yscale("log")
        right.set_ylabel("validation perplexity")
    if handles:  # one legend for both axes, below the plot
        left.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8, frameon=False)
    return figure


def norms_figure(records: Sequence[Mapping[str, Any]]) -> Figure:
    """The anisotropy baseline and the row norms' percentiles per checkpoint."""
    steps = [r["step"] for r in records]
    figure = new_figure(10, 3.2)
    one, two = figure.subplots(1, 2)
    one.plot(steps, [r["baseline"] for r in records], "o-", ms=3)
    one.set_xlabel("step")
    one.set_ylabel("mean cosine of random rows")
    one.set_title("anisotropy baseline", fontsize=9)
    for p, style in (("p95", ":"), ("p75", "--"), ("p50", "-"), ("p25", "--"), ("p5", ":")):
        width = 2.0 if p == "p50" else 1.0
        two.plot(
            steps, [r["norms"][p] for r in records], style, color="#2ca02c", lw=width, label=f"{p[1:]}th percentile"
        )
    two.set_xlabel("step")
    two.set_ylabel("row norm")
    two.set_title("row norms", fontsize=9)
    two.legend(**OUTSIDE)
    return figure


def probes_figure(projection: Mapping[str, Sequence[tuple[int, float, float]]]) -> Figure:
    """The probe words' rows moving in one shared plane, each word written at its last position."""
    from matplotlib.lines import Line2D

    from ..plots.style import keep_inside, palette_for, place_apart, readable

    figure = new_figure(8, 6)
    axis = figure.add_subplot()
    texts = []
    palette = palette_for(len(projection))  # a colour per probe word (tab20 past ten)
    for i, (word, path) in enumerate(projection.items()):
        xs, ys = [p[1] for p in path], [p[2] for p in path]
        color = palette[i]
        axis.plot(xs, ys, "-", color=color, lw=0.8, alpha=0.6)
        axis.scatter(xs, ys, s=[6 + 30 * j / max(len(xs) - 1, 1) for j in range(len(xs))], color=color)
        texts.append(
            axis.annotate(
                word, (xs[-1], ys[-1]), xytext=(4, 3), textcoords="offset points", fontsize=9, color=readable(color)
            )
        )
    axis.set_title("probe rows, one shared PCA plane (small dot: first checkpoint, large: last)", fontsize=9)
    size = [Line2D([], [], ls="", marker="o", ms=m, color="grey", label=t) for m, t in ((2.5, "first"), (6, "last"))]
    axis.legend(handles=size, title="checkpoint", **OUTSIDE)
    keep_inside(axis, texts)
    place_apart(figure, texts)  # every probe word readable: none written over another
    keep_inside(axis, texts)
    return figure


def report_figures(
    records: list[dict[str, Any]],
    log: list[dict[str, Any]],
    projection: dict[str, list[tuple[int, float, float]]],
    word2vec: dict[str, Any] | None,
    groups: Mapping[str, Any] | None = None,
    plateau: Mapping[str, Any] | None = None,
) -> list[tuple[str, Any]]:
    """The report's pictures as (heading, matplotlib Figure), in the page's order: every line named in a legend
    beside or below its plot (never over a point), every label inside the figure."""
    figures: list[tuple[str, Any]] = []
    if groups and groups.get("points") and any(r.get("category_purity") for r in records):  # enough words to judge
        figures.append((GROUPS_HEADING, groups_figure(groups, records, plateau)))
    frequency = any((r.get("frequency") or {}).get("top_share") is not None for r in records)
    if frequency or any(r.get("category_purity") for r in records):
        figures.append(("Category purity and the frequency plateau", purity_figure(records, word2vec, plateau)))
    figures.append(similarity_figure(records, word2vec))
    figures.append(("Loss and validation perplexity", loss_figure(records, log)))
    figures.append(("Anisotropy and norms", norms_figure(records)))
    if projection:
        figures.append(("The probe words' rows moving", probes_figure(projection)))
    return figures


def captions(plateau: Mapping[str, Any] | None) -> dict[str, str]:
    """A line to show under a picture, by its heading: what a mark in it means (the panels' plateau tag)."""
    return {GROUPS_HEADING: PLATEAU_TAG} if plateau and plateau.get("steps") else {}
