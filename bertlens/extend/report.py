"""What new rows do: diagnostics of a vocabulary extension, side by side across strategies.

For every new word: its nearest old tokens, its norm against the old rows' norms, its cosine with its old pieces' mean.
For a model with a masked-LM head: on texts without the new words, how far the predictions at masked positions move
(KL divergence of the old distribution from the new one; the old one gives the new words probability 0) and how often
a new word wrongly becomes the top prediction (Hewitt 2021: rows far from the others can take over). For every model:
texts that contain a new word, run through the old model (the word as its old pieces) and the new one (the word as
one token), compared layer by layer: the new token's vector against its old pieces' mean, and the other tokens' vectors
against themselves (how much the new token disturbs its context).

Everything is computed in memory: the extended model is the source model resized once (transformers'
`resize_token_embeddings`, under a forked random generator so the caller's is untouched) with each strategy's rows
written in, exactly as `extend_vocabulary` would save them.

Here: the entry points, the texts they use and the static (no forward pass) findings; the result types and their
tables are in `report_results`, the forward passes in `report_runner`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..contextual.states import RunOptions
from ..core.checks import real_number, seed, whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.progress import bar
from ..similarity.index import open_index
from ..similarity.nearest import neighbors_many
from .inputs import STRATEGIES, ExtendOptions
from .plan import plan_extension
from .report_results import (
    ExtensionReport,
    Nearest,
    NormStats,
    ReportOptions,
    StrategyReport,
    WordReport,
    recommend,
)
from .report_runner import ReportRunner
from .results import Extension
from .space import cosine_with_pieces, norm_percentile, old_norms

MASKED_SAMPLE = (
    "The weather was cold and wet for most of the week.",
    "She opened the window and looked out at the garden.",
    "The committee will publish its report next month.",
    "He bought bread, milk and eggs at the market.",
    "Most of the students passed the final exam.",
    "The river flows through the centre of the old town.",
    "They played football in the park after school.",
    "The new library has more than a million books.",
    "Prices rose sharply during the second half of the year.",
    "The doctor told him to rest for a few days.",
    "Our train was delayed by almost an hour.",
    "The museum is closed on Mondays and public holidays.",
    "A small dog was sleeping under the kitchen table.",
    "The company was founded in a garage in 1976.",
    "We could hear music coming from the house next door.",
    "The film won three awards at the festival.",
)
CONTEXT_TEMPLATES = (
    "I read about {word} yesterday.",
    "The {word} was mentioned twice in the report.",
    "What do you know about {word}?",
    "They said {word} would change everything.",
)


def compare_strategies(
    model: Model,
    words: Iterable[str],
    strategies: Sequence[str] = ("random", "mean", "mean-resizing", "pieces", "neighbors"),
    *,
    extend: ExtendOptions = ExtendOptions(),  # noqa: B008 - frozen; its strategy is replaced by each of `strategies`
    options: ReportOptions = ReportOptions(),  # noqa: B008 - frozen dataclass
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> ExtensionReport:
    """Plan the extension of `model` with `words` under each strategy (nothing written) and report on all of them.

    `progress` shows bars on standard error: the strategies planned, then the strategies reported.

    >>> report = compare_strategies(load_model(), ["aspirinex"], ["mean", "pieces"])  # doctest: +SKIP
    >>> report.recommended  # doctest: +SKIP
    'pieces'
    """
    import dataclasses

    _check_options(options)
    if isinstance(strategies, str):
        strategies = [strategies]
    strategies = list(dict.fromkeys(strategies))
    if not strategies:
        raise InputError("No strategy was given.", f"Choose from: {', '.join(STRATEGIES)}.")
    words = list(words)
    extensions = []
    with bar(len(strategies), desc="extend-report: planning", unit="strategy", show=progress) as shown:
        for name in strategies:
            shown.set_postfix_str(name)
            planned = plan_extension(
                model,
                words,
                dataclasses.replace(extend, strategy=name),  # type: ignore[arg-type]
                rows=rows if name == "rows" else None,
            )
            extensions.append(planned)
            shown.update()
    return report_extensions(model, extensions, options, progress=progress)


def report_extensions(
    model: Model,
    extensions: Sequence[Extension],
    options: ReportOptions = ReportOptions(),  # noqa: B008 - frozen dataclass
    *,
    progress: bool = False,
) -> ExtensionReport:
    """Diagnostics of extensions of `model` that add the same words (e.g. one per strategy), ending with the strategy
    their figures favour (`recommend`). `progress` shows a bar on standard error: the old model's passes, then each
    extension's.

    >>> model = load_model()
    >>> plans = [plan_extension(model, ["aspirinex"], ExtendOptions(strategy=s)) for s in ("mean", "pieces")]
    >>> report_extensions(model, plans).recommended  # doctest: +SKIP
    'pieces'
    """
    if not extensions:
        raise InputError("No extension was given.", "Plan one with plan_extension.")
    first = extensions[0]
    if any([w.token for w in e.added] != [w.token for w in first.added] for e in extensions):
        raise InputError("The extensions add different words.", "Compare extensions of the same words.")
    _check_options(options)
    index = open_index(model, options.cache_dir)
    norms = old_norms(model)  # sorted
    stats = NormStats(
        mean=float(norms.mean()),
        std=float(norms.std()),
        p5=float(np.percentile(norms, 5)),
        p50=float(np.percentile(norms, 50)),
        p95=float(np.percentile(norms, 95)),
    )
    notes: list[str] = []
    masked_texts, context_texts = _split_texts(first, options, notes)
    reports = []
    with bar(len(extensions) + 1, desc="extend-report", unit="step", show=progress) as shown:
        shown.set_postfix_str(f"the old model ({len(masked_texts) + len(context_texts)} texts)")
        runner = ReportRunner(model, first, options, masked_texts, context_texts, notes)
        shown.update()
        for extension in extensions:
            shown.set_postfix_str(f"{extension.strategy} ({len(extension.added)} words)")
            static = _static_words(model, extension, index, norms, options)
            masked, per_word, layer_means, context_means = runner.run(extension)
            words = tuple(WordReport(**s, **_layers_of(per_word, s["id"])) for s in static)
            reports.append(StrategyReport(extension.strategy, words, masked, layer_means, context_means))
            shown.update()
    recommended, recommendation = recommend(reports)
    return ExtensionReport(
        model=model.source.description,
        words=tuple(w.word for w in first.added),
        known=first.known,
        norms=stats,
        strategies=tuple(reports),
        masked_samples=runner.samples,
        context_texts=tuple(context_texts),
        notes=tuple(notes),
        warnings=tuple(w for e in extensions for w in e.warnings),
        recommended=recommended,
        recommendation=recommendation,
    )


def _check_options(options: ReportOptions) -> None:
    if not isinstance(options, ReportOptions):
        raise InputError(f"options must be ReportOptions, got {type(options).__name__}.", "Pass ReportOptions(k=5).")
    whole_number(options.k, "k", minimum=1)
    whole_number(options.context_words, "context_words", minimum=1)
    seed(options.seed, "seed")
    if not 0 < real_number(options.mask_rate, "mask_rate") <= 1:
        raise InputError(f"mask_rate must be in (0, 1], got {options.mask_rate!r}.", "Example: mask_rate=0.15.")
    if not isinstance(options.texts, (tuple, list)) or not all(isinstance(t, str) for t in options.texts):
        raise InputError("texts must be a tuple of strings.", "Pass texts=('one text', 'another text').")
    if not isinstance(options.run, RunOptions):
        raise InputError(f"run must be RunOptions, got {type(options.run).__name__}.", "Pass RunOptions().")


def _layers_of(per_word: dict[int, tuple[tuple[float, ...], int]], token_id: int) -> dict[str, Any]:
    cosines, count = per_word.get(token_id, (None, 0))
    return {"layer_cosines": cosines, "contexts": count}


def _static_words(
    model: Model, extension: Extension, index: Any, norms: np.ndarray, options: ReportOptions
) -> list[dict[str, Any]]:
    """Per word: norm against the old norms, cosine with the pieces' mean, nearest old tokens."""
    matrix = model.embedding_weights.word_embeddings
    found = neighbors_many(model, list(extension.rows), options.k, index=index)
    out = []
    for n, word in enumerate(extension.added):
        row = extension.rows[n].astype(np.float64)
        norm = float(np.linalg.norm(row))
        out.append(
            dict(
                word=word.word,
                token=word.token,
                id=word.id,
                norm=norm,
                norm_percentile=norm_percentile(norms, norm),
                norm_z=float((norm - norms.mean()) / norms.std()) if norms.std() > 0 else 0.0,
                cosine_pieces=cosine_with_pieces(matrix, extension.rows[n], word.piece_ids),
                nearest=tuple(Nearest(x.token, x.id, x.score) for x in found[n].neighbors),
            )
        )
    return out


def _contains_new(extension: Extension, text: str) -> bool:
    new = set(extension.ids)
    return any(i in new for i in extension.tokenizer.encode(text).ids)


def _split_texts(extension: Extension, options: ReportOptions, notes: list[str]) -> tuple[list[str], list[str]]:
    """Texts without new words (masked-LM check) and texts with them (contextual check)."""
    given = [t for t in options.texts if t.strip()]
    with_new = [t for t in given if _contains_new(extension, t)]
    without = [t for t in given if not _contains_new(extension, t)]
    if not without:
        without = list(MASKED_SAMPLE)
    if not with_new:
        chosen = extension.added[: options.context_words]
        with_new = [template.format(word=w.word) for w in chosen for template in CONTEXT_TEMPLATES]
        if len(extension.added) > len(chosen):
            notes.append(
                f"The contextual check puts the first {len(chosen)} of {len(extension.added)} new words into "
                f"{len(CONTEXT_TEMPLATES)} template sentences each (ReportOptions.context_words)."
            )
    return without, with_new
