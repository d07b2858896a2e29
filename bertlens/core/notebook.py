"""HTML for results in a notebook, beyond the shared tables of core.results: pieces highlighted over the text, score
bars, the embedding layer's check, pictures inline; and torch tensors for those who asked for tensors.

Everything here is plain strings (no script, nothing fetched: notebooks work offline) with every user-given text
escaped. torch is imported only inside `torch_tensor`.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .results import box, table_html, visible

if TYPE_CHECKING:
    import torch


SEGMENT_COLOURS = ("rgba(66,133,244,.16)", "rgba(244,160,0,.22)", "rgba(15,157,88,.18)")  # token-type 0, 1, 2+
SPAN_COLOURS = ("rgba(66,133,244,.28)", "rgba(15,157,88,.25)")  # alternating pieces over the text

STYLE = """<style>
.bl-chips{display:flex;flex-wrap:wrap;align-items:flex-end;gap:3px 0;margin:4px 0 8px}
.bl-chip{display:inline-flex;flex-direction:column;align-items:center;padding:2px 6px;border-radius:4px;
border:1px solid rgba(128,128,128,.35);font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.bl-chip small{font-size:10px;opacity:.65}
.bl-chip.bl-special{border-style:dashed;font-style:italic;opacity:.8;margin-left:8px}
.bl-chip.bl-cont{margin-left:1px}
.bl-chip.bl-word{margin-left:8px}
.bl-chip:first-child{margin-left:0}
.bl-said{font-size:14px;margin:4px 0;white-space:pre-wrap}
.bl-said span{border-radius:2px}
.bl-legend{font-size:11px;opacity:.8;margin:2px 0 6px}
.bl-legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 3px -1px 10px;
border:1px solid rgba(128,128,128,.4)}
.bl-bar{position:relative;width:160px;height:10px;background:rgba(128,128,128,.12);border-radius:2px}
.bl-bar b{position:absolute;left:0;top:0;bottom:0;background:rgba(66,133,244,.7);border-radius:2px}
.bl-bar s{position:absolute;top:-2px;bottom:-2px;width:2px;background:rgba(219,68,55,.9)}
.bl-formula{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;padding:6px 10px;
margin:4px 0 8px;border-left:3px solid rgba(66,133,244,.7);background:rgba(66,133,244,.07)}
.bl-check{padding:6px 10px;margin:6px 0;border-radius:4px}
.bl-check.bl-ok{background:rgba(15,157,88,.12);border:1px solid rgba(15,157,88,.5)}
.bl-check.bl-bad{background:rgba(219,68,55,.12);border:1px solid rgba(219,68,55,.6)}
.bl-check.bl-none{background:rgba(128,128,128,.1);border:1px solid rgba(128,128,128,.4)}
.bl-warn{color:rgb(200,40,30);font-weight:600}
.bl ol,.bl ul{margin:2px 0 6px;padding-left:22px}
.bl details summary{cursor:pointer;opacity:.75;margin:4px 0}
.bl-row{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:flex-start}
.bl-picture img{max-width:100%;height:auto}
.bl-picture iframe{width:100%;height:560px;border:0}
</style>"""


def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def chips(tokens: Sequence[Any]) -> str:
    """One chip per token (a `core.tokens.Token`): the piece over its id, coloured by segment; special tokens dashed;
    a gap where a new word starts, none between the pieces of one word."""
    out = []
    previous: tuple[int | None, int | None] | None = None
    for t in tokens:
        where = (t.sequence, t.word)
        joined = previous == where and t.word is not None
        kind = "bl-special" if t.special else ("bl-cont" if joined else "bl-word")
        colour = SEGMENT_COLOURS[min(t.segment, len(SEGMENT_COLOURS) - 1)]
        tip = f"#{t.index} id {t.id}, chars {t.start}:{t.end}, word {t.word}, segment {t.segment}"
        tip += ", special" if t.special else ""
        out.append(
            f'<span class="bl-chip {kind}" style="background:{colour}" title="{escape(tip)}">'
            f"{escape(visible(t.piece))}<small>{t.id}</small></span>"
        )
        previous = where
    return f'<div class="bl-chips">{"".join(out)}</div>'


def spans(text: str, tokens: Sequence[Any], sequence: int) -> str:
    """`text` with each token's characters shaded, alternating, so where the pieces split shows in the text itself."""
    out, at, shade = [], 0, 0
    for t in tokens:
        if t.sequence != sequence or t.special or t.end <= t.start or t.start < at:
            continue
        out.append(escape(text[at : t.start]))
        out.append(f'<span style="background:{SPAN_COLOURS[shade]}">{escape(text[t.start : t.end])}</span>')
        at, shade = t.end, 1 - shade
    out.append(escape(text[at:]))
    return f'<div class="bl-said">{"".join(out)}</div>'


