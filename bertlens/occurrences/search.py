"""Search by example: occurrences of the same word (or of any word) used most like a given one.

The example is a sentence with its target word (`[marked]`, or named with `word=`), or an occurrence already in the
index (`occurrence=(text_id, position)`). Its vector is computed by the builder's own code (`rows.occurrence_rows`:
same model run, same word pooling as the index), so a sentence that is in the corpus finds itself with cosine 1.

- Same word (default): the occurrences whose `key` is the example word's casefolded form, read through the scalar
  index on `key` and ranked by cosine at the chosen layer over all of them (exact). A word with more than
  `EXACT_MAX` occurrences is searched among them through the layer's ANN index when it has one (the same IVF
  search, filtered to the word, then exact re-ranking): an exact scan reads each occurrence's vector where it lies
  (~50 µs a row here: 1 s for the 73,000 "the" of a 1 M index, against ~20 ms), and bench/search.py measures the
  recall of the two against numpy. The method says which was used.
- Any word (`any_word=True`): occurrences of other words used most like it (contextual substitutes), through the
  layer's ANN index when it has one (ann.py: IVF-SQ, then the `refine_factor` x k best re-ranked exactly), else by
  an exact scan.

Every hit's score is its exact cosine (float64, from the stored vector), and the hits come with their sentence
(cut out of the stored passage, the word's offsets kept for highlighting), their source (file, line), and the
layer's baseline (baseline.py) so a score can be read.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..contextual.states import RunOptions
from ..core.checks import whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.results import Result, table
from .ann import AnnSettings, ann_settings
from .baseline import Baseline, layer_baseline
from .build import occurrence_rows
from .marked import parse_example, snippet
from .store import OccurrenceIndex, TextRows, open_index

MAX_K = 1000
EXACT_MAX = 300  # a word with more occurrences is searched through the ANN index, when the layer has one
_SLACK = 8  # extra candidates read before the exact re-ranking (near-ties at the k-th place)
_FIELDS = ["text_id", "position", "start", "end", "word"]
BOLD, PLAIN = "\x1b[1;33m", "\x1b[0m"


@dataclass(frozen=True)
class SearchOptions:
    """What a search asks for.

    >>> options = SearchOptions(k=5, any_word=True, exclude_same_text=True)  # other words used like it
    """

    word: str | None = None  # the target, named (the example is then a plain sentence)
    layer: int | None = None  # absolute or negative; None: the index's last stored layer
    any_word: bool = False  # occurrences of other words used like it, instead of the same word
    k: int = 10  # hits (1..1000); fewer when fewer occurrences qualify
    exclude_same_text: bool = False  # leave out hits from the example's own text
    occurrence: tuple[int, int] | None = None  # (text_id, position): start from an occurrence in the index


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
        rows = [
            (
                i + 1,
                round(h.score, 4),
                f"{h.file}:{h.line}",
                f"{h.text_id}:{h.position}",
                _marked(h.snippet, h.snippet_start, h.snippet_end, color),
            )
            for i, h in enumerate(self.hits)
        ]
        headers = ["#", "score", "source", "--from", "sentence"]
        lines.append(table(headers, rows) if rows else "(no occurrences)")
        lines.append("")
        top = self.hits[0].score if self.hits else float("nan")
        lines.append(
            f"baseline: {self.baseline.reading(top)}"
            if self.hits
            else f"baseline: random pairs {self.baseline.random_pairs:.2f}, "
            f"same-word pairs {self.baseline.same_word_pairs:.2f}"
        )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _marked(text: str, start: int, end: int, color: bool) -> str:
    left, mid, right = text[:start], text[start:end], text[end:]
    return f"{left}{BOLD}{mid}{PLAIN}{right}" if color else f"{left}[{mid}]{right}"


def search_occurrences(
    model: Model | None,
    index: str | os.PathLike[str] | OccurrenceIndex,
    example: str | None = None,
    *,
    options: SearchOptions = SearchOptions(),
    run: RunOptions = RunOptions(),  # noqa: B008
) -> SearchResult:
    """The occurrences in `index` used most like the example (a sentence, or `options.occurrence`), best first.

    `model` must be the index's model (checked); it may be None only for a search from an occurrence.

    >>> example = "She set a new world [record] in the final"
    >>> hits = search_occurrences(load_model(), "sample-index", example)  # doctest: +SKIP
    >>> hits.hits[0].word  # doctest: +SKIP
    'record'
    """
    k = whole_number(options.k, "k", minimum=1, maximum=MAX_K)
    if (example is None) == (options.occurrence is None):
        raise InputError(
            "Give either an example sentence or an occurrence of the index (`occurrence`), not both or neither.",
            "Example: 'I sat on the river [bank]', or `occurrence` as a hit's text id and position.",
        )
    if options.occurrence is not None and options.word is not None:
        raise InputError("`word` applies only to an example sentence.", "Leave out `word` with an occurrence.")
    if isinstance(index, OccurrenceIndex):
        opened = index
        if model is not None:
            opened.check_model(model)
    else:
        opened = open_index(index, model=model)
    column = opened.column(options.layer)
    layer = int(column.split("_")[-1])
    notes: list[str] = []
    sentence = None
    span = (0, 0)  # the query's offsets in its stored text (from an occurrence)
    if options.occurrence is not None:
        vector, query, span = _from_occurrence(opened, column, options.occurrence)
    else:
        if model is None:
            raise InputError(
                "A search from a sentence needs the model the index was built with.",
                "Give the `model`, or search from an occurrence of the index (`occurrence`: a hit's text id and "
                "position).",
            )
        vector, query, note, sentence = _from_example(model, opened, str(example), options.word, layer, run)
        notes += [note] if note else []
    excluded = _excluded_texts(opened, query, sentence) if options.exclude_same_text else []
    hits, candidates, method = (_any_word if options.any_word else _same_word)(
        opened, column, vector, query, k, excluded
    )
    if len(hits) < k:
        notes.append(f"Only {len(hits)} qualif{'ies' if len(hits) == 1 else 'y'}, fewer than k={k}: all are shown.")
    texts = opened.texts_of([h["text_id"] for h in hits] + ([] if query.text_id is None else [query.text_id]))
    if query.text_id is not None:  # its sentence, read with the hits' texts
        piece, s, e = snippet(texts[query.text_id][2], *span)
        query = replace(query, snippet=piece, snippet_start=s, snippet_end=e)
    return SearchResult(
        index=str(opened.path),
        query=query,
        layer=layer,
        mode="any word" if options.any_word else "same word",
        k=k,
        candidates=candidates,
        method=method,
        hits=tuple(_with_text(texts, hits)),
        baseline=layer_baseline(opened, layer),
        notes=tuple(notes),
    )


def _from_example(
    model: Model, index: OccurrenceIndex, example: str, word: str | None, layer: int, run: RunOptions
) -> tuple[np.ndarray, Query, str | None, str]:
    ex = parse_example(example, word)
    texts = TextRows(np.zeros(1, dtype=np.int64), ["example"], np.ones(1, dtype=np.int32), [ex.text])
    rows = occurrence_rows(model, texts, (layer,), index.manifest.get("pool", "mean"), run)
    starts, ends = rows.start.tolist(), rows.end.tolist()
    found = [i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s == ex.start and e == ex.end]
    if not found:
        parts = [rows.word[i] for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s < ex.end and e > ex.start]
        how = (
            f"as part of {parts[0]!r}" if len(parts) == 1 else f"as {len(parts)} words ({', '.join(map(repr, parts))})"
        )
        raise InputError(
            f"The model's tokenizer does not read {ex.word!r} as one word: it reads it {how}.",
            "Mark a whole word as the tokenizer splits them (punctuation is a word of its own).",
        )
    i = found[0]
    text, s, e = snippet(ex.text, ex.start, ex.end)
    vector = np.asarray(rows.vectors[layer][i], dtype=np.float32)  # (D,)
    return vector, Query(rows.word[i], rows.word[i].casefold(), text, s, e), ex.note, ex.text


def _from_occurrence(index: OccurrenceIndex, column: str, occurrence: Any) -> tuple[np.ndarray, Query, tuple[int, int]]:
    """The stored vector (D,) and word of an occurrence; its snippet is filled in later, read with the hits' texts."""
    if not isinstance(occurrence, (tuple, list)) or len(occurrence) != 2:
        raise InputError(f"An occurrence is (text_id, position), got {occurrence!r}.", "Example: `occurrence=(12, 3)`")
    text_id = whole_number(occurrence[0], "text id", minimum=0)
    position = whole_number(occurrence[1], "position", minimum=0)
    found = (
        index.occurrences.search()
        .where(f"text_id = {text_id} AND position = {position}")
        .select([*_FIELDS, "key", column])
        .limit(1)
        .to_arrow()
    )
    if not found.num_rows:
        words = index.occurrences.count_rows(f"text_id = {text_id}") if text_id < index.text_count else 0
        raise InputError(
            f"The index has no occurrence {text_id}:{position}.",
            f"Text ids run from 0 to {index.text_count - 1:,}"
            + (f"; text {text_id} has positions 0 to {words - 1}." if words else "."),
        )
    row = {name: found[name][0].as_py() for name in [*_FIELDS, "key"]}
    vector = np.asarray(found[column][0].values.to_numpy(zero_copy_only=False), dtype=np.float32)  # (D,)
    return vector, Query(row["word"], row["key"], "", 0, 0, text_id, position), (row["start"], row["end"])


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _excluded_texts(index: OccurrenceIndex, query: Query, sentence: str | None) -> list[int]:
    """The example's own text: its text id, or (a sentence) every stored text that contains the sentence."""
    if query.text_id is not None or sentence is None:
        return [] if query.text_id is None else [query.text_id]
    sentence = sentence.strip()
    found = index.texts.search().where(f"strpos(text, {_quoted(sentence)}) > 0").select(["text_id"]).limit(None)
    return sorted(int(t) for t in found.to_arrow()["text_id"].to_pylist())


