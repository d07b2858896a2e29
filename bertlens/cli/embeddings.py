"""Commands on the embedding layer: info, tokens, explain, vector, export."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..core.options import (
    ALL_OPTION,
    COUNT_OPTION,
    EXPORT_FORMAT_OPTION,
    FILTER_OPTIONS,
    ID_OPTION,
    NO_CHECK_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PAIR_OPTION,
    POOL_OPTION,
    SHOWN_NUMBERS,
    TOKEN_SWITCH_OPTION,
    WORD_SWITCH_OPTION,
    filter_flags,
)
from .common import (
    Commands,
    FlagParser,
    add_option,
    add_progress,
    load,
    only_with,
    show_progress,
    text_argument,
    value_of,
)

if TYPE_CHECKING:
    from ..core.tokens import Tokenization
    from ..embeddings.export import ExportResult
    from ..embeddings.info import ModelInfo
    from ..embeddings.layer_results import EmbeddingComparison, EmbeddingLayerExplanation
    from ..embeddings.static import EveryNumber, StaticVector, StaticVectors


def register(commands: Commands, common: FlagParser) -> None:
    """Add the embedding-layer commands."""
    cmd = commands.add_parser(
        "info", parents=[common], help="what the model is: family, sizes, positions, parameters, source"
    )
    cmd.set_defaults(run=_run_info)

    cmd = commands.add_parser(
        "tokens", parents=[common], help="text -> pieces, ids, offsets, words, segments (never padded or cut)"
    )
    cmd.add_argument("text", help="the text ('-' reads standard input)")
    add_option(cmd, PAIR_OPTION)
    cmd.add_argument("--no-special", action="store_true", help="leave out [CLS], [SEP] and other special tokens")
    cmd.set_defaults(run=_run_tokens)

    cmd = commands.add_parser(
        "explain",
        parents=[common],
        help="the embedding layer laid bare: rows, sum, LayerNorm, checked against the model",
    )
    cmd.add_argument("text", help="the text ('-' reads standard input)")
    add_option(cmd, PAIR_OPTION)
    cmd.add_argument(
        "--compare", metavar="TEXT", help="compare the tokens that TEXT shares with the first text instead"
    )
    add_option(cmd, NO_CHECK_OPTION, help="skip running the model (no torch needed)")
    cmd.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also the technical detail: what ran on each side of the check and its difference in float32 steps; "
        "with --compare, how far the position and segment rows differ (--json always has all)",
    )
    cmd.set_defaults(run=_run_explain)

    cmd = commands.add_parser(
        "vector", parents=[common], help="a token's or word's static vector: its row(s) of the input matrix"
    )
    cmd.add_argument(
        "queries",
        nargs="+",
        metavar="QUERY",
        help="a token ('dog', '##ing', '[CLS]'), a word ('embeddings'), or an id with --id; several give one result "
        "each (a query of several words is refused: one vector per word)",
    )
    kind = cmd.add_mutually_exclusive_group()
    add_option(kind, ID_OPTION)
    add_option(kind, TOKEN_SWITCH_OPTION)
    add_option(kind, WORD_SWITCH_OPTION)
    add_option(cmd, POOL_OPTION, help="for a word: how to pool its pieces (default mean)")
    add_option(
        cmd,
        ALL_OPTION,
        help=f"print every number of the vector (default: the first {SHOWN_NUMBERS}, as layers --vectors; "
        "--json always gives every number)",
    )
    cmd.set_defaults(run=_run_vector)

    cmd = commands.add_parser(
        "export", parents=[common], help="write the whole input matrix with its vocabulary to files"
    )
    add_option(cmd, EXPORT_FORMAT_OPTION)
    add_option(cmd, OUT_OPTION, required=True, help="the directory to write into (created if missing)")
    add_option(cmd, OVERWRITE_OPTION, help="replace files of the same name in --out")
    subset = cmd.add_argument_group(
        "a subset (word2vec and tensorboard; tensorboard leaves out special and [unused] rows unless asked)"
    )
    for option in FILTER_OPTIONS:
        add_option(subset, option)
    add_option(
        subset,
        COUNT_OPTION,
        metavar="N",
        help="only the first N kept rows, by id (BERT's ids run from frequent to rare after the single characters)",
    )
    add_progress(cmd)
    cmd.set_defaults(run=_run_export)


def _run_info(args: argparse.Namespace) -> ModelInfo:
    from ..embeddings.info import info

    return info(load(args))


def _run_tokens(args: argparse.Namespace) -> Tokenization:
    from ..core.tokens import tokenize

    return tokenize(load(args), text_argument(args.text), args.pair, add_special_tokens=not args.no_special)


def _run_explain(
    args: argparse.Namespace,
) -> EmbeddingLayerExplanation | EmbeddingComparison | Verbose:
    from ..core.errors import InputError
    from ..embeddings.comparison import compare_inputs
    from ..embeddings.layer import explain

    model = load(args)
    if args.compare is not None:
        if args.pair is not None:
            raise InputError("--compare and --pair cannot be used together.", "Compare single texts: drop --pair.")
        result: EmbeddingLayerExplanation | EmbeddingComparison = compare_inputs(
            model, text_argument(args.text), args.compare, check=not args.no_check
        )
    else:
        result = explain(model, text_argument(args.text), args.pair, check=not args.no_check)
    return Verbose(result) if args.verbose else result


class Verbose:
    """A result printed with its technical detail (`to_table(verbose=True)`); its JSON is the result's own."""

    def __init__(self, result: EmbeddingLayerExplanation | EmbeddingComparison) -> None:
        self.result = result

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def __str__(self) -> str:
        return self.result.to_table(verbose=True)


def _run_vector(args: argparse.Namespace) -> StaticVector | StaticVectors | EveryNumber:
    from ..core.errors import InputError
    from ..embeddings.static import EveryNumber, StaticVectors, token_vector, vector, word_vector

    if args.id or args.token:
        only_with(args, ["--pool"], "to words (a single token has no pieces to pool)")
    pool = value_of(args, POOL_OPTION)
    if args.id:
        try:
            token_ids = [int(q) for q in args.queries]
        except ValueError:
            raise InputError(
                f"--id expects an integer for each query, got {' '.join(args.queries)}.",
                "Example: bertlens vector --id 3899",
            ) from None
    model = load(args)
    if args.id:
        found = [token_vector(model, i) for i in token_ids]
    elif args.token:
        found = [token_vector(model, q) for q in args.queries]
    elif args.word:
        found = [word_vector(model, q, pool) for q in args.queries]
    else:
        found = [vector(model, q, pool) for q in args.queries]
    result = found[0] if len(found) == 1 else StaticVectors(tuple(found))  # one query: its result, as always
    return EveryNumber(result) if args.all else result


def _run_export(args: argparse.Namespace) -> ExportResult:
    from ..embeddings.export import export_matrix
    from ..embeddings.token_classes import TokenFilter

    flags = filter_flags(args)
    filters = TokenFilter.from_flags(**flags) if any(flags.values()) else None
    return export_matrix(
        load(args),
        args.out,
        args.format,
        overwrite=args.overwrite,
        filters=filters,
        count=args.count,
        progress=show_progress(args),
    )
