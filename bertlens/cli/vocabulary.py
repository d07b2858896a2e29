"""Commands that change the vocabulary: extend (save a model with new words), extend-report (what new rows do)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeVar

from ..core.options import (
    CACHE_DIR_OPTION,
    EXTEND_NEIGHBORS_OPTION,
    K_OPTION,
    MAX_TEXTS_OPTION,
    NEW_WORDS_OPTION,
    OUT_OPTION,
    SEED_OPTION,
    STRATEGIES_OPTION,
    STRATEGY_OPTION,
)
from .common import (
    Commands,
    FlagParser,
    add_option,
    add_progress,
    load,
    offline,
    only_with,
    show_progress,
    value_of,
)

if TYPE_CHECKING:
    from ..core.model import Model
    from ..extend import ExtendOptions
    from ..extend.report_results import ExtensionReport
    from ..extend.results import ExtendResult

Warned = TypeVar("Warned", "ExtendResult", "ExtensionReport")  # a result that may carry warnings


def register(commands: Commands, common: FlagParser) -> None:
    """Add the vocabulary commands."""
    words = FlagParser(add_help=False)
    words.add_argument("source", nargs="?", metavar="MODEL", help="the model to extend (default: --model)")
    add_option(words, NEW_WORDS_OPTION)
    words.add_argument("--words-file", metavar="FILE", help="a file with one new word per line")
    words.add_argument("--rows", metavar="FILE", help="rows strategy: a vector per word (word2vec text format)")
    add_option(words, SEED_OPTION, help="random and mean-resizing draws (default 0)")
    add_option(words, EXTEND_NEIGHBORS_OPTION)
    words.add_argument("--temperature", type=float, help="neighbors: weights are softmax(cosine / T) (default 0.1)")
    add_option(words, CACHE_DIR_OPTION)

    cmd = commands.add_parser(
        "extend",
        parents=[common, words],
        help="add words to the vocabulary with principled first rows; save a new model directory",
    )
    add_option(cmd, STRATEGY_OPTION)
    add_option(cmd, OUT_OPTION, required=True, help="the new model's directory (must not exist)")
    cmd.set_defaults(run=_run_extend)

    cmd = commands.add_parser(
        "extend-report",
        parents=[common, words],
        help="what new rows do, side by side across strategies (nothing is written)",
    )
    add_option(cmd, STRATEGIES_OPTION)
    cmd.add_argument(
        "--texts",
        metavar="PATH",
        help="a text file or folder (one text per line; the first --max-texts are used): texts without new words "
        "are masked, texts with one are compared layer by layer (default: a built-in sample and templates)",
    )
    add_option(cmd, MAX_TEXTS_OPTION, unset=True, metavar="N", help="texts read from --texts (200)")
    add_option(cmd, K_OPTION, command="extend-report", help="nearest old tokens per new word (default 5)")
    add_progress(cmd)
    cmd.set_defaults(run=_run_report)


def _words(args: argparse.Namespace) -> list[str]:
    """--words as given (never read as a path) and the lines of --words-file."""
    from ..core.errors import InputError
    from ..extend import read_words

    words = list(args.words)
    for word in words:
        if "/" in word or word.endswith((".txt", ".lst", ".csv")):  # a file name given as a word
            raise InputError(
                f"{word[:80]!r} looks like a file name, but --words takes the words themselves.",
                f"Read words from a file with --words-file {word[:80]}",
            )
    if args.words_file is not None:
        words += read_words(args.words_file)
    if not words:
        raise InputError("No words were given.", "Example: bertlens extend --words aspirin ibuprofen --out new-model/")
    return words


def _model(args: argparse.Namespace) -> Model:
    from ..core.errors import InputError
    from ..core.model import load_model

    if args.source is None:
        return load(args)
    if not args.source.strip():
        raise InputError(
            "The MODEL argument is empty.",
            "Name the model to extend ('default', a folder or a hub id), or leave MODEL out to use --model.",
        )
    if args.model is not None:
        raise InputError(f"Give the model once: MODEL ({args.source}) or --model ({args.model}).", "Drop one of them.")
    return load_model(args.source, offline=offline(args), progress=show_progress(args))


def _options(args: argparse.Namespace, strategy: str) -> ExtendOptions:
    from ..extend import ExtendOptions

    given = {"seed": args.seed, "k": args.neighbors, "temperature": args.temperature, "cache_dir": args.cache_dir}
    return ExtendOptions(strategy=strategy, **{k: v for k, v in given.items() if v is not None})  # type: ignore[arg-type]


def _refuse_unused(args: argparse.Namespace, strategies: list[str]) -> None:
    """Options no chosen strategy uses are refused rather than ignored."""
    if "neighbors" not in strategies:
        only_with(args, ["--neighbors", "--temperature"], "to --init neighbors")


def _run_extend(args: argparse.Namespace) -> ExtendResult:
    from ..core.outputs import output_path
    from ..extend import check_destination, extend_vocabulary

    check_destination(output_path(args.out, "extended model"))  # before loading anything
    _refuse_unused(args, [args.init])
    if args.init not in ("random", "mean-resizing"):
        only_with(args, ["--seed"], "to --init random and mean-resizing (the others draw nothing)")
    if args.init != "neighbors":
        only_with(args, ["--cache-dir"], "to --init neighbors (the only strategy that searches the matrix)")
    words = _words(args)
    return _warned(extend_vocabulary(_model(args), words, args.out, _options(args, args.init), rows=args.rows))


def _warned(result: Warned) -> Warned:
    """The result, its warnings also said on standard error (where --json output does not hide them)."""
    import sys

    for warning in result.warnings:
        print(f"bertlens: warning: {warning}", file=sys.stderr)
    return result


def _run_report(args: argparse.Namespace) -> ExtensionReport:
    from itertools import islice

    from ..core.corpus import iter_texts
    from ..core.errors import InputError
    from ..extend.report import compare_strategies
    from ..extend.report_results import ReportOptions

    strategies = list(args.init)
    if args.rows and "rows" not in strategies:
        strategies.append("rows")
    _refuse_unused(args, strategies)
    if args.texts is None:
        only_with(args, ["--max-texts"], "with --texts")
    max_texts = value_of(args, MAX_TEXTS_OPTION, "extend-report")
    if max_texts < 1:
        raise InputError(f"--max-texts must be positive, got {max_texts}.", "Example: --max-texts 200")
    words = _words(args)
    texts: tuple[str, ...] = ()
    if args.texts is not None:
        texts = tuple(t.text for t in islice(iter_texts(args.texts), max_texts))
    options = ReportOptions(k=args.k, texts=texts, seed=0 if args.seed is None else args.seed, cache_dir=args.cache_dir)
    return _warned(
        compare_strategies(
            _model(args),
            words,
            strategies,
            extend=_options(args, "pieces"),
            options=options,
            rows=args.rows,
            progress=show_progress(args),
        )
    )
