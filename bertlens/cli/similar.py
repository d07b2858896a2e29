"""Commands on similarity in the input matrix: neighbors, similarity, analogy, evaluate."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from ..core.options import (
    ANALOGY_METHOD_OPTION,
    CACHE_DIR_OPTION,
    CENTER_OPTION,
    ID_OPTION,
    K_OPTION,
    METRIC_OPTION,
    NEGATIVE_OPTION,
    POOL_OPTION,
    POSITIVE_OPTION,
    QUERIES_OPTION,
    REMOVE_TOP_OPTION,
    AnalogyMethod,
    Metric,
    Pool,
)
from . import wic
from .common import Call, command
from .params import argument, option, token_filters

if TYPE_CHECKING:
    from ..core.results import ResultList
    from ..similarity.analogy import AnalogyResult
    from ..similarity.benchmarks import Benchmarks
    from ..similarity.neighbor_results import NeighborsBatch, PairSimilarity
    from ..wic.wic import WicResult

F = TypeVar("F", bound=Callable[..., object])


def space_flags(function: F) -> F:
    """--metric, --center, --remove-top, --pool: the space neighbors and similarity search."""
    for declared in reversed((METRIC_OPTION, CENTER_OPTION, REMOVE_TOP_OPTION, POOL_OPTION)):
        function = option(declared)(function)
    return function


@command("neighbors", "the vocabulary's nearest tokens to a token, word, id or expression")
@option(QUERIES_OPTION, metavar="[QUERY]...", default=())
@option(K_OPTION)
@option(ID_OPTION)
@option(POSITIVE_OPTION)
@option(NEGATIVE_OPTION)
@space_flags
@token_filters()
@option(CACHE_DIR_OPTION)
@click.option(
    "--precompute",
    is_flag=True,
    help="build the neighbour table once (~15 s for the default model; cached): later token queries are lookups",
)
def neighbors(
    call: Call,
    queries: tuple[str, ...],
    k: int,
    id: bool,
    positive: tuple[str, ...],
    negative: tuple[str, ...],
    metric: Metric,
    center: bool,
    remove_top: int,
    pool: Pool,
    cache_dir: str | None,
    precompute: bool,
    **filters: bool,
) -> NeighborsBatch:
    from ..embeddings.token_classes import TokenFilter
    from ..similarity.index import open_index
    from ..similarity.nearest import neighbors_many
    from ..similarity.query import parse_queries
    from ..similarity.space import Adjustment

    if id:
        call.applies_only(["pool"], "to words (a token id has no pieces to pool)")
    parsed = parse_queries(queries, positive, negative, ids=id)
    adjustment = Adjustment(center=center, remove_top=remove_top)
    model = call.model()
    return neighbors_many(
        model,
        parsed,
        k,
        metric=metric,
        filters=TokenFilter.from_flags(**filters),
        adjustment=adjustment,
        pool=pool,
        index=open_index(model, cache_dir, precompute=precompute),
    )


@command("similarity", "how similar two words or tokens are (with the pieces used)")
@argument("a", "a token or word")
@argument("b", "a token or word")
@space_flags
@option(CACHE_DIR_OPTION)
def similarity(
    call: Call, a: str, b: str, metric: Metric, center: bool, remove_top: int, pool: Pool, cache_dir: str | None
) -> PairSimilarity:
    from ..similarity.nearest import similarity
    from ..similarity.space import Adjustment

    adjustment = Adjustment(center=center, remove_top=remove_top)
    return similarity(call.model(), a, b, metric=metric, adjustment=adjustment, pool=pool, cache_dir=cache_dir)


@command("analogy", "a : b :: c : ? with 3CosAdd or 3CosMul")
@argument("a", "e.g. man")
@argument("b", "e.g. king")
@argument("c", "e.g. woman")
@option(K_OPTION, help="how many answers")
@option(ANALOGY_METHOD_OPTION)
@click.option("--all-tokens", is_flag=True, help="answers among all tokens, not only whole words (the default)")
@option(CACHE_DIR_OPTION)
def analogy(
    call: Call, a: str, b: str, c: str, k: int, method: AnalogyMethod, all_tokens: bool, cache_dir: str | None
) -> AnalogyResult:
    from ..embeddings.token_classes import TokenFilter
    from ..similarity.analogy import analogy

    filters = TokenFilter() if all_tokens else TokenFilter.words_only()
    return analogy(call.model(), a, b, c, k=k, method=method, filters=filters, cache_dir=cache_dir)


@command("evaluate", "word-similarity (Spearman, Pearson) and analogy (accuracy) benchmarks of the input matrix")
@argument(
    "benchmarks",
    "a name (see --list; 'similarity' runs every similarity set), or a CSV path of word1,word2,score; or 'wic PATH': "
    "same sense or not on WiC-format pairs (accuracy per layer, threshold from --train)",
    nargs=-1,
    metavar="[BENCHMARK]...",
)
@click.option("--list", "list_", is_flag=True, help="list the bundled benchmarks")
@click.option("--analogy", is_flag=True, help="treat paths as analogy question files")
@option(ANALOGY_METHOD_OPTION, help="analogy benchmarks: the objective")
@option(POOL_OPTION, help="similarity benchmarks (and wic): how pieces pool")
@option(CACHE_DIR_OPTION)
@wic.evaluate_options  # evaluate wic PATH --train PATH (bertlens/cli/wic.py)
def evaluate(
    call: Call,
    benchmarks: tuple[str, ...],
    list_: bool,
    analogy: bool,
    method: AnalogyMethod,
    pool: Pool,
    cache_dir: str | None,
    train: str | None,
    **run: object,
) -> WicResult | Benchmarks | ResultList:
    from ..core.errors import InputError
    from ..core.results import Result, ResultList
    from ..similarity.benchmarks import ANALOGY_BENCHMARKS, SIMILARITY_BENCHMARKS, list_benchmarks
    from ..similarity.evaluate import evaluate_analogies, evaluate_pairs

    if benchmarks[:1] == ("wic",):  # WiC pairs: bertlens/cli/wic.py (a pool no word pooling names is refused there)
        return wic.run_evaluate_wic(call, benchmarks, train, pool)  # type: ignore[arg-type]
    call.applies_only(wic.WIC_ONLY, "to evaluate wic")
    if list_:
        if benchmarks:
            raise InputError("--list takes no BENCHMARKs.", "Run --list alone, then evaluate the ones you choose.")
        call.applies_only(["--analogy", "--method", "--pool", "--cache-dir"], "when evaluating, not with --list")
        return list_benchmarks()
    if not benchmarks:
        raise InputError("No benchmark given.", "Example: bertlens evaluate wordsim353 men   (--list shows them)")
    names: list[str] = []
    for name in benchmarks:
        names += list(SIMILARITY_BENCHMARKS) if name == "similarity" else [name]
    analogies = [analogy or name in ANALOGY_BENCHMARKS for name in names]
    if not any(analogies):
        call.applies_only(["--method", "--cache-dir"], "to analogy benchmarks")
    if all(analogies):
        call.applies_only(["--pool"], "to similarity benchmarks")
    model = call.model()
    results: list[Result] = []
    for name, is_analogy in zip(names, analogies, strict=True):
        if is_analogy:
            results.append(evaluate_analogies(model, name, method=method, cache_dir=cache_dir))
        else:
            results.append(evaluate_pairs(model, name, pool=pool))
    return ResultList(tuple(results))
