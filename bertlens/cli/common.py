"""What every command group shares: reading the text argument, loading the model, the model-run options."""

from __future__ import annotations

import argparse
import sys
from typing import Any

WORD_POOLS = [
    "mean",
    "first",
    "last",
    "first+last",
    "max",
]  # as contextual.states.WORD_POOLS (not imported: speed)
COMBINES = ["mean", "sum", "concat"]


def text_argument(value: str) -> str:
    """The text argument, or standard input for '-', which must be UTF-8."""
    if value != "-":
        return value
    from ..core.errors import InputError

    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"Standard input is not valid UTF-8 (byte {exc.start}).", "Convert the text to UTF-8."
        ) from None


def load(args: argparse.Namespace) -> Any:
    from ..core.model import load_model

    return load_model(args.model)


def run_options(args: argparse.Namespace) -> Any:
    from ..contextual.states import RunOptions
    from ..core.errors import InputError

    if args.batch_tokens < 1:
        raise InputError(f"--batch-tokens must be positive, got {args.batch_tokens}.", "Example: --batch-tokens 8192")
    return RunOptions(batch_tokens=args.batch_tokens, device=args.device, dtype="bfloat16" if args.bf16 else "float32")


def only_with(args: argparse.Namespace, options: list[str], needs: str) -> None:
    """Refuse options that would be silently ignored: each of `options` (default None or False) applies only `needs`."""
    from ..core.errors import InputError

    for option in options:
        value = getattr(args, option.lstrip("-").replace("-", "_"))
        if value is not None and value is not False:
            raise InputError(f"{option} applies only {needs}; here it would be ignored.", f"Leave out {option}.")
