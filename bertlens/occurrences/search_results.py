"""What a search by example answers (`SearchResult`): the example (`Query`), each occurrence found (`Hit`) with its
score and sentence, and the scores read against the word's own pairs and the layer's random pairs. `search` computes
them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.results import Result, table
from .baseline import Baseline, WordBaseline

BOLD, PLAIN = "\x1b[1;33m", "\x1b[0m"


@dataclass(frozen=True)
class Hit:
    """One occurrence found: where it is, its exact cosine with the example, its sentence and the word's span in it."""

    text_id: int
    position: int
    word: str
    start: int  # character offsets of the word in its stored text
    end: int
    score: float
    file: str
    line: int
    snippet: str  # the sentence around the word
    snippet_start: int  # the word's offsets in the snippet
    snippet_end: int
    word_percentile: float | None = None  # same word: the share (0..100) of the word's random pairs scoring lower


@dataclass(frozen=True)
class Query:
    """The example: its word, its sentence with the word's span, and where it is in the index (if it is)."""

    word: str
    key: str
    snippet: str
    snippet_start: int
    snippet_end: int
    text_id: int | None = None
    position: int | None = None


@dataclass(frozen=True, repr=False)
class SearchResult(Result):
    """The hits of one search, best first, with the layer's baseline (what a cosine means in this index).

    >>> hits = search_occurrences(load_model(), "sample-index", "a new world [record]")  # doctest: +SKIP
    >>> hits.to_dict()["hits"][0]["snippet"]  # doctest: +SKIP
    """

    index: str
    query: Query
    layer: int  # absolute
    mode: str  # "same word" or "any word"
    k: int
    candidates: int  # same word: the word's occurrences in the index; any word: all occurrences
    method: str  # how the candidates were searched
    hits: tuple[Hit, ...]
    baseline: Baseline
    notes: tuple[str, ...] = ()
    word_baseline: WordBaseline | None = None  # same word: its own random pairs at this layer
    one_per_text: bool = True  # at most one hit per text

    def __repr__(self) -> str:
        return f"SearchResult({len(self.hits)} hits for {self.query.word!r}, {self.mode}, layer {self.layer})"

    def to_table(self) -> str:
        return self.render(color=False)

    def render(self, *, color: bool) -> str:
        """The hits as a table, the word in each sentence in brackets (or, with `color`, in bold on a terminal)."""
        q = self.query
        plural = "s" if self.candidates != 1 else ""
        lines = [
            f"{self.mode} like {q.word!r} in: {_marked(q.snippet, q.snippet_start, q.snippet_end, color)}",
            f"layer {self.layer} · {len(self.hits)} of {self.candidates:,} occurrence{plural} · {self.method}",
            "",
        ]
        own = self.word_baseline is not None and self.word_baseline.usable
        rows = [
            (
                i + 1,
                round(h.score, 4),
                *([None if h.word_percentile is None else f"{h.word_percentile:.0f}%"] if own else []),
                f"{h.file}:{h.line}",
                f"{h.text_id}:{h.position}",
                _marked(h.snippet, h.snippet_start, h.snippet_end, color),
            )
            for i, h in enumerate(self.hits)
        ]
        headers = ["#", "score", *(["pairs below"] if own else []), "source", "--from", "sentence"]
        lines.append(table(headers, rows) if rows else "(no occurrences)")
        lines.append("")
        lines += self._readings()
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _readings(self) -> list[str]:
        """What the scores mean: against the word's own pairs (same word), and against random occurrences."""
        b = self.baseline
        anywhere = f"random occurrences of any words score {b.random_pairs:.2f} on average (layer {b.layer})"
        if self.word_baseline is not None:
            top = self.word_baseline.reading(self.hits[0].score) if self.hits else ""
            if self.word_baseline.usable:
                lines = [
                    f"top hit: {top}." if top else "",
                    "pairs below: the share of random pairs of this word's occurrences (different texts) that score "
                    "lower; above 50% a hit is more alike than the word's typical pair.",
                ]
            else:
                lines = [f"top hit: {top}" if top else ""]
            return [line for line in [*lines, f"For scale: {anywhere}."] if line]
        if not self.hits:
            return [f"baseline: {anywhere}."]
        return [f"baseline: {b.reading(self.hits[0].score)}"]


def _marked(text: str, start: int, end: int, color: bool) -> str:
    left, mid, right = text[:start], text[start:end], text[end:]
    return f"{left}{BOLD}{mid}{PLAIN}{right}" if color else f"{left}[{mid}]{right}"
