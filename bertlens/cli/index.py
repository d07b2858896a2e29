"""Commands that build an occurrence index, or verify one: index (--verify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..core.options import (
    LAYERS_OPTION,
    LEVEL_OPTION,
    MAX_TEXTS_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    RESUME_OPTION,
    VERIFY_OPTION,
    WORD_POOL_OPTION,
    Engine,
    Level,
    WordPool,
)
from .common import Call, command
from .contextual import engine_flags, ray_options, refuse_beside_verify
from .params import argument, option, progress_flag, run_flags

if TYPE_CHECKING:
    from ..core.integrity import IntegrityReport
    from ..occurrences.build_results import IndexResult

KEPT = "with --resume or --add: the index's own unless given"


@command(
    "index", "every word occurrence of a corpus with its contextual vectors, into a LanceDB index (for search, senses)"
)
@argument(
    "corpus",
    "a text file or folder (plain text or WikiExtractor <doc> files); 'sample': the bundled corpus (with --verify: "
    "the index)",
)
@option(OUT_OPTION, metavar="DIR", help="a new folder for the index (or the index to resume or add to)")
@option(LAYERS_OPTION, metavar="LAYER...", help=f"layers stored, each its own vector column ({KEPT})")
@option(WORD_POOL_OPTION, help=f"{WORD_POOL_OPTION.help} ({KEPT})")
@option(LEVEL_OPTION, help="word (the only level an index has: one row per word occurrence)")
@click.option("--float16", is_flag=True, help=f"store the vectors as float16 (half the size; {KEPT})")
@click.option("--batch-texts", type=int, help=f"texts per write (bounds memory; default 1000, {KEPT})")
@option(MAX_TEXTS_OPTION, help="index only the corpus's first N texts (with --add: the new files' first N)")
@option(RESUME_OPTION, help="continue an interrupted build (or add) in --out")
@click.option("--add", is_flag=True, help="add the corpus's new files to the index in --out")
@option(OVERWRITE_OPTION, help="replace the index in --out (only an index)")
@option(
    VERIFY_OPTION,
    help="check every byte of the index INDEX (bertlens index INDEX --verify) against what its build recorded: "
    "exit 0 when whole, 2 naming the damaged files",
)
@run_flags()
@engine_flags
@progress_flag()
def index(
    call: Call,
    corpus: str,
    out: str | None,
    layers: tuple[int, ...],
    pool: WordPool,
    level: Level,
    float16: bool,
    batch_texts: int | None,
    max_texts: int | None,
    resume: bool,
    add: bool,
    overwrite: bool,
    verify: bool,
    engine: Engine,
    **run: object,  # the run, Ray and progress flags: call.run_options(), ray_options(call), call.progress
) -> IndexResult | IntegrityReport:
    from ..core.errors import InputError
    from ..occurrences.build import IndexOptions, index_corpus

    if verify:
        return verified(call, corpus)
    if out is None:
        raise InputError(
            "bertlens index needs --out: the folder to build the index in (or the index to resume or add to).",
            "Example: bertlens index sample --out sample-index; or check an index with bertlens index INDEX --verify.",
        )
    if level == "token":
        raise InputError(
            "An occurrence index holds words (one row per word occurrence, its pieces pooled), not tokens.",
            "Leave out --level token; for token vectors of a corpus use bertlens extract --level token.",
        )
    ray = ray_options(call)
    given = call.given("layers") or call.given("pool") or float16 or batch_texts is not None
    options = None
    if given or not (resume or add):  # resume/add without options: the index's own
        options = IndexOptions(
            layers=layers,
            pool=pool,
            dtype="float16" if float16 else "float32",
            batch_texts=IndexOptions.batch_texts if batch_texts is None else batch_texts,
        )
    return index_corpus(
        call.model(),
        corpus,
        out,
        options=options,
        run=call.run_options(),
        resume=resume,
        add=add,
        overwrite=overwrite,
        progress=call.progress,
        engine=engine,
        ray=ray,
        max_texts=max_texts,
    )


# What builds an index, refused with --verify (which reads only the index, with neither model nor progress bar); each
# is refused when given, its default included. --json and --offline apply to every command.
VERIFY_ALONE = [
    "--out", "--model", "--layers", "--pool", "--level", "--float16", "--batch-texts", "--max-texts", "--resume",
    "--add", "--overwrite", "--device", "--precision", "--bf16", "--batch-tokens", "--engine", "--address", "--actors",
    "--cpus-per-actor", "--gpus-per-actor", "--no-progress",
]  # fmt: skip


def verified(call: Call, folder: str) -> IntegrityReport:
    """`bertlens index INDEX --verify`: the report when whole; exit 2 naming the damaged files otherwise."""
    from ..core.integrity import damage_error
    from ..occurrences.folder import verify_index

    refuse_beside_verify(call, VERIFY_ALONE, "to building an index, not with --verify (which takes only the index)")
    report = verify_index(folder)
    if not report.whole:
        raise damage_error(report)
    return report
