"""Commands on similarity in the input matrix: neighbors, similarity, analogy, evaluate."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.options import (
    ANALOGY_METHOD_OPTION,
    CACHE_DIR_OPTION,
    CENTER_OPTION,
    K_OPTION,
    METRIC_OPTION,
    NEIGHBORS_OPTIONS,
    POOL_OPTION,
    REMOVE_TOP_OPTION,
    filter_flags,
)
from . import wic
from .common import Commands, FlagParser, add_option, load, only_with, value_of

if TYPE_CHECKING:
    from ..core.results import ResultList
    from ..similarity.analogy import AnalogyResult
    from ..similarity.benchmarks import Benchmarks
    from ..similarity.neighbor_results import NeighborsBatch, PairSimilarity
    from ..similarity.space import Adjustment
    from ..wic.wic import WicResult

SPACE_OPTIONS = (METRIC_OPTION, CENTER_OPTION, REMOVE_TOP_OPTION, POOL_OPTION)  # neighbors and similarity


def register(commands: Commands, common: FlagParser) -> None:
    """Add the similarity commands."""
    space = FlagParser(add_help=False)
    for option in SPACE_OPTIONS:
        add_option(space, option)
    add_option(space, CACHE_DIR_OPTION)

    cmd = commands.add_parser(
        "neighbors",
        parents=[common, space],
        help="the vocabulary's nearest tokens to a token, word, id or expression",
    )
    for option in NEIGHBORS_OPTIONS:
        if option not in SPACE_OPTIONS:
            add_option(cmd, option)
    cmd.add_argument(
        "--precompute",
        action="store_true",
        help="build the neighbour table once (~15 s for the default model; cached): later token queries are lookups",
    )
    cmd.set_defaults(run=_run_neighbors)

    cmd = commands.add_parser(
        "similarity", parents=[common, space], help="how similar two words or tokens are (with the pieces used)"
    )
    cmd.add_argument("a", help="a token or word")
    cmd.add_argument("b", help="a token or word")
    cmd.set_defaults(run=_run_similarity)

    cmd = commands.add_parser("analogy", parents=[common], help="a : b :: c : ? with 3CosAdd or 3CosMul")
    cmd.add_argument("a", help="e.g. man")
    cmd.add_argument("b", help="e.g. king")
    cmd.add_argument("c", help="e.g. woman")
    add_option(cmd, K_OPTION, help="how many answers (default 10)")
    add_option(cmd, ANALOGY_METHOD_OPTION)
    cmd.add_argument(
        "--all-tokens", action="store_true", help="answers among all tokens, not only whole words (default)"
    )
    add_option(cmd, CACHE_DIR_OPTION)
    cmd.set_defaults(run=_run_analogy)

    cmd = commands.add_parser(
        "evaluate",
        parents=[common],
        help="word-similarity (Spearman, Pearson) and analogy (accuracy) benchmarks of the input matrix",
    )
    cmd.add_argument(
        "benchmarks",
        nargs="*",
        metavar="BENCHMARK",
        help="a name (see --list; 'similarity' runs every similarity set), or a CSV path of word1,word2,score; or "
        "'wic PATH': same sense or not on WiC-format pairs (accuracy per layer, threshold from --train)",
    )
    cmd.add_argument("--list", action="store_true", help="list the bundled benchmarks")
    cmd.add_argument("--analogy", action="store_true", help="treat paths as analogy question files")
    add_option(cmd, ANALOGY_METHOD_OPTION, unset=True, help="analogy benchmarks: the objective (default 3cosadd)")
    add_option(cmd, POOL_OPTION, help="similarity benchmarks: how pieces pool (default mean)")
    add_option(cmd, CACHE_DIR_OPTION)
    wic.add_evaluate_options(cmd)  # evaluate wic PATH --train PATH (bertlens/cli/wic.py)
    cmd.set_defaults(run=_run_evaluate)


def _adjustment(args: argparse.Namespace) -> Adjustment:
    from ..similarity.space import Adjustment

    return Adjustment(center=args.center, remove_top=args.remove_top)


def _run_neighbors(args: argparse.Namespace) -> NeighborsBatch:
    from ..embeddings.token_classes import TokenFilter
    from ..similarity.index import open_index
    from ..similarity.nearest import neighbors_many
    from ..similarity.query import parse_queries

    if args.id:
        only_with(args, ["--pool"], "to words (a token id has no pieces to pool)")
    queries = parse_queries(args.queries, args.positive, args.negative, ids=args.id)
    filters = TokenFilter.from_flags(**filter_flags(args))
    adjustment = _adjustment(args)
    model = load(args)
    return neighbors_many(
        model,
        queries,
        args.k,
        metric=args.metric,
        filters=filters,
        adjustment=adjustment,
        pool=value_of(args, POOL_OPTION),
        index=open_index(model, args.cache_dir, precompute=args.precompute),
    )


def _run_similarity(args: argparse.Namespace) -> PairSimilarity:
    from ..similarity.nearest import similarity

    return similarity(
        load(args),
        args.a,
        args.b,
        metric=args.metric,
        adjustment=_adjustment(args),
        pool=value_of(args, POOL_OPTION),
        cache_dir=args.cache_dir,
    )


def _run_analogy(args: argparse.Namespace) -> AnalogyResult:
    from ..embeddings.token_classes import TokenFilter
    from ..similarity.analogy import analogy

    filters = TokenFilter() if args.all_tokens else TokenFilter.words_only()
    return analogy(
        load(args), args.a, args.b, args.c, k=args.k, method=args.method, filters=filters, cache_dir=args.cache_dir
    )


def _run_evaluate(args: argparse.Namespace) -> WicResult | Benchmarks | ResultList:
    from ..core.errors import InputError
    from ..core.results import Result, ResultList
    from ..similarity.benchmarks import ANALOGY_BENCHMARKS, SIMILARITY_BENCHMARKS, list_benchmarks
    from ..similarity.evaluate import evaluate_analogies, evaluate_pairs

    if args.benchmarks[:1] == ["wic"]:  # WiC pairs: bertlens/cli/wic.py
        return wic.run_evaluate_wic(args)
    only_with(args, wic.WIC_ONLY, "to evaluate wic")
    if args.list:
        if args.benchmarks:
            raise InputError("--list takes no BENCHMARKs.", "Run --list alone, then evaluate the ones you choose.")
        only_with(args, ["--analogy", "--method", "--pool", "--cache-dir"], "when evaluating, not with --list")
        return list_benchmarks()
    if not args.benchmarks:
        raise InputError("No benchmark given.", "Example: bertlens evaluate wordsim353 men   (--list shows them)")
    names: list[str] = []
    for name in args.benchmarks:
        names += list(SIMILARITY_BENCHMARKS) if name == "similarity" else [name]
    analogies = [args.analogy or name in ANALOGY_BENCHMARKS for name in names]
    if not any(analogies):
        only_with(args, ["--method", "--cache-dir"], "to analogy benchmarks")
    if all(analogies):
        only_with(args, ["--pool"], "to similarity benchmarks")
    model = load(args)
    results: list[Result] = []
    for name, analogy in zip(names, analogies, strict=True):
        if analogy:
            results.append(
                evaluate_analogies(model, name, method=value_of(args, ANALOGY_METHOD_OPTION), cache_dir=args.cache_dir)
            )
        else:
            results.append(evaluate_pairs(model, name, pool=value_of(args, POOL_OPTION)))
    return ResultList(tuple(results))
