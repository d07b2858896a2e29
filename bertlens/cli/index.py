"""Commands that build an occurrence index, or verify one: index (--verify)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import (
    LAYERS_OPTION,
    LEVEL_OPTION,
    MAX_TEXTS_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    RESUME_OPTION,
    VERIFY_OPTION,
    WORD_POOL_OPTION,
)
from .common import Commands, FlagParser, add_option, add_progress, load, run_options, run_parser, show_progress
from .contextual import add_engine, ray_options

if TYPE_CHECKING:
    from ..core.integrity import IntegrityReport
    from ..occurrences.build import IndexResult


def register(commands: Commands, common: FlagParser) -> None:
    """Add the index command."""
    cmd = commands.add_parser(
        "index",
        parents=[common, run_parser()],
        help="every word occurrence of a corpus with its contextual vectors, into a LanceDB index (for search, senses)",
    )
    cmd.add_argument(
        "corpus",
        help="a text file or folder (plain text or WikiExtractor <doc> files); 'sample': the bundled corpus (with "
        "--verify: the index)",
    )
    add_option(cmd, OUT_OPTION, help="a new folder for the index (or the index to resume or add to)")
    add_option(
        cmd,
        LAYERS_OPTION,
        unset=True,  # --resume and --add without --layers keep the index's own
        help="layers stored, each its own vector column (default: -1, the last)",
    )
    add_option(cmd, WORD_POOL_OPTION)
    add_option(cmd, LEVEL_OPTION, help="word (the only level an index has: one row per word occurrence)")
    cmd.add_argument("--float16", action="store_true", help="store the vectors as float16 (half the size)")
    cmd.add_argument("--batch-texts", type=int, help="texts per write (bounds memory; default 1000)")
    add_option(cmd, MAX_TEXTS_OPTION, help="index only the corpus's first N texts (with --add: the new files' first N)")
    add_option(cmd, RESUME_OPTION, help="continue an interrupted build (or add) in --out")
    cmd.add_argument("--add", action="store_true", help="add the corpus's new files to the index in --out")
    add_option(cmd, OVERWRITE_OPTION, help="replace the index in --out (only an index)")
    add_option(
        cmd,
        VERIFY_OPTION,
        help="check every byte of the index INDEX (bertlens index INDEX --verify) against what its build recorded: "
        "exit 0 when whole, 2 naming the damaged files",
    )
    add_engine(cmd)
    add_progress(cmd)
    cmd.set_defaults(run=_run_index)


def _run_index(args: argparse.Namespace) -> IndexResult | IntegrityReport:
    from ..core.errors import InputError
    from ..occurrences.build import IndexOptions, index_corpus
    from .common import value_of

    if args.verify:
        return _run_verify(args)
    if args.out is None:
        raise InputError(
            "bertlens index needs --out: the folder to build the index in (or the index to resume or add to).",
            "Example: bertlens index sample --out sample-index; or check an index with bertlens index INDEX --verify.",
        )
    if args.level == "token":
        raise InputError(
            "An occurrence index holds words (one row per word occurrence, its pieces pooled), not tokens.",
            "Leave out --level token; for token vectors of a corpus use bertlens extract --level token.",
        )
    ray = ray_options(args)
    given = args.layers is not None or args.pool is not None or args.float16 or args.batch_texts is not None
    options = None
    if given or not (args.resume or args.add):  # resume/add without options: the index's own
        options = IndexOptions(
            layers=tuple(value_of(args, LAYERS_OPTION)),
            pool=value_of(args, WORD_POOL_OPTION),
            dtype="float16" if args.float16 else "float32",
            batch_texts=IndexOptions.batch_texts if args.batch_texts is None else args.batch_texts,
        )
    return index_corpus(
        load(args),
        args.corpus,
        args.out,
        options=options,
        run=run_options(args),
        resume=args.resume,
        add=args.add,
        overwrite=args.overwrite,
        progress=show_progress(args),
        engine=args.engine,
        ray=ray,
        max_texts=args.max_texts,
    )


# What builds an index, refused with --verify (which reads only the index, with neither model nor progress bar); each
# is refused when given, its default included. --json and --offline apply to every command.
VERIFY_ALONE = [
    "--out", "--model", "--layers", "--pool", "--level", "--float16", "--batch-texts", "--max-texts", "--resume",
    "--add", "--overwrite", "--device", "--precision", "--bf16", "--batch-tokens", "--engine", "--address", "--actors",
    "--cpus-per-actor", "--gpus-per-actor", "--no-progress",
]  # fmt: skip


def _run_verify(args: argparse.Namespace) -> IntegrityReport:
    """`bertlens index INDEX --verify`: the report when whole; exit 2 naming the damaged files otherwise."""
    from ..core.integrity import damage_error
    from ..occurrences.folder import verify_index
    from .common import only_with

    only_with(args, VERIFY_ALONE, "to building an index, not with --verify (which takes only the index)")
    report = verify_index(args.corpus)
    if not report.whole:
        raise damage_error(report)
    return report
