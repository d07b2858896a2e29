"""Commands on a word's senses in a corpus: senses."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.options import (
    CORPUS_OPTION,
    LAYER_OPTION,
    OVERWRITE_OPTION,
    PLOT_OPTION,
    SEED_OPTION,
    SENSE_WORDS_OPTION,
    WORD_POOL_OPTION,
)
from .common import (
    Commands,
    FlagParser,
    add_option,
    add_progress,
    load,
    only_with,
    run_options,
    run_parser,
    show_progress,
    value_of,
)

if TYPE_CHECKING:
    from ..plots.render import PlotResult
    from ..senses.senses import SensesResult


def register(commands: Commands, common: FlagParser) -> None:
    """Add the senses command."""
    cmd = commands.add_parser(
        "senses",
        parents=[common, run_parser()],
        help="a word's senses in an index or corpus: occurrences clustered, typical sentences, words, a picture",
        description="Cluster a word's occurrences into senses. bertlens senses INDEX WORD reads an occurrence index "
        "(bertlens index); bertlens senses --corpus PATH WORD reads a corpus directly ('sample': the bundled one).",
    )
    cmd.add_argument("first", metavar="INDEX", help="the index folder (with --corpus: the WORD)")
    cmd.add_argument("word", nargs="?", metavar="WORD", help="the word, e.g. bank")
    add_option(cmd, CORPUS_OPTION, help="instead of an index: a text file or folder, or 'sample'")
    cmd.add_argument("--k", default="auto", metavar="auto|N", help="the number of senses, or auto (default)")
    add_option(
        cmd,
        LAYER_OPTION,
        command="senses",
        help="the layer (default: the index's last stored layer; with --corpus, the last)",
    )
    cmd.add_argument("--max-occurrences", type=int, default=500, help="the most occurrences clustered (default 500)")
    cmd.add_argument("--typical", type=int, default=3, help="sentences shown per sense (default 3)")
    add_option(cmd, SENSE_WORDS_OPTION)
    add_option(cmd, SEED_OPTION, unset=False, help="seed of the sample and of k-means (default 0)")
    add_option(cmd, WORD_POOL_OPTION, when="with --corpus")
    add_option(cmd, PLOT_OPTION, help="draw the occurrences coloured by sense (.png, .svg or .html)")
    add_option(cmd, OVERWRITE_OPTION, help="with --plot: replace the file if it exists")
    add_progress(cmd)
    cmd.set_defaults(run=_run_senses)


def _run_senses(args: argparse.Namespace) -> SensesResult | PlotResult:
    from ..core.errors import InputError
    from ..senses.senses import SensesOptions, word_senses

    if args.corpus is None:
        if args.word is None:
            raise InputError(
                "senses takes an INDEX and a WORD (or --corpus PATH and a WORD).",
                "Example: bertlens senses my-index bank, or bertlens senses --corpus sample bank.",
            )
        only_with(args, ["--pool"], "with --corpus (an index keeps the pooling it was built with)")
        index, word = args.first, args.word
    else:
        if args.word is not None:
            raise InputError(
                "With --corpus, senses takes only the WORD (no INDEX).",
                "Example: bertlens senses --corpus sample bank.",
            )
        index, word = None, args.first
    if args.plot is None:
        only_with(args, ["--overwrite"], "with --plot")
    else:
        from ..plots.files import check_target

        check_target(Path(args.plot), args.overwrite)  # a bad target is refused before any slow work
    options = SensesOptions(
        k=args.k,
        layer=args.layer,
        max_occurrences=args.max_occurrences,
        typical=args.typical,
        words=args.words,
        pool=value_of(args, WORD_POOL_OPTION),
        seed=args.seed,
    )
    result = word_senses(
        load(args),
        word,
        index=index,
        corpus=args.corpus,
        options=options,
        run=run_options(args),
        progress=show_progress(args),
    )
    if args.plot is None:
        return result
    from ..plots.render import PlotOptions, PlotResult, render

    return PlotResult("senses", result, render(result, Path(args.plot), PlotOptions(overwrite=args.overwrite)))