def _filter(base: str, excluded: list[int]) -> str:
    """The rows searched (the query occurrence itself is dropped after the search: a filter on it costs a scan)."""
    return f"{base} AND text_id NOT IN ({', '.join(map(str, excluded))})" if excluded else base


def _same_word(
    index: OccurrenceIndex, column: str, vector: np.ndarray, query: Query, k: int, excluded: list[int]
) -> tuple[list[dict[str, Any]], int, str]:
    count = index.occurrences.count_rows(f"key = {_quoted(query.key)}")
    if not count:
        raise InputError(f"{query.word!r} does not occur in the index at {index.path}.", _near_hint(index, query.key))
    where = _filter(f"key = {_quoted(query.key)}", excluded)
    search = index.occurrences.search(vector, vector_column_name=column).distance_type("cosine")
    search = search.where(where, prefilter=True)
    ann = ann_settings(index, column) if count > EXACT_MAX else None
    if ann is None:
        search, method = search.bypass_vector_index().limit(k + _SLACK), "exact cosine over the word's occurrences"
    else:
        search = search.nprobes(ann.nprobes).refine_factor(ann.refine_factor).limit(k + 1)
        method = f"{_ann_method(ann, k)} (the word has over {EXACT_MAX:,} occurrences)"
    rows = search.select([*_FIELDS, column, "_distance"]).to_arrow()
    return _ranked(rows, column, vector, k, query), count, method


