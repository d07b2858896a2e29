"""Search by example: occurrences of the same word (or of any word) used most like a given one.

The example is a sentence with its target word (`[marked]`, or named with `word=`), or an occurrence already in the
index (`occurrence=(text_id, position)`). Its vector is computed by the builder's own code (`rows.occurrence_rows`:
same model run, same word pooling as the index), so a sentence that is in the corpus finds itself with cosine 1.

- Same word (default): the occurrences whose `key` is the example word's casefolded form, read through the scalar
  index on `key` and ranked by cosine at the chosen layer over all of them (exact). A word with more than
  `EXACT_MAX` occurrences is searched among them through the layer's ANN index when it has one (the same IVF
  search, filtered to the word, then exact re-ranking): an exact scan reads each occurrence's vector where it lies,
  which for a word as frequent as "the" takes far longer than the filtered search, and bench/search.py measures the
  recall of the two against numpy (docs/benchmarks.md, "Occurrence index: search"). The method says which was used.
- Any word (`any_word=True`): occurrences of other words used most like it (contextual substitutes), through the
  layer's ANN index when it has one (ann.py: IVF-SQ, then the `refine_factor` x k best re-ranked exactly), else by
  an exact scan.

Every hit's score is its exact cosine (float64, from the stored vector), and the hits come with their sentence
(cut out of the stored passage, the word's offsets kept for highlighting), their source (file, line), and the
layer's baseline (baseline.py) so a score can be read. A same-word search reads each score against the word's own
pairs (`word_baseline`): the share of random pairs of its occurrences that score lower, and whether the hit is more
alike than the word's typical pair. By default each text gives at most one hit, its best occurrence
(`one_per_text=False` shows them all).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..contextual.states import RunOptions
from ..core.checks import flag, whole_number
from ..core.errors import NAME, InputError
from ..core.model import Model
from ..core.tokens import check_text, find_word
from .ann import AnnSettings, ann_settings
from .baseline import layer_baseline, word_baseline
from .build import occurrence_rows
from .marked import parse_example, snippet
from .search_results import Hit, Query, SearchResult
from .store import OccurrenceIndex, TextRows, open_index

MAX_K = 1000
MAX_POSITION = 2**31 - 1  # a word's position in its text is stored as int32
EXACT_MAX = 300  # a word with more occurrences is searched through the ANN index, when the layer has one
_SLACK = 8  # extra candidates read before the exact re-ranking (near-ties at the k-th place)
_FIELDS = ["text_id", "position", "start", "end", "word"]


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
    one_per_text: bool = True  # at most one hit per text (its best occurrence); False: every occurrence


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
    k = _checked_k(example, options)
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
                "Give the {model}, or search from an occurrence of the index ({occurrence}: a hit's text id and "
                "position).",
                arguments={"model": NAME, "occurrence": NAME},
            )
        vector, query, note, sentence = _from_example(model, opened, str(example), options.word, layer, run)
        notes += [note] if note else []
    excluded = _excluded_texts(opened, query, sentence) if options.exclude_same_text else []
    one_per_text = options.one_per_text
    found, candidates, method = (_any_word if options.any_word else _same_word)(
        opened, column, vector, query, k, excluded, one_per_text
    )
    hits, dropped = _best_per_text(found, k) if one_per_text else (found[:k], 0)
    if dropped:
        notes.append(
            f"One hit per text (its best occurrence): {dropped} more occurrence{'s' if dropped != 1 else ''} in "
            "texts already shown left out (every occurrence: one_per_text=False; on the command line --all-per-text)."
        )
    if len(hits) < k:
        notes.append(f"Only {len(hits)} qualif{'ies' if len(hits) == 1 else 'y'}, fewer than k={k}: all are shown.")
    own = None if options.any_word else word_baseline(opened, layer, query.key)
    if own is not None:
        hits = [{**h, "word_percentile": own.percentile(h["score"])} for h in hits]
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
        word_baseline=own,
        one_per_text=one_per_text,
    )


def _checked_k(example: str | None, options: SearchOptions) -> int:
    """The number of hits asked for, once the example and every option are checked (one query: a sentence or an
    occurrence)."""
    if not isinstance(options, SearchOptions):
        raise InputError(
            f"{{options}} must be SearchOptions, got {type(options).__name__}.",
            "Pass SearchOptions(k=5).",
            arguments={"options": NAME},
        )
    k = whole_number(options.k, "k", minimum=1, maximum=MAX_K)
    if options.layer is not None:
        whole_number(options.layer, "layer")  # the index says which it holds
    for name in ("any_word", "exclude_same_text", "one_per_text"):
        flag(getattr(options, name), name)
    if example is not None and not isinstance(example, str):
        raise InputError(
            f"The example sentence must be a string, got {type(example).__name__}.",
            "Example: 'I sat on the river [bank]'.",
        )
    if (example is None) == (options.occurrence is None):
        raise InputError(
            "Give either an example sentence or an occurrence of the index ({occurrence}), not both or neither.",
            "Example: 'I sat on the river [bank]', or {occurrence} as a hit's text id and position.",
            arguments={"occurrence": NAME},
        )
    if options.occurrence is not None and options.word is not None:
        raise InputError(
            "{word} applies only to an example sentence.",
            "Leave out {word} with an occurrence.",
            arguments={"word": NAME},
        )
    return k


def _from_example(
    model: Model, index: OccurrenceIndex, example: str, word: str | None, layer: int, run: RunOptions
) -> tuple[np.ndarray, Query, str | None, str]:
    ex = parse_example(example, word, find=lambda text, named: find_word(model, text, named))
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
    """The stored vector (D,) and word of an occurrence; its snippet is filled in later, read with the hits' texts.

    The text id is bounded by the index's text count and the position by what its int32 column holds, before either
    reaches a filter (a number past an Arrow type is an error of the filter, not an empty answer)."""
    if isinstance(occurrence, (str, bytes)) or not isinstance(occurrence, (tuple, list)) or len(occurrence) != 2:
        raise InputError(
            f"An occurrence is (text_id, position), got {occurrence!r}.",
            "Example: {occurrence}",
            arguments={"occurrence": (12, 3)},
        )
    text_id = whole_number(occurrence[0], "text id")
    position = whole_number(occurrence[1], "position")
    found = None
    if 0 <= text_id < index.text_count and 0 <= position <= MAX_POSITION:
        found = (
            index.occurrences.search()
            .where(f"text_id = {text_id} AND position = {position}")
            .select([*_FIELDS, "key", column])
            .limit(1)
            .to_arrow()
        )
    if found is None or not found.num_rows:
        raise InputError(f"The index has no occurrence {text_id}:{position}.", _occurrence_hint(index, text_id))
    row = {name: found[name][0].as_py() for name in [*_FIELDS, "key"]}
    vector = np.asarray(found[column][0].values.to_numpy(zero_copy_only=False), dtype=np.float32)  # (D,)
    return vector, Query(row["word"], row["key"], "", 0, 0, text_id, position), (row["start"], row["end"])


def _occurrence_hint(index: OccurrenceIndex, text_id: int) -> str:
    """The valid range: text ids of the index, and the positions of the text asked for when it has one."""
    if index.text_count == 0:
        return "The index holds no texts: build it from a corpus that has some (`bertlens index CORPUS --out DIR`)."
    words = index.occurrences.count_rows(f"text_id = {text_id}") if 0 <= text_id < index.text_count else 0
    return f"Text ids run from 0 to {index.text_count - 1:,}" + (
        f"; text {text_id:,} has positions 0 to {words - 1:,}." if words else "; a hit shows its text id and position."
    )


def sql_string(value: str, what: str = "word") -> str:
    """`value` as a string literal of a LanceDB filter: quotes doubled (the SQL way; a backslash, `%` or `_` is
    literal there), text that is not valid Unicode refused (it cannot be sent as UTF-8)."""
    return "'" + check_text(value, what).replace("'", "''") + "'"


def _excluded_texts(index: OccurrenceIndex, query: Query, sentence: str | None) -> list[int]:
    """The example's own text: its text id, or (a sentence) every stored text that contains the sentence."""
    if query.text_id is not None or sentence is None:
        return [] if query.text_id is None else [query.text_id]
    sentence = sentence.strip()
    where = f"strpos(text, {sql_string(sentence, 'example sentence')}) > 0"
    found = index.texts.search().where(where).select(["text_id"]).limit(None)
    return sorted(int(t) for t in found.to_arrow()["text_id"].to_pylist())


