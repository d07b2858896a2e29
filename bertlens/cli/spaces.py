"""`bertlens diff A B`: two models' embedding spaces side by side (`bertlens.spaces.diff`), one token's two
neighbourhoods (--token) and the picture (--plot)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.options import (
    CONTEXTUAL_OPTION,
    CORPUS_OPTION,
    INDEX_LAYER_OPTION,
    K_OPTION,
    LAYER_B_OPTION,
    OCCURRENCES_OPTION,
    OVERWRITE_OPTION,
    PLOT_OPTION,
    SHOW_TOKEN_OPTION,
    TOP_OPTION,
)
from .common import Call, command
from .params import argument, option, progress_flag

if TYPE_CHECKING:
    from ..core.model import Model
    from ..plots.render import PlotResult
    from ..spaces import SpaceDiff, TokenChange

CONTEXTUAL_ONLY = ["--layer", "--layer-b", "--occurrences"]


@command(
    "diff",
    "two models' embedding spaces side by side: each token's nearest tokens in both, the aligned fit, the tokens that "
    "moved most; --contextual: CKA of every layer pair",
    "Compare the input matrices of two models on the tokens their vocabularies share: the overlap of each token's k "
    "nearest tokens in A and in B, the orthogonal Procrustes alignment of A onto B and the distance each token keeps "
    "after it, the tokens that moved most. --contextual compares the layers too.",
)
@argument("model_a", "a model: 'default', a model folder (a run's checkpoint folder too) or a hub id", metavar="A")
@argument("model_b", "the model compared with A (the same kinds)", metavar="B")
@option(K_OPTION, help="each token's nearest tokens compared")
@option(TOP_OPTION)
@option(
    CORPUS_OPTION,
    help="a text file or folder, or 'sample'/'genesis': summaries by each token's count in it; what --contextual "
    "reads (default sample)",
)
@option(
    CONTEXTUAL_OPTION,
    help="the layers too: linear CKA of every layer pair over the same word occurrences, and the words whose "
    "contextual neighbours changed most",
)
@option(
    INDEX_LAYER_OPTION,
    help="with --contextual: the layer whose contextual neighbours are compared, in A and (unless --layer-b) in B "
    "(0 = embedding output, -1 = the last, default)",
)
@option(LAYER_B_OPTION)
@option(OCCURRENCES_OPTION)
@option(SHOW_TOKEN_OPTION, help="print this token's nearest tokens in A and in B (e.g. bank, ##ing)")
@option(
    PLOT_OPTION,
    help="draw the aligned plane with the tokens that moved most, the overlap distribution and (--contextual) the "
    "CKA heat map: .png, .svg or .html",
)
@option(OVERWRITE_OPTION, help="with --plot: replace the file if it exists")
@progress_flag()
def diff(
    call: Call,
    model_a: str,
    model_b: str,
    k: int,
    top: int,
    corpus: str | None,
    contextual: bool,
    layer: int | None,
    layer_b: int | None,
    occurrences: int,
    token: str | None,
    plot: str | None,
    overwrite: bool,
    no_progress: bool,
) -> SpaceDiff | TokenChange | PlotResult:
    from ..spaces import diff

    if not contextual:
        call.applies_only(CONTEXTUAL_ONLY, "with --contextual")
    if token is not None:
        call.applies_only(["--top", "--contextual", "--plot"], "to the whole comparison, not with --token")
    _check_plot(call, plot, overwrite)
    a, b = _models(call, model_a, model_b)
    result = diff(
        a,
        b,
        k=k,
        top=top,
        corpus=corpus,
        contextual=contextual,
        layer=layer,
        layer_b=layer_b,
        occurrences=occurrences,
        progress=call.progress,
    )
    if token is not None:
        return result.token(token)
    if plot is None:
        return result
    from ..plots.render import PlotOptions, PlotResult, render

    return PlotResult("diff", result, render(result, Path(plot), PlotOptions(overwrite=overwrite)))


def _models(call: Call, model_a: str, model_b: str) -> tuple[Model, Model]:
    """A and B, loaded as every command loads its model (once when both name the same)."""
    from ..core.errors import InputError
    from ..core.model import load_model

    if call.model_name is not None:
        raise InputError(
            f"diff compares the models A and B; --model ({call.model_name}) would be ignored.",
            "Leave out --model: bertlens diff A B, e.g. bertlens diff default my-model/.",
        )
    a = load_model(model_a, offline=call.offline, progress=call.progress)
    if model_b == model_a:
        return a, a
    return a, load_model(model_b, offline=call.offline, progress=call.progress)


def _check_plot(call: Call, plot: str | None, overwrite: bool) -> None:
    """Refuse a bad --plot (or --overwrite without one) before any slow work."""
    from ..plots.files import check_target

    if plot is None:
        call.applies_only(["--overwrite"], "with --plot")
    else:
        check_target(Path(plot), overwrite)  # a Path: 'png' alone is a file name without a suffix
