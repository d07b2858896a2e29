"""The extension report's results: options, per word and per strategy findings, and the report's tables.

`ReportOptions` says what the report looks at; `ExtensionReport` holds, for every strategy, a `StrategyReport` of
`WordReport`s (norms, nearest old tokens, per-layer cosines) and the `MaskedShift` of masked-LM predictions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contextual.states import RunOptions
from ..core.results import Result, table, visible
from .results import KnownWord


@dataclass(frozen=True)
class ReportOptions:
    """What the report looks at."""

    k: int = 5  # nearest old tokens listed per new word
    texts: tuple[str, ...] = ()  # texts without a new word feed the masked-LM check, texts with one the contextual
    # comparison; report.MASKED_SAMPLE and report.CONTEXT_TEMPLATES stand in for whichever kind is missing
    mask_rate: float = 0.15  # share of each text's tokens masked at once in the masked-LM check (at least one)
    seed: int = 0  # which positions are masked: numpy.random.default_rng(seed)
    context_words: int = 20  # new words put into CONTEXT_TEMPLATES when no given text holds them (the first N)
    run: RunOptions = RunOptions()  # noqa: RUF009 - frozen; how texts are run through the model
    cache_dir: str | None = None  # where the similarity index is cached


@dataclass(frozen=True)
class Nearest:
    """An old token near a new row."""

    token: str
    id: int
    cosine: float


@dataclass(frozen=True)
class WordReport:
    """One new word under one strategy."""

    word: str
    token: str
    id: int
    norm: float
    norm_percentile: float  # % of the old rows (specials and [unused] left out) with a smaller norm
    norm_z: float  # (norm - mean) / std of those old rows' norms
    cosine_pieces: float  # cosine of the new row with the mean of the old pieces' rows
    nearest: tuple[Nearest, ...]  # the old tokens nearest to the new row (cosine)
    layer_cosines: tuple[float, ...] | None  # per layer (0 = embedding output): new token vs old pieces' mean
    contexts: int  # texts the layer cosines are averaged over (0: not compared)


@dataclass(frozen=True)
class MaskedShift:
    """How the masked-LM predictions moved at masked positions of texts without new words."""

    positions: int  # masked positions scored
    kl_mean: float  # mean KL(old || new) in nats
    kl_median: float
    kl_max: float
    new_top1: int  # positions whose top prediction is now a new word (always wrong here)
    new_top1_rate: float  # new_top1 / positions
    top1_changed_rate: float  # share of positions whose top prediction changed at all
    new_mass: float  # mean probability the new words take together


@dataclass(frozen=True)
class StrategyReport:
    """Every new word under one strategy, and what its rows do to the model."""

    strategy: str
    words: tuple[WordReport, ...]
    masked: MaskedShift | None  # None without a masked-LM head
    layer_cosines: tuple[float, ...] | None  # per layer, mean over the compared words
    context_cosines: tuple[float, ...] | None  # per layer, the texts' other tokens: old model vs new model

    @property
    def mean_norm_percentile(self) -> float:
        return float(np.mean([w.norm_percentile for w in self.words]))

    @property
    def mean_cosine_pieces(self) -> float:
        return float(np.mean([w.cosine_pieces for w in self.words]))


@dataclass(frozen=True)
class NormStats:
    """The old rows' norms (special and [unused] rows left out)."""

    mean: float
    std: float
    p5: float
    p50: float
    p95: float


@dataclass(frozen=True)
class MaskedSample:
    """One text of the masked-LM check and the positions masked in it."""

    text: str
    positions: tuple[int, ...]  # token indices masked, in the tokenization with special tokens


@dataclass(frozen=True, repr=False)
class ExtensionReport(Result):
    """Diagnostics of one or more extensions of one model with the same words."""

    model: str
    words: tuple[str, ...]  # the new words
    known: tuple[KnownWord, ...]  # words already in the vocabulary (left out)
    norms: NormStats
    strategies: tuple[StrategyReport, ...]
    masked_samples: tuple[MaskedSample, ...]  # the masked-LM check's inputs (empty without a head)
    context_texts: tuple[str, ...]  # texts with new words, compared layer by layer
    notes: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        names = ", ".join(s.strategy for s in self.strategies)
        return f"ExtensionReport({len(self.words)} words; {names})"

    def strategy(self, name: str) -> StrategyReport:
        for report in self.strategies:
            if report.strategy == name:
                return report
        raise KeyError(name)

    def to_table(self) -> str:
        layers = next((len(s.layer_cosines) for s in self.strategies if s.layer_cosines), 0)
        head = ["strategy", "norm pct", "cos(pieces)", "nearest (1st word)"]
        if self.masked_samples:
            head += ["KL mean", "KL max", "new top-1", "new mass"]
        if layers:
            head += ["word cos L0", f"word cos L{layers - 1}", f"context cos L{layers - 1}"]
        rows = []
        for s in self.strategies:
            first = s.words[0].nearest[0].token if s.words and s.words[0].nearest else None
            row: list[Any] = [s.strategy, s.mean_norm_percentile, s.mean_cosine_pieces, visible(first or "-")]
            if self.masked_samples:
                m = s.masked
                row += [None, None, None, None] if m is None else [m.kl_mean, m.kl_max, m.new_top1_rate, m.new_mass]
            if layers:
                words, context = s.layer_cosines, s.context_cosines
                row += [words[0], words[-1]] if words else [None, None]
                row += [context[-1]] if context else [None]
            rows.append(row)
        n = self.norms
        lines = [
            f"{len(self.words)} new words in {self.model}",
            f"Old rows' norms: mean {n.mean:.4g}, std {n.std:.4g}, 5% {n.p5:.4g}, median {n.p50:.4g}, 95% {n.p95:.4g}",
            "",
            table(head, rows),
            "",
            "norm pct: share of old rows with a smaller norm (mean over words); cos(pieces): cosine with the old "
            "pieces' mean.",
        ]
        if self.masked_samples:
            positions = self.strategies[0].masked.positions if self.strategies[0].masked else 0
            lines.append(
                f"Masked-LM check: {positions} masked positions in {len(self.masked_samples)} texts without new words;"
                " KL(old || new) in nats; new top-1: share where a new word became the top prediction."
            )
        if layers:
            lines.append(
                f"Contextual check: {len(self.context_texts)} texts with new words; word cos: the new token's vector "
                "against its old pieces' mean; context cos: the other tokens, old model against new."
            )
        if self.known:
            known = ", ".join(f"{visible(k.word)} ({k.id})" for k in self.known)
            lines.append(f"Already in the vocabulary, left out: {known}.")
        for s in self.strategies:
            lines += ["", f"{s.strategy}:", word_table(s.words)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def word_table(words: Sequence[WordReport], shown: int = 20) -> str:
    """The first `shown` words of one strategy: norm, cosine with the pieces, nearest old tokens, last-layer cosine."""
    rows = [
        (
            visible(w.word),
            w.id,
            w.norm,
            w.norm_percentile,
            w.cosine_pieces,
            ", ".join(f"{visible(n.token)} {n.cosine:.2f}" for n in w.nearest[:3]),
            None if w.layer_cosines is None else w.layer_cosines[-1],
        )
        for w in words[:shown]
    ]
    text = table(["word", "id", "norm", "norm pct", "cos(pieces)", "nearest", "cos last layer"], rows)
    if len(words) > shown:
        text += f"\n… and {len(words) - shown} more words (all of them in --json / to_dict())."
    return text