def legend(segments: Sequence[int]) -> str:
    swatches = [f'<i style="background:{SEGMENT_COLOURS[min(s, 2)]}"></i>segment {s}' for s in sorted(set(segments))]
    return f'<div class="bl-legend">{"".join(swatches)}<i style="border-style:dashed"></i>special token</div>'


def bar(value: float | None, top: float, mark: float | None = None) -> str:
    """A horizontal bar of `value` on a scale 0..`top`, with a red tick at `mark` (e.g. the baseline cosine)."""
    if value is None or not np.isfinite(value) or top <= 0:
        return ""
    width = 100 * min(max(value / top, 0.0), 1.0)
    tick = ""
    if mark is not None and np.isfinite(mark) and 0 <= mark <= top:
        tick = f'<s style="left:{100 * mark / top:.1f}%" title="baseline {mark:.3f}"></s>'
    return f'<div class="bl-bar"><b style="width:{width:.1f}%"></b>{tick}</div>'


def check(checked: bool, matches: bool, summary: str, detail: str) -> str:
    """The verdict of a check against the model: its plain-words `summary` first, the technical `detail` folded."""
    if not checked:
        return '<div class="bl-check bl-none">Not checked against the model (check=False).</div>'
    verdict = "✓ matches the model" if matches else "✗ differs from the model"
    return (
        f'<div class="bl-check {"bl-ok" if matches else "bl-bad"}"><b>{verdict}</b>. {escape(summary)}'
        f"<details><summary>Technical detail</summary><small>{escape(detail)}</small></details></div>"
    )


def listed(items: Sequence[str], ordered: bool = False) -> str:
    tag = "ol" if ordered else "ul"
    return f"<{tag}>{''.join(f'<li>{escape(i)}</li>' for i in items)}</{tag}>" if items else ""


def picture(format: str, content: bytes) -> str:
    """A drawn picture inline: PNG and SVG as an image (a data URI), HTML (plotly) in a sandboxed frame."""
    if format == "html":
        return f'<iframe sandbox="allow-scripts" srcdoc="{escape(content.decode("utf-8"))}"></iframe>'
    mime = "image/svg+xml" if format == "svg" else "image/png"
    return f'<img alt="picture" src="data:{mime};base64,{base64.b64encode(content).decode("ascii")}">'


def torch_tensor(array: np.ndarray) -> torch.Tensor:
    """`array` as a torch tensor of the same dtype and shape (a copy: the result's own array stays as it is)."""
    try:
        import torch
    except ImportError:
        raise InputError("as_torch() needs torch, which is not installed.", "pip install torch") from None
    return torch.from_numpy(np.array(array, copy=True))


def neighbors_html(result: Any) -> str:
    """A `Neighbors` result: its table with a bar per score (cosine on 0..1, the baseline as a red tick; dot products
    and distances on 0..the largest), and its notes."""
    scores = [n.score for n in result.neighbors]
    cosine = result.metric == "cosine"
    top = 1.0 if cosine else max([abs(s) for s in scores if np.isfinite(s)] + [0.0])

    def with_bars(headers: tuple[str, ...], rows: list[tuple[Any, ...]]) -> tuple[list[str], list[Any], list[str]]:
        bars = [bar(float(row[3]), top, result.baseline if cosine else None) for row in rows]
        return [*headers, "bar"], [(*row, b) for row, b in zip(rows, bars, strict=True)], ["bar"]

    return box("Neighbors", table_html(result, with_bars), STYLE)


def batch_html(kind: str, results: Sequence[Any]) -> str:
    """Several results side by side (wrapping), each drawn as it draws itself."""
    inner = "".join(f"<div>{r._repr_html_()}</div>" for r in results)
    return box(kind, f'<div class="bl-row">{inner}</div>', STYLE)
