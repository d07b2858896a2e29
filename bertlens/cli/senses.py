"""Commands on a word's senses in a corpus: senses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.options import (
    CORPUS_OPTION,
    INDEX_LAYER_OPTION,
    MAX_OCCURRENCES_OPTION,
    OVERWRITE_OPTION,
    PLOT_OPTION,
    SEED_OPTION,
    SENSE_WORDS_OPTION,
    TYPICAL_OPTION,
    WORD_POOL_OPTION,
    WordPool,
)
from .common import Call, command
from .params import argument, option, progress_flag, run_flags

if TYPE_CHECKING:
    from ..plots.render import PlotResult
    from ..senses.senses import SensesResult


@command(
    "senses",
    "a word's senses in an index or corpus: occurrences clustered, typical sentences, words, a picture",
    "Cluster a word's occurrences into senses. bertlens senses INDEX WORD reads an occurrence index (bertlens "
    "index); bertlens senses --corpus PATH WORD reads a corpus directly ('sample': the bundled one).",
)
@argument("first", "the index folder (with --corpus: the WORD)", metavar="INDEX")
@argument("word", "the word, e.g. bank", required=False, metavar="[WORD]")
@option(CORPUS_OPTION, help="instead of an index: a text file or folder, or 'sample'")
@click.option("--k", default="auto", show_default=True, metavar="auto|N", help="the number of senses, or auto")
@option(INDEX_LAYER_OPTION, help="the layer (default: the index's last stored layer; with --corpus, the last)")
@option(MAX_OCCURRENCES_OPTION)
@option(TYPICAL_OPTION)
@option(SENSE_WORDS_OPTION)
@option(SEED_OPTION, help="seed of the sample and of k-means")
@option(WORD_POOL_OPTION, help=f"with --corpus: {WORD_POOL_OPTION.help}")
@option(PLOT_OPTION, help="draw the occurrences coloured by sense (.png, .svg or .html)")
@option(OVERWRITE_OPTION, help="with --plot: replace the file if it exists")
@run_flags()
@progress_flag()
def senses(
    call: Call,
    first: str,
    word: str | None,
    corpus: str | None,
    k: str,
    layer: int | None,
    max_occurrences: int,
    typical: int,
    words: int,
    seed: int,
    pool: WordPool,
    plot: str | None,
    overwrite: bool,
    **run: object,
) -> SensesResult | PlotResult:
    from ..core.errors import InputError
    from ..senses.senses import SensesOptions, word_senses
    from ..views.clusters import check_k

    if corpus is None:
        if word is None:
            raise InputError(
                "senses takes an INDEX and a WORD (or --corpus PATH and a WORD).",
                "Example: bertlens senses my-index bank, or bertlens senses --corpus sample bank.",
            )
        call.applies_only(["--pool"], "with --corpus (an index keeps the pooling it was built with)")
        index, chosen = first, word
    else:
        if word is not None:
            raise InputError(
                "With --corpus, senses takes only the WORD (no INDEX).",
                "Example: bertlens senses --corpus sample bank.",
            )
        index, chosen = None, first
    if plot is None:
        call.applies_only(["--overwrite"], "with --plot")
    else:
        from ..plots.files import check_target

        check_target(Path(plot), overwrite)  # a bad target is refused before any slow work
    options = SensesOptions(
        k=check_k(k), layer=layer, max_occurrences=max_occurrences, typical=typical, words=words, pool=pool, seed=seed
    )
    result = word_senses(
        call.model(),
        chosen,
        index=index,
        corpus=corpus,
        options=options,
        run=call.run_options(),
        progress=call.progress,
    )
    if plot is None:
        return result
    from ..plots.render import PlotOptions, PlotResult, render

    return PlotResult("senses", result, render(result, Path(plot), PlotOptions(overwrite=overwrite)))
