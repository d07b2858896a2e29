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
    """What the report looks at.

    >>> options = ReportOptions(k=5, texts="sample")  # nearest tokens shown, and texts to read the words in
    >>> report = compare_strategies(load_model(), ["aspirinex"], ["mean"], options=options)  # doctest: +SKIP
    """

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
    """Diagnostics of one or more extensions of one model with the same words.

    >>> report = compare_strategies(load_model(), ["aspirinex"], ["random", "pieces"])  # doctest: +SKIP
    >>> print(report.to_table())  # one line per strategy, then every word, then the recommendation  # doctest: +SKIP
    """

    model: str
    words: tuple[str, ...]  # the new words
    known: tuple[KnownWord, ...]  # words already in the vocabulary (left out)
    norms: NormStats
    strategies: tuple[StrategyReport, ...]
    masked_samples: tuple[MaskedSample, ...]  # the masked-LM check's inputs (empty without a head)
    context_texts: tuple[str, ...]  # texts with new words, compared layer by layer
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())  # given rows far outside the matrix's space (extend.space)
    recommended: str | None = None  # the strategy the report's own figures favour (see `recommend`)
    recommendation: str = ""  # which, and why, from the figures above

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
        lines += [f"warning: {warning}" for warning in self.warnings]
        if self.recommendation:
            lines += ["", f"Recommendation: {self.recommendation}"]
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


def _last(values: tuple[float, ...] | None) -> float | None:
    return values[-1] if values else None


def recommend(strategies: Sequence[StrategyReport]) -> tuple[str | None, str]:
    """The strategy the report's figures favour, and why in a sentence or two.

    A strategy under which a new word became the top masked-LM prediction is passed over (Hewitt 2021: such rows take
    over the model's predictions); among the rest, the one whose new tokens read most like their old pieces at the
    last layer wins (the model then understands the new token as it understood the word), the other tokens' stability
    breaking ties. Without contextual figures, the cosine with the pieces' mean decides.
    """
    if not strategies:
        return None, ""
    safe = [s for s in strategies if s.masked is None or s.masked.new_top1 == 0]
    took_over = [s for s in strategies if s not in safe]
    pool = safe or list(strategies)
    contextual = any(s.layer_cosines for s in pool)

    def key(s: StrategyReport) -> tuple[float, float]:
        if contextual:
            return (_last(s.layer_cosines) or -2.0, _last(s.context_cosines) or -2.0)
        return (s.mean_cosine_pieces, 0.0)

    ranked = sorted(pool, key=key, reverse=True)
    best = ranked[0]
    if contextual:
        figure = f"word cos {_last(best.layer_cosines):.3f}"
        why = "its new tokens read most like their old pieces at the last layer"
    else:
        figure = f"cos(pieces) {best.mean_cosine_pieces:.3f}"
        why = "its rows lie closest to their old pieces' mean"
    if len(strategies) == 1:
        text = f"{best.strategy}, the only strategy compared ({figure})."
    else:
        runner = ranked[1] if len(ranked) > 1 else None
        after = ""
        if runner is not None:
            value = _last(runner.layer_cosines) if contextual else runner.mean_cosine_pieces
            after = f"; next {runner.strategy}, {value:.3f}" if value is not None else ""
        text = f"{best.strategy}: {why} ({figure}{after})"
        best_context = _last(best.context_cosines)
        if best_context is not None:
            steadiest = max(pool, key=lambda s: _last(s.context_cosines) or -2.0)
            if steadiest is best or f"{_last(steadiest.context_cosines):.3f}" == f"{best_context:.3f}":
                text += f", and it disturbs the other tokens least (context cos {best_context:.3f})"
            else:
                text += (
                    f"; {steadiest.strategy} disturbs the other tokens a little less (context cos "
                    f"{_last(steadiest.context_cosines):.3f} against {best_context:.3f})"
                )
        text += "."
    if best.masked is not None:
        text += (
            f" In the masked-LM check no new word became a top prediction (KL mean {best.masked.kl_mean:.3g} nats)."
            if best.masked.new_top1 == 0
            else f" Every strategy let a new word become a top prediction; {best.strategy} at "
            f"{best.masked.new_top1_rate:.1%} of masked positions."
        )
    if took_over and safe:
        names = ", ".join(f"{s.strategy} ({s.masked.new_top1_rate:.1%})" for s in took_over if s.masked)
        text += f" Passed over: a new word took over masked predictions under {names} (Hewitt 2021)."
    outside = [s for s in strategies if not 1.0 <= s.mean_norm_percentile <= 99.0]
    if outside:
        names = ", ".join(f"{s.strategy} (norm pct {s.mean_norm_percentile:.0f})" for s in outside)
        text += f" Rows with norms outside the old rows' 1-99% range: {names}."
    return best.strategy, text
