"""`bertlens diff A B`: two models' embedding spaces side by side (`bertlens.spaces.diff`), one token's two
neighbourhoods (--token) and the picture (--plot)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.options import (
    CORPUS_OPTION,
    K_OPTION,
    LAYER_OPTION,
    OVERWRITE_OPTION,
    PLOT_OPTION,
    SHOW_TOKEN_OPTION,
)
from .common import Commands, FlagParser, add_option, add_progress, offline, only_with, show_progress

if TYPE_CHECKING:
    from ..core.model import Model
    from ..plots.render import PlotResult
    from ..spaces import SpaceDiff, TokenChange

CONTEXTUAL_ONLY = ["--layer", "--layer-b", "--occurrences"]


def register(commands: Commands, common: FlagParser) -> None:
    """Add `diff`."""
    cmd = commands.add_parser(
        "diff",
        parents=[common],
        help="two models' embedding spaces side by side: each token's nearest tokens in both, the aligned fit, the "
        "tokens that moved most; --contextual: CKA of every layer pair",
        description="Compare the input matrices of two models on the tokens their vocabularies share: the overlap of "
        "each token's k nearest tokens in A and in B, the orthogonal Procrustes alignment of A onto B and the distance "
        "each token keeps after it, the tokens that moved most. --contextual compares the layers too.",
    )
    cmd.add_argument(
        "model_a", metavar="A", help="a model: 'default', a model folder (a run's checkpoint folder too) or a hub id"
    )
    cmd.add_argument("model_b", metavar="B", help="the model compared with A (the same kinds)")
    add_option(cmd, K_OPTION, help="each token's nearest tokens compared (default 10)")
    cmd.add_argument("--top", type=int, default=20, metavar="N", help="the tokens that moved most, listed (default 20)")
    add_option(
        cmd,
        CORPUS_OPTION,
        help="a text file or folder, or 'sample'/'genesis': summaries by each token's count in it; what --contextual "
        "reads (default sample)",
    )
    cmd.add_argument(
        "--contextual",
        action="store_true",
        help="the layers too: linear CKA of every layer pair over the same word occurrences, and the words whose "
        "contextual neighbours changed most",
    )
    add_option(
        cmd,
        LAYER_OPTION,
        unset=True,
        help="with --contextual: the layer whose contextual neighbours are compared, in A and (unless --layer-b) in B "
        "(0 = embedding output, -1 = the last, default)",
    )
    cmd.add_argument(
        "--layer-b", type=int, metavar="LAYER", help="with --contextual: B's layer, where it differs from --layer"
    )
    cmd.add_argument(
        "--occurrences",
        type=int,
        default=10_000,
        metavar="N",
        help="with --contextual: word occurrences compared (default 10000)",
    )
    add_option(cmd, SHOW_TOKEN_OPTION, help="print this token's nearest tokens in A and in B (e.g. bank, ##ing)")
    add_option(
        cmd,
        PLOT_OPTION,
        help="draw the aligned plane with the tokens that moved most, the overlap distribution and (--contextual) "
        "the CKA heat map: .png, .svg or .html",
    )
    add_option(cmd, OVERWRITE_OPTION, help="with --plot: replace the file if it exists")
    add_progress(cmd)
    cmd.set_defaults(run=_run_diff)


def _models(args: argparse.Namespace) -> tuple[Model, Model]:
    """A and B, loaded as every command loads its model (once when both name the same)."""
    from ..core.errors import InputError
    from ..core.model import load_model

    if getattr(args, "model", None) is not None:
        raise InputError(
            f"diff compares the models A and B; --model ({args.model}) would be ignored.",
            "Leave out --model: bertlens diff A B, e.g. bertlens diff default my-model/.",
        )
    a = load_model(args.model_a, offline=offline(args), progress=show_progress(args))
    if args.model_b == args.model_a:
        return a, a
    return a, load_model(args.model_b, offline=offline(args), progress=show_progress(args))


def _check_plot(args: argparse.Namespace) -> None:
    """Refuse a bad --plot (or --overwrite without one) before any slow work."""
    from ..plots.files import check_target

    if args.plot is None:
        only_with(args, ["--overwrite"], "with --plot")
    else:
        check_target(Path(args.plot), args.overwrite)  # a Path: 'png' alone is a file name without a suffix


def _run_diff(args: argparse.Namespace) -> SpaceDiff | TokenChange | PlotResult:
    from ..spaces import diff

    if not args.contextual:
        only_with(args, CONTEXTUAL_ONLY, "with --contextual")
    if args.token is not None:
        only_with(args, ["--top", "--contextual", "--plot"], "to the whole comparison, not with --token")
    _check_plot(args)
    model_a, model_b = _models(args)
    result = diff(
        model_a,
        model_b,
        k=args.k,
        top=args.top,
        corpus=args.corpus,
        contextual=args.contextual,
        layer=args.layer,
        layer_b=args.layer_b,
        occurrences=args.occurrences,
        progress=show_progress(args),
    )
    if args.token is not None:
        return result.token(args.token)
    if args.plot is None:
        return result
    from ..plots.render import PlotOptions, PlotResult, render

    return PlotResult("diff", result, render(result, Path(args.plot), PlotOptions(overwrite=args.overwrite)))
