"""The HTML page of a watch report: the figures of `report_figures.py` inlined as SVG in one self-contained page
(no script, nothing fetched).

At the top, a banner when the run stopped before the end of its schedule (with the command that continues it); then
what formed: the category purity from the first checkpoint to the last (word2vec's beside it) and the
frequency plateau named; then the group words' rows in one shared plane at a few checkpoints, the purity and plateau
curves, word similarity, the probe words' nearest tokens per checkpoint (tokens among the text's most frequent in
grey, words of the probe's own group in bold), loss, norms, the probe words' paths, and the scores' table.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.extras import require
from .early_stop import WHY, EarlyStop
from .purity import learning_groups
from .report_figures import captions, report_figures, svg

HOW_ROWS_LEARN = (
    "How the rows of word_embeddings get gradients. The loss is masked-LM: at every step a share of the batch's "
    "tokens (15% by default: mlm_probability) is chosen and predicted, a cross-entropy over the whole vocabulary. On "
    "the input side only the rows of tokens present in the step's batch receive gradient (a row gets the gradients of"
    " the positions that looked it up; every other row exactly zero), so frequent tokens' rows move at every step and"
    " rare ones' seldom. When the MLM decoder is tied to word_embeddings (the output projection is the same matrix, "
    "as in BERT; --untied gives it rows of its own), its softmax sends gradient to every row at every step: the "
    "predicted token's row is pulled toward the hidden"
    " state that predicts it, every other row pushed away in proportion to its predicted probability. Weight decay "
    "leaves the embedding tables alone, but AdamW's momentum keeps a row moving for a while after its last "
    "gradient. So a row changes even in steps where its token is absent, and the rows of rare tokens are shaped "
    "mostly as output vectors."
)


PLATEAU_NOTE = (
    "Early in masked-LM training the cheapest gain in the loss is predicting frequent tokens, and through the tied "
    "decoder the rows learn that first: the rows of frequent tokens move together, so every word's nearest rows are "
    "the most frequent tokens of the text, whatever it means. Measured at each checkpoint: the share of the probe "
    "words' nearest tokens that are among the text's {top} most frequent (probe and group words left out of those: "
    "a neighbour of the same kind is meaning), where the plateau holds at {threshold:.0%} or more (and at least "
    "{over} times the chance level), and Spearman's correlation of the row norms with the tokens' frequency."
)
PROBES_SHOWN = 5  # probe words in the per-checkpoint table of nearest tokens
NEIGHBOURS_SHOWN = 5  # nearest tokens per cell


def report_html(
    folder: Path,
    records: list[dict[str, Any]],
    log: list[dict[str, Any]],
    projection: dict[str, list[tuple[int, float, float]]],
    word2vec: dict[str, Any] | None,
    shared: dict[str, dict[str, Any]] | None = None,
    *,
    groups: Mapping[str, Any] | None = None,
    plateau: Mapping[str, Any] | None = None,
    extra_sections: Sequence[str] = (),
    stopped: EarlyStop | None = None,
) -> str:
    """The report page. `groups` is `projection.group_projection`'s result, `plateau` `Plateau.to_dict()`;
    `extra_sections` are HTML `<section>` elements placed at the end of the page, in order; `stopped` (a run that
    stopped before its schedule's end) puts a banner at the top with the command that continues it."""
    require("matplotlib", extra="train")
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "bertlens"}):
        figures = [
            (title, svg(figure))
            for title, figure in report_figures(records, log, projection, word2vec, groups=groups, plateau=plateau)
        ]
    names = list(records[-1]["benchmarks"])
    w2v_text = ""
    if word2vec:
        w2v_text = (
            f"<p>word2vec baseline: skip-gram, {word2vec['vector_size']} dimensions, {word2vec['threads']} thread(s), "
            f"{word2vec['words_trained']:,} words in {word2vec['seconds']:.0f} s on the same corpus.</p>"
        )
    purity_head = "<th>purity</th><th>frequent share</th>"
    score_rows = "".join(
        f"<tr><td>{r['step']}</td><td>{r['tokens']:,}</td><td>{fmt(r['perplexity'])}</td><td>{fmt(r['baseline'])}</td>"
        f"<td>{fmt(_purity(r))}</td><td>{fmt((r.get('frequency') or {}).get('top_share'))}</td>"
        + "".join(_score_cell(r["benchmarks"].get(n)) for n in names)
        + "</tr>"
        for r in records
    )
    if word2vec:
        theirs = word2vec.get("category_purity") or {}
        score_rows += (
            f"<tr><td>word2vec</td><td></td><td></td><td></td><td>{fmt(theirs.get('purity'))}</td><td></td>"
            + "".join(_score_cell(word2vec["benchmarks"].get(n)) for n in names)
            + "</tr>"
        )
    name_heads = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    notes = captions(plateau)
    sections = "".join(
        f"<h2>{html.escape(title)}</h2>\n<div class=plot>{image}</div>\n"
        + (f"<p class=caption>{html.escape(notes[title])}</p>\n" if title in notes else "")
        for title, image in figures
    )
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>bertlens: embeddings forming in {html.escape(folder.name)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}
.plot svg{{max-width:100%;height:auto}}.frequent{{color:#888}}.own{{font-weight:bold}}
.plateau{{background:#fdf3dc}}.summary{{font-size:15px}}.caption{{font-size:13px;color:#444;margin-top:0}}
.stopped{{background:#fdecea;border-left:6px solid #d62728;padding:.6em 1em}}</style></head><body>
{stopped_banner(stopped)}
<h1>Embeddings forming: {html.escape(str(folder))}</h1>
<p>{len(records)} checkpoints, step {records[0]["step"]} to {records[-1]["step"]}. Everything below is measured on
the input matrix (<code>word_embeddings</code>) at each checkpoint.</p>
{w2v_text}
{summary_html(records, word2vec, plateau)}
{sections}
{neighbours_html(records, plateau)}
<h2>How the rows learn</h2>
<p>{html.escape(HOW_ROWS_LEARN)}</p>
<h2>Scores per checkpoint (Spearman; beside each, the pairs it was computed on)</h2>
<table><tr><th>step</th><th>tokens</th><th>val ppl</th><th>baseline</th>{purity_head}{name_heads}</tr>
{score_rows}</table>
{shared_html(shared)}
{"".join(extra_sections)}
</body></html>
"""


def stopped_banner(stopped: EarlyStop | None) -> str:
    """The banner of a run that stopped before its schedule's end: where, why, and the command that continues it."""
    if stopped is None:
        return ""
    return (
        f"<p class=stopped id=stopped><b>This run stopped early</b>, at step {stopped.step:,} of {stopped.max_steps:,}:"
        f" {html.escape(WHY.get(stopped.reason, stopped.reason))}. What this report shows is a run part-way, not what "
        f"its schedule makes of the rows. Continue it with <code>{html.escape(stopped.command)}</code> (it writes "
        "this report again when it ends).</p>"
    )


def _purity(record: Mapping[str, Any]) -> float | None:
    found = record.get("category_purity")
    return None if not found else found["purity"]


def summary_html(
    records: Sequence[Mapping[str, Any]], word2vec: Mapping[str, Any] | None, plateau: Mapping[str, Any] | None
) -> str:
    """What formed, in two or three sentences: purity first to last (with chance and word2vec's), the plateau."""
    parts: list[str] = []
    first, last = records[0].get("category_purity"), records[-1].get("category_purity")
    if first and last:
        text = (
            f"The learning groups' words ({last['words_used']} of {last['words_total']}, "
            f"{last['k']} nearest each): {first['purity']:.2f} at step {records[0]['step']} (chance "
            f"{first['chance']:.2f}), {last['purity']:.2f} at step {records[-1]['step']}"
        )
        theirs = (word2vec or {}).get("category_purity")
        text += f"; word2vec on the same text and time: {theirs['purity']:.2f}." if theirs else "."
        parts.append(f"<b>Category purity.</b> {html.escape(text)}")
    if plateau:
        note = PLATEAU_NOTE.format(top=plateau["top"], threshold=plateau["threshold"], over=plateau["over_chance"])
        parts.append(f"<b>Frequency first.</b> {html.escape(plateau['text'])}<br><small>{html.escape(note)}</small>")
    if not parts:
        return ""
    return "<h2>What formed</h2>\n" + "".join(f"<p class=summary>{p}</p>\n" for p in parts)


def chosen_probes(records: Sequence[Mapping[str, Any]], most: int = PROBES_SHOWN) -> list[str]:
    """A few probe words for the per-checkpoint table: words of different learning groups first, then the others,
    in the run's order."""
    probes = list(records[-1]["neighbors"])
    group_of = {w: name for name, words in learning_groups().items() for w in words}
    chosen: list[str] = []
    seen: set[str] = set()
    for probe in probes:
        group = group_of.get(probe)
        if group is not None and group not in seen:
            chosen.append(probe)
            seen.add(group)
    chosen += [p for p in probes if p not in chosen]
    return chosen[:most]


def neighbours_html(records: Sequence[Mapping[str, Any]], plateau: Mapping[str, Any] | None) -> str:
    """The probe words' nearest tokens: a few probes at the first, middle and last checkpoints (and the plateau's),
    every checkpoint folded below, and every probe at the first, middle and last folded after it."""
    if not records[-1]["neighbors"]:
        return ""
    steps = [r["step"] for r in records]
    on = set(plateau["steps"]) if plateau else set()
    picks = {0, len(records) // 2, len(records) - 1}
    if plateau and plateau.get("steps"):
        middle = plateau["steps"][len(plateau["steps"]) // 2]
        picks |= {steps.index(middle)} if middle in steps else set()
        picks |= {steps.index(plateau["left_at"])} if plateau.get("left_at") in steps else set()
    probes = chosen_probes(records)
    group_of = {w: name for name, words in learning_groups().items() for w in words}

    def table(indices: Sequence[int], words: Sequence[str]) -> str:
        head = "".join(f"<th>{html.escape(w)}</th>" for w in words)
        rows = []
        for i in indices:
            record = records[i]
            frequent = set((record.get("frequency") or {}).get("frequent") or [])
            mark = " class=plateau" if record["step"] in on else ""
            cells = "".join(
                f"<td>{_tokens(record['neighbors'].get(w, []), frequent, group_of, group_of.get(w))}</td>"
                for w in words
            )
            rows.append(f"<tr{mark}><th>step {record['step']}</th>{cells}</tr>")
        return f"<table><tr><th>checkpoint</th>{head}</tr>{''.join(rows)}</table>"

    every = list(records[-1]["neighbors"])
    first_middle_last = sorted({0, len(records) // 2, len(records) - 1})
    key = (
        "<p>Each cell: the probe word's nearest tokens (cosine, pieces pooled) at that checkpoint, nearest first. "
        "<span class=frequent>Grey</span>: among the training text's most frequent tokens; <span class=own>bold"
        "</span>: a word of the probe's own learning group. Rows on the frequency plateau are shaded.</p>"
    )
    every_checkpoint = (  # folded below the chosen ones, where they are not every checkpoint already
        f"<details><summary>Every checkpoint</summary>{table(range(len(records)), probes)}</details>\n"
        if len(picks) < len(records)
        else ""
    )
    return (
        f"<h2>Nearest tokens of the probe words, per checkpoint</h2>\n{key}\n{table(sorted(picks), probes)}\n"
        f"{every_checkpoint}"
        f"<details><summary>Every probe word (first, middle and last checkpoint)</summary>"
        f"{_transposed(records, first_middle_last, every)}</details>"
    )


def _tokens(
    neighbours: Sequence[Sequence[Any]], frequent: set[str], group_of: Mapping[str, str], group: str | None
) -> str:
    """The first NEIGHBOURS_SHOWN tokens, each marked frequent (grey) or of the probe's own group (bold)."""
    out = []
    for token, _ in list(neighbours)[:NEIGHBOURS_SHOWN]:
        text = html.escape(token)
        if group is not None and group_of.get(token) == group:
            text = f"<span class=own>{text}</span>"
        elif token in frequent:
            text = f"<span class=frequent>{text}</span>"
        out.append(text)
    return " ".join(out)


def _transposed(records: Sequence[Mapping[str, Any]], indices: Sequence[int], probes: Sequence[str]) -> str:
    """Every probe word as a row, the chosen checkpoints as columns (all 8 nearest tokens)."""
    heads = "".join(f"<th>step {records[i]['step']}</th>" for i in indices)
    rows = "".join(
        f"<tr><th>{html.escape(p)}</th>"
        + "".join(
            f"<td>{html.escape(' '.join(t for t, _ in records[i]['neighbors'].get(p, [])))}</td>" for i in indices
        )
        + "</tr>"
        for p in probes
    )
    return f"<table><tr><th>probe</th>{heads}</tr>{rows}</table>"


def shared_html(shared: Mapping[str, Mapping[str, Any]] | None) -> str:
    """The run and word2vec scored on only the pairs both cover."""
    if not shared:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{s['pairs_shared']} of {s['pairs_total']}</td>"
        f"<td>{fmt(s['bertlens'])}</td><td>{fmt(s['word2vec'])}</td></tr>"
        for n, s in shared.items()
    )
    step = next(iter(shared.values()))["step"]
    return (
        f"<h2>Both on the pairs both cover (step {step} and word2vec)</h2>\n<p>Each score above is over the pairs "
        "its model could score (beside it: how many of the benchmark's); here both are scored on the same pairs."
        "</p>\n<table><tr><th>benchmark</th><th>pairs</th><th>this run</th><th>word2vec</th></tr>"
        f"{rows}</table>"
    )


def _score_cell(scores: dict[str, Any] | None) -> str:
    """A benchmark's Spearman with its coverage: '0.41 <small>(33 of 353 pairs)</small>'."""
    if not scores:
        return "<td>-</td>"
    return (
        f"<td>{fmt(scores['spearman'])} <small>({scores['pairs_used']} of {scores['pairs_total']} pairs)</small></td>"
    )


def fmt(value: Any) -> str:
    """A number as the report writes it (4 significant digits; '-' for none or not finite)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
