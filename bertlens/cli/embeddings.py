"""Commands on the embedding layer: info, tokens, explain, vector, export."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..core.options import (
    ALL_OPTION,
    COUNT_OPTION,
    EXPORT_FORMAT_OPTION,
    ID_OPTION,
    NO_CHECK_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PAIR_OPTION,
    POOL_OPTION,
    SHOWN_NUMBERS,
    TOKEN_SWITCH_OPTION,
    WORD_SWITCH_OPTION,
    ExportFormat,
    Pool,
)
from .common import Call, command, text_argument
from .params import argument, option, progress_flag, token_filters

if TYPE_CHECKING:
    from ..core.tokens import Tokenization
    from ..embeddings.export import ExportResult
    from ..embeddings.info import ModelInfo
    from ..embeddings.layer_results import EmbeddingComparison, EmbeddingLayerExplanation
    from ..embeddings.static import EveryNumber, StaticVector, StaticVectors

TEXT_HELP = "the text ('-' reads standard input)"


@command("info", "what the model is: family, sizes, positions, parameters, source")
def info(call: Call) -> ModelInfo:
    from ..embeddings.info import info

    return info(call.model())


@command("tokens", "text -> pieces, ids, offsets, words, segments (never padded or cut)")
@argument("text", TEXT_HELP)
@option(PAIR_OPTION)
@click.option("--no-special", is_flag=True, help="leave out [CLS], [SEP] and other special tokens")
def tokens(call: Call, text: str, pair: str | None, no_special: bool) -> Tokenization:
    from ..core.tokens import tokenize

    return tokenize(call.model(), text_argument(text), pair, add_special_tokens=not no_special)


@command("explain", "the embedding layer laid bare: rows, sum, LayerNorm, checked against the model")
@argument("text", TEXT_HELP)
@option(PAIR_OPTION)
@click.option("--compare", metavar="TEXT", help="compare the tokens that TEXT shares with the first text instead")
@option(NO_CHECK_OPTION, help="skip running the model (no torch needed)")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="also the technical detail: what ran on each side of the check and its difference in float32 steps; "
    "with --compare, how far the position and segment rows differ (--json always has all)",
)
def explain(
    call: Call, text: str, pair: str | None, compare: str | None, no_check: bool, verbose: bool
) -> EmbeddingLayerExplanation | EmbeddingComparison | Verbose:
    from ..core.errors import InputError
    from ..embeddings.comparison import compare_inputs
    from ..embeddings.layer import explain

    model = call.model()
    if compare is not None:
        if pair is not None:
            raise InputError("--compare and --pair cannot be used together.", "Compare single texts: drop --pair.")
        result: EmbeddingLayerExplanation | EmbeddingComparison = compare_inputs(
            model, text_argument(text), compare, check=not no_check
        )
    else:
        result = explain(model, text_argument(text), pair, check=not no_check)
    return Verbose(result) if verbose else result


class Verbose:
    """A result printed with its technical detail (`to_table(verbose=True)`); its JSON is the result's own."""

    def __init__(self, result: EmbeddingLayerExplanation | EmbeddingComparison) -> None:
        self.result = result

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def __str__(self) -> str:
        return self.result.to_table(verbose=True)


@command("vector", "a token's or word's static vector: its row(s) of the input matrix")
@argument(
    "queries",
    "a token ('dog', '##ing', '[CLS]'), a word ('embeddings'), or an id with --id; several give one result each (a "
    "query of several words is refused: one vector per word)",
    nargs=-1,
    required=True,
    metavar="QUERY...",
)
@option(ID_OPTION)
@option(TOKEN_SWITCH_OPTION)
@option(WORD_SWITCH_OPTION)
@option(POOL_OPTION, help="for a word: how to pool its pieces")
@option(
    ALL_OPTION,
    help=f"print every number of the vector (default: the first {SHOWN_NUMBERS}, as layers --vectors; --json always "
    "gives every number)",
)
def vector(
    call: Call, queries: tuple[str, ...], id: bool, token: bool, word: bool, pool: Pool, all: bool
) -> StaticVector | StaticVectors | EveryNumber:
    from ..core.errors import InputError
    from ..embeddings.static import EveryNumber, StaticVectors, token_vector, vector, word_vector

    call.exclusive("id", "token", "word")
    if id or token:
        call.applies_only(["pool"], "to words (a single token has no pieces to pool)")
    if id:
        try:
            token_ids = [int(q) for q in queries]
        except ValueError:
            raise InputError(
                f"--id expects an integer for each query, got {' '.join(queries)}.",
                "Example: bertlens vector --id 3899",
            ) from None
    model = call.model()
    if id:
        found = [token_vector(model, i) for i in token_ids]
    elif token:
        found = [token_vector(model, q) for q in queries]
    elif word:
        found = [word_vector(model, q, pool) for q in queries]
    else:
        found = [vector(model, q, pool) for q in queries]
    result = found[0] if len(found) == 1 else StaticVectors(tuple(found))  # one query: its result, as always
    return EveryNumber(result) if all else result


@command(
    "export",
    "write the whole input matrix with its vocabulary to files",
    "Write the whole input matrix with its vocabulary to files. A subset (word2vec and tensorboard) keeps the rows "
    "the filters allow; tensorboard leaves out special and [unused] rows unless asked.",
)
@option(EXPORT_FORMAT_OPTION)
@option(OUT_OPTION, required=True, help="the directory to write into (created if missing)")
@option(OVERWRITE_OPTION, help="replace files of the same name in --out")
@token_filters("a subset")
@option(
    COUNT_OPTION,
    metavar="N",
    help="a subset: only the first N kept rows, by id (BERT's ids run from frequent to rare after the single "
    "characters)",
)
@progress_flag()
def export(
    call: Call, format: ExportFormat, out: str, overwrite: bool, count: int | None, no_progress: bool, **filters: bool
) -> ExportResult:
    from ..embeddings.export import export_matrix
    from ..embeddings.token_classes import TokenFilter

    chosen = TokenFilter.from_flags(**filters) if any(filters.values()) else None
    return export_matrix(
        call.model(), out, format, overwrite=overwrite, filters=chosen, count=count, progress=call.progress
    )
