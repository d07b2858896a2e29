"""Embedding drift of a continued run: how far pre-training on new text moved the rows of the model it continued.

`embedding_drift(run)` compares the run's input matrix (`word_embeddings` in RUN/model.safetensors) with the one of the
model it continued (`init_from` in its saved config; read, never written), row by row: the relative change
`||after - before|| / ||before||` of each row, summarised by how often the row's token occurs in the new text (the
run's tokenized corpus); the rows that moved most; and the relative change (Frobenius norm of the change over that of
the weights before) of every other parameter group, for comparison. A run trained from scratch has no drift (None).

What the two spaces' geometry says comes from `spaces.diff` on the two models, with the run's own token counts: each
token's k nearest tokens before and after and their overlap (Jaccard), the same numbers `bertlens diff` gives for the
model continued against the run. The raw row-to-row change is the run's own measure: it means something here because
the run continues the very rows of the model it started from.

Frequency buckets (`spaces.frequency.BUCKETS`) are orders of magnitude of a token's count in the new text (0, 1-9,
10-99, 100-999, 1000 and more): the expected number of steps whose batch holds a token grows with its count, so each
bucket's rows had about ten times more chances to move than the one before. Special tokens ([CLS], [SEP], [MASK],
...) are in every batch and [unused] rows are no text's tokens: both are left out of the buckets and of the rows that
moved most (a special token may still be another token's neighbour, as in `diff`).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.corpus import corpus_path
from ..core.errors import BertlensError, InputError, MissingTokenizerError, MissingWeightsError, ModelNotFoundError
from ..core.model import Model, load_model
from ..core.paths import OUTPUT, user_path
from ..core.results import Result
from .checkpoints import load_config_from_run
from .data import tokenize_corpus
from .drift_report import drift_text
from .resume import saved_inputs

if TYPE_CHECKING:
    from ..spaces.diff_results import SpaceDiff

HOW_ROWS_MOVE = (
    "A row of the input matrix moves only when the loss sends it a gradient. As an input, a row gets one only at "
    "steps whose batch holds its token: from the new text, or drawn as the random replacement of a chosen token "
    "(random_ratio of them). With tied weights the masked-LM decoder is the same matrix, and its softmax over the "
    "whole vocabulary reaches every row at every step, so the rows of tokens absent from the new text move too. "
    "Weight decay, where it applies to the matrix, shrinks every row at every step (bertlens leaves the embedding "
    "tables out of it), and Adam's momentum keeps a row moving for a while after its last gradient. So with untied "
    "weights, no random replacements and no decay on the rows, the row of a token the new text never holds stays "
    "exactly as it was, bit for bit. Adam scales each coordinate's step by the running size of its own gradients, so "
    "a small but steady push (the decoder's, on a row whose token never occurs) moves a row about as far as the "
    "larger, noisier gradients of a frequent token's row."
)


@dataclass(frozen=True, repr=False)
class EmbeddingDrift(Result):
    """How far a continued run moved each row of `word_embeddings`, by the row's token frequency in the new text.

    >>> drift = embedding_drift("continued-bert/")  # doctest: +SKIP
    >>> [(b["label"], b["mean"]) for b in drift.buckets]  # doctest: +SKIP
    """

    run: str
    init_from: str  # the model continued (its folder)
    embeddings: str  # the run's embeddings mode: trainable, frozen or new-rows
    new_rows_from: int | None
    tied: bool  # the masked-LM decoder shares word_embeddings
    random_ratio: float
    steps: int | None  # steps trained (from the run's log)
    tokens_trained: int | None
    text_tokens: int | None  # tokens of the new text (None when its counts are unknown)
    rows: int  # rows of the matrix
    rows_compared: int  # rows in the buckets (no specials, no [unused] rows, none that was all zeros before)
    unchanged: int  # of those, rows bit for bit as before
    overall: float  # Frobenius norm of the whole matrix's change over its norm before
    k: int  # nearest tokens per row, before and after
    overlap_mean: float  # Jaccard of the k nearest tokens before and after, mean over the tokens `diff` compares
    overlap_median: float
    buckets: tuple[dict[str, Any], ...]  # label, least, most, rows, unchanged, mean, median, max (relative change),
    # overlap (mean Jaccard of the rows' nearest tokens)
    top: tuple[dict[str, Any], ...]  # id, token, count, change, overlap, before, after (nearest tokens)
    top_in_text: tuple[dict[str, Any], ...]  # the same, among the rows of tokens the new text holds
    groups: tuple[dict[str, Any], ...]  # name, parameters, change (None for a part the model continued lacks)
    explanation: str
    notes: tuple[str, ...]

    def __repr__(self) -> str:
        return f"EmbeddingDrift({self.rows_compared} rows, overall {self.overall:.4g}, from {self.init_from})"

    def to_table(self) -> str:
        return drift_text(self.to_dict())


def embedding_drift(
    run: str | os.PathLike[str], *, init_from: str | os.PathLike[str] | None = None, top: int = 10, k: int = 10
) -> EmbeddingDrift | None:
    """The drift of the continued run in folder `run` (None for a run trained from scratch).

    `init_from` gives the model continued when it is no longer where the run's config says (its `init_from`);
    `top` rows that moved most are listed with their `k` nearest tokens before and after (`spaces.diff`'s, whose
    default k this is).

    >>> drift = embedding_drift("continued-bert/")  # doctest: +SKIP
    >>> drift.buckets[0]["label"], drift.buckets[0]["max"]  # absent tokens' rows, untied: exactly 0  # doctest: +SKIP
    """
    folder = user_path(run, "run", OUTPUT)  # only read
    config = load_config_from_run(folder)
    origin = init_from if init_from is not None else config.init_from
    if origin is None:
        return None
    for name, value in (("top", top), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a whole number of at least 1, got {value!r}.", f"Example: {name}=10.")
    before, after = _before_and_after(origin, folder)
    old, new = before.embedding_weights.word_embeddings, after.embedding_weights.word_embeddings  # (V, H) each
    notes: list[str] = []
    counts, text_tokens = _token_counts(folder, before, new.shape[0], notes)  # (V,) occurrences in the new text
    from ..spaces.diff import diff
    from ..spaces.frequency import BUCKETS, bucket_of
    from ..spaces.shared import kinds_of

    spaces = diff(before, after, k=k, top=1, counts=counts)
    tokens = before.vocabulary.tokens_by_id(before.matrix_rows)
    kinds, real = kinds_of(tokens, before.vocabulary.special_ids)  # (V,) each
    where = {t: i for i, t in enumerate(tokens) if t is not None}
    overlap = np.full(len(tokens), np.nan)  # (V,) each compared token's Jaccard, by row id
    overlap[[where[t] for t in spaces.token_list]] = spaces.overlap
    delta = new.astype(np.float64) - old.astype(np.float64)  # (V, H)
    start = np.linalg.norm(old.astype(np.float64), axis=1)  # (V,)
    change = np.linalg.norm(delta, axis=1) / np.where(start > 0, start, 1.0)  # (V,)
    same = ~np.any(new != old, axis=1)  # (V,) bit for bit
    words = real & (kinds != "special") & ~np.isnan(overlap)  # what a text holds: no specials, no [unused] rows
    kept = words & (start > 0)
    if np.any(words & (start == 0)):
        notes.append(f"{int(np.sum(words & (start == 0)))} row(s) were all zeros before: left out")
    if counts is None:
        buckets: tuple[dict[str, Any], ...] = (
            _bucket(kept, change, same, overlap, 0, None, "all rows (counts unknown)"),
        )
    else:
        index = bucket_of(counts)  # (V,)
        buckets = tuple(
            _bucket(kept & (index == b), change, same, overlap, *bucket) for b, bucket in enumerate(BUCKETS)
        )
    ranked = [int(i) for i in np.argsort(-change, kind="stable") if kept[i]]  # most moved first
    in_text = [i for i in ranked if counts is not None and counts[i] > 0][:top]
    order = ranked[:top]
    rows = _top_rows(spaces, tokens, order + in_text, counts, change)
    tops, tops_in_text = rows[: len(order)], rows[len(order) :]
    tied = bool(after.raw_config.get("tie_word_embeddings", True))
    log = _last_log(folder)
    if config.embeddings == "new-rows":
        notes.append(f"only rows from {config.new_rows_from} on were trained (embeddings new-rows)")
    groups = tuple(_parameter_groups(before, after, tied))
    overall = float(np.linalg.norm(delta) / (np.linalg.norm(old.astype(np.float64)) or 1.0))
    return EmbeddingDrift(
        run=str(folder),
        init_from=str(before.source.path or origin),
        embeddings=config.embeddings,
        new_rows_from=config.new_rows_from,
        tied=tied,
        random_ratio=config.random_ratio,
        steps=log.get("step"),
        tokens_trained=log.get("tokens"),
        text_tokens=text_tokens,
        rows=int(new.shape[0]),
        rows_compared=int(kept.sum()),
        unchanged=int(np.sum(same & kept)),
        overall=overall,
        k=k,
        overlap_mean=spaces.overlap_mean,
        overlap_median=spaces.overlap_median,
        buckets=buckets,
        top=tops,
        top_in_text=tops_in_text,
        groups=groups,
        explanation=_explain(config.embeddings, config.new_rows_from, tied, config.random_ratio, overall, groups),
        notes=tuple(notes),
    )


def _before_and_after(origin: str | os.PathLike[str], folder: Path) -> tuple[Model, Model]:
    """The model the run continued and the run's own, checked to have input matrices of one shape."""
    try:
        before = load_model(origin)
    except (ModelNotFoundError, MissingWeightsError, MissingTokenizerError) as exc:
        raise ModelNotFoundError(
            f"The model the run continued ({origin}) cannot be loaded: {exc.message}",
            "Give the model's folder: `embedding_drift(run, init_from=FOLDER)`.",
        ) from None
    after = load_model(folder)
    old, new = before.embedding_weights.word_embeddings, after.embedding_weights.word_embeddings  # (V, H) each
    if old.shape != new.shape:
        raise InputError(
            f"The run's input matrix is {new.shape[0]} x {new.shape[1]}, the model's it continued {old.shape[0]} x "
            f"{old.shape[1]}: {origin} is not the model this run started from.",
            "Give the model the run continued as `init_from=`.",
        )
    return before, after


