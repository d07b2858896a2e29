"""`bertlens plot KIND …`: compute one result (projection, trajectory, …) and draw it to PNG, SVG or HTML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.options import (
    CORPUS_OPTION,
    COUNT_OPTION,
    DIMS_OPTION,
    LABEL_OPTION,
    LAYER_OPTION,
    LEVEL_OPTION,
    MAX_CONTEXTS_OPTION,
    MAX_TEXTS_OPTION,
    METHOD_OPTION,
    NO_CHECK_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PAIR_OPTION,
    PROJECTION_METRIC_OPTION,
    PROJECTION_NEIGHBORS_OPTION,
    SEED_OPTION,
    SENTENCES_OPTION,
    TRAJECTORY_SENTENCES_OPTION,
    WORD_LIST_OPTION,
    WORD_OPTION,
    WORD_POOL_OPTION,
)
from ..plots.style import HTML_KINDS
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
    text_argument,
    value_of,
)

if TYPE_CHECKING:
    from ..core.results import Result
    from ..plots.render import PlotResult
    from ..views.projection import ProjectionSettings

KINDS = ("tokens", "contextual", "trajectory", "positions", "embedding-layer", "context", "contextuality")


def register(commands: Commands, common: FlagParser) -> None:
    """Add `plot` and its kinds."""
    draw, projection, points, run = _draw_options(), _projection_options(), _point_options(), run_parser()
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


def _draw_options() -> FlagParser:
    """Where and how a picture is drawn: --out, --overwrite, --title, --width, --height, --html (every kind)."""
    draw = FlagParser(add_help=False)
    add_option(
        draw,
        OUT_OPTION,
        metavar="FILE",
        help="the picture to write: .png, .svg or .html (interactive, fills the window)",
    )
    add_option(draw, OVERWRITE_OPTION, help="replace --out if it exists")
    draw.add_argument("--title", help="a heading instead of the default one")
    draw.add_argument("--width", type=float, help="inches for .png and .svg (default 9; an HTML page fills the window)")
    draw.add_argument("--height", type=float, help="inches for .png and .svg (default 6.5)")
    draw.add_argument(
        "--html",
        choices=HTML_KINDS,
        help="what an .html file holds: plotly (default: interactive, hover, zoom, rotate in 3-D; fills the window "
        "and follows its size; plotly.js inlined, ~4.8 MB, works offline), svg (the static picture in a page, ~50 KB)",
    )
    return draw


def _projection_options() -> FlagParser:
    """How points are projected: --method, --dims, --seed and the t-SNE/UMAP settings (the kinds that project)."""
    projection = FlagParser(add_help=False)
    for option in (METHOD_OPTION, DIMS_OPTION, SEED_OPTION):
        add_option(projection, option)
    projection.add_argument("--perplexity", type=float, help="t-SNE perplexity (default min(30, (n - 1) / 3))")
    add_option(projection, PROJECTION_NEIGHBORS_OPTION)
    add_option(projection, PROJECTION_METRIC_OPTION)
    add_progress(projection)  # t-SNE and UMAP fits show a ticking clock on standard error
    return projection


def _point_options() -> FlagParser:
    """How a projection's points are coloured and labelled (tokens, contextual)."""
    points = FlagParser(add_help=False)
    points.add_argument("--color-by", metavar="COLUMN", help="metadata column that colours the points")
    points.add_argument("--label-by", metavar="COLUMN", help="metadata column written beside the points")
    points.add_argument("--max-labels", type=int, help="PNG/SVG write labels only up to this many points (default 60)")
    return points


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


DRAWING = ["--overwrite", "--title", "--width", "--height", "--html", "--color-by", "--label-by", "--max-labels"]


