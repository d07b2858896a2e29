"""Commands about how the model runs: precision (what `--precision auto` picks on this machine, and why)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import DEVICE_OPTION
from .common import Commands, FlagParser, add_option, load

if TYPE_CHECKING:
    from ..core.precision import PrecisionChoice


def register(commands: Commands, common: FlagParser) -> None:
    """Add the precision command."""
    cmd = commands.add_parser(
        "precision",
        parents=[common],
        help="what --precision auto picks here and why: the CPU, its bfloat16 ISA, bfloat16's cosine per layer",
    )
    add_option(cmd, DEVICE_OPTION, help="where the model would run")
    cmd.set_defaults(run=_run_precision)


def _run_precision(args: argparse.Namespace) -> PrecisionChoice:
    from ..core.precision import choose_precision

    return choose_precision(load(args), "auto", args.device)
