"""`bertlens plot KIND …`: compute one result (projection, trajectory, …) and draw it to PNG, SVG or HTML."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import (
    CORPUS_OPTION,
    COUNT_OPTION,
    LABEL_OPTION,
    LAYER_OPTION,
    LEVEL_OPTION,
    MAX_CONTEXTS_OPTION,
    MAX_TEXTS_OPTION,
    NO_CHECK_OPTION,
    PAIR_OPTION,
    SEED_OPTION,
    SENTENCES_OPTION,
    TRAJECTORY_SENTENCES_OPTION,
    WORD_LIST_OPTION,
    WORD_OPTION,
    WORD_POOL_OPTION,
)
from .common import (
    Commands,
    FlagParser,
    add_option,
    load,
    only_with,
    run_options,
    run_parser,
    show_progress,
    text_argument,
    value_of,
)
from .drawing import check_out, draw_options, finish, point_options, projection_options, projection_settings

if TYPE_CHECKING:
    from ..plots.render import PlotResult

KINDS = ("tokens", "contextual", "trajectory", "positions", "embedding-layer", "context", "contextuality")


def register(commands: Commands, common: FlagParser) -> None:
    """Add `plot` and its kinds."""
    draw, projection, points, run = draw_options(), projection_options(), point_options(), run_parser()
    plot = commands.add_parser(
        "plot",
        parents=[common],
        help="pictures: projections of tokens or contextual vectors, a word's trajectory, positions, the embedding "
        "layer, per-layer curves (PNG, SVG, HTML)",
        description="Compute a result and draw it. Without --out only the data is printed (--json: as JSON).",
    )
    kinds: Commands = plot.add_subparsers(dest="kind", metavar="KIND", required=True)
    _add_tokens(kinds, [common, draw, projection, points])
    _add_contextual(kinds, [common, draw, projection, points, run])
    _add_trajectory(kinds, [common, draw, projection, run])
    _add_positions(kinds, [common, draw])
    _add_embedding_layer(kinds, [common, draw])
    _add_context(kinds, [common, draw, run])
    _add_contextuality(kinds, [common, draw, run])


def _add_tokens(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot tokens`: rows of the input matrix projected."""
    cmd = kinds.add_parser(
        "tokens",
        parents=parents,
        help="rows of the input matrix for tokens, words (pieces averaged) or ids; the first --count whole words "
        "(coloured by theme); or, given neither, 168 common words in 12 groups (numbers, months, colours, …)",
    )
    cmd.add_argument(
        "tokens",
        nargs="*",
        metavar="TOKEN",
        help="tokens or words, e.g. king queen man woman (none: 168 common words in 12 groups, coloured by group)",
    )
    add_option(
        cmd,
        COUNT_OPTION,
        help="instead of TOKENs: the first COUNT whole-word tokens of the vocabulary, coloured by theme (clusters "
        "named by their central words)",
    )
    cmd.add_argument("--ids", action="store_true", help="the TOKENs are token ids")
    add_option(cmd, LABEL_OPTION)
    cmd.set_defaults(run=_run_tokens)


