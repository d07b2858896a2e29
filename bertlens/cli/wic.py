"""Commands on a word's senses across two sentences: same-sense, and the `wic` branch of evaluate."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import BATCH_TOKENS_OPTION, CACHE_DIR_OPTION, DEVICE_OPTION, LAYER_OPTION, WORD_POOL_OPTION
from .common import (
    Commands,
    FlagParser,
    add_option,
    add_progress,
    add_run_options,
    load,
    only_with,
    run_options,
    show_progress,
    value_of,
)

if TYPE_CHECKING:
    from ..wic.same_sense import SameSenseResult
    from ..wic.wic import WicResult

CACHE_HELP = "where the model's same-sense calibration is stored (default: ~/.cache/bertlens)"
# evaluate's flags for wic alone
WIC_ONLY = ["--train", "--device", "--batch-tokens", "--precision", "--bf16", "--no-progress"]


def register(commands: Commands, common: FlagParser) -> None:
    """Add same-sense."""
    cmd = commands.add_parser(
        "same-sense",
        parents=[common],
        help="whether a word has the same sense in two sentences: per-layer cosines and a calibrated verdict",
    )
    cmd.add_argument("word", metavar="WORD", help="the word (as written in both sentences), e.g. bank")
    cmd.add_argument("sentence_1", metavar="SENTENCE1", help="the first sentence (mark the word as [bank] if needed)")
    cmd.add_argument("sentence_2", metavar="SENTENCE2", help="the second sentence")
    add_option(
        cmd, LAYER_OPTION, command="same-sense", help="take the verdict from this layer alone (default: all layers)"
    )
    cmd.add_argument(
        "--calibrate",
        metavar="PATH",
        help="first fit and store this model's calibration on labelled pairs in WiC format (a NAME.data.txt with "
        "NAME.gold.txt beside it, or their folder, e.g. WiC's train folder); the default model needs none: bertlens "
        "ships its calibration",
    )
    add_option(cmd, CACHE_DIR_OPTION, help=CACHE_HELP)
    add_run_options(cmd)
    add_progress(cmd)
    cmd.set_defaults(run=_run_same_sense)


def add_evaluate_options(cmd: argparse.ArgumentParser) -> None:
    """evaluate's flags that apply to `evaluate wic PATH` only (each defaults to unset)."""
    cmd.add_argument("--train", metavar="PATH", help="wic: the training split (default: the train folder beside PATH)")
    add_run_options(cmd, "wic", unset=True)  # refused with the other benchmarks
    add_progress(cmd, "wic")


def _run_same_sense(args: argparse.Namespace) -> SameSenseResult:
    from ..wic.same_sense import fit_calibration, same_sense

    options = run_options(args)
    model = load(args)
    calibration = None
    if args.calibrate is not None:
        calibration = fit_calibration(
            model, args.calibrate, cache_dir=args.cache_dir, options=options, progress=show_progress(args)
        )
    return same_sense(
        model,
        args.word,
        args.sentence_1,
        args.sentence_2,
        layer=args.layer,
        calibration=calibration,
        cache_dir=args.cache_dir,
        options=options,
    )


def run_evaluate_wic(args: argparse.Namespace) -> WicResult:
    """`bertlens evaluate wic PATH [--train PATH]`: WiC accuracy per layer and with the default read-out."""
    from ..core.errors import InputError
    from ..wic.wic import evaluate_wic
    from ..wic.wic_readout import WicRecipe

    only_with(args, ["--list", "--analogy", "--method", "--cache-dir"], "to word-similarity and analogy benchmarks")
    if len(args.benchmarks) != 2:
        raise InputError(
            f"evaluate wic takes one WiC path, got {len(args.benchmarks) - 1}.",
            "Example: bertlens evaluate wic path/to/WiC/dev --train path/to/WiC/train",
        )
    args.device = value_of(args, DEVICE_OPTION)
    args.batch_tokens = value_of(args, BATCH_TOKENS_OPTION)
    options = run_options(args)
    recipe = WicRecipe(pool=value_of(args, WORD_POOL_OPTION))
    return evaluate_wic(
        load(args), args.benchmarks[1], train=args.train, recipe=recipe, options=options, progress=show_progress(args)
    )