def run_drift(run: str | os.PathLike[str]) -> dict[str, Any] | None:
    """`embedding_drift(run).to_dict()` for the watch report: None for a run from scratch, and {"error", "hint"}
    where the drift cannot be computed (e.g. the model continued was moved), so the rest of the report still is."""
    try:
        drift = embedding_drift(run)
    except BertlensError as exc:
        return {"error": exc.message, "hint": exc.hint}
    return None if drift is None else drift.to_dict()


def _bucket(
    inside: np.ndarray,
    change: np.ndarray,
    same: np.ndarray,
    overlap: np.ndarray,
    least: int,
    most: int | None,
    label: str,
) -> dict[str, Any]:
    """One frequency bucket's rows (`inside`, (V,) bool): how many, how many unchanged, their relative change's mean,
    median and max, and their mean neighbour overlap."""
    values = change[inside]
    summary = (float(values.mean()), float(np.median(values)), float(values.max())) if len(values) else (None,) * 3
    return {
        "label": label,
        "least": least,
        "most": most,
        "rows": int(inside.sum()),
        "unchanged": int(np.sum(same & inside)),
        "mean": summary[0],
        "median": summary[1],
        "max": summary[2],
        "overlap": float(overlap[inside].mean()) if len(values) else None,
    }


def _top_rows(
    spaces: SpaceDiff, tokens: list[str | None], ids: list[int], counts: np.ndarray | None, change: np.ndarray
) -> tuple[dict[str, Any], ...]:
    """Each row's token, count in the new text, relative change, and from `spaces` its k nearest tokens before and
    after and their overlap."""
    rows = []
    for i in ids:
        token = spaces.token(str(tokens[i]))
        rows.append(
            {
                "id": i,
                "token": token.token,
                "count": None if counts is None else int(counts[i]),
                "change": float(change[i]),
                "overlap": token.overlap,
                "before": [n.token for n in token.neighbours_a],
                "after": [n.token for n in token.neighbours_b],
            }
        )
    return tuple(rows)


