"""`diff`: two embedding spaces side by side, token by token (`bertlens diff A B`).

On the tokens both vocabularies hold (spaces/shared.py), `diff` compares the two input matrices (`word_embeddings`)
three ways: the overlap of each token's k nearest tokens in A and in B (spaces/neighbours.py: no alignment needed,
rotation leaves neighbours unchanged), the orthogonal Procrustes rotation of A onto B and the distance each row keeps
after it (spaces/alignment.py), and, for a model that continues another's training from its very rows, the raw cosine.
It summarises them by token kind and, given a corpus, by the token's count in it; lists the tokens that moved most with
their neighbours in both spaces; lays the two spaces in one aligned plane; and, asked, compares the layers' contextual
vectors too (spaces/contextual.py: CKA of every layer pair, each word's contextual neighbours).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..core.checks import flag, whole_number
from ..core.checks import seed as checked_seed
from ..core.errors import InputError
from ..core.model import Model, require_model
from ..core.progress import bar
from .alignment import Alignment, align, padded_to, prepared
from .diff_results import GroupSummary, Neighbour, PlanePoint, SpaceDiff, TokenChange
from .frequency import BUCKETS, bucket_of, token_counts
from .neighbours import jaccard, nearest_sets, unit_rows
from .shared import KINDS, SharedTokens, shared_tokens

BINS = 10  # overlap histogram bins over [0, 1]
BACKGROUND = 300  # word tokens drawn grey in the aligned plane, for context
SEED = 0


@dataclass(frozen=True)
class Spaces:
    """What `diff` computed per shared token, kept for `SpaceDiff.token` and for pictures."""

    shared: SharedTokens
    unit_a: np.ndarray  # (n, d_a) float32 unit rows of A
    unit_b: np.ndarray  # (n, d_b)
    sets_a: np.ndarray  # (n, k) int64 nearest rows in A
    sets_b: np.ndarray  # (n, k)
    overlap: np.ndarray  # (n,)
    alignment: Alignment
    counts: np.ndarray | None  # (n,) occurrences in the corpus

    def change(self, i: int) -> TokenChange:
        def near(unit: np.ndarray, ids: np.ndarray) -> tuple[Neighbour, ...]:
            scores = unit[ids].astype(np.float64) @ unit[i].astype(np.float64)  # (k,)
            order = np.lexsort((ids, -scores))  # nearest first, ties by id
            return tuple(Neighbour(self.shared.tokens[int(ids[o])], float(scores[o])) for o in order)

        raw = self.alignment.raw_cosine
        return TokenChange(
            token=self.shared.tokens[i],
            kind=str(self.shared.kinds[i]),
            id_a=int(self.shared.ids_a[i]),
            id_b=int(self.shared.ids_b[i]),
            overlap=float(self.overlap[i]),
            residual=float(self.alignment.residual[i]),
            raw_cosine=None if raw is None else float(raw[i]),
            count=None if self.counts is None else int(self.counts[i]),
            neighbours_a=near(self.unit_a, self.sets_a[i]),
            neighbours_b=near(self.unit_b, self.sets_b[i]),
        )


class TokenLookup:
    """token -> its `TokenChange` (what `SpaceDiff.token` calls)."""

    def __init__(self, spaces: Spaces) -> None:
        self.spaces = spaces
        self.where = {t: i for i, t in enumerate(spaces.shared.tokens)}

    def __call__(self, token: str) -> TokenChange:
        if not isinstance(token, str) or token not in self.where:
            raise InputError(
                f"{token!r} is not a token both vocabularies hold (of {len(self.where):,} compared).",
                "Give one vocabulary token as the tokenizer writes it (lower case for an uncased model, '##ing' for "
                "a piece); `bertlens tokens WORD` shows a word's tokens.",
            )
        return self.spaces.change(self.where[token])


def _groups(
    labels: list[tuple[str, np.ndarray]], overlap: np.ndarray, residual: np.ndarray
) -> tuple[GroupSummary, ...]:
    out = []
    for label, mask in labels:
        rows = int(mask.sum())
        out.append(
            GroupSummary(
                label,
                rows,
                float(overlap[mask].mean()) if rows else None,
                float(residual[mask].mean()) if rows else None,
            )
        )
    return tuple(out)


def _plane(spaces: Spaces, moved: np.ndarray, seed: int) -> tuple[PlanePoint, ...]:
    """The moved tokens and a background of word tokens in one plane: PCA of A's aligned rows and B's rows together."""
    kinds = spaces.shared.kinds
    words = np.setdiff1d(np.flatnonzero(kinds == "word"), moved)
    rng = np.random.default_rng(seed)
    background = np.sort(rng.choice(words, min(BACKGROUND, len(words)), replace=False)) if len(words) else words
    chosen = np.concatenate([moved, background]).astype(np.int64)
    alignment = spaces.alignment
    width = alignment.rotation.shape[0]
    a = padded_to(prepared(spaces.unit_a[chosen], alignment.centre_a), width) @ alignment.rotation  # (m, d) A on B
    b = padded_to(prepared(spaces.unit_b[chosen], alignment.centre_b), width)  # (m, d)
    both = np.concatenate([a, b])  # (2m, d)
    both -= both.mean(axis=0)
    _, _, vt = np.linalg.svd(both, full_matrices=False)
    xy = both @ vt[:2].T  # (2m, 2)
    m = len(chosen)
    return tuple(
        PlanePoint(
            spaces.shared.tokens[t],
            (float(xy[i, 0]), float(xy[i, 1])),
            (float(xy[m + i, 0]), float(xy[m + i, 1])),
            i < len(moved),
        )
        for i, t in enumerate(chosen.tolist())
    )


def diff(
    model_a: Model,
    model_b: Model,
    *,
    k: int = 10,
    top: int = 20,
    corpus: str | os.PathLike[str] | None = None,
    counts: np.ndarray | None = None,
    contextual: bool = False,
    layer: int | None = None,
    layer_b: int | None = None,
    occurrences: int = 10_000,
    seed: int = SEED,
    progress: bool = False,
) -> SpaceDiff:
    """Compare the input matrices of two models on the tokens they share (and, with `contextual`, their layers).

    `k` nearest tokens make each token's neighbourhood; `top` tokens that moved most are listed; `corpus` (a file or
    folder, or "sample"/"genesis") adds summaries by each token's count in it, and is what `contextual` reads
    ("sample" when not given) for `occurrences` word occurrences; `counts` (A's rows,) gives the counts already made
    (a continued run's own training tokens: `training.drift`), used instead of counting `corpus`, which then only names
    them; `layer`/`layer_b` choose the layers whose contextual neighbours are compared (default the last of each);
    `progress` shows each step on standard error (the two neighbour searches take seconds each at 30,000 rows).

    >>> result = diff(load_model(), load_model("continued-bert/"), corpus="genesis")  # doctest: +SKIP
    >>> [m.token for m in result.moved][:5]  # doctest: +SKIP
    """
    model_a = require_model(model_a, "model_a")
    model_b = require_model(model_b, "model_b")
    top = whole_number(top, "top", minimum=1)
    k = whole_number(k, "k", minimum=1)
    contextual = flag(contextual, "contextual")
    seed = checked_seed(seed)
    shared = shared_tokens(model_a, model_b)
    n = len(shared)
    if k >= n:
        raise InputError(f"k={k} must be below the {n:,} shared tokens.", "Give a smaller k (the default is 10).")
    rows_a = model_a.embedding_weights.word_embeddings[shared.ids_a]  # (n, d_a)
    rows_b = model_b.embedding_weights.word_embeddings[shared.ids_b]  # (n, d_b)
    steps = 3 + (counts is None and corpus is not None) + contextual
    with bar(steps, desc="diff", unit="step", show=progress) as shown:

        def step(what: str) -> None:
            shown.set_postfix_str(what)

        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if counts.shape != (model_a.matrix_rows,):
                raise InputError(
                    f"counts has shape {counts.shape}; model A has {model_a.matrix_rows:,} rows.",
                    "Give one count per row of A's input matrix (`spaces.token_counts(model_a, corpus)`).",
                )
            counts = counts[shared.ids_a]
        elif corpus is not None:
            step(f"counting tokens in {corpus}")
            counts = token_counts(model_a, corpus)[shared.ids_a]
            shown.update()
        unit_a, unit_b = unit_rows(rows_a), unit_rows(rows_b)
        step(f"the {k} nearest of {n:,} tokens in A")
        sets_a = nearest_sets(unit_a, k)
        shown.update()
        step(f"the {k} nearest of {n:,} tokens in B")
        sets_b = nearest_sets(unit_b, k)
        shown.update()
        step("aligning A onto B")
        overlap = jaccard(sets_a, sets_b)
        alignment = align(rows_a, rows_b)
        spaces = Spaces(shared, unit_a, unit_b, sets_a, sets_b, overlap, alignment, counts)
        residual = alignment.residual
        candidates = np.flatnonzero(shared.kinds != "special")
        order = np.lexsort((overlap[candidates], -residual[candidates]))  # largest residual, then lowest overlap
        moved = candidates[order[:top]]
        histogram, _ = np.histogram(overlap, bins=BINS, range=(0.0, 1.0))
        by_frequency: tuple[GroupSummary, ...] = ()
        if counts is not None:
            buckets = bucket_of(counts)
            labels = [(label, buckets == b) for b, (_, _, label) in enumerate(BUCKETS)]
            by_frequency = _groups(labels, overlap, residual)
        shown.update()
        context = None
        if contextual:
            from .contextual import contextual_diff

            step(f"every layer over {occurrences:,} word occurrences")
            context = contextual_diff(
                model_a,
                model_b,
                "sample" if corpus is None else corpus,
                occurrences=occurrences,
                layer=layer,
                layer_b=layer_b,
                k=k,
                seed=seed,
            )
            shown.update()
    raw = alignment.raw_cosine
    return SpaceDiff(
        model_a=model_a.source.description,
        model_b=model_b.source.description,
        tokens=n,
        same_vocabulary=shared.same_vocabulary,
        width_a=rows_a.shape[1],
        width_b=rows_b.shape[1],
        padded=alignment.padded,
        k=k,
        overlap_mean=float(overlap.mean()),
        overlap_median=float(np.median(overlap)),
        fit=alignment.fit,
        residual_mean=float(residual.mean()),
        residual_median=float(np.median(residual)),
        raw_cosine_mean=None if raw is None else float(raw.mean()),
        histogram=tuple(int(h) for h in histogram),
        by_kind=_groups([(kind, shared.kinds == kind) for kind in KINDS], overlap, residual),
        corpus=None if counts is None else "the counts given" if corpus is None else str(corpus),
        by_frequency=by_frequency,
        moved=tuple(spaces.change(int(i)) for i in moved),
        plane=_plane(spaces, moved, seed),
        contextual=context,
        token_list=shared.tokens,
        overlap=overlap,
        residual=residual,
        lookup=TokenLookup(spaces),
    )