def _add_contextual(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot contextual`: contextual vectors at one layer projected."""
    cmd = kinds.add_parser(
        "contextual",
        parents=parents,
        help="every word's (or token's) contextual vector at one layer, over texts or a corpus",
    )
    cmd.add_argument("texts", nargs="*", metavar="TEXT", help="texts ('-' reads one text per line of standard input)")
    add_option(cmd, CORPUS_OPTION, help="instead of TEXTs: a text file or folder (one text per line)")
    add_option(cmd, MAX_TEXTS_OPTION, unset=True, help="with --corpus: texts read (default 1000)")
    add_option(cmd, LAYER_OPTION)
    add_option(cmd, LEVEL_OPTION)
    cmd.add_argument("--special", action="store_true", help="with --level token: keep [CLS], [SEP] and the like")
    cmd.set_defaults(run=_run_contextual)


def _add_trajectory(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot trajectory`: a word's path through the layers."""
    cmd = kinds.add_parser(
        "trajectory",
        parents=parents,
        help="a word's vector at every layer in each sentence, one projection fitted over all layers",
    )
    add_option(cmd, WORD_OPTION)
    add_option(cmd, TRAJECTORY_SENTENCES_OPTION, nargs="+")
    cmd.set_defaults(run=_run_trajectory)


def _add_positions(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot positions`: the position rows' cosines as a heat map."""
    cmd = kinds.add_parser(
        "positions", parents=parents, help="cosine of every pair of position rows; token-type rows compared"
    )
    cmd.add_argument("--limit", type=int, help="only the first LIMIT position rows (default: all)")
    cmd.set_defaults(run=_run_positions)


def _add_embedding_layer(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot embedding-layer`: a text's steps through the embedding layer."""
    cmd = kinds.add_parser(
        "embedding-layer",
        parents=parents,
        help="a short text's word, token-type and position rows, their sum and the LayerNorm output",
    )
    cmd.add_argument("text", help="the text ('-' reads standard input)")
    add_option(cmd, PAIR_OPTION)
    add_option(cmd, NO_CHECK_OPTION)
    cmd.set_defaults(run=_run_embedding_layer)


def _add_context(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot context`: a word across sentences, per layer."""
    cmd = kinds.add_parser("context", parents=parents, help="a word across sentences: its vectors' cosine per layer")
    add_option(cmd, WORD_OPTION)
    add_option(cmd, SENTENCES_OPTION, nargs="+")
    add_option(cmd, WORD_POOL_OPTION)
    cmd.set_defaults(run=_run_context)


def _add_contextuality(kinds: Commands, parents: list[FlagParser]) -> None:
    """`plot contextuality`: Ethayarajh's measures per layer over a corpus."""
    cmd = kinds.add_parser(
        "contextuality",
        parents=parents,
        help="Ethayarajh's measures per layer over a corpus: self-similarity, intra-sentence, anisotropy baseline",
    )
    cmd.add_argument("corpus", help="a text file or folder (plain text or WikiExtractor <doc> files)")
    add_option(cmd, WORD_LIST_OPTION, unset=True, help="measure only these words (default: every word)")
    add_option(cmd, MAX_TEXTS_OPTION, command="plot contextuality", help="texts read (default 2000)")
    add_option(cmd, MAX_CONTEXTS_OPTION)
    cmd.set_defaults(run=_run_contextuality)


def _run_tokens(args: argparse.Namespace) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_tokens

    check_out(args)
    settings = projection_settings(args)
    tokens: list[str | int] | None = None
    if not args.tokens:
        only_with(args, ["--ids"], "with TOKENs")
    if args.tokens:
        if args.count is not None:
            raise InputError("Give TOKENs or --count, not both.", "Example: bertlens plot tokens king queen man woman")
        tokens = list(args.tokens)
        if args.ids:
            try:
                tokens = [int(t) for t in args.tokens]
            except ValueError:
                raise InputError(
                    "--ids expects integer token ids.", "Example: bertlens plot tokens --ids 3899 4937 2"
                ) from None
    elif args.count is None:  # the teaching default: common words in groups a reader knows, every one labelled
        from dataclasses import replace

        from ..views.groups import project_word_groups

        only_with(args, ["--label"], "with TOKENs or --count")
        data = project_word_groups(
            load(args),
            None,
            args.method,
            args.dims,
            value_of(args, SEED_OPTION),
            settings=settings,
            progress=show_progress(args),
        )
        return finish("tokens", replace(data, featured=tuple(range(len(data)))), args)
    data = project_tokens(
        load(args),
        tokens,
        args.count,
        args.method,
        args.dims,
        value_of(args, SEED_OPTION),
        args.label,
        settings=settings,
        progress=show_progress(args),
    )
    return finish("tokens", data, args)


def _run_contextual(args: argparse.Namespace) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_contextual

    check_out(args)
    settings = projection_settings(args)
    if args.level != "token":
        only_with(args, ["--special"], "with --level token")
    if args.corpus is not None:
        if args.texts:
            raise InputError("Give either TEXTs or --corpus, not both.", "Drop the TEXTs to plot the corpus.")
        max_texts = value_of(args, MAX_TEXTS_OPTION, "plot contextual")
        if max_texts < 1:
            raise InputError(f"--max-texts must be positive, got {max_texts}.", "Example: --max-texts 1000.")
        from itertools import islice

        from ..core.corpus import iter_sentences

        texts = list(islice(iter_sentences(args.corpus), max_texts))
    elif args.texts == ["-"]:
        only_with(args, ["--max-texts"], "with --corpus")
        texts = [line for line in text_argument("-").splitlines() if line.strip()]
    else:
        only_with(args, ["--max-texts"], "with --corpus")
        texts = list(args.texts)
    if not texts:
        raise InputError("No texts to plot.", "Give TEXTs, '-' for standard input, or --corpus PATH.")
    data = project_contextual(
        load(args),
        texts,
        args.layer,
        args.level,
        args.method,
        args.dims,
        value_of(args, SEED_OPTION),
        special=args.special,
        options=run_options(args),
        settings=settings,
        progress=show_progress(args),
    )
    return finish("contextual", data, args)


def _run_trajectory(args: argparse.Namespace) -> PlotResult:
    from ..views.trajectory import trajectory

    check_out(args)
    settings = projection_settings(args)
    data = trajectory(
        load(args),
        args.word,
        args.sentences,
        args.method,
        args.dims,
        value_of(args, SEED_OPTION),
        run_options(args),
        settings=settings,
        progress=show_progress(args),
    )
    return finish("trajectory", data, args)


def _run_positions(args: argparse.Namespace) -> PlotResult:
    from ..embeddings.positions import position_similarity

    check_out(args)
    return finish("positions", position_similarity(load(args), args.limit), args)


def _run_embedding_layer(args: argparse.Namespace) -> PlotResult:
    from ..embeddings.layer import explain

    check_out(args)
    data = explain(load(args), text_argument(args.text), args.pair, check=not args.no_check)
    return finish("embedding-layer", data, args)


def _run_context(args: argparse.Namespace) -> PlotResult:
    from ..contextual.context import compare_contexts

    check_out(args)
    pool = value_of(args, WORD_POOL_OPTION)
    data = compare_contexts(load(args), args.word, args.sentences, pool=pool, options=run_options(args))
    return finish("context", data, args)


def _run_contextuality(args: argparse.Namespace) -> PlotResult:
    from itertools import islice

    from ..contextual.contextuality import measure_contextuality
    from ..core.corpus import iter_sentences
    from ..core.errors import InputError

    check_out(args)
    if args.max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {args.max_texts}.", "Example: --max-texts 2000.")
    texts = list(islice(iter_sentences(args.corpus), args.max_texts))
    data = measure_contextuality(
        load(args), texts, words=args.words, max_contexts=args.max_contexts, options=run_options(args)
    )
    return finish("contextuality", data, args)