def _token_counts(folder: Path, model: Model, rows: int, notes: list[str]) -> tuple[np.ndarray | None, int | None]:
    """(rows,) occurrences of each token id in the run's training text, and its length in tokens.

    Read from the run's data cache, the very tokens it trained on (the newest, should the corpus have changed between
    invocations); else the corpus is tokenized again (nothing is written); (None, None) with a note when neither is
    there."""
    import json

    inputs = saved_inputs(folder)
    if inputs is None:
        notes.append("the run did not keep the name of its corpus: token counts unknown")
        return None, None
    try:
        corpus = str(corpus_path(inputs.corpus))
    except InputError:
        corpus = None
    found: list[tuple[int, Path]] = []
    for about in sorted((folder / "training" / "data").glob("*.json")):
        try:
            facts = json.loads(about.read_text(encoding="utf-8"))
            ids = about.with_name(about.name.removesuffix(".json") + ".ids.npy")
            if facts.get("corpus") in (corpus, inputs.corpus) and facts.get("max_texts") == inputs.max_texts:
                found.append((ids.stat().st_mtime_ns, ids))
        except (OSError, ValueError, AttributeError):
            continue
    if found:
        tokens = np.load(max(found)[1], mmap_mode="r")  # (tokens,)
        if len(found) > 1:
            notes.append("the corpus changed between the run's invocations: counts are of its newest version")
    elif corpus is not None:
        tokens = tokenize_corpus(model.vocabulary.tokenizer, corpus, max_texts=inputs.max_texts).ids
        notes.append("token counts from the corpus tokenized again (the run's data cache is gone)")
    else:
        notes.append(f"the run's corpus {inputs.corpus} is gone, and its data cache too: token counts unknown")
        return None, None
    counts = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=rows)[:rows]
    return counts, len(tokens)


