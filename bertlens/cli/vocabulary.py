"""Commands that change the vocabulary: extend (save a model with new words), extend-report (what new rows do)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.options import (
    CACHE_DIR_OPTION,
    EXTEND_NEIGHBORS_OPTION,
    NEW_WORDS_OPTION,
    OUT_OPTION,
    REPORT_K_OPTION,
    REPORT_MAX_TEXTS_OPTION,
    ROWS_OPTION,
    SEED_OPTION,
    STRATEGIES,
    STRATEGIES_OPTION,
    STRATEGY_OPTION,
    TEMPERATURE_OPTION,
    WORDS_FILE_OPTION,
    Strategy,
)
from .common import Call, command
from .params import argument, option, progress_flag

if TYPE_CHECKING:
    from ..core.model import Model
    from ..extend import ExtendOptions
    from ..extend.report_results import ExtensionReport
    from ..extend.results import ExtendResult

Warned = TypeVar("Warned", "ExtendResult", "ExtensionReport")  # a result that may carry warnings
F = TypeVar("F", bound=Callable[..., Any])


def word_flags(function: F) -> F:
    """MODEL, the new words and how their rows are made: what extend and extend-report share."""
    for decorate in reversed(
        (
            argument("source", "the model to extend (default: --model)", required=False, metavar="[MODEL]"),
            option(NEW_WORDS_OPTION),
            option(WORDS_FILE_OPTION),
            option(ROWS_OPTION),
            option(SEED_OPTION, help="random and mean-resizing draws"),
            option(EXTEND_NEIGHBORS_OPTION),
            option(TEMPERATURE_OPTION),
            option(CACHE_DIR_OPTION),
        )
    ):
        function = decorate(function)
    return function


@command("extend", "add words to the vocabulary with principled first rows; save a new model directory")
@word_flags
@option(STRATEGY_OPTION)
@option(OUT_OPTION, required=True, help="the new model's directory (must not exist)")
def extend(
    call: Call,
    source: str | None,
    words: tuple[str, ...],
    words_file: str | None,
    rows: str | None,
    seed: int,
    neighbors: int | None,
    temperature: float,
    cache_dir: str | None,
    init: Strategy,
    out: str,
) -> ExtendResult:
    from ..core.outputs import output_path
    from ..extend import check_destination, extend_vocabulary

    check_destination(output_path(out, "extended model"))  # before loading anything
    _refuse_unused(call, [init])
    if init not in ("random", "mean-resizing"):
        call.applies_only(["--seed"], "to --init random and mean-resizing (the others draw nothing)")
    if init != "neighbors":
        call.applies_only(["--cache-dir"], "to --init neighbors (the only strategy that searches the matrix)")
    new = _words(words, words_file)
    options = _options(init, seed, neighbors, temperature, cache_dir)
    return _warned(extend_vocabulary(_model(call, source), new, out, options, rows=rows))


@command("extend-report", "what new rows do, side by side across strategies (nothing is written)")
@word_flags
@option(STRATEGIES_OPTION, help=f"strategies to compare, several after one --init: {' '.join(STRATEGIES)}")
@click.option(
    "--texts",
    metavar="PATH",
    help="a text file or folder (one text per line; the first --max-texts are used): texts without new words are "
    "masked, texts with one are compared layer by layer (default: a built-in sample and templates)",
)
@option(REPORT_MAX_TEXTS_OPTION, help="texts read from --texts")
@option(REPORT_K_OPTION, help="nearest old tokens per new word")
@progress_flag()
def extend_report(
    call: Call,
    source: str | None,
    words: tuple[str, ...],
    words_file: str | None,
    rows: str | None,
    seed: int,
    neighbors: int | None,
    temperature: float,
    cache_dir: str | None,
    init: tuple[Strategy, ...],
    texts: str | None,
    max_texts: int,
    k: int,
    no_progress: bool,
) -> ExtensionReport:
    from itertools import islice

    from ..core.corpus import iter_texts
    from ..core.errors import InputError
    from ..extend.report import compare_strategies
    from ..extend.report_results import ReportOptions

    strategies: list[str] = list(init)
    if rows and "rows" not in strategies:
        strategies.append("rows")
    _refuse_unused(call, strategies)
    if texts is None:
        call.applies_only(["--max-texts"], "with --texts")
    if max_texts < 1:
        raise InputError(f"--max-texts must be positive, got {max_texts}.", "Example: --max-texts 200")
    new = _words(words, words_file)
    read: tuple[str, ...] = ()
    if texts is not None:
        read = tuple(t.text for t in islice(iter_texts(texts), max_texts))
    return _warned(
        compare_strategies(
            _model(call, source),
            new,
            strategies,
            extend=_options("pieces", seed, neighbors, temperature, cache_dir),
            options=ReportOptions(k=k, texts=read, seed=seed, cache_dir=cache_dir),
            rows=rows,
            progress=call.progress,
        )
    )


def _words(given: tuple[str, ...], words_file: str | None) -> list[str]:
    """--words as given (never read as a path) and the lines of --words-file."""
    from ..core.errors import InputError
    from ..extend import read_words

    words = list(given)
    for word in words:
        if "/" in word or word.endswith((".txt", ".lst", ".csv")):  # a file name given as a word
            raise InputError(
                f"{word[:80]!r} looks like a file name, but --words takes the words themselves.",
                f"Read words from a file with --words-file {word[:80]}",
            )
    if words_file is not None:
        words += read_words(words_file)
    if not words:
        raise InputError("No words were given.", "Example: bertlens extend --words aspirin ibuprofen --out new-model/")
    return words


def _model(call: Call, source: str | None) -> Model:
    from ..core.errors import InputError
    from ..core.model import load_model

    if source is None:
        return call.model()
    if not source.strip():
        raise InputError(
            "The MODEL argument is empty.",
            "Name the model to extend ('default', a folder or a hub id), or leave MODEL out to use --model.",
        )
    if call.model_name is not None:
        raise InputError(f"Give the model once: MODEL ({source}) or --model ({call.model_name}).", "Drop one of them.")
    return load_model(source, offline=call.offline, progress=call.progress)


def _options(
    strategy: Strategy, seed: int, neighbors: int | None, temperature: float, cache_dir: str | None
) -> ExtendOptions:
    """How new rows start: `strategy` with the options given (--neighbors: the library's default where not given)."""
    from ..extend import ExtendOptions

    options = ExtendOptions(strategy=strategy, seed=seed, temperature=temperature, cache_dir=cache_dir)
    return options if neighbors is None else replace(options, k=neighbors)


def _refuse_unused(call: Call, strategies: list[str]) -> None:
    """Options no chosen strategy uses are refused rather than ignored."""
    if "neighbors" not in strategies:
        call.applies_only(["--neighbors", "--temperature"], "to --init neighbors")


def _warned(result: Warned) -> Warned:
    """The result, its warnings also said on standard error (where --json output does not hide them)."""
    import sys

    for warning in result.warnings:
        print(f"bertlens: warning: {warning}", file=sys.stderr)
    return result