def _filter(base: str, excluded: list[int]) -> str:
    """The rows searched (the query occurrence itself is dropped after the search: a filter on it costs a scan)."""
    return f"{base} AND text_id NOT IN ({', '.join(map(str, excluded))})" if excluded else base


def _best_per_text(found: list[dict[str, Any]], k: int) -> tuple[list[dict[str, Any]], int]:
    """The best-ranked hit of each text, the first k of them; and how many hits of texts already kept were left out
    among those ranked above the last one kept (or all, when fewer than k texts)."""
    kept: list[dict[str, Any]] = []
    seen: set[int] = set()
    dropped = 0
    for hit in found:
        if len(kept) == k:
            break
        if hit["text_id"] in seen:
            dropped += 1
        else:
            seen.add(hit["text_id"])
            kept.append(hit)
    return kept, dropped


def _fetch(k: int, count: int, one_per_text: bool) -> int:
    """Candidates to read: k and a little slack; one hit per text reads every occurrence of a word searched exactly
    (at most EXACT_MAX), else four times k, as texts with several occurrences take several places."""
    if not one_per_text:
        return k + _SLACK
    return count if count <= EXACT_MAX else 4 * k + _SLACK


def _same_word(
    index: OccurrenceIndex,
    column: str,
    vector: np.ndarray,
    query: Query,
    k: int,
    excluded: list[int],
    one_per_text: bool = False,
) -> tuple[list[dict[str, Any]], int, str]:
    count = index.occurrences.count_rows(f"key = {sql_string(query.key)}")
    if not count:
        raise InputError(
            f"{query.word!r} does not occur in the index at {index.path}.",
            _near_hint(index, query.key),
            arguments={"add": True},
        )
    where = _filter(f"key = {sql_string(query.key)}", excluded)
    search = index.occurrences.search(vector, vector_column_name=column).distance_type("cosine")
    search = search.where(where, prefilter=True)
    ann = ann_settings(index, column) if count > EXACT_MAX else None
    fetch = _fetch(k, count, one_per_text)
    if ann is None:
        search, method = search.bypass_vector_index().limit(fetch), "exact cosine over the word's occurrences"
    else:
        search = search.nprobes(ann.nprobes).refine_factor(ann.refine_factor).limit(fetch + 1 - _SLACK)
        method = f"{_ann_method(ann, k)} (the word has over {EXACT_MAX:,} occurrences)"
    rows = search.select([*_FIELDS, column, "_distance"]).to_arrow()
    return _ranked(rows, column, vector, fetch, query), count, method