def _last_log(folder: Path) -> dict[str, Any]:
    """The last line of the run's training/log.jsonl ({} when there is none)."""
    import json

    file = folder / "training" / "log.jsonl"
    try:
        lines = [line for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
        return dict(json.loads(lines[-1])) if lines else {}
    except (OSError, ValueError):
        return {}


def _group(name: str) -> str | None:
    """The part of a BERT a tensor belongs to (None for buffers such as position_ids)."""
    name = name.removeprefix("bert.")
    if name.endswith("position_ids"):
        return None
    if name.startswith("embeddings."):
        part = name.split(".")[1]
        return part if part.endswith("_embeddings") else "embeddings LayerNorm"
    found = re.match(r"encoder\.layer\.(\d+)\.(attention|intermediate|output)\.", name)
    if found:
        return f"layer {found.group(1)} {'attention' if found.group(2) == 'attention' else 'feed-forward'}"
    if name.startswith("pooler."):
        return "pooler"
    if name.startswith("cls.predictions."):
        return "MLM head"
    if name.startswith("cls.seq_relationship."):
        return "next-sentence head"
    return "other"


def _parameter_groups(before: Model, after: Model, tied: bool) -> list[dict[str, Any]]:
    """Each part of the run's model: parameters and relative change (Frobenius) against the model continued.

    A part the model continued lacks (e.g. an MLM head a sentence encoder never had) starts from the seed: its
    change is None. Tensors are read one at a time from the weights files (safetensors without torch)."""
    old = {name.removeprefix("bert."): name for name in before.reader.names()}
    sums: dict[str, list[float]] = {}  # name -> [squared change, squared before, parameters, found before]
    for name in after.reader.names():
        group = _group(name)
        if group is None:
            continue
        entry = sums.setdefault(group, [0.0, 0.0, 0, 1])
        now = after.reader.get(name).astype(np.float64)
        entry[2] += now.size
        key = old.get(name.removeprefix("bert."))
        if key is None or tuple(before.reader.shape(key)) != now.shape:
            entry[3] = 0
            continue
        was = before.reader.get(key).astype(np.float64)
        entry[0] += float(np.sum((now - was) ** 2))
        entry[1] += float(np.sum(was**2))
    named = {"MLM head": "MLM head (tied)"} if tied else {}  # its decoder is word_embeddings
    return [
        {
            "name": named.get(group, group),
            "parameters": int(size),
            "change": math.sqrt(delta) / math.sqrt(norm) if found and norm > 0 else None,
        }
        for group, (delta, norm, size, found) in sums.items()
    ]


def _explain(
    mode: str, first: int | None, tied: bool, random_ratio: float, overall: float, groups: tuple[dict[str, Any], ...]
) -> str:
    """The general paragraph, then what it means for this run, with its numbers."""
    layers = [g["change"] for g in groups if g["name"].startswith("layer ") and g["change"] is not None]
    span = f" the encoder's layers by {min(layers):.3g} to {max(layers):.3g}" if layers else ""
    if mode == "frozen":
        case = "In this run the input matrix was frozen: no row could move."
    elif mode == "new-rows":
        case = f"In this run only the rows from id {first} on were trained: every older row stays as it was."
    elif tied:
        case = "In this run the decoder is tied to the input matrix: every row moves, absent tokens' rows too."
    elif random_ratio > 0:
        case = (
            "In this run the decoder is untied, but random replacements (random_ratio "
            f"{random_ratio:g}) put any token into a batch now and then: absent tokens' rows move a little."
        )
    else:
        case = (
            "In this run the decoder is untied and no token is drawn at random: absent tokens' rows stay as they were."
        )
    compared = f"The matrix as a whole changed by {overall:.3g} (relative){',' + span if span else ''}."
    return f"{HOW_ROWS_MOVE} {case} {compared}"
