"""Commands that change the vocabulary: extend (save a model with new words), extend-report (what new rows do)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import load

STRATEGIES = [
    "random",
    "mean",
    "mean-resizing",
    "pieces",
    "pieces-first",
    "pieces-last",
    "pieces-weighted",
    "neighbors",
    "rows",
]  # as bertlens.extend.STRATEGIES (not imported: speed)
REPORTED = ["random", "mean", "mean-resizing", "pieces", "neighbors"]


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add the vocabulary commands."""
    words = argparse.ArgumentParser(add_help=False)
    words.add_argument("source", nargs="?", metavar="MODEL", help="the model to extend (default: --model)")
    words.add_argument(
        "--words",
        "-w",
        nargs="+",
        default=[],
        metavar="W",
        help="the new words; a single value naming an existing file is read as one word per line",
    )
    words.add_argument("--words-file", metavar="FILE", help="a file with one new word per line")
    words.add_argument("--rows", metavar="FILE", help="rows strategy: a vector per word (word2vec text format)")
    words.add_argument("--seed", type=int, default=0, help="random and mean-resizing draws (default 0)")
    words.add_argument("--neighbors", type=int, default=10, metavar="K", help="neighbors: old tokens mixed (10)")
    words.add_argument(
        "--temperature", type=float, default=0.1, help="neighbors: weights are softmax(cosine / T) (default 0.1)"
    )
    words.add_argument("--cache-dir", help="where the normalised matrix is cached (default: ~/.cache/bertlens)")

    cmd = commands.add_parser(
        "extend",
        parents=[common, words],
        help="add words to the vocabulary with principled first rows; save a new model directory",
    )
    cmd.add_argument("--init", default="pieces", choices=STRATEGIES, help="how the new rows start (default pieces)")
    cmd.add_argument("--out", "-o", required=True, help="the new model's directory (must not exist)")
    cmd.set_defaults(run=_run_extend)

    cmd = commands.add_parser(
        "extend-report",
        parents=[common, words],
        help="what new rows do, side by side across strategies (nothing is written)",
    )
    cmd.add_argument(
        "--init",
        nargs="+",
        default=REPORTED,
        choices=STRATEGIES,
        metavar="STRATEGY",
        help=f"strategies to compare (default: {' '.join(REPORTED)})",
    )
    cmd.add_argument(
        "--texts",
        metavar="PATH",
        help="a text file or folder (one text per line; the first --max-texts are used): texts without new words "
        "are masked, texts with one are compared layer by layer (default: a built-in sample and templates)",
    )
    cmd.add_argument("--max-texts", type=int, default=200, metavar="N", help="texts read from --texts (200)")
    cmd.add_argument("-k", type=int, default=5, help="nearest old tokens per new word (default 5)")
    cmd.set_defaults(run=_run_report)


def _words(args: argparse.Namespace) -> list[str]:
    from ..errors import InputError
    from ..extend import read_words

    words = list(args.words)
    if args.words_file:
        words += read_words(args.words_file)
    if len(args.words) == 1 and not args.words_file:
        single = args.words[0]
        if Path(single).expanduser().is_file():
            words = read_words(single)
        elif "/" in single or single.endswith((".txt", ".lst", ".csv")):  # a mistyped file name, not a word
            raise InputError(f"No such words file: {single}", "Check the path, or use --words-file FILE.")
    if not words:
        raise InputError("No words were given.", "Example: bertlens extend --words aspirin ibuprofen --out new-model/")
    return words


def _model(args: argparse.Namespace) -> Any:
    from ..model import load_model

    return load_model(args.source) if args.source else load(args)


def _options(args: argparse.Namespace, strategy: str) -> Any:
    from ..extend import ExtendOptions

    return ExtendOptions(
        strategy=strategy,  # type: ignore[arg-type]
        seed=args.seed,
        k=args.neighbors,
        temperature=args.temperature,
        cache_dir=args.cache_dir,
    )


def _run_extend(args: argparse.Namespace) -> Any:
    from ..extend import check_destination, extend_vocabulary

    check_destination(args.out)  # before loading anything
    words = _words(args)
    return extend_vocabulary(_model(args), words, args.out, _options(args, args.init), rows=args.rows)


def _run_report(args: argparse.Namespace) -> Any:
    from itertools import islice

    from ..corpus import iter_texts
    from ..errors import InputError
    from ..extend_report import ReportOptions, compare_strategies

    words = _words(args)
    if args.max_texts < 1:
        raise InputError(f"--max-texts must be positive, got {args.max_texts}.", "Example: --max-texts 200")
    texts: tuple[str, ...] = ()
    if args.texts:
        texts = tuple(t.text for t in islice(iter_texts(args.texts), args.max_texts))
    options = ReportOptions(k=args.k, texts=texts, seed=args.seed, cache_dir=args.cache_dir)
    strategies = list(args.init)
    if args.rows and "rows" not in strategies:
        strategies.append("rows")
    return compare_strategies(
        _model(args), words, strategies, extend=_options(args, "pieces"), options=options, rows=args.rows
    )