def _ann_method(ann: AnnSettings, k: int) -> str:
    return (
        f"{ann.kind} ({ann.partitions} partitions, {ann.nprobes} probed), "
        f"the best {ann.refine_factor * k} re-ranked by exact cosine"
    )


def _any_word(
    index: OccurrenceIndex, column: str, vector: np.ndarray, query: Query, k: int, excluded: list[int]
) -> tuple[list[dict[str, Any]], int, str]:
    where = _filter(f"key != {_quoted(query.key)}", excluded)
    search = index.occurrences.search(vector, vector_column_name=column).distance_type("cosine")
    search = search.where(where, prefilter=True)
    ann = ann_settings(index, column)
    if ann is None:
        search, method = search.bypass_vector_index().limit(k + _SLACK), "exact cosine over every occurrence"
    else:
        search = search.nprobes(ann.nprobes).refine_factor(ann.refine_factor).limit(k)
        method = _ann_method(ann, k)
    rows = search.select([*_FIELDS, column, "_distance"]).to_arrow()
    return _ranked(rows, column, vector, k, query), index.rows, method


def _ranked(rows: Any, column: str, vector: np.ndarray, k: int, query: Query) -> list[dict[str, Any]]:
    """The rows re-scored by exact cosine (float64) and the best k kept (not the query occurrence itself), ties
    broken by (text_id, position)."""
    if not rows.num_rows:
        return []
    dims = len(vector)
    matrix = rows[column].combine_chunks().values.to_numpy(zero_copy_only=False)
    matrix = matrix.astype(np.float64).reshape(rows.num_rows, dims)  # (candidates, D)
    q = vector.astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
    scores = matrix @ q / np.maximum(norms, np.finfo(np.float64).tiny)  # (candidates,)
    data = rows.select(_FIELDS).to_pydict()
    itself = (query.text_id, query.position)
    kept = [i for i in range(rows.num_rows) if (data["text_id"][i], data["position"][i]) != itself]
    order = sorted(kept, key=lambda i: (-scores[i], data["text_id"][i], data["position"][i]))
    return [{**{f: data[f][i] for f in _FIELDS}, "score": float(scores[i])} for i in order[:k]]


def _with_text(texts: dict[int, tuple[str, int, str]], found: list[dict[str, Any]]) -> list[Hit]:
    hits = []
    for h in found:
        file, line, text = texts[h["text_id"]]
        piece, s, e = snippet(text, h["start"], h["end"])
        hits.append(
            Hit(h["text_id"], h["position"], h["word"], h["start"], h["end"], h["score"], file, line, piece, s, e)
        )
    return hits


def _near_hint(index: OccurrenceIndex, key: str) -> str:
    import pyarrow.compute as pc

    keys = pc.unique(index.occurrences.search().select(["key"]).limit(None).to_arrow()["key"]).to_pylist()
    near = difflib.get_close_matches(key, [str(k) for k in keys], n=5, cutoff=0.75)
    found = f"Words near it in the index: {', '.join(near)}. " if near else ""
    return found + "Search a word the index holds, or add a corpus that has this one to the index (`add=True`)."