def _settings(args: argparse.Namespace) -> ProjectionSettings:
    """t-SNE/UMAP settings; an option the chosen method does not use is refused, not ignored."""
    from ..views.projection import ProjectionSettings

    if args.method != "tsne":
        only_with(args, ["--perplexity"], "with --method tsne")
    if args.method != "umap":
        only_with(args, ["--neighbors"], "with --method umap")
    if args.method == "pca":
        only_with(args, ["--seed", "--metric"], "with --method tsne or umap (PCA is exact and euclidean)")
    return ProjectionSettings(
        perplexity=args.perplexity, neighbors=args.neighbors, metric=value_of(args, PROJECTION_METRIC_OPTION)
    )


def _finish(kind: str, data: Result, args: argparse.Namespace) -> PlotResult:
    """Draw `data` when --out is given; return the data with what was written."""
    from ..plots.render import PlotOptions, PlotResult, render

    if args.out is None:
        return PlotResult(kind, data, None)
    options = PlotOptions(
        color_by=getattr(args, "color_by", None),
        label_by=getattr(args, "label_by", None),
        max_labels=60 if getattr(args, "max_labels", None) is None else args.max_labels,
        title=args.title,
        width=9.0 if args.width is None else args.width,
        height=6.5 if args.height is None else args.height,
        overwrite=args.overwrite,
        html=args.html or "plotly",
    )
    return PlotResult(kind, data, render(data, Path(args.out), options))  # a Path: '--out png' is a file name


def _check_out(args: argparse.Namespace) -> None:
    """Refuse a bad --out, or drawing options without one, before any slow work (render checks again)."""
    if args.out is None:
        only_with(args, [o for o in DRAWING if hasattr(args, o[2:].replace("-", "_"))], "with --out (a picture)")
        return
    from ..plots.files import check_target

    fmt, _ = check_target(Path(args.out), args.overwrite)
    if fmt != "html":
        only_with(args, ["--html"], "with an .html --out")
    elif args.html != "svg":  # an interactive page takes the window's size
        only_with(args, ["--width", "--height"], "with .png, .svg or --html svg (an interactive page fills the window)")


def _run_tokens(args: argparse.Namespace) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_tokens

    _check_out(args)
    settings = _settings(args)
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
        return _finish("tokens", replace(data, featured=tuple(range(len(data)))), args)
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
    return _finish("tokens", data, args)


def _run_contextual(args: argparse.Namespace) -> PlotResult:
    from ..core.errors import InputError
    from ..views.tokens import project_contextual

    _check_out(args)
    settings = _settings(args)
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
    return _finish("contextual", data, args)


def _run_trajectory(args: argparse.Namespace) -> PlotResult:
    from ..views.trajectory import trajectory

    _check_out(args)
    settings = _settings(args)
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
    return _finish("trajectory", data, args)


def _run_positions(args: argparse.Namespace) -> PlotResult:
    from ..embeddings.positions import position_similarity

    _check_out(args)
    return _finish("positions", position_similarity(load(args), args.limit), args)


def _run_embedding_layer(args: argparse.Namespace) -> PlotResult:
    from ..embeddings.layer import explain

    _check_out(args)
    data = explain(load(args), text_argument(args.text), args.pair, check=not args.no_check)
    return _finish("embedding-layer", data, args)


def _run_context(args: argparse.Namespace) -> PlotResult:
    from ..contextual.context import compare_contexts

    _check_out(args)
    pool = value_of(args, WORD_POOL_OPTION)
    data = compare_contexts(load(args), args.word, args.sentences, pool=pool, options=run_options(args))
    return _finish("context", data, args)


def _run_contextuality(args: argparse.Namespace) -> PlotResult:
    from itertools import islice

    from ..contextual.contextuality import measure_contextuality
    from ..core.corpus import iter_sentences
    from ..core.errors import InputError

    _check_out(args)
    if args.max_texts < 2:
        raise InputError(f"--max-texts must be at least 2, got {args.max_texts}.", "Example: --max-texts 2000.")
    texts = list(islice(iter_sentences(args.corpus), args.max_texts))
    data = measure_contextuality(
        load(args), texts, words=args.words, max_contexts=args.max_contexts, options=run_options(args)
    )
    return _finish("contextuality", data, args)
