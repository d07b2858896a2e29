"""The HTML page of a watch report: matplotlib SVG plots inlined in one self-contained page (nothing is fetched).

Loss and validation perplexity, the benchmarks' Spearman per checkpoint (with the word2vec baseline dashed), the
anisotropy baseline and row-norm percentiles, the probe words' rows moving in one shared PCA plane, and tables of the
scores and of the probe words' nearest tokens at the first, middle and last checkpoints.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

HOW_ROWS_LEARN = (
    "How the rows of word_embeddings get gradients. The loss is masked-LM: at every step about 15% of the batch's "
    "tokens are chosen and predicted, a cross-entropy over the whole vocabulary. On the input side only the rows of "
    "tokens present in the step's batch receive gradient (a row gets the gradients of the positions that looked it "
    "up; every other row exactly zero), so frequent tokens' rows move at every step and rare ones' seldom. But the "
    "MLM decoder is tied to word_embeddings (the output projection is the same matrix), and its softmax sends "
    "gradient to every row at every step: the predicted token's row is pulled toward the hidden state that predicts "
    "it, every other row pushed away in proportion to its predicted probability. AdamW's weight decay shrinks every "
    "row a little at each step, and its momentum keeps a row moving for a while after its last gradient. So a row "
    "changes even in steps where its token is absent, and the rows of rare tokens are shaped mostly as output vectors."
)


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float, height: float) -> Any:
    """A private matplotlib figure on the Agg canvas (no pyplot: nothing global changes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


OUTSIDE = dict(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8, frameon=False)  # beside the plot, over nothing


def report_figures(
    records: list[dict[str, Any]],
    log: list[dict[str, Any]],
    projection: dict[str, list[tuple[int, float, float]]],
    word2vec: dict[str, Any] | None,
) -> list[tuple[str, Any]]:
    """The report's pictures as (heading, matplotlib Figure): every line named in a legend beside its plot (never
    over a line), every label inside the figure."""
    from matplotlib.lines import Line2D

    from ..plots.style import keep_inside, palette_for, place_apart, readable

    steps = [r["step"] for r in records]
    figures: list[tuple[str, Any]] = []

    figure = _figure(8, 3.2)
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
    figures.append(("Loss and validation perplexity", figure))

    figure = _figure(8, 3.4)
    axis = figure.add_subplot()
    names = list(records[-1]["benchmarks"])
    baselines = False
    for i, name in enumerate(names):
        color = f"C{i % 10}"
        spearman = [r["benchmarks"].get(name, {}).get("spearman") for r in records]
        axis.plot(steps, [np.nan if v is None else v for v in spearman], "o-", color=color, label=name, ms=3)
        if word2vec and name in word2vec["benchmarks"] and word2vec["benchmarks"][name]["spearman"] is not None:
            axis.axhline(
                word2vec["benchmarks"][name]["spearman"], color=color, ls="--", lw=1, label=f"{name} (word2vec)"
            )
            baselines = True
    axis.set_xlabel("step")
    axis.set_ylabel("Spearman")
    axis.axhline(0, color="grey", lw=0.5)
    if baselines:  # how to read the dashes, as an entry of its own
        axis.plot([], [], color="black", ls="--", lw=1, label="dashed: word2vec, same corpus and time")
    axis.legend(**OUTSIDE)
    note = " (dashed: word2vec, same corpus and wall-clock time)" if baselines else ""
    figures.append((f"Word similarity of the input matrix{note}", figure))

    figure = _figure(10, 3.2)
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
    figures.append(("Anisotropy and norms", figure))

    if projection:
        figure = _figure(8, 6)
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
        size = [
            Line2D([], [], ls="", marker="o", ms=m, color="grey", label=t) for m, t in ((2.5, "first"), (6, "last"))
        ]
        axis.legend(handles=size, title="checkpoint", **OUTSIDE)
        keep_inside(axis, texts)
        place_apart(figure, texts)  # every probe word readable: none written over another
        keep_inside(axis, texts)
        figures.append(("The probe words' rows moving", figure))
    return figures


def report_html(
    folder: Path,
    records: list[dict[str, Any]],
    log: list[dict[str, Any]],
    projection: dict[str, list[tuple[int, float, float]]],
    word2vec: dict[str, Any] | None,
    shared: dict[str, dict[str, Any]] | None = None,
) -> str:
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "bertlens"}):
        figures = [(title, _svg(figure)) for title, figure in report_figures(records, log, projection, word2vec)]
    names = list(records[-1]["benchmarks"])

    picks = sorted({0, len(records) // 2, len(records) - 1})
    neighbour_rows = []
    for probe in records[-1]["neighbors"]:
        cells = "".join(
            f"<td>{html.escape(' '.join(t for t, _ in records[i]['neighbors'].get(probe, [])))}</td>" for i in picks
        )
        neighbour_rows.append(f"<tr><th>{html.escape(probe)}</th>{cells}</tr>")
    heads = "".join(f"<th>step {records[i]['step']}</th>" for i in picks)
    w2v_text = ""
    if word2vec:
        w2v_text = (
            f"<p>word2vec baseline: skip-gram, {word2vec['vector_size']} dimensions, {word2vec['threads']} thread(s), "
            f"{word2vec['words_trained']:,} words in {word2vec['seconds']:.0f} s on the same corpus.</p>"
        )
    score_rows = "".join(
        f"<tr><td>{r['step']}</td><td>{r['tokens']:,}</td><td>{_fmt(r['perplexity'])}</td><td>{_fmt(r['baseline'])}</td>"
        + "".join(_score_cell(r["benchmarks"].get(n)) for n in names)
        + "</tr>"
        for r in records
    )
    if word2vec:
        score_rows += (
            "<tr><td>word2vec</td><td></td><td></td><td></td>"
            + "".join(_score_cell(word2vec["benchmarks"].get(n)) for n in names)
            + "</tr>"
        )
    name_heads = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    shared_text = ""
    if shared:
        shared_rows = "".join(
            f"<tr><td>{html.escape(n)}</td><td>{s['pairs_shared']} of {s['pairs_total']}</td>"
            f"<td>{_fmt(s['bertlens'])}</td><td>{_fmt(s['word2vec'])}</td></tr>"
            for n, s in shared.items()
        )
        step = next(iter(shared.values()))["step"]
        shared_text = (
            f"<h2>Both on the pairs both cover (step {step} and word2vec)</h2>\n<p>Each score above is over the pairs "
            "its model could score (beside it: how many of the benchmark's); here both are scored on the same pairs."
            "</p>\n<table><tr><th>benchmark</th><th>pairs</th><th>this run</th><th>word2vec</th></tr>"
            f"{shared_rows}</table>"
        )
    sections = "".join(f"<h2>{html.escape(title)}</h2>\n<div class=plot>{svg}</div>\n" for title, svg in figures)
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>bertlens: embeddings forming in {html.escape(folder.name)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}
.plot svg{{max-width:100%;height:auto}}</style></head><body>
<h1>Embeddings forming: {html.escape(str(folder))}</h1>
<p>{len(records)} checkpoints, step {records[0]["step"]} to {records[-1]["step"]}. Everything below is measured on
the input matrix (<code>word_embeddings</code>) at each checkpoint.</p>
{w2v_text}
<h2>How the rows learn</h2>
<p>{html.escape(HOW_ROWS_LEARN)}</p>
{sections}
<h2>Scores per checkpoint (Spearman; beside each, the pairs it was computed on)</h2>
<table><tr><th>step</th><th>tokens</th><th>val ppl</th><th>baseline</th>{name_heads}</tr>
{score_rows}</table>
{shared_text}
<h2>Nearest tokens of the probe words</h2>
<table><tr><th>probe</th>{heads}</tr>{"".join(neighbour_rows)}</table>
</body></html>
"""


def _score_cell(scores: dict[str, Any] | None) -> str:
    """A benchmark's Spearman with its coverage: '0.41 <small>(33 of 353 pairs)</small>'."""
    if not scores:
        return "<td>-</td>"
    return (
        f"<td>{_fmt(scores['spearman'])} <small>({scores['pairs_used']} of {scores['pairs_total']} pairs)</small></td>"
    )


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