def _ann_method(ann: AnnSettings, k: int) -> str:
    return (
        f"{ann.kind} ({ann.partitions} partitions, {ann.nprobes} probed), "
        f"the best {ann.refine_factor * k} re-ranked by exact cosine"
    )


def _any_word(
    index: OccurrenceIndex,
    column: str,
    vector: np.ndarray,
    query: Query,
    k: int,
    excluded: list[int],
    one_per_text: bool = False,
) -> tuple[list[dict[str, Any]], int, str]:
    where = _filter(f"key != {sql_string(query.key)}", excluded)
    search = index.occurrences.search(vector, vector_column_name=column).distance_type("cosine")
    search = search.where(where, prefilter=True)
    ann = ann_settings(index, column)
    fetch = k + _SLACK if not one_per_text else 4 * k + _SLACK
    if ann is None:
        search, method = search.bypass_vector_index().limit(fetch), "exact cosine over every occurrence"
    else:
        search = search.nprobes(ann.nprobes).refine_factor(ann.refine_factor).limit(fetch - _SLACK)
        method = _ann_method(ann, k)
    rows = search.select([*_FIELDS, column, "_distance"]).to_arrow()
    return _ranked(rows, column, vector, fetch, query), index.rows, method


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
            Hit(
                h["text_id"],
                h["position"],
                h["word"],
                h["start"],
                h["end"],
                h["score"],
                file,
                line,
                piece,
                s,
                e,
                h.get("word_percentile"),
            )
        )
    return hits


def _near_hint(index: OccurrenceIndex, key: str) -> str:
    import pyarrow.compute as pc

    keys = pc.unique(index.occurrences.search().select(["key"]).limit(None).to_arrow()["key"]).to_pylist()
    near = difflib.get_close_matches(key, [str(k) for k in keys], n=5, cutoff=0.75)
    found = f"Words near it in the index: {', '.join(near)}. " if near else ""
    return found + "Search a word the index holds, or add a corpus that has this one to the index ({add})."
