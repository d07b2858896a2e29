"""The embedding drift as text (`drift_text`, its table) and as the watch report's HTML `<section>` (`drift_section`).

Both read `EmbeddingDrift.to_dict()` (or `{"error", "hint"}` where it could not be computed). The section has three
horizontal bar charts drawn as plain SVG (no script, nothing fetched, every label inside the picture): the rows' mean
relative change per frequency bucket of the new text (median and largest written beside each bar), their mean
neighbour overlap per bucket, and the relative change of every part of the model, the input matrix's bar marked; then
a table of the rows that moved most with their nearest tokens before and after and the overlap of the two.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence
from typing import Any

from ..core.results import table
from ..spaces.diff_results import SHOWN

_WIDTH, _LABEL, _NOTE, _ROW = 980, 190, 420, 22  # picture width; label and note columns; a bar's row height (px)
ALL_IN_TEXT = "Each of these rows is a token of the new text: they are also the new text's tokens that moved most."


def _num(value: Any) -> str:
    if value is None or isinstance(value, str):
        return "-" if value is None else value
    return f"{value:.3g}" if isinstance(value, float) else f"{value:,}"


def bars_svg(rows: Sequence[tuple[str, float | None, str, bool]], title: str) -> str:
    """A horizontal bar chart: one (label, value, note, marked) per bar, on one linear scale from 0, each note in a
    column to the right of the bars; a missing value draws no bar, its note in its place. Marked bars are drawn in a
    second colour, named in the legend line under the title."""
    top = max([v for _, v, _, _ in rows if v is not None] + [0.0]) or 1.0
    span = _WIDTH - _LABEL - _NOTE
    height = 34 + _ROW * len(rows) + 22
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" '
        f'role="img" aria-label="{html.escape(title)}" font-family="system-ui,sans-serif" font-size="12">',
        f'<text x="0" y="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    if any(marked for *_, marked in rows):
        parts.append('<rect x="0" y="21" width="10" height="10" fill="#d62728"/>')
        parts.append('<text x="14" y="30" fill="#444">the input matrix (word_embeddings)</text>')
    for n, (label, value, note, marked) in enumerate(rows):
        y = 34 + _ROW * n
        parts.append(f'<text x="{_LABEL - 6}" y="{y + 15}" text-anchor="end">{html.escape(label)}</text>')
        if value is None:
            parts.append(f'<text x="{_LABEL}" y="{y + 15}" fill="#777">{html.escape(note)}</text>')
            continue
        width = max(span * value / top, 0.0)
        colour = "#d62728" if marked else "#1f77b4"
        parts.append(f'<rect x="{_LABEL}" y="{y + 4}" width="{width:.1f}" height="{_ROW - 8}" fill="{colour}"/>')
        parts.append(f'<text x="{_LABEL + span + 10}" y="{y + 15}">{html.escape(note)}</text>')
    axis = 34 + _ROW * len(rows)
    parts.append(f'<line x1="{_LABEL}" y1="34" x2="{_LABEL}" y2="{axis}" stroke="#444"/>')
    parts.append(f'<line x1="{_LABEL}" y1="{axis}" x2="{_LABEL + span}" y2="{axis}" stroke="#444"/>')
    for share in (0.0, 0.5, 1.0):
        x = _LABEL + span * share
        anchor = "start" if share == 0 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{axis + 15}" text-anchor="{anchor}" fill="#444">{top * share:.3g}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _passes(drift: dict[str, Any]) -> str:
    """'12,288 tokens trained (0.42 passes over a text of 29,000 tokens)'."""
    trained, text = drift["tokens_trained"], drift["text_tokens"]
    passes = f"{trained / text:.3g} passes over " if trained is not None and text else ""
    return f"{_num(trained)} tokens trained ({passes}a text of {_num(text)} tokens)"


def _all_in_text(drift: dict[str, Any]) -> bool:
    """Whether the rows that moved most are all tokens of the new text (then both lists are one: shown once)."""
    return bool(drift["top"]) and [t["id"] for t in drift["top"]] == [t["id"] for t in drift["top_in_text"]]


def _top_table(rows: list[dict[str, Any]], k: int) -> str:
    cells = [
        (
            t["token"],
            t["id"],
            t["count"],
            t["change"],
            t["overlap"],
            " ".join(t["before"][:SHOWN]),
            " ".join(t["after"][:SHOWN]),
        )
        for t in rows
    ]
    shown = f" ({min(SHOWN, k)} of {k})"
    return table(["token", "id", "count", "change", "overlap", f"nearest before{shown}", "nearest after"], cells)


def _neighbours(tokens: list[str], other: list[str]) -> str:
    """The nearest tokens, space-separated and escaped, those not in `other` (lost, or gained) in bold."""
    kept = set(other)
    return " ".join(html.escape(t) if t in kept else f"<b>{html.escape(t)}</b>" for t in tokens)


def _change(group: dict[str, Any]) -> float | str:
    return "new: not in the model continued" if group["change"] is None else group["change"]


def drift_text(drift: dict[str, Any]) -> str:
    """The drift as plain-text lines and tables (`EmbeddingDrift.to_table`, and the watch report's)."""
    if "error" in drift:
        return f"Embedding drift not computed: {drift['error']}\n  hint: {drift['hint']}"
    lines = [
        f"Embedding drift of {drift['run']} against {drift['init_from']}",
        f"embeddings {drift['embeddings']}, {'tied' if drift['tied'] else 'untied'} decoder, random_ratio "
        f"{drift['random_ratio']:g}, {_num(drift['steps'])} steps, {_passes(drift)}",
        f"whole matrix: relative change {_num(drift['overall'])}; {drift['unchanged']:,} of "
        f"{drift['rows_compared']:,} rows unchanged bit for bit",
        f"neighbour overlap (Jaccard of the {drift['k']} nearest tokens before and after, as `bertlens diff` gives "
        f"it): mean {drift['overlap_mean']:.3f}, median {drift['overlap_median']:.3f}",
        "",
        "Rows' relative change (||after - before|| / ||before||) and neighbour overlap, by their token's count in the "
        "new text:",
        table(
            ["count", "rows", "unchanged", "mean", "median", "max", "overlap"],
            [
                (b["label"], b["rows"], b["unchanged"], b["mean"], b["median"], b["max"], b["overlap"])
                for b in drift["buckets"]
            ],
        ),
        "",
        "Rows that moved most, and their nearest tokens before and after:",
        _top_table(drift["top"], drift["k"]),
        "",
        *(
            [ALL_IN_TEXT, ""]
            if _all_in_text(drift)
            else ["Rows of the new text's tokens that moved most:", _top_table(drift["top_in_text"], drift["k"]), ""]
        ),
        "Relative change of each part of the model (Frobenius norm of the change over the norm before):",
        table(["part", "parameters", "change"], [(g["name"], g["parameters"], _change(g)) for g in drift["groups"]]),
        "",
        *textwrap.wrap(drift["explanation"], 116),
    ]
    return "\n".join(lines + [f"note: {n}" for n in drift["notes"]])


def drift_section(drift: dict[str, Any]) -> str:
    """The `<section>` of an `EmbeddingDrift.to_dict()` (or `{"error", "hint"}`) for the watch report's page."""
    if "error" in drift:
        return (
            "<section id=drift>\n<h2>Embedding drift</h2>\n"
            f"<p>Not computed: {html.escape(drift['error'])} {html.escape(drift['hint'])}</p>\n</section>\n"
        )
    buckets = [
        (
            f"{b['label']}: {b['rows']:,} rows",
            b["mean"],
            f"mean {_num(b['mean'])}, median {_num(b['median'])}, max {_num(b['max'])}; {b['unchanged']:,} unchanged"
            if b["rows"]
            else "no rows",
            False,
        )
        for b in drift["buckets"]
    ]
    overlaps = [
        (f"{b['label']}: {b['rows']:,} rows", b["overlap"], _num(b["overlap"]) if b["rows"] else "no rows", False)
        for b in drift["buckets"]
    ]
    parts = [(g["name"], g["change"], _num(_change(g)), g["name"] == "word_embeddings") for g in drift["groups"]]
    head = (
        "<tr><th>token</th><th>id</th><th>count</th><th>change</th><th>overlap</th><th>nearest before</th>"
        "<th>nearest after</th></tr>"
    )
    top_rows, in_text = (
        "".join(
            f"<tr><td>{html.escape(t['token'])}</td><td>{t['id']}</td><td>{_num(t['count'])}</td>"
            f"<td>{_num(t['change'])}</td><td>{_num(t['overlap'])}</td><td>{_neighbours(t['before'], t['after'])}</td>"
            f"<td>{_neighbours(t['after'], t['before'])}</td></tr>"
            for t in rows
        )
        for rows in (drift["top"], drift["top_in_text"])
    )
    mode = f"embeddings {drift['embeddings']}, {'tied' if drift['tied'] else 'untied'} decoder, random_ratio "
    mode += f"{drift['random_ratio']:g}"
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in drift["notes"])
    in_text_part = (  # the same rows are not listed twice
        f"<p>{ALL_IN_TEXT}</p>"
        if _all_in_text(drift)
        else f"<h3>Rows of the new text's tokens that moved most</h3>\n<table>{head}{in_text}</table>"
    )
    return f"""<section id=drift>
<h2>Embedding drift: how far the rows of the model continued moved</h2>
<p>Against <code>{html.escape(drift["init_from"])}</code> ({html.escape(mode)}; {_num(drift["steps"])} steps,
{html.escape(_passes(drift))}). Whole matrix:
relative change {_num(drift["overall"])}; {drift["unchanged"]:,} of {drift["rows_compared"]:,} rows unchanged bit for
bit. A row's change is <code>||after - before|| / ||before||</code>; buckets are its token's count in the new text
(special tokens and [unused] rows left out). A row's overlap is the Jaccard of its {drift["k"]} nearest tokens before
and after, as <code>bertlens diff</code> gives it (mean {_num(drift["overlap_mean"])} over all tokens); a nearest
token lost or gained is in bold.</p>
<div class=plot>{bars_svg(buckets, "Mean relative change of the rows, by their token's count in the new text")}</div>
<div class=plot>{bars_svg(overlaps, "Mean neighbour overlap of the rows, by their token's count in the new text")}</div>
<div class=plot>{bars_svg(parts, "Relative change of each part of the model (Frobenius norms)")}</div>
<h3>Rows that moved most</h3>
<table>{head}{top_rows}</table>
{in_text_part}
<p>{html.escape(drift["explanation"])}</p>
{f"<ul>{notes}</ul>" if notes else ""}
</section>
"""
