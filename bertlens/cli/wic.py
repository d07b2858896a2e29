"""Commands on a word's senses across two sentences: same-sense, and the `wic` branch of evaluate (its flags,
`evaluate_options`, and its run, `run_evaluate_wic`, which bertlens/cli/similar.py's evaluate uses)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.options import CACHE_DIR_OPTION, INDEX_LAYER_OPTION, NO_PROGRESS_OPTION
from .common import Call, command
from .params import argument, option, progress_flag, run_flags

if TYPE_CHECKING:
    from ..core.options import WordPool
    from ..wic.same_sense import SameSenseResult
    from ..wic.wic import WicResult

F = TypeVar("F", bound=Callable[..., Any])
CACHE_HELP = "where the model's same-sense calibration is stored (default: ~/.cache/bertlens)"
# evaluate's flags for wic alone (`evaluate_options`): refused with the other benchmarks
WIC_ONLY = ["--train", "--device", "--batch-tokens", "--precision", "--bf16", "--no-progress"]


@command("same-sense", "whether a word has the same sense in two sentences: per-layer cosines and a calibrated verdict")
@argument("word", "the word (as written in both sentences), e.g. bank", metavar="WORD")
@argument("sentence_1", "the first sentence (mark the word as [bank] if needed)", metavar="SENTENCE1")
@argument("sentence_2", "the second sentence", metavar="SENTENCE2")
@option(INDEX_LAYER_OPTION, help="take the verdict from this layer alone (default: all layers)")
@click.option(
    "--calibrate",
    metavar="PATH",
    help="first fit and store this model's calibration on labelled pairs in WiC format (a NAME.data.txt with "
    "NAME.gold.txt beside it, or their folder, e.g. WiC's train folder); the default model needs none: bertlens "
    "ships its calibration",
)
@option(CACHE_DIR_OPTION, help=CACHE_HELP, metavar="DIR")
@run_flags()
@progress_flag()
def same_sense(
    call: Call,
    word: str,
    sentence_1: str,
    sentence_2: str,
    layer: int | None,
    calibrate: str | None,
    cache_dir: str | None,
    **run: object,
) -> SameSenseResult:
    from ..wic.same_sense import fit_calibration, same_sense

    options = call.run_options()
    model = call.model()
    calibration = None
    if calibrate is not None:
        calibration = fit_calibration(model, calibrate, cache_dir=cache_dir, options=options, progress=call.progress)
    return same_sense(
        model,
        word,
        sentence_1,
        sentence_2,
        layer=layer,
        calibration=calibration,
        cache_dir=cache_dir,
        options=options,
    )


def evaluate_options(function: F) -> F:
    """evaluate's flags that apply to `evaluate wic PATH` only (`WIC_ONLY`): --train, the model-run options and
    --no-progress. The command takes them as keywords `train`, `device`, `precision`, `bf16`, `batch_tokens` and
    `no_progress` (`run_evaluate_wic` reads them through `call`)."""
    function = progress_flag(help=f"wic: {NO_PROGRESS_OPTION.help}")(function)
    function = run_flags("wic")(function)
    return click.option(
        "--train", metavar="PATH", help="wic: the training split (default: the train folder beside PATH)"
    )(function)


def run_evaluate_wic(call: Call, benchmarks: Sequence[str], train: str | None, pool: WordPool) -> WicResult:
    """`bertlens evaluate wic PATH [--train PATH]`: WiC accuracy per layer and with the default read-out. `benchmarks`
    is evaluate's BENCHMARK arguments ("wic", PATH); `pool` its --pool (how the word's pieces pool)."""
    from ..core.errors import InputError
    from ..wic.wic import evaluate_wic
    from ..wic.wic_readout import WicRecipe

    call.applies_only(["--list", "--analogy", "--method", "--cache-dir"], "to word-similarity and analogy benchmarks")
    if len(benchmarks) != 2:
        raise InputError(
            f"evaluate wic takes one WiC path, got {len(benchmarks) - 1}.",
            "Example: bertlens evaluate wic path/to/WiC/dev --train path/to/WiC/train",
        )
    options = call.run_options()
    recipe = WicRecipe(pool=pool)
    return evaluate_wic(
        call.model(), benchmarks[1], train=train, recipe=recipe, options=options, progress=call.progress
    )
